/*
 * fuse_int.h - what the parts of tessera-fuse share: the mount's state
 * (struct tfuse, reached through fuse_get_context), an open file, the
 * writeback bookkeeping (fuse_wback.c) and the operations table
 * (tessera_fuse.c) that the start-up code (fuse_mount.c) mounts.
 */
#ifndef TESSERA_FUSE_INT_H
#define TESSERA_FUSE_INT_H

#include <fuse.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fuse_locks.h"
#include "tessera.h"

#define IO_SIZE (1u << 20)   /* max_read, max_write */
/* The mount's readahead, set through sysfs after mounting: the kernel
 * keeps a FUSE mount's at its default (128 KiB) whatever max_readahead
 * says, so a sequential reader had one 128 KiB request in flight, split
 * over two storage daemons: 190 MB/s where the library reads at 740.
 * 4 MiB keeps four 1 MiB reads in flight, one per storage daemon of the
 * default layout, on the multithreaded loop's threads. */
#define READAHEAD_KB 4096
/* The writeback timer: while a file is open for writing through the
 * mount, its dirty pages go to the storage daemons at least this often
 * (the kernel's own timer is dirty_expire_centisecs, 30 s by default). */
#define FLUSH_TICK_MS 1000
/* Request threads at most, unless -o max_threads says otherwise
 * (libfuse's default is 10; they start as needed). An open that sets the
 * kernel's attributes (tf_sync_kernel_attrs) waits for requests it causes,
 * which other threads serve: at most half the threads do that at once
 * (tfuse.max_fixers); an open beyond waits for one of them, at most
 * FIX_WAIT_MS. */
#define LOOP_THREADS 256
#define FIX_WAIT_MS 5000

/* A file (by Tessera handle) open for writing through the mount, or
 * whose kernel attributes are being set right (tf_sync_kernel_attrs). While
 * one is open for writing, the kernel may hold dirty pages of it, and a
 * size and mtime newer than the storage daemons'. */
struct tinode {
	uint64_t handle;
	unsigned writers;     /* struct tfile's open for writing */
	int fixing;           /* a fix-up job of tf_sync_kernel_attrs runs on it */
	struct tinode *next;
};

/* A thread that is setting the kernel's attributes of a file through the
 * mount (tf_sync_kernel_attrs, fuse_links.c): the truncate and utimens
 * requests it causes are answered without asking the servers
 * (tf_is_fixup). TF_FIX_UNLESS_CHANGED: refused (-EAGAIN) once this mount
 * changed the kernel's size or mtime of `handle` (or of a file it could
 * not name) after tfuse.attr_epoch was `seen`, for what it sets may then
 * be older than what the kernel holds. */
enum tf_fix_mode { TF_FIX_ALWAYS, TF_FIX_UNLESS_CHANGED };
struct tfixer {
	pid_t tid;
	enum tf_fix_mode mode;
	uint64_t seen, handle;
	struct tfixer *next;
};

/* The changes of the kernel's size or mtime remembered (tfuse.attr_changed) */
#define ATTR_CHANGES 256

/* Files recently found without security.capability (see nocap_known). */
#define NOCAP_SLOTS 256
#define NOCAP_TTL_NS 1000000000LL   /* as long as attr_timeout's default */
struct nocap_cache {
	pthread_mutex_t lock;
	struct {
		char *path;          /* NULL: empty slot; owned */
		int64_t until_ns;    /* CLOCK_MONOTONIC; stale after */
	} slot[NOCAP_SLOTS];
};

/* Names of hard-linked regular files that the kernel looked up through
 * this mount (fuse_links.c): path -> Tessera handle, direct-mapped by the
 * path's hash (a collision forgets the older name). */
#define LINK_SLOTS 512
struct link_names {
	pthread_mutex_t lock;
	struct {
		char *path;          /* NULL: empty slot; owned */
		uint64_t handle;
	} slot[LINK_SLOTS];
};

/* The attributes a setattr left, per request thread, for libfuse's
 * getattr right after it (fuse_answer.c). */
#define ANSWER_SLOTS 64
#define ANSWER_TTL_NS 100000000LL   /* 0.1 s: that getattr follows at once */
struct tf_answer {
	pid_t tid;               /* the request thread's; 0: empty */
	char *path;              /* owned; NULL: empty */
	struct tessera_stat st;
	int sized;               /* st holds the size (tessera_setattr_stat) */
	int blocked;             /* a truncate: no answer until the getattr */
	int64_t at_ns;           /* CLOCK_MONOTONIC when kept */
};
struct tf_answers {
	pthread_mutex_t lock;
	struct tf_answer slot[ANSWER_SLOTS];
};

