/*
 * test_lockmgr_examples.c - the lock table on the dissertation's worked
 * examples and the rules around them:
 *   - §7.3's optimistic round (client A, two servers), with its exact
 *     last/next offsets, then the two-phase round that finishes it;
 *   - §7.4.2's server rules (shared reads, exclusive writes, nonblocking
 *     waiters left alone by releases, a blocking request reaching its final
 *     offset, partial release);
 *   - the lock brief's two deadlock scenarios (grants past the final
 *     offset; plain FIFO per byte) and the fairness rule;
 *   - limits, malformed calls and allocation failures;
 *   - the §7.4.1 client protocols (two-phase, one-try, alt-try) run by
 *     simulated clients against one table per server, in random schedules
 *     with cancels and lease expiries: every client finishes (no deadlock),
 *     no two hold conflicting bytes at once, and without contention the
 *     round counts are those of Figs. 7.3 and 7.4.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tlk.h"
#include "rng.h"

#define NONE TLK_NONE

static struct tlk_table *new_table(void)
{
	struct tlk_table *t;

	assert_int_equal(tlk_table_create(NULL, &t), 0);
	return t;
}

static uint64_t new_request(struct tlk_table *t, uint64_t object, uint64_t owner,
			    enum tlk_mode mode, const struct tlk_range *g, size_t n)
{
	uint64_t id;

	assert_int_equal(tlk_request_create(t, object, owner, mode, g, n, &id), 0);
	return id;
}

static void expect(const struct tlk_answer *a, enum tlk_state state, uint64_t last,
		   uint64_t next)
{
	assert_int_equal(a->state, state);
	assert_int_equal(a->last_abs_offset, last);
	assert_int_equal(a->next_abs_offset, next);
}

static struct tlk_answer acquire(struct tlk_table *t, uint64_t id, unsigned flags,
				 uint64_t upto)
{
	struct tlk_answer a;

	assert_int_equal(tlk_acquire(t, id, flags, upto, (void *)(uintptr_t)id, &a), 0);
	return a;
}

static size_t events(struct tlk_table *t, const struct tlk_event **ev)
{
	return tlk_events(t, ev);
}

/* Releases `id` whole and expects exactly one parked request to wake:
 * `woken` (its cookie is its id, as acquire() sets it), answered so. */
static void release_wakes_one(struct tlk_table *t, uint64_t id, uint64_t woken,
			      enum tlk_state state, uint64_t last, uint64_t next)
{
	const struct tlk_event *ev;

	assert_int_equal(tlk_release(t, id), 0);
	assert_int_equal(tlk_events(t, &ev), 1);
	assert_int_equal(ev[0].lock_id, woken);
	assert_ptr_equal(ev[0].cookie, (void *)(uintptr_t)woken);
	expect(&ev[0].answer, state, last, next);
}

/* ------------------------------------------------------------- §7.3 */

/* Client A wants (0,2), (4,2), (6,2), (8,2): the first two on server 0,
 * the others on server 1. Client B holds (4,2) on server 0. Server 0's
 * object keeps logical 0..1 at object offset 0 and 4..5 at offset 2;
 * server 1's keeps 6..7 at 0 and 8..9 at 2 (so answers must translate). */
static void test_dissertation_7_3(void **state)
{
	struct tlk_table *s0 = new_table(), *s1 = new_table();
	const struct tlk_range a0[] = { { 0, 2, 0 }, { 2, 2, 4 } };
	const struct tlk_range a1[] = { { 0, 2, 6 }, { 2, 2, 8 } };
	const struct tlk_range b0[] = { { 2, 2, 4 } };
	struct tlk_answer r0, r1;
	uint64_t b, x0, x1, m;
	(void)state;

	b = new_request(s0, 7, 2, TLK_WRITE, b0, 1);
	expect((r0 = acquire(s0, b, 0, NONE), &r0), TLK_GRANTED, 5, NONE);

	/* Optimistic round: both servers at once, nonblocking. */
	x0 = new_request(s0, 7, 1, TLK_WRITE, a0, 2);
	x1 = new_request(s1, 9, 1, TLK_WRITE, a1, 2);
	r0 = acquire(s0, x0, 0, NONE);
	r1 = acquire(s1, x1, 0, NONE);
	expect(&r0, TLK_PARTIAL, 1, 4); /* got (0,2), stopped at (4,2) */
	expect(&r1, TLK_GRANTED, 9, NONE); /* got (6,2), (8,2) */

	/* m = min(next) = 4; server 1's last (9) > m: release (6,2), (8,2). */
	m = r0.next_abs_offset < r1.next_abs_offset ? r0.next_abs_offset : r1.next_abs_offset;
	assert_int_equal(m, 4);
	assert_true(r1.last_abs_offset > m);
	assert_int_equal(tlk_release_from(s1, x1, m, &r1), 0);
	expect(&r1, TLK_PARTIAL, NONE, 6);
	struct tlk_stats st;
	tlk_table_stats(s1, &st);
	assert_int_equal(st.write_locks, 0);

	/* Two-phase round: server 0 (next 4) up to the heap's next minimum,
	 * server 1's 6. B holds (4,2): A waits. */
	r0 = acquire(s0, x0, TLK_BLOCKING, r1.next_abs_offset);
	expect(&r0, TLK_WAITING, 1, 4);
	release_wakes_one(s0, b, x0, TLK_GRANTED, 5, NONE);

	/* Next round: server 1 from 6, nothing left after it. */
	r1 = acquire(s1, x1, TLK_BLOCKING, NONE);
	expect(&r1, TLK_GRANTED, 9, NONE);

	assert_int_equal(tlk_release(s0, x0), 0);
	assert_int_equal(tlk_release(s1, x1), 0);
	tlk_table_stats(s0, &st);
	assert_int_equal(st.requests + st.objects, 0);
	tlk_table_destroy(s0);
	tlk_table_destroy(s1);
}

/* ----------------------------------------------------------- §7.4.2 */

