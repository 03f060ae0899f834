/*
 * test_purge.c - removing a file's name and its objects are two steps on
 * two kinds of daemon. The metadata daemon records a purge intent with the
 * name's removal and its purger removes the objects, so a client that
 * dies in between, a storage daemon that is down and a metadata daemon
 * restarted meanwhile leave no orphan behind; fsck finds orphans made any
 * other way, removes them on request, and leaves the objects of files
 * created during its scan alone.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define STRIP 4096
#define SPAN (STRIP * N_IOS)
#define PURGE_WAIT_S 20.0 /* timeout_ms is 3 s; backoff tops out at 5 s */

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

/* A file with one object on every storage daemon, all written and synced;
 * its layout in *l. */
static void make_file(struct cluster *c, const char *path, struct tessera_layout *l)
{
	struct tessera_layout want = { .strip_size = STRIP, .count = N_IOS };
	static uint8_t buf[SPAN];
	tessera_file *f;

	memset(buf, 'p', sizeof(buf));
	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR | O_TRUNC, 0644, &want, &f));
	assert_int_equal(tessera_pwrite(f, buf, SPAN, 0), SPAN);
	CHECK(c->fs, tessera_fsync(f));
	CHECK(c->fs, tessera_file_layout(f, l));
	tessera_close(f);
}

static void object_file(struct cluster *c, uint32_t ios, uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%s/ios%u/objects/%02x/%016" PRIx64, c->dir, ios,
		 (unsigned)(handle & 0xff), handle);
}

static int objects_left(struct cluster *c, const struct tessera_layout *l)
{
	char path[600];
	int n = 0;

	for (uint32_t i = 0; i < l->count; i++) {
		object_file(c, l->servers[i], l->handles[i], path, sizeof(path));
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* Wait for the purger to remove every object of l. */
static void await_purge(struct cluster *c, const struct tessera_layout *l, const char *what)
{
	double deadline = now_s() + PURGE_WAIT_S;

	while (objects_left(c, l) && now_s() < deadline)
		usleep(50000);
	if (objects_left(c, l))
		fail_msg("%s: %d of %u objects still there after %.0f s", what, objects_left(c, l),
			 l->count, PURGE_WAIT_S);
}

/* Frames straight to the metadata daemon (raw_open_mds): a client that
 * dies right after the reply, before it could remove any object. */
static Tessera__Cred root_cred(uint32_t *gid)
{
	Tessera__Cred cred = TESSERA__CRED__INIT;

	*gid = 0;
	cred.n_gids = 1;
	cred.gids = gid;
	return cred;
}

/* The client is gone after UNLINK (or RENAME over a file) returned: the
 * purger removes the objects. Before purge intents, they stayed for ever. */
static void test_client_dies_after_remove(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout la, lb;
	struct raw raw;
	uint32_t gid;
	Tessera__Cred cred = root_cred(&gid);
	Tessera__PathRequest unlink_msg = TESSERA__PATH_REQUEST__INIT;
	Tessera__RenameRequest rename_msg = TESSERA__RENAME_REQUEST__INIT;
	char msg[512];

	make_file(c, "/a", &la);
	make_file(c, "/b", &lb);
	make_file(c, "/c", &(struct tessera_layout){ 0 });
	assert_int_equal(objects_left(c, &la), N_IOS);
	raw_open_mds(c, &raw);
	unlink_msg.cred = &cred;
	unlink_msg.path = "/a";
	if (raw_request(&raw, TP_OP_UNLINK, &unlink_msg.base, NULL, 0, msg, sizeof(msg)))
		fail_msg("unlink: %s", msg);
	rename_msg.cred = &cred;
	rename_msg.from = "/c";
	rename_msg.to = "/b";
	if (raw_request(&raw, TP_OP_RENAME, &rename_msg.base, NULL, 0, msg, sizeof(msg)))
		fail_msg("rename: %s", msg);
	tnet_close(raw.net);
	await_purge(c, &la, "unlinked file");
	await_purge(c, &lb, "file renamed over");
}

static void restart_mds(struct cluster *c)
{
	struct tessera_ping p[1 + N_IOS];

	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
		if (!p[0].status)
			return;
	}
	fail_msg("the metadata daemon does not answer after its restart");
}

/* A storage daemon is down while a file is unlinked, and the metadata
 * daemon is killed and restarted before it comes back: the unlink still
 * succeeds (the name is gone), and once the storage daemon is back the
 * restarted purger removes what it holds. */
static void test_ios_down_mds_restarted(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	struct tessera_stat st;

	make_file(c, "/d", &l);
	cluster_stop_pid(c->ios[1], SIGKILL);
	CHECK(c->fs, tessera_unlink(c->fs, "/d"));
	assert_int_equal(tessera_stat(c->fs, "/d", &st), -ENOENT);
	restart_mds(c);
	/* the other daemons' objects go (the client's fast path, or the
	 * purger); the down daemon's stays while it is down */
	usleep(300000);
	assert_int_equal(objects_left(c, &l), 1);
	c->ios[1] = cluster_spawn(c, "tessera-ios", "ios1", 1);
	await_purge(c, &l, "object on the restarted storage daemon");
}

static void raw_unlink(struct raw *raw, const char *path)
{
	Tessera__PathRequest m = TESSERA__PATH_REQUEST__INIT;
	uint32_t gid;
	Tessera__Cred cred = root_cred(&gid);
	char msg[512];

	m.cred = &cred;
	m.path = (char *)path;
	if (raw_request(raw, TP_OP_UNLINK, &m.base, NULL, 0, msg, sizeof(msg)))
		fail_msg("unlink %s: %s", path, msg);
}

/* A backlog of intents for a storage daemon that is down (more than the
 * purger scans in one tick) does not hold up the others: a file removed
 * after them loses its objects on the live daemons at once, and the dead
 * daemon's go once it is back. */
static void test_backlog_dead_daemon(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout one = { .strip_size = STRIP, .count = 1 }, big, left;
	struct raw raw;
	char path[64];
	tessera_file *f;
	int on_dead = 0;

	for (int i = 0; i < 1200; i++) {
		snprintf(path, sizeof(path), "/n%d", i);
		CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &one, &f));
		on_dead += tessera_file_layout(f, &left) == 0 && left.servers[0] == 0;
		tessera_close(f);
	}
	assert_true(on_dead > 8 * 32);   /* beyond one tick's scan */
	make_file(c, "/big", &big);
	cluster_stop_pid(c->ios[0], SIGKILL);
	raw_open_mds(c, &raw);
	for (int i = 0; i < 1200; i++) {
		snprintf(path, sizeof(path), "/n%d", i);
		raw_unlink(&raw, path);
	}
	raw_unlink(&raw, "/big");
	tnet_close(raw.net);
	/* the live daemons' objects of /big go while daemon 0 is down */
	left = big;
	left.count = 0;
	for (uint32_t i = 0; i < big.count; i++)
		if (big.servers[i] != 0) {
			left.servers[left.count] = big.servers[i];
			left.handles[left.count++] = big.handles[i];
		}
	await_purge(c, &left, "objects on live daemons behind a dead daemon's backlog");
	assert_int_equal(objects_left(c, &big), 1);
	c->ios[0] = cluster_spawn(c, "tessera-ios", "ios0", 0);
	await_purge(c, &big, "object on the restarted storage daemon");
}

