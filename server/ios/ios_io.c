/*
 * ios_io.c - the storage daemon's data requests.
 *
 * Every data message moves at most max_io bytes; the loop checks it and
 * hands its disk work to ios_pool.c (workers, or inline), so a client's
 * huge noncontiguous access is a stream of bounded messages between which
 * other clients' requests are served. Nothing here syncs: data reaches the disk when a client asks
 * (SYNC), never as a side effect of a write.
 *
 * A request is checked completely (every piece, every length, the total
 * against the data carried) before the first byte is written, so a
 * malformed request changes nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios.h"
#include "tdl.h"

#define OBJ "object %016" PRIx64

void ios_store_error(struct ios *ios, struct srv_req *req, const char *what, uint64_t handle,
		     int rc, const char *why)
{
	(void)ios;
	if (!why)
		why = "";
	srv_log(req->srv, "%s " OBJ ": %s%s%s", what, handle, strerror(-rc), *why ? ": " : "",
		why);
	srv_reply_error(req, rc, "%s " OBJ ": %s%s%s", what, handle, strerror(-rc),
			*why ? ": " : "", why);
}

/* Hand checked pieces to the disk work (ios_pool.c): writes take the
 * frame's data, reads answer with `total` bytes. The pieces are taken
 * over. */
static void apply(struct ios *ios, struct srv_req *req, enum ios_method m, uint64_t handle,
		  struct ios_piece *pieces, size_t n, uint64_t total, int write)
{
	struct ios_work *w = ios_work_new(write ? IOS_JOB_WRITE : IOS_JOB_READ, m,
					  write ? "write" : "read", 1);

	if (!w) {
		free(pieces);
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", write ? "write" : "read",
				handle);
		return;
	}
	w->part[0].handle = handle;
	w->part[0].pieces = pieces;
	w->part[0].n = n;
	w->part[0].total = total;
	ios_submit(ios, req, w);
}

/* One piece, for the contiguous requests. */
static struct ios_piece *one_piece(struct srv_req *req, uint64_t offset, uint64_t length,
				   uint64_t handle, const char *what)
{
	struct ios_piece *p = malloc(sizeof(*p));

	if (!p) {
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", what, handle);
		return NULL;
	}
	p->offset = offset;
	p->length = length;
	return p;
}

void ios_do_write(struct ios *ios, struct srv_req *req)
{
	Tessera__WriteRequest *w = (Tessera__WriteRequest *)req->msg;
	struct ios_piece p = { w->offset, req->frame.hdr.data_len }, *one;

	if (ios_locks_fence(ios, req, w->lock_epoch, w->handle, "write"))
		return;
	if (w->offset > (uint64_t)INT64_MAX - p.length) {
		srv_reply_error(req, -EFBIG, "write " OBJ ": offset %" PRIu64 " + %" PRIu64
				" is beyond the largest object", w->handle, w->offset, p.length);
		return;
	}
	if ((one = one_piece(req, p.offset, p.length, w->handle, "write")))
		apply(ios, req, IOS_CONTIG, w->handle, one, 1, p.length, 1);
}

void ios_do_read(struct ios *ios, struct srv_req *req)
{
	Tessera__ReadRequest *r = (Tessera__ReadRequest *)req->msg;
	struct ios_piece p = { r->offset, r->length }, *one;

	if (ios_locks_fence(ios, req, r->lock_epoch, r->handle, "read"))
		return;
	req->reply_tagged = r->tagged_reply;
	if (r->length > ios->cfg->max_io) {
		srv_reply_error(req, -EMSGSIZE, "read " OBJ ": %" PRIu64 " bytes exceed max_io %u",
				r->handle, r->length, ios->cfg->max_io);
		return;
	}
	if (r->offset > (uint64_t)INT64_MAX - r->length) {
		srv_reply_error(req, -EFBIG, "read " OBJ ": offset %" PRIu64 " + %" PRIu64
				" is beyond the largest object", r->handle, r->offset, r->length);
		return;
	}
	if ((one = one_piece(req, p.offset, p.length, r->handle, "read")))
		apply(ios, req, IOS_CONTIG, r->handle, one, 1, p.length, 0);
}

/* The data a request moves must match what it carries (writes) and fit
 * in one reply (reads). */
