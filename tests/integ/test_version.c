/*
 * test_version.c - versioned files end to end (issue 25; docs/design.md
 * "Versioning (chapter 8)"), on real daemons.
 *
 * Eight writer processes, each its own client, write the same 48
 * noncontiguous regions (over all four storage daemons) again and again,
 * by list and by datatype I/O, each write filled with its own tag. Two
 * readers read the regions meanwhile. With versions (no locks anywhere)
 * every read must show one write whole (never a mix of two), and each
 * reader must see each writer's writes in the order they were made
 * (reads see a prefix of the commit order, which only grows). At the end
 * the file holds one writer's last write. The same with a writer, a
 * storage daemon and the version server (the metadata daemon) killed
 * with SIGKILL mid-run (the daemons restarted over the same disks).
 * A storage daemon stopped (SIGSTOP) under a write: it fails, naming the
 * daemon, and the file reads as its last whole version. Calls larger than
 * one request per object (more than max_io bytes, more than a round's
 * regions) are one version too: a reader never sees part of one, and a
 * writer killed between its requests leaves nothing of its call.
 * Plus: what a versioned file is at create and in a directory, snapshots,
 * truncate as a version, the version server's state, and writer IDs one
 * session takes for a job that another session writes under.
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
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"
#include "tdl.h"

#define WRITERS 8
#define READERS 2
#define ITERS 24
#define REGIONS 48
#define RLEN 24          /* bytes per region (even: 2-byte tags) */
#define RSTRIDE 1000     /* region i at i * RSTRIDE: 48 KB over 4 KiB strips */
#define STRIP 4096
#define BYTES (REGIONS * RLEN)

/* A tag names one write: writer w (1..WRITERS), iteration i. */
static uint16_t tag_of(int w, int i)
{
	return (uint16_t)(w << 8 | i);
}

static void regions(uint64_t *offs, uint64_t *lens)
{
	for (int i = 0; i < REGIONS; i++) {
		offs[i] = (uint64_t)i * RSTRIDE;
		lens[i] = RLEN;
	}
}

static void fill(uint8_t *buf, uint16_t tag)
{
	for (int j = 0; j < BYTES; j += 2) {
		buf[j] = (uint8_t)(tag >> 8);
		buf[j + 1] = (uint8_t)tag;
	}
}

/* The tag every byte pair of buf holds; -1 for a mix (a torn read). 0:
 * nothing written yet. */
static int uniform_tag(const uint8_t *buf)
{
	uint16_t first = (uint16_t)(buf[0] << 8 | buf[1]);

	for (int j = 2; j < BYTES; j += 2)
		if ((uint16_t)(buf[j] << 8 | buf[j + 1]) != first)
			return -1;
	return first;
}

static int valid_tag(int tag)
{
	return tag == 0 || ((tag >> 8) >= 1 && (tag >> 8) <= WRITERS && (tag & 0xff) < ITERS);
}

static struct tessera_layout versioned_layout(void)
{
	struct tessera_layout l;

	memset(&l, 0, sizeof(l));
	l.strip_size = STRIP;
	l.count = N_IOS;
	l.kind = TESSERA_LAYOUT_VERSIONED;
	return l;
}

static tessera_file *open_versioned(tessera_fs *fs, const char *path)
{
	struct tessera_layout l = versioned_layout();
	tessera_file *f = NULL;

	CHECK(fs, tessera_open(fs, path, O_RDWR | O_CREAT, 0644, &l, &f));
	return f;
}

/* A datatype write of `count` regions of `len` bytes `stride` apart
 * from offset 0 (an hvector of bytes), from buf. */
static ssize_t write_hvector(tessera_file *f, uint8_t *buf, size_t bytes, uint64_t count,
			     uint64_t len, uint64_t stride)
{
	struct tdl_dataloop *b = NULL, *v = NULL;
	ssize_t n;

	if (tdl_bytes(1, &b) || tdl_hvector(count, len, stride, b, &v)) {
		tdl_free(b);
		return -ENOMEM;
	}
	n = tessera_write_dtype(f, buf, bytes, NULL, v, 0, 0);
	tdl_free(v);
	tdl_free(b);
	return n;
}

/* One write of the regions, tagged: list I/O on even iterations, a
 * datatype (hvector) on odd ones. */
static ssize_t write_tagged(tessera_file *f, uint8_t *buf, uint16_t tag, int i)
{
	uint64_t offs[REGIONS], lens[REGIONS];
	struct iovec iov = { buf, BYTES };

	fill(buf, tag);
	if (i % 2 == 0) {
		regions(offs, lens);
		return tessera_write_list(f, &iov, 1, offs, lens, REGIONS);
	}
	return write_hvector(f, buf, BYTES, REGIONS, RLEN, RSTRIDE);
}

static ssize_t read_regions(tessera_file *f, uint8_t *buf)
{
	uint64_t offs[REGIONS], lens[REGIONS];
	struct iovec iov = { buf, BYTES };

	regions(offs, lens);
	return tessera_read_list(f, &iov, 1, offs, lens, REGIONS);
}

