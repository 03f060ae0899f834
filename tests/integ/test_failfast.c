/*
 * test_failfast.c - a storage daemon that is down (issue 24): one of four
 * stopped (SIGSTOP: it does not answer) or killed (SIGKILL: its port
 * refuses connections). stat, read and write of a file on it return within
 * the connect timeout plus a second, spend little CPU (getrusage: waiting
 * sleeps in the kernel), and say which daemon and what state; files on the
 * living daemons work meanwhile; after the daemon is restarted the next
 * call succeeds, with no ping first; a write in flight across a restart is
 * resent and completes.
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
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define CONNECT_MS 1000
#define VICTIM 1
/* What a call to a down daemon may cost: wall clock, and CPU (the issue
 * measured 85 s of system CPU in 120 s of waiting). */
#define BOUND_S (CONNECT_MS / 1000.0 + 1.0)
#define CPU_BOUND_S 0.1

static int setup(void **state)
{
	char extra[128];

	snprintf(extra, sizeof(extra), "connect_timeout_ms = %d\n", CONNECT_MS);
	return cluster_setup_conf(state, CLUSTER_TCP, extra);
}

/* A stopped daemon must run again to die of the harness's SIGTERM. */
static int teardown(void **state)
{
	struct cluster *c = *state;

	for (int i = 0; i < N_IOS; i++)
		if (c->ios[i] > 0)
			kill(c->ios[i], SIGCONT);
	return cluster_teardown(state);
}

/* The calling process's CPU time, user and system. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Per storage daemon, a one-object file on it holding "abc", open. */
struct files {
	char path[N_IOS][32];
	tessera_file *f[N_IOS];
};

static void make_files(struct cluster *c, struct files *fl)
{
	struct tessera_layout l = { .count = 1 };
	int found = 0;

	memset(fl, 0, sizeof(*fl));
	for (int i = 0; found < N_IOS && i < 64; i++) {
		struct tessera_layout got;
		tessera_file *f;
		char path[32];

		snprintf(path, sizeof(path), "/f%d", i);
		CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &l, &f));
		CHECK(c->fs, tessera_file_layout(f, &got));
		if (fl->f[got.servers[0]]) {
			tessera_close(f);
			continue;
		}
		assert_int_equal(tessera_pwrite(f, "abc", 3, 0), 3);
		snprintf(fl->path[got.servers[0]], sizeof(fl->path[0]), "%s", path);
		fl->f[got.servers[0]] = f;
		found++;
	}
	assert_int_equal(found, N_IOS);
}

static void close_files(struct files *fl)
{
	for (int i = 0; i < N_IOS; i++)
		tessera_close(fl->f[i]);
}

enum op { STAT, READ, WRITE };
static const char *const op_names[] = { "stat", "read", "write" };

static long run_op(struct cluster *c, struct files *fl, int ios, enum op op)
{
	struct tessera_stat st;
	char buf[3];

	switch (op) {
	case STAT:
		return tessera_stat(c->fs, fl->path[ios], &st);
	case READ:
		return tessera_pread(fl->f[ios], buf, 3, 0);
	default:
		return tessera_pwrite(fl->f[ios], "xyz", 3, 0);
	}
}

/* op on the victim's file fails within the bounds, naming the daemon and
 * its state (`why`: "no answer", "connection refused"). */
static void fails_fast(struct cluster *c, struct files *fl, enum op op, const char *why)
{
	struct tp_config cfg;
	char err[256], name[200];
	double t0 = now_s(), c0 = cpu_s(), wall, cpu;
	const char *msg;
	long rc;

	rc = run_op(c, fl, VICTIM, op);
	wall = now_s() - t0;
	cpu = cpu_s() - c0;
	msg = tessera_errmsg(c->fs);
	print_message("  %s: %ld after %.3f s, %.3f s CPU: %s\n", op_names[op], rc, wall, cpu,
		      msg);
	assert_int_equal(tp_config_load(c->conf, &cfg, err, sizeof(err)), 0);
	snprintf(name, sizeof(name), "storage daemon %d (%s:%s)", VICTIM, cfg.ios[VICTIM].host,
		 cfg.ios[VICTIM].port);
	if (rc >= 0)
		fail_msg("%s of a file on a down daemon succeeded", op_names[op]);
	if (rc != -EHOSTDOWN && rc != -ECONNREFUSED)
		fail_msg("%s: %ld (%s), expected EHOSTDOWN or ECONNREFUSED", op_names[op], rc,
			 strerror((int)-rc));
	if (!strstr(msg, name) || !strstr(msg, "not reachable since") || !strstr(msg, why))
		fail_msg("\"%s\" does not say \"%s\", \"not reachable since\" and \"%s\"", msg, name,
			 why);
	if (wall > BOUND_S)
		fail_msg("%s took %.3f s, more than %.1f s", op_names[op], wall, BOUND_S);
	if (cpu > CPU_BOUND_S)
		fail_msg("%s cost %.3f s of CPU, more than %.1f s", op_names[op], cpu, CPU_BOUND_S);
}

