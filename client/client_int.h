/*
 * client_int.h - libtessera internals shared by its files.
 *
 * Its layers, each using only those above it in this list (no circles):
 * thread.c a thread's error message and credentials; servers' names
 * trace.c  start-up tracing; the clock is proto's (tp_clock.h)
 * health.c each server's state (up, suspect, down) as this process knows it
 * peer.c   daemons' addresses: resolved on first use, forgotten on failure
 * engine.c the request engine: requests sent, replies matched, timeouts,
 *          lent memory (engine.h)
 * session.c sessions with the daemons (AUTH, renewal, probes); tc_run
 * cap.c, local.c, io.c, nc.c, lock.c, meta.c, open.c ... (below): the I/O paths
 * conn.c   the connection opened and closed (tessera_connect/disconnect)
 *
 * meta.c   namespace calls against the metadata daemon: stat, mkdir,
 *          rename, remove, setattr, links...; uses io.c's object helpers
 * open.c   opening (create included), closing and truncating a file by
 *          path, on meta.c's shared calls (tc_meta_*) and io.c's
 * io.c     storage objects: striped reads and writes, size, sync,
 *          truncate, removal (never the metadata daemon)
 * share.c  opening a file from another process's share
 * plan.c   the noncontiguous planner (plan.h: pure, no messages)
 * nc.c     list and datatype I/O: plan.c's rounds as messages
 * stats.c  the storage daemons' counters
 * lock.c   byte-range locks: the API, regions, leases, record locks
 * lock_round.c  the messages and rounds of the lock protocols (lock_int.h)
 * counter.c counters kept with a file (fetch-and-add: shared file pointers)
 * cap.c    an open file's capability: kept, renewed, sent with requests
 * local.c  local reads: objects of this host's daemons read from their files
 */
#ifndef TESSERA_CLIENT_INT_H
#define TESSERA_CLIENT_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tdl.h"
#include "tessera.h"
#include "tp_clock.h"
#include "tproto.h"

#include "engine.h"
#include "vpure.h"

_Static_assert(TESSERA_MAX_STRIPE == TP_MAX_STRIPE, "the API's stripe limit is the protocol's");
/* The layout's kind fills what was padding (ABI 0.4 unchanged). */
_Static_assert(offsetof(struct tessera_layout, handles) == 1040 &&
	       sizeof(struct tessera_layout) == 3088, "struct tessera_layout keeps its 0.4 shape");

struct tc_thread {                /* per-thread state (pthread key) */
	char errmsg[1024];
	int has_cred;
	struct tessera_cred cred;
	/* A versioned write's reply said its log is filling (WriteReply.
	 * vlog_half): the thread's next commit asks for a merge (vers.c). */
	int vlog_half;
	/* One of the library's own threads that waits at length (the name
	 * lease watch): it polls the completion queue only while no caller
	 * wants to, so a caller's reply never waits for it (engine.c). */
	int background;
};

#define TC_SPARE_FRAMES 16           /* the default window's worth */
#define TC_SPARE_MIN (64u << 10)      /* smaller frames come from malloc */

struct tessera_fs {
	struct tp_config cfg;
	struct tnet *net;
	uint8_t name[TP_MAX_ADDR];     /* our reply address */
	size_t name_len;
	pthread_key_t thread_key;
	struct tessera_cred default_cred;
	/* Whether path calls follow a symbolic link in the last component
	 * (tessera_follow_links; set once, before calls start). */
	enum tessera_follow follow;
	/* tessera_dir_watch (set before calls start) */
	tessera_dir_watch_fn dir_watch;
	void *dir_watch_arg;
	/* A SETATTR was answered since the last META_SYNC (atomic): the
	 * metadata daemon syncs those within a tick, an fsync at once
	 * (tc_meta_sync). */
	int attrs_unsynced;

