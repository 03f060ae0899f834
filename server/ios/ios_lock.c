/*
 * ios_lock.c - the storage daemon's lock service: byte-range locks on the
 * bytes of its own strips (lockmgr/ does the bookkeeping), client sessions
 * with leases, and an epoch that changes at every start.
 *
 * A blocking acquire that cannot finish at once is parked (daemon.h) and
 * answered when a release lets it finish, or with "waiting, ask again"
 * when its long poll runs out, so no client waits on one message longer
 * than its timeout. Locks belong to a lock session, whose owner is
 * (the authenticated uid of the daemon session that opened it, the
 * client's random 64-bit id): a message naming an id another uid holds is
 * refused, and the id is never logged nor put in an answer (knowing it
 * is not enough, but it is the client's to keep). A lock session that
 * sends nothing for lease_ms (client killed, network gone) loses its
 * locks, and the requests waiting behind them go on; one with a parked
 * acquire is alive (its client is waiting on us), and its lease runs
 * again from the end of the wait.
 *
 * Ownership: a wait record (struct lk_wait) exists while a lock request's
 * blocking call is parked; it is the parked request's expiry argument and
 * the lock table's cookie for that request. Pending descriptions (lock
 * requests whose regions arrive in several messages) belong to their
 * session and go with it.
 *
 * Uses (one way): ios_desc.c for a view's description and the layout
 * check; lockmgr/ for the table. Nothing of ios_io.c or ios_pool.c: the
 * data path calls in here (ios_refuse_stale_epoch), never the reverse.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ios.h"
#include "ios_quota.h"
#include "tdl.h"
#include "tlk.h"
#include "tp_clock.h"

/* The wire's lock modes and states are the lock manager's numbers, so a
 * mode or state crosses between them by a cast, here and only here. */
_Static_assert((int)TLK_READ == (int)TESSERA__LOCK_MODE__LOCK_READ &&
	       (int)TLK_WRITE == (int)TESSERA__LOCK_MODE__LOCK_WRITE, "lock modes: lockmgr = wire");
_Static_assert((int)TLK_GRANTED == (int)TESSERA__LOCK_STATE__LOCK_GRANTED &&
	       (int)TLK_PARTIAL == (int)TESSERA__LOCK_STATE__LOCK_PARTIAL &&
	       (int)TLK_WAITING == (int)TESSERA__LOCK_STATE__LOCK_WAITING,
	       "lock states: lockmgr = wire");

#define LK_SESSION_BUCKETS 1024         /* power of 2 */
#define LK_PENDING_BIT (1ull << 63)     /* lock ids of pending descriptions */
#define LK_MAX_RANGES (1u << 20)        /* per lock request */
#define LK_TABLE_BYTES (256u << 20)     /* the lock table's memory */
#define LK_MAX_REQUESTS (1u << 20)       /* live requests (the bytes bound the table too) */
#define LK_MAX_PENDING 1024             /* descriptions in progress, all sessions */
#define LK_MAX_PENDING_RANGES (1u << 22) /* ranges they hold together (96 MiB) */

/* A lock request whose regions are still arriving (more = true). */
struct lk_pending {
	struct ios_locks *lk;
	uint32_t uid;                /* whose (its share: ios_quota.h) */
	uint64_t id;                 /* LK_PENDING_BIT | n */
	uint64_t handle;
	uint32_t mode;
	struct tlk_range *ranges;
	size_t n, cap;
	struct lk_pending *next;     /* the session's list */
};

struct lk_session {
	uint64_t id;                 /* the client's; never logged */
	uint32_t uid;                /* of the daemon session that opened it */
	uint32_t parked;             /* its acquires parked (lk_wait) now */
	double expires;              /* monotonic seconds */
	struct lk_pending *pending;
	struct lk_session *hnext;    /* hash chain */
};

/* A parked blocking acquire. */
struct lk_wait {
	struct ios_locks *lk;
	struct lk_session *session;  /* the lock's owner: alive while parked */
	uint64_t lock_id;
	struct srv_req *req;         /* the parked request */
	struct lk_wait *prev, *next;
};

struct ios_locks {
	struct ios *ios;
	struct tlk_table *table;
	uint64_t epoch;
	uint32_t lease_ms;
	struct lk_session *sessions[LK_SESSION_BUCKETS];
	size_t nsessions;
	struct lk_wait *waits;       /* parked acquires */
	uint64_t next_pending;
	size_t npending;
	size_t pending_ranges;       /* capacity of all pending descriptions */
	uint64_t granted, released, expired_sessions; /* counters */
	struct ios_lockq *quota;     /* each uid's share of the table (ios_quota.h) */
};

