/* ios_vlogd.c - the storage daemon's versioned objects (issue 25,
 * docs/design.md "Versioning (chapter 8)"): the loop's side of the version
 * paths of writes, reads, truncates and sizes, and the VLOG opcode.
 *
 * The loop checks what a request may do (its version fields against its
 * capability's TP_CAP_VERSIONED, each signed commit or grant it carries)
 * and hands the work to ios_pool.c as a part carrying a vjob, which a
 * worker runs on the object's log (ios_vlogs.c) in the object's order. The
 * checks are pure functions (ios_vcheck_*), unit-tested.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "ios.h"
#include "ios_vlogs.h"

#define OBJ "object %016" PRIx64

/* ------------------------------------------------------------ checks */

int ios_vcheck_fields(const Tessera__Capability *cap, uint64_t handle, enum ios_vkind kind,
		      uint64_t version, uint64_t other, unsigned index, char *why, size_t len)
{
	int versioned = cap && (cap->rights & TP_CAP_VERSIONED);
	const char *field = kind == IOS_VKIND_WRITE ? "version_t" : "read_version";

	/* A read at version 0 is one of a file nothing was committed to yet:
	 * the log answers it (ESTALE once anything is merged). A write needs
	 * its T. */
	if (versioned && !version && kind == IOS_VKIND_WRITE)
		return snprintf(why, len, OBJ " on storage daemon %u: file %016" PRIx64 " is "
				"versioned (its capability says so) but the request has no %s: "
				"plain I/O of a versioned object is refused", handle, index,
				cap->file, field), -EINVAL;
	if (!versioned && (version || other))
		return snprintf(why, len, OBJ " on storage daemon %u: the request has version "
				"fields but the capability (file %016" PRIx64 ") is not of a "
				"versioned file", handle, index, cap ? cap->file : 0), -EINVAL;
	if (other)
		return snprintf(why, len, OBJ " on storage daemon %u: the request carries "
				"version fields of the other kind (read_version or vmap on a "
				"write, version_t or version_part on a read)", handle, index),
		       -EINVAL;
	return versioned;
}

static int names_handle(const Tessera__VersionCommit *c, uint64_t h)
{
	for (size_t i = 0; i < c->n_handles; i++)
		if (c->handles[i] == h)
			return 1;
	return 0;
}

/* One entry: signed by the version server, of the capability's file,
 * naming one of the request's handles. */
static int commit_ok(const struct cap_key *key, const Tessera__Capability *cap,
		     const Tessera__VersionCommit *c, const uint64_t *handles, size_t nh,
		     size_t i, unsigned index, char *why, size_t len)
{
	int named = 0;

	if (!c || !cap_commit_ok(key, c))
		return snprintf(why, len, "storage daemon %u: vmap entry %zu: forged commit "
				"(its MAC does not verify)", index, i), -EACCES;
	if (c->file != cap->file)
		return snprintf(why, len, "storage daemon %u: vmap entry %zu: forged commit: it "
				"is of file %016" PRIx64 ", the capability of file %016" PRIx64,
				index, i, c->file, cap->file), -EACCES;
	for (size_t k = 0; k < nh && !named; k++)
		named = names_handle(c, handles[k]);
	if (!named)
		return snprintf(why, len, "storage daemon %u: vmap entry %zu: forged commit: it "
				"does not name the object", index, i), -EACCES;
	if (!c->t || !c->vm)
		return snprintf(why, len, "storage daemon %u: vmap entry %zu: T or version 0",
				index, i), -EINVAL;
	return 0;
}

int ios_vcheck_commits(const struct cap_key *key, const Tessera__Capability *cap,
		       Tessera__VersionCommit *const *vmap, size_t n_vmap,
		       const uint64_t *handles, size_t n_handles, uint64_t handle,
		       unsigned index, struct ios_vcommit **out, size_t *nout, char *why,
		       size_t len)
{
	struct ios_vcommit *v = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	*nout = 0;
	if (n_vmap && !(v = calloc(n_vmap, sizeof(*v))))
		return snprintf(why, len, "storage daemon %u: no memory", index), -ENOMEM;
	for (size_t i = 0; i < n_vmap; i++) {
		if ((rc = commit_ok(key, cap, vmap[i], handles, n_handles, i, index, why, len))) {
			free(v);
			return rc;
		}
		if (names_handle(vmap[i], handle)) {
			v[n].t = vmap[i]->t;
			v[n++].vm = vmap[i]->vm;
		}
	}
	*out = v;
	*nout = n;
	return 0;
}

int ios_vcheck_grant(const struct cap_key *key, const Tessera__Capability *cap,
		     const Tessera__VersionGrant *g, uint64_t handle, int64_t now_ns,
		     unsigned index, char *why, size_t len)
{
	if (!g)
		return snprintf(why, len, OBJ " on storage daemon %u: a merge without a grant",
				handle, index), -EINVAL;
	if (g->n_live_ids > TP_VERSION_MAX_IDS)
		return snprintf(why, len, OBJ " on storage daemon %u: the grant names %zu live "
				"IDs, more than %d", handle, index, g->n_live_ids,
				TP_VERSION_MAX_IDS), -EINVAL;
	if (!cap_grant_ok(key, g))
		return snprintf(why, len, OBJ " on storage daemon %u: forged merge grant (its MAC "
				"does not verify)", handle, index), -EACCES;
	if (g->file != cap->file)
		return snprintf(why, len, OBJ " on storage daemon %u: forged merge grant: it is "
				"of file %016" PRIx64 ", the capability of file %016" PRIx64,
				handle, index, g->file, cap->file), -EACCES;
	if (now_ns > g->expires_ns)
		return snprintf(why, len, OBJ " on storage daemon %u: merge grant of file %016"
				PRIx64 " expired (ask the version server again)", handle, index,
				g->file), -EKEYEXPIRED;
	return 0;
}

