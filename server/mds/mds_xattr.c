/*
 * mds_xattr.c - extended attributes (mds_xattr.h): one "X" record per
 * attribute, "X" handle name -> value, written in the synchronous batch
 * that also writes the file's new ctime.
 */
#include "mds_store_int.h"
#include "mds_xattr.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* The namespaces (the name's prefix decides). */
enum xattr_ns {
	NS_USER,
	NS_TRUSTED,
	NS_SECURITY,
	NS_UNSUPPORTED,   /* system.posix_acl_* and every other name */
};

/* What the caller wants of an attribute. */
enum xattr_access { XA_READ, XA_WRITE };

/* One call in progress: what it names, for checks and messages. */
struct xattr_op {
	const char *op;        /* "getxattr", ... */
	const char *path;
	const char *name;
	size_t name_len;
	enum xattr_ns ns;
	struct mds_attr a;     /* the file's attributes */
	enum mds_follow follow; /* a link in the last component */
};

static int has_prefix(const char *name, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(name, prefix, n) == 0;
}

static enum xattr_ns ns_of(const char *name, size_t len)
{
	if (has_prefix(name, len, "user."))
		return NS_USER;
	if (has_prefix(name, len, "trusted."))
		return NS_TRUSTED;
	if (has_prefix(name, len, "security."))
		return NS_SECURITY;
	return NS_UNSUPPORTED;
}

/* The name's syntax: 1 to 255 bytes (ERANGE, as Linux), no NUL, a
 * namespace we keep (EOPNOTSUPP: ACLs are not enforced, so they are not
 * stored either) and something after its prefix (EINVAL, as Linux). */
static int check_name(struct mds_store *st, struct xattr_op *x)
{
	size_t plen;

	if (x->name_len == 0 || x->name_len > MDS_XATTR_NAME_MAX)
		return mds_fail(st, -ERANGE, "%s %s: attribute name of %zu bytes (1 to %d)",
				x->op, x->path, x->name_len, MDS_XATTR_NAME_MAX);
	if (memchr(x->name, '\0', x->name_len))
		return mds_fail(st, -EINVAL, "%s %s: attribute name with a NUL byte", x->op,
				x->path);
	x->ns = ns_of(x->name, x->name_len);
	if (x->ns == NS_UNSUPPORTED)
		return mds_fail(st, -EOPNOTSUPP, "%s %s: %.*s: only the user., trusted. and "
				"security. namespaces are supported (no POSIX ACLs)", x->op,
				x->path, (int)x->name_len, x->name);
	plen = x->ns == NS_USER ? 5 : x->ns == NS_TRUSTED ? 8 : 9;
	if (x->name_len == plen)
		return mds_fail(st, -EINVAL, "%s %s: %.*s: a namespace without a name", x->op,
				x->path, (int)x->name_len, x->name);
	return 0;
}

static int is_owner(const struct mds_cred *cred, const struct mds_attr *a)
{
	return cred->uid == 0 || cred->uid == a->uid;
}

/* user.: files and directories; a sticky directory's by its owner; then
 * the mode bits. */
static int permit_user(struct mds_store *st, const struct mds_cred *cred,
		       const struct xattr_op *x, enum xattr_access how)
{
	if (x->a.type != MDS_FILE && x->a.type != MDS_DIR)
		return how == XA_WRITE ?
			mds_fail(st, -EPERM, "%s %s: user. attributes only on files and "
				 "directories", x->op, x->path) :
			mds_fail(st, -ENODATA, "%s %s: no attribute %.*s", x->op, x->path,
				 (int)x->name_len, x->name);
	if (how == XA_WRITE && x->a.type == MDS_DIR && (x->a.mode & S_ISVTX) &&
	    !is_owner(cred, &x->a))
		return mds_fail(st, -EPERM, "%s %s: a sticky directory's user. attributes are "
				"its owner's (uid %u) to change", x->op, x->path, x->a.uid);
	if (mds_permit(cred, &x->a, how == XA_WRITE ? MDS_MAY_WRITE : MDS_MAY_READ))
		return mds_fail(st, -EACCES, "%s %s: no %s permission", x->op, x->path,
				how == XA_WRITE ? "write" : "read");
	return 0;
}

