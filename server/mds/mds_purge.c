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
 * the sessions, the one request in flight per daemon, deadlines and
 * backoff are mds_peers.c's (shared with the merger); a failure makes the
 * slot rescan, so what the request covered is sent again.
 */
#include "mds_purge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "mds_peers.h"
#include "mds_store.h"
#include "tp_clock.h"

#define PURGE_FILES 32            /* intents one REMOVE may cover */
#define PURGE_SCAN_PAGES 8        /* intent pages one slot reads per tick, so
				   * a long backlog for a dead daemon does not
				   * hold the event loop */
#define PURGE_STORE_RETRY_MS 5000 /* after the store failed a scan */
#define PURGE_QUEUE 4096          /* objects noted per slot before a rescan */

/* An object of a removed file, noted for the slot of its storage daemon. */
struct purge_note {
	uint64_t file;                /* the intent */
	uint64_t object;
};

struct purge_slot {
	int quiet;                    /* nothing to do until a note or a failure */
	int rescan;                   /* the intents must be read from the store */
	/* Noted objects, oldest first, a file's objects consecutive: a ring
	 * of PURGE_QUEUE from qhead. */
	struct purge_note *queue;
	uint32_t qhead, qlen;
	uint32_t qfiles;              /* files whose objects are in the queue */
	int lap_empty;                /* this lap over the intents (from the
				       * first) found nothing for us yet */
	int resume;                   /* cursor valid */
	uint64_t cursor;              /* last intent looked at */
	uint32_t nfiles;              /* intents the REMOVE in flight covers */
	uint64_t files[PURGE_FILES];
	uint64_t store_retry_ns;      /* a failed scan: not before this */
};

struct mds_purge {
	const struct tp_config *cfg;
	struct mds_store *store;
	const struct cap_key *key;
	struct mds_peers *peers;      /* the storage daemons (mds_peers.h) */
	const struct mds_peers_log *log; /* the tick's, while it runs */
	struct purge_slot *slots;     /* cfg->n_ios */
	struct mds_intent *page;      /* PURGE_FILES intents (scratch) */
};

static void purge_answered(void *user, uint32_t s, const struct tp_frame *fr);
static void purge_failed(void *user, uint32_t s, int rc);
static const struct mds_peers_ops purge_ops = { purge_answered, purge_failed };

int mds_purge_create(const struct tp_config *cfg, struct mds_store *store,
		     const struct cap_key *key, struct mds_purge **out, char *err,
		     size_t errlen)
{
	struct mds_purge *p = calloc(1, sizeof(*p));
	char why[256];
	int rc;

	*out = NULL;
	if (!p)
		goto nomem;
	p->cfg = cfg;
	p->store = store;
	p->key = key;
	p->slots = calloc(cfg->n_ios ? cfg->n_ios : 1, sizeof(*p->slots));
	p->page = calloc(PURGE_FILES, sizeof(*p->page));
	if (!p->slots || !p->page)
		goto nomem;
	for (uint32_t s = 0; s < cfg->n_ios; s++) {
		p->slots[s].rescan = 1; /* intents left from before the start */
		p->slots[s].queue = calloc(PURGE_QUEUE, sizeof(*p->slots[s].queue));
		if (!p->slots[s].queue)
			goto nomem;
	}
	if ((rc = mds_peers_create(cfg, "purger", &purge_ops, p, &p->peers, why, sizeof(why)))) {
		snprintf(err, errlen, "purger: %s", why);
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
	mds_peers_destroy(p->peers);
	if (p->slots)
		for (uint32_t s = 0; s < p->cfg->n_ios; s++)
			free(p->slots[s].queue);
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
	sl->qfiles = 0;
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
		sl->qfiles++;
		sl->quiet = 0;
	}
}

