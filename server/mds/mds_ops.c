/*
 * mds_ops.c - the namespace operations of mds_store.h. Each mutation
 * reads what it needs, checks, then writes one LevelDB batch
 * (mds_batch_write), so it is atomic, and durable when it returns 0 or,
 * in the daemon (group commit), at the turn's mds_store_commit; the
 * in-memory counters of struct mds_store change only after that write
 * succeeded.
 */
#include "mds_store_int.h"
#include "tdl.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* The caller needs write+search permission on the directory it changes. */
static int check_parent_write(struct mds_store *st,
			      const struct mds_cred *cred, const char *op,
			      const char *path, const struct mds_walk *w)
{
	if (mds_permit(cred, &w->parent, MDS_MAY_WRITE | MDS_MAY_EXEC))
		return mds_fail(st, -EACCES,
				"%s %s: no write permission on %s", op, path, w->dir);
	return 0;
}

/* Walk to where a new name `path` goes: it must not exist (not even as a
 * dangling symbolic link: -EEXIST) and the caller must be allowed to add
 * it. */
static int walk_new(struct mds_store *st, const struct mds_cred *cred, const char *op,
		    const char *path, struct mds_walk *w)
{
	uint64_t h;
	uint32_t type;
	int rc = mds_walk_parent(st, cred, op, path, w);

	if (rc)
		return rc;
	if (w->len == 0)
		return mds_fail(st, -EEXIST, "%s %s: file exists", op, path);
	rc = mds_get_dirent(st, w->parent.handle, w->name, w->len, &h, &type);
	if (rc == 0)
		return mds_fail(st, -EEXIST, "%s %s: file exists", op, path);
	if (rc != -ENOENT)
		return rc;
	return check_parent_write(st, cred, op, path, w);
}

/* Owner and group of a new object in `parent`: a set-group-ID directory
 * passes its group on, otherwise the caller's primary group (or the
 * parent's group when the caller gave none). */
static void new_owner(const struct mds_cred *cred, const struct mds_attr *parent,
		      struct mds_attr *a)
{
	a->uid = cred->uid;
	if ((parent->mode & S_ISGID) || cred->ngids == 0)
		a->gid = parent->gid;
	else
		a->gid = cred->gids[0];
}

int mds_lookup_follow(struct mds_store *st, const struct mds_cred *cred, const char *path,
		      enum mds_follow follow, struct mds_attr *out)
{
	struct mds_walk w;

	return mds_walk_full_follow(st, cred, "lookup", path, follow, &w, out);
}

int mds_lookup(struct mds_store *st, const struct mds_cred *cred,
	       const char *path, struct mds_attr *out)
{
	return mds_lookup_follow(st, cred, path, MDS_FOLLOW, out);
}

int mds_mkdir(struct mds_store *st, const struct mds_cred *cred,
	      const char *path, uint32_t mode, struct mds_attr *out)
{
	struct mds_walk w;
	struct mds_attr d;
	leveldb_writebatch_t *b = NULL;
	int64_t now;
	int rc;

	rc = walk_new(st, cred, "mkdir", path, &w);
	if (rc)
		goto out;

	memset(&d, 0, sizeof d);
	rc = mds_alloc_handles(st, 1, &d.handle);
	if (rc)
		goto out;
	now = tp_real_ns();
	d.type = MDS_DIR;
	d.mode = mode & 07777;
	new_owner(cred, &w.parent, &d);
	if (w.parent.mode & S_ISGID)
		d.mode |= S_ISGID;      /* BSD group semantics propagate */
	d.nlink = 2;
	d.atime_ns = d.mtime_ns = d.ctime_ns = d.mtime_set_ns = now;
	/* A new directory starts with its parent's default layout, so a
	 * default set on a tree applies to the whole tree made below it. */
	d.has_layout = w.parent.has_layout;
	d.layout.strip_size = w.parent.layout.strip_size;
	d.layout.count = w.parent.layout.count;
	d.layout.versioned = w.parent.layout.versioned;

	w.parent.nentries++;
	w.parent.nlink++;
	w.parent.mtime_ns = w.parent.ctime_ns = now;

	b = leveldb_writebatch_create();
	mds_batch_put_attr(b, &d);
	mds_batch_put_dirent(b, w.parent.handle, w.name, w.len, d.handle,
			     MDS_DIR);
	mds_batch_put_attr(b, &w.parent);
	mds_batch_put_nnames(b, st->nnames + 1);
	rc = mds_batch_write(st, b, "mkdir", path);
	if (rc)
		goto out;
	st->nnames++;
	if (out)
		*out = d;
out:
	if (b)
		leveldb_writebatch_destroy(b);
	return rc;
}