int ios_locks_create(struct ios *ios, uint32_t lease_ms, struct ios_locks **out, char *err,
		     size_t errlen)
{
	struct tlk_config cfg = { { LK_MAX_RANGES, LK_MAX_REQUESTS, LK_TABLE_BYTES }, NULL };
	struct ios_locks *lk = calloc(1, sizeof(*lk));
	int rc;

	if (!lk) {
		snprintf(err, errlen, "no memory");
		return -ENOMEM;
	}
	rc = tlk_table_create(&cfg, &lk->table);
	if (rc) {
		snprintf(err, errlen, "lock table: %s", strerror(-rc));
		free(lk);
		return rc;
	}
	/* A new epoch at every start: locks granted before a restart are
	 * recognisably gone. */
	while (!lk->epoch)
		if (getrandom(&lk->epoch, sizeof(lk->epoch), 0) != sizeof(lk->epoch)) {
			snprintf(err, errlen, "getrandom for the lock epoch: %s", strerror(errno));
			tlk_table_destroy(lk->table);
			free(lk);
			return -EIO;
		}
	struct ios_lockq_limits ql = { UINT32_MAX, UINT64_MAX, UINT32_MAX, UINT64_MAX };

	if (ios->cfg) /* a uid's share of the pending ranges is that of the descriptions */
		ql = (struct ios_lockq_limits){ ios->cfg->lock_requests_per_uid,
						ios->cfg->lock_bytes_per_uid,
						ios->cfg->lock_pending_per_uid,
						(uint64_t)LK_MAX_PENDING_RANGES *
						ios->cfg->lock_pending_per_uid / LK_MAX_PENDING };
	if ((rc = ios_lockq_create(&ql, &lk->quota))) {
		snprintf(err, errlen, "lock quotas: %s", strerror(-rc));
		tlk_table_destroy(lk->table);
		free(lk);
		return rc;
	}
	lk->ios = ios;
	lk->lease_ms = lease_ms;
	*out = lk;
	return 0;
}

void ios_locks_set_epoch(struct ios_locks *lk, uint64_t epoch)
{
	lk->epoch = epoch;
}

/* ------------------------------------------------------------ sessions */

static unsigned session_bucket(uint64_t id)
{
	return (unsigned)((id * 0x9e3779b97f4a7c15ull) >> 54) & (LK_SESSION_BUCKETS - 1);
}

