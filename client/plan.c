/*
 * plan.c - the noncontiguous planner: cuts an access into rounds and each
 * round into per-object pieces (see plan.h). Pure: layout math and the
 * segment engine only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

/* ------------------------------------------------------------ file side */

/* The rest of the current file piece: 1 with *off, *len; 0 at the end;
 * or the segment engine's error. */
static int file_peek(struct tc_plan_file *f, uint64_t *off, uint64_t *len)
{
	if (!f->view) {
		while (f->idx < f->n && f->lens[f->idx] == 0)
			f->idx++;
		if (f->idx == f->n)
			return 0;
		*off = f->offs[f->idx] + f->within;
		*len = f->lens[f->idx] - f->within;
		return 1;
	}
	if (f->bi == f->bn) {
		int rc = tdl_segment_next(&f->seg, f->batch, sizeof(f->batch) / sizeof(f->batch[0]),
					  &f->bn);

		if (rc)
			return rc;
		f->bi = 0;
		if (!f->bn)
			return 0;
	}
	*off = f->batch[f->bi].offset + f->within;
	*len = f->batch[f->bi].length - f->within;
	return 1;
}

/* Consume k bytes (at most the rest of the current piece). */
static void file_take(struct tc_plan_file *f, uint64_t k)
{
	uint64_t len = f->view ? f->batch[f->bi].length : f->lens[f->idx];

	f->within += k;
	f->pos += k;
	if (f->within == len) {
		f->within = 0;
		if (f->view)
			f->bi++;
		else
			f->idx++;
	}
}

/* ----------------------------------------------------------------- setup */

static int plan_init(struct tc_plan *p, const struct tdl_layout *layout,
		     const struct tc_plan_limits *lim)
{
	memset(p, 0, sizeof(*p));
	if (!layout->strip_size || !layout->count || layout->count > TESSERA_MAX_STRIPE ||
	    !lim->max_io || !lim->window || !lim->max_round_pieces)
		return -EINVAL;
	p->layout = *layout;
	p->lim = *lim;
	memset(p->object_of, -1, sizeof(p->object_of));
	return 0;
}

int tc_plan_init_list(struct tc_plan *p, const struct tdl_layout *layout,
		      const struct tc_plan_limits *lim, const uint64_t *offs,
		      const uint64_t *lens, size_t n)
{
	int rc = plan_init(p, layout, lim);

	if (rc)
		return rc;
	p->file.offs = offs;
	p->file.lens = lens;
	p->file.n = n;
	for (size_t i = 0; i < n; i++)
		p->end += lens[i];
	return 0;
}

int tc_plan_init_view(struct tc_plan *p, const struct tdl_layout *layout,
		      const struct tc_plan_limits *lim, const struct tdl_dataloop *type,
		      uint64_t count, int64_t disp, uint64_t first, uint64_t last)
{
	uint64_t size = tdl_size(type);
	int rc = plan_init(p, layout, lim);

	if (rc)
		return rc;
	/* the window lies within the view's stream */
	if (first > last || (size && count > UINT64_MAX / size) || last > size * count)
		return -EINVAL;
	p->file.view = 1;
	p->file.pos = first;
	p->end = last;
	p->round.first = p->round.last = first;
	return tdl_segment_init(&p->file.seg, type, count, disp, first, last);
}

void tc_plan_free(struct tc_plan *p)
{
	free(p->runs);
	free(p->run_object);
	free(p->round.pieces);
	p->runs = p->round.pieces = NULL;
	p->run_object = NULL;
	p->cap = 0;
}

int tc_plan_done(const struct tc_plan *p)
{
	return p->file.pos >= p->end;
}

/* ---------------------------------------------------------------- rounds */

/* Room for one more run; the arrays grow up to max_round_pieces. */
static int reserve(struct tc_plan *p, size_t n)
{
	size_t cap = p->cap ? 2 * p->cap : 256;
	void *a, *b, *c;

	if (n < p->cap)
		return 0;
	if (cap > p->lim.max_round_pieces)
		cap = p->lim.max_round_pieces;
	a = realloc(p->runs, cap * sizeof(*p->runs));
	if (a)
		p->runs = a;
	b = realloc(p->run_object, cap * sizeof(*p->run_object));
	if (b)
		p->run_object = b;
	c = realloc(p->round.pieces, cap * sizeof(*p->round.pieces));
	if (c)
		p->round.pieces = c;
	if (!a || !b || !c)
		return -ENOMEM;
	p->cap = cap;
	return 0;
}

/* Group the round's runs by object (a stable counting sort), so each
 * object's pieces are contiguous and in stream order. */
static void group_runs(struct tc_plan *p, size_t n_runs)
{
	struct tc_plan_round *r = &p->round;
	size_t at = 0, fill[TESSERA_MAX_STRIPE];

	for (uint32_t k = 0; k < r->n_objects; k++) {
		r->objects[k].first = fill[k] = at;
		at += r->objects[k].n;
	}
	for (size_t i = 0; i < n_runs; i++)
		r->pieces[fill[p->run_object[i]]++] = p->runs[i];
	r->n_pieces = n_runs;
}