/* The name mds_create was asked for exists: `a` (a link only when it was
 * not to be followed). */
static int create_existing(struct mds_store *st, const struct mds_create_req *rq,
			   const struct mds_attr *a, struct mds_attr *out)
{
	if (a->type == MDS_DIR)
		return mds_fail(st, -EISDIR, "create %s: is a directory", rq->path);
	if (rq->how == MDS_CREATE_EXCLUSIVE)
		return mds_fail(st, -EEXIST, "create %s: file exists", rq->path);
	if (a->type == MDS_SYMLINK)
		return mds_fail(st, -ELOOP, "create %s: is a symbolic link (not followed)",
				rq->path);
	if (out)
		*out = *a;
	return 0;
}

/* The new file's layout (strip size, stripe count; not its objects): the
 * request's, else the directory's default, else all storage daemons (at
 * most TP_MAX_STRIPE) and the caller's default strip, else ours. */
static int create_layout(struct mds_store *st, const struct mds_create_req *rq,
			 const struct mds_attr *parent, struct mds_layout *l)
{
	uint32_t max_count = st->n_ios < TP_MAX_STRIPE ? st->n_ios : TP_MAX_STRIPE;
	uint32_t count = rq->stripe_count;
	char why[160];

	if (count > max_count)
		return mds_fail(st, -EINVAL, "create %s: stripe count %u above"
				" the %u storage daemons", rq->path, count, max_count);
	if (!count && parent->has_layout)
		count = parent->layout.count;
	if (!count || count > max_count)
		count = max_count;   /* a default set when n_ios was larger */
	l->strip_size = rq->strip_size;
	if (!l->strip_size && parent->has_layout)
		l->strip_size = parent->layout.strip_size;
	if (!l->strip_size)
		l->strip_size = rq->default_strip ? rq->default_strip : MDS_DEFAULT_STRIP;
	l->count = count;
	l->versioned = rq->versioned == MDS_VERSIONING_ON ||
		       (parent->has_layout && parent->layout.versioned);
	/* Whichever of them chose it, the strip must be one the striping
	 * math takes (a directory default set before the limit, say). */
	if (tdl_layout_check(&(struct tdl_layout){ l->strip_size, count }, why, sizeof(why)))
		return mds_fail(st, -EINVAL, "create %s: %s", rq->path, why);
	return 0;
}

int mds_create(struct mds_store *st, const struct mds_cred *cred,
	       const struct mds_create_req *rq, struct mds_attr *out, int *created)
{
	const char *path = rq->path;
	struct mds_walk w;
	struct mds_attr f;
	leveldb_writebatch_t *b = NULL;
	uint64_t handles[1 + TP_MAX_STRIPE];
	uint32_t first;
	int64_t now;
	int rc;

	if (created)
		*created = 0;
	/* O_CREAT follows a link to its target, even a dangling one (the
	 * target is created); O_EXCL never does. */
	rc = mds_walk_last(st, cred, "create", path,
			   rq->how == MDS_CREATE_EXCLUSIVE ? MDS_NOFOLLOW : rq->follow, &w, &f);
	if (rc)
		goto out;
	if (w.found) {
		rc = create_existing(st, rq, &f, out);
		goto out;
	}
	rc = check_parent_write(st, cred, "create", path, &w);
	if (rc)
		goto out;

	memset(&f, 0, sizeof f);
	rc = create_layout(st, rq, &w.parent, &f.layout);
	if (rc)
		goto out;
	f.has_layout = 1;
	rc = mds_alloc_handles(st, 1 + f.layout.count, handles);
	if (rc)
		goto out;
	f.handle = handles[0];
	first = st->rotor % st->n_ios;
	for (uint32_t i = 0; i < f.layout.count; i++) {
		f.layout.handles[i] = handles[1 + i];
		f.layout.servers[i] = (first + i) % st->n_ios;
	}
	now = tp_real_ns();
	f.type = MDS_FILE;
	f.mode = rq->mode & 07777;
	new_owner(cred, &w.parent, &f);
	f.nlink = 1;
	f.atime_ns = f.mtime_ns = f.ctime_ns = f.mtime_set_ns = now;

	w.parent.nentries++;
	w.parent.mtime_ns = w.parent.ctime_ns = now;

	b = leveldb_writebatch_create();
	mds_batch_put_attr(b, &f);
	mds_batch_put_dirent(b, w.parent.handle, w.name, w.len, f.handle,
			     MDS_FILE);
	mds_batch_put_attr(b, &w.parent);
	mds_batch_put_nnames(b, st->nnames + 1);
	mds_batch_put_rotor(b, (first + 1) % st->n_ios);
	rc = mds_batch_write(st, b, "create", path);
	if (rc)
		goto out;
	st->nnames++;
	st->rotor = (first + 1) % st->n_ios;
	if (out)
		*out = f;
	if (created)
		*created = 1;
out:
	if (b)
		leveldb_writebatch_destroy(b);
	return rc;
}

