/*
 * tdl_segment.c - the segment engine: walk a window of a dataloop's data
 * stream and emit file pieces.
 *
 * The walk state is an explicit stack of frames, one per tree level, in
 * the caller's struct tdl_segment. Invariant between calls (depth > 0):
 * the top frame is a leaf frame, i.e. its current block's child is dense,
 * so the block is one contiguous byte run and `elem` is the byte within
 * it; in every lower frame `elem` is the element whose instance the frame
 * above walks. Frame 0 is the (count x root) repetition, node -1.
 *
 * Seeking to the window start descends directly using the per-node stream
 * prefix sums (O(depth x log blocks)); stepping is O(1) amortised per run.
 */
#include <errno.h>
#include <string.h>

#include "tdl_int.h"

struct ctx {
	struct tdl_segment *seg;
	const struct tdl_dataloop *dl;
	struct tdl_node top; /* the (count x root) repetition */
	struct tdl_piece *out;
	size_t max, n;
};

static void ctx_init(struct ctx *c, struct tdl_segment *seg)
{
	const struct tdl_dataloop *dl = seg->dl;

	memset(c, 0, sizeof(*c));
	c->seg = seg;
	c->dl = dl;
	c->top.kind = TDL_CONTIG;
	c->top.count = seg->count;
	c->top.child = dl->root;
	c->top.csize = dl->nodes[dl->root].size;
	c->top.cext = dl->nodes[dl->root].extent;
	c->top.cdense = dl->nodes[dl->root].dense;
}

static inline const struct tdl_node *node_at(const struct ctx *c, int32_t i)
{
	return i < 0 ? &c->top : &c->dl->nodes[i];
}

static inline int64_t blk_csize(const struct ctx *c, const struct tdl_node *n,
				int64_t b)
{
	return n->kind == TDL_STRUCT ? tdl_child_size(c->dl, n->children[b])
				     : n->csize;
}

static inline int64_t blk_cext(const struct ctx *c, const struct tdl_node *n,
			       int64_t b)
{
	return n->kind == TDL_STRUCT ? tdl_child_extent(c->dl, n->children[b])
				     : n->cext;
}

static inline bool blk_cdense(const struct ctx *c, const struct tdl_node *n,
			      int64_t b)
{
	return n->kind == TDL_STRUCT ? tdl_child_dense(c->dl, n->children[b])
				     : n->cdense;
}

/* First block >= b holding data, or nblocks. Indexed and struct blocks
 * may be empty (prefix[b + 1] == prefix[b]); the prefix sums do not
 * decrease, so the first block holding data is found by galloping from b
 * and then bisecting: O(log k) steps past k empty blocks, one step when
 * block b holds data. */
static int64_t skip_empty(struct ctx *c, const struct tdl_node *n, int64_t b)
{
	int64_t nb = tdl_nblocks(n), at, lo, hi, step;

	c->seg->steps++;
	if (n->kind != TDL_INDEXED && n->kind != TDL_STRUCT)
		return b; /* uniform blocks: all empty or none (never entered) */
	if (b >= nb || n->prefix[b + 1] != n->prefix[b])
		return b;
	/* The answer is j - 1 for the first j > b with prefix[j] > at:
	 * gallop to a j with prefix[j] > at (or nb + 1), then bisect. */
	at = n->prefix[b];
	lo = b + 1; /* prefix[lo] == at */
	hi = nb + 1;
	for (step = 1; lo + step <= nb; step *= 2) {
		c->seg->steps++;
		if (n->prefix[lo + step] > at) {
			hi = lo + step;
			break;
		}
		lo += step;
	}
	while (hi - lo > 1) { /* prefix[lo] == at < prefix[hi] (hi = nb + 1: none) */
		int64_t mid = lo + (hi - lo) / 2;

		c->seg->steps++;
		if (n->prefix[mid] > at)
			hi = mid;
		else
			lo = mid;
	}
	return hi - 1; /* nb when every block from b on is empty */
}

