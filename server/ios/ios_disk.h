/*
 * ios_disk.h - the disk calls of a storage daemon's object store, as an ops
 * table.
 *
 * Every system call the store (ios_store.c) makes on its directory and its
 * objects goes through a struct ios_disk. ios_disk_system() makes the
 * calls; ios_disk_faults() wraps another disk and fails the calls a spec
 * names, so tests inject faults through the path the daemon really uses
 * (the daemon's -F option). As in libfabric, the table begins with its
 * size, so it can grow and a user can check that an op is there.
 *
 * Calls return 0 (or the bytes moved, or a descriptor) or a negative errno;
 * none retries on -EINTR. Object calls that take a path also take the
 * object's handle and which of its files the path is: the system disk
 * ignores both, a fault disk picks its victims by them (and knows a
 * descriptor's object and file from its open).
 */
#ifndef TESSERA_IOS_DISK_H
#define TESSERA_IOS_DISK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>

struct ios_disk;

/* The files of a store: an object's data, the counters and the block
 * checksums kept beside it, the store's own files (its identity and its
 * registry of objects, handle 0), and a versioned object's log
 * (ios_vlog.h; fault rules do not count its calls). */
enum ios_file { IOS_FILE_DATA, IOS_FILE_COUNTERS, IOS_FILE_SUMS, IOS_FILE_STORE, IOS_FILE_VLOG };

/* What a rename does to an existing `to`: replace it (the store's own
 * files, made whole aside), or leave it and fail with -EEXIST (a spare file
 * becoming an object's: renameat2 RENAME_NOREPLACE). */
enum ios_rename { IOS_RENAME_REPLACE, IOS_RENAME_NEW };

struct ios_disk_ops {
	size_t size;   /* sizeof(struct ios_disk_ops) where the table was made */
	/* Objects: file `file` of object `handle`, at `path`. */
	int (*open)(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path,
		    int flags, mode_t mode);
	int (*unlink)(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path);
	/* Descriptors from open. */
	int (*close)(struct ios_disk *d, int fd);
	ssize_t (*preadv)(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off);
	ssize_t (*pwritev)(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off);
	int (*fstat)(struct ios_disk *d, int fd, struct stat *sb);
	int (*ftruncate)(struct ios_disk *d, int fd, off_t size);
	int (*fdatasync)(struct ios_disk *d, int fd);
	/* Directories: make one, make its entries durable (open + fsync). */
	int (*mkdir)(struct ios_disk *d, const char *path, mode_t mode);
	int (*syncdir)(struct ios_disk *d, const char *path);
	int (*statvfs)(struct ios_disk *d, const char *path, struct statvfs *sv);
	/* Move `from` to `to` (see enum ios_rename). */
	int (*rename)(struct ios_disk *d, const char *from, const char *to,
		      enum ios_rename how);
	/* Free the disk (and any disk it wraps). */
	void (*destroy)(struct ios_disk *d);
	/* Start writing [off, off+len) of a descriptor to the device without
	 * waiting (a hint: may be NULL, its failure changes nothing). */
	void (*writeback)(struct ios_disk *d, int fd, off_t off, off_t len);
	/* Allocate [off, off+len) of a descriptor's file without changing its
	 * size (fallocate(2) with FALLOC_FL_KEEP_SIZE). */
	int (*fallocate)(struct ios_disk *d, int fd, off_t off, off_t len);
	/* Set a descriptor's file's mode (fchmod(2)). */
	int (*fchmod)(struct ios_disk *d, int fd, mode_t mode);
};

struct ios_disk {
	const struct ios_disk_ops *ops;
};

/* The system's calls. */
int ios_disk_system(struct ios_disk **out);

/* A disk that passes calls to `inner` (taken over: destroyed with it)
 * except those `spec` makes fail. On error (-EINVAL: a bad spec, err says
 * where) `inner` is still the caller's.
 *
 *   SPEC = RULE[,RULE...]
 *   RULE = CALL[:HANDLE][@N[+]][=ERRNO]
 *
 * CALL is open, read, write, stat, truncate or sync (the object calls
 * open, preadv, pwritev, fstat, ftruncate, fdatasync), lose, corrupt or
 * slow.
 * Rules count calls on objects' data and counters (IOS_FILE_DATA and
 * IOS_FILE_COUNTERS), never on checksums or the store's own files. HANDLE
 * (hex, as in error messages) counts only calls on that object. @N fails
 * the Nth matching call, @N+ that one and every later one; without @,
 * every matching call fails. ERRNO is a name (EIO, ENOSPC, EDQUOT, EROFS,
 * EFBIG, EACCES, ENOMEM, EMFILE) or a number; EIO if not given.
 *
 * lose: the object's data file is removed, as if the disk lost it; the
 * calls after pass, and the store, which knows the objects it holds,
 * reports the object lost. With @N the object of the Nth matching data
 * write is lost once that write is made; without, an object is lost at
 * the first call on it. An object is lost once; ERRNO is not used.
 *
 * corrupt: the matching data writes are stored with their first byte
 * flipped (the store's checksum, computed from the right bytes, then
 * finds them damaged); ERRNO is not used.
 *
 * slow: the matching data reads and writes (preadv and pwritev of
 * objects' data files) wait =MS milliseconds (default 100, at most 60000)
 * before they are made, and then succeed: tests use it to hold one
 * object's request on the disk while others go on (the storage daemon's
 * disk workers, ios_pool.c).
 *
 *   write@3=ENOSPC        the third write fails with ENOSPC
 *   write@10+             every write from the tenth fails with EIO
 *   read:1a00000002=EIO   every read of object 1a00000002 fails
 *   lose:1a00000002       that object is lost
 *   lose@5                the object the fifth write went to is lost
 *   corrupt:1a00000002@2  the second write of that object is damaged
 *   slow:1a00000002@1=500 the first read or write of that object waits 0.5 s
 */
int ios_disk_faults(struct ios_disk *inner, const char *spec, struct ios_disk **out, char *err,
		    size_t errlen);

#endif /* TESSERA_IOS_DISK_H */
