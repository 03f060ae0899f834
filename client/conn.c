/*
 * conn.c - libtessera's connection and request engine.
 *
 * All requests of all threads share one tnet endpoint. A thread that waits
 * for its requests either polls the completion queue itself (one thread at
 * a time: `progressing`) or sleeps on the condition variable until the
 * polling thread has dispatched what arrived. Every request has a deadline;
 * a request whose deadline passes fails with -ETIMEDOUT and is abandoned
 * (its frame is freed when the transport is done with it).
 *
 * Lent memory. A bulk write may send its payload straight from the
 * caller's buffer, and a read may receive its data straight into it (a
 * tagged receive posted before the request goes out), when the provider
 * can be made to let go (tnet_can_lend). The invariant: tc_run() does not
 * return while the provider may still read or write the caller's memory
 * for one of its requests, that is, until each lent send has completed
 * and each tagged receive has completed (data, error or cancel). That
 * holds on every path: a reply can arrive before the send's completion
 * (run() waits for both), an error reply or a timeout leaves the receive
 * posted (run() cancels it and waits for the cancel). Only a peer that
 * never completes them at all (a stopped daemon; rxm completes neither a
 * rendezvous whose peer went away nor the cancel of a receive it has
 * matched) ends otherwise: past the request's deadline, run() forgets the
 * peer, which with FI_AV_REMOVE_CLEANUP makes rxm close its connection
 * synchronously, flushing what can be flushed, so that no transfer with
 * that peer can touch our memory any more; after a short grace the
 * request is let go. Its tc_req (and frame) stays on the zombie list, as
 * the provider may still name its contexts.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "client_int.h"

static void list_init(struct tc_req *head)
{
	head->next = head->prev = head;
}

static void list_add(struct tc_req *head, struct tc_req *r)
{
	r->next = head;
	r->prev = head->prev;
	head->prev->next = r;
	head->prev = r;
}

static void list_del(struct tc_req *r)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->next = r->prev = r;
}

static void free_thread(void *p)
{
	free(p);
}

struct tc_thread *tc_thread(tessera_fs *fs)
{
	struct tc_thread *t = pthread_getspecific(fs->thread_key);

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			abort(); /* a few hundred bytes: nothing sensible left to do */
		pthread_setspecific(fs->thread_key, t);
	}
	return t;
}

