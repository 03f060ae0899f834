/*
 * test_ios_integrity.c - what a storage daemon's object store knows about
 * its objects (server/ios_store.h): CRC32C by the CPU against the table
 * and the standard's check value; random writes, list writes, truncates
 * and reads against a byte model, every block's checksum right after
 * each; a byte flipped on disk, a checksum file removed, an object file
 * deleted behind the store's back, a store remade in an emptied
 * directory, the registry's torn and damaged records, the listing of the
 * objects held; the checksum block a store is made with (csum_block)
 * kept and enforced, and the checksum tests again at 512 B and 64 KiB
 * blocks. Each in a fresh temporary directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tp_crc.h"
#include "rng.h"
#include "store_fixture.h"

#define A UINT64_C(0x1a00000001)
#define B UINT64_C(0x2b00000002)
#define C UINT64_C(0x3c00000003)

/* The store in f->dir with `flags` and checksum block f->block, over
 * faults `spec` (NULL: none); *notice (if asked) gets the store's line
 * for the log, *errmsg (if asked) the error. */
static int open_store_as(struct fx *f, unsigned flags, const char *spec, char **notice,
			 char **errmsg)
{
	char err[256], *msg = NULL;
	int rc;

	assert_int_equal(ios_disk_system(&f->disk), 0);
	if (spec && ios_disk_faults(f->disk, spec, &f->disk, err, sizeof(err)))
		fail_msg("-F %s: %s", spec, err);
	rc = ios_store_open(f->dir, 4, flags, f->block, f->disk, &f->st, notice, &msg);
	if (rc) {
		print_message("  %s\n", msg);
		f->disk->ops->destroy(f->disk);
		f->disk = NULL;
	}
	if (errmsg)
		*errmsg = msg;
	else
		free(msg);
	return rc;
}

static int open_store(struct fx *f, unsigned flags, const char *spec, char **notice)
{
	return open_store_as(f, flags, spec, notice, NULL);
}

static int open_store_msg(struct fx *f, char **errmsg)
{
	return open_store_as(f, IOS_STORE_NEW, NULL, NULL, errmsg);
}

static void reopen(struct fx *f, unsigned flags)
{
	fx_close(f);
	assert_int_equal(open_store(f, flags, NULL, NULL), 0);
}

/* The open store's checksum block. */
#define BLK(f) ((size_t)ios_store_csum_block((f)->st))

/* The store's reason names `what`. */
static void why_says(struct fx *f, const char *what)
{
	const char *why = ios_store_why(f->st);

	print_message("  %s\n", why);
	if (!strstr(why, what))
		fail_msg("\"%s\" does not say \"%s\"", why, what);
}

/* ------------------------------------------------------------------ */

