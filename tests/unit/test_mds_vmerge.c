/*
 * test_mds_vmerge.c - the version server's merger (server/mds/mds_vmerge.h):
 * its due rule (pure: idle time, commit threshold, a half-full log, the
 * wait after a failed or held round) and the scan that finds, after a
 * start, the files whose unmerged commits are in the store
 * (mds_versions_next_unmerged, over a real LevelDB store). The merges
 * themselves run against real daemons: tests/integ/test_vmerge.c.
 */
#include "mds_store_fx.h"

#include "cap.h"
#include "mds_version.h"
#include "mds_vmerge.h"

#define MS 1000000ull
#define SA 0xa11ceull
#define T(id, io) ((uint64_t)(id) << 32 | (io))

static const struct cap_key KEY = { { 9, 8, 7, 6 } };
static const struct mds_vmerge_rule RULE = { 10000 * MS, 2048 };

/* One case of the rule: what the merger knows (times in ms) and the
 * answer wanted. */
struct due_case {
	uint32_t unmerged;
	uint64_t last_ms;
	int half;
	uint64_t wait_ms;
	uint64_t now_ms;
	enum mds_vmerge_why want;
	int dead;                   /* writer ID#s ended */
};

#define NOT MDS_VMERGE_NOT_DUE
#define IDLE MDS_VMERGE_IDLE

/* Two cases a line, each the one before it changed where the rule turns. */
static const struct due_case CASES[] = {
	/* nothing unmerged: never due, a half-full log or not */
	{ 0, 0, 0, 0, 999999, NOT, 0 },          { 0, 0, 1, 0, 999999, NOT, 0 },
	/* the idle time from the last commit (a clock before it: not idle) */
	{ 5, 1000, 0, 0, 10999, NOT, 0 },        { 5, 1000, 0, 0, 11000, IDLE, 0 },
	{ 5, 20000, 0, 0, 1000, NOT, 0 },
	/* at once: the commit threshold, a half-full log */
	{ 2047, 1000, 0, 0, 1001, NOT, 0 },      { 2048, 1000, 0, 0, 1001, MDS_VMERGE_COMMITS, 0 },
	{ 1, 1000, 1, 0, 1001, MDS_VMERGE_LOG_HALF, 0 },
	/* nothing before the wait after a failed or held round is over */
	{ 4096, 0, 1, 5000, 4999, NOT, 0 },      { 4096, 0, 1, 5000, 5000, MDS_VMERGE_LOG_HALF, 0 },
	{ 3, 0, 0, 20000, 19999, NOT, 0 },       { 3, 0, 0, 20000, 20000, IDLE, 0 },
	/* a session holding writer ID#s ended: at once, even with nothing
	 * unmerged (its records are dropped), unless a failed round waits */
	{ 0, 0, 0, 0, 1, MDS_VMERGE_DEAD_IDS, 1 }, { 0, 0, 0, 5000, 4999, NOT, 1 },
	{ 3, 0, 0, 0, 1, MDS_VMERGE_DEAD_IDS, 1 }, { 0, 0, 0, 5000, 5000, MDS_VMERGE_DEAD_IDS, 1 },
};

static void test_due_rule(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const struct due_case *k = &CASES[i];
		struct mds_vmerge_seen s = { k->unmerged, k->last_ms * MS, k->half,
					     k->wait_ms * MS, k->dead };
		enum mds_vmerge_why got = mds_vmerge_due(&RULE, &s, k->now_ms * MS);

		if (got != k->want)
			fail_msg("case %zu: due says %d, not %d", i, got, k->want);
	}
}

/* ---- the scan after a start */

static struct mds_attr vfile(struct fx *f, const char *path)
{
	struct mds_attr a;
	int created;

	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){
			.path = path, .mode = 0644, .how = MDS_CREATE_EXCLUSIVE,
			.stripe_count = 2, .versioned = MDS_VERSIONING_ON }, &a, &created), 0);
	return a;
}

/* Files with unmerged commits are found in handle order; one whose
 * commits are all merged, or that has only a state record, is stepped
 * over. */
static void test_scan_unmerged(void **state)
{
	struct fx *f = *state;
	struct mds_versions *vs = mds_versions_new(f->st, &KEY, 1 << 20, 1000);
	struct mds_attr a[3] = { vfile(f, "/a"), vfile(f, "/b"), vfile(f, "/c") };
	struct mds_vfile vf[3];
	Tessera__VersionCommit c;
	uint32_t slot = 0, first;
	uint64_t file, lo, hi;

	assert_non_null(vs);
	assert_int_equal(mds_versions_next_unmerged(vs, 0, &file), 0);
	for (int i = 0; i < 3; i++) {
		vf[i] = (struct mds_vfile){ a[i].handle, a[i].layout.count, a[i].layout.handles };
		assert_int_equal(mds_version_ids(vs, &vf[i], SA, 1, &first), 0);
	}
	/* /a and /c commit; /b has its state record only */
	assert_int_equal(mds_version_commit(vs, &vf[0], SA, T(1, 1), &slot, 1, &c), 0);
	assert_int_equal(mds_version_commit(vs, &vf[2], SA, T(1, 1), &slot, 1, &c), 0);
	lo = a[0].handle < a[2].handle ? a[0].handle : a[2].handle;
	hi = a[0].handle < a[2].handle ? a[2].handle : a[0].handle;
	assert_int_equal(mds_versions_next_unmerged(vs, 0, &file), 1);
	assert_int_equal(file, lo);
	assert_int_equal(mds_versions_next_unmerged(vs, lo + 1, &file), 1);
	assert_int_equal(file, hi);
	assert_int_equal(mds_versions_next_unmerged(vs, hi + 1, &file), 0);
	/* /a merged on its object: found no more */
	assert_int_equal(mds_version_merged(vs, &vf[0], a[0].layout.handles[0], 1), 0);
	assert_int_equal(mds_versions_next_unmerged(vs, 0, &file), 1);
	assert_int_equal(file, a[2].handle);
	mds_versions_free(vs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_due_rule),
		cmocka_unit_test_setup_teardown(test_scan_unmerged, setup, teardown),
	};

	return cmocka_run_group_tests_name("mds_vmerge", tests, NULL, NULL);
}
