/*
 * plan.h - the noncontiguous planner (libtessera internal).
 *
 * Plain data in, plain data out: no network, no messages, no allocation
 * beyond its own piece arrays. nc.c (the executor) turns each round into
 * one message per object and moves the data; the unit test
 * tests/unit/test_client_plan.c checks every round against a brute-force model.
 *
 * An access is one byte stream whose bytes lie in the file either as a
 * list of regions (offset, length), stream positions 0 .. total, or as a
 * file view (a dataloop tiled `count` times from `disp`) of which the
 * stream window [first, last) is accessed. Each file byte maps through the
 * striping math to (slot, object offset).
 *
 * A round is the next stretch of the stream [first, last), as long as it
 * can be without breaking a limit:
 *   - no object receives more than max_io bytes;
 *   - at most `window` objects are involved;
 *   - (region lists) at most max_regions regions are touched, a region
 *     begun in the previous round counting as one;
 *   - at most max_pieces pieces per object, max_round_pieces in all.
 * Per involved object the round lists its pieces (object offset, length,
 * stream position of the first byte) in stream order; the object's data
 * is those pieces' bytes concatenated. A piece that continues the previous
 * one in both the object and the stream is joined to it.
 */
#ifndef TESSERA_CLIENT_PLAN_H
#define TESSERA_CLIENT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tdl.h"

#define TC_PLAN_MAX_OBJECTS 256 /* stripe count of a layout, at most */

struct tc_plan_limits {
	uint64_t max_io;           /* bytes per object per round, >= 1 */
	uint32_t window;           /* objects per round, >= 1 */
	uint32_t max_regions;      /* region lists: regions per round (0: any) */
	uint32_t max_pieces;       /* pieces per object per round (0: any) */
	uint32_t max_round_pieces; /* pieces per round over all objects, >= 1 */
};

struct tc_plan_piece {
	uint64_t obj;    /* object offset */
	uint64_t len;
	uint64_t stream; /* stream position of its first byte */
};

struct tc_plan_object {
	uint32_t slot;   /* layout slot (which object) */
	uint64_t bytes;  /* its pieces' total, <= max_io */
	size_t first, n; /* its pieces: round.pieces[first .. first + n) */
};

struct tc_plan_round {
	uint64_t first, last;         /* the stream bytes [first, last) */
	uint32_t n_objects;
	/* objects in the order the stream first reaches them */
	struct tc_plan_object objects[TC_PLAN_MAX_OBJECTS];
	struct tc_plan_piece *pieces; /* grouped by object, each in stream order */
	size_t n_pieces;
};

/* The file side: file pieces (offset, length) in stream order. Copyable
 * (the overlap check walks a copy). */
struct tc_plan_file {
	int view;                    /* a file view, else a region list */
	const uint64_t *offs, *lens; /* regions (borrowed), n of them */
	size_t n, idx;               /* current region */
	struct tdl_segment seg;      /* the view's walk */
	struct tdl_piece batch[64];  /* walked ahead: batch[bi .. bn) unused */
	size_t bn, bi;
	uint64_t within;             /* bytes of the current piece consumed */
	uint64_t pos;                /* stream position */
};

struct tc_plan {
	struct tdl_layout layout;
	struct tc_plan_limits lim;
	struct tc_plan_file file;
	uint64_t end;                /* the stream position the access ends at */
	struct tc_plan_round round;  /* the latest round (tc_plan_next) */
	/* scratch for building a round: its runs in stream order, by object */
	struct tc_plan_piece *runs;
	uint32_t *run_object;        /* index into round.objects of runs[i] */
	size_t cap;                  /* entries of runs, run_object, round.pieces */
	int16_t object_of[TC_PLAN_MAX_OBJECTS]; /* slot -> index in objects, -1 */
};

/* A region list: regions i = (offs[i], lens[i]), stream 0 .. sum(lens).
 * The arrays are borrowed until tc_plan_free. -EINVAL for a layout or
 * limits out of range. */
int tc_plan_init_list(struct tc_plan *p, const struct tdl_layout *layout,
		      const struct tc_plan_limits *lim, const uint64_t *offs,
		      const uint64_t *lens, size_t n);
/* A file view (`count` instances of `type` from `disp`), stream window
 * [first, last). The view must pass tdl_check_view; `type` is borrowed. */
int tc_plan_init_view(struct tc_plan *p, const struct tdl_layout *layout,
		      const struct tc_plan_limits *lim, const struct tdl_dataloop *type,
		      uint64_t count, int64_t disp, uint64_t first, uint64_t last);
void tc_plan_free(struct tc_plan *p);

/* Is every stream byte planned? */
int tc_plan_done(const struct tc_plan *p);
/* Plan the next round into p->round. 0, or -ENOMEM, or the segment
 * engine's error walking the view. After the end, an empty round. */
int tc_plan_next(struct tc_plan *p);

/* Writes: does the access name any file byte twice? Call before the first
 * round. 0; -EINVAL with *at the offset of a byte named twice; -ENOMEM;
 * or the walk's error. */
int tc_plan_check_overlap(const struct tc_plan *p, uint64_t *at);

#endif /* TESSERA_CLIENT_PLAN_H */
