/*
 * test_ios_faults.c - the storage daemon's object store (server/ios_store.h)
 * over a fault disk over the system disk (server/ios_disk.h), in a fresh
 * temporary directory per test: the spec's grammar, which call each rule
 * fails, lost objects, the counters kept beside objects, the ops
 * table's size check, the writeback hint of large writes, and lanes of
 * one store working at once (the disk workers'); some again at 512 B and
 * 64 KiB checksum blocks.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
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

#include "store_fixture.h"

#define A UINT64_C(0x1a00000001)   /* two objects */
#define B UINT64_C(0x2b00000002)

/* The store over faults `spec` (NULL: the system disk alone). */
static void open_store(struct fx *f, const char *spec)
{
	struct ios_disk *sys;
	char err[256], *msg = NULL;

	assert_int_equal(ios_disk_system(&sys), 0);
	f->disk = sys;
	if (spec && ios_disk_faults(sys, spec, &f->disk, err, sizeof(err)))
		fail_msg("-F %s: %s", spec, err);
	if (ios_store_open(f->dir, 4, IOS_STORE_NEW, f->block, f->disk, &f->st, NULL, &msg))
		fail_msg("store: %s", msg);
}

static int object_exists(struct fx *f, uint64_t h)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/objects/%02x/%016" PRIx64, f->dir, (unsigned)(h & 0xff),
		 h);
	return access(path, F_OK) == 0;
}

/* ------------------------------------------------------------------ */

static void test_bad_specs(void **state)
{
	static const char *const bad[][2] = {
		{ "", "rule 1" }, { "write,,read", "rule 2" }, { "scribble", "unknown call" },
		{ "write@0", "@0" }, { "write@-1", "@-1" }, { "write@3x", "@3x" },
		{ "write@", "@" }, { "read:xyz", ":xyz" }, { "read:", ":" },
		{ "write=ENOSP", "ENOSP" }, { "write=0", "\"0\"" }, { "write=-5", "-5" },
		{ "write@2=EIO,lose:-3", "rule 2" }, { "slow=0", "slow=0" },
		{ "slow=fast", "slow=fast" }, { "slow@1=60001", "60000" },
	};
	struct ios_disk *sys, *d = NULL;
	char err[256];

	(void)state;
	assert_int_equal(ios_disk_system(&sys), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (ios_disk_faults(sys, bad[i][0], &d, err, sizeof(err)) != -EINVAL)
			fail_msg("spec \"%s\" was taken", bad[i][0]);
		if (!strstr(err, bad[i][1]))
			fail_msg("spec \"%s\": \"%s\" does not say \"%s\"", bad[i][0], err, bad[i][1]);
	}
	/* good ones, every call and errno form */
	assert_int_equal(ios_disk_faults(sys, "open,read:1a@2,write@3+=ENOSPC,stat=EDQUOT,"
					 "truncate=EROFS,sync=28,lose:0x2b@1,slow:1a@2=50", &d, err,
					 sizeof(err)), 0);
	d->ops->destroy(d); /* and sys with it */
}

/* Two lanes of one store: while A's write is held by a slow rule on one,
 * B's write on the other is done (the store's lock is not held across a
 * disk call); a fault on one lane's object fails that call only; a
 * store of 4 descriptors has room for 2 lanes besides itself. */
struct lane_write {
	struct ios_store *lane;
	uint64_t handle;
	ssize_t rc;
	int done;                  /* under mu */
	pthread_mutex_t *mu;
};

static void *lane_write_run(void *arg)
{
	struct lane_write *w = arg;
	uint8_t data[64];
	struct ios_piece p = { 0, sizeof(data) };
	uint64_t calls = 0;

	memset(data, 'w', sizeof(data));
	w->rc = ios_store_write_pieces(w->lane, w->handle, &p, 1, data, &calls);
	pthread_mutex_lock(w->mu);
	w->done = 1;
	pthread_mutex_unlock(w->mu);
	return NULL;
}

