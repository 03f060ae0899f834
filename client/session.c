/*
 * session.c - the connection lifecycle above the transport: a session
 * with each daemon (docs/security.md), opened by AUTH on first use,
 * renewed before the daemon would drop it for idleness, replaced when a
 * probe finds the daemon restarted; and tc_run, which the I/O paths call:
 * sessions in place, then the request engine (engine.c) runs the
 * requests. Uses engine.c, peer.c (through it), trace.c and thread.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "client_int.h"

static void probe_answered(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr);

/*
 * Probes. A restarted daemon has lost its sessions and drops their frames
 * unanswered (answering would mean sending to an address nobody vouched
 * for), so a client would learn of it only at its timeout. Instead, a
 * request that has heard nothing from its daemon for TC_PROBE_NS has one
 * AUTH probe sent on its behalf (at most one in flight per daemon), which
 * asks after the session it holds. When the daemon still knows it (and
 * has not restarted: its boot id is the same) the daemon is merely busy,
 * and the probe's session is left to idle out; otherwise (restarted, or
 * the session was evicted) the probe's session replaces the lost one, and
 * every request still waiting on the lost session is sealed again and
 * resent.
 */
#define TC_PROBE_NS (250ull * 1000000u)

/* A probe ended (under lock): answered (fr), or failed or expired (NULL).
 * When the daemon restarted or lost the session, the probe's session
 * replaces the lost one and what waits on that is resent. */
static void probe_done(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr)
{
	if (fr)
		probe_answered(fs, p, fr);
	tc_session_of(fs, p->server)->probing = 0;
	tc_req_drop(fs, p);
}

static void probe_answered(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr)
{
	struct tc_session *ses = tc_session_of(fs, p->server);
	Tessera__AuthReply *rep = NULL;
	uint64_t lost = ses->s.id;

	if (fr->hdr.status == 0)
		rep = (Tessera__AuthReply *)tp_body_unpack(fr, &tessera__auth_reply__descriptor);
	if (rep && rep->session && ses->valid && (!rep->known || rep->boot != ses->boot)) {
		ses->s.id = rep->session;
		memcpy(ses->s.key, p->ses.key, TP_KEY_SIZE);
		ses->boot = rep->boot;
		tc_req_reseal(fs, p->server, lost);
	}
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
}

/* Probe r's daemon if r has heard nothing from it for TC_PROBE_NS (under
 * lock). */
static void maybe_probe(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	struct tc_session *ses = tc_session_of(fs, r->server);
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char target[32], err[256], *cred = NULL;
	uint8_t key[TP_KEY_SIZE];
	struct tc_req *p;

	if (r->replied || !r->sent || r->done || r->probed || r->opcode == TP_OP_AUTH ||
	    !ses->valid || ses->probing || now - r->submit_ns < TC_PROBE_NS ||
	    ses->heard_ns > r->submit_ns)
		return;
	r->probed = 1;
	if (r->server == TC_MDS)
		snprintf(target, sizeof(target), "mds");
	else
		snprintf(target, sizeof(target), "ios:%d", r->server);
	if (tp_auth_encode(fs->cfg.munge_socket, fs->cfg.daemon_uid, target, fs->name,
			   fs->name_len, key, &cred, err, sizeof(err)))
		return; /* no munged: the request waits for its timeout */
	m.credential = cred;
	m.session = ses->s.id;
	p = tc_req_new(fs, r->server, TP_OP_AUTH, &m.base, NULL, 0);
	free(cred);
	if (p)
		memcpy(p->ses.key, key, TP_KEY_SIZE);
	sodium_memzero(key, sizeof(key));
	if (!p)
		return;
	ses->probing = 1;
	tc_req_start(fs, p, now + (uint64_t)fs->cfg.timeout_ms * 1000000u, probe_done);
}

/* Open a session with `server`: a fresh MUNGE credential (for this
 * daemon only, decodable only by the daemons' uid) proposing a random
 * key; the daemon answers with the session's id, in a reply sealed with
 * that key, which proves it read the credential. Any other answer fails
 * at once with -EACCES, "... failed to prove its identity". */
