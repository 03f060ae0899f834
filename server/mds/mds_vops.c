/*
 * mds_vops.c - VERSION (opcode 58), the version server's requests
 * (issue 25, docs/design.md "Versioning (chapter 8)"): the capability and
 * the file checked, then one function per op over the tables of
 * mds_version.h. Commits are noted to the merger (mds_vmerge.h). Split
 * from mds_main.c, whose handler table names mds_op_VERSION.
 */
#include <errno.h>
#include <stdlib.h>

#include "mds_int.h"
#include "mds_store.h"
#include "mds_version.h"
#include "mds_vmerge.h"
#include "tp_clock.h"

/* ---- versioning (issue 25): the version server (mds_version.h). Each
 * op of VERSION is one function; mds_op_VERSION checks the capability and
 * the file, then dispatches. */

struct vreq {
	struct mds *mds;
	struct srv_req *req;
	const Tessera__VersionRequest *m;
	const struct mds_vfile *f;
	const uint32_t *servers;   /* the layout's: f's objects' storage daemons */
};

static void version_error(const struct vreq *v, int rc)
{
	srv_reply_error(v->req, rc, "%s", mds_versions_errmsg(v->mds->versions));
}

static void version_reply(const struct vreq *v, Tessera__VersionReply *rep, int rc)
{
	if (rc)
		version_error(v, rc);
	else
		srv_reply(v->req, &rep->base, NULL, 0);
}

/* ID: the first ID# and the block signed (another session of the job
 * may commit under it). */
static void version_id(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	struct mds_vids b;
	int rc = mds_version_ids_signed(v->mds->versions, v->f, v->req->ident.session,
					v->m->count, &b);

	if (!rc) {
		rep.id_first = b.msg.first;
		rep.signed_ids = &b.msg;
	}
	version_reply(v, &rep, rc);
}

/* ID_END: one ID# (version), or a block's (ids). */
static void version_id_end(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	uint64_t session = v->req->ident.session;

	version_reply(v, &rep, v->m->ids ? mds_version_ids_end(v->mds->versions, v->f, session,
							       v->m->ids)
					 : mds_version_id_end(v->mds->versions, v->f, session,
							      v->m->version));
}

/* COMMIT: the version (Vm) and the signed commit, as vmap's one entry. */
static void version_commit(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	Tessera__VersionCommit c, *pc = &c;
	int rc = mds_version_commit_as(v->mds->versions, v->f, v->req->ident.session, v->m->ids,
				       v->m->t, v->m->slots, v->m->n_slots, &c);

	if (!rc) {
		rep.version = c.vm;
		rep.vmap = &pc;
		rep.n_vmap = 1;
		mds_vmerge_note(v->mds->vmerge, v->f, v->servers, tp_mono_ns(), v->m->log_half);
		v->mds->vmerge_noted = 1;
	}
	version_reply(v, &rep, rc);
}

/* A reply with the unmerged commits up to `upto` (and what else rep has). */
static void reply_with_vmap(const struct vreq *v, Tessera__VersionReply *rep, uint64_t upto)
{
	Tessera__VersionCommit **vmap = NULL;
	size_t n = 0;
	int rc = mds_version_vmap(v->mds->versions, v->f, upto, &vmap, &n);

	rep->vmap = vmap;
	rep->n_vmap = n;
	version_reply(v, rep, rc);
	free(vmap);
}

static void version_read(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	int rc = mds_version_read(v->mds->versions, v->f, v->req->ident.session, v->m->name,
				  v->m->end_read, &rep.version);

	if (rc)
		version_error(v, rc);
	else
		reply_with_vmap(v, &rep, rep.version);
}

static void version_read_end(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;

	version_reply(v, &rep, mds_version_read_end(v->mds->versions, v->f,
						    v->req->ident.session, v->m->version));
}

static void version_merge(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	struct mds_vgrant *g = malloc(sizeof(*g));
	int rc = g ? mds_version_merge(v->mds->versions, v->f, tp_real_ns(), g) : -ENOMEM;

	if (!g) {
		srv_reply_error(v->req, rc, "merge of file %016llx: no memory for a grant",
				(unsigned long long)v->f->file);
	} else if (rc) {
		version_error(v, rc);
	} else {
		rep.grant = &g->msg;
		reply_with_vmap(v, &rep, UINT64_MAX);
	}
	free(g);
}

static void version_merged(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;

	version_reply(v, &rep, mds_version_merged(v->mds->versions, v->f, v->m->handle,
						  v->m->version));
}

static void version_snap_create(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;

	version_reply(v, &rep, mds_version_snap_create(v->mds->versions, v->f, v->m->name,
						       tp_real_ns(), &rep.version));
}

static void version_snap_drop(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;

	version_reply(v, &rep, mds_version_snap_drop(v->mds->versions, v->f, v->m->name));
}

