/*
 * lock_round.c - the messages and rounds of the lock protocols (lock.c's
 * header comment describes them): acquires, partial and full releases,
 * and the two-phase, one-try and alt-try orders of rounds that take every
 * part of a lock without deadlock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

/* ------------------------------------------------------------ messages */

/* The largest number of (offset, length) pairs one message carries: the
 * frame's room at 20 bytes a pair (two varints at worst). */
uint32_t tc_lock_max_pairs(const tessera_fs *fs)
{
	size_t room = tp_config_max_frame(&fs->cfg) - 4096;

	return (uint32_t)(room / 20);
}

static void acquire_msg(struct tessera_lock *lk, struct lk_part *p,
			Tessera__LockAcquireRequest *m, Tessera__DtypeIORequest *view)
{
	const struct tessera_layout *l = &lk->file->layout;

	tessera__lock_acquire_request__init(m);
	m->session = tc_lock_owner(lk->fs);
	m->epoch = p->created ? p->epoch : 0;
	m->lock_id = p->lock_id;
	m->handle = p->handle;
	m->cap = (Tessera__Capability *)tc_cap_get(lk->file);
	m->mode = (uint32_t)lk->mode;
	if (p->created)
		return;
	m->group = lk->group;
	m->object_range = lk->group != 0; /* its one region is in object bytes */
	m->strip_size = l->strip_size;
	m->stripe_count = l->count;
	m->slot = p->slot;
	if (lk->ftype_msg) {
		tessera__dtype_iorequest__init(view);
		view->handle = p->handle;
		view->desc_nonce = lk->fs->desc_nonce;
		view->desc_id = lk->desc_id;
		view->file_type = lk->ftype_msg;
		view->disp = lk->disp;
		view->count = lk->count;
		view->first = lk->first;
		view->last = lk->last;
		m->view = view;
		return;
	}
	m->n_offsets = m->n_lengths = p->n - p->sent < lk->batch ? p->n - p->sent : lk->batch;
	m->offsets = p->offs + p->sent;
	m->lengths = p->lens + p->sent;
	m->more = p->sent + m->n_offsets < p->n;
}

/* Count a part's lock on its slot of the file; I/O there carries the
 * epoch of the first lock held, so a daemon that lost it refuses. */
static void fence_hold(struct tessera_lock *lk, const struct lk_part *p, int delta)
{
	tessera_file *f = lk->file;

	pthread_mutex_lock(&lk->fs->lock);
	if (delta > 0 && f->lock_count[p->slot]++ == 0)
		__atomic_store_n(&f->lock_epoch[p->slot], p->epoch, __ATOMIC_RELAXED);
	if (delta < 0 && f->lock_count[p->slot] && --f->lock_count[p->slot] == 0)
		__atomic_store_n(&f->lock_epoch[p->slot], 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lk->fs->lock);
}

/* Where a part stands after a reply. */
static int take_reply(struct tessera_lock *lk, struct lk_part *p, struct tc_req *r, int *state)
{
	const Tessera__LockReply *rep = (const Tessera__LockReply *)r->reply;
	uint32_t lease = rep->lease_ms;
	int was_created = p->created;

	p->lock_id = rep->lock_id;
	if (p->describing) { /* the daemon keeps the regions under a pending id */
		p->describing = 0;
		return 0;
	}
	p->epoch = rep->epoch;
	p->last = rep->last_abs_offset;
	p->next = rep->next_abs_offset;
	*state = (int)rep->state;
	if (!was_created && !p->lock_id) { /* nothing of the lock on this object */
		p->created = 1;
		p->next = p->last = LK_NONE;
		return 0;
	}
	p->created = 1;
	if (!was_created) {
		fence_hold(lk, p, 1);
		return tc_lock_lease_hold(lk->file, p->server, 1, lease);
	}
	return 0;
}

/*
 * Rounds of messages. One message to each part in idx[0..n), all sent at
 * once: make(lk, p, arg) makes a part's, take(lk, p, reply, state) takes
 * its reply in (state: that part's entry of `states`, NULL without). The
 * named rounds below are the protocol's messages: send_try, send_probe,
 * send_wait (acquire), send_release, send_release_from (release).
 */