static struct lk_session *session_find(struct ios_locks *lk, uint64_t id)
{
	for (struct lk_session *s = lk->sessions[session_bucket(id)]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

static void pending_free(struct ios_locks *lk, struct lk_pending *p)
{
	ios_lockq_pending_add(lk->quota, p->uid, -1);
	ios_lockq_pending_ranges(lk->quota, p->uid, -(int64_t)p->cap);
	lk->pending_ranges -= p->cap;
	free(p->ranges);
	free(p);
	lk->npending--;
}

/* Every lock message renews its session's lease: session_renew when the
 * session may not exist (then nothing happens), session_open when the
 * message starts one if needed (NULL: no memory). */
static struct lk_session *session_renew(struct ios_locks *lk, uint64_t id)
{
	struct lk_session *s = session_find(lk, id);

	if (s)
		s->expires = tp_mono_s() + lk->lease_ms / 1000.0;
	return s;
}

static struct lk_session *session_open(struct ios_locks *lk, uint64_t id, uint32_t uid)
{
	struct lk_session *s;

	if (!session_find(lk, id) && (s = calloc(1, sizeof(*s)))) {
		unsigned b = session_bucket(id);

		s->id = id;
		s->uid = uid;
		s->hnext = lk->sessions[b];
		lk->sessions[b] = s;
		lk->nsessions++;
	}
	return session_renew(lk, id);
}

/* A lock session of another uid is not the caller's, whatever id it
 * knows: refused (0, or -EACCES answered). uid 0 gets no exception: the
 * FUSE mount's locks are its own session's. */
static int refuse_foreign_session(struct ios_locks *lk, struct srv_req *req, uint64_t id,
				  const char *what)
{
	struct lk_session *s = session_find(lk, id);

	if (!s || s->uid == req->ident.uid)
		return 0;
	srv_reply_error(req, -EACCES, "%s on storage daemon %u: permission denied: the lock "
			"owner named belongs to another user (uid %u is not its owner)", what,
			lk->ios->index, req->ident.uid);
	return -EACCES;
}

/* ------------------------------------------------------------ replies */

static void answer_msg(struct ios_locks *lk, uint64_t lock_id, const struct tlk_answer *a,
		       Tessera__LockReply *rep)
{
	tessera__lock_reply__init(rep);
	rep->lock_id = lock_id;
	rep->state = a ? (uint32_t)a->state : TLK_GRANTED;
	rep->last_abs_offset = a ? a->last_abs_offset : TLK_NONE;
	rep->next_abs_offset = a ? a->next_abs_offset : TLK_NONE;
	rep->epoch = lk->epoch;
	rep->lease_ms = lk->lease_ms;
}

static void reply_answer(struct ios_locks *lk, struct srv_req *req, uint64_t lock_id,
			 const struct tlk_answer *a)
{
	Tessera__LockReply rep;

	answer_msg(lk, lock_id, a, &rep);
	srv_reply(req, &rep.base, NULL, 0);
}

/* The wait is over: its session's lease runs again from now. */
static void wait_unlink(struct ios_locks *lk, struct lk_wait *w)
{
	if (w->session) {
		w->session->parked--;
		w->session->expires = tp_mono_s() + lk->lease_ms / 1000.0;
	}
	if (w->prev)
		w->prev->next = w->next;
	else
		lk->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	free(w);
}

static struct lk_wait *wait_find(struct ios_locks *lk, uint64_t lock_id)
{
	for (struct lk_wait *w = lk->waits; w; w = w->next)
		if (w->lock_id == lock_id)
			return w;
	return NULL;
}

/* Answer the parked acquires whose wait the last table call ended. */
static void deliver_events(struct ios_locks *lk)
{
	const struct tlk_event *ev;
	size_t n = tlk_events(lk->table, &ev);

	for (size_t i = 0; i < n; i++) {
		struct lk_wait *w = ev[i].cookie;
		struct srv_req *req;

		if (!w)
			continue;
		req = w->req;
		wait_unlink(lk, w);
		if (ev[i].answer.state == TLK_GONE) {
			srv_reply_error(req, -ENOLCK, "lock %" PRIu64 " on object %016" PRIx64
					": released with its session (lease of %u ms expired)",
					ev[i].lock_id, ev[i].object, lk->lease_ms);
		} else {
			lk->granted++;
			reply_answer(lk, req, ev[i].lock_id, &ev[i].answer);
		}
	}
}

/* A parked acquire's long poll ran out (or its client went away): stop
 * its wait, keep what it holds, and tell the client to ask again. */
static void wait_expired(void *arg, struct srv_req *req, int reason)
{
	struct lk_wait *w = arg;
	struct ios_locks *lk = w->lk;
	struct tlk_answer a;
	uint64_t id = w->lock_id;
	int rc;

	wait_unlink(lk, w);
	rc = tlk_cancel(lk->table, id, &a);
	deliver_events(lk);
	if (reason != -ETIMEDOUT)
		return; /* nobody to tell */
	if (rc)
		srv_reply_error(req, rc, "lock %" PRIu64 ": %s", id, strerror(-rc));
	else
		reply_answer(lk, req, id, &a);
}

/* A call on a lock request ends its parked wait, if any: that parked call
 * is answered with where the request stands afterwards (the client asks
 * again), or fails if the request is gone. */
static void wait_detach(struct ios_locks *lk, uint64_t lock_id, struct srv_req **parked)
{
	struct lk_wait *w = wait_find(lk, lock_id);

	*parked = NULL;
	if (w) {
		*parked = w->req;
		wait_unlink(lk, w);
	}
}

static void reply_detached(struct ios_locks *lk, struct srv_req *parked, uint64_t lock_id)
{
	struct tlk_request_info info;

	if (!parked)
		return;
	if (tlk_request_info(lk->table, lock_id, &info)) {
		srv_reply_error(parked, -ECANCELED, "lock %" PRIu64 ": released while waiting",
				lock_id);
		return;
	}
	if (info.answer.state == TLK_WAITING)
		info.answer.state = TLK_PARTIAL;
	reply_answer(lk, parked, lock_id, &info.answer);
}

/* ------------------------------------------------------------ descriptions */

#define OBJ "object %016" PRIx64
#define LK_PENDING_SHARE "this uid's lock descriptions in progress hold its share of " \
	"2^22 ranges (lock_pending_per_uid / 1024 of them)"

static int ranges_grow(struct lk_pending *p, size_t more)
{
	size_t cap = p->cap ? p->cap : 256;
	struct tlk_range *r;

	if (p->n + more > LK_MAX_RANGES)
		return -E2BIG;
	while (cap < p->n + more)
		cap *= 2;
	if (cap == p->cap)
		return 0;
	/* All descriptions in progress share one bound (they are built before
	 * the lock table, and its limits, sees them). */
	if (p->lk->pending_ranges - p->cap + cap > LK_MAX_PENDING_RANGES)
		return -ENOBUFS;
	if (ios_lockq_pending_ranges(p->lk->quota, p->uid, (int64_t)(cap - p->cap)))
		return -EDQUOT; /* this uid's share of them */
	r = realloc(p->ranges, cap * sizeof(*r));
	if (!r) {
		ios_lockq_pending_ranges(p->lk->quota, p->uid, -(int64_t)(cap - p->cap));
		return -ENOMEM;
	}
	p->lk->pending_ranges += cap - p->cap;
	p->ranges = r;
	p->cap = cap;
	return 0;
}

/* Append the message's logical regions, split at strip boundaries; they
 * must lie on this slot, ascend and not overlap (also across messages).
 * 0, or the negative errno answered. */
static int refuse_or_add_list(struct srv_req *req, const Tessera__LockAcquireRequest *m,
			      struct lk_pending *p)
{
	struct tdl_layout layout = { m->strip_size, m->stripe_count };
	uint64_t prev_end = p->n ? p->ranges[p->n - 1].logical + p->ranges[p->n - 1].length : 0;
	int rc;

	if (m->n_offsets != m->n_lengths) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": %zu offsets but %zu lengths",
				m->handle, m->n_offsets, m->n_lengths);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->n_offsets; i++) {
		uint64_t off = m->offsets[i], len = m->lengths[i];

		if (!len || off + len < off || off + len > INT64_MAX || (p->n && off < prev_end)) {
			srv_reply_error(req, -EINVAL, "lock " OBJ ": region %zu (offset %" PRIu64
					", length %" PRIu64 ") is empty, overflows or is not above "
					"the previous one (regions must ascend without overlap)",
					m->handle, i, off, len);
			return -EINVAL;
		}
		while (len) {
			uint64_t run = tdl_layout_run(&layout, off, len), obj;
			uint32_t slot;

			tdl_layout_map(&layout, off, &slot, &obj);
			if (slot != m->slot) {
				srv_reply_error(req, -EINVAL, "lock " OBJ ": byte %" PRIu64 " is on "
						"slot %u, not this object's slot %u", m->handle, off,
						slot, m->slot);
				return -EINVAL;
			}
			if ((rc = ranges_grow(p, 1))) {
				srv_reply_error(req, rc, "lock " OBJ ": %s", m->handle,
						rc == -E2BIG ? "more than 2^20 ranges in one request" :
						rc == -ENOBUFS ? "lock descriptions in progress hold "
						"2^22 ranges, the daemon's limit" : rc == -EDQUOT ?
						LK_PENDING_SHARE : strerror(-rc));
				return rc;
			}
			p->ranges[p->n++] = (struct tlk_range){ obj, run, off };
			off += run;
			len -= run;
		}
		prev_end = m->offsets[i] + m->lengths[i];
	}
	return 0;
}