static int authenticate(tessera_fs *fs, int server)
{
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	const Tessera__AuthReply *rep;
	struct tc_session *ses = tc_session_of(fs, server);
	char target[32], err[512], name[200];
	uint8_t key[TP_KEY_SIZE];
	struct tc_req *r;
	char *cred = NULL;
	uint64_t t;
	int rc;

	if (server == TC_MDS)
		snprintf(target, sizeof(target), "mds");
	else
		snprintf(target, sizeof(target), "ios:%d", server);
	tc_server_name(fs, server, name, sizeof(name));
	t = tp_mono_ns();
	rc = tp_auth_encode(fs->cfg.munge_socket, fs->cfg.daemon_uid, target, fs->name,
			    fs->name_len, key, &cred, err, sizeof(err));
	if (rc)
		return tc_fail(fs, rc, "authenticate to the %s: %s", name, err);
	tc_trace(fs, tp_mono_ns() - t, "MUNGE credential for the %s", name);
	t = tp_mono_ns();
	m.credential = cred;
	r = tc_req_new(fs, server, TP_OP_AUTH, &m.base, NULL, 0);
	free(cred);
	if (!r) {
		sodium_memzero(key, sizeof(key));
		return tc_fail(fs, -ENOMEM, "authenticate to the %s: out of memory", name);
	}
	memcpy(r->ses.key, key, TP_KEY_SIZE);
	sodium_memzero(key, sizeof(key));
	rc = tc_engine_run(fs, &r, 1, maybe_probe);
	if (rc && r->unproven) {
		/* Not the daemon: whoever answered could not decode a
		 * credential restricted to the daemons' uid. Nothing more
		 * goes to it. */
		tc_fail(fs, -EACCES, "%s failed to prove its identity (%s; the daemons run as "
			"uid %u, daemon_uid)", name, r->errmsg, fs->cfg.daemon_uid);
		rc = -EACCES;
	} else if (rc) {
		tc_fail(fs, rc, "authenticate: %s", r->errmsg[0] ? r->errmsg : strerror(-rc));
	} else {
		rep = (const Tessera__AuthReply *)r->reply;
		pthread_mutex_lock(&fs->lock);
		ses->s.id = rep->session;
		memcpy(ses->s.key, r->ses.key, TP_KEY_SIZE);
		ses->boot = rep->boot;
		ses->used_ns = tp_mono_ns();
		ses->valid = rep->session != 0;
		pthread_mutex_unlock(&fs->lock);
		tc_trace(fs, tp_mono_ns() - t, "AUTH with the %s (address, connection, round trip)", name);
	}
	sodium_memzero(r->ses.key, sizeof(r->ses.key));
	tc_req_free(fs, r);
	return rc;
}

/* Daemons drop sessions idle this long (SRV_SESSION_IDLE_S, an hour);
 * a client renews its own well before. */
#define TC_SESSION_RENEW_NS (1800ull * 1000000000u)

/* Each server the requests go to has a session, or those requests fail
 * with why it could not be opened. */
static void ensure_sessions(tessera_fs *fs, struct tc_req **reqs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tc_session *ses = tc_session_of(fs, reqs[i]->server);
		int ok, rc;

		if (reqs[i]->replied)
			continue;
		pthread_mutex_lock(&fs->lock);
		ok = ses->valid && tp_mono_ns() - ses->used_ns < TC_SESSION_RENEW_NS;
		pthread_mutex_unlock(&fs->lock);
		if (ok)
			continue;
		pthread_mutex_lock(&fs->auth_lock);
		pthread_mutex_lock(&fs->lock);
		ok = ses->valid && tp_mono_ns() - ses->used_ns < TC_SESSION_RENEW_NS;
		pthread_mutex_unlock(&fs->lock);
		rc = ok ? 0 : authenticate(fs, reqs[i]->server);
		pthread_mutex_unlock(&fs->auth_lock);
		if (!rc)
			continue;
		for (size_t j = i; j < n; j++) {
			struct tc_req *r = reqs[j];

			if (r->server != reqs[i]->server || r->replied)
				continue;
			r->replied = r->sent = 1;
			r->status = rc;
			snprintf(r->errmsg, sizeof(r->errmsg), "%s", tessera_errmsg(fs));
		}
	}
}

int tc_run(tessera_fs *fs, struct tc_req **reqs, size_t n)
{
	uint64_t t;
	int rc;

	ensure_sessions(fs, reqs, n);
	t = tp_mono_ns();
	rc = tc_engine_run(fs, reqs, n, maybe_probe);
	tc_trace_request(fs, reqs, n, tp_mono_ns() - t);
	return rc;
}

int tc_call(tessera_fs *fs, struct tc_req *req, const char *what)
{
	int rc;

	if (!req)
		return tc_fail(fs, -ENOMEM, "%s: out of memory", what);
	rc = tc_run(fs, &req, 1);
	if (rc)
		tc_req_fail(fs, req, what);
	return rc;
}
