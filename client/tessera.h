/*
 * tessera.h - libtessera, the Tessera client library.
 *
 * Connect to a file system described by a config file, then use POSIX-like
 * calls on Tessera paths ("/a/b"; a path under the config's mount_point,
 * "/mnt/tessera/a/b", means the same file). Every call returns 0 (or a byte
 * count) on success and a negative errno on failure; tessera_errmsg() then
 * says, for the calling thread, what failed and where ("write /a/b: storage
 * daemon 2 (127.0.0.1:7002): timed out after 30000 ms").
 *
 * The library is safe to use from several threads at once. Each thread may
 * act for a different user (tessera_set_thread_cred), which is how a FUSE
 * mount shared by several users keeps them apart.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "tessera_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's release. These lines are the one definition of Tessera's
 * version: the build reads them (client/client.mk: the shared library's
 * file name and soname, tessera.pc), and tests/integ/test_install.sh checks
 * that the daemons' TP_VERSION_STRING agrees. TESSERA_VERSION is what the
 * program was compiled against; tessera_version() is the library it runs
 * with (they differ after the shared library is upgraded). */
#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 4
#define TESSERA_VERSION_PATCH 0
#define TESSERA_VERSION "0.4.0"
/* A number to compare: TESSERA_VERSION_NUMBER >= TESSERA_MAKE_VERSION(0, 3, 0). */
#define TESSERA_MAKE_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define TESSERA_VERSION_NUMBER \
	TESSERA_MAKE_VERSION(TESSERA_VERSION_MAJOR, TESSERA_VERSION_MINOR, TESSERA_VERSION_PATCH)

#define TESSERA_MAX_STRIPE 256 /* objects of one file, at most (the daemons' too) */
#define TESSERA_SHARE_CAP_MAX 3072 /* bytes of a capability in a file share */
#define TESSERA_MAX_GROUPS 64

typedef struct tessera_fs tessera_fs;
typedef struct tessera_file tessera_file;

/* What a file is, fixed when it is created (docs/user-guide.md,
 * "Versioned files"): PLAIN, or VERSIONED, whose every write, list and
 * datatype write and truncate is a version, atomic without locks; reads
 * see whole versions only, and snapshots name versions. The value of
 * VERSIONED is a 32-bit pattern, not 1, because the field fills what was
 * padding in struct tessera_layout until 0.4 (its size and offsets are
 * unchanged): a program built before may leave garbage there, and any
 * value but VERSIONED means PLAIN. */
enum tessera_layout_kind {
	TESSERA_LAYOUT_PLAIN = 0,
	TESSERA_LAYOUT_VERSIONED = 0x56455231,   /* "VER1" */
};

struct tessera_layout {
	uint64_t strip_size;                   /* bytes per strip */
	uint32_t count;                        /* stripe count (objects) */
	uint32_t servers[TESSERA_MAX_STRIPE];  /* storage daemon of slot i */
	/* tessera_open with O_CREAT: what to create (a zeroed layout:
	 * PLAIN, or the directory's default). Filled by tessera_get_layout
	 * and tessera_file_layout; a directory's: its new files' kind. */
	enum tessera_layout_kind kind;
	uint64_t handles[TESSERA_MAX_STRIPE];  /* object handle of slot i */
};

struct tessera_stat {
	uint64_t handle;
	uint32_t mode;            /* the type (S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO,
				   * S_IFSOCK, S_IFCHR, S_IFBLK) | permission bits */
	uint32_t uid, gid;
	uint32_t nlink;           /* files: names (hard links) */
	uint64_t size;            /* files: derived from the storage objects;
				   * symbolic links: the target's length */
	struct timespec atime, mtime, ctime;
	uint64_t rdev;            /* device nodes: the device (makedev) */
	uint64_t blocks;          /* files: 512-byte blocks the storage objects
				   * have allocated (a sparse file's holes cost
				   * none); 0 for directories */
};
/* Whether a call on a path follows a symbolic link in its last component. */
enum tessera_follow { TESSERA_FOLLOW, TESSERA_NOFOLLOW };

struct tessera_dirent {
	char name[256];
	uint64_t handle;
	uint32_t mode;            /* the type only (S_IFREG, S_IFDIR, S_IFLNK...) */
};

struct tessera_statfs {
	uint64_t files;           /* names in the namespace */
	uint64_t bytes_total;     /* sum over the storage daemons' file systems,
				   * each counted once (daemons sharing one
				   * file system report the same f_fsid) */
	uint64_t bytes_free;
	uint32_t n_ios;
	uint64_t files_free;      /* names the metadata daemon has room for */
};

struct tessera_cred {
	uint32_t uid;
	uint32_t ngids;                       /* gids[0] is the primary group */
	uint32_t gids[TESSERA_MAX_GROUPS];
};

/* Fields for tessera_setattr; `valid` says which apply. */
#define TESSERA_SET_MODE      0x01
#define TESSERA_SET_UID       0x02
#define TESSERA_SET_GID       0x04
#define TESSERA_SET_ATIME     0x08
#define TESSERA_SET_MTIME     0x10
#define TESSERA_SET_ATIME_NOW 0x40
#define TESSERA_SET_MTIME_NOW 0x80
struct tessera_setattr {
	uint32_t valid;
	uint32_t mode, uid, gid;
	struct timespec atime, mtime;
};

/* A server's answer to tessera_ping. */
struct tessera_ping {
	char role[8];             /* "mds" or "ios" */
	uint32_t index;
	char address[160];        /* host:port */
	char version[32];
	double rtt_us;            /* round-trip time */
	int status;               /* 0, or why it did not answer */
	/* The daemon core's debts (docs/design.md, "Daemon memory"). */
	uint64_t owed_bytes;      /* replies queued or in flight */
	uint32_t owed_replies;
	uint32_t parked;          /* requests parked, to be answered later */
	uint64_t peers_closed;    /* clients cut off for not reading replies */
	/* Bytes of queued requests' data (a storage daemon's disk workers)
	 * kept where they arrived, and copied (small writes). */
	uint64_t parked_data_kept, parked_data_copied;
};

