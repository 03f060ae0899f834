/*
 * io.c - a file's storage objects: striped reads and writes, size, sync,
 * truncate and removal. Everything here talks to storage daemons only;
 * opening is open.c's and the namespace meta.c's.
 *
 * A contiguous logical range [off, off+len) touches, on each slot s of the
 * layout, one contiguous object range [osize(s, off), osize(s, off+len))
 * where osize is tdl_layout_object_size. That range is cut into chunks of
 * at most max_io bytes, one request each; the chunks of all slots are
 * interleaved and sent `window` at a time, so every server works at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

static struct tdl_layout tdl_of(const struct tessera_layout *l)
{
	struct tdl_layout t = { l->strip_size, l->count };

	return t;
}

/* --------------------------------------------------------- object helpers */

/* One request per storage daemon that holds objects of `layout`, each
 * naming its handles; `op` is GETSIZE, REMOVE or SYNC. *reqs gets n_ios
 * entries (NULL for uninvolved servers). A GETSIZE at read version rd (not
 * NULL: a versioned file) carries it and the commits naming its handles. */
static int per_server_at(tessera_fs *fs, const struct tessera_layout *layout,
			 const Tessera__Capability *cap, unsigned op, const struct tc_vread *rd,
			 struct tc_req **reqs)
{
	uint32_t n = fs->cfg.n_ios;
	uint64_t handles[TESSERA_MAX_STRIPE];
	Tessera__VersionCommit **pick = NULL;
	int rc = 0;

	memset(reqs, 0, n * sizeof(*reqs));
	if (rd && rd->rep && !(pick = calloc(rd->rep->n_vmap + 1, sizeof(*pick))))
		return -ENOMEM;
	for (uint32_t s = 0; s < n; s++) {
		Tessera__HandlesRequest m = TESSERA__HANDLES_REQUEST__INIT;

		m.handles = handles;
		m.cap = (Tessera__Capability *)cap;
		for (uint32_t i = 0; i < layout->count; i++)
			if (layout->servers[i] == s)
				handles[m.n_handles++] = layout->handles[i];
		if (!m.n_handles)
			continue;
		if (rd) {
			m.read_version = rd->vr;
			m.vmap = pick;
			m.n_vmap = tc_vread_pick(rd, handles, m.n_handles, pick);
		}
		reqs[s] = tc_req_new(fs, (int)s, op, &m.base, NULL, 0);
		if (!reqs[s]) {
			rc = -ENOMEM;
			break;
		}
	}
	free(pick);
	return rc;
}

static int per_server(tessera_fs *fs, const struct tessera_layout *layout,
		      const Tessera__Capability *cap, unsigned op, struct tc_req **reqs)
{
	return per_server_at(fs, layout, cap, op, NULL, reqs);
}

/* A layout from the metadata daemon is checked before any arithmetic on
 * it: one stored before the limits existed (a 2^62-byte strip, say)
 * would otherwise divide by zero in the striping math. */
int tc_check_layout(tessera_fs *fs, const struct tessera_layout *l, const char *path)
{
	struct tdl_layout t = tdl_of(l);
	char why[160];

	if (tdl_layout_check(&t, why, sizeof(why)))
		return tc_fail(fs, -EIO, "%s: file has no usable layout: %s", path, why);
	for (uint32_t i = 0; i < l->count; i++)
		if (l->servers[i] >= fs->cfg.n_ios)
			return tc_fail(fs, -EIO, "%s: layout names storage daemon %u, config has %u",
				       path, l->servers[i], fs->cfg.n_ios);
	return 0;
}

/* Run per-server requests; on failure name the first failing server. */
static int run_servers(tessera_fs *fs, struct tc_req **reqs, const char *what, const char *path)
{
	uint32_t n = fs->cfg.n_ios, k = 0;
	struct tc_req *list[TP_MAX_SERVERS];
	char label[4200];
	int rc;

	for (uint32_t s = 0; s < n; s++)
		if (reqs[s])
			list[k++] = reqs[s];
	rc = tc_run(fs, list, k);
	if (rc) {
		snprintf(label, sizeof(label), "%s %s", what, path);
		for (uint32_t i = 0; i < k; i++)
			if (list[i]->status)
				return tc_req_fail(fs, list[i], label);
	}
	return rc;
}

static void free_servers(tessera_fs *fs, struct tc_req **reqs)
{
	for (uint32_t s = 0; s < fs->cfg.n_ios; s++)
		tc_req_free(fs, reqs[s]);
}

static int objects_op(tessera_fs *fs, const struct tessera_layout *layout,
		      const Tessera__Capability *cap, unsigned op, const char *what, const char *path)
{
	struct tc_req *reqs[TP_MAX_SERVERS];
	int rc = tc_check_layout(fs, layout, path);

	if (rc)
		return rc;
	rc = per_server(fs, layout, cap, op, reqs);
	if (rc)
		rc = tc_fail(fs, rc, "%s %s: out of memory", what, path);
	else
		rc = run_servers(fs, reqs, what, path);
	free_servers(fs, reqs);
	return rc;
}

int tc_remove_objects(tessera_fs *fs, const struct tessera_layout *layout,
		      const Tessera__Capability *cap, const char *path)
{
	return objects_op(fs, layout, cap, TP_OP_REMOVE, "remove objects of", path);
}

int tc_file_size(tessera_fs *fs, const struct tessera_layout *layout,
		 const Tessera__Capability *cap, const char *path, uint64_t *size,
		 int64_t *data_mtime_ns, uint64_t *blocks)
{
	if (tc_layout_versioned(layout))
		return tc_vers_file_size(fs, layout, cap, path, NULL, size, data_mtime_ns, blocks);
	return tc_file_size_at(fs, layout, cap, path, NULL, size, data_mtime_ns, blocks);
}