static void test_crc32c(void **state)
{
	struct rng r = { 0x5eed };
	uint8_t buf[1000];

	(void)state;
	print_message("  crc32c by the CPU: %s\n", tp_crc32c_hardware() ? "yes" : "no");
	assert_int_equal(tp_crc32c(0, "123456789", 9), 0xe3069283);
	assert_int_equal(tp_crc32c_table(0, "123456789", 9), 0xe3069283);
	assert_int_equal(tp_crc32c(0, "", 0), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd(&r);
	for (int t = 0; t < 2000; t++) {
		size_t off = below(&r, 64), len = below(&r, sizeof(buf) - off), cut = below(&r, len + 1);
		uint32_t whole = tp_crc32c_table(0, buf + off, len);

		/* any alignment and length; chaining equals one pass */
		assert_int_equal(tp_crc32c(0, buf + off, len), whole);
		assert_int_equal(tp_crc32c(tp_crc32c(0, buf + off, cut), buf + off + cut, len - cut),
				 whole);
	}
	/* blocks at a time (three interleaved, then the rest) equal one
	 * block at a time, for block counts around the interleave and odd
	 * block sizes that leave a tail of bytes */
	for (size_t block = 1; block <= 83; block += 41) {
		for (size_t n = 0; n <= 7 && n * block <= sizeof(buf); n++) {
			uint32_t got[8] = { 0 };

			tp_crc32c_blocks(buf, n, block, got);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(got[i], tp_crc32c_table(0, buf + i * block, block));
		}
	}
}

/* Every block of object h below `size` matches its stored checksum (the
 * file's bytes, zeros past its end; a stored 0 only over zeros). */
static void sums_hold(struct fx *f, uint64_t h, uint64_t size)
{
	char data_path[256], sum_path[256];
	size_t bs = BLK(f);
	uint8_t *block = malloc(bs), raw[4];
	int fd, sfd;

	assert_non_null(block);
	fx_file_of(f, h, "", data_path, sizeof(data_path));
	fx_file_of(f, h, ".sum", sum_path, sizeof(sum_path));
	fd = open(data_path, O_RDONLY);
	sfd = open(sum_path, O_RDONLY);
	assert_true(fd >= 0 && sfd >= 0);
	for (uint64_t k = 0; k * bs < size; k++) {
		ssize_t got = pread(fd, block, bs, (off_t)(k * bs));
		uint32_t stored = 0, crc;
		int zero = 1;

		assert_true(got >= 0);
		memset(block + got, 0, bs - (size_t)got);
		if (pread(sfd, raw, 4, (off_t)(k * 4)) == 4)
			stored = raw[0] | raw[1] << 8 | raw[2] << 16 | (uint32_t)raw[3] << 24;
		crc = tp_crc32c(0, block, bs);
		for (size_t i = 0; i < bs; i++)
			zero &= !block[i];
		if (crc != stored && !(stored == 0 && zero))
			fail_msg("block %" PRIu64 ": stored %08x, computed %08x", k, stored, crc);
	}
	close(fd);
	close(sfd);
	free(block);
}

/* Random writes (single pieces and sieved lists), truncates and reads of
 * one object against a byte model; after each change every block's
 * checksum holds and a read of the whole object matches the model. */
#define MODEL (64 * 1024)
static void test_model(void **state)
{
	struct fx *f = *state;
	struct rng r = { 0xc0ffee };
	uint8_t *model = calloc(MODEL, 1), *buf = malloc(MODEL), *data = malloc(MODEL);
	uint64_t size = 0, calls = 0, osize;

	assert_non_null(model);
	assert_non_null(buf);
	assert_non_null(data);
	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, NULL), 0);
	for (int t = 0; t < 400; t++) {
		uint64_t what = below(&r, 10);

		if (what < 5) { /* one piece */
			uint64_t off = below(&r, MODEL - 1), len = 1 + below(&r, MODEL - off < 9000
									  ? MODEL - off : 9000);

			for (uint64_t i = 0; i < len; i++)
				data[i] = (uint8_t)rnd(&r);
			assert_int_equal(fx_put(f, A, off, data, len), (ssize_t)len);
			memcpy(model + off, data, len);
			size = off + len > size ? off + len : size;
		} else if (what < 8) { /* a list: ascending pieces, gaps near the sieve's */
			struct ios_piece p[16];
			uint64_t at = below(&r, MODEL / 2), total = 0;
			size_t n = 0;

			while (n < 16) {
				uint64_t len = 1 + below(&r, 700);

				if (at + len > MODEL)
					break;
				p[n].offset = at;
				p[n].length = len;
				for (uint64_t i = 0; i < len; i++)
					model[at + i] = data[total + i] = (uint8_t)rnd(&r);
				total += len;
				at += len + below(&r, 2 * IOS_SIEVE_GAP);
				n++;
			}
			if (!n)
				continue;
			assert_int_equal(ios_store_write_pieces(f->st, A, p, n, data, &calls), (ssize_t)total);
			at = p[n - 1].offset + p[n - 1].length;
			size = at > size ? at : size;
		} else { /* truncate, down or up */
			uint64_t to = below(&r, MODEL);

			assert_int_equal(ios_store_truncate(f->st, A, to), 0);
			if (to < size)
				memset(model + to, 0, size - to);
			size = to;
		}
		sums_hold(f, A, size);
		assert_int_equal(ios_store_read_pieces(f->st, A, &(struct ios_piece){ 0, MODEL }, 1, buf,
						 &osize, &calls), MODEL);
		assert_int_equal(osize, size);
		assert_memory_equal(buf, model, MODEL);
	}
	/* and a list read of scattered pieces */
	{
		struct ios_piece p[3] = { { 10, 100 }, { 5000, 3000 }, { 20000, 50 } };
		uint8_t out[3150];

		assert_int_equal(ios_store_read_pieces(f->st, A, p, 3, out, &osize, &calls), 3150);
		assert_memory_equal(out, model + 10, 100);
		assert_memory_equal(out + 100, model + 5000, 3000);
		assert_memory_equal(out + 3100, model + 20000, 50);
	}
	free(model);
	free(buf);
	free(data);
}

