/*
 * test_sec_bounds.c - one user cannot take what a daemon shares
 * (docs/security.md, "Limits"), run as real separate uids (needs root;
 * skipped otherwise), with small shares in the config so the floods are
 * short:
 *
 *   - an AUTH naming a reply address that does not answer costs one
 *     bounded attempt, not a spinning loop (CPU time, not wall time);
 *   - uids filling the session table leave root and a new uid able to
 *     connect, and one uid past its share loses only its own sessions;
 *     an idle session is dropped after session_idle_s, and a client that
 *     was idle renews its own before it is;
 *   - one uid's lock flood is refused past its share (requests, bytes of
 *     the table, descriptions in progress), naming the limit and the
 *     daemon, while another uid still locks;
 *   - one uid holding local-read tokens and socket connections leaves
 *     another uid's local reads working;
 *   - one uid making shared-pointer counters on a file is refused past
 *     its share and pushes out no other user's counter.
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
#include <grp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"

static int setup(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to drop to uid %u\n", NOBODY);
		*state = NULL;
		return 0;
	}
	return cluster_setup(state, CLUSTER_TCP);
}

#define SHARES "sessions_max = 32\nsessions_per_uid = 8\n" \
	"lock_requests_per_uid = 16\nlock_bytes_per_uid = 64K\n" \
	"local_tokens_per_uid = 4\nlocal_conns_per_uid = 2\ncounters_per_uid = 4\n" \
	"lock_pending_per_uid = 4\nlock_list_batch = 64\n"

static int setup_shares(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to act as several uids\n");
		*state = NULL;
		return 0;
	}
	return cluster_setup_conf(state, CLUSTER_TCP, SHARES);
}

static int teardown(void **state)
{
	return *state ? cluster_teardown(state) : 0;
}

/* The CPU time (user + system) process pid has used, in seconds. */
static double cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
	assert_non_null(p);
	/* fields 3.. follow; utime and stime are fields 14 and 15 */
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &st), 2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Send daemon `server` (-1: metadata) an AUTH whose credential (nobody's,
 * valid) names as reply address a port on this host nobody listens on. */
static void auth_to_nowhere(struct cluster *c, int server, struct raw *raw)
{
	struct tp_config cfg;
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_AUTH, .reqid = 1 };
	char target[RAW_TARGET_LEN], cred[4096];
	uint8_t name[TP_MAX_ADDR], frame[8192], key[TP_KEY_SIZE];
	int port = free_port();
	long len;

	raw_connect(c->conf, server, raw, &cfg, target);
	memcpy(name, raw->name, raw->name_len);
	assert_true(raw->name_len >= 4);
	name[2] = (uint8_t)(port >> 8); /* sockaddr_in(6): the port at bytes 2..3 */
	name[3] = (uint8_t)port;
	cluster_nobody_cred(&cfg, target, name, raw->name_len, key, cred, sizeof(cred));
	m.credential = cred;
	len = tp_frame_build(frame, sizeof(frame), &h, name, raw->name_len, &m.base);
	assert_true(len > 0);
	raw_send_as_is(raw, frame, (size_t)len);
}

/* After one such AUTH a daemon may try that address once, briefly; it
 * must not spin. A bound on the CPU it uses over 3 s, not on wall time. */
static void assert_no_spin(struct cluster *c, int server, pid_t pid)
{
	struct raw raw;
	double before, used;

	auth_to_nowhere(c, server, &raw);
	usleep(200 * 1000);
	before = cpu_s(pid);
	sleep(3);
	used = cpu_s(pid) - before;
	print_message("daemon %d: %.2f s CPU in 3 s after an AUTH to nowhere\n", server, used);
	assert_true(used < 0.1);
	tnet_close(raw.net);
}

static void test_auth_to_nowhere(void **state)
{
	struct cluster *c = *state;
	struct tessera_ping p[1 + N_IOS];

	NEED_ROOT(c);
	assert_no_spin(c, -1, c->mds);
	assert_no_spin(c, 0, c->ios[0]);
	/* both go on serving */
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(p[0].status, 0);
	assert_int_equal(p[1].status, 0);
}

/* ------------------------------------------------------------ helpers */

/* Become uid (its gid the same number, no supplementary groups). */
static void become(uint32_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) {
		perror("becoming another uid");
		_exit(100);
	}
}

