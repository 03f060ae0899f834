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
 *
 * Uses (one way; none of them calls back here): ios_lock.c for the lock
 * epoch fence, ios_desc.c for datatype descriptions and the layout check,
 * ios_pool.c to run and answer the disk work.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios.h"
#include "ios_vlogs.h"
#include "tdl.h"

#define OBJ "object %016" PRIx64

static const char *job_name(enum ios_job op)
{
	return op == IOS_JOB_WRITE ? "write" : "read";
}

/* Hand checked pieces to the disk work (ios_pool.c), which answers:
 * writes (IOS_JOB_WRITE) take the frame's data, reads (IOS_JOB_READ)
 * answer with `total` bytes. The pieces are taken over. A versioned
 * object's (vf against its capability: ios_vlogs.h) go to its log. */
static void reply_pieces(struct ios *ios, struct srv_req *req, enum ios_job op,
			 enum ios_method m, uint64_t handle, struct ios_piece *pieces, size_t n,
			 uint64_t total, const struct ios_vfields *vf)
{
	struct ios_vjob *vj = NULL;
	struct ios_work *w;

	if (ios_vprepare(ios, req, vf, handle, op == IOS_JOB_WRITE ? IOS_VKIND_WRITE
				: IOS_VKIND_READ, job_name(op), &vj) < 0) {
		free(pieces);
		return;
	}
	if (!(w = ios_work_new(op, m, job_name(op), 1))) {
		free(pieces);
		ios_vjob_free(vj);
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", job_name(op), handle);
		return;
	}
	w->part[0].vjob = vj;
	w->part[0].handle = handle;
	w->part[0].pieces = pieces;
	w->part[0].n = n;
	w->part[0].total = total;
	ios_reply_work(ios, req, w);
}

/* A contiguous request: one piece. */
static void reply_contig(struct ios *ios, struct srv_req *req, enum ios_job op, uint64_t handle,
			 uint64_t offset, uint64_t length, const struct ios_vfields *vf)
{
	struct ios_piece *p = malloc(sizeof(*p));

	if (!p) {
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", job_name(op), handle);
		return;
	}
	p->offset = offset;
	p->length = length;
	reply_pieces(ios, req, op, IOS_CONTIG, handle, p, 1, length, vf);
}

void ios_do_write(struct ios *ios, struct srv_req *req)
{
	Tessera__WriteRequest *w = (Tessera__WriteRequest *)req->msg;
	uint64_t length = req->frame.hdr.data_len;
	struct ios_vfields vf = { w->cap, w->version_t, 0, NULL, 0, NULL, 0, w->version_part };

	if (ios_refuse_stale_epoch(ios, req, w->lock_epoch, w->handle, "write"))
		return;
	if (w->offset > (uint64_t)INT64_MAX - length) {
		srv_reply_error(req, -EFBIG, "write " OBJ ": offset %" PRIu64 " + %" PRIu64
				" is beyond the largest object", w->handle, w->offset, length);
		return;
	}
	reply_contig(ios, req, IOS_JOB_WRITE, w->handle, w->offset, length, &vf);
}

void ios_do_read(struct ios *ios, struct srv_req *req)
{
	Tessera__ReadRequest *r = (Tessera__ReadRequest *)req->msg;
	struct ios_vfields vf = { r->cap, r->read_version, 0, r->vmap, r->n_vmap, NULL, 0, 0 };

	if (ios_refuse_stale_epoch(ios, req, r->lock_epoch, r->handle, "read"))
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
	reply_contig(ios, req, IOS_JOB_READ, r->handle, r->offset, r->length, &vf);
}

/* The data a request moves must match what it carries (writes) and fit
 * in one reply (reads). 0, or the negative errno answered. */
static int refuse_bad_total(struct ios *ios, struct srv_req *req, enum ios_job op,
			    uint64_t total, uint64_t handle, const char *what)
{
	uint64_t carried = req->frame.hdr.data_len;

	if (op == IOS_JOB_WRITE && total != carried) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": pieces total %" PRIu64
				" bytes but the request carries %" PRIu64, what, handle, total,
				carried);
		return -EINVAL;
	}
	if (op == IOS_JOB_READ && total > ios->cfg->max_io) {
		srv_reply_error(req, -EMSGSIZE, "%s " OBJ ": %" PRIu64 " bytes exceed max_io %u",
				what, handle, total, ios->cfg->max_io);
		return -EMSGSIZE;
	}
	return 0;
}

void ios_do_list(struct ios *ios, struct srv_req *req)
{
	Tessera__ListIORequest *l = (Tessera__ListIORequest *)req->msg;
	enum ios_job op = req->frame.hdr.opcode == TP_OP_LIST_WRITE ? IOS_JOB_WRITE : IOS_JOB_READ;
	const char *what = op == IOS_JOB_WRITE ? "list write" : "list read";
	struct ios_piece *pieces;
	uint64_t total = 0;
	struct ios_vfields vf = { l->cap, 0, 0, NULL, 0, NULL, 0, 0 };

	if (op == IOS_JOB_WRITE) {
		vf.version = l->version_t;
		vf.other = l->read_version | l->n_vmap;
		vf.part = l->version_part;
	} else {
		vf.version = l->read_version;
		vf.other = l->version_t | l->version_part;
		vf.vmap = l->vmap;
		vf.n_vmap = l->n_vmap;
	}
	if (ios_refuse_stale_epoch(ios, req, l->lock_epoch, l->handle, what))
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
	if (!refuse_bad_total(ios, req, op, total, l->handle, what)) {
		ios->stats.desc_bytes[IOS_LIST] += req->frame.hdr.body_len;
		reply_pieces(ios, req, op, IOS_LIST, l->handle, pieces, l->n_offsets, total, &vf);
		return;
	}
	free(pieces);
}