/* System calls and bytes of 16 pieces of 100 bytes, 8 apart, written
 * then read under the store's sieve setting: the bytes read back must be
 * those written whatever the setting. */
static void sieve_round(struct fx *f, uint64_t h, uint64_t *wcalls, uint64_t *rcalls)
{
	struct ios_piece p[16];
	uint8_t data[1600], out[1600];
	uint64_t osize;

	for (size_t i = 0; i < 16; i++) {
		p[i].offset = 4000 + i * 108; /* across a block boundary */
		p[i].length = 100;
	}
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + h);
	*wcalls = *rcalls = 0;
	assert_int_equal(ios_store_write_pieces(f->st, h, p, 16, data, wcalls), 1600);
	assert_int_equal(ios_store_read_pieces(f->st, h, p, 16, out, &osize, rcalls), 1600);
	assert_memory_equal(out, data, sizeof(data));
}

/* sieve_gap and sieve_span (the config's) decide what moves as one span:
 * by default the 16 close pieces are one sieved write and one read; with
 * span 0 each piece takes calls of its own; a gap below the spacing splits
 * them too. A gap wider than the span is refused, naming both keys. */
static void test_sieve_settings(void **state)
{
	struct fx *f = *state;
	uint64_t w_def, r_def, w_off, r_off, w_gap, r_gap;
	char err[256] = "";

	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, NULL), 0);
	sieve_round(f, A, &w_def, &r_def);
	assert_int_equal(ios_store_set_sieve(f->st, 0, 0, err, sizeof(err)), 0);
	sieve_round(f, B, &w_off, &r_off);
	assert_true(r_off >= r_def + 15);
	assert_true(w_off > w_def);
	assert_int_equal(ios_store_set_sieve(f->st, 7, IOS_SIEVE_SPAN, err, sizeof(err)), 0);
	sieve_round(f, C, &w_gap, &r_gap);
	assert_int_equal(r_gap, r_off);
	assert_int_equal(ios_store_set_sieve(f->st, 8, 1 << 20, err, sizeof(err)), 0);
	sieve_round(f, C, &w_gap, &r_gap);
	assert_int_equal(r_gap, r_def);
	assert_int_equal(ios_store_set_sieve(f->st, 8192, 4096, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sieve_gap (8192 bytes) exceeds sieve_span (4096 bytes)"));
	assert_int_equal(ios_store_sieve_check(4096, 4096, err, sizeof(err)), 0);
	assert_int_equal(ios_store_sieve_check(1, 0, err, sizeof(err)), -EINVAL);
	/* the refused setting left the last one in place */
	sieve_round(f, A, &w_gap, &r_gap);
	assert_int_equal(r_gap, r_def);
}

/* A byte flipped in an object's file: a read of its block, alone or in a
 * list, fails naming the file and the block's bytes; the other blocks
 * read; the failure is counted; a write over the whole block repairs it.
 * At the default block and at others (fx->block). */
static void test_flipped_byte(void **state)
{
	struct fx *f = *state;
	struct ios_store_faults faults;
	char path[256], range[64];
	uint8_t *buf, b;
	uint64_t calls = 0, size;
	size_t bs;
	int fd;

	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, NULL), 0);
	bs = BLK(f);
	assert_int_equal(bs, f->block ? f->block : 4096);
	assert_non_null(buf = malloc(3 * bs));
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 3 * bs), 3 * bs);
	fx_file_of(f, A, "", path, sizeof(path));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, bs + 7), 1);
	b ^= 0x10;
	assert_int_equal(pwrite(fd, &b, 1, bs + 7), 1);
	close(fd);
	assert_int_equal(fx_get(f, A, 0, buf, 3 * bs), -EIO);
	snprintf(range, sizeof(range), " %zu to %zu ", bs, 2 * bs - 1);
	why_says(f, range);
	why_says(f, path);
	assert_int_equal(fx_get(f, A, bs + 100, buf, 1), -EIO);
	assert_int_equal(ios_store_read_pieces(f->st, A,
					       (struct ios_piece[]){ { 0, 10 }, { bs + bs / 4, 10 } },
					       2, buf, &size, &calls), -EIO);
	assert_int_equal(fx_get(f, A, 0, buf, bs), bs);
	assert_int_equal(fx_get(f, A, 2 * bs, buf, bs), bs);
	ios_store_faults(f->st, &faults);
	assert_int_equal(faults.checksum_failures, 3);
	assert_int_equal(fx_put_fill(f, A, bs, 'b', bs), bs);
	assert_int_equal(fx_get(f, A, 0, buf, 3 * bs), 3 * bs);
	assert_int_equal(buf[bs + 7], 'b');
	free(buf);
}

