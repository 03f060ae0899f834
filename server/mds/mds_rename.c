/*
 * mds_rename.c - rename(2) on the namespace, as one synchronous batch.
 */
#include "mds_store_int.h"

#include <errno.h>
#include <string.h>

/* Does `to` name `from` or something inside it? Paths are canonical (no
 * ".", "..", empty components or links), so this is a prefix test. */
static int path_inside(const char *from, const char *to)
{
	size_t n = strlen(from);

	return strncmp(from, to, n) == 0 && (to[n] == '/' || to[n] == '\0');
}

int mds_rename(struct mds_store *st, const struct mds_cred *cred,
	       const char *from, const char *to, struct mds_attr *replaced,
	       int *replaced_file)
{
	struct mds_walk wf, wt;
	struct mds_attr moved, target, *pf, *pt;
	leveldb_writebatch_t *b = NULL;
	uint64_t h, th;
	uint32_t type, ttype;
	int have_target = 0, rc;
	int64_t now;

	if (replaced_file)
		*replaced_file = 0;
	rc = mds_walk_parent(st, cred, "rename", from, &wf);
	if (rc)
		goto out;
	rc = mds_walk_parent(st, cred, "rename", to, &wt);
	if (rc)
		goto out;
	if (wf.len == 0 || wt.len == 0) {
		rc = mds_fail(st, -EBUSY, "rename %s %s: cannot rename the"
			      " root", from, to);
		goto out;
	}
	rc = mds_get_dirent(st, wf.parent.handle, wf.name, wf.len, &h, &type);
	if (rc == -ENOENT)
		rc = mds_fail(st, -ENOENT, "rename %s: no such file or"
			      " directory", from);
	if (rc)
		goto out;
	rc = mds_permit(cred, &wf.parent, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc == 0)
		rc = mds_permit(cred, &wt.parent, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc) {
		rc = mds_fail(st, -EACCES, "rename %s %s: no write permission"
			      " on a parent directory", from, to);
		goto out;
	}
	if (type == MDS_DIR && path_inside(from, to)) {
		if (strcmp(from, to) == 0)
			goto out;       /* renaming a name to itself: no-op */
		rc = mds_fail(st, -EINVAL, "rename %s %s: cannot move a"
			      " directory inside itself", from, to);
		goto out;
	}
	rc = mds_get_dirent(st, wt.parent.handle, wt.name, wt.len, &th,
			    &ttype);
	if (rc == 0) {
		if (th == h)
			goto out;       /* same object (same name): no-op */
		if (type == MDS_DIR && ttype != MDS_DIR) {
			rc = mds_fail(st, -ENOTDIR, "rename %s %s: %s is not a"
				      " directory", from, to, to);
			goto out;
		}
		if (type != MDS_DIR && ttype == MDS_DIR) {
			rc = mds_fail(st, -EISDIR, "rename %s %s: %s is a"
				      " directory", from, to, to);
			goto out;
		}
		rc = mds_get_attr(st, th, &target);
		if (rc)
			goto out;
		if (ttype == MDS_DIR && target.nentries > 0) {
			rc = mds_fail(st, -ENOTEMPTY, "rename %s %s: directory"
				      " %s not empty", from, to, to);
			goto out;
		}
		have_target = 1;
	} else if (rc != -ENOENT) {
		goto out;
	}
	rc = mds_get_attr(st, h, &moved);
	if (rc)
		goto out;
	rc = mds_sticky_permit(st, cred, "rename", from, &wf.parent, &moved);
	if (rc == 0 && have_target)
		rc = mds_sticky_permit(st, cred, "rename", to, &wt.parent, &target);
	if (rc)
		goto out;

	/* Both parents may be one directory: then update a single copy. */
	pf = &wf.parent;
	pt = wt.parent.handle == wf.parent.handle ? pf : &wt.parent;
	now = mds_now_ns();
	pf->nentries--;
	pt->nentries++;
	if (type == MDS_DIR) {
		pf->nlink--;
		pt->nlink++;
	}
	if (have_target) {
		pt->nentries--;
		if (ttype == MDS_DIR)
			pt->nlink--;
	}
	pf->mtime_ns = pf->ctime_ns = now;
	pt->mtime_ns = pt->ctime_ns = now;
	moved.ctime_ns = now;

	b = leveldb_writebatch_create();
	mds_batch_del_dirent(b, wf.parent.handle, wf.name, wf.len);
	mds_batch_put_dirent(b, wt.parent.handle, wt.name, wt.len, h, type);
	if (have_target) {
		mds_batch_del_attr(b, th);
		mds_batch_put_intent(b, &target);
		mds_batch_put_nnames(b, st->nnames - 1);
	}
	mds_batch_put_attr(b, &moved);
	mds_batch_put_attr(b, pf);
	if (pt != pf)
		mds_batch_put_attr(b, pt);
	rc = mds_batch_write(st, b, "rename", from);
	if (rc)
		goto out;
	if (have_target) {
		st->nnames--;
		if (ttype == MDS_FILE) {
			if (replaced_file)
				*replaced_file = 1;
			if (replaced)
				*replaced = target;
		}
	}
out:
	if (b)
		leveldb_writebatch_destroy(b);
	return rc;
}
