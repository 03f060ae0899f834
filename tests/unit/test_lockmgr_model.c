/*
 * test_lockmgr_model.c - the lock table against a brute-force model.
 *
 * The model implements tlk.h's rules as plainly as possible: a request is a
 * list of wanted bytes (object byte, logical offset) and a count of those
 * held; each object is a byte map of readers and writer; granting walks one
 * byte at a time and scans every parked request for the fairness rule; the
 * wake-up after each call repeats passes until nothing moves (the library
 * claims one pass suffices) and runs after every call (the library skips it
 * where it claims nothing can move). Random sequences of create, acquire
 * (blocking and nonblocking, read and write, several owners), partial,
 * full and owner release, cancel and invalid calls go to both; every answer,
 * return code and event must agree, and periodically every request's state,
 * the table's statistics and tlk_table_check.
 *
 * 10^6 operations in all (TLK_MODEL_OPS overrides).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tlk.h"
#include "rng.h"

/* Also under ASan/UBSan: it takes about 1.5 s there. */
#define DEFAULT_OPS 1000000

/* ------------------------------------------------------------ the objects
 *
 * Objects 0 and 1 are the two slots of one file striped with STRIP-byte
 * strips; object 2 is a file of its own, mapped at logical 5000 + x. Ranges
 * never cross a strip of objects 0 and 1 (the daemon splits there too).
 */
#define NOBJ 3
#define MAX_SPACE 256
#define STRIP 8
#define MAX_RANGES 40

static const uint64_t handles[NOBJ] = { 0x10, 0x11, 0xdeadbeef00ULL };

static uint64_t logical_of(int obj, uint64_t x)
{
	if (obj == 2)
		return 5000 + x;
	return (x / STRIP) * 2 * STRIP + (uint64_t)obj * STRIP + x % STRIP;
}

/* ---------------------------------------------------------------- model */

#define MAX_REQ 64 /* slots; live requests are fewer */

struct mreq {
	uint64_t id; /* 0: free slot */
	int obj;
	uint64_t owner;
	enum tlk_mode mode;
	size_t n, h;                /* bytes wanted, bytes held (a prefix) */
	uint16_t ob[MAX_SPACE];     /* object byte of wanted byte k */
	uint64_t lg[MAX_SPACE];     /* its logical offset */
	size_t nranges;
	size_t range_first[MAX_RANGES]; /* index of each range's first byte */
	int parked;
	uint64_t upto;
	void *cookie;
};

struct model {
	struct mreq req[MAX_REQ]; /* in creation (= id) order; compacted */
	size_t nreq;              /* slots used, live or not */
	uint64_t next_id;
	uint16_t readers[NOBJ][MAX_SPACE];
	uint64_t writer[NOBJ][MAX_SPACE]; /* holder's id or 0 */
	struct tlk_event events[MAX_REQ];
	size_t nevents;
};

/* What the runs exercised, so a silent generator is noticed. */
static struct {
	unsigned long events, gone, waiting, partial, granted;
} seen;

static struct mreq *m_find(struct model *m, uint64_t id)
{
	for (size_t i = 0; i < m->nreq; i++)
		if (m->req[i].id && m->req[i].id == id)
			return &m->req[i];
	return NULL;
}

static size_t m_live(const struct model *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nreq; i++)
		n += m->req[i].id != 0;
	return n;
}

static int conflict(enum tlk_mode a, enum tlk_mode b)
{
	return a == TLK_WRITE || b == TLK_WRITE;
}

static uint64_t m_next(const struct mreq *r)
{
	return r->h < r->n ? r->lg[r->h] : TLK_NONE;
}

static uint64_t m_last(const struct mreq *r)
{
	return r->h ? r->lg[r->h - 1] : TLK_NONE;
}

static int m_reached(const struct mreq *r, uint64_t upto)
{
	return r->h == r->n || r->lg[r->h] >= upto;
}

static void m_answer(const struct mreq *r, struct tlk_answer *a)
{
	a->state = r->h == r->n ? TLK_GRANTED : r->parked ? TLK_WAITING : TLK_PARTIAL;
	a->last_abs_offset = m_last(r);
	a->next_abs_offset = m_next(r);
}

