/*
 * ios_vlogs.c - a storage daemon's open version logs and the version work
 * of its requests (ios_vlogs.h says what and why).
 *
 * Uses (one way): ios_vlog.c (the log of one object) and the store (the
 * base object, the log's path). ios_pool.c calls ios_vjob_run from a
 * worker (or the loop, inline) for a part that carries a vjob; the loop's
 * checks (ios_vcheck_*) are in ios_vlogd.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios.h"
#include "ios_vlogs.h"

#define OBJ "object %016" PRIx64

/* The base object of an open log: the store, through the lane of the
 * worker using the log now (set at each use). */
struct vbase {
	struct ios_store *lane;
	uint64_t handle;
};

struct vent {
	uint64_t handle;
	struct ios_vlog *log; /* NULL: slot free (unless busy: being opened) */
	struct vbase base;
	int busy;             /* a worker uses it (or opens it) */
	uint64_t used;        /* clock of last use */
	uint64_t bytes;       /* its stats when last put back */
	uint32_t records;
};

struct ios_vlogs {
	pthread_mutex_t mu;   /* guards the table and the totals */
	struct ios_disk *disk;
	char *dir;
	unsigned index;
	struct ios_vlogs_limits lim;
	struct vent *ents;
	uint64_t clock;
	uint64_t records, bytes; /* sums of the entries' */
};

/* ------------------------------------------------------------ the base */

static int vb_read(void *ctx, uint64_t off, uint64_t len, uint8_t *buf)
{
	struct vbase *b = ctx;
	struct ios_piece p = { off, len };
	uint64_t size, sc;
	ssize_t rc = len ? ios_store_read_pieces(b->lane, b->handle, &p, 1, buf, &size, &sc) : 0;

	return rc < 0 ? (int)rc : 0;
}

static int vb_write(void *ctx, uint64_t off, uint64_t len, const uint8_t *buf)
{
	struct vbase *b = ctx;
	struct ios_piece p = { off, len };
	uint64_t sc;
	ssize_t rc = len ? ios_store_write_pieces(b->lane, b->handle, &p, 1, buf, &sc) : 0;

	return rc < 0 ? (int)rc : 0;
}

static int vb_truncate(void *ctx, uint64_t size)
{
	struct vbase *b = ctx;

	return ios_store_truncate(b->lane, b->handle, size);
}

static int vb_size(void *ctx, uint64_t *size)
{
	struct vbase *b = ctx;
	int64_t mtime;

	return ios_store_size(b->lane, b->handle, size, &mtime, NULL);
}

static int vb_sync(void *ctx)
{
	struct vbase *b = ctx;

	return ios_store_sync(b->lane, b->handle);
}

static const struct ios_vlog_base_ops vb_ops = { vb_read, vb_write, vb_truncate, vb_size,
						 vb_sync };

/* ------------------------------------------------------------ registry */

int ios_vlogs_create(struct ios_disk *disk, const char *dir, unsigned index,
		     const struct ios_vlogs_limits *lim, struct ios_vlogs **out)
{
	struct ios_vlogs *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (lim)
		v->lim = *lim;
	if (!v->lim.max_open)
		v->lim.max_open = IOS_VLOGS_OPEN;
	if (!v->lim.max_records)
		v->lim.max_records = IOS_VLOGS_MAX_RECORDS;
	if (!v->lim.max_bytes)
		v->lim.max_bytes = IOS_VLOGS_MAX_BYTES;
	if (!v->lim.half_percent || v->lim.half_percent > 100)
		v->lim.half_percent = 50;
	v->disk = disk;
	v->index = index;
	v->dir = strdup(dir);
	v->ents = calloc(v->lim.max_open, sizeof(*v->ents));
	if (!v->dir || !v->ents) {
		free(v->dir);
		free(v->ents);
		free(v);
		return -ENOMEM;
	}
	pthread_mutex_init(&v->mu, NULL);
	*out = v;
	return 0;
}

void ios_vlogs_destroy(struct ios_vlogs *v)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < v->lim.max_open; i++)
		if (v->ents[i].log)
			ios_vlog_close(v->ents[i].log);
	pthread_mutex_destroy(&v->mu);
	free(v->ents);
	free(v->dir);
	free(v);
}

static void log_path(const struct ios_vlogs *v, uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x/%016" PRIx64 ".vlog", v->dir, (unsigned)(handle & 0xff),
		 handle);
}

static struct vent *find(struct ios_vlogs *v, uint64_t handle)
{
	for (uint32_t i = 0; i < v->lim.max_open; i++)
		if ((v->ents[i].log || v->ents[i].busy) && v->ents[i].handle == handle)
			return &v->ents[i];
	return NULL;
}

/* Drop an entry's counts from the totals and free its slot (locked; the
 * caller closes the log). */
static void ent_clear(struct ios_vlogs *v, struct vent *e)
{
	v->records -= e->records;
	v->bytes -= e->bytes;
	memset(e, 0, sizeof(*e));
}

/* A free slot, or the least recently used log without live records,
 * closed (locked). NULL: every slot holds a log in use or with live
 * records. */
