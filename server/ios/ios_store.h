/*
 * ios_store.h - a storage daemon's objects on its local file system.
 *
 * Object `handle` is the file DIR/objects/XX/HHHHHHHHHHHHHHHH (XX the low
 * byte of the handle, H the handle in hex), created on first write or
 * truncate. Beside it, HHHHHHHHHHHHHHHH.sum holds a CRC32C per block of
 * the store's checksum block size (ios_store_csum_block: chosen when the
 * store is made, recorded in DIR/store), written with the data and
 * checked on every read.
 *
 * The store knows which objects it holds: DIR/registry records each object
 * when it is made and when it is removed (synced with the object's data),
 * and DIR/store names the store. A missing object it never held reads as
 * empty (a hole: files are sparse); one it holds but whose file is gone
 * is lost, and reading it is an error (-EIO, ios_store_why says which).
 * A store made in a directory that existed but held no store (a disk
 * lost or emptied under a running file system) is "remade": it cannot
 * tell the objects it held before from holes, so it reports every missing
 * object it never held since as lost, until it is opened once with
 * IOS_STORE_NEW.
 *
 * Everything the store makes is its user's alone: directories 0700, files
 * 0600 (objects hold any user's data; the daemon's start-up check,
 * srv_store_claim, refuses a DIR others can enter).
 *
 * Open descriptors are cached (least recently used goes first). Every disk
 * call goes through the struct ios_disk given at open (ios_disk.h). Pure
 * storage: no network.
 */
#ifndef TESSERA_IOS_STORE_H
#define TESSERA_IOS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "tp_objfmt.h"

struct ios_store;
struct ios_disk;

/* Objects are spread over IOS_STORE_DIRS directories, DIR/objects/00 to
 * DIR/objects/ff, by the low byte of the handle (one per byte value). */
#define IOS_STORE_DIRS 256

/* Writes of at least this many bytes start their writeback at once (the
 * disk's writeback op); smaller ones are left to the kernel and SYNC. */
#define IOS_WRITEBACK_MIN (256u << 10)

/* ios_store_open flags. IOS_STORE_NEW: a directory without a store gets a
 * new, empty one (else only a directory that did not exist does, and one
 * that existed is remade: see above); a remade store becomes an ordinary
 * one (the operator says every object it should hold is there). */
#define IOS_STORE_NEW 1

/* `disk` stays the caller's and must outlive the store. On success
 * *notice may get a line for the daemon's log (a remade store); free it.
 * csum_block: the checksum block (the config's csum_block; a power of two,
 * tp_obj_block_valid), which a new store records; a store made with
 * another one is refused (-EINVAL, *errmsg naming both and the store's
 * path): on-disk format, never reinterpreted. 0 takes the store's own
 * (TP_OBJ_BLOCK for a new one). */
int ios_store_open(const char *dir, unsigned max_open, unsigned flags, uint32_t csum_block,
		   struct ios_disk *disk, struct ios_store **out, char **notice, char **errmsg);
void ios_store_close(struct ios_store *st);

/* A lane of the store, for another thread: it shares the store's objects,
 * descriptor cache, registry and counters (under a lock), and has its own
 * scratch buffer and ios_store_why. Lanes may work at the same time on
 * different objects, never on one object at once (the caller orders the
 * calls on each object: ios_pool.c). The store itself is a lane too. At
 * most max_open - 2 lanes (-EMFILE); close each with ios_store_close
 * before the store. */
int ios_store_lane(struct ios_store *st, struct ios_store **out);

/* The store's checksum block: a CRC32C per this many bytes of an object
 * (bytes past its end count as zeros); the format, which local reads
 * share, is proto/tp_objfmt.h's. */
uint32_t ios_store_csum_block(const struct ios_store *st);
/* The config's csum_block checked alone (before any store opens): 0, or
 * -EINVAL with why in err. */
int ios_store_csum_check(uint64_t block, char *err, size_t errlen);

/* Why the last call failed, when the errno alone does not say (a lost
 * object, a checksum that does not match: which block, which file); ""
 * otherwise. Valid until the next call. */