/* A writer child: ITERS tagged writes (each failure retried once after a
 * pause, for the daemons a test restarts), a pause of `gap_us` between
 * writes; on `report` the tags of its successful writes, in order. Exits
 * 0, or 1 if it could not start. */
static void writer(const char *conf, const char *path, int w, int report, useconds_t gap_us)
{
	char err[512];
	uint8_t buf[BYTES];
	tessera_fs *fs;
	tessera_file *f;

	if (tessera_connect(conf, &fs, err, sizeof(err)) ||
	    tessera_open(fs, path, O_RDWR, 0, NULL, &f)) {
		fprintf(stderr, "writer %d: %s\n", w, err);
		_exit(1);
	}
	for (int i = 0; i < ITERS; i++) {
		uint16_t tag = tag_of(w, i);
		ssize_t n = write_tagged(f, buf, tag, i);

		if (n != BYTES) {
			usleep(300000);
			n = write_tagged(f, buf, tag, i);
		}
		if (n == BYTES && write(report, &tag, sizeof(tag)) != sizeof(tag))
			_exit(1);
		if (n != BYTES)
			fprintf(stderr, "writer %d, write %d: %s\n", w, i, tessera_errmsg(fs));
		usleep(gap_us);
	}
	(void)tessera_close(f);
	tessera_disconnect(fs);
	_exit(0);
}

/* A reader child: reads until `stop` reaches end of file, checking each
 * read (one whole write; each writer's writes in order). Exit 0: all
 * good; 2: a torn read; 3: a writer's older write after a newer one. */
static void reader(const char *conf, const char *path, int stop)
{
	int seen[WRITERS + 1], torn = 0, back = 0, reads = 0, failed = 0;
	char err[512], c;
	uint8_t buf[BYTES];
	tessera_fs *fs;
	tessera_file *f;

	for (int w = 0; w <= WRITERS; w++)
		seen[w] = -1;
	if (tessera_connect(conf, &fs, err, sizeof(err)) ||
	    tessera_open(fs, path, O_RDONLY, 0, NULL, &f))
		_exit(1);
	fcntl(stop, F_SETFL, O_NONBLOCK);
	while (read(stop, &c, 1) < 0 && errno == EAGAIN) {
		int tag;

		if (read_regions(f, buf) != BYTES) {
			if (!failed++) /* a daemon being restarted */
				fprintf(stderr, "reader: %s\n", tessera_errmsg(fs));
			usleep(100000);
			continue;
		}
		reads++;
		tag = uniform_tag(buf);
		if (tag < 0 || !valid_tag(tag)) {
			fprintf(stderr, "reader: torn read %d: %02x%02x .. %02x%02x\n", reads,
				buf[0], buf[1], buf[BYTES - 2], buf[BYTES - 1]);
			torn++;
			continue;
		}
		if (tag && (tag & 0xff) < seen[tag >> 8]) {
			fprintf(stderr, "reader: writer %d's write %d after its write %d\n",
				tag >> 8, tag & 0xff, seen[tag >> 8]);
			back++;
		}
		if (tag && (tag & 0xff) > seen[tag >> 8])
			seen[tag >> 8] = tag & 0xff;
	}
	fprintf(stderr, "reader: %d reads, %d failed while daemons restarted\n", reads, failed);
	(void)tessera_close(f);
	tessera_disconnect(fs);
	_exit(torn ? 2 : back ? 3 : 0);
}

enum fault { NO_FAULT, KILL_WRITER, KILL_IOS, KILL_MDS };

struct run {
	pid_t writers[WRITERS], readers[READERS];
	int report[2], stop[2];
	uint16_t last[WRITERS + 1];   /* each writer's last successful tag */
	int done;                     /* successful writes, all writers */
};

static void start_all(struct cluster *c, struct run *r, const char *path)
{
	/* close-on-exec: daemons restarted meanwhile must not hold them */
	assert_int_equal(pipe2(r->report, O_CLOEXEC), 0);
	assert_int_equal(pipe2(r->stop, O_CLOEXEC), 0);
	for (int k = 0; k < READERS; k++) {
		r->readers[k] = fork();
		assert_true(r->readers[k] >= 0);
		if (r->readers[k] == 0) {
			close(r->stop[1]);
			close(r->report[0]);
			close(r->report[1]);
			reader(c->conf, path, r->stop[0]);
		}
	}
	for (int w = 1; w <= WRITERS; w++) {
		r->writers[w - 1] = fork();
		assert_true(r->writers[w - 1] >= 0);
		if (r->writers[w - 1] == 0) {
			close(r->report[0]);
			close(r->stop[0]);
			close(r->stop[1]);
			writer(c->conf, path, w, r->report[1], 20000);
		}
	}
	close(r->report[1]);
	close(r->stop[0]);
}

static void restart_mds(struct cluster *c)
{
	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
}

static void restart_ios(struct cluster *c, int index)
{
	char name[16];

	snprintf(name, sizeof(name), "ios%d", index);
	cluster_stop_pid(c->ios[index], SIGKILL);
	c->ios[index] = cluster_spawn(c, "tessera-ios", name, index);
}

