/*
 * tessera-fuse - mount a Tessera file system through FUSE.
 *
 *   tessera-fuse [-c CONFIG] MOUNTPOINT [fuse options]
 *
 * Built on libfuse3's high-level (path based) API, which matches Tessera's
 * path-based metadata calls, and on nothing of Tessera but the public
 * client library (tessera.h). Requests are served by several threads at
 * once (libfuse's multithreaded loop; -s for one thread); each request
 * first tells the library who asked (uid, gid and supplementary groups
 * from the FUSE context), so the metadata daemon checks permissions as
 * that user. The mount also uses `default_permissions`, so the kernel
 * checks modes before a request is even sent.
 *
 * Defaults added before the user's own options (which override them):
 *   -o default_permissions,fsname=tessera,subtype=tessera
 *   -o max_read=1048576           reads of up to 1 MiB per request
 *   -o entry_timeout=1            seconds the kernel caches a name lookup
 *   -o attr_timeout=1             seconds the kernel caches attributes
 *   -o negative_timeout=0         a missing name is never cached, so a
 *                                 file made by another mount shows at once
 * and, in init, max_write = 1 MiB and max_readahead = 4 MiB, which
 * set_readahead makes the mount's readahead (see READAHEAD_KB).
 *
 * Close-to-open consistency, as NFS gives: once a writer (another mount,
 * the library, the MPI-IO driver, the CLI) has closed or synced a file, an
 * open that starts afterwards sees its new size and data. Writes through
 * the mount go to the kernel's writeback cache (fuse_wback.c)
 * and reach the storage daemons at close, fsync, the kernel's dirty limit
 * or the flusher's 1 s timer, whichever comes first; a write that failed
 * there fails the fsync or close. Each open drops what the kernel holds
 * of the file: its pages (no keep_cache) and its attributes
 * (fuse_invalidate_path before the open is answered, unless they are the
 * ones the open found, fuse_kattr.c); as the kernel keeps
 * its own size and mtime of a file under the writeback cache, the open
 * first sets them to the servers' (tf_sync_kernel_attrs). Between opens, the
 * kernel's caches hold for attr_timeout/entry_timeout (use 0 for none);
 * behind them, the library answers stats from what the metadata daemon
 * leased it (tessera_name_cache; -o name_cache=0, or a timeout of 0,
 * turns that off), which others' changes break a moment later (an
 * open's own reply replaces what it held of the file: close-to-open holds
 * while a break is on its way), and the size and mtime of a file the
 * kernel still caches until the file's next open on this mount: a stat, or a read of a file kept open,
 * may see older attributes that long. With -s (one thread) the mount has
 * no writeback cache and every write(2) waits for the storage daemons.
 *
 * Questions answered from a reply already had (fuse_answer.c): libfuse's
 * getattr after a create (the create's reply) and after a chmod, chown or
 * utimens (the change's reply), and the kernel's getattr of a directory
 * this mount just changed the entries of (the change's reply; within
 * 0.1 s). An open's size comes with its reply too (tessera_open_attrs).
 * A listing the kernel asks with attributes (readdirplus) carries those
 * the name cache holds (fuse_dir.c), so ls -l looks up no held name.
 *
 * Every file type: symbolic links (kept by the metadata daemon; the
 * kernel resolves them, so the mount asks the library never to follow a
 * link in a path's last component: tessera_follow_links NOFOLLOW), hard
 * links (st_nlink counts names; inode numbers are handles, so every name
 * of a file shows one inode), FIFOs, sockets and device nodes (metadata
 * only, st_rdev kept: their data is the opening node's kernel's, never
 * the storage daemons'; device nodes open only on a mount with `dev`).
 *
 * What Tessera does not have answers with an error, never a silent
 * success: POSIX ACLs
 * (system.posix_acl_access, _default) give EOPNOTSUPP, never stored and
 * ignored (extended attributes of the user., trusted. and security.
 * namespaces are kept by the metadata daemon); rename with
 * RENAME_WHITEOUT gives EINVAL, as rename(2) documents for unsupported
 * flags. RENAME_NOREPLACE and RENAME_EXCHANGE are atomic: the metadata
 * daemon checks and writes each in one batch.
 * Shared writable mmap goes through the kernel page cache as on any FUSE
 * file system (the high-level API cannot see mmap calls): it is coherent
 * within one mount only.
 *
 * Locks (fuse_locks.c): fcntl (POSIX and OFD) and flock(2) locks are record
 * locks in the storage daemons' lock tables (tessera_lock_record), so they
 * hold across mounts and against the library's locks; F_SETLKW that waits
 * TESSERA_FUSE_DEADLOCK_MS (environment; 5 min by default) answers EDEADLK.
 * O_APPEND files are opened direct_io and each write is a tessera_append:
 * whole at the end of the file, up to max_write (1 MiB), across clients.
 *
 * An open file that is unlinked is renamed to .fuse_hiddenNNN until it is
 * closed (libfuse's default; -o hard_remove unlinks at once instead).
 * An unlink that the leased attributes say will succeed is answered
 * first and sent at once behind (fuse_remove.c; -o remove_behind=0 for
 * none): requests after it wait for it (as_caller), but for those it
 * cannot change (as_caller_queued); a failure shows at the next fsync
 * of a directory.
 *
 * Errors: the library's message (tessera_errmsg) goes to stderr and the
 * kernel gets the errno; transport failures (timeouts, refused or lost
 * connections) become EIO, so a dead storage daemon gives the program an
 * I/O error rather than a hang: at once once the library knows the daemon
 * is down, else after the step's timeout. Those are not logged per
 * request: the library's state watcher logs one line per change of a
 * daemon's state (down, up again), naming it. statfs (df) counts the
 * storage daemons that answer, each file system under them once (by its
 * f_fsid); df -i shows the names held and the metadata daemon's room for
 * more. st_blocks is what the storage objects have allocated.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "fuse_int.h"
#include "tessera.h"

/* ------------------------------------------------------------- helpers */

