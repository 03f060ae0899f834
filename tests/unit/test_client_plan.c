/*
 * test_client_plan.c - the noncontiguous planner (client/plan.h) against a
 * brute-force model, with no daemon.
 *
 * The model expands every byte of the access to its file offset and maps
 * it through the striping arithmetic to (slot, object offset). Every plan
 * must then put each stream byte in exactly one piece, at the model's
 * place, each object's pieces in stream order and maximally joined, and
 * every round must respect max_io per object, the window, the list batch
 * and the piece caps; and be as long as those limits allow (the byte after
 * a round must break one of them). Layouts are random (strips of 1 B to
 * 1 MiB, 1 to 16 objects), accesses random region lists and random nested
 * file views (tdl_model.h) with random stream windows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "plan.h"
#include "tdl.h"
#include "tdl_model.h"

/* ------------------------------------------------------------- the model */

/* Every stream byte of the access, in stream order. */
struct access {
	int view;
	struct vec file;      /* file offset of each stream byte */
	uint64_t first;       /* stream position of file.v[0] */
	/* region lists: where each region starts in the stream */
	const uint64_t *lens;
	size_t n_regions;
};

static void model_map(const struct tdl_layout *l, uint64_t off, uint32_t *slot, uint64_t *obj)
{
	uint64_t strip = off / l->strip_size;

	*slot = (uint32_t)(strip % l->count);
	*obj = strip / l->count * l->strip_size + off % l->strip_size;
}

/* Does stream byte s begin a (nonempty) region? How many regions of
 * nonzero length meet the stream bytes [a, b)? */
static int region_starts(const struct access *x, uint64_t s)
{
	uint64_t at = 0;

	for (size_t i = 0; i < x->n_regions; i++) {
		if (x->lens[i] && at == s)
			return 1;
		at += x->lens[i];
	}
	return 0;
}

static uint32_t regions_met(const struct access *x, uint64_t a, uint64_t b)
{
	uint64_t at = 0;
	uint32_t n = 0;

	for (size_t i = 0; i < x->n_regions; i++) {
		if (x->lens[i] && at < b && at + x->lens[i] > a)
			n++;
		at += x->lens[i];
	}
	return n;
}

/* ------------------------------------------------------------ the check */

static void fail_case(const char *what, const struct tdl_layout *l,
		      const struct tc_plan_limits *lim, const struct tc_plan_round *r)
{
	fail_msg("%s (strip %llu x %u; max_io %llu, window %u, regions %u, pieces %u/%u; round "
		 "[%llu, %llu) of %u objects, %zu pieces)", what,
		 (unsigned long long)l->strip_size, l->count, (unsigned long long)lim->max_io,
		 lim->window, lim->max_regions, lim->max_pieces, lim->max_round_pieces,
		 (unsigned long long)r->first, (unsigned long long)r->last, r->n_objects,
		 r->n_pieces);
}

/* The byte after a round must break a limit: a longer round was allowed
 * otherwise. */
static void check_maximal(const struct access *x, const struct tc_plan *p)
{
	const struct tc_plan_round *r = &p->round;
	const struct tc_plan_limits *lim = &p->lim;
	uint64_t s = r->last, obj;
	uint32_t slot;
	const struct tc_plan_object *o = NULL;
	const struct tc_plan_piece *prev = NULL;
	int prev_mine = 0;

	model_map(&p->layout, (uint64_t)x->file.v[s - x->first], &slot, &obj);
	for (uint32_t k = 0; k < r->n_objects; k++) {
		const struct tc_plan_object *q = &r->objects[k];

		for (size_t i = q->first; i < q->first + q->n; i++)
			if (r->pieces[i].stream + r->pieces[i].len == s) {
				prev = &r->pieces[i];
				prev_mine = q->slot == slot;
			}
		if (q->slot == slot)
			o = q;
	}
	if (!x->view && lim->max_regions && region_starts(x, s) &&
	    regions_met(x, r->first, r->last) == lim->max_regions)
		return; /* the list batch is full */
	if (!o) {
		if (r->n_objects == lim->window || r->n_pieces == lim->max_round_pieces)
			return;
	} else {
		int joins = prev && prev_mine && prev->obj + prev->len == obj;

		if (o->bytes == lim->max_io)
			return;
		if (!joins && (r->n_pieces == lim->max_round_pieces ||
			       (lim->max_pieces && o->n == lim->max_pieces)))
			return;
	}
	fail_case("round ends before any limit", &p->layout, lim, r);
}