/* May r take its wanted byte k now? */
static int m_may_take(const struct model *m, const struct mreq *r, size_t k, int blocking)
{
	unsigned b = r->ob[k];

	if (m->writer[r->obj][b])
		return 0;
	if (r->mode == TLK_WRITE && m->readers[r->obj][b])
		return 0;
	for (size_t i = 0; i < m->nreq; i++) {
		const struct mreq *w = &m->req[i];
		if (!w->id || !w->parked || w == r || w->obj != r->obj || w->id > r->id ||
		    !conflict(w->mode, r->mode))
			continue;
		if (blocking) {
			if (w->ob[w->h] == b)
				return 0;
		} else {
			for (size_t j = w->h; j < w->n && w->lg[j] < w->upto; j++)
				if (w->ob[j] == b)
					return 0;
		}
	}
	return 1;
}

static void m_hold(struct model *m, struct mreq *r, size_t k, int take)
{
	unsigned b = r->ob[k];

	if (r->mode == TLK_WRITE)
		m->writer[r->obj][b] = take ? r->id : 0;
	else if (take)
		m->readers[r->obj][b]++;
	else
		m->readers[r->obj][b]--;
}

static void m_grant(struct model *m, struct mreq *r, int blocking, uint64_t upto)
{
	while (r->h < r->n && r->lg[r->h] < upto && m_may_take(m, r, r->h, blocking))
		m_hold(m, r, r->h++, 1);
}

static void m_drop_to(struct model *m, struct mreq *r, size_t h)
{
	while (r->h > h)
		m_hold(m, r, --r->h, 0);
}

static void m_event(struct model *m, const struct mreq *r, enum tlk_state gone)
{
	struct tlk_event *e = &m->events[m->nevents++];

	e->lock_id = r->id;
	e->object = handles[r->obj];
	e->owner = r->owner;
	e->cookie = r->cookie;
	m_answer(r, &e->answer);
	if (gone == TLK_GONE)
		e->answer = (struct tlk_answer){ TLK_GONE, TLK_NONE, TLK_NONE };
}

/* Passes over every parked request, oldest first, until none moves. */
static void m_wake(struct model *m)
{
	int moved;

	do {
		moved = 0;
		for (size_t i = 0; i < m->nreq; i++) {
			struct mreq *w = &m->req[i];
			size_t h0 = w->h;
			if (!w->id || !w->parked)
				continue;
			m_grant(m, w, 1, w->upto);
			if (m_reached(w, w->upto)) {
				w->parked = 0;
				m_event(m, w, TLK_GRANTED);
			}
			moved |= w->h != h0;
		}
	} while (moved);
}

static void m_compact(struct model *m)
{
	size_t j = 0;

	for (size_t i = 0; i < m->nreq; i++)
		if (m->req[i].id)
			m->req[j++] = m->req[i];
	m->nreq = j;
}

static int m_create(struct model *m, int obj, uint64_t owner, enum tlk_mode mode,
		    const struct tlk_range *g, size_t n, uint64_t *id)
{
	struct mreq *r;

	m->nevents = 0;
	if (m->nreq == MAX_REQ)
		m_compact(m);
	assert_true(m->nreq < MAX_REQ);
	r = &m->req[m->nreq++];
	memset(r, 0, sizeof(*r));
	r->id = *id = m->next_id++;
	r->obj = obj;
	r->owner = owner;
	r->mode = mode;
	r->nranges = n;
	for (size_t i = 0; i < n; i++) {
		r->range_first[i] = r->n;
		for (uint64_t k = 0; k < g[i].length; k++) {
			r->ob[r->n] = (uint16_t)(g[i].offset + k);
			r->lg[r->n++] = g[i].logical + k;
		}
	}
	return 0;
}

static int m_acquire(struct model *m, uint64_t id, unsigned flags, uint64_t upto,
		     void *cookie, struct tlk_answer *a)
{
	struct mreq *r = m_find(m, id);
	int blocking = flags & TLK_BLOCKING;

	m->nevents = 0;
	if (!r)
		return -ENOENT;
	if (r->h < r->n) {
		r->parked = 0;
		m_grant(m, r, blocking, upto);
		if (blocking && !m_reached(r, upto)) {
			r->parked = 1;
			r->upto = upto;
			r->cookie = cookie;
		}
	}
	m_wake(m);
	m_answer(r, a);
	return 0;
}

static int m_release_from(struct model *m, uint64_t id, uint64_t from, struct tlk_answer *a)
{
	struct mreq *r = m_find(m, id);
	size_t h = 0;

	m->nevents = 0;
	if (!r)
		return -ENOENT;
	while (h < r->n && r->lg[h] < from)
		h++;
	if (h < r->h)
		m_drop_to(m, r, h);
	r->parked = 0;
	m_wake(m);
	m_answer(r, a);
	return 0;
}

