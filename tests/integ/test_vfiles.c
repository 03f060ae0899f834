/*
 * test_vfiles.c - versioned files through libtessera's calls (issue 25,
 * docs/user-guide.md "Versioned files"), on real daemons: every I/O path
 * of a versioned file (pwrite and pread, list and datatype writes and
 * reads, ftruncate, an O_TRUNC open, fstat and stat sizes, fsync), the
 * kind in the layout, snapshots read through tessera_open_snapshot, the
 * version server's state, concurrent overlapping list writers whose every
 * read is one writer's version whole, a log that fills (merged by the
 * writer that meets EBUSY, which writes again), and the refusals (plain
 * files, read-only handles, fallocate). The 8-writer test with kills is
 * test_version.c's.
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"
#include "tdl.h"

#define STRIP 4096
#define SIZE 40000

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static tessera_file *vcreate(tessera_fs *fs, const char *path)
{
	struct tessera_layout l = { .strip_size = STRIP, .count = N_IOS,
				    .kind = TESSERA_LAYOUT_VERSIONED };
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_RDWR | O_CREAT | O_EXCL, 0644, &l, &f));
	return f;
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed);
}

/* Contiguous, list and datatype writes and reads of one versioned file,
 * each read against a model of the bytes. */
static void test_io_paths(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	uint8_t *model = calloc(1, SIZE), *buf = calloc(1, SIZE);
	tessera_file *f = vcreate(fs, "/v-paths");
	struct tessera_layout l;
	struct tessera_stat st;
	uint64_t offs[64], lens[64];
	struct iovec iov = { buf, 0 };
	struct tdl_dataloop *byte, *ft;
	uint64_t at;

	assert_non_null(model);
	CHECK(fs, tessera_file_layout(f, &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_VERSIONED);
	fill(model, SIZE, 1);
	assert_int_equal(tessera_pwrite(f, model, SIZE, 0), SIZE);
	assert_int_equal(tessera_pread(f, buf, SIZE, 0), SIZE);
	assert_memory_equal(buf, model, SIZE);
	/* past the end: short */
	assert_int_equal(tessera_pread(f, buf, 100, SIZE - 10), 10);
	/* a list write of 64 regions of 24 bytes every 600, then read back */
	for (int i = 0; i < 64; i++) {
		offs[i] = (uint64_t)i * 600 + 5;
		lens[i] = 24;
	}
	fill(buf, 64 * 24, 9);
	iov.iov_len = 64 * 24;
	assert_int_equal(tessera_write_list(f, &iov, 1, offs, lens, 64), 64 * 24);
	for (int i = 0; i < 64; i++)
		memcpy(model + offs[i], buf + i * 24, 24);
	memset(buf, 0, SIZE);
	assert_int_equal(tessera_read_list(f, &iov, 1, offs, lens, 64), 64 * 24);
	for (int i = 0; i < 64; i++)
		assert_memory_equal(buf + i * 24, model + offs[i], 24);
	/* a datatype write: 100 blocks of 16 bytes every 256, from byte 1000 */
	assert_int_equal(tdl_bytes(1, &byte), 0);
	assert_int_equal(tdl_hvector(100, 16, 256, byte, &ft), 0);
	tdl_free(byte);
	fill(buf, 1600, 33);
	assert_int_equal(tessera_write_dtype(f, buf, 1600, NULL, ft, 1000, 0), 1600);
	for (int i = 0; i < 100; i++)
		memcpy(model + 1000 + i * 256, buf + i * 16, 16);
	memset(buf, 0, SIZE);
	assert_int_equal(tessera_read_dtype(f, buf, 1600, NULL, ft, 1000, 0), 1600);
	for (int i = 0; i < 100; i++)
		assert_memory_equal(buf + i * 16, model + 1000 + i * 256, 16);
	tdl_free(ft);
	assert_int_equal(tessera_pread(f, buf, SIZE, 0), SIZE);
	assert_memory_equal(buf, model, SIZE);
	/* truncate down, sizes by handle and by path; fsync merges */
	CHECK(fs, tessera_ftruncate(f, 12345));
	CHECK(fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 12345);
	CHECK(fs, tessera_fsync(f));
	CHECK(fs, tessera_stat(fs, "/v-paths", &st));
	assert_int_equal(st.size, 12345);
	assert_int_equal(tessera_pread(f, buf, SIZE, 0), 12345);
	assert_memory_equal(buf, model, 12345);
	assert_int_equal(tessera_fallocate(f, TESSERA_FALLOC_EXTEND, 0, 4096), -EOPNOTSUPP);
	CHECK(fs, tessera_close(f));
	/* an O_TRUNC open is a truncate version too */
	CHECK(fs, tessera_open(fs, "/v-paths", O_RDWR | O_TRUNC, 0, NULL, &f));
	CHECK(fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 0);
	assert_int_equal(tessera_pwrite(f, "abc", 3, 100000), 3);
	/* an append lands at the size of the newest version */
	CHECK(fs, tessera_append(f, "xyz", 3, &at));
	assert_int_equal(at, 100003);
	CHECK(fs, tessera_close(f));
	CHECK(fs, tessera_stat(fs, "/v-paths", &st));
	assert_int_equal(st.size, 100006);
	free(model);
	free(buf);
}

/* A snapshot read through its own handle sees the file as it was, while
 * the file moves on; a dropped one opens no more. */
static void test_snapshots(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	tessera_file *f = vcreate(fs, "/v-snap"), *s;
	struct tessera_snapshot list[4];
	struct tessera_version_state vs;
	struct tessera_stat st;
	uint8_t a[9000], b[5000], got[9000];
	uint64_t version;
	size_t n;

	fill(a, sizeof(a), 2);
	fill(b, sizeof(b), 3);
	assert_int_equal(tessera_pwrite(f, a, sizeof(a), 0), sizeof(a));
	CHECK(fs, tessera_snapshot_create(f, "one", &version));
	assert_true(version > 0);
	assert_int_equal(tessera_snapshot_create(f, "one", NULL), -EEXIST);
	CHECK(fs, tessera_ftruncate(f, 0));
	assert_int_equal(tessera_pwrite(f, b, sizeof(b), 0), sizeof(b));
	CHECK(fs, tessera_fsync(f));   /* merges stop below the snapshot */
	CHECK(fs, tessera_open_snapshot(fs, "/v-snap", "one", &s));
	assert_int_equal(tessera_pread(s, got, sizeof(got), 0), sizeof(a));
	assert_memory_equal(got, a, sizeof(a));
	CHECK(fs, tessera_fstat(s, &st));
	assert_int_equal(st.size, sizeof(a));
	assert_int_equal(tessera_pwrite(s, b, 1, 0), -EBADF);
	CHECK(fs, tessera_close(s));
	assert_int_equal(tessera_pread(f, got, sizeof(got), 0), sizeof(b));
	assert_memory_equal(got, b, sizeof(b));
	CHECK(fs, tessera_snapshot_list(f, list, 4, &n));
	assert_int_equal(n, 1);
	assert_string_equal(list[0].name, "one");
	assert_int_equal(list[0].version, version);
	CHECK(fs, tessera_version_state(f, &vs));
	assert_true(vs.newest >= version + 2);
	assert_int_equal(vs.snapshots, 1);
	assert_int_equal(vs.ids, 1);   /* this handle's, until it closes */
	{
		struct tessera_vlog_state logs[N_IOS];
		struct tessera_layout l;
		uint32_t committed = 0;

		CHECK(fs, tessera_file_layout(f, &l));
		CHECK(fs, tessera_version_logs(f, logs, N_IOS));
		for (int i = 0; i < N_IOS; i++) {
			assert_int_equal(logs[i].handle, l.handles[i]);
			assert_int_equal(logs[i].server, l.servers[i]);
			committed += logs[i].committed;
		}
		assert_true(committed > 0);   /* the snapshot holds the merge below it */
	}
	CHECK(fs, tessera_snapshot_drop(f, "one"));
	assert_int_equal(tessera_snapshot_drop(f, "one"), -ENOENT);
	assert_int_equal(tessera_open_snapshot(fs, "/v-snap", "one", &s), -ENOENT);
	assert_non_null(strstr(tessera_errmsg(fs), "one"));
	CHECK(fs, tessera_close(f));
	CHECK(fs, tessera_open(fs, "/v-snap", O_RDONLY, 0, NULL, &f));
	CHECK(fs, tessera_version_state(f, &vs));
	assert_int_equal(vs.ids, 0);
	assert_int_equal(vs.reads, 0);
	assert_int_equal(vs.merged, vs.newest);  /* close merged all */
	assert_int_equal(tessera_snapshot_create(f, "ro", NULL), -EBADF);
	CHECK(fs, tessera_close(f));
}

/* Writers on their own connections write the same 256 regions of 8
 * bytes (over every object), each all bytes its own value, many times
 * over; every read of those regions, through list and contiguous reads,
 * is one writer's version whole. */
#define WRITERS 4
#define REGIONS 256
/* Each writer's close merges every version so far while the reads of
 * that object wait: before merges joined the records' ranges, 4 x 40
 * writes made merges of 150 versions that outlasted the harness's 3 s
 * timeout on a loaded 2-core machine (2 runs in 8). 24 keeps a margin. */
#define ROUNDS 24

static void regions(uint64_t *offs, uint64_t *lens)
{
	for (int i = 0; i < REGIONS; i++) {
		offs[i] = (uint64_t)i * 72;  /* 72: strips of 4 KiB hold 57 each */
		lens[i] = 8;
	}
}

static void writer(const char *conf, int w)
{
	tessera_fs *fs = cluster_connect_more(conf);
	uint64_t offs[REGIONS], lens[REGIONS];
	uint8_t buf[REGIONS * 8];
	struct iovec iov = { buf, sizeof(buf) };
	tessera_file *f;

	regions(offs, lens);
	if (tessera_open(fs, "/v-race", O_RDWR, 0, NULL, &f))
		_exit(10);
	for (int r = 0; r < ROUNDS; r++) {
		memset(buf, 'A' + w, sizeof(buf));
		if (tessera_write_list(f, &iov, 1, offs, lens, REGIONS) != (ssize_t)sizeof(buf)) {
			fprintf(stderr, "writer %d: %s\n", w, tessera_errmsg(fs));
			_exit(11);
		}
	}
	_exit(tessera_close(f) ? 12 : 0);
}

/* All bytes equal (one writer's), or all zero (none yet). */
static int uniform(const uint8_t *b, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (b[i] != b[0])
			return 0;
	return 1;
}

/* The storage daemons' logs' ends, when a writer failed. */
static void show_logs(const struct cluster *c)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "tail -n 5 %s/ios*.log %s/mds.log >&2", c->dir, c->dir);
	if (system(cmd) < 0)
		fprintf(stderr, "(no logs)\n");
}