/* Plan the whole access and check every round against the model. */
static void check_plan(const struct access *x, struct tc_plan *p)
{
	const struct tc_plan_round *r = &p->round;
	const struct tc_plan_limits *lim = &p->lim;
	uint64_t end = x->first + x->file.n, pos = x->first;
	uint8_t *seen = calloc(x->file.n + 1, 1);
	int rounds = 0;

	while (!tc_plan_done(p)) {
		uint64_t total = 0;
		size_t at = 0;

		assert_int_equal(tc_plan_next(p), 0);
		rounds++;
		if (r->first != pos || r->last <= r->first || r->last > end)
			fail_case("rounds do not tile the stream", &p->layout, lim, r);
		if (r->n_objects == 0 || r->n_objects > lim->window)
			fail_case("objects per round", &p->layout, lim, r);
		if (r->n_pieces > lim->max_round_pieces)
			fail_case("pieces per round", &p->layout, lim, r);
		if (!x->view && lim->max_regions &&
		    regions_met(x, r->first, r->last) > lim->max_regions)
			fail_case("regions per round", &p->layout, lim, r);
		for (uint32_t k = 0; k < r->n_objects; k++) {
			const struct tc_plan_object *o = &r->objects[k];
			uint64_t bytes = 0;

			if (o->first != at || o->n == 0)
				fail_case("objects' pieces are not grouped", &p->layout, lim, r);
			at += o->n;
			if (o->slot >= p->layout.count)
				fail_case("slot outside the layout", &p->layout, lim, r);
			for (uint32_t j = 0; j < k; j++)
				if (r->objects[j].slot == o->slot)
					fail_case("an object twice in a round", &p->layout, lim, r);
			if (lim->max_pieces && o->n > lim->max_pieces)
				fail_case("pieces per object", &p->layout, lim, r);
			for (size_t i = o->first; i < o->first + o->n; i++) {
				const struct tc_plan_piece *u = &r->pieces[i];

				if (u->len == 0 || u->stream < r->first || u->stream + u->len > r->last)
					fail_case("a piece outside its round", &p->layout, lim, r);
				if (i > o->first) {
					const struct tc_plan_piece *v = &r->pieces[i - 1];

					if (v->stream + v->len > u->stream)
						fail_case("pieces out of stream order", &p->layout, lim,
							  r);
					if (v->stream + v->len == u->stream && v->obj + v->len == u->obj)
						fail_case("adjacent pieces not joined", &p->layout, lim, r);
				}
				for (uint64_t b = 0; b < u->len; b++) {
					uint64_t s = u->stream + b - x->first, obj;
					uint32_t slot;

					model_map(&p->layout, (uint64_t)x->file.v[s], &slot, &obj);
					if (slot != o->slot || obj != u->obj + b)
						fail_msg("stream byte %llu (file %lld) planned at slot %u "
							 "object offset %llu; the model says slot %u offset "
							 "%llu", (unsigned long long)(s + x->first),
							 (long long)x->file.v[s], o->slot,
							 (unsigned long long)(u->obj + b), slot,
							 (unsigned long long)obj);
					if (seen[s]++)
						fail_msg("stream byte %llu planned twice",
							 (unsigned long long)(s + x->first));
				}
				bytes += u->len;
			}
			if (bytes != o->bytes || bytes > lim->max_io)
				fail_case("object bytes", &p->layout, lim, r);
			total += bytes;
		}
		if (at != r->n_pieces || total != r->last - r->first)
			fail_case("pieces do not cover the round", &p->layout, lim, r);
		if (r->last < end)
			check_maximal(x, p);
		pos = r->last;
	}
	assert_int_equal(pos, end);
	for (uint64_t s = 0; s < x->file.n; s++)
		if (!seen[s])
			fail_msg("stream byte %llu never planned", (unsigned long long)(s + x->first));
	/* once done, rounds are empty */
	assert_int_equal(tc_plan_next(p), 0);
	assert_int_equal(r->n_objects, 0);
	assert_int_equal(r->first, r->last);
	free(seen);
}

