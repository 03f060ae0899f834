/*
 * mds_vtables.c - the version server's tables (mds_version.h): their
 * LevelDB records, signing, loading, the table cache, and the merger's
 * scan for files with unmerged commits. The operations on the tables are
 * in mds_version.c.
 *
 * LevelDB records of versioned file F (handles 8 bytes big-endian; the
 * "V" prefix, mds_store_int.h, so mds_batch_drop_inode drops them with F):
 *   "V" F 'S'          -> V(8) next ID#(4) merged floor(8)
 *   "V" F 'C' Vm(8)    -> T(8) n(4) n x handle(8) n x merged(1: 0 or 1)
 *   "V" F 'N' name     -> version(8) ctime_ns(8)
 * The state record is rewritten by every batch that changes one of its
 * fields; a commit record is written by its COMMIT, rewritten when one of
 * its handles merges it and deleted when the last one does.
 */
#include "mds_version_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "mds_store_int.h"

int vt_fail(struct mds_versions *vs, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(vs->err, sizeof(vs->err), fmt, ap);
	va_end(ap);
	return rc;
}

const char *mds_versions_errmsg(const struct mds_versions *vs)
{
	return vs->err;
}

/* Room for one more in the array whose pointer is at arrp (capacity
 * doubling; the pointer is copied, not type-punned). 0 or -ENOMEM. */
int vt_grow(void *arrp, uint32_t n, uint32_t *cap, size_t size)
{
	uint32_t c = *cap ? *cap * 2 : 8;
	void *old, *p;

	if (n < *cap)
		return 0;
	memcpy(&old, arrp, sizeof(old));
	if (!(p = realloc(old, (size_t)c * size)))
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = c;
	return 0;
}

struct mds_versions *mds_versions_new(struct mds_store *st, const struct cap_key *key,
				      size_t vmap_bytes, int64_t grant_ns)
{
	struct mds_versions *vs = calloc(1, sizeof(*vs));

	if (!vs)
		return NULL;
	vs->st = st;
	vs->key = key;
	vs->vmap_max = vmap_bytes;
	vs->grant_ns = grant_ns;
	vs->max_tables = MDS_VERSION_TABLES;
	vs->max_commits = MDS_VERSION_ALL_COMMITS;
	return vs;
}

void mds_versions_set_bounds(struct mds_versions *vs, uint32_t tables, uint64_t commits)
{
	vs->max_tables = tables;
	vs->max_commits = commits;
}

void vt_commit_free(struct vcommit *c)
{
	free(c->handles);
	free(c->merged);
}

static void table_free(struct vtable *t)
{
	for (uint32_t i = 0; i < t->ncommits; i++)
		vt_commit_free(&t->commits[i]);
	free(t->commits);
	free(t->ids);
	free(t->reads);
	free(t->snaps);
	free(t);
}

void mds_versions_free(struct mds_versions *vs)
{
	if (!vs)
		return;
	for (int b = 0; b < VT_BUCKETS; b++) {
		while (vs->buckets[b]) {
			struct vtable *t = vs->buckets[b];

			vs->buckets[b] = t->next;
			table_free(t);
		}
	}
	free(vs);
}

static struct vtable **bucket(struct mds_versions *vs, uint64_t file)
{
	return &vs->buckets[(file ^ (file >> 17) ^ (file >> 41)) % VT_BUCKETS];
}

/* ---- records */

static size_t vkey(unsigned char *key, uint64_t file, char kind)
{
	key[0] = MDS_KEY_VERSION;
	mds_put_be64(key + 1, file);
	key[9] = (unsigned char)kind;
	return 10;
}

void vt_put_state(leveldb_writebatch_t *b, const struct vtable *t)
{
	unsigned char key[VT_KEY_MAX], val[VT_STATE_LEN];

	mds_put_be64(val, t->v);
	mds_put_be32(val + 8, t->next_id);
	mds_put_be64(val + 12, t->floor);
	leveldb_writebatch_put(b, (char *)key, vkey(key, t->file, 'S'), (char *)val, sizeof(val));
}

static size_t commit_key(unsigned char *key, uint64_t file, uint64_t vm)
{
	size_t n = vkey(key, file, 'C');

	mds_put_be64(key + n, vm);
	return n + 8;
}

