/*
 * test_vmerge.c - the version server's merger (issue 25, gap 2;
 * docs/design.md "Versioning (chapter 8)", Merges), on real daemons.
 *
 * Nobody syncs or closes the versioned files here while the test watches:
 * the metadata daemon must merge them by itself. After the idle time
 * (vmerge_idle_ms, set short); at once when a burst of commits passes
 * vmerge_commits, or when a storage daemon's write reply says a log is
 * past vmerge_log_percent of a limit (the idle time then set long, so
 * only the threshold can explain a merge), with every write succeeding;
 * never past a read in progress (a reader that read once holds its read
 * version until its next read or close); through a storage daemon
 * stopped under the merger's request, killed and started again; and
 * after the version server itself restarted. Every file then reads back
 * as its last writes.
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"

#define STRIP 4096
#define WIDE (N_IOS * STRIP)   /* one write over every storage daemon */

static tessera_file *open_versioned(tessera_fs *fs, const char *path)
{
	struct tessera_layout l;
	tessera_file *f = NULL;

	memset(&l, 0, sizeof(l));
	l.strip_size = STRIP;
	l.count = N_IOS;
	l.kind = TESSERA_LAYOUT_VERSIONED;
	CHECK(fs, tessera_open(fs, path, O_RDWR | O_CREAT, 0644, &l, &f));
	return f;
}

static struct tessera_version_state state_of(tessera_fs *fs, tessera_file *f)
{
	struct tessera_version_state st;

	CHECK(fs, tessera_version_state(f, &st));
	return st;
}

/* Wait up to secs for f's unmerged commits to fall to `most` or fewer;
 * the state last seen. */
static struct tessera_version_state wait_unmerged(tessera_fs *fs, tessera_file *f,
						  uint32_t most, double secs)
{
	double end = now_s() + secs;
	struct tessera_version_state st = state_of(fs, f);

	while (st.unmerged > most && now_s() < end) {
		usleep(50 * 1000);
		st = state_of(fs, f);
	}
	return st;
}

/* Versions from..to-1 of the file's first WIDE bytes: version i filled
 * with 'a' + i. */
static void writes_wide(tessera_file *f, int from, int to)
{
	char buf[WIDE];

	for (int i = from; i < to; i++) {
		memset(buf, 'a' + i, sizeof(buf));
		assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	}
}

static void reads_wide(tessera_file *f, char fill)
{
	char buf[WIDE];

	assert_int_equal(tessera_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		if (buf[i] != fill)
			fail_msg("byte %zu is %#x, not %#x", i, buf[i], fill);
}

/* Every object's log holds no committed record: all merged. */
static void logs_merged(tessera_fs *fs, tessera_file *f)
{
	struct tessera_vlog_state logs[N_IOS];

	CHECK(fs, tessera_version_logs(f, logs, N_IOS));
	for (int i = 0; i < N_IOS; i++)
		assert_int_equal(logs[i].committed, 0);
}

/* Wait (up to secs) until the n versions writes_wide made are merged on
 * every object; they read back as the last; close. */
static void all_merged(tessera_fs *fs, tessera_file *f, int n, double secs)
{
	struct tessera_version_state st = wait_unmerged(fs, f, 0, secs);

	assert_int_equal(st.unmerged, 0);
	assert_int_equal(st.merged, n);
	logs_merged(fs, f);
	reads_wide(f, (char)('a' + n - 1));
	CHECK(fs, tessera_close(f));
}

static int setup_idle(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "vmerge_idle_ms = 500\n");
}

/* Versioned writes with no fsync and no close are merged once no commit
 * came for the idle time. */
static void test_idle(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/idle");
	double t0;

	writes_wide(f, 0, 10);
	assert_int_equal(state_of(c->fs, f).newest, 10);
	t0 = now_s();
	all_merged(c->fs, f, 10, 10);
	print_message("merged by the version server within %.2f s of the last commit\n",
		      now_s() - t0);
}

/* A read in progress stops the merge below its version: a second client
 * reads once (its read version is held until its next read or close),
 * the writer goes on; only what the read saw is merged until the reader
 * closes. */
static void test_read_in_progress(void **state)
{
	struct cluster *c = *state;
	tessera_fs *other = cluster_connect_more(c->conf);
	tessera_file *f = open_versioned(c->fs, "/pinned"), *r;
	struct tessera_version_state st;

	writes_wide(f, 0, 5);
	CHECK(other, tessera_open(other, "/pinned", O_RDONLY, 0, NULL, &r));
	reads_wide(r, 'e');
	writes_wide(f, 5, 10);
	st = wait_unmerged(c->fs, f, 5, 10);
	usleep(1500 * 1000); /* three idle times more: nothing past the read */
	st = state_of(c->fs, f);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.merged, 5);
	assert_int_equal(st.unmerged, 5);
	CHECK(other, tessera_close(r));
	all_merged(c->fs, f, 10, 10);
	tessera_disconnect(other);
}