/* No size yet: 0 bytes, no time, no blocks. */
static void size_zero(uint64_t *size, int64_t *data_mtime_ns, uint64_t *blocks)
{
	*size = 0;
	if (data_mtime_ns)
		*data_mtime_ns = 0;
	if (blocks)
		*blocks = 0;
}

int tc_file_size_at(tessera_fs *fs, const struct tessera_layout *layout,
		    const Tessera__Capability *cap, const char *path, const struct tc_vread *rd,
		    uint64_t *size, int64_t *data_mtime_ns, uint64_t *blocks)
{
	struct tdl_layout tl = tdl_of(layout);
	struct tc_req *reqs[TP_MAX_SERVERS];
	uint32_t seen[TP_MAX_SERVERS] = { 0 };
	int rc = tc_check_layout(fs, layout, path);

	size_zero(size, data_mtime_ns, blocks);
	/* version 0: nothing committed yet, so nothing merged: empty */
	if (rc || (rd && !rd->vr))
		return rc;
	rc = per_server_at(fs, layout, cap, TP_OP_GETSIZE, rd, reqs);
	if (rc)
		rc = tc_fail(fs, rc, "size of %s: out of memory", path);
	else
		rc = run_servers(fs, reqs, "size of", path);
	/* Replies list sizes in the order per_server listed the handles. */
	for (uint32_t i = 0; !rc && i < layout->count; i++) {
		uint32_t s = layout->servers[i];
		Tessera__SizesReply *rep = (Tessera__SizesReply *)reqs[s]->reply;
		uint64_t end;

		if (seen[s] >= rep->n_sizes) {
			rc = tc_fail(fs, -EPROTO, "size of %s: storage daemon %u sent too few sizes",
				     path, s);
			break;
		}
		/* (a daemon that predates mtimes sends none) */
		if (data_mtime_ns && seen[s] < rep->n_mtimes_ns &&
		    rep->mtimes_ns[seen[s]] > *data_mtime_ns)
			*data_mtime_ns = rep->mtimes_ns[seen[s]];
		if (blocks && seen[s] < rep->n_blocks)
			*blocks += rep->blocks[seen[s]];
		end = tdl_layout_logical_size(&tl, i, rep->sizes[seen[s]++]);
		if (end > *size)
			*size = end;
	}
	free_servers(fs, reqs);
	return rc;
}

int tc_truncate_objects(tessera_fs *fs, const struct tessera_layout *layout,
			const Tessera__Capability *cap, const char *path, uint64_t size)
{
	return tc_truncate_objects_v(fs, layout, cap, path, size, 0);
}

/* version_t: a versioned file's truncate record (0: a plain file's). */
int tc_truncate_objects_v(tessera_fs *fs, const struct tessera_layout *layout,
			  const Tessera__Capability *cap, const char *path, uint64_t size,
			  uint64_t version_t)
{
	struct tdl_layout tl = tdl_of(layout);
	struct tc_req *reqs[TESSERA_MAX_STRIPE] = { 0 };
	char label[4200];
	int rc = tc_check_layout(fs, layout, path);

	if (rc)
		return rc;
	for (uint32_t i = 0; i < layout->count; i++) {
		Tessera__TruncateRequest m = TESSERA__TRUNCATE_REQUEST__INIT;

		m.handle = layout->handles[i];
		m.cap = (Tessera__Capability *)cap;
		m.size = tdl_layout_object_size(&tl, i, size);
		m.version_t = version_t;
		reqs[i] = tc_req_new(fs, (int)layout->servers[i], TP_OP_TRUNCATE, &m.base, NULL, 0);
		if (!reqs[i]) {
			rc = tc_fail(fs, -ENOMEM, "truncate %s: out of memory", path);
			goto out;
		}
	}
	rc = tc_run(fs, reqs, layout->count);
	if (rc) {
		snprintf(label, sizeof(label), "truncate %s", path);
		for (uint32_t i = 0; i < layout->count; i++)
			if (reqs[i]->status) {
				tc_req_fail(fs, reqs[i], label);
				break;
			}
	}
out:
	for (uint32_t i = 0; i < layout->count; i++)
		tc_req_free(fs, reqs[i]);
	return rc;
}

/* FALLOCATE on each object holding part of logical [off, end): the
 * object's bytes of that range are [its size at off, its size at end). */
static int fallocate_objects(tessera_fs *fs, const struct tessera_layout *layout,
			     const Tessera__Capability *cap, const char *path, uint64_t off,
			     uint64_t end, int keep_size)
{
	struct tdl_layout tl = tdl_of(layout);
	struct tc_req *reqs[TESSERA_MAX_STRIPE] = { 0 }, *run[TESSERA_MAX_STRIPE];
	char label[4200];
	uint32_t n = 0;
	int rc = tc_check_layout(fs, layout, path);

	for (uint32_t i = 0; !rc && i < layout->count; i++) {
		Tessera__FallocateRequest m = TESSERA__FALLOCATE_REQUEST__INIT;
		uint64_t lo = tdl_layout_object_size(&tl, i, off);
		uint64_t hi = tdl_layout_object_size(&tl, i, end);

		if (hi <= lo)
			continue;   /* none of the range on this object */
		m.handle = layout->handles[i];
		m.cap = (Tessera__Capability *)cap;
		m.offset = lo;
		m.length = hi - lo;
		m.keep_size = keep_size;
		reqs[i] = tc_req_new(fs, (int)layout->servers[i], TP_OP_FALLOCATE, &m.base, NULL, 0);
		if (!reqs[i])
			rc = tc_fail(fs, -ENOMEM, "fallocate %s: out of memory", path);
		else
			run[n++] = reqs[i];
	}
	if (!rc && n && (rc = tc_run(fs, run, n))) {
		snprintf(label, sizeof(label), "fallocate %s", path);
		for (uint32_t i = 0; i < n; i++)
			if (run[i]->status) {
				tc_req_fail(fs, run[i], label);
				break;
			}
	}
	for (uint32_t i = 0; i < layout->count; i++)
		tc_req_free(fs, reqs[i]);
	return rc;
}

