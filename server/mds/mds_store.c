/*
 * mds_store.c - opening the namespace, the attribute encoding, LevelDB
 * helpers and handle allocation. The operations are in mds_ops.c, the path
 * walk and permission checks in mds_path.c; the key schema and the
 * invariants are described in mds_store_int.h.
 */
#include "mds_store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Version byte at the head of every encoded attribute record. Version 2
 * appends mtime_set after the layout; a version 1 record (written before
 * it existed) reads with mtime_set = mtime. Version 3 appends rdev (a
 * record without it reads rdev 0); the store writes version 3 for device
 * nodes only, so other records stay readable by the daemon before it. */
#define MDS_ATTR_VERSION 2
#define MDS_ATTR_VERSION_RDEV 3
/* Version 4 appends, after rdev, a flags word (MDS_ATTR_F_*): written only
 * for a versioned file or a directory whose default is versioned (issue
 * 25), so every other record stays readable by the daemons before it. */
#define MDS_ATTR_VERSION_FLAGS 4
#define MDS_ATTR_F_VERSIONED 0x1u
/* Bytes before the optional layout: version type mode uid gid nlink atime
 * mtime ctime size nentries has_layout. */
#define MDS_ATTR_FIXED (1 + 1 + 4 * 4 + 8 * 5 + 1)

static const char META_NEXT[] = "Mnext_handle";
static const char META_ROOT[] = "Mroot";
static const char META_ROTOR[] = "Mrotor";
static const char META_NNAMES[] = "Mnnames";

void mds_put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

uint64_t mds_get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

void mds_put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

uint32_t mds_get_be32(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

size_t mds_attr_key(unsigned char *key, uint64_t handle)
{
	key[0] = MDS_KEY_ATTR;
	mds_put_be64(key + 1, handle);
	return 9;
}

size_t mds_dirent_key(unsigned char *key, uint64_t parent, const char *name,
		      size_t len)
{
	key[0] = MDS_KEY_DIRENT;
	mds_put_be64(key + 1, parent);
	memcpy(key + 9, name, len);
	return 9 + len;
}

size_t mds_xattr_key(unsigned char *key, uint64_t handle, const char *name, size_t len)
{
	key[0] = MDS_KEY_XATTR;
	mds_put_be64(key + 1, handle);
	memcpy(key + 9, name, len);
	return 9 + len;
}

int mds_fail(struct mds_store *st, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof st->err, fmt, ap);
	va_end(ap);
	return rc;
}

const char *mds_store_errmsg(const struct mds_store *st)
{
	return st->err;
}

/* ---- attribute records ---- */

/* Encode `a` (its handle is the key, not stored) into buf, which holds
 * MDS_ATTR_ENC_MAX bytes; returns the length. A directory's layout is only
 * strip_size and count. */
static size_t attr_encode(const struct mds_attr *a, unsigned char *buf)
{
	unsigned char *p = buf;

	int with_flags = a->has_layout && a->layout.versioned;
	int with_rdev = with_flags || a->type == MDS_CHARDEV || a->type == MDS_BLOCKDEV;

	*p++ = with_flags ? MDS_ATTR_VERSION_FLAGS
			  : with_rdev ? MDS_ATTR_VERSION_RDEV : MDS_ATTR_VERSION;
	*p++ = (unsigned char)a->type;
	mds_put_be32(p, a->mode); p += 4;
	mds_put_be32(p, a->uid); p += 4;
	mds_put_be32(p, a->gid); p += 4;
	mds_put_be32(p, a->nlink); p += 4;
	mds_put_be64(p, (uint64_t)a->atime_ns); p += 8;
	mds_put_be64(p, (uint64_t)a->mtime_ns); p += 8;
	mds_put_be64(p, (uint64_t)a->ctime_ns); p += 8;
	mds_put_be64(p, a->size); p += 8;
	mds_put_be64(p, a->nentries); p += 8;
	*p++ = a->has_layout ? 1 : 0;
	if (a->has_layout) {
		mds_put_be64(p, a->layout.strip_size); p += 8;
		mds_put_be32(p, a->layout.count); p += 4;
		if (a->type == MDS_FILE) {
			for (uint32_t i = 0; i < a->layout.count; i++) {
				mds_put_be32(p, a->layout.servers[i]); p += 4;
				mds_put_be64(p, a->layout.handles[i]); p += 8;
			}
		}
	}
	mds_put_be64(p, (uint64_t)a->mtime_set_ns); p += 8;
	if (with_rdev) {
		mds_put_be64(p, a->rdev); p += 8;
	}
	if (with_flags) {
		mds_put_be32(p, MDS_ATTR_F_VERSIONED); p += 4;
	}
	return (size_t)(p - buf);
}