/* The fault, a while into the run. A killed writer's last report may be
 * of a write it made just before. */
static void inject(struct cluster *c, struct run *r, enum fault fault)
{
	usleep(400000);
	if (fault == KILL_WRITER)
		kill(r->writers[WRITERS - 1], SIGKILL);
	else if (fault == KILL_IOS)
		restart_ios(c, 1);
	else if (fault == KILL_MDS)
		restart_mds(c);
}

static void finish_all(struct run *r, enum fault fault)
{
	uint16_t tag;
	int status;

	memset(r->last, 0, sizeof(r->last));
	r->done = 0;
	while (read(r->report[0], &tag, sizeof(tag)) == sizeof(tag)) {
		r->last[tag >> 8] = tag;
		r->done++;
	}
	close(r->report[0]);
	for (int w = 0; w < WRITERS; w++) {
		assert_int_equal(waitpid(r->writers[w], &status, 0), r->writers[w]);
		if (fault == KILL_WRITER && w == WRITERS - 1)
			assert_true(WIFSIGNALED(status));
		else
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	close(r->stop[1]);   /* the readers stop */
	for (int k = 0; k < READERS; k++) {
		assert_int_equal(waitpid(r->readers[k], &status, 0), r->readers[k]);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("reader %d: exit status %#x (2: a torn read, 3: a writer's"
				 " writes out of order)", k, status);
	}
}

/* The file at the end: one write whole, the last of one writer (the
 * newest commit is some writer's last). */
static void check_final(struct cluster *c, const char *path, const struct run *r)
{
	uint8_t buf[BYTES];
	tessera_file *f;
	int tag, found = 0;

	CHECK(c->fs, tessera_open(c->fs, path, O_RDONLY, 0, NULL, &f));
	assert_int_equal(read_regions(f, buf), BYTES);
	tag = uniform_tag(buf);
	assert_true(tag > 0);
	for (int w = 1; w <= WRITERS; w++)
		found |= r->last[w] == tag;
	if (!found)
		fail_msg("the file ends with write %d of writer %d, no writer's last", tag & 0xff,
			 tag >> 8);
	CHECK(c->fs, tessera_close(f));
}

static void run_with(struct cluster *c, const char *path, enum fault fault)
{
	tessera_file *f = open_versioned(c->fs, path);
	struct tessera_version_state vs;
	struct run r;

	CHECK(c->fs, tessera_close(f));
	start_all(c, &r, path);
	inject(c, &r, fault);
	finish_all(&r, fault);
	print_message("%d writes made; fault %d\n", r.done, fault);
	assert_true(r.done >= (WRITERS - 1) * ITERS / 2);
	check_final(c, path, &r);
	/* Every writer is gone: a merge leaves no live ID, nothing unmerged
	 * (a killed writer's ID ends with its session or the restart). */
	CHECK(c->fs, tessera_open(c->fs, path, O_RDWR, 0, NULL, &f));
	CHECK(c->fs, tessera_version_merge(f));
	CHECK(c->fs, tessera_version_state(f, &vs));
	assert_true(vs.newest >= (uint64_t)r.done);
	assert_int_equal(vs.unmerged, 0);
	CHECK(c->fs, tessera_close(f));
	check_final(c, path, &r);
}

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static void test_concurrent(void **state)
{
	run_with(*state, "/v-concurrent", NO_FAULT);
}

static void test_writer_killed(void **state)
{
	run_with(*state, "/v-writer-killed", KILL_WRITER);
}

static void test_ios_killed(void **state)
{
	run_with(*state, "/v-ios-killed", KILL_IOS);
}

static void test_mds_killed(void **state)
{
	run_with(*state, "/v-mds-killed", KILL_MDS);
}

/* What a file is: versioned by its create, or by its directory's
 * default; plain otherwise. */
static void test_kind(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	tessera_file *f = open_versioned(c->fs, "/v-kind");

	CHECK(c->fs, tessera_file_layout(f, &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_VERSIONED);
	CHECK(c->fs, tessera_close(f));
	CHECK(c->fs, tessera_get_layout(c->fs, "/v-kind", &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_VERSIONED);
	CHECK(c->fs, tessera_open(c->fs, "/v-plain", O_RDWR | O_CREAT, 0644, NULL, &f));
	CHECK(c->fs, tessera_close(f));
	CHECK(c->fs, tessera_get_layout(c->fs, "/v-plain", &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_PLAIN);
	CHECK(c->fs, tessera_mkdir(c->fs, "/vdir", 0755));
	CHECK(c->fs, tessera_set_dir_layout_kind(c->fs, "/vdir", 0, 0, TESSERA_LAYOUT_VERSIONED));
	cluster_put_file(c->fs, "/vdir/a", 0644, "hello");
	CHECK(c->fs, tessera_get_layout(c->fs, "/vdir/a", &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_VERSIONED);
	CHECK(c->fs, tessera_clear_dir_layout(c->fs, "/vdir"));
	cluster_put_file(c->fs, "/vdir/b", 0644, "hello");
	CHECK(c->fs, tessera_get_layout(c->fs, "/vdir/b", &l));
	assert_int_equal(l.kind, TESSERA_LAYOUT_PLAIN);
	/* the versioned calls on a plain file say so */
	CHECK(c->fs, tessera_open(c->fs, "/v-plain", O_RDWR, 0, NULL, &f));
	assert_int_equal(tessera_version_merge(f), -EINVAL);
	CHECK(c->fs, tessera_close(f));
}

static void read_at(tessera_fs *fs, tessera_file *f, uint64_t off, char *out, size_t len)
{
	memset(out, 0, len);
	assert_int_equal(tessera_pread(f, out, len, off), (ssize_t)len);
	(void)fs;
}

/* A snapshot keeps the file as it was: reads through it see the old
 * bytes after later writes and a merge, until it is dropped. */
static void test_snapshots(void **state)
{
	struct cluster *c = *state;
	struct tessera_snapshot snaps[4];
	tessera_file *f = open_versioned(c->fs, "/v-snap"), *old;
	char buf[16];
	uint64_t v;
	size_t n;

	assert_int_equal(tessera_pwrite(f, "first version!", 14, 5000), 14);
	CHECK(c->fs, tessera_snapshot_create(f, "one", &v));
	assert_true(v > 0);
	assert_int_equal(tessera_snapshot_create(f, "one", &v), -EEXIST);
	assert_int_equal(tessera_pwrite(f, "SECOND", 6, 5000), 6);
	CHECK(c->fs, tessera_version_merge(f));
	CHECK(c->fs, tessera_snapshot_list(f, snaps, 4, &n));
	assert_int_equal(n, 1);
	assert_string_equal(snaps[0].name, "one");
	CHECK(c->fs, tessera_open_snapshot(c->fs, "/v-snap", "one", &old));
	read_at(c->fs, old, 5000, buf, 14);
	assert_memory_equal(buf, "first version!", 14);
	read_at(c->fs, f, 5000, buf, 14);
	assert_memory_equal(buf, "SECONDversion!", 14);
	CHECK(c->fs, tessera_close(old));
	CHECK(c->fs, tessera_snapshot_drop(f, "one"));
	assert_int_equal(tessera_open_snapshot(c->fs, "/v-snap", "one", &old), -ENOENT);
	CHECK(c->fs, tessera_close(f));
}

/* Truncate is a version: the size and the bytes past it, for this client
 * and another, before and after a merge and a restart of every daemon. */
static void test_truncate(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/v-trunc");
	struct tessera_stat st;
	char big[20000], buf[20000];

	memset(big, 'a', sizeof(big));
	assert_int_equal(tessera_pwrite(f, big, sizeof(big), 0), (ssize_t)sizeof(big));
	CHECK(c->fs, tessera_ftruncate(f, 3000));
	CHECK(c->fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 3000);
	assert_int_equal(tessera_pwrite(f, "z", 1, 9999), 1);
	CHECK(c->fs, tessera_stat(c->fs, "/v-trunc", &st));
	assert_int_equal(st.size, 10000);
	read_at(c->fs, f, 0, buf, 10000);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(buf[i], i < 3000 ? 'a' : i == 9999 ? 'z' : 0);
	CHECK(c->fs, tessera_close(f));
	restart_mds(c);
	for (int i = 0; i < N_IOS; i++)
		restart_ios(c, i);
	CHECK(c->fs, tessera_stat(c->fs, "/v-trunc", &st));
	assert_int_equal(st.size, 10000);
	CHECK(c->fs, tessera_open(c->fs, "/v-trunc", O_RDONLY, 0, NULL, &f));
	read_at(c->fs, f, 0, buf, 10000);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(buf[i], i < 3000 ? 'a' : i == 9999 ? 'z' : 0);
	CHECK(c->fs, tessera_close(f));
}

/* Another user who may not read the file (mode 0600) still gets its size
 * by stat (a stat's capability takes a read version), but not its bytes. */
static void test_stat_without_read(void **state)
{
	static const struct tessera_cred other = { 1000, 1, { 1000 } };
	struct cluster *c = *state;
	struct tessera_layout l = versioned_layout();
	struct tessera_stat st;
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, "/v-private", O_RDWR | O_CREAT, 0600, &l, &f));
	assert_int_equal(tessera_pwrite(f, "secret", 6, 12345), 6);
	CHECK(c->fs, tessera_close(f));
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &other));
	CHECK(c->fs, tessera_stat(c->fs, "/v-private", &st));
	assert_int_equal(st.size, 12351);
	assert_int_equal(tessera_open(c->fs, "/v-private", O_RDONLY, 0, NULL, &f), -EACCES);
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));
}