/* Append k pieces of a view's walk to p, merging adjacent ones: 0, or
 * -EINVAL (err says why) when they do not ascend. Room for k more ranges
 * was made. */
static int view_pieces_add(struct lk_pending *p, const struct tdl_layout *layout,
			   const struct tdl_piece *batch, size_t k, char *err, size_t errlen)
{
	for (size_t i = 0; i < k; i++) {
		uint64_t obj = tdl_piece_object(layout, &batch[i]);
		struct tlk_range *last = p->n ? &p->ranges[p->n - 1] : NULL;

		/* a view may place pieces out of order or overlapping */
		if (last && batch[i].offset < last->logical + last->length) {
			snprintf(err, errlen, "the view's pieces do not ascend at file "
				 "offset %" PRIu64 " (lock a monotone view)", batch[i].offset);
			return -EINVAL;
		}
		if (last && last->logical + last->length == batch[i].offset &&
		    last->offset + last->length == obj)
			last->length += batch[i].length; /* adjacent: one range */
		else
			p->ranges[p->n++] = (struct tlk_range){ obj, batch[i].length,
								 batch[i].offset };
	}
	return 0;
}

/* The view's window must lie within the view. 0, or -EINVAL answered. */
static int refuse_bad_window(struct srv_req *req, const Tessera__LockAcquireRequest *m,
			     const struct tdl_dataloop *dl)
{
	const Tessera__DtypeIORequest *v = m->view;
	uint64_t size = tdl_size(dl);

	if (v->first > v->last || (size && v->count > UINT64_MAX / size) ||
	    v->last > size * v->count) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": stream window [%" PRIu64 ", %" PRIu64
				") is not within %" PRIu64 " x %" PRIu64 " bytes", m->handle,
				v->first, v->last, v->count, size);
		return -EINVAL;
	}
	return 0;
}

/* The view's bytes on this slot, as ranges. 0, or the negative errno
 * answered. */
