/*
 * test_security.c - who may do what (docs/security.md): identity comes
 * from MUNGE sessions, never from a request's body or reply address.
 *
 * The unprivileged caller is uid 65534 (nobody): a child process drops to
 * it (setresuid, no supplementary groups) and either runs library calls
 * itself, answering with its exit status, or makes the MUNGE credential
 * for a raw endpoint the test holds, so the raw frames below travel on a
 * session munged vouches is nobody's. Needs root (to drop privileges and
 * to own the victim files); skipped otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

#define QUIET_S 1.5 /* how long "nothing arrives" is watched */

static int setup(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to drop to uid %u and own the victims\n", NOBODY);
		*state = NULL;
		return 0;
	}
	return cluster_setup(state, CLUSTER_TCP);
}

static int setup_squash(void **state)
{
	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	return cluster_setup_conf(state, CLUSTER_TCP, "root_squash = 1\n");
}

static int teardown(void **state)
{
	return *state ? cluster_teardown(state) : 0;
}

static void assert_file(tessera_fs *fs, const char *path, uint32_t uid, const char *text)
{
	struct tessera_stat st;
	tessera_file *f;
	char buf[256] = { 0 };

	CHECK(fs, tessera_stat(fs, path, &st));
	assert_int_equal(st.uid, uid);
	CHECK(fs, tessera_open(fs, path, O_RDONLY, 0, NULL, &f));
	assert_int_equal(tessera_pread(f, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(text));
	assert_string_equal(buf, text);
	tessera_close(f);
}

static Tessera__Cred *root_cred(Tessera__Cred *cred, uint32_t *gid)
{
	tessera__cred__init(cred);
	cred->uid = 0;
	*gid = 0;
	cred->n_gids = 1;
	cred->gids = gid;
	return cred;
}

/* ---------------------------------------------------------------- tests */

static int claim_root(const char *conf)
{
	struct tessera_cred root = { .uid = 0, .ngids = 1 };
	struct tessera_stat st;
	tessera_fs *fs = NULL;
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_set_thread_cred(fs, &root) == -EPERM);
	EXPECT(strstr(tessera_errmsg(fs), "only root"));
	EXPECT(tessera_stat(fs, "/private/secret", &st) == -EACCES);
	EXPECT(tessera_unlink(fs, "/private/secret") == -EACCES);
	tessera_disconnect(fs);
	return 0;
}

/* A process that claims uid 0 gets nothing: set_thread_cred refuses, and
 * a raw request on its own (valid) session whose body says uid 0 is
 * judged as nobody's. */
static void test_claimed_root(void **state)
{
	struct cluster *c = *state;
	struct raw raw;
	Tessera__PathRequest pr = TESSERA__PATH_REQUEST__INIT;
	Tessera__SetattrRequest sa = TESSERA__SETATTR_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gid;
	char msg[512];

	NEED_ROOT(c);
	CHECK(c->fs, tessera_mkdir(c->fs, "/private", 0700));
	cluster_put_file(c->fs, "/private/secret", 0600, "root's secret");
	cluster_put_file(c->fs, "/rootfile", 0600, "root's file");
	assert_int_equal(cluster_as_nobody(c, claim_root), 0);

	raw_open_as_nobody(c, -1, &raw);
	pr.cred = root_cred(&cred, &gid);
	pr.path = "/private/secret";
	assert_int_equal(raw_request(&raw, TP_OP_LOOKUP, &pr.base, NULL, 0, msg, sizeof(msg)),
			 -EACCES);
	print_message("lookup claiming uid 0: %s\n", msg);
	assert_int_equal(raw_request(&raw, TP_OP_UNLINK, &pr.base, NULL, 0, msg, sizeof(msg)),
			 -EACCES);
	print_message("unlink claiming uid 0: %s\n", msg);
	sa.cred = pr.cred;
	sa.path = "/rootfile";
	sa.valid = TESSERA_SET_MODE;
	sa.mode = 0666;
	assert_int_equal(raw_request(&raw, TP_OP_SETATTR, &sa.base, NULL, 0, msg, sizeof(msg)),
			 -EPERM);
	print_message("chmod claiming uid 0: %s\n", msg);
	tnet_close(raw.net);
	assert_file(c->fs, "/private/secret", 0, "root's secret");
	assert_file(c->fs, "/rootfile", 0, "root's file");
	{
		struct tessera_stat st;

		CHECK(c->fs, tessera_stat(c->fs, "/rootfile", &st));
		assert_int_equal(st.mode & 07777, 0600);
	}
}

/* Frames with a session id nobody was given, or a MAC that is not the
 * session's, do nothing and get no answer; nor does an AUTH whose
 * credential was used before or is meant for another daemon. */
