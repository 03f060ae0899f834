/*
 * fuse_locks.h - the mount's fcntl (POSIX and OFD) and flock(2) locks,
 * kept in the storage daemons' lock tables as record locks
 * (tessera_lock_record), so they hold across every mount and against the
 * library's locks. See fuse_locks.c.
 */
#ifndef TESSERA_FUSE_LOCKS_H
#define TESSERA_FUSE_LOCKS_H

#include <fcntl.h>
#include <stdint.h>

#include "tessera.h"

struct tf_locks;

/* How long a blocking fcntl wait (F_SETLKW) lasts before it is taken for
 * a deadlock and answered EDEADLK: TF_DEADLOCK_MS, or the environment's
 * TESSERA_FUSE_DEADLOCK_MS (milliseconds) when the mount starts. */
#define TF_DEADLOCK_MS 300000u

/* Whether a lock change drops the file's kernel cache (fuse_invalidate_path,
 * which writes dirty pages back through this very mount): not with one
 * thread (-s), where that write would wait for the thread that asks it. */
enum tf_cache { TF_CACHE_DROP, TF_CACHE_KEEP };

int tf_locks_create(tessera_fs *fs, uint32_t deadlock_ms, enum tf_cache cache,
		    struct tf_locks **out);
/* Releases every lock still held (unmount). */
void tf_locks_destroy(struct tf_locks *l);

/* fcntl's F_GETLK, F_SETLK and F_SETLKW for `owner` (the kernel's lock
 * owner: a process's, or an open file description's for OFD locks) on
 * the file open as f at path. 0 or a negative errno. */
int tf_locks_fcntl(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		   int cmd, struct flock *fl);

/* flock(2): op is LOCK_SH, LOCK_EX or LOCK_UN, with LOCK_NB or not. */
int tf_locks_flock(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		   int op);

/* An open file description is released: drop the locks taken through
 * it that are left (OFD locks; see fuse_locks.c). */
void tf_locks_forget(struct tf_locks *l, const tessera_file *via);

#endif