static void version_snap_list(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	Tessera__VersionSnapshot *snaps = NULL, **ptrs = NULL;
	size_t n = 0;
	int rc = mds_version_snap_list(v->mds->versions, v->f, &snaps, &n);

	if (!rc && n && !(ptrs = malloc(n * sizeof(*ptrs)))) {
		free(snaps);
		srv_reply_error(v->req, -ENOMEM, "snapshots of file %016llx: no memory",
				(unsigned long long)v->f->file);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ptrs[i] = &snaps[i];
	rep.snapshots = ptrs;
	rep.n_snapshots = n;
	version_reply(v, &rep, rc);
	free(ptrs);
	free(snaps);
}

static void version_state(const struct vreq *v)
{
	Tessera__VersionReply rep = TESSERA__VERSION_REPLY__INIT;
	struct mds_vstate st;
	int rc = mds_version_state(v->mds->versions, v->f, &st);

	if (!rc) {
		rep.newest = st.newest;
		rep.merged = st.merged;
		rep.unmerged = st.unmerged;
		rep.reads = st.reads;
		rep.ids = st.ids;
	}
	version_reply(v, &rep, rc);
}

/* The ops of VERSION: their handlers, names and the right they need (for
 * those that change nothing, any of READ, WRITE or STAT: a stat's
 * capability takes a read version for the size; versions are no bytes). */
#define VERSION_SEE (TP_CAP_READ | TP_CAP_WRITE | TP_CAP_STAT)
static const struct {
	void (*fn)(const struct vreq *v);
	const char *name;
	uint32_t rights;
} version_ops[] = {
	[TESSERA__VERSION_OP__VERSION_ID] = { version_id, "ID", TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_ID_END] = { version_id_end, "ID_END", TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_COMMIT] = { version_commit, "COMMIT", TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_READ] = { version_read, "READ", VERSION_SEE },
	[TESSERA__VERSION_OP__VERSION_READ_END] = { version_read_end, "READ_END",
						    VERSION_SEE },
	[TESSERA__VERSION_OP__VERSION_MERGE] = { version_merge, "MERGE", TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_MERGED] = { version_merged, "MERGED", TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_SNAP_CREATE] = { version_snap_create, "SNAP_CREATE",
						       TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_SNAP_DROP] = { version_snap_drop, "SNAP_DROP",
						     TP_CAP_WRITE },
	[TESSERA__VERSION_OP__VERSION_SNAP_LIST] = { version_snap_list, "SNAP_LIST",
						     VERSION_SEE },
	[TESSERA__VERSION_OP__VERSION_STATE] = { version_state, "STATE",
						 VERSION_SEE },
};
#define VERSION_OPS (sizeof(version_ops) / sizeof(version_ops[0]))

/* The capability presented: signed by us, for this file, with the op's
 * right. 0, or the refusal answered. */
static int version_cap_ok(struct mds *mds, struct srv_req *req, const Tessera__VersionRequest *m,
			  const char *op, uint32_t rights)
{
	if (m->cap && cap_mac_ok(&mds->key, m->cap) && m->cap->file == m->file &&
	    (m->cap->rights & rights))
		return 0;
	srv_reply_error(req, -EACCES, "version %s of file %016llx: permission denied: no"
			" capability to %s it presented", op, (unsigned long long)m->file,
			rights & TP_CAP_READ ? "read" : "write");
	return -EACCES;
}

/* The file exists and is versioned: 0 with its attributes in a, or the
 * refusal answered. */
static int version_file_ok(struct mds *mds, struct srv_req *req, const Tessera__VersionRequest *m,
			   const char *op, struct mds_attr *a)
{
	int rc = mds_file_by_handle(mds->store, m->file, a);

	if (rc == -ENOENT)
		srv_reply_error(req, rc, "version %s of file %016llx: no such file", op,
				(unsigned long long)m->file);
	else if (rc)
		mds_reply_store_error(mds, req, rc);
	else if (!a->layout.versioned)
		srv_reply_error(req, rc = -EINVAL, "version %s of file %016llx: not a versioned"
				" file (tessera setstripe --versioned makes new ones)", op,
				(unsigned long long)m->file);
	return rc;
}

void mds_op_VERSION(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__VersionRequest *m = (Tessera__VersionRequest *)req->msg;
	struct mds_attr *a;
	struct mds_vfile f;
	unsigned op = (unsigned)m->op;

	if (op >= VERSION_OPS || !version_ops[op].fn) {
		srv_reply_error(req, -EINVAL, "version request on file %016llx: unknown op %u",
				(unsigned long long)m->file, op);
		return;
	}
	if (version_cap_ok(mds, req, m, version_ops[op].name, version_ops[op].rights))
		return;
	if (!mds->versions || !(a = malloc(sizeof(*a)))) {
		srv_reply_error(req, -ENOMEM, "version %s of file %016llx: no memory",
				version_ops[op].name, (unsigned long long)m->file);
		return;
	}
	if (!version_file_ok(mds, req, m, version_ops[op].name, a)) {
		f = (struct mds_vfile){ a->handle, a->layout.count, a->layout.handles };
		version_ops[op].fn(&(struct vreq){ mds, req, m, &f, a->layout.servers });
	}
	free(a);
}
