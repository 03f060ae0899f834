/*
 * test_iopool.c - a storage daemon's disk workers (io_threads, ios_pool.c).
 *
 * A fault disk's slow rule (tessera-ios -F slow:HANDLE@1=MS) holds the
 * first disk write of one object for a while, so the requests that come
 * meanwhile show what the daemon does with them:
 *
 *   - on the same object they wait their turn: a write sent later by
 *     another client lands after it (the file ends with the later bytes)
 *     and a read sent later sees the slow write's bytes. A pool that ran
 *     requests in any order would end with the slow write's bytes and
 *     read a hole. Run with workers and inline (io_threads = 0).
 *   - on another object they go on: its write is answered while the slow
 *     one still waits (with the disk work inside the event loop it would
 *     be answered after).
 *   - a client killed while its write waits, and a daemon stopped with
 *     writes queued (its exit status: 0, and under ASan no leak), leave
 *     a daemon that serves, and the objects whole.
 *   - an injected disk error still reaches the client naming the object
 *     and the storage daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#define STRIP 65536
#define SLOW_MS 1000 /* well inside the requests' deadline (TIMEOUT_MS) */
/* How far apart two threads' answers may wake (test_object_order). */
#define WAKE_SLACK_S 0.05

static int setup_pool(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "io_threads = 4\n");
}

static int setup_inline(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "io_threads = 0\n");
}

/* A file with one object on each storage daemon; *handle: its object on
 * storage daemon 0, *off: where that object's first strip lies. */
static tessera_file *create(tessera_fs *fs, const char *path, uint64_t *handle, uint64_t *off)
{
	struct tessera_layout l = { .strip_size = STRIP, .count = N_IOS };
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_CREAT | O_RDWR | O_TRUNC, 0644, &l, &f));
	assert_int_equal(tessera_file_layout(f, &l), 0);
	for (uint32_t i = 0; i < l.count; i++)
		if (l.servers[i] == 0) {
			*handle = l.handles[i];
			*off = (uint64_t)i * STRIP;
			return f;
		}
	fail_msg("%s has no object on storage daemon 0", path);
	return NULL;
}

/* Storage daemon 0 again, its first disk read or write of `handle` slow. */
static void slow_object(struct cluster *c, uint64_t handle)
{
	char spec[80];

	snprintf(spec, sizeof(spec), "slow:%" PRIx64 "@1=%d", handle, SLOW_MS);
	cluster_restart_ios(c, 0, spec);
}

/* A write in a thread of its own: when it was answered, and how. */
struct bg_write {
	tessera_file *f;
	uint64_t off;
	uint8_t fill;
	pthread_t thread;
	ssize_t rc;
	double done;
};

static void *bg_write_run(void *arg)
{
	struct bg_write *w = arg;
	static __thread uint8_t buf[STRIP];

	memset(buf, w->fill, sizeof(buf));
	w->rc = tessera_pwrite(w->f, buf, STRIP, w->off);
	w->done = now_s();
	return NULL;
}

static void bg_write_start(struct bg_write *w, tessera_file *f, uint64_t off, uint8_t fill)
{
	*w = (struct bg_write){ .f = f, .off = off, .fill = fill };
	assert_int_equal(pthread_create(&w->thread, NULL, bg_write_run, w), 0);
}