static void test_shared_readers_single_writer(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range g[] = { { 100, 50, 1000 } };
	const struct tlk_range h[] = { { 120, 10, 1020 } };
	struct tlk_answer a;
	uint64_t r1, r2, w1, w2;
	(void)state;

	r1 = new_request(t, 1, 1, TLK_READ, g, 1);
	r2 = new_request(t, 1, 2, TLK_READ, h, 1);
	w1 = new_request(t, 1, 3, TLK_WRITE, h, 1);
	a = acquire(t, r1, 0, NONE);
	expect(&a, TLK_GRANTED, 1049, NONE);
	a = acquire(t, r2, 0, NONE); /* readers share */
	expect(&a, TLK_GRANTED, 1029, NONE);
	a = acquire(t, w1, 0, NONE); /* a write checks the read tree too */
	expect(&a, TLK_PARTIAL, NONE, 1020);
	/* The same bytes on another object do not conflict. */
	w2 = new_request(t, 2, 3, TLK_WRITE, h, 1);
	a = acquire(t, w2, 0, NONE);
	expect(&a, TLK_GRANTED, 1029, NONE);
	/* A read checks the write tree. */
	uint64_t r3 = new_request(t, 2, 1, TLK_READ, g, 1);
	a = acquire(t, r3, 0, NONE);
	expect(&a, TLK_PARTIAL, 1019, 1020); /* byte-granular: got [1000,1020) */

	struct tlk_stats st;
	assert_int_equal(tlk_object_stats(t, 1, &st), 0);
	assert_int_equal(st.read_locks, 2);
	assert_int_equal(st.read_bytes, 60);
	assert_int_equal(st.write_locks, 0);
	assert_int_equal(tlk_object_stats(t, 2, &st), 0);
	assert_int_equal(st.read_locks, 1);
	assert_int_equal(st.read_bytes, 20);
	assert_int_equal(st.write_bytes, 10);
	assert_int_equal(tlk_object_stats(t, 3, &st), -ENOENT);
	assert_int_equal(tlk_table_check(t), 0);
	tlk_table_destroy(t);
}

/* Releases re-check only blocking-tagged waiters: a nonblocking waiter
 * keeps what it had until it asks again, as does a blocking request once
 * it reached its final offset. */
static void test_nonblocking_waiters_untouched(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range hold[] = { { 10, 1, 10 }, { 30, 1, 30 } };
	const struct tlk_range want[] = { { 0, 40, 0 } };
	const struct tlk_event *ev;
	struct tlk_answer a;
	uint64_t h, nb, bl;
	(void)state;

	h = new_request(t, 5, 1, TLK_WRITE, hold, 2);
	nb = new_request(t, 5, 2, TLK_READ, want, 1);
	bl = new_request(t, 5, 3, TLK_READ, want, 1);
	a = acquire(t, h, 0, NONE);
	expect(&a, TLK_GRANTED, 30, NONE);
	a = acquire(t, nb, 0, NONE);
	expect(&a, TLK_PARTIAL, 9, 10);
	a = acquire(t, bl, TLK_BLOCKING, 20); /* waits at 10 */
	expect(&a, TLK_WAITING, 9, 10);
	assert_int_equal(tlk_release_from(t, h, 20, &a), 0); /* drops 30 only */
	expect(&a, TLK_PARTIAL, 10, 30);
	assert_int_equal(events(t, &ev), 0);
	assert_int_equal(tlk_release(t, h), 0);
	/* bl reaches 20, answered PARTIAL (never granted past 20); nb is
	 * untouched. */
	assert_int_equal(events(t, &ev), 1);
	assert_int_equal(ev[0].lock_id, bl);
	expect(&ev[0].answer, TLK_PARTIAL, 19, 20);
	struct tlk_request_info info;
	assert_int_equal(tlk_request_info(t, nb, &info), 0);
	expect(&info.answer, TLK_PARTIAL, 9, 10);
	assert_int_equal(info.held_bytes, 10);
	assert_int_equal(tlk_request_info(t, bl, &info), 0);
	expect(&info.answer, TLK_PARTIAL, 19, 20);
	assert_int_equal(info.upto, NONE);
	/* Asking again extends them. */
	a = acquire(t, nb, 0, NONE);
	expect(&a, TLK_GRANTED, 39, NONE);
	a = acquire(t, bl, 0, NONE);
	expect(&a, TLK_GRANTED, 39, NONE);
	assert_int_equal(tlk_table_check(t), 0);
	tlk_table_destroy(t);
}

/* Partial release at byte granularity, inside a range, and full release. */
static void test_partial_release(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range g[] = { { 0, 10, 100 }, { 20, 10, 200 }, { 40, 10, 300 } };
	struct tlk_request_info info;
	struct tlk_answer a;
	uint64_t id;
	(void)state;

	id = new_request(t, 1, 1, TLK_WRITE, g, 3);
	a = acquire(t, id, 0, NONE);
	expect(&a, TLK_GRANTED, 309, NONE);
	assert_int_equal(tlk_release_from(t, id, 305, &a), 0);
	expect(&a, TLK_PARTIAL, 304, 305);
	assert_int_equal(tlk_release_from(t, id, 250, &a), 0); /* a gap: next is 300 */
	expect(&a, TLK_PARTIAL, 209, 300);
	assert_int_equal(tlk_release_from(t, id, 400, &a), 0); /* nothing above */
	expect(&a, TLK_PARTIAL, 209, 300);
	assert_int_equal(tlk_release_from(t, id, 203, &a), 0);
	expect(&a, TLK_PARTIAL, 202, 203);
	assert_int_equal(tlk_request_info(t, id, &info), 0);
	assert_int_equal(info.held_locks, 2);
	assert_int_equal(info.held_bytes, 13);
	assert_int_equal(tlk_release_from(t, id, 0, &a), 0); /* everything, id stays */
	expect(&a, TLK_PARTIAL, NONE, 100);
	assert_int_equal(tlk_request_info(t, id, &info), 0);
	assert_int_equal(info.held_locks, 0);
	a = acquire(t, id, TLK_BLOCKING, 205);
	expect(&a, TLK_PARTIAL, 204, 205);
	assert_int_equal(tlk_release(t, id), 0);
	assert_int_equal(tlk_request_info(t, id, &info), -ENOENT);
	assert_int_equal(tlk_release(t, id), -ENOENT);
	tlk_table_destroy(t);
}

/* ------------------------------------------------ the brief's scenarios */

/* A blocking grant stops at its final offset although the bytes past it
 * are free. Without that cap: C's round on A (final offset 50) would take
 * up to 100, and C would then wait at 50 on B, where D holds [50,60) and
 * waits at 70 on A, held by C: deadlock. With it, D gets 70 and all finish. */
