/*
 * test_write_fail.c - a striped write that fails on one storage daemon
 * (a full disk, here) after others took their part. The call fails with an
 * error naming the daemon and saying how many bytes from the offset are in
 * place; the file's size is max(old size, offset + those bytes), as POSIX
 * has it for a write that stops part-way, not the largest offset some
 * object reached; data past the old size is not kept, data that was
 * already there is.
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

#include <cmocka.h>

#include "cluster.h"

#define STRIP 4096
#define SPAN (16 * STRIP)     /* the failing write: 4 strips per daemon */

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static tessera_file *create(struct cluster *c, const char *path, struct tessera_layout *l)
{
	struct tessera_layout want = { .strip_size = STRIP, .count = N_IOS };
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR | O_TRUNC, 0644, &want, &f));
	CHECK(c->fs, tessera_file_layout(f, l));
	return f;
}

static void write_ok(struct cluster *c, tessera_file *f, int byte, size_t len, uint64_t off)
{
	static uint8_t buf[SPAN];

	memset(buf, byte, len);
	if (tessera_pwrite(f, buf, len, off) != (ssize_t)len)
		fail_msg("write: %s", tessera_errmsg(c->fs));
}

/* Write SPAN bytes of 'n' at 0 while slot 2's daemon finds its disk full:
 * the error names that daemon and the 8192 bytes (slots 0 and 1's first
 * strips) in place. */
static void failing_write(struct cluster *c, tessera_file *f, const struct tessera_layout *l)
{
	static uint8_t buf[SPAN];
	char want[64];
	ssize_t rc;

	cluster_restart_ios(c, (int)l->servers[2], "write@1=ENOSPC");
	memset(buf, 'n', sizeof(buf));
	rc = tessera_pwrite(f, buf, SPAN, 0);
	print_message("failed write: %s\n", tessera_errmsg(c->fs));
	assert_int_equal(rc, -ENOSPC);
	snprintf(want, sizeof(want), "storage daemon %u", l->servers[2]);
	assert_non_null(strstr(tessera_errmsg(c->fs), want));
	assert_non_null(strstr(tessera_errmsg(c->fs), "first 8192 bytes"));
}

static void test_size_after_failed_write(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	struct tessera_stat st;
	tessera_file *f = create(c, "/grow", &l);
	static uint8_t back[SPAN];

	write_ok(c, f, 'o', 2 * STRIP, 0);      /* old size: 8192 */
	failing_write(c, f, &l);
	CHECK(c->fs, tessera_fstat(f, &st));
	/* before: slot 3 kept 4 strips and the size read 65536 */
	assert_int_equal(st.size, 2 * STRIP);
	assert_int_equal(tessera_pread(f, back, SPAN, 0), 2 * STRIP);
	for (int i = 0; i < 2 * STRIP; i++)
		if (back[i] != 'n')
			fail_msg("byte %d: %c, the write's prefix was acknowledged in place", i, back[i]);
	tessera_close(f);
}

/* A file already longer than the failed write: nothing is cut, the old
 * bytes past the write are intact. */
static void test_failed_write_inside(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	struct tessera_stat st;
	tessera_file *f = create(c, "/inside", &l);
	uint8_t b = 0;

	write_ok(c, f, 'o', STRIP, SPAN + 4 * STRIP);   /* old size: SPAN + 5 strips */
	failing_write(c, f, &l);
	CHECK(c->fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, SPAN + 5 * STRIP);
	assert_int_equal(tessera_pread(f, &b, 1, SPAN + 4 * STRIP), 1);
	assert_int_equal(b, 'o');
	tessera_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_size_after_failed_write, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_inside, setup, cluster_teardown),
	};

	return cmocka_run_group_tests_name("write_fail", tests, NULL, NULL);
}