/* ------------------------------------------------------------ the loop */

static int vlogs_ready(struct ios *ios)
{
	struct ios_vlogs_limits lim = { 0 };

	if (ios->vlogs)
		return 0;
	lim.half_percent = ios->cfg ? ios->cfg->vmerge_log_percent : 0;
	return ios_vlogs_create(ios->disk, ios_store_dir(ios->store), ios->index, &lim,
				&ios->vlogs);
}

struct ios_vlogs *ios_vlogs_of(struct ios *ios)
{
	return vlogs_ready(ios) ? NULL : ios->vlogs;
}

int ios_vprepare(struct ios *ios, struct srv_req *req, const struct ios_vfields *f,
		 uint64_t handle, enum ios_vkind kind, const char *what, struct ios_vjob **out)
{
	char why[512];
	struct ios_vjob *j;
	int rc = ios_vcheck_fields(f->cap, handle, kind, f->version, f->other, ios->index, why,
				   sizeof(why));

	*out = NULL;
	if (rc == 0 && (f->n_vmap || f->part)) {
		snprintf(why, sizeof(why), OBJ " on storage daemon %u: a %s on a request of a "
			 "file that is not versioned", handle, ios->index,
			 f->n_vmap ? "vmap" : "version_part");
		rc = -EINVAL;
	}
	if (rc <= 0) {
		if (rc)
			srv_reply_error(req, rc, "%s %s", what, why);
		return rc;
	}
	if (vlogs_ready(ios) || !(j = calloc(1, sizeof(*j)))) {
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", what, handle);
		return -ENOMEM;
	}
	j->vlogs = ios->vlogs;
	j->op = kind == IOS_VKIND_WRITE ? IOS_VOP_WRITE : IOS_VOP_READ;
	if (kind == IOS_VKIND_WRITE) {
		j->t = f->version;
		j->part = f->part; /* a resent part is done once (ios_vlog_write) */
	} else
		j->version = f->version;
	rc = ios_vcheck_commits(ios_caps_key(ios->caps), f->cap, f->vmap, f->n_vmap,
				f->handles ? f->handles : &handle, f->handles ? f->n_handles : 1,
				handle, ios->index, &j->commits, &j->n_commits, why, sizeof(why));
	if (rc) {
		srv_reply_error(req, rc, "%s " OBJ ": %s", what, handle, why);
		ios_vjob_free(j);
		return rc;
	}
	*out = j;
	return 1;
}

/* ------------------------------------------------------------ VLOG */

static int vlog_merge_job(struct ios *ios, struct srv_req *req, const Tessera__VlogRequest *m,
			  struct ios_vjob *j)
{
	char why[512];
	int rc = ios_vcheck_grant(ios_caps_key(ios->caps), m->cap, m->grant, m->handle,
				  tp_real_ns(), ios->index, why, sizeof(why));

	if (!rc)
		rc = ios_vcheck_commits(ios_caps_key(ios->caps), m->cap, m->vmap, m->n_vmap,
					&m->handle, 1, m->handle, ios->index, &j->commits,
					&j->n_commits, why, sizeof(why));
	if (!rc && m->grant->n_live_ids && !(j->live = malloc(m->grant->n_live_ids * 4))) {
		snprintf(why, sizeof(why), "no memory");
		rc = -ENOMEM;
	}
	if (rc)
		return srv_reply_error(req, rc, "merge " OBJ ": %s", m->handle, why), rc;
	if (m->grant->n_live_ids)
		memcpy(j->live, m->grant->live_ids, m->grant->n_live_ids * 4);
	j->n_live = m->grant->n_live_ids;
	j->next_id = m->grant->next_id;
	j->version = m->grant->upto;
	j->op = IOS_VOP_MERGE;
	return 0;
}

void ios_do_vlog(struct ios *ios, struct srv_req *req)
{
	Tessera__VlogRequest *m = (Tessera__VlogRequest *)req->msg;
	const char *what = m->op == TESSERA__VLOG_OP__VLOG_MERGE ? "merge" : "log state";
	struct ios_vjob *j;
	struct ios_work *w;

	if (m->op != TESSERA__VLOG_OP__VLOG_MERGE && m->op != TESSERA__VLOG_OP__VLOG_STATE) {
		srv_reply_error(req, -EINVAL, "vlog " OBJ " on storage daemon %u: unknown op %d",
				m->handle, ios->index, (int)m->op);
		return;
	}
	if (!(m->cap->rights & TP_CAP_VERSIONED)) {
		srv_reply_error(req, -EINVAL, "%s " OBJ " on storage daemon %u: the capability "
				"(file %016" PRIx64 ") is not of a versioned file", what, m->handle,
				ios->index, m->cap->file);
		return;
	}
	if (vlogs_ready(ios) || !(j = calloc(1, sizeof(*j)))) {
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", what, m->handle);
		return;
	}
	j->vlogs = ios->vlogs;
	j->op = IOS_VOP_STATE;
	if (m->op == TESSERA__VLOG_OP__VLOG_MERGE && vlog_merge_job(ios, req, m, j)) {
		ios_vjob_free(j);
		return;
	}
	if (!(w = ios_work_new(IOS_JOB_VLOG, IOS_CONTIG, what, 1))) {
		ios_vjob_free(j);
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory", what, m->handle);
		return;
	}
	w->part[0].handle = m->handle;
	w->part[0].vjob = j;
	ios_reply_work(ios, req, w);
}
