/*
 * engine.c - libtessera's request engine: requests made, sent, matched to
 * their replies, timed out. It knows nothing of how a connection is set up
 * (conn.c), of sessions and probes (session.c) or of what a request means
 * (the I/O paths): it is a leaf under them, using only peer.c (addresses),
 * trace.c and thread.c.
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
 * can be made to let go (tnet_can_lend). The invariant: tc_engine_run()
 * (and so tc_run()) does not return while the provider may still read or
 * write the caller's memory for one of its requests, that is, until each
 * lent send has completed and each tagged receive has completed (data,
 * error or cancel). That holds on every path: a reply can arrive before
 * the send's completion (settle() waits for both), an error reply or a
 * timeout leaves the receive posted (settle() cancels it and waits for the
 * cancel). Only a peer that never completes them at all (a stopped daemon;
 * rxm completes neither a rendezvous whose peer went away nor the cancel
 * of a receive it has matched) ends otherwise: past the request's
 * deadline, reclaim() forgets the peer (tc_peer_forget), which with
 * FI_AV_REMOVE_CLEANUP makes rxm close its connection synchronously,
 * flushing what can be flushed, so that no transfer with that peer can
 * touch our memory any more; after a short grace the request is let go.
 * Its tc_req (and frame) stays on the zombie list, as the provider may
 * still name its contexts.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"

static void list_init(struct tc_req *head)
{
	head->next = head->prev = head;
}

void tc_engine_init(tessera_fs *fs)
{
	list_init(&fs->pending);
	list_init(&fs->zombies);
	fs->next_reqid = ((uint64_t)getpid() << 32) | 1;
	fs->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_cond_init(&fs->bg_cond, NULL);
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
	r->body_out = body;
	r->data_out = data_len;
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

/* The bytes of a lent write's payload. */
static size_t lent_len(const struct tc_req *r)
{
	size_t len = 0;

	for (size_t i = 0; i < r->n_lend; i++)
		len += r->lend[i].iov_len;
	return len;
}

/* Send r's frame, and its lent payload (or its encryption) after it. */
static int req_send(tessera_fs *fs, uint64_t peer, struct tc_req *r)
{
	struct iovec iov[1 + TC_LEND_IOV] = { { r->frame, r->frame_len } };
	size_t n = 1;

	if (r->bounce) {
		iov[1].iov_base = r->bounce;
		iov[1].iov_len = lent_len(r);
		n = 2;
	} else if (r->lend_write) {
		memcpy(iov + 1, r->lend, r->n_lend * sizeof(*iov));
		n += r->n_lend;
	}
	return tnet_send(fs->net, peer, iov, n, &r->ctx);
}

/*
 * Seal r's frame under the session `ses` holds now, with its next
 * sequence number (under lock). A frame sealed before under another
 * session (resent after a restart) is decrypted with that one first. A
 * lent payload is never encrypted in the caller's memory: SECRECY
 * encrypts it into r->bounce, which is sent instead.
 */
static int seal_req(tessera_fs *fs, struct tc_req *r, struct tc_session *ses)
{
	struct iovec b = { r->bounce, r->bounce ? lent_len(r) : 0 };

	if (r->bounce) /* sealed before, secret: back to plain */
		tp_frame_unseal(r->frame, r->head_len, &b, 1, &r->ses);
	else if (r->ses.id && !r->lend_write) /* (a lent payload was never encrypted) */
		tp_frame_unseal(r->frame, r->head_len, NULL, 0, &r->ses);
	r->ses = ses->s;
	if (r->lend_write && !r->bounce && r->ses.mode == TP_SEAL_SECRECY) {
		/* a spare bulk frame: the payload is at most max_io */
		r->bounce = fs->n_spares ? fs->spares[--fs->n_spares]
					 : malloc(tp_config_max_frame(&fs->cfg));
		if (!r->bounce)
			return -ENOMEM;
		tp_frame_seal_copy(r->frame, r->head_len, r->lend, r->n_lend, r->bounce, &r->ses,
				   ses->tx_seq++);
		return 0;
	}
	b.iov_base = r->bounce;
	if (r->bounce)
		tp_frame_seal(r->frame, r->head_len, &b, 1, &r->ses, ses->tx_seq++);
	else if (r->lend_write)
		tp_frame_seal(r->frame, r->head_len, r->lend, r->n_lend, &r->ses, ses->tx_seq++);
	else
		tp_frame_seal(r->frame, r->head_len, NULL, 0, &r->ses, ses->tx_seq++);
	return 0;
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
		if (r->bounce && fs->n_spares < TC_SPARE_FRAMES) {
			fs->spares[fs->n_spares++] = r->bounce;
			r->bounce = NULL;
		}
		pthread_mutex_unlock(&fs->lock);
	}
	if (r->reply)
		protobuf_c_message_free_unpacked(r->reply, NULL);
	free(r->frame);
	free(r->stale_frame);
	free(r->bounce);
	free(r);
}

