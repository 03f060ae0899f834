/*
 * cluster.h - the integration tests' harness (see cluster.c).
 */
#ifndef TESSERA_TEST_CLUSTER_H
#define TESSERA_TEST_CLUSTER_H

#include <stdint.h>
#include <sys/types.h>

#include "tessera.h"
#include "tproto.h"

#define N_IOS 4
#define TIMEOUT_MS 3000

struct cluster {
	char dir[256];
	char conf[300];
	char key[300];             /* the daemons' capability key (0600) */
	char bin[1024];
	pid_t mds;
	pid_t ios[N_IOS];
	pid_t munged;
	char munge_sock[320];
	tessera_fs *fs;
};

/* Start a munged of its own in `dir` (a generated key, its socket path
 * into sock), in the foreground: stop it by the PID returned. */
pid_t munged_start(const char *dir, char *sock, size_t socklen);

double now_s(void);
int free_port(void);
/* n free ports, all different (a cluster's daemons). */
void free_ports(int *out, int n);
/* Start one daemon; wait for its pid file (written once it listens). */
pid_t cluster_spawn(struct cluster *c, const char *prog, const char *name, int index);
void cluster_stop_pid(pid_t pid, int sig);
/* Stop storage daemon `index` and start it again over the same directory,
 * failing the disk calls `faults` names (tessera-ios -F; NULL: none). */
void cluster_restart_ios(struct cluster *c, int index, const char *faults);
void cluster_start(struct cluster *c);
void cluster_stop(struct cluster *c, int sig);
/* A fresh random capability key file at path, with this mode. */
void cluster_write_key(const char *path, mode_t mode);
/* The provider argument of a suite that runs on the default tcp transport
 * (the config table's, tcp;msg), or on TESSERA_TEST_PROVIDER when that is
 * set (e.g. "tcp;ofi_rxm", to run the suite on rxm). */
#define CLUSTER_TCP NULL
/* CMocka setup/teardown: a fresh cluster on `provider`, connected. */
int cluster_setup(void **state, const char *provider);
/* The same with more config lines ("key = value\n..."). */
int cluster_setup_conf(void **state, const char *provider, const char *extra);
int cluster_teardown(void **state);
/* TESSERA_TEST_ONLY=PATTERN (a cmocka glob, e.g. test_stop_mid_read):
 * run only the matching tests of the suite (when debugging one). Call
 * before cmocka_run_group_tests. */
void cluster_test_filter(void);
/* Another client of the file system of config conf (the test fails if it
 * cannot connect), and a file opened read-write, created with `strip`-byte
 * strips over `count` storage daemons if new. */
tessera_fs *cluster_connect_more(const char *conf);
tessera_file *cluster_open_striped(tessera_fs *fs, const char *path, uint64_t strip,
				   uint32_t count);
uint64_t rnd(uint64_t *s);

#define CHECK(fs, call) do { int rc_ = (call); if (rc_ < 0) fail_msg("%s: %s", #call, tessera_errmsg(fs)); } while (0)

/* Raw frames straight to storage daemon `ios`. */
struct raw {
	struct tnet *net;
	uint64_t peer;
	uint8_t name[TP_MAX_ADDR];
	size_t name_len;
	struct tnet_ctx ctx;
	/* When set, a reply's raw data (up to reply_cap bytes) is copied here
	 * and its length into reply_len before the receive buffer is reused. */
	uint8_t *reply_data;
	size_t reply_cap, reply_len;
	struct tp_session ses;       /* frames sent are sealed with it */
	uint64_t seq;                /* the next frame's sequence number */
	Tessera__AuthReply *last_auth; /* raw_roundtrip: an AUTH's answer */
	/* When set, raw_request puts it into a request that has a capability
	 * field and none set (storage daemons want one: docs/security.md). */
	const Tessera__Capability *cap;
	uint32_t daemon_uid;         /* raw_connect: the config's daemon_uid */
};
/* A raw endpoint on a session with storage daemon `ios` (raw_open), or
 * with the daemon `ios` names in config `conf` (-1: the metadata daemon). */
void raw_open(struct cluster *c, uint32_t ios, struct raw *raw);
void raw_open_at(const char *conf, int ios, struct raw *raw);
/* The endpoint alone, without a session: cfg gets the config, target the
 * daemon's name as credentials give it ("mds", "ios:N"). */
#define RAW_TARGET_LEN 32
void raw_connect(const char *conf, int ios, struct raw *raw, struct tp_config *cfg,
		 char target[RAW_TARGET_LEN]);