/* The fault disk's corrupt rule damages what it stores; a partial write
 * or a truncate into a damaged block fails rather than checksum the
 * damage anew; a write of the whole block repairs it; a removed checksum
 * file makes written blocks unreadable, not zeros. */
static void test_corrupt_and_lost_sums(void **state)
{
	struct fx *f = *state;
	char spec[64], path[256];
	uint8_t buf[512];

	snprintf(spec, sizeof(spec), "corrupt:%" PRIx64 "@2", A);
	assert_int_equal(open_store(f, IOS_STORE_NEW, spec, NULL), 0);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 100), 100);
	assert_int_equal(fx_put_fill(f, A, 100, 'b', 100), 100); /* stored damaged */
	assert_int_equal(fx_get(f, A, 0, buf, 50), -EIO);
	why_says(f, "damaged");
	assert_int_equal(fx_put_fill(f, A, 300, 'c', 10), -EIO); /* read-modify-write */
	why_says(f, "damaged");
	assert_int_equal(ios_store_truncate(f->st, A, 150), -EIO);
	assert_int_equal(fx_get(f, A, 0, buf, 50), -EIO);
	assert_int_equal(fx_put_fill(f, A, 0, 'd', BLK(f)), BLK(f));
	assert_int_equal(fx_get(f, A, 0, buf, 50), 50);
	assert_int_equal(ios_store_truncate(f->st, A, 150), 0);
	assert_int_equal(fx_get(f, A, 0, buf, 200), 200);
	assert_int_equal(buf[149], 'd');
	assert_int_equal(buf[150], 0);
	assert_int_equal(fx_put_fill(f, B, 0, 'x', 200), 200);   /* B is not A */
	assert_int_equal(fx_get(f, B, 0, buf, 200), 200);
	fx_file_of(f, B, ".sum", path, sizeof(path));
	fx_close(f);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(open_store(f, 0, NULL, NULL), 0);
	assert_int_equal(fx_get(f, B, 0, buf, 200), -EIO);
	why_says(f, "checksum");
}

/* Holes at the store's block: blocks never written read as zeros (no
 * sum, and none needed), beside written ones, after a truncate up, and
 * with the checksum file shorter than the object. */
static void test_holes(void **state)
{
	struct fx *f = *state;
	uint8_t *buf;
	size_t bs;

	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, NULL), 0);
	bs = BLK(f);
	assert_non_null(buf = malloc(8 * bs));
	assert_int_equal(fx_put_fill(f, A, 3 * bs + 5, 'h', 10), 10);
	assert_int_equal(fx_get(f, A, 0, buf, 8 * bs), 8 * bs);
	for (size_t i = 0; i < 8 * bs; i++)
		assert_int_equal(buf[i], i >= 3 * bs + 5 && i < 3 * bs + 15 ? 'h' : 0);
	assert_int_equal(ios_store_truncate(f->st, A, 7 * bs + 3), 0);
	sums_hold(f, A, 7 * bs + 3);
	assert_int_equal(fx_get(f, A, 4 * bs, buf, 3 * bs + 3), 3 * bs + 3);
	for (size_t i = 0; i < 3 * bs + 3; i++)
		assert_int_equal(buf[i], 0);
	/* a hole that is not zeros on disk (written behind the store) fails */
	{
		char path[256];
		int fd;

		fx_file_of(f, A, "", path, sizeof(path));
		assert_true((fd = open(path, O_RDWR)) >= 0);
		assert_int_equal(pwrite(fd, "x", 1, 5 * bs + 1), 1);
		close(fd);
		assert_int_equal(fx_get(f, A, 5 * bs, buf, 10), -EIO);
		assert_int_equal(fx_get(f, A, 4 * bs, buf, bs), bs);
	}
	free(buf);
}