static void test_blocking_grant_capped(void **state)
{
	struct tlk_table *A = new_table(), *B = new_table();
	const struct tlk_range cA[] = { { 0, 50, 0 }, { 70, 30, 70 } };
	const struct tlk_range cB[] = { { 50, 20, 50 } };
	const struct tlk_range dB[] = { { 50, 10, 50 } };
	const struct tlk_range dA[] = { { 70, 5, 70 } };
	struct tlk_answer a;
	uint64_t c_a, c_b, d_a, d_b;
	(void)state;

	d_b = new_request(B, 1, 2, TLK_WRITE, dB, 1);
	a = acquire(B, d_b, TLK_BLOCKING, 70); /* D: [50,60) on B */
	expect(&a, TLK_GRANTED, 59, NONE);
	c_a = new_request(A, 1, 1, TLK_WRITE, cA, 2);
	a = acquire(A, c_a, TLK_BLOCKING, 50); /* C: up to 50 only */
	expect(&a, TLK_PARTIAL, 49, 70);
	struct tlk_request_info info;
	assert_int_equal(tlk_request_info(A, c_a, &info), 0);
	assert_int_equal(info.held_bytes, 50);
	c_b = new_request(B, 1, 1, TLK_WRITE, cB, 1);
	a = acquire(B, c_b, TLK_BLOCKING, 70); /* C waits at 50 on B */
	expect(&a, TLK_WAITING, NONE, 50);
	d_a = new_request(A, 1, 2, TLK_WRITE, dA, 1);
	a = acquire(A, d_a, TLK_BLOCKING, NONE); /* 70 is free: D completes */
	expect(&a, TLK_GRANTED, 74, NONE);
	/* D does its I/O and releases; C proceeds. */
	assert_int_equal(tlk_release(A, d_a), 0);
	release_wakes_one(B, d_b, c_b, TLK_GRANTED, 69, NONE);
	a = acquire(A, c_a, TLK_BLOCKING, NONE);
	expect(&a, TLK_GRANTED, 99, NONE);
	tlk_table_destroy(A);
	tlk_table_destroy(B);
}

/* Plain FIFO per byte deadlocks: H holds [0,1) and waits at 5; N holds
 * [5,6) and waits at 10 behind the older W; W wants [0,20) and waits at 0
 * behind H. Here N is held back only at the byte W waits at (0), so N
 * gets 10, finishes and releases, then H, then W. */
static void test_fifo_deadlock_avoided(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range w_g[] = { { 0, 20, 0 } };
	const struct tlk_range h_g[] = { { 0, 1, 0 }, { 5, 1, 5 } };
	const struct tlk_range n_g[] = { { 5, 1, 5 }, { 10, 1, 10 } };
	struct tlk_answer a;
	uint64_t w, h, n;
	(void)state;

	w = new_request(t, 1, 1, TLK_WRITE, w_g, 1); /* oldest */
	h = new_request(t, 1, 2, TLK_WRITE, h_g, 2);
	n = new_request(t, 1, 3, TLK_WRITE, n_g, 2);
	a = acquire(t, h, TLK_BLOCKING, 5);
	expect(&a, TLK_PARTIAL, 0, 5);
	a = acquire(t, n, TLK_BLOCKING, 10);
	expect(&a, TLK_PARTIAL, 5, 10);
	a = acquire(t, w, TLK_BLOCKING, NONE);
	expect(&a, TLK_WAITING, NONE, 0);
	a = acquire(t, h, TLK_BLOCKING, NONE);
	expect(&a, TLK_WAITING, 0, 5);
	a = acquire(t, n, TLK_BLOCKING, NONE); /* W wants 10 but waits at 0 */
	expect(&a, TLK_GRANTED, 10, NONE);
	release_wakes_one(t, n, h, TLK_GRANTED, 5, NONE);
	release_wakes_one(t, h, w, TLK_GRANTED, 19, NONE);
	tlk_table_destroy(t);
}

/* A writer is not starved by a stream of readers: younger readers do not
 * take the byte it waits at (blocking or not), and younger nonblocking
 * readers nothing it still wants. Older requests go first. */
static void test_writer_not_starved(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range all[] = { { 0, 100, 0 } };
	const struct tlk_range part[] = { { 0, 10, 0 } };
	const struct tlk_range shifted[] = { { 5, 10, 5 } };
	const struct tlk_event *ev;
	struct tlk_answer a;
	uint64_t r0, r1, w, r2, r3, r4, r5;
	(void)state;

	r0 = new_request(t, 1, 10, TLK_READ, all, 1); /* older than w, idle */
	r1 = new_request(t, 1, 11, TLK_READ, part, 1);
	a = acquire(t, r1, 0, NONE);
	expect(&a, TLK_GRANTED, 9, NONE);
	w = new_request(t, 1, 1, TLK_WRITE, all, 1);
	a = acquire(t, w, TLK_BLOCKING, NONE);
	expect(&a, TLK_WAITING, NONE, 0);

	r2 = new_request(t, 1, 12, TLK_READ, all, 1);
	a = acquire(t, r2, 0, NONE); /* nonblocking: stops where w waits */
	expect(&a, TLK_PARTIAL, NONE, 0);
	a = acquire(t, r2, TLK_BLOCKING, NONE); /* blocking: queues behind w */
	expect(&a, TLK_WAITING, NONE, 0);
	r3 = new_request(t, 1, 13, TLK_READ, shifted, 1);
	a = acquire(t, r3, 0, NONE); /* nonblocking: 5.. is still wanted by w */
	expect(&a, TLK_PARTIAL, NONE, 5);
	r4 = new_request(t, 1, 14, TLK_READ, shifted, 1);
	a = acquire(t, r4, TLK_BLOCKING, NONE); /* blocking: only byte 0 is w's */
	expect(&a, TLK_GRANTED, 14, NONE);
	a = acquire(t, r0, 0, NONE); /* older than w: not held back */
	expect(&a, TLK_GRANTED, 99, NONE);

	assert_int_equal(tlk_release(t, r0), 0);
	assert_int_equal(events(t, &ev), 0);
	assert_int_equal(tlk_release(t, r1), 0); /* w gets [0,5), waits at 5 */
	assert_int_equal(events(t, &ev), 0);
	struct tlk_request_info info;
	assert_int_equal(tlk_request_info(t, w, &info), 0);
	expect(&info.answer, TLK_WAITING, 4, 5);
	/* A new nonblocking reader of [5,15) still gets nothing. */
	r5 = new_request(t, 1, 15, TLK_READ, shifted, 1);
	a = acquire(t, r5, 0, NONE);
	expect(&a, TLK_PARTIAL, NONE, 5);
	release_wakes_one(t, r4, w, TLK_GRANTED, 99, NONE);
	/* r2 waits behind w's locks now; w's release lets it in. */
	release_wakes_one(t, w, r2, TLK_GRANTED, 99, NONE);
	assert_int_equal(tlk_table_check(t), 0);
	tlk_table_destroy(t);
}

