/*
 * bench_store.c - tessera-bench-store: what a storage daemon's block
 * checksums cost (figures, not a test).
 *
 *   tessera-bench-store [-d DIR] [-s MIB] [-b BLOCK]
 *
 * In one run, on DIR's file system (page cache on both sides):
 * - CRC32C of 1 MiB (in BLOCK-byte blocks, the store's csum_block: 4096
 *   unless -b says, a power of two from 512 to 1 MiB) by the CPU's
 *   instruction and by the table, beside memcpy of the same 1 MiB;
 * - the object store (server/ios_store.h: data, checksums, the registry)
 *   overwriting and reading MIB MiB in 1 MiB pieces, beside plain pwrite
 *   and pread of the same pieces to a plain file in DIR (the baseline: the
 *   store without checksums would be these calls and nothing else).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_crc.h"
#include "tp_objfmt.h"
#include "ios_disk.h"
#include "ios_store.h"

#define PIECE (1u << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* GB/s of `what` over `buf` (PIECE bytes), repeated for about 0.3 s. */
enum op { OP_MEMCPY, OP_CRC_HW, OP_CRC_BLOCKS, OP_CRC_TABLE };
static double rate(enum op what, size_t block, uint8_t *buf, uint8_t *dst, uint32_t *sink)
{
	double t0 = now_s(), t;
	uint64_t bytes = 0;

	do {
		for (int r = 0; r < 16; r++) {
			if (what == OP_MEMCPY) {
				memcpy(dst, buf, PIECE);
				*sink += dst[r];
			} else if (what == OP_CRC_BLOCKS) {
				uint32_t sums[PIECE / TP_OBJ_BLOCK_MIN];

				tp_crc32c_blocks(buf, PIECE / block, block, sums);
				*sink += sums[0];
			} else {
				for (size_t b = 0; b < PIECE; b += block)
					*sink += what == OP_CRC_HW ? tp_crc32c(0, buf + b, block)
								   : tp_crc32c_table(0, buf + b, block);
			}
			bytes += PIECE;
		}
		t = now_s() - t0;
	} while (t < 0.3);
	return (double)bytes / t / 1e9;
}

int main(int argc, char **argv)
{
	const char *base = "/tmp";
	unsigned mib = 256;
	uint32_t block = TP_OBJ_BLOCK;
	char dir[4096], plain[4200], *msg = NULL;
	uint8_t *buf = malloc(PIECE), *dst = malloc(PIECE);
	struct ios_disk *disk = NULL;
	struct ios_store *st = NULL;
	uint64_t calls = 0, size;
	uint32_t sink = 0;
	double t, w_store, r_store, w_plain, r_plain;
	int opt, fd;

	while ((opt = getopt(argc, argv, "d:s:b:")) != -1) {
		if (opt == 'd')
			base = optarg;
		else if (opt == 's')
			mib = (unsigned)strtoul(optarg, NULL, 10);
		else if (opt == 'b')
			block = (uint32_t)strtoul(optarg, NULL, 10);
		else {
			fprintf(stderr, "usage: tessera-bench-store [-d DIR] [-s MIB] [-b BLOCK]\n");
			return 2;
		}
	}
	if (!tp_obj_block_valid(block)) {
		fprintf(stderr, "tessera-bench-store: -b %u: not a power of two from %u to %u\n",
			block, TP_OBJ_BLOCK_MIN, TP_OBJ_BLOCK_MAX);
		return 2;
	}
	if (!buf || !dst || !mib)
		return 1;
	for (size_t i = 0; i < PIECE; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	snprintf(dir, sizeof(dir), "%s/bench-store-XXXXXX", base);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "tessera-bench-store: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	printf("\n== block checksums (CRC32C per %u bytes), %u MiB in 1 MiB pieces, in %s\n",
	       block, mib, base);
	printf("memcpy          %6.2f GB/s\n", rate(OP_MEMCPY, block, buf, dst, &sink));
	if (tp_crc32c_hardware())
		printf("crc32c (sse4.2) %6.2f GB/s, 3 blocks at once %.2f GB/s (the store's way)\n",
		       rate(OP_CRC_HW, block, buf, dst, &sink),
		       rate(OP_CRC_BLOCKS, block, buf, dst, &sink));
	printf("crc32c (table)  %6.2f GB/s\n", rate(OP_CRC_TABLE, block, buf, dst, &sink));

	if (ios_disk_system(&disk) ||
	    ios_store_open(dir, 16, IOS_STORE_NEW, block, disk, &st, NULL, &msg)) {
		fprintf(stderr, "tessera-bench-store: %s\n", msg ? msg : "no store");
		return 1;
	}
	fd = open(plain, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	/* writes: the store, then the plain file, twice; the second round
	 * (overwrites of cached pages, as the reads are) is the figure, so
	 * neither pays for allocating the other's pages */
	for (int round = 0; round < 2; round++) {
		t = now_s();
		for (unsigned i = 0; i < mib; i++) {
			struct ios_piece p = { (uint64_t)i * PIECE, PIECE };

			if (ios_store_write_pieces(st, 1, &p, 1, buf, &calls) != PIECE)
				return 1;
		}
		w_store = mib / (now_s() - t);
		t = now_s();
		for (unsigned i = 0; i < mib; i++)
			if (pwrite(fd, buf, PIECE, (off_t)i * PIECE) != PIECE)
				return 1;
		w_plain = mib / (now_s() - t);
	}
	/* reads, each checked by the store */
	t = now_s();
	for (unsigned i = 0; i < mib; i++) {
		struct ios_piece p = { (uint64_t)i * PIECE, PIECE };

		if (ios_store_read_pieces(st, 1, &p, 1, dst, &size, &calls) != PIECE)
			return 1;
		sink += dst[i % PIECE];
	}
	r_store = mib / (now_s() - t);
	t = now_s();
	for (unsigned i = 0; i < mib; i++) {
		if (pread(fd, dst, PIECE, (off_t)i * PIECE) != PIECE)
			return 1;
		sink += dst[i % PIECE];
	}
	r_plain = mib / (now_s() - t);
	printf("%-6s %14s %14s %7s\n", "", "store (sums)", "plain file", "ratio");
	printf("%-6s %9.0f MiB/s %9.0f MiB/s %7.2f\n", "write", w_store, w_plain, w_store / w_plain);
	printf("%-6s %9.0f MiB/s %9.0f MiB/s %7.2f\n", "read", r_store, r_plain, r_store / r_plain);
	close(fd);
	ios_store_close(st);
	disk->ops->destroy(disk);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(buf);
	free(dst);
	return sink == 0x12345678; /* keeps the work from being optimised away */
}
