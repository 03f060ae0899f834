/*
 * mds_vmerge.h - the version server's merger (issue 25, docs/design.md
 * "Versioning (chapter 8)", Merges): the metadata daemon merges the logs
 * of versioned files into their objects by itself, without a client's
 * fsync or close.
 *
 * A file is due (mds_vmerge_due, pure) when it has unmerged commits and
 * no commit came for `vmerge_idle_ms`, or it has `vmerge_commits`
 * unmerged, or a storage daemon said one of its logs passed
 * `vmerge_log_percent` of a limit (a write's reply, passed on by the
 * client in its commit: VersionRequest.log_half), or a session holding
 * writer ID#s of it ended (mds_vmerge_dead: the lease of a client that
 * died; the round's grant no longer lists those ID#s, so the storage
 * daemons drop their uncommitted records). The daemon notes every
 * commit (mds_vmerge_note); after a start the merger also finds the files
 * the store holds unmerged commits of (a few per tick).
 *
 * A merge is what a client's is (client/vers.c, tc_vers_merge): for each
 * object of the layout a VLOG MERGE to its storage daemon carrying a
 * merge grant (mds_version_merge: never past a read in progress or a
 * snapshot, with the live ID#s) and the unmerged commits naming it, then
 * the same bookkeeping as VERSION_MERGED (mds_version_merged) with the
 * version the daemon merged up to. The requests go over mds_peers.h (its
 * own endpoint and sessions, one request in flight per storage daemon,
 * backoff); the merger signs its own capability (WRITE, VERSIONED, to the
 * daemons' uid). At most one merge per file and `vmerge_files` at once;
 * an object whose daemon fails is given up for this round and the file
 * tried again later (its other objects' merges count). Driven by the
 * daemon's tick and by the end of each loop turn that committed a
 * version; never blocks. Its MERGED bookkeeping goes through the store
 * like a request's and is synced with the next turn's group commit; one
 * a crash loses is merged again, harmlessly (a storage daemon skips
 * commits at or below its merged version and answers that version).
 */
#ifndef TESSERA_MDS_VMERGE_H
#define TESSERA_MDS_VMERGE_H

#include <stdint.h>

#include "tproto.h"

struct mds_store;
struct mds_versions;
struct mds_vfile;
struct cap_key;
struct mds_vmerger;

/* ------------------------------------------------------ the due rule */

struct mds_vmerge_rule {
	uint64_t idle_ns;           /* no commit this long (vmerge_idle_ms) */
	uint32_t commits;           /* this many unmerged (vmerge_commits) */
};
/* What the merger knows of a file. */
struct mds_vmerge_seen {
	uint32_t unmerged;          /* commits not merged on all their objects */
	uint64_t last_commit_ns;    /* monotonic */
	int log_half;               /* a storage daemon asked for a merge */
	uint64_t not_before_ns;     /* a round failed, or a read or snapshot
				     * held it: not before this */
	int dead_ids;               /* writer ID#s of it ended: records to drop */
};
enum mds_vmerge_why {
	MDS_VMERGE_NOT_DUE,
	MDS_VMERGE_LOG_HALF,        /* a log passed its share of a limit */
	MDS_VMERGE_COMMITS,         /* rule.commits unmerged */
	MDS_VMERGE_IDLE,            /* no commit for rule.idle_ns */
	MDS_VMERGE_DEAD_IDS         /* ended ID#s' uncommitted records to drop */
};
/* Whether (and why) a file is due for a merge at now_ns. */
enum mds_vmerge_why mds_vmerge_due(const struct mds_vmerge_rule *r,
				   const struct mds_vmerge_seen *s, uint64_t now_ns);

/* ------------------------------------------------------ the merger */

/* `cfg`, `store`, `vs` and `key` outlive the merger. On failure `err`
 * says why. */
int mds_vmerge_create(const struct tp_config *cfg, struct mds_store *store,
		      struct mds_versions *vs, const struct cap_key *key,
		      struct mds_vmerger **out, char *err, size_t errlen);
void mds_vmerge_destroy(struct mds_vmerger *m);

/* File f (its objects on storage daemons servers[i]) got a commit at
 * now_ns (monotonic); log_half: the client said a log is past its share. */
void mds_vmerge_note(struct mds_vmerger *m, const struct mds_vfile *f, const uint32_t *servers,
		     uint64_t now_ns, int log_half);
/* The file is gone (removed): nothing more is sent for it. */
/* A session that held writer ID#s of file `file` ended (its client closed,
 * died or let its session lapse): the file is due for a round, even with
 * nothing to merge, so that its storage daemons drop the ID#s'
 * uncommitted records now rather than at its next merge. */
void mds_vmerge_dead(struct mds_vmerger *m, uint64_t file);

void mds_vmerge_forget(struct mds_vmerger *m, uint64_t file);

/* One round: replies in, due files started, requests out. `log` (may be
 * NULL) gets a line per failure. */
void mds_vmerge_tick(struct mds_vmerger *m, void (*log)(void *arg, const char *line), void *arg);

#endif /* TESSERA_MDS_VMERGE_H */