typedef struct tc_req *(*lk_make_fn)(struct tessera_lock *lk, struct lk_part *p, const void *arg);
typedef int (*lk_take_fn)(struct tessera_lock *lk, struct lk_part *p, struct tc_req *r,
			  int *state);

static int send_parts(struct tessera_lock *lk, const size_t *idx, size_t n, lk_make_fn make,
		      const void *arg, lk_take_fn take, int *states)
{
	tessera_fs *fs = lk->fs;
	struct tc_req **reqs = calloc(n ? n : 1, sizeof(*reqs));
	int rc = 0;

	if (!reqs)
		return tc_fail(fs, -ENOMEM, "%s: out of memory", lk->label);
	for (size_t i = 0; i < n; i++) {
		reqs[i] = make(lk, &lk->parts[idx[i]], arg);
		if (!reqs[i])
			rc = tc_fail(fs, -ENOMEM, "%s: out of memory", lk->label);
	}
	if (!rc) {
		/* At most `window` requests in flight, as every I/O path: a round
		 * of POSIX locks has one message per region, and thousands at
		 * once overrun a daemon. It is still one round: no reply is
		 * acted on before every message of it has been answered. */
		size_t w = fs->cfg.window ? fs->cfg.window : 1;

		lk->info.messages += n;
		for (size_t i = 0; i < n; i += w)
			tc_run(fs, reqs + i, n - i < w ? n - i : w);
		for (size_t i = 0; i < n && !rc; i++) {
			if (reqs[i]->status)
				rc = tc_req_fail(fs, reqs[i], lk->label);
			else
				rc = take(lk, &lk->parts[idx[i]], reqs[i], states ? &states[i] : NULL);
		}
	}
	for (size_t i = 0; i < n; i++)
		tc_req_free(fs, reqs[i]);
	free(reqs);
	return rc;
}

/* How an acquire asks: wait for the bytes (a long poll) or not; capped:
 * take nothing at or past upto (upto 0: create the request, take
 * nothing). */
struct lk_ask {
	int blocking;
	int capped;
	uint64_t upto;
};

static struct tc_req *make_acquire(struct tessera_lock *lk, struct lk_part *p, const void *arg)
{
	const struct lk_ask *ask = arg;
	Tessera__LockAcquireRequest m;
	Tessera__DtypeIORequest view;
	struct tc_req *r;

	acquire_msg(lk, p, &m, &view);
	m.blocking = ask->blocking && !m.more;
	m.capped = ask->capped;
	m.upto = ask->upto;
	r = tc_req_new(lk->fs, p->server, TP_OP_LOCK_ACQUIRE, &m.base, NULL, 0);
	if (!p->created)
		p->sent += m.n_offsets;
	p->describing = m.more;
	return r;
}

static int take_acquire(struct tessera_lock *lk, struct lk_part *p, struct tc_req *r, int *state)
{
	int rc = take_reply(lk, p, r, state);

	if (rc)
		tc_fail(lk->fs, rc, "%s: starting the lease thread", lk->label);
	return rc;
}

/* Acquire what is free now, waiting for nothing. */
int tc_lock_send_try(struct tessera_lock *lk, const size_t *idx, size_t n, int *states)
{
	static const struct lk_ask try = { 0, 0, 0 };

	return send_parts(lk, idx, n, make_acquire, &try, take_acquire, states);
}

/* Create the requests, taking nothing (a view's objects say where their
 * bytes start). */
static int send_probe(struct tessera_lock *lk, const size_t *idx, size_t n, int *states)
{
	static const struct lk_ask probe = { 0, 1, 0 };

	return send_parts(lk, idx, n, make_acquire, &probe, take_acquire, states);
}

/* Wait for part idx's bytes below upto (LK_NONE: all of them). */
static int send_wait(struct tessera_lock *lk, size_t idx, uint64_t upto, int *state)
{
	struct lk_ask wait = { 1, upto != LK_NONE, upto };

	return send_parts(lk, &idx, 1, make_acquire, &wait, take_acquire, state);
}

