/*
 * ios_vlogs.h - a storage daemon's open version logs (issue 25), and the
 * version work of its requests.
 *
 * The registry (struct ios_vlogs, in the daemon's struct ios) opens the
 * log of a versioned object lazily, at the first versioned request for it:
 * the file DIR/objects/XX/HHHHHHHHHHHHHHHH.vlog beside the object, its
 * base the store's object itself (reads, writes, truncates, sizes and
 * syncs through the store, so the block checksums stay right), every
 * write and truncate record synced before the reply (IOS_VLOG_SYNC_EACH).
 * A restarted daemon reopens logs the same way: ios_vlog_open recovers
 * them.
 *
 * Bounds per daemon: at most IOS_VLOGS_OPEN logs open; the least recently
 * used log without live records (uncommitted or committed unmerged) is
 * closed to make room, and a registry full of logs with live records
 * answers EBUSY (merge first). Over the open logs, at most
 * IOS_VLOGS_MAX_RECORDS live records and IOS_VLOGS_MAX_BYTES of log: a
 * write past either answers EBUSY. (A log a restart left with live records
 * counts from its first use after the restart.)
 *
 * Threads: the registry is shared by the pool's workers (a mutex); each
 * log is used by one worker at a time, the one running its object's part
 * (ios_pool.c runs an object's parts in order, one at a time).
 *
 * The handler-level checks (version fields against the capability, signed
 * commits and grants) are pure functions, unit-tested
 * (tests/unit/test_ios_vlogs.c).
 */
#ifndef TESSERA_IOS_VLOGS_H
#define TESSERA_IOS_VLOGS_H

#include <stddef.h>
#include <stdint.h>

#include "ios_vlog.h"
#include "tessera.pb-c.h"

struct ios_disk;
struct ios_store;
struct ios_vlogs;
struct ios_part;
struct cap_key;

#define IOS_VLOGS_OPEN 256
#define IOS_VLOGS_MAX_RECORDS (1u << 16)
#define IOS_VLOGS_MAX_BYTES (4ull << 30)

struct ios_vlogs_limits {
	uint32_t max_open;    /* 0 fields: the defaults above */
	uint32_t max_records;
	uint64_t max_bytes;
	struct ios_vlog_limits per_log; /* 0 fields: ios_vlog's defaults */
	/* A write's reply asks for a merge (WriteReply.vlog_half) once its
	 * object's log, or all the open logs, hold this share (percent) of a
	 * record or byte limit (vmerge_log_percent; 0: 50). */
	uint32_t half_percent;
};

/* `dir` is the store's objects directory (ios_store_dir); `index` the
 * daemon's, for messages. */
int ios_vlogs_create(struct ios_disk *disk, const char *dir, unsigned index,
		     const struct ios_vlogs_limits *lim, struct ios_vlogs **out);
void ios_vlogs_destroy(struct ios_vlogs *v);
/* REMOVE of an object: its log is closed and its file removed (none:
 * 0). */
int ios_vlogs_remove(struct ios_vlogs *v, uint64_t handle);
/* Open logs now, and their live records and bytes (the daemon's totals). */
struct ios_vlogs_totals {
	uint32_t open;
	uint64_t records;
	uint64_t bytes;
};
void ios_vlogs_totals(struct ios_vlogs *v, struct ios_vlogs_totals *out);

/* ------------------------------------------------ the work of a part */

/* One signed commit that names the part's object, verified by the loop. */
struct ios_vcommit {
	uint64_t t, vm;
};

enum ios_vop {
	IOS_VOP_WRITE,    /* part pieces + the work's data, under t */
	IOS_VOP_TRUNCATE, /* to part size, under t */
	IOS_VOP_READ,     /* part pieces at `version` (none: the size only) */
	IOS_VOP_MERGE,    /* merge up to `version`, discard dead IDs */
	IOS_VOP_STATE     /* the stats */
};

/* A part's version work (struct ios_part.vjob; freed with the work). The
 * commits are applied first (0 also on a resend; -ESTALE: merged
 * already, skipped). */
