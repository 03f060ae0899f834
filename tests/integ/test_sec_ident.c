/*
 * test_sec_ident.c - who the daemons are, and where root is root
 * (issue 29, items 1 and 6; docs/security.md).
 *
 * A squatter: a storage daemon is stopped and a process of uid nobody
 * listens at its address (cluster.c, squat_start), as any user of that
 * host could while the port is free. Clients restrict their credentials
 * to the daemons' uid, so it cannot decode them; whatever it answers,
 * root's client must refuse it at once, naming the daemon, send it
 * nothing but AUTH, and return none of its bytes.
 *
 * Admin hosts: with admin_hosts naming an address that is not this host's,
 * uid 0 here is root of nothing: it acts as squash_uid for itself, may
 * still act for other users (as a FUSE mount on a compute node does), and
 * gets no admin capability (fsck says why). With the default (the daemons'
 * hosts, loopback here) root is root as before.
 *
 * Needs root (to drop to nobody); skipped otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"

#define VICTIM_LEN (8 * 64 * 1024) /* two strips on each storage daemon */
#define VICTIM_BYTE 0x11           /* never SQUAT_FORGED */

static int setup(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to drop to uid %u\n", NOBODY);
		*state = NULL;
		return 0;
	}
	return cluster_setup(state, CLUSTER_TCP);
}

/* An address that is no host's (TEST-NET-3), so not this one's. */
#define ELSEWHERE "203.0.113.9"
#define SQUASH_UID 4242u
#define SQUASH_GID 4343u

static int setup_elsewhere(void **state)
{
	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	return cluster_setup_conf(state, CLUSTER_TCP, "admin_hosts = " ELSEWHERE ", nosuch.invalid\n"
				  "squash_uid = 4242\nsquash_gid = 4343\n");
}

static int teardown(void **state)
{
	return *state ? cluster_teardown(state) : 0;
}

static void put_victim(tessera_fs *fs, const uint8_t *data)
{
	struct tessera_layout l = { .count = N_IOS };
	tessera_file *f;

	CHECK(fs, tessera_open(fs, "/victim", O_CREAT | O_RDWR | O_TRUNC, 0600, &l, &f));
	assert_int_equal(tessera_pwrite(f, data, VICTIM_LEN, 0), VICTIM_LEN);
	CHECK(fs, tessera_close(f));
}

static void expect_unproven(tessera_fs *fs, ssize_t rc, double t0, const char *what)
{
	const char *msg = tessera_errmsg(fs);

	print_message("%s through the squatter: %zd, %s (%.2f s)\n", what, rc, msg,
		      now_s() - t0);
	assert_int_equal(rc, -EACCES);
	assert_non_null(strstr(msg, "storage daemon 1 (127.0.0.1:"));
	assert_non_null(strstr(msg, "failed to prove its identity"));
	/* at once, not at the request timeout */
	assert_true(now_s() - t0 < TIMEOUT_MS / 1000.0 * 0.8);
}

/* Storage daemon 1 stopped, a squatter of uid nobody on its port: root's
 * read and write fail with "failed to prove its identity", the squatter
 * decodes no credential and receives nothing after AUTH, and no forged
 * byte reaches the caller. */
