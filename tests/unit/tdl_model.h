/*
 * tdl_model.h - an independent model of MPI datatypes for the dataloop
 * tests: random type trees built both as a model and through the tdl
 * builders, and a naive recursive expansion to one offset per stream byte.
 */
#ifndef TDL_MODEL_H
#define TDL_MODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdl.h"

#define MODEL_UNUSED __attribute__((unused))

struct rng {
	uint64_t s;
};

static MODEL_UNUSED uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ULL;
}

static MODEL_UNUSED int64_t rnd_in(struct rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

enum { M_BYTES, M_CONTIG, M_VECTOR, M_HVECTOR, M_IBLOCK, M_HIBLOCK,
       M_INDEXED, M_HINDEXED, M_STRUCT, M_RESIZED, M_NKINDS };

struct mtype {
	int kind;
	int64_t count, blocklen, stride; /* stride: bytes */
	int64_t *bl, *disp;              /* bytes */
	struct mtype *kids[4];           /* struct: kids[b % 4] */
	int same; /* struct: every block uses kids[0] */
	int64_t lb, ub, size;
};

/* Growable list of int64. */
struct vec {
	int64_t *v;
	size_t n, cap;
};

static MODEL_UNUSED void vec_push(struct vec *a, int64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 256;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = x;
}

static MODEL_UNUSED struct mtype *m_kid(const struct mtype *t, int64_t b)
{
	return t->kind == M_STRUCT && !t->same ? t->kids[b % 4] : t->kids[0];
}

static MODEL_UNUSED int64_t m_ext(const struct mtype *t)
{
	return t->ub - t->lb;
}

static MODEL_UNUSED int64_t m_nblocks(const struct mtype *t)
{
	switch (t->kind) {
	case M_CONTIG: case M_RESIZED: return 1;
	default: return t->count;
	}
}

static MODEL_UNUSED int64_t m_nel(const struct mtype *t, int64_t b)
{
	switch (t->kind) {
	case M_CONTIG: return t->count;
	case M_RESIZED: return 1;
	case M_VECTOR: case M_HVECTOR: case M_IBLOCK: case M_HIBLOCK:
		return t->blocklen;
	default: return t->bl[b];
	}
}

static MODEL_UNUSED int64_t m_off(const struct mtype *t, int64_t b)
{
	switch (t->kind) {
	case M_CONTIG: case M_RESIZED: return 0;
	case M_VECTOR: case M_HVECTOR: return b * t->stride;
	default: return t->disp[b];
	}
}

/* MPI bounds: min/max over every element of placement + child bounds. */
static MODEL_UNUSED void m_bounds(struct mtype *t)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN, size = 0;

	if (t->kind == M_BYTES) {
		t->lb = 0;
		t->ub = t->size = t->count;
		return;
	}
	for (int64_t b = 0; b < m_nblocks(t); b++)
		for (int64_t j = 0; j < m_nel(t, b); j++) {
			struct mtype *k = m_kid(t, b);
			int64_t at = m_off(t, b) + j * m_ext(k);
			if (at + k->lb < lo)
				lo = at + k->lb;
			if (at + k->ub > hi)
				hi = at + k->ub;
			size += k->size;
		}
	t->size = size;
	if (t->kind == M_RESIZED)
		return; /* lb, ub set by the generator */
	t->lb = lo == INT64_MAX ? 0 : lo;
	t->ub = hi == INT64_MIN ? 0 : hi;
}

static MODEL_UNUSED void m_expand(const struct mtype *t, int64_t base,
				  struct vec *out)
{
	if (t->kind == M_BYTES) {
		for (int64_t i = 0; i < t->count; i++)
			vec_push(out, base + i);
		return;
	}
	for (int64_t b = 0; b < m_nblocks(t); b++)
		for (int64_t j = 0; j < m_nel(t, b); j++) {
			struct mtype *k = m_kid(t, b);
			m_expand(k, base + m_off(t, b) + j * m_ext(k), out);
		}
}

static MODEL_UNUSED void m_free(struct mtype *t)
{
	if (!t)
		return;
	if (t->kind != M_BYTES)
		for (int i = 0; i < (t->kind == M_STRUCT ? 4 : 1); i++)
			m_free(t->kids[i]);
	free(t->bl);
	free(t->disp);
	free(t);
}

/* Random type of at most `depth` levels, built as a model and with the
 * tdl builders (*dl). Sizes stay small so expansion is cheap. */
static MODEL_UNUSED struct mtype *m_gen(struct rng *r, int depth,
					struct tdl_dataloop **dl)
{
	struct mtype *t = calloc(1, sizeof(*t));
	struct tdl_dataloop *kdl[4] = { 0 };
	int kind = depth <= 1 ? M_BYTES : (int)rnd_in(r, 0, M_NKINDS - 1);
	int nk = kind == M_STRUCT ? 4 : 1;
	int rc = 0;

