/* space.c - the calls that ask every server at once: statfs (each
 * daemon's space and names, summed with each storage file system counted
 * once) and ping (each daemon's state and round-trip time). Split from
 * meta.c, whose calls each ask the metadata daemon. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* The failure words of a request that did not succeed (the engine's or
 * the daemon's; strerror when it has none). */
static void why_of(const struct tc_req *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s", r->errmsg[0] ? r->errmsg : strerror(-r->status));
}

/* STATFS to the metadata daemon and IOS_STATFS to every storage daemon,
 * all at once; each answer (or failure) into out[0..n_ios]. */
static int statfs_round(tessera_fs *fs, struct tessera_server_space *out)
{
	Tessera__PathRequest m = TESSERA__PATH_REQUEST__INIT;
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	uint32_t n = fs->cfg.n_ios;
	struct tc_req *reqs[TP_MAX_SERVERS + 1] = { 0 };
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	int rc = 0;

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = "/";
	reqs[0] = tc_req_new(fs, TC_MDS, TP_OP_STATFS, &m.base, NULL, 0);
	for (uint32_t i = 0; i < n; i++)
		reqs[i + 1] = tc_req_new(fs, (int)i, TP_OP_IOS_STATFS, &ping.base, NULL, 0);
	for (uint32_t i = 0; i <= n; i++)
		if (!reqs[i]) {
			rc = tc_fail(fs, -ENOMEM, "statfs: out of memory");
			goto out;
		}
	(void)tc_run(fs, reqs, n + 1); /* each request's status says */
	for (uint32_t i = 0; i <= n; i++) {
		const Tessera__StatfsReply *rep = (const Tessera__StatfsReply *)reqs[i]->reply;
		struct tessera_server_space *o = &out[i];

		memset(o, 0, sizeof(*o));
		o->index = i == 0 ? -1 : (int)i - 1;
		tc_server_name(fs, i == 0 ? TC_MDS : (int)i - 1, o->name, sizeof(o->name));
		o->status = reqs[i]->status;
		if (o->status) {
			why_of(reqs[i], o->why, sizeof(o->why));
			if (!rc) /* the thread's message names the first failure */
				rc = tc_req_fail(fs, reqs[i], "statfs");
		} else if (i == 0) {
			o->files = rep->files;
			o->files_free = rep->files_free;
		} else {
			o->bytes_total = rep->bytes_total;
			o->bytes_free = rep->bytes_free;
			o->fsid = rep->fsid;
		}
	}
out:
	for (uint32_t i = 0; i <= n; i++)
		tc_req_free(fs, reqs[i]);
	return rc;
}

/* The totals of out[0..n]: the metadata daemon's names, and the space of
 * each storage daemon's file system counted once: daemons on one disk
 * (several per host, or a test's loopback cluster) report the same fsid
 * and the same space, which adding up would multiply. Only daemons of one
 * host (the config's address) are compared: f_fsid is unique within a
 * host, not across hosts. A daemon that did not answer or says fsid 0
 * (unknown) counts apart. */
static void sum_space(const tessera_fs *fs, struct tessera_statfs *sf,
		      const struct tessera_server_space *out, uint32_t n)
{
	sf->files = out[0].files;
	sf->files_free = out[0].files_free;
	for (uint32_t i = 1; i <= n; i++) {
		int seen = 0;

		if (out[i].status)
			continue;
		for (uint32_t k = 1; k < i && out[i].fsid && !seen; k++)
			seen = !out[k].status && out[k].fsid == out[i].fsid &&
			       !strcmp(fs->cfg.ios[k - 1].host, fs->cfg.ios[i - 1].host);
		if (seen)
			continue;
		sf->bytes_total += out[i].bytes_total;
		sf->bytes_free += out[i].bytes_free;
	}
}

int tessera_statfs_servers(tessera_fs *fs, struct tessera_statfs *sf,
			   struct tessera_server_space *out, size_t n_out)
{
	uint32_t n = fs->cfg.n_ios;
	int rc;

	if (n_out < (size_t)n + 1)
		return tc_fail(fs, -EINVAL, "statfs: room for %zu servers, %u configured", n_out,
			       n + 1);
	memset(sf, 0, sizeof(*sf));
	sf->n_ios = n;
	rc = statfs_round(fs, out);
	if (rc == -ENOMEM)
		return rc;
	sum_space(fs, sf, out, n);
	return (int)n + 1;
}

