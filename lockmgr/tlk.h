/*
 * tlk.h - Tessera lock manager: byte-range list and datatype locks, the
 * server side of the dissertation's distributed lock manager (§7.4.2).
 *
 * A pure library: no I/O, no network, no threads, no global state. A storage
 * daemon keeps one table (struct tlk_table) and feeds it the lock requests
 * it receives; the table answers at once, or parks a blocking request and
 * reports it later, when a release (or a cancel, or an owner's expiry) lets
 * it finish. The table is not thread-safe: one caller at a time.
 *
 * ------------------------------------------------------------ the model
 *
 * A request names a storage object (64-bit handle), an owner (a client
 * session id), a mode (read or write) and its ranges: (object offset, length,
 * logical offset) triples in ascending order, without overlap. The logical
 * offset is the file offset of the range's first byte; byte k of a range is at
 * object offset `offset + k` and logical offset `logical + k`, so a range must
 * not cross a strip boundary (the caller splits there). Ranges must ascend in
 * object and in logical offsets alike; striping keeps both orders the same
 * within one object. Every request on one object must use the same mapping
 * (the object's layout); the table checks each request's own ranges but
 * cannot compare mappings between requests.
 *
 * Conflicts are per byte of an object: a write lock conflicts with every other
 * request's lock on that byte, a read lock only with write locks (single
 * writer or shared readers). Locks are exact bytes, never rounded. Requests
 * conflict whoever owns them; the owner only groups requests for
 * tlk_release_owner(). One exception, for record locks (POSIX fcntl and
 * flock locks, whose owner never conflicts with itself): requests created
 * with the same owner and the same nonzero `group` never conflict with
 * each other, neither by their locks nor by the fairness rule. So such an
 * owner changes a lock (upgrade, downgrade, split) by taking the new
 * requests first and releasing the old ones after, and nobody else ever
 * sees the bytes free in between. Grouped requests may overlap in the
 * write tree; every other pair still cannot. Grouped requests are granted
 * as POSIX grants: whenever no conflicting lock is held; the fairness rule
 * below does not hold them back (else an owner could not split or
 * downgrade bytes it holds while a library request waits for them), so a
 * stream of record locks can keep a parked request waiting, as waiters
 * on a local file system can be kept waiting.
 *
 * A request wants its bytes in increasing offset order and always holds a
 * prefix of them: every wanted byte before its *position*, none from it on.
 * So the answer to any call is two logical offsets, as in the dissertation:
 *   last_abs_offset  the last byte held (TLK_NONE when nothing is held),
 *   next_abs_offset  the first byte wanted and not held, i.e. the position
 *                    (TLK_NONE when every byte is held).
 * A range may be held in part (byte granularity): the position can fall
 * inside a range.
 *
 * The table assigns each request a lock id, unique in the table and never
 * reused; lock ids also give a request's age (lower = older). A request
 * lives from tlk_request_create() to a full release, through any number of
 * acquires and partial releases (the dissertation's "later requests with the
 * same request number").
 *
 * --------------------------------------------------------------- acquire
 *
 * tlk_acquire(id, flags, upto) grants wanted bytes from the position on, in
 * increasing order, and never a byte at or past the logical offset `upto`
 * (exclusive; TLK_NONE means no cap). Granting stops at the first byte that is
 *   (a) held by another request in a conflicting mode, or
 *   (b) reserved for an older parked request, by the fairness rule below.
 *
 * Nonblocking (flags 0): the answer comes at once: GRANTED when every byte is
 * held, else PARTIAL. The request keeps what it got (a "nonblocking waiter":
 * later releases never extend it; only a later acquire does).
 *
 * Blocking (TLK_BLOCKING): "reached" means every wanted byte below `upto` is
 * held. If the grant reaches `upto`, the answer comes at once (GRANTED or
 * PARTIAL). If not, the request is *parked* and the call answers WAITING;
 * whenever a later call frees bytes, the table grants parked requests what
 * they can (oldest first), and one that reaches its `upto` is un-parked and
 * reported as an event of that call (tlk_events()). A blocking grant never
 * goes past `upto`, even when the bytes there are free: that cap is what keeps
 * waits ordered (below).
 *
 * --------------------------------------------------------------- release
 *
 * Full release (tlk_release) drops every lock of a request and forgets it.
 * Partial release (tlk_release_from, offset m) drops the bytes at logical
 * offsets >= m and moves the position back to the first wanted byte >= m; the
 * request stays (this is the optimistic round's "release out-of-order
 * locks"). tlk_release_owner drops every request of an owner (lease expiry).
 * tlk_cancel ends a parked request's wait (its deadline passed): it keeps
 * what it holds and becomes a nonblocking waiter. After each of these the
 * table grants parked requests what they can; see tlk_events().
 *
 * --------------------------------------------------------------- events
 *
 * Every mutating call (create, acquire, the releases, cancel) first empties
 * the table's event list, then records one event for each parked request whose
 * wait ended during the call, other than the request the call itself names:
 * GRANTED or PARTIAL when it reached its `upto` (answer its parked call with
 * last/next), GONE when it was destroyed by tlk_release_owner (fail its parked
 * call). A call on a parked request itself (acquire again, partial release,
 * cancel) ends that request's wait too; the call's own answer then says where
 * it stands, and a full release of a parked request leaves its parked call
 * for the caller to fail. The list stays valid until the next mutating call.
 * Recording events never allocates: room for one event per parked request is
 * reserved when a request parks.
 *
 * ------------------------------------------- fairness (rule (b) above)
 *
 * A parked request W "waits at" its position p(W), the first byte it wants
 * and lacks. For a request N younger than W whose mode conflicts with W's:
 *   - a blocking grant of N stops at byte p(W) exactly: no younger request
 *     takes the byte an older one is waiting at;
 *   - a nonblocking grant of N stops at any byte W still wants below its
 *     `upto`: an optimistic round never takes what an older waiter waits for.
 * Older requests and requests that do not conflict are not held back.
 *
 * No starvation. Once W waits at byte x, no younger conflicting request is
 * granted x. The locks on x that W waits for were granted before W got
 * there, or belong to older requests; there are finitely many of both (ids
 * only grow), and each is released in finite time (deadlock freedom below,
 * plus leases: every owner eventually releases or expires). So W gets x, and
 * its position moves strictly up. W wants finitely many bytes below its
 * `upto`, so it reaches it after finitely many releases, however many younger
 * requests keep arriving. The bound is per byte, not a constant: a younger
 * *blocking* request may still take a byte W wants above p(W) (a younger
 * nonblocking one may not), and W may then wait for it there.
 *
 * Why no more than that: plain FIFO per byte deadlocks. H holds [0,1) and
 * waits at 5; N holds [5,6) and waits at 10 behind the older W; W wants
 * [0,20) and waits at 0 behind H. Holding N back at any byte above p(W)
 * allows such a cycle; holding it back at p(W) only does not (next).
 *
 * --------------------------------------------------------- deadlock freedom
 *
 * Assumption (the client's half, which the ordered two-phase, one-try and
 * alt-try protocols of §7.3/§7.4.1 keep): while a client waits on a parked
 * request at logical offset p, it holds no byte at a logical offset >= p, in
 * any request, on any server. (The optimistic round releases every lock
 * >= m = min(next_abs_offset) before the client blocks; a blocking round asks
 * for [m, m2) with m2 the next-smallest next_abs_offset, and the table's cap
 * at `upto` = m2 keeps it from taking anything >= m2.) Nonblocking acquires
 * never wait, so they add no edge to any wait cycle.
 *
 * Claim: no set of clients can wait for each other in a cycle. A parked
 * request C waiting at p(C) waits only for:
 *   - holders of byte p(C) in a conflicting mode: such a holder's client D,
 *     if it waits at all, waits at p(D) > p(C), since it holds p(C) and holds
 *     nothing at or above p(D);
 *   - older parked requests D waiting at the same byte: p(D) = p(C) and D is
 *     older.
 * So along every wait edge the pair (p, age) strictly increases (p first,
 * then older): a cycle would have to return to a smaller pair, impossible.
 * Every chain of waits ends at a client that does not wait, which releases
 * in finite time, so every parked request is eventually answered (and
 * §7.3's one-try and alt-try make progress: each blocking round gets at
 * least the client's next byte). Without the cap at `upto` the assumption
 * fails: client C wants [0,50) and [70,100) on server A, [50,70) on B. Its
 * blocking round on A, meant to stop at 50, would take [70,100) as well;
 * C then waits at 50 on B, where D holds [50,60) while waiting at 70 on A,
 * held by C: a cycle. (test_blocking_grant_capped shows the capped run.)
 *
 * ---------------------------------------------------------- data structures
 *
 * Per object (§7.4.2, Fig. 7.2): a read tree and a write tree (red-black
 * interval trees, O(log n) insert, delete and lowest-conflict lookup); the
 * dissertation's queues as lists: all requests, granted requests, waiting
 * requests tagged nonblocking, and parked (blocking-tagged) requests kept in
 * age order. A request's locks are chained by construction: it holds one
 * interval per range at most, in a node stored beside the range, and the
 * held ones are a prefix of its array, so a release visits exactly its k
 * locks (O(k log n)), and a partial release only those it drops. Objects,
 * owners and requests are found by hash (O(1)). An object lives while it has
 * requests.
 *
 * Costs, with n locks held on the object and W requests parked on it: an
 * acquire inserts one node per range it reaches (O(log n) each) and looks up
 * the lowest refused byte once per stretch without conflict (O(log n + W)),
 * so an uncontended acquire of k ranges costs O(k log n + W); a release of k
 * locks O(k log n), plus one grant attempt per parked request on the object.
 * tests/bench/bench_tlk.c measures it.
 *
 * ------------------------------------------------------ memory and errors
 *
 * All memory comes from the table's allocator (malloc unless configured) and
 * is counted against limits.max_bytes; a request also obeys max_ranges and
 * max_requests. Only tlk_table_create, tlk_request_create and a blocking
 * tlk_acquire may allocate; each fails with -ENOMEM (or -E2BIG for too many
 * ranges) before changing anything. Releases and cancels never allocate and
 * never fail except on an unknown id. Any `answer` argument may be NULL.
 * Functions return 0 or a negative errno:
 *   -EINVAL  a malformed argument (ranges not ascending, empty or wrapping;
 *            unknown mode or flags);
 *   -ENOENT  no such lock id (or object, for tlk_object_stats);
 *   -E2BIG   more ranges than limits.max_ranges;
 *   -ENOMEM  the allocator failed, or a limit on requests or bytes was hit.
 * Nothing aborts.
 */