/* Act as the caller of the current request: uid, gid and supplementary
 * groups, which also go into cred. Returns the file system. */
static tessera_fs *caller_cred(struct tessera_cred *cred)
{
	struct fuse_context *c = fuse_get_context();
	struct tfuse *t = c->private_data;
	gid_t groups[TESSERA_MAX_GROUPS];
	int n = 0;

	memset(cred, 0, sizeof(*cred));
	cred->uid = (uint32_t)c->uid;
	cred->gids[0] = (uint32_t)c->gid;
	cred->ngids = 1;
	/* Root may do anything; its groups do not matter. pid 0 is a request
	 * of the kernel's own (no process to ask). */
	if (c->uid != 0 && c->pid > 0)
		n = fuse_getgroups(TESSERA_MAX_GROUPS - 1, groups);
	for (int i = 0; i < n && i < TESSERA_MAX_GROUPS - 1; i++)
		if ((uint32_t)groups[i] != cred->gids[0])
			cred->gids[cred->ngids++] = (uint32_t)groups[i];
	tessera_set_thread_cred(t->fs, cred);
	return t->fs;
}

/* For a request that removes queued behind (fuse_remove.c) do not
 * change: the reads, writes, syncs and locks of open files, another
 * unlink, a getattr (which waits for its own name only). */
static tessera_fs *as_caller_queued(void)
{
	struct tessera_cred cred;

	return caller_cred(&cred);
}

/* For every other request: once the removes queued behind are answered,
 * so that it sees them. */
static tessera_fs *as_caller(void)
{
	tf_removes_settle(fuse_get_context()->private_data);
	return as_caller_queued();
}

/* A transport failure is an I/O error to the program. */
int tf_errno(int rc)
{
	switch (-rc) {
	case ETIMEDOUT: case ECONNREFUSED: case ECONNRESET: case ECONNABORTED:
	case EHOSTUNREACH: case ENETUNREACH: case ENETDOWN: case EHOSTDOWN:
	case ENOTCONN: case EPIPE: case ESHUTDOWN: case EPROTO: case EBADMSG:
		return -EIO;
	default:
		return rc < 0 ? rc : -EIO;
	}
}

/* A failure that says a server is not reachable: the state watcher
 * (log_state) has logged it once, naming the daemon, when the state
 * changed; logging it again per request would bury the log (ls -l of a
 * large directory is one failure per file). */
static int server_unreachable(int rc)
{
	switch (-rc) {
	case ETIMEDOUT: case ECONNREFUSED: case ECONNRESET: case ECONNABORTED:
	case EHOSTUNREACH: case ENETUNREACH: case ENETDOWN: case EHOSTDOWN:
	case ENOTCONN: case EPIPE: case ESHUTDOWN:
		return 1;
	default:
		return 0;
	}
}

/* Log the library's message for a failed call and return -errno. Names
 * that do not exist are part of normal lookups and not logged, nor are
 * the failures of a server that is not reachable (server_unreachable). */
static int fail(tessera_fs *fs, int rc)
{
	int e = tf_errno(rc);

	if (rc != -ENOENT && !server_unreachable(rc))
		fprintf(stderr, "tessera-fuse: %s (%s)\n", tessera_errmsg(fs), strerror(-e));
	return e;
}

/* fail() for the xattr calls: a missing attribute, one that exists (a
 * create), a buffer too small (size probes) and an unsupported namespace
 * are answers programs expect (getfattr, cp -a, ls), not failures worth a
 * log line. */
static int xattr_fail(tessera_fs *fs, int rc)
{
	if (rc == -ENODATA || rc == -EEXIST || rc == -ERANGE || rc == -EOPNOTSUPP)
		return rc;
	return fail(fs, rc);
}

void tf_stat_of(const struct tessera_stat *ts, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)ts->handle;
	st->st_mode = (mode_t)ts->mode;
	st->st_nlink = ts->nlink ? ts->nlink : 1;
	st->st_uid = (uid_t)ts->uid;
	st->st_gid = (gid_t)ts->gid;
	st->st_size = (off_t)ts->size;
	st->st_blksize = IO_SIZE;
	/* what the storage objects have allocated: du of a sparse file
	 * counts only the bytes written */
	st->st_blocks = (blkcnt_t)ts->blocks;
	st->st_atim = ts->atime;
	st->st_mtim = ts->mtime;
	st->st_ctim = ts->ctime;
	st->st_rdev = (dev_t)ts->rdev;
}

static struct tfile *tfile_of(const struct fuse_file_info *fi)
{
	return (struct tfile *)(uintptr_t)fi->fh;
}

static tessera_file *fh_of(const struct fuse_file_info *fi)
{
	return tfile_of(fi)->f;
}

static struct tfuse *mount_of(void)
{
	return fuse_get_context()->private_data;
}

