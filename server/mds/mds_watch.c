/*
 * mds_watch.c - WATCH, and name leases in replies (mds_lease.h holds the
 * bookkeeping; docs/design.md, "Name leases").
 *
 * A WATCH is answered at once when its session has news (changes by
 * others, or it must forget everything), else parked for a quarter of a
 * lease (or of timeout_ms, the clients' deadline for it, if less: the
 * client's lease runs from when it sent the WATCH, so the next answer,
 * late by a tick of the daemon at worst, must come well within it) and
 * answered then, empty, or as soon as a change breaks one of its leases.
 * The answer leaves with every other reply of its turn: after the commit
 * that made the change durable (srv_hold_replies). The changer's own
 * replies wait longer: until every holder told has acknowledged (its next
 * WATCH's `seen`), or a lease passed (docs/design.md, "Breaks that wait").
 * WATCH answers never wait: they bring the acknowledgements.
 */
#include <errno.h>
#include <string.h>

#include "mds_int.h"
#include "mds_lease.h"
#include "tp_clock.h"

/* Handles one answer carries; more wait for the next WATCH. */
#define WATCH_CHANGES_MAX 256u

static void answer(struct mds *mds, struct srv_req *req)
{
	Tessera__WatchReply rep = TESSERA__WATCH_REPLY__INIT;
	uint64_t changed[WATCH_CHANGES_MAX];
	uint64_t seq;
	uint32_t n;
	int all;

	(void)mds_leases_take(mds->leases, req->ident.session, changed, WATCH_CHANGES_MAX, &n,
			      &all, &seq);
	rep.seq = seq;
	rep.changed = changed;
	rep.n_changed = n;
	rep.all = all;
	rep.lease_ms = mds_leases_ms(mds->leases);
	srv_reply(req, &rep.base, NULL, 0);
}

/* mds_lease_wake_fn: a change broke a lease of a session whose WATCH
 * waits: answered now. */
void mds_watch_wake(void *arg, uint64_t session, void *parked)
{
	struct mds *mds = arg;

	mds_leases_park(mds->leases, session, NULL);
	answer(mds, parked);
}

/* Half a lease passed (answered: nothing changed, the lease runs on), or
 * its client is gone (nobody to answer). A watcher dropped meanwhile
 * (its session ended) answers `all`. */
static void watch_expired(void *arg, struct srv_req *req, int reason)
{
	struct mds *mds = arg;

	if (mds_leases_parked(mds->leases, req->ident.session) == req)
		mds_leases_park(mds->leases, req->ident.session, NULL);
	if (reason == -ETIMEDOUT)
		answer(mds, req);
}

void mds_op_WATCH(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	const Tessera__WatchRequest *m = (const Tessera__WatchRequest *)req->msg;
	uint64_t session = req->ident.session;
	struct srv_req *parked, *was;
	double now = tp_mono_s();
	int rc = mds_leases_watch(mds->leases, session, now);

	if (rc == -EOPNOTSUPP) {
		srv_reply_error(req, rc, "watch: this metadata daemon grants no name leases"
				" (name_lease_ms 0, or an in-process caller)");
		return;
	}
	if (!rc && mds_leases_acked(mds->leases, session, m->seen, now))
		srv_pump_replies(mds->srv);
	/* a second WATCH of one session: the first is answered now */
	if ((was = mds_leases_park(mds->leases, session, NULL)))
		answer(mds, was);
	if (rc || mds_leases_news(mds->leases, session) ||
	    srv_park(req, mds->watch_park_ms, watch_expired, mds, &parked)) {
		answer(mds, req);
		return;
	}
	mds_leases_park(mds->leases, session, parked);
}

uint64_t mds_reply_need(void *ctx, const struct srv_req *req)
{
	struct mds *mds = ctx;

	if (req->frame.hdr.opcode == TP_OP_WATCH)
		return 0;
	return mds_leases_need(mds->leases, req->ident.session);
}

uint64_t mds_acks_floor(void *ctx)
{
	struct mds *mds = ctx;

	return mds_leases_floor(mds->leases);
}

void mds_watch_tick(struct mds *mds)
{
	double now = tp_mono_s();

	mds_leases_expire(mds->leases, now);
	if (mds_leases_lapse(mds->leases, now) && mds->srv)
		srv_pump_replies(mds->srv);
}

void mds_lease_note(struct mds *mds, const struct srv_req *req, uint64_t handle,
		    enum mds_lease_what what, struct mds_lease_part *out)
{
	const uint64_t *walked;
	uint32_t n = 0;

	out->leased = 0;
	out->n_walk = 0;
	if (!mds_leases_ms(mds->leases) || (!handle && what != LEASE_WALK))
		return;
	if (what != LEASE_HANDLE && !mds_store_walked(mds->store, &walked, &n))
		return;
	if (what == LEASE_WALK && !n)
		return;
	memcpy(out->walk, walked, n * sizeof(*out->walk));
	out->walk[n] = handle;  /* (LEASE_WALK: 0, which is no handle) */
	if (!mds_leases_grant(mds->leases, req->ident.session, out->walk, n + 1))
		return;
	out->leased = 1;
	out->n_walk = n;
}

void mds_lease_fill(const struct mds_lease_part *lease, Tessera__AttrReply *rep)
{
	if (!lease || !lease->leased)
		return;
	rep->leased = 1;
	rep->walk = (uint64_t *)lease->walk;
	rep->n_walk = lease->n_walk;
}