static void release_msg(struct tessera_lock *lk, const struct lk_part *p,
			Tessera__LockReleaseRequest *m)
{
	tessera__lock_release_request__init(m);
	m->session = tc_lock_owner(lk->fs);
	m->epoch = p->epoch;
	m->lock_id = p->lock_id;
	m->handle = p->handle;
	m->cap = (Tessera__Capability *)tc_cap_get(lk->file);
}

static struct tc_req *make_release(struct tessera_lock *lk, struct lk_part *p, const void *arg)
{
	Tessera__LockReleaseRequest m;

	(void)arg;
	release_msg(lk, p, &m);
	return tc_req_new(lk->fs, p->server, TP_OP_LOCK_RELEASE, &m.base, NULL, 0);
}

static int take_release(struct tessera_lock *lk, struct lk_part *p, struct tc_req *r, int *state)
{
	(void)lk, (void)p, (void)r, (void)state;
	return 0;
}

static struct tc_req *make_release_from(struct tessera_lock *lk, struct lk_part *p,
					const void *arg)
{
	Tessera__LockReleaseRequest m;

	release_msg(lk, p, &m);
	m.partial = 1;
	m.from = *(const uint64_t *)arg;
	return tc_req_new(lk->fs, p->server, TP_OP_LOCK_RELEASE, &m.base, NULL, 0);
}

/* After a partial release, what the part holds and wants next. */
static int take_release_from(struct tessera_lock *lk, struct lk_part *p, struct tc_req *r,
			     int *state)
{
	const Tessera__LockReply *rep = (const Tessera__LockReply *)r->reply;

	(void)lk, (void)state;
	p->last = rep->last_abs_offset;
	p->next = rep->next_abs_offset;
	return 0;
}

/* Release the parts' locks whole. */
static int send_release(struct tessera_lock *lk, const size_t *idx, size_t n)
{
	return send_parts(lk, idx, n, make_release, NULL, take_release, NULL);
}

/* Give back every byte at or past `from` the parts hold. */
static int send_release_from(struct tessera_lock *lk, const size_t *idx, size_t n, uint64_t from)
{
	return send_parts(lk, idx, n, make_release_from, &from, take_release_from, NULL);
}

/* ------------------------------------------------------------ rounds */

static uint64_t min_next(const struct tessera_lock *lk, size_t skip, size_t *at)
{
	uint64_t m = LK_NONE;

	for (size_t i = 0; i < lk->nparts; i++)
		if (i != skip && lk->parts[i].next < m) {
			m = lk->parts[i].next;
			if (at)
				*at = i;
		}
	return m;
}

/* List parts whose regions need several messages get their leading ones
 * (more = true) first, round after round. */
static int describe_rounds(struct tessera_lock *lk, size_t *idx, int *states)
{
	for (;;) {
		size_t n = 0;
		int rc;

		for (size_t i = 0; i < lk->nparts; i++) {
			struct lk_part *p = &lk->parts[i];

			if (!p->created && !lk->ftype_msg && p->n - p->sent > lk->batch)
				idx[n++] = i;
		}
		if (!n)
			return 0;
		rc = tc_lock_send_try(lk, idx, n, states);
		if (rc)
			return rc;
	}
}

/* The parts not finished (or not yet created), into idx; how many. */
static size_t unfinished(const struct tessera_lock *lk, size_t *idx)
{
	size_t n = 0;

	for (size_t i = 0; i < lk->nparts; i++)
		if (!lk->parts[i].created || lk->parts[i].next != LK_NONE)
			idx[n++] = i;
	return n;
}

/* Out-of-order bytes go back: nobody may hold a byte at or above the
 * smallest byte still wanted. */
static int release_out_of_order(struct tessera_lock *lk, size_t *idx)
{
	uint64_t m = min_next(lk, SIZE_MAX, NULL);
	size_t n = 0;

	for (size_t i = 0; i < lk->nparts && m != LK_NONE; i++) {
		struct lk_part *p = &lk->parts[i];

		if (p->lock_id && p->last != LK_NONE && p->last >= m)
			idx[n++] = i;
	}
	if (!n)
		return 0;
	lk->info.partial_releases += n;
	return send_release_from(lk, idx, n, m);
}