/* Push frames until the top frame's current block is dense. */
static void descend(struct ctx *c)
{
	struct tdl_segment *seg = c->seg;

	for (;;) {
		struct tdl_frame *f = &seg->frames[seg->depth - 1];
		const struct tdl_node *n = node_at(c, f->node);
		struct tdl_frame *g;
		const struct tdl_node *cn;

		if (blk_cdense(c, n, f->block))
			return;
		seg->steps++;
		g = &seg->frames[seg->depth++];
		g->node = tdl_blk_child(n, f->block);
		g->base = f->base + tdl_blk_off(n, f->block) +
			  f->elem * blk_cext(c, n, f->block);
		cn = node_at(c, g->node);
		g->block = skip_empty(c, cn, 0);
		g->elem = 0;
	}
}

/* The top frame's run is finished: move to the next run, or depth 0. */
static void advance(struct ctx *c)
{
	struct tdl_segment *seg = c->seg;

	for (;;) {
		struct tdl_frame *f = &seg->frames[seg->depth - 1];
		const struct tdl_node *n = node_at(c, f->node);

		seg->steps++;
		if (blk_cdense(c, n, f->block)) {
			f->block++;
			f->elem = 0;
		} else if (++f->elem >= tdl_blk_nel(n, f->block)) {
			f->block++;
			f->elem = 0;
		}
		f->block = skip_empty(c, n, f->block);
		if (f->block < tdl_nblocks(n))
			break;
		if (--seg->depth == 0)
			return;
	}
	descend(c);
}

/* Set up the stack for stream byte p (< total size). */
static void seek(struct ctx *c, int64_t disp, uint64_t pos)
{
	struct tdl_segment *seg = c->seg;
	int64_t p = (int64_t)pos;

	seg->depth = 1;
	seg->frames[0] = (struct tdl_frame){ -1, 0, 0, disp };
	for (;;) {
		struct tdl_frame *f = &seg->frames[seg->depth - 1];
		const struct tdl_node *n = node_at(c, f->node);
		int64_t b = 0, pre = 0, csz, e;

		switch (n->kind) {
		case TDL_CONTIG:
			break;
		case TDL_VECTOR:
		case TDL_BLOCKINDEXED: {
			int64_t bs = n->blocklen * n->csize;
			b = p / bs;
			pre = b * bs;
			break;
		}
		default: {
			/* Last block starting at or before p; empty blocks
			 * share their prefix with the next one. */
			int64_t lo = 0, hi = n->count; /* prefix[lo] <= p */
			while (hi - lo > 1) {
				int64_t mid = lo + (hi - lo) / 2;
				if (n->prefix[mid] <= p)
					lo = mid;
				else
					hi = mid;
			}
			b = lo;
			pre = n->prefix[b];
			break;
		}
		}
		p -= pre;
		f->block = b;
		if (blk_cdense(c, n, b)) {
			f->elem = p;
			return;
		}
		csz = blk_csize(c, n, b);
		e = p / csz;
		p -= e * csz;
		f->elem = e;
		seg->frames[seg->depth++] = (struct tdl_frame){
			tdl_blk_child(n, b), 0, 0,
			f->base + tdl_blk_off(n, b) + e * blk_cext(c, n, b)
		};
	}
}

/* Hand one piece to the caller, merging with the pending one. false: the
 * output is full and nothing was taken. */
static bool put(struct ctx *c, uint64_t off, uint64_t len, uint64_t stream)
{
	struct tdl_segment *seg = c->seg;
	struct tdl_piece *p = &seg->pending;

	if (seg->have_pending && p->offset + p->length == off &&
	    p->stream + p->length == stream) {
		p->length += len;
		return true;
	}
	if (seg->have_pending) {
		if (c->n == c->max)
			return false;
		c->out[c->n++] = *p;
	}
	*p = (struct tdl_piece){ off, len, stream };
	seg->have_pending = 1;
	return true;
}

/* Emit run [off, off+len) at stream position pos; returns bytes consumed
 * (fewer than len only when the output filled up). The per-server walk
 * jumps from owned strip to owned strip, never visiting the others. */
