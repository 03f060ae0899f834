/*
 * test_mds_lease.c - the metadata daemon's name lease bookkeeping
 * (server/mds/mds_lease.h): who is told of a change, the wake-up of a
 * parked WATCH, and every bound (per session, changes waiting, all
 * sessions) ending in "forget everything", never in more memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "mds_lease.h"

struct woken {
	unsigned n;
	uint64_t session;
	void *parked;
};

static void wake(void *arg, uint64_t session, void *parked)
{
	struct woken *w = arg;

	w->n++;
	w->session = session;
	w->parked = parked;
}

/* What session has to be told: n changes into out (up to 8), *all;
 * acknowledged, as its next WATCH does. */
static uint32_t told(struct mds_leases *t, uint64_t session, uint64_t out[8], int *all)
{
	uint64_t seq;
	uint32_t n;

	(void)mds_leases_take(t, session, out, 8, &n, all, &seq);
	(void)mds_leases_acked(t, session, seq, 0);
	return n;
}

/* A watcher whose first answer (forget all: it is new) was taken. */
static void watching(struct mds_leases *t, uint64_t session)
{
	uint64_t out[8];
	int all;

	assert_int_equal(mds_leases_watch(t, session, 0), 0);
	assert_true(mds_leases_news(t, session));
	assert_int_equal(told(t, session, out, &all), 0);
	assert_true(all);
	assert_false(mds_leases_news(t, session));
}

static void test_holders_but_the_changer_are_told(void **state)
{
	struct woken w = { 0 };
	struct mds_leases *t = mds_leases_new(1000, 100, wake, &w);
	uint64_t h[3] = { 11, 12, 13 }, out[8];
	int all;

	(void)state;
	assert_int_equal(mds_leases_grant(t, 1, h, 3), 0); /* not watching */
	watching(t, 1);
	watching(t, 2);
	assert_int_equal(mds_leases_grant(t, 1, h, 3), 1);
	assert_int_equal(mds_leases_grant(t, 2, h, 2), 1);
	assert_int_equal(mds_leases_held(t), 5);
	mds_leases_break(t, 12, 2);   /* 2's own change: 1 alone is told */
	assert_int_equal(told(t, 2, out, &all), 0);
	assert_int_equal(told(t, 1, out, &all), 1);
	assert_int_equal(out[0], 12);
	assert_false(all);
	mds_leases_break(t, 12, 0);   /* 2 still held it: now told */
	assert_int_equal(told(t, 2, out, &all), 1);
	mds_leases_break(t, 12, 0);   /* broken leases are gone: nobody */
	assert_int_equal(told(t, 1, out, &all) + told(t, 2, out, &all), 0);
	mds_leases_break(t, 99, 0);   /* never held */
	assert_int_equal(told(t, 1, out, &all), 0);
	assert_int_equal(mds_leases_held(t), 3);
	assert_int_equal(w.n, 0);     /* nobody parked */
	mds_leases_free(t);
}

static void test_parked_watch_woken(void **state)
{
	struct woken w = { 0 };
	struct mds_leases *t = mds_leases_new(1000, 100, wake, &w);
	uint64_t h = 7;
	int token;

	(void)state;
	watching(t, 5);
	assert_int_equal(mds_leases_grant(t, 5, &h, 1), 1);
	assert_null(mds_leases_park(t, 5, &token));
	assert_ptr_equal(mds_leases_parked(t, 5), &token);
	mds_leases_break(t, 7, 0);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.session, 5);
	assert_ptr_equal(w.parked, &token);
	/* a second park hands back the first, for its answer */
	assert_ptr_equal(mds_leases_park(t, 5, NULL), &token);
	/* no watcher: nothing to park for */
	assert_ptr_equal(mds_leases_park(t, 6, &token), &token);
	mds_leases_free(t);
}

