/*
 * mds_purge.c - the purger (see mds_purge.h): purge intents in, REMOVE
 * requests to the storage daemons out, acknowledgements back into the
 * intents.
 *
 * Per storage daemon there is one slot: at most one REMOVE in flight,
 * naming the objects of up to PURGE_FILES intents (whole intents only, so
 * an acknowledgement may drop that daemon's part of each). Files removed
 * while the daemon runs are handed to the purger (mds_purge_note) and wait
 * in each slot's queue: the common case reads no intent from the store.
 * The store is scanned (a rescan) at start, after a failure and when a
 * queue overflowed: each slot scans the intents from its own cursor,
 * wrapping around, so a daemon that is down does not hold up the others,
 * until a whole lap found nothing for it. A rescan is not what removals
 * should wait on: intents acknowledged leave deletion markers in LevelDB
 * that a scan from the first intent steps over, one by one.
 *
 * The metadata daemon is a client of the storage daemons like any other:
 * each slot opens a session with its daemon (AUTH, a MUNGE credential of
 * the daemon's own uid) before its first REMOVE, and again after a
 * failure (the storage daemon may have restarted and lost it).
 */
#include "mds_purge.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "cap.h"
#include "mds_store.h"
#include "tp_clock.h"

#define PURGE_FILES 32            /* intents one REMOVE may cover */
#define PURGE_SCAN_PAGES 8        /* intent pages one slot reads per tick, so
				   * a long backlog for a dead daemon does not
				   * hold the event loop */
#define PURGE_BACKOFF_MIN_MS 100
#define PURGE_BACKOFF_MAX_MS 5000
#define PURGE_NRECV 8
#define PURGE_RBUF (64 * 1024)    /* replies are an EmptyReply or ErrorReply */
#define PURGE_QUEUE 4096          /* objects noted per slot before a rescan */

/* An object of a removed file, noted for the slot of its storage daemon. */
struct purge_note {
	uint64_t file;                /* the intent */
	uint64_t object;
};

struct purge_slot {
	uint64_t peer;
	int known;                    /* peer looked up */
	int quiet;                    /* nothing to do until a note or a failure */
	int rescan;                   /* the intents must be read from the store */
	/* Noted objects, oldest first, a file's objects consecutive: a ring
	 * of PURGE_QUEUE from qhead. */
	struct purge_note *queue;
	uint32_t qhead, qlen;
	int lap_empty;                /* this lap over the intents (from the
				       * first) found nothing for us yet */
	int resume;                   /* cursor valid */
	uint64_t cursor;              /* last intent looked at */
	/* the request in flight (busy), or none */
	int busy;
	int authing;                  /* the request in flight is AUTH */
	int sending;                  /* send not completed: frame in use */
	int forget_after_send;        /* failed while sending: forget the peer
				       * once that send completes (slot_forget) */
	struct tp_session ses;        /* id 0: none yet; AUTH: the proposed key */
	uint64_t tx_seq;              /* the session's next request number */
	struct tp_replay rx;          /* its replies' numbers accepted */
	uint64_t reqid;
	uint64_t deadline_ns;
	uint32_t nfiles;
	uint64_t files[PURGE_FILES];  /* intents the request covers */
	struct tnet_ctx ctx;
	uint8_t *frame;
	/* failures in a row and when to try again */
	uint32_t failures;
	uint64_t retry_ns;
};

struct mds_purge {
	const struct tp_config *cfg;
	struct mds_store *store;
	const struct cap_key *key;
	struct tnet *net;
	uint8_t name[TP_MAX_ADDR];
	size_t name_len;
	uint64_t next_reqid;
	struct purge_slot *slots;     /* cfg->n_ios */
	struct mds_intent *page;      /* PURGE_FILES intents (scratch) */
	size_t frame_cap;
};