/* The metadata daemon still runs (it has not died, of a signal say). */
static void assert_mds_alive(struct cluster *c, const char *when)
{
	int status;

	if (waitpid(c->mds, &status, WNOHANG) == c->mds)
		fail_msg("the metadata daemon died %s (%s %d)", when,
			 WIFSIGNALED(status) ? "signal" : "exit status",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

#define STALL_ROUNDS 6

/* The client's next request to a restarted storage daemon goes through
 * (cluster_restart_ios's pings, after a SIGKILL). */
static void await_ios(struct cluster *c, int v)
{
	struct tessera_ping p[1 + N_IOS];

	for (int round = 0; round < 2; round++) {
		assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
		if (!p[1 + v].status)
			return;
	}
	fail_msg("storage daemon %d does not answer after its restart", v);
}

/* The purger's storage daemon stalls (SIGSTOP) or dies (SIGKILL) with a
 * REMOVE to it outstanding, round after round: the purger times out or
 * sees the send fail, forgets the daemon's address (rxm closes the
 * connection) and backs off, and once the daemon runs again reconnects
 * and finishes. A forget while the purger's send was still queued on
 * that connection killed the metadata daemon inside fi_av_remove
 * (SIGSEGV, under load); the purger now forgets only once the send has
 * completed. The race needs the send to be still pending when the
 * failure is seen, so this is a stress check more than a sure trigger. */
static void test_ios_stalls_mid_purge(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	struct raw raw;
	char path[64], when[96];

	raw_open_mds(c, &raw);
	for (int round = 0; round < STALL_ROUNDS; round++) {
		int v = 1 + round % (N_IOS - 1), dies = round % 2;

		snprintf(path, sizeof(path), "/stall%d", round);
		make_file(c, path, &l);
		/* rounds after the first: the purger is connected to v */
		kill(c->ios[v], SIGSTOP);
		raw_unlink(&raw, path);
		/* past timeout_ms: the purger gives up on v and forgets it,
		 * then retries with backoff while v stays stopped */
		usleep(3500000);
		snprintf(when, sizeof(when), "while storage daemon %d was stopped (round %d)",
			 v, round);
		assert_mds_alive(c, when);
		if (dies) {
			cluster_stop_pid(c->ios[v], SIGKILL);
			usleep(200000);
			snprintf(when, sizeof(when), "after storage daemon %d was killed (round %d)",
				 v, round);
			assert_mds_alive(c, when);
			snprintf(when, sizeof(when), "ios%d", v);
			c->ios[v] = cluster_spawn(c, "tessera-ios", when, v);
			await_ios(c, v);
		} else {
			kill(c->ios[v], SIGCONT);
		}
		snprintf(when, sizeof(when), "round %d (storage daemon %d %s)", round, v,
			 dies ? "killed and restarted" : "stopped and resumed");
		await_purge(c, &l, when);
		assert_mds_alive(c, when);
	}
	tnet_close(raw.net);
}

struct lines {
	int n;
	char last[512];
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;

	l->n++;
	snprintf(l->last, sizeof(l->last), "%s", line);
	print_message("fsck: %s\n", line);
}

/* Write one strip to object `handle` on storage daemon `ios` directly,
 * with root's admin capability (a file's names only its objects). */
static void raw_object(struct cluster *c, uint32_t ios, uint64_t handle)
{
	Tessera__WriteRequest w = TESSERA__WRITE_REQUEST__INIT;
	Tessera__CapRequest cr = TESSERA__CAP_REQUEST__INIT;
	uint32_t gid;
	Tessera__Cred cred = root_cred(&gid);
	Tessera__Capability *admin;
	static uint8_t buf[STRIP];
	struct raw raw;
	char msg[512];

	cr.cred = &cred;
	cr.admin = 1;
	if (raw_mds_cap(c, &cr, &admin, msg, sizeof(msg)))
		fail_msg("admin capability: %s", msg);
	raw_open(c, ios, &raw);
	raw.cap = admin;
	w.handle = handle;
	if (raw_request(&raw, TP_OP_WRITE, &w.base, buf, sizeof(buf), msg, sizeof(msg)))
		fail_msg("raw write: %s", msg);
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&admin->base, NULL);
}

/* Orphans made behind the file system's back are found and, with repair,
 * removed, whatever their handles (random: none is "younger" than another
 * by its number); files in use are not touched; only root may run it. */
static void test_fsck(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	struct tessera_stat root;
	struct tessera_fsck r;
	struct lines out = { 0 };
	char path[600], path2[600];
	uint64_t invented;
	struct tessera_cred user = { 1000, 1, { 1000 } };

	make_file(c, "/kept", &l);
	CHECK(c->fs, tessera_fsck(c->fs, 0, collect, &out, &r));
	assert_int_equal(out.n, 0);
	assert_true(r.files == 1 && r.objects == N_IOS && r.orphans == 0);

	/* orphans: an object under a directory's handle (named by no layout),
	 * one under a handle far above every file's (what the handle horizon,
	 * when handles were sequential, called young), and one 256 below it
	 * (the same object directory, listed before it: fsck's last look
	 * must find each where the listing's order puts it) */
	CHECK(c->fs, tessera_stat(c->fs, "/", &root));
	invented = l.handles[0] + (UINT64_C(1) << 40);
	raw_object(c, 2, root.handle);
	raw_object(c, 3, invented);
	raw_object(c, 3, invented - 256);
	CHECK(c->fs, tessera_fsck(c->fs, 0, collect, &out, &r));
	assert_int_equal(r.orphans, 3);
	assert_int_equal(r.removed, 0);
	assert_int_equal(r.young, 0);
	assert_non_null(strstr(out.last, "orphan"));
	assert_non_null(strstr(out.last, "storage daemon 3"));
	object_file(c, 2, root.handle, path, sizeof(path));
	object_file(c, 3, invented, path2, sizeof(path2));
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(access(path2, F_OK), 0);

	CHECK(c->fs, tessera_fsck(c->fs, 1, collect, &out, &r));
	assert_int_equal(r.orphans, 3);
	assert_int_equal(r.removed, 3);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(path2, F_OK), -1);
	assert_int_equal(objects_left(c, &l), N_IOS);

	out.n = 0;
	CHECK(c->fs, tessera_fsck(c->fs, 0, collect, &out, &r));
	assert_int_equal(r.orphans, 0);
	assert_int_equal(out.n, 0);

	CHECK(c->fs, tessera_set_thread_cred(c->fs, &user));
	assert_int_equal(tessera_fsck(c->fs, 0, NULL, NULL, &r), -EPERM);
	print_message("as uid 1000: %s\n", tessera_errmsg(c->fs));
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));
}

