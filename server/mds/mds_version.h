/*
 * mds_version.h - the version server of versioned files (issue 25,
 * docs/design.md "Versioning (chapter 8)"): the metadata daemon orders the
 * writes of a versioned file by their commits and hands out read versions.
 *
 * Per file, a table: the counter V (the newest commit's version), the next
 * ID#, the live ID#s with the session that owns each, the commits not yet
 * merged on every object they wrote {T, Vm, handles, which are merged},
 * the reads in progress {Vr, session} and the snapshots {name, version,
 * ctime}. No network: the daemon (mds_vops.c) checks the capability and
 * that the file is versioned, then calls one of these and encodes the
 * answer.
 *
 * Durability: V, the next ID#, every commit, the snapshots and the merged
 * floor are written through the metadata store's batch path (mds_store.h:
 * synchronous, or unsynced and synced by the daemon's group commit before
 * any reply leaves), before the call returns 0. A table is loaded from the
 * store at its file's first use after a start. Live ID#s and reads in
 * progress are not kept: after a restart every ID# handed out before is
 * forgotten (its commits answer -ESTALE: the client takes a new ID# and
 * writes again), and reads begun before pin nothing.
 *
 * Invariants of a table: commits are kept in Vm order, Vm = 1..V, each T
 * at most once; a commit leaves the table (and the store) once every one
 * of its handles reported it merged; `merged` (the floor) is the highest
 * version at or below which no commit is left; at most MDS_VERSION_*
 * of each kind. The merge bound (upto) never passes a read in progress or
 * a snapshot, so a merge never removes a version someone still reads.
 *
 * Every function returns 0 or a negative errno; after an error
 * mds_versions_errmsg says what failed, naming the file (%016llx).
 */
#ifndef TESSERA_MDS_VERSION_H
#define TESSERA_MDS_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "tproto.h"

struct mds_store;
struct cap_key;

/* Limits per file (EBUSY past the first three, EINVAL past the rest). */
#define MDS_VERSION_COMMITS 4096   /* unmerged commits: "merge first" */
#define MDS_VERSION_READS 1024     /* reads in progress */
#define MDS_VERSION_IDS 1024       /* live ID#s (TP_VERSION_MAX_IDS) */
#define MDS_VERSION_ID_COUNT 1024  /* ID#s one VERSION_ID asks for */
#define MDS_VERSION_SNAPS 64       /* snapshots */
#define MDS_VERSION_SNAP_NAME 255  /* bytes of a snapshot's name (1..) */
/* Per daemon: tables in memory, and unmerged commits in them. A table
 * with no live ID# and no read in progress holds nothing that is not in
 * the store: it may go, and is read back at its next use. Past these,
 * with none to let go: -EBUSY. */
#define MDS_VERSION_TABLES 65536
#define MDS_VERSION_ALL_COMMITS (1u << 20)
/* ID#s a session's end ended that a table remembers (most recent): their
 * commits answer -ESTALE (take a new ID#), not -EPERM. */
#define MDS_VERSION_ORPHANS 64

/* The file a call is about: its handle and layout (slot i: handles[i]). */
struct mds_vfile {
	uint64_t file;
	uint32_t count;
	const uint64_t *handles;
};

struct mds_versions;

/* The tables of one daemon over `st`. Commits are signed with `key`;
 * `vmap_bytes` bounds the encoded size of a file's unmerged commits (a
 * reply carries them all: keep it under the frame's size), `grant_ns` is
 * how long a merge grant holds (a capability's lifetime). NULL: no memory. */
struct mds_versions *mds_versions_new(struct mds_store *st, const struct cap_key *key,
				      size_t vmap_bytes, int64_t grant_ns);
void mds_versions_free(struct mds_versions *vs);
/* Other per-daemon bounds than MDS_VERSION_TABLES and _ALL_COMMITS (the
 * tests' small ones). */
void mds_versions_set_bounds(struct mds_versions *vs, uint32_t tables, uint64_t commits);
const char *mds_versions_errmsg(const struct mds_versions *vs);

/* VERSION_ID: `count` (1..MDS_VERSION_ID_COUNT) new ID#s for `session`,
 * *first..*first+count-1 (the next ID# is durable first). */
int mds_version_ids(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		    uint32_t count, uint32_t *first);
/* VERSION_ID_END: ID# `id` of `session` is done with. One no longer live
 * (ended, forgotten by a restart) is no error; another session's: -EPERM. */
int mds_version_id_end(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		       uint64_t id);

/* ID#s for a job (issue 25: the MPI driver takes one per rank in one
 * call and broadcasts them). VERSION_ID's answer names the ID#s handed
 * out in a block signed with the daemons' key (cap_sign_ids); another
 * session holding the block may commit under an ID# of it while the ID#
 * is live, i.e. until its taker ends it (ID_END, of it or of the block)
 * or the taker's session ends. */
struct mds_vids {
	Tessera__VersionIds msg;
	uint8_t mac[TP_CAP_MAC_LEN];
};
/* mds_version_ids, and *out the signed block (its mac points into out). */
int mds_version_ids_signed(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			   uint32_t count, struct mds_vids *out);
/* VERSION_ID_END of a block: every live ID# of `ids` (which must verify
 * and be f's: else -EPERM) ends; one live ID# of it another session's:
 * -EPERM, nothing ended (only the taker ends them). */