/* Every op on every living daemon's file works. */
static void living_work(struct cluster *c, struct files *fl)
{
	for (int i = 0; i < N_IOS; i++) {
		if (i == VICTIM)
			continue;
		for (enum op op = STAT; op <= WRITE; op++) {
			double t0 = now_s();
			long rc = run_op(c, fl, i, op);

			if (rc < 0)
				fail_msg("%s on storage daemon %d: %s", op_names[op], i,
					 tessera_errmsg(c->fs));
			if (now_s() - t0 > 1.0)
				fail_msg("%s on living storage daemon %d took %.3f s", op_names[op],
					 i, now_s() - t0);
		}
	}
}

/* Each op on the victim's file succeeds, the first one too. */
static void victim_works(struct cluster *c, struct files *fl)
{
	for (enum op op = STAT; op <= WRITE; op++) {
		long rc = run_op(c, fl, VICTIM, op);

		if (rc < 0)
			fail_msg("%s after the restart: %s", op_names[op], tessera_errmsg(c->fs));
	}
}

static void state_is(struct cluster *c, int ios, enum tessera_server_state want)
{
	struct tessera_server_status st;

	assert_int_equal(tessera_server_status(c->fs, ios, &st), 0);
	print_message("  %s: state %d since %lld (%s)\n", st.name, st.state,
		      (long long)st.since_s, st.why);
	assert_int_equal(st.state, want);
}

/* Start storage daemon VICTIM again (stopped with `sig` first unless it
 * is gone already), calling nothing meanwhile (cluster_restart_ios used
 * to ping every daemon to hide a lost first request): the next call must
 * find the new daemon. */
static void restart_quiet(struct cluster *c, int sig)
{
	char name[16];

	snprintf(name, sizeof(name), "ios%d", VICTIM);
	if (c->ios[VICTIM] > 0) {
		kill(c->ios[VICTIM], sig);
		kill(c->ios[VICTIM], SIGCONT);
		waitpid(c->ios[VICTIM], NULL, 0);
	}
	c->ios[VICTIM] = cluster_spawn(c, "tessera-ios", name, VICTIM);
}

static void respawn(struct cluster *c)
{
	restart_quiet(c, SIGKILL);
}

/* SIGKILL: the port refuses. */
static void test_killed(void **state)
{
	struct cluster *c = *state;
	struct files fl;

	make_files(c, &fl);
	cluster_stop_pid(c->ios[VICTIM], SIGKILL);
	c->ios[VICTIM] = 0;
	for (int round = 0; round < 2; round++)
		for (enum op op = STAT; op <= WRITE; op++)
			fails_fast(c, &fl, op, "connection refused");
	state_is(c, VICTIM, TESSERA_SERVER_DOWN);
	living_work(c, &fl);
	respawn(c);
	victim_works(c, &fl);
	state_is(c, VICTIM, TESSERA_SERVER_UP);
	close_files(&fl);
}

/* The background prober finds VICTIM up again, with no call made: within
 * its longest back-off (5 s) and a connect timeout. */
static void wait_up(struct cluster *c, const char *after)
{
	double t0 = now_s();

	for (;;) {
		struct tessera_server_status st;

		assert_int_equal(tessera_server_status(c->fs, VICTIM, &st), 0);
		if (st.state == TESSERA_SERVER_UP)
			break;
		if (now_s() - t0 > 5 + CONNECT_MS / 1000.0 + 2)
			fail_msg("storage daemon %d not up %.1f s after %s", VICTIM, now_s() - t0,
				 after);
		usleep(50000);
	}
	print_message("  up again %.3f s after %s\n", now_s() - t0, after);
}