/* Start an empty round at the stream's position. */
static void round_reset(struct tc_plan *p)
{
	struct tc_plan_round *r = &p->round;

	for (uint32_t k = 0; k < r->n_objects; k++)
		p->object_of[r->objects[k].slot] = -1;
	r->n_objects = 0;
	r->n_pieces = 0;
	r->first = r->last = p->file.pos;
}

/* Whether the round's last run is object k's and ends at object offset
 * obj (stream adjacency holds: runs are consecutive in the stream). */
static int extends_last(const struct tc_plan *p, size_t n_runs, int k, uint64_t obj)
{
	if (k < 0 || !n_runs || p->run_object[n_runs - 1] != (uint32_t)k)
		return 0;
	return p->runs[n_runs - 1].obj + p->runs[n_runs - 1].len == obj;
}

/* Add up to `run` bytes at offset obj of slot's object (stream position
 * pos) to the round, within its limits. Returns the bytes added (0: the
 * round is full), or a negative errno. */
static int64_t add_run(struct tc_plan *p, size_t *n_runs, uint32_t slot, uint64_t obj,
		       uint64_t run, uint64_t pos)
{
	struct tc_plan_round *r = &p->round;
	const struct tc_plan_limits *lim = &p->lim;
	int k = p->object_of[slot], rc;
	struct tc_plan_object *o = k < 0 ? NULL : &r->objects[k];
	uint64_t room, take;

	if ((!o && r->n_objects == lim->window) || (o && o->bytes == lim->max_io))
		return 0;
	room = lim->max_io - (o ? o->bytes : 0);
	take = run < room ? run : room;
	if (extends_last(p, *n_runs, k, obj)) {
		p->runs[*n_runs - 1].len += take;
		o->bytes += take;
		return (int64_t)take;
	}
	if (*n_runs == lim->max_round_pieces || (o && lim->max_pieces && o->n == lim->max_pieces))
		return 0;
	if ((rc = reserve(p, *n_runs)))
		return rc;
	if (!o) {
		k = (int)r->n_objects++;
		p->object_of[slot] = (int16_t)k;
		o = &r->objects[k];
		*o = (struct tc_plan_object){ .slot = slot };
	}
	p->runs[*n_runs] = (struct tc_plan_piece){ obj, take, pos };
	p->run_object[(*n_runs)++] = (uint32_t)k;
	o->n++;
	o->bytes += take;
	return (int64_t)take;
}

int tc_plan_next(struct tc_plan *p)
{
	struct tc_plan_file *f = &p->file;
	uint32_t regions;
	size_t n_runs = 0;
	uint64_t off, len;
	int rc = 0;

	round_reset(p);
	regions = f->within ? 1 : 0; /* a region begun last round */
	while (f->pos < p->end && (rc = file_peek(f, &off, &len)) > 0) {
		int new_region = !f->view && f->within == 0;
		uint64_t obj;
		uint32_t slot;
		int64_t took;

		if (new_region && p->lim.max_regions && regions == p->lim.max_regions)
			break;
		if (len > p->end - f->pos)
			len = p->end - f->pos;
		tdl_layout_map(&p->layout, off, &slot, &obj);
		took = add_run(p, &n_runs, slot, obj, tdl_layout_run(&p->layout, off, len), f->pos);
		if (took < 0)
			return (int)took;
		if (!took)
			break;
		regions += new_region;
		file_take(f, (uint64_t)took);
	}
	if (rc < 0)
		return rc;
	p->round.last = f->pos;
	group_runs(p, n_runs);
	return 0;
}

/* ------------------------------------------------------------- overlap */

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* A walk that finds the pieces ascending proves there is no overlap at
 * once; any other pattern is sorted and checked. */
int tc_plan_check_overlap(const struct tc_plan *p, uint64_t *at)
{
	struct tc_plan_file f = p->file, again = p->file;
	uint64_t off, len, end = 0, *ranges = NULL;
	size_t n = 0, cap = 0;
	int rc, sorted = 1;

	while ((rc = file_peek(&f, &off, &len)) > 0) {
		if (off < end) {
			sorted = 0;
			break;
		}
		end = off + len;
		file_take(&f, len);
	}
	if (rc < 0 || sorted)
		return rc < 0 ? rc : 0;
	while ((rc = file_peek(&again, &off, &len)) > 0) {
		if (n == cap) {
			uint64_t *q = realloc(ranges, (cap = cap ? 2 * cap : 4096) * 2 * sizeof(*q));

			if (!q) {
				free(ranges);
				return -ENOMEM;
			}
			ranges = q;
		}
		ranges[2 * n] = off;
		ranges[2 * n++ + 1] = len;
		file_take(&again, len);
	}
	if (rc < 0) {
		free(ranges);
		return rc;
	}
	qsort(ranges, n, 2 * sizeof(*ranges), cmp_range);
	for (size_t i = 1; i < n && !rc; i++)
		if (ranges[2 * i] < ranges[2 * (i - 1)] + ranges[2 * (i - 1) + 1]) {
			*at = ranges[2 * i];
			rc = -EINVAL;
		}
	free(ranges);
	return rc;
}
