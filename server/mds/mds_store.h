/*
 * mds_store.h - the metadata daemon's namespace, kept in LevelDB.
 *
 * Pure storage logic: no network. The daemon (tessera-mds) decodes a
 * request, calls one of these, and encodes the answer. Every change is
 * one LevelDB write batch, synchronous (so when a call returns 0 the change
 * is durable and atomic: a rename replaces its target in one batch), or,
 * after mds_store_defer_sync, durable at the next mds_store_commit (group
 * commit, below). Paths are absolute Tessera paths ("/", "/a/b"); "." and ".."
 * components and empty components are refused with -EINVAL; a name over
 * 255 bytes or a path over 4096 bytes with -ENAMETOOLONG. Not thread-safe:
 * the daemon makes one call at a time.
 *
 * Permissions follow POSIX for the caller `cred`: search (x) on every
 * directory walked, write+search on a directory whose entries change,
 * sticky-less. uid 0 may do anything. Only the owner (or root) may chmod or
 * utimens to explicit times; only root may chown to another uid; the owner
 * may chgrp to a group it belongs to.
 *
 * Handles are 64-bit: the top 16 bits are the metadata daemon's index, the
 * rest a counter persisted in blocks, so several metadata daemons can share
 * one handle space later. A file's storage objects get handles from the same
 * space. All functions return 0 or a negative errno; after an error,
 * mds_store_errmsg() says what failed in words ("mkdir /a/b: /a is not a
 * directory").
 */
#ifndef TESSERA_MDS_STORE_H
#define TESSERA_MDS_STORE_H

#include <stdint.h>
#include <stddef.h>

#include "tproto.h" /* TP_MAX_STRIPE: most storage objects one file may have */

#define MDS_DEFAULT_STRIP 65536    /* strip size when nobody chose one */

/* The store's names for tessera.proto's FileType (Attr.type). */
enum mds_type {
	MDS_FILE = TESSERA__FILE_TYPE__FILE_REGULAR,
	MDS_DIR = TESSERA__FILE_TYPE__FILE_DIRECTORY,
	MDS_SYMLINK = TESSERA__FILE_TYPE__FILE_SYMLINK,   /* target in an "S" record */
	MDS_FIFO = TESSERA__FILE_TYPE__FILE_FIFO,         /* special files: metadata */
	MDS_SOCKET = TESSERA__FILE_TYPE__FILE_SOCKET,     /* only, no storage objects */
	MDS_CHARDEV = TESSERA__FILE_TYPE__FILE_CHARDEV,
	MDS_BLOCKDEV = TESSERA__FILE_TYPE__FILE_BLOCKDEV,
};

/* Whether a call on a path follows a symbolic link in its last component
 * (links in the other components are always followed). */
enum mds_follow { MDS_FOLLOW, MDS_NOFOLLOW };

/* Symbolic links followed in one path walk before it fails with -ELOOP
 * (Linux's limit), and the most names one file may have (-EMLINK). */
#define MDS_SYMLOOP_MAX 40
#define MDS_LINK_MAX 65000
/* A symbolic link's target: 1 to MDS_TARGET_MAX bytes (-ENAMETOOLONG). */
#define MDS_TARGET_MAX 4095

/* MDS_SET_* bits for mds_setattr's `valid`. */
#define MDS_SET_MODE  0x01
#define MDS_SET_UID   0x02
#define MDS_SET_GID   0x04
#define MDS_SET_ATIME 0x08
#define MDS_SET_MTIME 0x10
#define MDS_SET_SIZE  0x20  /* records the size truncate set (size hint) */
#define MDS_SET_ATIME_NOW 0x40
#define MDS_SET_MTIME_NOW 0x80

struct mds_cred {
	uint32_t uid;
	uint32_t ngids;        /* gids[0] is the primary group */
	const uint32_t *gids;
};