void tc_engine_fini(tessera_fs *fs)
{
	struct tc_req *r;

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
	if (fs->kick_fd >= 0)
		close(fs->kick_fd);
	fs->kick_fd = -1;
	pthread_cond_destroy(&fs->bg_cond);
}


static void vfinish(struct tc_req *r, int status, const char *fmt, va_list ap)
{
	if (r->replied)
		return;
	r->replied = 1;
	r->status = status;
	r->done_ns = tp_mono_ns();
	if (fmt)
		vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	list_del(r);
}

static void finish(tessera_fs *fs, struct tc_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void finish(tessera_fs *fs, struct tc_req *r, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfinish(r, status, fmt, ap);
	va_end(ap);
	/* its thread may be in its pause (make_progress): it goes on now */
	if (r->background)
		pthread_cond_broadcast(&fs->bg_cond);
}

static struct tc_req *find_pending(tessera_fs *fs, uint64_t reqid)
{
	for (struct tc_req *r = fs->pending.next; r != &fs->pending; r = r->next)
		if (r->reqid == reqid)
			return r;
	return NULL;
}
/*
 * Detached requests (r->done set; session.c's probes): nobody waits for
 * them in tc_engine_run. The engine calls done(fs, r, frame) under the lock when
 * the reply arrives, and done(fs, r, NULL) when the send fails (the peer
 * forgotten first) or the deadline passes; r is replied by then, and done
 * ends with tc_req_drop.
 */
void tc_req_drop(tessera_fs *fs, struct tc_req *r)
{
	list_del(r);
	if (r->sent) {
		tc_req_free(NULL, r);
	} else { /* the provider holds its frame: freed on completion */
		r->abandoned = 1;
		list_add(&fs->zombies, r);
	}
}

static void end_detached(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr)
{
	r->replied = 1;
	r->done(fs, r, fr);
}

/* Detached requests past their deadline are dropped (under lock). */
static void expire_detached(tessera_fs *fs, uint64_t now)
{
	struct tc_req *r = fs->pending.next;

	while (r != &fs->pending) {
		struct tc_req *next = r->next;

		if (r->done && now > r->deadline_ns)
			end_detached(fs, r, NULL);
		r = next;
	}
}

/*
 * r's send never completed, and the connection it went out on is gone:
 * its daemon restarted (a new process cannot have that connection). rxm
 * completes no transfer of a closed connection, so the provider will not
 * read r's frame or lent payload again, nor complete its send. r gets a
 * new frame holding the payload too (the caller's memory is let go), and
 * the old frame is kept until r is freed. A read (its tagged receive
 * posted) is not renewed: it waits for its timeout.
 */
static int renew_frame(struct tc_req *r)
{
	size_t len = r->frame_len;
	uint8_t *f;

	if (r->lend_read || r->stale_frame)
		return -EBUSY;
	for (size_t i = 0; r->lend_write && i < r->n_lend; i++)
		len += r->lend[i].iov_len;
	f = malloc(len);
	if (!f)
		return -ENOMEM;
	/* Back to plain under the lost session (seal_req seals the new
	 * frame afresh): a secret payload is in r->bounce, decrypted there. */
	if (r->bounce) {
		struct iovec b = { r->bounce, lent_len(r) };

		tp_frame_unseal(r->frame, r->head_len, &b, 1, &r->ses);
	} else if (r->ses.id && !r->lend_write) {
		tp_frame_unseal(r->frame, r->head_len, NULL, 0, &r->ses);
	}
	r->ses.id = 0;
	memcpy(f, r->frame, r->frame_len);
	if (r->bounce)
		memcpy(f + r->frame_len, r->bounce, lent_len(r));
	for (size_t i = 0, at = r->frame_len; r->lend_write && !r->bounce && i < r->n_lend; i++) {
		memcpy(f + at, r->lend[i].iov_base, r->lend[i].iov_len);
		at += r->lend[i].iov_len;
	}
	free(r->bounce);
	r->bounce = NULL;
	r->stale_frame = r->frame;
	r->frame = f;
	r->frame_len = len;
	r->spare_frame = 0;
	r->lend_write = 0;
	r->n_lend = 0;
	r->sent = 1;
	return 0;
}

/* Whether r, of the session `lost` with `server`, is to go again under
 * the new one (tc_req_reseal). */
static int reseal_wanted(const struct tc_req *r, int server, uint64_t lost,
			 enum tc_resend which)
{
	return r->server == server && !r->replied && !r->done && !r->queued &&
	       r->ses.id == lost && (which != TC_RESEND_LOST || r->lost);
}

/* Send r again, sealed for ses. A failure leaves it to its timeout. */
static void resend_sealed(tessera_fs *fs, uint64_t peer, struct tc_req *r,
			  struct tc_session *ses)
{
	int rc;

	if (seal_req(fs, r, ses))
		return; /* no memory: it waits for its timeout */
	r->sent = 0;
	r->lost = 0;
	r->submit_ns = tp_mono_ns();
	rc = req_send(fs, peer, r);
	if (rc == -EAGAIN) {
		r->sent = 1; /* nothing handed over: the engine posts it */
		r->queued = 1;
		r->queued_ns = r->submit_ns;
	} else if (rc) {
		r->sent = 1; /* not resent: it waits for its timeout */
	}
}

void tc_req_reseal(tessera_fs *fs, int server, uint64_t lost, enum tc_resend which)
{
	struct tc_session *ses = tc_session_of(fs, server);
	uint64_t peer;

	if (tc_peer_resolve(fs, server, &peer))
		return;
	/* A request whose send has not completed still lends its frame to
	 * the provider: when the daemon restarted, the connection holding it
	 * is gone and it gets a new one (renew_frame); else it waits. */
	for (struct tc_req *r = fs->pending.next; r != &fs->pending; r = r->next) {
		if (!reseal_wanted(r, server, lost, which))
			continue;
		if (!r->sent && (which != TC_RESEND_ALL || renew_frame(r)))
			continue;
		resend_sealed(fs, peer, r, ses);
	}
}

/* Decode a reply's body and check its data fits what was asked for;
 * else r fails (and its data is not looked at). Returns whether r may be
 * finished with success. */
static int take_body(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr)
{
	r->reply = tp_body_unpack(fr, tp_reply_desc(r->opcode));
	if (!r->reply) {
		finish(fs, r, -EBADMSG, "the reply to %s does not decode", tp_opcode_name(r->opcode));
		return 0;
	}
	if (fr->hdr.data_len > r->data_cap) {
		finish(fs, r, -EPROTO, "the reply carries %u bytes, %zu were asked for",
		       fr->hdr.data_len, r->data_cap);
		return 0;
	}
	return 1;
}

/* An untagged error reply: its message. */
static void take_error(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr)
{
	Tessera__ErrorReply *er = (Tessera__ErrorReply *)
		tp_body_unpack(fr, &tessera__error_reply__descriptor);

	finish(fs, r, fr->hdr.status, "%s", er && er->message ? er->message : strerror(-fr->hdr.status));
	if (er)
		protobuf_c_message_free_unpacked(&er->base, NULL);
}

/*
 * Check a reply to r is sealed by r's session and new (its sequence
 * number accepted once in the session's window), then decrypt it in
 * place (data: the runs a tagged reply landed in; NULL: its own). An
 * AUTH reply is sealed under the key its request proposed (INTEGRITY),
 * once: its request is answered by it. A reply on a session since
 * replaced is refused: its window is gone.
 */
static int open_reply(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr,
		      const struct iovec *data, size_t n)
{
	struct tc_session *ses = tc_session_of(fs, r->server);

	if (r->opcode == TP_OP_AUTH)
		return tp_frame_open(fr, data, n, &r->ses, NULL);
	if (ses->s.id != r->ses.id)
		return -EBADMSG;
	return tp_frame_open(fr, data, n, &r->ses, &ses->rx);
}

/* The pending request an incoming frame answers, when it is one. */
static struct tc_req *match_reply(tessera_fs *fs, const struct tp_frame *fr)
{
	struct tc_req *r;

	if (!(fr->hdr.flags & TP_FLAG_REPLY))
		return NULL; /* not ours to answer; nothing waits on it */
	r = find_pending(fs, fr->hdr.reqid);
	if (!r)
		return NULL; /* late reply to an abandoned request */
	if (fr->hdr.session != r->ses.id && r->opcode != TP_OP_AUTH)
		return NULL; /* not from the session the request went to */
	if (open_reply(fs, r, fr, NULL, 0)) {
		/* An AUTH answer not sealed with the key the credential
		 * proposed comes from whoever listens at the daemon's address
		 * without the daemons' uid (only that uid can decode the
		 * credential: auth.c). The real daemon seals every AUTH answer,
		 * errors included, so waiting for a better one is pointless. */
		if (r->opcode == TP_OP_AUTH && !r->done) {
			r->unproven = 1;
			finish(fs, r, -EACCES, "its answer to AUTH is not sealed with the key the "
			       "credential proposed: %s", fr->hdr.status < 0 ? "an error, unsealed"
			       : "a wrong seal");
		}
		return NULL; /* forged or replayed: the real reply may still come */
	}
	return r;
}

/* The header of a tagged reply in r->rhead: parsed, and checked to be
 * the reply to r, of the size asked for, sealed by r's session. */
static int check_tagged(tessera_fs *fs, struct tc_req *r, const struct tnet_event *ev,
			struct tp_frame *fr, char *err, size_t errlen)
{
	int rc = tp_frame_parse(r->rhead, ev->len, tp_config_max_frame(&fs->cfg), fr, err, errlen);

	if (!rc && (fr->hdr.reqid != r->reqid || !(fr->hdr.flags & TP_FLAG_REPLY) ||
		    TP_HDR_SIZE + (size_t)fr->hdr.addr_len + fr->hdr.body_len != TP_TAGGED_HEAD)) {
		snprintf(err, errlen, "its header does not fit the tagged reply asked for");
		rc = -EPROTO;
	}
	if (!rc && (fr->hdr.session != r->ses.id ||
		    open_reply(fs, r, fr, r->lend, r->n_lend))) {
		snprintf(err, errlen, "it fails its seal, or was seen before");
		rc = -EBADMSG;
	}
	return rc;
}

/* The daemon answered (under lock): it is up, its probes may rest. */
static void heard(tessera_fs *fs, int server)
{
	struct tc_session *ses = tc_session_of(fs, server);

	ses->heard_ns = tp_mono_ns();
	ses->silent_ns = 0;
	ses->probe_wait_ns = 0;
	ses->probe_next_ns = 0;
	tc_health_up(fs, server);
}

/* A reply frame arrived: match it to its request. */
static void on_reply(tessera_fs *fs, const struct tnet_event *ev)
{
	struct tp_frame fr;
	struct tc_req *r;
	char err[256];

	if (tp_frame_parse(ev->rbuf->data, ev->len, ev->rbuf->cap, &fr, err, sizeof(err)))
		return;
	r = match_reply(fs, &fr);
	if (!r)
		return;
	heard(fs, r->server);
	if (r->done) {
		end_detached(fs, r, &fr);
		return;
	}
	if (fr.hdr.status < 0) {
		take_error(fs, r, &fr);
		return;
	}
	if (!take_body(fs, r, &fr))
		return;
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
 * The tag covers header, body and the data in the caller's runs, as for
 * any frame; SECRECY decrypts the data there once the tag is right.
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
	rc = check_tagged(fs, r, ev, &fr, err, sizeof(err));
	if (rc) {
		finish(fs, r, rc, "a bad reply: %s", err);
		return;
	}
	heard(fs, r->server);
	if (fr.hdr.status < 0) { /* daemons send errors untagged; accept one anyway */
		finish(fs, r, fr.hdr.status, "%s", strerror(-fr.hdr.status));
		return;
	}
	/* data_len > data_cap cannot be, by the receive's size */
	if (!take_body(fs, r, &fr))
		return;
	r->data_len = fr.hdr.data_len;
	fs->copies.read_direct += fr.hdr.data_len;
	finish(fs, r, 0, NULL);
}
/* A tagged receive completed (data, error or cancel). */
static void on_trecv_done(tessera_fs *fs, struct tc_req *r, const struct tnet_event *ev)
{
	r->rposted = 0;
	if (r->abandoned) {
		if (r->sent) {
			list_del(r);
			tc_req_free(NULL, r);
		}
	} else if (ev->status != -ECANCELED) {
		on_tagged(fs, r, ev);
	}
}

/* A send completed (its frame and lent payload are the caller's again). */
static void on_send_done(tessera_fs *fs, struct tc_req *r, const struct tnet_event *ev)
{
	r->sent = 1;
	if (r->abandoned) {
		if (!r->rposted) {
			list_del(r);
			tc_req_free(NULL, r);
		}
		return;
	}
	if (!ev->status)
		return;
	/* The connection broke (its daemon died, or we forgot it). r is
	 * lost, not failed: a probe asks the daemon (session.c), r is sent
	 * again once it answers, and fails only when it stays silent. */
	tc_peer_forget(fs, r->server);
	if (r->done) {
		end_detached(fs, r, NULL);
	} else {
		r->lost = 1;
		snprintf(r->errmsg, sizeof(r->errmsg), "send failed: %s", strerror(-ev->status));
	}
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
			} else if (ev[i].type == TNET_TRECV) {
				on_trecv_done(fs, ev[i].user, &ev[i]);
			} else {
				on_send_done(fs, ev[i].user, &ev[i]);
			}
		}
	}
}

