/*
 * ad_tessera_dtype.c - MPI datatypes to dataloops (see ad_tessera_dtype.h).
 *
 * A derived type is taken apart with MPI_Type_get_envelope and
 * MPI_Type_get_contents; its inner types convert first (through the same
 * cache), then the builder that mirrors the constructor makes the node.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ad_tessera_dtype.h"

static int keyval = MPI_KEYVAL_INVALID;
static struct adt_dtype_stats stats;

/* Named types: few, immortal. */
#define NAMED_MAX 128
static struct { MPI_Datatype type; struct tdl_dataloop *dl; } named[NAMED_MAX];
static int n_named;

static int free_attr(MPI_Datatype type, int key, void *value, void *extra)
{
	(void)type; (void)key; (void)extra;
	tdl_free(value);
	return MPI_SUCCESS;
}

/* {T value; int index;} pairs: named, but not contiguous. */
struct pair_float { float v; int i; };
struct pair_double { double v; int i; };
struct pair_long { long v; int i; };
struct pair_short { short v; int i; };
struct pair_long_double { long double v; int i; };

static int pair_layout(MPI_Datatype t, int64_t *first_len, int64_t *int_off)
{
#define PAIR(S, T) do { *first_len = sizeof(T); *int_off = offsetof(struct S, i); return 1; } while (0)
	if (t == MPI_FLOAT_INT)
		PAIR(pair_float, float);
	if (t == MPI_DOUBLE_INT)
		PAIR(pair_double, double);
	if (t == MPI_LONG_INT)
		PAIR(pair_long, long);
	if (t == MPI_SHORT_INT)
		PAIR(pair_short, short);
	if (t == MPI_LONG_DOUBLE_INT)
		PAIR(pair_long_double, long double);
#undef PAIR
	return 0;
}

static int convert_named(MPI_Datatype t, struct tdl_dataloop **out)
{
	MPI_Count size, lb, extent;
	struct tdl_dataloop *parts[2] = {NULL, NULL}, *st = NULL;
	int64_t first_len, int_off;
	int rc;

	MPI_Type_size_x(t, &size);
	MPI_Type_get_extent_x(t, &lb, &extent);
	if (pair_layout(t, &first_len, &int_off)) {
		int64_t blocklens[2] = {1, 1}, displs[2] = {0, int_off};

		rc = tdl_bytes(first_len, &parts[0]);
		if (!rc)
			rc = tdl_bytes((int64_t)sizeof(int), &parts[1]);
		if (!rc)
			rc = tdl_struct(2, blocklens, displs,
					(const struct tdl_dataloop *const *)parts, &st);
		if (!rc)
			rc = tdl_resized(st, lb, extent, out);
		tdl_free(parts[0]);
		tdl_free(parts[1]);
		tdl_free(st);
		return rc;
	}
	if (lb != 0 || size != extent)
		return -ENOTSUP;
	return tdl_bytes(size, out);
}

static int order_of(int mpi_order)
{
	return mpi_order == MPI_ORDER_FORTRAN ? TDL_ORDER_FORTRAN : TDL_ORDER_C;
}

static int distrib_of(int d)
{
	return d == MPI_DISTRIBUTE_BLOCK ? TDL_DISTRIBUTE_BLOCK
	       : d == MPI_DISTRIBUTE_CYCLIC ? TDL_DISTRIBUTE_CYCLIC
					     : TDL_DISTRIBUTE_NONE;
}

/* int64 copies of n ints or addresses. */
static int64_t *widen_ints(const int *v, int n)
{
	int64_t *w = malloc((size_t)(n ? n : 1) * sizeof(*w));

	if (w)
		for (int i = 0; i < n; i++)
			w[i] = v[i];
	return w;
}
static int64_t *widen_addrs(const MPI_Aint *v, int n)
{
	int64_t *w = malloc((size_t)(n ? n : 1) * sizeof(*w));

	if (w)
		for (int i = 0; i < n; i++)
			w[i] = (int64_t)v[i];
	return w;
}

/* What MPI_Type_get_contents gives for one derived type, with the inner
 * types' dataloops (borrowed from the cache). */
struct contents {
	int ni, na, nd;
	int *ints;
	MPI_Aint *addrs;
	MPI_Datatype *types;
	const struct tdl_dataloop **inner;
	int got;        /* types[] came from MPI and must be released */
};

/* Reads t's contents and converts its inner types. On failure what was
 * got is still in c, for contents_release. */
