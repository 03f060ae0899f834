/*
 * mds_lease.h - name leases: which watching sessions hold what, and what
 * each must be told (docs/design.md, "Name leases").
 *
 * A session that watches (WATCH) is recorded as holding a lease on every
 * handle a LOOKUP, CREATE, MKDIR or CLOSE_WRITE reply told it of (the
 * directories its walk passed and what the path names). When anyone else
 * changes one of those handles (a write of its attributes or entries, a
 * writer counted), the lease is broken: the handle goes into the holder's
 * list of changes, and its parked WATCH, if any, is woken to carry them.
 * The holder forgets what it had of them; it also forgets everything when
 * its lease lapses (no WATCH answered for lease_ms), so a holder cut off
 * from the daemon is never staler than that.
 *
 * Bounded: at most `per_session` handles held by one session and
 * MDS_LEASE_CHANGES changes waiting for it (past either, it is told to
 * forget everything: `all`), and MDS_LEASE_TOTAL held by all sessions
 * (past it, the session holding the most forgets everything). A session
 * that stops watching is dropped after two leases.
 *
 * Pure bookkeeping (no I/O): the WATCH handler (mds_watch.c) parks and
 * answers requests; `wake` tells it that a parked one has news.
 */
#ifndef MDS_LEASE_H
#define MDS_LEASE_H

#include <stdint.h>

#define MDS_LEASE_CHANGES 256u
#define MDS_LEASE_TOTAL (1u << 22)
#define MDS_LEASE_PER_SESSION 65536u

struct mds_leases;

/* A parked WATCH of `session` (`parked`, the handler's) has news. */
typedef void (*mds_lease_wake_fn)(void *arg, uint64_t session, void *parked);

/* NULL without memory. lease_ms 0: leases are off (nothing is granted). */
struct mds_leases *mds_leases_new(uint32_t lease_ms, uint32_t per_session,
				  mds_lease_wake_fn wake, void *wake_arg);
void mds_leases_free(struct mds_leases *t);
uint32_t mds_leases_ms(const struct mds_leases *t);

/* A WATCH of `session` arrived at `now` (monotonic seconds): its watcher,
 * made if new (then it must forget everything). 0, -ENOMEM (too many
 * watchers: answer with `all`, nothing is leased), -EOPNOTSUPP (off). */
int mds_leases_watch(struct mds_leases *t, uint64_t session, double now);
/* What the watcher has to be told: up to max changed handles into out
 * (*n), *all when it must forget everything, and the answer's number
 * (*seq; 0 without a watcher). It stays to be told again until the
 * watcher acknowledges this answer. Returns whether there is anything. */
int mds_leases_take(struct mds_leases *t, uint64_t session, uint64_t *out, uint32_t max,
		    uint32_t *n, int *all, uint64_t *seq);
/* The watcher's WATCH says it applied answer `seen` (0: none): what that
 * told is done. Returns 1 if the floor rose (replies may leave). */
int mds_leases_acked(struct mds_leases *t, uint64_t session, uint64_t seen, double now);

/*
 * Breaks that wait (docs/design.md, "Breaks that wait"). A session whose
 * change told others gets their acknowledgement before its replies
 * leave, so once it is answered no holder answers from what it held
 * before: each change told is numbered, and a reply waits while its
 * session's latest number is at or above the floor, the oldest news any
 * watcher has not acknowledged. News older than a lease (from when the
 * tick first saw it) no longer counts: its holder's lease has lapsed.
 */
/* The number a reply to `session` waits for (0: none). */
uint64_t mds_leases_need(const struct mds_leases *t, uint64_t session);
uint64_t mds_leases_floor(const struct mds_leases *t);
/* Each tick: news older than a lease lapses. 1 if the floor rose. */
int mds_leases_lapse(struct mds_leases *t, double now);
/*
 * Bars. A holder that lets news lapse unacknowledged (stopped, cut off,
 * or hostile: one that holds the root and never answers would hold every
 * create there up for a lease) is barred by the tick that sees it lapse:
 * what it holds is dropped without news, it is told to forget everything,
 * and nothing is granted to it for 2 leases, then 4, 8, ... 64 at its
 * session's later bars. Such a session thus costs others' changes one
 * lease per bar, not one per change; a barred client asks the daemon, as
 * one without leases does.
 */
/* Whether `session` is barred now (the latest time given). */
int mds_leases_barred(const struct mds_leases *t, uint64_t session);
/* Whether `session` watches (its replies may carry leases). */
int mds_leases_watching(struct mds_leases *t, uint64_t session);
/* Whether the watcher has anything to be told (or is gone). */
int mds_leases_news(struct mds_leases *t, uint64_t session);
/* The watcher's parked WATCH (NULL: none); the previous one is returned
 * (the caller answers it). Without a watcher, `parked` is returned. */
void *mds_leases_park(struct mds_leases *t, uint64_t session, void *parked);
/* The watcher's parked WATCH, or NULL. */
void *mds_leases_parked(struct mds_leases *t, uint64_t session);

/* Record that `session` holds leases on h[0..n): 1 if it does (it
 * watches, and each is recorded), 0 if the reply must not say leased. */
int mds_leases_grant(struct mds_leases *t, uint64_t session, const uint64_t *h, uint32_t n);
/* `handle` changed, by `by` (a session, which is not told of its own
 * change; 0: the daemon itself). */
void mds_leases_break(struct mds_leases *t, uint64_t handle, uint64_t by);

/* The session ended, or watchers silent for two leases at `now`: dropped
 * (a parked WATCH of theirs is answered `all` by its own expiry). */
void mds_leases_session_end(struct mds_leases *t, uint64_t session);
void mds_leases_expire(struct mds_leases *t, double now);

/* Counts, for tests and `tessera ping`: watchers, handles held. */
uint32_t mds_leases_watchers(const struct mds_leases *t);
uint64_t mds_leases_held(const struct mds_leases *t);

#endif