/* Post r's tagged receive: its head, then the caller's runs. */
static int post_trecv(tessera_fs *fs, struct tc_req *r)
{
	struct iovec iov[1 + TC_LEND_IOV] = { { r->rhead, TP_TAGGED_HEAD } };

	memcpy(iov + 1, r->lend, r->n_lend * sizeof(*iov));
	r->rctx.user = r;
	return tnet_trecv(fs->net, iov, 1 + r->n_lend, r->reqid, &r->rctx);
}

static uint64_t ms_ns(uint32_t ms)
{
	return (uint64_t)ms * 1000000u;
}

uint64_t tc_req_deadline(tessera_fs *fs, const struct tc_req *r, uint64_t now)
{
	uint64_t bytes = (r->frame_len - r->head_len) + r->data_cap;

	if (r->opcode == TP_OP_AUTH)
		return now + ms_ns(fs->cfg.connect_timeout_ms);
	if (r->lend_write)
		for (size_t i = 0; i < r->n_lend; i++)
			bytes += r->lend[i].iov_len;
	/* A bulk transfer may take its bytes at the slowest rate we call
	 * working (bulk_min_rate) on top of a small request's time. */
	return now + ms_ns(fs->cfg.timeout_ms) + bytes * 1000000000u / fs->cfg.bulk_min_rate;
}