static int m_cancel(struct model *m, uint64_t id, struct tlk_answer *a)
{
	struct mreq *r = m_find(m, id);

	m->nevents = 0;
	if (!r)
		return -ENOENT;
	r->parked = 0;
	m_wake(m);
	m_answer(r, a);
	return 0;
}

static void m_destroy(struct model *m, struct mreq *r)
{
	m_drop_to(m, r, 0);
	r->id = 0;
}

static int m_release(struct model *m, uint64_t id)
{
	struct mreq *r = m_find(m, id);

	m->nevents = 0;
	if (!r)
		return -ENOENT;
	m_destroy(m, r);
	m_wake(m);
	return 0;
}

static size_t m_release_owner(struct model *m, uint64_t owner)
{
	size_t n = 0;

	m->nevents = 0;
	for (size_t i = 0; i < m->nreq; i++) {
		struct mreq *r = &m->req[i];
		if (!r->id || r->owner != owner)
			continue;
		if (r->parked) {
			m_event(m, r, TLK_GONE);
			seen.gone++;
		}
		m_destroy(m, r);
		n++;
	}
	m_wake(m);
	return n;
}

/* ----------------------------------------------------------- comparison */

static void expect_answer(const struct tlk_answer *got, const struct tlk_answer *want)
{
	assert_int_equal(got->state, want->state);
	assert_int_equal(got->last_abs_offset, want->last_abs_offset);
	assert_int_equal(got->next_abs_offset, want->next_abs_offset);
}

static int by_id(const void *a, const void *b)
{
	const struct tlk_event *x = a, *y = b;

	return x->lock_id < y->lock_id ? -1 : x->lock_id > y->lock_id;
}

static void expect_events(struct tlk_table *t, struct model *m)
{
	const struct tlk_event *ev;
	struct tlk_event got[MAX_REQ];
	size_t n = tlk_events(t, &ev);

	assert_int_equal(n, m->nevents);
	seen.events += n;
	if (n)
		memcpy(got, ev, n * sizeof(*ev));
	qsort(got, n, sizeof(*got), by_id);
	qsort(m->events, n, sizeof(*got), by_id);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(got[i].lock_id, m->events[i].lock_id);
		assert_int_equal(got[i].object, m->events[i].object);
		assert_int_equal(got[i].owner, m->events[i].owner);
		assert_ptr_equal(got[i].cookie, m->events[i].cookie);
		expect_answer(&got[i].answer, &m->events[i].answer);
	}
}

/* Every request's state, the statistics and the invariants. */
static void expect_state(struct tlk_table *t, struct model *m)
{
	struct tlk_stats st, want;
	int objects[NOBJ] = { 0 };

	memset(&want, 0, sizeof(want));
	for (size_t i = 0; i < m->nreq; i++) {
		const struct mreq *r = &m->req[i];
		struct tlk_request_info info;
		struct tlk_answer a;
		size_t locks = 0;
		if (!r->id)
			continue;
		assert_int_equal(tlk_request_info(t, r->id, &info), 0);
		m_answer(r, &a);
		expect_answer(&info.answer, &a);
		assert_int_equal(info.object, handles[r->obj]);
		assert_int_equal(info.owner, r->owner);
		assert_int_equal(info.mode, r->mode);
		assert_int_equal(info.upto, r->parked ? r->upto : TLK_NONE);
		assert_int_equal(info.ranges, r->nranges);
		assert_int_equal(info.held_bytes, r->h);
		for (size_t g = 0; g < r->nranges; g++)
			locks += r->range_first[g] < r->h;
		assert_int_equal(info.held_locks, locks);
		want.requests++;
		want.granted += a.state == TLK_GRANTED;
		want.parked += a.state == TLK_WAITING;
		want.waiting += a.state == TLK_PARTIAL;
		if (r->mode == TLK_READ) {
			want.read_locks += locks;
			want.read_bytes += r->h;
		} else {
			want.write_locks += locks;
			want.write_bytes += r->h;
		}
		objects[r->obj] = 1;
	}
	want.objects = (size_t)(objects[0] + objects[1] + objects[2]);
	tlk_table_stats(t, &st);
	assert_int_equal(st.objects, want.objects);
	assert_int_equal(st.requests, want.requests);
	assert_int_equal(st.granted, want.granted);
	assert_int_equal(st.parked, want.parked);
	assert_int_equal(st.waiting, want.waiting);
	assert_int_equal(st.read_locks, want.read_locks);
	assert_int_equal(st.write_locks, want.write_locks);
	assert_int_equal(st.read_bytes, want.read_bytes);
	assert_int_equal(st.write_bytes, want.write_bytes);
	assert_int_equal(tlk_table_check(t), 0);
}