static void writer_drop_privs(const char *path, tessera_file *f);
static int kills_privs(void);

/* ---------------------------------------------------------- operations */

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct tfuse *t = fuse_get_context()->private_data;

	conn->max_write = IO_SIZE;
	/* the kernel keeps the smaller of this and the mount's readahead */
	conn->max_readahead = READAHEAD_KB * 1024;
	/* libfuse insists that this equals the max_read mount option. */
	conn->max_read = t->max_read;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* The writeback cache (see "writeback" above). Not with -s: keeping
	 * close-to-open then needs requests served while an open waits, and
	 * not where the mount point is unknown, for the same reason. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if ((conn->capable & FUSE_CAP_WRITEBACK_CACHE) && !t->singlethread && t->mount_dir) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		t->writeback = 1;
		tf_flusher_start(t);
	}
	cfg->use_ino = 1;        /* inode numbers are Tessera handles */
	cfg->nullpath_ok = 0;
	return t;
}

static void nocap_clear(struct nocap_cache *c);
static void nocap_remember(const char *path);

/* Unmount: files the kernel never released (the mount stopped with them
 * open, or before their RELEASE came) are closed, so the metadata daemon
 * hears of their writers' close; then the caches go. */
static void op_destroy(void *private_data)
{
	struct tfuse *t = private_data;
	struct tfile *tf;

	tf_flusher_stop(t);
	tf_removes_stop(t);   /* sends what is queued; before the caches go */
	while ((tf = tf_open_take(t))) {
		tf_locks_forget(t->locks, tf->f);
		(void)tessera_close(tf->f);
		free(tf);
	}
	tf_links_clear(t);
	tf_answers_clear(t);
	nocap_clear(&t->nocap);
}

/* libfuse's getattr right after a setattr of path: answered by what the
 * change's reply said (fuse_answer.c) if that held the size, or if the
 * kernel keeps its own: a regular file this mount has open for writing,
 * under the writeback cache (the kernel ignores the size and times in a
 * setattr's answer then; its st_blocks shows 0 until its attributes
 * expire, attr_timeout). */
static int answered(const char *path, struct tessera_stat *ts)
{
	struct tfuse *t = mount_of();
	int sized;

	if (!tf_answer_take(t, path, ts, &sized))
		return 0;
	return sized || (t->writeback && S_ISREG(ts->mode) && tf_writing(t, ts->handle));
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller_queued();
	struct tessera_stat ts;
	int rc;

	if (path)
		tf_removes_settle_name(mount_of(), path);
	if (fi && tfile_of(fi)->fresh) {
		/* op_create's reply: what the create's own reply said */
		tfile_of(fi)->fresh = 0;
		rc = tessera_open_attrs(fh_of(fi), &ts);
	} else if (path && (answered(path, &ts) || tf_dir_take(mount_of(), path, &ts))) {
		rc = 0;
	} else if (path)
		rc = tessera_stat(fs, path, &ts);
	else if (fi)
		rc = tessera_fstat(fh_of(fi), &ts);
	else
		rc = -ENOENT;
	if (rc)
		return fail(fs, rc);
	tf_stat_of(&ts, st);
	tf_kattr_told(mount_of(), &ts);
	if (path)
		tf_links_seen(mount_of(), path, &ts);
	return 0;
}

static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller();
	struct tessera_stat ts;
	struct tdir *d;
	int rc = tessera_stat(fs, path, &ts);

	if (rc)
		return fail(fs, rc);
	if (!S_ISDIR(ts.mode))
		return -ENOTDIR;
	d = tf_dir_new();
	if (!d)
		return -ENOMEM;
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	tessera_fs *fs = as_caller();
	int rc;

	(void)flags;
	rc = tf_dir_fill(fs, path, (struct tdir *)(uintptr_t)fi->fh, off, buf, fill,
			 (flags & FUSE_READDIR_PLUS) ? TF_DIR_HELD_ATTRS : TF_DIR_NAMES);
	return rc ? fail(fs, rc) : 0;
}

/* fsync of a directory: the removes queued behind are answered; a
 * failure of one since the last such fsync is its error. */
static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return tf_removes_error(mount_of());
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	tf_dir_free((struct tdir *)(uintptr_t)fi->fh);
	return 0;
}

static int op_mkdir(const char *path, mode_t mode)
{
	tessera_fs *fs = as_caller();
	int rc = tessera_mkdir(fs, path, mode & 07777);

	return rc ? fail(fs, rc) : 0;
}

static int op_rmdir(const char *path)
{
	tessera_fs *fs = as_caller();
	int rc = tessera_rmdir(fs, path);

	if (rc)
		return fail(fs, rc);
	tf_dir_forget(mount_of(), path);
	return 0;
}

/* Answered before it is sent when what the mount holds says it will
 * succeed (fuse_remove.c), else sent now. */
static int op_unlink(const char *path)
{
	struct tfuse *t = mount_of();
	struct tessera_cred cred;
	tessera_fs *fs = caller_cred(&cred);
	int rc = 0;
	int behind = tf_removable(t, path, &cred);

	/* (first: the removal's own reply must come after, and win) */
	if (behind)
		tessera_unlink_pending(fs, path);
	if (!behind || tf_removes_defer(t, path, &cred))
		rc = tessera_unlink(fs, path);
	if (rc)
		return fail(fs, rc);
	tf_links_unlinked(mount_of(), path);   /* the file's other names */
	return 0;
}

