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

static enum mds_vmerge_why due(uint32_t unmerged, uint64_t last_ms, int half, uint64_t wait_ms,
			       uint64_t now_ms)
{
	struct mds_vmerge_seen s = { unmerged, last_ms * MS, half, wait_ms * MS };

	return mds_vmerge_due(&RULE, &s, now_ms * MS);
}

/* Nothing unmerged is never due; idle from 10 s after the last commit. */
static void test_idle(void **state)
{
	(void)state;
	assert_int_equal(due(0, 0, 0, 0, 999999), MDS_VMERGE_NOT_DUE);
	assert_int_equal(due(0, 0, 1, 0, 999999), MDS_VMERGE_NOT_DUE);
	assert_int_equal(due(5, 1000, 0, 0, 10999), MDS_VMERGE_NOT_DUE);
	assert_int_equal(due(5, 1000, 0, 0, 11000), MDS_VMERGE_IDLE);
	/* a clock before the last commit (a note from another tick): not idle */
	assert_int_equal(due(5, 20000, 0, 0, 1000), MDS_VMERGE_NOT_DUE);
}

/* The commit threshold and a half-full log make a file due at once. */
static void test_thresholds(void **state)
{
	(void)state;
	assert_int_equal(due(2047, 1000, 0, 0, 1001), MDS_VMERGE_NOT_DUE);
	assert_int_equal(due(2048, 1000, 0, 0, 1001), MDS_VMERGE_COMMITS);
	assert_int_equal(due(1, 1000, 1, 0, 1001), MDS_VMERGE_LOG_HALF);
}

/* After a failed round, or one a read kept at the floor, not before the
 * wait is over, whatever else holds. */
static void test_wait(void **state)
{
	(void)state;
	assert_int_equal(due(4096, 0, 1, 5000, 4999), MDS_VMERGE_NOT_DUE);
	assert_int_equal(due(4096, 0, 1, 5000, 5000), MDS_VMERGE_LOG_HALF);
	assert_int_equal(due(3, 0, 0, 20000, 19999), MDS_VMERGE_NOT_DUE);
	assert_int_equal(due(3, 0, 0, 20000, 20000), MDS_VMERGE_IDLE);
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
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_thresholds),
		cmocka_unit_test(test_wait),
		cmocka_unit_test_setup_teardown(test_scan_unmerged, setup, teardown),
	};

	return cmocka_run_group_tests_name("mds_vmerge", tests, NULL, NULL);
}
