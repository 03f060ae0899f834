/*
 * dataloop.c - dataloops <-> protobuf (tessera.Dataloop), through the
 * dataloops library's node records (tdl.h), never its internals.
 *
 * Encoding points the message's arrays straight at the dataloop's own
 * arrays (no copies). Decoding trusts nothing: the encoded size and the
 * node count are checked before anything is allocated for the dataloop;
 * array shapes and every dataloop rule (signs, references, cycles, depth,
 * overflow) by tdl_from_nodes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tdl.h"
#include "tproto.h"

int tp_dataloop_to_msg(const struct tdl_dataloop *dl,
		       struct Tessera__Dataloop **out)
{
	size_t nn = (size_t)tdl_node_count(dl);
	Tessera__Dataloop *m = malloc(sizeof(*m));
	Tessera__DataloopNode *nodes = calloc(nn, sizeof(*nodes));
	Tessera__DataloopNode **ptrs = calloc(nn, sizeof(*ptrs));

	if (!m || !nodes || !ptrs) {
		free(m);
		free(nodes);
		free(ptrs);
		return -ENOMEM;
	}
	tessera__dataloop__init(m);
	m->root = (uint32_t)tdl_root(dl);
	m->n_nodes = nn;
	m->nodes = ptrs;
	m->node_count = (uint32_t)nn;
	for (size_t i = 0; i < nn; i++) {
		Tessera__DataloopNode *e = &nodes[i];
		struct tdl_node_rec r;

		tdl_node_get(dl, (int)i, &r);
		tessera__dataloop_node__init(e);
		e->kind = r.kind;
		e->count = r.count;
		e->lb = r.lb;
		e->extent = r.extent;
		e->child = r.child;
		e->blocklen = r.blocklen;
		e->stride = r.stride;
		/* Packing only reads the arrays: the casts drop const for
		 * the generated struct's sake. */
		e->n_offsets = r.n_offsets;
		e->offsets = (int64_t *)r.offsets;
		e->n_blocklens = r.n_blocklens;
		e->blocklens = (int64_t *)r.blocklens;
		e->n_children = r.n_children;
		e->children = (int32_t *)r.children;
		ptrs[i] = e;
	}
	*out = m;
	return 0;
}

void tp_dataloop_msg_release(struct Tessera__Dataloop *m)
{
	if (!m)
		return;
	if (m->n_nodes)
		free(m->nodes[0]); /* the node array of tp_dataloop_to_msg */
	free(m->nodes);
	free(m);
}

size_t tp_dataloop_encoded_size(const struct tdl_dataloop *dl)
{
	Tessera__Dataloop *m;
	size_t n;

	if (tp_dataloop_to_msg(dl, &m))
		return 0;
	n = tessera__dataloop__get_packed_size(m);
	tp_dataloop_msg_release(m);
	return n;
}

int tp_dataloop_encode(const struct tdl_dataloop *dl, uint8_t *buf,
		       size_t cap, size_t *len)
{
	Tessera__Dataloop *m;
	size_t n;
	int rc = tp_dataloop_to_msg(dl, &m);

	if (rc)
		return rc;
	n = tessera__dataloop__get_packed_size(m);
	*len = n;
	if (n > cap) {
		tp_dataloop_msg_release(m);
		return -ENOSPC;
	}
	tessera__dataloop__pack(m, buf);
	tp_dataloop_msg_release(m);
	return 0;
}

int tp_dataloop_from_msg(const struct Tessera__Dataloop *m,
			 struct tdl_dataloop **out, char *err, size_t errlen)
{
	struct tdl_node_rec *recs;
	int rc;

	*out = NULL;
	if (m->n_nodes < 1 || m->n_nodes > TDL_MAX_NODES) {
		snprintf(err, errlen, "dataloop: %zu nodes (1 to %d allowed)",
		       m->n_nodes, TDL_MAX_NODES);
		return -EINVAL;
	}
	if (m->node_count != m->n_nodes) {
		snprintf(err, errlen,
		       "dataloop: node count %u does not match %zu nodes (truncated?)",
		       m->node_count, m->n_nodes);
		return -EINVAL;
	}
	if (m->root >= m->n_nodes) {
		snprintf(err, errlen, "dataloop: root %u is not a node", m->root);
		return -EINVAL;
	}
	recs = calloc(m->n_nodes, sizeof(*recs));
	if (!recs) {
		snprintf(err, errlen, "dataloop: out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_nodes; i++) {
		const Tessera__DataloopNode *e = m->nodes[i];

		recs[i] = (struct tdl_node_rec){
			.kind = e->kind,
			.child = e->child,
			.count = e->count,
			.blocklen = e->blocklen,
			.stride = e->stride,
			.offsets = e->offsets,
			.n_offsets = e->n_offsets,
			.blocklens = e->blocklens,
			.n_blocklens = e->n_blocklens,
			.children = e->children,
			.n_children = e->n_children,
			.lb = e->lb,
			.extent = e->extent,
		};
	}
	rc = tdl_from_nodes(recs, (int32_t)m->n_nodes, (int32_t)m->root, out,
			    err, errlen);
	free(recs);
	return rc;
}

int tp_dataloop_decode(const uint8_t *buf, size_t len,
		       struct tdl_dataloop **out, char *err, size_t errlen)
{
	Tessera__Dataloop *m;
	int rc;

	*out = NULL;
	if (len > TP_DATALOOP_MAX_ENCODED) {
		snprintf(err, errlen,
		       "dataloop: encoded size %zu exceeds %u bytes", len,
		       TP_DATALOOP_MAX_ENCODED);
		return -EINVAL;
	}
	m = tessera__dataloop__unpack(NULL, len, buf);
	if (!m) {
		snprintf(err, errlen,
		       "dataloop: malformed or truncated protobuf encoding");
		return -EINVAL;
	}
	rc = tp_dataloop_from_msg(m, out, err, errlen);
	tessera__dataloop__free_unpacked(m, NULL);
	return rc;
}