#ifndef TESSERA_TLK_H
#define TESSERA_TLK_H

#include <stddef.h>
#include <stdint.h>

/* "No offset": last_abs_offset when nothing is held, next_abs_offset when
 * everything is, and `upto` for no cap. No byte can sit at this offset. */
#define TLK_NONE UINT64_MAX

/* tlk_acquire flags. */
#define TLK_BLOCKING 1u

enum tlk_mode {
	TLK_READ = 1,
	TLK_WRITE = 2,
};

enum tlk_state {
	TLK_GRANTED = 0, /* holds every byte it wants */
	TLK_PARTIAL = 1, /* holds a prefix (maybe empty) and is not parked */
	TLK_WAITING = 2, /* parked: a blocking acquire short of its `upto` */
	TLK_GONE = 3,    /* events only: the request was released with its owner */
};

/* One range of a request: object bytes [offset, offset + length), whose
 * first byte is at file offset `logical`. length >= 1; neither end may wrap
 * past UINT64_MAX. */
struct tlk_range {
	uint64_t offset;
	uint64_t length;
	uint64_t logical;
};

/* Where a request stands (logical offsets). */
struct tlk_answer {
	enum tlk_state state;
	uint64_t last_abs_offset; /* last byte held; TLK_NONE if none */
	uint64_t next_abs_offset; /* first byte wanted, not held; TLK_NONE if none */
};

