/*
 * test_lock_methods.c - the dissertation's lock methods as it defines
 * them (seed 001, §7.2, §7.3), counted on real daemons (1 mds + 4 ios,
 * 4 KiB strips): every lock protocol sends the number of messages its
 * definition gives, for a fixed pattern with and without a conflicting
 * holder; POSIX locks are one request per region piece, list locks split
 * per 64-region message are released by one message each; block-granular
 * locks make disjoint bytes of one block conflict, byte-range locks not.
 * Counts, not times: nothing here depends on how fast the machine is but
 * the holder's release, which comes 1 s after the acquirer started while
 * a blocking acquire's long poll lasts 10 s.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"

#define STRIP 4096
#define HOLD_US 1000000 /* the conflicting holder lets go after this */

static const char *proto_name[] = { "two-phase", "one-try", "alt-try" };

static tessera_file *open_file(tessera_fs *fs, const char *path)
{
	return cluster_open_striped(fs, path, STRIP, N_IOS);
}

/* ------------------------------------------------------------ the holder */

/* Another connection's write lock on [off, off + len), released HOLD_US
 * after it was taken. */
struct holder {
	tessera_fs *fs;
	tessera_lock *lock;
	pthread_t thread;
	int rc;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	usleep(HOLD_US);
	h->rc = tessera_unlock(h->lock);
	return NULL;
}

static void holder_start(struct holder *h, tessera_file *f, uint64_t off, uint64_t len)
{
	CHECK(h->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, off, len, TESSERA_LOCK_ONE_TRY,
					&h->lock));
	assert_int_equal(pthread_create(&h->thread, NULL, holder_main, h), 0);
}

static void holder_join(struct holder *h)
{
	pthread_join(h->thread, NULL);
	CHECK(h->fs, h->rc);
}

/* ------------------------------------------------------------ counts */

/* What a protocol sends to take R lock requests (ordered by offset) when
 * request k's first byte is held by another client until the acquirer
 * waits for it (k < 0: nothing held), from §7.3 and §7.4.1:
 *   two-phase  one blocking round per request, in order: R messages;
 *   one-try    one optimistic round (R messages); with a conflict the
 *              R-1-k requests after k got their bytes out of order and
 *              give them back (a partial release each), then blocking
 *              rounds take k and each of those in order;
 *   alt-try    the optimistic round and its partial releases, a blocking
 *              round for k, then an optimistic round for the R-1-k left,
 *              which gets them all. */
struct counts {
	uint64_t messages, optimistic, blocking, partial;
};

static struct counts expected(int protocol, uint64_t R, int64_t k)
{
	uint64_t after = k < 0 ? 0 : R - 1 - (uint64_t)k;

	switch (protocol) {
	case TESSERA_LOCK_TWO_PHASE:
		return (struct counts){ R, 0, R, 0 };
	case TESSERA_LOCK_ONE_TRY:
		if (k < 0)
			return (struct counts){ R, 1, 0, 0 };
		return (struct counts){ R + after + 1 + after, 1, 1 + after, after };
	default:
		if (k < 0)
			return (struct counts){ R, 1, 0, 0 };
		return (struct counts){ R + after + 1 + after, 2, 1, after };
	}
}

/* Take the regions as `split` under `protocol` (with another connection
 * holding request k's first region meanwhile, unless k < 0) and check
 * every count against the definition's; R requests expected. */
static void check_counts(tessera_fs *fs, tessera_file *f, struct holder *h, tessera_file *hf,
			 const uint64_t *offs, const uint64_t *lens, size_t n,
			 enum tessera_lock_split split, int protocol, uint64_t R, int64_t k,
			 uint64_t held_off, const char *what)
{
	struct counts want = expected(protocol, R, k);
	struct tessera_lock_info info;
	tessera_lock *lk;

	if (k >= 0)
		holder_start(h, hf, held_off, 1);
	CHECK(fs, tessera_lock_list_split(f, TESSERA_LOCK_WRITE, offs, lens, n, split, protocol,
					  &lk));
	if (k >= 0)
		holder_join(h);
	tessera_lock_info(lk, &info);
	print_message("%-8s %-9s %-11s: %3lu messages (%3lu expected), %lu optimistic, "
		      "%3lu blocking rounds, %3lu partial releases; %zu requests to release\n",
		      what, proto_name[protocol], k < 0 ? "no conflict" : "conflict",
		      (unsigned long)info.messages, (unsigned long)want.messages,
		      (unsigned long)info.optimistic_rounds, (unsigned long)info.blocking_rounds,
		      (unsigned long)info.partial_releases, tessera_lock_requests(lk));
	assert_int_equal(info.messages, want.messages);
	assert_int_equal(info.optimistic_rounds, want.optimistic);
	assert_int_equal(info.blocking_rounds, want.blocking);
	assert_int_equal(info.partial_releases, want.partial);
	assert_int_equal(tessera_lock_requests(lk), R);
	assert_int_equal(info.objects, N_IOS);
	CHECK(fs, tessera_unlock(lk));
}