int tc_fail(tessera_fs *fs, int rc, const char *fmt, ...)
{
	struct tc_thread *t = tc_thread(fs);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->errmsg, sizeof(t->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

const char *tessera_errmsg(tessera_fs *fs)
{
	return tc_thread(fs)->errmsg;
}

int tessera_set_thread_cred(tessera_fs *fs, const struct tessera_cred *cred)
{
	struct tc_thread *t = tc_thread(fs);

	/* Only a privileged process may act for others: the metadata daemon
	 * honours a request's credentials only from a uid 0 session, so this
	 * is a courtesy that says so early. */
	if (cred && geteuid() != 0)
		return tc_fail(fs, -EPERM, "set credentials: only root may act for another user "
			       "(this process is uid %u)", (unsigned)geteuid());
	if (cred && cred->ngids > TESSERA_MAX_GROUPS)
		return tc_fail(fs, -EINVAL, "set credentials: %u groups exceed %d", cred->ngids,
			       TESSERA_MAX_GROUPS);
	t->has_cred = cred != NULL;
	if (cred)
		t->cred = *cred;
	return 0;
}

void tc_cred(tessera_fs *fs, Tessera__Cred *out, uint32_t *gids_store)
{
	struct tc_thread *t = tc_thread(fs);
	const struct tessera_cred *c = t->has_cred ? &t->cred : &fs->default_cred;

	tessera__cred__init(out);
	out->uid = c->uid;
	out->n_gids = c->ngids;
	memcpy(gids_store, c->gids, c->ngids * sizeof(*gids_store));
	out->gids = gids_store;
}

void tc_server_name(tessera_fs *fs, int server, char *buf, size_t len)
{
	const struct tp_server *s = server == TC_MDS ? &fs->cfg.mds : &fs->cfg.ios[server];

	if (server == TC_MDS)
		snprintf(buf, len, "metadata daemon (%s:%s)", s->host, s->port);
	else
		snprintf(buf, len, "storage daemon %d (%s:%s)", server, s->host, s->port);
}

static void default_cred(struct tessera_cred *c)
{
	gid_t groups[TESSERA_MAX_GROUPS];
	int n = getgroups(TESSERA_MAX_GROUPS - 1, groups);

	c->uid = (uint32_t)geteuid();
	c->gids[0] = (uint32_t)getegid();
	c->ngids = 1;
	for (int i = 0; i < n; i++)
		if ((uint32_t)groups[i] != c->gids[0])
			c->gids[c->ngids++] = (uint32_t)groups[i];
}

static int connect_cfg(tessera_fs *fs, char *err, size_t errlen)
{
	struct tnet_opts to = {
		.provider = fs->cfg.provider,
		.node = fs->cfg.mds.host,
		.service = fs->cfg.mds.port,
		.listen = 0,
		.buf_size = tp_config_max_frame(&fs->cfg),
		.nrecv = fs->cfg.window + 4,
	};
	struct tnet_times times = { 0 };
	int rc;

	fs->peer_ios = calloc(fs->cfg.n_ios, sizeof(*fs->peer_ios));
	fs->ios_known = calloc(fs->cfg.n_ios, sizeof(*fs->ios_known));
	fs->ios_session = calloc(fs->cfg.n_ios, sizeof(*fs->ios_session));
	fs->ios_local = calloc(fs->cfg.n_ios, sizeof(*fs->ios_local));
	if (!fs->peer_ios || !fs->ios_known || !fs->ios_session || !fs->ios_local)
		return -ENOMEM;
	rc = tnet_open(&to, &fs->net, err, errlen);
	if (rc)
		return rc;
	tnet_open_times(fs->net, &times);
	tc_trace(fs, times.getinfo_ns, "fi_getinfo: libfabric starts its providers");
	tc_trace(fs, times.endpoint_ns, "endpoint: fabric, domain, cq, av, ep");
	tc_trace(fs, times.buffers_ns, "%u receive buffers posted", to.nrecv);
	if (tnet_can_lend(fs->net))
		fs->lend_runs = tnet_iov_limit(fs->net) - 1 < TC_LEND_IOV
				? tnet_iov_limit(fs->net) - 1 : TC_LEND_IOV;
	fs->name_len = sizeof(fs->name);
	rc = tnet_name(fs->net, fs->name, &fs->name_len);
	if (rc)
		snprintf(err, errlen, "cannot read our own transport address: %s", strerror(-rc));
	return rc;
}

/* Read `config`, else $TESSERA_CONFIG. */
static int load_config(const char *config, struct tp_config *cfg, char *err, size_t errlen)
{
	if (!config)
		config = getenv("TESSERA_CONFIG");
	if (!config) {
		snprintf(err, errlen, "no config file given and TESSERA_CONFIG is not set");
		return -EINVAL;
	}
	return tp_config_load(config, cfg, err, errlen);
}

int tessera_connect(const char *config, tessera_fs **out, char *err, size_t errlen)
{
	tessera_fs *fs;
	char dummy[8];
	uint64_t t;
	int rc;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	tc_trace_init(fs);
	t = tp_mono_ns();
	rc = load_config(config, &fs->cfg, err, errlen);
	if (rc) {
		free(fs);
		return rc;
	}
	tc_trace(fs, tp_mono_ns() - t, "config read");
	pthread_key_create(&fs->thread_key, free_thread);
	pthread_mutex_init(&fs->auth_lock, NULL);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->cond, NULL);
	list_init(&fs->pending);
	list_init(&fs->zombies);
	fs->next_reqid = ((uint64_t)getpid() << 32) | 1;
	if (getrandom(&fs->desc_nonce, sizeof(fs->desc_nonce), 0) != sizeof(fs->desc_nonce))
		fs->desc_nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^
				 (uint64_t)(uintptr_t)fs;
	default_cred(&fs->default_cred);
	tc_local_init(fs);
	rc = connect_cfg(fs, err, errlen);
	if (rc) {
		tessera_disconnect(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

int tessera_config_mount_point(const char *config, char *out, size_t len, char *err,
			       size_t errlen)
{
	struct tp_config *cfg;
	char dummy[8];
	int rc;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		snprintf(err, errlen, "reading the config: out of memory");
		return -ENOMEM;
	}
	rc = load_config(config, cfg, err, errlen);
	if (!rc && strlen(cfg->mount_point) >= len) {
		snprintf(err, errlen, "mount_point %s is longer than %zu bytes", cfg->mount_point,
			 len - 1);
		rc = -ENAMETOOLONG;
	}
	if (!rc)
		strcpy(out, cfg->mount_point);
	free(cfg);
	return rc;
}

void tessera_copy_stats(tessera_fs *fs, struct tessera_copy_stats *out)
{
	pthread_mutex_lock(&fs->lock);
	*out = fs->copies;
	pthread_mutex_unlock(&fs->lock);
}

void tessera_disconnect(tessera_fs *fs)
{
	struct tc_req *r;

	if (!fs)
		return;
	tc_trace(fs, tp_mono_ns() - fs->trace_t0, "tessera_disconnect: process age");
	tc_leases_stop(fs); /* its thread uses the endpoint */
	tnet_close(fs->net); /* no completion can arrive after this */
	while ((r = fs->pending.next) != &fs->pending) { /* only probes are left */
		list_del(r);
		tc_req_free(NULL, r);
	}
	while ((r = fs->zombies.next) != &fs->zombies) {
		list_del(r);
		tc_req_free(NULL, r);
	}
	while (fs->n_spares)
		free(fs->spares[--fs->n_spares]);
	free(pthread_getspecific(fs->thread_key));
	pthread_key_delete(fs->thread_key);
	pthread_mutex_destroy(&fs->auth_lock);
	pthread_mutex_destroy(&fs->lock);
	pthread_cond_destroy(&fs->cond);
	free(fs->peer_ios);
	free(fs->ios_known);
	free(fs->ios_local);
	if (fs->ios_session)
		sodium_memzero(fs->ios_session, fs->cfg.n_ios * sizeof(*fs->ios_session));
	free(fs->ios_session);
	sodium_memzero(&fs->mds_session, sizeof(fs->mds_session));
	free(fs);
}

uint32_t tessera_ios_count(tessera_fs *fs)
{
	return fs->cfg.n_ios;
}

/* A request whose frame holds in_frame of its data_len bytes of data. */
static struct tc_req *req_make(tessera_fs *fs, int server, unsigned opcode,
			       const ProtobufCMessage *msg, size_t data_len, size_t in_frame)
{
	struct tc_req *r = calloc(1, sizeof(*r));
	size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	size_t head = TP_HDR_SIZE + fs->name_len + body;
	struct tp_hdr hdr = { .opcode = (uint16_t)opcode, .data_len = (uint32_t)data_len };

	if (!r)
		return NULL;
	if (head + in_frame >= TC_SPARE_MIN && head + in_frame <= tp_config_max_frame(&fs->cfg)) {
		pthread_mutex_lock(&fs->lock);
		r->frame = fs->n_spares ? fs->spares[--fs->n_spares] : NULL;
		pthread_mutex_unlock(&fs->lock);
		if (!r->frame)
			r->frame = malloc(tp_config_max_frame(&fs->cfg));
		r->spare_frame = 1;
	} else {
		r->frame = malloc(head + in_frame);
	}
	if (!r->frame) {
		free(r);
		return NULL;
	}
	r->ctx.user = r;
	r->next = r->prev = r;
	r->server = server;
	r->opcode = opcode;
	r->frame_len = head + in_frame;
	r->head_len = head;
	/* The request id is filled in at submission (tc_run). */
	tp_frame_build(r->frame, head, &hdr, fs->name, fs->name_len, msg);
	return r;
}

struct tc_req *tc_req_new(tessera_fs *fs, int server, unsigned opcode,
			  const ProtobufCMessage *msg, const void *data, size_t data_len)
{
	struct tc_req *r = req_make(fs, server, opcode, msg, data_len, data_len);

	if (r && data && data_len)
		memcpy(r->frame + r->head_len, data, data_len);
	return r;
}

struct tc_req *tc_req_new_lent(tessera_fs *fs, int server, unsigned opcode,
			       const ProtobufCMessage *msg, const struct iovec *runs, size_t n)
{
	size_t len = 0;
	struct tc_req *r;

	for (size_t i = 0; i < n; i++)
		len += runs[i].iov_len;
	r = req_make(fs, server, opcode, msg, len, 0);
	if (!r)
		return NULL;
	r->lend_write = 1;
	r->n_lend = n;
	memcpy(r->lend, runs, n * sizeof(*runs));
	return r;
}

void tc_req_lend_read(struct tc_req *r, const struct iovec *runs, size_t n)
{
	r->lend_read = 1;
	r->n_lend = n;
	memcpy(r->lend, runs, n * sizeof(*runs));
}

/* Send r's frame, and its lent payload after it. */
static int req_send(tessera_fs *fs, uint64_t peer, struct tc_req *r)
{
	struct iovec iov[1 + TC_LEND_IOV] = { { r->frame, r->frame_len } };
	size_t n = 1;

	if (r->lend_write) {
		memcpy(iov + 1, r->lend, r->n_lend * sizeof(*iov));
		n += r->n_lend;
	}
	return tnet_send(fs->net, peer, iov, n, &r->ctx);
}

/* Whether the provider may still touch the caller's memory for r. */
static int lends(const struct tc_req *r)
{
	return (r->lend_write && !r->sent) || r->rposted;
}

uint8_t *tc_req_data(struct tc_req *r)
{
	return r->frame + r->head_len;
}

void tc_req_free(tessera_fs *fs, struct tc_req *r)
{
	if (!r)
		return;
	if (fs) {
		pthread_mutex_lock(&fs->lock);
		if (!r->sent || r->rposted) {
			/* The provider still holds the frame: dispatch() frees
			 * the request when its send completes. */
			r->abandoned = 1;
			list_add(&fs->zombies, r);
			pthread_mutex_unlock(&fs->lock);
			return;
		}
		if (r->spare_frame && fs->n_spares < TC_SPARE_FRAMES) {
			fs->spares[fs->n_spares++] = r->frame;
			r->frame = NULL;
		}
		pthread_mutex_unlock(&fs->lock);
	}
	if (r->reply)
		protobuf_c_message_free_unpacked(r->reply, NULL);
	free(r->frame);
	free(r);
}

/* Peer address of a server, resolved on first use (under lock). */
static int peer_of(tessera_fs *fs, int server, uint64_t *peer)
{
	const struct tp_server *s = server == TC_MDS ? &fs->cfg.mds : &fs->cfg.ios[server];
	int *known = server == TC_MDS ? &fs->mds_known : &fs->ios_known[server];
	uint64_t *p = server == TC_MDS ? &fs->peer_mds : &fs->peer_ios[server];
	int rc;

	if (!*known) {
		uint64_t t = tp_mono_ns();

		rc = tnet_lookup(fs->net, s->host, s->port, p);
		if (rc)
			return rc;
		*known = 1;
		tc_trace(fs, tp_mono_ns() - t, "address of %s:%s", s->host, s->port);
	}
	*peer = *p;
	return 0;
}

static struct tc_session *session_of(tessera_fs *fs, int server)
{
	return server == TC_MDS ? &fs->mds_session : &fs->ios_session[server];
}

/* A transport failure on a server: forget its address so the next request
 * connects afresh, and its session, which a restarted daemon no longer
 * knows (the next request authenticates again). */
static void peer_broken(tessera_fs *fs, int server)
{
	int *known = server == TC_MDS ? &fs->mds_known : &fs->ios_known[server];
	uint64_t *p = server == TC_MDS ? &fs->peer_mds : &fs->peer_ios[server];

	session_of(fs, server)->valid = 0;
	if (*known) {
		tnet_forget(fs->net, *p);
		*known = 0;
	}
}

static void finish(tessera_fs *fs, struct tc_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void finish(tessera_fs *fs, struct tc_req *r, int status, const char *fmt, ...)
{
	va_list ap;

	(void)fs;
	if (r->replied)
		return;
	r->replied = 1;
	r->status = status;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
		va_end(ap);
	}
	list_del(r);
}

static struct tc_req *find_pending(tessera_fs *fs, uint64_t reqid)
{
	for (struct tc_req *r = fs->pending.next; r != &fs->pending; r = r->next)
		if (r->reqid == reqid)
			return r;
	return NULL;
}

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

static int submit(tessera_fs *fs, struct tc_req *r, uint64_t deadline);

/* Take a finished probe off the books (under lock). */
static void probe_done(tessera_fs *fs, struct tc_req *p)
{
	session_of(fs, p->server)->probing = 0;
	list_del(p);
	if (p->sent) {
		tc_req_free(NULL, p);
	} else { /* the provider holds its frame: freed on completion */
		p->abandoned = 1;
		list_add(&fs->zombies, p);
	}
}

static void resend_stale(tessera_fs *fs, int server, uint64_t lost)
{
	struct tc_session *ses = session_of(fs, server);
	uint64_t peer;

	if (peer_of(fs, server, &peer))
		return;
	for (struct tc_req *r = fs->pending.next; r != &fs->pending; r = r->next) {
		if (r->server != server || r->replied || !r->sent || r->probe || r->ses.id != lost)
			continue;
		r->ses = ses->s;
		tp_frame_seal(r->frame, r->head_len, &r->ses);
		r->sent = 0;
		r->submit_ns = tp_mono_ns();
		if (req_send(fs, peer, r))
			r->sent = 1; /* not resent: it waits for its timeout, as before */
	}
}

static void probe_answered(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr)
{
	struct tc_session *ses = session_of(fs, p->server);
	Tessera__AuthReply *rep = NULL;
	uint64_t lost = ses->s.id;

	if (fr->hdr.status == 0)
		rep = (Tessera__AuthReply *)tp_body_unpack(fr, &tessera__auth_reply__descriptor);
	if (rep && rep->session && ses->valid && (!rep->known || rep->boot != ses->boot)) {
		ses->s.id = rep->session;
		memcpy(ses->s.key, p->ses.key, TP_KEY_SIZE);
		ses->boot = rep->boot;
		resend_stale(fs, p->server, lost);
	}
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	p->replied = 1;
	probe_done(fs, p);
}

/* Probe r's daemon if r has heard nothing from it for TC_PROBE_NS (under
 * lock). */
static void maybe_probe(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	struct tc_session *ses = session_of(fs, r->server);
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char target[32], err[256], *cred = NULL;
	uint8_t key[TP_KEY_SIZE];
	struct tc_req *p;

	if (r->replied || !r->sent || r->probe || r->probed || r->opcode == TP_OP_AUTH ||
	    !ses->valid || ses->probing || now - r->submit_ns < TC_PROBE_NS ||
	    ses->heard_ns > r->submit_ns)
		return;
	r->probed = 1;
	if (r->server == TC_MDS)
		snprintf(target, sizeof(target), "mds");
	else
		snprintf(target, sizeof(target), "ios:%d", r->server);
	if (tp_auth_encode(fs->cfg.munge_socket, target, fs->name, fs->name_len, key, &cred,
			   err, sizeof(err)))
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
	p->probe = 1;
	ses->probing = 1;
	if (submit(fs, p, now + (uint64_t)fs->cfg.timeout_ms * 1000000u))
		probe_done(fs, p);
}

/* Probes past their deadline are dropped (under lock). */
static void expire_probes(tessera_fs *fs, uint64_t now)
{
	struct tc_req *r = fs->pending.next;

	while (r != &fs->pending) {
		struct tc_req *next = r->next;

		if (r->probe && now > r->deadline_ns) {
			r->replied = 1;
			probe_done(fs, r);
		}
		r = next;
	}
}

/* A reply frame arrived: match it to its request. */
static void on_reply(tessera_fs *fs, const struct tnet_event *ev)
{
	struct tp_frame fr;
	struct tc_req *r;
	char err[256];
	int rc = tp_frame_parse(ev->rbuf->data, ev->len, ev->rbuf->cap, &fr, err, sizeof(err));

	if (rc || !(fr.hdr.flags & TP_FLAG_REPLY))
		return; /* not ours to answer; nothing waits on it */
	r = find_pending(fs, fr.hdr.reqid);
	if (!r)
		return; /* late reply to an abandoned request */
	if (fr.hdr.session != r->ses.id && r->opcode != TP_OP_AUTH)
		return; /* not from the session the request went to */
	if (tp_frame_verify(&fr, r->ses.key))
		return; /* forged: the real reply may still come */
	session_of(fs, r->server)->heard_ns = tp_mono_ns();
	if (r->probe) {
		probe_answered(fs, r, &fr);
		return;
	}
	if (fr.hdr.status < 0) {
		Tessera__ErrorReply *er = (Tessera__ErrorReply *)
			tp_body_unpack(&fr, &tessera__error_reply__descriptor);

		finish(fs, r, fr.hdr.status, "%s", er && er->message ? er->message : strerror(-fr.hdr.status));
		if (er)
			protobuf_c_message_free_unpacked(&er->base, NULL);
		return;
	}
	r->reply = tp_body_unpack(&fr, tp_reply_desc(r->opcode));
	if (!r->reply) {
		finish(fs, r, -EBADMSG, "the reply to %s does not decode", tp_opcode_name(r->opcode));
		return;
	}
	if (fr.hdr.data_len > r->data_cap) {
		finish(fs, r, -EPROTO, "the reply carries %u bytes, %zu were asked for",
		       fr.hdr.data_len, r->data_cap);
		return;
	}
	if (fr.hdr.data_len && r->data_put)
		r->data_put(r->data_arg, fr.data, fr.hdr.data_len);
	else if (fr.hdr.data_len)
		memcpy(r->data_dst, fr.data, fr.hdr.data_len);
	r->data_len = fr.hdr.data_len;
	if (r->opcode == TP_OP_READ)
		fs->copies.read_staged += fr.hdr.data_len;
	finish(fs, r, 0, NULL);
}

/*
 * A tagged reply completed into [r->rhead, the caller's runs]: its data is
 * in place already. The provider has kept it within the runs (a longer one
 * completes with -EMSGSIZE). Unlike an untagged reply, a bad one cannot be
 * skipped in the hope of the real one: the receive is spent, so r fails.
 * The MAC covers header and body, as for any frame; the data, as for any
 * frame, is outside it.
 */
static void on_tagged(tessera_fs *fs, struct tc_req *r, const struct tnet_event *ev)
{
	struct tp_frame fr;
	char err[256];
	int rc;

	if (r->replied)
		return; /* timed out, or answered untagged meanwhile */
	if (ev->status == -EMSGSIZE) {
		finish(fs, r, -EPROTO, "the reply is longer than the %zu bytes asked for",
		       r->data_cap);
		return;
	}
	if (ev->status) {
		finish(fs, r, ev->status, "receiving the reply failed: %s", strerror(-ev->status));
		return;
	}
	rc = tp_frame_parse(r->rhead, ev->len, tp_config_max_frame(&fs->cfg), &fr, err, sizeof(err));
	if (!rc && (fr.hdr.reqid != r->reqid || !(fr.hdr.flags & TP_FLAG_REPLY) ||
		    TP_HDR_SIZE + (size_t)fr.hdr.addr_len + fr.hdr.body_len != TP_TAGGED_HEAD)) {
		snprintf(err, sizeof(err), "its header does not fit the tagged reply asked for");
		rc = -EPROTO;
	}
	if (!rc && (fr.hdr.session != r->ses.id || tp_frame_verify(&fr, r->ses.key))) {
		snprintf(err, sizeof(err), "it fails its MAC");
		rc = -EBADMSG;
	}
	if (rc) {
		finish(fs, r, rc, "a bad reply: %s", err);
		return;
	}
	session_of(fs, r->server)->heard_ns = tp_mono_ns();
	if (fr.hdr.status < 0) { /* daemons send errors untagged; accept one anyway */
		finish(fs, r, fr.hdr.status, "%s", strerror(-fr.hdr.status));
		return;
	}
	r->reply = tp_body_unpack(&fr, tp_reply_desc(r->opcode));
	if (!r->reply) {
		finish(fs, r, -EBADMSG, "the reply to %s does not decode", tp_opcode_name(r->opcode));
		return;
	}
	if (fr.hdr.data_len > r->data_cap) { /* cannot be, by the receive's size */
		finish(fs, r, -EPROTO, "the reply carries %u bytes, %zu were asked for",
		       fr.hdr.data_len, r->data_cap);
		return;
	}
	r->data_len = fr.hdr.data_len;
	fs->copies.read_direct += fr.hdr.data_len;
	finish(fs, r, 0, NULL);
}

/* Poll the completion queue and dispatch (under lock). */
static void dispatch(tessera_fs *fs)
{
	struct tnet_event ev[16];
	int n;

	while ((n = tnet_poll(fs->net, ev, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_RECV) {
				if (!ev[i].status)
					on_reply(fs, &ev[i]);
				tnet_repost(fs->net, ev[i].rbuf);
				continue;
			}
			struct tc_req *r = ev[i].user;

			if (ev[i].type == TNET_TRECV) {
				r->rposted = 0;
				if (r->abandoned) {
					if (r->sent) {
						list_del(r);
						tc_req_free(NULL, r);
					}
				} else if (ev[i].status != -ECANCELED) {
					on_tagged(fs, r, &ev[i]);
				}
				continue;
			}
			r->sent = 1;
			if (r->abandoned) {
				if (!r->rposted) {
					list_del(r);
					tc_req_free(NULL, r);
				}
				continue;
			}
			if (ev[i].status && r->probe) {
				peer_broken(fs, r->server);
				r->replied = 1;
				probe_done(fs, r);
			} else if (ev[i].status) {
				peer_broken(fs, r->server);
				finish(fs, r, ev[i].status, "send failed: %s", strerror(-ev[i].status));
			}
		}
	}
}

/* Post r's tagged receive: its head, then the caller's runs. */
static int post_trecv(tessera_fs *fs, struct tc_req *r, void *arg)
{
	struct iovec iov[1 + TC_LEND_IOV] = { { r->rhead, TP_TAGGED_HEAD } };

	(void)arg;
	memcpy(iov + 1, r->lend, r->n_lend * sizeof(*iov));
	r->rctx.user = r;
	return tnet_trecv(fs->net, iov, 1 + r->n_lend, r->reqid, &r->rctx);
}

static int post_send(tessera_fs *fs, struct tc_req *r, void *peer)
{
	return req_send(fs, *(uint64_t *)peer, r);
}

/* Retry post(fs, r, arg) while the provider says -EAGAIN, making progress
 * in between, until r's deadline; on failure r is finished with an error
 * naming `what` (-ETIMEDOUT if the provider was still full). */
static int post_until(tessera_fs *fs, struct tc_req *r, uint64_t deadline, const char *what,
		      int (*post)(tessera_fs *fs, struct tc_req *r, void *arg), void *arg)
{
	int rc;

	while ((rc = post(fs, r, arg)) == -EAGAIN) {
		dispatch(fs);
		if (tp_mono_ns() > deadline)
			break;
	}
	if (rc) {
		if (rc == -EAGAIN)
			rc = -ETIMEDOUT;
		r->sent = 1;
		finish(fs, r, rc, "%s failed: %s", what, strerror(-rc));
	}
	return rc;
}

static int submit(tessera_fs *fs, struct tc_req *r, uint64_t deadline)
{
	uint64_t peer;
	int rc;

	r->reqid = fs->next_reqid++;
	r->deadline_ns = deadline;
	r->submit_ns = tp_mono_ns();
	/* reqid lives at byte 8 of the header, little-endian */
	for (int i = 0; i < 8; i++)
		r->frame[8 + i] = (uint8_t)(r->reqid >> (8 * i));
	if (r->opcode != TP_OP_AUTH) { /* AUTH carries its proposed key, no session */
		struct tc_session *ses = session_of(fs, r->server);

		r->ses = ses->s;
		ses->used_ns = tp_mono_ns();
		tp_frame_seal(r->frame, r->head_len, &r->ses);
	}
	rc = peer_of(fs, r->server, &peer);
	if (rc) {
		r->replied = r->sent = 1;
		r->status = rc;
		snprintf(r->errmsg, sizeof(r->errmsg), "cannot resolve its address: %s", strerror(-rc));
		return rc;
	}
	list_add(&fs->pending, r);
	if (r->lend_read && !r->rposted) {
		/* The receive is in place before the daemon can answer. */
		rc = post_until(fs, r, deadline, "posting the receive", post_trecv, NULL);
		if (rc)
			return rc;
		r->rposted = 1;
	}
	rc = post_until(fs, r, deadline, "send", post_send, &peer);
	if (rc)
		return rc;
	if (r->opcode == TP_OP_WRITE && r->lend_write) {
		for (size_t i = 0; i < r->n_lend; i++)
			fs->copies.write_direct += r->lend[i].iov_len;
	} else if (r->opcode == TP_OP_WRITE) {
		fs->copies.write_gathered += r->frame_len - r->head_len;
	}
	return 0;
}

/*
 * r's deadline has passed and the provider may still touch the caller's
 * memory for it (under lock): forget the peer, so that rxm closes its
 * connection and flushes what it can, cancel the receive, and collect
 * what completes. run() waits a grace period more, then lets r go.
 */
#define TC_LET_GO_NS (100ull * 1000000u)

static void reclaim(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	if (r->reclaim_ns)
		return;
	r->reclaim_ns = now;
	/* If the peer was forgotten since r was sent, the connection r used
	 * was closed then; forgetting a newer one costs a reconnection. */
	peer_broken(fs, r->server);
	if (r->rposted && !r->rcancel) {
		r->rcancel = 1;
		tnet_cancel(fs->net, &r->rctx);
	}
	dispatch(fs);
}

/* Send reqs and wait for them (tc_run, with sessions in place). */
static int run(tessera_fs *fs, struct tc_req **reqs, size_t n)
{
	uint64_t timeout = (uint64_t)fs->cfg.timeout_ms * 1000000u;
	uint64_t deadline = tp_mono_ns() + timeout;
	int first = 0;

	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < n; i++)
		if (!reqs[i]->replied) /* else: failed before (no session) */
			submit(fs, reqs[i], deadline);
	for (;;) {
		size_t open = 0;
		uint64_t now = tp_mono_ns();

		expire_probes(fs, now);
		for (size_t i = 0; i < n; i++) {
			struct tc_req *r = reqs[i];

			maybe_probe(fs, r, now);
			if (!r->replied && now > r->deadline_ns) {
				finish(fs, r, -ETIMEDOUT, "timed out after %u ms", fs->cfg.timeout_ms);
				peer_broken(fs, r->server);
			}
			/* Answered (or failed) with its tagged receive still
			 * posted: nothing more may land in the caller's buffer. */
			if (r->replied && r->rposted && !r->rcancel) {
				r->rcancel = 1;
				tnet_cancel(fs->net, &r->rctx);
			}
			if (lends(r) && !r->let_go && now > r->deadline_ns) {
				reclaim(fs, r, now);
				if (lends(r) && now > r->reclaim_ns + TC_LET_GO_NS)
					r->let_go = 1;
			}
			open += !r->replied || !r->sent || (lends(r) && !r->let_go);
		}
		if (!open)
			break;
		/* Replied but a send of the request's own frame has not
		 * completed (rare): wait a while, then let tc_req_free hand it
		 * to the zombie list. A send or receive of lent memory is
		 * waited for (above). */
		int waiting_only_for_sends = 1;
		for (size_t i = 0; i < n; i++)
			if (!reqs[i]->replied || (lends(reqs[i]) && !reqs[i]->let_go))
				waiting_only_for_sends = 0;
		if (waiting_only_for_sends && now > deadline)
			break; /* tc_req_free parks the unsent ones */
		if (!fs->progressing) {
			fs->progressing = 1;
			pthread_mutex_unlock(&fs->lock);
			tnet_wait(fs->net, 1);
			pthread_mutex_lock(&fs->lock);
			dispatch(fs);
			fs->progressing = 0;
			pthread_cond_broadcast(&fs->cond);
		} else {
			struct timespec ts = tp_real_deadline(20);

			pthread_cond_timedwait(&fs->cond, &fs->lock, &ts);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (reqs[i]->status && !first)
			first = reqs[i]->status;
	pthread_mutex_unlock(&fs->lock);
	return first;
}

/* Open a session with `server`: a fresh MUNGE credential (for this
 * daemon only) proposing a random key; the daemon answers with the
 * session's id, in a reply sealed with that key. */
static int authenticate(tessera_fs *fs, int server)
{
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	const Tessera__AuthReply *rep;
	struct tc_session *ses = session_of(fs, server);
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
	rc = tp_auth_encode(fs->cfg.munge_socket, target, fs->name, fs->name_len, key, &cred,
			    err, sizeof(err));
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
	rc = run(fs, &r, 1);
	if (rc) {
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
		struct tc_session *ses = session_of(fs, reqs[i]->server);
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
	rc = run(fs, reqs, n);
	tc_trace_request(fs, reqs, n, tp_mono_ns() - t);
	return rc;
}

int tc_req_fail(tessera_fs *fs, struct tc_req *req, const char *what)
{
	char server[200];

	tc_server_name(fs, req->server, server, sizeof(server));
	return tc_fail(fs, req->status, "%s: %s: %s", what, server,
		       req->errmsg[0] ? req->errmsg : strerror(-req->status));
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