/* ----------------------------------------------------------- generators */

struct params {
	uint64_t space;   /* object bytes in play */
	size_t max_live;  /* requests alive at once */
	unsigned owners;
	unsigned read_pct;
};

/* Ascending ranges in [0, space), split at strips for objects 0 and 1. */
static size_t gen_ranges(struct rng *rg, const struct params *p, int obj,
			 struct tlk_range *g)
{
	size_t n = 0;
	uint64_t x = below(rg, p->space / 2), want = 1 + below(rg, 6);

	while (x < p->space && n < want) {
		uint64_t len = 1 + below(rg, below(rg, 4) ? 6 : 24);
		if (len > p->space - x)
			len = p->space - x;
		while (len) {
			uint64_t piece = len;
			if (obj != 2 && piece > STRIP - x % STRIP)
				piece = STRIP - x % STRIP;
			g[n].offset = x;
			g[n].length = piece;
			g[n].logical = logical_of(obj, x);
			n++;
			x += piece;
			len -= piece;
		}
		x += below(rg, 3) ? below(rg, 10) : 0;
	}
	return n;
}

static uint64_t gen_logical(struct rng *rg, const struct params *p, int obj)
{
	uint64_t x;

	switch (below(rg, 10)) {
	case 0: case 1: case 2: case 3:
		return TLK_NONE;
	case 4:
		return 0;
	default:
		x = below(rg, p->space + 2);
		return x < p->space ? logical_of(obj, x) + below(rg, 2) : logical_of(obj, x - 1) + 9;
	}
}

static uint64_t pick_live(struct rng *rg, const struct model *m)
{
	size_t live = m_live(m), k = below(rg, live);

	for (size_t i = 0; i < m->nreq; i++)
		if (m->req[i].id && !k--)
			return m->req[i].id;
	return 0;
}

/* ------------------------------------------------------------------ run */

/* What one run shares between its operations. */
struct run_ctx {
	struct rng rg;
	const struct params *p;
	struct model *m;
	struct tlk_table *t;
};

/* One operation's outcome in the table (rc, a) and in the model (mrc, ma). */
struct outcome {
	int rc, mrc;
	struct tlk_answer a, ma;
};

/* For operations that answer no tlk_answer: both sides compare equal. */
static void no_answer(struct outcome *o)
{
	o->ma = o->a = (struct tlk_answer){ 0, 0, 0 };
}

/* Create a request and acquire it. The draws keep their order: the
 * sequence of a seed is part of what a failure report names. */
static void op_create(struct run_ctx *x, int obj, void *cookie, struct outcome *o)
{
	struct tlk_range g[MAX_RANGES];
	enum tlk_mode mode = below(&x->rg, 100) < x->p->read_pct ? TLK_READ : TLK_WRITE;
	uint64_t owner = 1 + below(&x->rg, x->p->owners), id, mid;
	unsigned flags = below(&x->rg, 2) ? TLK_BLOCKING : 0;
	uint64_t upto = gen_logical(&x->rg, x->p, obj);
	size_t n = gen_ranges(&x->rg, x->p, obj, g);

	o->rc = tlk_request_create(x->t, handles[obj], owner, mode, g, n, &id);
	o->mrc = m_create(x->m, obj, owner, mode, g, n, &mid);
	assert_int_equal(o->rc, o->mrc);
	assert_int_equal(id, mid);
	o->rc = tlk_acquire(x->t, id, flags, upto, cookie, &o->a);
	o->mrc = m_acquire(x->m, id, flags, upto, cookie, &o->ma);
}

/* Acquire (further) a live request. */
static void op_acquire(struct run_ctx *x, void *cookie, struct outcome *o)
{
	unsigned flags = below(&x->rg, 2) ? TLK_BLOCKING : 0;
	uint64_t id = pick_live(&x->rg, x->m);
	uint64_t upto = gen_logical(&x->rg, x->p, m_find(x->m, id)->obj);

	o->rc = tlk_acquire(x->t, id, flags, upto, cookie, &o->a);
	o->mrc = m_acquire(x->m, id, flags, upto, cookie, &o->ma);
}

static void op_release_from(struct run_ctx *x, struct outcome *o)
{
	uint64_t id = pick_live(&x->rg, x->m);
	uint64_t from = gen_logical(&x->rg, x->p, m_find(x->m, id)->obj);

	o->rc = tlk_release_from(x->t, id, from, &o->a);
	o->mrc = m_release_from(x->m, id, from, &o->ma);
}