/* r was never handed to the provider (queued) and fails: the provider
 * holds nothing of it but perhaps its tagged receive (settle cancels
 * that). A probe ends; anything else finishes with the message. */
static void fail_unposted(tessera_fs *fs, struct tc_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail_unposted(tessera_fs *fs, struct tc_req *r, int status, const char *fmt, ...)
{
	va_list ap;

	r->sent = 1;
	r->queued = 0;
	if (r->done) {
		end_detached(fs, r, NULL);
		return;
	}
	va_start(ap, fmt);
	vfinish(r, status, fmt, ap);
	va_end(ap);
}

static void count_copies(tessera_fs *fs, const struct tc_req *r)
{
	if (r->opcode == TP_OP_WRITE && r->lend_write && !r->bounce) {
		for (size_t i = 0; i < r->n_lend; i++)
			fs->copies.write_direct += r->lend[i].iov_len;
	} else if (r->opcode == TP_OP_WRITE && r->bounce) {
		fs->copies.write_gathered += lent_len(r);
	} else if (r->opcode == TP_OP_WRITE) {
		fs->copies.write_gathered += r->frame_len - r->head_len;
	}
}

/* Hand queued r to the provider (under lock): its tagged receive first,
 * so that it is in place before the daemon can answer, then its send.
 * 0: posted; -EAGAIN: the provider cannot take it yet (connecting, or
 * full), r stays queued for the engine's next round; else r failed. */
static int post(tessera_fs *fs, struct tc_req *r)
{
	uint64_t peer;
	int rc = tc_peer_resolve(fs, r->server, &peer);

	if (rc) {
		fail_unposted(fs, r, rc, "cannot resolve its address: %s", strerror(-rc));
		return rc;
	}
	if (r->lend_read && !r->rposted) {
		rc = post_trecv(fs, r);
		if (rc == -EAGAIN)
			return rc;
		if (rc) {
			fail_unposted(fs, r, rc, "posting the receive failed: %s", strerror(-rc));
			return rc;
		}
		r->rposted = 1;
	}
	rc = req_send(fs, peer, r);
	if (rc == -EAGAIN)
		return rc;
	if (rc == -EMSGSIZE) {
		fail_unposted(fs, r, rc, "the %zu-byte request is larger than the daemon's receive "
			      "buffer (its max_io + 256 KiB; this client's max_io is %u)",
			      r->frame_len + (r->bounce || r->lend_write ? lent_len(r) : 0),
			      fs->cfg.max_io);
		return rc;
	}
	if (rc) {
		fail_unposted(fs, r, rc, "send failed: %s", strerror(-rc));
		return rc;
	}
	r->queued = 0;
	count_copies(fs, r);
	return 0;
}

/* Whether a request to r's server other than r is on the wire. */
static int server_busy(tessera_fs *fs, const struct tc_req *r)
{
	for (const struct tc_req *o = fs->pending.next; o != &fs->pending; o = o->next)
		if (o != r && o->server == r->server && !o->replied && !o->queued)
			return 1;
	return 0;
}

static void submit(tessera_fs *fs, struct tc_req *r, uint64_t deadline)
{
	struct tc_session *ses = tc_session_of(fs, r->server);
	uint64_t now = tp_mono_ns();

	r->reqid = fs->next_reqid++;
	r->deadline_ns = deadline;
	r->submit_ns = now;
	/* reqid lives at byte 8 of the header, little-endian */
	for (int i = 0; i < 8; i++)
		r->frame[8 + i] = (uint8_t)(r->reqid >> (8 * i));
	list_add(&fs->pending, r);
	r->queued = 1;
	r->queued_ns = now;
	if (r->opcode != TP_OP_AUTH) { /* AUTH carries its proposed key, no session */
		ses->used_ns = now;
		if (seal_req(fs, r, ses)) {
			fail_unposted(fs, r, -ENOMEM, "no memory to seal it");
			return;
		}
	}
	/* Nothing else on the wire to that daemon and the provider cannot
	 * take r at once: it is connecting, so the connection we had is gone
	 * and the daemon may have restarted (and lost our session). A probe
	 * goes at once instead of after TC_PROBE_NS (session.c). */
	if (post(fs, r) == -EAGAIN && r->opcode != TP_OP_AUTH && !server_busy(fs, r))
		ses->reconnect = 1;
}

/* How long a queued request waits before a refused connection is looked
 * for (a connection to a living daemon is up sooner). */
#define TC_CHECK_NS (10ull * 1000000u)

/* Queued r could not be posted again (under lock): after TC_CHECK_NS,
 * look once for a refused connection; after the connect timeout, give
 * up. Either way its daemon is down, and r fails saying so. */
static void queued_still(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	char why[64], msg[200];
	int err;

	if (now - r->queued_ns > ms_ns(fs->cfg.connect_timeout_ms)) {
		tc_health_silence(why, sizeof(why), ms_ns(fs->cfg.connect_timeout_ms));
		tc_health_down(fs, r->server, -ETIMEDOUT, why);
	} else if (!r->checked && now - r->queued_ns > TC_CHECK_NS) {
		r->checked = 1;
		if (tc_peer_refused(fs, r->server) != -ECONNREFUSED)
			return;
		tc_health_down(fs, r->server, -ECONNREFUSED, "connection refused");
	} else {
		return;
	}
	tc_peer_forget(fs, r->server);
	err = tc_health_refuse(fs, r->server, msg, sizeof(msg));
	fail_unposted(fs, r, err ? err : -EHOSTDOWN, "%s", msg);
}

/* Post what waits to be posted (under lock), every request's. */
static void post_queued(tessera_fs *fs, uint64_t now)
{
	struct tc_req *r = fs->pending.next;

	while (r != &fs->pending) {
		struct tc_req *next = r->next; /* r may end here, nothing else */

		if (r->queued && !r->replied && post(fs, r) == -EAGAIN)
			queued_still(fs, r, now);
		r = next;
	}
}

/*
 * r's deadline has passed and the provider may still touch the caller's
 * memory for it (under lock): forget the peer, so that rxm closes its
 * connection and flushes what it can, cancel the receive, and collect
 * what completes. tc_engine_run waits a grace period more, then lets r go.
 */
#define TC_LET_GO_NS (100ull * 1000000u)

static void reclaim(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	if (r->reclaim_ns)
		return;
	r->reclaim_ns = now;
	/* If the peer was forgotten since r was sent, the connection r used
	 * was closed then; forgetting a newer one costs a reconnection. */
	tc_peer_forget(fs, r->server);
	if (r->rposted && !r->rcancel) {
		r->rcancel = 1;
		tnet_cancel(fs->net, &r->rctx);
	}
	dispatch(fs);
}

void tc_req_start(tessera_fs *fs, struct tc_req *r, uint64_t deadline, tc_req_done_fn done)
{
	r->done = done;
	submit(fs, r, deadline);
}

void tc_req_abort(tessera_fs *fs, struct tc_req *r, int status, const char *msg)
{
	if (r->replied)
		return;
	if (r->queued) {
		fail_unposted(fs, r, status, "%s", msg);
		return;
	}
	finish(fs, r, status, "%s", msg);
	r->deadline_ns = tp_mono_ns(); /* settle reclaims what it lends */
}

/* r's deadline passed unanswered (under lock): it fails, and its daemon
 * is suspect if it was heard lately (a slow request), else down. */
static void time_out(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	const struct tc_session *ses = tc_session_of(fs, r->server);
	char why[64];

	if (r->queued) { /* nothing handed over */
		r->queued = 0;
		r->sent = 1;
	}
	finish(fs, r, -ETIMEDOUT, "timed out after %llu ms",
	       (unsigned long long)((r->deadline_ns - r->submit_ns) / 1000000u));
	tc_peer_forget(fs, r->server);
	if (ses->heard_ns && now - ses->heard_ns < ms_ns(fs->cfg.connect_timeout_ms)) {
		tc_health_suspect(fs, r->server, "a request timed out");
	} else {
		tc_health_silence(why, sizeof(why), r->opcode == TP_OP_AUTH
				  ? ms_ns(fs->cfg.connect_timeout_ms) : now - r->submit_ns);
		tc_health_down(fs, r->server, -ETIMEDOUT, why);
	}
}

/* One round's look at r (under lock): time it out; cancel a tagged
 * receive that nothing may land in any more; past the deadline, reclaim
 * the caller's memory it lends. Returns whether run must still wait for
 * r: until it is answered, its send has completed, and the provider has
 * let go of the caller's memory (or r was let go after the grace). */
static int settle(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	if (!r->replied && now > r->deadline_ns)
		time_out(fs, r, now);
	/* Answered (or failed) with its tagged receive still posted: nothing
	 * more may land in the caller's buffer. */
	if (r->replied && r->rposted && !r->rcancel) {
		r->rcancel = 1;
		tnet_cancel(fs->net, &r->rctx);
	}
	if (lends(r) && !r->let_go && now > r->deadline_ns) {
		reclaim(fs, r, now);
		if (lends(r) && now > r->reclaim_ns + TC_LET_GO_NS)
			r->let_go = 1;
	}
	return !r->replied || !r->sent || (lends(r) && !r->let_go);
}

/* Whether every request is answered and lends nothing: what may still be
 * outstanding is a send of a request's own frame. */
static int only_own_sends_left(struct tc_req *const *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!reqs[i]->replied || (lends(reqs[i]) && !reqs[i]->let_go))
			return 0;
	return 1;
}