static void test_lanes(void **state)
{
	struct fx *f = *state;
	struct ios_store *l1, *l2, *l3;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct lane_write held;
	pthread_t t;
	char spec[64];
	uint8_t buf[64];
	int held_done;

	snprintf(spec, sizeof(spec), "slow:%" PRIx64 "@1=500,sync:%" PRIx64 "=EIO", A, B);
	open_store(f, spec);
	assert_int_equal(ios_store_lane(f->st, &l1), 0);
	assert_int_equal(ios_store_lane(f->st, &l2), 0);
	assert_int_equal(ios_store_lane(f->st, &l3), -EMFILE);
	held = (struct lane_write){ l1, A, 0, 0, &mu };
	assert_int_equal(pthread_create(&t, NULL, lane_write_run, &held), 0);
	usleep(100 * 1000);
	{
		struct ios_piece p = { 0, 16 };
		uint64_t calls = 0;

		memset(buf, 'b', 16);
		assert_int_equal(ios_store_write_pieces(l2, B, &p, 1, buf, &calls), 16);
	}
	pthread_mutex_lock(&mu);
	held_done = held.done;
	pthread_mutex_unlock(&mu);
	if (held_done)
		fail_msg("B's write on another lane waited for A's held write");
	pthread_join(t, NULL);
	assert_int_equal(held.rc, 64);
	{
		struct ios_piece p = { 0, 16 };
		uint64_t calls = 0, size;

		assert_int_equal(ios_store_sync(l2, B), -EIO);
		assert_int_equal(ios_store_sync(l1, A), 0);
		assert_int_equal(ios_store_read_pieces(l1, A, &p, 1, buf, &size, &calls), 16);
		assert_int_equal(buf[0], 'w');
	}
	ios_store_close(l1);
	ios_store_close(l2);
}

/* write@2: the second write fails, the first and third pass; reads pass. */
static void test_nth_write(void **state)
{
	struct fx *f = *state;
	uint8_t buf[16];

	open_store(f, "write@2=ENOSPC");
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 16), 16);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 16), -ENOSPC);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 16), 16);
	assert_int_equal(fx_get(f, A, 0, buf, 16), 16);
	assert_int_equal(buf[15], 'a');
}

/* write:H@2+: from the second write of A on, A's writes fail; B's pass and
 * do not count. */
static void test_object_writes_onward(void **state)
{
	struct fx *f = *state;
	char spec[64];

	snprintf(spec, sizeof(spec), "write:%" PRIx64 "@2+=EIO", A);
	open_store(f, spec);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 8), 8);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 8), 8);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 8), 8);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fx_put_fill(f, A, 8, 'a', 8), -EIO);
	assert_int_equal(fx_put_fill(f, B, 8, 'b', 8), 8);
}

/* Each call's rule fails that call: open, stat (size), truncate, sync. */
static void test_other_calls(void **state)
{
	struct fx *f = *state;
	uint64_t size;
	int64_t mtime;

	open_store(f, "stat@1=EDQUOT,truncate@1=EROFS,sync@1=EIO,open@5=EMFILE");
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 100), 100);            /* open 1 */
	assert_int_equal(ios_store_size(f->st, A, &size, &mtime, NULL), -EDQUOT);
	assert_int_equal(ios_store_size(f->st, A, &size, &mtime, NULL), 0);
	assert_int_equal(size, 100);
	assert_int_equal(ios_store_truncate(f->st, A, 10), -EROFS);
	assert_int_equal(ios_store_truncate(f->st, A, 10), 0);
	assert_int_equal(ios_store_sync(f->st, A), -EIO);
	assert_int_equal(ios_store_sync(f->st, A), 0);                /* open 2: A's counters? */
	/* A's descriptor is cached: only new objects open */
	assert_int_equal(fx_put_fill(f, B + 2, 0, 'x', 1), 1);          /* open 3 */
	assert_int_equal(ios_store_sync(f->st, B + 2), 0);            /* open 4: its counters? */
	assert_int_equal(fx_put_fill(f, B, 0, 'x', 1), -EMFILE);       /* open 5 */
	assert_int_equal(fx_put_fill(f, B, 0, 'x', 1), 1);
}

/* lose:H: the first call on A removes its file; the store, which holds A,
 * reports it lost from then on (and does not make it again); B is
 * untouched; A can be removed. */
static void test_lose_from_start(void **state)
{
	struct fx *f = *state;
	char spec[64];
	uint8_t buf[8];
	uint64_t size;
	int64_t mtime;

	/* A exists on disk before the daemon (re)starts */
	open_store(f, NULL);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 8), 8);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 8), 8);
	ios_store_close(f->st);
	f->disk->ops->destroy(f->disk);
	snprintf(spec, sizeof(spec), "lose:%" PRIx64, A);
	open_store(f, spec);
	assert_true(object_exists(f, A));
	assert_int_equal(fx_get(f, A, 0, buf, 8), -EIO);
	assert_false(object_exists(f, A));
	assert_int_equal(ios_store_size(f->st, A, &size, &mtime, NULL), -EIO);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 8), -EIO);
	assert_false(object_exists(f, A));
	assert_int_equal(fx_get(f, B, 0, buf, 8), 8);
	assert_int_equal(buf[0], 'b');
	assert_int_equal(ios_store_remove(f->st, A), 0);
}

