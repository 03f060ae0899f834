/*
 * test_lockmgr_tree.c - the lock manager's interval tree (lockmgr's
 * internal tlk_tree) against a plain array of intervals: random inserts,
 * removals and end moves, each followed by lowest-covered-byte queries
 * answered by brute force, and a full shape check.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tlk_int.h"
#include "rng.h"

#define MAXN 2000

/* The lowest byte of [a, b) inside one of the nodes in use, or b. */
static uint64_t naive_first(struct tlk_node *nodes, const bool *used, size_t n,
			    uint64_t a, uint64_t b)
{
	uint64_t best = b;

	for (size_t i = 0; i < n; i++) {
		if (!used[i] || nodes[i].start >= b || nodes[i].end <= a)
			continue;
		uint64_t x = nodes[i].start > a ? nodes[i].start : a;
		if (x < best)
			best = x;
	}
	return best;
}

/* `space` sets how crowded it is; `disjoint` keeps intervals apart (the
 * write tree's case), else they overlap freely (the read tree's). */
static void run(uint64_t seed, uint64_t space, size_t target, bool disjoint, long steps)
{
	static struct tlk_node nodes[MAXN];
	static bool used[MAXN];
	struct tlk_tree tree;
	struct rng rg = { seed };
	size_t live = 0;

	for (size_t i = 0; i < MAXN; i++)
		used[i] = false;
	tlk_tree_init(&tree);
	for (long step = 0; step < steps; step++) {
		size_t i = below(&rg, target);
		uint64_t s = below(&rg, space), len = 1 + below(&rg, below(&rg, 8) ? 8 : space / 4 + 1);
		uint64_t e = s + len;

		if (!used[i]) {
			if (disjoint && naive_first(nodes, used, target, s, e) != e)
				continue;
			nodes[i].start = s;
			nodes[i].end = e;
			tlk_tree_insert(&tree, &nodes[i]);
			used[i] = true;
			live++;
		} else if (below(&rg, 3)) {
			tlk_tree_remove(&tree, &nodes[i]);
			used[i] = false;
			live--;
		} else {
			/* move the end: shrink, or grow where that stays legal */
			uint64_t ne = nodes[i].start + 1 + below(&rg, 2 * (nodes[i].end - nodes[i].start) + 2);
			used[i] = false;
			if (!disjoint || naive_first(nodes, used, target, nodes[i].end, ne) == ne ||
			    ne <= nodes[i].end)
				tlk_tree_set_end(&tree, &nodes[i], ne);
			used[i] = true;
		}
		assert_int_equal(tree.count, live);
		for (int q = 0; q < 4; q++) {
			uint64_t a = below(&rg, space + 10), b = a + 1 + below(&rg, space / 2 + 1);
			assert_int_equal(tlk_tree_first_covered(&tree, a, b),
					 naive_first(nodes, used, target, a, b));
		}
		if (step % 101 == 0)
			assert_int_equal(tlk_tree_check(&tree, disjoint), 0);
	}
	assert_int_equal(tlk_tree_check(&tree, disjoint), 0);
	/* empty it */
	for (size_t i = 0; i < target; i++)
		if (used[i])
			tlk_tree_remove(&tree, &nodes[i]);
	assert_int_equal(tree.count, 0);
	assert_int_equal(tree.bytes, 0);
	assert_ptr_equal(tree.root, &tree.nil);
	assert_int_equal(tlk_tree_check(&tree, disjoint), 0);
}

static void test_overlapping(void **state)
{
	(void)state;
	run(1, 64, 40, false, 200000);
	run(2, 5000, 1500, false, 15000);
	run(3, 1 << 20, 2000, false, 10000);
}

static void test_disjoint(void **state)
{
	(void)state;
	run(4, 256, 60, true, 200000);
	run(5, 100000, 1500, true, 15000);
}

/* Sorted insertion (the common case: a request's ranges ascend) stays
 * balanced: depth within 2 log2(n + 1). */
static size_t depth(const struct tlk_tree *t, const struct tlk_node *x)
{
	size_t l, r;

	if (x == &t->nil)
		return 0;
	l = depth(t, x->left);
	r = depth(t, x->right);
	return 1 + (l > r ? l : r);
}

static void test_sorted_balance(void **state)
{
	static struct tlk_node nodes[1 << 16];
	struct tlk_tree tree;
	(void)state;

	tlk_tree_init(&tree);
	for (size_t i = 0; i < 1 << 16; i++) {
		nodes[i].start = i * 64;
		nodes[i].end = i * 64 + 1;
		tlk_tree_insert(&tree, &nodes[i]);
	}
	assert_true(depth(&tree, tree.root) <= 2 * 17);
	assert_int_equal(tlk_tree_check(&tree, true), 0);
	assert_int_equal(tlk_tree_first_covered(&tree, 65, 64 * 100), 128);
	assert_int_equal(tlk_tree_first_covered(&tree, 64 * 65535 + 1, UINT64_MAX),
			 UINT64_MAX);
	for (size_t i = 0; i < 1 << 16; i += 2)
		tlk_tree_remove(&tree, &nodes[i]);
	assert_true(depth(&tree, tree.root) <= 2 * 16);
	assert_int_equal(tlk_tree_check(&tree, true), 0);
	assert_int_equal(tlk_tree_first_covered(&tree, 0, 64 * 3), 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlapping),
		cmocka_unit_test(test_disjoint),
		cmocka_unit_test(test_sorted_balance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