/* The config file a client uses: `config` if not NULL (a -c FILE), else
 * $TESSERA_CONFIG if set and not empty, else ./var/tessera.conf if it
 * exists, else /etc/tessera/tessera.conf if it exists. *out is then
 * `config`, the environment's value or a constant (valid while they are).
 * 0, or -ENOENT with the places searched in err (errlen bytes, may be
 * NULL). */
int tessera_config_find(const char *config, const char **out, char *err, size_t errlen);

/* Connect using config file `config` (NULL: the one tessera_config_find
 * finds). On failure `err` (errlen bytes, may be NULL) says why.
 * tessera_disconnect first waits for the closes still in flight (see
 * tessera_close), each up to the request timeout. */
int tessera_connect(const char *config, tessera_fs **out, char *err, size_t errlen);
void tessera_disconnect(tessera_fs *fs);

/* The running library's version, "MAJOR.MINOR.PATCH" (a static string). */
const char *tessera_version(void);

/* What the calling thread's last failed call failed at. */
const char *tessera_errmsg(tessera_fs *fs);

/* Act as `cred` on this thread from now on (NULL: the process's own
 * uid and groups, the default). */
int tessera_set_thread_cred(tessera_fs *fs, const struct tessera_cred *cred);

/* The Tessera path a user path names: strips the mount point. */
int tessera_map_path(tessera_fs *fs, const char *path, char *out, size_t len);

/* The mount point config file `config` (NULL: tessera_config_find's) names, ""
 * if none, read without connecting (the MPI-IO driver asks it to know
 * which file names are on the mount). 0, or a negative errno with the
 * reason in err. */
int tessera_config_mount_point(const char *config, char *out, size_t len, char *err,
			       size_t errlen);

/* Servers: number of storage daemons; ping every server (n_out >=
 * 1 + tessera_ios_count), all at once (a server that does not answer
 * costs one wait, not one per server), then each that answered alone for
 * its round-trip time. Returns the number of entries filled. */
uint32_t tessera_ios_count(tessera_fs *fs);
int tessera_ping(tessera_fs *fs, struct tessera_ping *out, size_t n_out);

/* ------------------------------------------------------- server states
 *
 * What this process knows of each server, shared by every call of one
 * tessera_fs (library, CLI, mount, MPI driver): up; suspect (a request has
 * heard nothing from it for a while); down (it refused the connection, or
 * did not answer within a timeout). Calls to a down server fail at once,
 * with -ECONNREFUSED when it refused the connection, else -EHOSTDOWN, and
 * tessera_errmsg says "storage daemon 1 (10.0.0.2:7402): not reachable
 * since 12:03:04 (connection refused)". A down server is probed in the
 * background and used again as soon as it answers. */
enum tessera_server_state { TESSERA_SERVER_UP, TESSERA_SERVER_SUSPECT, TESSERA_SERVER_DOWN };
struct tessera_server_status {
	int index;                      /* -1: the metadata daemon */
	enum tessera_server_state state;
	int64_t since_s;                /* wall-clock time of the last change */
	char name[200];                 /* "storage daemon 1 (10.0.0.2:7402)" */
	char why[128];                  /* "connection refused", "" when up */
};
/* The state of server `index` (-1: metadata daemon) as this process knows
 * it (a server not asked anything yet is up). 0, or -EINVAL for an index
 * out of range. */
int tessera_server_status(tessera_fs *fs, int index, struct tessera_server_status *out);
/* Called on every state change (the mount logs it once per change), from
 * the thread that saw it (a call's, or the library's prober thread, which
 * runs while a server is down), outside the library's locks: it may call
 * tessera_server_status, and should return quickly. One watcher per
 * tessera_fs; NULL stops watching. */
typedef void (*tessera_server_watch_fn)(const struct tessera_server_status *st, void *arg);
void tessera_server_watch(tessera_fs *fs, tessera_server_watch_fn fn, void *arg);

/* Directories whose entries a call of this connection changed (create,
 * mkdir, mknod, symlink, link, unlink, rmdir), with their attributes as
 * the change left them, from the metadata daemon's reply (an older
 * daemon's carries none: no call then): fn(dir, st, arg), where dir is
 * the directory of the path the caller gave, from the calling thread
 * before the call returns, outside the library's locks. The mount
 * answers the kernel's next question about that directory with it. One
 * watcher per tessera_fs, set before calls start; NULL stops watching. */
typedef void (*tessera_dir_watch_fn)(const char *dir, const struct tessera_stat *st, void *arg);
void tessera_dir_watch(tessera_fs *fs, tessera_dir_watch_fn fn, void *arg);

/* Name leases (docs/design.md, "Name leases"). With LEASED, the
 * connection keeps what the metadata daemon tells its stats (names, and
 * attributes: a regular file's only while no one writes it) and answers
 * later stats of those paths from memory, while a thread of its own
 * keeps a WATCH at the daemon that names whatever anyone else changes
 * (forgotten at once) and renews the lease (name_lease_ms). A client cut
 * off from the daemon stops answering from memory when its lease lapses,
 * so a stat is never staler than name_lease_ms; its own changes it sees
 * at once. For a process that serves many users (the mount): the
 * daemon checks search permission once per name learnt, and a later stat
 * by another user is answered without (the mount's kernel checks it,
 * default_permissions). An open that neither creates, truncates nor
 * opens for writing only is answered from memory too when the file, its
 * path's directories and an earlier open's capability for the caller's
 * uid are held: the mode of each is checked here as the daemon checks it
 * (docs/design.md, "Opens from memory"; such opens count as hits). 0, or
 * -EOPNOTSUPP when the daemon grants none (name_lease_ms 0), or another
 * negative errno; OFF stops it. Set before calls start (or after they
 * end), like tessera_dir_watch. */
