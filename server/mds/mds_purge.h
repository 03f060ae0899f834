/*
 * mds_purge.h - the metadata daemon's purger: it removes the storage
 * objects of removed files, as a client of the storage daemons.
 *
 * Unlink and rename-over-a-file record a purge intent in the batch that
 * removes the name (mds_store.h), and the daemon notes the file to the
 * purger once that batch is synced (mds_purge_note). The purger, driven by
 * the daemon core's tick and by the daemon after a commit, sends REMOVE for the objects an intent names to each storage
 * daemon holding some, over its own tnet endpoint, one request in flight
 * per storage daemon (several intents' objects in one request), and
 * shrinks the intent as each daemon acknowledges. A daemon that does not
 * answer (down, restarting) is retried with exponential backoff; since the
 * intents are in LevelDB, a restart of the metadata daemon resumes where
 * it stopped. REMOVE of an object already gone succeeds, so replaying an
 * acknowledged-but-unrecorded removal is harmless.
 */
#ifndef TESSERA_MDS_PURGE_H
#define TESSERA_MDS_PURGE_H

#include "tproto.h"

struct mds_store;
struct mds_purge;
struct cap_key;

/* `cfg`, `store` and `key` must outlive the purger. Each REMOVE carries a
 * remove capability for its objects, signed with `key` (the storage
 * daemons serve REMOVE only with one). On failure `err` says why. */
int mds_purge_create(const struct tp_config *cfg, struct mds_store *store,
		     const struct cap_key *key, struct mds_purge **out, char *err,
		     size_t errlen);
void mds_purge_destroy(struct mds_purge *p);

/* File `file` lost its last name, and its intent is written (durable by
 * the end of the loop turn: the purger sends nothing but from
 * mds_purge_tick, which the daemon calls after the turn's commit): its `count`
 * objects (objects[i] on storage daemon servers[i]) are to go. Queued per
 * storage daemon, so the purger reads nothing from the store for them; a
 * queue that overflows makes that daemon's slot read the store instead. */
void mds_purge_note(struct mds_purge *p, uint64_t file, uint32_t count, const uint32_t *servers,
		    const uint64_t *objects);

/* Whether some storage daemon has a whole REMOVE's worth of files
 * noted (PURGE_FILES of them): worth a round before the next tick. */
int mds_purge_batch_ready(const struct mds_purge *p);

/* One round: take replies and send completions, expire requests, send
 * REMOVE to every idle storage daemon that has intents and whose backoff
 * ended. Never blocks. `log` (may be NULL) gets one line per failure
 * (when a storage daemon starts failing, not on every retry). */
void mds_purge_tick(struct mds_purge *p, void (*log)(void *arg, const char *line),
		    void *arg);

#endif /* TESSERA_MDS_PURGE_H */
