/*
 * test_objfmt.c - the object and checksum format (proto/tp_objfmt.h) that
 * the storage daemon writes and local reads check: sums round-trip
 * through their stored bytes (little-endian, in place too), block k's sum
 * is at 4k, a block's sum does not depend on where its bytes sit in
 * memory, a block cut by the object's end is summed over zeros, and a
 * check finds the first damaged block (and lets a hole of zeros pass).
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

/* A block's sum at odd addresses, and a block cut by the object's end. */
static void test_block_sum(void **state)
{
	uint8_t *buf = malloc(TP_OBJ_BLOCK + 8), zeros[TP_OBJ_BLOCK];
	uint8_t block[TP_OBJ_BLOCK];
	uint32_t want;

	(void)state;
	assert_non_null(buf);
	fill(block, sizeof(block), 3);
	want = tp_crc32c(0, block, TP_OBJ_BLOCK);
	for (size_t shift = 0; shift < 8; shift++) {
		memcpy(buf + shift, block, TP_OBJ_BLOCK);
		assert_int_equal(tp_obj_block_sum(buf + shift, TP_OBJ_BLOCK), want);
	}
	for (size_t have = 0; have < TP_OBJ_BLOCK; have += 333) {
		memcpy(zeros, block, have);
		memset(zeros + have, 0, TP_OBJ_BLOCK - have);
		memcpy(buf + 5, block, have); /* only `have` bytes are there */
		assert_int_equal(tp_obj_block_sum(buf + 5, have), tp_crc32c(0, zeros, TP_OBJ_BLOCK));
	}
	free(buf);
}

/* n blocks at an odd address, their sums as the writer stores them. */
static void test_blocks_check(void **state)
{
	enum { N = 150 }; /* more than one batch of the check */
	size_t have = N * TP_OBJ_BLOCK - 1000;
	uint8_t *mem = malloc(N * TP_OBJ_BLOCK + 3), *buf = mem + 3;
	uint32_t stored[N], got = 0;

	(void)state;
	assert_non_null(mem);
	fill(buf, have, 11);
	for (size_t k = 0; k < N; k++) {
		size_t left = have - k * TP_OBJ_BLOCK;

		stored[k] = tp_obj_block_sum(buf + k * TP_OBJ_BLOCK,
					     left < TP_OBJ_BLOCK ? left : TP_OBJ_BLOCK);
	}
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, &got), N);
	/* The bytes past `have` are not the object's: never read. */
	memset(buf + have, 0xff, N * TP_OBJ_BLOCK - have);
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, NULL), N);
	/* A flipped byte: its block is the first that fails. */
	buf[77 * TP_OBJ_BLOCK + 4001] ^= 1;
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, &got), 77);
	assert_int_equal(got, tp_obj_block_sum(buf + 77 * TP_OBJ_BLOCK, TP_OBJ_BLOCK));
	buf[77 * TP_OBJ_BLOCK + 4001] ^= 1;
	buf[have - 1] ^= 1; /* in the last, partial block */
	assert_int_equal(tp_obj_blocks_check(stored, buf, N, have, NULL), N - 1);
	/* A stored 0 is "none": zeros pass, anything else fails. */
	memset(buf + 10 * TP_OBJ_BLOCK, 0, TP_OBJ_BLOCK);
	stored[10] = 0;
	assert_int_equal(tp_obj_blocks_check(stored, buf, 11, 11 * TP_OBJ_BLOCK, NULL), 11);
	buf[10 * TP_OBJ_BLOCK + 9] = 1;
	assert_int_equal(tp_obj_blocks_check(stored, buf, 11, 11 * TP_OBJ_BLOCK, NULL), 10);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sums_bytes),
		cmocka_unit_test(test_sums_in_place),
		cmocka_unit_test(test_block_sum),
		cmocka_unit_test(test_blocks_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
