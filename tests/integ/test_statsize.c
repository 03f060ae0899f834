/*
 * test_statsize.c - sizes the metadata daemon keeps for files no one
 * writes (docs/design.md, "Sizes kept by the metadata daemon"): a stat of
 * a closed file asks no storage daemon (they are stopped, and it still
 * answers at once) and its fields are the storage daemons' exactly;
 * another client's write and close shows; a file open for writing is
 * asked of the storage daemons (its growing size shows); a writer killed
 * with the file open (counted out when its connection closes), a truncate, a restart of the metadata daemon leave
 * every stat right; an open's reply carries a closed file's size
 * (tessera_open_attrs); an open for reading and writing counts as a
 * writer only from its first write; a file made and left unwritten
 * closes without waiting for the metadata daemon, and the disconnect
 * after it waits for its answer (a bounded time); reports and closes of a hostile
 * session, and a
 * reader's report, change nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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

/* Short capabilities: the metadata daemon takes no size for one lifetime
 * after it starts (writers of before a restart are unknown to it). */
#define LIFETIME_MS 1000

static int setup_on(void **state, const char *provider)
{
	char extra[64];
	int rc;

	snprintf(extra, sizeof(extra), "cap_lifetime_ms = %d\n", LIFETIME_MS);
	rc = cluster_setup_conf(state, provider, extra);
	usleep((LIFETIME_MS + 200) * 1000);
	return rc;
}

static int setup(void **state)
{
	return setup_on(state, "tcp;ofi_rxm");
}

/* The default transport, where a session lives on its connection. */
static int setup_msg(void **state)
{
	return setup_on(state, "tcp;msg");
}

static void put(tessera_fs *fs, const char *path, int flags, size_t len, uint64_t off)
{
	uint8_t *buf = malloc(len);
	tessera_file *f;

	assert_non_null(buf);
	memset(buf, 'x', len);
	CHECK(fs, tessera_open(fs, path, flags, 0644, NULL, &f));
	assert_int_equal(tessera_pwrite(f, buf, len, off), (ssize_t)len);
	CHECK(fs, tessera_close(f));
	free(buf);
}

/* The storage daemons' answer: an open for writing only is a writer at
 * once, so its fstat asks them (and closing it tells the metadata daemon
 * the size). */
static void truth(tessera_fs *fs, const char *path, struct tessera_stat *st)
{
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_WRONLY, 0, NULL, &f));
	CHECK(fs, tessera_fstat(f, st));
	CHECK(fs, tessera_close(f));
}

static void storage_daemons(struct cluster *c, int sig)
{
	for (int i = 0; i < N_IOS; i++)
		assert_int_equal(kill(c->ios[i], sig), 0);
}

/* tessera_stat with every storage daemon stopped (running again before
 * any check can fail). */
static int stat_stopped(struct cluster *c, const char *path, struct tessera_stat *st)
{
	int rc;

	storage_daemons(c, SIGSTOP);
	rc = tessera_stat(c->fs, path, st);
	storage_daemons(c, SIGCONT);
	return rc;
}

/* A stat with every storage daemon stopped: the metadata daemon alone
 * answers it (else it fails after the request timeout). */
static void stat_alone(struct cluster *c, const char *path, struct tessera_stat *st)
{
	double t0 = now_s();
	int rc = stat_stopped(c, path, st);

	if (rc)
		fail_msg("stat %s with the storage daemons stopped: %s", path,
			 tessera_errmsg(c->fs));
	assert_true(now_s() - t0 < TIMEOUT_MS / 1000.0 / 2);
}

static void same_stat(const struct tessera_stat *a, const struct tessera_stat *b)
{
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->blocks, b->blocks);
	assert_int_equal(a->mtime.tv_sec, b->mtime.tv_sec);
	assert_int_equal(a->mtime.tv_nsec, b->mtime.tv_nsec);
	assert_int_equal(a->ctime.tv_sec, b->ctime.tv_sec);
	assert_int_equal(a->ctime.tv_nsec, b->ctime.tv_nsec);
	assert_int_equal(a->handle, b->handle);
}

/* Written and closed: one daemon answers, with the storage daemons'
 * size, blocks and times; an empty new file too. */