/* A write across every storage daemon while one is stopped (SIGSTOP)
 * fails, naming it, and leaves nothing of itself visible: the file reads
 * as its last whole version; once the daemon runs again writes go on,
 * and a merge drops the failed write's records. */
static void test_stopped_daemon(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/v-stopped");
	char a[4 * STRIP], b[4 * STRIP], got[4 * STRIP];

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	assert_int_equal(tessera_pwrite(f, a, sizeof(a), 0), (ssize_t)sizeof(a));
	kill(c->ios[2], SIGSTOP);
	assert_true(tessera_pwrite(f, b, sizeof(b), 0) < 0);
	print_message("with a daemon stopped: %s\n", tessera_errmsg(c->fs));
	assert_non_null(strstr(tessera_errmsg(c->fs), "storage daemon 2"));
	kill(c->ios[2], SIGCONT);
	read_at(c->fs, f, 0, got, sizeof(got));
	assert_memory_equal(got, a, sizeof(a));
	assert_int_equal(tessera_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	read_at(c->fs, f, 0, got, sizeof(got));
	assert_memory_equal(got, b, sizeof(b));
	/* The failed write gave its ID up: a merge drops what it left on the
	 * other daemons (and, once it has run, daemon 2's late part), while
	 * the handle stays open. */
	struct tessera_vlog_state st[N_IOS];
	uint32_t left = 0;
	for (int k = 0; k < 50; k++) {
		CHECK(c->fs, tessera_version_merge(f));
		CHECK(c->fs, tessera_version_logs(f, st, N_IOS));
		left = 0;
		for (int i = 0; i < N_IOS; i++)
			left += st[i].uncommitted;
		if (!left)
			break;
		usleep(100000);
	}
	assert_int_equal(left, 0);
	CHECK(c->fs, tessera_close(f));
}

/* Committed writes survive SIGKILL of every daemon before any merge (the
 * logs and the version server's table are on disk before the replies);
 * an open writer's next write takes a new ID by itself. */
static void test_crash_before_merge(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/v-crash");
	char buf[8];

	assert_int_equal(tessera_pwrite(f, "durable!", 8, 70000), 8);
	restart_mds(c);
	for (int i = 0; i < N_IOS; i++)
		restart_ios(c, i);
	read_at(c->fs, f, 70000, buf, 8);
	assert_memory_equal(buf, "durable!", 8);
	assert_int_equal(tessera_pwrite(f, "again!!!", 8, 70000), 8);
	read_at(c->fs, f, 70000, buf, 8);
	assert_memory_equal(buf, "again!!!", 8);
	CHECK(c->fs, tessera_close(f));
}

/* ---- writer IDs for a job (the MPI driver's: one request for all ranks) */

static tessera_fs *connect_other(const struct cluster *c)
{
	char err[512];
	tessera_fs *fs = NULL;

	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	return fs;
}

static void expect_at(tessera_file *f, uint64_t off, const char *want)
{
	char got[16];

	read_at(NULL, f, off, got, strlen(want));
	assert_memory_equal(got, want, strlen(want));
}

/* A child process takes a block of one ID and waits, its handle open,
 * to be killed: the block, and its pid in *pid. */
static struct tessera_version_ids taker_dies(const struct cluster *c, pid_t *pid)
{
	struct tessera_version_ids ids;
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		tessera_fs *fs = connect_other(c);
		tessera_file *f;

		close(fds[0]);
		memset(&ids, 0, sizeof(ids));
		if (tessera_open(fs, "/v-job", O_RDWR, 0, NULL, &f) ||
		    tessera_version_ids(f, 1, &ids))
			fprintf(stderr, "taker: %s\n", tessera_errmsg(fs));
		if (write(fds[1], &ids, sizeof(ids)) != (ssize_t)sizeof(ids))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &ids, sizeof(ids)), (ssize_t)sizeof(ids));
	close(fds[0]);
	assert_int_equal(ids.count, 1);
	return ids;
}

