/*
 * mds_int.h - what the metadata daemon's request handlers share across
 * its files (mds_main.c, the daemon and most handlers; mds_vops.c, the
 * version server's VERSION): the daemon's top-level context and the
 * helpers both use. Internal to server/mds/.
 */
#ifndef TESSERA_MDS_INT_H
#define TESSERA_MDS_INT_H

#include <stdint.h>

#include "cap.h"
#include "daemon.h"
#include "mds_store.h"

struct mds_purge;
struct mds_sizes;
struct mds_versions;
struct mds_vmerger;

/* The daemon's one top-level context (no other mutable global state). */
struct mds {
	struct srv *srv;
	struct mds_store *store;
	struct mds_purge *purge;   /* removes the objects of removed files */
	uint32_t n_ios;
	int root_squash;           /* the config's root_squash */
	uint32_t squash_uid;       /* what a squashed uid 0 acts as */
	uint32_t squash_gids[1];
	struct cap_key key;        /* signs capabilities (cap.h) */
	uint32_t cap_lifetime_ms;
	const char *dir;           /* the store's directory (statfs) */
	int purge_noted;          /* this turn removed a file: purge after the commit */
	struct mds_sizes *sizes;   /* sizes of files no one writes (NULL: none) */
	struct mds_versions *versions; /* the version server's tables (mds_version.h) */
	struct mds_vmerger *vmerge; /* merges idle and full versioned files (NULL: none) */
	int vmerge_noted;          /* this turn committed a version: merger's round after it */
	char commit_err[256];      /* the commit thread's reason, read once it failed */
	unsigned undurable_ticks;  /* ticks since the purger last could run (mds_tick) */
};

/* A store call failed with rc: answered with the store's reason (the one
 * "why" of the store's context, mds_fail). Inline: each file of handlers
 * links alone into the fuzzers, without mds_main.c. */
static inline void mds_reply_store_error(struct mds *mds, struct srv_req *req, int rc)
{
	srv_reply_error(req, rc, "%s", mds_store_errmsg(mds->store));
}

/* VERSION (opcode 58): the version server's ops (mds_vops.c). */
void mds_op_VERSION(void *ctx, struct srv_req *req);

#endif /* TESSERA_MDS_INT_H */