static void test_forged_frames(void **state)
{
	struct cluster *c = *state;
	Tessera__PathRequest pr = TESSERA__PATH_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_UNLINK, .reqid = 9 };
	struct raw raw;
	uint8_t frame[4096];
	struct tessera_ping ping[1 + N_IOS];
	long len;

	NEED_ROOT(c);
	cluster_put_file(c->fs, "/victim", 0644, "still here");
	raw_open_at(c->conf, -1, &raw); /* a root session: the frame would work */
	pr.path = "/victim";
	len = tp_frame_build(frame, sizeof(frame), &h, raw.name, raw.name_len, &pr.base);
	assert_true(len > 0);
	/* an unknown session id, sealed with the right key */
	{
		struct tp_session forged = raw.ses;

		forged.id ^= 0x5a5a5a5a5a5a5a5aull;
		tp_frame_seal(frame, (size_t)len, NULL, 0, &forged, raw.seq++);
		raw_send_as_is(&raw, frame, (size_t)len);
		assert_int_equal(raw_arrivals(&raw, QUIET_S), 0);
	}
	/* the right session, a MAC under another key */
	{
		struct tp_session wrong = raw.ses;

		wrong.key[0] ^= 1;
		tp_frame_seal(frame, (size_t)len, NULL, 0, &wrong, raw.seq++);
		raw_send_as_is(&raw, frame, (size_t)len);
		assert_int_equal(raw_arrivals(&raw, QUIET_S), 0);
	}
	/* right MAC, then a body byte changed */
	tp_frame_seal(frame, (size_t)len, NULL, 0, &raw.ses, raw.seq++);
	frame[len - 1] ^= 1;
	raw_send_as_is(&raw, frame, (size_t)len);
	assert_int_equal(raw_arrivals(&raw, QUIET_S), 0);
	/* no session at all */
	memset(frame + 32, 0, TP_HDR_SIZE - 32); /* session, seq, tag, reserved */
	raw_send_as_is(&raw, frame, (size_t)len);
	assert_int_equal(raw_arrivals(&raw, QUIET_S), 0);
	/* a credential replayed (munged says so), and one meant for another
	 * daemon: no session, no answer */
	{
		Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
		struct tp_hdr ah = { .opcode = TP_OP_AUTH, .reqid = 10 };
		struct tp_config cfg;
		struct tp_frame reply;
		uint8_t key[TP_KEY_SIZE];
		char err[512], *cred = NULL;

		assert_int_equal(tp_config_load(c->conf, &cfg, err, sizeof(err)), 0);
		assert_int_equal(tp_auth_encode(cfg.munge_socket, cfg.daemon_uid, "mds", raw.name,
						raw.name_len, key, &cred, err, sizeof(err)), 0);
		m.credential = cred;
		len = tp_frame_build(frame, sizeof(frame), &ah, raw.name, raw.name_len, &m.base);
		assert_true(len > 0);
		raw.ses.id = 0; /* AUTH goes unsealed */
		assert_int_equal(raw_roundtrip(&raw, frame, (size_t)len, &reply, err, sizeof(err)), 0);
		raw_send_as_is(&raw, frame, (size_t)len);
		assert_int_equal(raw_arrivals(&raw, QUIET_S), 0);
		free(cred);
		assert_int_equal(tp_auth_encode(cfg.munge_socket, cfg.daemon_uid, "ios:0", raw.name,
						raw.name_len, key, &cred, err, sizeof(err)), 0);
		m.credential = cred;
		len = tp_frame_build(frame, sizeof(frame), &ah, raw.name, raw.name_len, &m.base);
		raw_send_as_is(&raw, frame, (size_t)len);
		assert_int_equal(raw_arrivals(&raw, QUIET_S), 0);
		free(cred);
		if (raw.last_auth)
			protobuf_c_message_free_unpacked(&raw.last_auth->base, NULL);
	}
	tnet_close(raw.net);
	assert_file(c->fs, "/victim", 0, "still here");
	assert_int_equal(tessera_ping(c->fs, ping, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(ping[0].status, 0);
}

/* A frame naming another endpoint as its sender: the daemon answers the
 * session's own address, and sends the named one nothing. */
static void test_spoofed_reply_address(void **state)
{
	struct cluster *c = *state;
	struct raw att, victim;
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_PING, .reqid = 11 };
	struct tessera_ping p[1 + N_IOS];
	uint8_t frame[4096];
	struct tp_frame reply;
	char msg[256];
	long len;

	NEED_ROOT(c);
	raw_open_as_nobody(c, 0, &victim);  /* listens; has its own session */
	raw_open_as_nobody(c, 0, &att);
	/* on the attacker's session, claiming the victim's address */
	len = tp_frame_build(frame, sizeof(frame), &h, victim.name, victim.name_len, &ping.base);
	assert_true(len > 0);
	assert_int_equal(raw_roundtrip(&att, frame, (size_t)len, &reply, msg, sizeof(msg)), 0);
	assert_int_equal(reply.hdr.reqid, 11); /* the answer came to the attacker */
	assert_int_equal(raw_arrivals(&victim, QUIET_S), 0);
	/* without a session, claiming the victim's address: nobody hears */
	h.reqid = 12;
	len = tp_frame_build(frame, sizeof(frame), &h, victim.name, victim.name_len, &ping.base);
	raw_send_as_is(&att, frame, (size_t)len);
	assert_int_equal(raw_arrivals(&victim, QUIET_S), 0);
	assert_int_equal(raw_arrivals(&att, 0.2), 0);
	/* the daemon goes on serving (the victim too) */
	h.reqid = 13;
	len = tp_frame_build(frame, sizeof(frame), &h, victim.name, victim.name_len, &ping.base);
	assert_int_equal(raw_roundtrip(&victim, frame, (size_t)len, &reply, msg, sizeof(msg)), 0);
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(p[1].status, 0);
	tnet_close(att.net);
	tnet_close(victim.net);
}