/* Run fn(conf) in a child as uid: its exit status (0: as expected). */
static int run_as(const struct cluster *c, uint32_t uid, int (*fn)(const char *conf))
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		become(uid);
		_exit(fn(c->conf));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* n credentials of uid for target naming raw's endpoint, made by a child
 * that is uid; each sent as an AUTH on raw (no session): how many were
 * answered with a session. */
static int auth_as(struct raw *raw, const char *munge_sock, const char *target, uint32_t uid,
		   int n)
{
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char err[512], *all = calloc((size_t)n, 1024), *line, *save = NULL;
	int fds[2], st, ok = 0;
	size_t got = 0;
	ssize_t k;
	pid_t pid;

	assert_non_null(all);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		become(uid);
		for (int i = 0; i < n; i++) {
			uint8_t key[TP_KEY_SIZE];
			char *text = NULL;

			if (tp_auth_encode(munge_sock, raw->daemon_uid, target, raw->name, raw->name_len, key, &text, err,
					   sizeof(err)) ||
			    write(fds[1], text, strlen(text)) != (ssize_t)strlen(text) ||
			    write(fds[1], "\n", 1) != 1)
				_exit(1);
			free(text);
		}
		_exit(0);
	}
	close(fds[1]);
	while ((k = read(fds[0], all + got, (size_t)n * 1024 - 1 - got)) > 0)
		got += (size_t)k;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		m.credential = line;
		if (raw_request(raw, TP_OP_AUTH, &m.base, NULL, 0, err, sizeof(err)) == 0)
			ok++;
		else
			print_message("AUTH of uid %u refused: %s\n", uid, err);
		if (raw->last_auth)
			protobuf_c_message_free_unpacked(&raw->last_auth->base, NULL);
		raw->last_auth = NULL;
	}
	free(all);
	return ok;
}

/* A ping on raw's session: the sessions its daemon holds. */
static unsigned raw_ping_sessions(struct raw *raw)
{
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	Tessera__PingReply *rep;
	struct tp_hdr h = { .opcode = TP_OP_PING, .reqid = 31 };
	struct tp_frame reply;
	uint8_t frame[4096];
	char msg[512];
	unsigned n;
	long len;

	len = tp_frame_build(frame, sizeof(frame), &h, raw->name, raw->name_len, &ping.base);
	assert_true(len > 0);
	assert_int_equal(raw_roundtrip(raw, frame, (size_t)len, &reply, msg, sizeof(msg)), 0);
	rep = (Tessera__PingReply *)tp_body_unpack(&reply, &tessera__ping_reply__descriptor);
	assert_non_null(rep);
	assert_non_null(rep->core);
	n = (unsigned)rep->core->sessions;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return n;
}

/* ------------------------------------------------------------ sessions */

/* Five uids fill storage daemon 0's 32 sessions (8 each), and nobody
 * asks for three times its share: root, the daemons' uid here, and a uid
 * new to the daemon still get sessions, and the table stays bounded. */
static void test_session_table(void **state)
{
	struct cluster *c = *state;
	struct tp_config cfg;
	char target[RAW_TARGET_LEN];
	struct raw flood, root;
	struct tessera_ping p[1 + N_IOS];
	unsigned n;

	NEED_ROOT(c);
	raw_connect(c->conf, 0, &flood, &cfg, target);
	for (uint32_t uid = 1001; uid <= 1005; uid++)
		assert_int_equal(auth_as(&flood, cfg.munge_socket, target, uid, 8), 8);
	/* past its share, a uid loses its own least recently used sessions */
	assert_int_equal(auth_as(&flood, cfg.munge_socket, target, NOBODY, 24), 24);
	/* root gets in, and its session serves */
	raw_open(c, 0, &root);
	n = raw_ping_sessions(&root);
	print_message("storage daemon 0 holds %u sessions (sessions_max 32)\n", n);
	assert_true(n <= 32);
	/* so does a uid the daemon has not seen */
	assert_int_equal(auth_as(&flood, cfg.munge_socket, target, 1006, 1), 1);
	/* the cluster's own client goes on */
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(p[1].status, 0);
	tnet_close(root.net);
	tnet_close(flood.net);
}

static int setup_idle(void **state)
{
	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	return cluster_setup_conf(state, CLUSTER_TCP, "session_idle_s = 10\n");
}

/* With session_idle_s = 10: a raw session left idle for 12 s is gone (its
 * frames go unanswered), and the cluster's client, idle as long, renews
 * its sessions first, so its next call needs no probe. */
