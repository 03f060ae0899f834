/*
 * daemon.c - the event loop of both daemons: libev watchers over the tnet
 * endpoint, frame checking and dispatch through the role's opcode table,
 * the tick, wakeups from other threads, signals; ping and the core's
 * stats; creating and destroying a core (over the network or in-process;
 * srv_run, which runs one, is in daemon_notify.c); the daemons' common
 * command line and pidfile (the log is in daemon_log.c).
 *
 * Ownership: a received frame lies in its receive buffer, which is
 * reposted once its handler returns; a request answered later is parked
 * (daemon_peer.c) with a copy of what it needs. Parked requests answered
 * during a loop iteration are freed at its end (srv_parked_reap), so the
 * loop's callbacks may hold pointers to them until then.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <sodium.h>

#include "daemon_int.h"
#include "session.h"

#define SRV_TRIM_ABOVE (32u << 20) /* debt after which freed memory is returned */

/* ------------------------------------------------------------ requests */

/* Check a session's frame (its tag, in the session's mode; its sequence
 * number new) and decrypt its body and data in place (the receive
 * buffer's): 0, -EBADMSG or -EALREADY. */
static int open_frame(struct srv_session *ses, const struct tp_frame *f)
{
	struct tp_session s = { .id = ses->ident.session, .mode = ses->mode };
	int rc;

	memcpy(s.key, ses->ident.key, TP_KEY_SIZE);
	rc = tp_frame_open(f, NULL, 0, &s, &ses->rx);
	sodium_memzero(s.key, sizeof(s.key));
	return rc;
}

/* ------------------------------------------------- tags checked later */

static int is_held(const struct srv_session *ses, uint64_t seq)
{
	for (unsigned i = 0; i < ses->n_held; i++)
		if (ses->held[i] == seq)
			return 1;
	return 0;
}

static void unhold(struct srv_session *ses, uint64_t seq)
{
	for (unsigned i = 0; i < ses->n_held; i++)
		if (ses->held[i] == seq) {
			ses->held[i] = ses->held[--ses->n_held];
			return;
		}
}

/* Whether the role checks f's tag later, off the loop (daemon.h,
 * srv_seal_check): bulk data, sealed in the session's mode (INTEGRITY or
 * SECRECY), room to hold the number, and the number new. */
static int checks_later(struct srv *srv, const struct srv_session *ses,
			const struct srv_req *req)
{
	const struct tp_hdr *h = &req->frame.hdr;
	uint16_t want = ses->mode == TP_SEAL_SECRECY ? TP_FLAG_SECRET : 0;

	return srv->check_later && ses->mode != TP_SEAL_MEASURE &&
	       (h->flags & (TP_FLAG_SECRET | TP_FLAG_DATA_OPEN | TP_FLAG_REPLY)) == want &&
	       srv_takes_rbuf(req) && ses->n_held < SRV_SESSION_HELD &&
	       !tp_replay_check(&ses->rx, h->seq) && srv->check_later(srv->check_later_arg, h);
}

void srv_check_later_set(struct srv *srv, int (*fn)(void *arg, const struct tp_hdr *hdr),
			 void *arg)
{
	srv->check_later = fn;
	srv->check_later_arg = arg;
}

/* A SECRECY frame's body between ciphertext and plaintext (its own
 * inverse, tp_frame_crypt_body): the loop decodes an unchecked frame's
 * body, its check needs the ciphertext. */
static void crypt_body(const struct srv_session *ses, const struct tp_frame *f)
{
	struct tp_session s = { .id = ses->ident.session, .mode = ses->mode };

	memcpy(s.key, ses->ident.key, TP_KEY_SIZE);
	tp_frame_crypt_body(f, &s);
	sodium_memzero(s.key, sizeof(s.key));
}

/* Check a session's frame now (open_frame), or hold its number for a
 * check off the loop (req->unchecked; a secret body decrypted for the
 * handler). A number held by another frame is refused: two copies of
 * one frame must not both pass. 0, -EBADMSG or -EALREADY. */
