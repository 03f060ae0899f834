/*
 * mds_lease.c - name leases (mds_lease.h): per watching session, a set of
 * the handles it holds (open addressing, linear probing, 0 never a
 * handle) and the changes it has yet to be told.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds_lease.h"

#define LEASE_BUCKETS 256u
#define SET_MIN 64u
/* A barred watcher's bar is 2^strikes leases, strikes up to this. */
#define BAR_STRIKES_MAX 6u

struct handle_set {
	uint64_t *slot;
	uint32_t cap;  /* a power of two, or 0 */
	uint32_t n;
};

/* What a watcher is told stays until it acknowledges the answer that
 * told it (its next WATCH says `seen`): an answer lost on the way is
 * carried again by the next. Each change told is numbered (t->breaks);
 * the oldest one unacknowledged sets the floor below which others'
 * replies may leave (mds_leases_need). */
struct watcher {
	uint64_t session;
	struct handle_set held;
	uint64_t changed[MDS_LEASE_CHANGES];
	uint64_t changed_no[MDS_LEASE_CHANGES]; /* each one's number */
	uint32_t n_changed;
	uint32_t n_sent;  /* of them, the first n_sent went in answer `seq` */
	int all;          /* it must forget everything */
	int all_told;     /* ...and an answer made since said so */
	uint64_t all_no;  /* the number of the news `all` stands for */
	uint64_t all_sent;/* all_no when answer `seq` was made (0: not all) */
	uint64_t seq;     /* answers made */
	uint64_t oldest;  /* number of its oldest news unacknowledged (0: none) */
	double oldest_at; /* when a tick first saw it (0: not yet) */
	void *parked;     /* its WATCH waiting for news */
	double seen;      /* its last WATCH (monotonic seconds) */
	double barred_until; /* nothing granted before (bar) */
	uint64_t barred_no;  /* the lapsed news it was barred for */
	uint32_t strikes;    /* bars so far */
	struct watcher *next;          /* in its bucket */
	struct watcher *prev_all, *next_all; /* every watcher, for a break */
};

/* A session whose change told others: its replies wait for number no. */
struct cause {
	uint64_t session, no;
};

struct mds_leases {
	uint32_t lease_ms;
	uint64_t breaks;  /* changes told so far (their numbers) */
	uint64_t floor;   /* the oldest unacknowledged, unlapsed one (UINT64_MAX: none) */
	uint64_t anyone;  /* a cause not recorded (no memory): everyone waits for it */
	double now;       /* the latest time given (acked, lapse) */
	struct cause *cause;
	uint32_t n_cause, cap_cause;
	uint32_t per_session;
	mds_lease_wake_fn wake;
	void *wake_arg;
	uint32_t n_watchers;
	uint64_t held;    /* summed over watchers */
	struct watcher *bucket[LEASE_BUCKETS];
	struct watcher *all;  /* every watcher (prev_all, next_all) */
};

/* ------------------------------------------------------------ handle sets */

static uint32_t slot_of(uint64_t h, uint32_t cap)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h & (cap - 1);
}

static int set_has(const struct handle_set *s, uint64_t h)
{
	uint32_t i;

	if (!s->cap)
		return 0;
	for (i = slot_of(h, s->cap); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == h)
			return 1;
	return 0;
}

static void set_put_new(struct handle_set *s, uint64_t h)
{
	uint32_t i = slot_of(h, s->cap);

	while (s->slot[i])
		i = (i + 1) & (s->cap - 1);
	s->slot[i] = h;
	s->n++;
}

static int set_grow(struct handle_set *s)
{
	struct handle_set bigger = { NULL, s->cap ? s->cap * 2 : SET_MIN, 0 };
	uint32_t i;

	bigger.slot = calloc(bigger.cap, sizeof(*bigger.slot));
	if (!bigger.slot)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++)
		if (s->slot[i])
			set_put_new(&bigger, s->slot[i]);
	free(s->slot);
	*s = bigger;
	return 0;
}

/* 1 if added, 0 if held already, -ENOMEM. */
static int set_add(struct handle_set *s, uint64_t h)
{
	if (set_has(s, h))
		return 0;
	if ((s->n + 1) * 2 > s->cap && set_grow(s))
		return -ENOMEM;
	set_put_new(s, h);
	return 1;
}

