/*
 * test_mds_size.c - the metadata daemon's table of known sizes
 * (server/mds/mds_size.h): what makes a size known (a report with the
 * stat's token, a lone writer's close), everything that forgets it (an
 * open for writing, a second writer, a renewal, a truncate, a restart's
 * quiet time), tokens of another incarnation or guessed, the writer
 * bound, and eviction (least recently used; an entry holding writers
 * passed over, or the whole table made quiet).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mds_size.h"

#define Q 1000 /* quiet time (a capability's lifetime), ns */
#define S 0x5e55 /* the writers' session, unless a test says otherwise */

static const struct mds_size_view SEEN = { 1, 12345, 24, 777, 0 };

/* The table after its quiet start. */
static struct mds_sizes *fresh(uint32_t n)
{
	struct mds_sizes *t = mds_sizes_new(n, Q, 0);

	assert_non_null(t);
	return t;
}

static struct mds_size_view stat_of(struct mds_sizes *t, uint64_t file, int64_t now)
{
	struct mds_size_view v;

	mds_sizes_stat(t, file, now, &v);
	return v;
}

static void test_report_then_known(void **state)
{
	struct mds_sizes *t = fresh(16);
	struct mds_size_view v;

	(void)state;
	v = stat_of(t, 7, 10); /* before the quiet time: no token */
	assert_false(v.known);
	assert_int_equal(v.token, 0);
	v = stat_of(t, 7, Q);
	assert_false(v.known);
	assert_int_not_equal(v.token, 0);
	assert_int_equal(mds_sizes_report(t, 7, v.token ^ 1, Q, &SEEN), -ESTALE);
	assert_int_equal(mds_sizes_report(t, 7, v.token, Q, &SEEN), 0);
	/* one report per token */
	assert_int_equal(mds_sizes_report(t, 7, v.token, Q, &SEEN), -ESTALE);
	v = stat_of(t, 7, Q);
	assert_true(v.known);
	assert_int_equal(v.size, 12345);
	assert_int_equal(v.blocks, 24);
	assert_int_equal(v.data_mtime_ns, 777);
	mds_sizes_free(t);
}

/* An open for writing between the stat and its report: refused. */
static void test_open_between(void **state)
{
	struct mds_sizes *t = fresh(16);
	struct mds_size_view v = stat_of(t, 7, Q);
	uint64_t w;

	(void)state;
	w = mds_sizes_writer_open(t, 7, S, Q);
	assert_int_not_equal(w, 0);
	assert_int_equal(mds_sizes_report(t, 7, v.token, Q, &SEEN), -ESTALE);
	v = stat_of(t, 7, Q);
	assert_false(v.known);
	assert_int_equal(v.token, 0); /* a writer: nothing to report */
	mds_sizes_writer_close(t, 7, w, S, NULL, Q);
	v = stat_of(t, 7, Q);
	assert_false(v.known);
	assert_int_not_equal(v.token, 0);
	mds_sizes_free(t);
}

/* A lone writer's close makes the size known; two writers' do not, nor a
 * close with a token of another incarnation. */
static void test_close_sizes(void **state)
{
	struct mds_sizes *t = fresh(16);
	uint64_t a, b;

	(void)state;
	a = mds_sizes_writer_open(t, 1, S, Q);
	mds_sizes_writer_close(t, 1, a, S, &SEEN, Q);
	assert_true(stat_of(t, 1, Q).known);

	a = mds_sizes_writer_open(t, 2, S, Q);
	b = mds_sizes_writer_open(t, 2, S, Q);
	mds_sizes_writer_close(t, 2, b, S, &SEEN, Q);
	mds_sizes_writer_close(t, 2, a, S, &SEEN, Q);
	assert_false(stat_of(t, 2, Q).known);

	a = mds_sizes_writer_open(t, 3, S, Q);
	mds_sizes_writer_close(t, 3, a ^ 1, S, &SEEN, Q); /* not counted out */
	assert_false(stat_of(t, 3, Q).known);
	assert_int_equal(stat_of(t, 3, Q).token, 0);
	mds_sizes_free(t);
}

/* A renewal may be an uncounted writer's: nothing is taken until its
 * capability expires; a truncate forgets. */
