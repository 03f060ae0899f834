/*
 * mds_version.c - the version server's operations (mds_version.h): ID#s
 * and blocks of them, commits, reads, merges, snapshots and the end of a
 * session. The tables they work on, and how those are kept in LevelDB,
 * are in mds_vtables.c.
 */
#include "mds_version_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "mds_store_int.h"

/* ---- ID#s */

static struct vid *find_id(struct vtable *t, uint32_t id)
{
	for (uint32_t i = 0; i < t->nids; i++)
		if (t->ids[i].id == id)
			return &t->ids[i];
	return NULL;
}

int mds_version_ids(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		    uint32_t count, uint32_t *first)
{
	struct vtable *t;
	leveldb_writebatch_t *b;
	uint32_t next;
	int rc;

	if (count < 1 || count > MDS_VERSION_ID_COUNT)
		return vt_fail(vs, -EINVAL, FILE_FMT ": asked for %u ID#s (1 to %u at a time)",
			       FILE_ARG(f->file), count, MDS_VERSION_ID_COUNT);
	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	if (t->nids + count > MDS_VERSION_IDS)
		return vt_fail(vs, -EBUSY,
			       FILE_FMT ": %u ID#s live, %u more would pass the"
					" limit of %u (close some handles)",
			       FILE_ARG(f->file), t->nids, count, MDS_VERSION_IDS);
	if (t->next_id > UINT32_MAX - count)
		return vt_fail(vs, -EOVERFLOW, FILE_FMT ": its ID#s are used up",
			       FILE_ARG(f->file));
	while (t->cids < t->nids + count)
		if (vt_grow(&t->ids, t->cids, &t->cids, sizeof(*t->ids)))
			return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for ID#s",
				       FILE_ARG(f->file));
	next = t->next_id;
	t->next_id += count;
	b = leveldb_writebatch_create();
	vt_put_state(b, t);
	if ((rc = vt_write_batch(vs, b, "version ID", f->file))) {
		t->next_id = next;
		return rc;
	}
	for (uint32_t i = 0; i < count; i++)
		t->ids[t->nids++] = (struct vid){ next + i, session };
	*first = next;
	return 0;
}

static int orphaned(const struct vtable *t, uint64_t id)
{
	for (uint32_t i = 0; i < t->norphans; i++)
		if (t->orphans[i] == id)
			return 1;
	return 0;
}

/* Whether ID# id may commit for session: 0, or why not. */
static int id_owned(struct mds_versions *vs, struct vtable *t, uint64_t id, uint64_t session,
		    const char *op)
{
	struct vid *v = id <= UINT32_MAX ? find_id(t, (uint32_t)id) : NULL;

	if (v && v->session == session)
		return 0;
	if (v)
		return vt_fail(vs, -EPERM,
			       FILE_FMT ": %s by ID# %llu refused (forged commit):"
					" not your ID#, another session's",
			       FILE_ARG(t->file), op, (unsigned long long)id);
	if (orphaned(t, id))
		return vt_fail(vs, -ESTALE,
			       FILE_FMT ": %s by ID# %llu: it ended with its session"
					" (the connection closed); take a new ID# and write again",
			       FILE_ARG(t->file), op, (unsigned long long)id);
	if (id >= 1 && id < t->first_id)
		return vt_fail(vs, -ESTALE,
			       FILE_FMT
			       ": %s by ID# %llu: the version server"
			       " restarted (or let the file's table go) and forgot its live"
			       " ID#s; take a new ID# and write again",
			       FILE_ARG(t->file), op, (unsigned long long)id);
	return vt_fail(vs, -EPERM, FILE_FMT ": %s by ID# %llu refused (forged commit): %s",
		       FILE_ARG(t->file), op, (unsigned long long)id,
		       id >= t->next_id || id == 0 ? "never handed out" : "not live (ended)");
}

int mds_version_id_end(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		       uint64_t id)
{
	struct vtable *t;
	struct vid *v;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	v = id <= UINT32_MAX ? find_id(t, (uint32_t)id) : NULL;
	if (!v)
		return 0;
	if (v->session != session)
		return vt_fail(vs, -EPERM, FILE_FMT ": end of ID# %llu refused: not your ID#",
			       FILE_ARG(f->file), (unsigned long long)id);
	*v = t->ids[--t->nids];
	return 0;
}