static int refuse_or_add_view(struct ios *ios, struct srv_req *req,
			      const Tessera__LockAcquireRequest *m, struct lk_pending *p)
{
	const Tessera__DtypeIORequest *v = m->view;
	struct tdl_layout layout = { m->strip_size, m->stripe_count };
	const struct tdl_dataloop *dl;
	struct tdl_segment seg;
	struct tdl_piece batch[256];
	char err[256];
	int rc;

	if ((rc = ios_refuse_unknown_desc(ios, req, v, "lock", &dl)))
		return rc;
	if ((rc = tdl_check_view(dl, v->count, v->disp, err, sizeof(err)))) {
		srv_reply_error(req, rc, "lock " OBJ ": file view: %s", m->handle, err);
		return rc;
	}
	if ((rc = refuse_bad_window(req, m, dl)))
		return rc;
	rc = tdl_segment_init_server(&seg, dl, v->count, v->disp, v->first, v->last, &layout,
				     m->slot);
	seg.max_steps = IOS_MAX_DTYPE_STEPS; /* a bounded walk, as for datatype I/O */
	while (!rc && !tdl_segment_done(&seg)) {
		size_t k;

		rc = tdl_segment_next(&seg, batch, sizeof(batch) / sizeof(batch[0]), &k);
		if (!rc)
			rc = ranges_grow(p, k);
		if (!rc)
			rc = view_pieces_add(p, &layout, batch, k, err, sizeof(err));
	}
	if (rc == -E2BIG && seg.steps >= seg.max_steps)
		srv_reply_error(req, rc, "lock " OBJ ": walking the file view takes more than %u "
				"steps on this server, the limit per request (ask for a smaller "
				"window)", m->handle, IOS_MAX_DTYPE_STEPS);
	else if (rc == -E2BIG)
		srv_reply_error(req, rc, "lock " OBJ ": the view has more than %u ranges on this "
				"server", m->handle, LK_MAX_RANGES);
	else if (rc == -ENOBUFS)
		srv_reply_error(req, rc, "lock " OBJ ": lock descriptions in progress hold 2^22 "
				"ranges, the daemon's limit", m->handle);
	else if (rc == -EDQUOT)
		srv_reply_error(req, rc, "lock " OBJ ": %s", m->handle, LK_PENDING_SHARE);
	else if (rc == -EINVAL && err[0])
		srv_reply_error(req, rc, "lock " OBJ ": %s", m->handle, err);
	else if (rc)
		srv_reply_error(req, rc, "lock " OBJ ": walking the file view: %s", m->handle,
				strerror(-rc));
	return rc;
}

/* ------------------------------------------------------------ acquire */

static int refuse_bad_session(struct ios_locks *lk, struct srv_req *req, uint64_t session,
			 uint64_t epoch, uint64_t lock_id)
{
	struct tlk_request_info info;
	int rc;

	if (!session) {
		srv_reply_error(req, -EINVAL, "lock: no session");
		return -EINVAL;
	}
	if (!lock_id || (lock_id & LK_PENDING_BIT))
		return 0;
	if (epoch != lk->epoch) {
		srv_reply_error(req, -ESTALE, "lock %" PRIu64 " is from epoch %016" PRIx64
				": storage daemon %u restarted (epoch %016" PRIx64 ") and its "
				"locks are gone", lock_id, epoch, lk->ios->index, lk->epoch);
		return -ESTALE;
	}
	if ((rc = tlk_request_info(lk->table, lock_id, &info)) || info.owner != session) {
		srv_reply_error(req, -ENOENT, "lock %" PRIu64 ": no such lock of this session "
				"(released, or its lease of %u ms expired)", lock_id, lk->lease_ms);
		return -ENOENT;
	}
	return 0;
}

static struct lk_pending *pending_find(struct lk_session *s, uint64_t id,
				       struct lk_pending ***link)
{
	for (struct lk_pending **pp = &s->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			*link = pp;
			return *pp;
		}
	return NULL;
}

/* The description a message continues (m->lock_id), or a new one for
 * its session. 0 with *pp and *linkp (where it is linked), or the
 * negative errno answered. */
static int refuse_or_pending(struct ios_locks *lk, struct srv_req *req,
			     const Tessera__LockAcquireRequest *m, struct lk_session *s,
			     struct lk_pending **pp, struct lk_pending ***linkp)
{
	struct lk_pending *p = NULL;
	char why[200];

	if (m->lock_id) {
		p = pending_find(s, m->lock_id, linkp);
		if (!p || p->handle != m->handle || p->mode != m->mode) {
			srv_reply_error(req, -ENOENT, "lock " OBJ ": no description %016" PRIx64
					" in progress for this session", m->handle, m->lock_id);
			return -ENOENT;
		}
		*pp = p;
		return 0;
	}
	if (ios_lockq_pending_admit(lk->quota, req->ident.uid, why, sizeof(why))) {
		srv_reply_error(req, -EDQUOT, "lock " OBJ " on storage daemon %u: %s", m->handle,
				lk->ios->index, why);
		return -EDQUOT;
	}
	if (lk->npending >= LK_MAX_PENDING || !(p = calloc(1, sizeof(*p))) ||
	    ios_lockq_pending_add(lk->quota, req->ident.uid, 1)) {
		free(p);
		srv_reply_error(req, -EBUSY, "lock " OBJ ": %zu descriptions in progress",
				m->handle, lk->npending);
		return -EBUSY;
	}
	p->uid = req->ident.uid;
	lk->npending++;
	p->lk = lk;
	p->id = LK_PENDING_BIT | ++lk->next_pending;
	p->handle = m->handle;
	p->mode = m->mode;
	p->next = s->pending;
	s->pending = p;
	*linkp = &s->pending;
	*pp = p;
	return 0;
}

/* A record lock's share of this object: one run of object bytes, which
 * may cross strips (see LockAcquireRequest.object_range). Its logical
 * offsets are its object offsets: it is taken whole or not at all, never
 * parked, so its answers only say whether it holds everything. */