static void expect_fill(tessera_file *f, uint64_t off, uint8_t fill, const char *what)
{
	static uint8_t buf[STRIP];

	assert_int_equal(tessera_pread(f, buf, STRIP, off), STRIP);
	for (size_t i = 0; i < STRIP; i++)
		if (buf[i] != fill)
			fail_msg("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, buf[i], fill);
}

/* Storage daemon 0 is up and answers. */
static void serving(struct cluster *c)
{
	struct tessera_ping p[1 + N_IOS];

	assert_int_equal(waitpid(c->ios[0], NULL, WNOHANG), 0);
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(p[1].status, 0);
}

/* Client 1's write of 'A' is held on the disk; client 2 then reads the
 * strip and writes 'B' over it. The read sees 'A' and the file ends 'B':
 * arrival order. */
static void test_object_order(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs2;
	tessera_file *f, *f2;
	struct bg_write a;
	uint64_t h, off;
	static uint8_t buf[STRIP], got[STRIP];
	char err[256];
	ssize_t k;
	double read_done, b_done;

	f = create(c->fs, "/order", &h, &off);
	slow_object(c, h);
	if (tessera_connect(c->conf, &fs2, err, sizeof(err)))
		fail_msg("connect: %s", err);
	CHECK(fs2, tessera_open(fs2, "/order", O_RDWR, 0, NULL, &f2));
	bg_write_start(&a, f, off, 'A');
	usleep(300 * 1000); /* A's request is on the daemon, its write held */
	k = tessera_pread(f2, got, STRIP, off);
	read_done = now_s();
	memset(buf, 'B', sizeof(buf));
	assert_int_equal(tessera_pwrite(f2, buf, STRIP, off), STRIP);
	b_done = now_s();
	pthread_join(a.thread, NULL);
	assert_int_equal(a.rc, STRIP);
	print_message("slow write answered at +0, the read %+.0f ms, the write after it "
		      "%+.0f ms\n", (read_done - a.done) * 1e3, (b_done - a.done) * 1e3);
	assert_int_equal(k, STRIP);
	for (size_t i = 0; i < STRIP; i++)
		if (got[i] != 'A')
			fail_msg("the read sent after the slow write got byte %zu = 0x%02x, not "
				 "the write's 'A': it overtook the write", i, got[i]);
	/* The daemon answers A, then the read, then B; the answers wake two
	 * client threads in whatever order the kernel runs them (the read's
	 * came back 1 ms before A's once, on a busy machine). A read that
	 * overtook the held write would be back some 700 ms before it. */
	assert_true(read_done >= a.done - WAKE_SLACK_S);
	assert_true(b_done >= a.done - WAKE_SLACK_S);
	expect_fill(f, off, 'B', "the object after A then B");
	tessera_close(f2);
	tessera_disconnect(fs2);
	tessera_close(f);
	serving(c);
}

/* While one object's write is held on the disk, another object's write on
 * the same daemon is answered. */
static void test_objects_parallel(void **state)
{
	struct cluster *c = *state;
	tessera_file *f, *g;
	struct bg_write slow, other;
	uint64_t hf, hg, offf, offg;

	f = create(c->fs, "/held", &hf, &offf);
	g = create(c->fs, "/free", &hg, &offg);
	assert_true(hf != hg);
	slow_object(c, hf);
	bg_write_start(&slow, f, offf, 'S');
	usleep(300 * 1000);
	bg_write_start(&other, g, offg, 'O');
	pthread_join(other.thread, NULL);
	pthread_join(slow.thread, NULL);
	assert_int_equal(slow.rc, STRIP);
	assert_int_equal(other.rc, STRIP);
	print_message("the other object's write answered %.0f ms before the held one\n",
		      (slow.done - other.done) * 1e3);
	if (other.done >= slow.done)
		fail_msg("the other object's write waited for the held one (answered %.0f ms "
			 "after it): the objects were not served in parallel",
			 (other.done - slow.done) * 1e3);
	expect_fill(f, offf, 'S', "the held object");
	expect_fill(g, offg, 'O', "the other object");
	tessera_close(f);
	tessera_close(g);
	serving(c);
}

/* A client is killed while its write waits behind a held one: the daemon
 * goes on, and the object holds whole writes only. */
static void test_client_gone(void **state)
{
	struct cluster *c = *state;
	tessera_file *f;
	struct bg_write held;
	uint64_t h, off;
	int status;
	pid_t child;

	f = create(c->fs, "/gone", &h, &off);
	slow_object(c, h);
	bg_write_start(&held, f, off, 'H');
	usleep(200 * 1000);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		static uint8_t buf[STRIP];
		tessera_fs *fs;
		tessera_file *cf;
		char err[256];

		if (tessera_connect(c->conf, &fs, err, sizeof(err)) ||
		    tessera_open(fs, "/gone", O_RDWR, 0, NULL, &cf))
			_exit(3);
		memset(buf, 'K', sizeof(buf));
		(void)tessera_pwrite(cf, buf, STRIP, off); /* killed meanwhile */
		_exit(0);
	}
	usleep(300 * 1000); /* its write is queued behind the held one */
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	pthread_join(held.thread, NULL);
	assert_int_equal(held.rc, STRIP);
	serving(c);
	/* The killed client's write either ran after the held one or did not
	 * arrive: the strip is all 'H' or all 'K'. */
	{
		static uint8_t buf[STRIP];

		assert_int_equal(tessera_pread(f, buf, STRIP, off), STRIP);
		assert_true(buf[0] == 'H' || buf[0] == 'K');
		expect_fill(f, off, buf[0], "the object after a client was killed");
	}
	tessera_close(f);
}

/* The daemon is stopped with a write held and others queued behind it:
 * it exits cleanly (0: no crash; under ASan, no leak), and a restart
 * serves the object, holding whole strips. */