static int contents_get(MPI_Datatype t, int ni, int na, int nd, struct contents *c)
{
	int rc = 0;

	*c = (struct contents){.ni = ni, .na = na, .nd = nd};
	c->ints = malloc((size_t)(ni ? ni : 1) * sizeof(*c->ints));
	c->addrs = malloc((size_t)(na ? na : 1) * sizeof(*c->addrs));
	c->types = malloc((size_t)(nd ? nd : 1) * sizeof(*c->types));
	c->inner = calloc((size_t)(nd ? nd : 1), sizeof(*c->inner));
	if (!c->ints || !c->addrs || !c->types || !c->inner)
		return -ENOMEM;
	MPI_Type_get_contents(t, ni, na, nd, c->ints, c->addrs, c->types);
	c->got = 1;
	for (int i = 0; i < nd && !rc; i++)
		rc = adt_dtype_get(c->types[i], &c->inner[i]);
	return rc;
}

/* The inner types MPI_Type_get_contents returned are new handles, except
 * named ones, which must not be freed. */
static void contents_release(struct contents *c)
{
	if (c->got)
		for (int i = 0; i < c->nd; i++) {
			int e_ni, e_na, e_nd, e_comb;

			MPI_Type_get_envelope(c->types[i], &e_ni, &e_na, &e_nd, &e_comb);
			if (e_comb != MPI_COMBINER_NAMED)
				MPI_Type_free(&c->types[i]);
		}
	free(c->ints);
	free(c->addrs);
	free(c->types);
	free(c->inner);
}

/* The ints are {count, blocklengths[count], displacements[count]}. */
static int build_indexed(const struct contents *c, struct tdl_dataloop **out)
{
	int n = c->ints[0];
	int64_t *lens = widen_ints(c->ints + 1, n), *displs = widen_ints(c->ints + 1 + n, n);
	int rc = lens && displs ? tdl_indexed(n, lens, displs, c->inner[0], out) : -ENOMEM;

	free(lens);
	free(displs);
	return rc;
}

/* The ints are {count, blocklengths[count]}; the byte displacements are
 * the addresses. */
static int build_hindexed(const struct contents *c, struct tdl_dataloop **out)
{
	int n = c->ints[0];
	int64_t *lens = widen_ints(c->ints + 1, n), *displs = widen_addrs(c->addrs, n);
	int rc = lens && displs ? tdl_hindexed(n, lens, displs, c->inner[0], out) : -ENOMEM;

	free(lens);
	free(displs);
	return rc;
}

/* The ints are {count, blocklength, displacements[count]}. */
static int build_indexed_block(const struct contents *c, struct tdl_dataloop **out)
{
	int64_t *displs = widen_ints(c->ints + 2, c->ints[0]);
	int rc = displs ? tdl_indexed_block(c->ints[0], c->ints[1], displs, c->inner[0], out)
			: -ENOMEM;

	free(displs);
	return rc;
}

/* The ints are {count, blocklength}; the byte displacements are the
 * addresses. */
static int build_hindexed_block(const struct contents *c, struct tdl_dataloop **out)
{
	int64_t *displs = widen_addrs(c->addrs, c->ints[0]);
	int rc = displs ? tdl_hindexed_block(c->ints[0], c->ints[1], displs, c->inner[0], out)
			: -ENOMEM;

	free(displs);
	return rc;
}

/* The ints are {count, blocklengths[count]}; one inner type per block. */
static int build_struct(const struct contents *c, struct tdl_dataloop **out)
{
	int n = c->ints[0];
	int64_t *lens = widen_ints(c->ints + 1, n), *displs = widen_addrs(c->addrs, n);
	int rc = lens && displs ? tdl_struct(n, lens, displs, c->inner, out) : -ENOMEM;

	free(lens);
	free(displs);
	return rc;
}

/* The ints are {ndims, sizes[ndims], subsizes[ndims], starts[ndims],
 * order}. */
static int build_subarray(const struct contents *c, struct tdl_dataloop **out)
{
	int n = c->ints[0];
	int64_t *sizes = widen_ints(c->ints + 1, n), *subsizes = widen_ints(c->ints + 1 + n, n),
		*starts = widen_ints(c->ints + 1 + 2 * n, n);
	int rc = -ENOMEM;

	if (sizes && subsizes && starts)
		rc = tdl_subarray(n, sizes, subsizes, starts, order_of(c->ints[1 + 3 * n]),
				  c->inner[0], out);
	free(sizes);
	free(subsizes);
	free(starts);
	return rc;
}

/* The ints are {size, rank, ndims, gsizes[ndims], distribs[ndims],
 * dargs[ndims], psizes[ndims], order}; distributions and default
 * arguments are translated to the builder's names. */
static int build_darray(const struct contents *c, struct tdl_dataloop **out)
{
	const int *ints = c->ints;
	int n = ints[2];
	const int *distribs = ints + 3 + n, *dargs = ints + 3 + 2 * n, *psizes = ints + 3 + 3 * n;
	int *d = malloc((size_t)(n ? n : 1) * sizeof(*d));
	int *g = malloc((size_t)(n ? n : 1) * sizeof(*g));
	int64_t *gsizes = widen_ints(ints + 3, n);
	int rc = -ENOMEM;

	if (gsizes && d && g) {
		for (int i = 0; i < n; i++) {
			d[i] = distrib_of(distribs[i]);
			g[i] = dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? TDL_DISTRIBUTE_DFLT_DARG
								     : dargs[i];
		}
		rc = tdl_darray(ints[0], ints[1], n, gsizes, d, g, psizes,
				order_of(ints[3 + 4 * n]), c->inner[0], out);
	}
	free(gsizes);
	free(d);
	free(g);
	return rc;
}