/* Removal with the entries after it shifted back (no tombstones). */
static int set_remove(struct handle_set *s, uint64_t h)
{
	uint32_t i, j, k, mask = s->cap - 1;

	if (!s->cap)
		return 0;
	for (i = slot_of(h, s->cap); s->slot[i] != h; i = (i + 1) & mask)
		if (!s->slot[i])
			return 0;
	s->slot[i] = 0;
	s->n--;
	for (j = (i + 1) & mask; s->slot[j]; j = (j + 1) & mask) {
		k = slot_of(s->slot[j], s->cap);
		/* move j back to i unless its home k lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		s->slot[i] = s->slot[j];
		s->slot[j] = 0;
		i = j;
	}
	return 1;
}

static void set_clear(struct handle_set *s)
{
	free(s->slot);
	*s = (struct handle_set){ NULL, 0, 0 };
}

/* --------------------------------------------------------------- watchers */

struct mds_leases *mds_leases_new(uint32_t lease_ms, uint32_t per_session,
				  mds_lease_wake_fn wake, void *wake_arg)
{
	struct mds_leases *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->lease_ms = lease_ms;
	t->per_session = per_session;
	t->wake = wake;
	t->wake_arg = wake_arg;
	t->floor = UINT64_MAX;
	return t;
}

static void watcher_free(struct mds_leases *t, struct watcher *w)
{
	if (w->prev_all)
		w->prev_all->next_all = w->next_all;
	else
		t->all = w->next_all;
	if (w->next_all)
		w->next_all->prev_all = w->prev_all;
	t->held -= w->held.n;
	t->n_watchers--;
	set_clear(&w->held);
	free(w);
}

void mds_leases_free(struct mds_leases *t)
{
	uint32_t b;

	if (!t)
		return;
	for (b = 0; b < LEASE_BUCKETS; b++)
		while (t->bucket[b]) {
			struct watcher *w = t->bucket[b];

			t->bucket[b] = w->next;
			watcher_free(t, w);
		}
	free(t->cause);
	free(t);
}

uint32_t mds_leases_ms(const struct mds_leases *t)
{
	return t ? t->lease_ms : 0;
}

static struct watcher **watcher_link(struct mds_leases *t, uint64_t session)
{
	struct watcher **p = &t->bucket[slot_of(session, LEASE_BUCKETS)];

	while (*p && (*p)->session != session)
		p = &(*p)->next;
	return p;
}

static struct watcher *watcher_of(struct mds_leases *t, uint64_t session)
{
	return t && session ? *watcher_link(t, session) : NULL;
}

/* The same lookup on a table it may not change. */
static const struct watcher *watcher_seen(const struct mds_leases *t, uint64_t session)
{
	const struct watcher *w = t && session ? t->bucket[slot_of(session, LEASE_BUCKETS)] : NULL;

	while (w && w->session != session)
		w = w->next;
	return w;
}

/* Forget everything w holds: it is told to do the same. */
static void forget_all(struct mds_leases *t, struct watcher *w)
{
	t->held -= w->held.n;
	set_clear(&w->held);
	w->n_changed = w->n_sent = 0;
	w->all = 1;
	w->all_told = 0;
	w->all_no = ++t->breaks;
	if (!w->oldest)
		w->oldest = w->all_no;
	if (w->oldest < t->floor)
		t->floor = w->oldest;
}

static void wake(struct mds_leases *t, struct watcher *w)
{
	if (w->parked && t->wake)
		t->wake(t->wake_arg, w->session, w->parked);
}

int mds_leases_watch(struct mds_leases *t, uint64_t session, double now)
{
	struct watcher **p, *w;

	if (!t || !t->lease_ms || !session)
		return -EOPNOTSUPP;
	p = watcher_link(t, session);
	if (!*p) {
		/* one per session, whose table is bounded: no cap of our own */
		if (!(w = calloc(1, sizeof(*w))))
			return -ENOMEM;
		w->session = session;
		w->all = 1;   /* whatever it held under another watch is unknown */
		*p = w;
		w->next_all = t->all;
		if (t->all)
			t->all->prev_all = w;
		t->all = w;
		t->n_watchers++;
	}
	(*p)->seen = now;
	return 0;
}

int mds_leases_take(struct mds_leases *t, uint64_t session, uint64_t *out, uint32_t max,
		    uint32_t *n, int *all, uint64_t *seq)
{
	struct watcher *w = watcher_of(t, session);
	uint32_t k;

	*n = 0;
	*all = !w;
	*seq = 0;
	if (!w)
		return 1;
	*all = w->all;
	k = w->n_changed < max ? w->n_changed : max;
	memcpy(out, w->changed, k * sizeof(*out));
	*n = k;
	w->n_sent = k;
	w->all_sent = w->all ? w->all_no : 0;
	w->all_told |= w->all;
	*seq = ++w->seq;
	return *all || k;
}

/* The floor again: the oldest unacknowledged news of any watcher whose
 * lease has not lapsed since (a watcher told at T uses nothing it held
 * before T after T + lease_ms: its lease runs from a WATCH sent before
 * T). Causes below it are done. */
static void floor_again(struct mds_leases *t, double now)
{
	double lease = t->lease_ms / 1000.0;
	uint64_t floor = UINT64_MAX;
	struct watcher *w;
	uint32_t i, kept = 0;

	if (now > t->now)
		t->now = now;
	now = t->now;
	for (w = t->all; w; w = w->next_all)
		if (w->oldest && w->oldest < floor && !(w->oldest_at && now - w->oldest_at > lease))
			floor = w->oldest;
	t->floor = floor;
	for (i = 0; i < t->n_cause; i++)
		if (t->cause[i].no >= floor)
			t->cause[kept++] = t->cause[i];
	t->n_cause = kept;
}

int mds_leases_acked(struct mds_leases *t, uint64_t session, uint64_t seen, double now)
{
	struct watcher *w = watcher_of(t, session);
	uint64_t was = t ? t->floor : UINT64_MAX;
	uint32_t k;

	if (!w || !seen || seen != w->seq)
		return 0;  /* (an older answer: what it told is told again) */
	k = w->n_sent;
	memmove(w->changed, w->changed + k, (w->n_changed - k) * sizeof(*w->changed));
	memmove(w->changed_no, w->changed_no + k, (w->n_changed - k) * sizeof(*w->changed_no));
	w->n_changed -= k;
	w->n_sent = 0;
	if (w->all && w->all_sent == w->all_no)
		w->all = w->all_told = 0;
	w->all_sent = 0;
	w->oldest = w->all ? w->all_no : w->n_changed ? w->changed_no[0] : 0;
	w->oldest_at = 0;
	floor_again(t, now);
	return t->floor > was;
}

/* A watcher whose news lapsed unacknowledged held others' changes up for
 * a lease (mds_lease.h, "Bars"): what it holds is dropped without news
 * (its lease has run out, so it answers nothing from it), it is to forget
 * everything at its next answer, and nothing is granted to it for 2, 4,
 * ... up to 64 leases, doubling with each bar of its session. */
static void bar(struct mds_leases *t, struct watcher *w, double now)
{
	if (w->strikes < BAR_STRIKES_MAX)
		w->strikes++;
	w->barred_until = now + t->lease_ms / 1000.0 * (double)(1u << w->strikes);
	w->barred_no = w->oldest;
	t->held -= w->held.n;
	set_clear(&w->held);
	w->n_changed = w->n_sent = 0;
	/* (its news is the lapsed one, which the floor no longer counts) */
	w->all = 1;
	w->all_told = 0;
	w->all_no = w->oldest;
	wake(t, w);
}

int mds_leases_lapse(struct mds_leases *t, double now)
{
	uint64_t was = t ? t->floor : UINT64_MAX;
	double lease = t ? t->lease_ms / 1000.0 : 0;
	struct watcher *w;

	if (!t)
		return 0;
	for (w = t->all; w; w = w->next_all) {
		if (w->oldest && !w->oldest_at)
			w->oldest_at = now;
		else if (w->oldest && now - w->oldest_at > lease && w->barred_no != w->oldest)
			bar(t, w, now);
	}
	floor_again(t, now);
	return t->floor > was;
}

int mds_leases_barred(const struct mds_leases *t, uint64_t session)
{
	const struct watcher *w = watcher_seen(t, session);

	return w && w->barred_until > t->now;
}

uint64_t mds_leases_floor(const struct mds_leases *t)
{
	return t ? t->floor : UINT64_MAX;
}

uint64_t mds_leases_need(const struct mds_leases *t, uint64_t session)
{
	uint32_t i;

	if (!t || !session)
		return 0;
	if (t->anyone >= t->floor)
		return t->anyone;
	for (i = 0; i < t->n_cause; i++)
		if (t->cause[i].session == session)
			return t->cause[i].no >= t->floor ? t->cause[i].no : 0;
	return 0;
}

/* `by` told others of a change numbered no: its replies wait for it.
 * Without memory for that, every session's replies do (`anyone`). */
static void caused(struct mds_leases *t, uint64_t by, uint64_t no)
{
	uint32_t i;

	if (!by)
		return;
	for (i = 0; i < t->n_cause; i++)
		if (t->cause[i].session == by) {
			t->cause[i].no = no;
			return;
		}
	if (t->n_cause == t->cap_cause) {
		uint32_t cap = t->cap_cause ? t->cap_cause * 2 : 16;
		struct cause *c = realloc(t->cause, cap * sizeof(*c));

		if (!c) {
			t->anyone = no;
			return;
		}
		t->cause = c;
		t->cap_cause = cap;
	}
	t->cause[t->n_cause++] = (struct cause){ by, no };
}

void *mds_leases_park(struct mds_leases *t, uint64_t session, void *parked)
{
	struct watcher *w = watcher_of(t, session);
	void *was;

	if (!w)
		return parked;   /* no watcher: nothing to park it for */
	was = w->parked;
	w->parked = parked;
	return was;
}

int mds_leases_watching(struct mds_leases *t, uint64_t session)
{
	return watcher_of(t, session) != NULL;
}

int mds_leases_news(struct mds_leases *t, uint64_t session)
{
	struct watcher *w = watcher_of(t, session);

	return !w || w->all || w->n_changed;
}

void *mds_leases_parked(struct mds_leases *t, uint64_t session)
{
	struct watcher *w = watcher_of(t, session);

	return w ? w->parked : NULL;
}

/* The watcher holding the most forgets everything (the total's bound). */
static void shed_largest(struct mds_leases *t)
{
	struct watcher *w, *most = NULL;

	for (w = t->all; w; w = w->next_all)
		if (!most || w->held.n > most->held.n)
			most = w;
	if (most) {
		forget_all(t, most);
		wake(t, most);
	}
}

int mds_leases_grant(struct mds_leases *t, uint64_t session, const uint64_t *h, uint32_t n)
{
	struct watcher *w = watcher_of(t, session);
	uint32_t i;
	int rc;

	/* Not watching, or not told to forget yet. Once an answer saying so
	 * is made, grants are kept: the client refuses replies to requests
	 * it sent before it forgot (tc_mcache_mark), and an answer lost is
	 * told again, forgetting these too. */
	if (!w || (w->all && !w->all_told) || w->barred_until > t->now)
		return 0;
	if (w->held.n + n > t->per_session) {
		forget_all(t, w);
		wake(t, w);
		return 0;
	}
	if (t->held + n > MDS_LEASE_TOTAL)
		shed_largest(t);
	if (w->all && !w->all_told)
		return 0;
	for (i = 0; i < n; i++) {
		if (!h[i])
			continue;
		if ((rc = set_add(&w->held, h[i])) < 0) {
			forget_all(t, w);
			wake(t, w);
			return 0;
		}
		t->held += (uint64_t)rc;
	}
	return 1;
}

/* 1 if w held the handle (and is told), else 0. */
static int tell(struct mds_leases *t, struct watcher *w, uint64_t handle)
{
	if (!set_remove(&w->held, handle))
		return 0;
	t->held--;
	if (w->n_changed == MDS_LEASE_CHANGES) {
		forget_all(t, w);
	} else {
		w->changed_no[w->n_changed] = ++t->breaks;
		w->changed[w->n_changed++] = handle;
		if (!w->oldest)
			w->oldest = t->breaks;
	}
	if (w->oldest < t->floor)
		t->floor = w->oldest;
	wake(t, w);
	return 1;
}

void mds_leases_break(struct mds_leases *t, uint64_t handle, uint64_t by)
{
	struct watcher *w;
	int told = 0;

	if (!t || !t->held)
		return;
	for (w = t->all; w; w = w->next_all)
		if (w->session != by && w->held.n)
			told |= tell(t, w, handle);
	if (told)
		caused(t, by, t->breaks);
}

void mds_leases_session_end(struct mds_leases *t, uint64_t session)
{
	struct watcher **p, *w;

	if (!t || !session || !*(p = watcher_link(t, session)))
		return;
	w = *p;
	*p = w->next;
	watcher_free(t, w);
	floor_again(t, t->now);
}

void mds_leases_expire(struct mds_leases *t, double now)
{
	double idle = 2.0 * (t ? t->lease_ms : 0) / 1000.0;
	uint32_t b;

	if (!t)
		return;
	for (b = 0; b < LEASE_BUCKETS; b++) {
		struct watcher **p = &t->bucket[b];

		while (*p) {
			struct watcher *w = *p;

			if (!w->parked && now - w->seen > idle) {
				*p = w->next;
				watcher_free(t, w);
			} else {
				p = &w->next;
			}
		}
	}
	floor_again(t, now);
}

uint32_t mds_leases_watchers(const struct mds_leases *t)
{
	return t ? t->n_watchers : 0;
}

uint64_t mds_leases_held(const struct mds_leases *t)
{
	return t ? t->held : 0;
}