/* A parked request whose wait ended during a call (see "events"). */
struct tlk_event {
	uint64_t lock_id;
	uint64_t object;
	uint64_t owner;
	void *cookie;             /* as given to the tlk_acquire that parked it */
	struct tlk_answer answer; /* GRANTED, PARTIAL or GONE */
};

/* Where memory comes from. free gets the size that was asked for. */
struct tlk_alloc {
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
	void *ctx;
};

/* Limits; 0 means none (beyond what the allocator gives). */
struct tlk_limits {
	size_t max_ranges;   /* per request: -E2BIG beyond */
	size_t max_requests; /* live requests per table: -ENOMEM beyond */
	size_t max_bytes;    /* memory the table holds: -ENOMEM beyond */
};

struct tlk_config {
	struct tlk_limits limits;
	const struct tlk_alloc *alloc; /* NULL: malloc and free */
};

struct tlk_table;

/* A new, empty table. cfg may be NULL (no limits, malloc). The allocator
 * struct must outlive the table. */
int tlk_table_create(const struct tlk_config *cfg, struct tlk_table **out);

/* Frees the table and everything in it (parked requests get no event). */
void tlk_table_destroy(struct tlk_table *t);

/* Registers a request holding nothing (state PARTIAL, position at its first
 * byte) and returns its lock id. The ranges are copied. */
int tlk_request_create(struct tlk_table *t, uint64_t object, uint64_t owner,
		       enum tlk_mode mode, const struct tlk_range *ranges,
		       size_t count, uint64_t *lock_id);