/* Directories this mount just changed, with their attributes after the
 * change (tessera_dir_watch), by path hash, for the kernel's getattr of
 * the directory that follows (it drops its attributes of a directory
 * whose entries changed). */
#define DIR_SLOTS 64
struct tf_dirs {
	pthread_mutex_t lock;
	struct {
		char *path;          /* owned; NULL: empty */
		struct tessera_stat st;
		int64_t at_ns;       /* CLOCK_MONOTONIC when kept */
	} slot[DIR_SLOTS];
};

/* What the kernel was last told of a file's attributes (fuse_kattr.c),
 * direct-mapped by handle. */
#define KATTR_SLOTS 65536
struct tf_kattr {
	uint64_t handle;         /* 0: empty */
	uint64_t sum;            /* digest of the attributes */
};
struct tf_kattrs {
	pthread_mutex_t lock;
	struct tf_kattr *slot;   /* KATTR_SLOTS; NULL: none known */
};

/* Removals answered before they were sent (fuse_remove.c). */
#define REMOVE_QUEUE 256
#define REMOVE_SENDERS 8
enum tf_removal_state { TF_REMOVAL_FREE, TF_REMOVAL_QUEUED, TF_REMOVAL_SENDING };
struct tf_removal {
	enum tf_removal_state state;
	char *path;              /* owned; NULL when FREE */
	struct tessera_cred cred; /* who asked */
};
struct tf_removes {
	pthread_mutex_t lock;
	pthread_cond_t work;     /* a removal queued, or stop */
	pthread_cond_t done;     /* a removal answered, or stop */
	struct tf_removal slot[REMOVE_QUEUE];
	unsigned queued;         /* slots QUEUED */
	atomic_uint busy;        /* slots not FREE: read without the lock */
	int error;               /* a sent removal's failure, -errno; 0: none */
	int on, stop;            /* unlinks may be queued; the senders stop */
	pthread_t thread[REMOVE_SENDERS];
	unsigned nthreads;
};

/* The mount's state: lives in main, reached through fuse_get_context(). */
struct tfuse {
	tessera_fs *fs;
	const char *config;
	unsigned max_read;    /* the max_read mount option in force */
	const char *mount_dir; /* the mount point's real path; NULL: unknown */
	int singlethread;     /* -s: a request must never wait for another */
	int writeback;        /* the kernel's writeback cache is on */
	/* No name leases (tessera_name_cache): -o name_cache=0, or a kernel
	 * cache timeout of 0 (the user wants every stat asked). */
	int no_name_cache;
	pthread_mutex_t lock; /* guards inodes, nwriters, fixers, jobs, attr_epoch, stop, open */
	pthread_cond_t wake;  /* the flusher's timer, and its stop */
	pthread_cond_t fixed; /* a tf_sync_kernel_attrs or a job ended */
	struct tinode *inodes;
	struct tfile *open;   /* every open file, for the unmount */
	unsigned nwriters;    /* sum of inodes' writers */
	struct tfixer *fixers;
	unsigned nfixers, max_fixers; /* threads in tf_sync_kernel_attrs; limit */
	unsigned jobs;        /* fuse_job.c's threads still at work */
	/* Moves at every truncate or utimens served, and every writer's open
	 * and release: a change of the kernel's size or mtime (tf_attrs_set);
	 * attr_changed[e % ATTR_CHANGES] is change e's file (0: not known) */
	uint64_t attr_epoch;
	uint64_t attr_changed[ATTR_CHANGES];
	unsigned threads;     /* request threads at most (LOOP_THREADS) */
	int flusher_on, stop;
	pthread_t flusher;
	struct nocap_cache nocap;
	struct link_names links; /* fuse_links.c */
	struct tf_locks *locks; /* fcntl and flock locks (fuse_locks.c) */
	struct tf_answers answers; /* fuse_answer.c */
	struct tf_dirs dirs;       /* fuse_answer.c */
	struct tf_removes removes; /* fuse_remove.c */
	struct tf_kattrs kattrs;   /* fuse_kattr.c */
	int no_remove_behind;      /* -o remove_behind=0 */
};

/* An open file (fi->fh): the library's handle and its Tessera handle,
 * by which the writeback bookkeeping (struct tinode) finds it. */
struct tfile {
	tessera_file *f;
	uint64_t handle;
	int writer;           /* counted in its tinode's writers */
	int appended;         /* an O_APPEND write went through it */
	/* its reads fill the kernel's page cache under the writeback cache
	 * (not direct_io), so the kernel clips them at its size */
	int page_cache;
	/* made by op_create, whose reply libfuse completes with a getattr
	 * (with this handle) that the open's attributes answer */
	int fresh;
	struct tfile *prev, *next;   /* tfuse.open (under tfuse.lock) */
};