/* ------------------------------------------------------------ the file */

tessera_fs *tessera_file_fs(tessera_file *f)
{
	return f->fs;
}

int tessera_file_layout(tessera_file *f, struct tessera_layout *layout)
{
	*layout = f->layout;
	return 0;
}

uint64_t tessera_file_handle(const tessera_file *f)
{
	return f->handle;
}

/* ------------------------------------------------------------- data path */

/* One striped call: the layout, and the caller's buffer holding logical
 * [off, off+len). */
struct io_call {
	struct tdl_layout tl;
	uint64_t off;
	uint8_t *buf;
};

struct io_chunk {
	const struct io_call *call;
	uint32_t slot;
	uint64_t obj_off;   /* object range of this chunk */
	uint64_t len;
	/* writes: the daemon acknowledged the chunk, and the object's size
	 * before it (when has_before) */
	int done, has_before;
	uint64_t before;
	int failed;         /* writes: the chunk's request failed (its status) */
	int local;          /* reads: read from the object's file (local.c) */
};

/* Where byte o of a chunk's object lives in the caller's buffer. */
static uint8_t *user_at(const struct io_chunk *c, uint64_t o)
{
	const struct io_call *k = c->call;

	return k->buf + (tdl_layout_unmap(&k->tl, c->slot, o) - k->off);
}

/* Reads: bytes [from, from+n) of a chunk's object range, at obj, into the
 * caller's buffer, run by run. */
static void chunk_scatter(const struct io_chunk *c, uint64_t from, uint64_t n, const uint8_t *obj)
{
	for (uint64_t done = from; done < from + n;) {
		uint64_t o = c->obj_off + done;
		uint64_t run = tdl_layout_run(&c->call->tl, o, from + n - done);

		memcpy(user_at(c, o), obj + (done - from), run);
		done += run;
	}
}

/* Reads: zeros where bytes [from, from+n) of a chunk's object range go in
 * the caller's buffer (a hole, or past the object's end). */
static void chunk_zero(const struct io_chunk *c, uint64_t from, uint64_t n)
{
	for (uint64_t done = from; done < from + n;) {
		uint64_t o = c->obj_off + done;
		uint64_t run = tdl_layout_run(&c->call->tl, o, from + n - done);

		memset(user_at(c, o), 0, run);
		done += run;
	}
}

/* Writes: the whole chunk, gathered from the caller's buffer into out. */
static void chunk_gather(const struct io_chunk *c, uint8_t *out)
{
	for (uint64_t done = 0; done < c->len;) {
		uint64_t o = c->obj_off + done;
		uint64_t run = tdl_layout_run(&c->call->tl, o, c->len - done);

		memcpy(out + done, user_at(c, o), run);
		done += run;
	}
}

/* The chunk's runs in the caller's buffer, as iov[0..n) when n <= max
 * (else max + 1, iov partly filled): what a request may lend. Strips that
 * follow each other in the buffer too (a stripe of one) make one run. */
