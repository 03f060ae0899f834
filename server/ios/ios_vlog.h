/*
 * ios_vlog.h - a storage daemon's version log of one object (issue 25,
 * seed 001 chapter 8: the Versioning Parallel File System).
 *
 * Every modify of a versioned object is a record appended to the object's
 * log file (one pwritev at its end, so a sparse noncontiguous write is one
 * contiguous disk write): its operation (write or truncate), the object
 * byte ranges it writes (an offset-length list; a dataloop write is
 * unrolled to this object's list on arrival, docs/design.md "Versioning"
 * says why), and its bytes. A record arrives under the client's temporary
 * version T = ID# << 32 | IO# and is invisible until committed: the
 * version server's order of completion gives it a version number Vm
 * (ios_vlog_commit). One T may hold several write records, its parts
 * (one client call too large for one request: a record per request); the
 * commit makes them all visible at Vm, applied in part order, and abort,
 * discard, replay and merge take them together. A read at read version R
 * sees, per byte, the newest committed record with Vm <= R (of a T's
 * parts, the highest part), else the base object. Committed records
 * are found through an in-memory offset-length index (not by scanning the
 * log). A merge applies the committed records up to a version to the base
 * object, never past a pinned read version (a read in progress). Records
 * of a client whose lease ended are discarded (ios_vlog_discard).
 *
 * Pure: no network, no threads, no globals. The log file goes through the
 * store's disk ops table (ios_disk.h) at a path the caller names; the
 * base object through struct ios_vlog_base (the daemon's wraps its store,
 * tests a file or memory). One caller at a time per log. Functions return
 * 0 or a negative errno; ios_vlog_why says more when the errno does not.
 */
#ifndef TESSERA_IOS_VLOG_H
#define TESSERA_IOS_VLOG_H

#include <stddef.h>
#include <stdint.h>

#include "ios_store.h" /* struct ios_piece */

struct ios_disk;
struct ios_vlog;
struct tdl_dataloop;
struct tdl_layout;

/* T = ID# << 32 | IO#: 32 bits each. T 0 and Vm 0 are never used (Vm 0
 * means "no version": the base object alone). */
static inline uint64_t ios_vlog_tver(uint32_t id, uint32_t io)
{
	return (uint64_t)id << 32 | io;
}
static inline uint32_t ios_vlog_id(uint64_t t)
{
	return (uint32_t)(t >> 32);
}

/* The base object the log merges into. read gives zeros past its end. */
struct ios_vlog_base_ops {
	int (*read)(void *ctx, uint64_t off, uint64_t len, uint8_t *buf);
	int (*write)(void *ctx, uint64_t off, uint64_t len, const uint8_t *buf);
	int (*truncate)(void *ctx, uint64_t size);
	int (*size)(void *ctx, uint64_t *size);
	int (*sync)(void *ctx);
};
struct ios_vlog_base {
	const struct ios_vlog_base_ops *ops;
	void *ctx;
};

/* Bounds per object. live records: uncommitted plus committed unmerged.
 * bytes: the log file's size (it shrinks when a merge leaves no live
 * record). */
struct ios_vlog_limits {
	uint32_t max_records;
	uint32_t max_pieces;      /* of one record */
	uint32_t max_live_pieces; /* of all live records (the index's memory: 48 B each) */
	uint64_t max_bytes;
};
#define IOS_VLOG_MAX_RECORDS 4096
#define IOS_VLOG_MAX_PIECES 65536
#define IOS_VLOG_MAX_LIVE_PIECES (1u << 18)
#define IOS_VLOG_MAX_BYTES (256ull << 20)
#define IOS_VLOG_MAX_PINS 1024

/* When appended records reach the disk: SYNC_EACH fdatasyncs every write
 * and truncate record before returning (the daemon: a record is durable
 * before the client may commit it); SYNC_LATER leaves it to ios_vlog_sync
 * and merges (tests, and a caller that syncs a batch). Commit, abort and
 * discard records are never synced alone: the version server holds the
 * commits until merged (docs/design.md), a lost abort is discarded again. */
enum ios_vlog_durability { IOS_VLOG_SYNC_EACH, IOS_VLOG_SYNC_LATER };

struct ios_vlog_config {
	struct ios_disk *disk; /* the caller's; outlives the log */
	uint64_t handle;       /* for the disk's fault rules and messages */
	const char *path;      /* the log file (made if missing) */
	struct ios_vlog_base base;
	struct ios_vlog_limits limits; /* 0 fields: the defaults above */
	enum ios_vlog_durability durability;
};

/* Opens (or makes) the log and recovers it: a torn last record is cut
 * off, a merge a crash interrupted is finished. -EIO: a damaged or
 * hostile record (ios_vlog_why says which; *out gets the log anyway so
 * the caller can read why, close it). */