/* Rewrite DIR/store with `text` (a store file as another daemon wrote it). */
static void store_file_put(struct fx *f, const char *text)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/store", f->dir);
	assert_non_null(fp = fopen(path, "w"));
	fputs(text, fp);
	fclose(fp);
}

/* Open f->dir with checksum block `block`; the error message into msg. */
static int open_as(struct fx *f, uint32_t block, char *msg, size_t len)
{
	char *m = NULL;
	int rc;

	f->block = block;
	rc = open_store_msg(f, &m);
	snprintf(msg, len, "%s", m ? m : "");
	free(m);
	return rc;
}

/* The checksum block is the store's, fixed when it is made: reopened
 * with another the store is refused, naming both and its path; with 0
 * (the store's own) it keeps its block. A store file without the line
 * (made before the key) is 4096; a bad block in the file or asked for is
 * refused; the config check refuses what is not a power of two in range. */
static void test_csum_block_recorded(void **state)
{
	struct fx *f = *state;
	char msg[1024], want[300];
	uint8_t buf[600];

	assert_int_equal(open_as(f, 512, msg, sizeof(msg)), 0);
	assert_int_equal(BLK(f), 512);
	assert_int_equal(fx_put_fill(f, A, 500, 'q', 600), 600);
	fx_close(f);
	assert_int_equal(open_as(f, 4096, msg, sizeof(msg)), -EINVAL);
	print_message("  %s\n", msg);
	snprintf(want, sizeof(want), "made with csum_block 512 (%s/store), the config says "
		 "csum_block 4096", f->dir);
	assert_non_null(strstr(msg, want));
	assert_int_equal(open_as(f, 0, msg, sizeof(msg)), 0);
	assert_int_equal(BLK(f), 512);
	assert_int_equal(fx_get(f, A, 500, buf, 600), 600);
	assert_int_equal(buf[599], 'q');
	fx_close(f);
	assert_int_equal(open_as(f, 512, msg, sizeof(msg)), 0);
	fx_close(f);
	/* made before the key: 4096, and refused at another */
	store_file_put(f, "tessera-ios store 1\nmade 1\nremade 0\n");
	assert_int_equal(open_as(f, 0, msg, sizeof(msg)), 0);
	assert_int_equal(BLK(f), 4096);
	fx_close(f);
	assert_int_equal(open_as(f, 65536, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "made with csum_block 4096"));
	/* another block than 4096 needs the file's version 2 (an older
	 * daemon refuses it), and a valid block */
	store_file_put(f, "tessera-ios store 1\nmade 1\nremade 0\ncsum_block 3000\n");
	assert_int_equal(open_as(f, 0, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "not a storage daemon's store file"));
	store_file_put(f, "tessera-ios store 2\nmade 1\nremade 0\n");
	assert_int_equal(open_as(f, 0, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(open_as(f, 1000, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "csum_block 1000 is not a power of two"));
	assert_int_equal(ios_store_csum_check(3000, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "csum_block (3000 bytes) is not a power of two from 512 to "
			       "1048576 bytes"));
	assert_int_equal(ios_store_csum_check(256, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(ios_store_csum_check(2u << 20, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(ios_store_csum_check(1u << 20, msg, sizeof(msg)), 0);
	assert_int_equal(ios_store_csum_check(512, msg, sizeof(msg)), 0);
}

/* The store file a non-default block writes: version 2, with its line. */
static void test_csum_block_file(void **state)
{
	struct fx *f = *state;
	char path[256], text[200] = "", msg[512];
	FILE *fp;

	assert_int_equal(open_as(f, 65536, msg, sizeof(msg)), 0);
	fx_close(f);
	snprintf(path, sizeof(path), "%s/store", f->dir);
	assert_non_null(fp = fopen(path, "r"));
	assert_true(fread(text, 1, sizeof(text) - 1, fp) > 0);
	fclose(fp);
	assert_non_null(strstr(text, "tessera-ios store 2\n"));
	assert_non_null(strstr(text, "\ncsum_block 65536\n"));
}

/* An object file deleted behind the store: while its descriptor is open,
 * and after a restart. Reading, sizing, writing, truncating and syncing
 * it fail naming the file; it is not made again; remove forgets it. An
 * object never written reads as a hole. */
static void test_deleted_object(void **state)
{
	struct fx *f = *state;
	struct ios_store_faults faults;
	char path[256];
	uint8_t buf[64];
	uint64_t size;
	int64_t mtime;

	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, NULL), 0);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 64), 64);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 64), 64);
	assert_int_equal(fx_get(f, A, 0, buf, 64), 64); /* A's descriptor is cached */
	fx_file_of(f, A, "", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(fx_get(f, A, 0, buf, 64), -EIO);
	why_says(f, "lost");
	why_says(f, path);
	for (int restart = 0; restart < 2; restart++) {
		assert_int_equal(fx_get(f, A, 0, buf, 64), -EIO);
		assert_int_equal(ios_store_size(f->st, A, &size, &mtime, NULL), -EIO);
		assert_int_equal(fx_put_fill(f, A, 0, 'z', 8), -EIO);
		assert_int_equal(ios_store_truncate(f->st, A, 0), -EIO);
		assert_int_equal(ios_store_sync(f->st, A), -EIO);
		assert_int_equal(access(path, F_OK), -1);
		assert_int_equal(fx_get(f, B, 0, buf, 64), 64);
		assert_int_equal(fx_get(f, C, 0, buf, 64), 64); /* never written: zeros */
		assert_int_equal(buf[0], 0);
		ios_store_faults(f->st, &faults);
		assert_true(faults.lost_objects >= 5);
		reopen(f, 0);
	}
	assert_int_equal(ios_store_remove(f->st, A), 0);
	assert_int_equal(fx_get(f, A, 0, buf, 64), 64);
	assert_int_equal(buf[0], 0);
}

/* A store in a directory that existed and was emptied (a disk lost under
 * a running file system) is remade: every missing object it has not made
 * since is lost, those it makes work, and -N declares it whole. A store
 * in a directory that did not exist is new: missing objects are holes. */
static void test_remade(void **state)
{
	struct fx *f = *state;
	char sub[128], *notice = NULL;
	uint8_t buf[64];
	uint64_t size;
	int64_t mtime;

	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, &notice), 0);
	assert_null(notice);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 64), 64);
	assert_int_equal(ios_store_sync(f->st, A), 0);
	fx_close(f);
	fx_wipe(f);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	assert_int_equal(open_store(f, 0, NULL, &notice), 0);
	assert_non_null(notice);
	print_message("  %s\n", notice);
	assert_non_null(strstr(notice, "remade"));
	free(notice);
	assert_int_equal(fx_get(f, A, 0, buf, 64), -EIO);
	why_says(f, "remade");
	assert_int_equal(ios_store_size(f->st, A, &size, &mtime, NULL), -EIO);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 64), 64); /* a new object works */
	assert_int_equal(fx_get(f, B, 0, buf, 64), 64);
	assert_int_equal(fx_get(f, C, 0, buf, 64), -EIO);     /* a hole cannot be told */
	reopen(f, 0);                                      /* still remade */
	assert_int_equal(fx_get(f, A, 0, buf, 64), -EIO);
	assert_int_equal(fx_get(f, B, 0, buf, 64), 64);
	fx_close(f);
	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, &notice), 0);
	assert_non_null(notice);
	free(notice);
	assert_int_equal(fx_get(f, A, 0, buf, 64), 64);       /* whole: holes again */
	assert_int_equal(buf[0], 0);
	assert_int_equal(fx_get(f, B, 0, buf, 64), 64);
	assert_int_equal(buf[0], 'b');
	fx_close(f);
	/* a directory that does not exist gets a new store */
	snprintf(sub, sizeof(sub), "%s/fresh", f->dir);
	{
		char *msg = NULL;

		assert_int_equal(ios_disk_system(&f->disk), 0);
		assert_int_equal(ios_store_open(sub, 4, 0, 0, f->disk, &f->st, &notice, &msg), 0);
	}
	assert_null(notice);
	assert_int_equal(fx_get(f, A, 0, buf, 64), 64);
	assert_int_equal(buf[0], 0);
}