/* The fields later versions appended after the layout: mtime_set
 * (version 2; before it, mtime), rdev (version 3; before it, 0), flags
 * (version 4; before it, none). */
static int attr_decode_tail(const unsigned char *p, const unsigned char *end, unsigned version,
			    struct mds_attr *a)
{
	a->mtime_set_ns = a->mtime_ns;
	if (version >= 2) {
		if (end - p < 8)
			return -EIO;
		a->mtime_set_ns = (int64_t)mds_get_be64(p); p += 8;
	}
	if (version >= MDS_ATTR_VERSION_RDEV) {
		if (end - p < 8)
			return -EIO;
		a->rdev = mds_get_be64(p); p += 8;
	}
	if (version >= MDS_ATTR_VERSION_FLAGS) {
		if (end - p < 4)
			return -EIO;
		a->layout.versioned = (mds_get_be32(p) & MDS_ATTR_F_VERSIONED) != 0; p += 4;
	}
	return p == end ? 0 : -EIO;
}

/* Decode a record; 0 or -EIO when it is not a valid version 1 to 4
 * record. */
static int attr_decode(const unsigned char *p, size_t len, uint64_t handle,
		       struct mds_attr *a)
{
	const unsigned char *end = p + len;
	unsigned version;

	memset(a, 0, sizeof *a);
	if (len < MDS_ATTR_FIXED || p[0] < 1 || p[0] > MDS_ATTR_VERSION_FLAGS)
		return -EIO;
	version = *p++;
	a->handle = handle;
	a->type = *p++;
	if (a->type < MDS_FILE || a->type > MDS_BLOCKDEV)
		return -EIO;
	a->mode = mds_get_be32(p); p += 4;
	a->uid = mds_get_be32(p); p += 4;
	a->gid = mds_get_be32(p); p += 4;
	a->nlink = mds_get_be32(p); p += 4;
	a->atime_ns = (int64_t)mds_get_be64(p); p += 8;
	a->mtime_ns = (int64_t)mds_get_be64(p); p += 8;
	a->ctime_ns = (int64_t)mds_get_be64(p); p += 8;
	a->size = mds_get_be64(p); p += 8;
	a->nentries = mds_get_be64(p); p += 8;
	a->has_layout = *p++;
	if (a->has_layout) {
		if (end - p < 12)
			return -EIO;
		a->layout.strip_size = mds_get_be64(p); p += 8;
		a->layout.count = mds_get_be32(p); p += 4;
		if (a->layout.count > TP_MAX_STRIPE)
			return -EIO;
		if (a->type == MDS_FILE) {
			if ((size_t)(end - p) < 12 * (size_t)a->layout.count)
				return -EIO;
			for (uint32_t i = 0; i < a->layout.count; i++) {
				a->layout.servers[i] = mds_get_be32(p); p += 4;
				a->layout.handles[i] = mds_get_be64(p); p += 8;
			}
		}
	}
	return attr_decode_tail(p, end, version, a);
}

int mds_decode_attr(const unsigned char *p, size_t len, uint64_t handle,
		    struct mds_attr *a)
{
	return attr_decode(p, len, handle, a);
}

/* ---- reads ---- */

/* leveldb_get wrapper: 0 with *val (leveldb_free it), -ENOENT, -EIO. */
static int db_get(struct mds_store *st, const void *key, size_t klen,
		  char **val, size_t *vlen)
{
	char *err = NULL;

	*val = leveldb_get(st->db, st->ropts, key, klen, vlen, &err);
	if (err) {
		mds_fail(st, -EIO, "leveldb read: %s", err);
		leveldb_free(err);
		*val = NULL;
		return -EIO;
	}
	return *val ? 0 : -ENOENT;
}