/* The report of storage daemon 0's misplaced object comes while fsck
 * walks the daemons' objects: the callback then creates and writes a file
 * through a second connection, so daemons 1 to 3 list objects of a file
 * that did not exist when the files were listed. */
struct during_scan {
	struct cluster *c;
	struct lines lines;
	int made;
};

static void create_during_scan(void *arg, const char *line)
{
	struct during_scan *d = arg;
	struct tessera_layout l;
	tessera_fs *fs2 = NULL;
	tessera_fs *saved = d->c->fs;
	char err[512];

	collect(&d->lines, line);
	if (d->made || !strstr(line, "misplaced"))
		return;
	d->made = 1;
	if (tessera_connect(d->c->conf, &fs2, err, sizeof(err)))
		fail_msg("second connection: %s", err);
	d->c->fs = fs2;
	make_file(d->c, "/young", &l);
	d->c->fs = saved;
	tessera_disconnect(fs2);
}

/* An object created during a scan is not an orphan: handles are random,
 * so nothing but the listing again tells fsck that its file is new. */
static void test_fsck_during_scan(void **state)
{
	struct cluster *c = *state;
	struct during_scan d = { .c = c };
	struct tessera_layout l, young;
	struct tessera_fsck r;
	uint32_t slot = 0;

	make_file(c, "/kept", &l);
	while (l.servers[slot] == 0)
		slot++;
	raw_object(c, 0, l.handles[slot]); /* misplaced: its layout says elsewhere */
	CHECK(c->fs, tessera_fsck(c->fs, 0, create_during_scan, &d, &r));
	assert_int_equal(d.made, 1);
	print_message("objects %" PRIu64 ", young %" PRIu64 ", orphans %" PRIu64 "\n",
		      r.objects, r.young, r.orphans);
	assert_int_equal(r.misplaced, 1);
	assert_int_equal(r.orphans, 0);
	assert_true(r.young >= 1); /* daemons 1 to 3 listed /young's objects */
	CHECK(c->fs, tessera_get_layout(c->fs, "/young", &young));
	assert_int_equal(objects_left(c, &young), N_IOS);
	/* and --repair removes none of them */
	CHECK(c->fs, tessera_fsck(c->fs, 1, collect, &d.lines, &r));
	assert_int_equal(r.removed, 0);
	assert_int_equal(objects_left(c, &young), N_IOS);
}