static int open_flags(int flags)
{
	return flags & (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC);
}

/* fi->fh for f, a file just opened: a struct tfile, counted as a
 * writer of its file when open for writing. Closes f on failure. */
static int open_finish(tessera_file *f, struct fuse_file_info *fi)
{
	struct tfile *tf = calloc(1, sizeof(*tf));

	if (tf) {
		tf->f = f;
		tf->handle = tessera_file_handle(f);
		/* an O_APPEND open (direct_io) leaves no dirty page behind */
		tf->writer = (fi->flags & O_ACCMODE) != O_RDONLY && !fi->direct_io;
		tf->page_cache = mount_of()->writeback && !fi->direct_io;
	}
	if (!tf || tf_writer_add(mount_of(), tf)) {
		free(tf);
		tessera_close(f);
		return -ENOMEM;
	}
	fi->fh = (uint64_t)(uintptr_t)tf;
	return 0;
}

/* Open (or create) path for the kernel's writeback cache, which reads
 * the pages a write fills only in part, also through a descriptor opened
 * write-only: read and write, as the caller when it may read (a file the
 * call creates it may); else write-only as the caller (the permission
 * check), then read and write as this process (root), since the kernel's
 * page fills show the caller nothing. */
static int open_for_cache(tessera_fs *fs, const char *path, int flags, mode_t mode,
			  tessera_file **f)
{
	int rdwr = (flags & ~O_ACCMODE) | O_RDWR;
	int rc = tessera_open(fs, path, rdwr, mode, NULL, f);

	if (rc != -EACCES)
		return rc;
	rc = tessera_open(fs, path, flags, mode, NULL, f);
	if (rc)
		return rc;
	tessera_close(*f);
	tessera_set_thread_cred(fs, NULL);
	rc = tessera_open(fs, path, rdwr & ~(O_TRUNC | O_CREAT | O_EXCL), 0, NULL, f);
	as_caller();
	return rc;
}

/* O_APPEND: no page cache (each write(2) comes here whole, up to
 * max_write), and op_write appends wherever the kernel thought the end
 * was (tessera_append). */
static void append_direct(struct fuse_file_info *fi)
{
	if (fi->flags & O_APPEND)
		fi->direct_io = 1;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller();
	tessera_file *f;
	int flags, rc;

	if (!S_ISREG(mode) && (mode & S_IFMT))
		return -EPERM;
	flags = open_flags(fi->flags) | O_CREAT;
	if (mount_of()->writeback && (flags & O_ACCMODE) == O_WRONLY)
		rc = open_for_cache(fs, path, flags, mode & 07777, &f);
	else
		rc = tessera_open(fs, path, flags, mode & 07777, NULL, &f);
	if (rc)
		return fail(fs, rc);
	append_direct(fi);
	rc = open_finish(f, fi);
	if (!rc)
		tfile_of(fi)->fresh = 1;
	/* a file this open made has no security.capability: the kernel's
	 * question before its first write (tar's, cp's) asks nobody */
	if (!rc && (fi->flags & O_EXCL))
		nocap_remember(path);
	return rc;
}

/* FIFOs, sockets, devices: metadata only (regular files too, though the
 * kernel asks op_create for those). */
static int op_mknod(const char *path, mode_t mode, dev_t dev)
{
	tessera_fs *fs = as_caller();
	int rc = tessera_mknod(fs, path, mode, (uint64_t)dev);

	return rc ? fail(fs, rc) : 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller();
	struct tfuse *t = mount_of();
	int flags = open_flags(fi->flags);
	uint64_t seen = tf_attr_epoch(t);   /* (before the servers are asked) */
	struct tessera_stat ts;
	tessera_file *f;
	int rc;

	if (t->writeback && (flags & O_ACCMODE) == O_WRONLY)
		rc = open_for_cache(fs, path, flags, 0, &f);
	else
		rc = tessera_open(fs, path, flags, 0, NULL, &f);
	if (rc)
		return fail(fs, rc);
	rc = tessera_open_attrs(f, &ts);
	if (rc) {
		tessera_close(f);
		return fail(fs, rc);
	}
	append_direct(fi);
	/* Close-to-open: the kernel's attributes of this file (its size
	 * above all) may predate another client's writes. Under the
	 * writeback cache it keeps its own size and mtime: set them. Then
	 * make it ask again before this open returns, and drop its pages.
	 * (-ENOENT: it holds nothing to drop.) */
	if (!(flags & O_TRUNC))
		tf_sync_kernel_attrs(t, path, f, seen, &ts);
	else if ((ts.mode & (S_ISUID | S_ISGID)) && kills_privs())
		writer_drop_privs(path, f);
	/* (the rest it holds: only if they are not what the open found,
	 * fuse_kattr.c) */
	if ((flags & O_TRUNC) || !tf_kattr_current(t, &ts))
		fuse_invalidate_path(fuse_get_context()->fuse, path);
	return open_finish(f, fi);
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller_queued();
	ssize_t n;

	(void)path;
	/* The kernel clips a page-cache read at its own size: no daemon is
	 * asked it. An O_DIRECT read's count (fcntl may set it at any time)
	 * is the caller's ("Reads past the objects' ends", design.md). */
	if (tfile_of(fi)->page_cache && !(fi->flags & O_DIRECT))
		n = tessera_pread_unclipped(fh_of(fi), buf, size, (uint64_t)off);
	else
		n = tessera_pread(fh_of(fi), buf, size, (uint64_t)off);
	if (n < 0)
		return fail(fs, (int)n);
	return (int)n;
}