int mds_get_attr(struct mds_store *st, uint64_t handle, struct mds_attr *out)
{
	unsigned char key[9];
	char *val;
	size_t vlen;
	int rc;

	rc = db_get(st, key, mds_attr_key(key, handle), &val, &vlen);
	if (rc)
		return rc;
	rc = attr_decode((unsigned char *)val, vlen, handle, out);
	if (rc)
		mds_fail(st, rc, "corrupt attributes of handle %#llx",
			 (unsigned long long)handle);
	leveldb_free(val);
	return rc;
}

int mds_get_dirent(struct mds_store *st, uint64_t parent, const char *name,
		   size_t len, uint64_t *handle, uint32_t *type)
{
	unsigned char key[MDS_KEY_MAX];
	char *val;
	size_t vlen;
	int rc;

	rc = db_get(st, key, mds_dirent_key(key, parent, name, len), &val,
		    &vlen);
	if (rc)
		return rc;
	if (vlen != 9) {
		rc = mds_fail(st, -EIO, "corrupt directory entry %.*s",
			      (int)len, name);
	} else {
		*handle = mds_get_be64((unsigned char *)val);
		*type = (unsigned char)val[8];
	}
	leveldb_free(val);
	return rc;
}

/* Read an 8-byte counter under a "M" key: 0, -ENOENT, -EIO. */
static int get_meta64(struct mds_store *st, const char *key, uint64_t *v)
{
	char *val;
	size_t vlen;
	int rc = db_get(st, key, strlen(key), &val, &vlen);

	if (rc)
		return rc;
	if (vlen == 8)
		*v = mds_get_be64((unsigned char *)val);
	else
		rc = mds_fail(st, -EIO, "corrupt metadata record %s", key);
	leveldb_free(val);
	return rc;
}

/* ---- batches ---- */

void mds_batch_put_attr(leveldb_writebatch_t *b, const struct mds_attr *a)
{
	unsigned char key[9], val[MDS_ATTR_ENC_MAX];
	size_t vlen = attr_encode(a, val);

	leveldb_writebatch_put(b, (char *)key, mds_attr_key(key, a->handle),
			       (char *)val, vlen);
}

void mds_batch_del_attr(leveldb_writebatch_t *b, uint64_t handle)
{
	unsigned char key[9];

	leveldb_writebatch_delete(b, (char *)key, mds_attr_key(key, handle));
}

static size_t target_key(unsigned char *key, uint64_t handle)
{
	key[0] = MDS_KEY_SYMLINK;
	mds_put_be64(key + 1, handle);
	return 9;
}

void mds_batch_put_target(leveldb_writebatch_t *b, uint64_t handle, const char *target,
			  size_t len)
{
	unsigned char key[9];

	leveldb_writebatch_put(b, (char *)key, target_key(key, handle), target, len);
}

int mds_batch_drop_last_name(struct mds_store *st, leveldb_writebatch_t *b,
			     const struct mds_attr *victim)
{
	unsigned char key[9];
	int rc = mds_batch_drop_inode(st, b, victim->handle);

	if (rc)
		return rc;
	if (victim->type == MDS_SYMLINK)
		leveldb_writebatch_delete(b, (char *)key, target_key(key, victim->handle));
	mds_batch_put_intent(b, victim);
	return 0;
}

int mds_get_target(struct mds_store *st, uint64_t handle, char *buf, size_t len)
{
	unsigned char key[9];
	char *val = NULL;
	size_t vlen = 0;
	int rc = db_get(st, key, target_key(key, handle), &val, &vlen);

	if (rc == -ENOENT || (!rc && (vlen == 0 || vlen >= len)))
		rc = mds_fail(st, -EIO, "symbolic link %016llx: target record %s",
			      (unsigned long long)handle, rc ? "missing" : "corrupt");
	if (!rc) {
		memcpy(buf, val, vlen);
		buf[vlen] = '\0';
	}
	if (val)
		leveldb_free(val);
	return rc;
}