static void test_closed_file(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat want, got;

	put(c->fs, "/closed", O_CREAT | O_WRONLY, 300000, 0);
	truth(c->fs, "/closed", &want);
	assert_int_equal(want.size, 300000);
	stat_alone(c, "/closed", &got);
	same_stat(&got, &want);
	/* created, nothing written */
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, "/empty", O_CREAT | O_WRONLY, 0644, NULL, &f));
	CHECK(c->fs, tessera_close(f));
	stat_alone(c, "/empty", &got);
	assert_int_equal(got.size, 0);
	assert_int_equal(got.blocks, 0);
	truth(c->fs, "/empty", &want);
	same_stat(&got, &want);
}

/* Another client writes and closes: the next stat shows it. */
static void test_other_client(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat got;
	char err[512];
	tessera_fs *fs2;

	put(c->fs, "/shared", O_CREAT | O_WRONLY, 1000, 0);
	stat_alone(c, "/shared", &got);
	assert_int_equal(got.size, 1000);
	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	put(fs2, "/shared", O_WRONLY, 5000, 70000);
	tessera_disconnect(fs2);
	stat_alone(c, "/shared", &got);
	assert_int_equal(got.size, 75000);
}

/* Open for writing: every stat asks the storage daemons (a stopped one
 * fails it), and shows what was written so far. */
static void test_open_writer(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;
	char err[512], buf[4096];
	tessera_fs *fs2;
	tessera_file *f;

	memset(buf, 'y', sizeof(buf));
	put(c->fs, "/growing", O_CREAT | O_WRONLY, 100, 0);
	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	CHECK(fs2, tessera_open(fs2, "/growing", O_WRONLY, 0, NULL, &f));
	for (int i = 1; i <= 5; i++) {
		assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), (uint64_t)i * 100000), 4096);
		CHECK(c->fs, tessera_stat(c->fs, "/growing", &st));
		assert_int_equal(st.size, (uint64_t)i * 100000 + 4096);
	}
	assert_true(stat_stopped(c, "/growing", &st) < 0);
	CHECK(fs2, tessera_close(f));
	tessera_disconnect(fs2);
	stat_alone(c, "/growing", &st);
	assert_int_equal(st.size, 500000 + 4096);
}

/* tessera_open and tessera_open_attrs of path (flags) with every storage
 * daemon stopped (running again before any check can fail); the file is
 * closed. */
static int open_attrs_stopped(struct cluster *c, const char *path, int flags,
			      struct tessera_stat *st)
{
	tessera_file *f;
	int rc;

	storage_daemons(c, SIGSTOP);
	rc = tessera_open(c->fs, path, flags, 0644, NULL, &f);
	if (!rc) {
		rc = tessera_open_attrs(f, st);
		(void)tessera_close(f);
	}
	storage_daemons(c, SIGCONT);
	return rc;
}

/* The attributes an open found: a closed file's, size included, come
 * with the open's reply (the storage daemons are stopped), for reading
 * and for writing, and a file this open created is empty; a file another
 * client is writing, and a truncating open, ask the storage daemons and
 * get what they hold. */
