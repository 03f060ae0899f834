/*
 * test_limits.c - the limits on what one peer may ask of the daemons
 * (docs/design.md, "Limits"), each on real daemons: the request is refused before
 * any work with the limit named, or (the segment engine) stays cheap, and
 * the daemon goes on serving.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster.h"
#include "tdl.h"

#define CACHE_BYTES (64u << 20) /* IOS_DESC_CACHE_BYTES */

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

/* A file of one object (strips of 4096) holding `len` bytes of a pattern,
 * and a raw connection to the storage daemon that holds it. */
struct probe {
	tessera_file *f;
	uint8_t *pattern;
	struct tessera_layout lay;
	struct raw raw;  /* replies' data land in raw.reply_data (1 MiB) */
	Tessera__Capability *cap; /* the file's, which raw's requests carry */
	char err[512];   /* the last error reply's words */
};

static void probe_open(struct cluster *c, const char *path, size_t len, struct probe *pr)
{
	struct tessera_layout want = { .strip_size = 4096, .count = 1 };

	memset(pr, 0, sizeof(*pr));
	pr->pattern = malloc(len);
	assert_non_null(pr->pattern);
	for (size_t i = 0; i < len; i++)
		pr->pattern[i] = (uint8_t)(i * 131 + 7);
	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &want, &pr->f));
	assert_int_equal(tessera_pwrite(pr->f, pr->pattern, len, 0), (ssize_t)len);
	CHECK(c->fs, tessera_file_layout(pr->f, &pr->lay));
	raw_open(c, pr->lay.servers[0], &pr->raw);
	pr->raw.cap = pr->cap = file_cap(pr->f);
	pr->raw.reply_cap = 1 << 20;
	pr->raw.reply_data = malloc(pr->raw.reply_cap);
	assert_non_null(pr->raw.reply_data);
}

static void probe_close(struct probe *pr)
{
	free(pr->raw.reply_data);
	tnet_close(pr->raw.net);
	protobuf_c_message_free_unpacked(&pr->cap->base, NULL);
	tessera_close(pr->f);
	free(pr->pattern);
}

static int probe_send(struct probe *pr, unsigned op, const ProtobufCMessage *msg)
{
	return raw_request(&pr->raw, op, msg, NULL, 0, pr->err, sizeof(pr->err));
}

/* Every storage daemon and the metadata daemon answer a ping. */
static void all_answer(struct cluster *c)
{
	struct tessera_ping pings[N_IOS + 1];
	int n = tessera_ping(c->fs, pings, N_IOS + 1);

	assert_int_equal(n, N_IOS + 1);
	for (int i = 0; i < n; i++)
		assert_int_equal(pings[i].status, 0);
}

static uint64_t cache_bytes(struct cluster *c, uint32_t ios)
{
	struct tessera_ios_stats s;

	CHECK(c->fs, tessera_ios_stats(c->fs, ios, &s));
	return s.desc_cache_bytes;
}

/* A datatype read of one object (slot 0 of 1, strips of 4096). */
static Tessera__DtypeIORequest dtype_read(const struct tessera_layout *lay, uint64_t id,
					  Tessera__Dataloop *type, uint64_t count, uint64_t last)
{
	Tessera__DtypeIORequest d = TESSERA__DTYPE_IOREQUEST__INIT;

	d.handle = lay->handles[0];
	d.strip_size = lay->strip_size;
	d.stripe_count = lay->count;
	d.desc_nonce = 0x11a11;
	d.desc_id = id;
	d.file_type = type;
	d.count = count;
	d.last = last;
	return d;
}

/* ------------------------------------------------------------ strip size */

/* `tessera setstripe -s 4194304T -c 4` made rows of 2^62 x 4 = 0 bytes,
 * and cat, cp and the mount died dividing by them. */