const char *ios_store_why(const struct ios_store *st);

/* Integrity counters since open: blocks whose checksum did not match, and
 * reads or writes of lost objects. */
struct ios_store_faults {
	uint64_t checksum_failures;
	uint64_t lost_objects;
};
void ios_store_faults(const struct ios_store *st, struct ios_store_faults *out);

/* Descriptors of object `handle`'s data file and checksum file (*sums
 * -1 when it has none), opened read-only for a client on this host that
 * reads them itself (ios_local.c); the caller closes them with the
 * disk's close. -ENOENT: no object, and the store never held one (a
 * hole); -EIO: the store held it and its file is gone (a read through
 * the daemon says why). Safe beside the lanes: it touches no cached
 * descriptor. */
int ios_store_open_read(struct ios_store *st, uint64_t handle, int *fd, int *sums);

/* The objects the store holds (its registry), in ascending handle order:
 * up to `max` handles greater than `after` go to handles[], their count
 * to *n. Page through by passing the last handle given as `after` (0 to
 * start). Objects a remove forgot are not listed; a lost one is. */
int ios_store_list(struct ios_store *st, uint64_t after, uint64_t *handles, size_t max,
		   size_t *n);
/* 1 if the store holds `handle` (in its registry), else 0. */
int ios_store_holds(const struct ios_store *st, uint64_t handle);
/* 1 if the store holds `handle` but its file is gone (lost), else 0. A
 * question, not an access: the integrity counters do not move. */
int ios_store_missing(struct ios_store *st, uint64_t handle);

/* An object byte range. */
struct ios_piece {
	uint64_t offset;
	uint64_t length;
};

/* The merge rule of the reads and writes below: pieces of one request at
 * most `gap` bytes apart move as one span of at most `span` bytes (the
 * config's sieve_gap and sieve_span; IOS_SIEVE_GAP and IOS_SIEVE_SPAN until
 * set). Call before lanes work (the daemon sets it at start-up). -EINVAL,
 * with why in err, for a gap wider than the span: it could never apply. */
int ios_store_set_sieve(struct ios_store *st, uint64_t gap, uint64_t span, char *err,
			size_t errlen);
/* The same rule checked alone (a config check before any store opens). */
int ios_store_sieve_check(uint64_t gap, uint64_t span, char *err, size_t errlen);

/* Keep `want` empty files ready, in DIR/spare, to become new objects'
 * files (ios_spare.h; 0: none, every new file is made by its request).
 * Call before lanes work (the daemon: its `spare_files` key). 0, or a
 * negative errno with err saying what failed. */
int ios_store_set_spares(struct ios_store *st, unsigned want, char *err, size_t errlen);
struct ios_spares_stats;
/* What the spares did: 0, or -ENOENT if the store keeps none. */
int ios_store_spares(struct ios_store *st, struct ios_spares_stats *out);

/* Reads and writes: pieces[0..n) in order against `data`, which holds
 * their bytes concatenated. Pieces that lie close together (ascending, gaps
 * up to the sieve gap, within the sieve span) move as one span: reads as one
 * preadv of the span widened to whole blocks, whose checksums are checked
 * before the pieces are copied out; writes by data sieving (read the span,
 * lay the pieces over it, write it back). Other pieces take one call each.
 * A write reads the partial blocks at its ends to checksum them whole.
 * Bytes past the object's end read as zeros. Both return the bytes moved
 * (the pieces' total) or a negative errno (-EIO for a lost object or a
 * checksum that does not match: ios_store_why); *syscalls counts the
 * system calls made (for the daemon's counters). Pieces must not overflow
 * (validated by the caller). */
#define IOS_SIEVE_GAP 4096          /* the defaults of sieve_gap and sieve_span */
#define IOS_SIEVE_SPAN (4u << 20)
ssize_t ios_store_write_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			 size_t n, const uint8_t *data, uint64_t *syscalls);
ssize_t ios_store_read_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			size_t n, uint8_t *data, uint64_t *object_size, uint64_t *syscalls);
/* The object's size and last modification time (write or truncate; by the
 * local file system, so as coarse as its clock); both 0 for a missing
 * object never held (-EIO for a lost one). */