/* Pending intents are not orphans: with a storage daemon down, fsck run
 * against the others reports the dead daemon, and after it is back and
 * purged, nothing. */
static void test_fsck_pending(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	struct tessera_fsck r;
	struct lines out = { 0 };
	int rc;

	make_file(c, "/e", &l);
	cluster_stop_pid(c->ios[3], SIGKILL);
	CHECK(c->fs, tessera_unlink(c->fs, "/e"));
	rc = tessera_fsck(c->fs, 0, collect, &out, &r);
	print_message("storage daemon 3 down: %s\n", tessera_errmsg(c->fs));
	assert_true(rc < 0);
	assert_non_null(strstr(tessera_errmsg(c->fs), "storage daemon 3"));
	c->ios[3] = cluster_spawn(c, "tessera-ios", "ios3", 3);
	await_purge(c, &l, "object on the restarted storage daemon");
	/* the client's first request there waits for a new session; under
	 * the sanitizers beside other suites that once outlasted fsck's
	 * request timeout, which is not what this test checks */
	await_ios(c, 3);
	CHECK(c->fs, tessera_fsck(c->fs, 0, collect, &out, &r));
	assert_int_equal(r.orphans + r.misplaced + r.size_mismatch, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_client_dies_after_remove, setup,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_ios_down_mds_restarted, setup,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_backlog_dead_daemon, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_ios_stalls_mid_purge, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_fsck, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_fsck_during_scan, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_fsck_pending, setup, cluster_teardown),
	};

	return cmocka_run_group_tests_name("purge", tests, NULL, NULL);
}