/* A storage daemon stopped (SIGSTOP) while the merger's request to it is
 * in flight, then killed and started again over its disk: the file is
 * merged on every object once it is back. */
static void test_ios_restarted(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/restarted");
	struct tessera_version_state st;

	writes_wide(f, 0, 6);
	kill(c->ios[1], SIGSTOP);
	usleep(1500 * 1000); /* the idle time passed: the merge is under way */
	st = state_of(c->fs, f);
	assert_int_equal(st.unmerged, 6); /* storage daemon 1 holds them all */
	cluster_stop_pid(c->ios[1], SIGKILL);
	c->ios[1] = cluster_spawn(c, "tessera-ios", "ios1", 1);
	all_merged(c->fs, f, 6, 30);
}

/* The version server killed (SIGKILL) with unmerged commits and started
 * again: its merger finds the file in the store and merges it after the
 * idle time, though nobody commits to it again. */
static void test_mds_restarted(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/mds-restarted");

	writes_wide(f, 0, 4);
	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	all_merged(c->fs, f, 4, 10);
}

static int setup_commits(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "vmerge_idle_ms = 600000\n"
				  "vmerge_commits = 32\n");
}

/* One small write after another, and the count of unmerged commits
 * observed; each write must succeed. */
static uint32_t burst(tessera_fs *fs, tessera_file *f, int n)
{
	uint32_t most = 0;

	for (int i = 0; i < n; i++) {
		char b[64];
		struct tessera_version_state st;

		memset(b, (char)('A' + i % 26), sizeof(b));
		/* each write on the next object: all four logs grow */
		assert_int_equal(tessera_pwrite(f, b, sizeof(b), (uint64_t)(i % N_IOS) * STRIP +
					       (uint64_t)(i / N_IOS) * 64 % STRIP), 64);
		if (i % 16 == 15 && (st = state_of(fs, f)).unmerged > most)
			most = st.unmerged;
	}
	return most;
}

/* What burst(n) wrote reads back (the file ends with its last write's
 * end). */
static void reads_burst(tessera_file *f, int n)
{
	char want[WIDE], got[WIDE];
	uint64_t size = 0;

	memset(want, 0, sizeof(want));
	for (int i = 0; i < n; i++) {
		uint64_t off = (uint64_t)(i % N_IOS) * STRIP + (uint64_t)(i / N_IOS) * 64 % STRIP;

		memset(want + off, (char)('A' + i % 26), 64);
		if (off + 64 > size)
			size = off + 64;
	}
	assert_int_equal(tessera_pread(f, got, sizeof(got), 0), (ssize_t)size);
	assert_memory_equal(got, want, size);
}

/* A burst of commits past vmerge_commits is merged while it goes on (the
 * idle time is ten minutes: only the threshold explains a merge), and
 * every write succeeds. */
static void test_commit_threshold(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/burst");
	struct tessera_version_state st;
	uint32_t most = burst(c->fs, f, 256);

	st = wait_unmerged(c->fs, f, 31, 10);
	print_message("256 commits, at most %u unmerged seen meanwhile; now merged up to %llu, "
		      "%u unmerged\n", most, (unsigned long long)st.merged, st.unmerged);
	assert_true(st.merged > 0);
	assert_true(st.unmerged < 32);
	assert_true(most < 4 * 32); /* 32 here: rounds go on at each commit turn */
	reads_burst(f, 256);
	CHECK(c->fs, tessera_close(f));
}

static int setup_log_half(void **state)
{
	/* 1 % of a log's 4096 records: past it at the 41st */
	return cluster_setup_conf(state, CLUSTER_TCP, "vmerge_idle_ms = 600000\n"
				  "vmerge_log_percent = 1\n");
}

/* A storage daemon's write reply says a log passed vmerge_log_percent of
 * its record limit; the client's commit passes it on, and the version
 * server merges the file (commits far below vmerge_commits, no idle
 * time). */
static void test_log_half(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_versioned(c->fs, "/half");
	struct tessera_version_state st;
	double end;

	(void)burst(c->fs, f, 240); /* 60 records a log */
	/* a round merges every object of the file: wait for the floor */
	for (end = now_s() + 10; (st = state_of(c->fs, f)).merged == 0 && now_s() < end;)
		usleep(50 * 1000);
	print_message("240 commits, half-full logs reported: merged up to %llu, %u unmerged\n",
		      (unsigned long long)st.merged, st.unmerged);
	assert_true(st.merged > 0);
	reads_burst(f, 240);
	CHECK(c->fs, tessera_close(f));
}

int main(void)
{
	/* each test with the config it needs: a short idle time, or a long
	 * one and a low threshold */
#define T_(fn, conf) cmocka_unit_test_setup_teardown(fn, conf, cluster_teardown)
	const struct CMUnitTest tests[] = {
		T_(test_idle, setup_idle),
		T_(test_read_in_progress, setup_idle),
		T_(test_ios_restarted, setup_idle),
		T_(test_mds_restarted, setup_idle),
		T_(test_commit_threshold, setup_commits),
		T_(test_log_half, setup_log_half),
	};
#undef T_

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