static int sticky_nobody(const char *conf)
{
	tessera_fs *fs = NULL;
	tessera_file *f;
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_unlink(fs, "/rootfile") == -EPERM);
	EXPECT(strstr(tessera_errmsg(fs), "sticky"));
	EXPECT(tessera_rename(fs, "/rootfile", "/mine") == -EPERM);
	EXPECT(tessera_rmdir(fs, "/rootdir") == -EPERM);
	/* its own work goes on: create, write, rename and remove its own */
	EXPECT(tessera_open(fs, "/nobody-file", O_CREAT | O_RDWR, 0644, NULL, &f) == 0);
	EXPECT(tessera_pwrite(f, "mine", 4, 0) == 4);
	EXPECT(tessera_close(f) == 0);
	EXPECT(tessera_rename(fs, "/nobody-file", "/nobody-file2") == 0);
	EXPECT(tessera_unlink(fs, "/nobody-file2") == 0);
	tessera_disconnect(fs);
	return 0;
}

/* "/" is 1777: nobody may create there, and may not remove or rename
 * root's entries. */
static void test_sticky_root(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;

	NEED_ROOT(c);
	CHECK(c->fs, tessera_stat(c->fs, "/", &st));
	assert_int_equal(st.mode & 07777, 01777);
	cluster_put_file(c->fs, "/rootfile", 0666, "root's");
	CHECK(c->fs, tessera_mkdir(c->fs, "/rootdir", 0777));
	assert_int_equal(cluster_as_nobody(c, sticky_nobody), 0);
	assert_file(c->fs, "/rootfile", 0, "root's");
	CHECK(c->fs, tessera_stat(c->fs, "/rootdir", &st));
}

/* root_squash = 1: uid 0 is nobody to the metadata daemon. */
static void test_root_squash(void **state)
{
	struct cluster *c = *state;
	struct tessera_setattr sa = { .valid = TESSERA_SET_UID, .uid = 1234 };
	struct tessera_cred other = { .uid = 1000, .ngids = 1, .gids = { 1000 } };
	struct tessera_stat st;

	NEED_ROOT(c);
	CHECK(c->fs, tessera_mkdir(c->fs, "/squashed", 0755));
	CHECK(c->fs, tessera_stat(c->fs, "/squashed", &st));
	assert_int_equal(st.uid, NOBODY);
	assert_int_equal(st.gid, NOBODY);
	assert_int_equal(tessera_setattr(c->fs, "/squashed", &sa), -EPERM);
	print_message("chown under root_squash: %s\n", tessera_errmsg(c->fs));
	/* a root process acting for another user (the FUSE mount) still can */
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &other));
	CHECK(c->fs, tessera_mkdir(c->fs, "/as1000", 0755));
	CHECK(c->fs, tessera_stat(c->fs, "/as1000", &st));
	assert_int_equal(st.uid, 1000);
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));
}

/* A restarted daemon has lost every session and answers no frame of
 * them; the client's probe finds it restarted and resends on a new
 * session, so the first request after a restart still succeeds (without
 * the probe it would time out). */
static void test_restart_recovers(void **state)
{
	struct cluster *c = *state;
	struct tessera_stat st;
	tessera_file *f;
	char buf[16] = { 0 };

	NEED_ROOT(c);
	cluster_put_file(c->fs, "/kept", 0644, "kept");
	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	CHECK(c->fs, tessera_stat(c->fs, "/kept", &st));
	CHECK(c->fs, tessera_open(c->fs, "/kept", O_RDONLY, 0, NULL, &f));
	cluster_stop_pid(c->ios[0], SIGKILL);
	cluster_stop_pid(c->ios[1], SIGKILL);
	cluster_stop_pid(c->ios[2], SIGKILL);
	cluster_stop_pid(c->ios[3], SIGKILL);
	for (int i = 0; i < N_IOS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "ios%d", i);
		c->ios[i] = cluster_spawn(c, "tessera-ios", name, i);
	}
	CHECK(c->fs, (int)tessera_pread(f, buf, sizeof(buf) - 1, 0));
	assert_string_equal(buf, "kept");
	tessera_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claimed_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spoofed_reply_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sticky_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_squash, setup_squash, teardown),
		cmocka_unit_test_setup_teardown(test_restart_recovers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