static int check_total(struct ios *ios, struct srv_req *req, int write, uint64_t total,
		       uint64_t handle, const char *what)
{
	uint64_t carried = req->frame.hdr.data_len;

	if (write && total != carried) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": pieces total %" PRIu64
				" bytes but the request carries %" PRIu64, what, handle, total,
				carried);
		return -EINVAL;
	}
	if (!write && total > ios->cfg->max_io) {
		srv_reply_error(req, -EMSGSIZE, "%s " OBJ ": %" PRIu64 " bytes exceed max_io %u",
				what, handle, total, ios->cfg->max_io);
		return -EMSGSIZE;
	}
	return 0;
}

void ios_do_list(struct ios *ios, struct srv_req *req)
{
	Tessera__ListIORequest *l = (Tessera__ListIORequest *)req->msg;
	int write = req->frame.hdr.opcode == TP_OP_LIST_WRITE;
	const char *what = write ? "list write" : "list read";
	struct ios_piece *pieces;
	uint64_t total = 0;

	if (ios_locks_fence(ios, req, l->lock_epoch, l->handle, what))
		return;
	if (l->n_offsets != l->n_lengths) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": %zu offsets but %zu lengths", what,
				l->handle, l->n_offsets, l->n_lengths);
		return;
	}
	if (l->n_offsets > TP_MAX_PIECES) {
		srv_reply_error(req, -E2BIG, "%s " OBJ ": %zu pieces exceed the limit of %d", what,
				l->handle, l->n_offsets, TP_MAX_PIECES);
		return;
	}
	pieces = malloc((l->n_offsets ? l->n_offsets : 1) * sizeof(*pieces));
	if (!pieces) {
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", what, l->handle);
		return;
	}
	for (size_t i = 0; i < l->n_offsets; i++) {
		uint64_t off = l->offsets[i], len = l->lengths[i];

		if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off ||
		    len > (uint64_t)INT64_MAX - total) {
			srv_reply_error(req, -EINVAL, "%s " OBJ ": piece %zu (offset %" PRIu64
					", length %" PRIu64 ") is beyond the largest object", what,
					l->handle, i, off, len);
			free(pieces);
			return;
		}
		pieces[i].offset = off;
		pieces[i].length = len;
		total += len;
	}
	if (!check_total(ios, req, write, total, l->handle, what)) {
		ios->stats.desc_bytes[IOS_LIST] += req->frame.hdr.body_len;
		apply(ios, req, IOS_LIST, l->handle, pieces, l->n_offsets, total, write);
		return;
	}
	free(pieces);
}

/* ------------------------------------------------------- datatype I/O */

static void desc_drop(struct ios *ios, struct ios_desc *d)
{
	tdl_free(d->dl);
	ios->stats.desc_cache_bytes -= d->bytes;
	d->dl = NULL;
	d->bytes = 0;
}

void ios_descs_clear(struct ios *ios)
{
	for (int i = 0; i < IOS_DESC_CACHE; i++)
		desc_drop(ios, &ios->descs[i]);
	tdl_free(ios->fresh.dl);
	ios->fresh.dl = NULL;
}

static struct ios_desc *desc_find(struct ios *ios, uint64_t nonce, uint64_t id)
{
	for (int i = 0; i < IOS_DESC_CACHE; i++) {
		struct ios_desc *d = &ios->descs[i];

		if (d->dl && d->nonce == nonce && d->id == id) {
			d->used = ++ios->clock;
			return d;
		}
	}
	return NULL;
}

/* Keep `fresh` (taken over) under its key, evicting the least recently
 * used until it fits the entries and the bytes. One larger than the whole
 * cache is not kept: its call sends it with every message (ESTALE). */
static void desc_put(struct ios *ios, struct ios_desc *fresh)
{
	struct ios_desc *old = desc_find(ios, fresh->nonce, fresh->id);

	if (old)
		desc_drop(ios, old);
	if (fresh->bytes > IOS_DESC_CACHE_BYTES) {
		tdl_free(fresh->dl);
		return;
	}
	for (;;) {
		struct ios_desc *slot = NULL, *victim = NULL;

		for (int i = 0; i < IOS_DESC_CACHE; i++) {
			struct ios_desc *d = &ios->descs[i];

			if (!d->dl)
				slot = slot ? slot : d;
			else if (!victim || d->used < victim->used)
				victim = d;
		}
		if (slot && ios->stats.desc_cache_bytes + fresh->bytes <= IOS_DESC_CACHE_BYTES) {
			*slot = *fresh;
			slot->used = ++ios->clock;
			ios->stats.desc_cache_bytes += slot->bytes;
			return;
		}
		desc_drop(ios, victim); /* some entry is held, or the bytes would fit */
	}
}