static void op_release(struct run_ctx *x, struct outcome *o)
{
	uint64_t id = pick_live(&x->rg, x->m);

	o->rc = tlk_release(x->t, id);
	o->mrc = m_release(x->m, id);
	assert_int_equal(tlk_request_info(x->t, id, &(struct tlk_request_info){ 0 }), -ENOENT);
	no_answer(o);
}

static void op_cancel(struct run_ctx *x, struct outcome *o)
{
	uint64_t id = pick_live(&x->rg, x->m);

	o->rc = tlk_cancel(x->t, id, &o->a);
	o->mrc = m_cancel(x->m, id, &o->ma);
}

/* Release an owner's requests; owners + 1 is one that may hold none. */
static void op_release_owner(struct run_ctx *x, struct outcome *o)
{
	uint64_t owner = 1 + below(&x->rg, x->p->owners + 1);
	size_t n;

	o->rc = tlk_release_owner(x->t, owner, &n);
	o->mrc = 0;
	assert_int_equal(n, m_release_owner(x->m, owner));
	no_answer(o);
}

/* An id that was never issued, or one released: -ENOENT, no events. */
static void op_unknown_id(struct run_ctx *x, struct outcome *o)
{
	struct model *m = x->m;
	uint64_t id = below(&x->rg, 2) ? m->next_id + below(&x->rg, 5)
				       : 1 + below(&x->rg, m->next_id);

	if (m_find(m, id))
		id = m->next_id + 7;
	switch (below(&x->rg, 4)) {
	case 0: o->rc = tlk_acquire(x->t, id, 0, TLK_NONE, NULL, &o->a); break;
	case 1: o->rc = tlk_release(x->t, id); break;
	case 2: o->rc = tlk_release_from(x->t, id, 0, &o->a); break;
	default: o->rc = tlk_cancel(x->t, id, &o->a); break;
	}
	assert_int_equal(o->rc, -ENOENT);
	o->mrc = o->rc;
	m->nevents = 0;
	no_answer(o);
}

/* Malformed ranges: refused, and nothing may change. */
static void op_malformed(struct run_ctx *x, int obj, struct outcome *o)
{
	struct tlk_range g[MAX_RANGES];
	size_t n = gen_ranges(&x->rg, x->p, obj, g);
	uint64_t id;

	if (n >= 2)
		g[1].offset = g[0].offset; /* overlap */
	else
		g[0].length = 0;
	o->rc = tlk_request_create(x->t, handles[obj], 1, TLK_READ, g, n, &id);
	assert_int_equal(o->rc, -EINVAL);
	o->mrc = o->rc;
	x->m->nevents = 0;
	no_answer(o);
}

/* Picks the operation, a number in [0, 100) read by run_op; a full table
 * releases, an empty one creates. */
static uint64_t pick_op(struct run_ctx *x, uint64_t choice)
{
	size_t live = m_live(x->m);

	if (live >= x->p->max_live && choice < 50)
		choice = 65 + below(&x->rg, 30); /* release something */
	if (!live && choice >= 30 && choice < 94)
		choice = 0;
	return choice;
}

static void run_op(struct run_ctx *x, uint64_t choice, int obj, void *cookie, struct outcome *o)
{
	if (choice < 30)
		op_create(x, obj, cookie, o);
	else if (choice < 50)
		op_acquire(x, cookie, o);
	else if (choice < 65)
		op_release_from(x, o);
	else if (choice < 80)
		op_release(x, o);
	else if (choice < 90)
		op_cancel(x, o);
	else if (choice < 94)
		op_release_owner(x, o);
	else if (choice < 97)
		op_unknown_id(x, o);
	else
		op_malformed(x, obj, o);
}

/* Drain: every owner's release leaves an empty table. */
static void drain(struct tlk_table *t, struct model *m, const struct params *p)
{
	struct tlk_stats st;

	for (uint64_t owner = 1; owner <= p->owners; owner++) {
		size_t n;
		assert_int_equal(tlk_release_owner(t, owner, &n), 0);
		assert_int_equal(n, m_release_owner(m, owner));
		expect_events(t, m);
		expect_state(t, m);
	}
	tlk_table_stats(t, &st);
	assert_int_equal(st.requests, 0);
	assert_int_equal(st.objects, 0);
}