/* ---- blocks of ID#s another session may commit under (mds_version.h) */

int mds_version_ids_signed(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			   uint32_t count, struct mds_vids *out)
{
	uint32_t first;
	int rc = mds_version_ids(vs, f, session, count, &first);

	if (rc)
		return rc;
	tessera__version_ids__init(&out->msg);
	out->msg.file = f->file;
	out->msg.first = first;
	out->msg.count = count;
	if ((rc = cap_sign_ids(vs->key, &out->msg, out->mac)))
		return vt_fail(vs, rc, FILE_FMT ": cannot sign ID#s %u..%u", FILE_ARG(f->file),
			       first, first + count - 1);
	return 0;
}

/* Block b verifies and is t's file: 0, or -EPERM (forged). */
static int block_ok(struct mds_versions *vs, const struct vtable *t,
		    const Tessera__VersionIds *b, const char *op)
{
	if (!cap_ids_ok(vs->key, b))
		return vt_fail(vs, -EPERM,
			       FILE_FMT ": %s refused (forged commit): its block of"
					" ID#s is not signed by the version server",
			       FILE_ARG(t->file), op);
	if (b->file != t->file)
		return vt_fail(vs, -EPERM,
			       FILE_FMT ": %s refused (forged commit): its block of"
					" ID#s is file %016llx's",
			       FILE_ARG(t->file), op, (unsigned long long)b->file);
	return 0;
}

static int in_block(const Tessera__VersionIds *b, uint64_t id)
{
	return id >= b->first && id - b->first < b->count;
}

int mds_version_ids_end(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			const Tessera__VersionIds *ids)
{
	struct vtable *t;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)) || (rc = block_ok(vs, t, ids, "end of ID#s")))
		return rc;
	for (uint32_t i = 0; i < t->nids; i++)
		if (in_block(ids, t->ids[i].id) && t->ids[i].session != session)
			return vt_fail(vs, -EPERM,
				       FILE_FMT
				       ": end of ID#s %u..%u refused: ID# %u"
				       " is another session's (only their taker ends them)",
				       FILE_ARG(f->file), ids->first, ids->first + ids->count - 1,
				       t->ids[i].id);
	for (uint32_t i = 0; i < t->nids;)
		if (in_block(ids, t->ids[i].id))
			t->ids[i] = t->ids[--t->nids];
		else
			i++;
	return 0;
}

/* Whether ID# id may commit by block b (another session's, maybe): 0, or
 * why not. A resend (`old`) needs no live ID#. */
static int id_by_block(struct mds_versions *vs, struct vtable *t, uint64_t id,
		       const Tessera__VersionIds *b, const struct vcommit *old)
{
	int rc = block_ok(vs, t, b, "commit");

	if (rc)
		return rc;
	if (!in_block(b, id))
		return vt_fail(vs, -EPERM,
			       FILE_FMT ": commit by ID# %llu refused (forged commit):"
					" not in its block of ID#s %u..%u",
			       FILE_ARG(t->file), (unsigned long long)id, b->first,
			       b->first + b->count - 1);
	if (old || find_id(t, (uint32_t)id))
		return 0;
	return vt_fail(vs, -ESTALE,
		       FILE_FMT
		       ": commit by ID# %llu of the block %u..%u: no longer"
		       " live (its taker ended it or closed, its taker's session ended, or the"
		       " version server restarted); take your own ID# and write again",
		       FILE_ARG(t->file), (unsigned long long)id, b->first,
		       b->first + b->count - 1);
}

/* ---- commits */

static struct vcommit *find_commit(struct vtable *t, uint64_t tv)
{
	for (uint32_t i = 0; i < t->ncommits; i++)
		if (t->commits[i].t == tv)
			return &t->commits[i];
	return NULL;
}

