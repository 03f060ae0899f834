/*
 * ios_store.h - a storage daemon's objects on its local file system.
 *
 * Object `handle` is the file DIR/objects/XX/HHHHHHHHHHHHHHHH (XX the low
 * byte of the handle, H the handle in hex), created on first write. A
 * missing object reads as empty. Open descriptors are cached (least
 * recently used goes first). Every disk call goes through the struct
 * ios_disk given at open (ios_disk.h). Pure storage: no network.
 */
#ifndef TESSERA_IOS_STORE_H
#define TESSERA_IOS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct ios_store;
struct ios_disk;

/* `disk` stays the caller's and must outlive the store. */
int ios_store_open(const char *dir, unsigned max_open, struct ios_disk *disk,
		   struct ios_store **out, char **errmsg);
void ios_store_close(struct ios_store *st);

/* An object byte range. */
struct ios_piece {
	uint64_t offset;
	uint64_t length;
};

/* Reads and writes: pieces[0..n) in order against `data`, which holds
 * their bytes concatenated. Pieces that lie close together (ascending, gaps
 * up to IOS_SIEVE_GAP, within IOS_SIEVE_SPAN) move as one span: reads as one
 * preadv of up to IOV_MAX iovecs, the gaps landing in a scratch buffer;
 * writes by data sieving (read the span, lay the pieces over it, write it
 * back). Other pieces take one call each. Bytes past the object's end read
 * as zeros. Both return the bytes moved (the pieces' total) or a negative
 * errno; *syscalls counts the system calls made (for the daemon's
 * counters). Pieces must not overflow (validated by the caller). */
#define IOS_SIEVE_GAP 4096
#define IOS_SIEVE_SPAN (4u << 20)
ssize_t ios_write_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			 size_t n, const uint8_t *data, uint64_t *syscalls);
ssize_t ios_read_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			size_t n, uint8_t *data, uint64_t *object_size, uint64_t *syscalls);
/* The object's size and last modification time (write or truncate; by the
 * local file system, so as coarse as its clock); both 0 for a missing
 * object. */
int ios_size(struct ios_store *st, uint64_t handle, uint64_t *size, int64_t *mtime_ns);
/* Sets the object's size; a missing object is created, so the truncate
 * moves its modification time. */
int ios_truncate(struct ios_store *st, uint64_t handle, uint64_t size);
int ios_remove(struct ios_store *st, uint64_t handle);
/* fdatasync the object and its directory, so a restart keeps it. */
int ios_sync(struct ios_store *st, uint64_t handle);
int ios_statfs(struct ios_store *st, uint64_t *total, uint64_t *avail);

/* Counters kept with an object, in a side file beside it (its path plus
 * ".ctr"): up to IOS_COUNTERS (key, value) pairs, the most recently used
 * first; a new key past that many drops the one used longest ago. A key the
 * object does not hold reads as 0. The side file goes with the object
 * (ios_remove) and is synced with it (ios_sync). `set` stores `value`, else
 * it is added (-EOVERFLOW if the sum would overflow); *old gets the value
 * before. Atomic as long as one caller at a time uses the store. */
#define IOS_COUNTERS 64
int ios_counter(struct ios_store *st, uint64_t handle, uint64_t key, int set, int64_t value,
		int64_t *old);

/* DIR/objects, where the objects live (for ios_list.c). */
const char *ios_store_dir(const struct ios_store *st);

/* ios_list.c: the objects a store holds, for fsck. Up to `max` objects
 * ordered by (low byte of the handle, handle), the first after handle
 * `after` in that order (from the start when !resume); *eof when no more
 * follow. Only names of objects count (not counters' side files). A
 * listing in pages sees every object that existed throughout. Reads the
 * directories directly (no disk faults apply). */
struct ios_listed {
	uint64_t handle;
	uint64_t size;
	int64_t mtime_ns;
};
int ios_list_objects(struct ios_store *st, int resume, uint64_t after, uint32_t max,
		     struct ios_listed *out, uint32_t *n, int *eof);

#endif /* TESSERA_IOS_STORE_H */