static void test_strip_size(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout huge = { .strip_size = 4194304ull << 40, .count = 4 };
	struct tessera_file_share share;
	struct probe pr;
	tessera_file *g;
	uint8_t back[5000];

	CHECK(c->fs, tessera_mkdir(c->fs, "/wide", 0755));
	assert_int_equal(tessera_set_dir_layout(c->fs, "/wide", huge.strip_size, 4), -EINVAL);
	print_message("setstripe 4194304T -> %s\n", tessera_errmsg(c->fs));
	assert_non_null(strstr(tessera_errmsg(c->fs), "strip size 4611686018427387904 above "
			       "the limit of 4 GiB"));
	assert_int_equal(tessera_open(c->fs, "/wide/f", O_CREAT | O_RDWR, 0644, &huge, &g),
			 -EINVAL);
	print_message("create with 2^62-byte strips -> %s\n", tessera_errmsg(c->fs));
	assert_non_null(strstr(tessera_errmsg(c->fs), "strip size above the limit of 4 GiB"));
	/* the largest strip is fine */
	CHECK(c->fs, tessera_set_dir_layout(c->fs, "/wide", 4ull << 30, 4));

	/* The directory still works: a file in it reads back. */
	probe_open(c, "/wide/g", sizeof(back), &pr);
	assert_int_equal(tessera_pread(pr.f, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, pr.pattern, sizeof(back));

	/* A client refuses a layout it would divide by. */
	CHECK(c->fs, tessera_file_share(pr.f, &share));
	share.layout.strip_size = huge.strip_size;
	assert_int_equal(tessera_open_shared(c->fs, "/wide/g", &share, O_RDONLY, &g), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(c->fs), "4611686018427387904-byte strips"));
	probe_close(&pr);
	all_answer(c);
}

/* A storage daemon takes a request's layout only within the limits and
 * the storage daemons configured (it used to check against 256). */
static void test_request_layout(void **state)
{
	struct cluster *c = *state;
	struct tdl_dataloop *type;
	Tessera__Dataloop *msg;
	Tessera__DtypeIORequest d;
	struct probe pr;

	probe_open(c, "/layouts", 4096, &pr);
	assert_int_equal(tdl_bytes(100, &type), 0);
	assert_int_equal(tp_dataloop_to_msg(type, &msg), 0);
	d = dtype_read(&pr.lay, 1, msg, 1, 100);

	d.stripe_count = N_IOS + 1;
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -EINVAL);
	print_message("stripe count 5 of 4 daemons -> %s\n", pr.err);
	assert_non_null(strstr(pr.err, "stripe count 5 above the 4 storage daemons configured"));
	d.stripe_count = 256;
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -EINVAL);
	assert_non_null(strstr(pr.err, "stripe count 256 above the 4"));
	d.stripe_count = 4;
	d.strip_size = 1ull << 62;
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -EINVAL);
	print_message("2^62-byte strips -> %s\n", pr.err);
	assert_non_null(strstr(pr.err, "strip size above the limit of 4 GiB"));
	/* within the limits it is served */
	d.strip_size = 4096;
	d.stripe_count = 1;
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), 0);
	assert_int_equal(pr.raw.reply_len, 100);
	assert_memory_equal(pr.raw.reply_data, pr.pattern, 100);
	tp_dataloop_msg_release(msg);
	tdl_free(type);
	probe_close(&pr);
}

/* ------------------------------------------------------ segment engine */

/* Bytes 0 and 2 of an instance 3 bytes long, with `empty` empty blocks
 * after each (placed within the instance, so the extent stays 3). */
static struct tdl_dataloop *sparse_type(int64_t empty)
{
	int64_t n = 2 * (empty + 1);
	int64_t *lens = calloc((size_t)n, sizeof(*lens)), *displs = calloc((size_t)n, 8);
	struct tdl_dataloop *byte, *dl;

	assert_non_null(lens);
	assert_non_null(displs);
	lens[0] = lens[empty + 1] = 1;
	for (int64_t b = 0; b < n; b++)
		displs[b] = b == empty + 1 ? 2 : b % 3;
	assert_int_equal(tdl_bytes(1, &byte), 0);
	assert_int_equal(tdl_indexed(n, lens, displs, byte, &dl), 0);
	assert_int_equal(tdl_extent(dl), 3);
	tdl_free(byte);
	free(lens);
	free(displs);
	return dl;
}