/* Under the writeback cache (KILLPRIV_V2), the set-ID bits are the
 * mount's to drop for a write, ftruncate or O_TRUNC open by anyone but
 * root (the kernel's test is CAP_FSETID; the mount sees only the uid). */
static int kills_privs(void)
{
	struct fuse_context *c = fuse_get_context();

	return ((struct tfuse *)c->private_data)->writeback && c->uid != 0;
}

/* Under the writeback cache this is the kernel's writeback (flush,
 * fsync, its dirty limit, the flusher's timer), in up to 1 MiB; an error
 * goes back to the kernel, which returns it at the file's next fsync or
 * close. */
static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller_queued();
	ssize_t n;

	(void)path;
	/* An O_APPEND descriptor's write goes at the end as the daemons see
	 * it, under the append lock; a page written back from the cache
	 * (writepage) carries its own offset, whoever's descriptor it uses. */
	if ((fi->flags & O_APPEND) && !fi->writepage) {
		int rc;

		if (!tfile_of(fi)->appended)
			writer_drop_privs(path, fh_of(fi));
		tfile_of(fi)->appended = 1;
		rc = tessera_append(fh_of(fi), buf, size, NULL);

		return rc ? fail(fs, rc) : (int)size;
	}
	if (!fi->writepage && kills_privs())
		writer_drop_privs(path, fh_of(fi));
	n = tessera_pwrite(fh_of(fi), buf, size, (uint64_t)off);
	if (n < 0)
		return fail(fs, (int)n);
	return (int)n;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller();
	int rc;

	tf_answer_block(mount_of());
	if (tf_is_fixup(&rc))
		return rc;   /* tf_sync_kernel_attrs: the kernel's size only */
	if (size < 0)
		return -EINVAL;
	/* ftruncate acts on the open file, through the capability its open
	 * got, whatever the mode says now (a file created with mode 0 may be
	 * truncated through its descriptor). The kernel passes no open flags
	 * with the handle (fi->flags is 0) and has checked that the
	 * descriptor was opened for writing; tessera_ftruncate checks again.
	 * A truncate by name opens the file, so the mode is checked then. */
	if (fi && fi->fh && kills_privs())
		writer_drop_privs(path, fh_of(fi));
	if (fi && fi->fh)
		rc = tessera_ftruncate(fh_of(fi), (uint64_t)size);
	else
		rc = tessera_truncate(fs, path, (uint64_t)size);
	return tf_attrs_set(rc ? fail(fs, rc) : 0, path, fi);
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
	uint64_t seen = tfile_of(fi)->appended ? tf_attr_epoch(mount_of()) : 0;
	struct tessera_stat ts;

	/* close(2): the kernel has written the file's dirty pages back (and
	 * returned a failed write's error to close) before it asks this;
	 * nothing is buffered in this process. Appends went around the
	 * kernel's cache, which under writeback keeps its own size and mtime
	 * (its guess of where they landed, no new mtime): set the servers'
	 * now, as an open does, so make and ls see them after the close. */
	if (tfile_of(fi)->appended && !tessera_fstat(fh_of(fi), &ts))
		tf_sync_kernel_attrs(mount_of(), path, fh_of(fi), seen, &ts);
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller_queued();
	int rc;

	(void)path;
	(void)datasync;
	rc = tessera_fsync(fh_of(fi));
	return rc ? fail(fs, rc) : 0;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct tfuse *t = fuse_get_context()->private_data;
	tessera_fs *fs = as_caller_queued();
	struct tfile *tf = tfile_of(fi);
	int rc;

	(void)path;
	tf_writer_remove(mount_of(), tf);
	tf_locks_forget(t->locks, tf->f); /* OFD locks left (fuse_locks.c) */
	rc = tessera_close(tf->f);
	free(tf);
	return rc ? fail(fs, rc) : 0;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	tessera_fs *fs = as_caller();
	enum tessera_rename_mode mode = TESSERA_RENAME_REPLACE;
	int rc;

	/* RENAME_WHITEOUT (overlayfs's) and any combination: EINVAL, as
	 * rename(2) documents for flags a file system does not support. */
	if (flags == RENAME_NOREPLACE) {
		mode = TESSERA_RENAME_NOREPLACE;
	} else if (flags == RENAME_EXCHANGE) {
		mode = TESSERA_RENAME_EXCHANGE;
	} else if (flags) {
		fprintf(stderr, "tessera-fuse: rename %s %s: flags 0x%x not supported\n",
			from, to, flags);
		return -EINVAL;
	}
	rc = tessera_rename_with(fs, from, to, mode);
	/* EEXIST of a no-replace rename is the answer, not a failure */
	if (rc == -EEXIST)
		return rc;
	if (rc)
		return fail(fs, rc);
	tf_dir_forget(mount_of(), from);
	tf_dir_forget(mount_of(), to);
	tf_links_renamed(mount_of(), from, to,
			 mode == TESSERA_RENAME_EXCHANGE ? TF_RENAME_SWAP : TF_RENAME_MOVE);
	return 0;
}

