/*
 * ios.h - the storage daemon's state and request handlers (tessera-ios).
 *
 * ios_main.c   command line, metadata-free requests (ping, sizes, sync...)
 * ios_io.c     data requests: contiguous, list and datatype reads/writes,
 *              and the counters
 * ios_desc.c   the description cache and the layout check (used by
 *              ios_io.c and ios_lock.c)
 * ios_lock.c   the lock service: byte-range locks, sessions, leases, epoch
 * ios_pool.c   the disk work of requests, on worker threads in each
 *              object's arrival order (or inline: io_threads = 0)
 *
 * Calls go one way: ios_io.c -> ios_lock.c -> ios_desc.c, ios_io.c ->
 * ios_desc.c, ios_io.c and ios_main.c -> ios_pool.c -> the store.
 * ios_local.c  local reads: an object's descriptors handed to a client on
 *              this host (LOCAL_OPEN, then the daemon's Unix socket)
 * ios_vlogd.c  versioned objects (issue 25): the checks of version fields,
 *              signed commits and grants; VLOG
 * ios_vlogs.c  the open version logs, and the version work a pool part
 *              runs on them (ios_vlogs.h; the log itself: ios_vlog.c)
 */
#ifndef TESSERA_IOS_H
#define TESSERA_IOS_H

#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"
#include "ios_disk.h"
#include "ios_store.h"

struct tdl_dataloop;

/* The counters and methods are the shared list (tessera_stats.h). */
enum ios_method {
#define IOS_METHOD_(id, name) IOS_##id = TESSERA_METHOD_##id,
	TESSERA_FOR_EACH_METHOD(IOS_METHOD_)
#undef IOS_METHOD_
	IOS_METHODS = TESSERA_METHODS
};

/* Datatype descriptions received, kept for later messages of the same
 * call. Key: (client session nonce, call id). At most IOS_DESC_CACHE of
 * them, taking at most IOS_DESC_CACHE_BYTES of memory (tdl_mem_bytes: a
 * frame of 1.2 MB can decode to 15 MB); the least recently used goes. A
 * description is kept only once a request using it passed every check. */
#define IOS_DESC_CACHE 64
#define IOS_DESC_CACHE_BYTES (64u << 20)
struct ios_desc {
	uint64_t nonce, id;
	struct tdl_dataloop *dl;   /* NULL: entry free */
	size_t bytes;              /* tdl_mem_bytes(dl) */
	uint64_t used;             /* clock of last use */
};

/* Limits on what one request may ask of a storage daemon (docs/design.md,
 * "Limits"); each is checked before any work and named when refused. */
#define IOS_MAX_DTYPE_STEPS (1u << 24) /* segment-engine steps per datatype request */

struct ios_locks;
struct ios_caps;
struct cap_key;
struct ios_pool;

/* The disk work of one request (ios_pool.c): one part per object, run
 * by a worker in its object's order or inline, then answered by the loop
 * (ios_work_finish). The handler fills the parts' arguments; the results
 * are the lane's. */
enum ios_job {
	IOS_JOB_WRITE, IOS_JOB_READ, IOS_JOB_SIZE, IOS_JOB_TRUNCATE, IOS_JOB_REMOVE,
	IOS_JOB_SYNC, IOS_JOB_COUNTER, IOS_JOB_FALLOCATE,
	IOS_JOB_VLOG /* VLOG's merge or state: part[0].vjob's results */
};
struct ios_work;
struct ios_part {
	struct ios_work *work;
	struct ios_part *next;     /* in its object's queue, or the done list */
	uint64_t handle;
	/* arguments */
	struct ios_piece *pieces;  /* reads and writes (owned) */
	size_t n;
	uint64_t total;            /* bytes the pieces move */
	uint64_t key;              /* counter */
	enum ios_counter_op counter_op;
	struct ios_counter_owner counter_who; /* its uid and share */
	int64_t value;
	/* arguments and results: size is the truncate's size, a read's
	 * object size, a contiguous write's size before it, GETSIZE's size */
	uint64_t size;
	int has_size;
	int64_t mtime_ns;
	uint64_t blocks;           /* GETSIZE: 512-byte blocks allocated */
	uint64_t alloc_off, alloc_len; /* FALLOCATE: the object's range */
	enum ios_alloc_size alloc_size;
	int64_t old;
	ssize_t rc;                /* bytes moved or 0, or a negative errno */
	char *why;                 /* the store's reason for rc (or NULL) */
	uint64_t syscalls;
	uint8_t *buf;              /* read: the bytes */
	/* A versioned object's part (ios_vlogs.h): run on its log instead
	 * of the store (the job still says how it is answered); owned. */
	struct ios_vjob *vjob;
};
struct ios_work {
	enum ios_job op;
	enum ios_method m;         /* reads, writes: the counters' method */
	const char *what;          /* for messages: "write", "getsize"... */
	struct srv_req *req;       /* parked; NULL once detached (pool only) */
	const uint8_t *src;        /* write data: the frame's, or data */
	void *data;                /* the parked copy, taken over */
	size_t data_len, cost;
	size_t left;               /* parts not yet done */
	/* A write whose frame's tag is checked here, by the worker, before
	 * the first byte is written (daemon.h, srv_seal_check). */
	int checking;
	struct srv_seal_check check;
	int check_rc;              /* tp_frame_verify's */
	struct ios_vlogs *vlogs;   /* REMOVE: the objects' logs go too */
	struct ios_work *prev, *next; /* the pool's works */
	size_t parts;
	struct ios_part part[];
};
/* Bounds on what queued works hold (ios_pool.c: detached works are no
 * longer in the core's budget), and the default worker count. */
