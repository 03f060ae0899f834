/*
 * tdl_prepare.c - structural validation and derived values of dataloops.
 *
 * Every dataloop, built or decoded, passes through tdl_prepare before use,
 * so the engine may assume: counts and lengths >= 0, children in range, no
 * cycles, depth <= TDL_MAX_DEPTH, and no int64 overflow in any offset,
 * size or extent × count the typemap can produce.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl_int.h"


struct tdl_dataloop *tdl_alloc(int32_t nnodes)
{
	struct tdl_dataloop *dl = calloc(1, sizeof(*dl));

	if (!dl)
		return NULL;
	dl->nodes = calloc(nnodes ? (size_t)nnodes : 1, sizeof(*dl->nodes));
	if (!dl->nodes) {
		free(dl);
		return NULL;
	}
	dl->nnodes = nnodes;
	return dl;
}

void tdl_node_clear(struct tdl_node *n)
{
	free(n->offsets);
	free(n->blocklens);
	free(n->children);
	free(n->prefix);
	n->offsets = n->blocklens = n->prefix = NULL;
	n->children = NULL;
}

void tdl_free(struct tdl_dataloop *dl)
{
	if (!dl)
		return;
	for (int32_t i = 0; i < dl->nnodes; i++)
		tdl_node_clear(&dl->nodes[i]);
	free(dl->nodes);
	free(dl);
}

static void *dup_array(const void *src, size_t n, size_t elsize, int *rc)
{
	void *p;

	if (!src)
		return NULL;
	p = malloc(n ? n * elsize : 1);
	if (!p) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (n)
		memcpy(p, src, n * elsize);
	return p;
}

/* Copies the declared fields; derived arrays are rebuilt by tdl_prepare. */
int tdl_node_copy(struct tdl_node *dst, const struct tdl_node *src)
{
	int rc = 0;
	size_t n = (size_t)src->count;

	*dst = *src;
	dst->prefix = NULL;
	dst->offsets = dup_array(src->offsets, n, sizeof(int64_t), &rc);
	dst->blocklens = dup_array(src->blocklens, n, sizeof(int64_t), &rc);
	dst->children = dup_array(src->children, n, sizeof(int32_t), &rc);
	if (rc)
		tdl_node_clear(dst);
	return rc;
}