/* The builder that mirrors the constructor. */
static int build_from_contents(int combiner, const struct contents *c,
			       struct tdl_dataloop **out)
{
	const int *ints = c->ints;

	switch (combiner) {
	case MPI_COMBINER_DUP:
		return tdl_dup(c->inner[0], out);
	case MPI_COMBINER_CONTIGUOUS:
		return tdl_contig(ints[0], c->inner[0], out);
	case MPI_COMBINER_VECTOR:
		return tdl_vector(ints[0], ints[1], ints[2], c->inner[0], out);
	case MPI_COMBINER_HVECTOR:
		return tdl_hvector(ints[0], ints[1], (int64_t)c->addrs[0], c->inner[0], out);
	case MPI_COMBINER_INDEXED:
		return build_indexed(c, out);
	case MPI_COMBINER_HINDEXED:
		return build_hindexed(c, out);
	case MPI_COMBINER_INDEXED_BLOCK:
		return build_indexed_block(c, out);
	case MPI_COMBINER_HINDEXED_BLOCK:
		return build_hindexed_block(c, out);
	case MPI_COMBINER_STRUCT:
		return build_struct(c, out);
	case MPI_COMBINER_SUBARRAY:
		return build_subarray(c, out);
	case MPI_COMBINER_DARRAY:
		return build_darray(c, out);
	case MPI_COMBINER_RESIZED:
		return tdl_resized(c->inner[0], (int64_t)c->addrs[0], (int64_t)c->addrs[1], out);
	default:
		return -ENOTSUP;
	}
}

static int convert_derived(MPI_Datatype t, int combiner, int ni, int na, int nd,
			   struct tdl_dataloop **out)
{
	struct contents c;
	int rc = contents_get(t, ni, na, nd, &c);

	if (!rc)
		rc = build_from_contents(combiner, &c, out);
	contents_release(&c);
	return rc;
}

/* MPI pads a type's extent to the alignment of what it holds (the
 * "epsilon" of structs, and Open MPI does it for the h* constructors too);
 * the builders give the natural bounds. Take MPI's lb and extent. */
static int match_bounds(MPI_Datatype type, struct tdl_dataloop **dl)
{
	struct tdl_dataloop *resized;
	MPI_Aint lb, extent;
	int rc;

	MPI_Type_get_extent(type, &lb, &extent);
	if (tdl_lb(*dl) == lb && tdl_extent(*dl) == extent)
		return 0;
	rc = tdl_resized(*dl, lb, extent, &resized);
	tdl_free(*dl);
	*dl = rc ? NULL : resized;
	return rc;
}

const char *adt_dtype_why(int rc)
{
	switch (rc) {
	case -ENOTSUP: return "a combiner dataloops do not describe (Fortran-only)";
	case -EINVAL: return "beyond the dataloop limits (4096 distinct nodes, 2^22 offsets, "
			     "24 levels)";
	case -ENOMEM: return "out of memory";
	default: return strerror(-rc);
	}
}

int adt_dtype_get(MPI_Datatype type, const struct tdl_dataloop **out)
{
	struct tdl_dataloop *dl = NULL;
	int ni, na, nd, combiner, flag = 0, rc;
	void *cached;

	MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
	if (combiner == MPI_COMBINER_NAMED) {
		for (int i = 0; i < n_named; i++)
			if (named[i].type == type) {
				stats.hits++;
				*out = named[i].dl;
				return 0;
			}
		if (n_named == NAMED_MAX)
			return -ENOMEM;
		rc = convert_named(type, &dl);
		if (rc)
			return rc;
		stats.conversions++;
		named[n_named].type = type;
		named[n_named++].dl = dl;
		*out = dl;
		return 0;
	}
	if (keyval == MPI_KEYVAL_INVALID &&
	    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, free_attr, &keyval, NULL) != MPI_SUCCESS)
		return -ENOMEM;
	MPI_Type_get_attr(type, keyval, &cached, &flag);
	if (flag) {
		stats.hits++;
		*out = cached;
		return 0;
	}
	rc = convert_derived(type, combiner, ni, na, nd, &dl);
	if (rc)
		return rc;
	rc = match_bounds(type, &dl);
	if (rc)
		return rc;
	stats.conversions++;
	MPI_Type_set_attr(type, keyval, dl);
	*out = dl;
	return 0;
}

void adt_dtype_stats(struct adt_dtype_stats *out)
{
	*out = stats;
}
