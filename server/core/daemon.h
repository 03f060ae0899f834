/*
 * daemon.h - the shell both daemons share: a libev loop watching a tnet
 * endpoint, frame checking, dispatch through the opcode table, parked
 * requests and bounded per-peer reply queues.
 *
 * A handler answers its request with exactly one srv_reply*() call, either
 * at once or later after srv_park(). Anything malformed is answered here
 * with an ErrorReply naming the problem, and the daemon goes on serving.
 *
 * Replies never block the loop. Each leaves through its peer's queue: at
 * most SRV_PEER_POSTED of them are in the provider at once, the rest wait
 * in the queue; each has a deadline (the config's timeout_ms, which is as
 * long as any client waits). A reply still queued at its deadline is
 * dropped; a peer whose replies sit in the provider past their deadline
 * (it stopped reading) has its connection closed and their memory freed.
 * What the daemon owes all peers together is bounded (srv_limits below;
 * docs/design.md's "Daemon memory" adds it up): a request that would need room
 * beyond the budget is refused with EBUSY, and one from a peer whose queue
 * is full in entries is dropped unanswered.
 */
#ifndef TESSERA_DAEMON_H
#define TESSERA_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "tproto.h"

struct srv;
struct srv_parked;

/* Who sent a request: the identity of its session (munged's word, never
 * the request body's), and the key its reply is sealed with. */
#define SRV_MAX_GROUPS 64
struct srv_ident {
	uint64_t session;          /* 0: in-process (srv_create_local) */
	uint8_t key[TP_KEY_SIZE];
	uint32_t uid, gid;
	uint32_t ngids;            /* gids[0] == gid, then supplementary groups */
	uint32_t gids[SRV_MAX_GROUPS];
	/* uid 0 whose credential was encoded on a host not in admin_hosts:
	 * it may act for other users (a body's Cred, as the FUSE mount does),
	 * but never as uid 0 itself (squash_uid) and never as admin. */
	uint32_t foreign_root;
	uint8_t origin4[4];        /* the encoding host (munged's word) */
};

struct srv_req {
	struct srv *srv;
	struct tp_frame frame;     /* pointers into the receive buffer (a
				    * parked copy: into its own copy) */
	uint64_t peer;             /* where the reply goes: the session's address */
	uint64_t src;              /* the connection the frame came on, when the
				    * transport says (TNET_PEER_UNKNOWN: rxm) */
	struct srv_ident ident;    /* who asked */
	ProtobufCMessage *msg;     /* decoded body (the opcode's request) */
	int replied;
	/* Set by a handler: send a successful reply as a tagged message whose
	 * tag is the request id (a READ whose client receives the data
	 * straight into its caller's buffer); errors go untagged. */
	int reply_tagged;
	/* Set for parked requests only (owned by the daemon core). */
	struct srv_parked *parked;
	/* The receive buffer the frame lies in (NULL in a parked copy, or for
	 * frames handed in by srv_deliver): a parked request with bulk data
	 * takes its memory instead of copying the data. */
	struct tnet_rbuf *rbuf;
	/* A bulk write whose tag is not checked yet: its role checks it off
	 * the loop (srv_check_later_set), so its header and body are parsed
	 * but not trusted. A reply to it from the loop checks it first, and a
	 * refused frame gets none (srv_req_check). */
	int unchecked;
};

/* A handler of one opcode; ctx is the role's. It must reply, or park. */
typedef void (*srv_handler)(void *ctx, struct srv_req *req);

struct srv_role {
	const char *name;          /* "mds" or "ios" */
	uint32_t index;            /* credentials are for "mds" or "ios:INDEX" */
	/* TP_OP_LIMIT entries indexed by opcode; NULL: not served here
	 * (answered EOPNOTSUPP). Built with SRV_IOS_ENTRY or SRV_MDS_ENTRY. */
	const srv_handler *handlers;
	/* Called every tick (50 ms) after the core's deadlines; may be NULL. */
	void (*tick)(void *ctx);
	void *ctx;
	/* Group commit (may be NULL): called once at the end of a loop turn
	 * in which a handler called srv_hold_replies, before any reply of that
	 * turn leaves. 0 when the turn's changes are durable; a negative errno
	 * stops the daemon without sending them. */
	int (*commit)(void *ctx);
	/* Called when a session ends while the daemon runs (expired, evicted,
	 * or its connection closed: a client that died); may be NULL. */
	void (*session_end)(void *ctx, uint64_t session);
	/* Group commit on a thread of the core's own (may be NULL; instead of
	 * commit): the loop goes on serving while a commit syncs. */
	const struct srv_commit_ops *background;
	/* Replies that wait for others to be told (may both be NULL; the
	 * metadata daemon's name leases, docs/design.md "Breaks that wait").
	 * reply_need gives a reply, when it is made, a number (0: none); a
	 * reply whose number is at or above acks_floor's waits, while the
	 * replies behind it to the same peer go on. The role calls
	 * srv_pump_replies when the floor rises. */
	uint64_t (*reply_need)(void *ctx, const struct srv_req *req);
	uint64_t (*acks_floor)(void *ctx);
};