/* A round over every unfinished part, after their descriptions:
 * optimistic takes what is free and gives back what came out of order;
 * probe only creates the requests (a view's objects say where their bytes
 * start) and takes nothing. */
enum lk_round { LK_ROUND_OPTIMISTIC, LK_ROUND_PROBE };

static int all_parts_round(struct tessera_lock *lk, enum lk_round kind)
{
	size_t *idx = calloc(lk->nparts, sizeof(*idx));
	int *states = calloc(lk->nparts, sizeof(*states));
	size_t n;
	int rc;

	if (!idx || !states) {
		rc = tc_fail(lk->fs, -ENOMEM, "%s: out of memory", lk->label);
		goto out;
	}
	rc = describe_rounds(lk, idx, states);
	if (rc)
		goto out;
	n = unfinished(lk, idx);
	if (kind == LK_ROUND_PROBE) {
		rc = n ? send_probe(lk, idx, n, states) : 0;
		goto out;
	}
	if (n) {
		rc = tc_lock_send_try(lk, idx, n, states);
		lk->info.optimistic_rounds++;
	}
	if (!rc)
		rc = release_out_of_order(lk, idx);
out:
	free(idx);
	free(states);
	return rc;
}

/* One blocking round: the part wanting the smallest byte, capped at the
 * others' smallest; a long poll that ran out is asked again. */
static int blocking(struct tessera_lock *lk)
{
	size_t a = 0;
	uint64_t m = min_next(lk, SIZE_MAX, &a), m2;
	int state = TESSERA__LOCK_STATE__LOCK_WAITING, rc = 0;

	if (m == LK_NONE)
		return 0;
	m2 = min_next(lk, a, NULL);
	lk->info.blocking_rounds++;
	while (!rc && state == TESSERA__LOCK_STATE__LOCK_WAITING)
		rc = send_wait(lk, a, m2, &state);
	return rc;
}

int tc_lock_run(struct tessera_lock *lk)
{
	int rc, optimistic_turn;

	switch (lk->protocol) {
	case TESSERA_LOCK_TWO_PHASE:
		/* A list knows each object's first byte, so its first blocking
		 * round creates the request; a view's objects must first be
		 * asked (a round that creates the requests and takes nothing). */
		rc = lk->ftype_msg ? all_parts_round(lk, LK_ROUND_PROBE) : 0;
		optimistic_turn = 0;
		break;
	case TESSERA_LOCK_ONE_TRY:
	case TESSERA_LOCK_ALT_TRY:
		rc = all_parts_round(lk, LK_ROUND_OPTIMISTIC);
		optimistic_turn = 0;
		break;
	default:
		return tc_fail(lk->fs, -EINVAL, "%s: unknown protocol %d", lk->label, lk->protocol);
	}
	while (!rc && min_next(lk, SIZE_MAX, NULL) != LK_NONE) {
		if (optimistic_turn)
			rc = all_parts_round(lk, LK_ROUND_OPTIMISTIC);
		else
			rc = blocking(lk);
		if (lk->protocol == TESSERA_LOCK_ALT_TRY)
			optimistic_turn = !optimistic_turn;
	}
	return rc;
}

/* Full release of every created part; the first error is reported. */
int tc_lock_release_all(struct tessera_lock *lk)
{
	size_t *idx = calloc(lk->nparts ? lk->nparts : 1, sizeof(*idx));
	size_t n = 0;
	int rc = 0;

	if (!idx)
		return tc_fail(lk->fs, -ENOMEM, "%s: out of memory", lk->label);
	for (size_t i = 0; i < lk->nparts; i++)
		if (lk->parts[i].created && lk->parts[i].lock_id)
			idx[n++] = i;
	if (n)
		rc = send_release(lk, idx, n);
	for (size_t i = 0; i < n; i++) {
		fence_hold(lk, &lk->parts[idx[i]], -1);
		tc_lock_lease_hold(lk->file, lk->parts[idx[i]].server, -1, 0);
	}
	free(idx);
	return rc;
}
