/*
 * test_daemon_core.c - the daemon core on real daemons: a client that
 * never reads its replies costs a storage daemon bounded memory, does not
 * slow anyone else down, and is forgotten at the deadline; parked requests
 * are answered later while others are served, and dropped when their
 * client is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"

#define MIB (1u << 20)
/* The object the raw requests read and write (of a file made for it, on
 * storage daemon 0), and the file's capability they carry. */
static uint64_t obj;
static Tessera__Capability *obj_cap;

static void make_object(struct cluster *c)
{
	struct tessera_layout l = { .strip_size = 65536, .count = N_IOS };
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, "/object", O_CREAT | O_RDWR, 0644, &l, &f));
	CHECK(c->fs, tessera_file_layout(f, &l));
	for (uint32_t i = 0; i < l.count; i++)
		if (l.servers[i] == 0)
			obj = l.handles[i];
	obj_cap = file_cap(f);
	tessera_close(f);
}

/* Resident memory of a process, in bytes (0 if unknown). */
static uint64_t rss_of(pid_t pid)
{
	char path[64], line[256];
	uint64_t kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static int sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return 1;
#endif
#endif
	return 0;
}

static long build_frame(struct raw *raw, uint8_t *buf, size_t cap, unsigned op, uint64_t reqid,
			const ProtobufCMessage *msg, uint32_t data_len)
{
	struct tp_hdr h = { .opcode = (uint16_t)op, .reqid = reqid, .data_len = data_len };
	long len;

	if (obj_cap)
		raw_set_cap(msg, obj_cap);
	len = tp_frame_build(buf, cap, &h, raw->name, raw->name_len, msg);
	/* on raw's session; a frame with data is sealed once the data is in
	 * (raw_roundtrip) */
	if (len > 0 && raw->ses.id && !data_len)
		tp_frame_seal(buf, (size_t)len, NULL, 0, &raw->ses, raw->seq++);
	return len;
}

/* Ping a daemon straight; the reply's core stats in *core (if non-NULL)
 * and the round trip's time in seconds. */