static struct vent *slot_for(struct ios_vlogs *v)
{
	struct vent *lru = NULL;

	for (uint32_t i = 0; i < v->lim.max_open; i++) {
		struct vent *e = &v->ents[i];

		if (!e->log && !e->busy)
			return e;
		if (!e->busy && !e->records && (!lru || e->used < lru->used))
			lru = e;
	}
	if (lru) {
		ios_vlog_close(lru->log);
		ent_clear(v, lru);
	}
	return lru;
}

static int say(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(char **why, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	free(*why);
	*why = strdup(buf);
	return 0;
}

/* Open the log of `handle` (outside the lock: its slot is busy). */
static int ent_open(struct ios_vlogs *v, struct vent *e, char **why)
{
	char path[4096];
	struct ios_vlog_config cfg = { 0 };
	int rc;

	log_path(v, e->handle, path, sizeof(path));
	cfg.disk = v->disk;
	cfg.handle = e->handle;
	cfg.path = path;
	cfg.base.ops = &vb_ops;
	cfg.base.ctx = &e->base;
	cfg.limits = v->lim.per_log;
	cfg.durability = IOS_VLOG_SYNC_EACH;
	rc = ios_vlog_open(&cfg, &e->log);
	if (rc) {
		say(why, "storage daemon %u: opening its version log: %s", v->index,
		    e->log ? ios_vlog_why(e->log) : strerror(-rc));
		if (e->log)
			ios_vlog_close(e->log);
		e->log = NULL;
	}
	return rc;
}

/* The log of `handle`, busy for the caller, its base on `lane`. */
static int get(struct ios_vlogs *v, struct ios_store *lane, uint64_t handle, struct vent **out,
	       char **why)
{
	struct vent *e;
	int rc = 0, fresh = 0;

	pthread_mutex_lock(&v->mu);
	if ((e = find(v, handle)) && e->busy) {
		rc = -EALREADY; /* never: an object's parts run one at a time */
	} else if (!e && !(e = slot_for(v))) {
		rc = -EBUSY;
	} else {
		fresh = !e->log;
		e->handle = handle;
		e->busy = 1;
	}
	pthread_mutex_unlock(&v->mu);
	if (rc == -EALREADY)
		return say(why, "storage daemon %u: its version log is in use by another request "
			   "(a bug: one request at a time per object)", v->index), -EBUSY;
	if (rc)
		return say(why, "storage daemon %u: %u versioned objects have unmerged versions, "
			   "the most it keeps open (IOS_VLOGS_OPEN): merge first", v->index,
			   v->lim.max_open), rc;
	e->base.lane = lane;
	e->base.handle = handle;
	if (fresh && (rc = ent_open(v, e, why))) {
		pthread_mutex_lock(&v->mu);
		memset(e, 0, sizeof(*e));
		pthread_mutex_unlock(&v->mu);
		return rc;
	}
	*out = e;
	return 0;
}

/* Back to the table, its counts refreshed (the caller still owns the log
 * here, so reading its stats races with nobody). */
static void put(struct ios_vlogs *v, struct vent *e)
{
	struct ios_vlog_stats st;

	ios_vlog_stats(e->log, &st);
	pthread_mutex_lock(&v->mu);
	v->records += (uint64_t)st.uncommitted + st.committed - e->records;
	v->bytes += st.log_bytes - e->bytes;
	e->records = st.uncommitted + st.committed;
	e->bytes = st.log_bytes;
	e->used = ++v->clock;
	e->busy = 0;
	pthread_mutex_unlock(&v->mu);
}

int ios_vlogs_remove(struct ios_vlogs *v, uint64_t handle)
{
	char path[4096];
	struct vent *e;
	int rc;

	if (!v)
		return 0;
	pthread_mutex_lock(&v->mu);
	if ((e = find(v, handle)) && !e->busy) {
		ios_vlog_close(e->log);
		ent_clear(v, e);
	}
	pthread_mutex_unlock(&v->mu);
	log_path(v, handle, path, sizeof(path));
	rc = v->disk->ops->unlink(v->disk, handle, IOS_FILE_VLOG, path);
	return rc == -ENOENT ? 0 : rc;
}

void ios_vlogs_totals(struct ios_vlogs *v, struct ios_vlogs_totals *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&v->mu);
	for (uint32_t i = 0; i < v->lim.max_open; i++)
		out->open += v->ents[i].log != NULL;
	out->records = v->records;
	out->bytes = v->bytes;
	pthread_mutex_unlock(&v->mu);
}

/* ------------------------------------------------------------ the work */

void ios_vjob_free(struct ios_vjob *j)
{
	if (!j)
		return;
	free(j->commits);
	free(j->live);
	free(j);
}

