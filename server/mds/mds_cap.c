/*
 * mds_cap.c - the metadata daemon's requests about open files by handle:
 * CAP (a capability renewed, root's admin capability, a writer counted
 * at its first write), CLOSE_WRITE (one writer fewer, the size it
 * leaves) and SIZE_REPORT (a size a stat had to ask the storage daemons
 * for). The sizes themselves are mds_size.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cap.h"
#include "daemon.h"
#include "mds_int.h"
#include "mds_lease.h"
#include "mds_size.h"
#include "mds_store.h"

/* A capability with WRITE renewed: its holder is counted as a writer if
 * it asks (count_writer: an open from a share; the token it closes
 * with), else it may be a writer the table does not count (granted
 * before a restart), so no size is taken until the new one expires. */
static uint64_t renewed_writer(struct mds *mds, const struct srv_req *req,
			       const Tessera__CapRequest *m, int64_t expires_ns)
{
	int64_t now = tp_real_ns();

	if (!(m->rights & TP_CAP_WRITE))
		return 0;
	/* others' leases of its attributes end: its size is unknown now */
	mds_leases_break(mds->leases, m->file, req->ident.session);
	if (m->count_writer)
		return mds_sizes_writer_open(mds->sizes, m->file, req->ident.session, now);
	mds_sizes_renewed(mds->sizes, m->file, expires_ns, now);
	return 0;
}

/* CAP with writer_only: an open that asked to count its writer later
 * (PathRequest.writer_later) writes now. The capability it shows is the
 * proof that it may: for this file, this uid, WRITE, unexpired (an
 * expired one is renewed instead, which checks the mode again). */
static void reply_writer_only(struct mds *mds, struct srv_req *req, const struct mds_cred *cred)
{
	Tessera__CapRequest *m = (Tessera__CapRequest *)req->msg;
	Tessera__CapReply rep = TESSERA__CAP_REPLY__INIT;
	int64_t now = tp_real_ns();
	char what[64];
	int rc;

	snprintf(what, sizeof(what), "count a writer of file %016llx", (unsigned long long)m->file);
	if ((rc = mds_may_renew(mds->store, &mds->key, cred, what, m->file, m->proof))) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	if (!(m->proof->rights & TP_CAP_WRITE) || m->proof->expires_ns <= now) {
		srv_reply_error(req, -EACCES, "%s: permission denied: the capability presented %s",
				what, m->proof->rights & TP_CAP_WRITE ? "has expired (renew it)"
								      : "does not allow writing");
		return;
	}
	if (!(m->proof->rights & TP_CAP_VERSIONED)) {
		rep.write_token = mds_sizes_writer_open(mds->sizes, m->file, req->ident.session, now);
		mds_leases_break(mds->leases, m->file, req->ident.session);
	}
	srv_reply(req, &rep.base, NULL, 0);
}

/* A capability again for an open file, by handle and the capability of
 * its open (renewal: the mode is checked again now, the walk is not
 * repeated), or root's admin capability for fsck: every right on
 * every object on every storage daemon (root may do anything), listing
 * included. */
void mds_op_CAP(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__CapRequest *m = (Tessera__CapRequest *)req->msg;
	Tessera__CapReply rep = TESSERA__CAP_REPLY__INIT;
	struct mds_attr *a = NULL;
	struct mds_cred cred;
	struct cap_msg cap;
	char what[64];
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	if (m->writer_only) {
		reply_writer_only(mds, req, &cred);
		return;
	}
	if (m->admin) {
		if (req->ident.foreign_root) {
			mds_reply_not_admin_host(req, "admin capability");
			return;
		}
		if (cred.uid != 0) {
			srv_reply_error(req, -EPERM, "admin capability: only root may have one"
					" (uid %u asked)", cred.uid);
			return;
		}
		if ((rc = mds_grant(mds, &cred, NULL, TP_CAP_ADMIN | TP_CAP_REMOVE | TP_CAP_STAT |
				 TP_CAP_READ | TP_CAP_WRITE, &cap))) {
			srv_reply_error(req, rc, "admin capability: cannot sign it");
			return;
		}
		rep.cap = &cap.cap;
		srv_reply(req, &rep.base, NULL, 0);
		return;
	}
	if (!(a = malloc(sizeof(*a)))) {
		srv_reply_error(req, -ENOMEM, "capability: no memory");
		return;
	}
	snprintf(what, sizeof(what), "renew file %016llx", (unsigned long long)m->file);
	if ((rc = mds_may_renew(mds->store, &mds->key, &cred, what, m->file, m->proof)) ||
	    (rc = mds_file_by_handle(mds->store, m->file, a)) ||
	    (rc = mds_may_open(mds->store, &cred, what, a, m->rights & TP_CAP_READ,
			       m->rights & TP_CAP_WRITE))) {
		mds_reply_store_error(mds, req, rc);
	} else if ((rc = mds_grant(mds, &cred, a, (m->rights & (TP_CAP_READ | TP_CAP_WRITE)) |
				TP_CAP_STAT, &cap))) {
		srv_reply_error(req, rc, "%s: cannot sign a capability", what);
	} else {
		rep.cap = &cap.cap;
		if (!a->layout.versioned)
			rep.write_token = renewed_writer(mds, req, m, cap.cap.expires_ns);
		srv_reply(req, &rep.base, NULL, 0);
	}
	free(a);
}

