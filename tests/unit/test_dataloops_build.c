/* test_dataloops_build.c - subarray and darray against naive expansions. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tdl.h"
#include "tdl_model.h"

/* Stream byte -> file offset of one instance at displacement 0. */
static void engine_bytes(const struct tdl_dataloop *dl, struct rng *r,
			 struct vec *offs)
{
	struct tdl_segment seg;
	struct vec streams = { 0 };
	size_t np;

	assert_int_equal(tdl_segment_init(&seg, dl, 1, 0, 0, UINT64_MAX), 0);
	assert_int_equal(walk_bytes(&seg, r, 0, &streams, offs, &np), 0);
	free(streams.v);
}

/* Visit every multi-index of `dims` in array order (C: last fastest). */
static int next_index(int ndims, const int64_t *dims, int order, int64_t *idx)
{
	for (int i = 0; i < ndims; i++) {
		int d = order == TDL_ORDER_C ? ndims - 1 - i : i;
		if (++idx[d] < dims[d])
			return 1;
		idx[d] = 0;
	}
	return 0;
}

/* Linear element number of idx in a global array of `sizes`. */
static int64_t linear(int ndims, const int64_t *sizes, int order,
		      const int64_t *idx)
{
	int64_t lin = 0;
	for (int i = 0; i < ndims; i++) {
		int d = order == TDL_ORDER_C ? i : ndims - 1 - i;
		lin = lin * sizes[d] + idx[d];
	}
	return lin;
}

static void test_subarray(void **state)
{
	struct rng r = { 31337 };
	(void)state;

	for (int iter = 0; iter < 400; iter++) {
		int ndims = (int)rnd_in(&r, 1, 4);
		int order = (int)rnd_in(&r, 0, 1);
		int64_t esz = rnd_in(&r, 1, 5);
		int64_t sizes[4], sub[4], starts[4], idx[4] = { 0 };
		int64_t total = esz;
		struct tdl_dataloop *el, *dl;
		struct vec want = { 0 }, got = { 0 };

		for (int d = 0; d < ndims; d++) {
			sizes[d] = rnd_in(&r, 1, 6);
			sub[d] = rnd_in(&r, 1, sizes[d]);
			starts[d] = rnd_in(&r, 0, sizes[d] - sub[d]);
			total *= sizes[d];
		}
		assert_int_equal(tdl_bytes(esz, &el), 0);
		assert_int_equal(tdl_subarray(ndims, sizes, sub, starts, order,
					      el, &dl),
				 0);
		do {
			int64_t g[4];
			for (int d = 0; d < ndims; d++)
				g[d] = starts[d] + idx[d];
			for (int64_t b = 0; b < esz; b++)
				vec_push(&want,
					 linear(ndims, sizes, order, g) * esz +
						 b);
		} while (next_index(ndims, sub, order, idx));
		engine_bytes(dl, &r, &got);
		assert_int_equal(got.n, want.n);
		assert_memory_equal(got.v, want.v, want.n * sizeof(int64_t));
		assert_int_equal(tdl_lb(dl), 0);
		assert_int_equal(tdl_extent(dl), total);
		free(want.v);
		free(got.v);
		tdl_free(el);
		tdl_free(dl);
	}
}

static void test_subarray_invalid(void **state)
{
	struct tdl_dataloop *el, *dl = NULL;
	int64_t sizes[2] = { 4, 4 }, sub[2] = { 2, 3 }, starts[2] = { 0, 2 };
	(void)state;

	assert_int_equal(tdl_bytes(4, &el), 0);
	assert_int_equal(tdl_subarray(2, sizes, sub, starts, TDL_ORDER_C, el,
				      &dl),
			 -EINVAL);
	starts[1] = 1;
	assert_int_equal(tdl_subarray(2, sizes, sub, starts, 7, el, &dl),
			 -EINVAL);
	assert_int_equal(tdl_subarray(0, sizes, sub, starts, TDL_ORDER_C, el,
				      &dl),
			 -EINVAL);
	assert_null(dl);
	tdl_free(el);
}

/* Which grid coordinate owns index i of a dimension (the definition). */
static int owner(int64_t i, int64_t g, int distrib, int darg, int p)
{
	int64_t k;
	switch (distrib) {
	case TDL_DISTRIBUTE_BLOCK:
		k = darg == TDL_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
		return (int)(i / k);
	case TDL_DISTRIBUTE_CYCLIC:
		k = darg == TDL_DISTRIBUTE_DFLT_DARG ? 1 : darg;
		return (int)((i / k) % p);
	default:
		return 0;
	}
}