int mds_version_ids_end(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			const Tessera__VersionIds *ids);

/* VERSION_COMMIT: T `t` (ID# << 32 | IO#, IO# >= 1) of a live ID# of
 * `session` wrote layout slots slots[0..n) (each < f->count): *vm its
 * version, *out the signed commit. The same T again (a resend) answers
 * the same version. -EPERM: an ID# never handed out, ended, or another
 * session's ("forged commit"); -ESTALE: an ID# of before the version
 * server's restart or ended with its session; -EBUSY: MDS_VERSION_COMMITS
 * unmerged (merge first).
 * *out's handles and mac point into the table (valid until it changes). */
int mds_version_commit(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		       uint64_t t, const uint32_t *slots, size_t n, Tessera__VersionCommit *out);
/* mds_version_commit by an ID# of block `ids` (NULL: the session's own,
 * as above), which may be another session's: the block must verify, be
 * f's and hold t's ID# (else -EPERM, "forged commit"), and the ID# be
 * live (else -ESTALE: its taker ended it or its session ended, or the
 * version server restarted; the writer takes its own ID# and writes
 * again). A resend of a commit in the table passes on a block that holds
 * its ID#, live or not. */
int mds_version_commit_as(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			  const Tessera__VersionIds *ids, uint64_t t, const uint32_t *slots,
			  size_t n, Tessera__VersionCommit *out);

/* VERSION_READ: a read of `session` begins at *vr, the newest version, or
 * with `name` (non-NULL, non-empty) the snapshot's; `end_read` (0: none)
 * ends an earlier read of the session first. -ENOENT: no such snapshot;
 * -EBUSY: MDS_VERSION_READS in progress. */
int mds_version_read(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		     const char *name, uint64_t end_read, uint64_t *vr);
/* VERSION_READ_END: the read of `session` at `vr` is over (none: no error). */
int mds_version_read_end(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			 uint64_t vr);

/* The unmerged commits with Vm <= upto, signed, in Vm order: *out (a
 * malloc'd array of pointers into the table, free() it; NULL when none)
 * and *n. */
int mds_version_vmap(struct mds_versions *vs, const struct mds_vfile *f, uint64_t upto,
		     Tessera__VersionCommit ***out, size_t *n);

/* A signed merge grant; its live_ids and mac point into it. */
struct mds_vgrant {
	Tessera__VersionGrant msg;
	uint32_t live[MDS_VERSION_IDS];
	uint8_t mac[TP_CAP_MAC_LEN];
};
/* VERSION_MERGE: the grant: upto = min(newest, lowest read in progress,
 * lowest snapshot), the next ID# and the live ones, expiring `grant_ns`
 * after now_ns. The caller sends every unmerged commit with it
 * (mds_version_vmap with UINT64_MAX). */
int mds_version_merge(struct mds_versions *vs, const struct mds_vfile *f, int64_t now_ns,
		      struct mds_vgrant *out);
/* VERSION_MERGED: object `handle` (of the layout) merged every commit up
 * to `version` (no further than a merge may go now: -EINVAL). Commits
 * merged on all their objects leave the table, durably. */
int mds_version_merged(struct mds_versions *vs, const struct mds_vfile *f, uint64_t handle,
		       uint64_t version);

/* Snapshots: name 1..MDS_VERSION_SNAP_NAME bytes, no NUL (-EINVAL).
 * Create: names the newest version (*version), -EEXIST, -EBUSY past
 * MDS_VERSION_SNAPS; drop: -ENOENT. */
int mds_version_snap_create(struct mds_versions *vs, const struct mds_vfile *f,
			    const char *name, int64_t now_ns, uint64_t *version);
int mds_version_snap_drop(struct mds_versions *vs, const struct mds_vfile *f, const char *name);
/* The snapshots, in version order (then name): *out a malloc'd array
 * (free() it) whose names point into the table; *n. */
int mds_version_snap_list(struct mds_versions *vs, const struct mds_vfile *f,
			  Tessera__VersionSnapshot **out, size_t *n);

/* VERSION_STATE. */
struct mds_vstate {
	uint64_t newest;    /* V */
	uint64_t merged;    /* the floor */
	uint32_t next_id;
	uint32_t unmerged, reads, ids, snaps;
};
int mds_version_state(struct mds_versions *vs, const struct mds_vfile *f, struct mds_vstate *out);

/* A session ended: its live ID#s and reads in progress end, in every
 * table. Returns how many of both. `dead` (may be NULL) is called with
 * each file whose writer ID#s ended, so that its storage daemons may drop
 * their uncommitted records (the merger's round: mds_vmerge_dead). */
uint32_t mds_versions_session_end(struct mds_versions *vs, uint64_t session,
				  void (*dead)(void *arg, uint64_t file), void *arg);

/* The file is gone (its last name removed; the store's batch dropped its
 * records): forget its table. */
void mds_versions_forget(struct mds_versions *vs, uint64_t file);

/* The first file >= `from` with unmerged commits in the store (the
 * merger's scan after a start): 1 and *file, 0 when none, or a negative
 * errno. One seek per versioned file stepped over. */
int mds_versions_next_unmerged(struct mds_versions *vs, uint64_t from, uint64_t *file);

#endif /* TESSERA_MDS_VERSION_H */