static void test_renewal_and_forget(void **state)
{
	struct mds_sizes *t = fresh(16);
	struct mds_size_view v;
	uint64_t a;

	(void)state;
	mds_sizes_renewed(t, 4, 5 * Q, Q);
	a = mds_sizes_writer_open(t, 4, S, Q);
	mds_sizes_writer_close(t, 4, a, S, &SEEN, 2 * Q);
	assert_false(stat_of(t, 4, 2 * Q).known);
	assert_int_equal(stat_of(t, 4, 2 * Q).token, 0);
	v = stat_of(t, 4, 5 * Q);
	assert_int_equal(mds_sizes_report(t, 4, v.token, 5 * Q, &SEEN), 0);
	assert_true(stat_of(t, 4, 5 * Q).known);
	mds_sizes_forget(t, 4);
	assert_false(stat_of(t, 4, 5 * Q).known);
	mds_sizes_free(t);
}

/* Counted opens stop at the bound: such a file is never known again. */
static void test_writer_bound(void **state)
{
	struct mds_sizes *t = fresh(4);
	uint64_t w = 0;

	(void)state;
	for (uint32_t i = 0; i < MDS_SIZE_MAX_WRITERS; i++)
		w = mds_sizes_writer_open(t, 9, S, Q);
	assert_int_not_equal(w, 0);
	assert_int_equal(mds_sizes_writer_open(t, 9, S, Q), 0);
	for (uint32_t i = 0; i < 3; i++)
		mds_sizes_writer_close(t, 9, w, S, &SEEN, Q);
	assert_int_equal(stat_of(t, 9, Q).token, 0);
	mds_sizes_free(t);
}

/* Full: the least recently used goes; a writer's entry is passed over,
 * and when only writers' remain, one goes and the table is quiet. */
static void test_eviction(void **state)
{
	struct mds_sizes *t = fresh(4);
	struct mds_size_view v;
	uint64_t w;

	(void)state;
	for (uint64_t f = 1; f <= 4; f++) {
		v = stat_of(t, f, Q);
		assert_int_equal(mds_sizes_report(t, f, v.token, Q, &SEEN), 0);
	}
	assert_int_equal(mds_sizes_count(t), 4);
	(void)stat_of(t, 1, Q);             /* 1 is recent now: 2 goes */
	(void)stat_of(t, 5, Q);
	assert_int_equal(mds_sizes_count(t), 4);
	assert_true(stat_of(t, 1, Q).known);
	assert_false(stat_of(t, 2, Q).known); /* (made again, unknown; 3 went) */
	for (uint64_t f = 10; f < 14; f++)
		w = mds_sizes_writer_open(t, f, S, Q);
	(void)w;
	v = stat_of(t, 20, Q);               /* only writers: one goes, quiet */
	assert_int_equal(v.token, 0);
	v = stat_of(t, 20, 2 * Q);
	assert_int_not_equal(v.token, 0);
	mds_sizes_free(t);
}

static void test_hostile_inputs(void **state)
{
	struct mds_sizes *t = fresh(4);

	(void)state;
	assert_int_equal(mds_sizes_report(t, 0, 1, Q, &SEEN), -ESTALE);
	assert_int_equal(mds_sizes_report(t, 99, 0, Q, &SEEN), -ESTALE);
	assert_int_equal(mds_sizes_report(t, 99, 5, Q, &SEEN), -ESTALE);
	mds_sizes_writer_close(t, 99, 5, S, &SEEN, Q);
	mds_sizes_writer_close(t, 0, 0, S, NULL, Q);
	mds_sizes_forget(t, 99);
	mds_sizes_free(t);
	/* without a table every call is a no-op: unknown */
	mds_sizes_renewed(NULL, 1, 1, 1);
	assert_int_equal(mds_sizes_writer_open(NULL, 1, S, 1), 0);
	assert_int_equal(mds_sizes_session_end(NULL, S, 1), 0);
	assert_false(stat_of(NULL, 1, Q).known);
	assert_null(mds_sizes_new(0, Q, 0));
}

/* A session that ends holding counted opens (its client died): the
 * file's writers are counted no more, its closes of before count
 * nothing, no size is taken for a capability's lifetime, and then a
 * report or a lone writer makes it known again, without a restart. Other
 * sessions' ends, or one that closed all it opened, change nothing. */
