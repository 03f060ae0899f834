/*
 * mds_logsync.h - the commit's sync of LevelDB's write-ahead logs, with
 * their descriptors kept open between commits.
 *
 * A change written unsynced is in LevelDB's current log; the commit makes
 * it durable by syncing every log in the store's directory (usually one;
 * two while LevelDB switches). Listing the directory and opening the log
 * at every commit cost 7 system calls around each fdatasync, on the
 * latency of every change. Here the logs' descriptors stay open, and an
 * inotify watch of the directory says when a log appeared or went: only
 * then is it listed again. The watch's events are queued by the system
 * call that makes the file, before any change written to it, so a commit
 * that reads them (each does, without blocking) sees every log that may
 * hold a change it covers. Where inotify cannot be had (no watches left),
 * or with MDS_LOGSYNC_SCAN, and after a listing failed (the directory
 * gone), the directory is listed at every commit.
 *
 * One caller at a time: the commit thread, or the store at close.
 */
#ifndef MDS_LOGSYNC_H
#define MDS_LOGSYNC_H

#include <stddef.h>

/* How a logsync learns of new logs. */
enum mds_logsync_mode {
	MDS_LOGSYNC_WATCH,   /* inotify; listing at every commit without it */
	MDS_LOGSYNC_SCAN,    /* list the directory at every commit */
};

struct mds_logsync;

/* NULL when out of memory. */
struct mds_logsync *mds_logsync_new(const char *dir, enum mds_logsync_mode mode);
void mds_logsync_free(struct mds_logsync *ls);
/* fdatasync every log of the directory: 0, or -EIO with err saying which
 * file and why. A log gone since it was opened (compacted away: its
 * changes are in a table LevelDB synced) is no failure. */
int mds_logsync_run(struct mds_logsync *ls, char *err, size_t errlen);
/* The logs it holds open now (for tests), and whether it watches. */
size_t mds_logsync_open_logs(const struct mds_logsync *ls);
int mds_logsync_watching(const struct mds_logsync *ls);

#endif