/* Open a session for raw (AUTH with a credential for `target`). */
void raw_auth(struct raw *raw, const char *munge_sock, const char *target);
/* The same aimed at the metadata daemon. */
void raw_open_mds(struct cluster *c, struct raw *raw);
/* A CAP request to the metadata daemon: its status; *out (free it) the
 * capability granted. */
int raw_mds_cap(struct cluster *c, const Tessera__CapRequest *m, Tessera__Capability **out,
		char *msg, size_t msglen);
/* Set msg's capability field (if its message has one) to cap. */
void raw_set_cap(const ProtobufCMessage *msg, const Tessera__Capability *cap);
/* The capability f's requests carry (taken from its share), for raw
 * frames; free with protobuf_c_message_free_unpacked(&cap->base, NULL). */
Tessera__Capability *file_cap(tessera_file *f);
/* Send a frame, wait for the reply: its status; msg gets an error's words. */
int raw_roundtrip(struct raw *raw, const uint8_t *frame, size_t len, struct tp_frame *reply,
		  char *msg, size_t msglen);
/* Build a request frame (op, body msg, then data_len bytes of data) and
 * send it: raw_roundtrip's answer. */
int raw_request(struct raw *raw, unsigned op, const ProtobufCMessage *msg, const void *data,
		size_t data_len, char *msg_out, size_t msglen);

/* ---- unprivileged callers (attack tests run as uid NOBODY; need root) */
#define NOBODY 65534u
#define NEED_ROOT(c) do { if (!(c)) skip(); } while (0)
/* For functions cluster_as_nobody runs: on a false condition print the
 * line and return nonzero (uses a `tessera_fs *fs` in scope, may be NULL). */
#define EXPECT(cond) do { if (!(cond)) { \
	fprintf(stderr, "as nobody, line %d: %s (%s)\n", __LINE__, #cond, \
		fs ? tessera_errmsg(fs) : ""); return __LINE__ % 200 + 1; } } while (0)

/* Drop this process to uid/gid NOBODY with no supplementary groups. */
void cluster_drop_to_nobody(void);
/* Run fn(conf) in a child as nobody; its exit status (0: all went as
 * expected; else the line that did not, printed). */
int cluster_as_nobody(const struct cluster *c, int (*fn)(const char *conf));
/* A MUNGE credential made by a child running as nobody, for daemon
 * `target` ("mds", "ios:N") and reply address name: its text into cred,
 * the session key it proposes into key. */
void cluster_nobody_cred(const struct tp_config *cfg, const char *target, const void *name,
			 size_t name_len, uint8_t key[TP_KEY_SIZE], char *cred, size_t credlen);
/* A raw endpoint to daemon `server` (-1: metadata) on a session of
 * nobody's: a child makes the credential naming our endpoint. */
void raw_open_as_nobody(const struct cluster *c, int server, struct raw *raw);
/* Frames that arrive at raw within secs (each reposted). */
int raw_arrivals(struct raw *raw, double secs);
/* Send a built frame as it is (no sealing) and wait for its send. */
void raw_send_as_is(struct raw *raw, const uint8_t *frame, size_t len);

/* A squatter: a process of uid NOBODY listening at daemon `server`'s
 * address (-1: the metadata daemon; stop the daemon first), answering
 * as well as it can without the daemons' uid (cluster.c says how). */
#define SQUAT_FORGED 0x66          /* the bytes its READ replies carry */
struct squat_counts {
	uint32_t auths;                /* AUTH frames received */
	uint32_t decoded;              /* of which it decoded the credential */
	uint32_t frames;               /* frames after AUTH (any other) */
	uint64_t bytes;                /* and their bytes */
	uint32_t forged;               /* READ replies it sent, forged bytes */
};
struct squatter {
	pid_t pid;
	int stop_fd, out_fd;
};
void squat_start(const struct cluster *c, int server, struct squatter *sq);
/* Stop it and take its counts. */
void squat_stop(struct squatter *sq, struct squat_counts *n);
/* LOCAL_OPEN by hand on raw: 0 with token and sock from the reply, or
 * the status (msg gets an error's words; -EPROTO: a reply without one). */
int raw_local_open(struct raw *raw, uint64_t handle, const Tessera__Capability *cap,
		   uint8_t token[TP_LOCAL_TOKEN], char *sock, size_t socklen, char *msg,
		   size_t msglen);
/* Create (or truncate) path with mode and write text into it. */
void cluster_put_file(tessera_fs *fs, const char *path, int mode, const char *text);

#endif