/* The pattern: 8-byte regions 3000 bytes apart over six strips, and a
 * 12-byte one across the boundary of the seventh: 9 regions, 10 pieces. */
#define POSIX_REGIONS 9
#define POSIX_PIECES 10
#define POSIX_K 3 /* the held piece: region 3 */

static void posix_pattern(uint64_t *offs, uint64_t *lens)
{
	for (size_t i = 0; i < POSIX_REGIONS - 1; i++) {
		offs[i] = i * 3000 + 64;
		lens[i] = 8;
	}
	offs[POSIX_REGIONS - 1] = 6 * STRIP - 6;
	lens[POSIX_REGIONS - 1] = 12;
}

/* POSIX locks (§7.2.1): one request per region, one more where a region
 * crosses a strip; each protocol takes them all before returning. */
static void test_posix_counts(void **state)
{
	struct cluster *c = *state;
	struct holder h = { .fs = cluster_connect_more(c->conf) };
	tessera_file *f = open_file(c->fs, "/posix"), *hf = open_file(h.fs, "/posix");
	uint64_t offs[POSIX_REGIONS], lens[POSIX_REGIONS];

	posix_pattern(offs, lens);
	for (int proto = 0; proto < 3; proto++) {
		check_counts(c->fs, f, &h, hf, offs, lens, POSIX_REGIONS, TESSERA_LOCK_SPLIT_REGION,
			     proto, POSIX_PIECES, -1, 0, "posix");
		check_counts(c->fs, f, &h, hf, offs, lens, POSIX_REGIONS, TESSERA_LOCK_SPLIT_REGION,
			     proto, POSIX_PIECES, POSIX_K, offs[POSIX_K], "posix");
	}
	tessera_close(hf);
	tessera_close(f);
	tessera_disconnect(h.fs);
}

/* 4096 POSIX locks in one optimistic round: the library keeps `window`
 * messages in flight (all of them at once overran a daemon, which then
 * timed out); the counts are the definition's all the same. */
static void test_posix_many(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_file(c->fs, "/many");
	static uint64_t offs[4096], lens[4096];
	struct tessera_lock_info info;
	tessera_lock *lk;

	for (int i = 0; i < 4096; i++) {
		offs[i] = (uint64_t)i * 64;
		lens[i] = 1;
	}
	CHECK(c->fs, tessera_lock_list_split(f, TESSERA_LOCK_WRITE, offs, lens, 4096,
					     TESSERA_LOCK_SPLIT_REGION, TESSERA_LOCK_ALT_TRY, &lk));
	tessera_lock_info(lk, &info);
	assert_int_equal(info.messages, 4096);
	assert_int_equal(info.optimistic_rounds, 1);
	assert_int_equal(tessera_lock_requests(lk), 4096);
	CHECK(c->fs, tessera_unlock(lk));
	tessera_close(f);
}

/* List locks split as §7.2.2 (lock_list_batch = 64): 4096 1-byte regions
 * 64 bytes apart are 64 strips of 64 regions, so 64 requests, released by
 * 64 messages, under every protocol, with and without a holder; joined
 * (the default), the same list is one request per storage daemon. */