/* The overlap check against sorting every byte's offset. */
static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void check_overlap(const struct access *x, const struct tc_plan *p)
{
	int64_t *sorted = malloc((x->file.n + 1) * sizeof(*sorted));
	int dup = 0, rc;
	uint64_t at = UINT64_MAX;

	if (x->file.n)
		memcpy(sorted, x->file.v, x->file.n * sizeof(*sorted));
	qsort(sorted, x->file.n, sizeof(*sorted), cmp_i64);
	for (size_t i = 1; i < x->file.n; i++)
		dup |= sorted[i] == sorted[i - 1];
	rc = tc_plan_check_overlap(p, &at);
	assert_int_equal(rc, dup ? -EINVAL : 0);
	if (dup) { /* the offset named is one named twice */
		int64_t *hit = bsearch(&(int64_t){ (int64_t)at }, sorted, x->file.n, sizeof(*sorted),
				       cmp_i64);

		assert_non_null(hit);
		assert_true((hit > sorted && hit[-1] == hit[0]) ||
			    (hit + 1 < sorted + x->file.n && hit[1] == hit[0]));
	}
	free(sorted);
}

/* ------------------------------------------------------- random inputs */

static uint64_t log_uniform(struct rng *r, int max_bits)
{
	return 1 + rnd(r) % (1ull << rnd_in(r, 0, max_bits));
}

static struct tdl_layout random_layout(struct rng *r)
{
	struct tdl_layout l = { log_uniform(r, 20), (uint32_t)rnd_in(r, 1, 16) };

	if (l.strip_size > 1 << 20)
		l.strip_size = 1 << 20;
	return l;
}

static struct tc_plan_limits random_limits(struct rng *r, int list)
{
	static const uint64_t io[] = { 1, 2, 3, 7, 64, 4096, 65536, 1 << 20 };
	struct tc_plan_limits lim = {
		.max_io = rnd_in(r, 0, 1) ? io[rnd_in(r, 0, 7)] : (uint64_t)rnd_in(r, 1, 5000),
		.window = (uint32_t)rnd_in(r, 1, 17),
		.max_regions = list && rnd_in(r, 0, 1) ? (uint32_t)rnd_in(r, 1, 10) : 0,
		.max_pieces = rnd_in(r, 0, 1) ? (uint32_t)rnd_in(r, 1, 8) : 0,
		.max_round_pieces = rnd_in(r, 0, 2) ? 65536 : (uint32_t)rnd_in(r, 1, 12),
	};

	return lim;
}

/* Regions: sometimes adjacent, sometimes overlapping, in random order,
 * anywhere up to 2^40, empty ones included. */
static size_t random_regions(struct rng *r, uint64_t *offs, uint64_t *lens, size_t max)
{
	size_t n = (size_t)rnd_in(r, 0, (int64_t)max);
	uint64_t at = rnd_in(r, 0, 1) ? rnd(r) % (1ull << 40) : rnd(r) % 5000;

	for (size_t i = 0; i < n; i++) {
		lens[i] = rnd_in(r, 0, 9) ? log_uniform(r, 10) : 0;
		switch (rnd_in(r, 0, 3)) {
		case 0: offs[i] = at; break;                          /* adjacent */
		case 1: /* overlapping, by 1 byte or more */
			offs[i] = at - (at ? 1 + rnd(r) % (at < 64 ? at : 64) : 0);
			break;
		default: offs[i] = at + log_uniform(r, 16); break;    /* a gap */
		}
		at = offs[i] + lens[i];
	}
	/* half the time, the stream order is not the file order */
	for (size_t i = rnd_in(r, 0, 1) ? n : 0; i > 1; i--) {
		size_t j = (size_t)rnd_in(r, 0, (int64_t)i - 1);
		uint64_t o = offs[i - 1], l = lens[i - 1];

		offs[i - 1] = offs[j];
		lens[i - 1] = lens[j];
		offs[j] = o;
		lens[j] = l;
	}
	return n;
}