enum tessera_name_cache { TESSERA_NAME_CACHE_OFF, TESSERA_NAME_CACHE_LEASED };
int tessera_name_cache(tessera_fs *fs, enum tessera_name_cache mode);
struct tessera_name_cache_stats {
	uint64_t hits;    /* stats and opens answered from memory */
	uint64_t learnt;  /* attributes learnt from replies */
	uint64_t breaks;  /* leases others' changes broke */
	uint64_t names;   /* names held now */
	int leased;       /* the lease runs now */
};
void tessera_name_cache_stats(tessera_fs *fs, struct tessera_name_cache_stats *out);

/* Files. flags: O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC,
 * O_NOFOLLOW (a symbolic link as the last component: -ELOOP). `layout`
 * (may be NULL) applies at create: strip_size and count, 0 for the
 * defaults (the directory's, else strip_size from the config and all
 * storage daemons). Only regular files open: a FIFO, socket or device
 * node is -ENXIO (their data is the kernel's, on the mount). An O_RDWR
 * open of an existing file (no O_CREAT, no O_TRUNC) is counted as a
 * writer only at its first write, which then waits for one request to
 * the metadata daemon first (docs/design.md, "Sizes kept by the metadata
 * daemon"). The close of a file its open made and nothing wrote does
 * not wait for the metadata daemon's answer (the same section). */
int tessera_open(tessera_fs *fs, const char *path, int flags, mode_t mode,
		 const struct tessera_layout *layout, tessera_file **out);
int tessera_close(tessera_file *file);
ssize_t tessera_pread(tessera_file *file, void *buf, size_t len, uint64_t offset);
/* tessera_pread for a caller that holds the file's size itself and clips
 * at it (the FUSE mount's page-cache reads: the kernel keeps the size):
 * what lies past the objects' ends reads as zeros, as a hole does, and no
 * storage daemon is asked the size, which tessera_pread asks of every one
 * holding an object of the file when a read meets an object's end (a
 * small file read to its end). Returns len or an error. A versioned
 * file's read is clipped, as by tessera_pread. */
ssize_t tessera_pread_unclipped(tessera_file *file, void *buf, size_t len, uint64_t offset);
ssize_t tessera_pwrite(tessera_file *file, const void *buf, size_t len, uint64_t offset);
/* Data durable on the storage daemons; and the attribute changes (chmod,
 * chown, utimes) this connection made, which the metadata daemon answers
 * before it syncs them (within 50 ms), durable too. */
int tessera_fsync(tessera_file *file);
int tessera_fstat(tessera_file *file, struct tessera_stat *st);
/* The file's attributes as its open found them, for a caller that needs
 * them right after tessera_open: the metadata daemon's reply to the open,
 * with the size it knew then (a closed file's), so no server is asked.
 * Otherwise (the file was open for writing elsewhere, truncated by this
 * open, versioned) as tessera_fstat, which asks. */
int tessera_open_attrs(tessera_file *file, struct tessera_stat *st);
int tessera_ftruncate(tessera_file *file, uint64_t size);
/* fallocate(2) for a file open for writing (-EBADF otherwise): allocate
 * bytes [offset, offset + length) on the storage daemons' disks, so
 * writes there cannot fail for space; EXTEND (mode 0) then grows a
 * shorter file to offset + length, KEEP_SIZE (FALLOC_FL_KEEP_SIZE) leaves
 * its size. length 0 or above INT64_MAX: -EINVAL; an end past INT64_MAX:
 * -EFBIG; a storage daemon's file system without fallocate: -EOPNOTSUPP;
 * another mode: -EOPNOTSUPP. */
enum tessera_falloc_mode { TESSERA_FALLOC_EXTEND, TESSERA_FALLOC_KEEP_SIZE };
int tessera_fallocate(tessera_file *file, enum tessera_falloc_mode mode, uint64_t offset,
		      uint64_t length);
int tessera_file_layout(tessera_file *file, struct tessera_layout *layout);
/* The file's handle (its st_ino), known since the open: no request. */
uint64_t tessera_file_handle(const tessera_file *file);

/* What the last contiguous write on `file` that failed (tessera_pwrite
 * returned a negative errno) left in the file: the message says the same
 * in words. The bytes in place are every byte from the offset up to the
 * first chunk that failed; a size is -1 when it could not be got (a
 * storage daemon holding one of the file's objects did not answer).
 * 0, or -ENOENT when no write on `file` has failed. */
struct tessera_write_outcome {
	uint64_t offset, length;   /* the failed call's */
	uint64_t in_place;         /* bytes from offset known written */
	int64_t size_before;       /* the file's size before the call, or -1 */
	int64_t size_now;          /* after the failed call cleaned up, or -1 */
};
int tessera_write_outcome(tessera_file *file, struct tessera_write_outcome *out);
/* The file system a file belongs to (for tessera_errmsg). */
tessera_fs *tessera_file_fs(tessera_file *file);

/* Sharing an open file with the other processes of a parallel job: one
 * process opens (or creates) it and passes the share, plain data that may
 * be broadcast as bytes, to the others, which open it from the share
 * without asking the metadata daemon. Permission was the sharer's to
 * check (the share carries its capability); O_CREAT, O_EXCL and O_TRUNC
 * in `flags` are ignored. */