static void test_list_split_counts(void **state)
{
	struct cluster *c = *state;
	char conf[400], cmd[1400];
	tessera_fs *fs64, *hfs;
	tessera_file *f64, *hf;
	static uint64_t offs[4096], lens[4096];
	struct tessera_lock_info info;
	tessera_lock *lk;
	struct holder h;

	snprintf(conf, sizeof(conf), "%s.batch64", c->conf);
	snprintf(cmd, sizeof(cmd), "cp %s %s && echo 'lock_list_batch = 64' >> %s", c->conf, conf,
		 conf);
	assert_int_equal(system(cmd), 0);
	fs64 = cluster_connect_more(conf);
	hfs = cluster_connect_more(c->conf);
	h = (struct holder){ .fs = hfs };
	f64 = open_file(fs64, "/list");
	hf = open_file(hfs, "/list");
	for (int i = 0; i < 4096; i++) {
		offs[i] = (uint64_t)i * 64;
		lens[i] = 1;
	}
	for (int proto = 0; proto < 3; proto++) {
		check_counts(fs64, f64, &h, hf, offs, lens, 4096, TESSERA_LOCK_SPLIT_MESSAGE, proto,
			     64, -1, 0, "list64");
		/* request 40 (strip 40) starts at region 40 x 64 */
		check_counts(fs64, f64, &h, hf, offs, lens, 4096, TESSERA_LOCK_SPLIT_MESSAGE, proto,
			     64, 40, offs[40 * 64], "list64");
	}
	/* joined: the same 64 messages, but one request per daemon */
	CHECK(fs64, tessera_lock_list(f64, TESSERA_LOCK_WRITE, offs, lens, 4096,
				      TESSERA_LOCK_ONE_TRY, &lk));
	tessera_lock_info(lk, &info);
	print_message("list64 joined one-try: %lu messages, %zu requests to release\n",
		      (unsigned long)info.messages, tessera_lock_requests(lk));
	assert_int_equal(info.messages, 64);
	assert_int_equal(tessera_lock_requests(lk), N_IOS);
	CHECK(fs64, tessera_unlock(lk));
	tessera_close(hf);
	tessera_close(f64);
	tessera_disconnect(hfs);
	tessera_disconnect(fs64);
	unlink(conf);
}

/* ------------------------------------------------------------ blocks */

struct blocked {
	tessera_file *f;
	uint64_t off, len, block; /* block 0: byte-range */
	volatile int done;
	int rc;
	tessera_lock *lock;
};

static int take_one(tessera_file *f, uint64_t off, uint64_t len, uint64_t block,
		    tessera_lock **out)
{
	if (!block)
		return tessera_lock_list(f, TESSERA_LOCK_WRITE, &off, &len, 1, TESSERA_LOCK_ALT_TRY,
					 out);
	return tessera_lock_blocks(f, TESSERA_LOCK_WRITE, &off, &len, 1, block,
				   TESSERA_LOCK_ALT_TRY, out);
}

static void *blocked_main(void *arg)
{
	struct blocked *b = arg;

	b->rc = take_one(b->f, b->off, b->len, b->block, &b->lock);
	b->done = 1;
	return NULL;
}

/* A holds [100, 110), B wants [200, 210): disjoint bytes of one 4 KiB
 * block. Byte-range locks: B gets them at once. Block-granular: both
 * round out to [0, 4096), so B waits until A lets go. */
static void test_blocks_false_sharing(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs2 = cluster_connect_more(c->conf);
	tessera_file *fa = open_file(c->fs, "/blocks"), *fb = open_file(fs2, "/blocks");
	struct tessera_lock_conflict seen;

	for (uint64_t block = 0; block <= 4096; block += 4096) {
		struct blocked b = { .f = fb, .off = 200, .len = 10, .block = block };
		tessera_lock *a;
		pthread_t th;

		CHECK(c->fs, take_one(fa, 100, 10, block, &a));
		CHECK(fs2, tessera_lock_record_test(fb, TESSERA_LOCK_WRITE, 1, 200, 210, &seen));
		assert_int_equal(pthread_create(&th, NULL, blocked_main, &b), 0);
		usleep(300000);
		print_message("%s: B %s while A holds [100, 110); a test of [200, 210) meets "
			      "%s [%lu, %lu)\n", block ? "4 KiB blocks" : "byte ranges",
			      b.done ? "got [200, 210) at once" : "waits", seen.mode ? "a lock" : "none",
			      (unsigned long)seen.start, (unsigned long)seen.end);
		if (block) {
			assert_false(b.done);
			assert_int_equal(seen.mode, TESSERA_LOCK_WRITE);
			assert_int_equal(seen.start, 0);
			assert_int_equal(seen.end, 4096);
		} else {
			assert_true(b.done);
			assert_int_equal(seen.mode, 0);
		}
		CHECK(c->fs, tessera_unlock(a));
		pthread_join(th, NULL);
		CHECK(fs2, b.rc);
		CHECK(fs2, tessera_unlock(b.lock));
	}
	tessera_close(fa);
	tessera_close(fb);
	tessera_disconnect(fs2);
}

