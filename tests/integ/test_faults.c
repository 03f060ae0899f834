/*
 * test_faults.c - disk faults injected into a storage daemon through its
 * disk ops table (tessera-ios -F): a full disk, an I/O error on the Nth
 * write or on one object, a lost object; and damage done behind the
 * daemon's back: a byte flipped in an object's file, an object file
 * deleted, the daemon's directory emptied. Each reaches the client as an
 * error naming the storage daemon (index and address) and the file (and,
 * for damage, the object and why), for contiguous, list and datatype
 * access, never as zeros; the daemon goes on serving, and the bytes the
 * failed call did not change are still there.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"
#include "tdl.h"

/* Every file: 4 strips of 4 KiB, one object on each storage daemon. */
#define STRIP 4096
#define SPAN (STRIP * N_IOS)
/* The list and datatype pattern: REGIONS regions of REGION bytes, one at
 * the end of each STRIDE bytes (the last ends at SPAN, so the file's size
 * is SPAN whichever method wrote last). Each daemon's pieces are one
 * sieved span: one disk write per call and daemon, like the contiguous
 * path. */
#define REGION 1000
#define STRIDE 1024
#define REGIONS (SPAN / STRIDE)
#define GAP (STRIDE - REGION)

enum method { CONTIG, LIST, DTYPE };
static const char *const method_names[] = { "contiguous", "list", "datatype" };

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static tessera_file *create(struct cluster *c, const char *path)
{
	struct tessera_layout l = { .strip_size = STRIP, .count = N_IOS };
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR | O_TRUNC, 0644, &l, &f));
	return f;
}

/* The slot of f's layout on storage daemon `ios`. */
static uint32_t slot_on(tessera_file *f, uint32_t ios, uint64_t *handle)
{
	struct tessera_layout l;

	assert_int_equal(tessera_file_layout(f, &l), 0);
	for (uint32_t i = 0; i < l.count; i++)
		if (l.servers[i] == ios) {
			if (handle)
				*handle = l.handles[i];
			return i;
		}
	fail_msg("no slot on storage daemon %u", ios);
	return 0;
}

/* Read or write [0, SPAN) by `m`: all of it (contiguous) or the pattern's
 * regions (list, datatype), from or into `data`. */
static ssize_t access_by(tessera_file *f, enum method m, int write, uint8_t *data)
{
	uint64_t offs[REGIONS], lens[REGIONS];
	struct iovec iov = { data, REGIONS * REGION };
	struct tdl_dataloop *b, *v;
	ssize_t rc;

	if (m == CONTIG)
		return write ? tessera_pwrite(f, data, SPAN, 0) : tessera_pread(f, data, SPAN, 0);
	if (m == LIST) {
		for (int i = 0; i < REGIONS; i++) {
			offs[i] = (uint64_t)i * STRIDE + GAP;
			lens[i] = REGION;
		}
		return write ? tessera_write_list(f, &iov, 1, offs, lens, REGIONS)
			     : tessera_read_list(f, &iov, 1, offs, lens, REGIONS);
	}
	assert_int_equal(tdl_bytes(1, &b), 0);
	assert_int_equal(tdl_hvector(REGIONS, REGION, STRIDE, b, &v), 0);
	rc = write ? tessera_write_dtype(f, data, REGIONS * REGION, NULL, v, GAP, 0)
		   : tessera_read_dtype(f, data, REGIONS * REGION, NULL, v, GAP, 0);
	tdl_free(v);
	tdl_free(b);
	return rc;
}

static ssize_t write_by(tessera_file *f, enum method m, uint8_t fill)
{
	static uint8_t data[SPAN];

	memset(data, fill, sizeof(data));
	return access_by(f, m, 1, data);
}

static ssize_t written(enum method m)
{
	return m == CONTIG ? SPAN : REGIONS * REGION;
}