/* Cancel, acquire again, release of an owner: events name the parked
 * requests whose wait ended, with their cookies; GONE for the owner's. */
static void test_cancel_and_owner_release(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range g[] = { { 0, 8, 0 } };
	const struct tlk_event *ev;
	struct tlk_answer a;
	uint64_t h1, h2, w1, w2, w3;
	size_t n;
	(void)state;

	h1 = new_request(t, 1, 1, TLK_WRITE, g, 1);
	h2 = new_request(t, 2, 1, TLK_WRITE, g, 1);
	w1 = new_request(t, 1, 2, TLK_WRITE, g, 1);
	w2 = new_request(t, 2, 3, TLK_READ, g, 1);
	w3 = new_request(t, 2, 1, TLK_READ, g, 1); /* owner 1, parked */
	acquire(t, h1, 0, NONE);
	acquire(t, h2, 0, NONE);
	a = acquire(t, w1, TLK_BLOCKING, NONE);
	expect(&a, TLK_WAITING, NONE, 0);
	a = acquire(t, w2, TLK_BLOCKING, 4);
	expect(&a, TLK_WAITING, NONE, 0);
	a = acquire(t, w3, TLK_BLOCKING, NONE);
	expect(&a, TLK_WAITING, NONE, 0);

	/* Cancel keeps the request, unparked. */
	assert_int_equal(tlk_cancel(t, w1, &a), 0);
	expect(&a, TLK_PARTIAL, NONE, 0);
	assert_int_equal(tlk_cancel(t, w1, &a), 0); /* not parked: only answers */
	expect(&a, TLK_PARTIAL, NONE, 0);
	a = acquire(t, w1, TLK_BLOCKING, NONE); /* parks again, same age */
	expect(&a, TLK_WAITING, NONE, 0);

	struct tlk_stats st;
	tlk_table_stats(t, &st);
	assert_int_equal(st.parked, 3);
	assert_int_equal(tlk_release_owner(t, 1, &n), 0);
	assert_int_equal(n, 3);
	n = events(t, &ev);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].lock_id == w3) {
			expect(&ev[i].answer, TLK_GONE, NONE, NONE);
			assert_int_equal(ev[i].owner, 1);
		} else if (ev[i].lock_id == w1) {
			expect(&ev[i].answer, TLK_GRANTED, 7, NONE);
			assert_int_equal(ev[i].object, 1);
			assert_ptr_equal(ev[i].cookie, (void *)(uintptr_t)w1);
		} else {
			assert_int_equal(ev[i].lock_id, w2);
			expect(&ev[i].answer, TLK_PARTIAL, 3, 4);
			assert_int_equal(ev[i].owner, 3);
		}
	}
	assert_int_equal(tlk_release_owner(t, 1, &n), 0); /* nothing left */
	assert_int_equal(n, 0);
	assert_int_equal(tlk_release_owner(t, 99, NULL), 0);
	tlk_table_stats(t, &st);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.parked, 0);
	assert_int_equal(tlk_table_check(t), 0);
	tlk_table_destroy(t);
}

/* -------------------------------------------------- limits and errors */

static void test_malformed(void **state)
{
	struct tlk_table *t = new_table();
	const struct tlk_range ok[] = { { 0, 4, 10 }, { 4, 4, 14 } };
	const struct tlk_range overlap[] = { { 0, 4, 0 }, { 3, 4, 10 } };
	const struct tlk_range logical_back[] = { { 0, 4, 10 }, { 8, 4, 12 } };
	const struct tlk_range empty[] = { { 0, 0, 0 } };
	const struct tlk_range wrap[] = { { UINT64_MAX - 2, 4, 0 } };
	const struct tlk_range wrap_logical[] = { { 0, 4, UINT64_MAX - 1 } };
	const struct tlk_range top[] = { { UINT64_MAX - 4, 4, UINT64_MAX - 4 } };
	struct tlk_answer a;
	uint64_t id;
	(void)state;

	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, overlap, 2, &id), -EINVAL);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, logical_back, 2, &id), -EINVAL);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, empty, 1, &id), -EINVAL);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, wrap, 1, &id), -EINVAL);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, wrap_logical, 1, &id), -EINVAL);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, ok, 0, &id), -EINVAL);
	assert_int_equal(tlk_request_create(t, 1, 1, (enum tlk_mode)3, ok, 2, &id), -EINVAL);
	/* Adjacent ranges are fine; the last byte below UINT64_MAX too. */
	id = new_request(t, 1, 1, TLK_READ, ok, 2);
	a = acquire(t, id, 0, NONE);
	expect(&a, TLK_GRANTED, 17, NONE);
	assert_int_equal(tlk_acquire(t, id, 2, NONE, NULL, &a), -EINVAL);
	assert_int_equal(tlk_acquire(t, id + 1, 0, NONE, NULL, &a), -ENOENT);
	assert_int_equal(tlk_cancel(t, id + 1, &a), -ENOENT);
	assert_int_equal(tlk_release_from(t, id + 1, 0, &a), -ENOENT);
	id = new_request(t, 1, 1, TLK_WRITE, top, 1);
	a = acquire(t, id, 0, NONE);
	expect(&a, TLK_GRANTED, UINT64_MAX - 1, NONE);
	struct tlk_stats st;
	tlk_table_stats(t, &st);
	assert_int_equal(st.requests, 2);
	tlk_table_destroy(t);
}

/* An allocator that fails from the Nth call on, counting what it holds. */
struct failing {
	long calls, fail_at; /* fail_at < 0: never */
	size_t held;
};

static void *failing_alloc(void *ctx, size_t size)
{
	struct failing *f = ctx;
	void *p;

	if (f->fail_at >= 0 && f->calls++ >= f->fail_at)
		return NULL;
	p = malloc(size);
	if (p)
		f->held += size;
	return p;
}

static void failing_free(void *ctx, void *p, size_t size)
{
	struct failing *f = ctx;

	f->held -= size;
	free(p);
}