static void test_per_session_bound_forgets_all(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 10, NULL, NULL);
	uint64_t h[11], out[8];
	int all;

	(void)state;
	for (int i = 0; i < 11; i++)
		h[i] = 100 + (uint64_t)i;
	watching(t, 1);
	assert_int_equal(mds_leases_grant(t, 1, h, 10), 1);
	assert_int_equal(mds_leases_grant(t, 1, h + 10, 1), 0);
	assert_int_equal(mds_leases_held(t), 0);
	assert_int_equal(told(t, 1, out, &all), 0);
	assert_true(all);
	/* granted again once it was told */
	assert_int_equal(mds_leases_grant(t, 1, h, 1), 1);
	mds_leases_free(t);
}

static void test_changes_bound_forgets_all(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 1u << 16, NULL, NULL);
	uint64_t h, out[8];
	int all;

	(void)state;
	watching(t, 1);
	for (h = 1; h <= MDS_LEASE_CHANGES + 1; h++)
		assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	for (h = 1; h <= MDS_LEASE_CHANGES + 1; h++)
		mds_leases_break(t, h, 0);
	assert_int_equal(told(t, 1, out, &all), 0);
	assert_true(all);
	assert_int_equal(mds_leases_held(t), 0);
	mds_leases_free(t);
}

static void test_sets_grow_and_shrink(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 1u << 20, NULL, NULL);
	uint64_t h, out[8];
	int all;

	(void)state;
	watching(t, 1);
	for (h = 1; h <= 5000; h++)
		assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	assert_int_equal(mds_leases_held(t), 5000);
	/* every other one broken, each told (in batches), the rest still held */
	for (h = 2; h <= 5000; h += 2) {
		mds_leases_break(t, h, 0);
		assert_int_equal(told(t, 1, out, &all), 1);
		assert_int_equal(out[0], h);
	}
	assert_int_equal(mds_leases_held(t), 2500);
	for (h = 1; h <= 5000; h += 2) {
		mds_leases_break(t, h, 0);
		assert_int_equal(told(t, 1, out, &all), 1);
	}
	assert_int_equal(mds_leases_held(t), 0);
	mds_leases_free(t);
}

static void test_idle_watchers_dropped(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 100, NULL, NULL);
	uint64_t h = 3;
	int token;

	(void)state;
	assert_int_equal(mds_leases_watch(t, 1, 10.0), 0);
	assert_int_equal(mds_leases_watch(t, 2, 10.0), 0);
	mds_leases_park(t, 2, &token);
	mds_leases_expire(t, 11.5);
	assert_int_equal(mds_leases_watchers(t), 2);
	mds_leases_expire(t, 12.5);   /* two leases: 1 goes, parked 2 stays */
	assert_int_equal(mds_leases_watchers(t), 1);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 0);
	mds_leases_session_end(t, 2);
	assert_int_equal(mds_leases_watchers(t), 0);
	assert_true(mds_leases_news(t, 2));   /* gone: answered "all" */
	mds_leases_free(t);
}

/* An answer not acknowledged (lost on the way, or its WATCH given up) is
 * carried again; an acknowledgement of an older answer drops nothing. */
static void test_unacknowledged_told_again(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 100, NULL, NULL);
	uint64_t h = 21, out[8], seq1, seq2;
	uint32_t n;
	int all;

	(void)state;
	watching(t, 1);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	mds_leases_break(t, h, 2);
	assert_true(mds_leases_news(t, 1));
	assert_true(mds_leases_take(t, 1, out, 8, &n, &all, &seq1));
	assert_int_equal(n, 1);
	assert_true(mds_leases_news(t, 1));  /* not acknowledged yet */
	assert_true(mds_leases_take(t, 1, out, 8, &n, &all, &seq2));
	assert_int_equal(n, 1);
	assert_int_equal(out[0], h);
	assert_true(seq2 > seq1);
	(void)mds_leases_acked(t, 1, seq1, 0);  /* the older answer */
	assert_true(mds_leases_news(t, 1));
	(void)mds_leases_acked(t, 1, seq2, 0);
	assert_false(mds_leases_news(t, 1));
	mds_leases_free(t);
}