static void test_idle_sessions(void **state)
{
	struct cluster *c = *state;
	struct tessera_ping p[1 + N_IOS];
	struct raw raw;
	char msg[256];
	double t;

	NEED_ROOT(c);
	raw_open(c, 0, &raw);
	assert_true(raw_ping_sessions(&raw) >= 1);
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	sleep(12);
	{
		Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;

		assert_int_equal(raw_request(&raw, TP_OP_PING, &ping.base, NULL, 0, msg, sizeof(msg)),
				 -ETIMEDOUT);
	}
	t = now_s();
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	for (int i = 0; i <= N_IOS; i++)
		assert_int_equal(p[i].status, 0);
	print_message("after 12 s idle: a ping of every daemon took %.0f ms\n",
		      (now_s() - t) * 1000);
	assert_true(now_s() - t < 0.2); /* renewed, not found out by a 250 ms probe */
	tnet_close(raw.net);
}

/* ------------------------------------------------------------ locks */

#define LOCK_FILE "/bounds-locks"

/* nobody: a lock of 4096 ranges needs more of the table than its 64 KiB;
 * then 16 one-byte read locks, and the 17th is refused (EDQUOT, naming
 * the limit and the daemon). The locks stay for their lease. */
static int lock_flood(const char *conf)
{
	uint64_t offs[4096], lens[4096];
	tessera_fs *fs = NULL;
	tessera_file *f;
	tessera_lock *lk;
	char err[512];
	int i, rc = 0;

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, LOCK_FILE, O_RDWR, 0, NULL, &f) == 0);
	for (i = 0; i < 4096; i++) {
		offs[i] = 2u * (uint64_t)i;
		lens[i] = 1;
	}
	EXPECT(tessera_lock_list(f, TESSERA_LOCK_READ, offs, lens, 4096, TESSERA_LOCK_TWO_PHASE,
				 &lk) == -EDQUOT);
	fprintf(stderr, "nobody, 4096 ranges: %s\n", tessera_errmsg(fs));
	EXPECT(strstr(tessera_errmsg(fs), "lock_bytes_per_uid"));
	for (i = 0; i < 40; i++) {
		rc = tessera_lock_range(f, TESSERA_LOCK_READ, 2u * (uint64_t)i, 1,
					TESSERA_LOCK_TWO_PHASE, &lk);
		if (rc)
			break;
	}
	fprintf(stderr, "nobody, lock %d: %s\n", i + 1, rc ? tessera_errmsg(fs) : "taken");
	EXPECT(i == 16 && rc == -EDQUOT);
	EXPECT(strstr(tessera_errmsg(fs), "lock_requests_per_uid"));
	EXPECT(strstr(tessera_errmsg(fs), "storage daemon"));
	_exit(0); /* without unlocking: the locks stay for their lease */
}

/* uid 1001, meanwhile: its locks are taken. */
static int lock_other(const char *conf)
{
	tessera_fs *fs = NULL;
	tessera_file *f;
	tessera_lock *lk[8];
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, LOCK_FILE, O_RDWR, 0, NULL, &f) == 0);
	for (int i = 0; i < 8; i++)
		EXPECT(tessera_lock_range(f, TESSERA_LOCK_READ, 4096 + (uint64_t)i, 1,
					  TESSERA_LOCK_TWO_PHASE, &lk[i]) == 0);
	for (int i = 0; i < 8; i++)
		EXPECT(tessera_unlock(lk[i]) == 0);
	tessera_close(f);
	tessera_disconnect(fs);
	return 0;
}

/* nobody, raw: lock descriptions left in progress (more regions to
 * come) until refused; the 5th is (EDQUOT, naming the limit). */