/* Byte `off` as the writes of `m` leave it: `fill` where they write. */
static void model_apply(uint8_t *model, enum method m, uint8_t fill, int skip_ios,
			tessera_file *f)
{
	uint32_t skip_slot = skip_ios < 0 ? UINT32_MAX : slot_on(f, (uint32_t)skip_ios, NULL);

	for (uint64_t off = 0; off < SPAN; off++)
		if ((m == CONTIG || off % STRIDE >= GAP) && (off / STRIP) % N_IOS != skip_slot)
			model[off] = fill;
}

static void check_bytes(tessera_fs *fs, tessera_file *f, const uint8_t *model)
{
	uint8_t buf[SPAN];

	if (tessera_pread(f, buf, SPAN, 0) != SPAN)
		fail_msg("read back: %s", tessera_errmsg(fs));
	for (size_t i = 0; i < SPAN; i++)
		if (buf[i] != model[i])
			fail_msg("byte %zu is %u, expected %u", i, buf[i], model[i]);
}

/* The call failed with `err`, and the message names storage daemon `ios`
 * with its address, the file, and the error. */
static void expect_error(struct cluster *c, long rc, int err, uint32_t ios, const char *path)
{
	const char *msg = tessera_errmsg(c->fs);
	struct tp_config cfg;
	char server[200], cerr[256];

	assert_int_equal(tp_config_load(c->conf, &cfg, cerr, sizeof(cerr)), 0);
	snprintf(server, sizeof(server), "storage daemon %u (%s:%s)", ios, cfg.ios[ios].host,
		 cfg.ios[ios].port);
	print_message("  %s\n", msg);
	if (rc != -err)
		fail_msg("returned %ld, expected %d (%s)", rc, -err, msg);
	if (!strstr(msg, server) || !strstr(msg, path) || !strstr(msg, strerror(err)))
		fail_msg("\"%s\" does not name \"%s\", \"%s\" and \"%s\"", msg, server, path,
			 strerror(err));
}

/* Storage daemon `ios` is up and answers. */
static void serving(struct cluster *c, uint32_t ios)
{
	struct tessera_ping p[1 + N_IOS];
	int n = tessera_ping(c->fs, p, 1 + N_IOS);

	assert_int_equal(waitpid(c->ios[ios], NULL, WNOHANG), 0);
	assert_int_equal(n, 1 + N_IOS);
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].role, "ios") && p[i].index == ios && p[i].status)
			fail_msg("storage daemon %u does not answer a ping: %d", ios, p[i].status);
}

/* The path of object `handle` in storage daemon `ios`'s directory. */
static void object_file(struct cluster *c, uint32_t ios, uint64_t handle, char *buf,
			size_t len)
{
	snprintf(buf, len, "%s/ios%u/objects/%02x/%016" PRIx64, c->dir, ios,
		 (unsigned)(handle & 0xff), handle);
}

/* ------------------------------------------------------------------ */

/* The second write to a daemon fails (once: ENOSPC; from then on: EIO),
 * by each access method. The error names daemon and file; the daemon
 * goes on serving; the bytes it holds are the first write's, and (once
 * only) the next write succeeds. */
static void nth_write(struct cluster *c, const char *spec, int err, int onward)
{
	static const uint32_t victim[] = { 1, 2, 3 };

	for (enum method m = CONTIG; m <= DTYPE; m++) {
		uint32_t ios = victim[m];
		char path[64];
		uint8_t model[SPAN] = { 0 };
		tessera_file *f;

		snprintf(path, sizeof(path), "/%s", method_names[m]);
		print_message("%s writes, storage daemon %u with -F %s\n", method_names[m], ios,
			      spec);
		cluster_restart_ios(c, (int)ios, spec);
		f = create(c, path);
		assert_int_equal(write_by(f, m, 'a'), written(m));
		model_apply(model, m, 'a', -1, f);
		expect_error(c, write_by(f, m, 'b'), err, ios, path);
		/* the other daemons took their part of the failed write */
		model_apply(model, m, 'b', (int)ios, f);
		serving(c, ios);
		check_bytes(c->fs, f, model);
		if (onward) {
			expect_error(c, write_by(f, m, 'c'), err, ios, path);
			model_apply(model, m, 'c', (int)ios, f);
		} else {
			assert_int_equal(write_by(f, m, 'c'), written(m));
			model_apply(model, m, 'c', -1, f);
		}
		check_bytes(c->fs, f, model);
		tessera_close(f);
		cluster_restart_ios(c, (int)ios, NULL);
	}
}