/* The changer's replies wait until every holder acknowledged the answer
 * that told it; the holder's own replies and a change nobody held wait
 * for nothing. */
static void test_changer_waits_for_holders(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 100, NULL, NULL);
	uint64_t h[2] = { 31, 32 }, out[8], seq, need;
	uint32_t n;
	int all;

	(void)state;
	watching(t, 1);
	watching(t, 3);
	assert_int_equal(mds_leases_grant(t, 1, h, 2), 1);
	assert_int_equal(mds_leases_grant(t, 3, h, 1), 1);
	assert_int_equal(mds_leases_floor(t), UINT64_MAX);
	mds_leases_break(t, 99, 2);  /* held by nobody */
	assert_int_equal(mds_leases_need(t, 2), 0);
	mds_leases_break(t, 31, 2);  /* session 2 (not a watcher) tells 1 and 3 */
	need = mds_leases_need(t, 2);
	assert_true(need > 0);
	assert_true(mds_leases_floor(t) <= need);
	assert_int_equal(mds_leases_need(t, 1), 0);
	assert_int_equal(mds_leases_need(t, 3), 0);
	(void)mds_leases_take(t, 1, out, 8, &n, &all, &seq);
	assert_int_equal(mds_leases_need(t, 2), need); /* sent is not acknowledged */
	assert_int_equal(mds_leases_acked(t, 1, seq, 0), 0); /* 3 has not: floor stays */
	assert_int_equal(mds_leases_need(t, 2), need);
	(void)mds_leases_take(t, 3, out, 8, &n, &all, &seq);
	assert_int_equal(mds_leases_acked(t, 3, seq, 0), 1);
	assert_int_equal(mds_leases_need(t, 2), 0);
	assert_int_equal(mds_leases_floor(t), UINT64_MAX);
	/* its own change: nobody else held 32 */
	mds_leases_break(t, 32, 1);
	assert_int_equal(mds_leases_need(t, 1), 0);
	mds_leases_free(t);
}

/* A holder that never acknowledges (dead, cut off) holds the changer up
 * for a lease from when a tick first saw the news, no longer; one whose
 * session ends, not at all. */
static void test_holder_silent_lapses(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 100, NULL, NULL);
	uint64_t h = 41;

	(void)state;
	watching(t, 1);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	mds_leases_break(t, h, 2);
	assert_true(mds_leases_need(t, 2) > 0);
	assert_int_equal(mds_leases_lapse(t, 10.0), 0);
	assert_int_equal(mds_leases_lapse(t, 10.9), 0);
	assert_true(mds_leases_need(t, 2) > 0);
	assert_int_equal(mds_leases_lapse(t, 11.1), 1);
	assert_int_equal(mds_leases_need(t, 2), 0);
	/* still told at its next WATCH */
	assert_true(mds_leases_news(t, 1));
	watching(t, 4);
	assert_int_equal(mds_leases_grant(t, 4, &h, 1), 1);
	mds_leases_break(t, h, 2);
	assert_true(mds_leases_need(t, 2) > 0);
	mds_leases_session_end(t, 4);
	assert_int_equal(mds_leases_need(t, 2), 0);
	mds_leases_free(t);
}

/* A holder that lets news lapse, again and again (stopped, or hostile:
 * it would hold up every change to what it looked up, one lease each):
 * barred at the first lapse, it holds and is granted nothing for 2
 * leases, so others' changes do not wait for it; it is told to forget
 * everything. Silent again after the bar, 4 leases. A holder that
 * answers is never barred. */