struct mds_layout {
	uint64_t strip_size;                /* bytes per strip */
	uint32_t count;                     /* objects (stripe count) */
	uint32_t servers[TP_MAX_STRIPE];   /* storage daemon index of slot i */
	uint64_t handles[TP_MAX_STRIPE];   /* object handle of slot i */
	/* Issue 25 (mds_version.h): a versioned file (fixed at create), or a
	 * directory whose new files are versioned (its default). */
	uint8_t versioned;
};

struct mds_attr {
	uint64_t handle;
	uint32_t type;        /* enum mds_type */
	uint32_t mode;        /* permission bits (07777) */
	uint32_t uid, gid;
	uint32_t nlink;       /* files: names (hard links); dirs 2 + subdirectories */
	int64_t atime_ns, mtime_ns, ctime_ns;
	/* When (this daemon's clock) mtime_ns was last set: create, utimens, a
	 * size change. Clients take a storage object's modification time
	 * instead of mtime_ns when it is later than this (a write since). */
	int64_t mtime_set_ns;
	uint64_t size;        /* files: size set by the last truncate;
			       * symlinks: the target's length */
	uint64_t rdev;        /* device nodes: the device number */
	uint64_t nentries;    /* dirs: entries */
	int has_layout;       /* files always; dirs if a default is set */
	struct mds_layout layout; /* files: the layout; dirs: default (only
				   strip_size and count are meaningful) */
};

struct mds_dirent {
	char name[256];
	uint64_t handle;
	uint32_t type;
};

struct mds_store;

/* Open (creating if needed) the namespace in directory `dir`. `n_ios` is
 * the number of storage daemons in the file system; `mds_index` this
 * daemon's index (handle partition). A new namespace gets a root directory
 * "/" owned by root with mode 0777|S_ISVTX-less 0777. On failure err says
 * why. */
int mds_store_open(const char *dir, uint32_t mds_index, uint32_t n_ios,
		   struct mds_store **out, char *err, size_t errlen);
void mds_store_close(struct mds_store *st);

/*
 * Group commit. By default every change is one synchronous batch (durable
 * when the call returns). Attribute changes are the exception once
 * deferred: written unsynced, replies not held (mds_store_needs_commit). After mds_store_defer_sync, a change is written
 * unsynced (in LevelDB's log, so readers see it and a killed process keeps
 * it, but a power loss could drop it) and pending(arg) is called; the
 * caller then calls mds_store_commit before it tells anyone about the
 * change: one synced write makes every change since the last commit
 * durable (LevelDB's log is one ordered file; older log files that still
 * hold unsynced changes, after LevelDB switched to a new one, are synced
 * too). The metadata daemon commits once per event-loop turn
 * (srv_hold_replies). mds_store_commit: 0 (also when nothing is pending),
 * or -EIO with the message set.
 */
void mds_store_defer_sync(struct mds_store *st, void (*pending)(void *arg), void *arg);
int mds_store_commit(struct mds_store *st);
/* mds_store_commit in three steps, for a commit synced on another thread
 * while the daemon goes on writing: begin (with the other calls) takes
 * every change written so far, 1 if any; sync (on any one thread at a
 * time; it reads only the store's directory) makes them durable: 0, or
 * -EIO with err set; end (with the other calls) counts the synced write
 * once sync returned 0. A failed sync leaves its changes undurable: the
 * daemon stops. */
int mds_store_commit_begin(struct mds_store *st);
int mds_store_commit_sync(const struct mds_store *st, char *err, size_t errlen);
void mds_store_commit_end(struct mds_store *st);
/* Whether changes wait for a commit: attribute changes (chmod, chown,
 * utimes), which are acknowledged once written and synced by the next
 * commit. The daemon commits them within a tick, or at once for a
 * client's META_SYNC (fsync). */
int mds_store_needs_commit(const struct mds_store *st);
/* Synced writes made so far (commits and synchronous changes): the
 * counter tests and benchmarks read. */
uint64_t mds_store_synced_writes(const struct mds_store *st);