/* The handles of slots[0..n), in slot order, each once: into c. */
static int slots_handles(struct mds_versions *vs, const struct mds_vfile *f,
			 const uint32_t *slots, size_t n, struct vcommit *c)
{
	uint8_t seen[TP_MAX_STRIPE] = { 0 };

	if (n == 0)
		return vt_fail(vs, -EINVAL, FILE_FMT ": commit names no object written",
			       FILE_ARG(f->file));
	for (size_t i = 0; i < n; i++) {
		if (slots[i] >= f->count)
			return vt_fail(vs, -EINVAL,
				       FILE_FMT ": commit names slot %u of a layout"
						" of %u objects",
				       FILE_ARG(f->file), slots[i], f->count);
		seen[slots[i]] = 1;
	}
	c->handles = malloc(8 * (size_t)f->count);
	c->merged = calloc(f->count, 1);
	if (!c->handles || !c->merged)
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for a commit", FILE_ARG(f->file));
	for (uint32_t s = 0; s < f->count; s++)
		if (seen[s])
			c->handles[c->n++] = f->handles[s];
	return 0;
}

/* A resend of commit c: the same objects, or refused. */
static int commit_again(struct mds_versions *vs, const struct vtable *t,
			const struct vcommit *old, const struct vcommit *c,
			Tessera__VersionCommit *out)
{
	if (old->n != c->n || memcmp(old->handles, c->handles, 8 * (size_t)c->n))
		return vt_fail(vs, -EINVAL,
			       FILE_FMT ": T %016llx committed again with other"
					" objects",
			       FILE_ARG(t->file), (unsigned long long)c->t);
	vt_commit_msg(t, old, out);
	return 0;
}

/* Whether T tv may be committed now: 0, or why not. A commit of T already
 * in the table (a resend) passes when its ID# is the session's, or was
 * forgotten by a restart or ended with its session (the reply was lost
 * with the daemon or the connection). */
static int commit_allowed(struct mds_versions *vs, struct vtable *t, uint64_t tv,
			  uint64_t session, const Tessera__VersionIds *ids,
			  const struct vcommit *old)
{
	uint64_t id = tv >> 32;

	if ((tv & UINT32_MAX) == 0)
		return vt_fail(vs, -EINVAL,
			       FILE_FMT ": commit of T %016llx: IO# 0 is never"
					" used",
			       FILE_ARG(t->file), (unsigned long long)tv);
	if (ids)
		return id_by_block(vs, t, id, ids, old);
	if (old && !find_id(t, (uint32_t)id) && ((id >= 1 && id < t->first_id) || orphaned(t, id)))
		return 0;
	return id_owned(vs, t, id, session, "commit");
}

/* Room for one more commit of c->enc bytes, in the file and the daemon:
 * 0, or -EBUSY. */
static int commit_room(struct mds_versions *vs, const struct vtable *t, const struct vcommit *c)
{
	if (t->ncommits >= MDS_VERSION_COMMITS || t->vmap_bytes + c->enc > vs->vmap_max)
		return vt_fail(vs, -EBUSY,
			       FILE_FMT ": %u commits not merged (%zu bytes; limits"
					" %u and %zu): merge first",
			       FILE_ARG(t->file), t->ncommits, t->vmap_bytes, MDS_VERSION_COMMITS,
			       vs->vmap_max);
	if (vt_over(vs, ROOM_COMMIT) && vt_make_room(vs, t, ROOM_COMMIT))
		return vt_fail(vs, -EBUSY,
			       FILE_FMT ": the version server holds %llu commits not"
					" merged in files in use (its limit): merge first",
			       FILE_ARG(t->file), (unsigned long long)vs->ncommits);
	return 0;
}

/* Log c (V = c->vm) and keep it. */
static int commit_add(struct mds_versions *vs, struct vtable *t, struct vcommit *c)
{
	leveldb_writebatch_t *b;
	int rc;

	if (vt_grow(&t->commits, t->ncommits, &t->ccommits, sizeof(*c)))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for a commit", FILE_ARG(t->file));
	b = leveldb_writebatch_create();
	t->v++;
	vt_put_state(b, t);
	if ((rc = vt_put_commit(b, t->file, c))) {
		leveldb_writebatch_destroy(b);
		t->v--;
		return vt_fail(vs, rc, FILE_FMT ": no memory for a commit", FILE_ARG(t->file));
	}
	if ((rc = vt_write_batch(vs, b, "version commit", t->file))) {
		t->v--;
		return rc;
	}
	t->commits[t->ncommits++] = *c;
	t->vmap_bytes += c->enc;
	vs->ncommits++;
	return 0;
}