struct tessera_file_share {
	uint64_t handle;
	struct tessera_layout layout;
	/* The opener's capability (opaque bytes): what the storage daemons
	 * want to see. Without one, or one short of the rights `flags` need,
	 * tessera_open_shared asks the metadata daemon, which checks the
	 * caller's permission (EACCES). */
	uint32_t cap_len;
	uint8_t cap[TESSERA_SHARE_CAP_MAX];
};
int tessera_file_share(tessera_file *file, struct tessera_file_share *out);
int tessera_open_shared(tessera_fs *fs, const char *path, const struct tessera_file_share *share,
			int flags, tessera_file **out);

/* ----------------------------------------------------- noncontiguous I/O
 *
 * An access made of many pieces travels as few requests as possible: the
 * pieces of one call are grouped per storage object, each server gets one
 * message per round (at most max_io bytes of its data), and the server
 * applies all its pieces itself.
 *
 * Both sides of an access describe the same byte stream, in order. The
 * number of bytes moved is the stream length; reads fill bytes past the
 * end of file with zeros and count them. Writes whose file regions overlap
 * each other are refused with -EINVAL (MPI's rule for file views);
 * overlapping reads are allowed.
 *
 * List I/O: memory is `mem_count` iovecs, the file is `file_count`
 * regions (file_offsets[i], file_lengths[i]); the two totals must match.
 * Each round carries at most the file's list batch (file regions per
 * request; the config's list_io_max_regions unless set per file).
 */
ssize_t tessera_write_list(tessera_file *file, const struct iovec *mem, size_t mem_count,
			   const uint64_t *file_offsets, const uint64_t *file_lengths,
			   size_t file_count);
ssize_t tessera_read_list(tessera_file *file, const struct iovec *mem, size_t mem_count,
			  const uint64_t *file_offsets, const uint64_t *file_lengths,
			  size_t file_count);
/* Regions per request for this file's list I/O (0: the config's). */
int tessera_file_set_list_batch(tessera_file *file, uint32_t max_regions);

/* Datatype I/O (see dataloops/tdl.h). Memory is `mem_count` instances of
 * `mem_type` at `buf` (mem_type NULL: mem_count contiguous bytes). The
 * file is the view of `file_type` tiled from byte `disp`; the access is
 * its data-stream bytes [first, first + memory size). Each involved
 * server receives the file type once per call and computes its own
 * pieces. */
struct tdl_dataloop;
ssize_t tessera_write_dtype(tessera_file *file, const void *buf, uint64_t mem_count,
			    const struct tdl_dataloop *mem_type,
			    const struct tdl_dataloop *file_type, int64_t disp, uint64_t first);
ssize_t tessera_read_dtype(tessera_file *file, void *buf, uint64_t mem_count,
			   const struct tdl_dataloop *mem_type,
			   const struct tdl_dataloop *file_type, int64_t disp, uint64_t first);

/* ------------------------------------------------------------ locks
 *
 * Byte-range locks on a file: shared (read) or exclusive (write), exact
 * bytes, held until tessera_unlock. Each storage daemon locks the bytes of
 * its own strips; a lock takes all of them in one global order, so locks
 * taken this way never deadlock. Protocols (seed 001, §7.3):
 *   TWO_PHASE  ordered blocking rounds only;
 *   ONE_TRY    one optimistic round (every server at once), then ordered;
 *   ALT_TRY    optimistic and ordered rounds alternately (the default of
 *              the MPI-IO driver: cheap without contention, never stuck
 *              with it).
 * Methods: a range (one region), a list of regions (any order; they are
 * sorted and merged), or a datatype (a file view and a window of its data
 * stream, sent to every server, which finds its own bytes).
 *
 * Locks belong to the connection: a thread renews them while held, and a
 * process that dies loses them after the daemons' lease (lock_lease_ms).
 * A storage daemon that restarts loses its locks; calls on them then fail
 * with -ESTALE naming the daemon. A blocking wait longer than the request
 * timeout is fine: the daemon answers "still waiting" and the library asks
 * again.
 */
enum { TESSERA_LOCK_READ = 1, TESSERA_LOCK_WRITE = 2 };
enum { TESSERA_LOCK_TWO_PHASE, TESSERA_LOCK_ONE_TRY, TESSERA_LOCK_ALT_TRY };
typedef struct tessera_lock tessera_lock;

int tessera_lock_range(tessera_file *file, int mode, uint64_t offset, uint64_t length,
		       int protocol, tessera_lock **out);
int tessera_lock_list(tessera_file *file, int mode, const uint64_t *offsets,
		      const uint64_t *lengths, size_t count, int protocol, tessera_lock **out);
/* The view of `file_type` tiled from byte `disp`, stream bytes
 * [first, first + length). */
int tessera_lock_dtype(tessera_file *file, int mode, const struct tdl_dataloop *file_type,
		       int64_t disp, uint64_t first, uint64_t length, int protocol,
		       tessera_lock **out);
/* Release everything the lock holds and free it (also after an error). */
int tessera_unlock(tessera_lock *lock);

/* The dissertation's lock methods as it defines them (seed 001, §7.2),
 * for studying them; tessera_lock_list is the OBJECT form. How a list
 * lock's regions become lock requests on the storage daemons (a request
 * is what one release message frees; every protocol takes all of them,
 * in its rounds, before returning):
 *   OBJECT   one request per storage object, its regions sent in as many
 *            messages as lock_list_batch needs;
 *   MESSAGE  one request per message of lock_list_batch regions: §7.2.2's
 *            list locks (lock_list_batch = 64), released by one message
 *            per 64-region request;
 *   REGION   one request per region, and one more per strip boundary a
 *            region crosses: §7.2.1's POSIX locks (one-try sends them all
 *            in one round, two-phase one ordered round each). */