/* security.capability: the kernel removes it, in the writer's name, when
 * a file is written (as a local file system lets it), so whoever may
 * write the file may remove it; setting it stays root's. */
static int security_removable(const struct mds_cred *cred, const struct xattr_op *x)
{
	static const char caps[] = "security.capability";

	return x->name_len == sizeof(caps) - 1 && memcmp(x->name, caps, x->name_len) == 0 &&
	       mds_permit(cred, &x->a, MDS_MAY_WRITE) == 0;
}

/* Who may read or write the attribute x names (see mds_xattr.h). `remove`
 * is 1 for a removal. */
static int permit(struct mds_store *st, const struct mds_cred *cred, const struct xattr_op *x,
		  enum xattr_access how, int remove)
{
	switch (x->ns) {
	case NS_USER:
		return permit_user(st, cred, x, how);
	case NS_TRUSTED:
		if (cred->uid == 0)
			return 0;
		return how == XA_WRITE ?
			mds_fail(st, -EPERM, "%s %s: trusted. attributes are root's", x->op,
				 x->path) :
			mds_fail(st, -ENODATA, "%s %s: no attribute %.*s", x->op, x->path,
				 (int)x->name_len, x->name);
	case NS_SECURITY:
		if (how == XA_READ || cred->uid == 0 || (remove && security_removable(cred, x)))
			return 0;
		return mds_fail(st, -EPERM, "%s %s: only root may set security. attributes",
				x->op, x->path);
	case NS_UNSUPPORTED:
		break;
	}
	return mds_fail(st, -EOPNOTSUPP, "%s %s: unsupported namespace", x->op, x->path);
}

/* The file the call names (a link in the last component followed or
 * not): its attributes into *a. The one walk of every call here. */
static int xattr_walk(struct mds_store *st, const struct mds_cred *cred, const char *op,
		      const char *path, enum mds_follow follow, struct mds_attr *a)
{
	struct mds_walk w;

	return mds_walk_full_follow(st, cred, op, path, follow, &w, a);
}

/* Check the name, walk to the file and check the caller's right. */
static int xattr_open(struct mds_store *st, const struct mds_cred *cred, struct xattr_op *x,
		      enum xattr_access how, int remove)
{
	int rc = check_name(st, x);

	if (!rc)
		rc = xattr_walk(st, cred, x->op, x->path, x->follow, &x->a);
	if (!rc)
		rc = permit(st, cred, x, how, remove);
	return rc;
}

/* The value of x's attribute: 0 with *val (leveldb_free it), -ENODATA,
 * -EIO. */
static int value_of(struct mds_store *st, const struct xattr_op *x, char **val, size_t *vlen)
{
	unsigned char key[MDS_KEY_MAX];
	char *err = NULL;

	*val = leveldb_get(st->db, st->ropts, (char *)key,
			   mds_xattr_key(key, x->a.handle, x->name, x->name_len), vlen, &err);
	if (err) {
		mds_fail(st, -EIO, "%s %s: leveldb read: %s", x->op, x->path, err);
		leveldb_free(err);
		return -EIO;
	}
	if (!*val)
		return mds_fail(st, -ENODATA, "%s %s: no attribute %.*s", x->op, x->path,
				(int)x->name_len, x->name);
	return 0;
}

int mds_xattr_get(struct mds_store *st, const struct mds_cred *cred, const char *path,
		  enum mds_follow follow, const char *name, size_t name_len, void *buf, size_t cap, size_t *size)
{
	struct xattr_op x = { "getxattr", path, name, name_len, NS_UNSUPPORTED, { 0 }, follow };
	char *val;
	size_t vlen;
	int rc = xattr_open(st, cred, &x, XA_READ, 0);

