/*
 * daemon_peer.c - what the daemon owes each peer: its record, its reply
 * queues (waiting, then posted to the provider), its parked requests, the
 * budgets they are charged to, their deadlines, and the admission of a
 * new request against them.
 *
 * Ownership: a reply (struct srv_tx) belongs to its peer's queue from
 * srv_send() until its send completes (then freed), its deadline passes
 * unsent (freed), or its peer is closed while the provider still holds it
 * (then its data is freed and the small record is kept on the abandoned
 * list, because the provider may still report its context; it is freed
 * when that happens or at exit). A parked request is on its peer's list
 * until it is answered or dropped, then on srv->retired until
 * srv_parked_reap() frees it at the end of the loop iteration. A peer
 * record exists only while it is owed something: a reply or a parked
 * request.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "daemon_int.h"
#include "session.h"

/* ------------------------------------------------------------ lists */

static void txlist_append(struct srv_txlist *l, struct srv_tx *tx)
{
	tx->next = NULL;
	tx->prev = l->tail;
	if (l->tail)
		l->tail->next = tx;
	else
		l->head = tx;
	l->tail = tx;
	l->n++;
}

static void txlist_remove(struct srv_txlist *l, struct srv_tx *tx)
{
	if (tx->prev)
		tx->prev->next = tx->next;
	else
		l->head = tx->next;
	if (tx->next)
		tx->next->prev = tx->prev;
	else
		l->tail = tx->prev;
	tx->prev = tx->next = NULL;
	l->n--;
}

/* ------------------------------------------------------------ peers */

static unsigned peer_bucket(uint64_t addr)
{
	return (unsigned)((addr * 0x9e3779b97f4a7c15ull) >> 54) & (SRV_PEER_BUCKETS - 1);
}

struct srv_peer *srv_peer_find(struct srv *srv, uint64_t addr)
{
	for (struct srv_peer *p = srv->buckets[peer_bucket(addr)]; p; p = p->hnext)
		if (p->addr == addr)
			return p;
	return NULL;
}

static struct srv_peer *peer_get(struct srv *srv, uint64_t addr)
{
	struct srv_peer *p = srv_peer_find(srv, addr);
	unsigned b = peer_bucket(addr);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->addr = addr;
	p->hnext = srv->buckets[b];
	srv->buckets[b] = p;
	p->next = srv->peers;
	if (srv->peers)
		srv->peers->prev = p;
	srv->peers = p;
	srv->npeers++;
	return p;
}

/* Free a peer record that is owed nothing. */
void srv_peer_release_if_idle(struct srv *srv, struct srv_peer *p)
{
	struct srv_peer **pp;

	if (!p || p->entries)
		return;
	for (pp = &srv->buckets[peer_bucket(p->addr)]; *pp != p; pp = &(*pp)->hnext)
		;
	*pp = p->hnext;
	if (p->prev)
		p->prev->next = p->next;
	else
		srv->peers = p->next;
	if (p->next)
		p->next->prev = p->prev;
	srv->npeers--;
	free(p);
}

static void charge(struct srv *srv, struct srv_peer *p, size_t cost)
{
	p->entries++;
	p->bytes += cost;
	srv->entries++;
	srv->bytes += cost;
	if (srv->bytes > srv->peak_bytes)
		srv->peak_bytes = srv->bytes;
}

static void uncharge(struct srv *srv, struct srv_peer *p, size_t cost)
{
	p->entries--;
	p->bytes -= cost;
	srv->entries--;
	srv->bytes -= cost;
	if (!p->entries)
		p->warned = 0;
}

/* Room for one more entry of `cost` bytes for this peer? */
int srv_room_for(const struct srv *srv, const struct srv_peer *p, size_t cost)
{
	return p->entries < srv->lim.peer_entries && srv->entries < srv->lim.total_entries &&
	       p->bytes + cost <= srv->lim.peer_bytes && srv->bytes + cost <= srv->lim.budget_bytes;
}

/* ------------------------------------------------------------ replies */

static void tx_free(struct srv_tx *tx)
{
	free(tx->data);
	free(tx);
}