/* A file type of 100,000 empty blocks: a 20 KB window took 6.2 s of the
 * daemon's loop (every empty block scanned for every byte); now it is
 * answered at once, right, and a window that would still take more than
 * the per-request step limit is refused naming it. */
static void test_empty_blocks(void **state)
{
	struct cluster *c = *state;
	struct tdl_dataloop *type = sparse_type(50000);
	Tessera__Dataloop *msg;
	Tessera__DtypeIORequest d;
	struct probe pr;

	probe_open(c, "/sparse", 30000, &pr);
	assert_int_equal(tp_dataloop_to_msg(type, &msg), 0);

	d = dtype_read(&pr.lay, 1, msg, 10000, 20000);
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), 0);
	assert_int_equal(pr.raw.reply_len, 20000);
	for (uint64_t k = 0; k < 20000; k++)
		assert_int_equal(pr.raw.reply_data[k], pr.pattern[(k / 2) * 3 + 2 * (k % 2)]);
	all_answer(c);

	/* A 1 MiB window: about 35 steps a byte, past 2^24 steps. */
	d = dtype_read(&pr.lay, 2, msg, 1 << 20, 1 << 20);
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -E2BIG);
	print_message("1 MiB window of it -> %s\n", pr.err);
	assert_non_null(strstr(pr.err, "more than 16777216 steps on this server, the limit per "
			       "request"));
	all_answer(c);
	tp_dataloop_msg_release(msg);
	tdl_free(type);
	probe_close(&pr);
}

/* --------------------------------------------------- description cache */

/* 70 file types of about a megabyte on the wire each (400,000 blocks, 9.6
 * MB in memory), under different ids: 64 of them took a daemon from 93 MB
 * to 1.06 GB. The cache stays within its bytes, keeps the latest and
 * drops the oldest. */
static void test_cache_bytes(void **state)
{
	struct cluster *c = *state;
	enum { BLOCKS = 400000, TYPES = 70 };
	int64_t *lens = malloc(BLOCKS * sizeof(int64_t)), *displs = malloc(BLOCKS * 8);
	struct tdl_dataloop *byte, *type;
	Tessera__Dataloop *msg;
	Tessera__DtypeIORequest d;
	uint64_t held = 0, most = 0;
	struct probe pr;

	for (int b = 0; b < BLOCKS; b++) {
		lens[b] = 1;
		displs[b] = (b * 7) % 100;
	}
	assert_int_equal(tdl_bytes(1, &byte), 0);
	assert_int_equal(tdl_indexed(BLOCKS, lens, displs, byte, &type), 0);
	assert_true(tdl_mem_bytes(type) > 9 * BLOCKS);
	assert_int_equal(tp_dataloop_to_msg(type, &msg), 0);
	probe_open(c, "/cache", 100, &pr);

	for (uint64_t id = 1; id <= TYPES; id++) {
		d = dtype_read(&pr.lay, id, msg, 1, 100);
		assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), 0);
		held = cache_bytes(c, pr.lay.servers[0]);
		assert_true(held <= CACHE_BYTES);
		most = held > most ? held : most;
	}
	print_message("%d file types of %zu bytes each: the cache holds %llu bytes\n", TYPES,
		      tdl_mem_bytes(type), (unsigned long long)held);
	assert_true(most > CACHE_BYTES - 2 * tdl_mem_bytes(type));
	/* the latest is held, the first is not */
	d = dtype_read(&pr.lay, TYPES, NULL, 1, 100);
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), 0);
	d = dtype_read(&pr.lay, 1, NULL, 1, 100);
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -ESTALE);
	all_answer(c);
	tp_dataloop_msg_release(msg);
	tdl_free(type);
	tdl_free(byte);
	probe_close(&pr);
	free(lens);
	free(displs);
}

/* A description is kept only once a request using it passed every check:
 * one refused for its window or its layout is not held afterwards. */
