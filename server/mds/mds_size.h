/*
 * mds_size.h - sizes the metadata daemon keeps, in memory only, for files
 * no one is writing (docs/design.md, "Sizes kept by the metadata
 * daemon"), so a stat of a closed file asks no storage daemon.
 *
 * Per file: how many opens for writing it has granted and not seen
 * closed, and, once a stat reported what the storage daemons answered
 * while that count was 0, the size (with blocks and the data's mtime).
 * Invariant: a size is kept only if no capability with WRITE may have
 * changed the objects since the storage daemons answered it: every grant
 * with WRITE, close of a writer and truncate forgets it and changes the
 * token a report must present; a writer the daemon cannot count (granted
 * before a restart, or evicted from the table, or whose count went with
 * a session that ended) can write only until its capability expires, and
 * no report is taken until then ("quiet").
 * Losing an entry only makes the size unknown: the client asks the
 * storage daemons, as before.
 */
#ifndef MDS_SIZE_H
#define MDS_SIZE_H

#include <stdint.h>

/* The most files the table holds (about 100 bytes each); the least
 * recently used one goes first. */
#define MDS_SIZE_ENTRIES 65536
/* Sessions per file whose counted opens are known by session: when one
 * of them ends (its client died or left), the file's writers are no
 * longer counted (mds_sizes_session_end). */
#define MDS_SIZE_SESSIONS 4
/* Counted opens of one file beyond this are not counted: the file stays
 * "unknown" until the daemon restarts (a bound, not a plausible load). */
#define MDS_SIZE_MAX_WRITERS 1000000u

struct mds_sizes;

/* What a stat of a regular file answers besides its attributes. */
struct mds_size_view {
	int known;             /* size, blocks and data_mtime_ns hold */
	uint64_t size;
	uint64_t blocks;
	int64_t data_mtime_ns;
	uint64_t token;        /* !known: a report presents it (0: none wanted) */
};

/* A table of at most `entries` files; `quiet_ns` is the capabilities'
 * lifetime (how long an uncounted writer may write), `now_ns` the
 * daemon's real-time clock at start (no report is taken before now_ns +
 * quiet_ns: the writers of before a restart are unknown). NULL: no
 * memory (the daemon runs without, every size unknown). */
struct mds_sizes *mds_sizes_new(uint32_t entries, int64_t quiet_ns, int64_t now_ns);
void mds_sizes_free(struct mds_sizes *t);

/* An open of `file` for writing was granted to `session` (0: none): one
 * more writer. The token its close presents (0: not counted; the file
 * stays unknown). */
uint64_t mds_sizes_writer_open(struct mds_sizes *t, uint64_t file, uint64_t session,
			       int64_t now_ns);
/* A capability with WRITE for `file` was renewed, expiring at expires_ns:
 * its holder may not be counted (a writer of before a restart), so no
 * report is taken until then. */
void mds_sizes_renewed(struct mds_sizes *t, uint64_t file, int64_t expires_ns, int64_t now_ns);
/* A writer closed `file`, presenting `token`; one it does not match
 * (another incarnation of the entry) counts nothing. `seen` (NULL: none)
 * is the size it saw after its last write: kept if it was the only
 * counted writer since the count was last 0 and no uncounted one may
 * write. */
void mds_sizes_writer_close(struct mds_sizes *t, uint64_t file, uint64_t token,
			    uint64_t session, const struct mds_size_view *seen, int64_t now_ns);
/* A writer closed `file` having changed nothing through its open (no
 * write, no truncate): if it was the only writer since the count was 0,
 * the size known before its open stands again. Otherwise as a close that
 * saw nothing. */
void mds_sizes_writer_close_unwritten(struct mds_sizes *t, uint64_t file, uint64_t token,
				      uint64_t session, int64_t now_ns);
/* `session` ended while it held counted opens for writing (a client that
 * died before closing): each such file's writers are no longer counted,
 * as after a restart, but for that file alone: its closes of before count
 * nothing and no report is taken for a capability's lifetime; then its
 * size can be known again without a restart. The files so treated. */
uint32_t mds_sizes_session_end(struct mds_sizes *t, uint64_t session, int64_t now_ns);
/* `file`'s objects or attributes changed otherwise (truncate): unknown. */
void mds_sizes_forget(struct mds_sizes *t, uint64_t file);
/* A stat of regular file `file`: what the table knows (*out). */
void mds_sizes_stat(struct mds_sizes *t, uint64_t file, int64_t now_ns,
		    struct mds_size_view *out);
/* A report of what the storage daemons answered a stat that got `token`:
 * 0 if kept, -ESTALE if anything changed since (or the token is not the
 * file's), -EAGAIN if writers may exist. */
int mds_sizes_report(struct mds_sizes *t, uint64_t file, uint64_t token, int64_t now_ns,
		     const struct mds_size_view *seen);
/* Entries held (tests). */
uint32_t mds_sizes_count(const struct mds_sizes *t);

#endif