static void test_open_attrs(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat want, got;
	char err[512], buf[512];
	tessera_fs *fs2;
	tessera_file *f, *g;

	put(c->fs, "/opened", O_CREAT | O_WRONLY, 300000, 0);
	truth(c->fs, "/opened", &want);
	stat_alone(c, "/opened", &got); /* the size is known */
	for (int i = 0; i < 2; i++) {
		int rc = open_attrs_stopped(c, "/opened", i ? O_RDWR : O_RDONLY, &got);

		if (rc)
			fail_msg("open %s /opened with the storage daemons stopped: %s",
				 i ? "O_RDWR" : "O_RDONLY", tessera_errmsg(c->fs));
		same_stat(&got, &want);
	}
	CHECK(c->fs, tessera_open(c->fs, "/opened-new", O_CREAT | O_EXCL | O_RDWR, 0600, NULL, &f));
	CHECK(c->fs, tessera_open_attrs(f, &got));
	assert_int_equal(got.size, 0);
	assert_int_equal(got.blocks, 0);
	assert_int_equal(got.mode & 07777, 0600);
	CHECK(c->fs, tessera_close(f));

	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	memset(buf, 'w', sizeof(buf));
	CHECK(fs2, tessera_open(fs2, "/opened", O_WRONLY, 0, NULL, &g));
	assert_int_equal(tessera_pwrite(g, buf, sizeof(buf), 400000), (ssize_t)sizeof(buf));
	assert_true(open_attrs_stopped(c, "/opened", O_RDONLY, &got) < 0);
	CHECK(c->fs, tessera_open(c->fs, "/opened", O_RDONLY, 0, NULL, &f));
	CHECK(c->fs, tessera_open_attrs(f, &got));
	assert_int_equal(got.size, 400000 + sizeof(buf));
	CHECK(c->fs, tessera_close(f));
	CHECK(fs2, tessera_close(g));
	tessera_disconnect(fs2);

	CHECK(c->fs, tessera_open(c->fs, "/opened", O_WRONLY | O_TRUNC, 0, NULL, &f));
	CHECK(c->fs, tessera_open_attrs(f, &got));
	assert_int_equal(got.size, 0);
	CHECK(c->fs, tessera_close(f));
}

/* A child that opens path for writing, writes 100 bytes at 20000 and
 * dies (SIGKILL) with the file open. */
static void kill_a_writer(struct cluster *c, const char *path)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char err[512], buf[100] = { 0 };
		tessera_fs *fs2;
		tessera_file *f;

		if (tessera_connect(c->conf, &fs2, err, sizeof(err)) ||
		    tessera_open(fs2, path, O_WRONLY, 0, NULL, &f) ||
		    tessera_pwrite(f, buf, sizeof(buf), 20000) != (ssize_t)sizeof(buf))
			_exit(1);
		kill(getpid(), SIGKILL);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
}

/* A writer killed with the file open, on rxm (where a session is not
 * bound to a connection, so its end is seen only when it idles out):
 * stats go to the storage daemons and stay right, before and after more
 * writes. */
static void test_writer_killed(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;

	put(c->fs, "/killed", O_CREAT | O_WRONLY, 10, 0);
	stat_alone(c, "/killed", &st);
	kill_a_writer(c, "/killed");
	CHECK(c->fs, tessera_stat(c->fs, "/killed", &st));
	assert_int_equal(st.size, 20100);
	put(c->fs, "/killed", O_WRONLY, 100, 30000);
	CHECK(c->fs, tessera_stat(c->fs, "/killed", &st));
	assert_int_equal(st.size, 30100);
	/* (still unknown: the dead writer's count stays) */
	assert_true(stat_stopped(c, "/killed", &st) < 0);
}

/* The same on tcp;msg: the dead writer's connection closes, its session
 * ends with it, and its count goes; a capability's lifetime later the
 * size is known again (before: only after a restart of the daemon). */
static void test_writer_killed_counted_out(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;

	put(c->fs, "/reaped", O_CREAT | O_WRONLY, 10, 0);
	stat_alone(c, "/reaped", &st);
	kill_a_writer(c, "/reaped");
	CHECK(c->fs, tessera_stat(c->fs, "/reaped", &st));
	assert_int_equal(st.size, 20100);
	usleep((LIFETIME_MS + 500) * 1000);
	CHECK(c->fs, tessera_stat(c->fs, "/reaped", &st)); /* asked, and reported */
	stat_alone(c, "/reaped", &st);
	assert_int_equal(st.size, 20100);
}

/* An open for writing that writes nothing closes without asking the
 * storage daemons (they are stopped, and the close is quick), and the
 * size known before it stands. */
static void test_unwritten_close(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;
	tessera_file *f;
	double t0;

	put(c->fs, "/still", O_CREAT | O_WRONLY, 1000, 0);
	stat_alone(c, "/still", &st);
	CHECK(c->fs, tessera_open(c->fs, "/still", O_WRONLY, 0, NULL, &f));
	storage_daemons(c, SIGSTOP);
	t0 = now_s();
	CHECK(c->fs, tessera_close(f));
	storage_daemons(c, SIGCONT);
	assert_true(now_s() - t0 < TIMEOUT_MS / 1000.0 / 2);
	stat_alone(c, "/still", &st);
	assert_int_equal(st.size, 1000);
}

