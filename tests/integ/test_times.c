/*
 * test_times.c - file times on real daemons: writes and truncates through
 * any client move mtime and ctime (the storage objects' modification
 * times, folded in at stat), utimens sets mtime to a time of the caller's
 * choosing that later chmods keep, and a later write moves it again.
 *
 * Steps are 50 ms apart: the storage daemons' times come from their local
 * file system, which stamps with the kernel's coarse clock (a tick, 1 to
 * 10 ms).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define STEP_US 50000

static int64_t ns_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ns_of(ts);
}

static struct tessera_stat stat_of(tessera_fs *fs, const char *path)
{
	struct tessera_stat st;

	CHECK(fs, tessera_stat(fs, path, &st));
	return st;
}

/* A second client: what one client writes, another's stat must see. */
static tessera_fs *other_client(struct cluster *c)
{
	tessera_fs *fs;
	char err[512];

	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	return fs;
}

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static void write_at(tessera_fs *fs, const char *path, uint64_t off, size_t len)
{
	char buf[4096];
	tessera_file *f;

	assert_true(len <= sizeof(buf));
	memset(buf, 'w', len);
	CHECK(fs, tessera_open(fs, path, O_WRONLY, 0, NULL, &f));
	assert_int_equal(tessera_pwrite(f, buf, len, off), (ssize_t)len);
	tessera_close(f);
}

/* A write by another client moves mtime and ctime, whichever object it
 * lands on; stat alone moves nothing. */
static void test_write_moves_mtime(void **state)
{
	struct cluster *c = *state;
	tessera_fs *b = other_client(c);
	struct tessera_layout l = { .strip_size = 4096, .count = 4 };
	struct tessera_stat s0, s1, s2, s3;
	tessera_file *f;
	int64_t before;

	CHECK(c->fs, tessera_open(c->fs, "/w", O_CREAT | O_RDWR, 0644, &l, &f));
	tessera_close(f);
	s0 = stat_of(c->fs, "/w");
	usleep(STEP_US);
	before = wall_ns();
	write_at(b, "/w", 0, 100);
	s1 = stat_of(c->fs, "/w");
	assert_true(ns_of(s1.mtime) > ns_of(s0.mtime));
	assert_true(ns_of(s1.ctime) > ns_of(s0.ctime));
	/* the write's own time, to the file system's tick */
	assert_true(ns_of(s1.mtime) >= before - 20000000);
	assert_true(ns_of(s1.mtime) <= wall_ns());
	assert_int_equal(s1.size, 100);

	/* the third object: only it changes */
	usleep(STEP_US);
	write_at(b, "/w", 2 * 4096 + 10, 10);
	s2 = stat_of(c->fs, "/w");
	assert_true(ns_of(s2.mtime) > ns_of(s1.mtime));
	assert_true(ns_of(s2.ctime) > ns_of(s1.ctime));

	/* reading and stat change nothing */
	usleep(STEP_US);
	CHECK(b, tessera_open(b, "/w", O_RDONLY, 0, NULL, &f));
	{
		char buf[64];

		assert_int_equal(tessera_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	}
	CHECK(b, tessera_fstat(f, &s3));
	tessera_close(f);
	assert_true(ns_of(s3.mtime) == ns_of(s2.mtime));
	assert_true(ns_of(s3.ctime) == ns_of(s2.ctime));
	tessera_disconnect(b);
}

/* Client b truncates `path` to `size`: client a's stat sees mtime and
 * ctime move. */
static void truncate_moves_times(tessera_fs *a, tessera_fs *b, const char *path, uint64_t size)
{
	struct tessera_stat s0 = stat_of(a, path), s1;

	usleep(STEP_US);
	CHECK(b, tessera_truncate(b, path, size));
	s1 = stat_of(a, path);
	assert_int_equal(s1.size, size);
	assert_true(ns_of(s1.mtime) > ns_of(s0.mtime));
	assert_true(ns_of(s1.ctime) > ns_of(s0.ctime));
}

/* Truncate moves mtime and ctime: shrinking, to the same size, a file
 * never written, and an O_TRUNC open. */
static void test_truncate_moves_mtime(void **state)
{
	struct cluster *c = *state;
	tessera_fs *b = other_client(c);
	struct tessera_stat s0, s1;
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, "/t", O_CREAT | O_RDWR, 0644, NULL, &f));
	tessera_close(f);
	write_at(c->fs, "/t", 0, 4000);
	truncate_moves_times(c->fs, b, "/t", 1000);
	truncate_moves_times(c->fs, b, "/t", 1000);

	s0 = stat_of(c->fs, "/t");
	usleep(STEP_US);
	CHECK(b, tessera_open(b, "/t", O_WRONLY | O_TRUNC, 0, NULL, &f));
	tessera_close(f);
	s1 = stat_of(c->fs, "/t");
	assert_int_equal(s1.size, 0);
	assert_true(ns_of(s1.mtime) > ns_of(s0.mtime));

	/* a file no write ever reached */
	CHECK(c->fs, tessera_open(c->fs, "/t0", O_CREAT | O_RDWR, 0644, NULL, &f));
	tessera_close(f);
	truncate_moves_times(c->fs, b, "/t0", 0);
	tessera_disconnect(b);
}

/* A step later, chmod `path`; its attributes after. */
static struct tessera_stat chmod_later(tessera_fs *fs, const char *path, uint32_t mode)
{
	struct tessera_setattr sa;

	usleep(STEP_US);
	memset(&sa, 0, sizeof(sa));
	sa.valid = TESSERA_SET_MODE;
	sa.mode = mode;
	CHECK(fs, tessera_setattr(fs, path, &sa));
	return stat_of(fs, path);
}

/* utimens sets mtime exactly (what cp -p, rsync -t and tar do after
 * writing), chmod keeps it, and only a later write moves it. chmod after a
 * write keeps the write's time too. */
static void test_utimens_then_write(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_setattr sa;
	struct tessera_stat s0, s1, s2;
	const int64_t y2001 = INT64_C(978307200) * 1000000000 + 123456789;
	tessera_file *f;

	CHECK(fs, tessera_open(fs, "/u", O_CREAT | O_RDWR, 0644, NULL, &f));
	tessera_close(f);
	write_at(fs, "/u", 0, 500);
	memset(&sa, 0, sizeof(sa));
	sa.valid = TESSERA_SET_MTIME;
	sa.mtime.tv_sec = (time_t)(y2001 / 1000000000);
	sa.mtime.tv_nsec = (long)(y2001 % 1000000000);
	CHECK(fs, tessera_setattr(fs, "/u", &sa));
	s0 = stat_of(fs, "/u");
	assert_true(ns_of(s0.mtime) == y2001);

	s1 = chmod_later(fs, "/u", 0600);
	assert_true(ns_of(s1.mtime) == y2001);
	assert_true(ns_of(s1.ctime) > ns_of(s0.ctime));

	usleep(STEP_US);
	write_at(fs, "/u", 10, 10);
	s2 = stat_of(fs, "/u");
	assert_true(ns_of(s2.mtime) > ns_of(s1.ctime));
	assert_true(ns_of(s2.ctime) > ns_of(s1.ctime));

	/* chmod after that write: the write's time stays */
	s1 = chmod_later(fs, "/u", 0644);
	assert_true(ns_of(s1.mtime) == ns_of(s2.mtime));
	assert_true(ns_of(s1.ctime) > ns_of(s2.ctime));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_moves_mtime, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_truncate_moves_mtime, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_utimens_then_write, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