struct ios_vjob {
	struct ios_vlogs *vlogs;
	enum ios_vop op;
	uint64_t t;
	uint32_t part;               /* WRITE: which record of t */
	uint64_t version;
	struct ios_vcommit *commits; /* owned */
	size_t n_commits;
	uint32_t next_id;            /* MERGE: the grant's */
	uint32_t *live;              /* owned */
	size_t n_live;
	/* results */
	struct ios_vlog_stats stats; /* MERGE, STATE: after */
	uint32_t discarded;
	int half;                    /* WRITE: a log is past half_percent */
};
void ios_vjob_free(struct ios_vjob *j);
/* Run part p's vjob on store lane `lane` (any thread). data: a write's
 * bytes. Sets p->rc (bytes moved or 0, or a negative errno) and p->why
 * (malloc'd, names the object, what failed and the daemon) on failure. */
void ios_vjob_run(struct ios_store *lane, struct ios_part *p, const uint8_t *data);

/* ------------------------------------------------ the loop's checks */

/* What a request is, for the version fields check. */
enum ios_vkind { IOS_VKIND_WRITE, IOS_VKIND_READ };
/* The version fields of a request on `handle` against its capability:
 * 0: a plain request on a plain object; 1: a versioned request on a
 * versioned object (a write's version != 0; a read's may be 0: a read
 * before any commit, which the log answers); -EINVAL with why: a write
 * without version_t on a VERSIONED capability, version fields on one without it, or read fields
 * on a write. version: version_t (writes) or read_version (reads);
 * other: the fields the kind does not use (a write's read_version and
 * vmap count). */
int ios_vcheck_fields(const Tessera__Capability *cap, uint64_t handle, enum ios_vkind kind,
		      uint64_t version, uint64_t other, unsigned index, char *why, size_t len);
/* The signed commits of a request on handles[0..n_handles): each must
 * verify under key, be of the capability's file and name one of the
 * handles (else -EACCES "forged commit"); those naming `handle` go to
 * *out (malloc'd, NULL when none) and *nout. */
int ios_vcheck_commits(const struct cap_key *key, const Tessera__Capability *cap,
		       Tessera__VersionCommit *const *vmap, size_t n_vmap,
		       const uint64_t *handles, size_t n_handles, uint64_t handle,
		       unsigned index, struct ios_vcommit **out, size_t *nout, char *why,
		       size_t len);
/* A merge grant: present, verifies, the capability's file, not expired
 * at now_ns, at most TP_VERSION_MAX_IDS live IDs. 0 or -EACCES /
 * -EKEYEXPIRED / -EINVAL with why. */
int ios_vcheck_grant(const struct cap_key *key, const Tessera__Capability *cap,
		     const Tessera__VersionGrant *g, uint64_t handle, int64_t now_ns,
		     unsigned index, char *why, size_t len);

/* ------------------------------------------------ the handlers' hook */

struct ios;
struct srv_req;
/* A request's version fields (ios_vcheck_fields' version and other; its
 * vmap; GETSIZE: all the handles it names; a write's version_part). */
struct ios_vfields {
	const Tessera__Capability *cap;
	uint64_t version;
	uint64_t other;
	Tessera__VersionCommit *const *vmap;
	size_t n_vmap;
	const uint64_t *handles; /* NULL: the one handle */
	size_t n_handles;
	uint32_t part;           /* a write's part of T (0 on any other request) */
};
/* 0: a plain request (serve it as usual); 1: versioned, *out its vjob
 * (op WRITE or READ; commits checked) for the part of `handle`; a
 * negative errno: refused, answered. */
int ios_vprepare(struct ios *ios, struct srv_req *req, const struct ios_vfields *f,
		 uint64_t handle, enum ios_vkind kind, const char *what, struct ios_vjob **out);
/* The daemon's registry, made if not yet (NULL: no memory). */
struct ios_vlogs *ios_vlogs_of(struct ios *ios);

#endif /* TESSERA_IOS_VLOGS_H */