/* A change as the caller; what it left is kept for libfuse's getattr
 * that follows (answered). */
static int setattr_kept(tessera_fs *fs, const char *path, const struct tessera_setattr *sa)
{
	struct tessera_stat ts;
	int sized, rc = tessera_setattr_stat(fs, path, sa, &ts, &sized);

	if (!rc) {
		tf_dir_forget(mount_of(), path);   /* (a directory's, now older) */
		tf_answer_keep(mount_of(), path, &ts, sized);
	}
	return rc;
}

static int setattr(const char *path, const struct tessera_setattr *sa)
{
	tessera_fs *fs = as_caller();
	int rc;

	tf_answer_clear(mount_of());
	rc = setattr_kept(fs, path, sa);
	return rc ? fail(fs, rc) : 0;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = mode & 07777 };

	(void)fi;
	return setattr(path, &sa);
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct tessera_setattr sa = { .valid = 0 };

	(void)fi;
	if (uid != (uid_t)-1) {
		sa.valid |= TESSERA_SET_UID;
		sa.uid = (uint32_t)uid;
	}
	if (gid != (gid_t)-1) {
		sa.valid |= TESSERA_SET_GID;
		sa.gid = (uint32_t)gid;
	}
	if (!sa.valid)
		return 0;
	return setattr(path, &sa);
}

/* Set times as the caller. Under the writeback cache the kernel sends
 * "now" for mtime as an explicit time (it keeps its own clock for the
 * file), which the metadata daemon lets only the owner set; so a
 * non-owner's touch or truncate of a file it may write was refused. The
 * kernel has already applied the rules (default_permissions is always
 * on): an explicit time from a non-owner reaches us only when it stood
 * for "now". So a refusal of explicit times is retried as "now". */
static int set_times(const char *path, const struct tessera_setattr *sa)
{
	tessera_fs *fs = as_caller();
	struct tessera_setattr now = *sa;
	int rc = setattr_kept(fs, path, sa);

	if (rc != -EPERM || !(sa->valid & (TESSERA_SET_ATIME | TESSERA_SET_MTIME)))
		return rc ? fail(fs, rc) : 0;
	if (now.valid & TESSERA_SET_ATIME)
		now.valid = (now.valid & ~TESSERA_SET_ATIME) | TESSERA_SET_ATIME_NOW;
	if (now.valid & TESSERA_SET_MTIME)
		now.valid = (now.valid & ~TESSERA_SET_MTIME) | TESSERA_SET_MTIME_NOW;
	rc = setattr_kept(fs, path, &now);
	return rc ? fail(fs, rc) : 0;
}

static int op_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	struct tessera_setattr sa = { .valid = 0 };
	int rc;

	tf_answer_clear(mount_of());
	if (tf_is_fixup(&rc))
		return rc;   /* tf_sync_kernel_attrs: the kernel's mtime only */
	if (!tv) {
		sa.valid = TESSERA_SET_ATIME_NOW | TESSERA_SET_MTIME_NOW;
	} else {
		if (tv[0].tv_nsec == UTIME_NOW)
			sa.valid |= TESSERA_SET_ATIME_NOW;
		else if (tv[0].tv_nsec != UTIME_OMIT) {
			sa.valid |= TESSERA_SET_ATIME;
			sa.atime = tv[0];
		}
		if (tv[1].tv_nsec == UTIME_NOW)
			sa.valid |= TESSERA_SET_MTIME_NOW;
		else if (tv[1].tv_nsec != UTIME_OMIT) {
			sa.valid |= TESSERA_SET_MTIME;
			sa.mtime = tv[1];
		}
	}
	return sa.valid ? tf_attrs_set(set_times(path, &sa), path, fi) : 0;
}

/* fallocate(2): mode 0 and FALLOC_FL_KEEP_SIZE allocate on the storage
 * daemons (mode 0 grows the file as Linux does); punching holes,
 * zeroing and collapsing ranges are not supported: EOPNOTSUPP, which
 * tells posix_fallocate and cp to do without. The kernel has refused a
 * negative offset or length and an end past the largest file size. */
static int op_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	tessera_fs *fs = as_caller_queued();
	enum tessera_falloc_mode how;
	int rc;

	if (mode == 0) {
		how = TESSERA_FALLOC_EXTEND;
	} else if (mode == FALLOC_FL_KEEP_SIZE) {
		how = TESSERA_FALLOC_KEEP_SIZE;
	} else {
		fprintf(stderr, "tessera-fuse: fallocate %s: mode 0x%x not supported (0 and "
			"keep-size are)\n", path ? path : "(open file)", (unsigned)mode);
		return -EOPNOTSUPP;
	}
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (!fi || !fi->fh)
		return -EBADF;   /* the kernel always passes the open file */
	rc = tessera_fallocate(fh_of(fi), how, (uint64_t)off, (uint64_t)len);
	return rc ? fail(fs, rc) : 0;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	tessera_fs *fs = as_caller();
	struct tessera_statfs sf;
	uint32_t n = tessera_ios_count(fs) + 1;
	struct tessera_server_space *space = calloc(n, sizeof(*space));
	const uint64_t frag = 4096;
	int rc;

	(void)path;
	if (!space)
		return -ENOMEM;
	/* The daemons that answer still count (the watcher has logged the
	 * others); without the metadata daemon there is no answer. */
	rc = tessera_statfs_servers(fs, &sf, space, n);
	if (rc >= 0)
		rc = space[0].status;
	free(space);
	if (rc)
		return fail(fs, rc);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = IO_SIZE;
	sv->f_frsize = frag;
	sv->f_blocks = sf.bytes_total / frag;
	sv->f_bfree = sf.bytes_free / frag;
	sv->f_bavail = sf.bytes_free / frag;
	/* No inode table: names are limited by the metadata daemon's disk,
	 * whose free space it turns into a count of names (files_free). */
	sv->f_ffree = sv->f_favail = sf.files_free;
	sv->f_files = sf.files + sf.files_free;
	sv->f_namemax = 255;
	return 0;
}