static void test_stop_with_queued_work(void **state)
{
	struct cluster *c = *state;
	tessera_file *f;
	struct bg_write w[3];
	uint64_t h, off;
	int status;
	pid_t ios;

	f = create(c->fs, "/stopped", &h, &off);
	slow_object(c, h);
	for (int i = 0; i < 3; i++) {
		bg_write_start(&w[i], f, off, (uint8_t)('1' + i));
		usleep(100 * 1000);
	}
	ios = c->ios[0];
	kill(ios, SIGTERM);
	assert_int_equal(waitpid(ios, &status, 0), ios);
	c->ios[0] = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the storage daemon stopped with work queued: %s %d",
			 WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	cluster_restart_ios(c, 0, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(w[i].thread, NULL); /* answered or failed: either will do */
	{
		static uint8_t buf[STRIP];

		assert_int_equal(tessera_pread(f, buf, STRIP, off), STRIP);
		expect_fill(f, off, buf[0], "the object after a stop");
	}
	tessera_close(f);
	serving(c);
}

/* A disk error on a worker reaches the client as it did inline: the
 * errno, the object, the storage daemon. */
static void test_fault_on_worker(void **state)
{
	struct cluster *c = *state;
	static uint8_t buf[STRIP];
	struct tp_config cfg;
	tessera_file *f;
	uint64_t h, off;
	char spec[80], object[40], server[200], cerr[256];
	const char *msg;

	f = create(c->fs, "/full", &h, &off);
	snprintf(spec, sizeof(spec), "write:%" PRIx64 "@1=ENOSPC", h);
	cluster_restart_ios(c, 0, spec);
	memset(buf, 'F', sizeof(buf));
	assert_int_equal(tessera_pwrite(f, buf, STRIP, off), -ENOSPC);
	msg = tessera_errmsg(c->fs);
	print_message("  %s\n", msg);
	assert_int_equal(tp_config_load(c->conf, &cfg, cerr, sizeof(cerr)), 0);
	snprintf(server, sizeof(server), "storage daemon 0 (%s:%s)", cfg.ios[0].host,
		 cfg.ios[0].port);
	snprintf(object, sizeof(object), "object %016" PRIx64, h);
	if (!strstr(msg, server) || !strstr(msg, object) || !strstr(msg, strerror(ENOSPC)))
		fail_msg("\"%s\" does not name \"%s\", \"%s\" and \"%s\"", msg, server, object,
			 strerror(ENOSPC));
	/* The next write goes through. */
	assert_int_equal(tessera_pwrite(f, buf, STRIP, off), STRIP);
	expect_fill(f, off, 'F', "the object after the failed write");
	tessera_close(f);
	serving(c);
}

/* Storage daemon 0's counts of queued data kept in its receive buffer and
 * copied out of it. */
static void parked_data(struct cluster *c, uint64_t *kept, uint64_t *copied)
{
	struct tessera_ping p[1 + N_IOS];

	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(p[1].status, 0);
	*kept = p[1].parked_data_kept;
	*copied = p[1].parked_data_copied;
}

/* A 1 MiB write queued for a worker keeps its data in the receive buffer
 * it arrived in (that buffer is reposted with new memory); a small one is
 * copied. Both reach the disk whole. */
static void test_bulk_data_kept(void **state)
{
	enum { BIG = 1 << 20, SMALL = 4096 };
	struct cluster *c = *state;
	struct tessera_layout l = { .strip_size = BIG, .count = N_IOS };
	uint64_t kept0, copied0, kept1, copied1, off = UINT64_MAX;
	static uint8_t buf[BIG], got[BIG];
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, "/kept", O_CREAT | O_RDWR | O_TRUNC, 0644, &l, &f));
	assert_int_equal(tessera_file_layout(f, &l), 0);
	for (uint32_t i = 0; i < l.count; i++)
		if (l.servers[i] == 0)
			off = (uint64_t)i * BIG;
	assert_true(off != UINT64_MAX);
	for (size_t i = 0; i < BIG; i++)
		buf[i] = (uint8_t)(i * 7 + i / 4099);
	parked_data(c, &kept0, &copied0);
	assert_int_equal(tessera_pwrite(f, buf, BIG, off), BIG);
	assert_int_equal(tessera_pwrite(f, buf, SMALL, off + BIG * N_IOS), SMALL);
	parked_data(c, &kept1, &copied1);
	print_message("kept %" PRIu64 " bytes, copied %" PRIu64 "\n", kept1 - kept0,
		      copied1 - copied0);
	assert_true(kept1 - kept0 >= BIG);
	assert_true(copied1 - copied0 >= SMALL);
	assert_int_equal(tessera_pread(f, got, BIG, off), BIG);
	assert_memory_equal(got, buf, BIG);
	assert_int_equal(tessera_pread(f, got, SMALL, off + BIG * N_IOS), SMALL);
	assert_memory_equal(got, buf, SMALL);
	tessera_close(f);
	serving(c);
}

int main(void)
{
	const struct CMUnitTest pool[] = {
		cmocka_unit_test(test_object_order),
		cmocka_unit_test(test_objects_parallel),
		cmocka_unit_test(test_client_gone),
		cmocka_unit_test(test_stop_with_queued_work),
		cmocka_unit_test(test_fault_on_worker),
		cmocka_unit_test(test_bulk_data_kept),
	};
	const struct CMUnitTest inline_[] = {
		cmocka_unit_test(test_object_order),
		cmocka_unit_test(test_stop_with_queued_work),
		cmocka_unit_test(test_fault_on_worker),
	};
	int failed;

	failed = cmocka_run_group_tests_name("io_threads = 4", pool, setup_pool,
					     cluster_teardown);
	failed += cmocka_run_group_tests_name("io_threads = 0", inline_, setup_inline,
					      cluster_teardown);
	return failed;
}