/* Storage daemon s acknowledged: its part of every covered intent is done. */
static void purge_answered(void *user, uint32_t s, const struct tp_frame *fr)
{
	struct mds_purge *p = user;
	struct purge_slot *sl = &p->slots[s];

	(void)fr;
	for (uint32_t i = 0; i < sl->nfiles; i++)
		if (mds_intent_done(p->store, sl->files[i], s))
			mds_peers_say(p->peers, p->log, "%s", mds_store_errmsg(p->store));
	sl->nfiles = 0;
}

/* The REMOVE (or the AUTH before it) failed: the intents it covered come
 * first again, from the store. */
static void purge_failed(void *user, uint32_t s, int rc)
{
	struct mds_purge *p = user;

	(void)rc;
	p->slots[s].nfiles = 0;
	slot_rescan(&p->slots[s]);
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
		sl->qfiles--;
		sl->files[sl->nfiles++] = file;
	}
	return sl->nfiles ? 1 : 0;
}

/* The objects of the next intents for storage daemon s (from its queue,
 * or the store when it rescans) into m: 1 when a request was built, 0
 * when there is nothing for s, 2 when this tick's scan budget ran out,
 * or a negative errno. */
static int gather_next(struct mds_purge *p, uint32_t s, Tessera__HandlesRequest *m,
		       uint64_t *handles)
{
	struct purge_slot *sl = &p->slots[s];
	int rc;

	m->handles = handles;
	if (!sl->rescan)
		return gather_noted(p, s, m, handles);
	rc = gather(p, s, m, handles);
	if (rc == 0)
		sl->rescan = 0; /* a whole lap found nothing: the queue is all */
	return rc;
}

static void slot_send(struct mds_purge *p, uint32_t s)
{
	struct purge_slot *sl = &p->slots[s];
	Tessera__HandlesRequest m = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	uint8_t mac[TP_CAP_MAC_LEN];
	uint64_t handles[TP_MAX_HANDLES];
	int rc = gather_next(p, s, &m, handles);

	if (rc < 0) {
		mds_peers_say(p->peers, p->log, "%s", mds_store_errmsg(p->store));
		sl->store_retry_ns = tp_mono_ns() + PURGE_STORE_RETRY_MS * 1000000ull;
		return;
	}
	if (rc == 0 || rc == 2) {
		sl->quiet = rc == 0;    /* 2: go on scanning next tick */
		return;
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
		mds_peers_say(p->peers, p->log, "storage daemon %u: cannot sign its remove "
			      "capability", s);
		purge_failed(p, s, -EIO);
		sl->store_retry_ns = tp_mono_ns() + PURGE_STORE_RETRY_MS * 1000000ull;
		return;
	}
	m.cap = &cap;
	switch (mds_peers_send(p->peers, s, TP_OP_REMOVE, "remove", &m.base, p->log)) {
	case MDS_PEERS_SENT:
		return;
	case MDS_PEERS_AUTHING: /* the intents are gathered again, from the
				 * first, once the session is open */
	case MDS_PEERS_LATER:   /* next tick; the files taken are in the store */
	case MDS_PEERS_FAILED:
		sl->nfiles = 0;
		slot_rescan(sl);
		return;
	}
}

int mds_purge_batch_ready(const struct mds_purge *p)
{
	if (!p)
		return 0;
	for (uint32_t s = 0; s < p->cfg->n_ios; s++)
		if (!p->slots[s].rescan && p->slots[s].qfiles >= PURGE_FILES)
			return 1;
	return 0;
}

void mds_purge_tick(struct mds_purge *p, void (*log)(void *, const char *), void *arg)
{
	struct mds_peers_log lg = { log, arg };
	uint64_t now;

	p->log = &lg;
	mds_peers_poll(p->peers, &lg);
	now = tp_mono_ns();
	for (uint32_t s = 0; s < p->cfg->n_ios; s++) {
		struct purge_slot *sl = &p->slots[s];

		if (sl->quiet || now < sl->store_retry_ns || !mds_peers_ready(p->peers, s, now))
			continue;
		slot_send(p, s);
	}
	p->log = NULL;
}
