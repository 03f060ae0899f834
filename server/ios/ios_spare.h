/*
 * ios_spare.h - empty files kept ready for a store's new objects.
 *
 * A new object costs its storage daemon two file creations (its data and
 * its checksums), and a creation allocates an inode: the local file
 * system's slowest common call. On ext4 without a journal (this project's
 * test machines) an allocation scans past every inode freed in the last
 * minutes, so after a large remove a creation took 500-800 us of kernel
 * CPU, against 20 us for a rename. So a store keeps spares, in DIR/spare:
 *
 *   - a new object's file is a ready spare renamed into place
 *     (ios_spares_take) instead of a creation;
 *   - a removed object's file becomes a spare again (ios_spares_reclaim):
 *     renamed out of the way, emptied, ready, instead of unlinked;
 *   - a thread of the store's makes new ones when fewer than `want` are
 *     ready (removed files are kept up to IOS_SPARES_MAX).
 *
 * Only files this daemon's spares made are reused, and only if no client
 * was ever given a descriptor of them: a spare is made with IOS_SPARE_MODE
 * (the sticky bit, which means nothing on a regular file) and the store
 * clears that bit before it lends an object's descriptors to a local
 * reader (ios_store_open_read). A reader keeping such a descriptor after
 * the remove then holds an unlinked file, as without spares, never the
 * next object's.
 *
 * Spares need not be durable: the store syncs an object's directory as
 * for a file it created, and the files an earlier daemon left in
 * DIR/spare are removed when the next one starts.
 */
#ifndef IOS_SPARE_H
#define IOS_SPARE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct ios_disk;
struct ios_spares;

/* The most spares a store keeps ready: the limit of the `spare_files`
 * key (those the thread makes) and of removed objects' files kept. */
#define IOS_SPARES_MAX 4096
/* The mode of a spare's file, and of an object's made from one until it
 * is lent: S_ISVTX marks it as reusable. */
#define IOS_SPARE_MODE (S_ISVTX | 0600)

/* Spares for the store in `root`, in root/spare (made if missing; the
 * files an earlier daemon left there removed). With want > 0 a thread
 * keeps `want` ready; with 0 there are none (every take misses, every
 * reclaim declines). 0, or a negative errno with err saying what failed
 * on which path. */
int ios_spares_open(struct ios_disk *disk, const char *root, unsigned want,
		    struct ios_spares **out, char *err, size_t errlen);
/* Stop the thread (after the file it is making) and free; ready spares
 * stay on disk for the next start to remove. NULL is a no-op. */
void ios_spares_close(struct ios_spares *sp);

/* Move a ready spare to `path`, which must not exist. 0: path is an empty
 * file; -EEXIST: path exists (left as it was); -ENOENT: no spare was
 * ready, or the rename failed otherwise: the caller creates the file
 * itself (and meets the cause, if it lasts). A spare that could not be
 * moved is removed. Any thread. */
int ios_spares_take(struct ios_spares *sp, const char *path);

/* A removed object's file, taken back in two steps. ios_spares_reclaim
 * renames `path` into the spares (call it under the lock that orders it
 * with lending, so a file lent before is seen as lent): 0 with *c set,
 * and `path` is gone; -ENOSPC: IOS_SPARES_MAX are ready already, or the
 * store keeps none (`path` is untouched: the caller unlinks it); else the
 * rename's -errno (`path` untouched). ios_spares_reclaim_end, outside
 * that lock, then empties it into a ready spare if it was never lent, or
 * removes it. */
struct ios_spare_claim {
	unsigned id;   /* the spare's name */
	int fd;        /* its file, open for writing (-1: none) */
	int reuse;     /* never lent: emptied and kept */
};
int ios_spares_reclaim(struct ios_spares *sp, const char *path, struct ios_spare_claim *c);
void ios_spares_reclaim_end(struct ios_spares *sp, struct ios_spare_claim *c);

/* What the spares did (the daemon's counters, the tests). */
struct ios_spares_stats {
	uint64_t made;      /* files made by the thread */
	uint64_t taken;     /* moved into place for new objects */
	uint64_t missed;    /* takes that found none ready */
	uint64_t reused;    /* removed objects' files kept as spares */
	unsigned ready;     /* ready now */
	int last_error;     /* the thread's last failed make (-errno; 0: none) */
};
void ios_spares_stats(struct ios_spares *sp, struct ios_spares_stats *out);

#endif