static double raw_ping(struct raw *raw, uint32_t hold_ms, Tessera__CoreStats *core)
{
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	struct tp_frame reply;
	uint8_t frame[1024];
	char msg[256];
	double t0 = now_s();
	long len;
	int rc;

	ping.hold_ms = hold_ms;
	len = build_frame(raw, frame, sizeof(frame), TP_OP_PING, 7, &ping.base, 0);
	assert_true(len > 0);
	rc = raw_roundtrip(raw, frame, (size_t)len, &reply, msg, sizeof(msg));
	if (rc)
		fail_msg("ping: %s (%d)", msg, rc);
	if (core) {
		Tessera__PingReply *rep = (Tessera__PingReply *)
			tp_body_unpack(&reply, &tessera__ping_reply__descriptor);

		assert_non_null(rep);
		assert_non_null(rep->core);
		*core = *rep->core;
		core->base.unknown_fields = NULL;
		core->base.n_unknown_fields = 0;
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	return now_s() - t0;
}

/* A child process's failure: why, on stderr (the suite's log), then its
 * exit status, which the parent reports. */
static void child_fail(int status, const char *step, const char *why)
{
	fprintf(stderr, "child %ld: %s failed: %s (exit %d)\n", (long)getpid(), step, why, status);
	_exit(status);
}

/* In a child process (no CMocka there): a raw endpoint with `nrecv`
 * small receive buffers aimed at storage daemon `ios`, on a session of its
 * own (the AUTH reply's buffer is reposted); exits on failure. */
static void child_raw_open(const char *conf, uint32_t ios, unsigned nrecv, struct raw *raw)
{
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_AUTH, .reqid = 1 };
	struct tp_config cfg;
	struct tnet_opts to = { "tcp;ofi_rxm", NULL, NULL, 0, 4096, nrecv };
	char err[512], target[32], *cred = NULL;
	uint8_t frame[4096];
	struct iovec iov;
	long len;

	memset(raw, 0, sizeof(*raw));
	if (tp_config_load(conf, &cfg, err, sizeof(err)))
		child_fail(2, "config", err);
	to.node = cfg.ios[ios].host; /* the source address that reaches it */
	to.service = cfg.ios[ios].port;
	if (tnet_open(&to, &raw->net, err, sizeof(err)))
		child_fail(2, "tnet_open", err);
	raw->name_len = sizeof(raw->name);
	if (tnet_name(raw->net, raw->name, &raw->name_len) ||
	    tnet_lookup(raw->net, cfg.ios[ios].host, cfg.ios[ios].port, &raw->peer))
		child_fail(3, "tnet_name or tnet_lookup", cfg.ios[ios].port);
	snprintf(target, sizeof(target), "ios:%u", ios);
	if (tp_auth_encode(cfg.munge_socket, cfg.daemon_uid, target, raw->name, raw->name_len,
			   raw->ses.key, &cred, err, sizeof(err)))
		child_fail(5, "MUNGE encode", err);
	m.credential = cred;
	len = tp_frame_build(frame, sizeof(frame), &h, raw->name, raw->name_len, &m.base);
	free(cred);
	iov = (struct iovec){ frame, (size_t)len };
	while (tnet_send(raw->net, raw->peer, &iov, 1, &raw->ctx) == -EAGAIN) {
		struct tnet_event ev[4];

		tnet_poll(raw->net, ev, 4);
	}
	for (double end = now_s() + 10; now_s() < end && !raw->ses.id;) {
		struct tnet_event ev[4];
		int n = tnet_poll(raw->net, ev, 4);

		for (int i = 0; i < n; i++) {
			struct tp_frame fr;
			Tessera__AuthReply *ar;

			if (ev[i].type != TNET_RECV)
				continue;
			if (!tp_frame_parse(ev[i].rbuf->data, ev[i].len, ev[i].rbuf->cap, &fr, err,
					    sizeof(err)) && fr.hdr.status == 0 &&
			    (ar = (Tessera__AuthReply *)tp_body_unpack(&fr,
					&tessera__auth_reply__descriptor))) {
				raw->ses.id = ar->session;
				raw->ses.mode = (enum tp_seal_mode)ar->seal_mode;
				protobuf_c_message_free_unpacked(&ar->base, NULL);
			}
			tnet_repost(raw->net, ev[i].rbuf);
		}
		usleep(1000);
	}
	if (!raw->ses.id)
		child_fail(6, "AUTH", "no reply with a session within 10 s");
}

/* The misbehaving client (a child process): send `n` reads of `len`
 * bytes to storage daemon 0, take none of the replies, stay alive for
 * `linger` seconds. Keeps one receive buffer and never reposts it. */
static void silent_reader(const char *conf, unsigned n, uint32_t len, double linger)
{
	struct raw raw;
	uint8_t frame[512];
	struct tnet_ctx *ctx = calloc(n, sizeof(*ctx));

	if (!ctx)
		child_fail(2, "calloc", strerror(ENOMEM));
	child_raw_open(conf, 0, 1, &raw);
	for (unsigned i = 0; i < n; i++) {
		Tessera__ReadRequest rd = TESSERA__READ_REQUEST__INIT;
		long flen;
		struct iovec iov;
		double give_up = now_s() + 10;
		int rc;

		rd.handle = obj;
		rd.offset = 0;
		rd.length = len;
		flen = build_frame(&raw, frame, sizeof(frame), TP_OP_READ, 1000 + i, &rd.base, 0);
		iov = (struct iovec){ frame, (size_t)flen };
		while ((rc = tnet_send(raw.net, raw.peer, &iov, 1, &ctx[i])) == -EAGAIN &&
		       now_s() < give_up) {
			struct tnet_event ev[8];

			tnet_poll(raw.net, ev, 8); /* progress; no receive is reposted */
		}
		if (rc)
			child_fail(4, "tnet_send", strerror(-rc));
	}
	/* Drive our own sends out, still without taking any reply. */
	for (double end = now_s() + linger; now_s() < end;) {
		struct tnet_event ev[8];

		tnet_poll(raw.net, ev, 8);
		usleep(1000);
	}
	_exit(0);
}

/* The client that leaves (a child process): five pings to storage daemon
 * 2, each held 1.5 s, then gone without a word while they are parked. */