/* lose@N: the object of the Nth write is lost once the write is made;
 * the store sees its file gone through its cached descriptor too, and
 * reports it lost (EIO, whatever the rule's errno). */
static void test_lose_after_write(void **state)
{
	struct fx *f = *state;
	uint8_t buf[8];

	open_store(f, "lose@2=EROFS");
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 8), 8);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 8), 8);   /* made, then B is lost */
	assert_false(object_exists(f, B));
	assert_true(object_exists(f, A));
	assert_int_equal(fx_get(f, B, 0, buf, 8), -EIO);
	assert_non_null(strstr(ios_store_why(f->st), "lost"));
	assert_int_equal(ios_store_sync(f->st, B), -EIO);
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 8), -EIO);
	assert_false(object_exists(f, B));
	assert_int_equal(fx_put_fill(f, A, 8, 'a', 8), 8);    /* the third write: A stays */
	assert_int_equal(fx_get(f, A, 0, buf, 8), 8);
}

/* A table made when it had fewer ops is refused, saying why. */
/* Counters (ios_store_counter): a failed write of the side file leaves the
 * value as it was; a torn last record (a crash mid-write) is dropped, the
 * others kept; the side file goes with the object, and an object with
 * only counters syncs. */
static void test_counter_write_fails(void **state)
{
	struct fx *f = *state;
	int64_t old;

	open_store(f, "write:1a00000001@2=ENOSPC");
	assert_int_equal(ios_store_counter(f->st, A, 1, IOS_COUNTER_ADD, 5, &old), 0);
	assert_int_equal(ios_store_counter(f->st, A, 1, IOS_COUNTER_ADD, 5, &old), -ENOSPC);
	assert_int_equal(ios_store_counter(f->st, A, 1, IOS_COUNTER_ADD, 0, &old), 0);
	assert_int_equal(old, 5);
	assert_int_equal(ios_store_counter(f->st, B, 1, IOS_COUNTER_ADD, 3, &old), 0); /* another object */
}

static void test_counter_torn_and_removed(void **state)
{
	struct fx *f = *state;
	char side[256];
	struct stat sb;
	int64_t old;

	open_store(f, NULL);
	assert_int_equal(ios_store_counter(f->st, A, 1, IOS_COUNTER_ADD, 7, &old), 0);
	assert_int_equal(ios_store_counter(f->st, A, 2, IOS_COUNTER_SET, 9, &old), 0); /* now first: 2, then 1 */
	snprintf(side, sizeof(side), "%s/objects/01/%016" PRIx64 ".ctr", f->dir, A);
	assert_int_equal(stat(side, &sb), 0);
	assert_int_equal(sb.st_size, 8 + 2 * 24); /* the magic, then (key, value, uid) */
	assert_int_equal(truncate(side, 8 + 24 + 16), 0); /* key 1's record torn */
	assert_int_equal(ios_store_counter(f->st, A, 2, IOS_COUNTER_ADD, 0, &old), 0);
	assert_int_equal(old, 9);
	assert_int_equal(ios_store_counter(f->st, A, 1, IOS_COUNTER_ADD, 0, &old), 0);
	assert_int_equal(old, 0);
	assert_int_equal(ios_store_sync(f->st, A), 0); /* counters only, no object */
	assert_int_equal(ios_store_remove(f->st, A), 0);
	assert_int_equal(stat(side, &sb), -1);
	assert_int_equal(ios_store_counter(f->st, A, 2, IOS_COUNTER_ADD, 0, &old), 0);
	assert_int_equal(old, 0);
}

/* A side file of the older format, (key, value) records of 16 bytes, is
 * read, and rewritten in the new one at its next change. */
static void test_counter_old_format(void **state)
{
	struct fx *f = *state;
	uint8_t rec[32] = { 0 };
	char side[256];
	struct stat sb;
	int64_t old;
	FILE *fp;

	open_store(f, NULL);
	assert_int_equal(ios_store_counter(f->st, B, 9, IOS_COUNTER_ADD, 0, &old), 0);
	snprintf(side, sizeof(side), "%s/objects/02/%016" PRIx64 ".ctr", f->dir, B);
	rec[0] = 5, rec[8] = 42;   /* key 5 = 42 */
	rec[16] = 6, rec[24] = 7;  /* key 6 = 7 */
	fp = fopen(side, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(rec, 1, sizeof(rec), fp), sizeof(rec));
	fclose(fp);
	assert_int_equal(ios_store_counter(f->st, B, 6, IOS_COUNTER_ADD, 1, &old), 0);
	assert_int_equal(old, 7);
	assert_int_equal(stat(side, &sb), 0);
	assert_int_equal(sb.st_size, 8 + 2 * 24);
	assert_int_equal(ios_store_counter(f->st, B, 5, IOS_COUNTER_ADD, 0, &old), 0);
	assert_int_equal(old, 42);
}