/* Delete every key that starts with prefix[0..plen) in batch b: 0, or
 * -EIO (message set, naming `handle`). */
static int batch_del_prefix(struct mds_store *st, leveldb_writebatch_t *b, const unsigned char *prefix,
			    size_t plen, uint64_t handle)
{
	leveldb_iterator_t *it = leveldb_create_iterator(st->db, st->ropts);
	char *err = NULL;

	for (leveldb_iter_seek(it, (const char *)prefix, plen); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);

		if (kl < plen || memcmp(k, prefix, plen) != 0)
			break;
		leveldb_writebatch_delete(b, k, kl);
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err) {
		mds_fail(st, -EIO, "drop handle %#llx: leveldb: %s", (unsigned long long)handle,
			 err);
		leveldb_free(err);
		return -EIO;
	}
	return 0;
}

int mds_batch_drop_inode(struct mds_store *st, leveldb_writebatch_t *b, uint64_t handle)
{
	unsigned char prefix[9];
	int rc;

	mds_batch_del_attr(b, handle);
	/* The attributes' keys follow one another: "X" handle, then the
	 * names in byte order. Their number is bounded by the names' cap
	 * (MDS_XATTR_LIST_MAX), so the batch stays small. */
	mds_xattr_key(prefix, handle, "", 0);
	if ((rc = batch_del_prefix(st, b, prefix, sizeof(prefix), handle)))
		return rc;
	/* A versioned file's version table (mds_vtables.c): bounded by its
	 * limits (commits, snapshots). */
	prefix[0] = MDS_KEY_VERSION;
	return batch_del_prefix(st, b, prefix, sizeof(prefix), handle);
}

void mds_batch_put_dirent(leveldb_writebatch_t *b, uint64_t parent,
			  const char *name, size_t len, uint64_t handle,
			  uint32_t type)
{
	unsigned char key[MDS_KEY_MAX], val[9];

	mds_put_be64(val, handle);
	val[8] = (unsigned char)type;
	leveldb_writebatch_put(b, (char *)key,
			       mds_dirent_key(key, parent, name, len),
			       (char *)val, sizeof val);
}

void mds_batch_del_dirent(leveldb_writebatch_t *b, uint64_t parent,
			  const char *name, size_t len)
{
	unsigned char key[MDS_KEY_MAX];

	leveldb_writebatch_delete(b, (char *)key,
				  mds_dirent_key(key, parent, name, len));
}

static void batch_put_meta64(leveldb_writebatch_t *b, const char *key,
			     uint64_t v)
{
	unsigned char val[8];

	mds_put_be64(val, v);
	leveldb_writebatch_put(b, key, strlen(key), (char *)val, sizeof val);
}

void mds_batch_put_nnames(leveldb_writebatch_t *b, uint64_t nnames)
{
	batch_put_meta64(b, META_NNAMES, nnames);
}

void mds_batch_put_rotor(leveldb_writebatch_t *b, uint32_t rotor)
{
	unsigned char val[4];

	mds_put_be32(val, rotor);
	leveldb_writebatch_put(b, META_ROTOR, strlen(META_ROTOR), (char *)val,
			       sizeof val);
}

/* A key the batch wrote: the handle whose attributes ("A" handle) or
 * entries ("D" parent name) it changes, told to the store's watcher. */
static void changed_key(void *arg, const char *k, size_t klen)
{
	const struct mds_store *st = arg;
	const unsigned char *key = (const unsigned char *)k;

	if (klen >= 9 && (key[0] == MDS_KEY_ATTR || key[0] == MDS_KEY_DIRENT))
		st->on_change(st->on_change_arg, mds_get_be64(key + 1));
}

static void changed_put(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	(void)v;
	(void)vlen;
	changed_key(arg, k, klen);
}