/* A send to p met -EAGAIN: retried at once for a short while (a new
 * connection's set-up), then once a tick; peer_expire gives up on p after
 * SRV_REACH_S. Retrying at once for good would spin the loop: rxm answers
 * -EAGAIN for as long as it cannot connect, and connects anew on each try. */
static void peer_stalled(struct srv *srv, struct srv_peer *p)
{
	double now = tp_mono_s();

	if (!p->stalled_since)
		p->stalled_since = now;
	if (now - p->stalled_since < SRV_STALL_SPIN_S)
		srv->eagain = 1;
	else
		p->retry_at = now + SRV_TICK_S;
}

/* Whether p's waiting replies may go to the provider now: not while p is
 * stalled (the tick tries again). */
static int peer_may_post(const struct srv_peer *p)
{
	return !(p->stalled_since && p->retry_at && tp_mono_s() < p->retry_at);
}

/* Whether a reply waits for a commit (daemon_commit.c): it may tell of a
 * change not yet durable. Replies leave in order, so the first that waits
 * holds back those behind it. */
static int tx_waits_commit(const struct srv *srv, const struct srv_tx *tx)
{
	return tx->gen > srv->gen_done || srv->commit_failed;
}

/* The floor a reply's need must stay under (srv_role.acks_floor). */
static uint64_t acks_floor(const struct srv *srv)
{
	return srv->role.acks_floor ? srv->role.acks_floor(srv->role.ctx) : UINT64_MAX;
}

/* Hand one waiting reply to the provider (in process: deliver it): it
 * leaves the waiting list, posted or, if that failed, dropped; -EAGAIN
 * when the provider cannot take it now (it stays). */
static int tx_send(struct srv *srv, struct srv_peer *p, struct srv_tx *tx)
{
	struct iovec iov[2] = { { tx->head, tx->head_len }, { tx->data, tx->data_len } };
	int n = tx->data_len ? 2 : 1, rc = -ENOSYS;

	if (!srv->net) { /* in-process: delivered at once */
		txlist_remove(&p->waiting, tx);
		srv->waiting--;
		srv->sink(srv->sink_arg, p->addr, iov, n);
		uncharge(srv, p, tx->cost);
		tx_free(tx);
		return 0;
	}
	if (tx->tagged)
		rc = tnet_tsend(srv->net, p->addr, iov, n, tx->tag, &tx->ctx);
	if (rc == -ENOSYS) /* (no tagged messages: the client copes) */
		rc = tnet_send(srv->net, p->addr, iov, n, &tx->ctx);
	if (rc == -EAGAIN)
		return rc;
	p->stalled_since = p->retry_at = 0;
	txlist_remove(&p->waiting, tx);
	srv->waiting--;
	if (rc) {
		srv_warn(srv, "a reply could not be sent: %s", strerror(-rc));
		uncharge(srv, p, tx->cost);
		tx_free(tx);
		return 0;
	}
	txlist_append(&p->posted, tx);
	srv->posted++;
	return 0;
}

/* Hand waiting replies to the provider, within the posting limits. A
 * reply that waits for acknowledgements is passed over (the ones behind
 * it do not depend on it: a holder's WATCH answer, which brings the
 * acknowledgement, may be among them); one that waits for a commit stops
 * the walk. */
static void peer_pump(struct srv *srv, struct srv_peer *p)
{
	uint64_t floor = acks_floor(srv);
	struct srv_tx *tx, *next;

	if (!peer_may_post(p))
		return;
	for (tx = p->waiting.head; tx && p->posted.n < srv->lim.peer_posted &&
				   srv->posted < srv->lim.total_posted && !tx_waits_commit(srv, tx);
	     tx = next) {
		next = tx->next;
		if (tx->need && tx->need >= floor)
			continue;
		if (tx_send(srv, p, tx) == -EAGAIN) {
			peer_stalled(srv, p);
			return;
		}
	}
}

void srv_pump_replies(struct srv *srv)
{
	srv_pump_all(srv);
}

void srv_pump_all(struct srv *srv)
{
	struct srv_peer *p, *next;

	/* Each peer is tried: one that cannot be reached stalls only itself. */
	srv->eagain = 0;
	for (p = srv->peers; p; p = next) {
		next = p->next;
		if (p->waiting.head) {
			peer_pump(srv, p);
			srv_peer_release_if_idle(srv, p);
		}
	}
}