	t->kind = kind;
	if (kind == M_BYTES) {
		t->count = rnd_in(r, 0, 5) == 0 ? rnd_in(r, 0, 1)
						 : rnd_in(r, 1, 8);
		m_bounds(t);
		rc = tdl_bytes(t->count, dl);
		if (rc)
			abort();
		return t;
	}
	for (int i = 0; i < nk; i++)
		t->kids[i] = m_gen(r, depth - 1 - (rnd_in(r, 0, 3) == 0), &kdl[i]);
	{
		struct mtype *k = t->kids[0];
		int64_t e = m_ext(k);
		int64_t n = rnd_in(r, 0, 6) == 0 ? 0 : rnd_in(r, 1, 4);

		t->count = n;
		t->blocklen = rnd_in(r, 0, 5) == 0 ? 0 : rnd_in(r, 1, 3);
		t->bl = calloc((size_t)n + 1, sizeof(int64_t));
		t->disp = calloc((size_t)n + 1, sizeof(int64_t));
		for (int64_t b = 0; b < n; b++) {
			t->bl[b] = rnd_in(r, 0, 3);
			t->disp[b] = rnd_in(r, -40, 40);
		}
		switch (kind) {
		case M_CONTIG:
			rc = tdl_contig(n, kdl[0], dl);
			break;
		case M_VECTOR: {
			int64_t s = rnd_in(r, -3, 4);
			t->stride = s * e;
			rc = tdl_vector(n, t->blocklen, s, kdl[0], dl);
			break;
		}
		case M_HVECTOR:
			t->stride = rnd_in(r, -30, 30);
			rc = tdl_hvector(n, t->blocklen, t->stride, kdl[0], dl);
			break;
		case M_IBLOCK: {
			int64_t d[5];
			for (int64_t b = 0; b < n; b++) {
				d[b] = rnd_in(r, -4, 6);
				t->disp[b] = d[b] * e;
			}
			rc = tdl_indexed_block(n, t->blocklen, d, kdl[0], dl);
			break;
		}
		case M_HIBLOCK:
			rc = tdl_hindexed_block(n, t->blocklen, t->disp, kdl[0],
						dl);
			break;
		case M_INDEXED: {
			int64_t d[5];
			for (int64_t b = 0; b < n; b++) {
				d[b] = rnd_in(r, -4, 6);
				t->disp[b] = d[b] * e;
			}
			rc = tdl_indexed(n, t->bl, d, kdl[0], dl);
			break;
		}
		case M_HINDEXED:
			rc = tdl_hindexed(n, t->bl, t->disp, kdl[0], dl);
			break;
		case M_STRUCT: {
			const struct tdl_dataloop *ks[5];
			t->same = rnd_in(r, 0, 2) == 0;
			for (int64_t b = 0; b < n; b++)
				ks[b] = kdl[t->same ? 0 : b % 4];
			rc = tdl_struct(n, t->bl, t->disp, ks, dl);
			break;
		}
		case M_RESIZED:
			t->lb = rnd_in(r, -20, 20);
			t->ub = t->lb + rnd_in(r, -2, 30);
			rc = tdl_resized(kdl[0], t->lb, t->ub - t->lb, dl);
			break;
		}
	}
	if (rc)
		abort();
	for (int i = 0; i < nk; i++)
		tdl_free(kdl[i]);
	m_bounds(t);
	return t;
}

/* A random type whose single instance holds at most max_size bytes. */
static MODEL_UNUSED struct mtype *m_gen_small(struct rng *r, int depth,
					      int64_t max_size,
					      struct tdl_dataloop **dl)
{
	for (;;) {
		struct mtype *t = m_gen(r, depth, dl);
		if (t->size <= max_size)
			return t;
		m_free(t);
		tdl_free(*dl);
	}
}

/* Offsets of `count` instances at disp, one per stream byte. */
static MODEL_UNUSED void m_expand_view(const struct mtype *t, uint64_t count,
				       int64_t disp, struct vec *out)
{
	for (uint64_t i = 0; i < count; i++)
		m_expand(t, disp + (int64_t)i * m_ext(t), out);
}

static MODEL_UNUSED int64_t vec_min(const struct vec *a)
{
	int64_t m = INT64_MAX;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i] < m)
			m = a->v[i];
	return a->n ? m : 0;
}

/* Expand an engine walk to per-byte (stream, offset) lists. */
static MODEL_UNUSED int walk_bytes(struct tdl_segment *seg, struct rng *r,
				   size_t maxbatch, struct vec *streams,
				   struct vec *offs, size_t *npieces)
{
	struct tdl_piece buf[64];
	uint64_t prev_end_stream = 0, prev_end_off = 0;
	int have_prev = 0;

	*npieces = 0;
	while (!tdl_segment_done(seg)) {
		size_t max = maxbatch ? maxbatch : (size_t)rnd_in(r, 1, 64);
		size_t n;
		int rc = tdl_segment_next(seg, buf, max, &n);
		if (rc)
			return rc;
		if (n == 0 && !tdl_segment_done(seg))
			return -1; /* no progress */
		for (size_t i = 0; i < n; i++) {
			if (buf[i].length == 0)
				return -2;
			/* Maximal coalescing: neighbours never touch. */
			if (have_prev && prev_end_off == buf[i].offset &&
			    prev_end_stream == buf[i].stream)
				return -3;
			for (uint64_t k = 0; k < buf[i].length; k++) {
				vec_push(streams, (int64_t)(buf[i].stream + k));
				vec_push(offs, (int64_t)(buf[i].offset + k));
			}
			prev_end_off = buf[i].offset + buf[i].length;
			prev_end_stream = buf[i].stream + buf[i].length;
			have_prev = 1;
		}
		*npieces += n;
	}
	return 0;
}

/* Number of maximal runs in per-byte lists (contiguous in both). */
static MODEL_UNUSED size_t count_runs(const struct vec *streams,
				      const struct vec *offs)
{
	size_t runs = 0;
	for (size_t i = 0; i < offs->n; i++)
		if (i == 0 || offs->v[i] != offs->v[i - 1] + 1 ||
		    streams->v[i] != streams->v[i - 1] + 1)
			runs++;
	return runs;
}

#endif /* TDL_MODEL_H */