static void test_silent_holder_barred(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 100, NULL, NULL);
	uint64_t h = 61, out[8];
	int all;

	(void)state;
	watching(t, 1);
	watching(t, 3);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	assert_int_equal(mds_leases_grant(t, 3, &h, 1), 1);
	mds_leases_break(t, h, 2);
	assert_true(mds_leases_need(t, 2) > 0);
	assert_int_equal(told(t, 3, out, &all), 1);  /* 3 answers at once */
	assert_int_equal(mds_leases_lapse(t, 10.0), 0);
	assert_false(mds_leases_barred(t, 1));
	assert_int_equal(mds_leases_lapse(t, 11.1), 1);
	assert_true(mds_leases_barred(t, 1));
	assert_false(mds_leases_barred(t, 3));
	assert_int_equal(mds_leases_need(t, 2), 0);
	assert_int_equal(mds_leases_held(t), 0);
	/* barred: nothing granted, so a change waits for nobody */
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 0);
	mds_leases_break(t, h, 2);
	assert_int_equal(mds_leases_need(t, 2), 0);
	assert_int_equal(mds_leases_lapse(t, 13.0), 0);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 0);
	/* it answers (forgetting everything), the bar ends: granted again */
	assert_int_equal(told(t, 1, out, &all), 0);
	assert_true(all);
	(void)mds_leases_lapse(t, 13.2);
	assert_false(mds_leases_barred(t, 1));
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	/* silent again: one more lease of waiting, then a bar of 4 */
	mds_leases_break(t, h, 2);
	assert_true(mds_leases_need(t, 2) > 0);
	(void)mds_leases_lapse(t, 13.3);
	assert_true(mds_leases_need(t, 2) > 0);
	(void)mds_leases_lapse(t, 14.4);
	assert_int_equal(mds_leases_need(t, 2), 0);
	(void)mds_leases_lapse(t, 18.3);
	assert_true(mds_leases_barred(t, 1));
	(void)mds_leases_lapse(t, 18.5);
	assert_false(mds_leases_barred(t, 1));
	/* 3, which answered each time, was never barred */
	assert_int_equal(mds_leases_grant(t, 3, &h, 1), 1);
	mds_leases_free(t);
}

/* Told to forget everything: nothing is granted until an answer saying
 * so is made; from then on grants are kept, before its acknowledgement
 * (the client refuses replies to what it asked before it forgot). */
static void test_grants_after_forget_told(void **state)
{
	struct mds_leases *t = mds_leases_new(1000, 100, NULL, NULL);
	uint64_t h = 51, out[8], seq;
	uint32_t n;
	int all;

	(void)state;
	assert_int_equal(mds_leases_watch(t, 1, 0), 0);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 0);
	assert_true(mds_leases_take(t, 1, out, 8, &n, &all, &seq));
	assert_true(all);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 1);
	assert_true(mds_leases_news(t, 1));   /* still to be acknowledged */
	(void)mds_leases_acked(t, 1, seq, 0);
	assert_false(mds_leases_news(t, 1));
	assert_int_equal(mds_leases_held(t), 1);
	mds_leases_free(t);
}

static void test_off(void **state)
{
	struct mds_leases *t = mds_leases_new(0, 100, NULL, NULL);
	uint64_t h = 1;

	(void)state;
	assert_int_equal(mds_leases_watch(t, 1, 0), -EOPNOTSUPP);
	assert_int_equal(mds_leases_watch(NULL, 1, 0), -EOPNOTSUPP);
	assert_int_equal(mds_leases_grant(t, 1, &h, 1), 0);
	mds_leases_break(NULL, 1, 0);
	mds_leases_free(t);
	/* session 0: an in-process caller, who cannot watch */
	t = mds_leases_new(1000, 1, NULL, NULL);
	assert_int_equal(mds_leases_watch(t, 0, 0), -EOPNOTSUPP);
	mds_leases_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holders_but_the_changer_are_told),
		cmocka_unit_test(test_parked_watch_woken),
		cmocka_unit_test(test_per_session_bound_forgets_all),
		cmocka_unit_test(test_changes_bound_forgets_all),
		cmocka_unit_test(test_sets_grow_and_shrink),
		cmocka_unit_test(test_idle_watchers_dropped),
		cmocka_unit_test(test_unacknowledged_told_again),
		cmocka_unit_test(test_changer_waits_for_holders),
		cmocka_unit_test(test_holder_silent_lapses),
		cmocka_unit_test(test_silent_holder_barred),
		cmocka_unit_test(test_grants_after_forget_told),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