static void test_ops_size(void **state)
{
	struct fx *f = *state;
	struct ios_disk_ops small;
	struct ios_disk d;
	char *msg = NULL;

	assert_int_equal(ios_disk_system(&f->disk), 0);
	small = *f->disk->ops;
	small.size = offsetof(struct ios_disk_ops, destroy);
	d.ops = &small;
	assert_int_equal(ios_store_open(f->dir, 4, 0, 0, &d, &f->st, NULL, &msg), -EINVAL);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "ops table"));
	free(msg);
	f->st = NULL;
}

/* A system disk that records the writeback hints it is given. Its other
 * ops are the system's, which do not look at the disk they are called on
 * (as in test_ops_size); it lives on the stack, so destroy does nothing. */
struct wb_disk {
	struct ios_disk d;
	struct ios_disk_ops ops;
	int calls;
	off_t off, len;
};

static void wb_writeback(struct ios_disk *d, int fd, off_t off, off_t len)
{
	struct wb_disk *w = (struct wb_disk *)d;

	(void)fd;
	w->calls++;
	w->off = off;
	w->len = len;
}

static void wb_destroy(struct ios_disk *d)
{
	(void)d;
}

static void test_writeback(void **state)
{
	struct fx *f = *state;
	struct wb_disk w;
	struct ios_disk *fault;
	struct ios_piece big = { 0, IOS_WRITEBACK_MIN }, small = { 0, 0 };
	uint8_t *data = malloc(IOS_WRITEBACK_MIN), *back = malloc(IOS_WRITEBACK_MIN);
	uint64_t calls = 0, size;
	char err[256], *msg = NULL;

	assert_non_null(data);
	assert_non_null(back);
	memset(&w, 0, sizeof(w));
	assert_int_equal(ios_disk_system(&f->disk), 0);
	w.ops = *f->disk->ops;
	w.ops.writeback = wb_writeback;
	w.ops.destroy = wb_destroy;
	w.d.ops = &w.ops;
	/* through a fault disk whose rule never fires: it passes hints on */
	if (ios_disk_faults(&w.d, "read@1000000", &fault, err, sizeof(err)))
		fail_msg("faults: %s", err);
	if (ios_store_open(f->dir, 4, IOS_STORE_NEW, f->block, fault, &f->st, NULL, &msg))
		fail_msg("store: %s", msg);
	/* one block, then the large write from the next block on */
	big.offset = small.length = ios_store_csum_block(f->st);
	for (size_t i = 0; i < IOS_WRITEBACK_MIN; i++)
		data[i] = (uint8_t)(i * 7 + 1);

	/* a small write is left to the kernel */
	assert_int_equal(ios_store_write_pieces(f->st, A, &small, 1, data, &calls), small.length);
	assert_int_equal(w.calls, 0);
	/* a large one starts its writeback: exactly its range */
	assert_int_equal(ios_store_write_pieces(f->st, A, &big, 1, data, &calls), IOS_WRITEBACK_MIN);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.off, big.offset);
	assert_int_equal(w.len, IOS_WRITEBACK_MIN);
	assert_int_equal(ios_store_read_pieces(f->st, A, &big, 1, back, &size, &calls),
			 IOS_WRITEBACK_MIN);
	assert_memory_equal(back, data, IOS_WRITEBACK_MIN);
	/* a disk without the op: the write is the same, with no hint */
	w.ops.writeback = NULL;
	assert_int_equal(ios_store_write_pieces(f->st, B, &big, 1, data, &calls), IOS_WRITEBACK_MIN);
	assert_int_equal(w.calls, 1);
	assert_int_equal(ios_store_read_pieces(f->st, B, &big, 1, back, &size, &calls),
			 IOS_WRITEBACK_MIN);
	assert_memory_equal(back, data, IOS_WRITEBACK_MIN);

	ios_store_close(f->st);
	f->st = NULL;
	fault->ops->destroy(fault);
	free(data);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test_setup_teardown(test_nth_write, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lanes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_object_writes_onward, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_other_calls, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lose_from_start, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lose_after_write, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_counter_write_fails, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_counter_torn_and_removed, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_counter_old_format, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ops_size, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_writeback, fx_setup, fx_teardown),
		/* at other checksum blocks (the config's csum_block) */
		cmocka_unit_test_setup_teardown(test_lanes, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_other_calls, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lose_after_write, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_writeback, fx_setup_512, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lanes, fx_setup_64k, fx_teardown),
		cmocka_unit_test_setup_teardown(test_writeback, fx_setup_64k, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