/* Rounding: a region across a block boundary covers both blocks (two
 * strips here, two objects); an odd block size rounds to its multiples. */
static void test_blocks_rounding(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs2 = cluster_connect_more(c->conf);
	tessera_file *f = open_file(c->fs, "/rounding"), *f2 = open_file(fs2, "/rounding");
	struct tessera_lock_conflict seen;
	struct tessera_lock_info info;
	uint64_t off = STRIP - 6, len = 12;
	tessera_lock *lk;

	CHECK(c->fs, tessera_lock_blocks(f, TESSERA_LOCK_WRITE, &off, &len, 1, STRIP,
					 TESSERA_LOCK_ONE_TRY, &lk));
	tessera_lock_info(lk, &info);
	assert_int_equal(info.objects, 2);
	assert_int_equal(tessera_lock_requests(lk), 2);
	CHECK(fs2, tessera_lock_record_test(f2, TESSERA_LOCK_READ, 1, 0, 3 * STRIP, &seen));
	assert_int_equal(seen.start, 0);
	assert_int_equal(seen.end, STRIP);
	CHECK(fs2, tessera_lock_record_test(f2, TESSERA_LOCK_READ, 1, STRIP, 3 * STRIP, &seen));
	assert_int_equal(seen.start, STRIP);
	assert_int_equal(seen.end, 2 * STRIP);
	CHECK(c->fs, tessera_unlock(lk));
	off = 1500;
	len = 1;
	CHECK(c->fs, tessera_lock_blocks(f, TESSERA_LOCK_WRITE, &off, &len, 1, 1000,
					 TESSERA_LOCK_ONE_TRY, &lk));
	CHECK(fs2, tessera_lock_record_test(f2, TESSERA_LOCK_READ, 1, 0, STRIP, &seen));
	assert_int_equal(seen.start, 1000);
	assert_int_equal(seen.end, 2000);
	CHECK(c->fs, tessera_unlock(lk));
	tessera_close(f2);
	tessera_close(f);
	tessera_disconnect(fs2);
}

/* Refused: a block size of 0, a region whose rounding passes the largest
 * offset, a split that is none of the named ones. Nothing is held after. */
static void test_bad_arguments(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_file(c->fs, "/bad");
	uint64_t off = 100, len = 10, big = (UINT64_C(1) << 63) - 10, five = 5;
	struct tessera_lock_conflict seen;
	tessera_lock *lk = NULL;

	assert_int_equal(tessera_lock_blocks(f, TESSERA_LOCK_WRITE, &off, &len, 1, 0,
					     TESSERA_LOCK_ONE_TRY, &lk), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(c->fs), "block size 0"));
	assert_int_equal(tessera_lock_blocks(f, TESSERA_LOCK_WRITE, &big, &five, 1, 4096,
					     TESSERA_LOCK_ONE_TRY, &lk), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(c->fs), "rounded to 4096-byte blocks overflows"));
	assert_int_equal(tessera_lock_list_split(f, TESSERA_LOCK_WRITE, &off, &len, 1,
						 (enum tessera_lock_split)7, TESSERA_LOCK_ONE_TRY,
						 &lk), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(c->fs), "unknown split 7"));
	assert_int_equal(tessera_lock_list_split(f, TESSERA_LOCK_WRITE, &off, &len, 1,
						 TESSERA_LOCK_SPLIT_REGION, 9, &lk), -EINVAL);
	assert_null(lk);
	assert_int_equal(tessera_lock_requests(NULL), 0);
	CHECK(c->fs, tessera_lock_record_test(f, TESSERA_LOCK_WRITE, 1, 0, 1 << 20, &seen));
	assert_int_equal(seen.mode, 0);
	tessera_close(f);
}

static int setup(void **state)
{
	/* a blocking acquire's long poll is half the request timeout: 10 s,
	 * well past the holder's 1 s */
	return cluster_setup_conf(state, CLUSTER_TCP, "timeout_ms = 20000\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_posix_counts, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_posix_many, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_list_split_counts, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_blocks_false_sharing, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_blocks_rounding, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
