/*
 * mpi_dtype.c - MPI datatypes to dataloops (ad_tessera_dtype.c) against
 * MPI itself: for every combiner, the bytes the dataloop's segment walk
 * picks out of a patterned buffer must be the bytes MPI_Pack packs, in the
 * same order; size, extent and lower bound must agree; a second lookup
 * must hit the cache. Needs no file system (one rank is enough).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad_tessera_dtype.h"
#include "mpi_check.h"

#define COUNT 3 /* instances of each type, so tiling at the extent is tested */

static MPI_Datatype cur; /* the type under test (mc_test takes no arguments) */

static void compare_with_pack(void)
{
	const struct tdl_dataloop *dl, *again;
	struct adt_dtype_stats before, after;
	struct tdl_segment seg;
	struct tdl_piece pieces[64];
	MPI_Aint lb, extent, tlb, textent;
	MPI_Count size;
	int64_t lo, hi;
	size_t n, span;
	unsigned char *base, *buf, *packed, *walked;
	int position = 0, rc;
	uint64_t at = 0;

	MPI_Type_size_x(cur, &size);
	MPI_Type_get_extent(cur, &lb, &extent);
	MPI_Type_get_true_extent(cur, &tlb, &textent);
	rc = adt_dtype_get(cur, &dl);
	CHECK(rc == 0, "conversion failed: %d", rc);
	CHECK(tdl_size(dl) == (uint64_t)size, "size %llu, MPI says %lld",
	      (unsigned long long)tdl_size(dl), (long long)size);
	CHECK(tdl_extent(dl) == extent, "extent %lld, MPI says %lld", (long long)tdl_extent(dl),
	      (long long)extent);
	CHECK(tdl_lb(dl) == lb, "lb %lld, MPI says %lld", (long long)tdl_lb(dl), (long long)lb);

	/* A buffer covering every byte COUNT instances touch. */
	lo = tlb < 0 ? tlb : 0;
	hi = (int64_t)(COUNT - 1) * extent + tlb + textent;
	if ((int64_t)(COUNT - 1) * extent < 0)
		lo += (int64_t)(COUNT - 1) * extent;
	span = (size_t)(hi - lo) + 16;
	base = malloc(span);
	packed = malloc((size_t)size * COUNT + 1);
	walked = malloc((size_t)size * COUNT + 1);
	CHECK(base && packed && walked, "out of memory");
	for (size_t i = 0; i < span; i++)
		base[i] = (unsigned char)(i * 13 + i / 251);
	buf = base - lo; /* the origin */
	MPI_Pack(buf, COUNT, cur, packed, (int)(size * COUNT), &position, MPI_COMM_SELF);
	CHECK(position == size * COUNT, "MPI_Pack packed %d bytes", position);

	/* Displaced so that every offset is >= 0 (file views may not go below). */
	rc = tdl_segment_init(&seg, dl, COUNT, -lo, 0, (uint64_t)size * COUNT);
	CHECK(rc == 0, "segment init: %d", rc);
	while (!tdl_segment_done(&seg)) {
		rc = tdl_segment_next(&seg, pieces, 64, &n);
		CHECK(rc == 0, "segment next: %d", rc);
		for (size_t i = 0; i < n; i++) {
			CHECK(pieces[i].stream == at, "piece at stream %llu, expected %llu",
			      (unsigned long long)pieces[i].stream, (unsigned long long)at);
			memcpy(walked + at, base + pieces[i].offset, pieces[i].length);
			at += pieces[i].length;
		}
		if (!n)
			break;
	}
	CHECK(at == (uint64_t)size * COUNT, "walk gave %llu bytes of %lld", (unsigned long long)at,
	      (long long)size * COUNT);
	for (uint64_t i = 0; i < at; i++)
		CHECK(walked[i] == packed[i], "stream byte %llu differs from MPI_Pack's",
		      (unsigned long long)i);

	adt_dtype_stats(&before);
	rc = adt_dtype_get(cur, &again);
	adt_dtype_stats(&after);
	CHECK(rc == 0 && again == dl, "second lookup returned another dataloop");
	CHECK(after.hits == before.hits + 1 && after.conversions == before.conversions,
	      "second lookup was not a cache hit");
	free(base);
	free(packed);
	free(walked);
}