void ios_dtype_desc_done(struct ios *ios, int valid)
{
	if (!ios->fresh.dl)
		return;
	if (valid)
		desc_put(ios, &ios->fresh);
	else
		tdl_free(ios->fresh.dl);
	ios->fresh.dl = NULL;
}

const struct tdl_dataloop *ios_dtype_desc(struct ios *ios, struct srv_req *req,
					  const Tessera__DtypeIORequest *d, const char *what)
{
	struct tdl_dataloop *dl;
	struct ios_desc *c;
	char err[256];
	int rc;

	ios_dtype_desc_done(ios, 0); /* a handler that forgot: never kept */
	if (!d->file_type) {
		c = desc_find(ios, d->desc_nonce, d->desc_id);
		if (c) {
			ios->stats.desc_cache_hits++;
			return c->dl;
		}
		ios->stats.desc_cache_misses++;
		srv_reply_error(req, -ESTALE, "%s " OBJ ": file type %016" PRIx64 ":%" PRIu64
				" is not held here; send it again", what, d->handle, d->desc_nonce,
				d->desc_id);
		return NULL;
	}
	rc = tp_dataloop_from_msg(d->file_type, &dl, err, sizeof(err));
	if (rc) {
		srv_reply_error(req, rc, "%s " OBJ ": file type: %s", what, d->handle, err);
		return NULL;
	}
	ios->stats.desc_bytes[IOS_DTYPE] +=
		protobuf_c_message_get_packed_size(&d->file_type->base);
	ios->fresh = (struct ios_desc){ d->desc_nonce, d->desc_id, dl, tdl_mem_bytes(dl), 0 };
	return dl;
}

int ios_check_layout(struct ios *ios, struct srv_req *req, uint64_t handle, uint64_t strip_size,
		     uint32_t stripe_count, uint32_t slot, const char *what)
{
	struct tdl_layout layout = { strip_size, stripe_count };
	char why[160];

	if (tdl_layout_check(&layout, why, sizeof(why))) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": bad %s", what, handle, why);
		return -EINVAL;
	}
	if (stripe_count > ios->cfg->n_ios) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": bad layout: stripe count %u above the "
				"%u storage daemons configured", what, handle, stripe_count, ios->cfg->n_ios);
		return -EINVAL;
	}
	if (slot >= stripe_count) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": bad layout: slot %u of %u slots", what,
				handle, slot, stripe_count);
		return -EINVAL;
	}
	return 0;
}

/* The request's pieces on this server, checked: at most max_io bytes
 * (reads) or exactly the data carried (writes). */
static int dtype_pieces(struct ios *ios, struct srv_req *req, const Tessera__DtypeIORequest *d,
			const struct tdl_dataloop *dl, int write, const char *what,
			struct ios_piece **out, size_t *n_out, uint64_t *total_out)
{
	struct tdl_layout layout = { d->strip_size, d->stripe_count };
	uint64_t limit = write ? req->frame.hdr.data_len : ios->cfg->max_io;
	uint64_t size = tdl_size(dl), total = 0;
	size_t n = 0, cap = 0;
	struct ios_piece *pieces = NULL;
	struct tdl_segment seg;
	struct tdl_piece batch[256];
	char err[256];
	int rc;

