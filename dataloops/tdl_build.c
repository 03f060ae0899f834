/*
 * tdl_build.c - dataloop constructors mirroring MPI's type constructors.
 *
 * Each builder copies its input dataloop(s) into a new node array and
 * appends one node on top, so inputs are never shared between dataloops
 * and a dataloop is freed with one tdl_free. Children precede parents.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl_int.h"

/* ------------------------------------------------- identical inputs
 *
 * Inputs with the same nodes are copied once, not only the same input
 * twice: parallel HDF5 hands ROMIO a struct of one separately built (but
 * identical) type per chunk, tens of thousands of them, which would
 * otherwise exceed TDL_MAX_NODES.
 */

static uint64_t mix(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull; /* FNV-1a */
	return h;
}

static int64_t node_entries(const struct tdl_node *n, int which)
{
	/* which: 0 offsets, 1 blocklens, 2 children */
	switch (n->kind) {
	case TDL_BLOCKINDEXED: return which == 0 ? n->count : 0;
	case TDL_INDEXED: return which < 2 ? n->count : 0;
	case TDL_STRUCT: return n->count;
	default: return 0;
	}
}

static uint64_t dl_hash(const struct tdl_dataloop *dl)
{
	uint64_t h = mix(1469598103934665603ull, &dl->root, sizeof(dl->root));

	for (int32_t i = 0; i < dl->nnodes; i++) {
		const struct tdl_node *n = &dl->nodes[i];
		int64_t f[6] = { n->kind, n->child, n->count, n->blocklen, n->stride, n->lb };

		h = mix(h, f, sizeof(f));
		h = mix(h, &n->extent, sizeof(n->extent));
		h = mix(h, n->offsets, (size_t)node_entries(n, 0) * sizeof(*n->offsets));
		h = mix(h, n->blocklens, (size_t)node_entries(n, 1) * sizeof(*n->blocklens));
		h = mix(h, n->children, (size_t)node_entries(n, 2) * sizeof(*n->children));
	}
	return h;
}

static int same_array(const void *a, const void *b, int64_t n, size_t size)
{
	return n == 0 || !memcmp(a, b, (size_t)n * size);
}

static int same_nodes(const struct tdl_dataloop *a, const struct tdl_dataloop *b)
{
	if (a == b)
		return 1;
	if (a->nnodes != b->nnodes || a->root != b->root)
		return 0;
	for (int32_t i = 0; i < a->nnodes; i++) {
		const struct tdl_node *x = &a->nodes[i], *y = &b->nodes[i];

		if (x->kind != y->kind || x->child != y->child || x->count != y->count ||
		    x->blocklen != y->blocklen || x->stride != y->stride || x->lb != y->lb ||
		    x->extent != y->extent ||
		    !same_array(x->offsets, y->offsets, node_entries(x, 0), sizeof(*x->offsets)) ||
		    !same_array(x->blocklens, y->blocklens, node_entries(x, 1),
				sizeof(*x->blocklens)) ||
		    !same_array(x->children, y->children, node_entries(x, 2),
				sizeof(*x->children)))
			return 0;
	}
	return 1;
}

/* first[k]: the lowest j with olds[j] the same as olds[k]. */
static int find_firsts(const struct tdl_dataloop *const *olds, int64_t nold, int32_t *first)
{
	size_t cap = 16, mask;
	int64_t *table;

	while (cap < 2 * (size_t)nold)
		cap *= 2;
	mask = cap - 1;
	table = malloc(cap * sizeof(*table));
	if (!table)
		return -ENOMEM;
	memset(table, -1, cap * sizeof(*table));
	for (int64_t k = 0; k < nold; k++) {
		size_t at = (size_t)dl_hash(olds[k]) & mask;

		while (table[at] >= 0 && !same_nodes(olds[table[at]], olds[k]))
			at = (at + 1) & mask;
		if (table[at] < 0)
			table[at] = k;
		first[k] = (int32_t)table[at];
	}
	free(table);
	return 0;
}

/* Adds `shift` to a copied node's child references (bytes, -1, stay). */
static void shift_children(struct tdl_node *n, int32_t shift)
{
	if (n->kind != TDL_STRUCT) {
		if (n->child >= 0)
			n->child += shift;
		return;
	}
	for (int64_t b = 0; b < n->count; b++)
		if (n->children[b] >= 0)
			n->children[b] += shift;
}

/* Copies o's nodes to dl->nodes[pos..], their references moved with them. */
static int copy_input(struct tdl_dataloop *dl, const struct tdl_dataloop *o, int32_t pos)
{
	for (int32_t i = 0; i < o->nnodes; i++) {
		struct tdl_node *n = &dl->nodes[pos + i];
		int rc = tdl_node_copy(n, &o->nodes[i]);

		if (rc)
			return rc;
		shift_children(n, pos);
	}
	return 0;
}

/* Copies the distinct inputs into dl from node 0 on. base[k] holds, on
 * entry, the first input the same as olds[k] (find_firsts) and, on
 * return, where olds[k]'s nodes begin; *end is the first node after them. */
