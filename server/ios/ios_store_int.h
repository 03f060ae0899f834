/*
 * ios_store_int.h - what the store's files share inside server/ios/:
 * the store and its lanes (ios_store.c), its store file (ios_store_file.c)
 * and its counters (ios_counter.c). Nothing outside the store includes
 * it; the store's interface is ios_store.h.
 */
#ifndef IOS_STORE_INT_H
#define IOS_STORE_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "ios_store.h"

struct ios_fd {
	uint64_t handle;
	int fd;            /* the data file; -1: slot free */
	int sums;          /* the checksum file; -1: not open yet (set by the
			    * lane that holds the slot busy) */
	int fresh;         /* the data file was a spare moved in by this open:
			    * the object is new, its checksum file too */
	uint64_t used;     /* clock of last use, for eviction */
	unsigned busy;     /* lanes using the descriptors now: not evicted */
};

/* What the lanes of a store share, under `mu`: the descriptor cache, the
 * registry and the counters. The disk calls on an object's descriptors
 * are made outside the lock by the lane holding its slot busy; the caller
 * (ios_pool.c) sees that two lanes never work on one object at once. */
struct ios_store_shared {
	pthread_mutex_t mu;
	unsigned max_open;
	struct ios_fd *fds;
	uint64_t clock;
	struct ios_registry *reg;
	struct ios_store_faults faults;
	unsigned lanes;    /* lanes open besides the store itself */
	uint64_t sieve_gap;  /* ios_store_set_sieve; set before any lane works */
	uint64_t sieve_span;
	uint32_t csum_block; /* the store's checksum block (its store file's;
			      * fixed at open, the same for every lane) */
	struct ios_spares *spares; /* new objects' files made ahead (NULL:
				    * none); ios_store_set_spares */
};

struct ios_store {
	struct ios_store_shared *sh;
	int is_lane;       /* a lane: sh, root and dir are the store's */
	struct ios_disk *disk;  /* the caller's; every disk call goes here */
	char *root;        /* DIR */
	char *dir;         /* DIR/objects */
	int remade;        /* made where a store had been: see ios_store.h */
	int64_t made_s;    /* when the store was made (seconds since 1970) */
	uint8_t *buf;      /* this lane's scratch for reads and sieved writes */
	size_t buf_len;
	uint8_t *block;    /* this lane's one checksum block (a partial block
			    * read, laid over and summed), csum_block bytes */
	int quiet;         /* ios_store_missing: a question, counted nowhere */
	char why[4800];    /* ios_store_why (holds a path), this lane's */
};

/* The file of object `handle` with `suffix` ("", ".sum", ".ctr"). */
void store_object_path(const struct ios_store *st, uint64_t handle, const char *suffix,
		       char *buf, size_t len);

/* The whole of iov[0..n) at offset through the store's disk, retrying
 * short transfers (reads stop at end of file); bytes moved or -errno,
 * each disk call counted in *syscalls. */
ssize_t store_full_read(struct ios_store *st, int fd, struct iovec *iov, int n,
			uint64_t offset, uint64_t *syscalls);
ssize_t store_full_write(struct ios_store *st, int fd, struct iovec *iov, int n,
			 uint64_t offset, uint64_t *syscalls);

/* Find or make the store in st->root (see IOS_STORE_NEW), with checksum
 * blocks of `want` bytes (0: the store's own; TP_OBJ_BLOCK for a new
 * one); `existed`: the directory was there. 0, or a negative errno with
 * err saying why; *notice (if notice) a message for the log. */
int store_init(struct ios_store *st, int existed, unsigned flags, uint32_t want,
	       char **notice, char *err, size_t errlen);

#endif