static int open_or_hold(struct srv *srv, struct srv_session *ses, struct srv_req *req)
{
	if (is_held(ses, req->frame.hdr.seq))
		return -EALREADY;
	if (checks_later(srv, ses, req)) {
		ses->held[ses->n_held++] = req->frame.hdr.seq;
		req->unchecked = 1;
		crypt_body(ses, &req->frame);
		return 0;
	}
	return open_frame(ses, &req->frame);
}

int srv_req_check(struct srv_req *req)
{
	struct srv *srv = req->srv;
	struct srv_session *ses;
	int rc;

	if (!req->unchecked)
		return 0;
	req->unchecked = 0;
	ses = srv_session_find(srv->sessions, req->frame.hdr.session);
	if (ses) {
		unhold(ses, req->frame.hdr.seq);
		crypt_body(ses, &req->frame); /* back to what was sealed */
	}
	rc = ses ? open_frame(ses, &req->frame) : -EBADMSG;
	if (rc) {
		req->replied = 1;
		srv_unauthenticated(srv, rc == -EALREADY ? "replayed or too old" : "bad seal");
	}
	return rc;
}

void srv_checked(struct srv *srv, struct srv_req *parked, struct srv_seal_check *c, int rc)
{
	struct srv_session *ses = srv_session_find(srv->sessions, c->s.id);

	if (ses) {
		unhold(ses, c->frame.hdr.seq);
		/* Held, the number was new and nobody else could take it; it
		 * may have fallen out of the window since (then too old for
		 * any copy too), so a refusal here changes nothing. */
		if (!rc)
			(void)tp_replay_accept(&ses->rx, c->frame.hdr.seq);
	}
	sodium_memzero(c->s.key, sizeof(c->s.key));
	if (rc)
		srv_unauthenticated(srv, "bad seal");
	if (parked)
		srv_park_checked(parked, rc);
}

/* reply_unless_session's in-process daemon (no transport): every frame is
 * the one local peer's; only an AUTH, and only with a local decoder, is
 * dealt with here. */
static int reply_unless_local(struct srv *srv, struct srv_req *req, int rc)
{
	req->peer = srv->local_peer;
	req->ident = srv->local_ident;
	if (rc || req->frame.hdr.opcode != TP_OP_AUTH)
		return 0;
	if (srv->local_decode && !(req->frame.hdr.flags & TP_FLAG_REPLY))
		srv_auth(srv, req);
	else
		srv_reply_error(req, -EOPNOTSUPP, "AUTH: an in-process daemon has no sessions");
	return 1;
}

/* Who sent the frame: a session's frames are answered at the session's
 * address (never at one the frame claims), once their seal is right and
 * their sequence number new. A
 * frame that cannot be checked (cut, malformed; rc) is answered only when
 * it names a session: its owner, and nobody else, hears of it. Frames
 * outside a session are dealt with here (AUTH answered, others dropped):
 * 1 then, 0 with req->peer and req->ident set to go on. */
static int reply_unless_session(struct srv *srv, struct srv_req *req, int rc)
{
	struct srv_session *ses;

	if (!srv->net)
		return reply_unless_local(srv, req, rc);
	if (!req->frame.hdr.session) {
		if (!rc && req->frame.hdr.opcode == TP_OP_AUTH &&
		    !(req->frame.hdr.flags & TP_FLAG_REPLY))
			srv_auth(srv, req);
		else
			srv_unauthenticated(srv, "no session");
		return 1;
	}
	ses = srv_session_find(srv->sessions, req->frame.hdr.session);
	if (!ses) {
		srv_unauthenticated(srv, "unknown session");
		return 1;
	}
	if (!rc && (rc = open_or_hold(srv, ses, req))) {
		srv_unauthenticated(srv, rc == -EALREADY ? "replayed or too old" : "bad seal");
		return 1;
	}
	/* Connected transport: a session lives on the connection that opened
	 * it; another connection must authenticate afresh. */
	if (req->src != TNET_PEER_UNKNOWN && req->src != ses->peer) {
		if (req->unchecked)
			unhold(ses, req->frame.hdr.seq);
		srv_unauthenticated(srv, "a session's frame on another connection");
		return 1;
	}
	ses->last_used = tp_mono_s();
	req->peer = ses->peer;
	req->ident = ses->ident;
	return 0;
}