/* ---- sizes kept for files no one writes (mds_size.h) */

/* What a close answers: to a watching caller, the file's attributes and
 * size when the size is known now (leased), so its stat asks nobody;
 * else nothing (a store read fewer). */
static void reply_closed(struct mds *mds, struct srv_req *req, uint64_t file)
{
	Tessera__AttrReply empty = TESSERA__ATTR_REPLY__INIT;
	struct size_part sp = { { 0 }, 0, NULL };
	struct mds_lease_part lease;
	struct mds_attr *a;

	if (mds_leases_watching(mds->leases, req->ident.session))
		mds_sizes_stat(mds->sizes, file, tp_real_ns(), &sp.view);
	if (!sp.view.known || !(a = malloc(sizeof(*a)))) {
		srv_reply(req, &empty.base, NULL, 0);
		return;
	}
	if (mds_file_by_handle(mds->store, file, a)) {
		srv_reply(req, &empty.base, NULL, 0);
	} else {
		sp.view.token = 0;
		mds_lease_note(mds, req, file, LEASE_HANDLE, &lease);
		sp.lease = &lease;
		mds_reply_attr_sized(req, a, 0, NULL, &sp, NULL);
	}
	free(a);
}

/* CLOSE_WRITE: one writer fewer, for a caller that shows a capability
 * with WRITE for the file (of any age): anyone else could make a written
 * file look closed. A token of another incarnation counts nothing. */
void mds_op_CLOSE_WRITE(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__CloseWriteRequest *m = (Tessera__CloseWriteRequest *)req->msg;
	Tessera__AttrReply rep = TESSERA__ATTR_REPLY__INIT;
	struct mds_size_view seen = { .known = 1, .size = m->size, .blocks = m->blocks,
				      .data_mtime_ns = m->data_mtime_ns };

	if (!m->cap || !cap_mac_ok(&mds->key, m->cap) || m->cap->file != m->file ||
	    !(m->cap->rights & TP_CAP_WRITE)) {
		srv_reply_error(req, -EACCES, "close of file %016llx: permission denied: no"
				" capability to write it presented", (unsigned long long)m->file);
		return;
	}
	/* A versioned file (its capability says so, signed by us): no
	 * writers counted, no size kept, nothing to do. */
	if (m->cap->rights & TP_CAP_VERSIONED) {
		srv_reply(req, &rep.base, NULL, 0);
		return;
	}
	if (m->unwritten)
		mds_sizes_writer_close_unwritten(mds->sizes, m->file, m->write_token,
						 req->ident.session, tp_real_ns());
	else
		mds_sizes_writer_close(mds->sizes, m->file, m->write_token, req->ident.session,
				       m->size_known ? &seen : NULL, tp_real_ns());
	reply_closed(mds, req, m->file);
}

/* SIZE_REPORT: kept only with the token of a stat since which nothing
 * changed (mds_sizes_report), from a caller who may write the file (a
 * reader could otherwise make everyone's stat of it wrong); anything
 * else is ignored, and answered the same (the reporter has nothing to do
 * about it). */
void mds_op_SIZE_REPORT(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__SizeReportRequest *m = (Tessera__SizeReportRequest *)req->msg;
	Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;
	struct mds_size_view seen = { .known = 1, .size = m->size, .blocks = m->blocks,
				      .data_mtime_ns = m->data_mtime_ns };
	struct mds_attr *a = malloc(sizeof(*a));
	struct mds_cred cred;

	mds_cred_of(mds, req, m->cred, &cred);
	if (a && m->size_token && !mds_file_by_handle(mds->store, m->file, a) &&
	    !a->layout.versioned && !mds_may_open(mds->store, &cred, "size report", a, 0, 1))
		(void)mds_sizes_report(mds->sizes, m->file, m->size_token, tp_real_ns(), &seen);
	free(a);
	srv_reply(req, &rep.base, NULL, 0);
}