/* The longest a waiting thread sleeps between looks at its requests
 * (when no completion wakes it sooner), and while some request waits to
 * be posted (the provider's connection events wake it too; this is for
 * the checks of queued_still). Sleeping is in the kernel, on the
 * completion queue's wait object: waiting costs no CPU. */
#define TC_WAIT_MAX_MS 100
#define TC_WAIT_QUEUED_MS 10

/* Bring *until forward to t, when t is still to come. */
static void sooner(uint64_t *until, uint64_t t, uint64_t now)
{
	if (t > now && t < *until)
		*until = t;
}

/* The first moment a look at waiting r is due: its deadline, its probe,
 * its daemon's next probe or give-up, the end of its grace. */
static void next_look(tessera_fs *fs, const struct tc_req *r, uint64_t now, uint64_t *until)
{
	const struct tc_session *ses = tc_session_of(fs, r->server);

	if (r->reclaim_ns)
		sooner(until, r->reclaim_ns + TC_LET_GO_NS, now);
	if (r->replied)
		return;
	sooner(until, r->deadline_ns + 1, now);
	sooner(until, r->submit_ns + TC_PROBE_NS, now);
	sooner(until, ses->probe_next_ns, now);
	if (ses->silent_ns)
		sooner(until, ses->silent_ns + ms_ns(fs->cfg.connect_timeout_ms) + 1, now);
}