int tessera_statfs(tessera_fs *fs, struct tessera_statfs *sf)
{
	struct tessera_server_space *out = calloc(fs->cfg.n_ios + 1, sizeof(*out));
	int rc;

	if (!out)
		return tc_fail(fs, -ENOMEM, "statfs: out of memory");
	memset(sf, 0, sizeof(*sf));
	rc = statfs_round(fs, out);
	if (!rc) {
		sf->n_ios = fs->cfg.n_ios;
		sum_space(fs, sf, out, fs->cfg.n_ios);
	}
	free(out);
	return rc;
}

/* Server i of a ping (0: the metadata daemon, i: storage daemon i - 1). */
static int ping_server(size_t i)
{
	return i == 0 ? TC_MDS : (int)i - 1;
}

/* What a ping reply says, into p. */
static void ping_take(struct tessera_ping *p, const Tessera__PingReply *rep)
{
	snprintf(p->role, sizeof(p->role), "%s", rep->role);
	snprintf(p->version, sizeof(p->version), "%s", rep->version);
	p->index = rep->index;
	if (rep->core) {
		p->owed_bytes = rep->core->reply_bytes;
		p->owed_replies = (uint32_t)rep->core->reply_entries;
		p->parked = (uint32_t)rep->core->parked;
		p->peers_closed = rep->core->peers_closed;
		p->parked_data_kept = rep->core->parked_data_kept;
		p->parked_data_copied = rep->core->parked_data_copied;
	}
}

/* Every server at once, so that a down one costs one wait, not one each. */
static int ping_round(tessera_fs *fs, struct tessera_ping *out, size_t n)
{
	Tessera__PingRequest m = TESSERA__PING_REQUEST__INIT;
	struct tc_req *reqs[TP_MAX_SERVERS + 1] = { 0 };
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++)
		if (!(reqs[i] = tc_req_new(fs, ping_server(i), TP_OP_PING, &m.base, NULL, 0)))
			rc = tc_fail(fs, -ENOMEM, "ping: out of memory");
	if (!rc)
		(void)tc_run(fs, reqs, n); /* each request's status says */
	for (size_t i = 0; i < n && !rc; i++) {
		out[i].status = reqs[i]->status;
		if (!out[i].status)
			ping_take(&out[i], (const Tessera__PingReply *)reqs[i]->reply);
	}
	for (size_t i = 0; i < n; i++)
		tc_req_free(fs, reqs[i]);
	return rc;
}

int tessera_ping(tessera_fs *fs, struct tessera_ping *out, size_t n_out)
{
	Tessera__PingRequest m = TESSERA__PING_REQUEST__INIT;
	size_t n = fs->cfg.n_ios + 1 < n_out ? fs->cfg.n_ios + 1 : n_out;
	int rc;

	for (size_t i = 0; i < n; i++) {
		const struct tp_server *s = i == 0 ? &fs->cfg.mds : &fs->cfg.ios[i - 1];

		memset(&out[i], 0, sizeof(out[i]));
		snprintf(out[i].address, sizeof(out[i].address), "%s:%s", s->host, s->port);
		snprintf(out[i].role, sizeof(out[i].role), "%s", i == 0 ? "mds" : "ios");
		out[i].index = i == 0 ? 0 : (uint32_t)i - 1;
	}
	rc = ping_round(fs, out, n);
	if (rc)
		return rc;
	/* Then, one at a time, those that answered, so that each round trip
	 * is measured alone. */
	for (size_t i = 0; i < n; i++) {
		struct tc_req *r;
		uint64_t t0, t1;

		if (out[i].status)
			continue;
		r = tc_req_new(fs, ping_server(i), TP_OP_PING, &m.base, NULL, 0);
		t0 = tp_mono_ns();
		rc = tc_call(fs, r, "ping");
		t1 = tp_mono_ns();
		out[i].status = rc;
		if (!rc) {
			ping_take(&out[i], (const Tessera__PingReply *)r->reply);
			out[i].rtt_us = (double)(t1 - t0) / 1e3;
		}
		tc_req_free(fs, r);
	}
	return (int)n;
}
