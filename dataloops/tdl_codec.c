/*
 * tdl_codec.c - dataloops <-> protobuf (tessera.Dataloop).
 *
 * Encoding points the message's arrays straight at the dataloop's own
 * arrays (no copies). Decoding trusts nothing: limits are checked before
 * anything is allocated for the dataloop, field shapes per node here, and
 * the semantic rules (signs, references, cycles, depth, overflow) by
 * tdl_prepare, which every dataloop passes before use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl_int.h"
#include "tessera.pb-c.h"

int tdl_to_msg(const struct tdl_dataloop *dl, struct Tessera__Dataloop **out)
{
	Tessera__Dataloop *m = malloc(sizeof(*m));
	Tessera__DataloopNode *nodes, **ptrs;

	nodes = calloc((size_t)dl->nnodes, sizeof(*nodes));
	ptrs = calloc((size_t)dl->nnodes, sizeof(*ptrs));
	if (!m || !nodes || !ptrs) {
		free(m);
		free(nodes);
		free(ptrs);
		return -ENOMEM;
	}
	tessera__dataloop__init(m);
	m->root = (uint32_t)dl->root;
	m->n_nodes = (size_t)dl->nnodes;
	m->nodes = ptrs;
	m->node_count = (uint32_t)dl->nnodes;
	for (int32_t i = 0; i < dl->nnodes; i++) {
		const struct tdl_node *n = &dl->nodes[i];
		Tessera__DataloopNode *e = &nodes[i];
		size_t cnt = (size_t)n->count;

		tessera__dataloop_node__init(e);
		e->kind = (uint32_t)n->kind;
		e->count = n->count;
		e->lb = n->lb;
		e->extent = n->extent;
		e->child = n->kind == TDL_STRUCT ? -1 : n->child;
		if (n->kind == TDL_VECTOR || n->kind == TDL_BLOCKINDEXED)
			e->blocklen = n->blocklen;
		if (n->kind == TDL_VECTOR)
			e->stride = n->stride;
		if (n->kind >= TDL_BLOCKINDEXED) {
			e->n_offsets = cnt;
			e->offsets = n->offsets;
		}
		if (n->kind >= TDL_INDEXED) {
			e->n_blocklens = cnt;
			e->blocklens = n->blocklens;
		}
		if (n->kind == TDL_STRUCT) {
			e->n_children = cnt;
			e->children = n->children;
		}
		ptrs[i] = e;
	}
	*out = m;
	return 0;
}

void tdl_msg_release(struct Tessera__Dataloop *m)
{
	if (!m)
		return;
	if (m->n_nodes)
		free(m->nodes[0]); /* the node array of tdl_to_msg */
	free(m->nodes);
	free(m);
}

size_t tdl_encoded_size(const struct tdl_dataloop *dl)
{
	Tessera__Dataloop *m;
	size_t n;

	if (tdl_to_msg(dl, &m))
		return 0;
	n = tessera__dataloop__get_packed_size(m);
	tdl_msg_release(m);
	return n;
}

int tdl_encode(const struct tdl_dataloop *dl, uint8_t *buf, size_t cap,
	       size_t *len)
{
	Tessera__Dataloop *m;
	size_t n;
	int rc = tdl_to_msg(dl, &m);

	if (rc)
		return rc;
	n = tessera__dataloop__get_packed_size(m);
	*len = n;
	if (n > cap) {
		tdl_msg_release(m);
		return -ENOSPC;
	}
	tessera__dataloop__pack(m, buf);
	tdl_msg_release(m);
	return 0;
}

/* Shape of one node message: arrays present exactly where its kind needs
 * them, with count entries. */
static int check_shape(const Tessera__DataloopNode *e, size_t i, char *err,
		       size_t errlen)
{
	int kind = e->kind <= TDL_STRUCT ? (int)e->kind : 0;
	size_t want_off, want_len, want_ch;

	if (kind < TDL_CONTIG) {
		TDL_ERR(err, errlen, "dataloop node %zu: unknown kind %u", i,
			e->kind);
		return -EINVAL;
	}
	if (e->count < 0) {
		TDL_ERR(err, errlen, "dataloop node %zu: count %lld is negative",
			i, (long long)e->count);
		return -EINVAL;
	}
	if (e->count > TDL_MAX_ENTRIES && kind >= TDL_BLOCKINDEXED) {
		TDL_ERR(err, errlen,
			"dataloop node %zu: count %lld exceeds %d entries", i,
			(long long)e->count, TDL_MAX_ENTRIES);
		return -EINVAL;
	}
	want_off = kind >= TDL_BLOCKINDEXED ? (size_t)e->count : 0;
	want_len = kind >= TDL_INDEXED ? (size_t)e->count : 0;
	want_ch = kind == TDL_STRUCT ? (size_t)e->count : 0;
	if (e->n_offsets != want_off || e->n_blocklens != want_len ||
	    e->n_children != want_ch) {
		TDL_ERR(err, errlen,
			"dataloop node %zu: %zu offsets, %zu block lengths, %zu children for kind %d with count %lld",
			i, e->n_offsets, e->n_blocklens, e->n_children, kind,
			(long long)e->count);
		return -EINVAL;
	}
	return 0;
}