/* The metadata daemon, stopped, is continued after `ms`. */
struct later {
	pid_t pid;
	int ms;
	pthread_t th;
};

static void *cont_later(void *arg)
{
	struct later *l = arg;

	usleep((useconds_t)l->ms * 1000);
	kill(l->pid, SIGCONT);
	return NULL;
}

/* fs makes `path` and closes it unwritten with the metadata daemon
 * stopped (continued `ms` later): the close returns at once (sent
 * behind), and fs's disconnect waits for its answer, or for its
 * deadline; how long that took. */
static double made_closed_behind(struct cluster *c, tessera_fs *fs, const char *path, int ms)
{
	struct later l = { c->mds, ms, 0 };
	tessera_file *f;
	double t0;

	CHECK(fs, tessera_open(fs, path, O_CREAT | O_WRONLY, 0644, NULL, &f));
	assert_int_equal(kill(c->mds, SIGSTOP), 0);
	assert_int_equal(pthread_create(&l.th, NULL, cont_later, &l), 0);
	t0 = now_s();
	CHECK(fs, tessera_close(f));
	assert_true(now_s() - t0 < ms / 1000.0);
	t0 = now_s();
	tessera_disconnect(fs);
	t0 = now_s() - t0;
	pthread_join(l.th, NULL);
	return t0;
}

/* A file made and left unwritten: its close does not wait for the
 * metadata daemon, the disconnect after it does (so the daemon counts
 * the writer out: a stat is answered by it alone), and no longer than
 * the request's deadline when the daemon stays silent. */
static void test_made_close_behind(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;
	char err[512];
	tessera_fs *fs2;
	double took;

	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	took = made_closed_behind(c, fs2, "/made", 500);
	assert_true(took > 0.3 && took < TIMEOUT_MS / 1000.0);
	stat_alone(c, "/made", &st);
	assert_int_equal(st.size, 0);
	assert_int_equal(st.blocks, 0);
	/* silent past the deadline: the disconnect gives up then */
	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	took = made_closed_behind(c, fs2, "/silent", TIMEOUT_MS * 2);
	assert_true(took > TIMEOUT_MS / 1000.0 * 0.9 && took < TIMEOUT_MS * 2 / 1000.0);
	CHECK(c->fs, tessera_stat(c->fs, "/silent", &st));
	assert_int_equal(st.size, 0);
}

/* Another client truncates a file while its maker has it open, unwritten
 * (or an old file's opener, unwritten): the maker's close, which says
 * "size 0" (or "unchanged"), is not taken as the size. */
static void test_truncated_under_writer(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;
	char err[512];
	tessera_fs *fs2;
	tessera_file *f;

	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	CHECK(c->fs, tessera_open(c->fs, "/grown", O_CREAT | O_WRONLY, 0644, NULL, &f));
	CHECK(fs2, tessera_truncate(fs2, "/grown", 1000));
	CHECK(c->fs, tessera_close(f));
	CHECK(c->fs, tessera_stat(c->fs, "/grown", &st));
	assert_int_equal(st.size, 1000);
	CHECK(fs2, tessera_stat(fs2, "/grown", &st));
	assert_int_equal(st.size, 1000);
	/* an old file, opened for writing, not written */
	CHECK(c->fs, tessera_open(c->fs, "/grown", O_WRONLY, 0, NULL, &f));
	CHECK(fs2, tessera_truncate(fs2, "/grown", 3000));
	CHECK(c->fs, tessera_close(f));
	CHECK(fs2, tessera_stat(fs2, "/grown", &st));
	assert_int_equal(st.size, 3000);
	tessera_disconnect(fs2);
}

/* An open for reading and writing is counted as a writer at its first
 * write, not at open: while it only reads, the metadata daemon alone
 * answers everyone's stat (as for a closed file), and its close asks
 * nothing; once it writes, a stat asks the storage daemons and sees the
 * write, and its close gives the new size. The count is asked with the
 * open's capability: one that does not allow writing, or none, is
 * refused. */