/* One session takes a block of IDs and another writes under one of them
 * (no VERSION_ID of its own); a block that is not the file's or an index
 * past it are refused, a forged signature is not honoured (the writer
 * takes its own ID); once the taker ends the block, closes its handle or
 * dies, the other's next write takes its own ID and succeeds. */
static void test_job_ids(void **state)
{
	struct cluster *c = *state;
	tessera_fs *other = connect_other(c);
	tessera_file *fa = open_versioned(c->fs, "/v-job"), *fb, *fother;
	pid_t pid;
	struct tessera_version_ids ids, bad, ids2;
	struct tessera_version_state st;

	CHECK(other, tessera_open(other, "/v-job", O_RDWR, 0, NULL, &fb));
	CHECK(c->fs, tessera_version_ids(fa, 3, &ids));
	assert_int_equal(ids.count, 3);
	assert_int_equal(tessera_version_ids(fa, 2, &ids2), -EBUSY);
	CHECK(c->fs, tessera_version_use_id(fa, &ids, 0));
	CHECK(other, tessera_version_use_id(fb, &ids, 1));
	assert_int_equal(tessera_pwrite(fb, "BBBB", 4, 0), 4);
	assert_int_equal(tessera_pwrite(fa, "AAAA", 4, 100), 4);
	assert_int_equal(tessera_pwrite(fb, "bbbb", 4, 8), 4);
	assert_int_equal(tessera_version_own_ids(fa), 0);
	assert_int_equal(tessera_version_own_ids(fb), 0);
	CHECK(c->fs, tessera_version_state(fa, &st));
	assert_int_equal(st.ids, 3);
	assert_int_equal(st.newest, 3);
	expect_at(fa, 0, "BBBB");
	expect_at(fa, 8, "bbbb");
	expect_at(fb, 100, "AAAA");
	/* refused in the library: an index past the block, another file's */
	assert_int_equal(tessera_version_use_id(fb, &ids, 3), -EINVAL);
	bad = ids;
	bad.file ^= 1;
	assert_int_equal(tessera_version_use_id(fb, &bad, 1), -EINVAL);
	/* only the taker ends them */
	assert_int_equal(tessera_version_ids_end(fb, &ids), -EPERM);
	print_message("another's end: %s\n", tessera_errmsg(other));
	/* a forged signature: the commit is refused, the writer takes its own */
	CHECK(other, tessera_open(other, "/v-job", O_RDWR, 0, NULL, &fother));
	bad = ids;
	bad.mac[0] ^= 1;
	CHECK(other, tessera_version_use_id(fother, &bad, 2));
	if (tessera_pwrite(fother, "FFFF", 4, 200) != 4)
		fail_msg("forged: %s", tessera_errmsg(other));
	assert_int_equal(tessera_version_own_ids(fother), 1);
	CHECK(other, tessera_close(fother));
	/* ended by its taker: the next write takes an ID of its own */
	CHECK(c->fs, tessera_version_ids_end(fa, &ids));
	assert_int_equal(tessera_pwrite(fb, "CCCC", 4, 0), 4);
	assert_int_equal(tessera_version_own_ids(fb), 1);
	expect_at(fa, 0, "CCCC");
	/* the taker's close ends its block */
	CHECK(c->fs, tessera_version_ids(fa, 3, &ids2));
	assert_true(ids2.first > ids.first + 2);
	CHECK(other, tessera_version_use_id(fb, &ids2, 2));
	assert_int_equal(tessera_pwrite(fb, "DDDD", 4, 0), 4);
	assert_int_equal(tessera_version_own_ids(fb), 1);
	CHECK(c->fs, tessera_close(fa));
	assert_int_equal(tessera_pwrite(fb, "EEEE", 4, 0), 4);
	assert_int_equal(tessera_version_own_ids(fb), 2);
	expect_at(fb, 0, "EEEE");
	/* the taker dies (SIGKILL, its handle open): its session ends */
	ids = taker_dies(c, &pid);
	CHECK(other, tessera_version_use_id(fb, &ids, 0));
	assert_int_equal(tessera_pwrite(fb, "GGGG", 4, 0), 4);
	assert_int_equal(tessera_version_own_ids(fb), 2);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	for (int i = 0; i < 100 && tessera_version_state(fb, &st) == 0 && st.ids > 1; i++)
		usleep(50000); /* the metadata daemon sees the connection go */
	assert_int_equal(tessera_pwrite(fb, "HHHH", 4, 0), 4);
	assert_int_equal(tessera_version_own_ids(fb), 3);
	expect_at(fb, 0, "HHHH");
	expect_at(fb, 100, "AAAA");
	expect_at(fb, 8, "bbbb");
	CHECK(other, tessera_close(fb));
	tessera_disconnect(other);
}