/* The daemon's limits before a write of len bytes: 0 or -EBUSY. */
static int room(struct ios_vlogs *v, uint64_t len, char **why)
{
	uint64_t records, bytes;

	pthread_mutex_lock(&v->mu);
	records = v->records;
	bytes = v->bytes;
	pthread_mutex_unlock(&v->mu);
	if (records + 1 > v->lim.max_records)
		return say(why, "storage daemon %u holds %" PRIu64 " unmerged version records, its "
			   "limit (IOS_VLOGS_MAX_RECORDS): merge first", v->index, records),
		       -EBUSY;
	if (bytes + len > v->lim.max_bytes)
		return say(why, "storage daemon %u: its version logs hold %" PRIu64 " bytes; %"
			   PRIu64 " more exceed its limit of %" PRIu64 " (IOS_VLOGS_MAX_BYTES): "
			   "merge first", v->index, bytes, len, v->lim.max_bytes), -EBUSY;
	return 0;
}

static int apply_commits(struct ios_vlogs *v, struct ios_vlog *log, const struct ios_vjob *j,
			 char **why)
{
	struct ios_vlog_stats st;

	ios_vlog_stats(log, &st);
	for (size_t i = 0; i < j->n_commits; i++) {
		const struct ios_vcommit *c = &j->commits[i];
		int rc;

		/* Merged already (its record may be gone): a late resend. */
		if (c->vm <= st.merged)
			continue;
		rc = ios_vlog_commit(log, c->t, c->vm);
		if (rc == -ESTALE)
			continue;
		if (rc == -ENOENT)
			rc = -EIO; /* a signed commit of a record this log never kept */
		if (rc)
			return say(why, "storage daemon %u: applying commit of T %016" PRIx64
				   " as version %" PRIu64 ": %s", v->index, c->t, c->vm,
				   ios_vlog_why(log)), rc;
	}
	return 0;
}

/* The op itself on an open log: bytes moved or 0, or a negative errno. */
static ssize_t vjob_op(struct ios_vlogs *v, struct ios_vlog *log, struct ios_part *p,
		       const uint8_t *data)
{
	struct ios_vjob *j = p->vjob;
	uint64_t merged;
	int rc = 0;

	switch (j->op) {
	case IOS_VOP_WRITE:
		rc = ios_vlog_write(log, j->t, j->part, p->pieces, p->n, data, p->total);
		return rc ? rc : (ssize_t)p->total;
	case IOS_VOP_TRUNCATE:
		return ios_vlog_truncate(log, j->t, p->size);
	case IOS_VOP_READ:
		rc = ios_vlog_read(log, j->version, p->pieces, p->n, p->buf, &p->size);
		return rc ? rc : (ssize_t)p->total;
	case IOS_VOP_MERGE:
		rc = ios_vlog_merge(log, j->version, &merged);
		rc = rc ? rc : ios_vlog_discard_dead(log, j->next_id, j->live, j->n_live,
						     &j->discarded);
		break;
	case IOS_VOP_STATE:
		break;
	}
	(void)v;
	ios_vlog_stats(log, &j->stats);
	return rc;
}

static const char *vop_name(enum ios_vop op)
{
	static const char *const names[] = { "versioned write", "versioned truncate",
					     "versioned read", "merge", "log state" };

	return names[op];
}

/* Whether `n` of a limit `max` is past the registry's share of it. */
static int past(const struct ios_vlogs *v, uint64_t n, uint64_t max)
{
	return n * 100 >= max * v->lim.half_percent;
}

/* After a write: does entry e's log, or do all the open logs, hold the
 * share of a record or byte limit that asks for a merge? (The version
 * server merges the file next: docs/design.md, Merges.) */
static int half_full(struct ios_vlogs *v, const struct vent *e)
{
	uint64_t rmax = v->lim.per_log.max_records ? v->lim.per_log.max_records
						   : IOS_VLOG_MAX_RECORDS;
	uint64_t bmax = v->lim.per_log.max_bytes ? v->lim.per_log.max_bytes : IOS_VLOG_MAX_BYTES;
	int half;

	pthread_mutex_lock(&v->mu);
	half = past(v, e->records, rmax) || past(v, e->bytes, bmax) ||
	       past(v, v->records, v->lim.max_records) || past(v, v->bytes, v->lim.max_bytes);
	pthread_mutex_unlock(&v->mu);
	return half;
}

void ios_vjob_run(struct ios_store *lane, struct ios_part *p, const uint8_t *data)
{
	struct ios_vjob *j = p->vjob;
	struct ios_vlogs *v = j->vlogs;
	struct vent *e;
	ssize_t rc;

	if (j->op == IOS_VOP_WRITE && (rc = room(v, p->total, &p->why))) {
		p->rc = rc;
		return;
	}
	if ((rc = get(v, lane, p->handle, &e, &p->why))) {
		p->rc = rc;
		return;
	}
	rc = apply_commits(v, e->log, j, &p->why);
	if (!rc && (rc = vjob_op(v, e->log, p, data)) < 0)
		say(&p->why, "storage daemon %u: %s: %s", v->index, vop_name(j->op),
		    ios_vlog_why(e->log));
	put(v, e);
	if (j->op == IOS_VOP_WRITE && rc >= 0)
		j->half = half_full(v, e);
	p->rc = rc;
}