static bool add_ovf(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

static bool mul_ovf(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

/* Byte range [lo, hi) spanned by `nel` elements of a child with the given
 * bounds [clo, chi) tiled at cext, starting at off. */
static bool span(int64_t off, int64_t nel, int64_t cext, int64_t clo,
		 int64_t chi, int64_t *lo, int64_t *hi)
{
	int64_t last, a, b;

	if (mul_ovf(nel - 1, cext, &last))
		return false;
	a = last < 0 ? last : 0;
	b = last > 0 ? last : 0;
	return !add_ovf(off, a, &a) && !add_ovf(a, clo, lo) &&
	       !add_ovf(off, b, &b) && !add_ovf(b, chi, hi);
}

/* Block b's bounds into *l, *h, using the child's [lb, lb+extent)
 * (natural) or its true bounds; 1 if the block holds nothing. */
static int block_bounds(const struct tdl_dataloop *dl, const struct tdl_node *n, int64_t b,
			bool natural, int64_t *l, int64_t *h)
{
	int64_t nel = tdl_blk_nel(n, b), clo, chi, off;
	int32_t c = tdl_blk_child(n, b);

	if (nel == 0 || (!natural && tdl_child_size(dl, c) == 0))
		return 1;
	if (natural) {
		clo = c < 0 ? 0 : dl->nodes[c].lb;
		if (add_ovf(clo, tdl_child_extent(dl, c), &chi))
			return -EINVAL;
	} else {
		clo = c < 0 ? 0 : dl->nodes[c].true_lb;
		chi = c < 0 ? 1 : dl->nodes[c].true_ub;
	}
	if (n->kind != TDL_VECTOR)
		off = tdl_blk_off(n, b);
	else if (mul_ovf(b, n->stride, &off))
		return -EINVAL;
	if (!span(off, nel, tdl_child_extent(dl, c), clo, chi, l, h))
		return -EINVAL;
	return 0;
}

/* Bounds over all blocks (block_bounds). Blocks are visited in order,
 * except a vector, whose extreme blocks are first and last. */
static int node_bounds(const struct tdl_dataloop *dl, const struct tdl_node *n,
		       bool natural, int64_t *plo, int64_t *phi, bool *any)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int64_t nb = tdl_nblocks(n);

	*any = false;
	for (int64_t i = 0; i < nb; i++) {
		int64_t b = i, l, h;
		int rc;

		if (n->kind == TDL_VECTOR) {
			if (i > 1)
				break;
			b = i ? nb - 1 : 0;
		}
		rc = block_bounds(dl, n, b, natural, &l, &h);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		if (l < lo)
			lo = l;
		if (h > hi)
			hi = h;
		*any = true;
	}
	*plo = *any ? lo : 0;
	*phi = *any ? hi : 0;
	return 0;
}

int tdl_natural_bounds(const struct tdl_dataloop *dl, const struct tdl_node *n,
		       int64_t *lb, int64_t *extent)
{
	int64_t lo, hi;
	bool any;

	if (node_bounds(dl, n, true, &lo, &hi, &any) ||
	    __builtin_sub_overflow(hi, lo, extent))
		return -EINVAL;
	*lb = lo;
	return 0;
}

/* Size of node idx's blocks (prefix sums into n->prefix if it has one)
 * into *size, and whether they are dense: every block dense and starting
 * where the last ended. A vector's blocks are alike: one is looked at
 * (count may be huge), its size is vector_size's. */
static int sum_blocks(struct tdl_dataloop *dl, int32_t idx, int64_t *size, bool *dense,
		      char *err, size_t errlen)
{
	struct tdl_node *n = &dl->nodes[idx];
	int64_t nb = tdl_nblocks(n), expect = 0;
	int64_t nloop = n->kind == TDL_VECTOR ? (nb > 0) : nb;

	*size = 0;
	*dense = true;
	for (int64_t b = 0; b < nloop; b++) {
		int64_t nel = tdl_blk_nel(n, b), bsize;
		int32_t c = tdl_blk_child(n, b);

		if (n->prefix)
			n->prefix[b] = *size;
		if (mul_ovf(nel, tdl_child_size(dl, c), &bsize) ||
		    add_ovf(*size, bsize, size)) {
			TDL_ERR(err, errlen, "dataloop node %d: size overflows 64 bits", (int)idx);
			return -EINVAL;
		}
		if (bsize == 0)
			continue;
		if (!tdl_child_dense(dl, c) || !*dense)
			*dense = false;
		else if (n->kind == TDL_VECTOR)
			*dense = nb == 1 || n->stride == bsize;
		else if (tdl_blk_off(n, b) != expect)
			*dense = false;
		expect += bsize;
	}
	return 0;
}

/* A vector's size: count blocks of blocklen children. */
static int vector_size(const struct tdl_node *n, int32_t idx, int64_t *size, char *err,
		       size_t errlen)
{
	int64_t bsize = 0;

	if (mul_ovf(n->blocklen, n->csize, &bsize) || mul_ovf(bsize, n->count, size)) {
		TDL_ERR(err, errlen, "dataloop node %d: size overflows 64 bits", (int)idx);
		return -EINVAL;
	}
	return 0;
}

/* The true bounds into n, and the natural ones representable too
 * (parents tile at them). */
static int derive_bounds(struct tdl_dataloop *dl, int32_t idx, char *err, size_t errlen)
{
	struct tdl_node *n = &dl->nodes[idx];
	int64_t lb, ext;
	bool any;

	if (node_bounds(dl, n, false, &n->true_lb, &n->true_ub, &any)) {
		TDL_ERR(err, errlen,
			"dataloop node %d: offset or extent x count overflows 64 bits",
			(int)idx);
		return -EINVAL;
	}
	if (tdl_natural_bounds(dl, n, &lb, &ext)) {
		TDL_ERR(err, errlen, "dataloop node %d: bounds overflow 64 bits", (int)idx);
		return -EINVAL;
	}
	return 0;
}

/* Derived values of one node whose children are done. */
static int derive(struct tdl_dataloop *dl, int32_t idx, char *err,
		  size_t errlen)
{
	struct tdl_node *n = &dl->nodes[idx];
	int64_t size = 0;
	bool dense;
	int rc;

	free(n->prefix);
	n->prefix = NULL;
	if (n->kind == TDL_INDEXED || n->kind == TDL_STRUCT) {
		n->prefix = malloc(((size_t)n->count + 1) * sizeof(int64_t));
		if (!n->prefix)
			return -ENOMEM;
	}
	if (n->kind == TDL_STRUCT)
		n->child = -1; /* unused; keep it a valid reference */
	n->csize = tdl_child_size(dl, n->child);
	n->cext = tdl_child_extent(dl, n->child);
	n->cdense = tdl_child_dense(dl, n->child);
	if ((rc = sum_blocks(dl, idx, &size, &dense, err, errlen)) ||
	    (n->kind == TDL_VECTOR && (rc = vector_size(n, idx, &size, err, errlen))))
		return rc;
	if (n->prefix)
		n->prefix[tdl_nblocks(n)] = size;
	n->size = size;
	if ((rc = derive_bounds(dl, idx, err, errlen)))
		return rc;
	n->dense = size > 0 && dense && n->extent == size;
	return 0;
}

struct walk {
	struct tdl_dataloop *dl;
	uint8_t *state; /* 0 new, 1 on the current path, 2 done */
	char *err;
	size_t errlen;
};

static int visit(struct walk *w, int32_t idx, int d)
{
	struct tdl_node *n = &w->dl->nodes[idx];
	int64_t nb;
	int depth = 0, rc;

	if (w->state[idx] == 2)
		return 0;
	if (w->state[idx] == 1) {
		TDL_ERR(w->err, w->errlen,
			"dataloop node %d: reference cycle", (int)idx);
		return -EINVAL;
	}
	if (d > TDL_MAX_DEPTH) {
		TDL_ERR(w->err, w->errlen,
			"dataloop node %d: deeper than %d levels", (int)idx,
			TDL_MAX_DEPTH);
		return -EINVAL;
	}
	w->state[idx] = 1;
	nb = n->kind == TDL_STRUCT ? n->count : 1;
	for (int64_t b = 0; b < nb; b++) {
		int32_t c = tdl_blk_child(n, b);
		if (c < 0)
			continue;
		rc = visit(w, c, d + 1);
		if (rc)
			return rc;
		if (w->dl->nodes[c].depth > depth)
			depth = w->dl->nodes[c].depth;
	}
	n->depth = depth + 1;
	if (n->depth > TDL_MAX_DEPTH) {
		TDL_ERR(w->err, w->errlen,
			"dataloop node %d: deeper than %d levels", (int)idx,
			TDL_MAX_DEPTH);
		return -EINVAL;
	}
	rc = derive(w->dl, idx, w->err, w->errlen);
	w->state[idx] = 2;
	return rc;
}

/* Node i's per-block arrays: lengths not negative (has_lens), a
 * struct's children nodes. */
static int check_blocks(const struct tdl_dataloop *dl, int32_t i, bool has_lens, char *err,
			size_t errlen)
{
	const struct tdl_node *n = &dl->nodes[i];

	for (int64_t b = 0; has_lens && b < n->count; b++)
		if (n->blocklens[b] < 0) {
			TDL_ERR(err, errlen,
				"dataloop node %d: block length %lld of block %lld is negative",
				(int)i, (long long)n->blocklens[b],
				(long long)b);
			return -EINVAL;
		}
	for (int64_t b = 0; n->kind == TDL_STRUCT && b < n->count; b++)
		if (n->children[b] < -1 || n->children[b] >= dl->nnodes) {
			TDL_ERR(err, errlen,
				"dataloop node %d: child %d of block %lld is not a node",
				(int)i, (int)n->children[b], (long long)b);
			return -EINVAL;
		}
	return 0;
}

/* Field checks that need no other node. */
static int check_node(const struct tdl_dataloop *dl, int32_t i, char *err,
		      size_t errlen)
{
	const struct tdl_node *n = &dl->nodes[i];
	bool arr_off = n->kind >= TDL_BLOCKINDEXED;
	bool arr_len = n->kind >= TDL_INDEXED;

	if (n->kind < TDL_CONTIG || n->kind > TDL_STRUCT) {
		TDL_ERR(err, errlen, "dataloop node %d: unknown kind %d",
			(int)i, n->kind);
		return -EINVAL;
	}
	if (n->count < 0) {
		TDL_ERR(err, errlen, "dataloop node %d: count %lld is negative",
			(int)i, (long long)n->count);
		return -EINVAL;
	}
	if (n->blocklen < 0) {
		TDL_ERR(err, errlen,
			"dataloop node %d: block length %lld is negative",
			(int)i, (long long)n->blocklen);
		return -EINVAL;
	}
	if ((arr_off && !n->offsets && n->count) ||
	    (arr_len && !n->blocklens && n->count) ||
	    (n->kind == TDL_STRUCT && !n->children && n->count)) {
		TDL_ERR(err, errlen, "dataloop node %d: missing arrays",
			(int)i);
		return -EINVAL;
	}
	if (n->kind != TDL_STRUCT &&
	    (n->child < -1 || n->child >= dl->nnodes)) {
		TDL_ERR(err, errlen,
			"dataloop node %d: child %d is not a node", (int)i,
			(int)n->child);
		return -EINVAL;
	}
	return check_blocks(dl, i, arr_len, err, errlen);
}

int tdl_prepare(struct tdl_dataloop *dl, char *err, size_t errlen)
{
	struct walk w = { dl, NULL, err, errlen };
	int64_t entries = 0;
	int rc = 0;

	if (dl->nnodes < 1 || dl->nnodes > TDL_MAX_NODES) {
		TDL_ERR(err, errlen, "dataloop: %d nodes (1 to %d allowed)",
			(int)dl->nnodes, TDL_MAX_NODES);
		return -EINVAL;
	}
	if (dl->root < 0 || dl->root >= dl->nnodes) {
		TDL_ERR(err, errlen, "dataloop: root %d is not a node",
			(int)dl->root);
		return -EINVAL;
	}
	for (int32_t i = 0; i < dl->nnodes; i++) {
		rc = check_node(dl, i, err, errlen);
		if (rc)
			return rc;
		if (dl->nodes[i].kind >= TDL_BLOCKINDEXED)
			entries += dl->nodes[i].count;
		if (entries > TDL_MAX_ENTRIES) {
			TDL_ERR(err, errlen,
				"dataloop node %d: more than %d entries in all",
				(int)i, TDL_MAX_ENTRIES);
			return -EINVAL;
		}
	}
	w.state = calloc((size_t)dl->nnodes, 1);
	if (!w.state)
		return -ENOMEM;
	/* From every node, so cycles and overflow in unreachable nodes are
	 * caught as well. */
	for (int32_t i = 0; i < dl->nnodes && !rc; i++)
		rc = visit(&w, i, 1);
	free(w.state);
	return rc;
}

uint64_t tdl_size(const struct tdl_dataloop *dl)
{
	return (uint64_t)dl->nodes[dl->root].size;
}

int64_t tdl_extent(const struct tdl_dataloop *dl)
{
	return dl->nodes[dl->root].extent;
}

int64_t tdl_lb(const struct tdl_dataloop *dl)
{
	return dl->nodes[dl->root].lb;
}

int64_t tdl_true_lb(const struct tdl_dataloop *dl)
{
	return dl->nodes[dl->root].true_lb;
}

int64_t tdl_true_ub(const struct tdl_dataloop *dl)
{
	return dl->nodes[dl->root].true_ub;
}

int tdl_node_count(const struct tdl_dataloop *dl)
{
	return dl->nnodes;
}

size_t tdl_mem_bytes(const struct tdl_dataloop *dl)
{
	size_t bytes = sizeof(*dl) + (size_t)dl->nnodes * sizeof(dl->nodes[0]);

	for (int32_t i = 0; i < dl->nnodes; i++) {
		const struct tdl_node *n = &dl->nodes[i];
		size_t c = (size_t)n->count;

		if (n->offsets)
			bytes += c * sizeof(n->offsets[0]);
		if (n->blocklens)
			bytes += c * sizeof(n->blocklens[0]);
		if (n->children)
			bytes += c * sizeof(n->children[0]);
		if (n->prefix)
			bytes += (c + 1) * sizeof(n->prefix[0]);
	}
	return bytes;
}

int tdl_depth(const struct tdl_dataloop *dl)
{
	return dl->nodes[dl->root].depth;
}

int tdl_check_view(const struct tdl_dataloop *dl, uint64_t count, int64_t disp,
		   char *err, size_t errlen)
{
	const struct tdl_node *r = &dl->nodes[dl->root];
	int64_t lo, hi, total;

	if (count > INT64_MAX ||
	    __builtin_mul_overflow((int64_t)count, r->size, &total)) {
		TDL_ERR(err, errlen, "dataloop view: count %llu x size overflows",
			(unsigned long long)count);
		return -EINVAL;
	}
	if (count == 0 || r->size == 0)
		return 0;
	if (!span(disp, (int64_t)count, r->extent, r->true_lb, r->true_ub, &lo,
		  &hi)) {
		TDL_ERR(err, errlen,
			"dataloop view: extent x count %llu overflows 64 bits",
			(unsigned long long)count);
		return -EINVAL;
	}
	if (lo < 0) {
		TDL_ERR(err, errlen,
			"dataloop view: file offset %lld is negative at displacement %lld",
			(long long)lo, (long long)disp);
		return -EINVAL;
	}
	return 0;
}