static void test_limits(void **state)
{
	struct tlk_range g[64];
	struct tlk_config cfg = { { 16, 4, 0 }, NULL };
	struct tlk_table *t;
	struct tlk_answer a;
	struct tlk_stats st;
	uint64_t id;
	(void)state;

	for (int i = 0; i < 64; i++)
		g[i] = (struct tlk_range){ (uint64_t)i * 2, 1, (uint64_t)i * 2 };
	assert_int_equal(tlk_table_create(&cfg, &t), 0);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, g, 17, &id), -E2BIG);
	for (int i = 0; i < 4; i++)
		assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, g, 16, &id), 0);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, g, 1, &id), -ENOMEM);
	assert_int_equal(tlk_release(t, id), 0);
	assert_int_equal(tlk_request_create(t, 1, 1, TLK_READ, g, 1, &id), 0);
	tlk_table_destroy(t);

	/* A memory budget: requests fit until their footprint does not. */
	cfg = (struct tlk_config){ { 0, 0, 64 * 1024 }, NULL };
	assert_int_equal(tlk_table_create(&cfg, &t), 0);
	size_t made = 0;
	int rc;
	while ((rc = tlk_request_create(t, made % 3, made % 5, TLK_WRITE, g, 64, &id)) == 0)
		made++;
	assert_int_equal(rc, -ENOMEM);
	tlk_table_stats(t, &st);
	assert_true(made > 4);
	assert_int_equal(st.requests, made);
	assert_true(st.memory <= 64 * 1024);
	assert_true(made * tlk_request_footprint(64) <= st.memory);
	assert_int_equal(tlk_table_check(t), 0);
	a = acquire(t, 1, 0, NONE);
	expect(&a, TLK_GRANTED, 126, NONE);
	tlk_table_destroy(t);
	assert_int_equal(tlk_request_footprint(SIZE_MAX / 2), SIZE_MAX);
}

/* A call failed for want of memory and left the table as it was (but for
 * a map that may have grown first: memory moves, and is exact). */
static void expect_unchanged(struct tlk_table *t, int rc, const struct tlk_stats *before,
			     const struct failing *f)
{
	struct tlk_stats after;

	assert_int_equal(rc, -ENOMEM);
	tlk_table_stats(t, &after);
	assert_int_equal(after.memory, f->held);
	after.memory = before->memory;
	assert_memory_equal(before, &after, sizeof(after));
	assert_int_equal(tlk_table_check(t), 0);
}

/* Every allocation in create and in a blocking acquire fails in turn: the
 * call says -ENOMEM, and the table is exactly as before. */
static void test_allocation_failures(void **state)
{
	struct failing f = { 0, -1, 0 };
	const struct tlk_alloc alloc = { failing_alloc, failing_free, &f };
	struct tlk_config cfg = { { 0, 0, 0 }, &alloc };
	const struct tlk_range g[] = { { 0, 4, 0 }, { 8, 4, 8 } };
	struct tlk_table *t;
	(void)state;

	f.fail_at = 0;
	assert_int_equal(tlk_table_create(&cfg, &t), -ENOMEM);
	f.fail_at = -1;
	assert_int_equal(tlk_table_create(&cfg, &t), 0);
	for (int round = 0; round < 200; round++) {
		struct tlk_stats before;
		struct tlk_answer a;
		uint64_t id, obj = (uint64_t)round % 7, owner = (uint64_t)round % 11;
		int rc;

		tlk_table_stats(t, &before);
		for (long n = 0;; n++) {
			f.calls = 0;
			f.fail_at = n;
			rc = tlk_request_create(t, obj, owner, round % 3 ? TLK_WRITE : TLK_READ,
						g, 2, &id);
			f.fail_at = -1;
			if (!rc)
				break;
			expect_unchanged(t, rc, &before, &f);
		}
		tlk_table_stats(t, &before);
		for (long n = 0;; n++) {
			f.calls = 0;
			f.fail_at = n;
			rc = tlk_acquire(t, id, TLK_BLOCKING, NONE, NULL, &a);
			f.fail_at = -1;
			if (!rc)
				break;
			expect_unchanged(t, rc, &before, &f);
		}
		if (round % 4 == 3)
			assert_int_equal(tlk_release_owner(t, owner, NULL), 0);
		assert_int_equal(tlk_table_check(t), 0);
	}
	struct tlk_stats st;
	tlk_table_stats(t, &st);
	assert_int_equal(st.memory, f.held);
	tlk_table_destroy(t);
	assert_int_equal(f.held, 0);
}

/* ------------------------------------------- the client protocols (§7.4.1)
 *
 * A file striped over `nserv` servers with `strip`-byte strips; each server
 * keeps one object (the file's slot) in its own table. A client locks a set
 * of logical ranges: it creates one request per server holding its bytes,
 * then runs its protocol, one message per scheduling step:
 *   optimistic round: a nonblocking acquire to every server not done, then
 *     m = min(next) and a partial release from m on every server whose
 *     last > m;
 *   two-phase round: a blocking acquire to the server with min(next), up to
 *     the second smallest next; parked, the client waits for its event;
 *   two-phase = two-phase rounds; one-try = one optimistic round then
 *   two-phase rounds; alt-try = alternate.
 * With all locks held it marks its bytes in a global map (which must show
 * no conflict), holds them a few steps, and releases everywhere. A client
 * may give up waiting (cancel, then try again) or lose its lease (every
 * server drops its owner's requests; it starts over under a new session).
 */
#define SIM_MAX_SERV 5
#define SIM_MAX_CLIENTS 8

enum proto { TWO_PHASE, ONE_TRY, ALT_TRY };
enum phase { P_START, P_OPT, P_OPT_RELEASE, P_TWO_PHASE, P_BLOCKED, P_HOLD, P_RELEASE, P_DONE };

struct sim;

struct client {
	struct sim *sim;
	int index;
	uint64_t session;
	enum proto proto;
	enum tlk_mode mode;
	struct tlk_range *logical; /* the pattern: logical (offset, length) */
	size_t nlogical;
	struct tlk_range *per_server[SIM_MAX_SERV];
	size_t count[SIM_MAX_SERV];
	uint64_t lock[SIM_MAX_SERV]; /* 0: no bytes on that server */
	uint64_t last[SIM_MAX_SERV], next[SIM_MAX_SERV];
	uint64_t upto;  /* of the blocking round in flight */
	int blocked_on; /* server */
	enum phase phase;
	int k;          /* next server in an optimistic round or release */
	uint64_t m;     /* this optimistic round's min(next) */
	int hold;       /* steps left in P_HOLD */
	int ops_left;
	/* what happened */
	long opt_rounds, tp_rounds, partial_releases, cancels, expiries;
};