static void parked_retire(struct srv *srv, struct srv_parked *pk);

/* How a peer's client went away. */
enum peer_loss {
	PEER_UNREACHABLE,   /* a reply could not be delivered */
	PEER_CLOSED,        /* we closed its connection: it stopped reading */
};

/* The peer's client is gone: cancel its parked requests and drop what
 * waits (and, PEER_CLOSED, what was posted). */
static void peer_gone(struct srv *srv, struct srv_peer *p, enum peer_loss how)
{
	while (p->parked) {
		struct srv_parked *pk = p->parked;

		pk->gone = 1;
		srv->count.parked_gone++;
		if (pk->expire)
			pk->expire(pk->arg, &pk->req, -ECONNRESET);
		if (!pk->retired) /* expire did not reply */
			parked_retire(srv, pk);
	}
	while (p->waiting.head) {
		struct srv_tx *tx = p->waiting.head;

		txlist_remove(&p->waiting, tx);
		srv->waiting--;
		uncharge(srv, p, tx->cost);
		tx_free(tx);
	}
	if (how != PEER_CLOSED)
		return;
	/* The provider may still report these contexts; their data is no
	 * longer read once the connection is gone. */
	while (p->posted.head) {
		struct srv_tx *tx = p->posted.head;

		txlist_remove(&p->posted, tx);
		srv->posted--;
		uncharge(srv, p, tx->cost);
		free(tx->data);
		tx->data = NULL;
		tx->peer = NULL;
		txlist_append(&srv->abandoned, tx);
	}
}

/* Forget p's address: the provider closes its connection, and its
 * sessions, which name that address, go with it (the address may be given
 * to another peer later). Only once, and only with no send of p's in the
 * provider: fi_av_remove under a pending send is where libfabric crashed
 * (as in the metadata daemon's purger), and a second remove of an address
 * is a use after free. */
static void peer_forget(struct srv *srv, struct srv_peer *p)
{
	p->forget_after_send = 0;
	if (p->forgotten || !srv->net)
		return;
	p->forgotten = 1;
	srv_sessions_drop_peer(srv->sessions, p->addr);
	tnet_forget(srv->net, p->addr);
}

/* p has taken no reply for SRV_REACH_S (its address does not answer):
 * drop what it is owed and its sessions, and forget its address once no
 * send of its is in the provider. */
static void peer_unreachable(struct srv *srv, struct srv_peer *p)
{
	srv_warn(srv, "a peer's address has not answered within %.0f s: dropping its %u "
		"replies and its sessions", SRV_REACH_S, p->entries);
	srv->count.peers_unreachable++;
	p->stalled_since = p->retry_at = 0;
	srv_sessions_drop_peer(srv->sessions, p->addr); /* no new requests meanwhile */
	peer_gone(srv, p, PEER_UNREACHABLE);
	if (p->posted.n)
		p->forget_after_send = 1;
	else
		peer_forget(srv, p);
}

void srv_tx_done(struct srv *srv, const struct tnet_event *ev)
{
	struct srv_tx *tx = ev->user;
	struct srv_peer *p = tx->peer;

	if (!p) {
		txlist_remove(&srv->abandoned, tx);
		tx_free(tx);
		return;
	}
	txlist_remove(&p->posted, tx);
	srv->posted--;
	uncharge(srv, p, tx->cost);
	tx_free(tx);
	if (ev->status) {
		srv_warn(srv, "a reply could not be delivered: %s", strerror(-ev->status));
		peer_gone(srv, p, PEER_UNREACHABLE);
	} else if (!p->forget_after_send) {
		peer_pump(srv, p);
	}
	if (p->forget_after_send && !p->posted.n)
		peer_forget(srv, p);
	srv_peer_release_if_idle(srv, p);
}

/* Seal a reply for its session, with the session's next number in the
 * reply direction (the client checks its replies came from the session,
 * once each): in the session's mode, but AUTH's reply, INTEGRITY, which
 * says the mode. An AUTH refused before it had a session is sealed under
 * the key it proposed, number 0 (that key serves no other frame).
 * -ENOTCONN when the session is gone. In-process daemons (no network)
 * have no sessions and seal nothing. */