static void test_read_write_open(void **state)
{
	struct cluster *c = *state;
	Tessera__CapRequest cr = TESSERA__CAP_REQUEST__INIT;
	Tessera__Capability *got = NULL;
	Tessera__Cred cred = TESSERA__CRED__INIT;
	struct tessera_stat st;
	char err[512], buf[100];
	tessera_fs *fs2;
	tessera_file *f, *r;

	put(c->fs, "/rw", O_CREAT | O_WRONLY, 1000, 0);
	stat_alone(c, "/rw", &st);
	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("second client: %s", err);
	CHECK(fs2, tessera_open(fs2, "/rw", O_RDWR, 0, NULL, &f));
	assert_int_equal(tessera_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	stat_alone(c, "/rw", &st);    /* no writer counted */
	assert_int_equal(st.size, 1000);
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), 5000), (ssize_t)sizeof(buf));
	assert_true(stat_stopped(c, "/rw", &st) < 0); /* a writer now */
	CHECK(c->fs, tessera_stat(c->fs, "/rw", &st));
	assert_int_equal(st.size, 5100);
	CHECK(fs2, tessera_close(f));
	stat_alone(c, "/rw", &st);
	assert_int_equal(st.size, 5100);

	/* opened and closed without a write: nothing to tell at the close */
	CHECK(fs2, tessera_open(fs2, "/rw", O_RDWR, 0, NULL, &f));
	storage_daemons(c, SIGSTOP);
	CHECK(fs2, tessera_close(f));
	storage_daemons(c, SIGCONT);
	stat_alone(c, "/rw", &st);
	assert_int_equal(st.size, 5100);
	tessera_disconnect(fs2);

	/* the count asked without a capability, or with a read-only one */
	cr.cred = &cred;
	cr.file = st.handle;
	cr.rights = TP_CAP_WRITE;
	cr.writer_only = 1;
	assert_int_equal(raw_mds_cap(c, &cr, &got, err, sizeof(err)), -EACCES);
	print_message("count a writer without a capability: %s\n", err);
	CHECK(c->fs, tessera_open(c->fs, "/rw", O_RDONLY, 0, NULL, &r));
	cr.proof = file_cap(r);
	assert_int_equal(raw_mds_cap(c, &cr, &got, err, sizeof(err)), -EACCES);
	print_message("count a writer with a read-only capability: %s\n", err);
	assert_non_null(strstr(err, "does not allow writing"));
	protobuf_c_message_free_unpacked(&cr.proof->base, NULL);
	CHECK(c->fs, tessera_close(r));
	stat_alone(c, "/rw", &st);
	assert_int_equal(st.size, 5100);
}

/* Truncate by name (library), then stat; and open with O_TRUNC. */
static void test_truncate(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st, want;
	tessera_file *f;

	put(c->fs, "/trunc", O_CREAT | O_WRONLY, 200000, 0);
	stat_alone(c, "/trunc", &st);
	assert_int_equal(st.size, 200000);
	CHECK(c->fs, tessera_truncate(c->fs, "/trunc", 3000));
	stat_alone(c, "/trunc", &st);
	assert_int_equal(st.size, 3000);
	truth(c->fs, "/trunc", &want);
	same_stat(&st, &want);
	CHECK(c->fs, tessera_open(c->fs, "/trunc", O_WRONLY | O_TRUNC, 0, NULL, &f));
	CHECK(c->fs, tessera_close(f));
	stat_alone(c, "/trunc", &st);
	assert_int_equal(st.size, 0);
}

static void restart_mds(struct cluster *c)
{
	struct tessera_ping p[1 + N_IOS];

	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
		if (!p[0].status)
			return;
	}
	fail_msg("the metadata daemon does not answer after its restart");
}

/* A restart forgets every size: stats ask the storage daemons (also of a
 * file a writer of before the restart still writes) until the writers
 * it cannot count have had to renew, then it knows them again. */