static void test_cache_after_checks(void **state)
{
	struct cluster *c = *state;
	struct tdl_dataloop *type;
	Tessera__Dataloop *msg;
	Tessera__DtypeIORequest d;
	uint64_t before;
	struct probe pr;

	probe_open(c, "/checked", 100, &pr);
	assert_int_equal(tdl_bytes(10, &type), 0);
	assert_int_equal(tp_dataloop_to_msg(type, &msg), 0);
	before = cache_bytes(c, pr.lay.servers[0]);

	d = dtype_read(&pr.lay, 7, msg, 1, 11); /* a window past the view */
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -EINVAL);
	d = dtype_read(&pr.lay, 8, msg, 1, 10);
	d.stripe_count = N_IOS + 1;
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -EINVAL);
	assert_int_equal(cache_bytes(c, pr.lay.servers[0]), before);
	for (uint64_t id = 7; id <= 8; id++) {
		d = dtype_read(&pr.lay, id, NULL, 1, 10);
		assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), -ESTALE);
		assert_non_null(strstr(pr.err, "is not held here"));
	}
	/* a good request keeps it */
	d = dtype_read(&pr.lay, 9, msg, 1, 10);
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), 0);
	assert_true(cache_bytes(c, pr.lay.servers[0]) > before);
	d = dtype_read(&pr.lay, 9, NULL, 1, 10);
	assert_int_equal(probe_send(&pr, TP_OP_DTYPE_READ, &d.base), 0);
	tp_dataloop_msg_release(msg);
	tdl_free(type);
	probe_close(&pr);
}

/* ------------------------------------------------------------- handles */

/* A SYNC of 100,000 handles was 100,000 fsyncs inside the event loop. */
static void test_handles(void **state)
{
	struct cluster *c = *state;
	enum { MANY = 100000 };
	uint64_t *handles = calloc(MANY, sizeof(*handles));
	static const unsigned ops[] = { TP_OP_SYNC, TP_OP_GETSIZE, TP_OP_REMOVE };
	Tessera__HandlesRequest h = TESSERA__HANDLES_REQUEST__INIT;
	struct raw raw;
	char err[512];

	Tessera__CapRequest cr = TESSERA__CAP_REQUEST__INIT;
	Tessera__Cred root = TESSERA__CRED__INIT;
	Tessera__Capability *admin;

	for (size_t i = 0; i < MANY; i++)
		handles[i] = 0x7e57000000000000ull + i; /* objects nobody has */
	h.handles = handles;
	/* root's admin capability names every object; the limits are checked
	 * before any capability */
	cr.cred = &root;
	cr.admin = 1;
	assert_int_equal(raw_mds_cap(c, &cr, &admin, err, sizeof(err)), 0);
	raw_open(c, 0, &raw);
	raw.cap = admin;
	h.n_handles = MANY;
	assert_int_equal(raw_request(&raw, TP_OP_SYNC, &h.base, NULL, 0, err, sizeof(err)), -E2BIG);
	print_message("sync of 100,000 handles -> %s\n", err);
	assert_non_null(strstr(err, "100000 handles exceed the limit of 256 per request"));
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		h.n_handles = 257;
		assert_int_equal(raw_request(&raw, ops[i], &h.base, NULL, 0, err, sizeof(err)),
				 -E2BIG);
		assert_non_null(strstr(err, "257 handles exceed the limit of 256"));
		/* 256 (a file of 256 objects on one daemon) is served */
		h.n_handles = 256;
		assert_int_equal(raw_request(&raw, ops[i], &h.base, NULL, 0, err, sizeof(err)), 0);
	}
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&admin->base, NULL);
	free(handles);
	all_answer(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strip_size),
		cmocka_unit_test(test_request_layout),
		cmocka_unit_test(test_empty_blocks),
		cmocka_unit_test(test_cache_bytes),
		cmocka_unit_test(test_cache_after_checks),
		cmocka_unit_test(test_handles),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, cluster_teardown);
}