/* How long this round may sleep (under lock): until the first look due
 * at reqs, a detached request's deadline, or a queued request's next try. */
static int wait_ms(tessera_fs *fs, struct tc_req *const *reqs, size_t n, uint64_t now)
{
	uint64_t until = now + ms_ns(TC_WAIT_MAX_MS);

	for (const struct tc_req *r = fs->pending.next; r != &fs->pending; r = r->next) {
		if (r->queued)
			sooner(&until, now + ms_ns(TC_WAIT_QUEUED_MS), now);
		if (r->done)
			sooner(&until, r->deadline_ns + 1, now);
	}
	for (size_t i = 0; i < n; i++)
		next_look(fs, reqs[i], now, &until);
	return (int)((until - now + 999999u) / 1000000u);
}

/* A background thread's wait on the completion queue: also ended by a
 * caller's kick (make_progress), which then polls itself. */
static void background_wait(tessera_fs *fs, int ms)
{
	struct pollfd p[2] = { { tnet_fd(fs->net), POLLIN, 0 }, { fs->kick_fd, POLLIN, 0 } };
	uint64_t kicks;

	if (p[0].fd < 0 || tnet_trywait(fs->net)) {
		tnet_wait(fs->net, 0);
		return;
	}
	if (poll(p, 2, ms) > 0 && p[1].revents)
		(void)!read(fs->kick_fd, &kicks, sizeof(kicks));
}

