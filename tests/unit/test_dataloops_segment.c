/* test_dataloops_segment.c - the segment engine against naive expansion. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tdl.h"
#include "tdl_model.h"

/* One random type, view and window: whole-stream and per-server walks at
 * random batch sizes against the model's byte list. */
static void check_one(struct rng *r, int depth)
{
	struct tdl_dataloop *dl;
	struct mtype *t = m_gen_small(r, depth, 2000, &dl);
	uint64_t count = (uint64_t)rnd_in(r, 0, 3);
	struct vec one = { 0 }, all = { 0 };
	struct vec ws = { 0 }, wo = { 0 };
	struct tdl_segment seg;
	int64_t disp;
	uint64_t total, first, last;
	size_t np;

	assert_int_equal(tdl_size(dl), (uint64_t)t->size);
	assert_int_equal(tdl_lb(dl), t->lb);
	assert_int_equal(tdl_extent(dl), m_ext(t));
	if (rnd_in(r, 0, 3) == 0)
		count = 1;
	/* Pick the displacement from the lowest offset the view produces. */
	m_expand_view(t, count, 0, &all);
	disp = -vec_min(&all) + rnd_in(r, 0, 9);
	total = all.n;
	assert_int_equal(total, count * tdl_size(dl));
	if (total > 0) {
		/* One byte lower than the lowest offset allows. */
		char msg[128];
		assert_int_equal(tdl_check_view(dl, count, -vec_min(&all) - 1,
						msg, sizeof(msg)),
				 -EINVAL);
		assert_non_null(strstr(msg, "negative"));
	}
	assert_int_equal(tdl_check_view(dl, count, disp, NULL, 0), 0);

	first = (uint64_t)rnd_in(r, 0, (int64_t)total + 2);
	last = (uint64_t)rnd_in(r, (int64_t)first, (int64_t)total + 3);
	if (rnd_in(r, 0, 2) == 0) {
		first = 0;
		last = UINT64_MAX;
	}

	/* Whole-stream walk. */
	assert_int_equal(tdl_segment_init(&seg, dl, count, disp, first, last),
			 0);
	assert_int_equal(walk_bytes(&seg, r, 0, &ws, &wo, &np), 0);
	{
		uint64_t end = last < total ? last : total;
		uint64_t n = first < end ? end - first : 0;
		assert_int_equal(wo.n, n);
		for (uint64_t k = 0; k < n; k++) {
			assert_int_equal(ws.v[k], (int64_t)(first + k));
			assert_int_equal(wo.v[k], all.v[first + k] + disp);
		}
		assert_int_equal(np, count_runs(&ws, &wo));
	}

	/* Per-server walks: each slot sees exactly its bytes, and the slots
	 * together see the window. */
	{
		struct tdl_layout l = { (uint64_t)rnd_in(r, 1, 24),
					(uint32_t)rnd_in(r, 1, 4) };
		size_t seen = 0;
		for (uint32_t s = 0; s < l.count; s++) {
			struct vec fs = { 0 }, fo = { 0 }, es = { 0 },
				   eo = { 0 };
			assert_int_equal(tdl_segment_init_server(&seg, dl, count,
								 disp, first,
								 last, &l, s),
					 0);
			assert_int_equal(walk_bytes(&seg, r, 0, &fs, &fo, &np),
					 0);
			for (size_t k = 0; k < ws.n; k++) {
				uint32_t slot;
				uint64_t obj;
				tdl_layout_map(&l, (uint64_t)wo.v[k], &slot,
					       &obj);
				if (slot != s)
					continue;
				vec_push(&es, ws.v[k]);
				vec_push(&eo, wo.v[k]);
			}
			assert_int_equal(fo.n, eo.n);
			for (size_t k = 0; k < eo.n; k++) {
				assert_int_equal(fs.v[k], es.v[k]);
				assert_int_equal(fo.v[k], eo.v[k]);
			}
			assert_int_equal(np, count_runs(&es, &eo));
			seen += fo.n;
			free(fs.v), free(fo.v), free(es.v), free(eo.v);
		}
		assert_int_equal(seen, ws.n);
	}
	free(one.v), free(all.v), free(ws.v), free(wo.v);
	m_free(t);
	tdl_free(dl);
}

static void test_random_shallow(void **state)
{
	struct rng r = { 0x1234567 };
	(void)state;
	for (int i = 0; i < 1500; i++)
		check_one(&r, 2 + i % 2);
}

static void test_random_deep(void **state)
{
	struct rng r = { 0xfeedbeef };
	(void)state;
	for (int i = 0; i < 2500; i++)
		check_one(&r, 4 + i % 3);
}

/* Resuming is independent of the batch size: walks with batches 1, 2 and
 * 64 produce identical piece lists. */