static size_t chunk_runs(const struct io_chunk *c, struct iovec *iov, size_t max)
{
	const struct io_call *k = c->call;
	uint64_t done = 0;
	size_t n = 0;

	while (done < c->len) {
		uint64_t o = c->obj_off + done;
		uint64_t run = tdl_layout_run(&k->tl, o, c->len - done);
		uint8_t *user = user_at(c, o);

		done += run;
		if (n && (uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len == user) {
			iov[n - 1].iov_len += run;
			continue;
		}
		if (n == max)
			return max + 1;
		iov[n].iov_base = user;
		iov[n].iov_len = run;
		n++;
	}
	return n;
}

/* A read reply's data, straight from the receive buffer into the caller's
 * buffer (engine.c has checked it is no longer than the chunk). */
static void read_put(void *arg, const uint8_t *data, size_t len)
{
	chunk_scatter(arg, 0, len, data);
}

/* tc_local_read's runs: the caller's bytes at chunk offset `from`, as
 * long as they follow each other in the buffer (at most *n). */
static void local_runs(void *arg, uint64_t from, uint64_t *n, uint8_t **user)
{
	const struct io_chunk *c = arg;
	uint64_t o = c->obj_off + from, run = 0, max = *n;

	*user = user_at(c, o);
	while (run < max) {
		uint64_t r = tdl_layout_run(&c->call->tl, o + run, max - run);

		if (user_at(c, o + run) != *user + run)
			break;
		run += r;
	}
	*n = run;
}

/* Reads: the chunks whose objects are on this host, read from their files
 * (local.c); the rest are left to the daemons. Whether any was short. */
static int read_local(tessera_file *f, struct io_chunk *chunks, size_t n, const struct io_call *call,
		      uint64_t len)
{
	uint32_t slots[TESSERA_MAX_STRIPE];
	size_t k = 0;
	int short_read = 0;

	for (size_t i = 0; i < n && i < f->layout.count; i++)
		slots[k++] = chunks[i].slot; /* the first round names every slot touched */
	tc_local_prepare(f, slots, k, len);
	for (size_t i = 0; i < n; i++) {
		struct io_chunk *c = &chunks[i];
		ssize_t got;

		c->call = call;
		got = tc_local_read(f, c->slot, c->obj_off, c->len, local_runs, c);
		if (got < 0)
			continue;
		c->local = 1;
		if ((uint64_t)got < c->len)
			short_read = 1;
	}
	return short_read;
}

/* The chunks of [off, off+len), interleaved across slots. */
static struct io_chunk *plan(tessera_fs *fs, const struct tessera_layout *layout, uint64_t off,
			     uint64_t len, size_t *n_out)
{
	struct tdl_layout tl = tdl_of(layout);
	uint64_t max = fs->cfg.max_io, lo[TESSERA_MAX_STRIPE], hi[TESSERA_MAX_STRIPE];
	size_t total = 0, n = 0;
	struct io_chunk *chunks;

	for (uint32_t s = 0; s < layout->count; s++) {
		lo[s] = tdl_layout_object_size(&tl, s, off);
		hi[s] = tdl_layout_object_size(&tl, s, off + len);
		total += (size_t)((hi[s] - lo[s] + max - 1) / max);
	}
	chunks = calloc(total ? total : 1, sizeof(*chunks));
	if (!chunks)
		return NULL;
	while (n < total) {
		for (uint32_t s = 0; s < layout->count; s++) {
			if (lo[s] >= hi[s])
				continue;
			chunks[n].slot = s;
			chunks[n].obj_off = lo[s];
			chunks[n].len = hi[s] - lo[s] < max ? hi[s] - lo[s] : max;
			lo[s] += chunks[n].len;
			n++;
		}
	}
	*n_out = n;
	return chunks;
}

/*
 * A striped write failed on some chunks (a daemon down, a full disk) after
 * others landed. POSIX's answer for a write that stops part-way is a file
 * holding the bytes before the stop and a size of max(old size, offset +
 * bytes before the stop); bytes after it within the old size are left as
 * the failed call left them (unspecified, as for any failed write). So:
 * `prefix` is how far from `off` every byte was acknowledged; on each
 * object the write appended to, whatever it appended past the object size
 * that `off + prefix` implies is cut back to the object's size before the
 * write (the daemons report it with each contiguous WRITE). Objects the
 * write did not reach are left alone. Returns the prefix; *uncut says
 * whether any object could not be cut back.
 */
/* What a failed write left on one object. */
struct slot_tally {
	int wrote;                 /* some chunk of it was acknowledged */
	int known;                 /* ...and every such reply said the size before */
	uint64_t before;           /* the smallest size before among them */
	uint64_t end;              /* where the acknowledged chunks end */
	int lost;                  /* a chunk failed in a way that may have applied it */
};

/* A chunk whose request timed out or lost its connection may have been
 * applied by the daemon before the failure; one the daemon refused (a full
 * disk), or that was never sent (a daemon known to be down), was not. */
static int maybe_applied(int status)
{
	switch (-status) {
	case ETIMEDOUT: case ECONNRESET: case ECONNABORTED: case EPIPE: case ENOTCONN:
	case ESHUTDOWN:
		return 1;
	default:
		return 0;
	}
}

/* Tally the acknowledged chunks per object; returns the prefix: how far
 * from off every byte was acknowledged (len if all were). */
static uint64_t tally_written(const struct tdl_layout *tl, const struct io_chunk *chunks,
			      size_t n, uint64_t off, uint64_t len, struct slot_tally *t)
{
	uint64_t prefix = len;

	for (size_t i = 0; i < n; i++) {
		const struct io_chunk *c = &chunks[i];
		struct slot_tally *st = &t[c->slot];

		if (!c->done) {
			uint64_t at = tdl_layout_unmap(tl, c->slot, c->obj_off) - off;

			if (at < prefix)
				prefix = at;
			if (c->failed && maybe_applied(c->failed))
				st->lost = 1;
			continue;
		}
		if (!st->wrote)
			*st = (struct slot_tally){ 1, 1, UINT64_MAX, 0, st->lost };
		if (!c->has_before)
			st->known = 0;
		else if (c->before < st->before)
			st->before = c->before;
		if (c->obj_off + c->len > st->end)
			st->end = c->obj_off + c->len;
	}
	return prefix;
}

/* The TRUNCATE that cuts object s back to `keep` (NULL: out of memory). */
static struct tc_req *cut_back(tessera_file *f, uint32_t s, uint64_t keep)
{
	Tessera__TruncateRequest m = TESSERA__TRUNCATE_REQUEST__INIT;

	m.handle = f->layout.handles[s];
	m.cap = (Tessera__Capability *)tc_cap_get(f);
	m.size = keep;
	return tc_req_new(f->fs, (int)f->layout.servers[s], TP_OP_TRUNCATE, &m.base, NULL, 0);
}

static uint64_t undo_tail(tessera_file *f, const struct io_chunk *chunks, size_t n, uint64_t off,
			  uint64_t len, struct slot_tally *t, int *uncut)
{
	tessera_fs *fs = f->fs;
	struct tdl_layout tl = tdl_of(&f->layout);
	struct tc_req *reqs[TESSERA_MAX_STRIPE];
	uint64_t prefix = tally_written(&tl, chunks, n, off, len, t);
	size_t k = 0;

	*uncut = 0;
	for (uint32_t s = 0; s < f->layout.count; s++) {
		uint64_t keep;

		if (!t[s].wrote)
			continue;
		if (!t[s].known) {     /* a daemon that does not say: leave it */
			*uncut = 1;
			continue;
		}
		keep = tdl_layout_object_size(&tl, s, off + prefix);
		if (t[s].before > keep)
			keep = t[s].before;
		if (t[s].end <= keep)
			continue;
		if (!(reqs[k] = cut_back(f, s, keep)))
			*uncut = 1;
		else
			k++;
	}
	if (k && tc_run(fs, reqs, k))
		*uncut = 1;
	for (size_t i = 0; i < k; i++)
		tc_req_free(fs, reqs[i]);
	return prefix;
}

/*
 * A striped read or write in progress: the plan (its chunks, interleaved
 * across slots) and a window's worth of requests. Both go through the same
 * steps: io_begin plans; run_rounds issues `window` chunks at a time
 * (issue_round, with the path's make_* per chunk) and collects each round
 * (the path's collect_*); io_end frees. What differs: a read first takes
 * the chunks it can from local objects and lends the caller's runs to a
 * tagged receive; a write lends them to its send and, when it fails part
 * way, cuts back what landed past the failure.
 */
struct io_op {
	tessera_file *f;
	struct io_call call;
	Tessera__Capability *cap;
	struct io_chunk *chunks;   /* the plan; a read drops its local chunks */
	size_t n;
	struct tc_req **reqs;      /* one round's: window entries */
	size_t window;
	int short_read;            /* reads: some chunk ended short of its length */
	/* A versioned file's: the write's T (chunk i is its part i); the
	 * read's version and the commits to carry, and room to pick those
	 * naming one object. */
	uint64_t vt;
	const struct tc_vread *rd;
	Tessera__VersionCommit **pick;
	char label[4200];          /* "read <path>" for messages */
};

/* A round's request for one chunk (NULL: out of memory). */
typedef struct tc_req *(*io_make_fn)(struct io_op *op, struct io_chunk *c);
/* A round ran (rc: its status): take what its replies say. */
typedef void (*io_collect_fn)(struct io_op *op, struct io_chunk *chunks, size_t k, int rc);

/* Check the range, plan it, make room for a round. *len may shrink (to
 * SSIZE_MAX). Returns 0 or a negative errno with the message set. */
static int io_begin(struct io_op *op, tessera_file *f, uint8_t *buf, size_t *len, uint64_t off,
		    const char *what)
{
	tessera_fs *fs = f->fs;

	memset(op, 0, offsetof(struct io_op, label));
	if (off + *len < off || off + *len > (uint64_t)INT64_MAX)
		return tc_fail(fs, -EFBIG, "%s %s: offset %llu + %zu is beyond the largest file", what,
			       f->path, (unsigned long long)off, *len);
	if (*len > SSIZE_MAX)
		*len = SSIZE_MAX;
	op->f = f;
	op->cap = (Tessera__Capability *)tc_cap_get(f);
	op->call = (struct io_call){ tdl_of(&f->layout), off, buf };
	op->window = fs->cfg.window;
	snprintf(op->label, sizeof(op->label), "%s %s", what, f->path);
	op->chunks = plan(fs, &f->layout, off, *len, &op->n);
	op->reqs = calloc(op->window, sizeof(*op->reqs));
	if (!op->chunks || !op->reqs) {
		free(op->chunks);
		free(op->reqs);
		return tc_fail(fs, -ENOMEM, "%s: out of memory", op->label);
	}
	return 0;
}

static void io_end(struct io_op *op)
{
	free(op->chunks);
	free(op->reqs);
	free(op->pick);
}

/* Make chunks[0..k)'s requests and run them; on failure the thread's
 * message names the first failing daemon. */
static int issue_round(struct io_op *op, struct io_chunk *chunks, size_t k, io_make_fn make)
{
	tessera_fs *fs = op->f->fs;
	int rc;

	for (size_t i = 0; i < k; i++) {
		chunks[i].call = &op->call;
		op->reqs[i] = make(op, &chunks[i]);
		if (!op->reqs[i])
			return tc_fail(fs, -ENOMEM, "%s: out of memory", op->label);
	}
	rc = tc_run(fs, op->reqs, k);
	for (size_t i = 0; rc && i < k; i++)
		if (op->reqs[i]->status)
			return tc_req_fail(fs, op->reqs[i], op->label);
	return rc;
}

/* Chunks [from, from + count) of the plan, `window` at a time, until a
 * round fails. */
static int run_range(struct io_op *op, size_t from, size_t count, io_make_fn make,
		     io_collect_fn collect)
{
	int rc = 0;

	for (size_t first = from; first < from + count && !rc; first += op->window) {
		size_t left = from + count - first;
		size_t k = left < op->window ? left : op->window;

		rc = issue_round(op, &op->chunks[first], k, make);
		collect(op, &op->chunks[first], k, rc);
		for (size_t i = 0; i < k; i++) {
			tc_req_free(op->f->fs, op->reqs[i]);
			op->reqs[i] = NULL;
		}
	}
	return rc;
}

/* The whole plan. */
static int run_rounds(struct io_op *op, io_make_fn make, io_collect_fn collect)
{
	return run_range(op, 0, op->n, make, collect);
}

/* ------------------------------------------------------------ read path */

/* Chunks read locally leave the plan; the rest keep their order. */
static void keep_remote_chunks(struct io_op *op, uint64_t len)
{
	size_t kept = 0;

	op->short_read = read_local(op->f, op->chunks, op->n, &op->call, len);
	for (size_t i = 0; i < op->n; i++)
		if (!op->chunks[i].local)
			op->chunks[kept++] = op->chunks[i];
	op->n = kept;
}

static struct tc_req *make_read(struct io_op *op, struct io_chunk *c)
{
	tessera_fs *fs = op->f->fs;
	Tessera__ReadRequest m = TESSERA__READ_REQUEST__INIT;
	struct iovec runs[TC_LEND_IOV + 1];
	size_t n_runs = chunk_runs(c, runs, fs->lend_runs);
	struct tc_req *r;

	m.handle = op->f->layout.handles[c->slot];
	m.offset = c->obj_off;
	m.length = c->len;
	m.lock_epoch = tc_lock_epoch(op->f, c->slot);
	m.cap = op->cap;
	if (op->rd) {
		m.read_version = op->rd->vr;
		m.vmap = op->pick;
		m.n_vmap = tc_vread_pick(op->rd, &m.handle, 1, op->pick);
	}
	/* Few enough runs: the reply lands in them (a tagged receive); else,
	 * or when the daemon answers untagged, read_put scatters it. */
	m.tagged_reply = n_runs <= fs->lend_runs;
	r = tc_req_new(fs, (int)op->f->layout.servers[c->slot], TP_OP_READ, &m.base, NULL, 0);
	if (!r)
		return NULL;
	r->data_cap = c->len;
	r->data_put = read_put;
	r->data_arg = c;
	if (m.tagged_reply)
		tc_req_lend_read(r, runs, n_runs);
	return r;
}

static void collect_read(struct io_op *op, struct io_chunk *chunks, size_t k, int rc)
{
	for (size_t i = 0; !rc && i < k; i++) {
		size_t got = op->reqs[i]->data_len;

		if (got < chunks[i].len) {
			/* Past the object's end: a hole, or past EOF (decided
			 * from the file size, clip_to_size). */
			chunk_zero(&chunks[i], got, chunks[i].len - got);
			op->short_read = 1;
		}
	}
}

/* A read that met an object's end: how much of [off, off+len) the file
 * holds (a versioned file's: at the read's version). */
static ssize_t clip_to_size(tessera_file *f, uint64_t off, size_t len, const struct tc_vread *rd)
{
	uint64_t size;
	int rc = rd ? tc_file_size_at(f->fs, &f->layout, tc_cap_get(f), f->path, rd, &size, NULL,
				      NULL)
		    : tc_file_size(f->fs, &f->layout, tc_cap_get(f), f->path, &size, NULL, NULL);

	if (rc)
		return rc;
	if (size <= off)
		return 0;
	return size - off < len ? (ssize_t)(size - off) : (ssize_t)len;
}

/* A versioned file's read: at a read version, with the commits each
 * object may not know yet; never from local objects (their logs are the
 * daemons'). */
static int vread_begin(struct io_op *op, struct tc_vread *rd)
{
	int rc = tc_vfile_read_begin(op->f, rd, op->f->path);

	if (rc)
		return rc;
	op->rd = rd;
	op->pick = calloc(rd->rep->n_vmap + 1, sizeof(*op->pick));
	if (!op->pick)
		return tc_fail(op->f->fs, -ENOMEM, "%s: out of memory", op->label);
	return 0;
}

/* What a read that met an object's end returns: clipped at the file's
 * size (asked of the daemons), or all of it, zeros past the objects (the
 * caller clips: tessera_pread_unclipped). */
enum read_end { READ_CLIPPED, READ_ZEROS };

static ssize_t striped_read(tessera_file *f, uint8_t *buf, size_t len, uint64_t off,
			    enum read_end end)
{
	struct io_op op;
	struct tc_vread rd = { 0 };
	ssize_t rc;
	int short_read;

	if (len == 0)
		return 0;
	rc = io_begin(&op, f, buf, &len, off, "read");
	if (rc)
		return rc;
	if (tc_versioned(f))
		rc = vread_begin(&op, &rd);
	else
		keep_remote_chunks(&op, len);
	if (!rc && tc_versioned(f) && !rd.vr)
		op.n = 0, op.short_read = 1; /* version 0: an empty file (clip_to_size) */
	if (!rc)
		rc = run_rounds(&op, make_read, collect_read);
	short_read = op.short_read;
	io_end(&op);
	if (!rc && short_read && (end == READ_CLIPPED || tc_versioned(f)))
		rc = clip_to_size(f, off, len, tc_versioned(f) ? &rd : NULL);
	else if (!rc)
		rc = (ssize_t)len;
	if (tc_versioned(f))
		tc_vfile_read_done(f, &rd);
	return rc;
}

/* ----------------------------------------------------------- write path */

static struct tc_req *make_write(struct io_op *op, struct io_chunk *c)
{
	tessera_fs *fs = op->f->fs;
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;
	int server = (int)op->f->layout.servers[c->slot];
	struct iovec runs[TC_LEND_IOV + 1];
	size_t n_runs;
	struct tc_req *r;

	m.handle = op->f->layout.handles[c->slot];
	m.offset = c->obj_off;
	m.lock_epoch = tc_lock_epoch(op->f, c->slot);
	m.cap = op->cap;
	m.version_t = op->vt;
	m.version_part = op->vt ? (uint32_t)(c - op->chunks) : 0;
	/* Few enough runs: the provider reads them from the caller's buffer
	 * (tc_run returns only once it has let go); else gather them. */
	n_runs = chunk_runs(c, runs, fs->lend_runs);
	if (n_runs <= fs->lend_runs)
		return tc_req_new_lent(fs, server, TP_OP_WRITE, &m.base, runs, n_runs);
	r = tc_req_new(fs, server, TP_OP_WRITE, &m.base, NULL, c->len);
	if (r)
		chunk_gather(c, tc_req_data(r));
	return r;
}

/* Which chunks the daemons acknowledged, and the object sizes before them
 * (what undo_tail cuts back to), whether or not the round failed. */
static void collect_write(struct io_op *op, struct io_chunk *chunks, size_t k, int rc)
{
	(void)rc;
	for (size_t i = 0; i < k; i++) {
		const struct tc_req *r = op->reqs[i];
		const Tessera__WriteReply *wr;

		if (r && r->replied && r->status)
			chunks[i].failed = r->status;
		if (!r || !r->replied || r->status || !r->reply)
			continue;
		wr = (const Tessera__WriteReply *)r->reply;
		chunks[i].done = 1;
		chunks[i].failed = 0;
		chunks[i].has_before = wr->has_size_before;
		chunks[i].before = wr->size_before;
	}
}

/* Each object's size now, where its daemon answers (known[s]); a daemon
 * that does not leaves its objects unknown and the others still count. */
static void object_sizes_now(tessera_file *f, uint64_t *size, int *known)
{
	tessera_fs *fs = f->fs;
	const struct tessera_layout *l = &f->layout;
	struct tc_req *reqs[TP_MAX_SERVERS];
	uint32_t seen[TP_MAX_SERVERS] = { 0 };

	memset(known, 0, l->count * sizeof(*known));
	if (per_server(fs, l, tc_cap_get(f), TP_OP_GETSIZE, reqs) == 0) {
		uint32_t k = 0;
		struct tc_req *list[TP_MAX_SERVERS];

		for (uint32_t s = 0; s < fs->cfg.n_ios; s++)
			if (reqs[s])
				list[k++] = reqs[s];
		(void)tc_run(fs, list, k); /* each request's status says */
	}
	/* Replies list sizes in the order per_server listed the handles. */
	for (uint32_t i = 0; i < l->count; i++) {
		const struct tc_req *r = reqs[l->servers[i]];
		const Tessera__SizesReply *rep;

		if (!r || r->status || !r->reply)
			continue;
		rep = (const Tessera__SizesReply *)r->reply;
		if (seen[l->servers[i]] < rep->n_sizes) {
			size[i] = rep->sizes[seen[l->servers[i]]++];
			known[i] = 1;
		}
	}
	free_servers(fs, reqs);
}

/* The file's size before the failed write and now, -1 where unknown. An
 * object's size before is what its first acknowledged chunk's reply said;
 * an object with none acknowledged and no chunk that may have landed kept
 * its size, so its size now is its size before. */
static void sizes_around(tessera_file *f, const struct slot_tally *t, int64_t *before,
			 int64_t *now)
{
	struct tdl_layout tl = tdl_of(&f->layout);
	uint64_t obj[TESSERA_MAX_STRIPE];
	int known[TESSERA_MAX_STRIPE];
	uint64_t b = 0, n = 0;
	int b_known = 1, n_known = 1;

	object_sizes_now(f, obj, known);
	for (uint32_t s = 0; s < f->layout.count; s++) {
		uint64_t end;

		if (known[s] && (end = tdl_layout_logical_size(&tl, s, obj[s])) > n)
			n = end;
		n_known &= known[s];
		if (t[s].wrote && t[s].known)
			end = tdl_layout_logical_size(&tl, s, t[s].before);
		else if (!t[s].wrote && !t[s].lost && known[s])
			end = tdl_layout_logical_size(&tl, s, obj[s]);
		else {
			b_known = 0;
			continue;
		}
		if (end > b)
			b = end;
	}
	*before = b_known ? (int64_t)b : -1;
	*now = n_known ? (int64_t)n : -1;
}

static void size_words(int64_t size, char *buf, size_t len)
{
	if (size < 0)
		snprintf(buf, len, "unknown (a storage daemon holding part of it does not answer)");
	else
		snprintf(buf, len, "%lld bytes", (long long)size);
}

/* A write failed part way (rc): cut back what landed past the failure,
 * then say what the file holds: the bytes of this write in place, and the
 * file's size before the write and now (the last request's outcome alone
 * told a user nothing about a file that other requests had filled). */
static int write_failed(struct io_op *op, uint64_t off, size_t len, int rc)
{
	tessera_file *f = op->f;
	tessera_fs *fs = f->fs;
	struct slot_tally t[TESSERA_MAX_STRIPE] = { { 0 } };
	struct tessera_write_outcome w = { off, len, 0, -1, -1 };
	char first[1024], was[96], is[96];
	int uncut;

	snprintf(first, sizeof(first), "%s", tessera_errmsg(fs));
	w.in_place = undo_tail(f, op->chunks, op->n, off, len, t, &uncut);
	sizes_around(f, t, &w.size_before, &w.size_now);
	pthread_mutex_lock(&fs->lock);
	f->write_failed = w;
	f->has_write_failed = 1;
	pthread_mutex_unlock(&fs->lock);
	size_words(w.size_before, was, sizeof(was));
	size_words(w.size_now, is, sizeof(is));
	return tc_fail(fs, rc, "%s; the first %llu bytes of this write (%zu bytes at offset %llu) "
		       "are in place%s; the file's size was %s before it and is now %s", first,
		       (unsigned long long)w.in_place, len, (unsigned long long)off,
		       uncut ? ", bytes past them may remain and count in the file's size"
			     : ", and the file did not grow past them",
		       w.size_before < 0 ? "unknown" : was, is);
}

int tessera_write_outcome(tessera_file *f, struct tessera_write_outcome *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&f->fs->lock);
	if (f->has_write_failed) {
		*out = f->write_failed;
		rc = 0;
	}
	pthread_mutex_unlock(&f->fs->lock);
	return rc;
}