/* A background thread leaves the completion queue to callers that
 * waited this recently: one of them takes its reply too. */
#define TC_BG_QUIET_NS (5ull * 1000000u)

/* Let completions arrive (under lock, dropped meanwhile): wait up to ms
 * on the completion queue when no other thread does, else sleep (20 ms at
 * most) until the thread that does has dispatched what came.
 * A background thread (the name lease watch, which waits at length)
 * polls only once callers have been quiet for TC_BG_QUIET_NS, else looks
 * again after that long (a pause only the reply to its own request ends,
 * dispatched by a caller: a WATCH's news then applies at once, not up to
 * 5 ms later); a caller that finds it polling kicks it off. Either
 * way a caller's reply is taken by a caller, never handed over by the
 * background thread: a wake-up more per request, which made mdtest-hard's
 * creates through the mount 0.72-0.84x as fast (docs/benchmarks.md). */
static void make_progress(tessera_fs *fs, int ms)
{
	int background = tc_thread(fs)->background && fs->kick_fd >= 0;
	uint64_t now = tp_mono_ns();
	struct timespec ts;

	if (!background)
		fs->fg_last_ns = now;
	else if (now - fs->fg_last_ns < TC_BG_QUIET_NS) {
		ts = tp_real_deadline(ms < 5 ? ms : 5);
		pthread_cond_timedwait(&fs->bg_cond, &fs->lock, &ts);
		return;
	}
	if (!fs->progressing) {
		fs->progressing = 1;
		fs->bg_polling = background;
		pthread_mutex_unlock(&fs->lock);
		if (background)
			background_wait(fs, ms);
		else
			tnet_wait(fs->net, ms);
		pthread_mutex_lock(&fs->lock);
		dispatch(fs);
		fs->progressing = 0;
		fs->bg_polling = 0;
		pthread_cond_broadcast(&fs->cond);
		return;
	}
	if (fs->bg_polling && !background) {
		uint64_t one = 1;

		(void)!write(fs->kick_fd, &one, sizeof(one));
		fs->bg_polling = 0;   /* kicked once */
	}
	ts = tp_real_deadline(ms < 20 ? ms : 20);
	pthread_cond_timedwait(&fs->cond, &fs->lock, &ts);
}