static void parking_client(const char *conf)
{
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	struct raw raw;
	uint8_t frame[5][512];
	struct iovec iov;
	long len;

	child_raw_open(conf, 2, 2, &raw);
	ping.hold_ms = 1500;
	/* five frames, each sealed with its own sequence number (one
	 * frame sent five times would be a replay, taken once) */
	for (int i = 0; i < 5; i++) {
		struct tnet_event ev[4];

		len = build_frame(&raw, frame[i], sizeof(frame[i]), TP_OP_PING, 5 + i,
				  &ping.base, 0);
		iov = (struct iovec){ frame[i], (size_t)len };
		while (tnet_send(raw.net, raw.peer, &iov, 1, &raw.ctx) == -EAGAIN)
			tnet_poll(raw.net, ev, 4);
	}
	for (double end = now_s() + 0.3; now_s() < end;) {
		struct tnet_event ev[4];

		tnet_poll(raw.net, ev, 4);
		usleep(1000);
	}
	_exit(0); /* gone, without a word, holding 5 parked pings */
}

/*
 * The misbehaving clients run as processes of their own: this program
 * started again with CHILD_ARG, the role, the config, the object and its
 * capability (hex). A forked copy of the test (threaded: libfabric's,
 * MUNGE's and the sanitizer's state) may call only async-signal-safe
 * functions, and under CI's load such a child never reached the daemon.
 */
#define CHILD_ARG "--misbehaving-client"
#define CHILD_FLOOD "flood"
#define CHILD_PARK "park"

static pid_t spawn_child(struct cluster *c, const char *role)
{
	extern char **environ;
	char objs[24], *hex = NULL;
	pid_t pid;

	snprintf(objs, sizeof(objs), "%llu", (unsigned long long)obj);
	if (obj_cap) {
		size_t n = tessera__capability__get_packed_size(obj_cap);
		uint8_t *b = malloc(n + 1);

		hex = malloc(2 * n + 1);
		assert_true(b && hex);
		tessera__capability__pack(obj_cap, b);
		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", b[i]);
		hex[2 * n] = 0;
		free(b);
	}
	{
		char *argv[] = { "test_daemon_core", CHILD_ARG, (char *)role, c->conf, objs,
				 hex ? hex : "-", NULL };

		assert_int_equal(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ), 0);
	}
	free(hex);
	return pid;
}