/* ----------------------------------------------------- calls of many rounds */

/* Set A: LREG regions of LLEN bytes every LSTRIDE, over two objects of
 * LSTRIP strips: 10000 regions and 1.28 MB per object, more than a
 * round's 8192 regions and max_io (1 MiB). Set B: BLEN contiguous bytes
 * at BOFF, 1.5 MiB per object. */
#define LREG 20000
#define LLEN 128
#define LSTRIDE 256
#define LSTRIP 65536
#define LBYTES ((size_t)LREG * LLEN)
#define BOFF (8ull << 20)
#define BLEN ((size_t)3 << 20)
#define LITERS 6

static struct tessera_layout two_objects(void)
{
	struct tessera_layout l;

	memset(&l, 0, sizeof(l));
	l.strip_size = LSTRIP;
	l.count = 2;
	l.kind = TESSERA_LAYOUT_VERSIONED;
	return l;
}

static void fill_tag(uint8_t *buf, size_t len, uint16_t tag)
{
	for (size_t j = 0; j + 1 < len; j += 2) {
		buf[j] = (uint8_t)(tag >> 8);
		buf[j + 1] = (uint8_t)tag;
	}
}

/* The tag all of buf holds, -1 for a mix. */
static int all_tag(const uint8_t *buf, size_t len)
{
	uint16_t first = (uint16_t)(buf[0] << 8 | buf[1]);

	for (size_t j = 2; j + 1 < len; j += 2)
		if ((uint16_t)(buf[j] << 8 | buf[j + 1]) != first)
			return -1;
	return first;
}

struct lset {
	uint64_t offs[LREG], lens[LREG];
};

static void lset_init(struct lset *a)
{
	for (int i = 0; i < LREG; i++) {
		a->offs[i] = (uint64_t)i * LSTRIDE;
		a->lens[i] = LLEN;
	}
}

/* Set A written with `tag`: list I/O, or a datatype (hvector) when
 * `dtype`. */