static void run(const char *name, MPI_Datatype t)
{
	MPI_Type_commit(&t);
	cur = t;
	mc_test(name, compare_with_pack);
	MPI_Type_free(&t);
}

static void run_named(const char *name, MPI_Datatype t)
{
	cur = t;
	mc_test(name, compare_with_pack);
}

int main(int argc, char **argv)
{
	MPI_Datatype t, u, v;

	MPI_Init(&argc, &argv);
	mc_init();

	run_named("named_int", MPI_INT);
	run_named("named_double", MPI_DOUBLE);
	run_named("named_double_int_pair", MPI_DOUBLE_INT);
	run_named("named_short_int_pair", MPI_SHORT_INT);

	MPI_Type_dup(MPI_INT, &t);
	run("dup", t);
	MPI_Type_contiguous(5, MPI_SHORT, &t);
	run("contiguous", t);
	MPI_Type_vector(4, 3, 7, MPI_INT, &t);
	run("vector", t);
	MPI_Type_vector(3, 2, -4, MPI_INT, &t);
	run("vector_negative_stride", t);
	MPI_Type_create_hvector(3, 2, 37, MPI_SHORT, &t);
	run("hvector", t);
	{
		int bl[3] = {2, 1, 4}, d[3] = {5, 0, 10};
		MPI_Type_indexed(3, bl, d, MPI_DOUBLE, &t);
		run("indexed", t);
	}
	{
		int bl[3] = {1, 3, 2};
		MPI_Aint d[3] = {40, 3, 17};
		MPI_Type_create_hindexed(3, bl, d, MPI_CHAR, &t);
		run("hindexed", t);
	}
	{
		int d[4] = {9, 0, 4, 14};
		MPI_Type_create_indexed_block(4, 2, d, MPI_INT, &t);
		run("indexed_block", t);
	}
	{
		MPI_Aint d[3] = {0, 21, 7};
		MPI_Type_create_hindexed_block(3, 2, d, MPI_SHORT, &t);
		run("hindexed_block", t);
	}
	{
		int bl[3] = {1, 2, 3};
		MPI_Aint d[3] = {0, 8, 24};
		MPI_Datatype ts[3];

		MPI_Type_vector(2, 1, 3, MPI_CHAR, &u);
		ts[0] = MPI_INT;
		ts[1] = MPI_DOUBLE;
		ts[2] = u;
		MPI_Type_create_struct(3, bl, d, ts, &t);
		run("struct", t);
		MPI_Type_free(&u);
	}
	{
		int sizes[3] = {6, 5, 4}, sub[3] = {2, 3, 2}, starts[3] = {1, 2, 1};
		MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t);
		run("subarray_c", t);
		MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_SHORT, &t);
		run("subarray_fortran", t);
	}
	{
		int g[2] = {10, 9}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
		    dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 3};
		MPI_Type_create_darray(6, 4, 2, g, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &t);
		run("darray_c", t);
		int dist2[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE},
		    dargs2[2] = {3, MPI_DISTRIBUTE_DFLT_DARG}, ps2[2] = {3, 1};
		MPI_Type_create_darray(3, 1, 2, g, dist2, dargs2, ps2, MPI_ORDER_FORTRAN, MPI_DOUBLE,
				       &t);
		run("darray_fortran", t);
	}
	MPI_Type_vector(3, 1, 2, MPI_INT, &u);
	MPI_Type_create_resized(u, -4, 40, &t);
	run("resized", t);
	/* nested: a resized vector inside a contiguous inside a dup */
	MPI_Type_create_resized(u, 0, 8, &v);
	MPI_Type_contiguous(4, v, &t);
	MPI_Type_free(&v);
	MPI_Type_dup(t, &v);
	MPI_Type_free(&t);
	run("nested_dup_contiguous_resized_vector", v);
	MPI_Type_free(&u);

	int rc = mc_finish();
	MPI_Finalize();
	return rc;
}