static int pending_flood(const char *conf)
{
	Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
	struct tessera_layout l;
	Tessera__Capability *cap;
	tessera_fs *fs = NULL;
	tessera_file *f;
	struct raw raw;
	char err[512], msg[512] = "";
	uint64_t off, len = 1;
	int i, rc = 0;

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, LOCK_FILE, O_RDWR, 0, NULL, &f) == 0);
	EXPECT(tessera_file_layout(f, &l) == 0);
	cap = file_cap(f);
	raw_open_at(conf, (int)l.servers[0], &raw);
	m.session = 0x5eed;
	m.handle = l.handles[0];
	m.mode = TESSERA_LOCK_READ;
	m.strip_size = l.strip_size;
	m.stripe_count = l.count;
	m.n_offsets = m.n_lengths = 1;
	m.offsets = &off;
	m.lengths = &len;
	m.more = 1;
	m.cap = cap;
	for (i = 0; i < 1100; i++) {
		off = 2u * (uint64_t)i;
		if ((rc = raw_request(&raw, TP_OP_LOCK_ACQUIRE, &m.base, NULL, 0, msg, sizeof(msg))))
			break;
	}
	fprintf(stderr, "nobody, description %d: %s\n", i + 1, rc ? msg : "started");
	EXPECT(i == 4 && rc == -EDQUOT);
	EXPECT(strstr(msg, "lock_pending_per_uid") && strstr(msg, "storage daemon"));
	_exit(0); /* the descriptions stay for the session's lease */
}

/* uid 1001, meanwhile: a lock of 200 regions, sent in 64-region messages
 * (lock_list_batch), is taken. */
static int pending_other(const char *conf)
{
	uint64_t offs[200], lens[200];
	tessera_fs *fs = NULL;
	tessera_file *f;
	tessera_lock *lk;
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, LOCK_FILE, O_RDWR, 0, NULL, &f) == 0);
	for (int i = 0; i < 200; i++) {
		offs[i] = 8192 + 2u * (uint64_t)i;
		lens[i] = 1;
	}
	EXPECT(tessera_lock_list(f, TESSERA_LOCK_READ, offs, lens, 200, TESSERA_LOCK_TWO_PHASE,
				 &lk) == 0);
	EXPECT(tessera_unlock(lk) == 0);
	tessera_close(f);
	tessera_disconnect(fs);
	return 0;
}

static void test_lock_flood(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = { .strip_size = 1 << 20, .count = 1 };
	tessera_file *f;

	NEED_ROOT(c);
	CHECK(c->fs, tessera_open(c->fs, LOCK_FILE, O_CREAT | O_RDWR, 0666, &l, &f));
	CHECK(c->fs, tessera_close(f));
	assert_int_equal(run_as(c, NOBODY, lock_flood), 0);
	assert_int_equal(run_as(c, 1001, lock_other), 0);
	assert_int_equal(run_as(c, NOBODY, pending_flood), 0);
	assert_int_equal(run_as(c, 1001, pending_other), 0);
}

/* ------------------------------------------------------------ local reads */

#define LOCAL_FILE "/bounds-local"
#define LOCAL_SIZE 65536

/* A connection to abstract socket sock that sends nothing; -1. */
static int sock_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memcpy(sa.sun_path + 1, sock, strlen(sock));
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct
		    sockaddr_un, sun_path) + 1 + strlen(sock)))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Closed by the daemon within 0.3 s? */
static int closed_soon(int fd)
{
	struct timeval tv = { 0, 300000 };
	char byte;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return read(fd, &byte, 1) == 0;
}

/* nobody, as a child: takes local-read tokens of the file until refused
 * and opens 32 connections to the socket that send nothing, says so on
 * `ready`, and holds them until `release` closes. Its exit status: 0 when
 * the refusals came at its shares (4 tokens, EDQUOT naming the limit; 2
 * connections). */
static int local_hog(const char *conf, int ready, int release)
{
	tessera_fs *fs = NULL;
	tessera_file *f;
	struct tessera_layout l;
	Tessera__Capability *cap;
	uint8_t token[TP_LOCAL_TOKEN];
	char err[512], sock[128], msg[512];
	struct raw raw;
	int fds[32], tokens = 0, closed = 0, rc = 0;

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, LOCAL_FILE, O_RDONLY, 0, NULL, &f) == 0);
	EXPECT(tessera_file_layout(f, &l) == 0);
	cap = file_cap(f);
	raw_open_at(conf, (int)l.servers[0], &raw);
	while (tokens < 70 && !(rc = raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock),
						msg, sizeof(msg))))
		tokens++;
	fprintf(stderr, "nobody: %d tokens, then %s\n", tokens, msg);
	for (int i = 0; i < 32; i++)
		fds[i] = sock_connect(sock);
	for (int i = 2; i < 32; i++)
		closed += fds[i] < 0 || closed_soon(fds[i]);
	fprintf(stderr, "nobody: %d of the 30 past its share closed at once\n", closed);
	(void)!write(ready, "r", 1);
	(void)!read(release, err, 1);
	EXPECT(tokens == 4 && rc == -EDQUOT);
	EXPECT(strstr(msg, "local_tokens_per_uid") && strstr(msg, "storage daemon"));
	EXPECT(closed == 30);
	return 0;
}