	if (!rc)
		rc = value_of(st, &x, &val, &vlen);
	if (rc)
		return rc;
	*size = vlen;
	if (cap && vlen > cap)
		rc = mds_fail(st, -ERANGE, "getxattr %s: %.*s: value of %zu bytes, buffer of %zu",
			      path, (int)name_len, name, vlen, cap);
	else if (cap)
		memcpy(buf, val, vlen);
	leveldb_free(val);
	return rc;
}

/* What a file's attributes take, as the caps count it. */
struct xattr_usage {
	size_t names;    /* bytes of names, each with its NUL */
	size_t total;    /* bytes of names (with their NUL) and values */
};

/* What the attributes of x's file take now, but x's own attribute (which
 * a set replaces). 0 or -EIO. The loop is bounded by the caps. */
static int usage_of(struct mds_store *st, const struct xattr_op *x, struct xattr_usage *u)
{
	unsigned char prefix[9];
	leveldb_iterator_t *it = leveldb_create_iterator(st->db, st->ropts);
	char *err = NULL;

	memset(u, 0, sizeof(*u));
	mds_xattr_key(prefix, x->a.handle, "", 0);
	for (leveldb_iter_seek(it, (char *)prefix, sizeof(prefix)); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);

		if (kl < sizeof(prefix) || memcmp(k, prefix, sizeof(prefix)) != 0)
			break;
		if (kl - 9 == x->name_len && memcmp(k + 9, x->name, x->name_len) == 0)
			continue;
		(void)leveldb_iter_value(it, &vl);
		u->names += kl - 9 + 1;
		u->total += kl - 9 + 1 + vl;
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err) {
		mds_fail(st, -EIO, "%s %s: leveldb: %s", x->op, x->path, err);
		leveldb_free(err);
		return -EIO;
	}
	return 0;
}

/* A set: the value's size, the existence the caller asked for, the
 * file's caps. */
static int set_check(struct mds_store *st, const struct xattr_op *x, size_t vlen,
		     enum mds_xattr_how how)
{
	struct xattr_usage u;
	char *val;
	size_t old;
	int rc = value_of(st, x, &val, &old);

	if (rc == 0)
		leveldb_free(val);
	else if (rc != -ENODATA)
		return rc;
	if (rc == 0 && how == MDS_XATTR_CREATE)
		return mds_fail(st, -EEXIST, "setxattr %s: %.*s exists", x->path,
				(int)x->name_len, x->name);
	if (rc == -ENODATA && how != MDS_XATTR_REPLACE)
		rc = 0;
	if (rc)
		return rc;   /* REPLACE of an absent attribute: the message is set */
	if ((rc = usage_of(st, x, &u)))
		return rc;
	if (u.names + x->name_len + 1 > MDS_XATTR_LIST_MAX ||
	    u.total + x->name_len + 1 + vlen > MDS_XATTR_TOTAL_MAX)
		return mds_fail(st, -ENOSPC, "setxattr %s: %.*s: the file's attributes would "
				"take more than %d bytes of names or %d bytes in all", x->path,
				(int)x->name_len, x->name, MDS_XATTR_LIST_MAX,
				MDS_XATTR_TOTAL_MAX);
	return 0;
}

int mds_xattr_set(struct mds_store *st, const struct mds_cred *cred, const char *path,
		  enum mds_follow follow, const char *name, size_t name_len, const void *value, size_t vlen,
		  enum mds_xattr_how how)
{
	struct xattr_op x = { "setxattr", path, name, name_len, NS_UNSUPPORTED, { 0 }, follow };
	unsigned char key[MDS_KEY_MAX];
	leveldb_writebatch_t *b;
	int rc;