int mds_purge_create(const struct tp_config *cfg, struct mds_store *store,
		     const struct cap_key *key, struct mds_purge **out, char *err,
		     size_t errlen)
{
	struct mds_purge *p = calloc(1, sizeof(*p));
	struct tnet_opts to = { cfg->provider, NULL, NULL, 0, PURGE_RBUF, PURGE_NRECV };
	int rc;

	*out = NULL;
	if (!p)
		goto nomem;
	p->cfg = cfg;
	p->store = store;
	p->key = key;
	p->next_reqid = 1;
	/* header + reply address + TP_MAX_HANDLES varint handles, and the
	 * capability naming them again (fixed fields and MAC), generously */
	p->frame_cap = TP_HDR_SIZE + TP_MAX_ADDR + 16 + 11 * TP_MAX_HANDLES +
		       (16 + 11 * TP_MAX_HANDLES + 64 + TP_CAP_MAC_LEN);
	p->slots = calloc(cfg->n_ios ? cfg->n_ios : 1, sizeof(*p->slots));
	p->page = calloc(PURGE_FILES, sizeof(*p->page));
	if (!p->slots || !p->page)
		goto nomem;
	for (uint32_t s = 0; s < cfg->n_ios; s++) {
		p->slots[s].ctx.user = &p->slots[s];
		p->slots[s].rescan = 1; /* intents left from before the start */
		p->slots[s].frame = malloc(p->frame_cap);
		p->slots[s].queue = calloc(PURGE_QUEUE, sizeof(*p->slots[s].queue));
		if (!p->slots[s].frame || !p->slots[s].queue)
			goto nomem;
	}
	if ((rc = tnet_open(&to, &p->net, err, errlen))) {
		mds_purge_destroy(p);
		return rc;
	}
	p->name_len = sizeof(p->name);
	if ((rc = tnet_name(p->net, p->name, &p->name_len))) {
		snprintf(err, errlen, "purger: own transport name: %s", strerror(-rc));
		mds_purge_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
nomem:
	snprintf(err, errlen, "purger: out of memory");
	mds_purge_destroy(p);
	return -ENOMEM;
}

void mds_purge_destroy(struct mds_purge *p)
{
	if (!p)
		return;
	if (p->net)
		tnet_close(p->net);
	if (p->slots)
		for (uint32_t s = 0; s < p->cfg->n_ios; s++) {
			free(p->slots[s].frame);
			free(p->slots[s].queue);
		}
	free(p->slots);
	free(p->page);
	free(p);
}

/* Slot sl reads the store again from the first intent; what it had
 * queued is there too. */
static void slot_rescan(struct purge_slot *sl)
{
	sl->rescan = 1;
	sl->quiet = 0;
	sl->resume = 0;
	sl->qlen = 0;
}

void mds_purge_note(struct mds_purge *p, uint64_t file, uint32_t count, const uint32_t *servers,
		    const uint64_t *objects)
{
	if (!p)
		return;
	for (uint32_t s = 0; s < p->cfg->n_ios; s++) {
		struct purge_slot *sl = &p->slots[s];
		uint32_t mine = 0;

		for (uint32_t i = 0; i < count; i++)
			mine += servers[i] == s;
		if (!mine)
			continue;
		if (sl->rescan) {
			/* The scan finds it in the store; it may lie behind
			 * the cursor (handles need not grow): another whole
			 * lap before the scan may end. */
			sl->lap_empty = 0;
			sl->quiet = 0;
			continue;
		}
		if (sl->qlen + mine > PURGE_QUEUE) {
			slot_rescan(sl);
			continue;
		}
		for (uint32_t i = 0; i < count; i++)
			if (servers[i] == s)
				sl->queue[(sl->qhead + sl->qlen++) % PURGE_QUEUE] =
					(struct purge_note){ file, objects[i] };
		sl->quiet = 0;
	}
}

static void say(void (*log)(void *, const char *), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(void (*log)(void *, const char *), void *arg, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log(arg, line);
}

/* Forget slot sl's storage daemon's address, so the next request connects
 * afresh. Only with no send of the slot's pending: the provider closes the
 * connection when its address goes (FI_AV_REMOVE_CLEANUP). The slot is the
 * address's only owner on the purger's endpoint, and `known` makes sure
 * it is forgotten once: a second fi_av_remove of a removed address is a
 * use after free in libfabric. */
static void slot_forget(struct mds_purge *p, struct purge_slot *sl)
{
	sl->forget_after_send = 0;
	if (!sl->known)
		return;
	tnet_forget(p->net, sl->peer);
	sl->known = 0;
}

/* The request on slot s failed: forget the connection, back off. */
static void slot_failed(struct mds_purge *p, uint32_t s, const char *why,
			void (*log)(void *, const char *), void *arg)
{
	struct purge_slot *sl = &p->slots[s];
	uint64_t ms = PURGE_BACKOFF_MIN_MS;

	if (sl->failures == 0)
		say(log, arg, "purger: storage daemon %u (%s:%s): %s; retrying with backoff", s,
		    p->cfg->ios[s].host, p->cfg->ios[s].port, why);
	for (uint32_t i = 0; i < sl->failures && ms < PURGE_BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > PURGE_BACKOFF_MAX_MS)
		ms = PURGE_BACKOFF_MAX_MS;
	sl->failures++;
	sl->busy = 0;
	slot_rescan(sl);        /* the intents it covered come first again */
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
	 * completion arrives (mds_purge_tick), which tcp gives once the
	 * frame is in the socket or the connection broke; the slot sends
	 * nothing meanwhile (its frame is in use). */
	sl->forget_after_send = 1;
}

/* Storage daemon s acknowledged: its part of every covered intent is done. */
static void slot_done(struct mds_purge *p, uint32_t s, void (*log)(void *, const char *),
		      void *arg)
{
	struct purge_slot *sl = &p->slots[s];
	int rc;

	if (sl->failures)
		say(log, arg, "purger: storage daemon %u answers again", s);
	sl->failures = 0;
	sl->busy = 0;
	for (uint32_t i = 0; i < sl->nfiles; i++)
		if ((rc = mds_intent_done(p->store, sl->files[i], s)))
			say(log, arg, "purger: %s", mds_store_errmsg(p->store));
}

/* Storage daemon s answered the slot's AUTH (sealed INTEGRITY under the
 * proposed key, the daemon's number 0): the session is open, in the mode
 * the daemon chose, at least the config's. */
static void auth_answered(struct mds_purge *p, uint32_t s, const struct tp_frame *fr,
			  void (*log)(void *, const char *), void *arg)
{
	struct purge_slot *sl = &p->slots[s];
	Tessera__AuthReply *ar = (Tessera__AuthReply *)
		tp_body_unpack(fr, &tessera__auth_reply__descriptor);
	enum tp_seal_mode mode = ar ? (enum tp_seal_mode)ar->seal_mode : TP_SEAL_MODES;

	sl->busy = sl->authing = 0;
	sl->ses.id = ar ? ar->session : 0;
	if (ar)
		protobuf_c_message_free_unpacked(&ar->base, NULL);
	if (mode >= TP_SEAL_MODES || tp_seal_stronger(mode, tp_seal_mode_of(p->cfg)) != mode) {
		sl->ses.id = 0;
		slot_failed(p, s, "its answer to AUTH does not decode, or offers too little sealing",
			    log, arg);
		return;
	}
	sl->ses.mode = mode;
	sl->tx_seq = 0;
	memset(&sl->rx, 0, sizeof(sl->rx));
	tp_replay_accept(&sl->rx, 0);
	if (!sl->ses.id)
		slot_failed(p, s, "its answer to AUTH does not decode", log, arg);
}

/* The busy slot whose request fr answers, or -1 (nobody's, or forged:
 * not from that slot's session, or seen before). */
static int slot_of_reply(struct mds_purge *p, struct tp_frame *fr)
{
	for (uint32_t s = 0; s < p->cfg->n_ios; s++) {
		struct purge_slot *sl = &p->slots[s];

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
static void slot_refused(struct mds_purge *p, uint32_t s, struct tp_frame *fr,
			 void (*log)(void *, const char *), void *arg)
{
	Tessera__ErrorReply *er;
	char err[256];

	er = (Tessera__ErrorReply *)tp_body_unpack(fr, &tessera__error_reply__descriptor);
	snprintf(err, sizeof(err), "%s: %s", p->slots[s].authing ? "authenticate" : "remove",
		 er && er->message ? er->message : strerror(-fr->hdr.status));
	if (er)
		protobuf_c_message_free_unpacked(&er->base, NULL);
	slot_failed(p, s, err, log, arg);
}

static void on_reply(struct mds_purge *p, const struct tnet_event *ev,
		     void (*log)(void *, const char *), void *arg)
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
		slot_refused(p, (uint32_t)s, &fr, log, arg);
	else if (p->slots[s].authing)
		auth_answered(p, (uint32_t)s, &fr, log, arg);
	else
		slot_done(p, (uint32_t)s, log, arg);
}

/* The n intents of p->page into slot s's REMOVE request, moving its
 * cursor past each one taken or not for s: 1 when the request is full
 * before the page's end, else 0. */
static int gather_page(struct mds_purge *p, uint32_t s, uint32_t n,
		       Tessera__HandlesRequest *m, uint64_t *handles)
{
	struct purge_slot *sl = &p->slots[s];

	for (uint32_t i = 0; i < n; i++) {
		const struct mds_intent *in = &p->page[i];
		uint32_t mine = 0;

		for (uint32_t k = 0; k < in->count; k++)
			mine += in->servers[k] == s;
		if (mine && (m->n_handles + mine > TP_MAX_HANDLES || sl->nfiles == PURGE_FILES))
			return 1;
		sl->cursor = in->file;
		sl->resume = 1;
		if (!mine)
			continue;
		for (uint32_t k = 0; k < in->count; k++)
			if (in->servers[k] == s)
				handles[m->n_handles++] = in->handles[k];
		sl->files[sl->nfiles++] = in->file;
		sl->lap_empty = 0;
	}
	return 0;
}

/* Gather the next intents with objects on storage daemon s into a REMOVE
 * request: 1 when one was built, 0 when a whole lap over the intents found
 * nothing for s, 2 when this tick's scan budget ran out first, or a
 * negative errno. */
static int gather(struct mds_purge *p, uint32_t s, Tessera__HandlesRequest *m,
		  uint64_t *handles)
{
	struct purge_slot *sl = &p->slots[s];

	sl->nfiles = 0;
	m->n_handles = 0;
	for (int pages = 0;; pages++) {
		uint32_t n = 0;
		int eof = 0, rc;

		if (pages == PURGE_SCAN_PAGES)
			return sl->nfiles ? 1 : 2;
		if (!sl->resume)
			sl->lap_empty = 1;  /* a lap starts at the first intent */
		rc = mds_intent_list(p->store, sl->resume ? &sl->cursor : NULL, PURGE_FILES,
				     p->page, &n, &eof);
		if (rc)
			return rc;
		if (gather_page(p, s, n, m, handles))
			return 1;   /* full: the rest next time */
		if (!eof)
			continue;
		/* end of the intents: the next page starts a new lap */
		sl->resume = 0;
		if (sl->nfiles)
			return 1;
		if (sl->lap_empty)
			return 0;
	}
}

/* The next whole files of slot s's queue into a REMOVE request: 1 when
 * one was built, 0 when the queue is empty. */
static int gather_noted(struct mds_purge *p, uint32_t s, Tessera__HandlesRequest *m,
			uint64_t *handles)
{
	struct purge_slot *sl = &p->slots[s];

	sl->nfiles = 0;
	m->n_handles = 0;
	while (sl->qlen && sl->nfiles < PURGE_FILES) {
		uint64_t file = sl->queue[sl->qhead].file;
		uint32_t k = 0;

		while (k < sl->qlen && sl->queue[(sl->qhead + k) % PURGE_QUEUE].file == file)
			k++;
		if (m->n_handles + k > TP_MAX_HANDLES)
			break;
		for (uint32_t i = 0; i < k; i++)
			handles[m->n_handles++] = sl->queue[(sl->qhead + i) % PURGE_QUEUE].object;
		sl->qhead = (sl->qhead + k) % PURGE_QUEUE;
		sl->qlen -= k;
		sl->files[sl->nfiles++] = file;
	}
	return sl->nfiles ? 1 : 0;
}

/* An AUTH request for storage daemon s into the slot's frame, with a
 * fresh credential and proposed key (kept in sl->ses until the answer). */
static long auth_frame(struct mds_purge *p, uint32_t s, struct tp_hdr *hdr,
		       void (*log)(void *, const char *), void *arg)
{
	struct purge_slot *sl = &p->slots[s];
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char target[32], err[300], *cred = NULL;
	long len;
	int rc;

	snprintf(target, sizeof(target), "ios:%u", s);
	rc = tp_auth_encode(p->cfg->munge_socket, p->cfg->daemon_uid, target, p->name, p->name_len,
			    sl->ses.key, &cred, err, sizeof(err));
	if (rc) {
		slot_failed(p, s, err, log, arg);
		return rc;
	}
	hdr->opcode = TP_OP_AUTH;
	m.credential = cred;
	m.seal_mode = tp_seal_mode_of(p->cfg);
	sl->ses.mode = TP_SEAL_INTEGRITY; /* how the answer is sealed */
	len = tp_frame_build(sl->frame, p->frame_cap, hdr, p->name, p->name_len, &m.base);
	free(cred);
	if (len < 0)
		slot_failed(p, s, "AUTH does not fit a frame", log, arg);
	return len;
}

static void slot_send(struct mds_purge *p, uint32_t s, void (*log)(void *, const char *),
		      void *arg)
{
	struct purge_slot *sl = &p->slots[s];
	Tessera__HandlesRequest m = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	uint8_t mac[TP_CAP_MAC_LEN];
	uint64_t handles[TP_MAX_HANDLES];
	struct tp_hdr hdr = { .opcode = TP_OP_REMOVE };
	struct iovec iov;
	long len;
	int rc;

	m.handles = handles;
	if (!sl->rescan) {
		rc = gather_noted(p, s, &m, handles);
	} else {
		rc = gather(p, s, &m, handles);
		if (rc == 0)
			sl->rescan = 0; /* a whole lap found nothing: the queue is all */
	}
	if (rc < 0) {
		say(log, arg, "purger: %s", mds_store_errmsg(p->store));
		sl->retry_ns = tp_mono_ns() + PURGE_BACKOFF_MAX_MS * 1000000ull;
		return;
	}
	if (rc == 0 || rc == 2) {
		sl->quiet = rc == 0;    /* 2: go on scanning next tick */
		return;
	}
	if (!sl->known) {
		rc = tnet_lookup(p->net, p->cfg->ios[s].host, p->cfg->ios[s].port, &sl->peer);
		if (rc) {
			slot_failed(p, s, "cannot resolve its address", log, arg);
			return;
		}
		sl->known = 1;
	}
	/* The purger's own grant: remove these objects (file 0: several),
	 * to its session's uid, the daemons' (a storage daemon takes a
	 * capability only from its uid's sessions, or root's). */
	cap.uid = p->cfg->daemon_uid;
	cap.handles = handles;
	cap.n_handles = m.n_handles;
	cap.rights = TP_CAP_REMOVE;
	cap.expires_ns = tp_real_ns() + (int64_t)p->cfg->cap_lifetime_ms * 1000000;
	if (cap_sign(p->key, &cap, mac)) {
		slot_failed(p, s, "cannot sign its remove capability", log, arg);
		return;
	}
	m.cap = &cap;
	hdr.reqid = p->next_reqid++;
	if (!sl->ses.id) {
		/* No session yet: AUTH first; the intents are gathered again
		 * from the store, from the first, once it is open. */
		slot_rescan(sl);
		len = auth_frame(p, s, &hdr, log, arg);
		if (len < 0)
			return;
		sl->authing = 1;
	} else {
		len = tp_frame_build(sl->frame, p->frame_cap, &hdr, p->name, p->name_len, &m.base);
		if (len < 0) {
			slot_failed(p, s, "request does not fit a frame", log, arg);
			return;
		}
		tp_frame_seal(sl->frame, (size_t)len, NULL, 0, &sl->ses, sl->tx_seq++);
	}
	iov.iov_base = sl->frame;
	iov.iov_len = (size_t)len;
	rc = tnet_send(p->net, sl->peer, &iov, 1, &sl->ctx);
	if (rc == -EAGAIN) {
		slot_rescan(sl);    /* next tick; the files taken are in the store */
		return;
	}
	if (rc) {
		slot_failed(p, s, strerror(-rc), log, arg);
		return;
	}
	sl->busy = 1;
	sl->sending = 1;
	sl->reqid = hdr.reqid;
	sl->deadline_ns = tp_mono_ns() + (uint64_t)p->cfg->timeout_ms * 1000000u;
}

void mds_purge_tick(struct mds_purge *p, void (*log)(void *, const char *), void *arg)
{
	struct tnet_event ev[16];
	uint64_t now;
	int n;

	while ((n = tnet_poll(p->net, ev, 16)) > 0)
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_RECV) {
				if (!ev[i].status)
					on_reply(p, &ev[i], log, arg);
				tnet_repost(p->net, ev[i].rbuf);
				continue;
			}
			struct purge_slot *sl = ev[i].user;
			uint32_t s = (uint32_t)(sl - p->slots);

			/* The frame is free again; a send that failed after
			 * the slot failed (a timeout, say) changes nothing,
			 * and the slot's address can go now. */
			sl->sending = 0;
			if (ev[i].status && sl->busy)
				slot_failed(p, s, strerror(-ev[i].status), log, arg);
			else if (sl->forget_after_send)
				slot_forget(p, sl);
		}
	now = tp_mono_ns();
	for (uint32_t s = 0; s < p->cfg->n_ios; s++) {
		struct purge_slot *sl = &p->slots[s];

		if (sl->busy && now >= sl->deadline_ns)
			slot_failed(p, s, "no answer within timeout_ms", log, arg);
		if (sl->busy || sl->sending || sl->quiet || now < sl->retry_ns)
			continue;
		slot_send(p, s, log, arg);
	}
}
