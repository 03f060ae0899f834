/*
 * tdl_darray.c - subarray and darray builders, composed from the basic
 * constructors one array dimension at a time, fastest dimension first.
 *
 * Both results have lb 0 and the extent of the whole global array, as in
 * MPI, so a file view tiles whole arrays. The process grid of a darray is
 * row-major whatever the array order (MPI-3.1 §4.1.4).
 */
#include <errno.h>
#include <stdlib.h>

#include "tdl_int.h"

/* Replace *t by f(*t) and free the old one; keeps the chain readable. */
static int step(struct tdl_dataloop **t, int rc, struct tdl_dataloop **next)
{
	if (rc)
		return rc;
	tdl_free(*t);
	*t = *next; /* read after the builder ran, not as an argument */
	return 0;
}

/* The d-th dimension to apply: fastest (last in C order) first. */
static int dim_at(int ndims, int order, int i)
{
	return order == TDL_ORDER_C ? ndims - 1 - i : i;
}

static int order_valid(int order)
{
	return order == TDL_ORDER_C || order == TDL_ORDER_FORTRAN;
}

/* A subarray's shape: every dimension's piece inside it. */
static int subarray_valid(int ndims, const int64_t *sizes, const int64_t *subsizes,
			  const int64_t *starts, int order)
{
	if (ndims < 1 || ndims > TDL_MAX_DEPTH - 4 || !order_valid(order))
		return 0;
	for (int d = 0; d < ndims; d++)
		if (sizes[d] < 1 || subsizes[d] < 0 || starts[d] < 0 ||
		    subsizes[d] > sizes[d] || starts[d] > sizes[d] - subsizes[d])
			return 0;
	return 1;
}

int tdl_subarray(int ndims, const int64_t *sizes, const int64_t *subsizes,
		 const int64_t *starts, int order,
		 const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	struct tdl_dataloop *t = NULL, *n = NULL;
	int64_t stride, disp = 0, ext = tdl_extent(old);
	int rc;

	if (!subarray_valid(ndims, sizes, subsizes, starts, order))
		return -EINVAL;
	rc = tdl_dup(old, &t);
	stride = ext;
	for (int i = 0; i < ndims && !rc; i++) {
		int d = dim_at(ndims, order, i);
		int64_t off;

		if (__builtin_mul_overflow(starts[d], stride, &off) ||
		    __builtin_add_overflow(disp, off, &disp)) {
			rc = -EINVAL;
			break;
		}
		if (i == 0)
			rc = step(&t, tdl_contig(subsizes[d], t, &n), &n);
		else
			rc = step(&t, tdl_hvector(subsizes[d], 1, stride, t, &n),
				  &n);
		if (!rc && __builtin_mul_overflow(stride, sizes[d], &stride))
			rc = -EINVAL;
	}
	if (!rc)
		rc = step(&t, tdl_hindexed_block(1, 1, &disp, t, &n), &n);
	if (!rc)
		rc = step(&t, tdl_resized(t, 0, stride, &n), &n);
	if (rc) {
		tdl_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* Runs of indices of one dimension owned by grid coordinate c. */
static int dim_runs(int64_t g, int distrib, int darg, int p, int c,
		    int64_t **starts, int64_t **lens, int64_t *nruns)
{
	int64_t k, n = 0, cap;

	*starts = *lens = NULL;
	switch (distrib) {
	case TDL_DISTRIBUTE_NONE:
		if (p != 1)
			return -EINVAL;
		k = g;
		break;
	case TDL_DISTRIBUTE_BLOCK:
		k = darg == TDL_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
		if (k < 1 || k * p < g)
			return -EINVAL;
		break;
	case TDL_DISTRIBUTE_CYCLIC:
		k = darg == TDL_DISTRIBUTE_DFLT_DARG ? 1 : darg;
		if (k < 1)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	/* Block is cyclic with one round: blocks of k dealt round-robin. */
	cap = g / ((int64_t)k * p) + 2;
	if (cap > TDL_MAX_ENTRIES)
		return -EINVAL;
	*starts = malloc((size_t)cap * sizeof(int64_t));
	*lens = malloc((size_t)cap * sizeof(int64_t));
	if (!*starts || !*lens) {
		free(*starts);
		free(*lens);
		return -ENOMEM;
	}
	for (int64_t s = (int64_t)c * k; s < g; s += (int64_t)k * p) {
		(*starts)[n] = s;
		(*lens)[n++] = s + k <= g ? k : g - s;
	}
	*nruns = n;
	return 0;
}

/* A darray's shape: a grid of exactly size processes, rank in it; its
 * row-major grid coordinates into coords. */
static int darray_grid(int size, int rank, int ndims, const int64_t *gsizes,
		       const int *psizes, int order, int *coords)
{
	int64_t procs = 1;

	if (ndims < 1 || ndims > TDL_MAX_DEPTH / 2 - 2 || size < 1 ||
	    rank < 0 || rank >= size || !order_valid(order))
		return -EINVAL;
	for (int d = 0; d < ndims; d++) {
		if (gsizes[d] < 1 || psizes[d] < 1)
			return -EINVAL;
		procs *= psizes[d];
		if (procs > size)
			return -EINVAL;
	}
	if (procs != size)
		return -EINVAL;
	for (int d = ndims - 1, r = rank; d >= 0; d--) {
		coords[d] = r % psizes[d];
		r /= psizes[d];
	}
	return 0;
}

/* One dimension applied to *t: its elements tile at *stride, and the
 * runs this process owns (nruns at starts, in elements) are kept; *stride
 * becomes the next dimension's. */
static int darray_dim(struct tdl_dataloop **t, int64_t *stride, int64_t gsize,
		      int64_t *starts, const int64_t *lens, int64_t nruns)
{
	struct tdl_dataloop *n = NULL;
	int rc = step(t, tdl_resized(*t, 0, *stride, &n), &n);

	for (int64_t k = 0; !rc && k < nruns; k++)
		if (__builtin_mul_overflow(starts[k], *stride, &starts[k]))
			rc = -EINVAL;
	if (!rc)
		rc = step(t, tdl_hindexed(nruns, lens, starts, *t, &n), &n);
	if (!rc && __builtin_mul_overflow(*stride, gsize, stride))
		rc = -EINVAL;
	return rc;
}

int tdl_darray(int size, int rank, int ndims, const int64_t *gsizes,
	       const int *distribs, const int *dargs, const int *psizes,
	       int order, const struct tdl_dataloop *old,
	       struct tdl_dataloop **out)
{
	struct tdl_dataloop *t = NULL, *n = NULL;
	int64_t stride = tdl_extent(old);
	int coords[TDL_MAX_DEPTH];
	int rc = darray_grid(size, rank, ndims, gsizes, psizes, order, coords);

	if (rc)
		return rc;
	rc = tdl_dup(old, &t);
	for (int i = 0; i < ndims && !rc; i++) {
		int d = dim_at(ndims, order, i);
		int64_t *starts, *lens, nruns;

		rc = dim_runs(gsizes[d], distribs[d], dargs[d], psizes[d],
			      coords[d], &starts, &lens, &nruns);
		if (rc)
			break;
		rc = darray_dim(&t, &stride, gsizes[d], starts, lens, nruns);
		free(starts);
		free(lens);
	}
	if (!rc)
		rc = step(&t, tdl_resized(t, 0, stride, &n), &n);
	if (rc) {
		tdl_free(t);
		return rc;
	}
	*out = t;
	return 0;
}