static void test_batches_identical(void **state)
{
	struct rng r = { 77 };
	(void)state;
	for (int i = 0; i < 300; i++) {
		struct tdl_dataloop *dl;
		struct mtype *t = m_gen_small(&r, 4, 400, &dl);
		struct vec all = { 0 };
		struct tdl_piece ref[2048], p[64];
		size_t nref = 0, n;
		int64_t disp;

		m_expand_view(t, 2, 0, &all);
		disp = -vec_min(&all);
		for (size_t batch = 1; batch <= 64; batch *= 8) {
			struct tdl_segment seg;
			size_t k = 0;
			assert_int_equal(tdl_segment_init(&seg, dl, 2, disp, 0,
							  UINT64_MAX),
					 0);
			while (!tdl_segment_done(&seg)) {
				assert_int_equal(tdl_segment_next(&seg, p,
								  batch, &n),
						 0);
				assert_true(n <= batch);
				for (size_t j = 0; j < n; j++, k++) {
					if (batch == 1)
						ref[nref++] = p[j];
					else
						assert_memory_equal(&ref[k],
								    &p[j],
								    sizeof(p[j]));
				}
			}
			assert_int_equal(k, nref);
			/* A finished walk stays finished. */
			assert_int_equal(tdl_segment_next(&seg, p, 4, &n), 0);
			assert_int_equal(n, 0);
		}
		free(all.v);
		m_free(t);
		tdl_free(dl);
	}
}

/* Thousands of 8-byte regions expand quickly and coalesce where the
 * stride allows. */
static void test_vector_regions(void **state)
{
	struct tdl_dataloop *d, *v, *v2;
	struct tdl_segment seg;
	struct tdl_piece p[256];
	size_t n, total = 0;
	uint64_t bytes = 0, next = 4096;
	(void)state;

	assert_int_equal(tdl_bytes(8, &d), 0);
	assert_int_equal(tdl_vector(200000, 1, 3, d, &v2), 0);
	/* Tile at the full stride so instances continue the pattern. */
	assert_int_equal(tdl_resized(v2, 0, 200000 * 24, &v), 0);
	tdl_free(v2);
	assert_int_equal(tdl_segment_init(&seg, v, 5, 4096, 0, UINT64_MAX), 0);
	while (!tdl_segment_done(&seg)) {
		assert_int_equal(tdl_segment_next(&seg, p, 256, &n), 0);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(p[i].length, 8);
			assert_int_equal(p[i].offset, next);
			assert_int_equal(p[i].stream, bytes);
			bytes += 8;
			next += 24;
		}
		total += n;
	}
	assert_int_equal(total, 1000000);
	/* Stride equal to the block: one piece. */
	assert_int_equal(tdl_vector(100000, 2, 2, d, &v2), 0);
	assert_int_equal(tdl_segment_init(&seg, v2, 3, 0, 0, UINT64_MAX), 0);
	assert_int_equal(tdl_segment_next(&seg, p, 256, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].length, 3 * 1600000);
	assert_true(tdl_segment_done(&seg));
	tdl_free(v2);
	tdl_free(v);
	tdl_free(d);
}

/* A huge contiguous run on a wide layout: the per-server walk touches only
 * the owned strips. */
static void test_server_jumps(void **state)
{
	struct tdl_dataloop *d;
	struct tdl_layout l = { 65536, 16 };
	struct tdl_segment seg;
	struct tdl_piece p[64];
	size_t n, total = 0;
	uint64_t bytes = 0;
	(void)state;

	assert_int_equal(tdl_bytes(1 << 30, &d), 0);
	assert_int_equal(tdl_segment_init_server(&seg, d, 64, 100, 0,
						 UINT64_MAX, &l, 3),
			 0);
	while (!tdl_segment_done(&seg)) {
		assert_int_equal(tdl_segment_next(&seg, p, 64, &n), 0);
		for (size_t i = 0; i < n; i++) {
			uint32_t slot;
			uint64_t obj;
			tdl_layout_map(&l, p[i].offset, &slot, &obj);
			assert_int_equal(slot, 3);
			assert_int_equal(tdl_piece_object(&l, &p[i]), obj);
			assert_int_equal(p[i].stream + 100, p[i].offset);
			bytes += p[i].length;
		}
		total += n;
	}
	/* 64 GiB over 16 slots of 64 KiB strips. */
	assert_int_equal(bytes, (64ULL << 30) / 16);
	assert_int_equal(total, (64ULL << 30) / 65536 / 16);
	tdl_free(d);
}

static void test_bad_args(void **state)
{
	struct tdl_dataloop *d;
	struct tdl_segment seg;
	struct tdl_layout l = { 0, 1 };
	struct tdl_piece p;
	size_t n;
	(void)state;

	assert_int_equal(tdl_bytes(4, &d), 0);
	assert_int_equal(tdl_segment_init(&seg, d, 1, -1, 0, 4), -EINVAL);
	assert_int_equal(tdl_segment_init(&seg, d, UINT64_MAX / 2, 0, 0, 4),
			 -EINVAL);
	assert_int_equal(tdl_segment_init_server(&seg, d, 1, 0, 0, 4, &l, 0),
			 -EINVAL);
	l.strip_size = 4;
	assert_int_equal(tdl_segment_init_server(&seg, d, 1, 0, 0, 4, &l, 1),
			 -EINVAL);
	assert_int_equal(tdl_segment_init(&seg, d, 1, 0, 0, 4), 0);
	assert_int_equal(tdl_segment_next(&seg, &p, 0, &n), -EINVAL);
	assert_int_equal(tdl_bytes(-1, &d) , -EINVAL);
	tdl_free(d);
}