/* What the last failing call on `st` failed at, in words. */
const char *mds_store_errmsg(const struct mds_store *st);

/* Name leases (mds_lease.h) need two things of the store:
 * - fn(arg, handle) is called for every handle whose attribute record or
 *   directory entries a write changes, once the write is in the store
 *   (its batch is read back: no call site can forget to tell);
 * - the directories the last path walk passed, root first, up to the one
 *   holding the last name: *n of them (0 for "/"). 0 when that is not the
 *   path's own chain of names (a symbolic link was followed, or deeper
 *   than MDS_WALKED_MAX): nothing of such a walk is leased. */
#define MDS_WALKED_MAX 64
void mds_store_on_change(struct mds_store *st, void (*fn)(void *arg, uint64_t handle),
			 void *arg);
int mds_store_walked(const struct mds_store *st, const uint64_t **walked, uint32_t *n);
/* Whether the last walk reached the directory of its last name (a
 * lookup that failed ENOENT then failed on that name alone). */
int mds_store_walked_to_last(const struct mds_store *st);

/* The attributes of what `path` names, following a symbolic link in its
 * last component (mds_lookup) or not (MDS_NOFOLLOW: the link's own). A
 * walk that follows more than MDS_SYMLOOP_MAX links fails with -ELOOP.
 * Targets: relative ones from the link's directory, absolute ones as
 * Tessera paths; "." and ".." in targets mean what they mean in POSIX. */
int mds_lookup(struct mds_store *st, const struct mds_cred *cred,
	       const char *path, struct mds_attr *out);
int mds_lookup_follow(struct mds_store *st, const struct mds_cred *cred, const char *path,
		      enum mds_follow follow, struct mds_attr *out);

/* New names for other file types. Each is one synchronous batch.
 * mds_symlink: a symbolic link to `target` (1..MDS_TARGET_MAX bytes, kept
 * as given, not checked; mode 0777). mds_readlink: the target of the link
 * `path` into buf (NUL-terminated; len >= MDS_TARGET_MAX + 1), -EINVAL
 * when `path` is not a link. mds_mknod: a FIFO, socket or device node
 * (type MDS_FIFO..MDS_BLOCKDEV, else -EINVAL; devices need uid 0, else
 * -EPERM), metadata only. mds_link: a new name `to` for the object `from`
 * names (a link in from's last component is not followed, as Linux's
 * link(2)): directories -EPERM, MDS_LINK_MAX names -EMLINK; a caller who
 * neither owns `from` nor may read and write it gets -EPERM (Linux's
 * protected_hardlinks). */
int mds_symlink(struct mds_store *st, const struct mds_cred *cred, const char *path,
		const char *target, struct mds_attr *out);
int mds_readlink(struct mds_store *st, const struct mds_cred *cred, const char *path,
		 char *buf, size_t len);
int mds_mknod(struct mds_store *st, const struct mds_cred *cred, const char *path,
	      uint32_t type, uint32_t mode, uint64_t rdev, struct mds_attr *out);
int mds_link(struct mds_store *st, const struct mds_cred *cred, const char *from,
	     const char *to, struct mds_attr *out);

int mds_mkdir(struct mds_store *st, const struct mds_cred *cred,
	      const char *path, uint32_t mode, struct mds_attr *out);

/* Whether a new file is versioned (issue 25), or a directory's new files
 * are: as the directory's default says (inherit), or versioned. */
enum mds_version_mode { MDS_VERSIONING_INHERIT, MDS_VERSIONING_ON };

