/*
 * mds_store_int.h - internals shared by mds_store.c, mds_path.c,
 * mds_ops.c and mds_rename.c. Not part of the contract (that is
 * mds_store.h).
 *
 * LevelDB key schema (all handles 8 bytes big-endian):
 *   "A" handle              -> encoded struct mds_attr (see mds_attr_encode)
 *   "D" parent name         -> child handle(8) type(1)
 *   "M" "next_handle"       -> only in a store made when handles were
 *                              sequential: every handle it handed out is
 *                              below index << 48 | this (8); never written
 *                              now
 *   "M" "root"              -> root handle (8)
 *   "M" "rotor"             -> next first storage server (4)
 *   "M" "nnames"            -> names in the namespace, root included (8)
 *   "P" handle              -> purge intent of removed file `handle`: the
 *                              objects not yet removed, count(4) then
 *                              count x (server(4) object handle(8))
 *   "S" handle              -> a symbolic link's target (1..4095 bytes, as
 *                              given; the "A" record's size is its length)
 *   "X" handle name         -> the value of extended attribute `name` (1 to
 *                              255 bytes, no NUL) of `handle` (mds_xattr.h)
 *   "V" handle ...          -> the version table of versioned file `handle`
 *                              (mds_vtables.c says what follows)
 *
 * Invariants, kept by writing every mutation as one batch (synchronous,
 * or synced by the next commit before anyone is told of it):
 *   - every "D" entry names a handle that has an "A" record of the type the
 *     entry records; a directory's "A" record (except the root's) has
 *     exactly one "D" entry, any other's has nlink of them (hard links),
 *     and the batch that drops the last one drops the "A" record (and "S",
 *     and writes the "P" intent of a regular file);
 *   - a symbolic link has an "S" record, nothing else has one; only
 *     regular files have storage objects (a layout with handles);
 *   - a directory's nentries is the number of "D" keys under its handle and
 *     its nlink is 2 + the number of those that are directories;
 *   - handles are random (mds_alloc_handles): a new one is never 0, the
 *     root's, inside an old store's sequential range, nor the handle of an
 *     inode or purge intent in the store;
 *   - every storage object a file's layout named is, after the file's name
 *     is gone (unlink, rename over it), named by its "P" record until the
 *     storage daemon holding it acknowledged removing it: the "P" record
 *     is written in the batch that drops the "A" record (mds_intent.c);
 *   - every "X" and "V" record names a handle that has an "A" record: the
 *     batch that drops an "A" record drops its "X" and "V" records too
 *     (mds_batch_drop_inode).
 *
 * The store is not thread-safe: the daemon serialises calls (errmsg is per
 * store, so it only means something to the thread that made the call).
 */
#ifndef TESSERA_MDS_STORE_INT_H
#define TESSERA_MDS_STORE_INT_H

#include <leveldb/c.h>
#include <stdarg.h>
#include <stdint.h>

#include "mds_logsync.h"
#include "mds_store.h"
#include "tp_clock.h" /* file times: tp_real_ns() */

#define MDS_COUNTER_MAX ((UINT64_C(1) << 48) - 1) /* sequential handles' */
#define MDS_HANDLE_TRIES 64              /* random draws per handle */
#define MDS_NAME_MAX 255
#define MDS_PATH_MAX TP_PATH_MAX
#define MDS_ERRMSG_LEN 512

#define MDS_KEY_ATTR 'A'
#define MDS_KEY_DIRENT 'D'
#define MDS_KEY_META 'M'
#define MDS_KEY_INTENT 'P'
#define MDS_KEY_SYMLINK 'S'
#define MDS_KEY_XATTR 'X'
#define MDS_KEY_VERSION 'V'

/* Longest key: "D" (or "X") + handle + 255-byte name. */
#define MDS_KEY_MAX (1 + 8 + MDS_NAME_MAX)
/* Longest encoded attribute record (a file with TP_MAX_STRIPE objects). */
#define MDS_ATTR_ENC_MAX (96 + 12 * TP_MAX_STRIPE)