struct sim {
	struct tlk_table *server[SIM_MAX_SERV];
	int nserv;
	uint64_t strip;
	uint64_t object; /* the file's object handle (same on every server) */
	struct client client[SIM_MAX_CLIENTS];
	int nclients;
	uint16_t *readers; /* per logical byte, while clients hold them */
	uint8_t *writer;
	uint64_t next_session;
	struct rng rng;
	int cancel_pct, expire_permille;
};

static uint64_t sim_below(struct sim *s, uint64_t n)
{
	return below(&s->rng, n);
}

/* Splits the client's logical ranges at strips into per-server requests. */
static void sim_map(struct sim *s, struct client *c)
{
	for (int v = 0; v < s->nserv; v++)
		c->count[v] = 0;
	for (size_t i = 0; i < c->nlogical; i++) {
		uint64_t x = c->logical[i].offset, left = c->logical[i].length;
		while (left) {
			uint64_t strip = x / s->strip, off = x % s->strip;
			uint64_t piece = s->strip - off < left ? s->strip - off : left;
			int v = (int)(strip % (uint64_t)s->nserv);
			struct tlk_range *g = &c->per_server[v][c->count[v]++];
			g->offset = strip / (uint64_t)s->nserv * s->strip + off;
			g->length = piece;
			g->logical = x;
			x += piece;
			left -= piece;
		}
	}
}

static void sim_start(struct sim *s, struct client *c)
{
	for (int v = 0; v < s->nserv; v++) {
		c->lock[v] = 0;
		c->last[v] = c->next[v] = NONE;
		if (!c->count[v])
			continue;
		assert_int_equal(tlk_request_create(s->server[v], s->object, c->session, c->mode,
						    c->per_server[v], c->count[v], &c->lock[v]), 0);
		c->next[v] = c->per_server[v][0].logical;
	}
	c->phase = c->proto == TWO_PHASE ? P_TWO_PHASE : P_OPT;
	c->k = 0;
}

static bool sim_all_held(const struct client *c)
{
	for (int v = 0; v < c->sim->nserv; v++)
		if (c->next[v] != NONE)
			return false;
	return true;
}

static void sim_note(struct client *c, int v, const struct tlk_answer *a)
{
	c->last[v] = a->last_abs_offset;
	c->next[v] = a->next_abs_offset;
}

static void sim_mark(struct sim *s, struct client *c, bool on)
{
	for (size_t i = 0; i < c->nlogical; i++)
		for (uint64_t x = c->logical[i].offset; x < c->logical[i].offset + c->logical[i].length; x++) {
			if (c->mode == TLK_WRITE) {
				if (on)
					assert_true(!s->writer[x] && !s->readers[x]);
				s->writer[x] = on;
			} else {
				if (on)
					assert_true(!s->writer[x]);
				s->readers[x] = (uint16_t)(s->readers[x] + (on ? 1 : -1));
			}
		}
}

/* After a two-phase round's answer. */
static void sim_round_done(struct client *c)
{
	c->tp_rounds++;
	if (sim_all_held(c)) {
		sim_mark(c->sim, c, true);
		c->phase = P_HOLD;
		c->hold = (int)sim_below(c->sim, 4);
	} else {
		c->phase = c->proto == ALT_TRY ? P_OPT : P_TWO_PHASE;
		c->k = 0;
	}
}

/* Events of the last call on server v: wake the clients they name. */
static void sim_events(struct sim *s, int v)
{
	const struct tlk_event *ev;
	size_t n = tlk_events(s->server[v], &ev);

	for (size_t i = 0; i < n; i++) {
		struct client *c = ev[i].cookie;
		assert_int_equal(ev[i].object, s->object);
		if (ev[i].answer.state == TLK_GONE) {
			/* the client whose lease expires, which starts over */
			assert_int_equal(ev[i].owner, c->session);
			assert_int_equal(c->phase, P_BLOCKED);
			continue;
		}
		assert_int_equal(c->phase, P_BLOCKED);
		assert_int_equal(c->blocked_on, v);
		assert_int_equal(ev[i].lock_id, c->lock[v]);
		assert_int_equal(ev[i].owner, c->session);
		sim_note(c, v, &ev[i].answer);
		assert_true(ev[i].answer.next_abs_offset >= c->upto);
		sim_round_done(c);
	}
}

static void sim_two_phase_round(struct sim *s, struct client *c)
{
	int best = -1;
	uint64_t second = NONE;
	struct tlk_answer a;

	for (int v = 0; v < s->nserv; v++) {
		if (c->next[v] == NONE)
			continue;
		if (best < 0 || c->next[v] < c->next[best]) {
			if (best >= 0)
				second = c->next[best];
			best = v;
		} else if (c->next[v] < second) {
			second = c->next[v];
		}
	}
	assert_true(best >= 0);
	c->upto = second;
	assert_int_equal(tlk_acquire(s->server[best], c->lock[best], TLK_BLOCKING, second, c, &a), 0);
	sim_note(c, best, &a);
	sim_events(s, best);
	if (a.state == TLK_WAITING) {
		c->phase = P_BLOCKED;
		c->blocked_on = best;
	} else {
		assert_true(a.next_abs_offset >= second);
		sim_round_done(c);
	}
}

static void sim_expire(struct sim *s, struct client *c)
{
	if (c->phase == P_HOLD || c->phase == P_RELEASE)
		return; /* keep the map simple: expire only while locking */
	for (int v = 0; v < s->nserv; v++) {
		size_t n;
		assert_int_equal(tlk_release_owner(s->server[v], c->session, &n), 0);
		assert_int_equal(n, c->lock[v] ? 1 : 0);
		sim_events(s, v);
	}
	c->expiries++;
	c->session = s->next_session++;
	sim_start(s, c);
}

/* Optimistic releases: give back, one server a step, what lies beyond
 * the lowest point any server would not grant (c->m); then hold if all
 * is held, else go two-phase. */
static void sim_opt_release(struct sim *s, struct client *c)
{
	struct tlk_answer a;

	while (c->k < s->nserv && !(c->m != NONE && c->last[c->k] != NONE && c->last[c->k] > c->m))
		c->k++;
	if (c->k < s->nserv) {
		int v = c->k++;
		assert_int_equal(tlk_release_from(s->server[v], c->lock[v], c->m, &a), 0);
		sim_note(c, v, &a);
		c->partial_releases++;
		sim_events(s, v);
		return;
	}
	if (sim_all_held(c)) {
		sim_mark(s, c, true);
		c->phase = P_HOLD;
		c->hold = (int)sim_below(s, 4);
	} else {
		c->phase = P_TWO_PHASE;
	}
}