/* ------------------------------------------------ writeback (fuse_wback.c) */

/* Count tf as a writer of its file (if it is one), or stop counting it;
 * either way it is one of the mount's open files (tfuse.open).
 * tf_writer_add: 0 or -ENOMEM. */
int tf_writer_add(struct tfuse *t, struct tfile *tf);
void tf_writer_remove(struct tfuse *t, struct tfile *tf);
/* At unmount: the open files the kernel did not release (a mount stopped
 * with files open, or before their RELEASE came), taken off the list one
 * at a time (NULL: none left). */
struct tfile *tf_open_take(struct tfuse *t);
/* Whether a handle of this mount has the file open for writing: the
 * kernel then holds its size and mtime (writeback). */
int tf_writing(struct tfuse *t, uint64_t handle);
/* Whether the current truncate or utimens request is one of this mount's
 * own attribute fix-ups, answered without asking the servers: then
 * *answer is its answer (0, or -EAGAIN for one gone stale). */
int tf_is_fixup(int *answer);
/* rc, after a truncate or utimens of path (through fi, if not NULL) was
 * served: a change of its size or mtime, remembered unless rc < 0. */
int tf_attrs_set(int rc, const char *path, const struct fuse_file_info *fi);
/* tfuse.attr_epoch now: read before asking the servers for what
 * tf_sync_kernel_attrs is given. */
uint64_t tf_attr_epoch(struct tfuse *t);
/* At open: make the kernel's size and mtime of path the servers' (ts, of
 * f, asked after attr_epoch was `seen`). */
void tf_sync_kernel_attrs(struct tfuse *t, const char *path, tessera_file *f, uint64_t seen,
			  const struct tessera_stat *ts);
/* The writeback timer's thread (FLUSH_TICK_MS), started once the kernel
 * grants the writeback cache, and stopped at unmount. */
void tf_flusher_start(struct tfuse *t);
void tf_flusher_stop(struct tfuse *t);

/* Count the calling thread's requests as fix-ups (tf_is_fixup) between
 * these two; me->tid is the caller's. */
void tf_fixer_enter(struct tfuse *t, struct tfixer *me);
void tf_fixer_leave(struct tfuse *t, struct tfixer *me);

/* ------------------------------------ jobs on the mount (fuse_job.c) */

/* A job's work, on its own thread (arg: the job's copy); its result is
 * tf_job_wait's. */
typedef int tf_job_fn(struct tfuse *t, void *arg);
/* Start fn on a copy of arg (size bytes) on a thread that counts as a
 * fixer `as` (its mode and seen; NULL: TF_FIX_ALWAYS). NULL when it could
 * not be started. */
struct tf_job *tf_job_start(struct tfuse *t, tf_job_fn *fn, const void *arg, size_t size,
			    const struct tfixer *as);
/* Wait for j until `until` (CLOCK_REALTIME): its result, or -ETIMEDOUT
 * when it had not ended (it goes on, and frees itself). j is gone after. */
int tf_job_wait(struct tf_job *j, const struct timespec *until);
/* At unmount: wait at most ms for jobs still at work (their calls on the
 * mount fail once it is gone); how many are left. */
unsigned tf_jobs_drain(struct tfuse *t, unsigned ms);
/* until: ms from now, on CLOCK_REALTIME. */
void tf_deadline(struct timespec *until, unsigned ms);

/* ------------------------------------------ hard links (fuse_links.c) */

/* A regular file's attributes as getattr answers them for path: names
 * with more than one link are remembered, others forgotten. */
void tf_links_seen(struct tfuse *t, const char *path, const struct tessera_stat *ts);
/* After link(from, to) succeeded, as the caller (ts: the file's stat). */
void tf_links_linked(struct tfuse *t, const char *from, const char *to,
		     const struct tessera_stat *ts);
/* After unlink(path) succeeded. */
void tf_links_unlinked(struct tfuse *t, const char *path);
/* After rename(from, to) succeeded: from moved over to, or (SWAP,
 * RENAME_EXCHANGE) the two names swapped their files. */
enum tf_rename_kind { TF_RENAME_MOVE, TF_RENAME_SWAP };
void tf_links_renamed(struct tfuse *t, const char *from, const char *to,
		      enum tf_rename_kind kind);
void tf_links_clear(struct tfuse *t);

/* ------------------------------ a setattr's attributes (fuse_answer.c) */

/* Before a change (chmod, chown, truncate, utimens): forget what the
 * calling thread kept. After one succeeded: keep its attributes (sized:
 * they hold the size). getattr: take them if the calling thread kept them
 * for path just now (1), else 0 (and a block ends). Clear: at unmount. */
