/*
 * cluster.c - the integration tests' harness: real daemons (1 metadata
 * daemon, N_IOS storage daemons) on loopback with ephemeral ports and a
 * temporary directory, started from $TESSERA_BUILD/bin and stopped by PID,
 * with their own munged (a generated key, its socket in that directory);
 * and raw frames sent straight to a daemon on a session of their own.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first port of the kernel's ephemeral range (32768 on Debian). */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 32768;

	if (f) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

static int port_bindable(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	assert_true(fd >= 0);
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* Whether port is among the n of taken. */
static int port_taken(int port, const int *taken, int n)
{
	for (int i = 0; i < n; i++)
		if (taken[i] == port)
			return 1;
	return 0;
}

/* n free ports below the kernel's ephemeral range, so that no outgoing
 * connection (a client's, with the connected transport one per daemon)
 * takes a daemon's port while a test restarts the daemon on it; all
 * different (drawn at random, two daemons of one cluster once drew the
 * same one, and the second could not listen). */
void free_ports(int *out, int n)
{
	int hi = ephemeral_low() - 1;

	for (int k = 0; k < n; k++) {
		int i;

		for (i = 0; i < 200 && hi > 10001; i++) {
			uint32_t r;

			assert_int_equal(getrandom(&r, sizeof(r), 0), sizeof(r));
			out[k] = 10000 + (int)(r % (uint32_t)(hi - 10000));
			if (!port_taken(out[k], out, k) && port_bindable(out[k]))
				break;
		}
		if (i == 200 || hi <= 10001)
			fail_msg("no free port between 10000 and %d", hi);
	}
}

int free_port(void)
{
	int port;

	free_ports(&port, 1);
	return port;
}

/* Start one daemon, with disk faults if `faults` is not NULL (a storage
 * daemon's -F), without waiting for it. */
static pid_t spawn_nowait(struct cluster *c, const char *prog, const char *name, int index,
			  const char *faults)
{
	char path[1400], dir[400], pidfile[400], log[400], idx[16];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", c->bin, prog);
	snprintf(dir, sizeof(dir), "%s/%s", c->dir, name);
	snprintf(pidfile, sizeof(pidfile), "%s/%s.pid", c->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", c->dir, name);
	snprintf(idx, sizeof(idx), "%d", index);
	unlink(pidfile);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		if (faults)
			execl(path, prog, "-c", c->conf, "-d", dir, "-i", idx, "-p", pidfile, "-F",
			      faults, (char *)NULL);
		else
			execl(path, prog, "-c", c->conf, "-d", dir, "-i", idx, "-p", pidfile,
			      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Wait for daemon `name`'s pid file (written once it listens). */
/* A daemon of c did not start: stop the others (SIGKILL), which a failed
 * setup's missing teardown would leave running. */
static void abandon(struct cluster *c)
{
	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = 0;
	for (int i = 0; i < N_IOS; i++) {
		cluster_stop_pid(c->ios[i], SIGKILL);
		c->ios[i] = 0;
	}
	cluster_stop_pid(c->munged, SIGKILL);
	c->munged = 0;
}

static pid_t spawn_wait(struct cluster *c, const char *name, pid_t pid)
{
	char pidfile[400], log[400];

	snprintf(pidfile, sizeof(pidfile), "%s/%s.pid", c->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", c->dir, name);
	/* Up to 60 s: a loaded machine running sanitizer builds can take
	 * seconds to start one (a start-up time is not what these test). */
	for (int i = 0; i < 3000; i++) {
		if (access(pidfile, F_OK) == 0)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) != 0) {
			char cmd[500];

			snprintf(cmd, sizeof(cmd), "tail -n 20 %s >&2", log);
			if (system(cmd) != 0)
				fprintf(stderr, "(no log at %s)\n", log);
			abandon(c);
			fail_msg("%s exited at start-up; its log (above): %s", name, log);
		}
		usleep(20000);
	}
	cluster_stop_pid(pid, SIGKILL);
	abandon(c);
	fail_msg("%s did not start within 60 s; its log: %s", name, log);
	return -1;
}

static pid_t spawn(struct cluster *c, const char *prog, const char *name, int index,
		   const char *faults)
{
	return spawn_wait(c, name, spawn_nowait(c, prog, name, index, faults));
}

pid_t cluster_spawn(struct cluster *c, const char *prog, const char *name, int index)
{
	return spawn(c, prog, name, index, NULL);
}

void cluster_restart_ios(struct cluster *c, int index, const char *faults)
{
	char name[16];

	snprintf(name, sizeof(name), "ios%d", index);
	cluster_stop_pid(c->ios[index], SIGTERM);
	/* No ping after it: the client's next request must find the new
	 * daemon by itself (it takes in the closed connection before sending,
	 * and probes at once when the connection is made again). */
	c->ios[index] = spawn(c, "tessera-ios", name, index, faults);
}

void cluster_stop_pid(pid_t pid, int sig)
{
	if (pid <= 0)
		return;
	kill(pid, sig);
	waitpid(pid, NULL, 0);
}

pid_t munged_start(const char *dir, char *sock, size_t socklen)
{
	char key[400], pidfile[400], seed[400], log[400], arg[4][440];
	uint8_t bytes[1024];
	FILE *f;
	pid_t pid;

	snprintf(key, sizeof(key), "%s/munge.key", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/munged.pid", dir);
	snprintf(seed, sizeof(seed), "%s/munged.seed", dir);
	snprintf(log, sizeof(log), "%s/munged.log", dir);
	snprintf(sock, socklen, "%s/munge.sock", dir);
	f = fopen("/dev/urandom", "r");
	assert_non_null(f);
	assert_int_equal(fread(bytes, 1, sizeof(bytes), f), sizeof(bytes));
	fclose(f);
	f = fopen(key, "w");
	assert_non_null(f);
	assert_int_equal(fchmod(fileno(f), 0600), 0);
	assert_int_equal(fwrite(bytes, 1, sizeof(bytes), f), sizeof(bytes));
	fclose(f);
	snprintf(arg[0], sizeof(arg[0]), "--key-file=%s", key);
	snprintf(arg[1], sizeof(arg[1]), "--socket=%s", sock);
	snprintf(arg[2], sizeof(arg[2]), "--pid-file=%s", pidfile);
	snprintf(arg[3], sizeof(arg[3]), "--seed-file=%s", seed);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		execlp("munged", "munged", "--foreground", "--force", arg[0], arg[1], arg[2], arg[3],
		       (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1500; i++) {
		if (access(sock, F_OK) == 0)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) != 0)
			fail_msg("munged exited at start-up (is munge installed? make deps); "
				 "its log: %s", log);
		usleep(20000);
	}
	fail_msg("munged did not start within 30 s; its log: %s", log);
	return -1;
}

/* All daemons are started at once and then waited for: each spends most
 * of its start-up loading libfabric (docs/design.md, "Start-up"), which overlaps. */
void cluster_start(struct cluster *c)
{
	char name[16];

	c->mds = spawn_nowait(c, "tessera-mds", "mds", 0, NULL);
	for (int i = 0; i < N_IOS; i++) {
		snprintf(name, sizeof(name), "ios%d", i);
		c->ios[i] = spawn_nowait(c, "tessera-ios", name, i, NULL);
	}
	spawn_wait(c, "mds", c->mds);
	for (int i = 0; i < N_IOS; i++) {
		snprintf(name, sizeof(name), "ios%d", i);
		spawn_wait(c, name, c->ios[i]);
	}
}

void cluster_stop(struct cluster *c, int sig)
{
	cluster_stop_pid(c->mds, sig);
	for (int i = 0; i < N_IOS; i++)
		cluster_stop_pid(c->ios[i], sig);
}

void cluster_write_key(const char *path, mode_t mode)
{
	uint8_t key[32];
	FILE *r = fopen("/dev/urandom", "r"), *f;
	int fd;

	assert_non_null(r);
	assert_int_equal(fread(key, 1, sizeof(key), r), sizeof(key));
	fclose(r);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (size_t i = 0; i < sizeof(key); i++)
		fprintf(f, "%02x", key[i]);
	fputc('\n', f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

int cluster_setup(void **state, const char *provider)
{
	return cluster_setup_conf(state, provider, NULL);
}

/* 64 random bits of a cluster's fs_id. */
static uint64_t fs_id_part(void)
{
	uint64_t v = 0;
	FILE *r = fopen("/dev/urandom", "r");

	assert_non_null(r);
	assert_int_equal(fread(&v, sizeof(v), 1, r), 1);
	fclose(r);
	return v;
}

int cluster_setup_conf(void **state, const char *provider, const char *extra)
{
	struct cluster *c = calloc(1, sizeof(*c));
	const char *build = getenv("TESSERA_BUILD");
	char err[512];
	int ports[N_IOS + 1];
	FILE *f;

	assert_non_null(c);
	snprintf(c->bin, sizeof(c->bin), "%s/bin", build ? build : "build");
	snprintf(c->dir, sizeof(c->dir), "/tmp/tessera-test-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	/* others may reach the munge socket and the config (tests that drop
	 * privileges), nothing else */
	assert_int_equal(chmod(c->dir, 0711), 0);
	c->munged = munged_start(c->dir, c->munge_sock, sizeof(c->munge_sock));
	snprintf(c->conf, sizeof(c->conf), "%s/tessera.conf", c->dir);
	snprintf(c->key, sizeof(c->key), "%s/tessera.key", c->dir);
	cluster_write_key(c->key, 0600);
	f = fopen(c->conf, "w");
	assert_non_null(f);
	if (!provider) /* CLUSTER_TCP */
		provider = getenv("TESSERA_TEST_PROVIDER");
	if (provider) /* else the config's default */
		fprintf(f, "provider = %s\n", provider);
	free_ports(ports, N_IOS + 1);
	fprintf(f, "mds = 127.0.0.1:%d\n", ports[0]);
	/* each cluster a file system of its own, as tessera-genconfig makes */
	fprintf(f, "fs_id = %016" PRIx64 "%016" PRIx64 "\n", fs_id_part(), fs_id_part());
	fprintf(f, "key_file = %s\n", c->key);
	for (int i = 0; i < N_IOS; i++)
		fprintf(f, "ios = 127.0.0.1:%d\n", ports[1 + i]);
	fprintf(f, "timeout_ms = %d\n", TIMEOUT_MS);
	fprintf(f, "munge_socket = %s\n", c->munge_sock);
	/* the daemons run as this process's user (tessera-genconfig's default) */
	fprintf(f, "daemon_uid = %u\n", (unsigned)geteuid());
	if (extra)
		fputs(extra, f);
	fclose(f);
	cluster_start(c);
	if (tessera_connect(c->conf, &c->fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	*state = c;
	return 0;
}

void cluster_test_filter(void)
{
	const char *only = getenv("TESSERA_TEST_ONLY");

	if (only && *only)
		cmocka_set_test_filter(only);
}

int cluster_teardown(void **state)
{
	struct cluster *c = *state;
	char cmd[400];

	tessera_disconnect(c->fs);
	cluster_stop(c, SIGTERM);
	cluster_stop_pid(c->munged, SIGTERM);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", c->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", c->dir);
	free(c);
	return 0;
}

tessera_fs *cluster_connect_more(const char *conf)
{
	tessera_fs *fs;
	char err[512];

	if (tessera_connect(conf, &fs, err, sizeof(err)))
		fail_msg("connect %s: %s", conf, err);
	return fs;
}

tessera_file *cluster_open_striped(tessera_fs *fs, const char *path, uint64_t strip,
				   uint32_t count)
{
	struct tessera_layout l = { .strip_size = strip, .count = count };
	tessera_file *f;

	if (tessera_open(fs, path, O_RDWR | O_CREAT, 0644, &l, &f))
		fail_msg("open %s: %s", path, tessera_errmsg(fs));
	return f;
}

uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Seal raw's copy of a frame on its session when its lengths allow; a
 * frame whose lengths overrun it only gets the session's id. */
static void raw_seal_copy(struct raw *raw, uint8_t *sealed, size_t len)
{
	struct tp_frame f;
	char err[256];
	size_t head;

	if (!raw->ses.id || len < TP_HDR_SIZE)
		return;
	tp_frame_parse(sealed, len, SIZE_MAX, &f, err, sizeof(err));
	head = TP_HDR_SIZE + (size_t)f.hdr.addr_len + f.hdr.body_len;
	if (head <= len)
		tp_frame_seal(sealed, head, NULL, 0, &raw->ses, raw->seq++);
	else
		for (int i = 0; i < 8; i++)
			sealed[32 + i] = (uint8_t)(raw->ses.id >> (8 * i));
}

int raw_roundtrip(struct raw *raw, const uint8_t *frame, size_t len, struct tp_frame *reply,
			 char *msg, size_t msglen)
{
	uint8_t *sealed = malloc(len ? len : 1);
	struct iovec iov = { sealed, len };
	struct tnet_event ev[4];
	double deadline = now_s() + 5;
	int rc = -ETIMEDOUT, sent = 0;

	/* On the raw session, sealed when its lengths allow (a malformed frame
	 * still names the session, so its error comes back here). A copy: the
	 * caller's frame is const, and the provider reads the copy until the
	 * send completes. */
	assert_non_null(sealed);
	memcpy(sealed, frame, len);
	raw_seal_copy(raw, sealed, len);

	while ((rc = tnet_send(raw->net, raw->peer, &iov, 1, &raw->ctx)) == -EAGAIN &&
	       now_s() < deadline)
		tnet_poll(raw->net, ev, 4); /* progress the connection */
	if (rc == -EMSGSIZE) {
		/* connected mode: over the receive buffer the daemon announced
		 * when it accepted the connection, refused before it is sent */
		snprintf(msg, msglen, "refused by the sender: %zu bytes exceed the daemon's "
			 "receive buffer, the maximum it announced", len);
		free(sealed);
		return rc;
	}
	assert_int_equal(rc, 0);
	rc = -ETIMEDOUT;
	while (now_s() < deadline) {
		int n = tnet_poll(raw->net, ev, 4);

		for (int i = 0; i < n; i++) {
			char err[256];

			if (ev[i].type == TNET_SENT)
				sent = 1; /* raw sends one frame at a time: this one */
			if (ev[i].type != TNET_RECV)
				continue;
			assert_int_equal(tp_frame_parse(ev[i].rbuf->data, ev[i].len, 1 << 21, reply, err,
							 sizeof(err)), 0);
			/* a reply on the session is opened (decrypted, in SECRECY) */
			if (raw->ses.id && reply->hdr.session == raw->ses.id)
				tp_frame_open(reply, NULL, 0, &raw->ses, NULL);
			rc = reply->hdr.status;
			msg[0] = 0;
			if (reply->hdr.opcode == TP_OP_AUTH && rc == 0)
				raw->last_auth = (Tessera__AuthReply *)
					tp_body_unpack(reply, &tessera__auth_reply__descriptor);
			if (raw->reply_data) {
				raw->reply_len = reply->hdr.data_len < raw->reply_cap
						 ? reply->hdr.data_len : raw->reply_cap;
				memcpy(raw->reply_data, reply->data, raw->reply_len);
			}
			if (rc < 0) {
				Tessera__ErrorReply *er = (Tessera__ErrorReply *)
					tp_body_unpack(reply, &tessera__error_reply__descriptor);

				assert_non_null(er);
				snprintf(msg, msglen, "%s", er->message);
				protobuf_c_message_free_unpacked(&er->base, NULL);
			}
			tnet_repost(raw->net, ev[i].rbuf);
			free(sealed); /* the reply came: the provider is done with it */
			return rc;
		}
		tnet_wait(raw->net, 10);
	}
	/* No reply: free the copy once the provider is done with it. A loaded
	 * machine (the sanitizer build in CI) may not have completed the send
	 * yet: wait for that, bounded; only a send still pending after it
	 * keeps the copy (a test's lifetime) rather than free what the
	 * provider may read. */
	for (deadline = now_s() + 30; !sent && now_s() < deadline; tnet_wait(raw->net, 10)) {
		int n = tnet_poll(raw->net, ev, 4);

		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_SENT)
				sent = 1;
			else if (ev[i].type == TNET_RECV)
				tnet_repost(raw->net, ev[i].rbuf); /* a late reply */
		}
	}
	if (sent)
		free(sealed);
	return rc;
}


/* Where a request message keeps its capability (NULL: no such field). */
static Tessera__Capability **cap_field(const ProtobufCMessage *msg)
{
	const ProtobufCFieldDescriptor *fd =
		protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, "cap");

	if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE ||
	    fd->descriptor != &tessera__capability__descriptor)
		return NULL;
	return (Tessera__Capability **)((char *)msg + fd->offset);
}

static const Tessera__Capability *cap_of(const ProtobufCMessage *msg)
{
	Tessera__Capability **slot = cap_field(msg);

	return slot ? *slot : NULL;
}

void raw_set_cap(const ProtobufCMessage *msg, const Tessera__Capability *cap)
{
	Tessera__Capability **slot = cap_field(msg);

	if (slot)
		*slot = (Tessera__Capability *)cap;
}

int raw_request(struct raw *raw, unsigned op, const ProtobufCMessage *msg, const void *data,
		size_t data_len, char *msg_out, size_t msglen)
{
	static uint64_t reqid = 5000;
	size_t cap = TP_HDR_SIZE + raw->name_len +
		     (msg ? protobuf_c_message_get_packed_size(msg) : 0);
	uint8_t *frame = malloc(cap + 4096 + data_len); /* room for raw->cap */
	struct tp_hdr h = { .opcode = (uint16_t)op, .reqid = ++reqid,
			    .data_len = (uint32_t)data_len };
	struct tp_frame reply;
	long len;
	int rc;

	assert_non_null(frame);
	if (raw->cap && msg && !cap_of(msg)) {
		raw_set_cap(msg, raw->cap);
		len = tp_frame_build(frame, cap + 4096, &h, raw->name, raw->name_len, msg);
		raw_set_cap(msg, NULL);
	} else {
		len = tp_frame_build(frame, cap, &h, raw->name, raw->name_len, msg);
	}
	assert_true(len > 0);
	if (data_len)
		memcpy(frame + len, data, data_len);
	rc = raw_roundtrip(raw, frame, (size_t)len + data_len, &reply, msg_out, msglen);
	free(frame);
	return rc;
}

void raw_auth(struct raw *raw, const char *munge_sock, const char *target)
{
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	Tessera__AuthReply *rep;
	char err[512], *cred = NULL;
	int rc;

	memset(&raw->ses, 0, sizeof(raw->ses));
	rc = tp_auth_encode(munge_sock, raw->daemon_uid, target, raw->name, raw->name_len,
			    raw->ses.key, &cred, err, sizeof(err));
	if (rc)
		fail_msg("raw AUTH to %s: %s", target, err);
	m.credential = cred;
	raw->reply_data = NULL;
	rc = raw_request(raw, TP_OP_AUTH, &m.base, NULL, 0, err, sizeof(err));
	free(cred);
	if (rc)
		fail_msg("raw AUTH to %s: %s", target, err);
	rep = raw->last_auth; /* kept by raw_roundtrip */
	assert_non_null(rep);
	raw->ses.id = rep->session;
	raw->ses.mode = (enum tp_seal_mode)rep->seal_mode;
	raw->seq = 0;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	raw->last_auth = NULL;
}

void raw_connect(const char *conf, int ios, struct raw *raw, struct tp_config *cfg,
		 char target[RAW_TARGET_LEN])
{
	struct tnet_opts to = { "tcp;ofi_rxm", NULL, NULL, 0, 1 << 21, 4 };
	const struct tp_server *s;
	char err[512];

	memset(raw, 0, sizeof(*raw));
	assert_int_equal(tp_config_load(conf, cfg, err, sizeof(err)), 0);
	raw->daemon_uid = cfg->daemon_uid;
	if (!strcmp(cfg->provider, TNET_PROVIDER_CONN))
		to.provider = TNET_PROVIDER_CONN; /* rxm cannot reach its daemons */
	s = ios < 0 ? &cfg->mds : &cfg->ios[ios];
	to.node = s->host;
	to.service = s->port;
	assert_int_equal(tnet_open(&to, &raw->net, err, sizeof(err)), 0);
	raw->name_len = sizeof(raw->name);
	assert_int_equal(tnet_name(raw->net, raw->name, &raw->name_len), 0);
	assert_int_equal(tnet_lookup(raw->net, s->host, s->port, &raw->peer), 0);
	if (ios < 0)
		snprintf(target, RAW_TARGET_LEN, "mds");
	else
		snprintf(target, RAW_TARGET_LEN, "ios:%d", ios);
}

void raw_open_at(const char *conf, int ios, struct raw *raw)
{
	struct tp_config cfg;
	char target[RAW_TARGET_LEN];

	raw_connect(conf, ios, raw, &cfg, target);
	raw_auth(raw, cfg.munge_socket, target);
}

void raw_open(struct cluster *c, uint32_t ios, struct raw *raw)
{
	raw_open_at(c->conf, (int)ios, raw);
}

void raw_open_mds(struct cluster *c, struct raw *raw)
{
	raw_open_at(c->conf, -1, raw);
}

int raw_mds_cap(struct cluster *c, const Tessera__CapRequest *m, Tessera__Capability **out,
		char *msg, size_t msglen)
{
	struct raw raw;
	uint8_t frame[4096];
	struct tp_hdr h = { .opcode = TP_OP_CAP, .reqid = 99 };
	struct tp_frame reply;
	long len;
	int rc;

	raw_open_mds(c, &raw);
	len = tp_frame_build(frame, sizeof(frame), &h, raw.name, raw.name_len, &m->base);
	assert_true(len > 0);
	*out = NULL;
	rc = raw_roundtrip(&raw, frame, (size_t)len, &reply, msg, msglen);
	if (!rc) {
		Tessera__CapReply *rep = (Tessera__CapReply *)
			tp_body_unpack(&reply, &tessera__cap_reply__descriptor);

		assert_non_null(rep);
		assert_non_null(rep->cap);
		*out = rep->cap;
		rep->cap = NULL;
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	tnet_close(raw.net);
	return rc;
}

Tessera__Capability *file_cap(tessera_file *f)
{
	struct tessera_file_share *share = malloc(sizeof(*share));
	Tessera__Capability *cap;

	assert_non_null(share);
	assert_int_equal(tessera_file_share(f, share), 0);
	assert_true(share->cap_len > 0);
	cap = tessera__capability__unpack(NULL, share->cap_len, share->cap);
	assert_non_null(cap);
	free(share);
	return cap;
}

/* ------------------------------------------------- unprivileged callers */

void cluster_drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		perror("dropping to nobody");
		_exit(100);
	}
}

/* Run fn(conf) in a child as nobody; its exit status (0: all went as
 * expected; else the line that did not, printed). */
int cluster_as_nobody(const struct cluster *c, int (*fn)(const char *conf))
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		cluster_drop_to_nobody();
		_exit(fn(c->conf));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* A raw endpoint to daemon `server` (-1: metadata) on a session of
 * nobody's: the child makes the credential (naming our endpoint) and
 * hands it and the proposed key back through a pipe. */
void cluster_nobody_cred(const struct tp_config *cfg, const char *target, const void *name,
			 size_t name_len, uint8_t key[TP_KEY_SIZE], char *cred, size_t credlen)
{
	char err[512];
	int fds[2], st;
	ssize_t got = 0, n;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *text = NULL;
		uint8_t k[TP_KEY_SIZE];

		close(fds[0]);
		cluster_drop_to_nobody();
		if (tp_auth_encode(cfg->munge_socket, cfg->daemon_uid, target, name, name_len, k,
				   &text, err, sizeof(err))) {
			fprintf(stderr, "nobody's credential: %s\n", err);
			_exit(1);
		}
		if (write(fds[1], k, sizeof(k)) != (ssize_t)sizeof(k) ||
		    write(fds[1], text, strlen(text)) != (ssize_t)strlen(text))
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], key, TP_KEY_SIZE), TP_KEY_SIZE);
	while ((n = read(fds[0], cred + got, credlen - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	cred[got] = '\0';
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

void raw_open_as_nobody(const struct cluster *c, int server, struct raw *raw)
{
	struct tp_config cfg;
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char err[512], target[RAW_TARGET_LEN], cred[4096];

	raw_connect(c->conf, server, raw, &cfg, target);
	cluster_nobody_cred(&cfg, target, raw->name, raw->name_len, raw->ses.key, cred,
			    sizeof(cred));
	m.credential = cred;
	assert_int_equal(raw_request(raw, TP_OP_AUTH, &m.base, NULL, 0, err, sizeof(err)), 0);
	assert_non_null(raw->last_auth);
	assert_int_equal(raw->last_auth->uid, NOBODY);
	assert_int_equal(raw->last_auth->gid, NOBODY);
	raw->ses.id = raw->last_auth->session;
	raw->ses.mode = (enum tp_seal_mode)raw->last_auth->seal_mode;
	raw->seq = 0;
	protobuf_c_message_free_unpacked(&raw->last_auth->base, NULL);
	raw->last_auth = NULL;
}

/* Frames that arrive at raw within secs (each reposted). */
int raw_arrivals(struct raw *raw, double secs)
{
	struct tnet_event ev[4];
	double end = now_s() + secs;
	int got = 0;

	while (now_s() < end) {
		int n = tnet_poll(raw->net, ev, 4);

		for (int i = 0; i < n; i++)
			if (ev[i].type == TNET_RECV) {
				got++;
				tnet_repost(raw->net, ev[i].rbuf);
			}
		tnet_wait(raw->net, 10);
	}
	return got;
}

/* Send a built frame as it is (no sealing) and wait for its send. */
void raw_send_as_is(struct raw *raw, const uint8_t *frame, size_t len)
{
	struct iovec iov = { (void *)frame, len };
	struct tnet_event ev[4];
	double end = now_s() + 5;
	int rc, sent = 0;

	while ((rc = tnet_send(raw->net, raw->peer, &iov, 1, &raw->ctx)) == -EAGAIN &&
	       now_s() < end)
		tnet_poll(raw->net, ev, 4);
	assert_int_equal(rc, 0);
	while (!sent && now_s() < end) {
		int n = tnet_poll(raw->net, ev, 4);

		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_SENT)
				sent = 1;
			else
				tnet_repost(raw->net, ev[i].rbuf);
		}
	}
	assert_true(sent);
}

/* ------------------------------------------------------------ squatter
 *
 * A process of uid nobody listening where a stopped daemon listened, as
 * any user of the daemon's host could (issue 29.1). It answers as well as
 * it can: an AUTH whose credential it can decode (munged lets it when the
 * credential is not restricted to the daemons' uid) gets a correctly
 * sealed AuthReply, and every later request a sealed reply (a READ gets
 * SQUAT_FORGED bytes); an AUTH it cannot decode gets, in turn, an
 * unsealed error and an AuthReply sealed with a key of its own choosing.
 */
struct squat_state {
	struct tp_config cfg;
	struct tnet *net;
	char target[RAW_TARGET_LEN];
	struct tp_session ses;       /* learned from a decoded credential */
	struct tnet_ctx ctx;
	struct squat_counts n;
};

/* Send a frame (leaked: the provider may read it until its send ends,
 * and the squatter lives for one test). */
static void squat_send(struct squat_state *s, uint64_t peer, uint8_t *frame, size_t len)
{
	struct iovec iov = { frame, len };
	struct tnet_event ev[4];
	double end = now_s() + 2;

	while (tnet_send(s->net, peer, &iov, 1, &s->ctx) == -EAGAIN && now_s() < end)
		if (tnet_poll(s->net, ev, 1) == 1 && ev[0].type == TNET_RECV)
			tnet_repost(s->net, ev[0].rbuf);
}

static void squat_reply(struct squat_state *s, uint64_t peer, const struct tp_frame *fr,
			int status, const ProtobufCMessage *msg, size_t data_len,
			const struct tp_session *seal)
{
	struct tp_hdr h = { .opcode = fr->hdr.opcode, .reqid = fr->hdr.reqid,
			    .flags = TP_FLAG_REPLY, .status = status,
			    .data_len = (uint32_t)data_len };
	size_t cap = TP_HDR_SIZE + protobuf_c_message_get_packed_size(msg) + data_len;
	uint8_t *frame = malloc(cap);
	long len;

	assert_non_null(frame);
	len = tp_frame_build(frame, cap, &h, NULL, 0, msg);
	assert_true(len > 0);
	memset(frame + len, SQUAT_FORGED, data_len);
	if (seal)
		tp_frame_seal(frame, (size_t)len, NULL, 0, seal, 0);
	squat_send(s, peer, frame, (size_t)len + data_len);
}

/* Where to answer fr, which came on `from` (connected mode: its
 * connection; an RDM provider: TNET_PEER_UNKNOWN, so the address the frame
 * names, as the squatter may choose): 0, or an error. */
static int squat_peer(struct squat_state *s, uint64_t from, const struct tp_frame *fr,
		      uint64_t *peer)
{
	*peer = from;
	return from != TNET_PEER_UNKNOWN ? 0
					 : tnet_insert_name(s->net, fr->addr, fr->hdr.addr_len, peer);
}

static void squat_auth(struct squat_state *s, uint64_t from, const struct tp_frame *fr)
{
	Tessera__AuthRequest *m = (Tessera__AuthRequest *)
		tp_body_unpack(fr, &tessera__auth_request__descriptor);
	Tessera__AuthReply rep = TESSERA__AUTH_REPLY__INIT;
	Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;
	struct tp_auth_id id;
	struct tp_session mine = { .id = 77 };
	char err[256];
	uint64_t peer;

	s->n.auths++;
	if (!m || squat_peer(s, from, fr, &peer))
		goto out;
	if (!tp_auth_decode(s->cfg.munge_socket, m->credential, s->target, &id, err,
			    sizeof(err))) {
		s->n.decoded++;
		s->ses.id = 0x5157415454455200ull + s->n.auths;
		memcpy(s->ses.key, id.key, TP_KEY_SIZE);
		rep.session = s->ses.id;
		rep.uid = id.uid;
		rep.gid = id.gid;
		rep.boot = 1;
		squat_reply(s, peer, fr, 0, &rep.base, 0, &s->ses);
	} else if (s->n.auths % 2) {
		er.code = -EACCES;
		er.message = "the squatter could not decode the credential";
		squat_reply(s, peer, fr, -EACCES, &er.base, 0, NULL);
	} else {
		memset(mine.key, 0x5a, TP_KEY_SIZE);
		rep.session = mine.id;
		squat_reply(s, peer, fr, 0, &rep.base, 0, &mine);
	}
out:
	if (m)
		protobuf_c_message_free_unpacked(&m->base, NULL);
}

/* A request after AUTH: counted, and answered if the squatter holds the
 * session's key (READ with forged bytes, anything else with an empty
 * success). */
static void squat_request(struct squat_state *s, uint64_t from, const struct tp_frame *fr,
			  size_t len)
{
	const ProtobufCMessageDescriptor *desc = tp_reply_desc(fr->hdr.opcode);
	uint8_t store[1024] __attribute__((aligned(16)));
	Tessera__ReadRequest *rd = NULL;
	size_t data = 0;
	uint64_t peer;

	s->n.frames++;
	s->n.bytes += len;
	if (!s->ses.id || fr->hdr.session != s->ses.id || !desc || desc->sizeof_message >
	    sizeof(store) || squat_peer(s, from, fr, &peer))
		return;
	if (fr->hdr.opcode == TP_OP_READ &&
	    (rd = (Tessera__ReadRequest *)tp_body_unpack(fr, &tessera__read_request__descriptor))) {
		data = rd->length < (1u << 20) ? rd->length : 1u << 20;
		protobuf_c_message_free_unpacked(&rd->base, NULL);
	}
	protobuf_c_message_init(desc, store);
	if (fr->hdr.opcode == TP_OP_WRITE)
		((Tessera__WriteReply *)store)->written = fr->hdr.data_len;
	s->n.forged += data ? 1 : 0;
	squat_reply(s, peer, fr, 0, (ProtobufCMessage *)store, data, &s->ses);
}

static void squat_frame(struct squat_state *s, const struct tnet_event *ev)
{
	struct tp_frame fr;
	char err[256];

	if (tp_frame_parse(ev->rbuf->data, ev->len, ev->rbuf->cap, &fr, err, sizeof(err))) {
		s->n.frames++;
		s->n.bytes += ev->len;
	} else if (fr.hdr.opcode == TP_OP_AUTH && !fr.hdr.session) {
		squat_auth(s, ev->peer, &fr);
	} else {
		squat_request(s, ev->peer, &fr, ev->len);
	}
}

/* The squatter's process: listen, answer until `stop` reads EOF, then
 * write its counts to `out`. */
static void squat_serve(const char *conf, int server, int ready, int stop, int out)
{
	static struct squat_state s;
	struct tnet_opts to = { .listen = 1, .nrecv = 8 };
	struct pollfd pfd = { .fd = stop, .events = POLLIN };
	struct tnet_event ev[8];
	char err[512];
	const struct tp_server *where;

	cluster_drop_to_nobody();
	if (tp_config_load(conf, &s.cfg, err, sizeof(err)))
		_exit(3);
	where = server < 0 ? &s.cfg.mds : &s.cfg.ios[server];
	to.provider = s.cfg.provider;
	to.node = where->host;
	to.service = where->port;
	to.buf_size = tp_config_max_frame(&s.cfg);
	if (server < 0)
		snprintf(s.target, sizeof(s.target), "mds");
	else
		snprintf(s.target, sizeof(s.target), "ios:%d", server);
	for (int i = 0; i < 100 && tnet_open(&to, &s.net, err, sizeof(err)); i++)
		usleep(50000); /* the port may take a moment to be free */
	if (!s.net) {
		fprintf(stderr, "squatter: %s\n", err);
		_exit(4);
	}
	if (write(ready, "r", 1) != 1)
		_exit(5);
	while (poll(&pfd, 1, 0) == 0) {
		int n = tnet_poll(s.net, ev, 8);

		for (int i = 0; i < n; i++) {
			if (ev[i].type != TNET_RECV)
				continue;
			if (!ev[i].status)
				squat_frame(&s, &ev[i]);
			tnet_repost(s.net, ev[i].rbuf);
		}
		tnet_wait(s.net, 10);
	}
	if (write(out, &s.n, sizeof(s.n)) != (ssize_t)sizeof(s.n))
		_exit(6);
	_exit(0);
}

void squat_start(const struct cluster *c, int server, struct squatter *sq)
{
	int ready[2], stop[2], out[2];
	char b;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(stop), 0);
	assert_int_equal(pipe(out), 0);
	sq->pid = fork();
	assert_true(sq->pid >= 0);
	if (sq->pid == 0) {
		close(ready[0]);
		close(stop[1]);
		close(out[0]);
		squat_serve(c->conf, server, ready[1], stop[0], out[1]);
	}
	close(ready[1]);
	close(stop[0]);
	close(out[1]);
	if (read(ready[0], &b, 1) != 1)
		fail_msg("the squatter did not start listening");
	close(ready[0]);
	sq->stop_fd = stop[1];
	sq->out_fd = out[0];
}