/* ------------------------------------------------------------- links */

/* The kernel's attributes of `from` (its nlink) are stale now: dropped.
 * Those of the file's other names this mount knows are set again
 * (fuse_links.c), as after an unlink or a rename over one. */
static int op_link(const char *from, const char *to)
{
	tessera_fs *fs = as_caller();
	struct tessera_stat ts;
	int rc = tessera_link(fs, from, to);

	if (rc)
		return fail(fs, rc);
	fuse_invalidate_path(fuse_get_context()->fuse, from);
	if (mount_of()->writeback && !tessera_stat(fs, to, &ts))
		tf_links_linked(mount_of(), from, to, &ts);
	return 0;
}

/* The target is kept as given: the kernel resolves it, relative to the
 * link's directory on the mount or from the root of the node's own
 * namespace when absolute. */
static int op_symlink(const char *target, const char *path)
{
	tessera_fs *fs = as_caller();
	int rc = tessera_symlink(fs, target, path);

	return rc ? fail(fs, rc) : 0;
}

/* FUSE wants the target NUL-terminated, cut to len - 1 bytes. */
static int op_readlink(const char *path, char *buf, size_t len)
{
	tessera_fs *fs = as_caller();
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	n = tessera_readlink(fs, path, buf, len - 1);
	if (n < 0)
		return fail(fs, (int)n);
	buf[(size_t)n < len - 1 ? (size_t)n : len - 1] = '\0';
	return 0;
}

/* ------------------------------------------------ extended attributes
 *
 * Kept by the metadata daemon (tessera_getxattr & co.). The kernel asks
 * NOFOLLOW: it resolved any link itself. POSIX ACL names answer
 * EOPNOTSUPP here without a request: ACLs are neither enforced nor
 * stored, and ls, cp and the kernel ask for them often. */