	if (how != MDS_XATTR_ANY && how != MDS_XATTR_CREATE && how != MDS_XATTR_REPLACE)
		return mds_fail(st, -EINVAL, "setxattr %s: unknown mode %d", path, (int)how);
	if (vlen > MDS_XATTR_VALUE_MAX)
		return mds_fail(st, -E2BIG, "setxattr %s: value of %zu bytes (at most %d)",
				path, vlen, MDS_XATTR_VALUE_MAX);
	rc = xattr_open(st, cred, &x, XA_WRITE, 0);
	if (rc)
		return rc;
	if ((rc = set_check(st, &x, vlen, how)))
		return rc;
	x.a.ctime_ns = tp_real_ns();
	b = leveldb_writebatch_create();
	leveldb_writebatch_put(b, (char *)key, mds_xattr_key(key, x.a.handle, name, name_len),
			       value, vlen);
	mds_batch_put_attr(b, &x.a);
	rc = mds_batch_write(st, b, "setxattr", path);
	leveldb_writebatch_destroy(b);
	return rc;
}

int mds_xattr_remove(struct mds_store *st, const struct mds_cred *cred, const char *path,
		     enum mds_follow follow, const char *name, size_t name_len)
{
	struct xattr_op x = { "removexattr", path, name, name_len, NS_UNSUPPORTED, { 0 }, follow };
	unsigned char key[MDS_KEY_MAX];
	leveldb_writebatch_t *b;
	char *val;
	size_t vlen;
	int rc = xattr_open(st, cred, &x, XA_WRITE, 1);

	if (!rc)
		rc = value_of(st, &x, &val, &vlen);
	if (rc)
		return rc;
	leveldb_free(val);
	x.a.ctime_ns = tp_real_ns();
	b = leveldb_writebatch_create();
	leveldb_writebatch_delete(b, (char *)key, mds_xattr_key(key, x.a.handle, name, name_len));
	mds_batch_put_attr(b, &x.a);
	rc = mds_batch_write(st, b, "removexattr", path);
	leveldb_writebatch_destroy(b);
	return rc;
}

/* May `cred` see name k (len bytes) in a list? trusted. is root's alone. */
static int listed(const struct mds_cred *cred, const char *k, size_t len)
{
	return ns_of(k, len) != NS_TRUSTED || cred->uid == 0;
}

/* Append name k (len bytes) and its NUL to the list (cap bytes of buf;
 * only *size grows when cap is 0). -ERANGE once it does not fit. */
static int list_add(char *buf, size_t cap, size_t *size, const char *k, size_t len)
{
	if (cap && *size + len + 1 > cap)
		return -ERANGE;
	if (cap) {
		memcpy(buf + *size, k, len);
		buf[*size + len] = '\0';
	}
	*size += len + 1;
	return 0;
}

int mds_xattr_list(struct mds_store *st, const struct mds_cred *cred, const char *path,
		   enum mds_follow follow, char *buf, size_t cap, size_t *size)
{
	struct mds_attr a;
	unsigned char prefix[9];
	leveldb_iterator_t *it;
	char *err = NULL;
	int rc = xattr_walk(st, cred, "listxattr", path, follow, &a);

	*size = 0;
	if (rc)
		return rc;
	mds_xattr_key(prefix, a.handle, "", 0);
	it = leveldb_create_iterator(st->db, st->ropts);
	for (leveldb_iter_seek(it, (char *)prefix, sizeof(prefix));
	     rc == 0 && leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);

		if (kl < sizeof(prefix) || memcmp(k, prefix, sizeof(prefix)) != 0)
			break;
		if (listed(cred, k + 9, kl - 9))
			rc = list_add(buf, cap, size, k + 9, kl - 9);
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err) {
		rc = mds_fail(st, -EIO, "listxattr %s: leveldb: %s", path, err);
		leveldb_free(err);
	} else if (rc) {
		rc = mds_fail(st, -ERANGE, "listxattr %s: the names take more than the buffer's "
			      "%zu bytes", path, cap);
	}
	return rc;
}