enum tessera_lock_split {
	TESSERA_LOCK_SPLIT_OBJECT,
	TESSERA_LOCK_SPLIT_MESSAGE,
	TESSERA_LOCK_SPLIT_REGION,
};
int tessera_lock_list_split(tessera_file *file, int mode, const uint64_t *offsets,
			    const uint64_t *lengths, size_t count, enum tessera_lock_split split,
			    int protocol, tessera_lock **out);
/* Block-granular locks, the false-sharing baseline of §7.1 (Lustre's and
 * GPFS's locks cover whole blocks): each region rounded out to multiples
 * of block_size bytes, then locked as tessera_lock_list does; two
 * disjoint regions in one block conflict. */
int tessera_lock_blocks(tessera_file *file, int mode, const uint64_t *offsets,
			const uint64_t *lengths, size_t count, uint64_t block_size, int protocol,
			tessera_lock **out);
/* The lock requests the storage daemons hold for the lock: the messages
 * tessera_unlock sends. */
size_t tessera_lock_requests(const tessera_lock *lock);

/* ------------------------------------------------------------ record locks
 *
 * Locks with POSIX owners, what fcntl, OFD and flock locks on the mount
 * are made of: file offsets [start, end) (end TESSERA_RECORD_END: to the
 * end of any file) held whole or not at all by `owner`, a nonzero number
 * the caller chooses. Locks of one connection and one owner never
 * conflict with each other, so an owner changes what it holds (upgrade,
 * downgrade, split) by taking the new locks first and releasing the old
 * ones after (tessera_unlock), and nobody sees the bytes free between.
 * They conflict byte for byte with every other owner's and connection's
 * locks and with tessera_lock_* locks. Taken without waiting: -EAGAIN,
 * holding nothing, when any byte is held in a conflicting mode (a caller
 * that waits asks again). They go with tessera_unlock, or with the
 * connection's lease when the process dies.
 *
 * Past every file offset (2^63 - 1 is the largest) lie two reserved
 * bytes: the mount keeps flock(2) locks on TESSERA_RECORD_FLOCK, so they
 * never conflict with fcntl locks (as on Linux), and tessera_append
 * serializes appenders on TESSERA_RECORD_APPEND.
 */
#define TESSERA_RECORD_END    (UINT64_C(1) << 63)
#define TESSERA_RECORD_FLOCK  (UINT64_C(1) << 63)
#define TESSERA_RECORD_APPEND ((UINT64_C(1) << 63) + 1)
int tessera_lock_record(tessera_file *file, int mode, uint64_t owner, uint64_t start,
			uint64_t end, tessera_lock **out);

/* fcntl's F_GETLK for record locks: the lowest lock that
 * tessera_lock_record(file, mode, owner, start, end) would meet now (the
 * owner's own locks do not count), in *out: its mode (0: none) and the
 * file range its piece on that object spans (end TESSERA_RECORD_END: to
 * the end of the file). Changes nothing. */
struct tessera_lock_conflict {
	int mode;                  /* 0, TESSERA_LOCK_READ or TESSERA_LOCK_WRITE */
	uint64_t start, end;
};
int tessera_lock_record_test(tessera_file *file, int mode, uint64_t owner, uint64_t start,
			     uint64_t end, struct tessera_lock_conflict *out);

/* Atomic append: writes buf whole at the end of the file as it is when
 * the write is applied, under an exclusive record lock on
 * TESSERA_RECORD_APPEND that every appender takes (waiting for it), so
 * appends from any number of clients never interleave nor overwrite each
 * other. *offset (may be NULL) gets where the bytes went. Writes that do
 * not append (tessera_pwrite) do not take the lock and may land anywhere. */
int tessera_append(tessera_file *file, const void *buf, size_t len, uint64_t *offset);

/* What taking a lock cost. */
struct tessera_lock_info {
	uint64_t messages;          /* lock messages sent */
	uint64_t optimistic_rounds;
	uint64_t blocking_rounds;
	uint64_t partial_releases;  /* out-of-order bytes given back */
	uint32_t objects;           /* storage objects holding part of it */
};
int tessera_lock_info(const tessera_lock *lock, struct tessera_lock_info *info);

/* ------------------------------------------------------------ counters
 *
 * Counters kept with a file, for a shared file pointer (the MPI-IO driver
 * keeps MPI's there): a fetch-and-add that any number of processes may
 * call at once, each getting the value before its own addition (the
 * storage daemon holding the file's first object serves one request at a
 * time). A file holds up to 64 counters, named by 64-bit keys; a key not
 * used yet reads as 0, and a new key beyond 64 drops the one used longest
 * ago. Counters go when the file is removed; a restart of the daemon keeps
 * them, and so does a crash of its machine once the file was synced
 * (tessera_fsync). Files open read-only may use them.
 *
 * fetch_add adds `add` (-EOVERFLOW if the sum would overflow); fetch_set
 * stores `value`. Both return the value before in *old. Both need the
 * file open for writing (-EACCES otherwise: they change state). */
int tessera_fetch_add(tessera_file *file, uint64_t key, int64_t add, int64_t *old);
int tessera_fetch_set(tessera_file *file, uint64_t key, int64_t value, int64_t *old);

/* A storage daemon's counters since it started, by access method
 * (struct tessera_ios_stats, enum tessera_method and the X-macros that
 * list them are in tessera_stats.h). */
int tessera_ios_stats(tessera_fs *fs, uint32_t ios, struct tessera_ios_stats *out);

/* How this connection's contiguous reads and writes moved their payload
 * since it was made (docs/design.md, "Bulk data path"): straight from or into the
 * caller's buffer, or through a copy (gathered into a request frame,
 * scattered from a receive buffer). Bytes a read found past an object's
 * end count as neither. */