static uint64_t emit(struct ctx *c, uint64_t off, uint64_t len, uint64_t pos,
		     bool *full)
{
	struct tdl_segment *seg = c->seg;
	uint64_t S = seg->layout.strip_size, C = seg->layout.count;
	uint64_t done = 0;

	if (!seg->filtered) {
		if (put(c, off, len, pos))
			return len;
		*full = true;
		return 0;
	}
	while (done < len) {
		uint64_t o = off + done, strip = o / S, k = strip % C, s, e;

		seg->steps++;
		if (k == seg->slot)
			s = o;
		else
			s = (strip + (seg->slot + C - k) % C) * S;
		if (s >= off + len)
			return len;
		e = (s / S + 1) * S;
		if (e > off + len)
			e = off + len;
		if (!put(c, s, e - s, pos + (s - off))) {
			*full = true;
			return s - off;
		}
		done = e - off;
	}
	return len;
}

int tdl_segment_next(struct tdl_segment *seg, struct tdl_piece *out,
		     size_t max, size_t *n)
{
	struct ctx c;
	bool full = false;

	*n = 0;
	if (max == 0)
		return -EINVAL;
	ctx_init(&c, seg);
	c.out = out;
	c.max = max;
	while (seg->depth > 0 && !full) {
		struct tdl_frame *f = &seg->frames[seg->depth - 1];

		if (++seg->steps > seg->max_steps && seg->max_steps) {
			*n = c.n;
			return -E2BIG;
		}
		const struct tdl_node *nd = node_at(&c, f->node);
		int64_t b = f->block;
		uint64_t bbytes = (uint64_t)(tdl_blk_nel(nd, b) *
					     blk_csize(&c, nd, b));
		uint64_t avail = bbytes - (uint64_t)f->elem, used;
		uint64_t off = (uint64_t)(f->base + tdl_blk_off(nd, b) +
					  f->elem);

		if (avail > seg->last - seg->pos)
			avail = seg->last - seg->pos;
		used = emit(&c, off, avail, seg->pos, &full);
		seg->pos += used;
		f->elem += (int64_t)used;
		if (seg->pos >= seg->last)
			seg->depth = 0;
		else if ((uint64_t)f->elem == bbytes)
			advance(&c);
	}
	if (seg->depth == 0 && seg->have_pending && c.n < max) {
		out[c.n++] = seg->pending;
		seg->have_pending = 0;
	}
	*n = c.n;
	return 0;
}

int tdl_segment_done(const struct tdl_segment *seg)
{
	return seg->depth == 0 && !seg->have_pending;
}

static int init(struct tdl_segment *seg, const struct tdl_dataloop *dl,
		uint64_t count, int64_t disp, uint64_t first, uint64_t last)
{
	uint64_t total;
	struct ctx c;
	int rc = tdl_check_view(dl, count, disp, NULL, 0);

	memset(seg, 0, sizeof(*seg));
	if (rc)
		return rc;
	seg->dl = dl;
	seg->count = (int64_t)count;
	total = count * tdl_size(dl); /* checked by tdl_check_view */
	if (last > total)
		last = total;
	seg->pos = first;
	seg->last = last;
	if (first >= last)
		return 0;
	ctx_init(&c, seg);
	seek(&c, disp, first);
	return 0;
}

int tdl_segment_init(struct tdl_segment *seg, const struct tdl_dataloop *dl,
		     uint64_t count, int64_t disp, uint64_t first,
		     uint64_t last)
{
	return init(seg, dl, count, disp, first, last);
}

int tdl_segment_init_server(struct tdl_segment *seg,
			    const struct tdl_dataloop *dl, uint64_t count,
			    int64_t disp, uint64_t first, uint64_t last,
			    const struct tdl_layout *layout, uint32_t slot)
{
	int rc;

	if (!layout || tdl_layout_check(layout, NULL, 0) || slot >= layout->count)
		return -EINVAL;
	rc = init(seg, dl, count, disp, first, last);
	if (rc)
		return rc;
	seg->filtered = 1;
	seg->layout = *layout;
	seg->slot = slot;
	return 0;
}

uint64_t tdl_piece_object(const struct tdl_layout *layout,
			  const struct tdl_piece *piece)
{
	uint32_t slot;
	uint64_t obj;

	tdl_layout_map(layout, piece->offset, &slot, &obj);
	return obj;
}