static void test_squatter_refused(void **state)
{
	struct cluster *c = *state;
	uint8_t *data = malloc(VICTIM_LEN), *buf = malloc(VICTIM_LEN);
	struct squat_counts n;
	struct squatter sq;
	tessera_fs *fs;
	tessera_file *f;
	char err[512];
	double t0;

	NEED_ROOT(c);
	assert_non_null(data);
	assert_non_null(buf);
	memset(data, VICTIM_BYTE, VICTIM_LEN);
	put_victim(c->fs, data);
	cluster_stop_pid(c->ios[1], SIGTERM);
	c->ios[1] = 0;
	squat_start(c, 1, &sq);
	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	CHECK(fs, tessera_open(fs, "/victim", O_RDWR, 0, NULL, &f));
	memset(buf, 0, VICTIM_LEN);
	t0 = now_s();
	expect_unproven(fs, tessera_pread(f, buf, VICTIM_LEN, 0), t0, "read");
	assert_null(memchr(buf, SQUAT_FORGED, VICTIM_LEN));
	/* the next AUTH gets a reply sealed with a key the squatter chose */
	t0 = now_s();
	expect_unproven(fs, tessera_pwrite(f, data, VICTIM_LEN, 0), t0, "write");
	tessera_close(f);
	tessera_disconnect(fs);
	squat_stop(&sq, &n);
	print_message("squatter: %u AUTH, %u decoded, %u later frames (%llu bytes), %u forged "
		      "replies\n", n.auths, n.decoded, n.frames, (unsigned long long)n.bytes,
		      n.forged);
	assert_true(n.auths >= 2);
	assert_int_equal(n.decoded, 0);
	assert_int_equal(n.frames, 0);
	assert_int_equal(n.bytes, 0);
	assert_int_equal(n.forged, 0);
	/* the real daemon back: the file is as root wrote it */
	c->ios[1] = cluster_spawn(c, "tessera-ios", "ios1", 1);
	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	CHECK(fs, tessera_open(fs, "/victim", O_RDONLY, 0, NULL, &f));
	assert_int_equal(tessera_pread(f, buf, VICTIM_LEN, 0), VICTIM_LEN);
	assert_memory_equal(buf, data, VICTIM_LEN);
	tessera_close(f);
	tessera_disconnect(fs);
	free(data);
	free(buf);
}

/* The same for the metadata daemon: a stat through its squatter fails
 * at once, naming it, and the squatter learns nothing. */
static void test_mds_squatter_refused(void **state)
{
	struct cluster *c = *state;
	struct squat_counts n;
	struct squatter sq;
	struct tessera_stat st;
	tessera_fs *fs;
	char err[512];
	double t0;
	int rc;

	NEED_ROOT(c);
	cluster_stop_pid(c->mds, SIGTERM);
	c->mds = 0;
	squat_start(c, -1, &sq);
	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	t0 = now_s();
	rc = tessera_stat(fs, "/", &st);
	print_message("stat through the squatter: %d, %s (%.2f s)\n", rc, tessera_errmsg(fs),
		      now_s() - t0);
	assert_int_equal(rc, -EACCES);
	assert_non_null(strstr(tessera_errmsg(fs), "metadata daemon (127.0.0.1:"));
	assert_non_null(strstr(tessera_errmsg(fs), "failed to prove its identity"));
	assert_true(now_s() - t0 < TIMEOUT_MS / 1000.0 * 0.8);
	tessera_disconnect(fs);
	squat_stop(&sq, &n);
	assert_int_equal(n.decoded, 0);
	assert_int_equal(n.frames, 0);
}

/* Run `cmd` (a shell line); its output into out, its exit status back. */
static int run_capture(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t got;

	assert_non_null(p);
	got = fread(out, 1, len - 1, p);
	out[got] = '\0';
	return pclose(p);
}

/* A daemon started under another uid than daemon_uid refuses, naming the
 * key and both uids (it could decode no credential). */
static void test_daemon_wrong_uid(void **state)
{
	struct cluster *c = *state;
	char cmd[2048], out[2048], want[128];
	int st;

	NEED_ROOT(c);
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=%u --regid=%u --clear-groups "
		 "%s/tessera-ios -c %s -d %s/ios-nobody -i 1 -N 2>&1", NOBODY, NOBODY, c->bin,
		 c->conf, c->dir);
	st = run_capture(cmd, out, sizeof(out));
	print_message("tessera-ios as nobody: %s", out);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	snprintf(want, sizeof(want), "runs as uid %u, but the config says daemon_uid = %u", NOBODY,
		 (unsigned)geteuid());
	assert_non_null(strstr(out, want));
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=%u --regid=%u --clear-groups "
		 "%s/tessera-mds -c %s -d %s/mds-nobody 2>&1", NOBODY, NOBODY, c->bin, c->conf,
		 c->dir);
	st = run_capture(cmd, out, sizeof(out));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	assert_non_null(strstr(out, want));
}