/* The registry: objects listed in order, page by page; removed ones
 * gone; the list survives a restart; a torn last record is dropped; a
 * damaged record before the last refuses the store, naming the file. */
static void test_registry(void **state)
{
	struct fx *f = *state;
	uint64_t got[8], after = 0, seen = 0;
	char path[128];
	size_t n;
	struct stat sb;
	int fd;

	assert_int_equal(open_store(f, IOS_STORE_NEW, NULL, NULL), 0);
	for (uint64_t h = 20; h >= 1; h--)
		assert_int_equal(fx_put_fill(f, h << 8 | 1, 0, 'x', 1), 1);
	assert_int_equal(ios_store_truncate(f->st, 0x99, 5), 0); /* truncate makes one too */
	assert_int_equal(ios_store_remove(f->st, 5 << 8 | 1), 0);
	assert_int_equal(ios_store_remove(f->st, 0x12345), 0);     /* never held: nothing */
	for (int restart = 0; restart < 2; restart++) {
		seen = 0;
		after = 0;
		do {
			assert_int_equal(ios_store_list(f->st, after, got, 8, &n), 0);
			for (size_t i = 0; i < n; i++) {
				assert_true(got[i] > after);
				after = got[i];
				seen++;
				assert_true(ios_store_holds(f->st, got[i]));
			}
		} while (n == 8);
		assert_int_equal(seen, 20);
		assert_false(ios_store_holds(f->st, 5 << 8 | 1));
		assert_true(ios_store_holds(f->st, 0x99));
		reopen(f, 0);
	}
	/* each handle's last record decides, whatever the order of handles
	 * in the log: made, removed, made again is held; made, removed not */
	assert_int_equal(ios_store_remove(f->st, 0x99), 0);
	assert_int_equal(ios_store_truncate(f->st, 0x99, 5), 0);
	assert_int_equal(ios_store_remove(f->st, 7 << 8 | 1), 0);
	reopen(f, 0);
	assert_true(ios_store_holds(f->st, 0x99));
	assert_false(ios_store_holds(f->st, 7 << 8 | 1));
	assert_false(ios_store_holds(f->st, 5 << 8 | 1));
	assert_true(ios_store_holds(f->st, 6 << 8 | 1));
	fx_close(f);
	snprintf(path, sizeof(path), "%s/registry", f->dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(truncate(path, sb.st_size - 3), 0); /* the last record torn */
	assert_int_equal(open_store(f, 0, NULL, NULL), 0);
	assert_true(ios_store_holds(f->st, 7 << 8 | 1)); /* its removal was the torn one */
	fx_close(f);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\xff", 1, 16 * 3 + 2), 1); /* the fourth record */
	close(fd);
	assert_int_equal(open_store(f, 0, NULL, NULL), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test_setup_teardown(test_model, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_sieve_settings, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_model, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_model, fx_setup_64k, fx_teardown),
		cmocka_unit_test_setup_teardown(test_flipped_byte, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_flipped_byte, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_flipped_byte, fx_setup_64k, fx_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_and_lost_sums, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_and_lost_sums, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_and_lost_sums, fx_setup_64k, fx_teardown),
		cmocka_unit_test_setup_teardown(test_holes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_holes, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_holes, fx_setup_64k, fx_teardown),
		cmocka_unit_test_setup_teardown(test_csum_block_recorded, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_csum_block_file, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_deleted_object, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_remade, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_registry, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