/* Optimistic acquires, one server a step, never waiting; when all are
 * asked, go on at once to the releases. */
static void sim_opt(struct sim *s, struct client *c)
{
	struct tlk_answer a;

	while (c->k < s->nserv && c->next[c->k] == NONE)
		c->k++;
	if (c->k < s->nserv) {
		int v = c->k++;
		assert_int_equal(tlk_acquire(s->server[v], c->lock[v], 0, NONE, c, &a), 0);
		assert_int_not_equal(a.state, TLK_WAITING);
		sim_note(c, v, &a);
		sim_events(s, v);
		return;
	}
	c->opt_rounds++;
	c->m = NONE;
	for (int v = 0; v < s->nserv; v++)
		if (c->next[v] < c->m)
			c->m = c->next[v];
	c->phase = P_OPT_RELEASE;
	c->k = 0;
	sim_opt_release(s, c);
}

/* Still waiting: give up now and then, then try again. */
static void sim_blocked(struct sim *s, struct client *c)
{
	struct tlk_answer a;
	int v = c->blocked_on;

	if (sim_below(s, 100) >= (uint64_t)s->cancel_pct)
		return;
	assert_int_equal(tlk_cancel(s->server[v], c->lock[v], &a), 0);
	assert_int_equal(a.state, TLK_PARTIAL);
	sim_note(c, v, &a);
	sim_events(s, v);
	c->cancels++;
	c->phase = P_TWO_PHASE;
}

/* Releases, one server a step; then the next operation or the end. */
static void sim_release(struct sim *s, struct client *c)
{
	while (c->k < s->nserv && !c->lock[c->k])
		c->k++;
	if (c->k < s->nserv) {
		int v = c->k++;
		assert_int_equal(tlk_release(s->server[v], c->lock[v]), 0);
		c->lock[v] = 0;
		sim_events(s, v);
		return;
	}
	c->phase = --c->ops_left > 0 ? P_START : P_DONE;
}

/* Holds the whole range for a few steps, then starts releasing. */
static void sim_hold(struct sim *s, struct client *c)
{
	if (c->hold-- > 0)
		return;
	sim_mark(s, c, false);
	c->phase = P_RELEASE;
	c->k = 0;
	sim_release(s, c);
}

static void sim_step(struct sim *s, struct client *c)
{
	if (c->phase != P_DONE && sim_below(s, 1000) < (uint64_t)s->expire_permille) {
		sim_expire(s, c);
		return;
	}
	switch (c->phase) {
	case P_START:
		sim_start(s, c);
		break;
	case P_OPT:
		sim_opt(s, c);
		break;
	case P_OPT_RELEASE:
		sim_opt_release(s, c);
		break;
	case P_TWO_PHASE:
		sim_two_phase_round(s, c);
		break;
	case P_BLOCKED:
		sim_blocked(s, c);
		break;
	case P_HOLD:
		sim_hold(s, c);
		break;
	case P_RELEASE:
		sim_release(s, c);
		break;
	case P_DONE:
		break;
	}
}

/* Runs every client to the end in a random schedule; fails on a state
 * where nobody can move (a deadlock) or on too many steps (a livelock). */
static void sim_run(struct sim *s)
{
	long steps = 0;

	for (;;) {
		int runnable[SIM_MAX_CLIENTS], n = 0, done = 0, parked = 0;
		for (int i = 0; i < s->nclients; i++) {
			struct client *c = &s->client[i];
			done += c->phase == P_DONE;
			parked += c->phase == P_BLOCKED;
			/* a parked client moves only to give up */
			if (c->phase != P_DONE && (c->phase != P_BLOCKED || s->cancel_pct))
				runnable[n++] = i;
		}
		if (done == s->nclients)
			break;
		/* Every unfinished client parked: only a timeout could end it. */
		if (done + parked == s->nclients) {
			for (int i = 0; i < s->nclients; i++)
				print_message("client %d: phase %d, blocked on %d, next[0] %llu\n", i,
					      s->client[i].phase, s->client[i].blocked_on,
					      (unsigned long long)s->client[i].next[0]);
			fail_msg("deadlock: no client can move");
		}
		sim_step(s, &s->client[runnable[sim_below(s, (uint64_t)n)]]);
		assert_true(++steps < 20000000);
	}
	for (int v = 0; v < s->nserv; v++) {
		struct tlk_stats st;
		assert_int_equal(tlk_table_check(s->server[v]), 0);
		tlk_table_stats(s->server[v], &st);
		assert_int_equal(st.requests, 0);
	}
}

static void sim_init(struct sim *s, uint64_t seed, int nserv, uint64_t strip, int nclients,
		     uint64_t space)
{
	memset(s, 0, sizeof(*s));
	s->readers = calloc(space, sizeof(*s->readers));
	s->writer = calloc(space, sizeof(*s->writer));
	assert_true(s->readers && s->writer);
	s->rng.s = seed;
	s->nserv = nserv;
	s->strip = strip;
	s->object = 0x5107 + seed % 100;
	s->nclients = nclients;
	s->next_session = 1;
	for (int v = 0; v < nserv; v++)
		s->server[v] = new_table();
}

static void sim_client(struct sim *s, int i, enum proto proto, enum tlk_mode mode,
		       struct tlk_range *logical, size_t n, int ops)
{
	struct client *c = &s->client[i];

	c->sim = s;
	c->index = i;
	c->session = s->next_session++;
	c->proto = proto;
	c->mode = mode;
	c->logical = logical;
	c->nlogical = n;
	for (int v = 0; v < s->nserv; v++) {
		size_t most = 0;
		for (size_t j = 0; j < n; j++)
			most += logical[j].length / s->strip + 2;
		c->per_server[v] = calloc(most, sizeof(struct tlk_range));
		assert_non_null(c->per_server[v]);
	}
	sim_map(s, c);
	c->ops_left = ops;
	c->phase = P_START;
}

static void sim_free(struct sim *s)
{
	for (int i = 0; i < s->nclients; i++)
		for (int v = 0; v < s->nserv; v++)
			free(s->client[i].per_server[v]);
	for (int v = 0; v < s->nserv; v++)
		tlk_table_destroy(s->server[v]);
	free(s->readers);
	free(s->writer);
}

