/*
 * mds_rename.c - rename(2) on the namespace, as one synchronous batch.
 */
#include "mds_store_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The path of w's last name with its directory's links resolved. */
static void resolved_path(const struct mds_walk *w, char *out, size_t len)
{
	snprintf(out, len, "%s%s%.*s", w->dir, w->dir[1] ? "/" : "", (int)w->len, w->name);
}

/* Does `to` name `from` or something inside it? Both paths are resolved
 * (no ".", "..", empty components or links), so this is a prefix test. */
static int path_inside(const struct mds_walk *wf, const struct mds_walk *wt)
{
	char from[MDS_PATH_MAX + MDS_NAME_MAX + 2], to[MDS_PATH_MAX + MDS_NAME_MAX + 2];
	size_t n;

	resolved_path(wf, from, sizeof(from));
	resolved_path(wt, to, sizeof(to));
	n = strlen(from);
	return strncmp(from, to, n) == 0 && (to[n] == '/' || to[n] == '\0');
}

/* One rename in progress: both walks, the object moved and the one it
 * replaces (if any). */
struct rename_op {
	const char *from, *to;
	struct mds_walk wf, wt;
	uint64_t h, th;               /* handles of the moved and replaced objects */
	uint32_t type, ttype;         /* their types */
	struct mds_attr moved, target;
	int have_target;              /* 1: `to` exists and goes */
};

/* A positive return: the rename is a no-op (a name onto itself or onto
 * another name of the same object); answered 0 with nothing written. */
#define RENAME_NOOP 1

/* The source exists, both parents are writable, and a directory does not
 * move inside itself. 0, RENAME_NOOP, or a negative errno (recorded). */
static int rename_check_source(struct mds_store *st, const struct mds_cred *cred,
			       struct rename_op *r)
{
	int rc;