/*
 * A commit in three steps (srv_role.background). At the end of a loop
 * turn in which a handler called srv_hold_replies, the loop calls begin
 * (every change written so far is what the commit covers) and hands the
 * commit to the commit thread, which calls sync (it must touch nothing
 * the loop changes: files, not the loop's structures); then the loop calls
 * done with sync's result. Commits run one at a time, in order; one sync
 * may cover several begins. Every reply made after a hold, by any handler
 * on any connection, waits until done returned 0 for the commit that
 * covers it (a reply may tell of a change, even one it did not make); a
 * nonzero return from done stops the daemon without sending them. Without
 * a loop (srv_create_local) the three run at once, at the turn's end.
 */
struct srv_commit_ops {
	void (*begin)(void *ctx);
	int (*sync)(void *ctx);
	int (*done)(void *ctx, int rc);
};

/* Send the replies that waited for srv_role.acks_floor to rise. */
void srv_pump_replies(struct srv *srv);

/* Whether every change written so far is durable: no hold in this turn,
 * every commit asked done. Work that acts on what the store says outside
 * any reply (the metadata daemon's purger and merger) runs only then. */
int srv_all_durable(const struct srv *srv);
/* Wait, on the loop, until the commit thread synced every commit asked,
 * and end them (done; their replies leave): 0, or -EIO when a commit
 * failed. */
int srv_commit_wait(struct srv *srv);

/*
 * The dispatch tables, from TP_OPCODES: opcode NAME served by the role (or
 * by ALL) maps to the function ios_op_NAME or mds_op_NAME; the others stay
 * NULL and their names are never referenced.
 *
 *   static const srv_handler ios_handlers[TP_OP_LIMIT] = { TP_OPCODES(SRV_IOS_ENTRY) };
 */
#define SRV_PICK_MDS_CORE(fn) NULL /* AUTH: the core answers it */
#define SRV_PICK_IOS_CORE(fn) NULL
#define SRV_PICK_MDS_MDS(fn) fn
#define SRV_PICK_MDS_IOS(fn) NULL
#define SRV_PICK_MDS_ALL(fn) fn
#define SRV_PICK_IOS_MDS(fn) NULL
#define SRV_PICK_IOS_IOS(fn) fn
#define SRV_PICK_IOS_ALL(fn) fn
#define SRV_PICK(role, who, fn) SRV_PICK_##role##_##who(fn)
#define SRV_IOS_ENTRY(name, num, req, rep, who, right) [TP_OP_##name] = SRV_PICK(IOS, who, ios_op_##name),
#define SRV_MDS_ENTRY(name, num, req, rep, who, right) [TP_OP_##name] = SRV_PICK(MDS, who, mds_op_##name),

/* Limits of what a daemon owes its peers (docs/design.md, "Daemon memory"). */
struct srv_limits {
	size_t budget_bytes;      /* replies and parked requests, all peers */
	size_t peer_bytes;        /* of those, one peer's */
	unsigned peer_entries;    /* replies plus parked requests, one peer */
	unsigned total_entries;   /* all peers */
	unsigned peer_posted;     /* replies in the provider at once, one peer */
	unsigned total_posted;    /* all peers */
};
#define SRV_BUDGET_BYTES   (256u << 20)
#define SRV_PEER_BYTES     (64u << 20)
#define SRV_PEER_ENTRIES   256
#define SRV_TOTAL_ENTRIES  16384
#define SRV_PEER_POSTED    32
#define SRV_TOTAL_POSTED   512
/* Sessions (session.h): the config's sessions_max, sessions_per_uid and
 * session_idle_s. */