static ssize_t write_set_a(tessera_file *f, const struct lset *a, uint8_t *buf, uint16_t tag,
			   int dtype)
{
	struct iovec iov = { buf, LBYTES };

	fill_tag(buf, LBYTES, tag);
	if (!dtype)
		return tessera_write_list(f, &iov, 1, a->offs, a->lens, LREG);
	return write_hvector(f, buf, LBYTES, LREG, LLEN, LSTRIDE);
}

/* A writer of large calls: LITERS times set A (list, datatype in turn),
 * then set B (pwrite), each call with its own tag. Exits 0, or 1 with the
 * failure on stderr. */
static void large_writer(const char *conf, const char *path)
{
	char err[512];
	struct lset *a = malloc(sizeof(*a));
	uint8_t *buf = malloc(BLEN > LBYTES ? BLEN : LBYTES);
	tessera_fs *fs;
	tessera_file *f;

	if (!a || !buf || tessera_connect(conf, &fs, err, sizeof(err)) ||
	    tessera_open(fs, path, O_RDWR, 0, NULL, &f))
		_exit(1);
	lset_init(a);
	for (int i = 0; i < LITERS; i++) {
		uint16_t tag = tag_of(2, i);

		ssize_t n = write_set_a(f, a, buf, tag, i % 2);

		fill_tag(buf, BLEN, tag);
		if (n != (ssize_t)LBYTES || tessera_pwrite(f, buf, BLEN, BOFF) != (ssize_t)BLEN) {
			fprintf(stderr, "large writer, call %d: %s\n", i, tessera_errmsg(fs));
			_exit(1);
		}
	}
	_exit(tessera_close(f) ? 1 : 0);
}

/* A reader of sets A and B until `stop` reaches end of file: each read of
 * either must hold one tag. Exit 0: all good; 2: a read held a mix of
 * calls; 1: a read failed. */
static void large_reader(const char *conf, const char *path, int stop)
{
	char err[512], c;
	struct lset *a = malloc(sizeof(*a));
	uint8_t *abuf = malloc(LBYTES), *bbuf = malloc(BLEN);
	int reads = 0, torn = 0, states = 0, last = -2;
	tessera_fs *fs;
	tessera_file *f;

	if (!a || !abuf || !bbuf || tessera_connect(conf, &fs, err, sizeof(err)) ||
	    tessera_open(fs, path, O_RDONLY, 0, NULL, &f))
		_exit(1);
	lset_init(a);
	fcntl(stop, F_SETFL, O_NONBLOCK);
	while (read(stop, &c, 1) < 0 && errno == EAGAIN) {
		struct iovec iov = { abuf, LBYTES };
		int ta, tb;

		if (tessera_read_list(f, &iov, 1, a->offs, a->lens, LREG) != (ssize_t)LBYTES ||
		    tessera_pread(f, bbuf, BLEN, BOFF) != (ssize_t)BLEN) {
			fprintf(stderr, "large reader: %s\n", tessera_errmsg(fs));
			_exit(1);
		}
		reads++;
		ta = all_tag(abuf, LBYTES);
		tb = all_tag(bbuf, BLEN);
		if (ta < 0 || tb < 0) {
			fprintf(stderr, "large reader: read %d of set %s holds a mix of calls\n",
				reads, ta < 0 ? "A" : "B");
			torn++;
		}
		states += ta >= 0 && ta != last;
		last = ta;
	}
	fprintf(stderr, "large reader: %d reads, %d states of set A seen\n", reads, states);
	_exit(torn ? 2 : 0);
}

/* Calls of several rounds (pwrite past max_io per object, list and
 * datatype writes past a round's regions and max_io per object) are one
 * version each: a concurrent reader never sees part of one; the file
 * ends with the last call whole. */
static void test_large_calls(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = two_objects();
	struct lset *a = malloc(sizeof(*a));
	uint8_t *buf = malloc(BLEN > LBYTES ? BLEN : LBYTES);
	int stop[2], status;
	pid_t w, r;
	tessera_file *f;

	assert_true(a && buf);
	lset_init(a);
	CHECK(c->fs, tessera_open(c->fs, "/v-large", O_RDWR | O_CREAT, 0644, &l, &f));
	assert_int_equal(write_set_a(f, a, buf, tag_of(1, 1), 0), (ssize_t)LBYTES);
	fill_tag(buf, BLEN, tag_of(1, 1));
	assert_int_equal(tessera_pwrite(f, buf, BLEN, BOFF), (ssize_t)BLEN);
	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
	r = fork();
	assert_true(r >= 0);
	if (r == 0) {
		close(stop[1]);
		large_reader(c->conf, "/v-large", stop[0]);
	}
	close(stop[0]);
	w = fork();
	assert_true(w >= 0);
	if (w == 0)
		large_writer(c->conf, "/v-large");
	assert_int_equal(waitpid(w, &status, 0), w);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(stop[1]);
	assert_int_equal(waitpid(r, &status, 0), r);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("large reader: exit status %#x (2: a read held part of a call)", status);
	/* The last calls whole, for a reader that comes after. */
	assert_int_equal(tessera_pread(f, buf, BLEN, BOFF), (ssize_t)BLEN);
	assert_int_equal(all_tag(buf, BLEN), tag_of(2, LITERS - 1));
	struct iovec iov = { buf, LBYTES };
	assert_int_equal(tessera_read_list(f, &iov, 1, a->offs, a->lens, LREG), (ssize_t)LBYTES);
	assert_int_equal(all_tag(buf, LBYTES), tag_of(2, LITERS - 1));
	CHECK(c->fs, tessera_close(f));
	free(a);
	free(buf);
}

