/*
 * test_client_vers.c - the pure parts of versioned files' client side
 * (client/vpure.c): temporary version numbering (T = ID# << 32 | IO#, IO#
 * from 1, a new ID# when they run out) and the commits each object's
 * request carries (only those naming it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vpure.h"

static void test_t_numbering(void **state)
{
	struct tc_vids v = { 0, 0 };
	uint32_t spent = 99;

	(void)state;
	/* no ID yet: ask for one, nothing spent */
	assert_int_equal(tc_vids_next(&v, &spent), 0);
	assert_int_equal(spent, 0);
	tc_vids_set(&v, 7);
	assert_true(tc_vids_next(&v, &spent) == ((uint64_t)7 << 32 | 1));
	assert_int_equal(spent, 0);
	assert_true(tc_vids_next(&v, &spent) == ((uint64_t)7 << 32 | 2));
}

static void test_io_numbers_run_out(void **state)
{
	struct tc_vids v;
	uint32_t spent = 0;

	(void)state;
	tc_vids_set(&v, 3);
	v.next_io = UINT32_MAX;       /* the last IO# */
	assert_true(tc_vids_next(&v, &spent) == ((uint64_t)3 << 32 | UINT32_MAX));
	/* IO# 0 is never used: a new ID#, and the spent one is named */
	assert_int_equal(tc_vids_next(&v, &spent), 0);
	assert_int_equal(spent, 3);
	assert_int_equal(v.id, 0);
	tc_vids_set(&v, 4);
	assert_true(tc_vids_next(&v, &spent) == ((uint64_t)4 << 32 | 1));
}

static void test_pick_names_the_object(void **state)
{
	uint64_t h1[] = { 10, 11 }, h2[] = { 11 }, h3[] = { 12 };
	Tessera__VersionCommit a = TESSERA__VERSION_COMMIT__INIT, b = a, c = a;
	Tessera__VersionCommit *vmap[] = { &a, &b, &c }, *out[3];
	uint64_t want11 = 11, want10_12[] = { 10, 12 }, want13 = 13;

	(void)state;
	a.handles = h1, a.n_handles = 2, a.vm = 1;
	b.handles = h2, b.n_handles = 1, b.vm = 2;
	c.handles = h3, c.n_handles = 1, c.vm = 3;
	assert_int_equal(tc_vmap_pick(vmap, 3, &want11, 1, out), 2);
	assert_ptr_equal(out[0], &a);     /* in order */
	assert_ptr_equal(out[1], &b);
	assert_int_equal(tc_vmap_pick(vmap, 3, want10_12, 2, out), 2);
	assert_ptr_equal(out[0], &a);     /* once, though it names 10 and 12 is c's */
	assert_ptr_equal(out[1], &c);
	assert_int_equal(tc_vmap_pick(vmap, 3, &want13, 1, out), 0);
	assert_int_equal(tc_vmap_pick(NULL, 0, &want13, 1, out), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_t_numbering),
		cmocka_unit_test(test_io_numbers_run_out),
		cmocka_unit_test(test_pick_names_the_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