void squat_stop(struct squatter *sq, struct squat_counts *n)
{
	int st;

	memset(n, 0, sizeof(*n));
	close(sq->stop_fd);
	if (read(sq->out_fd, n, sizeof(*n)) != (ssize_t)sizeof(*n))
		fail_msg("the squatter's counts did not come");
	close(sq->out_fd);
	assert_int_equal(waitpid(sq->pid, &st, 0), sq->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* LOCAL_OPEN by hand: 0 with token and sock from the reply, or the
 * status (msg). */
int raw_local_open(struct raw *raw, uint64_t handle, const Tessera__Capability *cap,
		   uint8_t token[TP_LOCAL_TOKEN], char *sock, size_t socklen, char *msg,
		   size_t msglen)
{
	Tessera__LocalOpenRequest m = TESSERA__LOCAL_OPEN_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_LOCAL_OPEN, .reqid = 4242 };
	uint8_t frame[8192];
	struct tp_frame reply;
	long len;
	int rc;

	m.handle = handle;
	m.cap = (Tessera__Capability *)cap;
	len = tp_frame_build(frame, sizeof(frame), &h, raw->name, raw->name_len, &m.base);
	if (len <= 0)
		return -EINVAL;
	rc = raw_roundtrip(raw, frame, (size_t)len, &reply, msg, msglen);
	if (!rc) {
		Tessera__LocalOpenReply *rep = (Tessera__LocalOpenReply *)
			tp_body_unpack(&reply, &tessera__local_open_reply__descriptor);

		if (!rep || rep->absent || rep->token.len != TP_LOCAL_TOKEN) {
			if (rep)
				protobuf_c_message_free_unpacked(&rep->base, NULL);
			return -EPROTO;
		}
		memcpy(token, rep->token.data, TP_LOCAL_TOKEN);
		snprintf(sock, socklen, "%s", rep->socket);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	return rc;
}

void cluster_put_file(tessera_fs *fs, const char *path, int mode, const char *text)
{
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_CREAT | O_RDWR | O_TRUNC, (mode_t)mode, NULL, &f));
	CHECK(fs, (int)tessera_pwrite(f, text, strlen(text), 0));
	CHECK(fs, tessera_close(f));
}