/* The same, in a record-lock group (see "the model"): requests of this
 * owner and this group never conflict with each other; group 0 is none. */
int tlk_request_create_grouped(struct tlk_table *t, uint64_t object, uint64_t owner,
			       uint64_t group, enum tlk_mode mode,
			       const struct tlk_range *ranges, size_t count, uint64_t *lock_id);

/* Grants what the rules allow from the request's position, below `upto`
 * (logical, exclusive; TLK_NONE: no cap), and answers. flags: 0
 * (nonblocking) or TLK_BLOCKING. A blocking call that falls short parks the
 * request (answer WAITING, `cookie` kept for its event). Calling it on a
 * parked request ends that wait first (no event for it) and starts over with
 * the new flags and `upto`. On an error nothing changed. */
int tlk_acquire(struct tlk_table *t, uint64_t lock_id, unsigned flags,
		uint64_t upto, void *cookie, struct tlk_answer *answer);

/* Full release: drops every lock of the request and forgets its id. */
int tlk_release(struct tlk_table *t, uint64_t lock_id);

/* Partial release: drops the bytes at logical offsets >= from and answers
 * where the request now stands (a parked request stops waiting). */
int tlk_release_from(struct tlk_table *t, uint64_t lock_id, uint64_t from,
		     struct tlk_answer *answer);

/* Ends a parked request's wait, keeping what it holds, and answers where it
 * stands; on a request that is not parked it only answers. */
int tlk_cancel(struct tlk_table *t, uint64_t lock_id, struct tlk_answer *answer);

/* Full release of every request of `owner` (its lease expired). Parked ones
 * become GONE events. *released (may be NULL) counts the requests dropped. */
int tlk_release_owner(struct tlk_table *t, uint64_t owner, size_t *released);

/* The events of the last mutating call: *events points into the table and
 * stays valid until the next mutating call (it may be NULL when there are
 * none). Returns their count. */
size_t tlk_events(const struct tlk_table *t, const struct tlk_event **events);

/* The lowest lock that a request of (owner, group, mode) on object bytes
 * [offset, offset + length) would conflict with (fcntl's F_GETLK): 0 with
 * *found set and the lock's mode and held object bytes [start, end), or 0
 * with *found 0 when none. Locks of the owner's own group do not count;
 * parked requests (the fairness rule) do not either. Changes nothing.
 * -EINVAL for an empty or wrapping range or an unknown mode. */
struct tlk_conflict {
	int found;
	enum tlk_mode mode;
	uint64_t start, end;
};

int tlk_test(const struct tlk_table *t, uint64_t object, uint64_t owner, uint64_t group,
	     enum tlk_mode mode, uint64_t offset, uint64_t length, struct tlk_conflict *out);

/* ---------------------------------------------------------- introspection */

struct tlk_request_info {
	uint64_t object;
	uint64_t owner;
	enum tlk_mode mode;
	struct tlk_answer answer; /* state GRANTED, PARTIAL or WAITING */
	uint64_t upto;            /* parked: its final offset; else TLK_NONE */
	size_t ranges;            /* ranges it wants */
	size_t held_locks;        /* intervals it holds (<= ranges) */
	uint64_t held_bytes;
};

int tlk_request_info(const struct tlk_table *t, uint64_t lock_id,
		     struct tlk_request_info *info);

struct tlk_stats {
	size_t objects;    /* objects with requests (whole table; 1 per object) */
	size_t requests;   /* live requests */
	size_t granted;    /* ... holding everything */
	size_t waiting;    /* ... not parked, not holding everything */
	size_t parked;     /* ... parked blocking requests */
	size_t read_locks; /* intervals in the read trees */
	size_t write_locks;
	uint64_t read_bytes; /* bytes held by read locks (counted per holder) */
	uint64_t write_bytes;
	size_t memory;       /* bytes the table holds (whole table only) */
};

void tlk_table_stats(const struct tlk_table *t, struct tlk_stats *stats);

/* The same for one object; -ENOENT when it has no requests. memory is 0. */
int tlk_object_stats(const struct tlk_table *t, uint64_t object,
		     struct tlk_stats *stats);

/* Memory one request with `ranges` ranges takes (for checks against limits
 * before creating it). */
size_t tlk_request_footprint(size_t ranges);

/* Checks every invariant (tree shape and augmentation, no conflicting locks,
 * queues and counters agree with the requests, parked requests short of
 * their `upto` and in age order). O(everything); for tests. 0 or -EFAULT. */
int tlk_table_check(const struct tlk_table *t);

#endif