static int count_in_file(const char *path, const char *needle)
{
	char line[2048];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static void fsck_line(void *arg, const char *line)
{
	(void)arg;
	print_message("fsck: %s\n", line);
}

/* admin_hosts elsewhere: root's own uid is squash_uid, root may still act
 * for another user, and gets no admin capability (fsck and a raw CAP say
 * why); the metadata daemon logs the host once. */
static void test_root_of_other_host(void **state)
{
	struct cluster *c = *state;
	struct tessera_cred alice = { 1000, 1, { 1000 } };
	struct tessera_setattr chown = { .valid = TESSERA_SET_UID, .uid = 1234 };
	Tessera__CapRequest m = TESSERA__CAP_REQUEST__INIT;
	Tessera__Capability *cap = NULL;
	struct tessera_fsck out;
	struct tessera_stat st;
	tessera_file *f;
	char msg[512], log[400];
	int rc;

	NEED_ROOT(c);
	/* its own files are squash_uid's, and root's privileges are gone */
	CHECK(c->fs, tessera_open(c->fs, "/mine", O_CREAT | O_RDWR, 0600, NULL, &f));
	tessera_close(f);
	CHECK(c->fs, tessera_stat(c->fs, "/mine", &st));
	assert_int_equal(st.uid, SQUASH_UID);
	assert_int_equal(st.gid, SQUASH_GID);
	CHECK(c->fs, tessera_mkdir(c->fs, "/closed", 0700));
	assert_int_equal(tessera_setattr(c->fs, "/closed", &chown), -EPERM);
	/* acting for another user still works (the FUSE mount's way) */
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &alice));
	CHECK(c->fs, tessera_open(c->fs, "/alice", O_CREAT | O_RDWR, 0600, NULL, &f));
	tessera_close(f);
	CHECK(c->fs, tessera_stat(c->fs, "/alice", &st));
	assert_int_equal(st.uid, 1000);
	assert_int_equal(tessera_stat(c->fs, "/closed/x", &st), -EACCES);
	/* acting for uid 0 is squashed too */
	alice.uid = 0;
	alice.gids[0] = 0;
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &alice));
	CHECK(c->fs, tessera_open(c->fs, "/as-root", O_CREAT | O_RDWR, 0600, NULL, &f));
	tessera_close(f);
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));
	CHECK(c->fs, tessera_stat(c->fs, "/as-root", &st));
	assert_int_equal(st.uid, SQUASH_UID);
	/* no admin capability: fsck fails and says why */
	rc = tessera_fsck(c->fs, 0, fsck_line, NULL, &out);
	print_message("fsck from a host that is not an admin host: %d, %s\n", rc,
		      tessera_errmsg(c->fs));
	assert_int_equal(rc, -EPERM);
	assert_non_null(strstr(tessera_errmsg(c->fs), "uid 0 of 127.0.0.1 is not root of this "
			       "file system: that host is not an admin host (admin_hosts"));
	m.admin = 1;
	assert_int_equal(raw_mds_cap(c, &m, &cap, msg, sizeof(msg)), -EPERM);
	assert_null(cap);
	assert_non_null(strstr(msg, "not an admin host"));
	/* the refusal is logged once for the host, however often it comes */
	snprintf(log, sizeof(log), "%s/mds.log", c->dir);
	assert_int_equal(count_in_file(log, "uid 0 of host 127.0.0.1 is not root here"), 1);
	assert_int_equal(count_in_file(log, "admin host nosuch.invalid"), 1);
}

/* The default admin_hosts (the daemons' hosts, loopback: this host): root
 * is root, as before. */
static void test_root_of_daemon_host(void **state)
{
	struct cluster *c = *state;
	Tessera__CapRequest m = TESSERA__CAP_REQUEST__INIT;
	Tessera__Capability *cap = NULL;
	struct tessera_fsck out;
	struct tessera_stat st;
	tessera_file *f;
	char msg[512];

	NEED_ROOT(c);
	CHECK(c->fs, tessera_open(c->fs, "/mine", O_CREAT | O_RDWR, 0600, NULL, &f));
	tessera_close(f);
	CHECK(c->fs, tessera_stat(c->fs, "/mine", &st));
	assert_int_equal(st.uid, 0);
	CHECK(c->fs, tessera_fsck(c->fs, 0, fsck_line, NULL, &out));
	m.admin = 1;
	assert_int_equal(raw_mds_cap(c, &m, &cap, msg, sizeof(msg)), 0);
	assert_non_null(cap);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_squatter_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mds_squatter_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_wrong_uid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_of_other_host, setup_elsewhere, teardown),
		cmocka_unit_test_setup_teardown(test_root_of_daemon_host, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