int mds_version_commit(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		       uint64_t tv, const uint32_t *slots, size_t n, Tessera__VersionCommit *out)
{
	return mds_version_commit_as(vs, f, session, NULL, tv, slots, n, out);
}

int mds_version_commit_as(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			  const Tessera__VersionIds *ids, uint64_t tv, const uint32_t *slots,
			  size_t n, Tessera__VersionCommit *out)
{
	struct vcommit c = { .t = tv }, *old;
	struct vtable *t;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	old = find_commit(t, tv);
	if ((rc = commit_allowed(vs, t, tv, session, ids, old)) ||
	    (rc = slots_handles(vs, f, slots, n, &c)))
		goto out;
	if (old) {
		rc = commit_again(vs, t, old, &c, out);
		goto out;
	}
	c.vm = t->v + 1;
	if ((rc = vt_commit_sign(vs, t, &c)) || (rc = commit_room(vs, t, &c)) ||
	    (rc = commit_add(vs, t, &c)))
		goto out;
	vt_commit_msg(t, &t->commits[t->ncommits - 1], out);
	return 0;
out:
	vt_commit_free(&c);
	return rc;
}

int mds_version_vmap(struct mds_versions *vs, const struct mds_vfile *f, uint64_t upto,
		     Tessera__VersionCommit ***out, size_t *n)
{
	struct vtable *t;
	Tessera__VersionCommit *msgs, **ptrs;
	size_t k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	while (k < t->ncommits && t->commits[k].vm <= upto)
		k++;
	if (!k)
		return 0;
	/* one block: the pointers, then the messages */
	ptrs = malloc(k * (sizeof(*ptrs) + sizeof(*msgs)));
	if (!ptrs)
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for %zu commits",
			       FILE_ARG(f->file), k);
	msgs = (Tessera__VersionCommit *)(ptrs + k);
	for (size_t i = 0; i < k; i++) {
		vt_commit_msg(t, &t->commits[i], &msgs[i]);
		ptrs[i] = &msgs[i];
	}
	*out = ptrs;
	*n = k;
	return 0;
}

/* ---- reads */

static struct vsnap *find_snap(struct vtable *t, const char *name)
{
	for (uint32_t i = 0; i < t->nsnaps; i++)
		if (!strcmp(t->snaps[i].name, name))
			return &t->snaps[i];
	return NULL;
}

/* End one read of session at vr; 1 if there was one. */
static int end_read(struct vtable *t, uint64_t session, uint64_t vr)
{
	for (uint32_t i = 0; i < t->nreads; i++)
		if (t->reads[i].vr == vr && t->reads[i].session == session) {
			t->reads[i] = t->reads[--t->nreads];
			return 1;
		}
	return 0;
}

int mds_version_read(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
		     const char *name, uint64_t end, uint64_t *vr)
{
	struct vtable *t;
	struct vsnap *s = NULL;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	if (name && *name && !(s = find_snap(t, name)))
		return vt_fail(vs, -ENOENT,
			       FILE_FMT ": read as of snapshot \"%.255s\": no such"
					" snapshot",
			       FILE_ARG(f->file), name);
	if (end)
		(void)end_read(t, session, end);
	if (t->nreads >= MDS_VERSION_READS)
		return vt_fail(vs, -EBUSY,
			       FILE_FMT ": %u reads in progress, the limit: end some"
					" first",
			       FILE_ARG(f->file), t->nreads);
	if (vt_grow(&t->reads, t->nreads, &t->creads, sizeof(*t->reads)))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for a read", FILE_ARG(f->file));
	*vr = s ? s->version : t->v;
	t->reads[t->nreads++] = (struct vread){ *vr, session };
	return 0;
}

int mds_version_read_end(struct mds_versions *vs, const struct mds_vfile *f, uint64_t session,
			 uint64_t vr)
{
	struct vtable *t;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	(void)end_read(t, session, vr);
	return 0;
}