/* The parts of a setattr, each checking what `cred` may change of the
 * attributes `a` had and writing the change into `n`; the caller applies
 * all of them or none. `owner` includes root. */

/* The set-ID bits a write, truncate or chown by someone without the
 * privilege to keep them takes away (Linux's should_remove_suid): setuid
 * always, setgid only with group-exec (without it, setgid marks
 * mandatory locking, which is not a privilege). */
static uint32_t privs_to_kill(uint32_t mode)
{
	uint32_t kill = mode & S_ISUID;

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	return kill;
}

/* A chmod that only clears setuid/setgid bits the file has, the "kill
 * priv" a mount sends for a non-owner's write or truncate: anyone who may
 * write the file may make it (the write itself would clear them). */
static int kills_privs_only(const struct mds_attr *a, uint32_t mode)
{
	uint32_t cleared = a->mode & ~mode & 07777;

	return (mode & ~a->mode & 07777) == 0 && cleared &&
	       (cleared & ~(uint32_t)(S_ISUID | S_ISGID)) == 0;
}

static int set_mode(struct mds_store *st, const struct mds_cred *cred, const char *path,
		    const struct mds_attr *in, const struct mds_attr *a, int owner,
		    struct mds_attr *n)
{
	if (!owner && kills_privs_only(a, in->mode & 07777)) {
		if (mds_permit(cred, a, MDS_MAY_WRITE))
			return mds_fail(st, -EPERM, "chmod %s: not the owner, and no write"
					" permission to clear its set-ID bits", path);
		n->mode = in->mode & 07777;
		return 0;
	}
	if (!owner)
		return mds_fail(st, -EPERM, "chmod %s: not the owner", path);
	if (a->type == MDS_SYMLINK)   /* Linux's lchmod: a link's mode is 0777 */
		return mds_fail(st, -EOPNOTSUPP, "chmod %s: a symbolic link's mode cannot"
				" change", path);
	n->mode = in->mode & 07777;
	if (cred->uid != 0 && !mds_cred_in_group(cred, a->gid))
		n->mode &= ~(uint32_t)S_ISGID;
	return 0;
}

/* chown of anything but a directory drops its set-ID bits, root's too
 * (Linux since 2.2.13; its chown_common asks it for every type but
 * directories), setgid only with group-exec; unless the same request
 * sets the mode. (A mount with FUSE_HANDLE_KILLPRIV_V2 leaves it to us
 * for FIFOs, sockets and devices too.) */
static void chown_kills_privs(uint32_t valid, struct mds_attr *n)
{
	if ((valid & (MDS_SET_UID | MDS_SET_GID)) && !(valid & MDS_SET_MODE) &&
	    n->type != MDS_DIR)
		n->mode &= ~privs_to_kill(n->mode);
}

static int set_owner(struct mds_store *st, const struct mds_cred *cred, const char *path,
		     uint32_t valid, const struct mds_attr *in, const struct mds_attr *a,
		     int owner, struct mds_attr *n)
{
	int root = cred->uid == 0;

	if ((valid & MDS_SET_UID) && in->uid != a->uid && !root)
		return mds_fail(st, -EPERM, "chown %s: only root may give a"
				" file away", path);
	if ((valid & MDS_SET_UID) && !owner)
		return mds_fail(st, -EPERM, "chown %s: not the owner", path);
	if ((valid & MDS_SET_GID) && !root &&
	    (!owner || (in->gid != a->gid && !mds_cred_in_group(cred, in->gid))))
		return mds_fail(st, -EPERM, "chgrp %s: not the owner or not a"
				" member of group %u", path, in->gid);
	if (valid & MDS_SET_UID)
		n->uid = in->uid;
	if (valid & MDS_SET_GID)
		n->gid = in->gid;
	chown_kills_privs(valid, n);
	return 0;
}

