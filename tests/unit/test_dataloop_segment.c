/* test_dataloop_segment.c - the segment engine against naive expansion. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_shallow),
		cmocka_unit_test(test_random_deep),
		cmocka_unit_test(test_batches_identical),
		cmocka_unit_test(test_vector_regions),
		cmocka_unit_test(test_server_jumps),
		cmocka_unit_test(test_bad_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