/* One round of reads during the writes: list and contiguous, each one
 * version whole. */
static void read_once(const struct cluster *c, tessera_file *f, int reads)
{
	uint64_t offs[REGIONS], lens[REGIONS];
	uint8_t buf[REGIONS * 8], whole[REGIONS * 72];
	struct iovec iov = { buf, sizeof(buf) };

	regions(offs, lens);
	if (tessera_read_list(f, &iov, 1, offs, lens, REGIONS) != sizeof(buf)) {
		show_logs(c);
		fail_msg("list read %d: %s", reads, tessera_errmsg(c->fs));
	}
	if (!uniform(buf, sizeof(buf)))
		fail_msg("list read %d mixes versions: '%c' and others", reads, buf[0]);
	memset(whole, 0, sizeof(whole));
	if (tessera_pread(f, whole, sizeof(whole), 0) < 0) {
		show_logs(c);
		fail_msg("read %d: %s", reads, tessera_errmsg(c->fs));
	}
	for (int i = 1; i < REGIONS; i++)
		if (memcmp(whole + offs[i], whole, 8))
			fail_msg("contiguous read %d mixes versions at region %d", reads, i);
}

/* Writers that ended (each must have succeeded): how many are left. */
static int reap(const struct cluster *c, pid_t *pids, int running)
{
	int status;

	for (int w = 0; w < WRITERS; w++)
		if (pids[w] && waitpid(pids[w], &status, WNOHANG) == pids[w]) {
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				show_logs(c);
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			pids[w] = 0;
			running--;
		}
	return running;
}