static void test_enospc_nth_write(void **state)
{
	nth_write(*state, "write@2=ENOSPC", ENOSPC, 0);
}

static void test_eio_from_nth_write(void **state)
{
	nth_write(*state, "write@2+=EIO", EIO, 1);
}

/* Faults on one object: writes of it fail with EIO by every method, then
 * reads of it; another file on the same daemon works meanwhile. */
static void test_one_object(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = create(c, "/one"), *g = create(c, "/other");
	uint8_t model[SPAN] = { 0 }, other[SPAN] = { 0 }, buf[SPAN];
	uint64_t h;
	char spec[80];

	assert_int_equal(write_by(f, CONTIG, 'a'), SPAN);
	model_apply(model, CONTIG, 'a', -1, f);
	slot_on(f, 2, &h);
	snprintf(spec, sizeof(spec), "write:%" PRIx64 "=EIO", h);
	print_message("storage daemon 2 with -F %s\n", spec);
	cluster_restart_ios(c, 2, spec);
	for (enum method m = CONTIG; m <= DTYPE; m++) {
		expect_error(c, write_by(f, m, (uint8_t)('b' + m)), EIO, 2, "/one");
		/* the other daemons took their part */
		model_apply(model, m, (uint8_t)('b' + m), 2, f);
	}
	assert_int_equal(write_by(g, LIST, 'x'), written(LIST));
	model_apply(other, LIST, 'x', -1, g);
	check_bytes(c->fs, g, other);
	check_bytes(c->fs, f, model);
	serving(c, 2);

	snprintf(spec, sizeof(spec), "read:%" PRIx64 "=EIO", h);
	print_message("storage daemon 2 with -F %s\n", spec);
	cluster_restart_ios(c, 2, spec);
	for (enum method m = CONTIG; m <= DTYPE; m++)
		expect_error(c, access_by(f, m, 0, buf), EIO, 2, "/one");
	check_bytes(c->fs, g, other);
	serving(c, 2);
	cluster_restart_ios(c, 2, NULL);
	check_bytes(c->fs, f, model);
	tessera_close(f);
	tessera_close(g);
}

/* An object the disk lost, from the daemon's start: its file is gone,
 * reading it (or its size) is an error naming daemon and file, the other
 * files are intact, and the file can still be removed. */
static void test_lost_object(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = create(c, "/lost"), *g = create(c, "/kept");
	uint8_t model[SPAN] = { 0 }, buf[SPAN];
	struct tessera_stat st;
	char spec[64], file[600];
	uint64_t h;

	assert_int_equal(write_by(f, CONTIG, 'a'), SPAN);
	assert_int_equal(write_by(g, CONTIG, 'k'), SPAN);
	model_apply(model, CONTIG, 'k', -1, g);
	slot_on(f, 2, &h);
	object_file(c, 2, h, file, sizeof(file));
	assert_int_equal(access(file, F_OK), 0);
	snprintf(spec, sizeof(spec), "lose:%" PRIx64, h);
	print_message("storage daemon 2 with -F %s\n", spec);
	cluster_restart_ios(c, 2, spec);
	expect_error(c, tessera_pread(f, buf, SPAN, 0), EIO, 2, "/lost");
	assert_int_equal(access(file, F_OK), -1); /* the object vanished */
	expect_error(c, tessera_fstat(f, &st), EIO, 2, "/lost");
	expect_error(c, write_by(f, LIST, 'b'), EIO, 2, "/lost");
	check_bytes(c->fs, g, model);
	serving(c, 2);
	tessera_close(f);
	CHECK(c->fs, tessera_unlink(c->fs, "/lost"));
	tessera_close(g);
}