	if (r->wf.len == 0 || r->wt.len == 0)
		return mds_fail(st, -EBUSY, "rename %s %s: cannot rename the"
				" root", r->from, r->to);
	rc = mds_get_dirent(st, r->wf.parent.handle, r->wf.name, r->wf.len, &r->h, &r->type);
	if (rc == -ENOENT)
		return mds_fail(st, -ENOENT, "rename %s: no such file or"
				" directory", r->from);
	if (rc)
		return rc;
	rc = mds_permit(cred, &r->wf.parent, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc == 0)
		rc = mds_permit(cred, &r->wt.parent, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return mds_fail(st, -EACCES, "rename %s %s: no write permission"
				" on a parent directory", r->from, r->to);
	if (r->type == MDS_DIR && path_inside(&r->wf, &r->wt)) {
		if (path_inside(&r->wt, &r->wf))
			return RENAME_NOOP; /* renaming a name to itself */
		return mds_fail(st, -EINVAL, "rename %s %s: cannot move a"
				" directory inside itself", r->from, r->to);
	}
	return 0;
}

/* What `to` names now, if anything: it must be replaceable by the source
 * (same kind; an empty directory). 0, RENAME_NOOP or a negative errno. */
static int rename_check_target(struct mds_store *st, struct rename_op *r)
{
	const char *from = r->from, *to = r->to;
	int rc = mds_get_dirent(st, r->wt.parent.handle, r->wt.name, r->wt.len, &r->th,
				&r->ttype);

	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (r->th == r->h)
		return RENAME_NOOP;       /* same object (same name) */
	if (r->type == MDS_DIR && r->ttype != MDS_DIR)
		return mds_fail(st, -ENOTDIR, "rename %s %s: %s is not a"
				" directory", from, to, to);
	if (r->type != MDS_DIR && r->ttype == MDS_DIR)
		return mds_fail(st, -EISDIR, "rename %s %s: %s is a"
				" directory", from, to, to);
	rc = mds_get_attr(st, r->th, &r->target);
	if (rc)
		return rc;
	if (r->ttype == MDS_DIR && r->target.nentries > 0)
		return mds_fail(st, -ENOTEMPTY, "rename %s %s: directory"
				" %s not empty", from, to, to);
	r->have_target = 1;
	return 0;
}

/* Write the checked rename: the entries, the counts of both parents (one
 * copy when they are one directory), the replaced object's intent and
 * the drop of its attributes and extended attributes. */
static int rename_write(struct mds_store *st, struct rename_op *r)
{
	struct mds_attr *pf = &r->wf.parent;
	struct mds_attr *pt = r->wt.parent.handle == r->wf.parent.handle ? pf : &r->wt.parent;
	leveldb_writebatch_t *b;
	int64_t now = tp_real_ns();
	int rc;

	pf->nentries--;
	pt->nentries++;
	if (r->type == MDS_DIR) {
		pf->nlink--;
		pt->nlink++;
	}
	if (r->have_target) {
		pt->nentries--;
		if (r->ttype == MDS_DIR)
			pt->nlink--;
	}
	pf->mtime_ns = pf->ctime_ns = now;
	pt->mtime_ns = pt->ctime_ns = now;
	r->moved.ctime_ns = now;

	b = leveldb_writebatch_create();
	mds_batch_del_dirent(b, r->wf.parent.handle, r->wf.name, r->wf.len);
	mds_batch_put_dirent(b, r->wt.parent.handle, r->wt.name, r->wt.len, r->h, r->type);
	rc = 0;
	if (r->have_target) {
		/* the replaced name goes; the object with it if it was its last */
		if (r->ttype != MDS_DIR && r->target.nlink > 1) {
			r->target.nlink--;
			r->target.ctime_ns = now;
			mds_batch_put_attr(b, &r->target);
		} else {
			r->target.nlink = 0;
			rc = mds_batch_drop_last_name(st, b, &r->target);
		}
		mds_batch_put_nnames(b, st->nnames - 1);
	}
	mds_batch_put_attr(b, &r->moved);
	mds_batch_put_attr(b, pf);
	if (pt != pf)
		mds_batch_put_attr(b, pt);
	if (rc == 0)
		rc = mds_batch_write(st, b, "rename", r->from);
	leveldb_writebatch_destroy(b);
	return rc;
}

/* A written rename replaced r->target: one name fewer, and a file's
 * attributes go back to the caller (its objects are to be purged). */
static void rename_replaced(struct mds_store *st, const struct rename_op *r,
			    struct mds_attr *replaced, int *replaced_file)
{
	st->nnames--;
	if (r->ttype != MDS_FILE || r->target.nlink != 0)
		return;
	if (replaced_file)
		*replaced_file = 1;
	if (replaced)
		*replaced = r->target;
}

int mds_rename(struct mds_store *st, const struct mds_cred *cred,
	       const char *from, const char *to, struct mds_attr *replaced,
	       int *replaced_file)
{
	struct rename_op r = { .from = from, .to = to };
	int rc;

	if (replaced_file)
		*replaced_file = 0;
	rc = mds_walk_parent(st, cred, "rename", from, &r.wf);
	if (!rc)
		rc = mds_walk_parent(st, cred, "rename", to, &r.wt);
	if (!rc)
		rc = rename_check_source(st, cred, &r);
	if (!rc)
		rc = rename_check_target(st, &r);
	if (!rc)
		rc = mds_get_attr(st, r.h, &r.moved);
	if (!rc)
		rc = mds_sticky_permit(st, cred, "rename", from, &r.wf.parent, &r.moved);
	if (!rc && r.have_target)
		rc = mds_sticky_permit(st, cred, "rename", to, &r.wt.parent, &r.target);
	if (!rc)
		rc = rename_write(st, &r);
	if (rc == RENAME_NOOP)
		return 0;
	if (!rc && r.have_target)
		rename_replaced(st, &r, replaced, replaced_file);
	return rc;
}