/* What mds_create makes. */
enum mds_create_mode {
	MDS_CREATE_OR_OPEN,    /* an existing file is returned (*created = 0) */
	MDS_CREATE_EXCLUSIVE,  /* an existing name is -EEXIST */
};
struct mds_create_req {
	const char *path;
	uint32_t mode;                 /* permission bits (07777 kept) */
	enum mds_create_mode how;
	uint64_t strip_size;           /* 0: inherited (see mds_create) */
	uint32_t stripe_count;         /* 0: inherited */
	uint64_t default_strip;        /* the client's config; 0: MDS_DEFAULT_STRIP */
	/* An existing symbolic link named by `path`: followed (MDS_FOLLOW,
	 * and a dangling link's target is created), or -ELOOP (O_NOFOLLOW).
	 * An exclusive create never follows (-EEXIST). */
	enum mds_follow follow;
	/* Versioned: asked for (layout.versioned), or the parent's default. */
	enum mds_version_mode versioned;
};

/* Create a regular file. If the name exists: -EEXIST when
 * MDS_CREATE_EXCLUSIVE, else (a file) its attributes with *created = 0; a
 * directory gives -EISDIR. The layout: strip_size and stripe_count from
 * the request when non-zero, else the parent directory's default, else
 * (strip size) default_strip when non-zero (the client's config), else
 * MDS_DEFAULT_STRIP, and all storage daemons; stripe_count above n_ios is
 * -EINVAL. The first server rotates from file to file so small files
 * spread. */
int mds_create(struct mds_store *st, const struct mds_cred *cred,
	       const struct mds_create_req *rq, struct mds_attr *out, int *created);

int mds_setattr(struct mds_store *st, const struct mds_cred *cred,
		const char *path, uint32_t valid, const struct mds_attr *in,
		struct mds_attr *out);
/* mds_setattr on a symbolic link itself (MDS_NOFOLLOW: lchown, utimensat
 * with AT_SYMLINK_NOFOLLOW) or what it names (MDS_FOLLOW, mds_setattr). */
int mds_setattr_follow(struct mds_store *st, const struct mds_cred *cred, const char *path,
		       enum mds_follow follow, uint32_t valid, const struct mds_attr *in,
		       struct mds_attr *out);

/* Set a directory's default layout for files created in it later
 * (strip_size or stripe_count 0: keep inheriting that field). */
int mds_set_dir_layout(struct mds_store *st, const struct mds_cred *cred,
		       const char *path, uint64_t strip_size,
		       uint32_t stripe_count);
/* Make a directory's new files versioned (its default; issue 25). Only
 * mds_clear_dir_layout takes that back. Same checks as above. */
int mds_set_dir_versioned(struct mds_store *st, const struct mds_cred *cred, const char *path);
/* Clear a directory's default layout: files created in it take the file
 * system's default again (the owner or root only, as above). */
int mds_clear_dir_layout(struct mds_store *st, const struct mds_cred *cred,
			 const char *path);

/* Up to `max` entries of directory `path` whose names sort after `cursor`
 * ("" for the first page), in name order, into ents[]; *n gets how many,
 * *eof whether the directory has no more. Because the cursor is a name, a
 * listing in pages sees every entry that existed throughout, whatever is
 * inserted or removed meanwhile. Needs read permission. */
int mds_readdir(struct mds_store *st, const struct mds_cred *cred,
		const char *path, const char *cursor, uint32_t max,
		struct mds_dirent *ents, uint32_t *n, int *eof);

/* Remove a name of a file (of any type but a directory: -EISDIR);
 * *removed gets its attributes (with the layout), its nlink the names
 * left. When that is 0 the file is gone, and for a regular file the same
 * batch records a purge intent for its storage objects (see
 * mds_intent_list), so they are removed even if the caller never does;
 * while other names remain, nothing is purged. */
int mds_unlink(struct mds_store *st, const struct mds_cred *cred,
	       const char *path, struct mds_attr *removed);

/* Remove an empty directory (-ENOTEMPTY otherwise, -ENOTDIR for a file,
 * -EBUSY for "/"). */
int mds_rmdir(struct mds_store *st, const struct mds_cred *cred,
	      const char *path);