/* An indexed type of 2 one-byte blocks (bytes 0 and 2) with `empty` empty blocks after
 * each: the shape whose walk used to scan every empty block for every
 * byte (a 20 KB window took seconds). */
static struct tdl_dataloop *sparse_indexed(int64_t empty)
{
	int64_t n = 2 * (empty + 1), *lens = calloc((size_t)n, sizeof(*lens));
	int64_t *displs = calloc((size_t)n, sizeof(*displs));
	struct tdl_dataloop *byte, *dl;

	assert_non_null(lens);
	assert_non_null(displs);
	lens[0] = lens[empty + 1] = 1;
	displs[empty + 1] = 2; /* a gap, so the type is not one dense run */
	for (int64_t b = 0; b < n; b++)
		if (!lens[b])
			displs[b] = 7 * b; /* anywhere: an empty block has no bytes */
	assert_int_equal(tdl_bytes(1, &byte), 0);
	assert_int_equal(tdl_indexed(n, lens, displs, byte, &dl), 0);
	tdl_free(byte);
	free(lens);
	free(displs);
	return dl;
}

/* Empty blocks cost steps logarithmic in their number, not linear: 10,000
 * instances of 2 bytes among 100,000 empty blocks each walk in well under
 * 64 steps a byte (a scan would take 50,000), with every byte right. */
static void test_empty_blocks(void **state)
{
	struct tdl_dataloop *dl = sparse_indexed(50000);
	struct tdl_layout l = { 4096, 3 };
	int64_t ext = tdl_extent(dl);
	uint64_t window = 20000, seen = 0;
	struct tdl_segment seg;
	struct tdl_piece p[64];
	size_t n;
	(void)state;

	assert_int_equal(tdl_size(dl), 2);
	assert_int_equal(tdl_segment_init(&seg, dl, 10000, 0, 0, window), 0);
	while (!tdl_segment_done(&seg)) {
		assert_int_equal(tdl_segment_next(&seg, p, 64, &n), 0);
		for (size_t i = 0; i < n; i++)
			for (uint64_t k = 0; k < p[i].length; k++) {
				uint64_t pos = p[i].stream + k;

				assert_int_equal(pos, seen++);
				assert_int_equal(p[i].offset + k,
						 (pos / 2) * (uint64_t)ext + 2 * (pos % 2));
			}
	}
	assert_int_equal(seen, window);
	assert_true(seg.steps < 64 * window);

	/* A server's walk, capped at that many steps, finishes too. */
	for (uint32_t s = 0; s < l.count; s++) {
		assert_int_equal(tdl_segment_init_server(&seg, dl, 10000, 0, 0, window, &l, s), 0);
		seg.max_steps = 64 * window;
		while (!tdl_segment_done(&seg))
			assert_int_equal(tdl_segment_next(&seg, p, 64, &n), 0);
	}
	tdl_free(dl);
}

/* The step cap: a walk that needs more fails with -E2BIG, having handed
 * out only right pieces, and cannot go on; without a cap it finishes. */
static void test_step_cap(void **state)
{
	struct tdl_dataloop *dl = sparse_indexed(1000);
	int64_t ext = tdl_extent(dl);
	struct tdl_segment seg;
	struct tdl_piece p[16];
	uint64_t need, seen = 0;
	size_t n;
	int rc = 0;
	(void)state;

	assert_int_equal(tdl_segment_init(&seg, dl, 5000, 0, 0, UINT64_MAX), 0);
	assert_int_equal(seg.max_steps, 0);
	while (!tdl_segment_done(&seg))
		assert_int_equal(tdl_segment_next(&seg, p, 16, &n), 0);
	need = seg.steps;
	assert_true(need > 10000);

	assert_int_equal(tdl_segment_init(&seg, dl, 5000, 0, 0, UINT64_MAX), 0);
	seg.max_steps = need / 2;
	while (!rc && !tdl_segment_done(&seg)) {
		rc = tdl_segment_next(&seg, p, 16, &n);
		for (size_t i = 0; i < n; i++, seen++)
			assert_int_equal(p[i].offset,
					 (p[i].stream / 2) * (uint64_t)ext +
						 2 * (p[i].stream % 2));
	}
	assert_int_equal(rc, -E2BIG);
	assert_true(seen < 5000);
	assert_int_equal(tdl_segment_next(&seg, p, 16, &n), -E2BIG);
	assert_int_equal(n, 0);

	/* Exactly enough is enough. */
	assert_int_equal(tdl_segment_init(&seg, dl, 5000, 0, 0, UINT64_MAX), 0);
	seg.max_steps = need;
	while (!tdl_segment_done(&seg))
		assert_int_equal(tdl_segment_next(&seg, p, 16, &n), 0);
	tdl_free(dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_shallow),
		cmocka_unit_test(test_random_deep),
		cmocka_unit_test(test_batches_identical),
		cmocka_unit_test(test_vector_regions),
		cmocka_unit_test(test_server_jumps),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_empty_blocks),
		cmocka_unit_test(test_step_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