static ssize_t striped_write(tessera_file *f, const uint8_t *buf, size_t len, uint64_t off)
{
	struct io_op op;
	int rc;

	if (len == 0)
		return 0;
	/* (the buffer is only read: io_call's is not const for the reads) */
	rc = io_begin(&op, f, (uint8_t *)buf, &len, off, "write");
	if (rc)
		return rc;
	rc = run_rounds(&op, make_write, collect_write);
	if (rc)
		rc = write_failed(&op, off, len, rc);
	io_end(&op);
	return rc ? rc : (ssize_t)len;
}

/*
 * A versioned file's write: one version whatever its size. Every chunk of
 * the plan goes under one T, chunk i as part i of it (an object's log
 * takes them as records of T, applied in part order), then one commit
 * names every slot written (tc_vers_modify). A try that must be made
 * again (a full log, a lost ID#) sends every chunk again under a new T.
 * Nothing is cut back after a failure: a record never committed is never
 * seen.
 */
static int vwrite_send(void *arg, uint64_t t, uint32_t *slots, size_t *n)
{
	struct io_op *op = arg;
	uint8_t wrote[TESSERA_MAX_STRIPE] = { 0 };

	op->vt = t;
	for (size_t i = 0; i < op->n; i++) {
		op->chunks[i].done = op->chunks[i].failed = 0;
		wrote[op->chunks[i].slot] = 1;
	}
	for (uint32_t s = 0; s < op->f->layout.count; s++)
		if (wrote[s])
			slots[(*n)++] = s;
	return run_rounds(op, make_write, collect_write);
}