/* blocks (may be NULL): 512-byte blocks the object's data has allocated. */
int ios_store_size(struct ios_store *st, uint64_t handle, uint64_t *size, int64_t *mtime_ns,
		   uint64_t *blocks);
/* Sets the object's size; a missing object is created (and recorded),
 * so the truncate moves its modification time; a lost one is -EIO. */
int ios_store_truncate(struct ios_store *st, uint64_t handle, uint64_t size);
/* Allocate [off, off + len) of the object (made if missing) on the disk;
 * IOS_ALLOC_EXTEND grows a shorter object to off + len as a truncate up
 * does, IOS_ALLOC_KEEP_SIZE leaves its size. -EINVAL for len 0, -EFBIG
 * for an end past INT64_MAX, -EOPNOTSUPP when the file system cannot. */
enum ios_alloc_size { IOS_ALLOC_EXTEND, IOS_ALLOC_KEEP_SIZE };
int ios_store_fallocate(struct ios_store *st, uint64_t handle, uint64_t off, uint64_t len,
			enum ios_alloc_size how);
/* Removes the object, its checksums and counters, and its record. */
int ios_store_remove(struct ios_store *st, uint64_t handle);
/* fdatasync the object, its checksums and counters, the registry if it
 * changed, and the object's directory, so a restart keeps it. */
int ios_store_sync(struct ios_store *st, uint64_t handle);
/* fsid: the file system's f_fsid (daemons sharing one report the same). */
int ios_store_statfs(struct ios_store *st, uint64_t *total, uint64_t *avail, uint64_t *fsid);

/* Counters kept with an object, in a side file beside it (its path plus
 * ".ctr"): up to IOS_COUNTERS (key, value) pairs, the most recently used
 * first; a new key past that many drops the one used longest ago. A key the
 * object does not hold reads as 0. The side file goes with the object
 * (ios_store_remove) and is synced with it (ios_store_sync). IOS_COUNTER_SET stores
 * `value`, IOS_COUNTER_ADD adds it (-EOVERFLOW if the sum would overflow);
 * *old gets the value before. Atomic as long as one lane at a time works
 * on the object. */
#define IOS_COUNTERS 64
enum ios_counter_op { IOS_COUNTER_ADD, IOS_COUNTER_SET };
int ios_store_counter(struct ios_store *st, uint64_t handle, uint64_t key, enum ios_counter_op op,
		int64_t value, int64_t *old);
/* The same for a user: each counter records the uid that made it; a uid
 * (not root) holding `share` of an object's counters gets -EDQUOT for a
 * new key, and a full table drops the least recently used counter of the
 * uid holding the most (so never another user's while one user floods).
 * ios_store_counter is this as root. */
struct ios_counter_owner {
	uint32_t uid;
	uint32_t share;   /* the config's counters_per_uid */
};
int ios_store_counter_as(struct ios_store *st, uint64_t handle, uint64_t key,
			 enum ios_counter_op op, int64_t value,
			 const struct ios_counter_owner *who, int64_t *old);

/* DIR/objects, where the objects live (for ios_list.c). */
const char *ios_store_dir(const struct ios_store *st);

/* ios_list.c: the objects a store holds, for fsck. Up to `max` objects
 * ordered by (low byte of the handle, handle), the first after handle
 * *after in that order (from the start when after is NULL); *eof when no more
 * follow. Only names of objects count (not counters' side files). A
 * listing in pages sees every object that existed throughout. Reads the
 * directories directly (no disk faults apply). */
struct ios_listed {
	uint64_t handle;
	uint64_t size;
	int64_t mtime_ns;
};
int ios_store_list_objects(struct ios_store *st, const uint64_t *after, uint32_t max,
		     struct ios_listed *out, uint32_t *n, int *eof);

#endif /* TESSERA_IOS_STORE_H */