static int refuse_or_add_object_range(struct srv_req *req, const Tessera__LockAcquireRequest *m,
				      struct lk_pending *p)
{
	uint64_t off, len;

	if (!m->group || m->blocking || m->view || m->more || m->lock_id ||
	    m->n_offsets != 1 || m->n_lengths != 1) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": a record lock (object range) has a "
				"group, one region in one message, no view, and is taken "
				"nonblocking", m->handle);
		return -EINVAL;
	}
	off = m->offsets[0];
	len = m->lengths[0];
	if (!len || off + len < off) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": record range (object offset %" PRIu64
				", length %" PRIu64 ") is empty or overflows", m->handle, off, len);
		return -EINVAL;
	}
	if (ranges_grow(p, 1)) {
		srv_reply_error(req, -ENOMEM, "lock " OBJ ": no memory", m->handle);
		return -ENOMEM;
	}
	p->ranges[p->n++] = (struct tlk_range){ off, len, off };
	return 0;
}

/* Add the message's regions (a view, or a list) to description p. 0, or
 * the negative errno answered. */
static int refuse_or_add_regions(struct ios_locks *lk, struct srv_req *req,
				 const Tessera__LockAcquireRequest *m, struct lk_pending *p)
{
	int rc;

	if (m->view && (m->n_offsets || m->more || m->lock_id)) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": a view comes alone, in one message",
				m->handle);
		return -EINVAL;
	}
	if (m->object_range)
		return refuse_or_add_object_range(req, m, p);
	if (!m->view)
		return refuse_or_add_list(req, m, p);
	rc = refuse_or_add_view(lk->ios, req, m, p);
	ios_desc_done(lk->ios, rc ? IOS_DESC_DROP : IOS_DESC_KEEP); /* kept once it passed */
	return rc;
}

/* Description p, complete and checked, becomes a request in the table:
 * 0 with *lock_id, or the negative errno answered. */
static int refuse_or_create(struct ios_locks *lk, struct srv_req *req,
			    const Tessera__LockAcquireRequest *m, const struct lk_pending *p,
			    uint64_t *lock_id)
{
	size_t bytes = tlk_request_footprint(p->n);
	char why[200];
	int rc;

	if (!p->n) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": no bytes to lock on this server",
				m->handle);
		return -EINVAL;
	}
	if ((rc = ios_lockq_admit(lk->quota, req->ident.uid, bytes, why, sizeof(why)))) {
		srv_reply_error(req, rc, "lock " OBJ " on storage daemon %u: %s", m->handle,
				lk->ios->index, why);
		return rc;
	}
	rc = tlk_request_create_grouped(lk->table, m->handle, m->session, m->group,
					(enum tlk_mode)p->mode, p->ranges, p->n, lock_id);
	if (!rc && (rc = ios_lockq_charge(lk->quota, *lock_id, m->session, req->ident.uid,
					  bytes)))
		tlk_release(lk->table, *lock_id); /* not counted: not kept */
	if (rc)
		srv_reply_error(req, rc, "lock " OBJ ": %zu ranges: %s", m->handle, p->n,
				rc == -E2BIG ? "too many ranges" :
				rc == -ENOMEM ? "the lock table is full" : strerror(-rc));
	return rc;
}

/* Build a new request's description; 0 with *lock_id set once it exists
 * in the table, LK_ANSWERED when the message is answered without one
 * (more regions are to come, or a view with no bytes here), or the
 * negative errno answered. */
#define LK_ANSWERED 1
static int reply_or_describe(struct ios_locks *lk, struct srv_req *req,
			     const Tessera__LockAcquireRequest *m, struct lk_session *s,
			     uint64_t *lock_id)
{
	struct lk_pending *p = NULL, **link = NULL;
	int rc;

	if (m->mode != TLK_READ && m->mode != TLK_WRITE) {
		srv_reply_error(req, -EINVAL, "lock " OBJ ": mode %u is neither read (1) nor "
				"write (2)", m->handle, m->mode);
		return -EINVAL;
	}
	if (ios_refuse_bad_layout(lk->ios, req, m->handle, m->strip_size, m->stripe_count,
				  m->slot, "lock"))
		return -EINVAL;
	if ((rc = refuse_or_pending(lk, req, m, s, &p, &link)))
		return rc;
	rc = refuse_or_add_regions(lk, req, m, p);
	if (!rc && m->more) {
		Tessera__LockReply rep;

		answer_msg(lk, p->id, NULL, &rep);
		rep.state = TLK_PARTIAL;
		rep.pending = (uint32_t)p->n;
		srv_reply(req, &rep.base, NULL, 0);
		return LK_ANSWERED;
	}
	if (!rc && !p->n && m->view) {
		/* A view is sent to every object; this one has none of its bytes:
		 * nothing to hold (lock id 0), nothing wanted. */
		reply_answer(lk, req, 0, NULL);
		rc = LK_ANSWERED;
	} else if (!rc) {
		rc = refuse_or_create(lk, req, m, p, lock_id);
	}
	*link = p->next;
	pending_free(lk, p);
	return rc;
}