int vt_put_commit(leveldb_writebatch_t *b, uint64_t file, const struct vcommit *c)
{
	unsigned char key[VT_KEY_MAX];
	size_t len = 12 + 9 * (size_t)c->n;
	unsigned char *val = malloc(len), *p = val;

	if (!val)
		return -ENOMEM;
	mds_put_be64(p, c->t);
	mds_put_be32(p + 8, c->n);
	p += 12;
	for (uint32_t i = 0; i < c->n; i++, p += 8)
		mds_put_be64(p, c->handles[i]);
	memcpy(p, c->merged, c->n);
	leveldb_writebatch_put(b, (char *)key, commit_key(key, file, c->vm), (char *)val, len);
	free(val);
	return 0;
}

void vt_del_commit(leveldb_writebatch_t *b, uint64_t file, uint64_t vm)
{
	unsigned char key[VT_KEY_MAX];

	leveldb_writebatch_delete(b, (char *)key, commit_key(key, file, vm));
}

size_t vt_snap_key(unsigned char *key, uint64_t file, const char *name)
{
	size_t n = vkey(key, file, 'N'), len = strlen(name);

	memcpy(key + n, name, len);
	return n + len;
}

/* Write batch b through the store (durable before any reply: mds_store.h),
 * then free it. */
int vt_write_batch(struct mds_versions *vs, leveldb_writebatch_t *b, const char *op, uint64_t file)
{
	char what[64];
	int rc;

	snprintf(what, sizeof(what), FILE_FMT, FILE_ARG(file));
	rc = mds_batch_write(vs->st, b, op, what);
	leveldb_writebatch_destroy(b);
	if (rc)
		return vt_fail(vs, rc, "%s", mds_store_errmsg(vs->st));
	return 0;
}

/* ---- signing */

void vt_commit_msg(const struct vtable *t, const struct vcommit *c, Tessera__VersionCommit *m)
{
	tessera__version_commit__init(m);
	m->file = t->file;
	m->t = c->t;
	m->vm = c->vm;
	m->n_handles = c->n;
	m->handles = c->handles;
	m->mac.data = (uint8_t *)c->mac;
	m->mac.len = TP_CAP_MAC_LEN;
}

/* Sign c and note its size in a reply (a repeated field's tag and length
 * prefix included). */
int vt_commit_sign(struct mds_versions *vs, const struct vtable *t, struct vcommit *c)
{
	Tessera__VersionCommit m;
	uint8_t mac[TP_CAP_MAC_LEN];
	int rc;

	vt_commit_msg(t, c, &m);
	if ((rc = cap_sign_commit(vs->key, &m, mac)))
		return vt_fail(vs, rc, FILE_FMT ": cannot sign commit %llu", FILE_ARG(t->file),
			       (unsigned long long)c->vm);
	memcpy(c->mac, mac, sizeof(mac));
	c->enc = tessera__version_commit__get_packed_size(&m) + 4;
	return 0;
}

/* ---- loading a table */

static int load_state(struct mds_versions *vs, struct vtable *t, const char *v, size_t len)
{
	const unsigned char *p = (const unsigned char *)v;

	if (len != VT_STATE_LEN)
		return vt_fail(vs, -EIO, FILE_FMT ": corrupt version state record",
			       FILE_ARG(t->file));
	t->v = mds_get_be64(p);
	t->next_id = mds_get_be32(p + 8);
	t->floor = mds_get_be64(p + 12);
	return 0;
}

static int load_commit(struct mds_versions *vs, struct vtable *t, const unsigned char *k,
		       size_t klen, const unsigned char *p, size_t len)
{
	struct vcommit c = { 0 };
	uint32_t n;

	if (klen != 18 || len < 12 || (n = mds_get_be32(p + 8)) == 0 || n > TP_MAX_STRIPE ||
	    len != 12 + 9 * (size_t)n || t->ncommits >= MDS_VERSION_COMMITS)
		return vt_fail(vs, -EIO, FILE_FMT ": corrupt commit record", FILE_ARG(t->file));
	c.vm = mds_get_be64(k + 10);
	c.t = mds_get_be64(p);
	c.n = n;
	c.handles = malloc(8 * (size_t)n);
	c.merged = malloc(n);
	if (!c.handles || !c.merged || vt_grow(&t->commits, t->ncommits, &t->ccommits, sizeof(c))) {
		vt_commit_free(&c);
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for its commits",
			       FILE_ARG(t->file));
	}
	for (uint32_t i = 0; i < n; i++)
		c.handles[i] = mds_get_be64(p + 12 + 8 * (size_t)i);
	memcpy(c.merged, p + 12 + 8 * (size_t)n, n);
	t->commits[t->ncommits++] = c;
	if (vt_commit_sign(vs, t, &t->commits[t->ncommits - 1]))
		return -EIO;
	t->vmap_bytes += t->commits[t->ncommits - 1].enc;
	return 0;
}