/* SIGSTOP: the daemon's kernel accepts, nobody answers. */
static void test_stopped(void **state)
{
	struct cluster *c = *state;
	struct files fl;

	make_files(c, &fl);
	kill(c->ios[VICTIM], SIGSTOP);
	for (int round = 0; round < 2; round++)
		for (enum op op = STAT; op <= WRITE; op++)
			fails_fast(c, &fl, op, "no answer");
	state_is(c, VICTIM, TESSERA_SERVER_DOWN);
	living_work(c, &fl);
	/* Woken again, the same daemon: the background probe finds it
	 * without any call. */
	kill(c->ios[VICTIM], SIGCONT);
	wait_up(c, "SIGCONT");
	victim_works(c, &fl);
	/* Stopped, then killed and started again: the same. */
	kill(c->ios[VICTIM], SIGSTOP);
	fails_fast(c, &fl, READ, "no answer");
	respawn(c);
	wait_up(c, "the restart");
	victim_works(c, &fl);
	close_files(&fl);
}

/* The next call after a restart (SIGTERM, started again at once)
 * succeeds: no request is lost on the old daemon's connection. */
static void test_restart_next_call(void **state)
{
	struct cluster *c = *state;
	struct files fl;

	make_files(c, &fl);
	for (int i = 0; i < 3; i++) {
		double t0;

		restart_quiet(c, SIGTERM);
		t0 = now_s();
		victim_works(c, &fl);
		print_message("  after restart %d: the first calls took %.3f s\n", i, now_s() - t0);
		assert_true(now_s() - t0 < 0.2); /* a probe after 250 ms used to find it */
	}
	close_files(&fl);
}

/* A call that waits 5 s for a stopped daemon (its probes unanswered for
 * connect_timeout_ms) costs milliseconds of CPU: the waiting thread sleeps
 * in the kernel (it polled with a 1 ms timeout and spun on a send the
 * provider would not take). */
static int setup_5s(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP,
				  "timeout_ms = 20000\nconnect_timeout_ms = 5000\n");
}

static void test_wait_costs_no_cpu(void **state)
{
	struct cluster *c = *state;
	struct files fl;
	double t0, c0, wall, cpu;
	char buf[3];
	long rc;

	make_files(c, &fl);
	kill(c->ios[VICTIM], SIGSTOP);
	t0 = now_s();
	c0 = cpu_s();
	rc = tessera_pread(fl.f[VICTIM], buf, 3, 0);
	wall = now_s() - t0;
	cpu = cpu_s() - c0;
	print_message("  read: %ld after %.3f s, %.4f s CPU: %s\n", rc, wall, cpu,
		      tessera_errmsg(c->fs));
	assert_int_equal(rc, -EHOSTDOWN);
	assert_true(wall > 4.5 && wall < 7.0);
	assert_true(cpu < 0.05);
	close_files(&fl);
	/* The background prober is asking the stopped daemon (an AUTH that
	 * may wait 5 s): disconnecting does not wait for it. */
	t0 = now_s();
	tessera_disconnect(c->fs);
	c->fs = NULL;
	print_message("  disconnect took %.3f s\n", now_s() - t0);
	assert_true(now_s() - t0 < 1.0);
}

struct writer {
	tessera_file *f;
	size_t len;
	uint8_t *data;
	long rc;
	char msg[1024];
};

static void *write_one(void *arg)
{
	struct writer *w = arg;

	w->rc = tessera_pwrite(w->f, w->data, w->len, 0);
	if (w->rc < 0)
		snprintf(w->msg, sizeof(w->msg), "%s", tessera_errmsg(tessera_file_fs(w->f)));
	return NULL;
}

/* A write in flight while its daemon is restarted (stopped with the
 * request unanswered, killed, started again) is resent once the new
 * daemon is found, and completes; the bytes are there. */
static void test_write_across_restart(void **state)
{
	struct cluster *c = *state;
	struct writer w = { .len = 1 << 20 };
	uint8_t *back = malloc(w.len);
	struct files fl;
	pthread_t th;
	double t0;

	make_files(c, &fl);
	w.f = fl.f[VICTIM];
	w.data = malloc(w.len);
	for (size_t i = 0; i < w.len; i++)
		w.data[i] = (uint8_t)(i * 7 + 1);
	kill(c->ios[VICTIM], SIGSTOP);
	t0 = now_s();
	pthread_create(&th, NULL, write_one, &w);
	usleep(100000);
	respawn(c);
	pthread_join(th, NULL);
	print_message("  write across the restart: %ld after %.3f s %s\n", w.rc, now_s() - t0,
		      w.msg);
	assert_int_equal(w.rc, (long)w.len);
	assert_int_equal(tessera_pread(w.f, back, w.len, 0), (ssize_t)w.len);
	assert_memory_equal(back, w.data, w.len);
	free(back);
	free(w.data);
	close_files(&fl);
}