/* Park a blocking acquire for at most ms: its wait record, with *parked
 * the parked request; NULL if it cannot be parked (it is then answered at
 * once, "ask again"). */
static struct lk_wait *wait_park(struct ios_locks *lk, struct srv_req *req,
				 struct lk_session *s, uint64_t lock_id, uint32_t ms,
				 struct srv_req **parked)
{
	struct lk_wait *w = calloc(1, sizeof(*w));

	if (!w || srv_park(req, ms, wait_expired, w, parked)) {
		free(w);
		return NULL;
	}
	w->lk = lk;
	w->session = s;
	s->parked++;
	w->lock_id = lock_id;
	w->req = *parked;
	w->next = lk->waits;
	if (lk->waits)
		lk->waits->prev = w;
	lk->waits = w;
	return w;
}

/* Answer an acquire from the table's answer `a` (or its error rc) unless
 * it waits parked (w): then it is answered when it finishes or its long
 * poll ends. `req` is the parked request if there is one. */
static void reply_acquired(struct ios_locks *lk, struct srv_req *req, uint64_t handle,
			   uint64_t lock_id, struct lk_wait *w, int rc, struct tlk_answer *a)
{
	if (rc) {
		if (w)
			wait_unlink(lk, w);
		srv_reply_error(req, rc, "lock %" PRIu64 " on " OBJ ": %s", lock_id, handle,
				strerror(-rc));
		return;
	}
	if (a->state == TLK_WAITING && w)
		return; /* answered when it finishes, or when the long poll ends */
	if (a->state == TLK_WAITING) { /* could not park: ask again */
		tlk_cancel(lk->table, lock_id, a);
		deliver_events(lk);
		a->state = TLK_WAITING;
	}
	if (w)
		wait_unlink(lk, w);
	if (a->state == TLK_GRANTED)
		lk->granted++;
	reply_answer(lk, req, lock_id, a);
}

void ios_do_lock_acquire(struct ios *ios, struct srv_req *req)
{
	struct ios_locks *lk = ios->locks;
	const Tessera__LockAcquireRequest *m = (const Tessera__LockAcquireRequest *)req->msg;
	uint64_t lock_id = m->lock_id;
	uint64_t upto = m->capped ? m->upto : TLK_NONE;
	struct srv_req *parked = NULL, *was_parked;
	struct lk_session *s;
	struct lk_wait *w = NULL;
	struct tlk_answer a;
	int rc;

	if (refuse_foreign_session(lk, req, m->session, "lock") ||
	    refuse_bad_session(lk, req, m->session, m->epoch, lock_id))
		return;
	if (!(s = session_open(lk, m->session, req->ident.uid))) {
		srv_reply_error(req, -ENOMEM, "lock: no memory for a session");
		return;
	}
	if (!lock_id || (lock_id & LK_PENDING_BIT)) {
		rc = reply_or_describe(lk, req, m, s, &lock_id);
		if (rc)
			return; /* answered */
	}
	wait_detach(lk, lock_id, &was_parked);
	if (m->blocking)
		w = wait_park(lk, req, s, lock_id,
			      m->wait_ms ? m->wait_ms : ios->cfg->timeout_ms / 2, &parked);
	rc = tlk_acquire(lk->table, lock_id, m->blocking ? TLK_BLOCKING : 0, upto, w, &a);
	deliver_events(lk);
	reply_detached(lk, was_parked, lock_id);
	reply_acquired(lk, parked ? parked : req, m->handle, lock_id, w, rc, &a);
}

void ios_do_lock_release(struct ios *ios, struct srv_req *req)
{
	struct ios_locks *lk = ios->locks;
	const Tessera__LockReleaseRequest *m = (const Tessera__LockReleaseRequest *)req->msg;
	struct srv_req *was_parked;
	struct tlk_answer a;
	int rc;

	if (refuse_foreign_session(lk, req, m->session, "release") ||
	    refuse_bad_session(lk, req, m->session, m->epoch, m->lock_id ? m->lock_id : 1))
		return;
	if (!m->lock_id || (m->lock_id & LK_PENDING_BIT)) {
		struct lk_session *s = session_find(lk, m->session);
		struct lk_pending *p, **link;

		/* dropping a description in progress */
		if (s && m->lock_id && (p = pending_find(s, m->lock_id, &link))) {
			*link = p->next;
			pending_free(lk, p);
			reply_answer(lk, req, m->lock_id, NULL);
		} else {
			srv_reply_error(req, -ENOENT, "release: no lock %" PRIu64, m->lock_id);
		}
		return;
	}
	session_renew(lk, m->session);
	wait_detach(lk, m->lock_id, &was_parked);
	if (m->partial) {
		rc = tlk_release_from(lk->table, m->lock_id, m->from, &a);
	} else {
		rc = tlk_release(lk->table, m->lock_id);
		if (!rc)
			ios_lockq_release(lk->quota, m->lock_id);
		a = (struct tlk_answer){ TLK_GRANTED, TLK_NONE, TLK_NONE };
	}
	deliver_events(lk);
	reply_detached(lk, was_parked, m->lock_id);
	if (rc) {
		srv_reply_error(req, rc, "release lock %" PRIu64 ": %s", m->lock_id, strerror(-rc));
		return;
	}
	lk->released++;
	reply_answer(lk, req, m->lock_id, m->partial ? &a : NULL);
}