static int set_times(struct mds_store *st, const struct mds_cred *cred, const char *path,
		     uint32_t valid, const struct mds_attr *in, const struct mds_attr *a,
		     int owner, int64_t now, struct mds_attr *n)
{
	if ((valid & (MDS_SET_ATIME | MDS_SET_MTIME)) && !owner)
		return mds_fail(st, -EPERM, "utimens %s: not the owner", path);
	if ((valid & (MDS_SET_ATIME_NOW | MDS_SET_MTIME_NOW)) && !owner &&
	    mds_permit(cred, a, MDS_MAY_WRITE))
		return mds_fail(st, -EACCES, "utimens %s: permission denied",
				path);
	if (valid & MDS_SET_ATIME)
		n->atime_ns = in->atime_ns;
	if (valid & MDS_SET_MTIME)
		n->mtime_ns = in->mtime_ns;
	if (valid & MDS_SET_ATIME_NOW)
		n->atime_ns = now;
	if (valid & MDS_SET_MTIME_NOW)
		n->mtime_ns = now;
	return 0;
}

static int set_size(struct mds_store *st, const struct mds_cred *cred, const char *path,
		    uint32_t valid, const struct mds_attr *in, const struct mds_attr *a,
		    int64_t now, struct mds_attr *n)
{
	if (a->type == MDS_DIR)
		return mds_fail(st, -EISDIR, "truncate %s: is a directory", path);
	if (a->type != MDS_FILE)
		return mds_fail(st, -EINVAL, "truncate %s: not a regular file", path);
	if (mds_permit(cred, a, MDS_MAY_WRITE))
		return mds_fail(st, -EACCES, "truncate %s: permission denied", path);
	n->size = in->size;
	/* A truncate by anyone but root drops the set-ID bits (as a write). */
	if (cred->uid != 0 && !(valid & MDS_SET_MODE))
		n->mode &= ~privs_to_kill(n->mode);
	/* truncate(2) changes mtime unless told otherwise */
	if (!(valid & (MDS_SET_MTIME | MDS_SET_MTIME_NOW)))
		n->mtime_ns = now;
	return 0;
}

/* Check what `cred` may change of `a` and apply it (all or nothing). */
static int apply_setattr(struct mds_store *st, const struct mds_cred *cred,
			 const char *path, uint32_t valid,
			 const struct mds_attr *in, struct mds_attr *a,
			 int64_t now)
{
	int owner = cred->uid == 0 || cred->uid == a->uid;
	struct mds_attr n = *a;
	int rc = 0;

	if (valid & MDS_SET_MODE)
		rc = set_mode(st, cred, path, in, a, owner, &n);
	if (!rc)
		rc = set_owner(st, cred, path, valid, in, a, owner, &n);
	if (!rc)
		rc = set_times(st, cred, path, valid, in, a, owner, now, &n);
	if (!rc && (valid & MDS_SET_SIZE))
		rc = set_size(st, cred, path, valid, in, a, now, &n);
	if (rc)
		return rc;
	/* Storage objects written before now no longer speak for mtime. */
	if (valid & (MDS_SET_MTIME | MDS_SET_MTIME_NOW | MDS_SET_SIZE))
		n.mtime_set_ns = now;
	n.ctime_ns = now;
	*a = n;
	return 0;
}

int mds_setattr(struct mds_store *st, const struct mds_cred *cred,
		const char *path, uint32_t valid, const struct mds_attr *in,
		struct mds_attr *out)
{
	return mds_setattr_follow(st, cred, path, MDS_FOLLOW, valid, in, out);
}

int mds_setattr_follow(struct mds_store *st, const struct mds_cred *cred, const char *path,
		       enum mds_follow follow, uint32_t valid, const struct mds_attr *in,
		       struct mds_attr *out)
{
	struct mds_walk w;
	struct mds_attr a;
	leveldb_writebatch_t *b = NULL;
	int rc;