	pthread_mutex_t writer_lock;   /* one writer_later open counted at a time */
	pthread_mutex_t lock;          /* guards everything below */
	pthread_cond_t cond;
	int progressing;               /* a thread is polling the CQ */
	int bg_polling;                /* ... a background one (tc_thread.background) */
	int kick_fd;                   /* eventfd that ends its poll (-1: none) */
	uint64_t fg_last_ns;           /* a caller (not background) last waited */
	pthread_cond_t bg_cond;        /* a background thread's pause (ended by its reply) */
	uint64_t next_reqid;
	uint64_t desc_nonce;           /* random: names this session's file types */
	uint64_t next_desc_id;         /* datatype calls so far */
	struct tc_req pending;         /* list head of requests in flight */
	struct tc_req zombies;         /* abandoned, send not yet completed */
	unsigned n_behind;             /* tc_call_behind's requests in flight */
	uint64_t peer_mds;
	int mds_known;
	uint64_t *peer_ios;            /* n_ios */
	int *ios_known;
	struct tc_session mds_session;
	struct tc_session *ios_session; /* n_ios */
	struct tc_leases *leases;      /* lock.c: lease renewal, once locking */
	struct tc_mcache *mcache;      /* mcache.c: name leases (NULL: off) */
	uint64_t lock_owner;           /* lock.c: random, 0 until the first lock; never logged */
	/* Freed bulk request frames (max_frame bytes each), kept for the
	 * next request: a fresh MiB from malloc costs page faults and
	 * zeroing, a fifth of a streaming writer's time. */
	uint8_t *spares[TC_SPARE_FRAMES];
	unsigned n_spares;
	int trace;                     /* trace.c: TESSERA_TRACE_STARTUP */
	uint64_t trace_t0;             /* the process's start (monotonic ns) */
	unsigned trace_requests;       /* requests traced so far */
	FILE *req_trace;               /* trace.c: TESSERA_TRACE_REQUESTS's file */
	uint64_t req_trace_seq;        /* requests written to it */
	/* Runs of the caller's memory a request may lend to the provider (0:
	 * never; tnet_can_lend), and what moved how (tessera_copy_stats). */
	size_t lend_runs;
	struct tessera_copy_stats copies;
	/* local.c: local reads on (config, TESSERA_LOCAL_READS); per storage
	 * daemon 0, or -1 once it said no or is not on this host; the
	 * descriptors files hold, and the most they may. */
	int local_on;
	int8_t *ios_local;
	unsigned local_fds, local_max_fds;
	/* health.c: per server, [0] the metadata daemon, [1 + i] storage
	 * daemon i (under lock); the watcher (under watch_lock and lock),
	 * whose calls watch_lock keeps one at a time. */
	struct tc_health *health;
	tessera_server_watch_fn watch_fn;
	void *watch_arg;
	pthread_mutex_t watch_lock;
	/* session.c: the background prober of down servers (under lock):
	 * running; made and not joined yet; asked to stop (disconnect); its
	 * sleep, which a server going down ends. */
	pthread_t prober;
	int prober_on, prober_made, prober_stop;
	pthread_cond_t prober_cond;
};

#define TC_LOCAL_MAX_FDS 1024

/* One server's state (health.c), under fs->lock. */
struct tc_health {
	enum tessera_server_state state;
	int64_t since_s;               /* wall clock of the last change */
	uint64_t since_ns;             /* the same, monotonic */
	int err;                       /* while down: -ECONNREFUSED or -EHOSTDOWN */
	char why[128];                 /* "connection refused", "" when up */
	int told;                      /* the watcher has heard of the last change */
	uint64_t next_probe_ns;        /* while down: when to probe it next */
	uint64_t backoff_ns;           /* the wait before the probe after that */
};

/* The background prober (session.c): the first probe of a server found
 * down, and the longest wait between probes (the wait doubles from the
 * first). A probe of a refused port is a TCP connect; of a silent daemon,
 * an AUTH bounded by connect_timeout_ms. */
#define TC_DOWN_PROBE_FIRST_NS (500ull * 1000000u)
#define TC_DOWN_PROBE_MAX_NS (5000ull * 1000000u)
#define TC_NO_SERVER (-2)

/* The session with `server` (TC_MDS or a storage daemon's index). */
static inline struct tc_session *tc_session_of(tessera_fs *fs, int server)
{
	return server == TC_MDS ? &fs->mds_session : &fs->ios_session[server];
}