static void test_concurrent_writers(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	tessera_file *f = vcreate(fs, "/v-race");
	uint64_t offs[REGIONS], lens[REGIONS];
	uint8_t buf[REGIONS * 8];
	struct iovec iov = { buf, sizeof(buf) };
	pid_t pids[WRITERS];
	int reads = 0, running = WRITERS;

	regions(offs, lens);
	for (int w = 0; w < WRITERS; w++)
		if ((pids[w] = fork()) == 0)
			writer(c->conf, w);
	while (running) {
		read_once(c, f, reads++);
		running = reap(c, pids, running);
	}
	assert_int_equal(tessera_read_list(f, &iov, 1, offs, lens, REGIONS), sizeof(buf));
	assert_true(uniform(buf, sizeof(buf)) && buf[0] >= 'A' && buf[0] < 'A' + WRITERS);
	printf("%d reads during %d writers' %d list writes each, each read one version\n",
	       reads, WRITERS, ROUNDS);
	CHECK(fs, tessera_close(f));
}

/* A log that fills (4096 live records per object, IOS_VLOG_MAX_RECORDS;
 * the version server's 4096 unmerged commits) is merged by the writer
 * that meets EBUSY, which then writes again: no write fails, none is lost. */
#define FULL_WRITES 4200

static void test_full_log_merges(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_layout l = { .strip_size = STRIP, .count = 1,
				    .kind = TESSERA_LAYOUT_VERSIONED };
	struct tessera_version_state vs;
	uint8_t got[FULL_WRITES];
	tessera_file *f;

	CHECK(fs, tessera_open(fs, "/v-full", O_RDWR | O_CREAT | O_EXCL, 0644, &l, &f));
	for (int i = 0; i < FULL_WRITES; i++) {
		uint8_t b = (uint8_t)(i % 251);

		if (tessera_pwrite(f, &b, 1, (uint64_t)i) != 1)
			fail_msg("write %d: %s", i, tessera_errmsg(fs));
	}
	CHECK(fs, tessera_version_state(f, &vs));
	assert_true(vs.merged > 0);        /* merged on the way, not at close */
	assert_true(vs.newest >= FULL_WRITES);
	assert_int_equal(tessera_pread(f, got, sizeof(got), 0), FULL_WRITES);
	for (int i = 0; i < FULL_WRITES; i++)
		assert_int_equal(got[i], i % 251);
	CHECK(fs, tessera_close(f));
}