	rc = mds_walk_full_follow(st, cred, "setattr", path, follow, &w, &a);
	if (rc)
		goto out;
	if (valid) {
		rc = apply_setattr(st, cred, path, valid, in, &a,
				   tp_real_ns());
		if (rc)
			goto out;
		b = leveldb_writebatch_create();
		mds_batch_put_attr(b, &a);
		/* (a size is the data's business: synced as names are) */
		rc = valid & MDS_SET_SIZE ? mds_batch_write(st, b, "setattr", path)
					  : mds_batch_write_attrs(st, b, "setattr", path);
		if (rc)
			goto out;
	}
	if (out)
		*out = a;
out:
	if (b)
		leveldb_writebatch_destroy(b);
	return rc;
}

/* How a SETLAYOUT changes a directory's default: field by field (a zero
 * keeps what it had), cleared first, or made versioned (the rest kept). */
enum dir_layout_change { DIR_LAYOUT_MERGE, DIR_LAYOUT_CLEAR, DIR_LAYOUT_VERSIONED };

/* Who may set directory d's default, and to what. */
static int dir_layout_check(struct mds_store *st, const struct mds_cred *cred, const char *path,
			    const struct mds_attr *d, uint64_t strip_size, uint32_t stripe_count)
{
	if (cred->uid != 0 && cred->uid != d->uid)
		return mds_fail(st, -EPERM, "setlayout %s: not the owner", path);
	if (stripe_count > st->n_ios || stripe_count > TP_MAX_STRIPE)
		return mds_fail(st, -EINVAL, "setlayout %s: stripe count %u above"
				" the %u storage daemons", path, stripe_count, st->n_ios);
	if (strip_size > TDL_MAX_STRIP_SIZE)
		return mds_fail(st, -EINVAL, "setlayout %s: strip size %llu above the limit"
				" of 4 GiB", path, (unsigned long long)strip_size);
	return 0;
}

static int dir_layout(struct mds_store *st, const struct mds_cred *cred,
		      const char *path, uint64_t strip_size,
		      uint32_t stripe_count, enum dir_layout_change how)
{
	struct mds_walk w;
	struct mds_attr d;
	leveldb_writebatch_t *b = NULL;
	int rc;

	rc = mds_walk_full(st, cred, "setlayout", path, &w, &d);
	if (rc)
		goto out;
	if (d.type != MDS_DIR) {
		rc = mds_fail(st, -ENOTDIR, "setlayout %s: not a directory",
			      path);
		goto out;
	}
	if ((rc = dir_layout_check(st, cred, path, &d, strip_size, stripe_count)))
		goto out;
	/* A zero field keeps what the directory had (0 there = inherit). */
	if (!d.has_layout || how == DIR_LAYOUT_CLEAR) {
		d.layout.strip_size = 0;
		d.layout.count = 0;
		d.layout.versioned = 0;
	}
	if (strip_size)
		d.layout.strip_size = strip_size;
	if (stripe_count)
		d.layout.count = stripe_count;
	if (how == DIR_LAYOUT_VERSIONED)
		d.layout.versioned = 1;
	d.has_layout = d.layout.strip_size || d.layout.count || d.layout.versioned;
	d.ctime_ns = tp_real_ns();
	b = leveldb_writebatch_create();
	mds_batch_put_attr(b, &d);
	rc = mds_batch_write(st, b, "setlayout", path);
out:
	if (b)
		leveldb_writebatch_destroy(b);
	return rc;
}

int mds_set_dir_layout(struct mds_store *st, const struct mds_cred *cred,
		       const char *path, uint64_t strip_size,
		       uint32_t stripe_count)
{
	return dir_layout(st, cred, path, strip_size, stripe_count,
			  DIR_LAYOUT_MERGE);
}

int mds_set_dir_versioned(struct mds_store *st, const struct mds_cred *cred, const char *path)
{
	return dir_layout(st, cred, path, 0, 0, DIR_LAYOUT_VERSIONED);
}

int mds_clear_dir_layout(struct mds_store *st, const struct mds_cred *cred,
			 const char *path)
{
	return dir_layout(st, cred, path, 0, 0, DIR_LAYOUT_CLEAR);
}

/* The directory `path` readdir lists, if the caller may read it and the
 * cursor (clen bytes) is a name's length: 0 with its attributes in *d. */