int ios_vlog_open(const struct ios_vlog_config *cfg, struct ios_vlog **out);
void ios_vlog_close(struct ios_vlog *log);
const char *ios_vlog_why(const struct ios_vlog *log);

/* Appends part `part` of a write under T: pieces[0..n) (object offsets;
 * later pieces win where they overlap, and later parts over earlier ones)
 * and their bytes concatenated in `data`. The same (T, part) again with
 * the same pieces is a resend: 0, nothing appended (so a late resend never
 * lands after a later part). Every part counts as a record in the limits.
 * -EINVAL: T 0, T committed or a truncate, (T, part) held with other
 * pieces, a piece of length 0 or ending past INT64_MAX, data_len not the
 * pieces' total. -ENOSPC: the record, or T's parts with it, can never fit
 * (more than max_pieces in it; more than max_records, max_live_pieces or
 * max_bytes over T's parts). -EBUSY: the log is full now (merge, or wait
 * for commits, reads and lease discards, then retry). */
int ios_vlog_write(struct ios_vlog *log, uint64_t t, uint32_t part, const struct ios_piece *pieces,
		   size_t n, const uint8_t *data, uint64_t data_len);
/* The same for stream bytes [first, last) of (dl, count) at displacement
 * disp, restricted to `slot` of `layout`: `data` holds this object's bytes
 * of that window in stream order. Unrolled to object pieces here. */
int ios_vlog_write_dataloop(struct ios_vlog *log, uint64_t t, uint32_t part,
			    const struct tdl_dataloop *dl,
			    uint64_t count, int64_t disp, uint64_t first, uint64_t last,
			    const struct tdl_layout *layout, uint32_t slot, const uint8_t *data,
			    uint64_t data_len);
/* Appends a truncate to `size` under T, T's only record (-EINVAL past
 * INT64_MAX; T in use: the same truncate again is a resend, 0). */
int ios_vlog_truncate(struct ios_vlog *log, uint64_t t, uint64_t size);

/* T (every part of it) becomes version vm. Again with the same vm: 0 (a
 * resend). -ENOENT: no record of T here; -EEXIST: vm already names
 * another T or T another vm; -ESTALE: vm <= the merged version (too late
 * to place it in order). */
int ios_vlog_commit(struct ios_vlog *log, uint64_t t, uint64_t vm);
/* T's uncommitted records go, all parts (-ENOENT: none; -EBUSY:
 * committed). */
int ios_vlog_abort(struct ios_vlog *log, uint64_t t);
/* Every uncommitted record of client `id` goes; *n (may be NULL) counts
 * them (each part). For when the client's lease ended. */
int ios_vlog_discard(struct ios_vlog *log, uint32_t id, uint32_t *n);

/* Every uncommitted record of an ID below next_id that is not in
 * live[0..n_live) goes (a merge grant's: those clients closed or their
 * leases ended; IDs from next_id on were handed out after the grant).
 * *n (may be NULL) counts them. */
int ios_vlog_discard_dead(struct ios_vlog *log, uint32_t next_id, const uint32_t *live,
			  size_t n_live, uint32_t *n);

/* A read at version r is in progress: merges stop at the lowest pinned
 * version. -ESTALE: r below the merged version; -ENOSPC: too many pins.
 * Unpin: -ENOENT when r is not pinned. */
int ios_vlog_pin(struct ios_vlog *log, uint64_t r);
int ios_vlog_unpin(struct ios_vlog *log, uint64_t r);

/* Reads pieces[0..n) at version r into data (their bytes concatenated;
 * past the object's end, zeros); *size (may be NULL) gets the object's
 * size at r. -ESTALE: r below the merged version (merged away). */
int ios_vlog_read(struct ios_vlog *log, uint64_t r, const struct ios_piece *pieces, size_t n,
		  uint8_t *data, uint64_t *size);

/* Merges committed records up to version min(upto, lowest pin) into the
 * base object, which is synced; *merged (may be NULL) gets the merged
 * version after. The caller commits every record with Vm <= upto first
 * (the version server sends its Vmap with the merge). */
int ios_vlog_merge(struct ios_vlog *log, uint64_t upto, uint64_t *merged);
/* fdatasync the log. */
int ios_vlog_sync(struct ios_vlog *log);

struct ios_vlog_stats {
	uint32_t uncommitted;   /* records (each part of a T counts) */
	uint32_t committed;     /* committed, not merged */
	uint64_t index_pieces;  /* entries of the offset-length index */
	uint64_t log_bytes;
	uint64_t merged;        /* the merged version */
	uint64_t base_size;     /* the base object's size as of it */
	uint64_t cut_bytes;     /* a torn tail cut off at open */
};
void ios_vlog_stats(const struct ios_vlog *log, struct ios_vlog_stats *out);

#endif /* TESSERA_IOS_VLOG_H */