static int seal_reply(struct srv *srv, const struct srv_req *req, struct srv_tx *tx)
{
	struct tp_session ses = { .id = req->ident.session, .mode = TP_SEAL_INTEGRITY };
	struct srv_session *s = NULL;
	struct iovec data = { tx->data, tx->data_len };
	uint64_t seq = 0;

	if (!srv->net)
		return 0;
	if (req->ident.session) {
		s = srv_session_find(srv->sessions, req->ident.session);
		if (!s)
			return -ENOTCONN;
		seq = s->tx_seq++;
		if (req->frame.hdr.opcode != TP_OP_AUTH)
			ses.mode = s->mode;
	}
	memcpy(ses.key, req->ident.key, TP_KEY_SIZE);
	tp_frame_seal(tx->head, tx->head_len, &data, tx->data_len ? 1 : 0, &ses, seq);
	sodium_memzero(ses.key, sizeof(ses.key));
	return 0;
}

/* Drop a parked request unanswered. */
static void parked_drop(struct srv *srv, struct srv_parked *pk)
{
	if (!pk->retired)
		parked_retire(srv, pk);
	pk->req.replied = 1;
}

/* A frame whose tag is unchecked is answered only once it checks: in the
 * loop now, or (parked) once its work reported the check (srv_checked).
 * 1 when it must not be answered (dropped). */
static int refuse_unchecked(struct srv_req *req)
{
	if (!req->unchecked)
		return 0;
	if (req->parked) {
		parked_drop(req->srv, req->parked);
		return 1;
	}
	return srv_req_check(req) != 0;
}

/* Whether req may be answered now: 0, or why not (nothing is sent).
 * Either way the request counts as answered from here on. */
static int reply_gate(struct srv_req *req)
{
	struct srv_parked *pk = req->parked;

	if (refuse_unchecked(req))
		return -EBADMSG;
	req->replied = 1;
	if (pk && !pk->retired)
		parked_retire(req->srv, pk);
	if (pk && pk->gone) /* nobody to tell */
		return -ECONNRESET;
	return 0;
}

/* A reply to p: the frame of hdr and msg (body bytes packed), then data,
 * which the reply owns from here on. NULL: no memory. */
static struct srv_tx *tx_new(struct srv_peer *p, struct tp_hdr *hdr,
			     const ProtobufCMessage *msg, size_t body, void *data, size_t data_len)
{
	struct srv_tx *tx = malloc(sizeof(*tx) + TP_HDR_SIZE + body);

	if (!tx)
		return NULL;
	memset(tx, 0, sizeof(*tx));
	tx->ctx.user = tx;
	tx->peer = p;
	tx->data = data;
	tx->data_len = data_len;
	tx->tag = hdr->reqid;
	tx->head_len = (size_t)tp_frame_build(tx->head, TP_HDR_SIZE + body, hdr, NULL, 0, msg);
	return tx;
}