static int readdir_open(struct mds_store *st, const struct mds_cred *cred, const char *path,
			size_t clen, struct mds_attr *d)
{
	struct mds_walk w;
	int rc = mds_walk_full(st, cred, "readdir", path, &w, d);

	if (rc)
		return rc;
	if (d->type != MDS_DIR)
		return mds_fail(st, -ENOTDIR, "readdir %s: not a directory", path);
	if (mds_permit(cred, d, MDS_MAY_READ))
		return mds_fail(st, -EACCES, "readdir %s: no read permission", path);
	if (clen > MDS_NAME_MAX)
		return mds_fail(st, -EINVAL, "readdir %s: cursor too long", path);
	return 0;
}

int mds_readdir(struct mds_store *st, const struct mds_cred *cred,
		const char *path, const char *cursor, uint32_t max,
		struct mds_dirent *ents, uint32_t *n, int *eof)
{
	struct mds_attr d;
	leveldb_iterator_t *it = NULL;
	unsigned char key[MDS_KEY_MAX];
	size_t clen, klen;
	char *err = NULL;
	int rc;

	*n = 0;
	*eof = 0;
	if (!cursor)
		cursor = "";
	clen = strnlen(cursor, MDS_NAME_MAX + 1);
	rc = readdir_open(st, cred, path, clen, &d);
	if (rc)
		goto out;

	/* Entries of d are the keys "D"+handle+name, in bytewise name order;
	 * start at the cursor and skip the cursor's own name if present. */
	klen = mds_dirent_key(key, d.handle, cursor, clen);
	it = leveldb_create_iterator(st->db, st->ropts);
	for (leveldb_iter_seek(it, (char *)key, klen); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl, vl, nl;
		const char *k = leveldb_iter_key(it, &kl);
		const unsigned char *v;

		if (kl < 9 || memcmp(k, key, 9) != 0) {
			break;          /* past this directory's entries */
		}
		nl = kl - 9;
		if (nl == clen && memcmp(k + 9, cursor, clen) == 0)
			continue;
		if (*n == max)
			goto out;       /* more remain: not eof */
		v = (const unsigned char *)leveldb_iter_value(it, &vl);
		if (vl != 9 || nl == 0 || nl > MDS_NAME_MAX) {
			rc = mds_fail(st, -EIO, "readdir %s: corrupt entry",
				      path);
			goto out;
		}
		memcpy(ents[*n].name, k + 9, nl);
		ents[*n].name[nl] = '\0';
		ents[*n].handle = mds_get_be64(v);
		ents[*n].type = v[8];
		(*n)++;
	}
	leveldb_iter_get_error(it, &err);
	if (err) {
		rc = mds_fail(st, -EIO, "readdir %s: leveldb: %s", path, err);
		leveldb_free(err);
		goto out;
	}
	*eof = 1;
out:
	if (it)
		leveldb_iter_destroy(it);
	if (rc)
		*n = 0;
	return rc;
}

/* Shared by unlink and rmdir: find the entry, check its type and the
 * caller's permission on the parent. */
static int walk_victim(struct mds_store *st, const struct mds_cred *cred,
		       const char *op, const char *path, uint32_t want_type,
		       struct mds_walk *w, struct mds_attr *victim)
{
	uint64_t h;
	uint32_t type;
	int rc;

	rc = mds_walk_parent(st, cred, op, path, w);
	if (rc)
		return rc;
	if (w->len == 0)
		return want_type == MDS_DIR ?
			mds_fail(st, -EBUSY, "%s /: cannot remove the root", op) :
			mds_fail(st, -EISDIR, "%s /: is a directory", op);
	rc = mds_get_dirent(st, w->parent.handle, w->name, w->len, &h, &type);
	if (rc == -ENOENT)
		return mds_fail(st, -ENOENT, "%s %s: no such file or directory",
				op, path);
	if (rc)
		return rc;
	if ((type == MDS_DIR) != (want_type == MDS_DIR))
		return want_type == MDS_DIR ?
			mds_fail(st, -ENOTDIR, "%s %s: not a directory", op, path) :
			mds_fail(st, -EISDIR, "%s %s: is a directory", op, path);
	rc = check_parent_write(st, cred, op, path, w);
	if (rc)
		return rc;
	rc = mds_get_attr(st, h, victim);
	if (rc == -ENOENT)
		return mds_fail(st, -EIO, "%s %s: dangling entry", op, path);
	if (rc)
		return rc;
	return mds_sticky_permit(st, cred, op, path, &w->parent, victim);
}

