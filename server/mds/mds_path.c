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
	return tp_mode_permits(cred->uid, cred->gids, cred->ngids, a->mode, a->uid, a->gid,
			       (uint32_t)want)
		       ? 0
		       : -EACCES;
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

/* One step of the walk: w->dir gets component c appended (cur moved into
 * it), or loses its last component (".."). */
static void dir_push(struct mds_walk *w, const char *c, size_t len)
{
	size_t n = strlen(w->dir);

	if (n > 1)
		w->dir[n++] = '/';
	memcpy(w->dir + n, c, len);
	w->dir[n + len] = '\0';
}

/* ".." from w->dir: its parent (the root's is the root), found again from
 * the root. Every component of w->dir is a directory (links resolved), so
 * this walk follows no link; search permission is checked again. */
static int dir_pop(struct mds_store *st, const struct mds_cred *cred, const char *op,
		   const char *path, struct mds_walk *w, struct mds_attr *cur)
{
	char *slash = strrchr(w->dir, '/');
	const char *p, *e;
	int rc;

	st->walked_plain = 0;
	if (slash == w->dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	rc = mds_get_attr(st, st->root, cur);
	for (p = w->dir + 1; !rc && *p; p = *e ? e + 1 : e) {
		uint64_t h;
		uint32_t type;

		e = strchrnul(p, '/');
		if (mds_permit(cred, cur, MDS_MAY_EXEC))
			return mds_fail(st, -EACCES, "%s %s: no search permission on a"
					" directory above %s", op, path, w->dir);
		rc = mds_get_dirent(st, cur->handle, p, (size_t)(e - p), &h, &type);
		if (!rc)
			rc = mds_get_attr(st, h, cur);
		if (!rc && cur->type != MDS_DIR)
			rc = -ENOENT;
	}
	if (rc)
		return mds_fail(st, rc == -EIO ? -EIO : -ENOENT, "%s %s: directory %s changed"
				" during the walk", op, path, w->dir);
	return 0;
}

/* Link `link` (reached with `rest` still to walk: "" or "/more") replaces
 * what is left of the walk by its target followed by rest; an absolute
 * target restarts at the root. *next: where the walk goes on in w->buf. */
static int follow_link(struct mds_store *st, const char *op, const char *path,
		       struct mds_walk *w, const struct mds_attr *link, const char *rest,
		       struct mds_attr *cur, const char **next)
{
	char target[MDS_TARGET_MAX + 1];
	size_t tl, rl = strlen(rest);
	int rc;

	st->walked_plain = 0;
	if (++w->nfollowed > MDS_SYMLOOP_MAX)
		return mds_fail(st, -ELOOP, "%s %s: more than %d symbolic links (a loop?)",
				op, path, MDS_SYMLOOP_MAX);
	rc = mds_get_target(st, link->handle, target, sizeof(target));
	if (rc)
		return rc;
	tl = strlen(target);
	if (tl + rl > MDS_PATH_MAX)
		return mds_fail(st, -ENAMETOOLONG, "%s %s: path through symbolic links longer"
				" than %d bytes", op, path, MDS_PATH_MAX);
	memmove(w->buf + tl, rest, rl + 1);   /* rest may point into w->buf */
	memcpy(w->buf, target, tl);
	if (target[0] == '/') {
		strcpy(w->dir, "/");
		rc = mds_get_attr(st, st->root, cur);
		if (rc)
			return rc;
	}
	*next = w->buf;
	return 0;
}

/* The walk ended on the directory cur itself: no last name. */
static int walk_at_dir(struct mds_store *st, struct mds_walk *w, const struct mds_attr *cur,
		       struct mds_attr *out)
{
	st->n_walked = 0;
	w->parent = *cur;
	w->name = w->buf + strlen(w->buf);
	w->len = 0;
	w->found = 1;
	if (out)
		*out = *cur;
	return 0;
}

/* How far a walk goes: to the last component's parent, or to the last
 * component itself (following a link there or not). */
enum walk_end { WALK_PARENT, WALK_LAST_FOLLOW, WALK_LAST_NOFOLLOW };

/* The last component, name [c, c+len) in directory cur: *out and w->found,
 * or a link to follow (1). */
static int walk_last(struct mds_store *st, const char *op, const char *path,
		     struct mds_walk *w, const struct mds_attr *cur, const char *c, size_t len,
		     enum walk_end end, struct mds_attr *out)
{
	uint64_t h;
	uint32_t type;
	int rc;

	w->parent = *cur;
	w->name = c;
	w->len = len;
	w->found = 0;
	st->walked_to_last = 1;
	if (end == WALK_PARENT)
		return 0;
	rc = mds_get_dirent(st, cur->handle, c, len, &h, &type);
	if (rc == -ENOENT)
		return 0;
	if (!rc)
		rc = mds_get_attr(st, h, out);
	if (rc == -ENOENT)
		return mds_fail(st, -EIO, "%s %s: dangling entry", op, path);
	if (rc)
		return rc;
	if (out->type == MDS_SYMLINK && end == WALK_LAST_FOLLOW)
		return 1;
	w->found = 1;
	return 0;
}

/* A component before the last: cur moves into it, or *link gets the link
 * to follow (return 1). */
static int walk_middle(struct mds_store *st, const char *op, const char *path,
		       struct mds_walk *w, struct mds_attr *cur, const char *c, size_t len,
		       struct mds_attr *link)
{
	uint64_t h;
	uint32_t type;
	int rc = mds_get_dirent(st, cur->handle, c, len, &h, &type);

	if (rc == -ENOENT)
		return mds_fail(st, -ENOENT, "%s %s: no such directory %s%s%.*s", op, path,
				w->dir, w->dir[1] ? "/" : "", (int)len, c);
	if (!rc)
		rc = mds_get_attr(st, h, link);
	if (rc)
		return rc == -ENOENT ? mds_fail(st, -EIO, "%s %s: dangling entry %s%s%.*s",
						op, path, w->dir, w->dir[1] ? "/" : "",
						(int)len, c) : rc;
	if (link->type == MDS_SYMLINK)
		return 1;
	if (link->type != MDS_DIR)
		return mds_fail(st, -ENOTDIR, "%s %s: %s%s%.*s is not a directory", op, path,
				w->dir, w->dir[1] ? "/" : "", (int)len, c);
	*cur = *link;
	dir_push(w, c, len);
	if (st->n_walked < MDS_WALKED_MAX)
		st->walked[st->n_walked++] = cur->handle;
	else
		st->walked_plain = 0;
	return 0;
}

/* One component [c, c + len) of a walk in directory *cur, `e` just past
 * it, `last` when nothing follows: cur moves (into a directory, "..", or
 * the root of an absolute link target), or the walk's last name is
 * reached (w->found, *out). *next: where the walk goes on. 0 or a
 * negative errno; 1 when the last name was reached. */
static int walk_step(struct mds_store *st, const struct mds_cred *cred, const char *op,
		     const char *path, enum walk_end end, struct mds_walk *w,
		     struct mds_attr *cur, const char *c, size_t len, const char *e, int last,
		     struct mds_attr *out, const char **next)
{
	int rc;

	if (len == 1 && c[0] == '.')
		return 0;
	if (len == 2 && c[0] == '.' && c[1] == '.')
		return dir_pop(st, cred, op, path, w, cur);
	if (mds_permit(cred, cur, MDS_MAY_EXEC))
		return mds_fail(st, -EACCES, "%s %s: no search permission on %s", op, path,
				w->dir);
	if (last) {
		rc = walk_last(st, op, path, w, cur, c, len, end, out);
		if (rc != 1)
			return rc ? rc : 1;
	} else {
		rc = walk_middle(st, op, path, w, cur, c, len, out);
		if (rc != 1)
			return rc;
	}
	return follow_link(st, op, path, w, out, e, cur, next);
}

/* The walk: components of w->buf one at a time from the root. Links in
 * the middle are always followed (their target replaces them in w->buf);
 * "." and ".." can only come from link targets (check_path refuses them
 * in requests). */
static int walk(struct mds_store *st, const struct mds_cred *cred, const char *op,
		const char *path, enum walk_end end, struct mds_walk *w, struct mds_attr *out)
{
	struct mds_attr cur, scratch;
	const char *p;
	int rc;

	if (!cred)
		return mds_fail(st, -EINVAL, "%s: no credentials", op);
	rc = check_path(st, op, path);
	if (rc)
		return rc;
	rc = mds_get_attr(st, st->root, &cur);
	if (rc)
		return rc == -ENOENT ? mds_fail(st, -EIO, "%s %s: root missing", op, path) : rc;
	strcpy(w->dir, "/");
	strcpy(w->buf, path);
	w->nfollowed = 0;
	st->walked[0] = cur.handle;
	st->n_walked = 1;
	st->walked_plain = 1;
	st->walked_to_last = 0;
	for (p = w->buf;;) {
		const char *c, *e;
		int last;

		while (*p == '/')
			p++;
		if (!*p)
			return walk_at_dir(st, w, &cur, out);
		c = p;
		e = strchrnul(c, '/');
		for (p = e; *p == '/'; p++)
			;
		last = *p == '\0';
		rc = walk_step(st, cred, op, path, end, w, &cur, c, (size_t)(e - c), e, last,
			       out ? out : &scratch, &p);
		if (rc)
			return rc < 0 ? rc : 0;
		if (last && !*p)
			return walk_at_dir(st, w, &cur, out);
	}
}

int mds_walk_parent(struct mds_store *st, const struct mds_cred *cred,
		    const char *op, const char *path, struct mds_walk *w)
{
	return walk(st, cred, op, path, WALK_PARENT, w, NULL);
}

int mds_walk_last(struct mds_store *st, const struct mds_cred *cred, const char *op,
		  const char *path, enum mds_follow follow, struct mds_walk *w,
		  struct mds_attr *out)
{
	return walk(st, cred, op, path,
		    follow == MDS_FOLLOW ? WALK_LAST_FOLLOW : WALK_LAST_NOFOLLOW, w, out);
}

int mds_walk_full_follow(struct mds_store *st, const struct mds_cred *cred, const char *op,
			 const char *path, enum mds_follow follow, struct mds_walk *w,
			 struct mds_attr *out)
{
	int rc = mds_walk_last(st, cred, op, path, follow, w, out);

	if (!rc && !w->found)
		return mds_fail(st, -ENOENT, "%s %s: no such file or directory", op, path);
	return rc;
}

int mds_walk_full(struct mds_store *st, const struct mds_cred *cred,
		  const char *op, const char *path, struct mds_walk *w,
		  struct mds_attr *out)
{
	return mds_walk_full_follow(st, cred, op, path, MDS_FOLLOW, w, out);
}