void ios_do_lease(struct ios *ios, struct srv_req *req)
{
	struct ios_locks *lk = ios->locks;
	const Tessera__LeaseRequest *m = (const Tessera__LeaseRequest *)req->msg;

	if (refuse_foreign_session(lk, req, m->session, "lease"))
		return;
	session_renew(lk, m->session);
	reply_answer(lk, req, 0, NULL);
}

/* F_GETLK for a record lock: the lowest lock the asked one would meet,
 * in object bytes. Renews nothing, changes nothing. */
void ios_do_lock_test(struct ios *ios, struct srv_req *req)
{
	struct ios_locks *lk = ios->locks;
	const Tessera__LockTestRequest *m = (const Tessera__LockTestRequest *)req->msg;
	Tessera__LockTestReply rep = TESSERA__LOCK_TEST_REPLY__INIT;
	struct tlk_conflict cf;
	int rc;

	if (refuse_foreign_session(lk, req, m->session, "lock test"))
		return;
	rc = tlk_test(lk->table, m->handle, m->session, m->group, (enum tlk_mode)m->mode,
		      m->offset, m->length, &cf);
	if (rc) {
		srv_reply_error(req, rc, "lock test on " OBJ " on storage daemon %u: mode %u, "
				"object offset %" PRIu64 ", length %" PRIu64 ": the mode is "
				"neither read (1) nor write (2), or the range is empty or "
				"overflows", m->handle, lk->ios->index, m->mode, m->offset,
				m->length);
		return;
	}
	if (cf.found) {
		rep.mode = (uint32_t)cf.mode;
		rep.offset = cf.start;
		rep.length = cf.end - cf.start;
	}
	srv_reply(req, &rep.base, NULL, 0);
}

/* ------------------------------------------------------------ fencing */

int ios_refuse_stale_epoch(struct ios *ios, struct srv_req *req, uint64_t epoch,
			   uint64_t handle, const char *what)
{
	struct ios_locks *lk = ios->locks;

	if (!epoch || epoch == lk->epoch)
		return 0;
	srv_reply_error(req, -ESTALE, "%s " OBJ ": done under locks of epoch %016" PRIx64
			", but storage daemon %u restarted (epoch %016" PRIx64 ") and its "
			"locks are gone", what, handle, epoch, ios->index, lk->epoch);
	return -ESTALE;
}

/* ------------------------------------------------------------ leases */

static void session_expire(struct ios_locks *lk, struct lk_session *s)
{
	size_t n = 0;

	tlk_release_owner(lk->table, s->id, &n);
	ios_lockq_release_owner(lk->quota, s->id);
	deliver_events(lk);
	while (s->pending) {
		struct lk_pending *p = s->pending;

		s->pending = p->next;
		pending_free(lk, p);
	}
	if (n) /* (the id is the owner's to keep: not logged) */
		srv_warn(lk->ios->srv, "a lock session of uid %u sent nothing for %u ms: "
			 "released its %zu lock requests", s->uid, lk->lease_ms, n);
	lk->expired_sessions++;
}

void ios_locks_tick(struct ios *ios)
{
	struct ios_locks *lk = ios->locks;
	double now = tp_mono_s();

	for (unsigned b = 0; b < LK_SESSION_BUCKETS; b++) {
		struct lk_session **pp = &lk->sessions[b];

		while (*pp) {
			struct lk_session *s = *pp;

			if (s->expires > now || s->parked) {
				pp = &s->hnext;
				continue;
			}
			session_expire(lk, s);
			*pp = s->hnext;
			lk->nsessions--;
			free(s);
		}
	}
}

void ios_locks_destroy(struct ios_locks *lk)
{
	if (!lk)
		return;
	while (lk->waits) /* parked requests were dropped by the daemon core */
		wait_unlink(lk, lk->waits);
	for (unsigned b = 0; b < LK_SESSION_BUCKETS; b++)
		while (lk->sessions[b]) {
			struct lk_session *s = lk->sessions[b];

			lk->sessions[b] = s->hnext;
			while (s->pending) {
				struct lk_pending *p = s->pending;

				s->pending = p->next;
				pending_free(lk, p);
			}
			free(s);
		}
	tlk_table_destroy(lk->table);
	ios_lockq_destroy(lk->quota);
	free(lk);
}