/* Remove the entry w->name; the victim's attributes (and objects) go with
 * its last name, else it keeps nlink - 1 names. Update parent and count. */
static int remove_entry(struct mds_store *st, const char *op,
			const char *path, struct mds_walk *w,
			struct mds_attr *victim)
{
	leveldb_writebatch_t *b;
	int64_t now = tp_real_ns();
	int rc;

	w->parent.nentries--;
	if (victim->type == MDS_DIR)
		w->parent.nlink--;
	w->parent.mtime_ns = w->parent.ctime_ns = now;
	b = leveldb_writebatch_create();
	mds_batch_del_dirent(b, w->parent.handle, w->name, w->len);
	rc = 0;
	if (victim->type != MDS_DIR && victim->nlink > 1) {
		victim->nlink--;
		victim->ctime_ns = now;
		mds_batch_put_attr(b, victim);
	} else {
		victim->nlink = 0;
		rc = mds_batch_drop_last_name(st, b, victim);
	}
	mds_batch_put_attr(b, &w->parent);
	mds_batch_put_nnames(b, st->nnames - 1);
	if (rc == 0)
		rc = mds_batch_write(st, b, op, path);
	leveldb_writebatch_destroy(b);
	if (rc == 0)
		st->nnames--;
	return rc;
}

int mds_unlink(struct mds_store *st, const struct mds_cred *cred,
	       const char *path, struct mds_attr *removed)
{
	struct mds_walk w;
	struct mds_attr f;
	int rc;

	rc = walk_victim(st, cred, "unlink", path, MDS_FILE, &w, &f);
	if (rc)
		return rc;
	rc = remove_entry(st, "unlink", path, &w, &f);
	if (rc == 0 && removed)
		*removed = f;
	return rc;
}

int mds_rmdir(struct mds_store *st, const struct mds_cred *cred,
	      const char *path)
{
	struct mds_walk w;
	struct mds_attr d;
	int rc;

	rc = walk_victim(st, cred, "rmdir", path, MDS_DIR, &w, &d);
	if (rc)
		return rc;
	if (d.nentries > 0)
		return mds_fail(st, -ENOTEMPTY, "rmdir %s: directory not empty",
				path);
	return remove_entry(st, "rmdir", path, &w, &d);
}

/* Write a new non-directory object `a` under the name w->name: its "A"
 * record, a link's target, the entry, the parent's counts. */
static int add_object(struct mds_store *st, const char *op, const char *path,
		      struct mds_walk *w, struct mds_attr *a, const char *target)
{
	leveldb_writebatch_t *b;
	int64_t now = tp_real_ns();
	int rc = mds_alloc_handles(st, 1, &a->handle);

	if (rc)
		return rc;
	a->nlink = 1;
	a->atime_ns = a->mtime_ns = a->ctime_ns = a->mtime_set_ns = now;
	w->parent.nentries++;
	w->parent.mtime_ns = w->parent.ctime_ns = now;
	b = leveldb_writebatch_create();
	mds_batch_put_attr(b, a);
	if (target)
		mds_batch_put_target(b, a->handle, target, a->size);
	mds_batch_put_dirent(b, w->parent.handle, w->name, w->len, a->handle, a->type);
	mds_batch_put_attr(b, &w->parent);
	mds_batch_put_nnames(b, st->nnames + 1);
	rc = mds_batch_write(st, b, op, path);
	leveldb_writebatch_destroy(b);
	if (!rc)
		st->nnames++;
	return rc;
}

int mds_symlink(struct mds_store *st, const struct mds_cred *cred, const char *path,
		const char *target, struct mds_attr *out)
{
	struct mds_walk w;
	struct mds_attr a;
	size_t tl = target ? strnlen(target, MDS_TARGET_MAX + 1) : 0;
	int rc;

	if (tl == 0)
		return mds_fail(st, -ENOENT, "symlink %s: empty target", path);
	if (tl > MDS_TARGET_MAX)
		return mds_fail(st, -ENAMETOOLONG, "symlink %s: target longer than %d bytes",
				path, MDS_TARGET_MAX);
	rc = walk_new(st, cred, "symlink", path, &w);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.type = MDS_SYMLINK;
	a.mode = 0777;
	a.size = tl;
	new_owner(cred, &w.parent, &a);
	rc = add_object(st, "symlink", path, &w, &a, target);
	if (!rc && out)
		*out = a;
	return rc;
}

