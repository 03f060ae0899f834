/*
 * ios_quota.c - the lock table's per-uid shares (ios_quota.h).
 *
 * A charge record per live request, found by its lock id (to release it)
 * and listed under its owner (a lease's expiry releases them all), and a
 * usage entry per uid holding any.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ios_quota.h"

#define Q_ID_BUCKETS (1u << 16)  /* power of 2 */
#define Q_OWNER_BUCKETS 4096     /* power of 2 */
#define Q_UID_BUCKETS 256        /* power of 2 */

struct q_charge {
	uint64_t lock_id, owner;
	uint32_t uid;
	size_t bytes;
	struct q_charge *id_next;               /* lock id chain */
	struct q_charge *own_prev, *own_next;   /* owner chain */
};

struct q_uid {
	uint32_t uid;
	uint64_t requests, bytes;
	uint32_t pending;           /* descriptions in progress */
	uint64_t pending_ranges;    /* their capacity */
	struct q_uid *next;
};

struct ios_lockq {
	struct ios_lockq_limits lim;
	struct q_charge *by_id[Q_ID_BUCKETS];
	struct q_charge *by_owner[Q_OWNER_BUCKETS];
	struct q_uid *uids[Q_UID_BUCKETS];
};

static unsigned mix(uint64_t x, unsigned buckets)
{
	return (unsigned)((x * 0x9e3779b97f4a7c15ull) >> 40) & (buckets - 1);
}

int ios_lockq_create(const struct ios_lockq_limits *lim, struct ios_lockq **out)
{
	struct ios_lockq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->lim = *lim;
	*out = q;
	return 0;
}

static struct q_uid **uid_slot(struct ios_lockq *q, uint32_t uid)
{
	struct q_uid **pp = &q->uids[mix(uid, Q_UID_BUCKETS)];

	while (*pp && (*pp)->uid != uid)
		pp = &(*pp)->next;
	return pp;
}

/* uid's entry, made if needed (NULL: no memory). */
static struct q_uid *uid_get(struct ios_lockq *q, uint32_t uid)
{
	struct q_uid **up = uid_slot(q, uid);

	if (!*up && (*up = calloc(1, sizeof(**up))))
		(*up)->uid = uid;
	return *up;
}

/* Free uid's entry once it holds nothing. */
static void uid_put(struct ios_lockq *q, uint32_t uid)
{
	struct q_uid **up = uid_slot(q, uid), *u = *up;

	if (u && !u->requests && !u->pending && !u->pending_ranges) {
		*up = u->next;
		free(u);
	}
}

int ios_lockq_admit(struct ios_lockq *q, uint32_t uid, size_t bytes, char *why, size_t len)
{
	const struct q_uid *u = *uid_slot(q, uid);
	uint64_t reqs = u ? u->requests : 0, held = u ? u->bytes : 0;

	if (uid == 0)
		return 0;
	if (reqs + 1 > q->lim.requests) {
		snprintf(why, len, "uid %" PRIu32 " holds %" PRIu64 " lock requests, the per-user "
			 "limit (lock_requests_per_uid)", uid, reqs);
		return -EDQUOT;
	}
	if (held + bytes > q->lim.bytes) {
		snprintf(why, len, "uid %" PRIu32 "'s lock requests hold %" PRIu64 " bytes of the "
			 "lock table and this one needs %zu; the per-user limit "
			 "(lock_bytes_per_uid) is %" PRIu64, uid, held, bytes, q->lim.bytes);
		return -EDQUOT;
	}
	return 0;
}

int ios_lockq_charge(struct ios_lockq *q, uint64_t lock_id, uint64_t owner, uint32_t uid,
		     size_t bytes)
{
	struct q_charge *c = calloc(1, sizeof(*c)), **head;
	struct q_uid *u = c ? uid_get(q, uid) : NULL;

	if (!u) {
		free(c);
		return -ENOMEM;
	}
	u->requests++;
	u->bytes += bytes;
	c->lock_id = lock_id;
	c->owner = owner;
	c->uid = uid;
	c->bytes = bytes;
	head = &q->by_id[mix(lock_id, Q_ID_BUCKETS)];
	c->id_next = *head;
	*head = c;
	head = &q->by_owner[mix(owner, Q_OWNER_BUCKETS)];
	c->own_next = *head;
	if (*head)
		(*head)->own_prev = c;
	*head = c;
	return 0;
}