static void test_mds_restart(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;
	char buf[1000] = { 0 };
	tessera_file *f;

	put(c->fs, "/restart", O_CREAT | O_WRONLY, 4000, 0);
	stat_alone(c, "/restart", &st);
	CHECK(c->fs, tessera_open(c->fs, "/restart", O_WRONLY, 0, NULL, &f));
	restart_mds(c);
	CHECK(c->fs, tessera_stat(c->fs, "/restart", &st));
	assert_int_equal(st.size, 4000);
	assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), 9000), 1000);
	CHECK(c->fs, tessera_stat(c->fs, "/restart", &st));
	assert_int_equal(st.size, 10000);
	CHECK(c->fs, tessera_close(f));
	CHECK(c->fs, tessera_stat(c->fs, "/restart", &st));
	assert_int_equal(st.size, 10000);
	usleep((LIFETIME_MS + 300) * 1000);
	CHECK(c->fs, tessera_stat(c->fs, "/restart", &st)); /* reported */
	stat_alone(c, "/restart", &st);
	assert_int_equal(st.size, 10000);
}

/* Two writers at once: neither close knows the size is final, so the
 * file is unknown until a stat reports it; a hostile report (a guessed
 * token, a huge size) and a close without a capability change nothing. */
static void test_hostile_reports(void **state)
{
	struct cluster *c = *state;
	Tessera__SizeReportRequest rep = TESSERA__SIZE_REPORT_REQUEST__INIT;
	Tessera__CloseWriteRequest cw = TESSERA__CLOSE_WRITE_REQUEST__INIT;
	struct tessera_stat st;
	tessera_file *a, *b;
	char msg[512];
	struct raw raw;

	put(c->fs, "/two", O_CREAT | O_WRONLY, 10, 0);
	CHECK(c->fs, tessera_open(c->fs, "/two", O_WRONLY, 0, NULL, &a));
	CHECK(c->fs, tessera_open(c->fs, "/two", O_WRONLY, 0, NULL, &b));
	assert_int_equal(tessera_pwrite(a, "abc", 3, 5000), 3);
	CHECK(c->fs, tessera_close(a));
	CHECK(c->fs, tessera_close(b));
	raw_open_mds(c, &raw);
	CHECK(c->fs, tessera_stat(c->fs, "/two", &st));
	rep.file = st.handle;
	rep.size_token = 0x1234567890abcdefull;
	rep.size = UINT64_MAX;
	assert_int_equal(raw_request(&raw, TP_OP_SIZE_REPORT, &rep.base, NULL, 0, msg,
				     sizeof(msg)), 0);
	cw.file = st.handle;
	cw.write_token = 1;
	assert_int_not_equal(raw_request(&raw, TP_OP_CLOSE_WRITE, &cw.base, NULL, 0, msg,
					 sizeof(msg)), 0);
	print_message("close without a capability: %s\n", msg);
	assert_non_null(strstr(msg, "permission denied"));
	tnet_close(raw.net);
	stat_alone(c, "/two", &st);
	assert_int_equal(st.size, 5003);
}

/* Two writers at once leave the size unknown; a stat by a user who may
 * only read the file is answered by the storage daemons, and its report
 * is not taken (a reader could make everyone's stat wrong); a writer's
 * is. */
static void test_reader_report(void **state)
{
	static const struct tessera_cred reader = { 1000, 1, { 1000 } };
	struct cluster *c = *state;
	struct tessera_stat st;
	tessera_file *a, *b;

	put(c->fs, "/ro", O_CREAT | O_WRONLY, 10, 0);
	CHECK(c->fs, tessera_open(c->fs, "/ro", O_WRONLY, 0, NULL, &a));
	CHECK(c->fs, tessera_open(c->fs, "/ro", O_WRONLY, 0, NULL, &b));
	assert_int_equal(tessera_pwrite(b, "abc", 3, 700), 3);
	CHECK(c->fs, tessera_close(a));
	CHECK(c->fs, tessera_close(b));
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &reader));
	CHECK(c->fs, tessera_stat(c->fs, "/ro", &st));
	assert_int_equal(st.size, 703);
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));
	assert_true(stat_stopped(c, "/ro", &st) < 0);
	CHECK(c->fs, tessera_stat(c->fs, "/ro", &st));
	stat_alone(c, "/ro", &st);
	assert_int_equal(st.size, 703);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_closed_file, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_other_client, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_open_writer, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_open_attrs, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_writer_killed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_writer_killed_counted_out, setup_msg,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_unwritten_close, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_made_close_behind, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_truncated_under_writer, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_read_write_open, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_truncate, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_mds_restart, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_hostile_reports, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_reader_report, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
