/*
 * mds_peers.c - the metadata daemon's sessions with the storage daemons
 * (mds_peers.h): a slot per storage daemon, AUTH, one request in flight,
 * deadlines and backoff. Taken out of the purger so that the merger
 * (mds_vmerge.c) speaks to the storage daemons the same way.
 */
#include "mds_peers.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "tp_clock.h"

#define PEERS_BACKOFF_MIN_MS 100
#define PEERS_BACKOFF_MAX_MS 5000
#define PEERS_NRECV 8
#define PEERS_RBUF (64 * 1024)    /* replies: an ErrorReply, EmptyReply or VlogReply */
#define PEERS_FRAME_MIN (64 * 1024)

struct peer_slot {
	uint64_t peer;
	int known;                    /* peer looked up */
	/* the request in flight (busy), or none */
	int busy;
	int authing;                  /* the request in flight is AUTH */
	int sending;                  /* send not completed: frame in use */
	int forget_after_send;        /* failed while sending: forget the peer
				       * once that send completes (slot_forget) */
	const char *what;             /* the request's name in messages */
	struct tp_session ses;        /* id 0: none yet; AUTH: the proposed key */
	uint64_t tx_seq;              /* the session's next request number */
	struct tp_replay rx;          /* its replies' numbers accepted */
	uint64_t reqid;
	uint64_t deadline_ns;
	struct tnet_ctx ctx;
	uint8_t *frame;               /* grown to the largest request sent */
	size_t frame_cap;
	/* failures in a row and when to try again */
	uint32_t failures;
	uint64_t retry_ns;
};

struct mds_peers {
	const struct tp_config *cfg;
	const char *who;
	const struct mds_peers_ops *ops;
	void *user;
	struct tnet *net;
	uint8_t name[TP_MAX_ADDR];
	size_t name_len;
	uint64_t next_reqid;
	struct peer_slot *slots;      /* cfg->n_ios */
};

