/*
 * tdl_normalize.c - shrink a dataloop without changing its typemap.
 *
 * Rules rewrite one node in place and preserve that node's typemap, lb and
 * extent, so every other node's meaning (and every derived value) stays
 * valid while rules run; a node shared by several parents may therefore
 * be rewritten safely. Nodes no longer reachable are dropped at the end.
 *
 *   fold      a child that is a contig (or dense) whose extent is count x
 *             its element's extent folds into the parent's block lengths
 *   struct    a struct whose blocks all use one child becomes indexed
 *   fuse      vector/contig of a vector whose blocks continue at the same
 *             stride becomes one vector
 *   simplify  one-block or evenly strided nodes become contig/vector;
 *             equal block lengths make indexed blockindexed
 */
#include <errno.h>
#include <stdlib.h>

#include "tdl_int.h"

static bool mul(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

/* If child c can be replaced by `m` elements of *inner, say so. */
static bool foldable(const struct tdl_dataloop *dl, int32_t c, int64_t *m,
		     int32_t *inner)
{
	const struct tdl_node *k;
	int64_t e;

	if (c < 0)
		return false;
	k = &dl->nodes[c];
	if (k->dense) {
		*m = k->size;
		*inner = -1;
		return true;
	}
	if (k->kind != TDL_CONTIG || !mul(k->count, tdl_child_extent(dl, k->child), &e) ||
	    e != k->extent)
		return false;
	*m = k->count;
	*inner = k->child;
	return true;
}

static bool fold(struct tdl_dataloop *dl, struct tdl_node *n)
{
	int64_t m, v;
	int32_t inner;
	bool changed = false;

	if (n->kind == TDL_STRUCT) {
		for (int64_t b = 0; b < n->count; b++)
			if (foldable(dl, n->children[b], &m, &inner) &&
			    mul(n->blocklens[b], m, &v)) {
				n->blocklens[b] = v;
				n->children[b] = inner;
				changed = true;
			}
		return changed;
	}
	if (!foldable(dl, n->child, &m, &inner))
		return false;
	switch (n->kind) {
	case TDL_CONTIG:
		if (!mul(n->count, m, &v))
			return false;
		n->count = v;
		break;
	case TDL_VECTOR:
	case TDL_BLOCKINDEXED:
		if (!mul(n->blocklen, m, &v))
			return false;
		n->blocklen = v;
		break;
	case TDL_INDEXED:
		for (int64_t b = 0; b < n->count; b++)
			if (!mul(n->blocklens[b], m, &v))
				return false;
		for (int64_t b = 0; b < n->count; b++)
			n->blocklens[b] *= m;
		break;
	}
	n->child = inner;
	return true;
}

static bool struct_to_indexed(struct tdl_node *n)
{
	if (n->kind != TDL_STRUCT || n->count == 0)
		return false;
	for (int64_t b = 1; b < n->count; b++)
		if (n->children[b] != n->children[0])
			return false;
	n->child = n->children[0];
	free(n->children);
	n->children = NULL;
	n->kind = TDL_INDEXED;
	return true;
}

/* vector(c1, bl, s1) or contig(bl) of vector(c2, b, s2, X). */
static bool fuse(struct tdl_dataloop *dl, struct tdl_node *n)
{
	const struct tdl_node *v;
	int64_t c1, bl, s1, span, run, total;

	if ((n->kind != TDL_VECTOR && n->kind != TDL_CONTIG) || n->child < 0)
		return false;
	v = &dl->nodes[n->child];
	if (v->kind != TDL_VECTOR)
		return false;
	c1 = n->kind == TDL_VECTOR ? n->count : 1;
	bl = n->kind == TDL_VECTOR ? n->blocklen : n->count;
	s1 = n->kind == TDL_VECTOR ? n->stride : 0;
	if (!mul(v->count, v->stride, &span) || !mul(bl, span, &run) ||
	    !mul(c1, bl, &total) || !mul(total, v->count, &total))
		return false;
	/* Elements of a block continue the inner stride... */
	if (bl != 1 && v->extent != span)
		return false;
	/* ...and so do blocks. */
	if (c1 != 1 && s1 != run)
		return false;
	n->kind = TDL_VECTOR;
	n->count = total;
	n->blocklen = v->blocklen;
	n->stride = v->stride;
	n->child = v->child;
	return true;
}

static void to_contig(struct tdl_node *n, int64_t count, int32_t child)
{
	free(n->offsets);
	free(n->blocklens);
	free(n->children);
	n->offsets = n->blocklens = NULL;
	n->children = NULL;
	n->kind = TDL_CONTIG;
	n->count = count;
	n->child = child;
	n->blocklen = n->stride = 0;
}

static bool simplify(const struct tdl_dataloop *dl, struct tdl_node *n)
{
	int64_t cext;
	int64_t v;

	switch (n->kind) {
	case TDL_VECTOR:
		/* Not n->cext: a rule may just have changed the child. */
		cext = tdl_child_extent(dl, n->child);
		if (n->count == 1 ||
		    (mul(n->blocklen, cext, &v) && v == n->stride &&
		     mul(n->count, n->blocklen, &v))) {
			to_contig(n, n->count == 1 ? n->blocklen
						   : n->count * n->blocklen,
				  n->child);
			return true;
		}
		return false;
	case TDL_BLOCKINDEXED:
		if (n->count >= 1 && n->offsets[0] == 0) {
			int64_t d = n->count > 1 ? n->offsets[1] : 0;
			for (int64_t b = 2; b < n->count; b++)
				if (!mul(b, d, &v) || n->offsets[b] != v)
					return false;
			free(n->offsets);
			n->offsets = NULL;
			n->kind = TDL_VECTOR;
			n->stride = d;
			return true;
		}
		return false;
	case TDL_INDEXED:
		if (n->count == 0)
			return false;
		for (int64_t b = 1; b < n->count; b++)
			if (n->blocklens[b] != n->blocklens[0])
				return false;
		n->blocklen = n->blocklens[0];
		free(n->blocklens);
		n->blocklens = NULL;
		n->kind = TDL_BLOCKINDEXED;
		return true;
	case TDL_STRUCT:
		if (n->count == 1 && n->offsets[0] == 0) {
			to_contig(n, n->blocklens[0], n->children[0]);
			return true;
		}
		return false;
	}
	return false;
}

/* Drop unreachable nodes and renumber. */
static int compact(struct tdl_dataloop *dl)
{
	int32_t *map = malloc((size_t)dl->nnodes * sizeof(*map));
	int32_t *stack = malloc((size_t)dl->nnodes * sizeof(*stack));
	int32_t sp = 0, k = 0;

	if (!map || !stack) {
		free(map);
		free(stack);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < dl->nnodes; i++)
		map[i] = -1;
	map[dl->root] = 0;
	stack[sp++] = dl->root;
	while (sp > 0) {
		const struct tdl_node *n = &dl->nodes[stack[--sp]];
		int64_t nb = n->kind == TDL_STRUCT ? n->count : 1;
		for (int64_t b = 0; b < nb; b++) {
			int32_t c = tdl_blk_child(n, b);
			if (c >= 0 && map[c] < 0) {
				map[c] = 0;
				stack[sp++] = c;
			}
		}
	}
	for (int32_t i = 0; i < dl->nnodes; i++) {
		if (map[i] < 0) {
			tdl_node_clear(&dl->nodes[i]);
			continue;
		}
		map[i] = k;
		dl->nodes[k++] = dl->nodes[i];
	}
	for (int32_t i = 0; i < k; i++) {
		struct tdl_node *n = &dl->nodes[i];
		if (n->kind != TDL_STRUCT && n->child >= 0)
			n->child = map[n->child];
		for (int64_t b = 0; n->kind == TDL_STRUCT && b < n->count; b++)
			if (n->children[b] >= 0)
				n->children[b] = map[n->children[b]];
	}
	dl->root = map[dl->root];
	dl->nnodes = k;
	free(map);
	free(stack);
	return 0;
}

int tdl_normalize(const struct tdl_dataloop *in, struct tdl_dataloop **out)
{
	struct tdl_dataloop *dl;
	bool changed = true;
	int rc = tdl_dup(in, &dl);

	/* Every rule removes a node reference or an array, so this ends;
	 * the bound is only a guard. */
	for (int pass = 0; !rc && changed && pass < 4 * TDL_MAX_DEPTH; pass++) {
		changed = false;
		for (int32_t i = 0; i < dl->nnodes; i++) {
			struct tdl_node *n = &dl->nodes[i];
			while (fold(dl, n) || struct_to_indexed(n) ||
			       fuse(dl, n) || simplify(dl, n))
				changed = true;
		}
		/* Kinds changed: rebuild prefix sums and child caches. */
		rc = tdl_prepare(dl, NULL, 0);
	}
	/* A root that is one plain instance of its child is that child. */
	while (!rc) {
		struct tdl_node *r = &dl->nodes[dl->root];
		const struct tdl_node *c;
		if (r->kind != TDL_CONTIG || r->count != 1 || r->child < 0)
			break;
		c = &dl->nodes[r->child];
		if (c->lb != r->lb || c->extent != r->extent)
			break;
		dl->root = r->child;
	}
	if (!rc)
		rc = compact(dl);
	if (!rc)
		rc = tdl_prepare(dl, NULL, 0);
	if (rc) {
		tdl_free(dl);
		return rc;
	}
	*out = dl;
	return 0;
}