static int srv_send(struct srv_req *req, int32_t status, const ProtobufCMessage *msg,
		    void *data, size_t data_len)
{
	struct srv *srv = req->srv;
	struct srv_parked *pk = req->parked;
	size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	struct srv_tx *tx;
	struct srv_peer *p;
	struct tp_hdr hdr = {
		.opcode = req->frame.hdr.opcode,
		.reqid = req->frame.hdr.reqid,
		.flags = TP_FLAG_REPLY,
		.status = status,
		.data_len = (uint32_t)data_len,
	};
	int rc;

	if ((rc = reply_gate(req))) {
		free(data);
		return rc;
	}
	p = peer_get(srv, req->peer);
	tx = p ? tx_new(p, &hdr, msg, body, data, data_len) : NULL;
	if (!tx) {
		free(data);
		rc = -ENOMEM;
		goto out;
	}
	tx->tagged = status == 0 && req->reply_tagged;
	if (seal_reply(srv, req, tx)) {
		/* the session is gone (evicted, idle): nobody can check a reply
		 * under its numbers any more; the client's probe finds out */
		tx_free(tx);
		srv_debug(srv, "reply to request %llu dropped: its session is gone",
			  (unsigned long long)hdr.reqid);
		goto out;
	}
	tx->cost = sizeof(*tx) + tx->head_len + data_len;
	tx->deadline = tp_mono_s() + srv->timeout_s;
	/* A request is admitted with room for one reply of any size
	 * (handle_frame); a parked request's reply comes later, so one with
	 * data is checked now. */
	if (pk && data_len && !srv_room_for(srv, p, tx->cost)) {
		tx_free(tx);
		return srv_reply_error(req, -EBUSY, "%s: no room for a %zu-byte reply",
				       tp_opcode_name(hdr.opcode) ?: "?", data_len);
	}
	charge(srv, p, tx->cost);
	tx->gen = srv->gen_wait;
	tx->need = srv->role.reply_need ? srv->role.reply_need(srv->role.ctx, req) : 0;
	txlist_append(&p->waiting, tx);
	srv->waiting++;
	peer_pump(srv, p);
out:
	if (!pk) /* a parked request's peer is released by whoever walks it */
		srv_peer_release_if_idle(srv, p);
	if (rc)
		srv_error(srv, "reply to request %llu (%s): %s", (unsigned long long)hdr.reqid,
			tp_opcode_name(hdr.opcode) ?: "?", strerror(-rc));
	return rc;
}

int srv_reply(struct srv_req *req, const ProtobufCMessage *msg, const void *data,
	      size_t data_len)
{
	void *copy = NULL;

	if (data_len) {
		copy = malloc(data_len);
		if (!copy)
			return srv_reply_error(req, -ENOMEM, "no memory for a %zu-byte reply", data_len);
		memcpy(copy, data, data_len);
	}
	return srv_send(req, 0, msg, copy, data_len);
}

int srv_reply_owned(struct srv_req *req, const ProtobufCMessage *msg, void *data,
		    size_t data_len)
{
	return srv_send(req, 0, msg, data, data_len);
}

int srv_reply_error(struct srv_req *req, int code, const char *fmt, ...)
{
	Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	er.code = code;
	er.message = text;
	return srv_send(req, code, &er.base, NULL, 0);
}

/* ------------------------------------------------------------ parking */

/* Take a parked request off its peer; it is freed by srv_parked_reap(). */
static void parked_retire(struct srv *srv, struct srv_parked *pk)
{
	struct srv_peer *p = pk->peer;

	if (pk->prev)
		pk->prev->next = pk->next;
	else
		p->parked = pk->next;
	if (pk->next)
		pk->next->prev = pk->prev;
	uncharge(srv, p, pk->cost);
	srv->parked--;
	srv->parked_bytes -= pk->cost;
	pk->retired = 1;
	pk->prev = NULL;
	pk->next = srv->retired;
	srv->retired = pk;
	/* the caller releases the peer record if it is now idle */
}

void srv_parked_reap(struct srv *srv)
{
	while (srv->retired) {
		struct srv_parked *pk = srv->retired;

		srv->retired = pk->next;
		if (pk->req.msg)
			protobuf_c_message_free_unpacked(pk->req.msg, NULL);
		sodium_memzero(pk->check.s.key, sizeof(pk->check.s.key));
		free(pk->data_mem);
		free(pk);
	}
}

int srv_park(struct srv_req *req, uint32_t ms, srv_expire_fn expire, void *arg,
	     struct srv_req **out)
{
	return srv_park_sized(req, ms, 0, expire, arg, out);
}

/* An unchecked frame's check, kept with its parked request: the frame's
 * pointers moved from the receive buffer at `base` into `mem`, its
 * memory now. */
static void keep_check(struct srv_parked *pk, const struct srv_req *req, const uint8_t *base,
		       uint8_t *mem)
{
	struct tp_frame *f = &pk->check.frame;

	*f = req->frame;
	f->addr = mem + (req->frame.addr - base);
	f->body = mem + (req->frame.body - base);
	f->data = mem + (req->frame.data - base);
	pk->check.s.id = req->ident.session;
	/* the session's mode, which the frame's flags matched when held */
	pk->check.s.mode = req->frame.hdr.flags & TP_FLAG_SECRET ? TP_SEAL_SECRECY
								 : TP_SEAL_INTEGRITY;
	memcpy(pk->check.s.key, req->ident.key, TP_KEY_SIZE);
}