/* A sender's frame the daemon cannot serve: no room for its reply, a
 * frame error (rc, err), a reply, an opcode this role does not serve, a
 * body that does not decode. The negative errno answered, or 0 with
 * *handler set and req->msg decoded. */
static int refuse_frame(struct srv *srv, struct srv_req *req, int rc, const char *err,
			srv_handler *handler)
{
	const struct tp_hdr *h = &req->frame.hdr;
	struct srv_peer *p = srv_peer_find(srv, req->peer);
	const ProtobufCMessageDescriptor *desc;

	if (!srv_room_for(srv, p, srv->max_frame)) {
		srv->count.requests_refused++;
		srv_reply_error(req, -EBUSY, "request %llu: the %s daemon owes %zu bytes of "
				"replies (limit %zu per client, %zu in all): read them first",
				(unsigned long long)h->reqid, srv->role.name, p->bytes,
				srv->lim.peer_bytes, srv->lim.budget_bytes);
		return -EBUSY;
	}
	if (rc) {
		srv_reply_error(req, rc, "request %llu: %s", (unsigned long long)h->reqid, err);
		return rc;
	}
	if (h->flags & TP_FLAG_REPLY) {
		srv_reply_error(req, -EPROTO, "a reply was sent to the %s daemon", srv->role.name);
		return -EPROTO;
	}
	*handler = h->opcode < TP_OP_LIMIT ? srv->role.handlers[h->opcode] : NULL;
	if (!*handler) {
		srv_reply_error(req, -EOPNOTSUPP, "%s is not served by the %s daemon",
				tp_opcode_name(h->opcode), srv->role.name);
		return -EOPNOTSUPP;
	}
	desc = tp_request_desc(h->opcode);
	req->msg = tp_body_unpack(&req->frame, desc);
	if (!req->msg) {
		srv_reply_error(req, -EBADMSG, "%s: the %u-byte body does not decode as %s",
				tp_opcode_name(h->opcode), h->body_len, desc->name);
		return -EBADMSG;
	}
	return 0;
}

/* Check, decode and dispatch one received frame of ev->len bytes in
 * ev->rbuf->data (ev->status: -EMSGSIZE when the transport truncated it). */
static void handle_frame(struct srv *srv, const struct tnet_event *ev)
{
	struct srv_req req = { .srv = srv, .rbuf = srv->net ? ev->rbuf : NULL,
			       .src = srv->net ? ev->peer : TNET_PEER_UNKNOWN };
	srv_handler handler = NULL;
	char err[256];
	int rc;

	rc = tp_frame_parse(ev->rbuf->data, ev->len, srv->max_frame, &req.frame, err, sizeof(err));
	if (ev->status == -EMSGSIZE && rc == -EPROTO)
		rc = -EMSGSIZE; /* truncated by the transport: say so */
	if (rc == -EMSGSIZE && ev->status == -EMSGSIZE)
		snprintf(err, sizeof(err), "frame larger than the %zu-byte maximum", srv->max_frame);
	if (ev->status == -EMSGSIZE && ev->len < TP_HDR_SIZE) {
		/* connected mode: tcp keeps nothing of it, and closes */
		srv_warn(srv, "dropped a message larger than the %zu-byte receive buffer "
			 "(max_io + 256 KiB) unanswered: its sender ignored the limit this "
			 "daemon announced when it connected; the connection is closed",
			 srv->max_frame);
		return;
	}
	if (ev->len < TP_HDR_SIZE) {
		srv_warn(srv, "dropped a %zu-byte message: %s", ev->len, err);
		return;
	}
	if (reply_unless_session(srv, &req, rc))
		return;
	if (srv_admit(srv, &req))
		return; /* dropped */
	if (refuse_frame(srv, &req, rc, err, &handler))
		return;
	handler(srv->role.ctx, &req);
	if (!req.replied)
		srv_reply_error(&req, -EIO, "%s: the daemon produced no answer",
				tp_opcode_name(req.frame.hdr.opcode));
	if (req.msg)
		protobuf_c_message_free_unpacked(req.msg, NULL);
	srv_peer_release_if_idle(srv, srv_peer_find(srv, req.peer));
}

