/* test_dataloops_layout.c - striping math against a brute-force strip walk. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tdl.h"

/* xorshift64*: the state is passed explicitly so tests stay reentrant. */
struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ULL;
}

static uint64_t rnd_below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

/* Strip sizes: the edges (1 B, 4 MiB), powers of two and odd sizes. */
static uint64_t pick_strip(struct rng *r)
{
	static const uint64_t fixed[] = { 1, 2, 3, 7, 512, 4096, 65536,
					  65537, 1 << 20, 4 << 20 };
	if (rnd_below(r, 2))
		return fixed[rnd_below(r, sizeof(fixed) / sizeof(fixed[0]))];
	return 1 + rnd_below(r, 4 << 20);
}

static struct tdl_layout pick_layout(struct rng *r)
{
	struct tdl_layout l = { pick_strip(r), 1 + (uint32_t)rnd_below(r, 16) };
	return l;
}

/* The model: walk logical strips from 0, dealing each to the next slot and
 * appending it to that slot's object. Returns where `offset` lands. */
static void model_map(const struct tdl_layout *l, uint64_t offset,
		      uint32_t *slot, uint64_t *obj)
{
	uint64_t objsize[16] = { 0 };
	uint64_t start = 0;

	for (uint64_t s = 0;; s++, start += l->strip_size) {
		uint32_t k = (uint32_t)(s % l->count);
		if (offset < start + l->strip_size) {
			*slot = k;
			*obj = objsize[k] + (offset - start);
			return;
		}
		objsize[k] += l->strip_size;
	}
}

/* Object sizes of every slot for a file of `size` bytes, by the walk. */
static void model_sizes(const struct tdl_layout *l, uint64_t size,
			uint64_t objsize[16])
{
	uint64_t start = 0;

	for (uint32_t k = 0; k < 16; k++)
		objsize[k] = 0;
	for (uint64_t s = 0; start < size; s++, start += l->strip_size) {
		uint64_t n = size - start < l->strip_size ? size - start
							  : l->strip_size;
		objsize[s % l->count] += n;
	}
}

/* A random offset within the first ~300 strips, biased to strip edges. */
static uint64_t pick_offset(struct rng *r, const struct tdl_layout *l)
{
	uint64_t strip = rnd_below(r, 300);
	uint64_t in;

	switch (rnd_below(r, 4)) {
	case 0: in = 0; break;
	case 1: in = l->strip_size - 1; break;
	default: in = rnd_below(r, l->strip_size); break;
	}
	return strip * l->strip_size + in;
}

static void test_map_unmap(void **state)
{
	struct rng r = { 0x9e3779b97f4a7c15ULL };
	(void)state;

	for (int i = 0; i < 3000; i++) {
		struct tdl_layout l = pick_layout(&r);
		uint64_t off = pick_offset(&r, &l);
		uint32_t slot, mslot;
		uint64_t obj, mobj;

		tdl_layout_map(&l, off, &slot, &obj);
		model_map(&l, off, &mslot, &mobj);
		assert_int_equal(slot, mslot);
		assert_int_equal(obj, mobj);
		assert_int_equal(tdl_layout_unmap(&l, slot, obj), off);
	}
}

/* Unmap then map is the identity for any (slot, object offset). */
static void test_unmap_map(void **state)
{
	struct rng r = { 12345 };
	(void)state;

	for (int i = 0; i < 3000; i++) {
		struct tdl_layout l = pick_layout(&r);
		uint32_t slot = (uint32_t)rnd_below(&r, l.count), s2;
		uint64_t obj = rnd_below(&r, 40) * l.strip_size +
			       rnd_below(&r, l.strip_size);
		uint64_t o2;
		uint64_t off = tdl_layout_unmap(&l, slot, obj);

		tdl_layout_map(&l, off, &s2, &o2);
		assert_int_equal(s2, slot);
		assert_int_equal(o2, obj);
	}
}

/* Exhaustive over small layouts: consecutive logical bytes of a strip map to
 * consecutive object bytes, and run() ends exactly where the slot changes
 * or the object offset jumps. */
static void test_run(void **state)
{
	struct rng r = { 777 };
	(void)state;

	for (uint64_t ss = 1; ss <= 9; ss++)
		for (uint32_t c = 1; c <= 5; c++) {
			struct tdl_layout l = { ss, c };
			for (uint64_t off = 0; off < 6 * ss * c; off++) {
				uint64_t len = 1 + rnd_below(&r, 4 * ss);
				uint64_t run = tdl_layout_run(&l, off, len);
				uint32_t s0, s1;
				uint64_t o0, o1;
				uint64_t k = 1;

				tdl_layout_map(&l, off, &s0, &o0);
				for (; k < len; k++) {
					tdl_layout_map(&l, off + k, &s1, &o1);
					if (c > 1 ? s1 != s0 : o1 != o0 + k)
						break;
					if (c == 1 && (off + k) % ss == 0)
						break;
				}
				assert_int_equal(run, k);
			}
		}
	for (int i = 0; i < 3000; i++) {
		struct tdl_layout l = pick_layout(&r);
		uint64_t off = pick_offset(&r, &l);
		uint64_t len = rnd_below(&r, 3 * l.strip_size);
		uint64_t run = tdl_layout_run(&l, off, len);
		uint64_t left = l.strip_size - off % l.strip_size;

		assert_int_equal(run, len < left ? len : left);
		assert_true(run <= len);
		if (len > 0)
			assert_true(run >= 1);
	}
}