/* The test fails unless child `who` (pid) ended with status 0. */
static void child_check(const char *who, pid_t pid, int status)
{
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return;
	fail_msg("%s (child %ld) %s %d; its reason is above", who, (long)pid,
		 WIFEXITED(status) ? "exited with" : "died of signal",
		 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* The child's side: argv as spawn_child made it; never returns. */
static int child_main(int argc, char **argv)
{
	const char *role, *conf, *hex;

	if (argc != 6)
		child_fail(2, "arguments", "role, config, object, capability");
	role = argv[2];
	conf = argv[3];
	hex = argv[5];
	obj = strtoull(argv[4], NULL, 10);
	if (strcmp(hex, "-")) {
		size_t n = strlen(hex) / 2;
		uint8_t *b = malloc(n + 1);

		if (!b)
			child_fail(2, "malloc", strerror(ENOMEM));
		for (size_t i = 0; i < n; i++)
			sscanf(hex + 2 * i, "%2hhx", &b[i]);
		obj_cap = tessera__capability__unpack(NULL, n, b);
		free(b);
		if (!obj_cap)
			child_fail(2, "capability", hex);
	}
	if (!strcmp(role, CHILD_FLOOD))
		silent_reader(conf, 1000, MIB, 3.0 * TIMEOUT_MS / 1000);
	if (!strcmp(role, CHILD_PARK))
		parking_client(conf);
	child_fail(2, "role", role);
	return 2;
}

static void write_object(struct raw *raw, uint32_t len)
{
	Tessera__WriteRequest wr = TESSERA__WRITE_REQUEST__INIT;
	struct tp_frame reply;
	size_t cap = len + 4096;
	uint8_t *frame = malloc(cap);
	char msg[256];
	long flen;

	assert_non_null(frame);
	wr.handle = obj;
	flen = build_frame(raw, frame, cap, TP_OP_WRITE, 3, &wr.base, len);
	assert_true(flen > 0);
	memset(frame + flen, 0xab, len);
	assert_int_equal(raw_roundtrip(raw, frame, (size_t)flen + len, &reply, msg, sizeof(msg)), 0);
	free(frame);
}

/*
 * A client sends 1,000 reads of 1 MiB and never reads a reply. The storage
 * daemon's debt stays within its per-client budget and its memory within
 * that plus slack, another client's pings answer promptly throughout, and
 * once the deadline has passed the debt is zero and the memory is back.
 */
static void test_unread_replies(void **state)
{
	struct cluster *c = *state;
	struct raw raw;
	Tessera__CoreStats core;
	uint64_t rss0, rss_max = 0, debt_max = 0;
	double ping_max = 0, t_end;
	pid_t child;
	int status;

	make_object(c);
	raw_open(c, 0, &raw);
	write_object(&raw, MIB);
	raw_ping(&raw, 0, &core);
	rss0 = rss_of(c->ios[0]);
	child = spawn_child(c, CHILD_FLOOD);
	t_end = now_s() + 2.0 * TIMEOUT_MS / 1000 + 1.0;
	while (now_s() < t_end) {
		double t = raw_ping(&raw, 0, &core);
		uint64_t rss = rss_of(c->ios[0]);

		if (t > ping_max)
			ping_max = t;
		if (rss > rss_max)
			rss_max = rss;
		if (core.reply_bytes > debt_max)
			debt_max = core.reply_bytes;
		usleep(20000);
	}
	raw_ping(&raw, 0, &core);
	print_message("unread replies: debt max %.1f MiB (per-client budget %.0f MiB), "
		      "RSS %.1f -> max %.1f -> %.1f MiB, ping max %.1f ms, dropped %lu, "
		      "refused %lu, expired %lu, peers closed %lu\n",
		      debt_max / (double)MIB, core.peer_budget_bytes / (double)MIB,
		      rss0 / (double)MIB, rss_max / (double)MIB,
		      rss_of(c->ios[0]) / (double)MIB, ping_max * 1e3,
		      (unsigned long)core.requests_dropped, (unsigned long)core.requests_refused,
		      (unsigned long)core.replies_expired, (unsigned long)core.peers_closed);
	if (waitpid(child, &status, WNOHANG) == child)
		child_check("the flooding client", child, status);
	/* Within budget all along, and owed nothing after the deadline. */
	assert_true(debt_max > 8 * MIB); /* the flood did reach the daemon */
	assert_true(debt_max <= core.peer_budget_bytes);
	assert_int_equal(core.reply_bytes, 0);
	assert_int_equal(core.reply_entries, 0);
	assert_true(core.requests_dropped + core.requests_refused > 0);
	assert_true(core.peers_closed + core.replies_expired > 0);
	/* Others are served throughout. The figure printed above is the
	 * measure (15 ms here, against the 100 ms); what fails the
	 * test is a stall: a loop waiting on the silent peer would hold a
	 * ping for a reply deadline (TIMEOUT_MS), and a noisy machine must
	 * not fail it for being slow. */
	assert_true(ping_max < TIMEOUT_MS / 1000.0 / 4);
	if (!sanitized()) { /* ASan keeps freed memory in quarantine */
		assert_true(rss_max < rss0 + core.peer_budget_bytes + 48ull * MIB);
		assert_true(rss_of(c->ios[0]) < rss0 + 24ull * MIB);
	}
	/* The daemon still serves the misbehaving client's kind: a real read. */
	{
		Tessera__ReadRequest rd = TESSERA__READ_REQUEST__INIT;
		struct tp_frame reply;
		uint8_t frame[512];
		char msg[256];
		long flen;

		rd.handle = obj;
		rd.length = 4096;
		flen = build_frame(&raw, frame, sizeof(frame), TP_OP_READ, 11, &rd.base, 0);
		assert_int_equal(raw_roundtrip(&raw, frame, (size_t)flen, &reply, msg, sizeof(msg)), 0);
		assert_int_equal(reply.hdr.data_len, 4096);
	}
	kill(child, SIGKILL);
	waitpid(child, &status, 0); /* or reaped above, having lingered its time */
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&obj_cap->base, NULL);
	obj_cap = NULL;
}

/* A held ping is answered after its hold while others are answered at
 * once; the metadata daemon parks too. */
static void test_parked_serves_others(void **state)
{
	struct cluster *c = *state;
	struct raw holder, other;
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	Tessera__CoreStats core;
	uint8_t frame[512];
	struct iovec iov;
	struct tnet_event ev[4];
	double t0, answered = 0;
	long len;
	int quick = 0;

	raw_open(c, 1, &holder);
	raw_open(c, 1, &other);
	ping.hold_ms = 800;
	len = build_frame(&holder, frame, sizeof(frame), TP_OP_PING, 42, &ping.base, 0);
	iov = (struct iovec){ frame, (size_t)len };
	t0 = now_s();
	while (tnet_send(holder.net, holder.peer, &iov, 1, &holder.ctx) == -EAGAIN)
		tnet_poll(holder.net, ev, 4);
	while (!answered && now_s() < t0 + 5) {
		int n = tnet_poll(holder.net, ev, 4);

		for (int i = 0; i < n; i++)
			if (ev[i].type == TNET_RECV) {
				answered = now_s() - t0;
				tnet_repost(holder.net, ev[i].rbuf);
			}
		if (!answered && raw_ping(&other, 0, &core) < 0.4) {
			quick++;
			if (now_s() - t0 < 0.6)
				assert_int_equal(core.parked, 1);
		}
		usleep(10000);
	}
	print_message("held ping answered after %.0f ms; %d other pings meanwhile\n",
		      answered * 1e3, quick);
	assert_true(answered >= 0.79);
	assert_true(quick >= 2); /* the held ping did not hold the loop */
	raw_ping(&other, 0, &core);
	assert_int_equal(core.parked, 0);
	tnet_close(holder.net);
	tnet_close(other.net);
}

/* A parked request whose client vanishes is dropped at its deadline, and
 * the daemon owes nothing afterwards (the ASan build checks for leaks at
 * teardown). */
static void test_parked_client_gone(void **state)
{
	struct cluster *c = *state;
	struct raw other;
	Tessera__CoreStats core;
	pid_t child = spawn_child(c, CHILD_PARK);
	int status;

	assert_int_equal(waitpid(child, &status, 0), child);
	child_check("the parking client", child, status);
	raw_open(c, 2, &other);
	raw_ping(&other, 0, &core);
	assert_int_equal(core.parked, 5);
	/* After the hold and the reply deadline: nothing parked, nothing owed. */
	for (double end = now_s() + 1.5 + TIMEOUT_MS / 1000.0 + 2; now_s() < end;) {
		raw_ping(&other, 0, &core);
		if (!core.parked && !core.reply_entries)
			break;
		usleep(100000);
	}
	print_message("after the client left: parked %lu, owed %lu replies, expired %lu\n",
		      (unsigned long)core.parked, (unsigned long)core.reply_entries,
		      (unsigned long)core.parked_expired);
	assert_int_equal(core.parked, 0);
	assert_int_equal(core.parked_expired, 5);
	assert_int_equal(core.reply_entries, 0);
	tnet_close(other.net);
}

/* Stop the daemons with SIGTERM and require clean exits: under ASan a
 * leak makes a daemon exit non-zero. */
static int core_teardown(void **state)
{
	struct cluster *c = *state;
	pid_t pids[N_IOS + 1] = { c->mds };
	int bad = 0;

	memcpy(pids + 1, c->ios, sizeof(c->ios));
	tessera_disconnect(c->fs);
	c->fs = NULL;
	for (int i = 0; i <= N_IOS; i++) {
		int status;

		kill(pids[i], SIGTERM);
		if (waitpid(pids[i], &status, 0) == pids[i] &&
		    !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			fprintf(stderr, "daemon %d exited with status %d (see %s)\n", i, status,
				c->dir);
			bad = 1;
		}
		if (i == 0)
			c->mds = 0;
		else
			c->ios[i - 1] = 0;
	}
	if (bad)
		return -1; /* keep the directory with the daemons' logs */
	return cluster_teardown(state);
}

static int setup(void **state)
{
	return cluster_setup(state, "tcp;ofi_rxm");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unread_replies, setup, core_teardown),
		cmocka_unit_test_setup_teardown(test_parked_serves_others, setup, core_teardown),
		cmocka_unit_test_setup_teardown(test_parked_client_gone, setup, core_teardown),
	};

	if (argc > 1 && !strcmp(argv[1], CHILD_ARG))
		return child_main(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