/* Uncharge c (already off its lock id chain) and free it. */
static void charge_drop(struct ios_lockq *q, struct q_charge *c)
{
	struct q_uid *u = *uid_slot(q, c->uid);

	if (c->own_prev)
		c->own_prev->own_next = c->own_next;
	else
		q->by_owner[mix(c->owner, Q_OWNER_BUCKETS)] = c->own_next;
	if (c->own_next)
		c->own_next->own_prev = c->own_prev;
	if (u) {
		u->requests--;
		u->bytes -= c->bytes;
		uid_put(q, c->uid);
	}
	free(c);
}

/* Take the record of lock_id off its chain: it, or NULL. */
static struct q_charge *id_unlink(struct ios_lockq *q, uint64_t lock_id)
{
	for (struct q_charge **pp = &q->by_id[mix(lock_id, Q_ID_BUCKETS)]; *pp;
	     pp = &(*pp)->id_next)
		if ((*pp)->lock_id == lock_id) {
			struct q_charge *c = *pp;

			*pp = c->id_next;
			return c;
		}
	return NULL;
}

void ios_lockq_release(struct ios_lockq *q, uint64_t lock_id)
{
	struct q_charge *c = id_unlink(q, lock_id);

	if (c)
		charge_drop(q, c);
}

void ios_lockq_release_owner(struct ios_lockq *q, uint64_t owner)
{
	struct q_charge *c = q->by_owner[mix(owner, Q_OWNER_BUCKETS)], *next;

	for (; c; c = next) {
		next = c->own_next;
		if (c->owner == owner && id_unlink(q, c->lock_id))
			charge_drop(q, c);
	}
}

int ios_lockq_pending_admit(struct ios_lockq *q, uint32_t uid, char *why, size_t len)
{
	const struct q_uid *u = *uid_slot(q, uid);

	if (uid == 0 || !u || u->pending < q->lim.pending)
		return 0;
	snprintf(why, len, "uid %" PRIu32 " has %" PRIu32 " lock descriptions in progress, the "
		 "per-user limit (lock_pending_per_uid)", uid, u->pending);
	return -EDQUOT;
}

int ios_lockq_pending_add(struct ios_lockq *q, uint32_t uid, int delta)
{
	struct q_uid *u = delta > 0 ? uid_get(q, uid) : *uid_slot(q, uid);

	if (!u)
		return delta > 0 ? -ENOMEM : 0;
	u->pending += (uint32_t)delta;
	uid_put(q, uid);
	return 0;
}

int ios_lockq_pending_ranges(struct ios_lockq *q, uint32_t uid, int64_t more)
{
	struct q_uid *u = more > 0 ? uid_get(q, uid) : *uid_slot(q, uid);

	if (!u)
		return more > 0 ? -ENOMEM : 0;
	if (more > 0 && uid != 0 && u->pending_ranges + (uint64_t)more > q->lim.pending_ranges) {
		uid_put(q, uid);
		return -EDQUOT;
	}
	u->pending_ranges += (uint64_t)more;
	uid_put(q, uid);
	return 0;
}

void ios_lockq_destroy(struct ios_lockq *q)
{
	if (!q)
		return;
	for (unsigned b = 0; b < Q_ID_BUCKETS; b++)
		while (q->by_id[b]) {
			struct q_charge *c = q->by_id[b];

			q->by_id[b] = c->id_next;
			charge_drop(q, c);
		}
	for (unsigned b = 0; b < Q_UID_BUCKETS; b++)
		while (q->uids[b]) { /* descriptions still in progress */
			struct q_uid *u = q->uids[b];

			q->uids[b] = u->next;
			free(u);
		}
	free(q);
}
