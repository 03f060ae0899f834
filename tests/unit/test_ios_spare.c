/*
 * test_ios_spare.c - spare files (server/ios/ios_spare.h): a new object's
 * files are spares renamed into place, a removed object's files become
 * spares again unless a local reader was lent them, a file in the way is
 * never replaced, and a new store removes what an earlier daemon left.
 * Each test runs a real store on the system disk in a temporary
 * directory (store_fixture.h), the spares' thread included.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ios_spare.h"
#include "store_fixture.h"

#define A UINT64_C(0x1a00000001)
#define B UINT64_C(0x2b00000002)
#define C UINT64_C(0x3c00000003)

/* The store in f->dir, new, keeping `want` spares (ready on return). */
/* Wait until the thread has `n` spares ready. */
static void wait_ready(struct fx *f, unsigned n)
{
	struct ios_spares_stats s;

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(ios_store_spares(f->st, &s), 0);
		if (s.ready == n)
			return;
		usleep(10000);
	}
	fail_msg("%u of %u spares ready after 10 s (last error %d)", s.ready, n, s.last_error);
}

static void open_with_spares(struct fx *f, unsigned want)
{
	char err[256] = "";

	assert_int_equal(ios_disk_system(&f->disk), 0);
	assert_int_equal(ios_store_open(f->dir, 8, IOS_STORE_NEW, 0, f->disk, &f->st, NULL, NULL),
			 0);
	if (ios_store_set_spares(f->st, want, err, sizeof(err)))
		fail_msg("ios_store_set_spares: %s", err);
	wait_ready(f, want);
}

static struct stat stat_of(const char *path)
{
	struct stat sb;

	if (stat(path, &sb))
		fail_msg("stat %s: %s", path, strerror(errno));
	return sb;
}

/* Whether inode `ino` is one of the spares' files now. */
static int among_spares(struct fx *f, ino_t ino)
{
	char path[256];
	struct stat sb;

	for (unsigned i = 0; i < 2 * IOS_SPARES_MAX; i++) {
		snprintf(path, sizeof(path), "%s/spare/%u", f->dir, i);
		if (!stat(path, &sb) && sb.st_ino == ino)
			return 1;
	}
	return 0;
}