struct mds_store {
	leveldb_t *db;
	leveldb_options_t *opts;
	leveldb_readoptions_t *ropts;
	leveldb_writeoptions_t *wopts;   /* sync = 1: durable on return */
	leveldb_writeoptions_t *wlazy;   /* sync = 0: in the log, not synced */
	char *dir;                       /* the store's directory (its logs) */
	struct mds_logsync *logs;        /* the commit's (mds_logsync.h) */
	/* mds_store_defer_sync: mutations are written unsynced and
	 * `pending` called; mds_store_commit syncs them. */
	int deferred;
	void (*pending)(void *arg);
	void *pending_arg;
	uint64_t unsynced;               /* deferred writes since the last commit */
	uint64_t synced;                 /* synced writes made (a counter) */
	uint32_t mds_index;
	uint32_t n_ios;
	uint64_t root;
	/* A store made when handles were sequential handed out counters
	 * below limit_ctr (its persisted "next_handle"; 1 for a store made
	 * since): random handles avoid [index << 48, index << 48 | limit_ctr). */
	uint64_t limit_ctr;
	uint32_t rotor;                  /* persisted with each create */
	uint64_t nnames;                 /* mirrors "M" "nnames" */
	/* The directories the last path walk passed, the root first, up to
	 * the one holding its last name (none: the walk ended on a directory
	 * itself, "/"); walked_plain is 0 when that is not the path's own
	 * chain (a symbolic link followed, or deeper than MDS_WALKED_MAX).
	 * mds_store_walked() gives them to name leases. */
	uint64_t walked[MDS_WALKED_MAX];
	uint32_t n_walked;
	int walked_plain;
	int walked_to_last;  /* the walk reached the last name's directory */
	/* Told of every handle whose attributes or entries a write changed
	 * (mds_store_on_change); NULL: nobody. */
	void (*on_change)(void *arg, uint64_t handle);
	void *on_change_arg;
	char err[MDS_ERRMSG_LEN];
};

/* ---- mds_store.c: encoding, keys, database helpers, handles ---- */

void mds_put_be64(unsigned char *p, uint64_t v);
uint64_t mds_get_be64(const unsigned char *p);
void mds_put_be32(unsigned char *p, uint32_t v);
uint32_t mds_get_be32(const unsigned char *p);

size_t mds_attr_key(unsigned char *key, uint64_t handle);
size_t mds_dirent_key(unsigned char *key, uint64_t parent, const char *name,
		      size_t len);
/* "X" handle name: an extended attribute's key (MDS_KEY_MAX bytes). */
size_t mds_xattr_key(unsigned char *key, uint64_t handle, const char *name, size_t len);