static void handle_recv(struct srv *srv, const struct tnet_event *ev)
{
	if (ev->status && ev->status != -EMSGSIZE)
		srv_error(srv, "receive failed: %s", strerror(-ev->status));
	else
		handle_frame(srv, ev);
	tnet_repost(srv->net, ev->rbuf);
}

static void drain(struct srv *srv)
{
	struct tnet_event ev[16];
	int n;

	do {
		n = tnet_poll(srv->net, ev, 16);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_SENT)
				srv_tx_done(srv, &ev[i]);
			else if (ev[i].type == TNET_CLOSED)
				/* a session lives on its connection: no frame can
				 * name it again (its client may have died) */
				srv_sessions_drop_peer(srv->sessions, ev[i].peer);
			else
				handle_recv(srv, &ev[i]);
		}
		srv_commit_turn(srv); /* one commit for the frames of this poll */
		if (srv->waiting)
			srv_pump_all(srv);
		else
			srv->eagain = 0; /* nothing left to retry */
	} while (n > 0);
	srv_parked_reap(srv);
	if (n < 0)
		srv_error(srv, "completion queue: %s", strerror(-n));
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop, (void)revents;
	drain(w->data);
}

static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	drain(srv);
	/* A polled provider keeps the idle watcher, and so does a send that
	 * met -EAGAIN until it goes out. */
	if (tnet_fd(srv->net) >= 0 && !srv->eagain)
		ev_idle_stop(loop, w);
}

/* Before the loop blocks: only if libfabric agrees nothing is pending. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	if (srv->eagain || tnet_trywait(srv->net))
		ev_idle_start(loop, &srv->idle);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct srv *srv = w->data;

	(void)loop, (void)revents;
	drain(srv);
	srv_expire_all(srv);
	if (tp_mono_s() - srv->sessions_expired_at > 1.0) {
		srv->sessions_expired_at = tp_mono_s();
		srv_sessions_expire(srv->sessions, srv->sessions_expired_at);
	}
	if (srv->role.tick)
		srv->role.tick(srv->role.ctx);
	srv_parked_reap(srv);
	/* After a burst of debt (a client that stopped reading, say), give
	 * the freed memory back to the system once the debt is small again;
	 * malloc keeps it otherwise. Replies stay on the heap meanwhile, which
	 * keeps the common case free of page faults. */
	if (srv->peak_bytes > SRV_TRIM_ABOVE && srv->bytes < SRV_TRIM_ABOVE / 4) {
		malloc_trim(0);
		srv->peak_bytes = srv->bytes;
	}
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
	struct srv *srv = w->data;

	(void)loop, (void)revents;
	if (srv->wake_fn)
		srv->wake_fn(srv->wake_arg);
	srv_parked_reap(srv);
}

int srv_wakeup_set(struct srv *srv, void (*fn)(void *arg), void *arg)
{
	if (!srv->loop)
		return -ENOTSUP;
	srv->wake_fn = fn;
	srv->wake_arg = arg;
	return 0;
}