/* ---- merges */

/* How far a merge may go now: not past the newest commit, a read in
 * progress or a snapshot. */
static uint64_t merge_bound(const struct vtable *t)
{
	uint64_t upto = t->v;

	for (uint32_t i = 0; i < t->nreads; i++)
		if (t->reads[i].vr < upto)
			upto = t->reads[i].vr;
	for (uint32_t i = 0; i < t->nsnaps; i++)
		if (t->snaps[i].version < upto)
			upto = t->snaps[i].version;
	return upto;
}

int mds_version_merge(struct mds_versions *vs, const struct mds_vfile *f, int64_t now_ns,
		      struct mds_vgrant *out)
{
	struct vtable *t;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	tessera__version_grant__init(&out->msg);
	out->msg.file = t->file;
	out->msg.upto = merge_bound(t);
	out->msg.next_id = t->next_id;
	for (uint32_t i = 0; i < t->nids; i++)
		out->live[i] = t->ids[i].id;
	out->msg.live_ids = out->live;
	out->msg.n_live_ids = t->nids;
	out->msg.expires_ns = now_ns + vs->grant_ns;
	if ((rc = cap_sign_grant(vs->key, &out->msg, out->mac)))
		return vt_fail(vs, rc, FILE_FMT ": cannot sign a merge grant", FILE_ARG(f->file));
	return 0;
}

/* Mark commits <= version that wrote `handle` merged there, in batch b
 * (rewritten, or deleted once merged everywhere); commits merged
 * everywhere are only marked gone (vm 0) here: commit_compact drops them. */
static uint32_t mark_merged(struct vtable *t, uint64_t handle, uint64_t version,
			    leveldb_writebatch_t *b, int *nomem)
{
	uint32_t gone = 0;

	for (uint32_t i = 0; i < t->ncommits && t->commits[i].vm <= version; i++) {
		struct vcommit *c = &t->commits[i];
		uint32_t left = 0, hit = 0;

		for (uint32_t h = 0; h < c->n; h++) {
			if (c->handles[h] == handle && !c->merged[h])
				c->merged[h] = hit = 1;
			left += !c->merged[h];
		}
		if (!hit)
			continue;
		if (!left) {
			vt_del_commit(b, t->file, c->vm);
			gone++;
		} else if (vt_put_commit(b, t->file, c)) {
			*nomem = 1;
		}
	}
	return gone;
}

/* Drop commits merged everywhere; the floor: below the first left. */
static void commit_compact(struct mds_versions *vs, struct vtable *t)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < t->ncommits; i++) {
		struct vcommit *c = &t->commits[i];
		uint32_t left = 0;

		for (uint32_t h = 0; h < c->n; h++)
			left += !c->merged[h];
		if (left) {
			t->commits[k++] = *c;
			continue;
		}
		t->vmap_bytes -= c->enc;
		vt_commit_free(c);
	}
	vs->ncommits -= t->ncommits - k;
	t->ncommits = k;
}

static uint64_t floor_of(const struct vtable *t)
{
	return t->ncommits ? t->commits[0].vm - 1 : t->v;
}

/* Undo mark_merged after a failed write: the handle's marks as they were. */
static void unmark(struct vtable *t, uint64_t handle, uint64_t version, const uint8_t *was,
		   uint32_t nwas)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < t->ncommits && t->commits[i].vm <= version; i++)
		for (uint32_t h = 0; h < t->commits[i].n; h++)
			if (t->commits[i].handles[h] == handle && k < nwas)
				t->commits[i].merged[h] = was[k++];
}

/* The merged marks of `handle` on commits <= version, to undo with. */
static uint8_t *marks_of(struct vtable *t, uint64_t handle, uint64_t version, uint32_t *n)
{
	uint8_t *was = malloc(t->ncommits + 1);

	*n = 0;
	for (uint32_t i = 0; was && i < t->ncommits && t->commits[i].vm <= version; i++)
		for (uint32_t h = 0; h < t->commits[i].n; h++)
			if (t->commits[i].handles[h] == handle)
				was[(*n)++] = t->commits[i].merged[h];
	return was;
}