/* lose@N: the object the daemon's Nth write went to is lost once the
 * write is made: that write succeeds, every later access fails. */
static void test_lost_after_write(void **state)
{
	struct cluster *c = *state;
	tessera_file *f, *g;
	uint8_t buf[SPAN], model[SPAN] = { 0 };
	char file[600];
	uint64_t h;

	cluster_restart_ios(c, 1, "lose@2");
	f = create(c, "/a");
	g = create(c, "/b");
	assert_int_equal(write_by(f, CONTIG, 'a'), SPAN);   /* write 1 on daemon 1 */
	assert_int_equal(write_by(g, DTYPE, 'b'), written(DTYPE)); /* write 2: /b's object */
	slot_on(g, 1, &h);
	object_file(c, 1, h, file, sizeof(file));
	assert_int_equal(access(file, F_OK), -1);
	expect_error(c, tessera_pread(g, buf, SPAN, 0), EIO, 1, "/b");
	expect_error(c, write_by(g, CONTIG, 'c'), EIO, 1, "/b");
	/* /a, on the same daemon, is untouched */
	model_apply(model, CONTIG, 'a', -1, f);
	check_bytes(c->fs, f, model);
	assert_int_equal(write_by(f, LIST, 'd'), written(LIST));
	model_apply(model, LIST, 'd', -1, f);
	check_bytes(c->fs, f, model);
	serving(c, 1);
	tessera_close(f);
	tessera_close(g);
}

/* The call failed with EIO naming storage daemon `ios`, the file, object
 * `handle` and `why`. */
static void expect_integrity(struct cluster *c, long rc, uint32_t ios, const char *path,
			     uint64_t handle, const char *why)
{
	char object[40];

	expect_error(c, rc, EIO, ios, path);
	snprintf(object, sizeof(object), "object %016" PRIx64, handle);
	if (!strstr(tessera_errmsg(c->fs), object) || !strstr(tessera_errmsg(c->fs), why))
		fail_msg("\"%s\" does not name \"%s\" and \"%s\"", tessera_errmsg(c->fs), object,
			 why);
}

/* A byte of an object flipped on disk: reading it by each method fails
 * naming daemon, file and object; the daemon counts the damaged block;
 * the other objects and files read; a write of the whole strip mends it. */
static void test_corrupted_byte(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = create(c, "/rot"), *g = create(c, "/fine");
	uint8_t model[SPAN] = { 0 }, other[SPAN] = { 0 }, buf[SPAN], b;
	struct tessera_ios_stats stats;
	char file[600];
	uint64_t h;
	int fd;

	assert_int_equal(write_by(f, CONTIG, 'a'), SPAN);
	assert_int_equal(write_by(g, CONTIG, 'g'), SPAN);
	model_apply(other, CONTIG, 'g', -1, g);
	assert_int_equal(tessera_fsync(f), 0);
	slot_on(f, 2, &h);
	object_file(c, 2, h, file, sizeof(file));
	fd = open(file, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, 1234), 1);
	b ^= 1;
	assert_int_equal(pwrite(fd, &b, 1, 1234), 1);
	close(fd);
	for (enum method m = CONTIG; m <= DTYPE; m++)
		expect_integrity(c, access_by(f, m, 0, buf), 2, "/rot", h, "damaged");
	CHECK(c->fs, tessera_ios_stats(c->fs, 2, &stats));
	assert_int_equal(stats.checksum_failures, 3);
	check_bytes(c->fs, g, other);
	serving(c, 2);
	assert_int_equal(write_by(f, CONTIG, 'b'), SPAN);
	model_apply(model, CONTIG, 'b', -1, f);
	check_bytes(c->fs, f, model);
	tessera_close(f);
	tessera_close(g);
}