/* How much a daemon logs: a line is written when its level is at most
 * the threshold. The default threshold is SRV_LOG_INFO; -v makes it
 * SRV_LOG_DEBUG. */
enum srv_log_level {
	SRV_LOG_ERROR,   /* a request or the daemon failed */
	SRV_LOG_WARN,    /* something is wrong but the daemon serves on */
	SRV_LOG_INFO,    /* life: serving, stopping, notices about the store */
	SRV_LOG_DEBUG,   /* sessions and other detail, with -v */
};
/* Where the lines go. */
enum srv_log_target {
	SRV_LOG_STDERR,  /* "TIME tessera-ROLE[INDEX]: LEVEL: text" (the default) */
	SRV_LOG_SYSLOG,  /* syslog(3), facility daemon: journald reads it */
};
struct srv_log_opts {
	enum srv_log_target target;
	enum srv_log_level threshold;
};
/* The defaults: to stderr, up to info. */
#define SRV_LOG_OPTS_DEFAULT { SRV_LOG_STDERR, SRV_LOG_INFO }

struct srv_opts {
	const struct tp_config *cfg;
	const char *host, *port;   /* where to listen */
	unsigned nrecv;            /* receive buffers kept posted */
	const struct srv_limits *limits; /* NULL: the defaults above */
	/* NULL: SRV_LOG_OPTS_DEFAULT. Read at srv_create (syslog is opened
	 * then); not kept. */
	const struct srv_log_opts *log;
};

/* The daemon runs as the config's daemon_uid, or refuses to start (0 or
 * -EPERM, err naming the key and both uids): clients restrict their
 * credentials to that uid, so under another uid it could not read one. */
int srv_check_daemon_uid(const struct tp_config *cfg, char *err, size_t errlen);

int srv_create(const struct srv_opts *opts, const struct srv_role *role,
	       struct srv **out, char *err, size_t errlen);
/* Run until SIGTERM/SIGINT. */
int srv_run(struct srv *srv);
void srv_destroy(struct srv *srv);

/*
 * In-process serving, for drivers without a network (tests/fuzz): the
 * same checks, dispatch, replies, parking and budgets, with no endpoint
 * and no event loop. srv_deliver() handles one received frame (a frame
 * longer than the configured maximum is cut to it, as a receive buffer
 * would) from `peer` (its reply address is checked but not resolved);
 * every reply is handed to `sink` as soon as it is sent, as the header
 * and body in iov[0] and the raw data in iov[1] (n is 1 without data),
 * and freed when sink returns. srv_local_tick() does what the loop does
 * each tick: expire deadlines (parked requests answer ETIMEDOUT), the
 * role's tick. srv_destroy() ends parked requests with -ESHUTDOWN.
 */
typedef void (*srv_sink_fn)(void *arg, uint64_t peer, const struct iovec *iov, int n);
int srv_create_local(const struct srv_opts *opts, const struct srv_role *role,
		     srv_sink_fn sink, void *arg, struct srv **out);
/* In-process frames need no session: they come from the identity set
 * here (uid 0, gid 0 until set), and AUTH is refused. */
void srv_local_identity(struct srv *srv, uint32_t uid, uint32_t gid);
/* In-process AUTH, for the AUTH fuzz target (no munged runs under a
 * fuzzer): credentials are decoded by `decode` instead of munged (it makes
 * up what munged would give and checks it with tp_auth_check), and the
 * rest of AUTH runs as for a networked daemon, sessions and quotas
 * included. Without it an in-process daemon refuses AUTH. */
struct tp_auth_id;
typedef int (*srv_cred_decoder)(void *arg, const char *cred, const char *target,
				struct tp_auth_id *out, char *err, size_t errlen);
void srv_local_auth(struct srv *srv, srv_cred_decoder decode, void *arg);
void srv_deliver(struct srv *srv, uint64_t peer, const void *frame, size_t len);
void srv_local_tick(struct srv *srv);

/* Reply with msg and optional raw data (copied, or taken over with
 * srv_reply_owned so a read's buffer is not copied again). A parked
 * request is freed by its reply. */
int srv_reply(struct srv_req *req, const ProtobufCMessage *msg,
	      const void *data, size_t data_len);
int srv_reply_owned(struct srv_req *req, const ProtobufCMessage *msg,
		    void *data, size_t data_len);
