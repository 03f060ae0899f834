/*
 * mds_int.h - what the metadata daemon's request handlers share across
 * its files (mds_main.c, the daemon and most handlers; mds_reply.c, what
 * replies are made of; mds_cap.c, open files by handle; mds_vops.c, the
 * version server's VERSION; mds_xattr_ops.c, extended attributes): the
 * daemon's top-level context and the helpers they use. Internal to server/mds/.
 */
#ifndef TESSERA_MDS_INT_H
#define TESSERA_MDS_INT_H

#include <stdint.h>

#include "cap.h"
#include "daemon.h"
#include "mds_size.h"
#include "mds_store.h"

struct mds_purge;
struct mds_sizes;
struct mds_versions;
struct mds_leases;
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
	struct mds_sizes *sizes;   /* sizes of files no one writes (NULL: none) */
	struct mds_versions *versions; /* the version server's tables (mds_version.h) */
	struct mds_vmerger *vmerge; /* merges idle and full versioned files (NULL: none) */
	struct mds_leases *leases; /* name leases (mds_lease.h; NULL: none) */
	uint64_t acting;           /* the session whose request is being handled (0: none) */
	uint32_t watch_park_ms;    /* how long a WATCH with no news waits (mds_watch.c) */
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

/* Who acts: the session's identity, which munged vouched for. Only a
 * privileged session (uid 0: the FUSE mount, a root process that set a
 * thread's credentials) acts for whoever the body's Cred names; anyone
 * else's Cred is ignored. An effective uid 0 then becomes
 * squash_uid/squash_gid under root_squash, and always for a session of
 * root from a host that is not an admin host (srv_ident.foreign_root):
 * such a session acts for other users but is never root itself. out->gids
 * points into req, in or mds, which outlive it. */
static inline void mds_cred_of(const struct mds *mds, const struct srv_req *req,
			       const Tessera__Cred *in, struct mds_cred *out)
{
	if (req->ident.uid == 0 && in) {
		out->uid = in->uid;
		out->ngids = (uint32_t)in->n_gids;
		out->gids = in->gids;
	} else {
		out->uid = req->ident.uid;
		out->ngids = req->ident.ngids;
		out->gids = req->ident.gids;
	}
	if ((mds->root_squash || req->ident.foreign_root) && out->uid == 0) {
		out->uid = mds->squash_uid;
		out->ngids = 1;
		out->gids = mds->squash_gids;
	}
}

/* VERSION (opcode 58): the version server's ops (mds_vops.c). */
void mds_op_VERSION(void *ctx, struct srv_req *req);

/* Name leases (mds_watch.c, mds_lease.h). WATCH (opcode 61); the
 * watcher's wake-up (mds_lease_wake_fn, arg the daemon). */
void mds_op_WATCH(void *ctx, struct srv_req *req);
void mds_watch_wake(void *arg, uint64_t session, void *parked);
/* Breaks that wait (mds_lease.h): srv_role.reply_need and acks_floor, and
 * each tick's lapse of news no holder acknowledged within a lease. */
uint64_t mds_reply_need(void *ctx, const struct srv_req *req);
uint64_t mds_acks_floor(void *ctx);
void mds_watch_tick(struct mds *mds);

/* What a reply leases: the handle alone (a close, by handle), or the
 * directories the store's last walk passed and the handle it named. */
enum mds_lease_what { LEASE_HANDLE, LEASE_WALK_AND_HANDLE, LEASE_WALK };

struct mds_lease_part {
	int leased;
	uint32_t n_walk;
	uint64_t walk[MDS_WALKED_MAX + 1];
};

/* Grant req's session leases on what a reply tells it (if it watches):
 * called right after the store call whose walk it leases, before any
 * other walk. *out says what the reply carries (mds_lease_fill). */
void mds_lease_note(struct mds *mds, const struct srv_req *req, uint64_t handle,
		    enum mds_lease_what what, struct mds_lease_part *out);
void mds_lease_fill(const struct mds_lease_part *lease, Tessera__AttrReply *rep);

/* ---- replies (mds_reply.c) */

/* Layout and attributes, store -> message. `servers`/`handles` back the
 * repeated fields and must outlive the message. */
struct attr_msg {
	Tessera__Attr attr;
	Tessera__Layout layout;
	uint32_t servers[TP_MAX_STRIPE];
	uint64_t handles[TP_MAX_STRIPE];
};

/* What a layout message carries: a file's whole layout, or a directory's
 * default (strip size and count, no objects). */
enum layout_part { LAYOUT_WITH_OBJECTS, LAYOUT_DIR_DEFAULT };

/* A signed capability and what backs it (the handles are a's layout's). */
struct cap_msg {
	Tessera__Capability cap;
	uint8_t mac[TP_CAP_MAC_LEN];
};

/* What an AttrReply says besides the attributes: a regular file's size
 * (mds_size.h), and the name leases granted with it (NULL: none). */
struct size_part {
	struct mds_size_view view;  /* a stat's */
	uint64_t write_token;       /* an open for writing's */
	const struct mds_lease_part *lease;
};

/* A reply's parent part: the attributes of the directory it changed. */
struct parent_part {
	int have;
	struct mds_attr a;
	struct attr_msg m;
};

void mds_layout_msg(const struct mds_layout *l, struct attr_msg *m, enum layout_part part);
void mds_attr_msg(const struct mds_attr *a, struct attr_msg *m);
/* Grant `rights` on file a's objects (NULL: every object, the admin
 * capability) to cred's uid, for the configured lifetime; the caller
 * checked the permission. 0 or a negative errno. */
int mds_grant(struct mds *mds, const struct mds_cred *cred, const struct mds_attr *a,
	      uint32_t rights, struct cap_msg *out);
/* The directory a change of path left (calloc'd; its `have` 0 when it
 * could not be read), and its message for a reply (NULL: none). */
struct parent_part *mds_parent_part_of(struct mds *mds, const struct mds_cred *cred,
				       const char *path);
Tessera__Attr *mds_parent_msg(struct parent_part *p);
/* An AttrReply of a: sp (NULL: no size, no lease) and parent (NULL: none)
 * beside the attributes; mds_reply_attr with no size and no parent. */
void mds_reply_attr_sized(struct srv_req *req, const struct mds_attr *a, int created,
			  const Tessera__Capability *cap, const struct size_part *sp,
			  struct parent_part *parent);
void mds_reply_attr(struct srv_req *req, const struct mds_attr *a, int created,
		    const Tessera__Capability *cap, const struct mds_lease_part *lease);
/* Root of a host that is not an admin host asked for `what`: refused. */
void mds_reply_not_admin_host(struct srv_req *req, const char *what);

/* CAP, CLOSE_WRITE, SIZE_REPORT: open files by handle (mds_cap.c). */
void mds_op_CAP(void *ctx, struct srv_req *req);
void mds_op_CLOSE_WRITE(void *ctx, struct srv_req *req);
void mds_op_SIZE_REPORT(void *ctx, struct srv_req *req);

/* XATTR_GET, _LIST, _SET, _REMOVE: extended attributes (mds_xattr_ops.c). */
void mds_op_XATTR_GET(void *ctx, struct srv_req *req);
void mds_op_XATTR_LIST(void *ctx, struct srv_req *req);
void mds_op_XATTR_SET(void *ctx, struct srv_req *req);
void mds_op_XATTR_REMOVE(void *ctx, struct srv_req *req);

#endif /* TESSERA_MDS_INT_H */