int mds_readlink(struct mds_store *st, const struct mds_cred *cred, const char *path,
		 char *buf, size_t len)
{
	struct mds_walk w;
	struct mds_attr a;
	int rc = mds_walk_full_follow(st, cred, "readlink", path, MDS_NOFOLLOW, &w, &a);

	if (rc)
		return rc;
	if (a.type != MDS_SYMLINK)
		return mds_fail(st, -EINVAL, "readlink %s: not a symbolic link", path);
	return mds_get_target(st, a.handle, buf, len);
}

int mds_mknod(struct mds_store *st, const struct mds_cred *cred, const char *path,
	      uint32_t type, uint32_t mode, uint64_t rdev, struct mds_attr *out)
{
	struct mds_walk w;
	struct mds_attr a;
	int rc;

	if (type < MDS_FIFO || type > MDS_BLOCKDEV)
		return mds_fail(st, -EINVAL, "mknod %s: type %u is not a FIFO, socket or"
				" device (files, directories and links have their own calls)",
				path, type);
	if ((type == MDS_CHARDEV || type == MDS_BLOCKDEV) && cred && cred->uid != 0)
		return mds_fail(st, -EPERM, "mknod %s: only root may make device nodes",
				path);
	rc = walk_new(st, cred, "mknod", path, &w);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.type = type;
	a.mode = mode & 07777;
	a.rdev = type == MDS_CHARDEV || type == MDS_BLOCKDEV ? rdev : 0;
	new_owner(cred, &w.parent, &a);
	rc = add_object(st, "mknod", path, &w, &a, NULL);
	if (!rc && out)
		*out = a;
	return rc;
}

/* May `cred` give file `a` another name? Linux's protected_hardlinks: its
 * owner, root, or who may read and write it (and it is not set-ID). */
static int link_permit(struct mds_store *st, const struct mds_cred *cred, const char *from,
		       const struct mds_attr *a)
{
	if (a->type == MDS_DIR)
		return mds_fail(st, -EPERM, "link %s: is a directory (directories have one"
				" name)", from);
	if (a->nlink >= MDS_LINK_MAX)
		return mds_fail(st, -EMLINK, "link %s: already %u names, the most one file"
				" may have", from, a->nlink);
	if (cred->uid == 0 || cred->uid == a->uid)
		return 0;
	if (a->type == MDS_FILE && (a->mode & S_ISUID))
		return mds_fail(st, -EPERM, "link %s: a set-user-ID file of uid %u", from,
				a->uid);
	if (mds_permit(cred, a, MDS_MAY_READ | MDS_MAY_WRITE))
		return mds_fail(st, -EPERM, "link %s: owned by uid %u and not readable and"
				" writable by uid %u", from, a->uid, cred->uid);
	return 0;
}

int mds_link(struct mds_store *st, const struct mds_cred *cred, const char *from,
	     const char *to, struct mds_attr *out)
{
	struct mds_walk wf, wt;
	struct mds_attr a;
	leveldb_writebatch_t *b;
	int64_t now = tp_real_ns();
	int rc;

	rc = mds_walk_full_follow(st, cred, "link", from, MDS_NOFOLLOW, &wf, &a);
	if (!rc)
		rc = link_permit(st, cred, from, &a);
	if (!rc)
		rc = walk_new(st, cred, "link", to, &wt);
	if (rc)
		return rc;
	a.nlink++;
	a.ctime_ns = now;
	wt.parent.nentries++;
	wt.parent.mtime_ns = wt.parent.ctime_ns = now;
	b = leveldb_writebatch_create();
	mds_batch_put_attr(b, &a);
	mds_batch_put_dirent(b, wt.parent.handle, wt.name, wt.len, a.handle, a.type);
	mds_batch_put_attr(b, &wt.parent);
	mds_batch_put_nnames(b, st->nnames + 1);
	rc = mds_batch_write(st, b, "link", to);
	leveldb_writebatch_destroy(b);
	if (rc)
		return rc;
	st->nnames++;
	if (out)
		*out = a;
	return 0;
}