/* Whether this thread is the prober and the connection is closing
 * (under lock): its probe, which may wait connect_timeout_ms for a
 * silent daemon, is given up rather than hold tessera_disconnect. */
static int stopping(tessera_fs *fs)
{
	return fs->prober_stop && fs->prober_made && pthread_equal(fs->prober, pthread_self());
}

static void abort_all(tessera_fs *fs, struct tc_req *const *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tc_req_abort(fs, reqs[i], -ECANCELED, "the connection is closing");
}

static int first_failure(struct tc_req *const *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (reqs[i]->status)
			return reqs[i]->status;
	return 0;
}

void tc_engine_settle_detached(tessera_fs *fs, const unsigned *left)
{
	pthread_mutex_lock(&fs->lock);
	dispatch(fs);
	for (;;) {
		uint64_t now = tp_mono_ns();

		expire_detached(fs, now);
		post_queued(fs, now);
		if (!*left)
			break;
		make_progress(fs, wait_ms(fs, NULL, 0, now));
	}
	pthread_mutex_unlock(&fs->lock);
}

int tc_engine_run(tessera_fs *fs, struct tc_req **reqs, size_t n, tc_req_watch_fn watch)
{
	uint64_t start = tp_mono_ns(), last = start;
	int rc;

	pthread_mutex_lock(&fs->lock);
	/* Take in what the transport has (a connection that closed while
	 * we were idle: its daemon may have restarted), so that the sends
	 * below do not go out on a connection that is gone. */
	dispatch(fs);
	for (size_t i = 0; i < n; i++) {
		uint64_t d = tc_req_deadline(fs, reqs[i], start);

		reqs[i]->background = tc_thread(fs)->background;
		if (d > last)
			last = d;
		if (!reqs[i]->replied) /* else: failed before (no session) */
			submit(fs, reqs[i], d);
	}
	for (;;) {
		size_t open = 0;
		uint64_t now = tp_mono_ns();

		expire_detached(fs, now);
		post_queued(fs, now);
		for (size_t i = 0; i < n; i++) {
			if (watch)
				watch(fs, reqs[i], now);
			open += settle(fs, reqs[i], now);
		}
		if (!open)
			break;
		if (stopping(fs))
			abort_all(fs, reqs, n);
		/* Replied but a send of the request's own frame has not
		 * completed (rare): wait a while, then let tc_req_free hand it
		 * to the zombie list. A send or receive of lent memory is
		 * waited for (settle). */
		if (only_own_sends_left(reqs, n) && (now > last || stopping(fs)))
			break; /* tc_req_free parks the unsent ones */
		make_progress(fs, wait_ms(fs, reqs, n, now));
	}
	rc = first_failure(reqs, n);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tc_req_fail(tessera_fs *fs, struct tc_req *req, const char *what)
{
	char server[200];

	tc_server_name(fs, req->server, server, sizeof(server));
	return tc_fail(fs, req->status, "%s: %s: %s", what, server,
		       req->errmsg[0] ? req->errmsg : strerror(-req->status));
}