static int batch_write_with(struct mds_store *st, leveldb_writebatch_t *b,
			    const leveldb_writeoptions_t *wo, const char *op, const char *path)
{
	char *err = NULL;

	leveldb_write(st->db, wo, b, &err);
	if (err) {
		mds_fail(st, -EIO, "%s %s: leveldb write: %s", op, path, err);
		leveldb_free(err);
		return -EIO;
	}
	if (st->on_change)
		leveldb_writebatch_iterate(b, st, changed_put, changed_key);
	return 0;
}

void mds_store_on_change(struct mds_store *st, void (*fn)(void *arg, uint64_t handle), void *arg)
{
	st->on_change = fn;
	st->on_change_arg = arg;
}

int mds_store_walked_to_last(const struct mds_store *st)
{
	return st->walked_to_last;
}

int mds_store_walked(const struct mds_store *st, const uint64_t **walked, uint32_t *n)
{
	*walked = st->walked;
	*n = st->n_walked;
	return st->walked_plain;
}

int mds_batch_write(struct mds_store *st, leveldb_writebatch_t *b,
		    const char *op, const char *path)
{
	int rc;

	if (!st->deferred) {
		rc = batch_write_with(st, b, st->wopts, op, path);
		st->synced += !rc;
		return rc;
	}
	/* Announce the change before it can be seen: the daemon holds every
	 * reply from here until its commit. */
	st->pending(st->pending_arg);
	rc = batch_write_with(st, b, st->wlazy, op, path);
	st->unsynced++;
	return rc;
}

int mds_batch_write_attrs(struct mds_store *st, leveldb_writebatch_t *b,
			  const char *op, const char *path)
{
	int rc;

	if (!st->deferred)
		return mds_batch_write(st, b, op, path);
	rc = batch_write_with(st, b, st->wlazy, op, path);
	st->unsynced += !rc;
	return rc;
}

int mds_store_needs_commit(const struct mds_store *st)
{
	return st->unsynced != 0;
}

int mds_batch_write_lazy(struct mds_store *st, leveldb_writebatch_t *b,
			 const char *op, const char *path)
{
	return batch_write_with(st, b, st->wlazy, op, path);
}

void mds_store_defer_sync(struct mds_store *st, void (*pending)(void *arg), void *arg)
{
	st->deferred = 1;
	st->pending = pending;
	st->pending_arg = arg;
}

uint64_t mds_store_synced_writes(const struct mds_store *st)
{
	return st->synced;
}

/* A change written unsynced is in LevelDB's current log, in the kernel's
 * page cache (LevelDB writes each record out of its own buffer before the
 * write returns). Syncing the log makes it durable, and every change
 * before it: the log is one ordered file. When LevelDB switched to a new
 * log since the last commit (its memory table filled up), the older one
 * may still hold unsynced changes until its table is compacted: every log
 * in the directory is synced (usually there is one; mds_logsync.h). */
int mds_store_commit_sync(const struct mds_store *st, char *err, size_t errlen)
{
	return mds_logsync_run(st->logs, err, errlen);
}

int mds_store_commit_begin(struct mds_store *st)
{
	int due = st->unsynced != 0;

	st->unsynced = 0;
	return due;
}

void mds_store_commit_end(struct mds_store *st)
{
	st->synced++;
}

int mds_store_commit(struct mds_store *st)
{
	char err[sizeof(st->err)];
	int rc;

	if (!mds_store_commit_begin(st))
		return 0;
	rc = mds_store_commit_sync(st, err, sizeof(err));
	if (rc) {
		st->unsynced = 1; /* still not durable */
		return mds_fail(st, rc, "%s", err);
	}
	mds_store_commit_end(st);
	return 0;
}

/* ---- handles ---- */

/* Handles are random 64-bit numbers (getrandom), so that knowing one's own
 * files' handles says nothing about anyone else's. A candidate is refused,
 * and another drawn, when it is 0 (never a handle), UINT64_MAX (the object
 * listings' "nothing after" cursor), the root's, inside the sequential
 * range a store made before handles were random may have handed out
 * ([index << 48, index << 48 | the persisted "next_handle")), drawn twice
 * in one call, or names an inode ("A") or a purge intent ("P") in the
 * store. A storage object's handle has no record of its own to check, so
 * two files' objects colliding rests on the odds alone: about n^2 / 2^65
 * for n handles handed out (2^-25 at a million; birthday bound). */