struct tessera_file {
	tessera_fs *fs;
	char path[TP_PATH_MAX + 1];
	int flags;
	uint64_t handle;
	uint32_t list_batch;           /* regions per list round, 0: config's */
	struct tessera_layout layout;
	/* Fencing (lock.c): per slot, the daemon epoch of the locks held on
	 * it and how many; I/O carries the epoch. Under fs->lock; I/O reads
	 * the epoch with an atomic load. */
	uint64_t lock_epoch[TESSERA_MAX_STRIPE];
	uint32_t lock_count[TESSERA_MAX_STRIPE];
	struct tc_view_memo *view_memo; /* nc.c: the last locked view (fs->lock) */
	struct tc_cap *cap;            /* cap.c: what storage requests carry (fs->lock) */
	/* open.c: an open the metadata daemon counts as a writer of the file
	 * (its token, 0: none); close tells it (docs/design.md, "Sizes kept
	 * by the metadata daemon") */
	uint64_t write_token;
	int created;                   /* open.c: this open made the file */
	/* open.c: ...under a name lease, and the name cache's mark after it
	 * learnt that (its close may tell the daemon behind: close_behind) */
	int made_leased;
	uint64_t made_mark;
	/* open.c: the attributes the open's reply gave, and whether they
	 * hold the size (tessera_open_attrs) */
	struct tessera_stat opened;
	int opened_sized;
	int by_path;                   /* open.c: opened by path (not from a share) */
	int wrote;                     /* a call that may change the objects was
					* made (tc_file_wrote; atomic) */
	/* open.c: an open for reading and writing that the metadata daemon
	 * counts as a writer only at its first write (tc_file_writing;
	 * atomic, set under fs->writer_lock), asked as its opener */
	int writer_later;
	struct tessera_cred opener;
	struct tc_local_file *local;   /* local.c: descriptors of local objects (fs->lock) */
	/* io.c: what the last failed contiguous write left (fs->lock) */
	struct tessera_write_outcome write_failed;
	int has_write_failed;
	struct tc_vfile *vers;         /* vers.c: a versioned file's state; NULL: plain */
};

/* Local reads (local.c). Init: at connect, after the config. Prepare: a
 * read of `len` bytes is about to touch slots[0..n) of f; those of this
 * host's daemons that f has no descriptors for yet are asked for them
 * (nothing below TC_LOCAL_MIN bytes). Read: object bytes [obj_off,
 * obj_off + len) of `slot` into the caller's runs (runs(arg, from, &n,
 * &user) gives the run at chunk offset `from`: n bytes at user, n at most
 * what it was given), zeros past the object's end; returns the bytes the
 * object had, or a negative errno (-ENOENT: no descriptor) and the caller
 * reads through the daemon. Close: at tessera_close. */
typedef void (*tc_runs_fn)(void *arg, uint64_t from, uint64_t *n, uint8_t **user);
void tc_local_init(tessera_fs *fs);
void tc_local_prepare(tessera_file *f, const uint32_t *slots, size_t n, uint64_t len);
ssize_t tc_local_read(tessera_file *f, uint32_t slot, uint64_t obj_off, uint64_t len,
		      tc_runs_fn runs, void *arg);
void tc_local_close(tessera_file *f);

/* Capabilities (cap.c). The rights an open with `flags` asks for. */
uint32_t tc_open_rights(int flags);
struct tc_cap;
/* A copy of m to keep (NULL: out of memory). */
/* When a capability is due for renewal, by CLOCK_MONOTONIC: three
 * quarters of its life left by our clock (a skewed clock renews early). */
uint64_t tc_cap_renew_at(const Tessera__Capability *m);
struct tc_cap *tc_cap_from_msg(const Tessera__Capability *m);
/* Free c and every capability it replaced. */
void tc_cap_free(struct tc_cap *c);
/* Make c f's capability (f owns it). */
void tc_cap_install(tessera_file *f, struct tc_cap *c);
/* Ask the metadata daemon for a fresh one (it checks the permission),
 * presenting f's current one: -EACCES when f has none (a share without
 * one), as renewal is only for a file opened by its path. */