/* The version calls on a plain file say it is not versioned; a directory
 * default makes its new files versioned, and clearing it plain again. */
static void test_plain_and_dir_default(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_version_state vs;
	struct tessera_layout l;
	tessera_file *f, *s;

	CHECK(fs, tessera_open(fs, "/plain", O_RDWR | O_CREAT, 0644, NULL, &f));
	CHECK(fs, tessera_file_layout(f, &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_PLAIN);
	assert_int_equal(tessera_snapshot_create(f, "x", NULL), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(fs), "not versioned"));
	assert_int_equal(tessera_version_state(f, &vs), -EINVAL);
	assert_int_equal(tessera_version_merge(f), -EINVAL);
	CHECK(fs, tessera_close(f));
	assert_int_equal(tessera_open_snapshot(fs, "/plain", "x", &s), -EINVAL);
	CHECK(fs, tessera_mkdir(fs, "/vd", 0755));
	CHECK(fs, tessera_set_dir_layout_kind(fs, "/vd", 0, 2, TESSERA_LAYOUT_VERSIONED));
	CHECK(fs, tessera_get_layout(fs, "/vd", &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_VERSIONED);
	CHECK(fs, tessera_open(fs, "/vd/a", O_RDWR | O_CREAT, 0644, NULL, &f));
	CHECK(fs, tessera_file_layout(f, &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_VERSIONED);
	assert_int_equal(l.count, 2);
	assert_int_equal(tessera_pwrite(f, "hello", 5, 0), 5);
	CHECK(fs, tessera_close(f));
	CHECK(fs, tessera_clear_dir_layout(fs, "/vd"));
	CHECK(fs, tessera_open(fs, "/vd/b", O_RDWR | O_CREAT, 0644, NULL, &f));
	CHECK(fs, tessera_file_layout(f, &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_PLAIN);
	CHECK(fs, tessera_close(f));
	assert_int_equal(tessera_set_dir_layout_kind(fs, "/vd", 0, 0, (enum tessera_layout_kind)1),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_io_paths, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_snapshots, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_plain_and_dir_default, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_full_log_merges, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