void srv_wakeup(struct srv *srv)
{
	ev_async_send(srv->loop, &srv->wake); /* libev's one call safe from any thread */
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	srv_log(srv, "signal %d: shutting down", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* ------------------------------------------------------------ ping */

void srv_core_stats(struct srv *srv, Tessera__CoreStats *out)
{
	tessera__core_stats__init(out);
	out->reply_entries = srv->entries - srv->parked;
	out->reply_bytes = srv->bytes - srv->parked_bytes;
	out->posted_entries = srv->posted;
	out->parked = srv->parked;
	out->parked_bytes = srv->parked_bytes;
	out->peers = srv->npeers;
	out->replies_expired = srv->count.replies_expired;
	out->requests_refused = srv->count.requests_refused;
	out->requests_dropped = srv->count.requests_dropped;
	out->peers_closed = srv->count.peers_closed;
	out->parked_expired = srv->count.parked_expired;
	out->parked_gone = srv->count.parked_gone;
	out->parked_data_kept = srv->count.data_kept;
	out->parked_data_copied = srv->count.data_copied;
	out->abandoned = srv->abandoned.n;
	out->budget_bytes = srv->lim.budget_bytes;
	out->peer_budget_bytes = srv->lim.peer_bytes;
	out->sessions = srv->sessions ? srv_sessions_count(srv->sessions) : 0;
	out->frames_unauthenticated = srv->count.unauthenticated;
}

static void reply_ping(struct srv *srv, struct srv_req *req)
{
	Tessera__PingReply rep = TESSERA__PING_REPLY__INIT;
	Tessera__CoreStats core;

	srv_core_stats(srv, &core);
	rep.role = (char *)srv->role.name;
	rep.index = srv->role.index;
	rep.version = TP_VERSION_STRING;
	rep.core = &core;
	srv_reply(req, &rep.base, NULL, 0);
}

static void ping_held(void *arg, struct srv_req *req, int reason)
{
	(void)arg;
	if (reason == -ETIMEDOUT) /* the hold is over */
		reply_ping(req->srv, req);
}

void srv_ping(struct srv *srv, struct srv_req *req)
{
	const Tessera__PingRequest *m = (const Tessera__PingRequest *)req->msg;
	struct srv_req *held;
	int rc;

	if (!m->hold_ms) {
		reply_ping(srv, req);
		return;
	}
	rc = srv_park(req, m->hold_ms, ping_held, NULL, &held);
	if (rc)
		srv_reply_error(req, rc, "ping: cannot hold the request: %s", strerror(-rc));
}

/* ------------------------------------------------------------ life */

/* A daemon core without endpoint or loop yet. */
static struct srv *srv_alloc(const struct srv_opts *opts, const struct srv_role *role)
{
	struct srv *srv = calloc(1, sizeof(*srv));
	const struct srv_limits defaults = {
		SRV_BUDGET_BYTES, SRV_PEER_BYTES, SRV_PEER_ENTRIES, SRV_TOTAL_ENTRIES,
		SRV_PEER_POSTED, SRV_TOTAL_POSTED,
	};

	if (!srv)
		return NULL;
	srv->role = *role;
	srv_log_open(srv, opts->log);
	srv->cfg = opts->cfg;
	srv->lim = opts->limits ? *opts->limits : defaults;
	srv->max_frame = tp_config_max_frame(opts->cfg);
	srv->timeout_s = opts->cfg->timeout_ms / 1000.0;
	srv->gen_next = 1; /* a hold's replies wait for a commit not yet done */
	if (!strcmp(role->name, "mds"))
		snprintf(srv->target, sizeof(srv->target), "mds");
	else
		snprintf(srv->target, sizeof(srv->target), "%s:%u", role->name, role->index);
	srv->local_ident.ngids = 1; /* uid 0, gid 0 */
	if (opts->cfg->measure_seal_off)
		srv_warn(srv, "measure_seal_off = 1: clients that also say so get sessions whose "
			 "raw data is not sealed (for measurement only)");
	if (srv_sessions_create(opts->cfg->sessions_max, opts->cfg->sessions_per_uid,
				opts->cfg->session_idle_s, &srv->sessions)) {
		free(srv);
		return NULL;
	}
	if (role->session_end)
		srv_sessions_on_end(srv->sessions, role->session_end, role->ctx);
	randombytes_buf(&srv->boot, sizeof(srv->boot));
	srv_admins_load(srv);
	return srv;
}

void srv_local_identity(struct srv *srv, uint32_t uid, uint32_t gid)
{
	memset(&srv->local_ident, 0, sizeof(srv->local_ident));
	srv->local_ident.uid = uid;
	srv->local_ident.gid = gid;
	srv->local_ident.gids[0] = gid;
	srv->local_ident.ngids = 1;
}

int srv_create(const struct srv_opts *opts, const struct srv_role *role, struct srv **out,
	       char *err, size_t errlen)
{
	struct srv *srv = srv_alloc(opts, role);
	struct tnet_opts to = {
		.provider = opts->cfg->provider,
		.node = opts->host,
		.service = opts->port,
		.listen = 1,
		.nrecv = opts->nrecv,
	};
	int rc;

	if (!srv)
		return -ENOMEM;
	/* Closing a peer's connection (tnet_forget) must release what the
	 * provider holds for it: libfabric's documented switch. */
	setenv("FI_AV_REMOVE_CLEANUP", "1", 1);
	/* Read replies are up to max_io bytes each and live for one request.
	 * Left to itself, glibc serves such blocks by mmap, or trims the
	 * heap's top after a free, so each request paid page faults and the
	 * zeroing of a fresh MiB: a third of a storage daemon's time in a
	 * streaming read. Keep them on the heap (below the mmap threshold,
	 * whose most is 32 MiB) and leave trimming to on_tick's malloc_trim
	 * after a burst of debt. */
	mallopt(M_MMAP_THRESHOLD, (int)(2 * srv->max_frame < SRV_TRIM_ABOVE ? 2 * srv->max_frame
									    : SRV_TRIM_ABOVE));
	mallopt(M_TRIM_THRESHOLD, (int)SRV_TRIM_ABOVE);
	to.buf_size = srv->max_frame;
	rc = tnet_open(&to, &srv->net, err, errlen);
	if (rc) {
		srv_sessions_destroy(srv->sessions);
		free(srv);
		return rc;
	}
	srv->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!srv->loop) {
		snprintf(err, errlen, "ev_loop_new failed");
		tnet_close(srv->net);
		srv_sessions_destroy(srv->sessions);
		free(srv);
		return -ENOMEM;
	}
	ev_io_init(&srv->io, on_io, tnet_fd(srv->net), EV_READ);
	ev_prepare_init(&srv->prepare, on_prepare);
	ev_idle_init(&srv->idle, on_idle);
	ev_timer_init(&srv->tick, on_tick, SRV_TICK_S, SRV_TICK_S);
	ev_signal_init(&srv->sigterm, on_signal, SIGTERM);
	ev_signal_init(&srv->sigint, on_signal, SIGINT);
	srv->io.data = srv->prepare.data = srv->idle.data = srv->tick.data = srv;
	ev_async_init(&srv->wake, on_wake);
	srv->sigterm.data = srv->sigint.data = srv->wake.data = srv;
	if (tnet_fd(srv->net) >= 0)
		ev_io_start(srv->loop, &srv->io);
	else
		srv_warn(srv, "provider %s has no wait fd: polling", opts->cfg->provider);
	ev_prepare_start(srv->loop, &srv->prepare);
	ev_timer_start(srv->loop, &srv->tick);
	ev_signal_start(srv->loop, &srv->sigterm);
	ev_signal_start(srv->loop, &srv->sigint);
	ev_async_start(srv->loop, &srv->wake);
	rc = srv_commit_start(srv);
	if (rc) {
		snprintf(err, errlen, "the commit thread: %s", strerror(-rc));
		srv_destroy(srv);
		return rc;
	}
	*out = srv;
	return 0;
}

/* srv_run is in daemon_notify.c (it links libsystemd). */

/* ------------------------------------------------------------ in-process */

int srv_create_local(const struct srv_opts *opts, const struct srv_role *role,
		     srv_sink_fn sink, void *arg, struct srv **out)
{
	struct srv *srv = srv_alloc(opts, role);

	if (!srv)
		return -ENOMEM;
	srv->sink = sink;
	srv->sink_arg = arg;
	*out = srv;
	return 0;
}

void srv_local_auth(struct srv *srv, srv_cred_decoder decode, void *arg)
{
	srv->local_decode = decode;
	srv->local_decode_arg = arg;
}

void srv_deliver(struct srv *srv, uint64_t peer, const void *frame, size_t len)
{
	struct tnet_rbuf rbuf = { .cap = len, .data = (uint8_t *)frame };
	struct tnet_event ev = { .type = TNET_RECV, .rbuf = &rbuf, .len = len };

	if (len > srv->max_frame) { /* what a receive buffer would have kept */
		ev.len = srv->max_frame;
		ev.status = -EMSGSIZE;
	}
	srv->local_peer = peer;
	handle_frame(srv, &ev);
	srv_commit_turn(srv);
	srv_parked_reap(srv);
}

void srv_local_tick(struct srv *srv)
{
	srv_expire_all(srv);
	if (srv->role.tick)
		srv->role.tick(srv->role.ctx);
	srv_parked_reap(srv);
}

void srv_destroy(struct srv *srv)
{
	if (!srv)
		return;
	/* Parked requests learn the daemon is stopping; then the endpoint
	 * closes, after which the provider holds no reply any more. */
	srv_peers_shutdown(srv);
	srv_commit_stop(srv);
	if (srv->loop)
		ev_loop_destroy(srv->loop);
	if (srv->net)
		tnet_close(srv->net);
	srv_peers_free(srv);
	srv_sessions_destroy(srv->sessions);
	srv_log_close(srv);
	free(srv);
}

static void srv_usage(FILE *out, const char *prog, const char *extra)
{
	fprintf(out,
		"usage: %s -c CONFIG -d DIR [-i INDEX] [-p PIDFILE] [-v] [-L stderr|syslog]\n"
		"       %s -c CONFIG -t\n"
		"       %s -h|--help | --version\n"
		"\n"
		"  -c CONFIG  the file system's config (tessera.conf(5))\n"
		"  -d DIR     the daemon's directory (its store)\n"
		"  -i INDEX   which daemon of the config this is (default 0)\n"
		"  -p PIDFILE write the pid there once serving\n"
		"  -v         log debug lines too (levels: error, warn, info, debug)\n"
		"  -L TARGET  log to stderr (the default) or to syslog (journald reads it)\n"
		"  -t         parse CONFIG as the daemon would, say whether it is valid, exit\n"
		"%s",
		prog, prog, prog, extra ? extra : "");
}

/* -L's value. */
static int srv_log_target_named(const char *name, enum srv_log_target *out)
{
	if (!strcmp(name, "stderr"))
		*out = SRV_LOG_STDERR;
	else if (!strcmp(name, "syslog"))
		*out = SRV_LOG_SYSLOG;
	else
		return -EINVAL;
	return 0;
}

/* The long options every program has; getopt_long answers the short ones. */
enum { SRV_OPT_VERSION = 256 };

/* One option getopt_long returned, into cl: SRV_CMDLINE_RUN to go on, or
 * what the caller does now (help and version answered, a usage error said). */
static enum srv_cmdline_result srv_take_option(int opt, const char *prog, const char *extra,
					       struct srv_cmdline *cl)
{
	switch (opt) {
	case 'c': cl->config = optarg; break;
	case 'd': cl->dir = optarg; break;
	case 'i': cl->index = (uint32_t)strtoul(optarg, NULL, 10); break;
	case 'p': cl->pidfile = optarg; break;
	case 'v': cl->log.threshold = SRV_LOG_DEBUG; break;
	case 't': cl->check_only = 1; break;
	case 'L':
		if (srv_log_target_named(optarg, &cl->log.target)) {
			fprintf(stderr, "%s: -L %s: the log goes to stderr or syslog\n", prog, optarg);
			return SRV_CMDLINE_USAGE;
		}
		break;
	case 'h':
		srv_usage(stdout, prog, extra);
		return SRV_CMDLINE_DONE;
	case SRV_OPT_VERSION:
		printf("%s %s\n", prog, TP_VERSION_STRING);
		return SRV_CMDLINE_DONE;
	default:
		srv_usage(stderr, prog, extra);
		return SRV_CMDLINE_USAGE;
	}
	return SRV_CMDLINE_RUN;
}

enum srv_cmdline_result srv_parse_cmdline(int argc, char **argv, const char *prog,
					  const char *extra, struct srv_cmdline *cl)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, SRV_OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const struct srv_log_opts log = SRV_LOG_OPTS_DEFAULT;
	enum srv_cmdline_result r;
	int opt;

	memset(cl, 0, sizeof(*cl));
	cl->log = log;
	while ((opt = getopt_long(argc, argv, "c:d:i:p:L:vth", longopts, NULL)) != -1)
		if ((r = srv_take_option(opt, prog, extra, cl)) != SRV_CMDLINE_RUN)
			return r;
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", prog, argv[optind],
			prog);
		return SRV_CMDLINE_USAGE;
	}
	if (!cl->config || (!cl->dir && !cl->check_only)) {
		fprintf(stderr, "%s: -c CONFIG and -d DIR are required (see %s --help)\n", prog, prog);
		return SRV_CMDLINE_USAGE;
	}
	return SRV_CMDLINE_RUN;
}

int srv_cmdline_exit_status(enum srv_cmdline_result r)
{
	return r == SRV_CMDLINE_USAGE ? 2 : 0;
}

int srv_write_pidfile(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (!path)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}