int tc_cap_renew(tessera_file *f);
/* The same for file handle `file` as `cred`, into *out, presenting
 * `proof` (a capability of an open of the file, or of its renewal). */
int tc_cap_fetch(tessera_fs *fs, uint64_t file, uint32_t rights, const Tessera__Cred *cred,
		 const Tessera__Capability *proof, const char *what, struct tc_cap **out);
/* tc_cap_renew for a file opened from a share for writing: the metadata
 * daemon counts this process as a writer of it (f->write_token), as an
 * open by path does. */
int tc_cap_renew_writer(tessera_file *f);
/* Every call that may change f's objects (write, truncate, fallocate,
 * append, fetch-and-add, an O_TRUNC open) marks it first: a file this
 * open created and left unwritten closes with its size known to be 0,
 * and one it did not change closes as unchanged, without asking the
 * storage daemons (meta.c). */
static inline void tc_file_wrote(tessera_file *f)
{
	__atomic_store_n(&f->wrote, 1, __ATOMIC_RELAXED);
}
/* tc_file_wrote, and for an open whose writer is not counted yet
 * (writer_later) the metadata daemon counts it now, before anything is
 * written (tc_cap_count_writer): 0, or why it could not be. */
int tc_file_writing(tessera_file *f);
/* Count f's opener as a writer of f under the capability its open got
 * (CapRequest.writer_only), or, once that is due for renewal, with a
 * renewal (which checks the mode again). */
int tc_cap_count_writer(tessera_file *f);
/* Whether c is due for renewal; its message. */
int tc_cap_due(const struct tc_cap *c);
const Tessera__Capability *tc_cap_msg(const struct tc_cap *c);
/* The capability to put in a request on f now: renewed first when most
 * of its life has passed. Valid until f is closed. */
const Tessera__Capability *tc_cap_get(tessera_file *f);
/* Run `call` (setting rc); when a storage daemon said the capability
 * expired, renew it and run the call once more. */
#define TC_CAP_RETRY(f, rc, call)                                          \
	do {                                                               \
		(rc) = (call);                                             \
		if ((rc) == -EKEYEXPIRED && !tc_cap_renew(f))              \
			(rc) = (call);                                     \
	} while (0)

/* TC_CAP_RETRY for reads: a versioned read a storage daemon refused with
 * ESTALE (a merge went past its read version: the version server
 * restarted and forgot the read) is made once more, at a fresh one. */
#define TC_READ_RETRY(f, rc, call)                                         \
	do {                                                               \
		TC_CAP_RETRY(f, rc, call);                                 \
		if ((rc) == -ESTALE && tc_versioned(f))                    \
			TC_CAP_RETRY(f, rc, call);                         \
	} while (0)

/* A datatype lock's file view, remembered so the datatype I/O after it
 * names the view the storage daemons already hold instead of sending it
 * again (a daemon that lost it answers ESTALE and gets it). */
void tc_view_remember(tessera_file *f, const Tessera__Dataloop *msg, uint64_t desc_id,
		      const uint8_t *sent /* per storage daemon */);
void tc_view_forget(tessera_file *f);

/* The epoch I/O on slot `slot` of f carries (0: no lock held there). */
static inline uint64_t tc_lock_epoch(const tessera_file *f, uint32_t slot)
{
	return __atomic_load_n(&f->lock_epoch[slot], __ATOMIC_RELAXED);
}