static int merged_check(struct mds_versions *vs, const struct mds_vfile *f, struct vtable *t,
			uint64_t handle, uint64_t version)
{
	uint32_t s = 0;

	while (s < f->count && f->handles[s] != handle)
		s++;
	if (s == f->count)
		return vt_fail(vs, -EINVAL,
			       FILE_FMT ": merged report of object %016llx, not one"
					" of its objects",
			       FILE_ARG(f->file), (unsigned long long)handle);
	if (version > merge_bound(t))
		return vt_fail(vs, -EINVAL,
			       FILE_FMT ": object %016llx reports merged up to %llu,"
					" past what a merge may reach now (%llu)",
			       FILE_ARG(f->file), (unsigned long long)handle,
			       (unsigned long long)version, (unsigned long long)merge_bound(t));
	return 0;
}

/* The floor once the commits merged everywhere are gone. */
static uint64_t floor_after_marks(const struct vtable *t)
{
	for (uint32_t i = 0; i < t->ncommits; i++)
		for (uint32_t h = 0; h < t->commits[i].n; h++)
			if (!t->commits[i].merged[h])
				return t->commits[i].vm - 1;
	return t->v;
}

int mds_version_merged(struct mds_versions *vs, const struct mds_vfile *f, uint64_t handle,
		       uint64_t version)
{
	struct vtable *t;
	leveldb_writebatch_t *b;
	uint64_t old_floor;
	uint8_t *was;
	uint32_t nwas;
	int rc, nomem = 0;

	if ((rc = vt_table_of(vs, f, &t)) || (rc = merged_check(vs, f, t, handle, version)))
		return rc;
	if (!(was = marks_of(t, handle, version, &nwas)))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory", FILE_ARG(f->file));
	b = leveldb_writebatch_create();
	(void)mark_merged(t, handle, version, b, &nomem);
	old_floor = t->floor;
	t->floor = floor_after_marks(t);
	vt_put_state(b, t);
	if (nomem) {
		leveldb_writebatch_destroy(b);
		rc = vt_fail(vs, -ENOMEM, FILE_FMT ": no memory", FILE_ARG(f->file));
	} else {
		rc = vt_write_batch(vs, b, "version merged", f->file);
	}
	if (rc) {
		t->floor = old_floor;
		unmark(t, handle, version, was, nwas);
	} else {
		commit_compact(vs, t);
	}
	free(was);
	return rc;
}

/* ---- snapshots */

static int snap_name_ok(struct mds_versions *vs, const struct mds_vfile *f, const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len < 1 || len > MDS_VERSION_SNAP_NAME)
		return vt_fail(vs, -EINVAL,
			       FILE_FMT ": a snapshot's name is 1 to %u bytes (%zu"
					" given)",
			       FILE_ARG(f->file), MDS_VERSION_SNAP_NAME, len);
	return 0;
}

int mds_version_snap_create(struct mds_versions *vs, const struct mds_vfile *f,
			    const char *name, int64_t now_ns, uint64_t *version)
{
	unsigned char key[VT_KEY_MAX], val[16];
	leveldb_writebatch_t *b;
	struct vtable *t;
	int rc;

	if ((rc = snap_name_ok(vs, f, name)) || (rc = vt_table_of(vs, f, &t)))
		return rc;
	if (find_snap(t, name))
		return vt_fail(vs, -EEXIST, FILE_FMT ": snapshot \"%s\" exists", FILE_ARG(f->file),
			       name);
	if (t->nsnaps >= MDS_VERSION_SNAPS)
		return vt_fail(vs, -EBUSY, FILE_FMT ": %u snapshots, the limit: drop one first",
			       FILE_ARG(f->file), t->nsnaps);
	if (vt_grow(&t->snaps, t->nsnaps, &t->csnaps, sizeof(*t->snaps)))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory for a snapshot",
			       FILE_ARG(f->file));
	mds_put_be64(val, t->v);
	mds_put_be64(val + 8, (uint64_t)now_ns);
	b = leveldb_writebatch_create();
	leveldb_writebatch_put(b, (char *)key, vt_snap_key(key, t->file, name), (char *)val,
			       sizeof(val));
	if ((rc = vt_write_batch(vs, b, "snapshot create", f->file)))
		return rc;
	struct vsnap *s = &t->snaps[t->nsnaps++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	s->version = t->v;
	s->ctime_ns = now_ns;
	*version = t->v;
	return 0;
}

