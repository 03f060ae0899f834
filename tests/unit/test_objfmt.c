/*
 * test_objfmt.c - the object and checksum format (proto/tp_objfmt.h) that
 * the storage daemon writes and local reads check: sums round-trip
 * through their stored bytes (little-endian, in place too), block k's sum
 * is at 4k, a block's sum does not depend on where its bytes sit in
 * memory, a block cut by the object's end is summed over zeros, and a
 * check finds the first damaged block (and lets a hole of zeros pass),
 * at every checksum block size a store may have (512 B to 1 MiB).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tp_crc.h"
#include "tp_objfmt.h"

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void test_sums_bytes(void **state)
{
	uint32_t sums[3] = { 0x11223344u, 0, 0xfedcba98u }, back[3];
	uint8_t raw[3 * TP_OBJ_SUM_SIZE];
	const uint8_t want[] = { 0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0, 0x98, 0xba, 0xdc, 0xfe };

	(void)state;
	assert_int_equal(sizeof(raw), sizeof(want));
	tp_obj_sums_encode(raw, sums, 3);
	assert_memory_equal(raw, want, sizeof(want));
	tp_obj_sums_decode(back, raw, 3);
	assert_memory_equal(back, sums, sizeof(sums));
	assert_int_equal(tp_obj_sums_offset(0), 0);
	assert_int_equal(tp_obj_sums_offset(7), 28);
	assert_int_equal(tp_obj_sums_offset(1ull << 40), 4ull << 40);
}

/* Encoded and decoded in the same memory, as both readers do. */
static void test_sums_in_place(void **state)
{
	enum { N = 1001 };
	uint32_t *sums = malloc(N * sizeof(*sums)), *copy = malloc(N * sizeof(*copy));
	uint8_t raw[N * TP_OBJ_SUM_SIZE];

	(void)state;
	assert_non_null(sums);
	assert_non_null(copy);
	fill((uint8_t *)sums, N * sizeof(*sums), 7);
	memcpy(copy, sums, N * sizeof(*sums));
	tp_obj_sums_encode(raw, copy, N);
	tp_obj_sums_encode((uint8_t *)sums, sums, N);
	assert_memory_equal(sums, raw, sizeof(raw));
	tp_obj_sums_decode(sums, (const uint8_t *)sums, N);
	assert_memory_equal(sums, copy, N * sizeof(*sums));
	free(sums);
	free(copy);
}

/* The block sizes a store may have: both ends of the range, the
 * default, and one above the zeros the tail sum is continued with. */
static const size_t blocks[] = { TP_OBJ_BLOCK_MIN, TP_OBJ_BLOCK, 65536, TP_OBJ_BLOCK_MAX };
#define N_BLOCKS (sizeof(blocks) / sizeof(blocks[0]))

static void test_block_valid(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_BLOCKS; i++)
		assert_true(tp_obj_block_valid(blocks[i]));
	assert_true(tp_obj_block_valid(1024));
	assert_false(tp_obj_block_valid(0));
	assert_false(tp_obj_block_valid(256));         /* below the range */
	assert_false(tp_obj_block_valid(2u << 20));    /* above it */
	assert_false(tp_obj_block_valid(4096 + 512));  /* not a power of two */
	assert_false(tp_obj_block_valid(3000));
	assert_false(tp_obj_block_valid(1ull << 32));
}

/* A block's sum at odd addresses, and a block cut by the object's end,
 * at every block size. */
static void test_block_sum(void **state)
{
	(void)state;
	for (size_t bi = 0; bi < N_BLOCKS; bi++) {
		size_t B = blocks[bi];
		uint8_t *buf = malloc(B + 8), *zeros = malloc(B), *block = malloc(B);
		uint32_t want;

		assert_non_null(buf);
		assert_non_null(zeros);
		assert_non_null(block);
		fill(block, B, 3);
		want = tp_crc32c(0, block, B);
		for (size_t shift = 0; shift < 8; shift++) {
			memcpy(buf + shift, block, B);
			assert_int_equal(tp_obj_block_sum(buf + shift, B, B), want);
		}
		for (size_t have = 0; have < B; have += B / 7 + 1) {
			memcpy(zeros, block, have);
			memset(zeros + have, 0, B - have);
			memcpy(buf + 5, block, have); /* only `have` bytes are there */
			assert_int_equal(tp_obj_block_sum(buf + 5, have, B), tp_crc32c(0, zeros, B));
		}
		free(buf);
		free(zeros);
		free(block);
	}
}

/* n blocks at an odd address, their sums as the writer stores them. */
static void check_at(size_t B, size_t N)
{
	size_t have = N * B - B / 4, k77 = N > 77 ? 77 : N / 2;
	uint8_t *mem = malloc(N * B + 3), *buf = mem + 3;
	uint32_t *stored = malloc(N * sizeof(*stored)), got = 0;

	assert_non_null(mem);
	assert_non_null(stored);
	fill(buf, have, 11);
	for (size_t k = 0; k < N; k++) {
		size_t left = have - k * B;

		stored[k] = tp_obj_block_sum(buf + k * B, left < B ? left : B, B);
	}
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, B, &got), N);
	/* The bytes past `have` are not the object's: never read. */
	memset(buf + have, 0xff, N * B - have);
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, B, NULL), N);
	/* A flipped byte: its block is the first that fails. */
	buf[k77 * B + B - 95] ^= 1;
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, B, &got), k77);
	assert_int_equal(got, tp_obj_block_sum(buf + k77 * B, B, B));
	/* Read as another block size, the same bytes fail at once. */
	buf[k77 * B + B - 95] ^= 1;
	if (B > TP_OBJ_BLOCK_MIN)
		assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, B / 2, NULL), 0);
	buf[have - 1] ^= 1; /* in the last, partial block */
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, B, NULL), N - 1);
	/* A stored 0 is "none": zeros pass, anything else fails. */
	memset(buf + 1 * B, 0, B);
	stored[1] = 0;
	assert_int_equal(tp_obj_blocks_check(stored, buf, 2, 2 * B, B, NULL), 2);
	buf[1 * B + 9] = 1;
	assert_int_equal(tp_obj_blocks_check(stored, buf, 2, 2 * B, B, NULL), 1);
	free(stored);
	free(mem);
}

static void test_blocks_check(void **state)
{
	(void)state;
	for (size_t bi = 0; bi < N_BLOCKS; bi++)
		/* more than one batch of the check, in at most 16 MiB */
		check_at(blocks[bi], blocks[bi] <= 65536 ? 150 : 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sums_bytes),
		cmocka_unit_test(test_sums_in_place),
		cmocka_unit_test(test_block_valid),
		cmocka_unit_test(test_block_sum),
		cmocka_unit_test(test_blocks_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
