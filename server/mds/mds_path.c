/*
 * mds_path.c - path syntax checks, POSIX permission classes and the walk
 * from the root to a path's parent directory.
 */
#include "mds_store_int.h"

#include <errno.h>
#include <sys/stat.h>
#include <string.h>

int mds_cred_in_group(const struct mds_cred *cred, uint32_t gid)
{
	for (uint32_t i = 0; i < cred->ngids; i++)
		if (cred->gids[i] == gid)
			return 1;
	return 0;
}

int mds_permit(const struct mds_cred *cred, const struct mds_attr *a,
	       int want)
{
	uint32_t bits;

	if (cred->uid == 0)
		return 0;       /* root may do anything */
	/* Exactly one class applies, the first that matches: an owner
	 * denied by the owner bits is not rescued by group/other bits. */
	if (cred->uid == a->uid)
		bits = (a->mode >> 6) & 7;
	else if (mds_cred_in_group(cred, a->gid))
		bits = (a->mode >> 3) & 7;
	else
		bits = a->mode & 7;
	return ((int)bits & want) == want ? 0 : -EACCES;
}

int mds_sticky_permit(struct mds_store *st, const struct mds_cred *cred, const char *op,
		      const char *path, const struct mds_attr *dir,
		      const struct mds_attr *entry)
{
	if (!(dir->mode & S_ISVTX) || cred->uid == 0 || cred->uid == dir->uid ||
	    cred->uid == entry->uid)
		return 0;
	return mds_fail(st, -EPERM, "%s %s: the directory is sticky and the entry belongs to "
			"uid %u, not uid %u", op, path, entry->uid, cred->uid);
}

/* Check the syntax of `path`: absolute, at most MDS_PATH_MAX bytes, each
 * component non-empty, not "." or "..", at most MDS_NAME_MAX bytes. "/"
 * alone is the root. */
static int check_path(struct mds_store *st, const char *op, const char *path)
{
	size_t total;
	const char *p, *e;

	if (!path || path[0] != '/')
		return mds_fail(st, -EINVAL, "%s %s: not an absolute path", op,
				path ? path : "(null)");
	total = strnlen(path, MDS_PATH_MAX + 1);
	if (total > MDS_PATH_MAX)
		return mds_fail(st, -ENAMETOOLONG,
				"%s: path longer than %d bytes", op,
				MDS_PATH_MAX);
	if (total == 1)
		return 0;
	for (p = path + 1;; p = e + 1) {
		size_t len;

		e = strchrnul(p, '/');
		len = (size_t)(e - p);
		if (len == 0)
			return mds_fail(st, -EINVAL,
					"%s %s: empty path component", op,
					path);
		if ((len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return mds_fail(st, -EINVAL,
					"%s %s: \".\" and \"..\" are not"
					" allowed", op, path);
		if (len > MDS_NAME_MAX)
			return mds_fail(st, -ENAMETOOLONG,
					"%s %s: a name is longer than %d"
					" bytes", op, path, MDS_NAME_MAX);
		if (*e == '\0')
			return 0;
	}
}

int mds_walk_parent(struct mds_store *st, const struct mds_cred *cred,
		    const char *op, const char *path, struct mds_walk *w)
{
	struct mds_attr *cur = &w->parent;
	const char *p, *e;
	int rc;

	if (!cred)
		return mds_fail(st, -EINVAL, "%s: no credentials", op);
	rc = check_path(st, op, path);
	if (rc)
		return rc;
	rc = mds_get_attr(st, st->root, cur);
	if (rc)
		return rc == -ENOENT ? mds_fail(st, -EIO, "%s %s: root missing",
						op, path) : rc;
	w->parent_len = 1;
	if (path[1] == '\0') {
		w->name = path + 1;
		w->len = 0;
		return 0;
	}
	/* Invariant: cur is a directory, named by path[0..parent_len). */
	for (p = path + 1;; p = e + 1) {
		size_t len;
		uint64_t h;
		uint32_t type;

		e = strchrnul(p, '/');
		len = (size_t)(e - p);
		if (mds_permit(cred, cur, MDS_MAY_EXEC))
			return mds_fail(st, -EACCES,
					"%s %s: no search permission on %.*s",
					op, path, (int)w->parent_len, path);
		if (*e == '\0') {
			w->name = p;
			w->len = len;
			return 0;
		}
		rc = mds_get_dirent(st, cur->handle, p, len, &h, &type);
		if (rc == -ENOENT)
			return mds_fail(st, -ENOENT,
					"%s %s: no such directory %.*s", op,
					path, (int)(e - path), path);
		if (rc)
			return rc;
		rc = mds_get_attr(st, h, cur);
		if (rc)
			return rc == -ENOENT ?
				mds_fail(st, -EIO, "%s %s: dangling entry %.*s",
					 op, path, (int)(e - path), path) : rc;
		if (cur->type != MDS_DIR)
			return mds_fail(st, -ENOTDIR,
					"%s %s: %.*s is not a directory", op,
					path, (int)(e - path), path);
		w->parent_len = (size_t)(e - path);
	}
}

int mds_walk_full(struct mds_store *st, const struct mds_cred *cred,
		  const char *op, const char *path, struct mds_walk *w,
		  struct mds_attr *out)
{
	uint64_t h;
	uint32_t type;
	int rc;

	rc = mds_walk_parent(st, cred, op, path, w);
	if (rc)
		return rc;
	if (w->len == 0) {
		*out = w->parent;
		return 0;
	}
	rc = mds_get_dirent(st, w->parent.handle, w->name, w->len, &h, &type);
	if (rc == -ENOENT)
		return mds_fail(st, -ENOENT, "%s %s: no such file or directory",
				op, path);
	if (rc)
		return rc;
	rc = mds_get_attr(st, h, out);
	if (rc == -ENOENT)
		return mds_fail(st, -EIO, "%s %s: dangling entry", op, path);
	return rc;
}