int srv_reply_error(struct srv_req *req, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Group commit: the caller made a change that is not durable yet (the
 * metadata daemon's unsynced LevelDB write). Every reply sent from now on,
 * whoever's, waits until the commit that ends this turn is done (the
 * role's commit, or its background commit's done, returned 0): so no
 * client sees, in a reply, a change that a crash could still take back,
 * and one commit (one synced write) covers all the requests of the turn,
 * or, with a background commit, of the turns that end while the one
 * before syncs. The loop handles what it received in one poll (up to 16
 * frames) per turn. */
void srv_hold_replies(struct srv *srv);

/*
 * Parking: answer a request later while the daemon serves others.
 *
 * srv_park() copies what the request needs (header, decoded message, raw
 * data) and returns the parked request in *out; the handler returns
 * without replying, and whoever completes the request later replies
 * through *out. The deadline is `ms` from now, at most the config's
 * timeout_ms (no client waits longer). When it passes, `expire` is called
 * with -ETIMEDOUT and may reply (a hold that ended normally, say); if it
 * does not, the daemon answers ETIMEDOUT. When the client is gone (its
 * connection was closed) or the daemon stops, `expire` is called with
 * -ECONNRESET or -ESHUTDOWN and its reply, if any, goes nowhere. Either
 * way the parked request is freed afterwards. Returns 0, or -EBUSY when
 * the peer or the daemon has no room for another parked request (the
 * handler then answers the original request itself).
 */
typedef void (*srv_expire_fn)(void *arg, struct srv_req *req, int reason);
int srv_park(struct srv_req *req, uint32_t ms, srv_expire_fn expire, void *arg,
	     struct srv_req **out);
/* srv_park for a request that will hold `extra` bytes more while parked
 * (a read's buffer, filled by a disk worker): charged with it. */
int srv_park_sized(struct srv_req *req, uint32_t ms, size_t extra, srv_expire_fn expire,
		   void *arg, struct srv_req **out);

/* A parked request's raw data, taken over by the caller: work that
 * outlives the parked request (a disk write still running when its client
 * went away) keeps its bytes. Returns the memory to free (a copy, or the
 * receive buffer's memory the data lies in) and sets *data to the bytes.
 * The parked request's budget charge stays until it is answered or
 * dropped; req->frame.data still points at the bytes. */
void *srv_park_take_data(struct srv_req *parked, const uint8_t **data);

/*
 * Checking a request's tag off the loop (srv_check_later_set). The loop
 * has checked the frame's session, connection and sequence number (new,
 * and not held by another frame being checked: the number is held until
 * srv_checked), nothing else. Until it is checked:
 *   - a reply from the loop checks it there first (srv_req_check): a
 *     forged frame is never answered, by an error or otherwise;
 *   - parking it (srv_park_sized) keeps the whole frame, header to data,
 *     in the receive buffer's memory, which srv_park_take_data hands over;
 *   - its deadline passing drops it unanswered.
 * Whoever runs its work takes the check (srv_park_take_check), runs
 * tp_frame_verify on any thread before the data is used, and reports
 * the result in the loop (srv_checked), which accepts the sequence number
 * or counts the frame unauthenticated and drops its request unanswered;
 * a refused frame's work is not done.
 */
struct srv_seal_check {
	struct tp_frame frame;     /* into the memory srv_park_take_data hands over */
	struct tp_session s;       /* the session's id, key and mode */
};
/* The role checks tags off the loop: fn(arg, hdr) says whether it will
 * for a request (a session's, sealed in its mode, whose raw data fills
 * its receive buffer); then the loop dispatches it unchecked, a SECRECY
 * body decrypted (tp_frame_crypt_body: the check encrypts it back). */
void srv_check_later_set(struct srv *srv, int (*fn)(void *arg, const struct tp_hdr *hdr),
			 void *arg);
/* Check an unchecked request in the loop now: 0 (checked, or was), or
 * -EBADMSG / -EALREADY: refused, counted, and req->replied set (it must
 * not be answered). */
int srv_req_check(struct srv_req *req);
/* A parked request's pending check, taken over: 1 and *out filled, or 0
 * (it was checked in the loop). */
int srv_park_take_check(struct srv_req *parked, struct srv_seal_check *out);
/* The loop learns a check's result (rc: 0 or tp_frame_verify's): the
 * number is accepted, or the frame counted unauthenticated and its parked
 * request (when still there) dropped unanswered. Wipes c's key. */
void srv_checked(struct srv *srv, struct srv_req *parked, struct srv_seal_check *c, int rc);

/* Work done on other threads (the storage daemon's disk workers) comes
 * back to the loop: after srv_wakeup(), which any thread may call, the
 * loop calls fn(arg) in its own thread (once for any number of wakeups
 * since the last call). Only the loop thread may touch the daemon core.
 * -ENOTSUP in-process (srv_create_local: no loop). The caller's threads
 * must stop calling srv_wakeup before srv_destroy. */
int srv_wakeup_set(struct srv *srv, void (*fn)(void *arg), void *arg);
void srv_wakeup(struct srv *srv);

/* The daemon core's counters and limits, for PingReply.core. */
void srv_core_stats(struct srv *srv, Tessera__CoreStats *out);
/* The role's ping handler body: role, index, version, core stats, and a
 * hold (PingRequest.hold_ms) served by parking. */
void srv_ping(struct srv *srv, struct srv_req *req);

/* Log a line at `level` (daemon_log.c): to stderr with time, role and
 * level, or to syslog, as srv_create's log options said; nothing when the
 * level is above the threshold. Any thread may call it. srv_log is the
 * info level; srv_error, srv_warn and srv_debug name the others. */
void srv_logf(struct srv *srv, enum srv_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define srv_log(srv, ...)   srv_logf((srv), SRV_LOG_INFO, __VA_ARGS__)
#define srv_error(srv, ...) srv_logf((srv), SRV_LOG_ERROR, __VA_ARGS__)
#define srv_warn(srv, ...)  srv_logf((srv), SRV_LOG_WARN, __VA_ARGS__)
#define srv_debug(srv, ...) srv_logf((srv), SRV_LOG_DEBUG, __VA_ARGS__)
/* Whether a line at `level` would be written (to skip costly formatting). */
int srv_log_enabled(const struct srv *srv, enum srv_log_level level);

/* Common command line: -c config -d dir -i index [-p pidfile] [-v]
 * [-L stderr|syslog] [-t], and -h/--help and --version. */
struct srv_cmdline {
	const char *config, *dir, *pidfile;
	uint32_t index;
	struct srv_log_opts log;
	int check_only;            /* -t: parse the config, say so, exit 0 */
};
/* What the caller does after srv_parse_cmdline. */
enum srv_cmdline_result {
	SRV_CMDLINE_RUN,           /* cl is filled: run the daemon */
	SRV_CMDLINE_DONE,          /* --help or --version was answered: exit 0 */
	SRV_CMDLINE_USAGE,         /* a bad command line, said on stderr: exit 2 */
};
/* `extra` is the role's own options' lines for the usage text (NULL:
 * none); the role takes its own options out of argv first. */
enum srv_cmdline_result srv_parse_cmdline(int argc, char **argv, const char *prog,
					  const char *extra, struct srv_cmdline *cl);
/* The exit status for a result other than SRV_CMDLINE_RUN: 0 or 2. */
int srv_cmdline_exit_status(enum srv_cmdline_result r);
int srv_write_pidfile(const char *path);

/* Closed disks and stores that know whose they are (daemon_store.c).
 *
 * srv_store_claim, called by each daemon before it opens its directory:
 * sets the umask to 077 (what the daemon makes is its user's alone), makes
 * DIR 0700 if it is missing, and refuses (-EACCES) a DIR that group or
 * others can enter, or a log on stderr (a regular file) they can read.
 * Then DIR/owner, written once at the first start (atomically, synced),
 * names the file system (the config's fs_id), the daemon's kind and its
 * index; a directory whose record names another daemon, another kind or
 * another file system is refused (-EEXIST) with a message that says whose
 * it is. A directory without the record but with a store of this kind
 * (made by an older version) is adopted: the record is written and
 * *notice says so (free it; NULL when there is nothing to log). *how says
 * whether DIR was made now (so the caller's store knows it is new, not a
 * lost disk). */
enum srv_store_kind { SRV_STORE_METADATA, SRV_STORE_STORAGE };
enum srv_store_dir { SRV_STORE_DIR_EXISTED, SRV_STORE_DIR_MADE };
struct srv_store_owner {
	enum srv_store_kind kind;
	uint32_t index;
	const char *fs_id;         /* the config's; "" when it names none */
};
int srv_store_claim(const char *dir, const struct srv_store_owner *me, enum srv_store_dir *how,
		    char **notice, char *err, size_t errlen);

#endif /* TESSERA_DAEMON_H */
