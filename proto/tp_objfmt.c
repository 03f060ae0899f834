/*
 * tp_objfmt.c - the object and checksum format (tp_objfmt.h).
 */
#include <string.h>

#include "tp_crc.h"
#include "tp_objfmt.h"

/* Blocks whose sums tp_obj_blocks_check computes per tp_crc32c_blocks
 * call (it does three at a time with the CPU's instruction). */
#define CHECK_BATCH 64

void tp_obj_sums_encode(uint8_t *raw, const uint32_t *sums, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t c = sums[i]; /* read before raw's bytes overwrite it */
		uint8_t *b = raw + i * TP_OBJ_SUM_SIZE;

		b[0] = (uint8_t)c;
		b[1] = (uint8_t)(c >> 8);
		b[2] = (uint8_t)(c >> 16);
		b[3] = (uint8_t)(c >> 24);
	}
}

void tp_obj_sums_decode(uint32_t *sums, const uint8_t *raw, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = raw + i * TP_OBJ_SUM_SIZE;

		sums[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
			  (uint32_t)b[3] << 24;
	}
}

/* Zeros to continue a CRC over a block's tail past the object's end (a
 * constant: no state). */
static const uint8_t zeros[4096];

uint32_t tp_obj_block_sum(const uint8_t *bytes, size_t have, size_t block)
{
	uint32_t crc;

	if (have >= block)
		return tp_crc32c(0, bytes, block);
	crc = tp_crc32c(0, bytes, have);
	for (size_t left = block - have; left;) {
		size_t k = left < sizeof(zeros) ? left : sizeof(zeros);

		crc = tp_crc32c(crc, zeros, k);
		left -= k;
	}
	return crc;
}

static int all_zero(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && !memcmp(p, p + 1, len - 1));
}

size_t tp_obj_blocks_check(const uint32_t *stored, const uint8_t *buf, size_t n, size_t have,
			   size_t block, uint32_t *got)
{
	for (size_t i = 0; i < n; i += CHECK_BATCH) {
		size_t m = n - i < CHECK_BATCH ? n - i : CHECK_BATCH, whole = m;
		uint32_t sum[CHECK_BATCH];

		if ((i + m) * block > have) /* the object ends in this batch */
			whole = have > i * block ? (have - i * block) / block : 0;
		tp_crc32c_blocks(buf + i * block, whole, block, sum);
		for (size_t j = 0; j < m; j++) {
			size_t at = (i + j) * block, part = have > at ? have - at : 0;

			if (part > block)
				part = block;
			if (j >= whole) /* cut by the object's end */
				sum[j] = tp_obj_block_sum(buf + at, part, block);
			if (sum[j] == stored[i + j] || (!stored[i + j] && all_zero(buf + at, part)))
				continue;
			if (got)
				*got = sum[j];
			return i + j;
		}
	}
	return n;
}
