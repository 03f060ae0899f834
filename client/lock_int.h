/*
 * lock_int.h - what lock.c (the lock API, leases, regions, record locks)
 * and lock_round.c (the messages and rounds of the lock protocols) share.
 * Private to client/.
 */
#ifndef TC_LOCK_INT_H
#define TC_LOCK_INT_H

#include "client_int.h"

#define LK_NONE UINT64_MAX
/* A lock's mode goes on the wire as the API names it (LockAcquireRequest.mode). */
_Static_assert((int)TESSERA_LOCK_READ == (int)TESSERA__LOCK_MODE__LOCK_READ &&
	       (int)TESSERA_LOCK_WRITE == (int)TESSERA__LOCK_MODE__LOCK_WRITE, "lock modes: API = wire");

/* One lock request: the lock's share on one object, or a piece of that
 * share (tessera_lock_list_split: a message's regions, or one region). */
struct lk_part {
	uint32_t slot;
	int server;
	uint64_t handle;
	uint64_t lock_id;          /* 0: not created, or nothing to lock here */
	uint64_t epoch;
	uint64_t last, next;       /* logical; LK_NONE: nothing held / all held */
	int created;
	int describing;            /* a leading description message is out */
	uint64_t *offs, *lens;     /* list: this slot's logical regions */
	size_t n, sent;            /* regions, and how many went out already */
};

struct tessera_lock {
	tessera_file *file;
	tessera_fs *fs;
	int mode, protocol;
	/* datatype: the view, sent once to every object */
	Tessera__Dataloop *ftype_msg;
	int64_t disp;
	uint64_t count, first, last, desc_id;
	size_t nparts;
	struct lk_part *parts;
	uint32_t batch;            /* regions per list message */
	uint64_t group;            /* record lock: its owner (nonzero); 0: a byte-range lock */
	struct tessera_lock_info info;
	char label[64];
};

/* lock.c */
uint64_t tc_lock_owner(tessera_fs *fs);
int tc_lock_lease_hold(tessera_file *f, int server, int delta, uint32_t lease_ms);

/* lock_round.c */
uint32_t tc_lock_max_pairs(const tessera_fs *fs);
int tc_lock_send_try(struct tessera_lock *lk, const size_t *idx, size_t n, int *states);
int tc_lock_run(struct tessera_lock *lk);
int tc_lock_release_all(struct tessera_lock *lk);

#endif