static ssize_t vstriped_write(tessera_file *f, const uint8_t *buf, size_t len, uint64_t off)
{
	struct io_op op;
	int rc;

	if (len == 0)
		return 0;
	rc = io_begin(&op, f, (uint8_t *)buf, &len, off, "write");
	if (rc)
		return rc;
	if (op.n > UINT32_MAX)
		rc = tc_fail(f->fs, -EFBIG, "%s: %zu requests, more than the %u parts one version "
			     "may have", op.label, op.n, UINT32_MAX);
	else
		rc = tc_vers_modify(f, vwrite_send, &op, op.label);
	io_end(&op);
	return rc ? rc : (ssize_t)len;
}

ssize_t tessera_pwrite(tessera_file *f, const void *buf, size_t len, uint64_t off)
{
	ssize_t rc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return tc_fail(f->fs, -EBADF, "write %s: file is open read-only", f->path);
	if ((rc = tc_file_writing(f)))
		return rc;

	if (tc_versioned(f))
		TC_CAP_RETRY(f, rc, vstriped_write(f, buf, len, off));
	else
		TC_CAP_RETRY(f, rc, striped_write(f, buf, len, off));
	return rc;
}

static ssize_t read_open(tessera_file *f, void *buf, size_t len, uint64_t off, enum read_end end)
{
	if ((f->flags & O_ACCMODE) == O_WRONLY)
		return tc_fail(f->fs, -EBADF, "read %s: file is open write-only", f->path);
	ssize_t rc;

	TC_READ_RETRY(f, rc, striped_read(f, buf, len, off, end));
	return rc;
}