/* Record an error message and return rc (a negative errno). */
int mds_fail(struct mds_store *st, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Read the attributes of `handle`: 0, -ENOENT when absent, -EIO. */
int mds_get_attr(struct mds_store *st, uint64_t handle, struct mds_attr *out);
/* Look `name` up in directory `parent`: 0, -ENOENT when absent, -EIO. */
int mds_get_dirent(struct mds_store *st, uint64_t parent, const char *name,
		   size_t len, uint64_t *handle, uint32_t *type);

/* Decode an "A" record's value (0, or -EIO when corrupt). */
int mds_decode_attr(const unsigned char *p, size_t len, uint64_t handle,
		    struct mds_attr *a);

void mds_batch_put_attr(leveldb_writebatch_t *b, const struct mds_attr *a);
void mds_batch_del_attr(leveldb_writebatch_t *b, uint64_t handle);
/* A symbolic link's "S" record. */
void mds_batch_put_target(leveldb_writebatch_t *b, uint64_t handle, const char *target,
			  size_t len);
/* Drop what the last name of `victim` held, in batch b: its "A" and "X"
 * records (mds_batch_drop_inode), a link's "S" record, and write a regular
 * file's purge intent ("P", mds_intent.c). 0, or -EIO (message set). */
int mds_batch_drop_last_name(struct mds_store *st, leveldb_writebatch_t *b,
			     const struct mds_attr *victim);
/* The target of link `handle` into buf (len bytes, NUL-terminated):
 * 0, -EIO when missing or longer than len - 1. */
int mds_get_target(struct mds_store *st, uint64_t handle, char *buf, size_t len);
/* The object `handle` loses its last name: delete its "A" record and all
 * its "X" records (extended attributes) and "V" records (version table) in batch b. 0, or -EIO (message
 * set) when the records could not be listed. */
int mds_batch_drop_inode(struct mds_store *st, leveldb_writebatch_t *b, uint64_t handle);
void mds_batch_put_dirent(leveldb_writebatch_t *b, uint64_t parent,
			  const char *name, size_t len, uint64_t handle,
			  uint32_t type);
void mds_batch_del_dirent(leveldb_writebatch_t *b, uint64_t parent,
			  const char *name, size_t len);
void mds_batch_put_nnames(leveldb_writebatch_t *b, uint64_t nnames);
void mds_batch_put_rotor(leveldb_writebatch_t *b, uint32_t rotor);
/* Write `b` durably: synchronously, or (mds_store_defer_sync) unsynced,
 * durable at the next mds_store_commit, which the daemon makes before any
 * reply leaves. On failure sets the message ("op path: ...") and returns
 * -EIO. */
int mds_batch_write(struct mds_store *st, leveldb_writebatch_t *b,
		    const char *op, const char *path);
/* Write an attribute change `b` (mode, owner, times: what a local file
 * system does not sync before chmod(2) returns either): synchronously
 * unless deferred; deferred, unsynced without holding any reply (a
 * killed daemon keeps it: it is in LevelDB's log), made durable by the
 * next commit, which the daemon makes within a tick
 * (mds_store_needs_commit) or at a client's META_SYNC. */
int mds_batch_write_attrs(struct mds_store *st, leveldb_writebatch_t *b,
			  const char *op, const char *path);
/* Write `b` unsynced whatever the mode: for changes a crash may take back
 * harmlessly (a purge intent shrunk: the purger replays the REMOVE). */
int mds_batch_write_lazy(struct mds_store *st, leveldb_writebatch_t *b,
			 const char *op, const char *path);

/* Hand out `n` fresh random handles into h[], distinct from each other and
 * from every inode and purge intent in the store (mds_store.c says what
 * else is refused). Nothing is written: a handle becomes taken when the
 * caller's batch writes its "A" record. -EIO (message set) when getrandom
 * or a lookup fails. */
int mds_alloc_handles(struct mds_store *st, uint32_t n, uint64_t *h);

/* ---- mds_intent.c: purge intents ---- */

/* Record, in the batch that drops file `victim`'s "A" record, the intent
 * to remove its storage objects (nothing for a file without objects). */
void mds_batch_put_intent(leveldb_writebatch_t *b, const struct mds_attr *victim);

/* ---- mds_path.c: path checks, permissions, the walk ---- */

#define MDS_MAY_EXEC 1
#define MDS_MAY_WRITE 2
#define MDS_MAY_READ 4

int mds_cred_in_group(const struct mds_cred *cred, uint32_t gid);
/* 0 when `cred` has all of `want` (MDS_MAY_*) on `a`, else -EACCES. */
int mds_permit(const struct mds_cred *cred, const struct mds_attr *a,
	       int want);
/* The sticky bit (S_ISVTX) of directory `dir`: only root, the directory's
 * owner or `entry`'s owner may remove or rename `entry` out of it (or
 * over it). 0, or -EPERM with the reason set for `op` on `path`. */
int mds_sticky_permit(struct mds_store *st, const struct mds_cred *cred, const char *op,
		      const char *path, const struct mds_attr *dir,
		      const struct mds_attr *entry);

/* Result of resolving everything but the last component of a path,
 * symbolic links in it followed. */
struct mds_walk {
	struct mds_attr parent;  /* the directory holding the last name */
	const char *name;        /* last component (points into buf) */
	size_t len;              /* its length; 0 when the walk ended on a
				  * directory itself ("/", or a link to "..") */
	char dir[MDS_PATH_MAX + 1]; /* the parent's path, links resolved */
	char buf[MDS_PATH_MAX + 1]; /* the components left to walk */
	int found;               /* mds_walk_last: the last name exists */
	uint32_t nfollowed;      /* links followed so far */
};

/* Check `path` (absolute, no "."/".."/empty components, lengths) and walk
 * to its parent directory, checking search permission on every directory
 * passed and following symbolic links in every component but the last.
 * On error sets the message, prefixed "op path: ". For "/" the walk gives
 * the root as parent and len 0. */
int mds_walk_parent(struct mds_store *st, const struct mds_cred *cred,
		    const char *op, const char *path, struct mds_walk *w);

/* mds_walk_parent, then look the last name up (search permission on the
 * parent included), following a link there when `follow` says so (then
 * w describes the last link's target). *out gets what it names and
 * w->found is 1, or w->found is 0 (w->parent, name: where it would be). */
int mds_walk_last(struct mds_store *st, const struct mds_cred *cred, const char *op,
		  const char *path, enum mds_follow follow, struct mds_walk *w,
		  struct mds_attr *out);

/* mds_walk_last, and -ENOENT when the last name is missing. */
int mds_walk_full(struct mds_store *st, const struct mds_cred *cred,
		  const char *op, const char *path, struct mds_walk *w,
		  struct mds_attr *out);
int mds_walk_full_follow(struct mds_store *st, const struct mds_cred *cred, const char *op,
			 const char *path, enum mds_follow follow, struct mds_walk *w,
			 struct mds_attr *out);

#endif /* TESSERA_MDS_STORE_INT_H */