int mds_version_snap_drop(struct mds_versions *vs, const struct mds_vfile *f, const char *name)
{
	unsigned char key[VT_KEY_MAX];
	leveldb_writebatch_t *b;
	struct vtable *t;
	struct vsnap *s;
	int rc;

	if ((rc = snap_name_ok(vs, f, name)) || (rc = vt_table_of(vs, f, &t)))
		return rc;
	if (!(s = find_snap(t, name)))
		return vt_fail(vs, -ENOENT, FILE_FMT ": drop snapshot \"%s\": no such snapshot",
			       FILE_ARG(f->file), name);
	b = leveldb_writebatch_create();
	leveldb_writebatch_delete(b, (char *)key, vt_snap_key(key, t->file, name));
	if ((rc = vt_write_batch(vs, b, "snapshot drop", f->file)))
		return rc;
	*s = t->snaps[--t->nsnaps];
	return 0;
}

static int snap_cmp(const void *a, const void *b)
{
	const Tessera__VersionSnapshot *x = a, *y = b;

	if (x->version != y->version)
		return x->version < y->version ? -1 : 1;
	return strcmp(x->name, y->name);
}

int mds_version_snap_list(struct mds_versions *vs, const struct mds_vfile *f,
			  Tessera__VersionSnapshot **out, size_t *n)
{
	struct vtable *t;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	if (!t->nsnaps)
		return 0;
	if (!(*out = calloc(t->nsnaps, sizeof(**out))))
		return vt_fail(vs, -ENOMEM, FILE_FMT ": no memory", FILE_ARG(f->file));
	for (uint32_t i = 0; i < t->nsnaps; i++) {
		tessera__version_snapshot__init(&(*out)[i]);
		(*out)[i].name = t->snaps[i].name;
		(*out)[i].version = t->snaps[i].version;
		(*out)[i].ctime_ns = t->snaps[i].ctime_ns;
	}
	qsort(*out, t->nsnaps, sizeof(**out), snap_cmp);
	*n = t->nsnaps;
	return 0;
}

int mds_version_state(struct mds_versions *vs, const struct mds_vfile *f, struct mds_vstate *out)
{
	struct vtable *t;
	int rc;

	if ((rc = vt_table_of(vs, f, &t)))
		return rc;
	out->newest = t->v;
	out->merged = floor_of(t);
	out->next_id = t->next_id;
	out->unmerged = t->ncommits;
	out->reads = t->nreads;
	out->ids = t->nids;
	out->snaps = t->nsnaps;
	return 0;
}

/* ---- sessions */

/* Ends t's ID#s and reads of `session`: how many; *ids: how many ID#s. */
static uint32_t table_session_end(struct vtable *t, uint64_t session, uint32_t *ids)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nids;)
		if (t->ids[i].session == session) {
			t->orphans[t->orphan_next] = t->ids[i].id;
			t->orphan_next = (t->orphan_next + 1) % MDS_VERSION_ORPHANS;
			if (t->norphans < MDS_VERSION_ORPHANS)
				t->norphans++;
			t->ids[i] = t->ids[--t->nids];
			n++;
		} else {
			i++;
		}
	*ids = n;
	for (uint32_t i = 0; i < t->nreads;)
		if (t->reads[i].session == session) {
			t->reads[i] = t->reads[--t->nreads];
			n++;
		} else {
			i++;
		}
	return n;
}

uint32_t mds_versions_session_end(struct mds_versions *vs, uint64_t session,
				  void (*dead)(void *arg, uint64_t file), void *arg)
{
	uint32_t n = 0, ids;

	if (!vs)
		return 0;
	for (int b = 0; b < VT_BUCKETS; b++)
		for (struct vtable *t = vs->buckets[b]; t; t = t->next) {
			n += table_session_end(t, session, &ids);
			if (ids && dead)
				dead(arg, t->file);
		}
	return n;
}