ssize_t tessera_pread(tessera_file *f, void *buf, size_t len, uint64_t off)
{
	return read_open(f, buf, len, off, READ_CLIPPED);
}

ssize_t tessera_pread_unclipped(tessera_file *f, void *buf, size_t len, uint64_t off)
{
	return read_open(f, buf, len, off, READ_ZEROS);
}

/* A read-only open has nothing of its own to make durable (writes go to
 * the daemons as they are made, and this descriptor made none), and its
 * capability may not SYNC (which needs write: it makes the daemons
 * flush), so its fsync succeeds without asking them, as fsync(2) of a
 * read-only descriptor does for a local file with nothing dirty. */
int tessera_fsync(tessera_file *f)
{
	int rc = tc_meta_sync(f->fs, f->path);

	if (rc || (f->flags & O_ACCMODE) == O_RDONLY)
		return rc;
	/* a versioned file's records are synced as written: a merge makes
	 * the objects hold them (and keeps the logs short) */
	if (tc_versioned(f)) {
		TC_CAP_RETRY(f, rc, tc_vers_merge(f->fs, &f->layout, tc_cap_get(f), f->path));
		return rc;
	}
	TC_CAP_RETRY(f, rc, objects_op(f->fs, &f->layout, tc_cap_get(f), TP_OP_SYNC, "fsync",
				       f->path));
	return rc;
}