/* An object file deleted behind a running daemon's back (its descriptor
 * cached), then the daemon restarted: reads, stat and writes of the file
 * fail naming the lost object; a file whose object on that daemon was
 * never written (a hole inside it) reads as zeros there; the file can be
 * removed. */
static void test_object_deleted(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = create(c, "/gone"), *g = create(c, "/sparse");
	uint8_t buf[SPAN], sparse[SPAN + STRIP], zeros[STRIP] = { 0 };
	uint32_t hole = slot_on(g, 3, NULL);
	uint64_t sparse_size = (hole + 2) * STRIP;
	struct tessera_stat st;
	char file[600];
	uint64_t h;

	assert_int_equal(write_by(f, CONTIG, 'a'), SPAN);
	assert_int_equal(tessera_pread(f, buf, SPAN, 0), SPAN);
	/* /sparse: the strip after its slot on daemon 3 written, nothing else */
	memset(sparse, 's', STRIP);
	assert_int_equal(tessera_pwrite(g, sparse, STRIP, (hole + 1) * STRIP), STRIP);
	slot_on(f, 3, &h);
	object_file(c, 3, h, file, sizeof(file));
	assert_int_equal(unlink(file), 0);
	for (int restart = 0; restart < 2; restart++) {
		for (enum method m = CONTIG; m <= DTYPE; m++)
			expect_integrity(c, access_by(f, m, 0, buf), 3, "/gone", h, "lost");
		expect_integrity(c, tessera_fstat(f, &st), 3, "/gone", h, "lost");
		expect_integrity(c, write_by(f, LIST, 'b'), 3, "/gone", h, "lost");
		assert_int_equal(access(file, F_OK), -1);
		assert_int_equal(tessera_pread(g, sparse, sizeof(sparse), 0), (ssize_t)sparse_size);
		assert_memory_equal(sparse + hole * STRIP, zeros, STRIP);
		assert_int_equal(sparse[(hole + 1) * STRIP], 's');
		serving(c, 3);
		cluster_restart_ios(c, 3, NULL);
	}
	tessera_close(f);
	tessera_close(g);
	CHECK(c->fs, tessera_unlink(c->fs, "/gone"));
}

/* A storage daemon restarted on its emptied directory (a lost disk): the
 * objects it held are reported lost by every method, naming daemon, file
 * and object, never as zeros; the other daemons' files read; new files
 * work on it. */
static void test_wiped_daemon(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = create(c, "/wiped"), *g;
	uint8_t buf[SPAN], model[SPAN] = { 0 };
	struct tessera_stat st;
	char cmd[700];
	uint64_t h;

	assert_int_equal(write_by(f, CONTIG, 'a'), SPAN);
	assert_int_equal(tessera_fsync(f), 0);
	slot_on(f, 1, &h);
	cluster_stop_pid(c->ios[1], SIGTERM);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/ios1/* %s/ios1/.[!.]*", c->dir, c->dir);
	assert_int_equal(system(cmd), 0);
	c->ios[1] = 0;
	cluster_restart_ios(c, 1, NULL);
	for (enum method m = CONTIG; m <= DTYPE; m++)
		expect_integrity(c, access_by(f, m, 0, buf), 1, "/wiped", h, "remade");
	expect_integrity(c, tessera_fstat(f, &st), 1, "/wiped", h, "remade");
	serving(c, 1);
	g = create(c, "/after");
	assert_int_equal(write_by(g, DTYPE, 'n'), written(DTYPE));
	model_apply(model, DTYPE, 'n', -1, g);
	check_bytes(c->fs, g, model);
	tessera_close(f);
	tessera_close(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_enospc_nth_write, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_eio_from_nth_write, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_one_object, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_lost_object, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_lost_after_write, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_corrupted_byte, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_object_deleted, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_wiped_daemon, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