static int is_acl_name(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

/* The kernel asks for security.capability before every write(2) to a
 * file (to drop a written file's capabilities), and only stops when
 * getxattr answers ENOSYS: a request to the metadata daemon per write
 * took 400-byte writes from 2.0 to 1.3 MB/s. So the mount remembers for
 * NOCAP_TTL_NS, per path, that a file had none (or that op_create made
 * it, O_EXCL), as the kernel remembers attributes for attr_timeout; a
 * set or removal of the attribute through
 * this mount forgets everything at once. One through another client (or
 * a rename onto a remembered path) is seen after at most NOCAP_TTL_NS:
 * until then a write there keeps the file's capabilities, as it would
 * have on the writer's side of a race. */
static struct nocap_cache *nocap_of(void)
{
	return &((struct tfuse *)fuse_get_context()->private_data)->nocap;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static unsigned nocap_slot(const char *path)
{
	uint32_t h = 2166136261u;   /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % NOCAP_SLOTS;
}

static int is_caps_name(const char *name)
{
	return !strcmp(name, "security.capability");
}

/* 1 when `path` was found without security.capability less than
 * NOCAP_TTL_NS ago. */
static int nocap_known(const char *path)
{
	struct nocap_cache *c = nocap_of();
	unsigned i = nocap_slot(path);
	int known;

	pthread_mutex_lock(&c->lock);
	known = c->slot[i].path && !strcmp(c->slot[i].path, path) &&
		c->slot[i].until_ns > mono_ns();
	pthread_mutex_unlock(&c->lock);
	return known;
}

static void nocap_remember(const char *path)
{
	struct nocap_cache *c = nocap_of();
	unsigned i = nocap_slot(path);
	char *copy = strdup(path);

	if (!copy)
		return;     /* only a cache */
	pthread_mutex_lock(&c->lock);
	free(c->slot[i].path);
	c->slot[i].path = copy;
	c->slot[i].until_ns = mono_ns() + NOCAP_TTL_NS;
	pthread_mutex_unlock(&c->lock);
}

static void nocap_forget_all(void)
{
	nocap_clear(nocap_of());
}

static void nocap_clear(struct nocap_cache *c)
{
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < NOCAP_SLOTS; i++) {
		free(c->slot[i].path);
		c->slot[i].path = NULL;
	}
	pthread_mutex_unlock(&c->lock);
}

static int op_setxattr(const char *path, const char *name, const char *value,
		       size_t size, int flags)
{
	enum tessera_xattr_set how = TESSERA_XATTR_SET_ANY;
	tessera_fs *fs;
	int rc;

	if (is_acl_name(name))
		return -EOPNOTSUPP;
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	fs = as_caller();
	if (flags == (XATTR_CREATE | XATTR_REPLACE)) {
		/* Both: never done. A local file system checks CREATE first
		 * (EEXIST for an attribute that exists), then REPLACE. */
		ssize_t n = tessera_getxattr(fs, path, name, NULL, 0, TESSERA_NOFOLLOW);

		return xattr_fail(fs, n >= 0 ? -EEXIST : (int)n);
	}
	if (flags == XATTR_CREATE)
		how = TESSERA_XATTR_SET_CREATE;
	else if (flags == XATTR_REPLACE)
		how = TESSERA_XATTR_SET_REPLACE;
	if (is_caps_name(name))
		nocap_forget_all();
	rc = tessera_setxattr(fs, path, name, value, size, how, TESSERA_NOFOLLOW);
	if (!rc)
		tf_dir_forget(mount_of(), path);   /* (its ctime moved) */
	return rc ? xattr_fail(fs, rc) : 0;
}

static int op_getxattr(const char *path, const char *name, char *value, size_t size)
{
	tessera_fs *fs;
	ssize_t n;

	if (is_acl_name(name))
		return -EOPNOTSUPP;
	if (is_caps_name(name) && nocap_known(path))
		return -ENODATA;
	fs = as_caller();
	n = tessera_getxattr(fs, path, name, value, size, TESSERA_NOFOLLOW);
	if (n == -ENODATA && is_caps_name(name))
		nocap_remember(path);
	return n < 0 ? xattr_fail(fs, (int)n) : (int)n;
}

static int op_listxattr(const char *path, char *list, size_t size)
{
	tessera_fs *fs = as_caller();
	ssize_t n = tessera_listxattr(fs, path, list, size, TESSERA_NOFOLLOW);

	return n < 0 ? xattr_fail(fs, (int)n) : (int)n;
}

static int op_removexattr(const char *path, const char *name)
{
	tessera_fs *fs;
	int rc;

	if (is_acl_name(name))
		return -EOPNOTSUPP;
	if (is_caps_name(name))
		nocap_forget_all();
	fs = as_caller();
	rc = tessera_removexattr(fs, path, name, TESSERA_NOFOLLOW);
	if (!rc)
		tf_dir_forget(mount_of(), path);
	return rc ? xattr_fail(fs, rc) : 0;
}

/* Drop a written file's capabilities, and its setuid and setgid (with
 * group-exec) bits unless the writer is root, as the kernel does on its
 * cached write path without FUSE_HANDLE_KILLPRIV_V2 (fuse_init.c). Done
 * here for
 * - an O_APPEND write, which goes around the page cache (direct_io): at
 *   the first append through a descriptor (the kernel would at every
 *   write; one check per open keeps appends cheap);
 * - under the writeback cache, which asks for KILLPRIV_V2: a write the
 *   kernel sends past its cache (it does for a set-ID file, and for
 *   O_DIRECT), an ftruncate and an O_TRUNC open by anyone but root.
 * Then the kernel drops the attributes it holds of the file (its mode)
 * without its pages (not fuse_invalidate_path: a write sent past the
 * cache holds those locked until it is answered). */
static void writer_drop_privs(const char *path, tessera_file *f)
{
	struct fuse_context *c = fuse_get_context();
	struct tessera_stat ts;
	uint32_t kill;

	if (op_getxattr(path, "security.capability", NULL, 0) >= 0)
		op_removexattr(path, "security.capability");
	if (c->uid == 0 || tessera_fstat(f, &ts))
		return;
	kill = ts.mode & S_ISUID;
	if ((ts.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	if (kill && !op_chmod(path, ts.mode & 07777 & ~kill, NULL))
		tf_drop_request_attrs(c->fuse);
	/* no getattr of libfuse's follows this chmod: what it kept for one
	 * must not answer this thread's next question of the path (seen: the
	 * lookup before a create of the same name, after an unlink, answered
	 * that the file was there, EEXIST) */
	tf_answer_clear(mount_of());
}

/* ------------------------------------------------------------- locks
 * (fuse_locks.c keeps them in the storage daemons' lock tables) */

static int op_lock(const char *path, struct fuse_file_info *fi, int cmd, struct flock *fl)
{
	struct tfuse *t = fuse_get_context()->private_data;
	tessera_fs *fs = as_caller_queued();
	int rc = tf_locks_fcntl(t->locks, path, fh_of(fi), fi->lock_owner, cmd, fl);

	return rc == -EAGAIN || rc == -EDEADLK || rc == -EINTR || rc == -EINVAL ||
	       rc == -EOVERFLOW ? rc : rc ? fail(fs, rc) : 0;
}

static int op_flock(const char *path, struct fuse_file_info *fi, int op)
{
	struct tfuse *t = fuse_get_context()->private_data;
	tessera_fs *fs = as_caller_queued();
	int rc = tf_locks_flock(t->locks, path, fh_of(fi), fi->lock_owner, op);

	return rc == -EAGAIN || rc == -EINTR || rc == -EINVAL ? rc : rc ? fail(fs, rc) : 0;
}

/* TESSERA_FUSE_DEADLOCK_MS, or the default (fuse_locks.h). */
const struct fuse_operations tf_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.unlink = op_unlink,
	.create = op_create,
	.mknod = op_mknod,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.truncate = op_truncate,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.rename = op_rename,
	.chmod = op_chmod,
	.chown = op_chown,
	.utimens = op_utimens,
	.statfs = op_statfs,
	.fallocate = op_fallocate,
	.link = op_link,
	.symlink = op_symlink,
	.readlink = op_readlink,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.lock = op_lock,
	.flock = op_flock,
};