int mds_peers_create(const struct tp_config *cfg, const char *who,
		     const struct mds_peers_ops *ops, void *user, struct mds_peers **out,
		     char *err, size_t errlen)
{
	struct mds_peers *p = calloc(1, sizeof(*p));
	struct tnet_opts to = { cfg->provider, NULL, NULL, 0, PEERS_RBUF, PEERS_NRECV };
	int rc;

	*out = NULL;
	if (!p || !(p->slots = calloc(cfg->n_ios ? cfg->n_ios : 1, sizeof(*p->slots)))) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->cfg = cfg;
	p->who = who;
	p->ops = ops;
	p->user = user;
	p->next_reqid = 1;
	for (uint32_t s = 0; s < cfg->n_ios; s++)
		p->slots[s].ctx.user = &p->slots[s];
	if ((rc = tnet_open(&to, &p->net, err, errlen))) {
		mds_peers_destroy(p);
		return rc;
	}
	p->name_len = sizeof(p->name);
	if ((rc = tnet_name(p->net, p->name, &p->name_len))) {
		snprintf(err, errlen, "own transport name: %s", strerror(-rc));
		mds_peers_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

void mds_peers_destroy(struct mds_peers *p)
{
	if (!p)
		return;
	if (p->net)
		tnet_close(p->net);
	for (uint32_t s = 0; s < p->cfg->n_ios; s++)
		free(p->slots[s].frame);
	free(p->slots);
	free(p);
}

void mds_peers_say(const struct mds_peers *p, const struct mds_peers_log *log,
		   const char *fmt, ...)
{
	char line[512];
	int n;
	va_list ap;

	if (!log || !log->fn)
		return;
	n = snprintf(line, sizeof(line), "%s: ", p->who);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	log->fn(log->arg, line);
}

/* Forget slot sl's storage daemon's address, so the next request connects
 * afresh. Only with no send of the slot's pending: the provider closes the
 * connection when its address goes (FI_AV_REMOVE_CLEANUP). The slot is the
 * address's only owner on the endpoint, and `known` makes sure it is
 * forgotten once: a second fi_av_remove of a removed address is a use
 * after free in libfabric. */
static void slot_forget(struct mds_peers *p, struct peer_slot *sl)
{
	sl->forget_after_send = 0;
	if (!sl->known)
		return;
	tnet_forget(p->net, sl->peer);
	sl->known = 0;
}

/* Slot s failed (why, for the log): forget the connection and session,
 * back off; tell the user if a request of its was in flight (`tell`). */
static void slot_backoff(struct mds_peers *p, uint32_t s, const char *why,
			 const struct mds_peers_log *log)
{
	struct peer_slot *sl = &p->slots[s];
	uint64_t ms = PEERS_BACKOFF_MIN_MS;

	if (sl->failures == 0)
		mds_peers_say(p, log, "storage daemon %u (%s:%s): %s; retrying with backoff", s,
			      p->cfg->ios[s].host, p->cfg->ios[s].port, why);
	for (uint32_t i = 0; i < sl->failures && ms < PEERS_BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > PEERS_BACKOFF_MAX_MS)
		ms = PEERS_BACKOFF_MAX_MS;
	sl->failures++;
	sl->busy = 0;
	sl->retry_ns = tp_mono_ns() + ms * 1000000u;
	sl->authing = 0;
	sodium_memzero(&sl->ses, sizeof(sl->ses)); /* authenticate again */
	if (!sl->sending) {
		slot_forget(p, sl);
		return;
	}
	/* The send is still with the provider. Forgetting its address now
	 * would make rxm close and free the connection that send is queued
	 * on (FI_AV_REMOVE_CLEANUP), inside fi_av_remove, and the metadata
	 * daemon died in there (SIGSEGV). Forget the peer when the send's
	 * completion arrives (mds_peers_poll), which tcp gives once the
	 * frame is in the socket or the connection broke; the slot sends
	 * nothing meanwhile (its frame is in use). */
	sl->forget_after_send = 1;
}

/* The request in flight on slot s failed: back off, and the user learns. */
static void slot_failed(struct mds_peers *p, uint32_t s, int rc, const char *why,
			const struct mds_peers_log *log)
{
	slot_backoff(p, s, why, log);
	p->ops->failed(p->user, s, rc);
}

/* Storage daemon s answered the slot's AUTH (sealed INTEGRITY under the
 * proposed key, the daemon's number 0): the session is open, in the mode
 * the daemon chose, at least the config's. The user's request goes next. */
static void auth_answered(struct mds_peers *p, uint32_t s, const struct tp_frame *fr,
			  const struct mds_peers_log *log)
{
	struct peer_slot *sl = &p->slots[s];
	Tessera__AuthReply *ar = (Tessera__AuthReply *)
		tp_body_unpack(fr, &tessera__auth_reply__descriptor);
	enum tp_seal_mode mode = ar ? (enum tp_seal_mode)ar->seal_mode : TP_SEAL_MODES;

	sl->busy = sl->authing = 0;
	sl->ses.id = ar ? ar->session : 0;
	if (ar)
		protobuf_c_message_free_unpacked(&ar->base, NULL);
	if (mode >= TP_SEAL_MODES || tp_seal_stronger(mode, tp_seal_mode_of(p->cfg)) != mode) {
		sl->ses.id = 0;
		slot_failed(p, s, -EPROTO, "its answer to AUTH does not decode, or offers too "
			    "little sealing", log);
		return;
	}
	sl->ses.mode = mode;
	sl->tx_seq = 0;
	memset(&sl->rx, 0, sizeof(sl->rx));
	tp_replay_accept(&sl->rx, 0);
	if (!sl->ses.id)
		slot_failed(p, s, -EPROTO, "its answer to AUTH does not decode", log);
}

/* The busy slot whose request fr answers, or -1 (nobody's, or forged:
 * not from that slot's session, or seen before). */
static int slot_of_reply(struct mds_peers *p, struct tp_frame *fr)
{
	for (uint32_t s = 0; s < p->cfg->n_ios; s++) {
		struct peer_slot *sl = &p->slots[s];

		if (!sl->busy || sl->reqid != fr->hdr.reqid)
			continue;
		if ((!sl->authing && fr->hdr.session != sl->ses.id) ||
		    tp_frame_open(fr, NULL, 0, &sl->ses, sl->authing ? NULL : &sl->rx))
			return -1;
		return (int)s;
	}
	return -1;
}

/* Slot s's request failed (fr's status): what the daemon said, logged. */
static void slot_refused(struct mds_peers *p, uint32_t s, struct tp_frame *fr,
			 const struct mds_peers_log *log)
{
	Tessera__ErrorReply *er;
	char err[256];

	er = (Tessera__ErrorReply *)tp_body_unpack(fr, &tessera__error_reply__descriptor);
	snprintf(err, sizeof(err), "%s: %s", p->slots[s].authing ? "authenticate" :
		 p->slots[s].what, er && er->message ? er->message : strerror(-fr->hdr.status));
	if (er)
		protobuf_c_message_free_unpacked(&er->base, NULL);
	slot_failed(p, s, fr->hdr.status, err, log);
}

/* Slot s's request was answered with success. */
static void slot_done(struct mds_peers *p, uint32_t s, const struct tp_frame *fr,
		      const struct mds_peers_log *log)
{
	struct peer_slot *sl = &p->slots[s];

	if (sl->failures)
		mds_peers_say(p, log, "storage daemon %u answers again", s);
	sl->failures = 0;
	sl->busy = 0;
	p->ops->answered(p->user, s, fr);
}

static void on_reply(struct mds_peers *p, const struct tnet_event *ev,
		     const struct mds_peers_log *log)
{
	struct tp_frame fr;
	char err[256];
	int s;

	if (tp_frame_parse(ev->rbuf->data, ev->len, ev->rbuf->cap, &fr, err, sizeof(err)) ||
	    !(fr.hdr.flags & TP_FLAG_REPLY))
		return;
	if ((s = slot_of_reply(p, &fr)) < 0)
		return;
	if (fr.hdr.status != 0)
		slot_refused(p, (uint32_t)s, &fr, log);
	else if (p->slots[s].authing)
		auth_answered(p, (uint32_t)s, &fr, log);
	else
		slot_done(p, (uint32_t)s, &fr, log);
}

/* A send completed: the frame is free again; a send that failed after
 * the slot failed (a timeout, say) changes nothing, and the slot's
 * address can go now. */
static void on_sent(struct mds_peers *p, const struct tnet_event *ev,
		    const struct mds_peers_log *log)
{
	struct peer_slot *sl = ev->user;
	uint32_t s = (uint32_t)(sl - p->slots);

	sl->sending = 0;
	if (ev->status && sl->busy)
		slot_failed(p, s, ev->status, strerror(-ev->status), log);
	else if (sl->forget_after_send)
		slot_forget(p, sl);
}

void mds_peers_poll(struct mds_peers *p, const struct mds_peers_log *log)
{
	struct tnet_event ev[16];
	uint64_t now;
	int n;

	while ((n = tnet_poll(p->net, ev, 16)) > 0)
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_RECV) {
				if (!ev[i].status)
					on_reply(p, &ev[i], log);
				tnet_repost(p->net, ev[i].rbuf);
			} else if (ev[i].type == TNET_SENT) {
				on_sent(p, &ev[i], log);
			}
		}
	now = tp_mono_ns();
	for (uint32_t s = 0; s < p->cfg->n_ios; s++)
		if (p->slots[s].busy && now >= p->slots[s].deadline_ns)
			slot_failed(p, s, -ETIMEDOUT, "no answer within timeout_ms", log);
}