static int load_snap(struct mds_versions *vs, struct vtable *t, const unsigned char *k,
		     size_t klen, const unsigned char *p, size_t len)
{
	struct vsnap *s;

	if (klen <= 10 || klen > 10 + MDS_VERSION_SNAP_NAME || len != 16 ||
	    t->nsnaps >= MDS_VERSION_SNAPS)
		return vt_fail(vs, -EIO, FILE_FMT ": corrupt snapshot record", FILE_ARG(t->file));
	if (vt_grow(&t->snaps, t->nsnaps, &t->csnaps, sizeof(*s)))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for its snapshots",
			       FILE_ARG(t->file));
	s = &t->snaps[t->nsnaps++];
	memcpy(s->name, k + 10, klen - 10);
	s->name[klen - 10] = '\0';
	s->version = mds_get_be64(p);
	s->ctime_ns = (int64_t)mds_get_be64(p + 8);
	return 0;
}

/* One record of t's: by its kind. */
static int load_record(struct mds_versions *vs, struct vtable *t, leveldb_iterator_t *it)
{
	size_t klen, vlen;
	const unsigned char *k = (const unsigned char *)leveldb_iter_key(it, &klen);
	const unsigned char *v = (const unsigned char *)leveldb_iter_value(it, &vlen);

	switch (k[9]) {
	case 'S':
		return klen == 10 ? load_state(vs, t, (const char *)v, vlen)
				  : vt_fail(vs, -EIO, FILE_FMT ": corrupt state key",
					    FILE_ARG(t->file));
	case 'C':
		return load_commit(vs, t, k, klen, v, vlen);
	case 'N':
		return load_snap(vs, t, k, klen, v, vlen);
	default:
		return vt_fail(vs, -EIO, FILE_FMT ": unknown version record kind %#x",
			       FILE_ARG(t->file), k[9]);
	}
}

/* The records agree: commits in Vm order (LevelDB's key order), within
 * (floor, V], IDs below next_id. */
static int check_loaded(struct mds_versions *vs, struct vtable *t)
{
	for (uint32_t i = 0; i < t->ncommits; i++) {
		const struct vcommit *c = &t->commits[i];

		if (c->vm <= t->floor || c->vm > t->v || (c->t >> 32) >= t->next_id)
			return vt_fail(vs, -EIO,
				       FILE_FMT ": commit %llu outside the table's"
						" versions (%llu, %llu]",
				       FILE_ARG(t->file), (unsigned long long)c->vm,
				       (unsigned long long)t->floor, (unsigned long long)t->v);
	}
	return 0;
}

static int load_table(struct mds_versions *vs, struct vtable *t)
{
	struct mds_store *st = vs->st;
	unsigned char prefix[9];
	leveldb_iterator_t *it = leveldb_create_iterator(st->db, st->ropts);
	char *err = NULL;
	int rc = 0;

	prefix[0] = MDS_KEY_VERSION;
	mds_put_be64(prefix + 1, t->file);
	for (leveldb_iter_seek(it, (char *)prefix, sizeof(prefix)); !rc && leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);

		if (kl < 10 || memcmp(k, prefix, sizeof(prefix)) != 0)
			break;
		rc = load_record(vs, t, it);
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err) {
		rc = vt_fail(vs, -EIO, FILE_FMT ": reading its version table: %s",
			     FILE_ARG(t->file), err);
		leveldb_free(err);
	}
	return rc ? rc : check_loaded(vs, t);
}