static int copy_inputs(struct tdl_dataloop *dl, const struct tdl_dataloop *const *olds,
		       int64_t nold, int32_t *base, int32_t *end)
{
	int32_t pos = 0;

	for (int64_t k = 0; k < nold; k++) {
		int rc;

		if (base[k] < k) { /* copied already: base[base[k]] is a position */
			base[k] = base[base[k]];
			continue;
		}
		base[k] = pos;
		rc = copy_input(dl, olds[k], pos);
		if (rc)
			return rc;
		pos += olds[k]->nnodes;
	}
	*end = pos;
	return 0;
}

/* Turns top's input numbers into node numbers: input k's root. */
static void link_top(struct tdl_node *top, const struct tdl_dataloop *const *olds,
		     const int32_t *base)
{
	if (top->kind != TDL_STRUCT) {
		if (top->child >= 0)
			top->child = base[top->child] + olds[top->child]->root;
		return;
	}
	for (int64_t b = 0; b < top->count; b++)
		if (top->children[b] >= 0) {
			int32_t k = top->children[b];

			top->children[b] = base[k] + olds[k]->root;
		}
}

/* The root's bounds, given or natural, then the preparation that depends
 * on them. The children are prepared first: natural bounds need their
 * extents, and density depends on the root's extent. */
static int finish_bounds(struct tdl_dataloop *dl, const int64_t *bounds)
{
	struct tdl_node *r = &dl->nodes[dl->root];
	int rc = tdl_prepare(dl, NULL, 0);

	if (rc)
		return rc;
	if (bounds) {
		r->lb = bounds[0];
		r->extent = bounds[1];
	} else if (tdl_natural_bounds(dl, r, &r->lb, &r->extent)) {
		return -EINVAL;
	}
	return tdl_prepare(dl, NULL, 0);
}

/* The nodes of the distinct inputs (base as find_firsts left it) and the
 * top node. */
static int64_t composed_nodes(const struct tdl_dataloop *const *olds, int64_t nold,
			      const int32_t *base)
{
	int64_t total = 1;

	for (int64_t k = 0; k < nold; k++)
		if (base[k] == k)
			total += olds[k]->nnodes;
	return total;
}

/*
 * Builds a dataloop of the nodes of olds[0..nold) plus `top` as root.
 * top's child references k >= 0 name olds[k] and are rewritten to that
 * input's root; -1 stays a byte. top's arrays are taken over (freed on
 * error too). Natural bounds are computed unless `bounds` is given.
 */
static int compose(const struct tdl_dataloop *const *olds, int64_t nold,
		   struct tdl_node *top, const int64_t *bounds,
		   struct tdl_dataloop **out)
{
	int32_t *base = calloc(nold ? (size_t)nold : 1, sizeof(*base)), pos;
	struct tdl_dataloop *dl = NULL;
	int64_t total;
	int rc;

	if (!base) {
		rc = -ENOMEM;
		goto fail;
	}
	/* Inputs the same as an earlier one are copied once. */
	if ((rc = find_firsts(olds, nold, base)))
		goto fail;
	total = composed_nodes(olds, nold, base);
	rc = total > TDL_MAX_NODES ? -EINVAL : -ENOMEM;
	if (total > TDL_MAX_NODES || !(dl = tdl_alloc((int32_t)total)))
		goto fail;
	if ((rc = copy_inputs(dl, olds, nold, base, &pos)))
		goto fail;
	link_top(top, olds, base);
	dl->nodes[pos] = *top;
	memset(top, 0, sizeof(*top));
	dl->root = pos;
	if ((rc = finish_bounds(dl, bounds)))
		goto fail;
	free(base);
	*out = dl;
	return 0;
fail:
	tdl_node_clear(top);
	tdl_free(dl);
	free(base);
	return rc;
}