static void one_list(struct rng *r)
{
	enum { MAXR = 40 };
	uint64_t offs[MAXR], lens[MAXR];
	size_t n = random_regions(r, offs, lens, MAXR);
	struct tdl_layout l = random_layout(r);
	struct tc_plan_limits lim = random_limits(r, 1);
	struct access x = { .lens = lens, .n_regions = n };
	struct tc_plan p;

	for (size_t i = 0; i < n; i++)
		for (uint64_t b = 0; b < lens[i]; b++)
			vec_push(&x.file, (int64_t)(offs[i] + b));
	assert_int_equal(tc_plan_init_list(&p, &l, &lim, offs, lens, n), 0);
	check_overlap(&x, &p);
	check_plan(&x, &p);
	tc_plan_free(&p);
	free(x.file.v);
}

static void one_view(struct rng *r)
{
	struct tdl_dataloop *dl;
	struct mtype *t = m_gen_small(r, (int)rnd_in(r, 1, 5), 300, &dl);
	uint64_t count = t->size ? (uint64_t)rnd_in(r, 1, 1 + 6000 / t->size) : 3;
	struct vec all = { 0 };
	struct tdl_layout l = random_layout(r);
	struct tc_plan_limits lim = random_limits(r, 0);
	struct access x = { .view = 1 };
	uint64_t first, last;
	int64_t disp;
	struct tc_plan p;

	m_expand_view(t, count, 0, &all);
	/* from the lowest offset (now 0) to somewhere up to 2^40 */
	disp = -vec_min(&all) + (rnd_in(r, 0, 1) ? (int64_t)(rnd(r) % (1ull << 40)) : 0);
	first = (uint64_t)rnd_in(r, 0, (int64_t)all.n);
	last = (uint64_t)rnd_in(r, (int64_t)first, (int64_t)all.n);
	if (rnd_in(r, 0, 1)) {
		first = 0;
		last = all.n;
	}
	x.first = first;
	for (uint64_t s = first; s < last; s++)
		vec_push(&x.file, all.v[s] + disp);
	assert_int_equal(tdl_check_view(dl, count, disp, NULL, 0), 0);
	assert_int_equal(tc_plan_init_view(&p, &l, &lim, dl, count, disp, first, last), 0);
	if (first == 0 && last == all.n)
		check_overlap(&x, &p);
	check_plan(&x, &p);
	tc_plan_free(&p);
	free(x.file.v);
	free(all.v);
	m_free(t);
	tdl_free(dl);
}

static void test_random_lists(void **state)
{
	struct rng r = { 0x9e3779b97f4a7c15ull };

	(void)state;
	for (int i = 0; i < 3000; i++)
		one_list(&r);
}

static void test_random_views(void **state)
{
	struct rng r = { 0xdeadbeefcafef00dull };

	(void)state;
	for (int i = 0; i < 2000; i++)
		one_view(&r);
}

/* ------------------------------------------------------------ examples */

/* The HPIO pattern (4096 regions of 8 bytes, 128 apart) over 4 objects of
 * 64 KiB strips: one round, one message per object; with a list batch of
 * 64, one round per 64 regions. */