static int64_t *dup64(const int64_t *src, size_t n)
{
	int64_t *p = malloc(n ? n * sizeof(*p) : 1);
	if (p && n)
		memcpy(p, src, n * sizeof(*p));
	return p;
}

int tdl_from_msg(const struct Tessera__Dataloop *m, struct tdl_dataloop **out,
		 char *err, size_t errlen)
{
	struct tdl_dataloop *dl;
	int rc = 0;

	if (m->n_nodes < 1 || m->n_nodes > TDL_MAX_NODES) {
		TDL_ERR(err, errlen, "dataloop: %zu nodes (1 to %d allowed)",
			m->n_nodes, TDL_MAX_NODES);
		return -EINVAL;
	}
	if (m->node_count != m->n_nodes) {
		TDL_ERR(err, errlen,
			"dataloop: node count %u does not match %zu nodes (truncated?)",
			m->node_count, m->n_nodes);
		return -EINVAL;
	}
	if (m->root >= m->n_nodes) {
		TDL_ERR(err, errlen, "dataloop: root %u is not a node",
			m->root);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->n_nodes; i++) {
		rc = check_shape(m->nodes[i], i, err, errlen);
		if (rc)
			return rc;
	}
	dl = tdl_alloc((int32_t)m->n_nodes);
	if (!dl)
		return -ENOMEM;
	dl->root = (int32_t)m->root;
	for (size_t i = 0; i < m->n_nodes && !rc; i++) {
		const Tessera__DataloopNode *e = m->nodes[i];
		struct tdl_node *n = &dl->nodes[i];

		n->kind = (int)e->kind;
		n->count = e->count;
		n->blocklen = e->blocklen;
		n->stride = e->stride;
		n->child = n->kind == TDL_STRUCT ? -1 : e->child;
		n->lb = e->lb;
		n->extent = e->extent;
		if (e->n_offsets && !(n->offsets = dup64(e->offsets,
							 e->n_offsets)))
			rc = -ENOMEM;
		if (e->n_blocklens &&
		    !(n->blocklens = dup64(e->blocklens, e->n_blocklens)))
			rc = -ENOMEM;
		if (e->n_children) {
			n->children = malloc(e->n_children * sizeof(int32_t));
			if (!n->children)
				rc = -ENOMEM;
			else
				memcpy(n->children, e->children,
				       e->n_children * sizeof(int32_t));
		}
		/* A count-0 node of an array kind still has (empty) arrays. */
		if (!rc && n->kind >= TDL_BLOCKINDEXED && !n->offsets &&
		    !(n->offsets = dup64(NULL, 0)))
			rc = -ENOMEM;
		if (!rc && n->kind >= TDL_INDEXED && !n->blocklens &&
		    !(n->blocklens = dup64(NULL, 0)))
			rc = -ENOMEM;
		if (!rc && n->kind == TDL_STRUCT && !n->children &&
		    !(n->children = malloc(1)))
			rc = -ENOMEM;
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

int tdl_decode(const uint8_t *buf, size_t len, struct tdl_dataloop **out,
	       char *err, size_t errlen)
{
	Tessera__Dataloop *m;
	int rc;

	if (len > TDL_MAX_ENCODED) {
		TDL_ERR(err, errlen,
			"dataloop: encoded size %zu exceeds %u bytes", len,
			TDL_MAX_ENCODED);
		return -EINVAL;
	}
	m = tessera__dataloop__unpack(NULL, len, buf);
	if (!m) {
		TDL_ERR(err, errlen,
			"dataloop: malformed or truncated protobuf encoding");
		return -EINVAL;
	}
	rc = tdl_from_msg(m, out, err, errlen);
	tessera__dataloop__free_unpacked(m, NULL);
	return rc;
}
