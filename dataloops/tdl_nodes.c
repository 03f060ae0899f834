/*
 * tdl_nodes.c - dataloops as plain node records, for codecs outside
 * dataloops/ (the protobuf one is proto/dataloop.c).
 *
 * Reading hands out pointers into the dataloop. Building trusts nothing:
 * the array lengths are checked against each node's kind and count before
 * anything is copied, and the dataloop's rules by tdl_prepare.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl_int.h"

int tdl_root(const struct tdl_dataloop *dl)
{
	return dl->root;
}

void tdl_node_get(const struct tdl_dataloop *dl, int i,
		  struct tdl_node_rec *out)
{
	const struct tdl_node *n = &dl->nodes[i];
	size_t cnt = (size_t)n->count;

	memset(out, 0, sizeof(*out));
	out->kind = (uint32_t)n->kind;
	out->count = n->count;
	out->child = n->kind == TDL_STRUCT ? -1 : n->child;
	out->lb = n->lb;
	out->extent = n->extent;
	if (n->kind == TDL_VECTOR || n->kind == TDL_BLOCKINDEXED)
		out->blocklen = n->blocklen;
	if (n->kind == TDL_VECTOR)
		out->stride = n->stride;
	if (n->kind >= TDL_BLOCKINDEXED) {
		out->offsets = n->offsets;
		out->n_offsets = cnt;
	}
	if (n->kind >= TDL_INDEXED) {
		out->blocklens = n->blocklens;
		out->n_blocklens = cnt;
	}
	if (n->kind == TDL_STRUCT) {
		out->children = n->children;
		out->n_children = cnt;
	}
}

/* Arrays present exactly where the kind needs them, with count entries.
 * A negative count is left to tdl_prepare, which names it. */
static int check_shape(const struct tdl_node_rec *r, int32_t i, char *err,
		       size_t errlen)
{
	size_t want_off, want_len, want_ch, cnt;

	if (r->kind < TDL_CONTIG || r->kind > TDL_STRUCT) {
		TDL_ERR(err, errlen, "dataloop node %d: unknown kind %u",
			(int)i, r->kind);
		return -EINVAL;
	}
	cnt = r->count < 0 ? 0 : (size_t)r->count;
	want_off = r->kind >= TDL_BLOCKINDEXED ? cnt : 0;
	want_len = r->kind >= TDL_INDEXED ? cnt : 0;
	want_ch = r->kind == TDL_STRUCT ? cnt : 0;
	if (r->n_offsets != want_off || r->n_blocklens != want_len ||
	    r->n_children != want_ch ||
	    (r->n_offsets && !r->offsets) ||
	    (r->n_blocklens && !r->blocklens) ||
	    (r->n_children && !r->children)) {
		TDL_ERR(err, errlen,
			"dataloop node %d: %zu offsets, %zu block lengths, %zu children for kind %u with count %lld",
			(int)i, r->n_offsets, r->n_blocklens, r->n_children,
			r->kind, (long long)r->count);
		return -EINVAL;
	}
	return 0;
}

/* A copy of n entries; an array kind gets one even when n is 0. */
static void *dup_entries(const void *src, size_t n, size_t elsize, int *rc)
{
	void *p = malloc(n ? n * elsize : 1);

	if (!p)
		*rc = -ENOMEM;
	else if (n)
		memcpy(p, src, n * elsize);
	return p;
}

int tdl_from_nodes(const struct tdl_node_rec *recs, int32_t n, int32_t root,
		   struct tdl_dataloop **out, char *err, size_t errlen)
{
	struct tdl_dataloop *dl;
	int rc = 0;

	*out = NULL;
	/* Before anything is allocated for n nodes. */
	if (n < 1 || n > TDL_MAX_NODES) {
		TDL_ERR(err, errlen, "dataloop: %d nodes (1 to %d allowed)",
			(int)n, TDL_MAX_NODES);
		return -EINVAL;
	}
	for (int32_t i = 0; i < n; i++) {
		rc = check_shape(&recs[i], i, err, errlen);
		if (rc)
			return rc;
	}
	dl = tdl_alloc(n);
	if (!dl)
		return -ENOMEM;
	dl->root = root;
	for (int32_t i = 0; i < n && !rc; i++) {
		const struct tdl_node_rec *r = &recs[i];
		struct tdl_node *d = &dl->nodes[i];

		d->kind = (int)r->kind;
		d->count = r->count;
		d->blocklen = r->blocklen;
		d->stride = r->stride;
		d->child = d->kind == TDL_STRUCT ? -1 : r->child;
		d->lb = r->lb;
		d->extent = r->extent;
		if (d->kind >= TDL_BLOCKINDEXED)
			d->offsets = dup_entries(r->offsets, r->n_offsets,
						 sizeof(int64_t), &rc);
		if (d->kind >= TDL_INDEXED)
			d->blocklens = dup_entries(r->blocklens, r->n_blocklens,
						   sizeof(int64_t), &rc);
		if (d->kind == TDL_STRUCT)
			d->children = dup_entries(r->children, r->n_children,
						  sizeof(int32_t), &rc);
	}
	if (rc)
		TDL_ERR(err, errlen, "dataloop: out of memory");
	else
		rc = tdl_prepare(dl, err, errlen);
	if (rc) {
		tdl_free(dl);
		return rc;
	}
	*out = dl;
	return 0;
}