/* The killed call: KBYTES over two objects, KBYTES / 2 / max_io requests
 * per object. */
#define KBYTES ((size_t)32 << 20)

/* Records (live, of any T) in the logs of slot 0's object. */
static uint32_t slot0_records(tessera_file *f)
{
	struct tessera_vlog_state st[2];

	if (tessera_version_logs(f, st, 2))
		return 0;
	return st[0].uncommitted + st[0].committed;
}

/* One try: a writer child starts a KBYTES pwrite over an old version and
 * is killed (SIGKILL) once slot 0's log holds two of its requests (of 16):
 * 1 if it was killed mid-call, 0 if it finished first (too fast to
 * judge). The file must read as the old version. */
static int kill_mid_call(struct cluster *c, tessera_file *f, uint8_t *buf)
{
	int done[2], status, mid;
	pid_t w;
	char ch;

	assert_int_equal(pipe2(done, O_CLOEXEC), 0);
	w = fork();
	assert_true(w >= 0);
	if (w == 0) {
		tessera_fs *fs;
		tessera_file *wf;
		char err[512];

		close(done[0]);
		if (tessera_connect(c->conf, &fs, err, sizeof(err)) ||
		    tessera_open(fs, "/v-killed", O_RDWR, 0, NULL, &wf))
			_exit(1);
		fill_tag(buf, KBYTES, tag_of(2, 2));
		if (tessera_pwrite(wf, buf, KBYTES, 0) == (ssize_t)KBYTES)
			(void)!write(done[1], "d", 1);
		pause();
		_exit(0);
	}
	close(done[1]);
	fcntl(done[0], F_SETFL, O_NONBLOCK);
	while (slot0_records(f) < 2 && read(done[0], &ch, 1) < 0)
		usleep(200);
	kill(w, SIGKILL);
	assert_int_equal(waitpid(w, &status, 0), w);
	mid = read(done[0], &ch, 1) != 1;
	close(done[0]);
	assert_int_equal(tessera_pread(f, buf, KBYTES, 0), (ssize_t)KBYTES);
	if (mid && all_tag(buf, KBYTES) != tag_of(1, 1))
		fail_msg("a writer killed mid-call left part of it visible: the file holds %s",
			 all_tag(buf, KBYTES) < 0 ? "a mix of versions" : "another version");
	return mid;
}

/* A writer killed between the requests of one call (SIGKILL) leaves
 * nothing of it visible, and once its session has ended the version
 * server's merger drops its records without anyone's merge. */
static void test_large_call_killed(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = two_objects();
	struct tessera_vlog_state st[2];
	uint8_t *buf = malloc(KBYTES);
	int mid = 0;
	tessera_file *f;

	assert_non_null(buf);
	CHECK(c->fs, tessera_open(c->fs, "/v-killed", O_RDWR | O_CREAT, 0644, &l, &f));
	fill_tag(buf, KBYTES, tag_of(1, 1));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tessera_pwrite(f, buf, KBYTES, 0), (ssize_t)KBYTES);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("a %zu MiB pwrite over two objects, one version: %.1f ms\n", KBYTES >> 20,
		      (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	CHECK(c->fs, tessera_version_merge(f)); /* empty logs: the child's records count */
	for (int k = 0; k < 3 && !mid; k++)
		mid = kill_mid_call(c, f, buf);
	if (!mid) {
		free(buf);
		CHECK(c->fs, tessera_close(f));
		skip(); /* every try's call finished before it could be killed */
	}
	/* The killed writer's session ends (its connection closed), and with
	 * it its writer ID#: the version server's merger runs a round for
	 * the file at once, which drops its parts. Nobody here merges. */
	for (int k = 0; k < 100; k++) {
		CHECK(c->fs, tessera_version_logs(f, st, 2));
		if (!st[0].uncommitted && !st[1].uncommitted)
			break;
		usleep(100000);
	}
	if (st[0].uncommitted + st[1].uncommitted)
		fail_msg("10 s after the writer died its %u uncommitted records are still logged",
			 st[0].uncommitted + st[1].uncommitted);
	assert_int_equal(tessera_pread(f, buf, KBYTES, 0), (ssize_t)KBYTES);
	assert_int_equal(all_tag(buf, KBYTES), tag_of(1, 1));
	CHECK(c->fs, tessera_close(f));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kind, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_snapshots, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_truncate, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stat_without_read, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stopped_daemon, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_crash_before_merge, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_job_ids, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_large_calls, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_large_call_killed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_writer_killed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_ios_killed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_mds_killed, setup, cluster_teardown),
	};

	cluster_test_filter();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