int mds_peers_ready(const struct mds_peers *p, uint32_t s, uint64_t now_ns)
{
	const struct peer_slot *sl = &p->slots[s];

	return !sl->busy && !sl->sending && now_ns >= sl->retry_ns;
}

int mds_peers_backing_off(const struct mds_peers *p, uint32_t s, uint64_t now_ns)
{
	const struct peer_slot *sl = &p->slots[s];

	return sl->failures && !sl->busy && !sl->sending && now_ns < sl->retry_ns;
}

/* Room in slot sl's frame for `need` bytes: 0 or -ENOMEM. */
static int frame_room(struct peer_slot *sl, size_t need)
{
	uint8_t *f;

	if (need <= sl->frame_cap)
		return 0;
	if (need < PEERS_FRAME_MIN)
		need = PEERS_FRAME_MIN;
	if (!(f = realloc(sl->frame, need)))
		return -ENOMEM;
	sl->frame = f;
	sl->frame_cap = need;
	return 0;
}

/* An AUTH request for storage daemon s into the slot's frame, with a
 * fresh credential and proposed key (kept in sl->ses until the answer).
 * The frame length, or a negative errno with *why set. */
static long auth_frame(struct mds_peers *p, uint32_t s, struct tp_hdr *hdr, char *why,
		       size_t whylen)
{
	struct peer_slot *sl = &p->slots[s];
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char target[32], *cred = NULL;
	long len;
	int rc;

	snprintf(target, sizeof(target), "ios:%u", s);
	rc = tp_auth_encode(p->cfg->munge_socket, p->cfg->daemon_uid, target, p->name, p->name_len,
			    sl->ses.key, &cred, why, whylen);
	if (rc)
		return rc;
	hdr->opcode = TP_OP_AUTH;
	m.credential = cred;
	m.seal_mode = tp_seal_mode_of(p->cfg);
	sl->ses.mode = TP_SEAL_INTEGRITY; /* how the answer is sealed */
	len = frame_room(sl, TP_HDR_SIZE + p->name_len + protobuf_c_message_get_packed_size(&m.base))
	      ? -ENOMEM : tp_frame_build(sl->frame, sl->frame_cap, hdr, p->name, p->name_len,
					 &m.base);
	free(cred);
	if (len < 0)
		snprintf(why, whylen, "AUTH does not fit a frame");
	return len;
}