#define IOS_POOL_WORKS SRV_TOTAL_ENTRIES
#define IOS_POOL_BYTES SRV_BUDGET_BYTES
#define IOS_POOL_AUTO_MAX 8

struct ios {
	struct srv *srv;
	struct ios_locks *locks;
	struct ios_caps *caps;     /* verified capabilities (ios_cap.c) */
	struct ios_disk *disk;     /* under the store: the system's calls, or a
				    * fault disk over them (-F) */
	struct ios_store *store;
	const struct tp_config *cfg;
	uint32_t index;
	struct tessera_ios_stats stats;
	struct ios_desc descs[IOS_DESC_CACHE]; /* bytes held: stats.desc_cache_bytes */
	struct ios_desc fresh;     /* the description the request being served
				    * brought, until ios_desc_done */
	uint64_t clock;
	struct ios_pool *pool;     /* NULL: the loop does the disk work */
	struct ios_local *local;   /* NULL: local reads are off... */
	const char *local_off;     /* ...and why */
	struct ios_vlogs *vlogs;   /* open version logs (ios_vlogs.h); made at
				    * the first versioned request */
};

/* Works: made by a handler with its parts' arguments filled, then handed
 * to ios_reply_work, which answers the request (now, or when the workers
 * are done) and frees the work in every case. */
struct ios_work *ios_work_new(enum ios_job op, enum ios_method m, const char *what,
			      size_t parts);
void ios_work_free(struct ios_work *w);
void ios_reply_work(struct ios *ios, struct srv_req *req, struct ios_work *w);
/* io_threads from the config (its default: the online CPUs, at most
 * IOS_POOL_AUTO_MAX). */
unsigned ios_pool_threads(const struct tp_config *cfg);
/* Whether a request's tag is checked by the disk workers rather than the
 * loop (srv_check_later_set; arg is the ios): bulk WRITE and LIST_WRITE,
 * with workers. */
int ios_pool_checks(void *arg, const struct tp_hdr *hdr);
/* Start nthreads workers (ios->srv and ios->store set); on error err
 * says why. Stop: the workers finish the part they run and
 * are joined (before srv_destroy); destroy: after srv_destroy, frees
 * every work left. */
int ios_pool_start(struct ios *ios, unsigned nthreads, char *err, size_t errlen);
void ios_pool_stop(struct ios *ios);
void ios_pool_destroy(struct ios *ios);
/* A store call on `handle` failed with rc: logged, and answered naming
 * the object, the error and the store's reason `why` (ios_store_why of
 * the lane that made the call; NULL: none). */
void ios_reply_store_error(struct ios *ios, struct srv_req *req, const char *what,
			   uint64_t handle, int rc, const char *why);

