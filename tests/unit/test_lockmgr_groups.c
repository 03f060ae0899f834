/*
 * test_lockmgr_groups.c - record-lock groups in the lock table (tlk.h,
 * "the model"): requests of one owner and one nonzero group never conflict
 * with each other, so a POSIX owner upgrades, downgrades and splits its
 * locks by taking the new requests before releasing the old; everybody
 * else (other groups, other owners, ungrouped library locks) still
 * conflicts byte for byte, both ways, and the fairness rule ignores the
 * group's own parked requests only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tlk.h"

#define NONE TLK_NONE
#define OBJ 7

static struct tlk_table *new_table(void)
{
	struct tlk_table *t;

	assert_int_equal(tlk_table_create(NULL, &t), 0);
	return t;
}

/* A one-range request [off, off + len) of owner/group, taken nonblocking;
 * its state. */
static enum tlk_state try_lock(struct tlk_table *t, uint64_t owner, uint64_t group,
			       enum tlk_mode mode, uint64_t off, uint64_t len, uint64_t *id)
{
	struct tlk_range g = { off, len, off };
	struct tlk_answer a;

	assert_int_equal(tlk_request_create_grouped(t, OBJ, owner, group, mode, &g, 1, id), 0);
	assert_int_equal(tlk_acquire(t, *id, 0, NONE, NULL, &a), 0);
	assert_int_equal(tlk_table_check(t), 0);
	return a.state;
}

/* All-or-nothing, as the client's record locks take them: a request that
 * did not get everything is released. */
static bool take(struct tlk_table *t, uint64_t owner, uint64_t group, enum tlk_mode mode,
		 uint64_t off, uint64_t len, uint64_t *id)
{
	if (try_lock(t, owner, group, mode, off, len, id) == TLK_GRANTED)
		return true;
	assert_int_equal(tlk_release(t, *id), 0);
	return false;
}

static void test_group_never_conflicts_with_itself(void **state)
{
	struct tlk_table *t = new_table();
	uint64_t w, w2, r, x;

	(void)state;
	assert_true(take(t, 1, 10, TLK_WRITE, 0, 100, &w));
	/* Same owner and group: a second write and a read on the same bytes. */
	assert_true(take(t, 1, 10, TLK_WRITE, 50, 100, &w2));
	assert_true(take(t, 1, 10, TLK_READ, 0, 10, &r));
	/* Another group of the same owner, another owner with the same group
	 * number, and an ungrouped request all conflict. */
	assert_false(take(t, 1, 11, TLK_READ, 99, 1, &x));
	assert_false(take(t, 2, 10, TLK_READ, 149, 1, &x));
	assert_false(take(t, 1, 0, TLK_READ, 0, 1, &x));
	assert_true(take(t, 2, 10, TLK_READ, 150, 1, &x));
	tlk_table_destroy(t);
}

/* Upgrade a read lock shared with nobody, split a write lock by an unlock
 * in its middle, downgrade: new first, then the old released, and another
 * owner never finds the kept bytes free. */
static void test_upgrade_split_downgrade(void **state)
{
	struct tlk_table *t = new_table();
	uint64_t r, w, lo, hi, x, rd;

	(void)state;
	assert_true(take(t, 1, 10, TLK_READ, 0, 100, &r));
	assert_true(take(t, 2, 20, TLK_READ, 200, 10, &x));
	assert_true(take(t, 1, 10, TLK_WRITE, 0, 100, &w)); /* upgrade */
	assert_int_equal(tlk_release(t, r), 0);
	assert_false(take(t, 2, 20, TLK_READ, 0, 1, &x));
	/* Unlock [40, 60): keep [0, 40) and [60, 100). */
	assert_true(take(t, 1, 10, TLK_WRITE, 0, 40, &lo));
	assert_true(take(t, 1, 10, TLK_WRITE, 60, 40, &hi));
	assert_int_equal(tlk_release(t, w), 0);
	assert_int_equal(tlk_table_check(t), 0);
	assert_true(take(t, 2, 20, TLK_WRITE, 40, 20, &x));
	assert_int_equal(tlk_release(t, x), 0);
	assert_false(take(t, 2, 20, TLK_READ, 39, 2, &x));
	assert_false(take(t, 2, 20, TLK_READ, 60, 1, &x));
	/* Downgrade [60, 100) to read: another reader gets in, a writer not. */
	assert_true(take(t, 1, 10, TLK_READ, 60, 40, &rd));
	assert_int_equal(tlk_release(t, hi), 0);
	assert_true(take(t, 2, 20, TLK_READ, 70, 5, &x));
	assert_false(take(t, 2, 21, TLK_WRITE, 99, 1, &x));
	tlk_table_destroy(t);
}

/* A library (ungrouped) blocking lock parked behind a record lock gets its
 * bytes when the record owner's last overlapping request goes, and not
 * before, however the owner rearranges its requests. */
static void test_library_waiter_behind_group(void **state)
{
	struct tlk_table *t = new_table();
	struct tlk_range g = { 0, 50, 0 };
	const struct tlk_event *ev;
	struct tlk_answer a;
	uint64_t w, w2, lib;

	(void)state;
	assert_true(take(t, 1, 10, TLK_WRITE, 0, 100, &w));
	assert_int_equal(tlk_request_create(t, OBJ, 3, TLK_WRITE, &g, 1, &lib), 0);
	assert_int_equal(tlk_acquire(t, lib, TLK_BLOCKING, NONE, &lib, &a), 0);
	assert_int_equal(a.state, TLK_WAITING);
	/* The owner narrows its lock to [40, 100): new first (not held back by
	 * the older parked request: the group holds those bytes), then old. */
	assert_true(take(t, 1, 10, TLK_WRITE, 40, 60, &w2));
	assert_int_equal(tlk_release(t, w), 0);
	assert_int_equal(tlk_events(t, &ev), 0);
	assert_int_equal(tlk_release(t, w2), 0);
	assert_int_equal(tlk_events(t, &ev), 1);
	assert_int_equal(ev[0].lock_id, lib);
	assert_int_equal(ev[0].answer.state, TLK_GRANTED);
	/* And a record lock now conflicts with the library's. */
	assert_false(take(t, 1, 10, TLK_READ, 49, 1, &w));
	assert_int_equal(tlk_table_check(t), 0);
	tlk_table_destroy(t);
}