	if ((rc = ios_check_layout(ios, req, d->handle, d->strip_size, d->stripe_count, d->slot,
				   what)))
		return rc;
	if ((rc = tdl_check_view(dl, d->count, d->disp, err, sizeof(err)))) {
		srv_reply_error(req, rc, "%s " OBJ ": file view: %s", what, d->handle, err);
		return rc;
	}
	if (d->first > d->last || (size && d->count > UINT64_MAX / size) ||
	    d->last > size * d->count ||
	    d->last - d->first > (uint64_t)d->stripe_count * ios->cfg->max_io) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": stream window [%" PRIu64 ", %" PRIu64
				") is not within %" PRIu64 " x %" PRIu64 " bytes or exceeds %u x max_io",
				what, d->handle, d->first, d->last, d->count, size, d->stripe_count);
		return -EINVAL;
	}
	rc = tdl_segment_init_server(&seg, dl, d->count, d->disp, d->first, d->last, &layout,
				     d->slot);
	seg.max_steps = IOS_MAX_DTYPE_STEPS;
	while (!rc && !tdl_segment_done(&seg)) {
		size_t k;

		rc = tdl_segment_next(&seg, batch, sizeof(batch) / sizeof(batch[0]), &k);
		for (size_t i = 0; !rc && i < k; i++) {
			if (batch[i].length > limit - total) {
				rc = write ? -EINVAL : -EMSGSIZE;
				break;
			}
			if (n == cap) {
				struct ios_piece *p;

				cap = cap ? 2 * cap : 1024;
				p = realloc(pieces, cap * sizeof(*p));
				if (!p) {
					rc = -ENOMEM;
					break;
				}
				pieces = p;
			}
			pieces[n].offset = tdl_piece_object(&layout, &batch[i]);
			pieces[n++].length = batch[i].length;
			total += batch[i].length;
		}
	}
	if (!rc && write && total != limit)
		rc = -EINVAL;
	if (rc == -EINVAL && write)
		srv_reply_error(req, rc, "%s " OBJ ": the pieces on this server total %s%" PRIu64
				" bytes but the request carries %" PRIu64, what, d->handle,
				total < limit ? "" : "more than ", total, limit);
	else if (rc == -E2BIG)
		srv_reply_error(req, rc, "%s " OBJ ": walking the file view takes more than %u "
				"steps on this server, the limit per request (empty blocks, or "
				"tiny pieces of other servers' strips: ask for a smaller window)",
				what, d->handle, IOS_MAX_DTYPE_STEPS);
	else if (rc == -EMSGSIZE)
		srv_reply_error(req, rc, "%s " OBJ ": more than max_io %u bytes fall on this server",
				what, d->handle, ios->cfg->max_io);
	else if (rc)
		srv_reply_error(req, rc, "%s " OBJ ": walking the file view: %s", what, d->handle,
				strerror(-rc));
	if (rc) {
		free(pieces);
		return rc;
	}
	*out = pieces;
	*n_out = n;
	*total_out = total;
	return 0;
}

void ios_do_dtype(struct ios *ios, struct srv_req *req)
{
	Tessera__DtypeIORequest *d = (Tessera__DtypeIORequest *)req->msg;
	int write = req->frame.hdr.opcode == TP_OP_DTYPE_WRITE;
	const char *what = write ? "datatype write" : "datatype read";
	const struct tdl_dataloop *dl;
	struct ios_piece *pieces;
	uint64_t total;
	size_t n;

	if (ios_locks_fence(ios, req, d->lock_epoch, d->handle, what))
		return;
	dl = ios_dtype_desc(ios, req, d, what);
	if (!dl)
		return;
	if (dtype_pieces(ios, req, d, dl, write, what, &pieces, &n, &total)) {
		ios_dtype_desc_done(ios, 0);
		return;
	}
	ios_dtype_desc_done(ios, 1);
	apply(ios, req, IOS_DTYPE, d->handle, pieces, n, total, write);
}

void ios_do_stats(struct ios *ios, struct srv_req *req)
{
	Tessera__IosStatsReply rep = TESSERA__IOS_STATS_REPLY__INIT;
	struct tessera_ios_stats *s = &ios->stats;
	struct ios_store_faults faults;

	ios_store_faults(ios->store, &faults);
	s->checksum_failures = faults.checksum_failures;
	s->lost_objects = faults.lost_objects;
#define PUT_BY_METHOD(field, num, label, what) \
	rep.n_##field = TESSERA_METHODS;       \
	rep.field = s->field;
	TESSERA_FOR_EACH_METHOD_COUNTER(PUT_BY_METHOD)
#undef PUT_BY_METHOD
#define PUT(field, num, label, what) rep.field = s->field;
	TESSERA_FOR_EACH_COUNTER(PUT)
#undef PUT
	srv_reply(req, &rep.base, NULL, 0);
}