static unsigned spares_on_disk(struct fx *f)
{
	char path[256];
	unsigned n = 0;

	for (unsigned i = 0; i < 2 * IOS_SPARES_MAX; i++) {
		snprintf(path, sizeof(path), "%s/spare/%u", f->dir, i);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* A first write renames two spares into place (data, checksums); the
 * object reads back, and its files keep the mark until lent. */
static void test_new_object_is_a_spare(void **state)
{
	struct fx *f = *state;
	struct ios_spares_stats s;
	char data[256], sums[256];
	struct stat before;
	uint8_t buf[6000];

	open_with_spares(f, 4);
	assert_int_equal(spares_on_disk(f), 4);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', sizeof(buf)), (ssize_t)sizeof(buf));
	ios_store_spares(f->st, &s);
	assert_int_equal(s.taken, 2);
	assert_int_equal(s.missed, 0);
	fx_file_of(f, A, "", data, sizeof(data));
	fx_file_of(f, A, ".sum", sums, sizeof(sums));
	before = stat_of(data);
	assert_int_equal(before.st_mode & 07777, IOS_SPARE_MODE);
	assert_int_equal(before.st_size, (off_t)sizeof(buf));
	assert_int_equal(stat_of(sums).st_mode & 07777, IOS_SPARE_MODE);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(fx_get(f, A, 0, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 'a');
	/* the thread makes up for them */
	wait_ready(f, 4);
	assert_int_equal(ios_store_sync(f->st, A), 0);
}

/* A removed object's files become spares, emptied; the next object made
 * from them holds its own bytes only. */
static void test_removed_files_reused(void **state)
{
	struct fx *f = *state;
	struct ios_spares_stats s;
	char path[256], sums[256];
	uint8_t buf[8192];
	ino_t ino, ino_sums, b, b_sums;

	open_with_spares(f, 2);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 8192), 8192);
	fx_file_of(f, A, "", path, sizeof(path));
	fx_file_of(f, A, ".sum", sums, sizeof(sums));
	ino = stat_of(path).st_ino;
	ino_sums = stat_of(sums).st_ino;
	/* the thread's two new spares first: A's files are then the last
	 * ready, and the thread, with its two, makes no more */
	wait_ready(f, 2);
	assert_int_equal(ios_store_remove(f->st, A), 0);
	assert_int_equal(access(path, F_OK), -1);
	ios_store_spares(f->st, &s);
	assert_int_equal(s.reused, 2);
	assert_true(among_spares(f, ino));
	assert_true(among_spares(f, ino_sums));
	/* the last spares ready are A's files: B's are made of them */
	assert_int_equal(fx_put_fill(f, B, 0, 'b', 100), 100);
	fx_file_of(f, B, "", path, sizeof(path));
	fx_file_of(f, B, ".sum", sums, sizeof(sums));
	b = stat_of(path).st_ino;
	b_sums = stat_of(sums).st_ino;
	assert_true((b == ino && b_sums == ino_sums) || (b == ino_sums && b_sums == ino));
	/* whichever inode an object gets, it holds its own bytes only */
	for (int i = 0; i < 3; i++) {
		uint64_t h = B + (uint64_t)i * 0x100;

		assert_int_equal(fx_put_fill(f, h, 0, 'b', 100), 100);
		fx_file_of(f, h, "", path, sizeof(path));
		assert_int_equal(stat_of(path).st_size, 100);
		memset(buf, 0xee, sizeof(buf));
		assert_int_equal(fx_get(f, h, 0, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		for (size_t k = 0; k < sizeof(buf); k++)
			assert_int_equal(buf[k], k < 100 ? 'b' : 0);
	}
}

/* Files lent to a local reader are never reused: the reader keeps the
 * removed object's bytes, whatever is made after. */
static void test_lent_files_not_reused(void **state)
{
	struct fx *f = *state;
	struct ios_spares_stats s;
	char path[256], got[64];
	int fd, sums;

	open_with_spares(f, 2);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 64), 64);
	assert_int_equal(ios_store_open_read(f->st, A, &fd, &sums), 0);
	assert_true(sums >= 0);
	fx_file_of(f, A, "", path, sizeof(path));
	assert_int_equal(stat_of(path).st_mode & 07777, 0600); /* unmarked */
	assert_int_equal(ios_store_remove(f->st, A), 0);
	ios_store_spares(f->st, &s);
	assert_int_equal(s.reused, 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(fx_put_fill(f, B + (uint64_t)i, 0, 'b', 64), 64);
	assert_int_equal(pread(fd, got, sizeof(got), 0), (ssize_t)sizeof(got));
	for (size_t k = 0; k < sizeof(got); k++)
		assert_int_equal(got[k], 'a');
	close(fd);
	close(sums);
}

/* A file already at the object's name (one the registry lost) is never
 * replaced by a spare: the write lands in it. */
static void test_file_in_the_way_kept(void **state)
{
	struct fx *f = *state;
	struct ios_spares_stats s;
	char path[256], got[16];
	struct stat sb;
	int fd;

	open_with_spares(f, 2);
	fx_file_of(f, C, "", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	close(fd);
	assert_int_equal(fx_put_fill(f, C, 10, 'c', 6), 6);
	assert_int_equal(stat_of(path).st_ino, sb.st_ino);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, got, sizeof(got)), 16);
	close(fd);
	assert_memory_equal(got, "\0\0\0\0\0\0\0\0\0\0cccccc", 16);
	ios_store_spares(f->st, &s);
	assert_int_equal(s.taken, 1); /* the checksums' file only */
}

/* A store opened again removes the spares an earlier one left; with 0
 * wanted it keeps none, and new objects are made as without spares. */
static void test_leftovers_removed(void **state)
{
	struct fx *f = *state;
	struct ios_spares_stats s;
	char path[256], err[256];

	open_with_spares(f, 8);
	assert_int_equal(spares_on_disk(f), 8);
	fx_close(f);
	assert_int_equal(spares_on_disk(f), 8);
	assert_int_equal(ios_disk_system(&f->disk), 0);
	assert_int_equal(ios_store_open(f->dir, 8, 0, 0, f->disk, &f->st, NULL, NULL), 0);
	assert_int_equal(ios_store_set_spares(f->st, 0, err, sizeof(err)), 0);
	assert_int_equal(spares_on_disk(f), 0);
	assert_int_equal(fx_put_fill(f, A, 0, 'a', 64), 64);
	fx_file_of(f, A, "", path, sizeof(path));
	assert_int_equal(stat_of(path).st_mode & 07777, 0600);
	assert_int_equal(ios_store_remove(f->st, A), 0);
	assert_int_equal(ios_store_spares(f->st, &s), 0);
	assert_int_equal(s.taken + s.reused + s.ready, 0);
	assert_int_equal(ios_store_set_spares(f->st, IOS_SPARES_MAX + 1, err, sizeof(err)),
			 -EINVAL);
	print_message("  %s\n", err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_object_is_a_spare, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_removed_files_reused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lent_files_not_reused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_file_in_the_way_kept, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_removed, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