/* A random mix agrees with a brute-force model: a request is granted whole
 * iff no byte of it is held, in a conflicting mode, by a request outside
 * its group; the table's check holds throughout. */
struct held {
	uint64_t id, owner, group, off, len;
	enum tlk_mode mode;
};

static bool model_conflict(const struct held *h, size_t n, uint64_t owner, uint64_t group,
			   enum tlk_mode mode, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (group && h[i].group == group && h[i].owner == owner)
			continue;
		if (mode == TLK_READ && h[i].mode == TLK_READ)
			continue;
		if (h[i].off < off + len && off < h[i].off + h[i].len)
			return true;
	}
	return false;
}

static void test_random_against_model(void **state)
{
	struct tlk_table *t = new_table();
	struct held h[64];
	size_t n = 0;
	uint64_t seed = 12345;

	(void)state;
	for (int step = 0; step < 20000; step++) {
		uint64_t owner, group, off, len, id;
		enum tlk_mode mode;
		bool want;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (n && (n == 64 || (seed >> 60) < 6)) {
			size_t k = (size_t)((seed >> 20) % n);
			assert_int_equal(tlk_release(t, h[k].id), 0);
			h[k] = h[--n];
			continue;
		}
		owner = 1 + (seed >> 33) % 2;
		group = (seed >> 35) % 3; /* 0: a library lock */
		mode = (seed >> 37) & 1 ? TLK_WRITE : TLK_READ;
		off = (seed >> 40) % 200;
		len = 1 + (seed >> 48) % 40;
		want = !model_conflict(h, n, owner, group, mode, off, len);
		assert_int_equal(take(t, owner, group, mode, off, len, &id), want);
		if (want)
			h[n++] = (struct held){ id, owner, group, off, len, mode };
	}
	assert_int_equal(tlk_table_check(t), 0);
	tlk_table_destroy(t);
}

/* tlk_test (F_GETLK) against the model: it finds a conflicting lock iff
 * the model does, and the lock it names covers the lowest conflicting
 * byte. Nothing changes. */
static uint64_t model_lowest(const struct held *h, size_t n, uint64_t owner, uint64_t group,
			     enum tlk_mode mode, uint64_t off, uint64_t len)
{
	uint64_t low = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		uint64_t a = h[i].off > off ? h[i].off : off;

		if ((group && h[i].group == group && h[i].owner == owner) ||
		    (mode == TLK_READ && h[i].mode == TLK_READ))
			continue;
		if (h[i].off < off + len && off < h[i].off + h[i].len && a < low)
			low = a;
	}
	return low;
}

static void test_conflict_test_against_model(void **state)
{
	struct tlk_table *t = new_table();
	struct tlk_conflict cf;
	struct held h[32];
	struct tlk_stats before, after;
	size_t n = 0;
	uint64_t seed = 777;

	(void)state;
	for (int step = 0; step < 20000; step++) {
		uint64_t owner, group, off, len, id, low;
		enum tlk_mode mode;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		owner = 1 + (seed >> 33) % 2;
		group = (seed >> 35) % 3;
		mode = (seed >> 37) & 1 ? TLK_WRITE : TLK_READ;
		off = (seed >> 40) % 200;
		len = 1 + (seed >> 48) % 40;
		if ((seed >> 60) < 4 && n) {
			size_t k = (size_t)((seed >> 20) % n);
			assert_int_equal(tlk_release(t, h[k].id), 0);
			h[k] = h[--n];
			continue;
		}
		if ((seed >> 60) < 10 && n < 32) {
			if (take(t, owner, group, mode, off, len, &id))
				h[n++] = (struct held){ id, owner, group, off, len, mode };
			continue;
		}
		tlk_table_stats(t, &before);
		assert_int_equal(tlk_test(t, OBJ, owner, group, mode, off, len, &cf), 0);
		tlk_table_stats(t, &after);
		assert_memory_equal(&before, &after, sizeof(before));
		low = model_lowest(h, n, owner, group, mode, off, len);
		assert_int_equal(cf.found, low != UINT64_MAX);
		if (cf.found) {
			assert_int_equal(cf.start > off ? cf.start : off, low);
			assert_true(cf.end > low);
			assert_true(mode == TLK_WRITE || cf.mode == TLK_WRITE);
		}
	}
	assert_int_equal(tlk_test(t, OBJ, 1, 0, TLK_WRITE, 5, 0, &cf), -EINVAL);
	assert_int_equal(tlk_test(t, OBJ, 1, 0, TLK_WRITE, UINT64_MAX - 1, 5, &cf), -EINVAL);
	assert_int_equal(tlk_test(t, OBJ, 1, 0, 7, 0, 5, &cf), -EINVAL);
	assert_int_equal(tlk_test(t, OBJ + 1, 1, 0, TLK_WRITE, 0, 5, &cf), 0);
	assert_int_equal(cf.found, 0);
	tlk_table_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_never_conflicts_with_itself),
		cmocka_unit_test(test_upgrade_split_downgrade),
		cmocka_unit_test(test_library_waiter_behind_group),
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_conflict_test_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