/* Random patterns, protocols and modes, with and without cancels and lease
 * expiries. */
static void test_protocols_random(void **state)
{
	long total_tp = 0, total_opt = 0, total_cancel = 0, total_expire = 0;
	(void)state;

	for (uint64_t seed = 1; seed <= 400; seed++) {
		static struct sim s;
		static struct tlk_range pat[SIM_MAX_CLIENTS][24];
		int nserv = 1 + (int)(seed % SIM_MAX_SERV), nclients = 2 + (int)(seed % 7);

		sim_init(&s, seed * 0x9e3779b97f4a7c15ULL, nserv, 1 + seed % 13, nclients, 1024);
		s.cancel_pct = seed % 3 ? 0 : 5;
		s.expire_permille = seed % 4 ? 0 : 3;
		for (int i = 0; i < nclients; i++) {
			size_t n = 0;
			uint64_t x = sim_below(&s, 64);
			while (n < 24 && x < 400) {
				uint64_t len = 1 + sim_below(&s, sim_below(&s, 4) ? 4 : 40);
				pat[i][n++] = (struct tlk_range){ x, len, x };
				x += len + sim_below(&s, 24);
				if (!sim_below(&s, 8))
					break;
			}
			sim_client(&s, i, (enum proto)sim_below(&s, 3),
				   sim_below(&s, 3) ? TLK_WRITE : TLK_READ, pat[i], n,
				   1 + (int)sim_below(&s, 4));
		}
		sim_run(&s);
		for (int i = 0; i < nclients; i++) {
			total_tp += s.client[i].tp_rounds;
			total_opt += s.client[i].opt_rounds;
			total_cancel += s.client[i].cancels;
			total_expire += s.client[i].expiries;
		}
		sim_free(&s);
	}
	print_message("protocols: %ld optimistic rounds, %ld two-phase rounds, %ld cancels, "
		      "%ld lease expiries\n", total_opt, total_tp, total_cancel, total_expire);
	assert_true(total_tp > 1000 && total_opt > 1000 && total_cancel > 10 && total_expire > 10);
}

/* Figs. 7.3-7.6 at test scale: `nc` clients, each `locks` 1-byte locks
 * `spacing` bytes apart, over as many servers with 64 KiB strips; client c
 * starts at c * range * (1 - overlap). */
static void figure_case(enum proto proto, uint64_t spacing, int locks, int nc,
			double overlap, uint64_t seed, long *tp_rounds, long *opt_rounds,
			long *partial_releases)
{
	static struct sim s;
	struct tlk_range *pat[SIM_MAX_CLIENTS];
	uint64_t range = spacing * (uint64_t)locks;

	sim_init(&s, seed, nc, 65536, nc, (uint64_t)nc * range);
	for (int i = 0; i < nc; i++) {
		uint64_t base = (uint64_t)((double)i * (double)range * (1.0 - overlap));
		pat[i] = calloc((size_t)locks, sizeof(struct tlk_range));
		for (int j = 0; j < locks; j++)
			pat[i][j] = (struct tlk_range){ base + (uint64_t)j * spacing, 1,
							base + (uint64_t)j * spacing };
		sim_client(&s, i, proto, TLK_WRITE, pat[i], (size_t)locks, 1);
	}
	sim_run(&s);
	*tp_rounds = *opt_rounds = *partial_releases = 0;
	for (int i = 0; i < nc; i++) {
		*tp_rounds += s.client[i].tp_rounds;
		*opt_rounds += s.client[i].opt_rounds;
		*partial_releases += s.client[i].partial_releases;
		free(pat[i]);
	}
	sim_free(&s);
}

static void test_figures_without_contention(void **state)
{
	long tp, opt, rel;
	(void)state;

	/* Fig. 7.3 (64 B apart): 2048 locks span 2 strips. One-try gets all
	 * in one optimistic round; two-phase needs a round per strip: 1024
	 * locks per server visit. */
	figure_case(ONE_TRY, 64, 2048, 4, 0.0, 11, &tp, &opt, &rel);
	assert_int_equal(opt, 4);
	assert_int_equal(tp, 0);
	assert_int_equal(rel, 0);
	figure_case(TWO_PHASE, 64, 2048, 4, 0.0, 12, &tp, &opt, &rel);
	assert_int_equal(tp, 4 * 2);
	assert_int_equal(opt, 0);
	/* Fig. 7.4 (4096 B apart): 16 locks per strip, so two-phase visits a
	 * server 256 / 16 = 16 times; one-try still one round. */
	figure_case(TWO_PHASE, 4096, 256, 4, 0.0, 13, &tp, &opt, &rel);
	assert_int_equal(tp, 4 * 16);
	figure_case(ALT_TRY, 4096, 256, 4, 0.0, 14, &tp, &opt, &rel);
	assert_int_equal(opt, 4);
	assert_int_equal(tp, 0);
}

/* Figs. 7.5/7.6: overlap 0, 25, 50, 75 and 100 %, every protocol; all
 * finish, exclusively. */
static void test_figures_with_contention(void **state)
{
	static const double overlaps[] = { 0.0, 0.25, 0.5, 0.75, 1.0 };
	long contended_tp = 0, contended_rel = 0;
	(void)state;

	for (int p = 0; p < 3; p++)
		for (int o = 0; o < 5; o++)
			for (int sp = 0; sp < 2; sp++) {
				long tp, opt, rel;
				figure_case((enum proto)p, sp ? 4096 : 64, sp ? 64 : 512, 4,
					    overlaps[o], (uint64_t)(100 + p * 10 + o * 2 + sp),
					    &tp, &opt, &rel);
				if (overlaps[o] > 0.0 && p != TWO_PHASE) {
					contended_tp += tp;
					contended_rel += rel;
				}
			}
	/* overlap made optimistic rounds fall short and release */
	assert_true(contended_tp > 0 && contended_rel > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dissertation_7_3),
		cmocka_unit_test(test_shared_readers_single_writer),
		cmocka_unit_test(test_nonblocking_waiters_untouched),
		cmocka_unit_test(test_partial_release),
		cmocka_unit_test(test_blocking_grant_capped),
		cmocka_unit_test(test_fifo_deadlock_avoided),
		cmocka_unit_test(test_writer_not_starved),
		cmocka_unit_test(test_cancel_and_owner_release),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_allocation_failures),
		cmocka_unit_test(test_protocols_random),
		cmocka_unit_test(test_figures_without_contention),
		cmocka_unit_test(test_figures_with_contention),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