static void run(uint64_t seed, const struct params *p, long ops, struct tlk_table *t)
{
	static struct model m; /* large: keep it off the stack */
	struct run_ctx x = { { seed }, p, &m, t };

	memset(&m, 0, sizeof(m));
	m.next_id = 1;
	for (long op = 0; op < ops; op++) {
		struct outcome o;
		uint64_t choice = below(&x.rg, 100);
		int obj = (int)below(&x.rg, NOBJ);

		choice = pick_op(&x, choice);
		run_op(&x, choice, obj, (void *)(uintptr_t)(op + 1), &o);
		assert_int_equal(o.rc, o.mrc);
		expect_answer(&o.a, &o.ma);
		if (choice < 50) {
			seen.waiting += o.a.state == TLK_WAITING;
			seen.partial += o.a.state == TLK_PARTIAL;
			seen.granted += o.a.state == TLK_GRANTED;
		}
		expect_events(t, &m);
		if (op % 997 == 0)
			expect_state(t, &m);
	}
	expect_state(t, &m);
	drain(t, &m, p);
}

static long total_ops(void)
{
	const char *env = getenv("TLK_MODEL_OPS");

	return env ? atol(env) : DEFAULT_OPS;
}

/* Ten runs of a tenth of the operations each, from heavy contention (16
 * bytes, 12 requests) to sparse (256 bytes, 4 requests). */
static void test_random_against_model(void **state)
{
	static const struct params plist[] = {
		{ 16, 12, 3, 50 },  { 32, 16, 4, 60 }, { 64, 16, 4, 70 },
		{ 64, 6, 2, 30 },   { 128, 24, 5, 60 }, { 256, 4, 3, 50 },
		{ 24, 8, 8, 90 },   { 48, 20, 2, 10 },  { 96, 32, 6, 60 },
		{ 200, 16, 4, 50 },
	};
	long ops = total_ops(), each = ops / 10;
	(void)state;

	for (int i = 0; i < 10; i++) {
		struct tlk_table *t;
		assert_int_equal(tlk_table_create(NULL, &t), 0);
		run(0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1), &plist[i],
		    i == 9 ? ops - 9 * each : each, t);
		tlk_table_destroy(t);
	}
	printf("lockmgr model: %ld operations compared; acquires answered %lu granted, "
	       "%lu partial, %lu waiting; %lu events (%lu gone)\n", ops, seen.granted,
	       seen.partial, seen.waiting, seen.events, seen.gone);
	/* Each kind of outcome must have happened often. */
	assert_true(seen.granted > (unsigned long)ops / 100);
	assert_true(seen.partial > (unsigned long)ops / 100);
	assert_true(seen.waiting > (unsigned long)ops / 100);
	assert_true(seen.events > (unsigned long)ops / 100);
	assert_true(seen.gone > (unsigned long)ops / 10000);
}

/* Destroying a table with requests in every state frees everything (ASan
 * and a counting allocator would both see a leak). */
static size_t outstanding;

static void *count_alloc(void *ctx, size_t size)
{
	(void)ctx;
	outstanding += size;
	return malloc(size);
}

static void count_free(void *ctx, void *p, size_t size)
{
	(void)ctx;
	outstanding -= size;
	free(p);
}

static void test_destroy_busy_table(void **state)
{
	static const struct tlk_alloc alloc = { count_alloc, count_free, NULL };
	struct tlk_config cfg = { { 0, 0, 0 }, &alloc };
	struct params p = { 32, 16, 4, 50 };
	struct tlk_table *t;
	struct tlk_stats st;
	(void)state;

	assert_int_equal(tlk_table_create(&cfg, &t), 0);
	run(42, &p, 3000, t);
	/* run() drained it; fill it again and destroy it busy */
	for (int i = 0; i < 12; i++) {
		struct tlk_range g = { (uint64_t)i % 4, 4, (uint64_t)i % 4 };
		struct tlk_answer a;
		uint64_t id;
		assert_int_equal(tlk_request_create(t, (uint64_t)i % 2, (uint64_t)i % 3,
						    i % 3 ? TLK_WRITE : TLK_READ, &g, 1, &id), 0);
		assert_int_equal(tlk_acquire(t, id, i % 2 ? TLK_BLOCKING : 0, TLK_NONE,
					     NULL, &a), 0);
	}
	tlk_table_stats(t, &st);
	assert_true(st.parked > 0 && st.granted > 0);
	assert_int_equal(st.memory, outstanding);
	tlk_table_destroy(t);
	assert_int_equal(outstanding, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_destroy_busy_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
