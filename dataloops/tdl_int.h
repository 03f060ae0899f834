/*
 * tdl_int.h - in-memory representation of dataloops, private to dataloops/.
 *
 * A dataloop is an array of nodes; children are referenced by index (-1 is
 * a single byte). Nodes may be shared (a DAG) but never form cycles. After
 * tdl_prepare every node carries derived values so the segment engine
 * never recomputes sizes or searches more than one level at a time.
 */
#ifndef TESSERA_TDL_INT_H
#define TESSERA_TDL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "tdl.h"

struct tdl_node {
	int kind;           /* enum tdl_kind */
	int32_t child;      /* all kinds but struct; -1: one byte */
	int64_t count;      /* blocks (contig: elements) */
	int64_t blocklen;   /* vector, blockindexed */
	int64_t stride;     /* vector, bytes */
	int64_t *offsets;   /* blockindexed, indexed, struct: count entries */
	int64_t *blocklens; /* indexed, struct: count entries */
	int32_t *children;  /* struct: count entries (-1: one byte) */
	int64_t lb, extent; /* as declared (natural or resized) */

	/* Derived by tdl_prepare. */
	int64_t size;             /* data bytes of one instance */
	int64_t true_lb, true_ub; /* byte bounds; 0,0 when size is 0 */
	bool dense;     /* typemap is bytes [0,size) in order, extent == size */
	int depth;      /* nodes on the longest path down, this one included */
	int64_t csize, cext; /* uniform child's size and extent (not struct) */
	bool cdense;
	int64_t *prefix; /* indexed, struct: stream offset of each block,
			  * count + 1 entries */
};

struct tdl_dataloop {
	int32_t nnodes;
	int32_t root;
	struct tdl_node *nodes;
};

/* Properties of a child reference (node index or -1 for a byte). */
static inline int64_t tdl_child_size(const struct tdl_dataloop *dl, int32_t c)
{
	return c < 0 ? 1 : dl->nodes[c].size;
}

static inline int64_t tdl_child_extent(const struct tdl_dataloop *dl,
				       int32_t c)
{
	return c < 0 ? 1 : dl->nodes[c].extent;
}

static inline bool tdl_child_dense(const struct tdl_dataloop *dl, int32_t c)
{
	return c < 0 || dl->nodes[c].dense;
}

/* Block b of node n: byte offset, elements, child. */
static inline int64_t tdl_blk_off(const struct tdl_node *n, int64_t b)
{
	switch (n->kind) {
	case TDL_CONTIG: return 0;
	case TDL_VECTOR: return b * n->stride;
	default: return n->offsets[b];
	}
}

static inline int64_t tdl_blk_nel(const struct tdl_node *n, int64_t b)
{
	switch (n->kind) {
	case TDL_CONTIG: return n->count;
	case TDL_VECTOR:
	case TDL_BLOCKINDEXED: return n->blocklen;
	default: return n->blocklens[b];
	}
}

static inline int32_t tdl_blk_child(const struct tdl_node *n, int64_t b)
{
	return n->kind == TDL_STRUCT ? n->children[b] : n->child;
}

static inline int64_t tdl_nblocks(const struct tdl_node *n)
{
	return n->kind == TDL_CONTIG ? 1 : n->count;
}

/* Validate structure and compute derived values of every node. On error
 * returns -EINVAL and writes the broken rule into err. */
int tdl_prepare(struct tdl_dataloop *dl, char *err, size_t errlen);

/* Allocation helpers. */
struct tdl_dataloop *tdl_alloc(int32_t nnodes);
void tdl_node_clear(struct tdl_node *n);
int tdl_node_copy(struct tdl_node *dst, const struct tdl_node *src);

/* Natural lb and extent of node n (children prepared). */
int tdl_natural_bounds(const struct tdl_dataloop *dl, const struct tdl_node *n,
		       int64_t *lb, int64_t *extent);

#define TDL_ERR(err, errlen, ...)                                     \
	do {                                                          \
		if ((err) && (errlen))                                \
			snprintf((err), (errlen), __VA_ARGS__);       \
	} while (0)

#endif /* TESSERA_TDL_INT_H */