struct tessera_copy_stats {
	uint64_t write_direct, write_gathered;
	uint64_t read_direct, read_staged;
	uint64_t read_local;  /* read from a local object's file (local reads) */
};
void tessera_copy_stats(tessera_fs *fs, struct tessera_copy_stats *out);

/* Names. */
int tessera_stat(tessera_fs *fs, const char *path, struct tessera_stat *st);
/* tessera_stat, but a regular file whose size cannot be got (a storage
 * daemon holding one of its objects does not answer) still gets the rest
 * of its attributes: *size_status is then that failure (the thread's
 * message says which daemon and why) and st->size is 0 (not a size);
 * otherwise 0. Returns the metadata daemon's failure only (what ls -l
 * needs to list every name with '?' for the sizes it cannot get). */
int tessera_stat_partial(tessera_fs *fs, const char *path, struct tessera_stat *st,
			 int *size_status);
/* tessera_stat answered from the name cache alone (tessera_name_cache):
 * 0 when it holds path's attributes, with its size, under a lease that
 * runs; -ENODATA when it does not, and nothing is asked (a listing that
 * adds what is at hand: the mount's readdirplus). */
int tessera_stat_held(tessera_fs *fs, const char *path, struct tessera_stat *st);
/* An unlink of path answered before it is sent (the mount's removes
 * behind): the name cache drops the name now and holds its directory as
 * the removal will leave it (modified and changed now, one entry fewer),
 * until the removal's own reply says what the metadata daemon made of it
 * (its times win when later; a failure drops what is held). Nothing is
 * asked; a no-op without the name cache. */
void tessera_unlink_pending(tessera_fs *fs, const char *path);
int tessera_truncate(tessera_fs *fs, const char *path, uint64_t size);
int tessera_unlink(tessera_fs *fs, const char *path);
int tessera_mkdir(tessera_fs *fs, const char *path, mode_t mode);
int tessera_rmdir(tessera_fs *fs, const char *path);
int tessera_rename(tessera_fs *fs, const char *from, const char *to);
/* What a rename does to an existing `to`: replace it (tessera_rename, as
 * rename(2)); fail with -EEXIST (RENAME_NOREPLACE); or swap the two names
 * (RENAME_EXCHANGE: `to` must exist, -ENOENT otherwise; any two types; a
 * directory with something inside it: -EINVAL). The metadata daemon checks
 * and writes each in one batch: atomic against every other client. A
 * value not listed: -EINVAL. */
enum tessera_rename_mode { TESSERA_RENAME_REPLACE, TESSERA_RENAME_NOREPLACE,
			   TESSERA_RENAME_EXCHANGE };
int tessera_rename_with(tessera_fs *fs, const char *from, const char *to,
			enum tessera_rename_mode mode);
int tessera_setattr(tessera_fs *fs, const char *path, const struct tessera_setattr *sa);
/* tessera_setattr that also gives the attributes the change left, from
 * the metadata daemon's reply (no further request): with a regular
 * file's size and blocks where the daemon knows them (no one has it open
 * for writing), *sized 1; else *sized 0, and size and blocks are 0
 * (tessera_stat asks the storage daemons). */
int tessera_setattr_stat(tessera_fs *fs, const char *path, const struct tessera_setattr *sa,
			 struct tessera_stat *st, int *sized);
int tessera_statfs(tessera_fs *fs, struct tessera_statfs *sf);

/* Symbolic links, hard links and special files. The metadata daemon
 * resolves paths: links in every component but the last are followed,
 * relative targets from the link's directory, absolute ones as Tessera
 * paths (a target "/a" names Tessera's "/a", not the mount's); more than
 * 40 links in one walk is -ELOOP. The last component's link is followed
 * by tessera_stat, _open, _setattr, _truncate, _get_layout and
 * tessera_readdir, unless tessera_follow_links(fs, TESSERA_NOFOLLOW) (the
 * mount, whose kernel resolves links itself) says otherwise; never by
 * tessera_lstat, _lsetattr, _readlink, _unlink, _rename or _link.
 * tessera_symlink: a link `path` to `target` (1..4095 bytes, -ENAMETOOLONG
 * beyond; not checked, may dangle). tessera_readlink: the target's length,
 * its first min(length, len) bytes in buf (NUL-terminated when it fits),
 * -EINVAL when `path` is not a link. tessera_link: a new name `to` for the
 * file `from` names (-EPERM for a directory, -EMLINK past 65000 names;
 * another user's file only if the caller may read and write it).
 * tessera_mknod: `mode` is S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK (devices:
 * root only, `rdev` kept) | permissions, metadata only; S_IFREG makes an
 * empty regular file as open(O_CREAT|O_EXCL) would; S_IFDIR -EPERM;
 * anything else -EINVAL. */
int tessera_symlink(tessera_fs *fs, const char *target, const char *path);
ssize_t tessera_readlink(tessera_fs *fs, const char *path, char *buf, size_t len);
int tessera_link(tessera_fs *fs, const char *from, const char *to);
int tessera_mknod(tessera_fs *fs, const char *path, mode_t mode, uint64_t rdev);
int tessera_lstat(tessera_fs *fs, const char *path, struct tessera_stat *st);
int tessera_lsetattr(tessera_fs *fs, const char *path, const struct tessera_setattr *sa);
void tessera_follow_links(tessera_fs *fs, enum tessera_follow last);
/* Extended attributes, as getxattr(2), setxattr(2), listxattr(2) and
 * removexattr(2) (TESSERA_NOFOLLOW: the l- variants). Namespaces user.
 * (files and directories: read and write permission as for the data),
 * trusted. (root only; hidden from others' lists) and security. (read by
 * all, set by root); any other name, POSIX ACLs included, is -EOPNOTSUPP.
 * A name has 1 to TESSERA_XATTR_NAME_MAX bytes (else -ERANGE), a value at
 * most TESSERA_XATTR_SIZE_MAX (else -E2BIG); one file holds at most
 * TESSERA_XATTR_LIST_MAX bytes of names (each with its NUL) and
 * TESSERA_XATTR_TOTAL_MAX bytes of names and values (else -ENOSPC).
 * getxattr and listxattr return the length of the value or the list (the
 * names, each followed by a NUL); size 0 asks it without the data, and a
 * buffer too small for it is -ERANGE. A missing attribute is -ENODATA. */