/* Per-thread error message: set it and return rc. */
int tc_fail(tessera_fs *fs, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct tc_thread *tc_thread(tessera_fs *fs);
void tc_thread_free(void *t); /* the thread key's destructor */
void tc_cred(tessera_fs *fs, Tessera__Cred *out, uint32_t *gids_store);
/* The credentials the calling thread acts with (tessera_set_thread_cred,
 * else the process's); tc_cred_msg makes c a message. */
const struct tessera_cred *tc_thread_cred(tessera_fs *fs);
void tc_cred_msg(const struct tessera_cred *c, Tessera__Cred *out, uint32_t *gids_store);
/* pthread_create for the library's background threads (lock leases, the
 * name lease watch): the signals that stop a program (TERM, INT, HUP,
 * QUIT) are blocked in the new thread, so the application's thread that
 * waits for them (tessera-fuse's loop) is the one woken. The caller's
 * mask is restored. 0, or a positive error number. */
int tc_start_quiet_thread(pthread_t *thread, void *(*fn)(void *), void *arg);

/* Names and attributes under name leases (mcache.c; docs/design.md,
 * "Name leases"), all no-ops while the cache is off:
 * - tc_mcache_stat: MC_HELD with *st when path (mapped) is held,
 *   MC_HELD_ABSENT when it is held as missing, else MC_NOT_HELD;
 * - tc_mcache_mark: taken before a request whose reply may be learnt;
 * - tc_mcache_learn: a leased reply's names (r->path: the directories of
 *   r->walk, then r->handle, of r->type; NULL: the handle alone)
 *   and attributes (r->st; NULL:
 *   none to keep, as a regular file's without its size). MC_LEARN_OWN_NAME
 *   for a name this client made (a create: what replies still in flight
 *   say of the handle and its directory is refused; r->dir_st, the
 *   directory as the change left it, is kept), MC_LEARN_OWN_ATTRS for
 *   attributes it changed (a setattr, a close that wrote: of the handle);
 * - tc_mcache_changed(_handle): this client changed what path names
 *   (MC_NAME: the name itself, its directory's attributes, and what it
 *   named; MC_ATTRS: only the attributes of what it names) or a handle's
 *   attributes, after the change's reply (whatever its outcome);
 * - tc_mcache_removed: as tc_mcache_changed(MC_NAME) after a remove's
 *   reply (mark taken before it), keeping dir_st (NULL: none), the
 *   directory as the remove left it, unless it was bumped since;
 * - tc_mcache_opened: an open's reply (path, the handle it opened, st its
 *   attributes with the size the daemon knew, else NULL) replaces what is
 *   held of them: an open is a close-to-open point, and a break of what
 *   is held may still be on its way;
 * - tc_mcache_stop: at disconnect. */
enum tc_mc_learn { MC_LEARN_LOOKUP, MC_LEARN_OWN_NAME, MC_LEARN_OWN_ATTRS };
/* tc_mcache_stat: MC_HELD with *st; MC_HELD_ABSENT, the name is missing
 * (a LOOKUP answered `absent`, learnt by tc_mcache_absent with the walk's
 * directories, until one of them changes); MC_NOT_HELD: ask. */
enum tc_mc_held { MC_NOT_HELD, MC_HELD, MC_HELD_ABSENT };
enum tc_mc_held tc_mcache_stat(tessera_fs *fs, const char *path, enum tessera_follow last,
			       struct tessera_stat *st);
void tc_mcache_absent(tessera_fs *fs, uint64_t mark, const char *path, const uint64_t *walk,
		      size_t n_walk);
/* tessera_unlink_pending (path mapped). */
void tc_mcache_unlink_pending(tessera_fs *fs, const char *path);
uint64_t tc_mcache_mark(tessera_fs *fs);
struct tc_mc_reply {
	const char *path;          /* NULL: by handle alone */
	const uint64_t *walk;      /* AttrReply.walk */
	size_t n_walk;
	uint64_t handle;
	uint32_t type;             /* S_IFMT bits */
	const struct tessera_stat *st; /* NULL: no attributes to keep */
	const struct tessera_stat *dir_st; /* MC_LEARN_OWN_NAME: the directory's (NULL: none) */
};
/* (1 when r->st was kept) */
int tc_mcache_learn(tessera_fs *fs, uint64_t mark, enum tc_mc_learn how,
		    const struct tc_mc_reply *r);
enum tc_mc_change { MC_NAME, MC_ATTRS };
void tc_mcache_changed(tessera_fs *fs, const char *path, enum tc_mc_change what);
void tc_mcache_removed(tessera_fs *fs, uint64_t mark, const char *path,
		       const struct tessera_stat *dir_st);
void tc_mcache_changed_handle(tessera_fs *fs, uint64_t handle);
void tc_mcache_opened(tessera_fs *fs, uint64_t mark, const char *path, uint64_t handle,
		      const struct tessera_stat *st);
void tc_mcache_stop(tessera_fs *fs);
/* Opens from memory (mcache.c, "Opens"): tc_mcache_granted keeps what an
 * open of `handle` was granted (its capability, for the capability's uid
 * and rights, and the file's layout; a versioned file's is not kept);
 * tc_mcache_open answers an open of path (mapped) by cred needing
 * `rights` (TP_CAP_*) from them: 1 with *out filled (release it with
 * tc_mcache_open_done), else 0 and the open asks the metadata daemon. */
struct tc_mc_open {
	struct tessera_stat st;          /* the file's attributes, with its size */
	Tessera__Capability *cap;        /* unpacked copies */
	Tessera__Layout *layout;
};
void tc_mcache_granted(tessera_fs *fs, uint64_t handle, const Tessera__Capability *cap,
		       const Tessera__Layout *layout);
int tc_mcache_open(tessera_fs *fs, const char *path, const struct tessera_cred *cred,
		   uint32_t rights, struct tc_mc_open *out);
void tc_mcache_open_done(struct tc_mc_open *o);

/* Describe server `s` ("metadata daemon (127.0.0.1:7000)"). */
void tc_server_name(tessera_fs *fs, int server, char *buf, size_t len);

/* Server states (health.c). Init at connect (after the config), fini at
 * disconnect. Under fs->lock: a reply heard (up); a request waiting
 * without a word (suspect); a refused connection or no answer within a
 * timeout (down, err: the errno that said so). */
int tc_health_init(tessera_fs *fs);
void tc_health_fini(tessera_fs *fs);
void tc_health_up(tessera_fs *fs, int server);
void tc_health_suspect(tessera_fs *fs, int server, const char *why);
void tc_health_down(tessera_fs *fs, int server, int err, const char *why);
enum tessera_server_state tc_health_state(tessera_fs *fs, int server);
/* Why a daemon silent for ns is down: "no answer for 5 s". */
void tc_health_silence(char *buf, size_t len, uint64_t ns);
/* Under fs->lock: 0 when calls may go to server, else (down) the errno
 * they fail with, and msg (len bytes, may be 0) says "not reachable since
 * 12:03:04 (connection refused)" (tc_req_fail puts the server's name
 * before it). */
int tc_health_refuse(tessera_fs *fs, int server, char *msg, size_t len);
/* Tell the watcher of the changes it has not heard of (fs->lock not
 * held). */
void tc_health_notify(tessera_fs *fs);
/* Under fs->lock, for the prober: a down server whose probe is due (else
 * TC_NO_SERVER), and in *next the earliest later one (UINT64_MAX: none
 * is down); a probe of server failed, the next waits longer. */
int tc_health_due(tessera_fs *fs, uint64_t now, uint64_t *next);
void tc_health_backoff(tessera_fs *fs, int server);
/* Stop the prober thread (at disconnect, before the endpoint closes). */
void tc_prober_stop(tessera_fs *fs);

/* Sessions (session.c). Send all, then wait until each has replied,
 * failed or timed out; each daemon the requests go to has a session
 * first (opened by AUTH, or renewed), or the requests to it fail with why
 * not. Returns 0 if all succeeded, else the first failure's status. While
 * it waits, a daemon silent for a while is probed (session.c). The
 * lending invariant holds (engine.c): it returns only when the provider
 * has let go of all the caller's memory the requests lent. */
int tc_run(tessera_fs *fs, struct tc_req **reqs, size_t n);
/* One request: run it; on failure set the thread's message to
 * "<what>: <server>: <why>". The caller frees req. */
int tc_call(tessera_fs *fs, struct tc_req *req, const char *what);
/* A request nobody waits for (best effort): sent on the session already
 * open with its daemon, its reply taken in by whichever call runs the
 * engine next, and dropped then, or at its deadline; tessera_disconnect
 * waits for those still in flight (tc_behind_drain). 0 when sent (req is
 * the engine's now), -EAGAIN when it was not (no open session, or
 * TC_BEHIND_MAX in flight already), and req is still the caller's to
 * call or free. */
#define TC_BEHIND_MAX 64
int tc_call_behind(tessera_fs *fs, struct tc_req *req);
void tc_behind_drain(tessera_fs *fs);

/* Start-up tracing (trace.c), on when TESSERA_TRACE_STARTUP is set and not
 * 0: each step's time and the peak RSS so far go to stderr. */
void tc_trace_init(tessera_fs *fs);
/* One step, `ns` long, named by fmt; nothing when tracing is off. */
void tc_trace(tessera_fs *fs, uint64_t ns, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The first few calls of tc_run after the sessions were in place; and,
 * with TESSERA_TRACE_REQUESTS, every request of every call, a line each
 * in the trace file (docs/benchmarks.md, "Request traces"). `start` is
 * when tc_run began. */
void tc_trace_request(tessera_fs *fs, struct tc_req *const *reqs, size_t n, uint64_t start);
/* Closes the request trace (at disconnect). */
void tc_trace_fini(tessera_fs *fs);

/* Stop renewing lock leases (at disconnect). */
void tc_leases_stop(tessera_fs *fs);

/* Layout conversions. */
void tc_layout_from_msg(const Tessera__Layout *m, struct tessera_layout *out);
void tc_stat_from_attr(const Tessera__Attr *a, struct tessera_stat *st);
/* fsync's metadata part: if this client changed attributes since its last
 * call, ask the metadata daemon to make them durable (META_SYNC). 0 or a
 * negative errno (the message names `path`). */
int tc_meta_sync(tessera_fs *fs, const char *path);
/* meta.c's calls that open.c shares (each described where it is defined):
 * LOOKUP (with open rights and when an opener counts as a writer, or
 * TP_WRITER_NOW); the size a reply gave (0: none); a directory's change
 * told to the watcher (tessera_dir_watch); a stat's size told back to the
 * metadata daemon (SIZE_REPORT, best effort). */
int tc_meta_lookup_as(tessera_fs *fs, const char *path, uint32_t open_rights,
		      enum tp_open_writer writer, enum tessera_follow last,
		      Tessera__AttrReply **out);
int tc_meta_lookup(tessera_fs *fs, const char *path, uint32_t open_rights,
		   enum tessera_follow last, Tessera__AttrReply **out);
int tc_meta_size_from_reply(const Tessera__AttrReply *rep, struct tessera_stat *st);
void tc_meta_dir_changed(tessera_fs *fs, const char *upath, const Tessera__Attr *parent);
void tc_meta_size_report(tessera_fs *fs, const Tessera__AttrReply *rep, const char *path,
			 const struct tessera_stat *st, int64_t data_ns);
/* Fold the storage objects' latest modification (data_mtime_ns, from
 * tc_file_size) into a file's mtime and ctime: an object modified after
 * mtime was last set (a->mtime_set_ns) was written or truncated since. */
void tc_stat_data_time(const Tessera__Attr *a, int64_t data_mtime_ns, struct tessera_stat *st);

/* Storage objects (io.c), for meta.c; each request carries `cap`. */
int tc_remove_objects(tessera_fs *fs, const struct tessera_layout *layout,
		      const Tessera__Capability *cap, const char *path);
/* The file's size from its objects; *data_mtime_ns (if not NULL) gets the
 * latest modification time among them (0: none written), *blocks (if not
 * NULL) the 512-byte blocks they have allocated, summed. */
int tc_file_size(tessera_fs *fs, const struct tessera_layout *layout,
		 const Tessera__Capability *cap, const char *path, uint64_t *size,
		 int64_t *data_mtime_ns, uint64_t *blocks);
int tc_truncate_objects(tessera_fs *fs, const struct tessera_layout *layout,
			const Tessera__Capability *cap, const char *path, uint64_t size);
int tc_check_layout(tessera_fs *fs, const struct tessera_layout *l, const char *path);

/* Versioned files (vers.c; docs/design.md "Versioning (chapter 8)").
 * Open: f's state when its layout or capability says versioned (0, or
 * -ENOMEM); close: merge, end the ID# and the last read. */
int tc_vers_open(tessera_file *f, const Tessera__Capability *cap);
int tc_vers_close(tessera_file *f);
static inline int tc_versioned(const tessera_file *f)
{
	return f->vers != NULL;
}
static inline int tc_layout_versioned(const struct tessera_layout *l)
{
	return l->kind == TESSERA_LAYOUT_VERSIONED;
}
/* Reads of f as of snapshot `name` (tessera_open_snapshot); the name, or
 * NULL for the newest. */
int tc_vers_set_snapshot(tessera_file *f, const char *name);
const char *tc_vers_snapshot(const tessera_file *f);
/* A read version and the commits to carry (rep->vmap, owned). */
struct tc_vread {
	uint64_t vr;
	Tessera__VersionReply *rep;
};
int tc_vers_read_begin(tessera_fs *fs, const Tessera__Capability *cap, const char *snap,
		       uint64_t end_read, const char *path, struct tc_vread *rd);
void tc_vread_free(struct tc_vread *rd);
/* The same for a read on f (its snapshot; ends f's previous read), and
 * its end (batched into the next one). */
int tc_vfile_read_begin(tessera_file *f, struct tc_vread *rd, const char *path);
void tc_vfile_read_done(tessera_file *f, struct tc_vread *rd);
/* The vmap entries of rd naming `handle` into out (room: rd's count). */
static inline size_t tc_vread_pick(const struct tc_vread *rd, const uint64_t *handles, size_t nh,
				   Tessera__VersionCommit **out)
{
	return rd && rd->rep ? tc_vmap_pick(rd->rep->vmap, rd->rep->n_vmap, handles, nh, out) : 0;
}
/* A modify: send(arg, T, slots, &n) writes its records under T (every
 * request of the call, as parts of T: the call is one version) and lists
 * the slots written; then T is committed once. A full log (EBUSY) is
 * merged and the whole modify sent again under a new ID#, once (send
 * starts from the call's beginning each time); a commit the version
 * server refuses for a lost ID# (ESTALE, EPERM) is sent again under a new
 * one, once. A send that fails otherwise gives its ID# up, so that the
 * next merge drops its records. 0, or a negative errno with the message
 * set. */
typedef int (*tc_vsend_fn)(void *arg, uint64_t t, uint32_t *slots, size_t *n);
int tc_vers_modify(tessera_file *f, tc_vsend_fn send, void *arg, const char *label);
/* After a round (tc_run): note a write reply's vlog_half for the
 * thread's next commit. */
void tc_vers_note_replies(tessera_fs *fs, struct tc_req *const *reqs, size_t n);
/* Merge every object's log (VERSION_MERGE, VLOG MERGE, VERSION_MERGED). */
int tc_vers_merge(tessera_fs *fs, const struct tessera_layout *l, const Tessera__Capability *cap,
		  const char *path);
/* A versioned truncate of f (a version, committed with every slot). */
int tc_vers_truncate(tessera_file *f, uint64_t size);
/* A versioned file's size at a fresh read version (as of `snap`). */
int tc_vers_file_size(tessera_fs *fs, const struct tessera_layout *layout,
		      const Tessera__Capability *cap, const char *path, const char *snap,
		      uint64_t *size, int64_t *data_mtime_ns, uint64_t *blocks);

/* io.c's object helpers at a read version / under a T. */
int tc_file_size_at(tessera_fs *fs, const struct tessera_layout *layout,
		    const Tessera__Capability *cap, const char *path, const struct tc_vread *rd,
		    uint64_t *size, int64_t *data_mtime_ns, uint64_t *blocks);
int tc_truncate_objects_v(tessera_fs *fs, const struct tessera_layout *layout,
			  const Tessera__Capability *cap, const char *path, uint64_t size,
			  uint64_t version_t);

#endif /* TESSERA_CLIENT_INT_H */