/* The user's request into the slot's frame, sealed: its length, or a
 * negative errno with why set. */
static long request_frame(struct mds_peers *p, uint32_t s, struct tp_hdr *hdr,
			  const ProtobufCMessage *msg, char *why, size_t whylen)
{
	struct peer_slot *sl = &p->slots[s];
	long len = -ENOMEM;

	if (!frame_room(sl, TP_HDR_SIZE + p->name_len + protobuf_c_message_get_packed_size(msg)))
		len = tp_frame_build(sl->frame, sl->frame_cap, hdr, p->name, p->name_len, msg);
	if (len < 0) {
		snprintf(why, whylen, "request does not fit a frame");
		return len;
	}
	tp_frame_seal(sl->frame, (size_t)len, NULL, 0, &sl->ses, sl->tx_seq++);
	return len;
}

enum mds_peers_sent mds_peers_send(struct mds_peers *p, uint32_t s, unsigned op,
				   const char *what, const ProtobufCMessage *msg,
				   const struct mds_peers_log *log)
{
	struct peer_slot *sl = &p->slots[s];
	struct tp_hdr hdr = { .opcode = (uint16_t)op };
	struct iovec iov;
	char why[300];
	int authing = !sl->ses.id, rc;
	long len;

	if (!sl->known) {
		if (tnet_lookup(p->net, p->cfg->ios[s].host, p->cfg->ios[s].port, &sl->peer)) {
			slot_backoff(p, s, "cannot resolve its address", log);
			return MDS_PEERS_FAILED;
		}
		sl->known = 1;
	}
	hdr.reqid = p->next_reqid++;
	/* No session yet: AUTH first; the user sends again once it is open. */
	len = authing ? auth_frame(p, s, &hdr, why, sizeof(why))
		      : request_frame(p, s, &hdr, msg, why, sizeof(why));
	if (len < 0) {
		slot_backoff(p, s, why, log);
		return MDS_PEERS_FAILED;
	}
	iov.iov_base = sl->frame;
	iov.iov_len = (size_t)len;
	rc = tnet_send(p->net, sl->peer, &iov, 1, &sl->ctx);
	if (rc == -EAGAIN)
		return MDS_PEERS_LATER;
	if (rc) {
		slot_backoff(p, s, strerror(-rc), log);
		return MDS_PEERS_FAILED;
	}
	sl->busy = 1;
	sl->sending = 1;
	sl->authing = authing;
	sl->what = what;
	sl->reqid = hdr.reqid;
	sl->deadline_ns = tp_mono_ns() + (uint64_t)p->cfg->timeout_ms * 1000000u;
	return authing ? MDS_PEERS_AUTHING : MDS_PEERS_SENT;
}