int tessera_fallocate(tessera_file *f, enum tessera_falloc_mode mode, uint64_t offset,
		      uint64_t length)
{
	int rc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return tc_fail(f->fs, -EBADF, "fallocate %s: file is open read-only", f->path);
	if (tc_versioned(f))
		return tc_fail(f->fs, -EOPNOTSUPP, "fallocate %s: not supported on a versioned "
			       "file (its writes go to logs first)", f->path);
	if (mode != TESSERA_FALLOC_EXTEND && mode != TESSERA_FALLOC_KEEP_SIZE)
		return tc_fail(f->fs, -EOPNOTSUPP, "fallocate %s: mode %d not supported (only "
			       "extend and keep-size)", f->path, (int)mode);
	if (length == 0 || offset > (uint64_t)INT64_MAX || length > (uint64_t)INT64_MAX)
		return tc_fail(f->fs, -EINVAL, "fallocate %s: offset %" PRIu64 " length %" PRIu64
			       ": length 0 or a negative number", f->path, offset, length);
	if (length > (uint64_t)INT64_MAX - offset)
		return tc_fail(f->fs, -EFBIG, "fallocate %s: offset %" PRIu64 " + length %" PRIu64
			       " past the largest file size", f->path, offset, length);
	if ((rc = tc_file_writing(f)))
		return rc;
	TC_CAP_RETRY(f, rc, fallocate_objects(f->fs, &f->layout, tc_cap_get(f), f->path, offset,
					      offset + length, mode == TESSERA_FALLOC_KEEP_SIZE));
	return rc;
}

int tessera_ftruncate(tessera_file *f, uint64_t size)
{
	int rc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return tc_fail(f->fs, -EBADF, "truncate %s: file is open read-only", f->path);
	if ((rc = tc_file_writing(f)))
		return rc;

	if (tc_versioned(f))
		TC_CAP_RETRY(f, rc, tc_vers_truncate(f, size));
	else
		TC_CAP_RETRY(f, rc, tc_truncate_objects(f->fs, &f->layout, tc_cap_get(f), f->path,
							size));
	return rc;
}