int srv_park_take_check(struct srv_req *parked, struct srv_seal_check *out)
{
	struct srv_parked *pk = parked->parked;

	if (!parked->unchecked)
		return 0;
	*out = pk->check;
	sodium_memzero(pk->check.s.key, sizeof(pk->check.s.key));
	return 1;
}

void srv_park_checked(struct srv_req *parked, int rc)
{
	struct srv_parked *pk = parked->parked;

	parked->unchecked = 0;
	if (rc)
		parked_drop(parked->srv, pk);
}

/* The raw data of req into pk: the receive buffer's memory taken (with
 * the whole frame, so an unchecked frame's check goes along), or else a
 * copy (an unchecked frame is checked first). 0, -ENOMEM, or -EBADMSG /
 * -EALREADY (the frame was refused: srv_req_check). */
static int park_data(struct srv *srv, struct srv_parked *pk, struct srv_req *req, int take)
{
	size_t len = req->frame.hdr.data_len;
	uint8_t *mem = NULL, *base = req->rbuf ? req->rbuf->data : NULL;
	int rc;

	if (!len)
		return 0;
	if (take && (mem = tnet_rbuf_take(req->rbuf))) {
		pk->data = mem + ((const uint8_t *)req->frame.data - base);
		srv->count.data_kept += len;
		if (req->unchecked)
			keep_check(pk, req, base, mem);
	} else {
		if ((rc = srv_req_check(req))) /* copied, the data leaves its frame */
			return rc;
		if (!(mem = malloc(len)))
			return -ENOMEM;
		memcpy(mem, req->frame.data, len);
		pk->data = mem;
		srv->count.data_copied += len;
	}
	pk->data_mem = mem;
	return 0;
}

int srv_park_sized(struct srv_req *req, uint32_t ms, size_t extra, srv_expire_fn expire,
		   void *arg, struct srv_req **out)
{
	struct srv *srv = req->srv;
	struct srv_peer *p = peer_get(srv, req->peer);
	struct srv_parked *pk;
	/* Bulk data (at least half a receive buffer) keeps its place: the
	 * receive buffer's memory goes with the parked request, and the
	 * buffer is reposted with new memory (malloc's heap reuses freed
	 * frames). Less data is copied. */
	int take = srv_takes_rbuf(req);
	/* The decoded message can be several times its packed size. */
	size_t cost = sizeof(*pk) + 4 * (size_t)req->frame.hdr.body_len + extra +
		      (take ? req->rbuf->cap : req->frame.hdr.data_len);
	double hold = ms / 1000.0;
	int rc;

	if (!p)
		return -ENOMEM;
	if (req->parked || !srv_room_for(srv, p, cost)) {
		srv_peer_release_if_idle(srv, p);
		return -EBUSY;
	}
	pk = calloc(1, sizeof(*pk));
	rc = pk ? park_data(srv, pk, req, take) : -ENOMEM;
	if (rc) {
		free(pk);
		srv_peer_release_if_idle(srv, p);
		return rc;
	}
	pk->req = *req;
	pk->req.frame.addr = NULL;
	pk->req.frame.body = NULL;
	pk->req.frame.data = pk->data;
	pk->req.parked = pk;
	pk->req.rbuf = NULL;
	pk->peer = p;
	pk->cost = cost;
	pk->expire = expire;
	pk->arg = arg;
	pk->deadline = tp_mono_s() + (hold < srv->timeout_s ? hold : srv->timeout_s);
	pk->next = p->parked;
	if (p->parked)
		p->parked->prev = pk;
	p->parked = pk;
	charge(srv, p, cost);
	srv->parked++;
	srv->parked_bytes += cost;
	/* The original no longer owns its message, and needs no answer. */
	req->msg = NULL;
	req->replied = 1;
	*out = &pk->req;
	return 0;
}

void *srv_park_take_data(struct srv_req *parked, const uint8_t **data)
{
	struct srv_parked *pk = parked->parked;
	void *mem = pk->data_mem;

	*data = pk->data;
	pk->data = pk->data_mem = NULL;
	return mem;
}