/* Take table *p (idle, or its file gone) out of the buckets and free it. */
static void table_drop(struct mds_versions *vs, struct vtable **p)
{
	struct vtable *t = *p;

	*p = t->next;
	vs->ntables--;
	vs->ncommits -= t->ncommits;
	table_free(t);
}

int vt_over(const struct mds_versions *vs, enum room_for what)
{
	return what == ROOM_TABLE ? vs->ntables >= vs->max_tables
				  : vs->ncommits >= vs->max_commits;
}

/* Let idle tables but `keep` go (they hold nothing the store does not)
 * until there is room for `what`, one pass over the buckets at most,
 * from where the last pass stopped: 0, or -EBUSY when none would do. */
int vt_make_room(struct mds_versions *vs, const struct vtable *keep, enum room_for what)
{
	for (uint32_t n = 0; n < VT_BUCKETS && vt_over(vs, what); n++) {
		struct vtable **p = &vs->buckets[vs->cursor];

		while (*p && vt_over(vs, what)) {
			if (*p != keep && !(*p)->nids && !(*p)->nreads)
				table_drop(vs, p);
			else
				p = &(*p)->next;
		}
		if (vt_over(vs, what))
			vs->cursor = (vs->cursor + 1) % VT_BUCKETS;
	}
	return vt_over(vs, what) ? -EBUSY : 0;
}

/* The table of file f, loaded at its first use (a new one for a file
 * never used: V 0, next ID# 1). */
int vt_table_of(struct mds_versions *vs, const struct mds_vfile *f, struct vtable **out)
{
	struct vtable **b = bucket(vs, f->file), *t;
	int rc;

	for (t = *b; t; t = t->next)
		if (t->file == f->file) {
			*out = t;
			return 0;
		}
	if (vt_over(vs, ROOM_TABLE) && vt_make_room(vs, NULL, ROOM_TABLE))
		return vt_fail(vs, -EBUSY,
			       FILE_FMT ": the version server has %u files in use"
					" (its limit): close some",
			       FILE_ARG(f->file), vs->ntables);
	if (!(t = calloc(1, sizeof(*t))))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for its version table",
			       FILE_ARG(f->file));
	t->file = f->file;
	t->next_id = 1;
	if ((rc = load_table(vs, t))) {
		table_free(t);
		return rc;
	}
	if (!t->next_id)
		t->next_id = 1;
	t->first_id = t->next_id;
	t->next = *b;
	*b = t;
	vs->ntables++;
	vs->ncommits += t->ncommits;
	*out = t;
	return 0;
}

void mds_versions_forget(struct mds_versions *vs, uint64_t file)
{
	struct vtable **p;

	if (!vs)
		return;
	for (p = bucket(vs, file); *p; p = &(*p)->next)
		if ((*p)->file == file) {
			table_drop(vs, p);
			return;
		}
}

/* ---- the merger's start (mds_vmerge.h) */

/* Seek `it` to the first version record of a file >= `file`. */
static void seek_file(leveldb_iterator_t *it, uint64_t file)
{
	unsigned char key[9];

	key[0] = MDS_KEY_VERSION;
	mds_put_be64(key + 1, file);
	leveldb_iter_seek(it, (char *)key, sizeof(key));
}

int mds_versions_next_unmerged(struct mds_versions *vs, uint64_t from, uint64_t *file)
{
	struct mds_store *st = vs->st;
	leveldb_iterator_t *it = leveldb_create_iterator(st->db, st->ropts);
	char *err = NULL;
	int found = 0;

	/* Keys sort by file, then kind: a file's 'C' records (its unmerged
	 * commits) come before its 'N' and 'S' ones; a file without one is
	 * stepped over by one seek. */
	for (seek_file(it, from); leveldb_iter_valid(it);) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)leveldb_iter_key(it, &kl);
		uint64_t f;

		if (kl < 10 || k[0] != MDS_KEY_VERSION)
			break;
		f = mds_get_be64(k + 1);
		if (k[9] == 'C') {
			*file = f;
			found = 1;
			break;
		}
		if (f == UINT64_MAX)
			break;
		seek_file(it, f + 1);
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err) {
		found = vt_fail(vs, -EIO, "the version tables in the store: %s", err);
		leveldb_free(err);
	}
	return found;
}