static void test_sizes(void **state)
{
	struct rng r = { 4242 };
	(void)state;

	for (int i = 0; i < 2000; i++) {
		struct tdl_layout l = pick_layout(&r);
		uint64_t size = rnd_below(&r, 5) == 0 ? rnd_below(&r, 3)
						       : pick_offset(&r, &l) + 1;
		uint64_t objsize[16];
		uint64_t maxlog = 0;

		model_sizes(&l, size, objsize);
		for (uint32_t k = 0; k < l.count; k++) {
			uint64_t os = tdl_layout_object_size(&l, k, size);
			uint64_t ls = tdl_layout_logical_size(&l, k, os);
			assert_int_equal(os, objsize[k]);
			/* The model: one past the last byte the slot holds. */
			if (os == 0) {
				assert_int_equal(ls, 0);
			} else {
				uint32_t s;
				uint64_t o;
				tdl_layout_map(&l, ls - 1, &s, &o);
				assert_int_equal(s, k);
				assert_int_equal(o, os - 1);
				assert_true(ls <= size);
			}
			if (ls > maxlog)
				maxlog = ls;
		}
		assert_int_equal(maxlog, size);
	}
}

/* Object sizes that are not the result of a truncate (holes): the logical
 * size is still one past the slot's last byte. */
static void test_logical_size_any(void **state)
{
	struct rng r = { 99 };
	(void)state;

	for (int i = 0; i < 3000; i++) {
		struct tdl_layout l = pick_layout(&r);
		uint32_t slot = (uint32_t)rnd_below(&r, l.count), ms;
		uint64_t os = 1 + rnd_below(&r, 50 * l.strip_size);
		uint64_t ls = tdl_layout_logical_size(&l, slot, os);
		uint64_t mo;

		model_map(&l, ls - 1, &ms, &mo);
		assert_int_equal(ms, slot);
		assert_int_equal(mo, os - 1);
	}
}

/* The limits: what tdl_layout_check refuses, by name. */
static void test_check(void **state)
{
	static const struct {
		struct tdl_layout l;
		const char *why; /* NULL: accepted */
	} cases[] = {
		{ { 1, 1 }, NULL },
		{ { TDL_MAX_STRIP_SIZE, TDL_MAX_COUNT }, NULL },
		{ { 0, 4 }, "strip size 0" },
		/* `tessera setstripe -s 4194304T -c 4`: 2^62 x 4 wraps to 0 */
		{ { 1ull << 62, 4 }, "strip size above the limit" },
		{ { TDL_MAX_STRIP_SIZE + 1, 1 }, "strip size above the limit" },
		{ { 4096, 0 }, "stripe count 0" },
		{ { 4096, TDL_MAX_COUNT + 1 }, "stripe count above the limit" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[160] = "";
		int rc = tdl_layout_check(&cases[i].l, err, sizeof(err));

		if (!cases[i].why) {
			assert_int_equal(rc, 0);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		assert_non_null(strstr(err, cases[i].why));
		assert_int_equal(tdl_layout_check(&cases[i].l, NULL, 0), -EINVAL);
	}
}

/* The largest layouts at the far end of the offset space: map and unmap
 * stay inverse, the object sizes of a file of 2^64 - 1 bytes add up, and a
 * slot offset no file reaches saturates instead of wrapping. */
static void test_extremes(void **state)
{
	static const struct tdl_layout layouts[] = {
		{ TDL_MAX_STRIP_SIZE, TDL_MAX_COUNT }, { TDL_MAX_STRIP_SIZE, 256 },
		{ TDL_MAX_STRIP_SIZE - 1, 3 }, { 1, TDL_MAX_COUNT }, { 1, 1 },
		{ 65536, 4 },
	};
	struct rng r = { 2024 };
	(void)state;

	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct tdl_layout *l = &layouts[i];
		uint64_t sum = 0;

		assert_int_equal(tdl_layout_check(l, NULL, 0), 0);
		for (int k = 0; k < 2000; k++) {
			uint64_t off = k == 0 ? UINT64_MAX : UINT64_MAX - rnd_below(&r, 1ull << 50);
			uint32_t slot;
			uint64_t obj;

			if (k % 2)
				off = rnd(&r);
			tdl_layout_map(l, off, &slot, &obj);
			assert_true(slot < l->count);
			assert_true(obj <= off);
			assert_int_equal(tdl_layout_unmap(l, slot, obj), off);
		}
		for (uint32_t s = 0; s < l->count; s++) {
			uint64_t os = tdl_layout_object_size(l, s, UINT64_MAX);

			sum += os;
			assert_true(tdl_layout_logical_size(l, s, os) <= UINT64_MAX);
		}
		assert_int_equal(sum, UINT64_MAX);
		if (l->count > 1) {
			/* slot 1's byte 2^64 - 1 lies beyond any file */
			assert_int_equal(tdl_layout_unmap(l, 1, UINT64_MAX), UINT64_MAX);
			assert_int_equal(tdl_layout_logical_size(l, 1, UINT64_MAX), UINT64_MAX);
			assert_int_equal(tdl_layout_logical_size(l, l->count - 1,
								 UINT64_MAX / 2 + 1),
					 UINT64_MAX);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_unmap),
		cmocka_unit_test(test_unmap_map),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_logical_size_any),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