static void test_darray(void **state)
{
	struct rng r = { 2718 };
	(void)state;

	for (int iter = 0; iter < 200; iter++) {
		int ndims = (int)rnd_in(&r, 1, 3);
		int order = (int)rnd_in(&r, 0, 1);
		int64_t esz = rnd_in(&r, 1, 3), gs[3], total = esz;
		int distribs[3], dargs[3], psizes[3], size = 1;
		struct tdl_dataloop *el;
		int64_t *hits;

		for (int d = 0; d < ndims; d++) {
			gs[d] = rnd_in(&r, 1, 9);
			distribs[d] = (int)rnd_in(&r, 0, 2);
			psizes[d] = distribs[d] == TDL_DISTRIBUTE_NONE
					    ? 1
					    : (int)rnd_in(&r, 1, 3);
			dargs[d] = TDL_DISTRIBUTE_DFLT_DARG;
			if (distribs[d] == TDL_DISTRIBUTE_CYCLIC &&
			    rnd_in(&r, 0, 1))
				dargs[d] = (int)rnd_in(&r, 1, 3);
			if (distribs[d] == TDL_DISTRIBUTE_BLOCK &&
			    rnd_in(&r, 0, 1))
				dargs[d] = (int)((gs[d] + psizes[d] - 1) /
						 psizes[d]) +
					   (int)rnd_in(&r, 0, 2);
			size *= psizes[d];
			total *= gs[d];
		}
		assert_int_equal(tdl_bytes(esz, &el), 0);
		hits = calloc((size_t)total, sizeof(*hits));
		for (int rank = 0; rank < size; rank++) {
			struct tdl_dataloop *dl;
			struct vec want = { 0 }, got = { 0 };
			int64_t idx[3] = { 0 };
			int coords[3];

			for (int d = ndims - 1, q = rank; d >= 0; d--) {
				coords[d] = q % psizes[d];
				q /= psizes[d];
			}
			assert_int_equal(tdl_darray(size, rank, ndims, gs,
						    distribs, dargs, psizes,
						    order, el, &dl),
					 0);
			do {
				int mine = 1;
				for (int d = 0; d < ndims; d++)
					if (owner(idx[d], gs[d], distribs[d],
						  dargs[d], psizes[d]) !=
					    coords[d])
						mine = 0;
				if (!mine)
					continue;
				for (int64_t b = 0; b < esz; b++)
					vec_push(&want,
						 linear(ndims, gs, order, idx) *
								 esz +
							 b);
			} while (next_index(ndims, gs, order, idx));
			engine_bytes(dl, &r, &got);
			assert_int_equal(got.n, want.n);
			if (want.n)
				assert_memory_equal(got.v, want.v,
						    want.n * sizeof(int64_t));
			for (size_t k = 0; k < got.n; k++)
				hits[got.v[k]]++;
			assert_int_equal(tdl_lb(dl), 0);
			assert_int_equal(tdl_extent(dl), total);
			free(want.v);
			free(got.v);
			tdl_free(dl);
		}
		/* The ranks partition the array. */
		for (int64_t k = 0; k < total; k++)
			assert_int_equal(hits[k], 1);
		free(hits);
		tdl_free(el);
	}
}

static void test_darray_invalid(void **state)
{
	struct tdl_dataloop *el, *dl = NULL;
	int64_t gs[2] = { 10, 10 };
	int dist[2] = { TDL_DISTRIBUTE_BLOCK, TDL_DISTRIBUTE_NONE };
	int dargs[2] = { 2, TDL_DISTRIBUTE_DFLT_DARG };
	int ps[2] = { 2, 1 };
	(void)state;

	assert_int_equal(tdl_bytes(8, &el), 0);
	/* Blocks of 2 over 2 processes cannot cover 10 elements. */
	assert_int_equal(tdl_darray(2, 0, 2, gs, dist, dargs, ps, TDL_ORDER_C,
				    el, &dl),
			 -EINVAL);
	dargs[0] = TDL_DISTRIBUTE_DFLT_DARG;
	assert_int_equal(tdl_darray(3, 0, 2, gs, dist, dargs, ps, TDL_ORDER_C,
				    el, &dl),
			 -EINVAL);
	assert_int_equal(tdl_darray(2, 2, 2, gs, dist, dargs, ps, TDL_ORDER_C,
				    el, &dl),
			 -EINVAL);
	ps[1] = 2; /* DISTRIBUTE_NONE over 2 processes */
	assert_int_equal(tdl_darray(4, 0, 2, gs, dist, dargs, ps, TDL_ORDER_C,
				    el, &dl),
			 -EINVAL);
	assert_null(dl);
	tdl_free(el);
}