/* ------------------------------------------------------- datatype I/O */

/* The request's layout and file view, and its stream window: within the
 * view and at most stripe_count x max_io bytes. 0, or the negative errno
 * answered. */
static int refuse_bad_view(struct ios *ios, struct srv_req *req, const Tessera__DtypeIORequest *d,
			   const struct tdl_dataloop *dl, const char *what)
{
	uint64_t size = tdl_size(dl);
	char err[256];
	int rc;

	if ((rc = ios_refuse_bad_layout(ios, req, d->handle, d->strip_size, d->stripe_count,
					d->slot, what)))
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
	return 0;
}

/* Pieces collected from a file view (no reply: pure). */
struct dtype_pieces {
	struct ios_piece *pieces;  /* owned */
	size_t n, cap;
	uint64_t total;
};

static int pieces_add(struct dtype_pieces *dp, uint64_t offset, uint64_t length)
{
	if (dp->n == dp->cap) {
		size_t cap = dp->cap ? 2 * dp->cap : 1024;
		struct ios_piece *p = realloc(dp->pieces, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		dp->pieces = p;
		dp->cap = cap;
	}
	dp->pieces[dp->n].offset = offset;
	dp->pieces[dp->n++].length = length;
	dp->total += length;
	return 0;
}

/* Walk the view's bytes on this server into dp, at most `limit` bytes:
 * 0, or -EINVAL (a write's pieces exceed the data carried), -EMSGSIZE (a
 * read's exceed max_io), -E2BIG (too many steps), -ENOMEM. */
static int dtype_collect(const Tessera__DtypeIORequest *d, const struct tdl_dataloop *dl,
			 enum ios_job op, uint64_t limit, struct dtype_pieces *dp)
{
	struct tdl_layout layout = { d->strip_size, d->stripe_count };
	struct tdl_segment seg;
	struct tdl_piece batch[256];
	int rc;

	rc = tdl_segment_init_server(&seg, dl, d->count, d->disp, d->first, d->last, &layout,
				     d->slot);
	seg.max_steps = IOS_MAX_DTYPE_STEPS;
	while (!rc && !tdl_segment_done(&seg)) {
		size_t k;

		rc = tdl_segment_next(&seg, batch, sizeof(batch) / sizeof(batch[0]), &k);
		for (size_t i = 0; !rc && i < k; i++) {
			if (batch[i].length > limit - dp->total)
				rc = op == IOS_JOB_WRITE ? -EINVAL : -EMSGSIZE;
			else
				rc = pieces_add(dp, tdl_piece_object(&layout, &batch[i]),
						batch[i].length);
		}
	}
	if (!rc && op == IOS_JOB_WRITE && dp->total != limit)
		rc = -EINVAL;
	return rc;
}

/* The request's pieces on this server, checked: at most max_io bytes
 * (reads) or exactly the data carried (writes). 0 with the pieces (the
 * caller owns them), or the negative errno answered. */
static int refuse_or_dtype_pieces(struct ios *ios, struct srv_req *req,
				  const Tessera__DtypeIORequest *d, const struct tdl_dataloop *dl,
				  enum ios_job op, const char *what, struct dtype_pieces *dp)
{
	uint64_t limit = op == IOS_JOB_WRITE ? req->frame.hdr.data_len : ios->cfg->max_io;
	int rc;

	if ((rc = refuse_bad_view(ios, req, d, dl, what)))
		return rc;
	rc = dtype_collect(d, dl, op, limit, dp);
	if (rc == -EINVAL && op == IOS_JOB_WRITE)
		srv_reply_error(req, rc, "%s " OBJ ": the pieces on this server total %s%" PRIu64
				" bytes but the request carries %" PRIu64, what, d->handle,
				dp->total < limit ? "" : "more than ", dp->total, limit);
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
		free(dp->pieces);
		dp->pieces = NULL;
	}
	return rc;
}

void ios_do_dtype(struct ios *ios, struct srv_req *req)
{
	Tessera__DtypeIORequest *d = (Tessera__DtypeIORequest *)req->msg;
	enum ios_job op = req->frame.hdr.opcode == TP_OP_DTYPE_WRITE ? IOS_JOB_WRITE : IOS_JOB_READ;
	const char *what = op == IOS_JOB_WRITE ? "datatype write" : "datatype read";
	const struct tdl_dataloop *dl;
	struct dtype_pieces dp = { 0 };
	struct ios_vfields vf = { d->cap, 0, 0, NULL, 0, NULL, 0, 0 };

	/* A versioned write's pieces are the view unrolled here, exactly as
	 * ios_vlog_write_dataloop would unroll it (the description cache is
	 * the loop's, the log a worker's). */
	if (op == IOS_JOB_WRITE) {
		vf.version = d->version_t;
		vf.other = d->read_version | d->n_vmap;
		vf.part = d->version_part;
	} else {
		vf.version = d->read_version;
		vf.other = d->version_t | d->version_part;
		vf.vmap = d->vmap;
		vf.n_vmap = d->n_vmap;
	}
	if (ios_refuse_stale_epoch(ios, req, d->lock_epoch, d->handle, what))
		return;
	if (ios_refuse_unknown_desc(ios, req, d, what, &dl))
		return;
	if (refuse_or_dtype_pieces(ios, req, d, dl, op, what, &dp)) {
		ios_desc_done(ios, IOS_DESC_DROP);
		return;
	}
	ios_desc_done(ios, IOS_DESC_KEEP);
	reply_pieces(ios, req, op, IOS_DTYPE, d->handle, dp.pieces, dp.n, dp.total, &vf);
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