/* uid 1001 reads the file's first strip: through its local file? */
static int local_reader(const char *conf)
{
	tessera_fs *fs = NULL;
	tessera_file *f;
	struct tessera_copy_stats st;
	static uint8_t buf[LOCAL_SIZE];
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, LOCAL_FILE, O_RDONLY, 0, NULL, &f) == 0);
	EXPECT(tessera_pread(f, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf));
	EXPECT(buf[0] == 'b' && buf[sizeof(buf) - 1] == 'b');
	tessera_copy_stats(fs, &st);
	fprintf(stderr, "uid 1001: %llu bytes read locally\n", (unsigned long long)st.read_local);
	EXPECT(st.read_local >= sizeof(buf));
	tessera_close(f);
	tessera_disconnect(fs);
	return 0;
}

static void test_local_hog(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = { .strip_size = LOCAL_SIZE, .count = 1 };
	static uint8_t data[LOCAL_SIZE];
	int ready[2], release[2], st;
	tessera_file *f;
	char byte;
	pid_t hog;

	NEED_ROOT(c);
	memset(data, 'b', sizeof(data));
	CHECK(c->fs, tessera_open(c->fs, LOCAL_FILE, O_CREAT | O_RDWR, 0644, &l, &f));
	assert_int_equal(tessera_pwrite(f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	CHECK(c->fs, tessera_close(f));
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	hog = fork();
	assert_true(hog >= 0);
	if (hog == 0) {
		close(ready[0]);
		close(release[1]);
		cluster_drop_to_nobody();
		_exit(local_hog(c->conf, ready[1], release[0]));
	}
	close(ready[1]);
	close(release[0]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	/* within the hog's connections' 2 s and its tokens' 5 s */
	assert_int_equal(run_as(c, 1001, local_reader), 0);
	close(release[1]);
	assert_int_equal(waitpid(hog, &st, 0), hog);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(ready[0]);
}

/* ------------------------------------------------------------ counters */

#define CTR_FILE "/bounds-counters"
#define CTR_ROOT_KEY 7

/* nobody, with write access to the file: 70 new keys; its 5th is refused
 * (EDQUOT naming the limit), and it keeps working on its own. */
static int counter_flood(const char *conf)
{
	tessera_fs *fs = NULL;
	tessera_file *f;
	char err[512];
	int64_t old;
	int i, rc = 0;

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, CTR_FILE, O_RDWR, 0, NULL, &f) == 0);
	for (i = 0; i < 70; i++)
		if ((rc = tessera_fetch_add(f, 1000 + (uint64_t)i, 1, &old)))
			break;
	fprintf(stderr, "nobody, counter %d: %s\n", i + 1, rc ? tessera_errmsg(fs) : "made");
	EXPECT(i == 4 && rc == -EDQUOT);
	EXPECT(strstr(tessera_errmsg(fs), "counters_per_uid"));
	EXPECT(tessera_fetch_add(f, 1000, 1, &old) == 0 && old == 1);
	tessera_close(f);
	tessera_disconnect(fs);
	return 0;
}

static void test_counter_flood(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = { .strip_size = 65536, .count = 1 };
	tessera_file *f;
	int64_t old;

	NEED_ROOT(c);
	CHECK(c->fs, tessera_open(c->fs, CTR_FILE, O_CREAT | O_RDWR, 0666, &l, &f));
	CHECK(c->fs, tessera_fetch_set(f, CTR_ROOT_KEY, 12288, &old));
	assert_int_equal(run_as(c, NOBODY, counter_flood), 0);
	CHECK(c->fs, tessera_fetch_add(f, CTR_ROOT_KEY, 0, &old));
	assert_int_equal(old, 12288); /* root's shared pointer is where it was */
	CHECK(c->fs, tessera_close(f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_auth_to_nowhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_table, setup_shares, teardown),
		cmocka_unit_test_setup_teardown(test_idle_sessions, setup_idle, teardown),
		cmocka_unit_test_setup_teardown(test_lock_flood, setup_shares, teardown),
		cmocka_unit_test_setup_teardown(test_local_hog, setup_shares, teardown),
		cmocka_unit_test_setup_teardown(test_counter_flood, setup_shares, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