static int64_t *copy64(const int64_t *src, int64_t n, int64_t scale, int *rc)
{
	int64_t *p = malloc(n > 0 ? (size_t)n * sizeof(*p) : 1);

	if (!p) {
		*rc = -ENOMEM;
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		if (__builtin_mul_overflow(src[i], scale, &p[i]))
			*rc = -EINVAL;
	return p;
}

static int check_count(int64_t count)
{
	return count < 0 || count > TDL_MAX_ENTRIES ? -EINVAL : 0;
}

int tdl_bytes(int64_t n, struct tdl_dataloop **out)
{
	struct tdl_node top = { .kind = TDL_CONTIG, .count = n, .child = -1 };

	if (n < 0)
		return -EINVAL;
	return compose(NULL, 0, &top, NULL, out);
}

int tdl_contig(int64_t count, const struct tdl_dataloop *old,
	       struct tdl_dataloop **out)
{
	struct tdl_node top = { .kind = TDL_CONTIG, .count = count };

	if (count < 0)
		return -EINVAL;
	return compose(&old, 1, &top, NULL, out);
}

int tdl_hvector(int64_t count, int64_t blocklen, int64_t stride_bytes,
		const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	struct tdl_node top = { .kind = TDL_VECTOR, .count = count,
				.blocklen = blocklen, .stride = stride_bytes };

	if (count < 0 || blocklen < 0)
		return -EINVAL;
	return compose(&old, 1, &top, NULL, out);
}

int tdl_vector(int64_t count, int64_t blocklen, int64_t stride,
	       const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	int64_t bytes;

	if (__builtin_mul_overflow(stride, tdl_extent(old), &bytes))
		return -EINVAL;
	return tdl_hvector(count, blocklen, bytes, old, out);
}

static int blockindexed(int64_t count, int64_t blocklen, const int64_t *displs,
			int64_t scale, const struct tdl_dataloop *old,
			struct tdl_dataloop **out)
{
	struct tdl_node top = { .kind = TDL_BLOCKINDEXED, .count = count,
				.blocklen = blocklen };
	int rc = check_count(count);

	if (rc || blocklen < 0)
		return -EINVAL;
	top.offsets = copy64(displs, count, scale, &rc);
	if (rc) {
		tdl_node_clear(&top);
		return rc;
	}
	return compose(&old, 1, &top, NULL, out);
}

int tdl_indexed_block(int64_t count, int64_t blocklen, const int64_t *displs,
		      const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	return blockindexed(count, blocklen, displs, tdl_extent(old), old, out);
}

int tdl_hindexed_block(int64_t count, int64_t blocklen,
		       const int64_t *displs_bytes,
		       const struct tdl_dataloop *old,
		       struct tdl_dataloop **out)
{
	return blockindexed(count, blocklen, displs_bytes, 1, old, out);
}

static int indexed(int64_t count, const int64_t *blocklens,
		   const int64_t *displs, int64_t scale,
		   const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	struct tdl_node top = { .kind = TDL_INDEXED, .count = count };
	int rc = check_count(count);

	if (rc)
		return rc;
	top.offsets = copy64(displs, count, scale, &rc);
	if (!rc)
		top.blocklens = copy64(blocklens, count, 1, &rc);
	for (int64_t b = 0; !rc && b < count; b++)
		if (blocklens[b] < 0)
			rc = -EINVAL;
	if (rc) {
		tdl_node_clear(&top);
		return rc;
	}
	return compose(&old, 1, &top, NULL, out);
}

int tdl_indexed(int64_t count, const int64_t *blocklens, const int64_t *displs,
		const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	return indexed(count, blocklens, displs, tdl_extent(old), old, out);
}

int tdl_hindexed(int64_t count, const int64_t *blocklens,
		 const int64_t *displs_bytes, const struct tdl_dataloop *old,
		 struct tdl_dataloop **out)
{
	return indexed(count, blocklens, displs_bytes, 1, old, out);
}

int tdl_struct(int64_t count, const int64_t *blocklens,
	       const int64_t *displs_bytes,
	       const struct tdl_dataloop *const *types,
	       struct tdl_dataloop **out)
{
	struct tdl_node top = { .kind = TDL_STRUCT, .count = count };
	int rc = check_count(count);

	if (rc)
		return rc;
	top.offsets = copy64(displs_bytes, count, 1, &rc);
	if (!rc)
		top.blocklens = copy64(blocklens, count, 1, &rc);
	if (!rc) {
		top.children = malloc(count ? (size_t)count * sizeof(int32_t)
					    : 1);
		if (!top.children)
			rc = -ENOMEM;
	}
	for (int64_t b = 0; !rc && b < count; b++) {
		if (blocklens[b] < 0)
			rc = -EINVAL;
		else
			top.children[b] = (int32_t)b;
	}
	if (rc) {
		tdl_node_clear(&top);
		return rc;
	}
	return compose(types, count, &top, NULL, out);
}

/* A new root node would change nothing but the bounds, so the copy's root
 * is resized in place: no node is ever a child of its own dataloop's root
 * reference, and the root's typemap does not depend on its own bounds. */
int tdl_resized(const struct tdl_dataloop *old, int64_t lb, int64_t extent,
		struct tdl_dataloop **out)
{
	struct tdl_dataloop *dl;
	int rc = tdl_dup(old, &dl);

	if (rc)
		return rc;
	dl->nodes[dl->root].lb = lb;
	dl->nodes[dl->root].extent = extent;
	rc = tdl_prepare(dl, NULL, 0);
	if (rc) {
		tdl_free(dl);
		return rc;
	}
	*out = dl;
	return 0;
}

int tdl_dup(const struct tdl_dataloop *old, struct tdl_dataloop **out)
{
	struct tdl_dataloop *dl = tdl_alloc(old->nnodes);
	int rc = 0;

	if (!dl)
		return -ENOMEM;
	dl->root = old->root;
	for (int32_t i = 0; i < old->nnodes && !rc; i++)
		rc = tdl_node_copy(&dl->nodes[i], &old->nodes[i]);
	if (!rc)
		rc = tdl_prepare(dl, NULL, 0);
	if (rc) {
		tdl_free(dl);
		return rc;
	}
	*out = dl;
	return 0;
}