static int handle_reserved(const struct mds_store *st, uint64_t h)
{
	uint64_t base = (uint64_t)st->mds_index << 48;

	return h == 0 || h == UINT64_MAX || h == st->root ||
	       (h >= base && h - base < st->limit_ctr);
}

/* 1 if key type `kind` (MDS_KEY_ATTR, MDS_KEY_INTENT) holds h, 0 if not,
 * or a negative errno (message set). */
static int handle_in_store(struct mds_store *st, char kind, uint64_t h)
{
	unsigned char key[9];
	char *val;
	size_t vlen;
	int rc;

	key[0] = (unsigned char)kind;
	mds_put_be64(key + 1, h);
	rc = db_get(st, key, sizeof key, &val, &vlen);
	if (rc == 0)
		leveldb_free(val);
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
}

/* 1 if candidate i of h[] may not be handed out, 0 if it may, or a
 * negative errno. */
static int handle_taken(struct mds_store *st, const uint64_t *h, uint32_t i)
{
	int rc;

	if (handle_reserved(st, h[i]))
		return 1;
	for (uint32_t j = 0; j < i; j++)
		if (h[j] == h[i])
			return 1;
	if ((rc = handle_in_store(st, MDS_KEY_ATTR, h[i])))
		return rc;
	return handle_in_store(st, MDS_KEY_INTENT, h[i]);
}

/* n random handles into h, in one draw from the kernel where it can
 * (a create's 1 + its objects'); 0 or -errno. */
static int draw_handles(uint64_t *h, uint32_t n)
{
	size_t len = (size_t)n * sizeof(*h), got = 0;

	while (got < len) {
		ssize_t k = getrandom((char *)h + got, len - got, 0);

		if (k < 0 && errno != EINTR)
			return -errno;
		got += k > 0 ? (size_t)k : 0;
	}
	return 0;
}

int mds_alloc_handles(struct mds_store *st, uint32_t n, uint64_t *h)
{
	int rc = draw_handles(h, n);

	if (rc)
		return mds_fail(st, -EIO, "handle allocation: getrandom: %s", strerror(-rc));
	for (uint32_t i = 0; i < n; i++) {
		int tries = 1;

		while ((rc = handle_taken(st, h, i)) == 1) {
			if (++tries > MDS_HANDLE_TRIES)
				return mds_fail(st, -EIO, "handle allocation: %d random"
						" handles in a row were taken", MDS_HANDLE_TRIES);
			if ((rc = draw_handles(&h[i], 1)))
				return mds_fail(st, -EIO, "handle allocation: getrandom: %s",
						strerror(-rc));
		}
		if (rc < 0) {
			char why[MDS_ERRMSG_LEN];

			snprintf(why, sizeof why, "%s", st->err);
			return mds_fail(st, rc, "handle allocation: looking %#llx up: %s",
					(unsigned long long)h[i], why);
		}
	}
	return 0;
}

/* ---- open / close / statfs ---- */

/* A new namespace: the root directory, owned by root, mode 1777: anyone
 * may create there, and only an entry's owner (or root) remove it. */
static int create_root(struct mds_store *st)
{
	struct mds_attr root;
	leveldb_writebatch_t *b;
	int64_t now = tp_real_ns();
	int rc;

	memset(&root, 0, sizeof root);
	rc = mds_alloc_handles(st, 1, &root.handle);
	if (rc)
		return rc;
	root.type = MDS_DIR;
	root.mode = 01777;
	root.nlink = 2;
	root.atime_ns = root.mtime_ns = root.ctime_ns = now;
	b = leveldb_writebatch_create();
	mds_batch_put_attr(b, &root);
	batch_put_meta64(b, META_ROOT, root.handle);
	mds_batch_put_nnames(b, 1);
	rc = mds_batch_write(st, b, "create", "/");
	leveldb_writebatch_destroy(b);
	if (rc)
		return rc;
	st->root = root.handle;
	st->nnames = 1;
	return 0;
}