/* Rename `from` to `to`, across directories, atomically replacing an
 * existing `to` as rename(2) does (file over file; dir over empty dir;
 * -EISDIR / -ENOTDIR / -ENOTEMPTY otherwise; -EINVAL when `to` is inside
 * `from`; nothing when both are names of one file). Links in the last
 * components are not followed (the names themselves move). If the last
 * name of a regular file was replaced, *replaced_file = 1 and *replaced
 * holds its attributes; a purge intent for its objects is written in the
 * rename's batch, as for mds_unlink. A replaced file that has other names
 * only loses one (nlink - 1). */
int mds_rename(struct mds_store *st, const struct mds_cred *cred,
	       const char *from, const char *to, struct mds_attr *replaced,
	       int *replaced_file);
/* What a rename does to an existing `to`: replace it (mds_rename), fail
 * with -EEXIST, or swap the two names (`to` must exist: -ENOENT; neither
 * may be inside the other: -EINVAL). Each checked and written in one
 * batch, so no other request sees a step between. */
enum mds_rename_mode { MDS_RENAME_REPLACE, MDS_RENAME_NOREPLACE, MDS_RENAME_EXCHANGE };
int mds_rename_how(struct mds_store *st, const struct mds_cred *cred, const char *from,
		   const char *to, enum mds_rename_mode how, struct mds_attr *replaced,
		   int *replaced_file);

/*
 * Purge intents (mds_intent.c). Removing a file's name records, in the
 * same synchronous batch, which storage objects it had; the intent stays
 * until every storage daemon holding some of them has acknowledged their
 * removal (mds_intent_done), so a client or daemon that dies in between
 * leaves no orphan for ever: the metadata daemon's purger replays them.
 */
struct mds_intent {
	uint64_t file;                      /* handle of the removed file */
	uint32_t count;                     /* objects still to remove */
	uint32_t servers[TP_MAX_STRIPE];
	uint64_t handles[TP_MAX_STRIPE];
};

/* Up to `max` intents of files whose handle is above *after (all when
 * after is NULL: the first page), in handle order; *eof when no more
 * follow. */
int mds_intent_list(struct mds_store *st, const uint64_t *after,
		    uint32_t max, struct mds_intent *out, uint32_t *n, int *eof);

/* Storage daemon `server` removed its objects of intent `file`: forget
 * them, and the intent itself once none remain (unsynced, whatever the
 * mode: an intent a crash brings back is only replayed). An intent
 * already gone is not an error. */
int mds_intent_done(struct mds_store *st, uint64_t file, uint32_t server);

/* Up to `max` regular files (attributes with layouts) whose handle is
 * above *after (all when after is NULL), in handle order, for fsck. */
int mds_file_list(struct mds_store *st, const uint64_t *after,
		  uint32_t max, struct mds_attr *out, uint32_t *n, int *eof);

/* Before granting a capability (mds_grant.c): 0 when `cred` may open the
 * regular file `a` for reading and/or writing by its mode bits, else
 * -EACCES (-EISDIR for a directory) with `what` ("open /a") in the
 * message. */
int mds_may_open(struct mds_store *st, const struct mds_cred *cred, const char *what,
		 const struct mds_attr *a, int read, int write);
/* Before renewing by handle (mds_grant.c): 0 when `proof` is a capability
 * the daemons signed under `key` for file `handle`, issued to cred's uid
 * (of any age: it proves a path walk once reached the file, which a
 * handle alone does not); else -EACCES with `what` in the message. */
struct cap_key;
int mds_may_renew(struct mds_store *st, const struct cap_key *key, const struct mds_cred *cred,
		  const char *what, uint64_t handle, const Tessera__Capability *proof);
/* The regular file with this handle, or -ENOENT. */
int mds_file_by_handle(struct mds_store *st, uint64_t handle, struct mds_attr *out);

/* Number of names in the namespace (root included; a file with several
 * hard links counts once per name). */
int mds_statfs(struct mds_store *st, uint64_t *files);

#endif /* TESSERA_MDS_STORE_H */