/* Two daemons stopped, a fresh connection (no sessions yet): statfs asks
 * every daemon at once and opens the sessions it needs at the same time,
 * so it takes one connect timeout, not one per silent daemon; then each
 * call fails at once. */
static void test_two_stopped(void **state)
{
	struct cluster *c = *state;
	struct tessera_statfs sf;
	char err[256];
	tessera_fs *fs;

	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	kill(c->ios[1], SIGSTOP);
	kill(c->ios[3], SIGSTOP);
	for (int round = 0; round < 2; round++) {
		double t0 = now_s(), wall;
		int rc = tessera_statfs(fs, &sf);

		wall = now_s() - t0;
		print_message("  statfs with 2 stopped: %d after %.3f s: %s\n", rc, wall,
			      tessera_errmsg(fs));
		assert_int_equal(rc, -EHOSTDOWN);
		assert_non_null(strstr(tessera_errmsg(fs), "not reachable since"));
		assert_true(wall < (round ? 0.1 : BOUND_S));
	}
	tessera_disconnect(fs);
}

/* A read that meets an object's end: tessera_pread asks every daemon
 * holding an object of the file for its size, so with one of them stopped
 * it fails (fast); tessera_pread_unclipped asks none and returns the whole
 * length, zeros past the data (the mount's page-cache reads). */
static void test_unclipped_read(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = { .count = N_IOS }, got;
	char data[3901], buf[4096];
	tessera_file *f, *wo;
	double t0, wall;
	int victim;

	memset(data, 'u', sizeof(data));
	CHECK(c->fs, tessera_open(c->fs, "/small", O_CREAT | O_RDWR, 0644, &l, &f));
	CHECK(c->fs, tessera_file_layout(f, &got));
	assert_int_equal(got.count, N_IOS);
	assert_int_equal(tessera_pwrite(f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	assert_int_equal(tessera_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(data));
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(tessera_pread_unclipped(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_memory_equal(buf, data, sizeof(data));
	for (size_t i = sizeof(data); i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0);
	/* the daemon of the second object (4 KiB at 0 touch the first only) */
	victim = (int)got.servers[1];
	kill(c->ios[victim], SIGSTOP);
	memset(buf, 0xee, sizeof(buf));
	t0 = now_s();
	assert_int_equal(tessera_pread_unclipped(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	wall = now_s() - t0;
	assert_memory_equal(buf, data, sizeof(data));
	assert_true(wall < 1.0);
	assert_true(tessera_pread(f, buf, sizeof(buf), 0) < 0);
	print_message("  storage daemon %d stopped: unclipped read in %.3f s; pread: %s\n", victim,
		      wall, tessera_errmsg(c->fs));
	kill(c->ios[victim], SIGCONT);
	/* a write-only descriptor reads nothing */
	CHECK(c->fs, tessera_open(c->fs, "/small", O_WRONLY, 0, NULL, &wo));
	assert_int_equal(tessera_pread_unclipped(wo, buf, sizeof(buf), 0), -EBADF);
	tessera_close(wo);
	tessera_close(f);
}

/* The watcher hears of each change once. */
struct seen {
	int n;
	enum tessera_server_state states[16];
	int index[16];
};

static void watch(const struct tessera_server_status *st, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		s->states[s->n] = st->state;
		s->index[s->n] = st->index;
	}
	s->n++;
}

static void test_watch(void **state)
{
	struct cluster *c = *state;
	struct seen seen = { 0 };
	struct files fl;

	make_files(c, &fl);
	tessera_server_watch(c->fs, watch, &seen);
	cluster_stop_pid(c->ios[VICTIM], SIGKILL);
	c->ios[VICTIM] = 0;
	for (int i = 0; i < 3; i++)
		assert_true(run_op(c, &fl, VICTIM, READ) < 0);
	respawn(c);
	victim_works(c, &fl);
	print_message("  %d changes\n", seen.n);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.index[0], VICTIM);
	assert_int_equal(seen.states[0], TESSERA_SERVER_DOWN);
	assert_int_equal(seen.states[1], TESSERA_SERVER_UP);
	tessera_server_watch(c->fs, NULL, NULL);
	close_files(&fl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_next_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_across_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unclipped_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_costs_no_cpu, setup_5s, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	if (getenv("TESSERA_TEST_FILTER")) /* one test by name, while working on it */
		cmocka_set_test_filter(getenv("TESSERA_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