#define TESSERA_XATTR_NAME_MAX 255
#define TESSERA_XATTR_SIZE_MAX 65536
#define TESSERA_XATTR_LIST_MAX 65536
#define TESSERA_XATTR_TOTAL_MAX 262144
/* What tessera_setxattr does about an attribute that exists or not. */
enum tessera_xattr_set {
	TESSERA_XATTR_SET_ANY,      /* create or replace */
	TESSERA_XATTR_SET_CREATE,   /* -EEXIST when it exists (XATTR_CREATE) */
	TESSERA_XATTR_SET_REPLACE,  /* -ENODATA when it does not (XATTR_REPLACE) */
};
ssize_t tessera_getxattr(tessera_fs *fs, const char *path, const char *name, void *value,
			 size_t size, enum tessera_follow follow);
int tessera_setxattr(tessera_fs *fs, const char *path, const char *name, const void *value,
		     size_t size, enum tessera_xattr_set how, enum tessera_follow follow);
ssize_t tessera_listxattr(tessera_fs *fs, const char *path, char *list, size_t size,
			  enum tessera_follow follow);
int tessera_removexattr(tessera_fs *fs, const char *path, const char *name,
			enum tessera_follow follow);

/* One server's part of tessera_statfs_servers. */
struct tessera_server_space {
	int index;                /* -1: the metadata daemon */
	char name[200];           /* "storage daemon 1 (10.0.0.2:7402)" */
	int status;               /* 0, or why it did not answer (in `why`) */
	char why[256];            /* "timed out after 5000 ms", "" when it answered */
	uint64_t files;           /* the metadata daemon's: names */
	uint64_t bytes_total;     /* a storage daemon's */
	uint64_t bytes_free;
	uint64_t fsid;            /* a storage daemon's file system (f_fsid) */
	uint64_t files_free;      /* the metadata daemon's room for names */
};
/* statfs server by server, every request at once: out[0] is the metadata
 * daemon, out[1 + i] storage daemon i (n_out >= 1 + tessera_ios_count).
 * A server that does not answer has its status set and the others still
 * count: *sf sums those that answered. Returns the number of entries
 * filled (the thread's message names the first that failed, if any), or
 * a negative errno when nothing could be asked. */
int tessera_statfs_servers(tessera_fs *fs, struct tessera_statfs *sf,
			   struct tessera_server_space *out, size_t n_out);

/* One page of a directory: up to `max` entries whose names sort after
 * `cursor` ("" first). *eof is set when no entries follow. A listing in
 * pages sees every name that exists throughout, whatever changes meanwhile. */
int tessera_readdir(tessera_fs *fs, const char *path, const char *cursor,
		    struct tessera_dirent *ents, uint32_t max, uint32_t *n, int *eof);

/* Layouts: a file's; a directory's default for new files (strip_size or
 * count 0: inherit). */
int tessera_get_layout(tessera_fs *fs, const char *path, struct tessera_layout *layout);
int tessera_set_dir_layout(tessera_fs *fs, const char *path, uint64_t strip_size,
			   uint32_t count);
/* Clear a directory's default layout: files created in it take the file
 * system's default again (`tessera setstripe -d`). */
int tessera_clear_dir_layout(tessera_fs *fs, const char *path);
/* tessera_set_dir_layout that also sets the kind of the files created in
 * the directory from now on (`tessera setstripe --versioned DIR`);
 * tessera_clear_dir_layout makes them plain again. */
int tessera_set_dir_layout_kind(tessera_fs *fs, const char *path, uint64_t strip_size,
				uint32_t count, enum tessera_layout_kind kind);

/* ------------------------------------------------------ versioned files
 *
 * A file created with kind TESSERA_LAYOUT_VERSIONED (docs/user-guide.md,
 * "Versioned files"; docs/design.md, "Versioning (chapter 8)"). Its
 * writes (pwrite, list, datatype) and truncates are versions: each
 * storage daemon appends the call's bytes to the object's log, then the
 * metadata daemon (the version server) orders the call by completion. A
 * read sees, per byte, the newest version committed before it began:
 * never part of a call, whatever other writers do at the same time, and
 * without locks. Calls as for any file; what differs:
 *  - A call is one version whatever its size: its requests (max_io
 *    bytes, one round of regions per object each) are parts of one
 *    temporary version, committed once after the last. What bounds it is
 *    an object's log: a call whose share of one object exceeds 256 MiB,
 *    4096 requests or 256 Ki regions can never be one version there and
 *    fails with -ENOSPC (nothing of it visible).
 *  - tessera_fsync and tessera_close merge the logs into the objects;
 *    a full log (-EBUSY from a daemon) is merged and the call retried once.
 *  - tessera_append: -EOPNOTSUPP (use pwrite at offsets of your own);
 *    tessera_fallocate: -EOPNOTSUPP. Local reads are off.
 *  - stat sizes are as of the newest committed version.
 * On a plain file the calls below fail with -EINVAL ("not versioned").
 */