void ios_do_write(struct ios *ios, struct srv_req *req);
void ios_do_read(struct ios *ios, struct srv_req *req);
void ios_do_list(struct ios *ios, struct srv_req *req);
void ios_do_dtype(struct ios *ios, struct srv_req *req);
void ios_do_stats(struct ios *ios, struct srv_req *req);
/* The description cache (ios_desc.c). ios_descs_clear frees every entry.
 * The file type a datatype request names, from the message or the cache,
 * into *out: 0, or the negative errno answered (ESTALE: send it again).
 * One from the message is held until ios_desc_done, which keeps it in the
 * cache (IOS_DESC_KEEP: the request passed its checks) or frees it
 * (IOS_DESC_DROP). */
enum ios_desc_fate { IOS_DESC_DROP, IOS_DESC_KEEP };
int ios_refuse_unknown_desc(struct ios *ios, struct srv_req *req, const Tessera__DtypeIORequest *d,
			    const char *what, const struct tdl_dataloop **out);
void ios_desc_done(struct ios *ios, enum ios_desc_fate fate);
/* A layout a request names, against the limits (tdl_layout_check) and
 * this file system: at most as many slots as storage daemons configured,
 * slot within them. 0, or -EINVAL answered naming the limit. */
int ios_refuse_bad_layout(struct ios *ios, struct srv_req *req, uint64_t handle,
			  uint64_t strip_size, uint32_t stripe_count, uint32_t slot,
			  const char *what);
void ios_descs_clear(struct ios *ios);

/* Local reads (ios_local.c). Start: the abstract socket and its thread
 * (ios->index set); on error err says why and local reads stay off.
 * Stop: before the store closes; closes every descriptor not yet
 * fetched. The handler answers LOCAL_OPEN (EOPNOTSUPP while off). */
int ios_local_start(struct ios *ios, char *err, size_t errlen);
void ios_local_stop(struct ios *ios);
void ios_do_local_open(struct ios *ios, struct srv_req *req);
/* Descriptor pairs handed to clients, and fetches refused, so far. */
void ios_local_counts(const struct ios *ios, uint64_t *handed, uint64_t *refused);

/* Capabilities (ios_cap.c): the shared key and the cache of verified
 * ones. ios_refuse_by_cap answers a request whose capability does not let it
 * do what it asks (EACCES, EKEYEXPIRED) and returns that error; 0 lets it
 * be served. Opcodes that touch no object (ping, statfs, stats) pass. */
int ios_caps_create(const struct cap_key *key, struct ios_caps **out);
void ios_caps_destroy(struct ios_caps *c);
/* The shared key (signed commits and merge grants: ios_vlogd.c). */
const struct cap_key *ios_caps_key(const struct ios_caps *c);
int ios_refuse_by_cap(struct ios *ios, struct srv_req *req);
/* What a request of opcode op needs (the check's first step): its
 * capability, the objects it names (n may be 0: a lease names a session,
 * a listing all) and the rights of which it needs one. 1: it needs them;
 * 0: it needs no capability; -EPROTO: refuse it (no declared right, or
 * the request lacks the fields its right needs). */
struct ios_cap_need {
	const Tessera__Capability *cap;
	const uint64_t *handles;
	size_t n;
	uint32_t rights;
};
int ios_cap_need(unsigned op, const ProtobufCMessage *msg, struct ios_cap_need *n);

/* The lock service (ios_lock.c); on error err says why. */
int ios_locks_create(struct ios *ios, uint32_t lease_ms, struct ios_locks **out, char *err,
		     size_t errlen);
void ios_locks_destroy(struct ios_locks *lk);
/* In-process drivers (tests/fuzz) fix the epoch so runs repeat; a daemon
 * keeps its random one. */
void ios_locks_set_epoch(struct ios_locks *lk, uint64_t epoch);
void ios_locks_tick(struct ios *ios);
void ios_do_lock_acquire(struct ios *ios, struct srv_req *req);
void ios_do_lock_release(struct ios *ios, struct srv_req *req);
void ios_do_lease(struct ios *ios, struct srv_req *req);
void ios_do_lock_test(struct ios *ios, struct srv_req *req);
/* VLOG: a versioned object's log: merges and its state (ios_vlogd.c). */
void ios_do_vlog(struct ios *ios, struct srv_req *req);
/* I/O a client does under locks of daemon epoch `epoch` (0: none): 0, or
 * -ESTALE answered when this daemon restarted since (its locks are gone). */
int ios_refuse_stale_epoch(struct ios *ios, struct srv_req *req, uint64_t epoch,
			   uint64_t handle, const char *what);

#endif /* TESSERA_IOS_H */
