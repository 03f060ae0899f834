/*
 * mds_version_int.h - what the version server's two halves share:
 * mds_vtables.c (the tables: their LevelDB records, signing, loading,
 * the table cache and the merger's scan) and mds_version.c (the
 * operations on them: ID#s, commits, reads, merges, snapshots, sessions).
 * Not a public header: the daemon sees mds_version.h only.
 */
#ifndef TESSERA_MDS_VERSION_INT_H
#define TESSERA_MDS_VERSION_INT_H

#include <leveldb/c.h>

#include "cap.h"
#include "mds_store_int.h"
#include "mds_version.h"
#include "tessera.pb-c.h"

#define VT_BUCKETS 256
#define VT_KEY_MAX (1 + 8 + 1 + MDS_VERSION_SNAP_NAME)
#define VT_STATE_LEN 20

struct vcommit {
	uint64_t t, vm;
	uint32_t n;
	uint64_t *handles;          /* n, in slot order */
	uint8_t *merged;            /* n: 1 once that object merged it */
	uint8_t mac[TP_CAP_MAC_LEN];
	size_t enc;                 /* its bytes in a reply's vmap */
};

struct vid {
	uint32_t id;
	uint64_t session;
};

struct vread {
	uint64_t vr;
	uint64_t session;
};

struct vsnap {
	char name[MDS_VERSION_SNAP_NAME + 1];
	uint64_t version;
	int64_t ctime_ns;
};

struct vtable {
	uint64_t file;
	uint64_t v;                 /* the newest commit's version */
	uint64_t floor;             /* no commit <= floor is left */
	uint32_t next_id;           /* the next ID# handed out (from 1) */
	/* ID#s below this were handed out before this daemon started:
	 * forgotten (-ESTALE), not forged. */
	uint32_t first_id;
	struct vcommit *commits;    /* Vm order */
	uint32_t ncommits, ccommits;
	size_t vmap_bytes;          /* sum of their enc */
	struct vid *ids;
	uint32_t nids, cids;
	struct vread *reads;
	uint32_t nreads, creads;
	struct vsnap *snaps;
	uint32_t nsnaps, csnaps;
	/* ID#s ended by their session's end, most recent (a ring). */
	uint32_t orphans[MDS_VERSION_ORPHANS];
	uint32_t norphans, orphan_next;
	struct vtable *next;        /* hash chain */
};

struct mds_versions {
	struct mds_store *st;
	const struct cap_key *key;
	size_t vmap_max;
	int64_t grant_ns;
	struct vtable *buckets[VT_BUCKETS];
	uint32_t ntables;           /* in the buckets */
	uint64_t ncommits;          /* unmerged commits of those tables */
	uint32_t cursor;            /* the bucket eviction looks at next */
	uint32_t max_tables;        /* MDS_VERSION_TABLES */
	uint64_t max_commits;       /* MDS_VERSION_ALL_COMMITS */
	char err[MDS_ERRMSG_LEN];
};

/* What vt_make_room makes room for. */
enum room_for { ROOM_TABLE, ROOM_COMMIT };

#define FILE_FMT "versioned file %016llx"
#define FILE_ARG(f) (unsigned long long)(f)

/* Sets the message mds_versions_errmsg returns; returns rc. */
int vt_fail(struct mds_versions *vs, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Room for one more in the array whose pointer is at arrp (capacity
 * doubling). 0 or -ENOMEM. */
int vt_grow(void *arrp, uint32_t n, uint32_t *cap, size_t size);
void vt_commit_free(struct vcommit *c);

/* Records into a batch: the state record of t, commit c of `file` (put
 * or delete), and a snapshot's key (its length). */
void vt_put_state(leveldb_writebatch_t *b, const struct vtable *t);
int vt_put_commit(leveldb_writebatch_t *b, uint64_t file, const struct vcommit *c);
void vt_del_commit(leveldb_writebatch_t *b, uint64_t file, uint64_t vm);
size_t vt_snap_key(unsigned char *key, uint64_t file, const char *name);
/* Writes batch b through the store (durable before any reply), then
 * frees it; `op` names the change in an error. */
int vt_write_batch(struct mds_versions *vs, leveldb_writebatch_t *b, const char *op,
		   uint64_t file);

/* Commit c of t as the signed message a storage daemon checks, and its
 * signature (with its size in a reply noted in c). */
void vt_commit_msg(const struct vtable *t, const struct vcommit *c, Tessera__VersionCommit *m);
int vt_commit_sign(struct mds_versions *vs, const struct vtable *t, struct vcommit *c);

/* The table cache: whether `what` is over its bound, making room by
 * letting idle tables but `keep` go, and file f's table, loaded at its
 * first use. */
int vt_over(const struct mds_versions *vs, enum room_for what);
int vt_make_room(struct mds_versions *vs, const struct vtable *keep, enum room_for what);
int vt_table_of(struct mds_versions *vs, const struct mds_vfile *f, struct vtable **out);

#endif /* TESSERA_MDS_VERSION_INT_H */