static void test_session_end(void **state)
{
	struct mds_sizes *t = fresh(16);
	struct mds_size_view v;
	uint64_t dead, alive, late;

	(void)state;
	dead = mds_sizes_writer_open(t, 5, 0xdead, Q);
	alive = mds_sizes_writer_open(t, 5, 0xa11e, Q);
	assert_int_not_equal(dead, 0);
	assert_int_equal(mds_sizes_session_end(t, 0xbeef, Q), 0); /* holds nothing */
	assert_int_equal(mds_sizes_session_end(t, 0, Q), 0);
	assert_int_equal(mds_sizes_session_end(t, 0xdead, 2 * Q), 1);
	assert_int_equal(mds_sizes_session_end(t, 0xdead, 2 * Q), 0); /* once */
	/* the living writer's close is of the old incarnation: nothing */
	mds_sizes_writer_close(t, 5, alive, 0xa11e, &SEEN, 2 * Q);
	v = stat_of(t, 5, 2 * Q);
	assert_false(v.known);
	assert_int_equal(v.token, 0); /* quiet: its capability may still run */
	v = stat_of(t, 5, 3 * Q);
	assert_false(v.known);
	assert_int_not_equal(v.token, 0);
	assert_int_equal(mds_sizes_report(t, 5, v.token, 3 * Q, &SEEN), 0);
	assert_true(stat_of(t, 5, 3 * Q).known);

	/* a lone writer whose session ends after closing: nothing to do */
	late = mds_sizes_writer_open(t, 6, 0xdead, 3 * Q);
	mds_sizes_writer_close(t, 6, late, 0xdead, &SEEN, 3 * Q);
	assert_int_equal(mds_sizes_session_end(t, 0xdead, 3 * Q), 0);
	assert_true(stat_of(t, 6, 3 * Q).known);

	/* opens by more sessions than an entry names: the fifth's end is not
	 * seen, the first's is */
	for (uint64_t k = 1; k <= MDS_SIZE_SESSIONS + 1; k++)
		assert_int_not_equal(mds_sizes_writer_open(t, 8, k, 3 * Q), 0);
	assert_int_equal(mds_sizes_session_end(t, MDS_SIZE_SESSIONS + 1, 3 * Q), 0);
	assert_int_equal(mds_sizes_session_end(t, 1, 3 * Q), 1);
	mds_sizes_free(t);
}

/* A lone writer that changed nothing: the size known before its open
 * stands again at its close, with no storage daemon asked. Not when
 * another writer came meanwhile, a truncate, or nothing was known. */
static void test_unwritten_close(void **state)
{
	struct mds_sizes *t = fresh(16);
	struct mds_size_view v;
	uint64_t w, w2;

	(void)state;
	v = stat_of(t, 3, Q);
	assert_int_equal(mds_sizes_report(t, 3, v.token, Q, &SEEN), 0);
	w = mds_sizes_writer_open(t, 3, S, Q);
	assert_false(stat_of(t, 3, Q).known); /* a writer: unknown meanwhile */
	mds_sizes_writer_close_unwritten(t, 3, w, S, Q);
	v = stat_of(t, 3, Q);
	assert_true(v.known);
	assert_int_equal(v.size, SEEN.size);
	assert_int_equal(v.data_mtime_ns, SEEN.data_mtime_ns);

	/* a second writer meanwhile: unknown after both close */
	w = mds_sizes_writer_open(t, 3, S, Q);
	w2 = mds_sizes_writer_open(t, 3, S + 1, Q);
	mds_sizes_writer_close_unwritten(t, 3, w2, S + 1, Q);
	mds_sizes_writer_close_unwritten(t, 3, w, S, Q);
	assert_false(stat_of(t, 3, Q).known);

	/* known again, then a truncate during the open */
	v = stat_of(t, 3, Q);
	assert_int_equal(mds_sizes_report(t, 3, v.token, Q, &SEEN), 0);
	w = mds_sizes_writer_open(t, 3, S, Q);
	mds_sizes_forget(t, 3);
	mds_sizes_writer_close_unwritten(t, 3, w, S, Q);
	assert_false(stat_of(t, 3, Q).known);

	/* nothing known before the open: nothing after */
	w = mds_sizes_writer_open(t, 4, S, Q);
	mds_sizes_writer_close_unwritten(t, 4, w, S, Q);
	assert_false(stat_of(t, 4, Q).known);
	/* a forged token counts nothing and restores nothing */
	v = stat_of(t, 4, Q);
	assert_int_equal(mds_sizes_report(t, 4, v.token, Q, &SEEN), 0);
	w = mds_sizes_writer_open(t, 4, S, Q);
	mds_sizes_writer_close_unwritten(t, 4, w ^ 1, S, Q);
	assert_false(stat_of(t, 4, Q).known);
	mds_sizes_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_then_known),
		cmocka_unit_test(test_open_between),
		cmocka_unit_test(test_close_sizes),
		cmocka_unit_test(test_renewal_and_forget),
		cmocka_unit_test(test_writer_bound),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_hostile_inputs),
		cmocka_unit_test(test_session_end),
		cmocka_unit_test(test_unwritten_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