/* MPI extents of the basic constructors. */
static void test_constructor_bounds(void **state)
{
	struct tdl_dataloop *d, *v, *rs, *s, *c;
	int64_t bl[2] = { 1, 2 }, disp[2] = { 16, -8 };
	const struct tdl_dataloop *types[2];
	(void)state;

	assert_int_equal(tdl_bytes(8, &d), 0);
	assert_int_equal(tdl_vector(3, 2, -4, d, &v), 0);
	/* Blocks at 0, -32, -64 of 16 bytes. */
	assert_int_equal(tdl_lb(v), -64);
	assert_int_equal(tdl_extent(v), 80);
	assert_int_equal(tdl_size(v), 48);
	assert_int_equal(tdl_resized(v, -100, 300, &rs), 0);
	assert_int_equal(tdl_lb(rs), -100);
	assert_int_equal(tdl_extent(rs), 300);
	assert_int_equal(tdl_true_lb(rs), -64);
	assert_int_equal(tdl_true_ub(rs), 16);
	types[0] = rs;
	types[1] = d;
	assert_int_equal(tdl_struct(2, bl, disp, types, &s), 0);
	assert_int_equal(tdl_lb(s), -84);
	assert_int_equal(tdl_extent(s), 300);
	assert_int_equal(tdl_size(s), 64);
	assert_int_equal(tdl_contig(0, s, &c), 0);
	assert_int_equal(tdl_size(c), 0);
	assert_int_equal(tdl_extent(c), 0);
	tdl_free(c);
	tdl_free(s);
	tdl_free(rs);
	tdl_free(v);
	tdl_free(d);
}

/* A struct of many separately built but identical children (parallel
 * HDF5's one type per chunk) holds each distinct child once, and has the
 * typemap the model expands; distinct children still count against
 * TDL_MAX_NODES. */
static void test_struct_identical_children(void **state)
{
	enum { N = 20000 };
	struct rng r = { 0x51ab1e };
	struct tdl_dataloop **kids = malloc(N * sizeof(*kids)), *dl, *shared;
	int64_t *bl = malloc(N * sizeof(*bl)), *disp = malloc(N * sizeof(*disp)), at = 0;
	struct vec got = { 0 };

	(void)state;
	for (int i = 0; i < N; i++) {
		/* two shapes, alternating: 4 bytes, or 2 blocks of 2 bytes 3 apart */
		struct tdl_dataloop *b;

		assert_int_equal(tdl_bytes(i % 2 ? 2 : 4, &b), 0);
		if (i % 2)
			assert_int_equal(tdl_hvector(2, 1, 3, b, &kids[i]), 0);
		else
			kids[i] = b;
		if (i % 2)
			tdl_free(b);
		bl[i] = 1;
		disp[i] = at;
		at += 8 + (int64_t)(rnd(&r) % 40);
	}
	assert_int_equal(tdl_struct(N, bl, disp, (const struct tdl_dataloop *const *)kids, &dl), 0);
	/* the two shapes (1 and 2 nodes) and the struct */
	assert_int_equal(tdl_node_count(dl), 4);
	assert_int_equal(tdl_size(dl), (uint64_t)N * 4);
	engine_bytes(dl, &r, &got);
	assert_int_equal(got.n, (size_t)N * 4);
	for (int i = 0; i < N; i++)
		for (int b = 0; b < 4; b++)
			assert_int_equal(got.v[4 * i + b],
					 disp[i] + (i % 2 ? (b / 2) * 3 + b % 2 : b));
	tdl_free(dl);
	free(got.v);
	/* distinct shapes: one node each, over the limit */
	for (int i = 0; i < N; i++) {
		tdl_free(kids[i]);
		assert_int_equal(tdl_bytes(1 + i, &kids[i]), 0);
	}
	assert_int_equal(tdl_struct(N, bl, disp, (const struct tdl_dataloop *const *)kids, &dl),
			 -EINVAL);
	/* the same pointer many times still works */
	shared = kids[0];
	for (int i = 1; i < N; i++) {
		tdl_free(kids[i]);
		kids[i] = shared;
	}
	assert_int_equal(tdl_struct(N, bl, disp, (const struct tdl_dataloop *const *)kids, &dl), 0);
	assert_int_equal(tdl_node_count(dl), 2);
	tdl_free(dl);
	tdl_free(shared);
	free(kids);
	free(bl);
	free(disp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subarray),
		cmocka_unit_test(test_subarray_invalid),
		cmocka_unit_test(test_darray),
		cmocka_unit_test(test_darray_invalid),
		cmocka_unit_test(test_constructor_bounds),
		cmocka_unit_test(test_struct_identical_children),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