static void test_hpio_pattern(void **state)
{
	enum { N = 4096 };
	static uint64_t offs[N], lens[N];
	struct tdl_layout l = { 65536, 4 };
	struct tc_plan_limits lim = { 1 << 20, 16, 0, 8192, 65536 };
	struct tc_plan p;
	int rounds = 0;

	(void)state;
	for (int i = 0; i < N; i++) {
		offs[i] = (uint64_t)i * 136;
		lens[i] = 8;
	}
	assert_int_equal(tc_plan_init_list(&p, &l, &lim, offs, lens, N), 0);
	assert_int_equal(tc_plan_next(&p), 0);
	assert_int_equal(p.round.first, 0);
	assert_int_equal(p.round.last, N * 8);
	assert_int_equal(p.round.n_objects, 4);
	assert_int_equal(p.round.n_pieces, N);
	assert_true(tc_plan_done(&p));
	tc_plan_free(&p);

	lim.max_regions = 64;
	assert_int_equal(tc_plan_init_list(&p, &l, &lim, offs, lens, N), 0);
	while (!tc_plan_done(&p)) {
		assert_int_equal(tc_plan_next(&p), 0);
		assert_int_equal(p.round.last - p.round.first, 64 * 8);
		rounds++;
	}
	assert_int_equal(rounds, N / 64);
	tc_plan_free(&p);
}

/* A strided view over one object: max_io cuts rounds; pieces split at
 * strip boundaries join again inside the object (one object only). */
static void test_view_max_io(void **state)
{
	struct tdl_dataloop *b, *v;
	struct tdl_layout l = { 1000, 1 };
	struct tc_plan_limits lim = { 4096, 16, 0, 0, 65536 };
	struct tc_plan p;

	(void)state;
	assert_int_equal(tdl_bytes(1, &b), 0);
	/* 100 blocks of 100 bytes, 150 apart: 10000 bytes */
	assert_int_equal(tdl_hvector(100, 100, 150, b, &v), 0);
	assert_int_equal(tc_plan_init_view(&p, &l, &lim, v, 1, 0, 0, 10000), 0);
	assert_int_equal(tc_plan_next(&p), 0);
	assert_int_equal(p.round.last, 4096);
	assert_int_equal(p.round.n_objects, 1);
	assert_int_equal(p.round.objects[0].bytes, 4096);
	assert_int_equal(p.round.n_pieces, 41); /* 40 whole blocks and 96 bytes */
	assert_int_equal(tc_plan_next(&p), 0);
	assert_int_equal(p.round.first, 4096);
	assert_int_equal(p.round.pieces[0].obj, 40 * 150 + 96);
	assert_int_equal(p.round.pieces[0].len, 4);
	tc_plan_free(&p);
	tdl_free(v);
	tdl_free(b);
}

static void test_bad_setup(void **state)
{
	struct tc_plan p;
	struct tdl_layout l = { 4096, 4 }, none = { 4096, 0 }, wide = { 4096, 257 };
	struct tc_plan_limits lim = { 1 << 20, 16, 0, 0, 65536 }, zero = lim;
	struct tdl_dataloop *b;
	uint64_t off = 0, len = 10;

	(void)state;
	assert_int_equal(tc_plan_init_list(&p, &none, &lim, &off, &len, 1), -EINVAL);
	assert_int_equal(tc_plan_init_list(&p, &wide, &lim, &off, &len, 1), -EINVAL);
	zero.window = 0;
	assert_int_equal(tc_plan_init_list(&p, &l, &zero, &off, &len, 1), -EINVAL);
	zero = lim;
	zero.max_io = 0;
	assert_int_equal(tc_plan_init_list(&p, &l, &zero, &off, &len, 1), -EINVAL);
	assert_int_equal(tdl_bytes(10, &b), 0);
	/* a window past the view's 20 bytes */
	assert_int_equal(tc_plan_init_view(&p, &l, &lim, b, 2, 0, 0, 21), -EINVAL);
	assert_int_equal(tc_plan_init_view(&p, &l, &lim, b, 2, 0, 5, 4), -EINVAL);
	tdl_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hpio_pattern),
		cmocka_unit_test(test_view_max_io),
		cmocka_unit_test(test_bad_setup),
		cmocka_unit_test(test_random_lists),
		cmocka_unit_test(test_random_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