/* Load the counters of an existing namespace, or create one. */
static int load_meta(struct mds_store *st)
{
	uint64_t v;
	char *val;
	size_t vlen;
	int rc;

	/* A store made when handles were sequential persisted the counter's
	 * limit: every handle it handed out is below it, and random handles
	 * are never drawn from that range. A store made since has none (and
	 * the daemon never writes it again). */
	rc = get_meta64(st, META_NEXT, &v);
	if (rc == -ENOENT)
		v = 1;
	else if (rc)
		return rc;
	if (v < 1 || v > MDS_COUNTER_MAX + 1)
		return mds_fail(st, -EIO, "corrupt handle counter");
	st->limit_ctr = v;

	rc = get_meta64(st, META_ROOT, &st->root);
	if (rc == -ENOENT)
		return create_root(st);
	if (rc)
		return rc;

	rc = get_meta64(st, META_NNAMES, &st->nnames);
	if (rc == -ENOENT)
		return mds_fail(st, -EIO, "namespace has a root but no count");
	if (rc)
		return rc;

	rc = db_get(st, META_ROTOR, strlen(META_ROTOR), &val, &vlen);
	if (rc == 0) {
		st->rotor = vlen == 4 ? mds_get_be32((unsigned char *)val) : 0;
		leveldb_free(val);
	} else if (rc != -ENOENT) {
		return rc;
	}
	return 0;
}

int mds_store_open(const char *dir, uint32_t mds_index, uint32_t n_ios,
		   struct mds_store **out, char *errbuf, size_t errlen)
{
	struct mds_store *st = NULL;
	char *err = NULL;
	int rc;

	*out = NULL;
	st = calloc(1, sizeof *st);
	if (!st) {
		rc = -ENOMEM;
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	if (!dir || n_ios == 0 || mds_index > 0xffff) {
		rc = mds_fail(st, -EINVAL, "open: need a directory, n_ios >= 1"
			      " and mds_index < 65536");
		goto fail;
	}
	st->mds_index = mds_index;
	st->n_ios = n_ios;
	st->opts = leveldb_options_create();
	leveldb_options_set_create_if_missing(st->opts, 1);
	st->ropts = leveldb_readoptions_create();
	st->wopts = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(st->wopts, 1);
	st->wlazy = leveldb_writeoptions_create();
	st->dir = strdup(dir);
	if (!st->dir) {
		rc = mds_fail(st, -ENOMEM, "open %s: out of memory", dir);
		goto fail;
	}
	st->db = leveldb_open(st->opts, dir, &err);
	if (err) {
		rc = mds_fail(st, -EIO, "open %s: %s", dir, err);
		leveldb_free(err);
		st->db = NULL;
		goto fail;
	}
	st->logs = mds_logsync_new(dir, MDS_LOGSYNC_WATCH);
	if (!st->logs) {
		rc = mds_fail(st, -ENOMEM, "open %s: out of memory", dir);
		goto fail;
	}
	rc = load_meta(st);
	if (rc)
		goto fail;
	st->err[0] = '\0';
	*out = st;
	return 0;
fail:
	snprintf(errbuf, errlen, "%s", st->err);
	mds_store_close(st);
out:
	return rc;
}

void mds_store_close(struct mds_store *st)
{
	if (!st)
		return;
	if (st->db && st->logs && st->unsynced && mds_store_commit(st))
		fprintf(stderr, "tessera-mds: closing the store: %s\n", st->err);
	mds_logsync_free(st->logs);
	if (st->db) {
		/* The rotor is only a hint (it spreads small files); it is
		 * written with every create anyway. */
		leveldb_close(st->db);
	}
	if (st->wopts)
		leveldb_writeoptions_destroy(st->wopts);
	if (st->wlazy)
		leveldb_writeoptions_destroy(st->wlazy);
	free(st->dir);
	if (st->ropts)
		leveldb_readoptions_destroy(st->ropts);
	if (st->opts)
		leveldb_options_destroy(st->opts);
	free(st);
}

int mds_statfs(struct mds_store *st, uint64_t *files)
{
	*files = st->nnames;
	return 0;
}