/* ------------------------------------------------------------ deadlines */

static void peer_expire(struct srv *srv, struct srv_peer *p, double now)
{
	struct srv_tx *tx, *next;
	struct srv_parked *pk, *pnext;

	/* Replies the provider has held past their deadline: the peer stopped
	 * reading. Closing its connection is the only way to get the memory
	 * back from the provider. */
	for (tx = p->posted.head; tx; tx = tx->next)
		if (tx->deadline < now)
			break;
	if (tx) {
		srv_warn(srv, "a peer has not taken %u replies (%zu bytes) within %.0f s: "
			"closing its connection", p->posted.n + p->waiting.n, p->bytes,
			srv->timeout_s);
		srv->count.peers_closed++;
		if (!p->forgotten) {
			p->forgotten = 1;
			srv_sessions_drop_peer(srv->sessions, p->addr);
			tnet_forget(srv->net, p->addr);
		}
		peer_gone(srv, p, PEER_CLOSED);
		return;
	}
	if (p->stalled_since && now - p->stalled_since > SRV_REACH_S) {
		peer_unreachable(srv, p);
		return;
	}
	for (tx = p->waiting.head; tx; tx = next) {
		next = tx->next;
		if (tx->deadline >= now)
			continue;
		txlist_remove(&p->waiting, tx);
		srv->waiting--;
		uncharge(srv, p, tx->cost);
		tx_free(tx);
		srv->count.replies_expired++;
	}
	for (pk = p->parked; pk; pk = pnext) {
		pnext = pk->next;
		if (pk->deadline >= now)
			continue;
		srv->count.parked_expired++;
		if (pk->expire)
			pk->expire(pk->arg, &pk->req, -ETIMEDOUT);
		if (pk->req.unchecked) /* not checked yet: nobody hears of it */
			parked_drop(srv, pk);
		if (!pk->req.replied)
			srv_reply_error(&pk->req, -ETIMEDOUT, "%s: parked request reached its "
					"deadline", tp_opcode_name(pk->req.frame.hdr.opcode) ?: "?");
		/* the reply retired pk; pnext is untouched (only pk left the list) */
	}
}

void srv_expire_all(struct srv *srv)
{
	double now = tp_mono_s();
	struct srv_peer *p, *next;

	for (p = srv->peers; p; p = next) {
		next = p->next;
		peer_expire(srv, p, now);
		srv_peer_release_if_idle(srv, p);
	}
}

/* ------------------------------------------------------------ admission */

/* Admission: the peer must have room for one more reply of any size.
 * Returns 0 to go on; otherwise the request was dropped. */
int srv_admit(struct srv *srv, struct srv_req *req)
{
	struct srv_peer *p = peer_get(srv, req->peer);

	if (!p || p->entries >= srv->lim.peer_entries || srv->entries >= srv->lim.total_entries) {
		srv->count.requests_dropped++;
		if (p && !p->warned) {
			p->warned = 1;
			srv_warn(srv, "a peer owed %u replies is not reading them: dropping its "
				"requests", p->entries);
		}
		srv_peer_release_if_idle(srv, p);
		return -EBUSY;
	}
	return 0;
}

/* ------------------------------------------------------------ teardown */

void srv_peers_shutdown(struct srv *srv)
{
	/* Parked requests learn the daemon is stopping. */
	for (struct srv_peer *p = srv->peers; p; p = p->next) {
		while (p->parked) {
			struct srv_parked *pk = p->parked;

			pk->gone = 1;
			if (pk->expire)
				pk->expire(pk->arg, &pk->req, -ESHUTDOWN);
			if (!pk->retired)
				parked_retire(srv, pk);
		}
	}
	srv_parked_reap(srv);
}

static void txlist_free(struct srv_txlist *l)
{
	while (l->head) {
		struct srv_tx *tx = l->head;

		txlist_remove(l, tx);
		tx_free(tx);
	}
}

void srv_peers_free(struct srv *srv)
{
	while (srv->peers) {
		struct srv_peer *p = srv->peers;

		srv->peers = p->next;
		txlist_free(&p->waiting);
		txlist_free(&p->posted);
		free(p);
	}
	txlist_free(&srv->abandoned);
}
