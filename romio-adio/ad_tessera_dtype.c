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

static int convert_derived(MPI_Datatype t, int combiner, int ni, int na, int nd,
			   struct tdl_dataloop **out)
{
	int *ints = malloc((size_t)(ni ? ni : 1) * sizeof(*ints));
	MPI_Aint *addrs = malloc((size_t)(na ? na : 1) * sizeof(*addrs));
	MPI_Datatype *types = malloc((size_t)(nd ? nd : 1) * sizeof(*types));
	const struct tdl_dataloop **inner = calloc((size_t)(nd ? nd : 1), sizeof(*inner));
	int64_t *a = NULL, *b = NULL, *c = NULL;
	int rc = 0, got_contents = 0;

	if (!ints || !addrs || !types || !inner) {
		rc = -ENOMEM;
		goto out;
	}
	MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types);
	got_contents = 1;
	for (int i = 0; i < nd && !rc; i++)
		rc = adt_dtype_get(types[i], &inner[i]);
	if (rc)
		goto out;

	switch (combiner) {
	case MPI_COMBINER_DUP:
		rc = tdl_dup(inner[0], out);
		break;
	case MPI_COMBINER_CONTIGUOUS:
		rc = tdl_contig(ints[0], inner[0], out);
		break;
	case MPI_COMBINER_VECTOR:
		rc = tdl_vector(ints[0], ints[1], ints[2], inner[0], out);
		break;
	case MPI_COMBINER_HVECTOR:
		rc = tdl_hvector(ints[0], ints[1], (int64_t)addrs[0], inner[0], out);
		break;
	case MPI_COMBINER_INDEXED:
		a = widen_ints(ints + 1, ints[0]);
		b = widen_ints(ints + 1 + ints[0], ints[0]);
		rc = a && b ? tdl_indexed(ints[0], a, b, inner[0], out) : -ENOMEM;
		break;
	case MPI_COMBINER_HINDEXED:
		a = widen_ints(ints + 1, ints[0]);
		b = widen_addrs(addrs, ints[0]);
		rc = a && b ? tdl_hindexed(ints[0], a, b, inner[0], out) : -ENOMEM;
		break;
	case MPI_COMBINER_INDEXED_BLOCK:
		a = widen_ints(ints + 2, ints[0]);
		rc = a ? tdl_indexed_block(ints[0], ints[1], a, inner[0], out) : -ENOMEM;
		break;
	case MPI_COMBINER_HINDEXED_BLOCK:
		a = widen_addrs(addrs, ints[0]);
		rc = a ? tdl_hindexed_block(ints[0], ints[1], a, inner[0], out) : -ENOMEM;
		break;
	case MPI_COMBINER_STRUCT:
		a = widen_ints(ints + 1, ints[0]);
		b = widen_addrs(addrs, ints[0]);
		rc = a && b ? tdl_struct(ints[0], a, b, inner, out) : -ENOMEM;
		break;
	case MPI_COMBINER_SUBARRAY: {
		int n = ints[0];

		a = widen_ints(ints + 1, n);
		b = widen_ints(ints + 1 + n, n);
		c = widen_ints(ints + 1 + 2 * n, n);
		rc = a && b && c ? tdl_subarray(n, a, b, c, order_of(ints[1 + 3 * n]), inner[0], out)
				 : -ENOMEM;
		break;
	}
	case MPI_COMBINER_DARRAY: {
		int n = ints[2];
		const int *distribs = ints + 3 + n, *dargs = ints + 3 + 2 * n,
			  *psizes = ints + 3 + 3 * n;
		int *d = malloc((size_t)(n ? n : 1) * sizeof(*d));
		int *g = malloc((size_t)(n ? n : 1) * sizeof(*g));

		a = widen_ints(ints + 3, n);
		if (!a || !d || !g)
			rc = -ENOMEM;
		else {
			for (int i = 0; i < n; i++) {
				d[i] = distrib_of(distribs[i]);
				g[i] = dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? TDL_DISTRIBUTE_DFLT_DARG
									     : dargs[i];
			}
			rc = tdl_darray(ints[0], ints[1], n, a, d, g, psizes,
					order_of(ints[3 + 4 * n]), inner[0], out);
		}
		free(d);
		free(g);
		break;
	}
	case MPI_COMBINER_RESIZED:
		rc = tdl_resized(inner[0], (int64_t)addrs[0], (int64_t)addrs[1], out);
		break;
	default:
		rc = -ENOTSUP;
		break;
	}
out:
	if (got_contents)
		for (int i = 0; i < nd; i++) {
			int e_ni, e_na, e_nd, e_comb;

			MPI_Type_get_envelope(types[i], &e_ni, &e_na, &e_nd, &e_comb);
			if (e_comb != MPI_COMBINER_NAMED)
				MPI_Type_free(&types[i]);
		}
	free(a);
	free(b);
	free(c);
	free(ints);
	free(addrs);
	free(types);
	free(inner);
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