/* Snapshots: a name for the newest committed version, kept (and the log
 * with it: merges stop below the oldest snapshot) until dropped. Names
 * are 1 to TESSERA_SNAPSHOT_NAME_MAX bytes. create and drop need the file
 * open for writing (-EBADF otherwise); create of a name in use: -EEXIST;
 * drop or open of an unknown one: -ENOENT. */
#define TESSERA_SNAPSHOT_NAME_MAX 255
struct tessera_snapshot {
	char name[TESSERA_SNAPSHOT_NAME_MAX + 1];
	uint64_t version;
	struct timespec ctime;    /* when it was taken */
};
int tessera_snapshot_create(tessera_file *file, const char *name, uint64_t *version);
int tessera_snapshot_drop(tessera_file *file, const char *name);
/* Up to `max` snapshots into out (oldest first), *n how many there are
 * (may exceed max: call again with more room). */
int tessera_snapshot_list(tessera_file *file, struct tessera_snapshot *out, size_t max,
			  size_t *n);
/* Open `path` read-only as of snapshot `name`: reads and stat sizes of
 * the handle see the file as it was then. */
int tessera_open_snapshot(tessera_fs *fs, const char *path, const char *name, tessera_file **out);

/* The version server's state of a file (`tessera vstat`). */
struct tessera_version_state {
	uint64_t newest;          /* the newest committed version */
	uint64_t merged;          /* every version up to this is merged everywhere */
	uint32_t unmerged;        /* commits not merged everywhere yet */
	uint32_t reads;           /* reads in progress */
	uint32_t ids;             /* live writer IDs */
	uint32_t snapshots;
};
int tessera_version_state(tessera_file *file, struct tessera_version_state *out);
/* Each object's version log as its storage daemon reports it (`tessera
 * vstat -l`): out[i] for slot i, i < min(n_out, the layout's count). */
struct tessera_vlog_state {
	uint32_t slot, server;
	uint64_t handle;
	uint64_t merged;          /* the object holds every version up to this */
	uint32_t uncommitted;     /* records not committed (yet, or ever) */
	uint32_t committed;       /* records committed, not merged */
	uint64_t log_bytes;       /* the log file's size */
	uint64_t index_pieces;    /* entries of its offset-length index */
};
int tessera_version_logs(tessera_file *file, struct tessera_vlog_state *out, size_t n_out);
/* Merge the logs now (what fsync and close do); needs write access. */
int tessera_version_merge(tessera_file *file);

/* Writer IDs for a job (docs/mpi-io.md, "Versioned files"). Each write
 * of a versioned file carries a writer ID from the version server; a
 * handle takes its own at its first write (one request). For a job of
 * many processes, one handle takes `count` (1..TESSERA_VERSION_IDS_MAX)
 * at once: tessera_version_ids fills a block signed by the version
 * server, plain data that may be sent to the other processes as bytes
 * (MPI_Bcast); tessera_version_use_id makes a handle of the same file in
 * any process write under the block's ID `index` (its IO#s its own). Give
 * each index to one handle at a time. The IDs live until their taker
 * ends them (tessera_version_ids_end, or the close of the handle that
 * took them) or its connection ends; a handle whose ID is no longer live
 * (or the version server restarted), or has used up its 2^32 - 1 writes,
 * takes an ID of its own and writes the call again, as a handle without
 * a block does. Taking and using need write access (-EBADF); a block of
 * another file, or an index past its count: -EINVAL; a handle holds one
 * block it took at a time (-EBUSY: end the first). */
#define TESSERA_VERSION_IDS_MAX 1024
#define TESSERA_VERSION_IDS_MAC 32
struct tessera_version_ids {
	uint64_t file;            /* the file (its handle at the metadata daemon) */
	uint32_t first;           /* IDs first .. first + count - 1 */
	uint32_t count;
	uint8_t mac[TESSERA_VERSION_IDS_MAC]; /* the version server's signature */
	uint8_t reserved[32];     /* zero: room for later fields */
};
int tessera_version_ids(tessera_file *file, uint32_t count, struct tessera_version_ids *out);
int tessera_version_use_id(tessera_file *file, const struct tessera_version_ids *ids,
			   uint32_t index);
/* End a block this handle's connection took: every handle writing under
 * it takes an ID of its own at its next write. */
int tessera_version_ids_end(tessera_file *file, const struct tessera_version_ids *ids);
/* How many IDs this handle took for itself (one request each: its first
 * write, IO#s used up, an ID lost); a handle writing under a live block
 * takes none. Not those of tessera_version_ids. */
uint64_t tessera_version_own_ids(tessera_file *file);

/*
 * fsck: reconcile the storage daemons' objects with the metadata daemon's
 * layouts and purge intents, while the file system is in use. Only root
 * (uid 0) may run it. An object no file or purge intent names when the
 * objects were listed is judged after the files and intents are listed
 * again: one a file created since names is young, not judged; one still
 * unnamed and still held is an orphan. Each finding is handed to `report` (may be NULL) as one line
 * of text; with `repair`, orphans are removed.
 */
struct tessera_fsck {
	uint64_t files;            /* regular files scanned */
	uint64_t objects;          /* objects listed on the storage daemons */
	uint64_t pending;          /* objects a purge intent still covers */
	uint64_t young;            /* objects of files created during the scan */
	uint64_t orphans;          /* objects nothing names */
	uint64_t removed;          /* of those, removed (repair) */
	uint64_t misplaced;        /* named by a layout, found on another daemon */
	uint64_t size_mismatch;    /* files whose objects give a size below the
				    * one the metadata daemon recorded */
	uint64_t lost;             /* objects of files that a storage daemon
				    * held but lost (its file is gone) */
};
int tessera_fsck(tessera_fs *fs, int repair, void (*report)(void *arg, const char *line),
		 void *arg, struct tessera_fsck *out);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_H */