void tf_answer_clear(struct tfuse *t);
/* A truncate: the getattr that follows asks the servers, whatever the
 * changes after it in its chain keep. */
void tf_answer_block(struct tfuse *t);
void tf_answer_keep(struct tfuse *t, const char *path, const struct tessera_stat *st,
		    int sized);
int tf_answer_take(struct tfuse *t, const char *path, struct tessera_stat *st, int *sized);
void tf_answers_clear(struct tfuse *t);
/* The library's directory watcher (arg: the mount): dir's attributes
 * after this mount changed its entries. getattr: take them (1) if kept
 * for path less than ANSWER_TTL_NS ago, once, else 0. */
void tf_dir_changed(const char *dir, const struct tessera_stat *st, void *arg);
int tf_dir_take(struct tfuse *t, const char *path, struct tessera_stat *st);
/* path was removed or renamed by this mount: what was kept for it, and
 * for anything under it, goes. */
void tf_dir_forget(struct tfuse *t, const char *path);

/* ---------------------- what the kernel was told (fuse_kattr.c) */

/* The table, at mount (0, or -ENOMEM: every open drops the kernel's
 * attributes), and at unmount. */
int tf_kattrs_init(struct tf_kattrs *k);
void tf_kattrs_free(struct tf_kattrs *k);
/* ts was given to the kernel (a getattr's answer). */
void tf_kattr_told(struct tfuse *t, const struct tessera_stat *ts);
/* The kernel may hold other attributes of the file than were recorded
 * (readdirplus gave them). */
void tf_kattr_forget(struct tfuse *t, uint64_t handle);
/* 1 when the last attributes the kernel was given of ts's file are ts
 * (under the writeback cache only), else 0. */
int tf_kattr_current(struct tfuse *t, const struct tessera_stat *ts);

/* -------------------------------------------- the INIT (fuse_init.c) */

/* Once mounted, before the loop: have the mount's FUSE_INIT answer ask
 * for FUSE_HANDLE_KILLPRIV_V2. 0 or -errno. */
int tf_ask_killpriv_v2(struct fuse *fuse);
/* Make the kernel drop its cached attributes (not its pages) of the
 * inode the calling thread's request is about. 0 or -errno. */
int tf_drop_request_attrs(struct fuse *fuse);

/* ------------------------------------------ listings (fuse_dir.c) */

/* An open directory (fi->fh): its listing's page of names last read. */
struct tdir;
struct tdir *tf_dir_new(void);   /* NULL: no memory */
void tf_dir_free(struct tdir *d);
/* readdir: the entries of path from offset `off` on into buf (fill),
 * as many as the kernel takes; 0 or a negative errno (tessera_errmsg
 * says why). TF_DIR_HELD_ATTRS (the kernel's readdirplus): each entry
 * whose attributes the name cache holds (tessera_stat_held) goes with
 * them, so the kernel need not look it up; the others, and every entry
 * with TF_DIR_NAMES, go with their type only. */
enum tf_dir_attrs { TF_DIR_NAMES, TF_DIR_HELD_ATTRS };
int tf_dir_fill(tessera_fs *fs, const char *path, struct tdir *d, off_t off, void *buf,
		fuse_fill_dir_t fill, enum tf_dir_attrs attrs);

/* A getattr's answer from the library's attributes. */
void tf_stat_of(const struct tessera_stat *ts, struct stat *st);

/* ------------------------------------------- operations (tessera_fuse.c) */

extern const struct fuse_operations tf_ops;

/* ------------------------------- removes sent behind (fuse_remove.c) */

/* The senders' threads, started after the connection and stopped (what
 * is queued sent first) after the unmount. tf_removes_start: 0, or
 * -EAGAIN when no thread started (unlinks are then sent by their caller). */
int tf_removes_start(struct tfuse *t);
void tf_removes_stop(struct tfuse *t);
/* Whether the unlink of path by cred may be answered before it is sent:
 * what this mount holds says it will succeed. */
int tf_removable(struct tfuse *t, const char *path, const struct tessera_cred *cred);
/* Queue the removal of path, to be sent as cred: 0, or -ENOMEM, or
 * -ESHUTDOWN once the senders stopped (either way: send it yourself). */
int tf_removes_defer(struct tfuse *t, const char *path, const struct tessera_cred *cred);
/* Wait until no removal is queued or on its way (all of them), or until
 * path's is answered. */
void tf_removes_settle(struct tfuse *t);
void tf_removes_settle_name(struct tfuse *t, const char *path);
/* After settling: the first failure of a removal sent since the last
 * call (-errno, as the program gets it), or 0. */
int tf_removes_error(struct tfuse *t);

/* The errno a program gets for a library failure rc: transport failures
 * are EIO. */
int tf_errno(int rc);

#endif
