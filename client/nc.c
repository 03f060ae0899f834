/*
 * nc.c - noncontiguous I/O (list I/O and datatype I/O): the executor.
 *
 * Both sides of a call describe one byte stream. The planner (plan.h)
 * cuts the file side into rounds and each round into per-object pieces;
 * this file turns each round into one message per involved object and
 * moves the data. The memory side is read (or filled) in stream order
 * through a cursor, staged through one buffer unless memory is contiguous.
 *
 * A message either names the object's pieces (list messages) or the file
 * view and the round's stream window, from which the server computes its
 * own pieces (view messages; the view travels once per call and server).
 * Datatype I/O sends view messages unless the file type's encoding is so
 * large that it would crowd the data out of a frame; then it sends the
 * planned pieces as list messages, which always fit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "plan.h"

#define MEM_SHIFT ((int64_t)1 << 62)   /* memory offsets are biased by this */

/* ---------------------------------------------------------------- memory */

struct nc_mem {
	const struct iovec *iov;   /* list I/O: the iovecs; else NULL */
	size_t n_iov, idx;         /* current iovec */
	uint64_t within;           /* bytes of it already moved */
	uint8_t *buf;              /* datatype I/O: the user's buffer */
	struct tdl_segment seg;    /* its walk, offsets biased by MEM_SHIFT */
	struct tdl_piece cur;      /* the rest of the current memory piece */
	struct tdl_piece batch[64];/* pieces walked ahead, batch[bi..bn) unused */
	size_t bn, bi;
	uint8_t *contig;           /* the whole stream lies here, or NULL */
};

static void mem_init_iov(struct nc_mem *m, const struct iovec *iov, size_t n)
{
	uint8_t *next = NULL;

	memset(m, 0, sizeof(*m));
	m->iov = iov;
	m->n_iov = n;
	for (size_t i = 0; i < n; i++) {
		if (!iov[i].iov_len)
			continue;
		if (!m->contig)
			m->contig = next = iov[i].iov_base;
		if (iov[i].iov_base != next) {
			m->contig = NULL;
			return;
		}
		next += iov[i].iov_len;
	}
}

static int mem_init_dtype(struct nc_mem *m, void *buf, uint64_t count,
			  const struct tdl_dataloop *type, uint64_t total, char *err, size_t errlen)
{
	size_t n;
	int rc;

	memset(m, 0, sizeof(*m));
	m->buf = buf;
	if (!type || total == 0) {
		m->contig = buf;
		return 0;
	}
	rc = tdl_check_view(type, count, MEM_SHIFT, err, errlen);
	if (rc)
		return rc;
	rc = tdl_segment_init(&m->seg, type, count, MEM_SHIFT, 0, total);
	if (!rc)
		rc = tdl_segment_next(&m->seg, &m->cur, 1, &n);
	if (rc) {
		snprintf(err, errlen, "walking %llu instances failed: %s", (unsigned long long)count,
			 strerror(-rc));
		return rc;
	}
	if (n == 1 && m->cur.length == total)
		m->contig = m->buf + (int64_t)(m->cur.offset - (uint64_t)MEM_SHIFT);
	return 0;
}

/* Which way a copy goes: into the stage (the round's stream bytes, from
 * the caller's memory or the objects' data) or out of it. */
enum nc_copy { NC_INTO_STAGE, NC_OUT_OF_STAGE };

/* Move the next `len` bytes of the memory stream into stage (a write), or
 * from stage out to it (a read). */
static int mem_move(struct nc_mem *m, uint8_t *stage, uint64_t len, enum nc_copy way)
{
	while (len) {
		uint8_t *p;
		uint64_t k;

		if (m->iov) {
			if (m->idx >= m->n_iov)
				return -EINVAL;
			k = m->iov[m->idx].iov_len - m->within;
			p = (uint8_t *)m->iov[m->idx].iov_base + m->within;
		} else {
			if (!m->cur.length) {
				if (m->bi == m->bn) {
					int rc = tdl_segment_next(&m->seg, m->batch, 64, &m->bn);

					if (rc)
						return rc;
					if (!m->bn)
						return -EINVAL;
					m->bi = 0;
				}
				m->cur = m->batch[m->bi++];
			}
			k = m->cur.length;
			p = m->buf + (int64_t)(m->cur.offset - (uint64_t)MEM_SHIFT);
		}
		if (k > len)
			k = len;
		if (way == NC_OUT_OF_STAGE)
			memcpy(p, stage, k);
		else
			memcpy(stage, p, k);
		stage += k;
		len -= k;
		if (m->iov) {
			m->within += k;
			if (m->within == m->iov[m->idx].iov_len) {
				m->idx++;
				m->within = 0;
			}
		} else {
			m->cur.offset += k;
			m->cur.length -= k;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- rounds */

/* What a call does with the file. */
enum nc_dir { NC_READ, NC_WRITE };

struct nc_call {
	tessera_fs *fs;
	tessera_file *f;
	enum nc_dir dir;
	int by_view;              /* messages name the file view, else pieces */
	char label[4200];         /* "list write /a/b" */
	struct nc_mem mem;
	struct tc_plan plan;      /* the rounds; plan.round is the current one */
	uint64_t first;           /* stream position of the memory's first byte */
	/* datatype I/O */
	Tessera__Dataloop *ftype_msg;
	int64_t disp;
	uint64_t count, desc_id;
	uint8_t desc_sent[TP_MAX_SERVERS];
	/* the current round, by object (index into plan.round.objects) */
	struct tc_req *reqs[TESSERA_MAX_STRIPE];
	uint8_t *obj_data[TESSERA_MAX_STRIPE];  /* reads: replies land here */
	uint8_t *stage;
	size_t stage_cap;
	/* A versioned file's: the call's T and the round's part of it
	 * (writes: every round of a call goes under one T, round k being
	 * part k), and where the call starts (each try under a new T sends it
	 * all again); the call's read version and room to pick the commits
	 * naming one object (reads). */
	uint64_t vt;
	uint32_t vpart;
	struct tc_plan_file vfile0;
	struct nc_mem vmem0;
	struct tc_vread rd;
	int vread;
	Tessera__VersionCommit **pick;
};

static int writing(const struct nc_call *c)
{
	return c->dir == NC_WRITE;
}

/* A versioned read's: the read version (into *rv) and the commits naming
 * `handle` (into c->pick); 0 commits for any other call. */
static size_t pick_commits(struct nc_call *c, uint64_t handle, uint64_t *rv)
{
	if (!c->vread)
		return 0;
	*rv = c->rd.vr;
	return tc_vread_pick(&c->rd, &handle, 1, c->pick);
}

/* The message for the round's k-th object. */
static struct tc_req *round_msg(struct nc_call *c, uint32_t k)
{
	tessera_fs *fs = c->fs;
	const struct tc_plan_round *rd = &c->plan.round;
	const struct tc_plan_object *o = &rd->objects[k];
	uint32_t server = c->f->layout.servers[o->slot];
	uint64_t handle = c->f->layout.handles[o->slot];
	size_t data_len = writing(c) ? o->bytes : 0;
	struct tc_req *r;

	if (!c->by_view) {
		Tessera__ListIORequest m = TESSERA__LIST_IOREQUEST__INIT;
		uint64_t *offs = malloc(2 * (o->n ? o->n : 1) * sizeof(*offs)), *lens = offs + o->n;
		size_t n = 0;

		if (!offs)
			return NULL;
		/* The object's data is its pieces in stream order, so pieces
		 * adjacent in the object join even where the stream is not. */
		for (size_t i = o->first; i < o->first + o->n; i++) {
			const struct tc_plan_piece *u = &rd->pieces[i];

			if (n && offs[n - 1] + lens[n - 1] == u->obj) {
				lens[n - 1] += u->len;
				continue;
			}
			offs[n] = u->obj;
			lens[n++] = u->len;
		}
		m.handle = handle;
		m.lock_epoch = tc_lock_epoch(c->f, o->slot);
		m.cap = (Tessera__Capability *)tc_cap_get(c->f);
		m.version_t = c->vt;
		m.version_part = c->vpart;
		m.vmap = c->pick;
		m.n_vmap = pick_commits(c, handle, &m.read_version);
		m.n_offsets = m.n_lengths = n;
		m.offsets = offs;
		m.lengths = lens;
		r = tc_req_new(fs, (int)server, writing(c) ? TP_OP_LIST_WRITE : TP_OP_LIST_READ,
			       &m.base, NULL, data_len);
		if (r)
			r->regions = (uint32_t)n;
		free(offs);
	} else {
		Tessera__DtypeIORequest m = TESSERA__DTYPE_IOREQUEST__INIT;

		m.handle = handle;
		m.lock_epoch = tc_lock_epoch(c->f, o->slot);
		m.cap = (Tessera__Capability *)tc_cap_get(c->f);
		m.version_t = c->vt;
		m.version_part = c->vpart;
		m.vmap = c->pick;
		m.n_vmap = pick_commits(c, handle, &m.read_version);
		m.strip_size = c->plan.layout.strip_size;
		m.stripe_count = c->plan.layout.count;
		m.slot = o->slot;
		m.desc_nonce = fs->desc_nonce;
		m.desc_id = c->desc_id;
		m.file_type = c->desc_sent[server] ? NULL : c->ftype_msg;
		m.disp = c->disp;
		m.count = c->count;
		m.first = rd->first;
		m.last = rd->last;
		r = tc_req_new(fs, (int)server, writing(c) ? TP_OP_DTYPE_WRITE : TP_OP_DTYPE_READ,
			       &m.base, NULL, data_len);
		if (r) /* the pieces of this object in the round, before joining */
			r->regions = (uint32_t)o->n;
	}
	if (r && !writing(c)) {
		r->data_dst = c->obj_data[k];
		r->data_cap = o->bytes;
	}
	return r;
}

/* Copy between the stage (the round's stream bytes) and each object's
 * data, piece by piece: into the stage (a read's replies) or out of it
 * (into a write's messages). */
static void move_pieces(struct nc_call *c, uint8_t *stage, uint8_t **obj_data, enum nc_copy way)
{
	const struct tc_plan_round *rd = &c->plan.round;

	for (uint32_t k = 0; k < rd->n_objects; k++) {
		const struct tc_plan_object *o = &rd->objects[k];
		uint8_t *d = obj_data[k];

		for (size_t i = o->first; i < o->first + o->n; i++) {
			const struct tc_plan_piece *u = &rd->pieces[i];
			uint8_t *s = stage + (u->stream - rd->first);

			if (way == NC_INTO_STAGE)
				memcpy(s, d, u->len);
			else
				memcpy(d, s, u->len);
			d += u->len;
		}
	}
}

/* The first failed request's words; a failure no request explains still
 * gets a reason. */
static int round_fail(struct nc_call *c, int rc)
{
	for (uint32_t k = 0; k < c->plan.round.n_objects; k++)
		if (c->reqs[k]->status)
			return tc_req_fail(c->fs, c->reqs[k], c->label);
	return tc_fail(c->fs, rc, "%s: stream bytes [%llu, %llu): %s", c->label,
		       (unsigned long long)c->plan.round.first,
		       (unsigned long long)c->plan.round.last, strerror(-rc));
}

/* After a round ran: note per daemon whether it holds the call's view
 * now. Returns how many requests failed for another reason than a lost
 * view (ESTALE). */
static uint32_t note_views(struct nc_call *c)
{
	const struct tc_plan_round *rd = &c->plan.round;
	uint32_t other = 0;

	for (uint32_t k = 0; k < rd->n_objects; k++) {
		uint32_t server = c->f->layout.servers[rd->objects[k].slot];
		int st = c->reqs[k]->status;

		if (!st)
			c->desc_sent[server] = 1;
		else if (st == -ESTALE && c->by_view)
			c->desc_sent[server] = 0;
		else
			other++;
	}
	return other;
}

/* The round's failed requests made again (the view travels with them now)
 * and run once more (*run_rc: how that went). 0, or -ENOMEM with the
 * message set. */
static int rerun_failed(struct nc_call *c, int *run_rc)
{
	const struct tc_plan_round *rd = &c->plan.round;
	struct tc_req *again[TESSERA_MAX_STRIPE];
	uint32_t n_again = 0;

	for (uint32_t k = 0; k < rd->n_objects; k++) {
		struct tc_req *old = c->reqs[k], *r;

		if (!old->status)
			continue;
		if (!(r = round_msg(c, k)))
			return tc_fail(c->fs, -ENOMEM, "%s: out of memory", c->label);
		if (writing(c))
			memcpy(tc_req_data(r), tc_req_data(old), rd->objects[k].bytes);
		tc_req_free(c->fs, old);
		c->reqs[k] = again[n_again++] = r;
	}
	*run_rc = tc_run(c->fs, again, n_again);
	return 0;
}

/* A read's replies carry exactly the bytes asked. */
static int check_read_lengths(struct nc_call *c)
{
	const struct tc_plan_round *rd = &c->plan.round;

	for (uint32_t k = 0; k < rd->n_objects; k++)
		if (c->reqs[k]->data_len != rd->objects[k].bytes)
			return tc_fail(c->fs, -EPROTO, "%s: storage daemon %u sent %zu bytes for "
				       "%llu asked", c->label,
				       c->f->layout.servers[rd->objects[k].slot],
				       c->reqs[k]->data_len,
				       (unsigned long long)rd->objects[k].bytes);
	return 0;
}

/* Send the round's messages and wait. A server that lost the call's file
 * type (restarted, or evicted it) answers ESTALE and gets it once more. */
static int run_round(struct nc_call *c, uint8_t *stage)
{
	tessera_fs *fs = c->fs;
	const struct tc_plan_round *rd = &c->plan.round;
	uint8_t *data[TESSERA_MAX_STRIPE];
	int rc;

	for (uint32_t k = 0; k < rd->n_objects; k++) {
		if (!(c->reqs[k] = round_msg(c, k)))
			return tc_fail(fs, -ENOMEM, "%s: out of memory", c->label);
		data[k] = tc_req_data(c->reqs[k]);
	}
	if (writing(c))
		move_pieces(c, stage, data, NC_OUT_OF_STAGE);
	rc = tc_run(fs, c->reqs, rd->n_objects);
	if (note_views(c) == 0 && rc) {
		int mem_rc = rerun_failed(c, &rc);

		if (mem_rc)
			return mem_rc;
	}
	if (rc)
		return round_fail(c, rc);
	return writing(c) ? 0 : check_read_lengths(c);
}

static void free_round(struct nc_call *c)
{
	for (uint32_t k = 0; k < c->plan.round.n_objects; k++) {
		tc_req_free(c->fs, c->reqs[k]);
		c->reqs[k] = NULL;
		free(c->obj_data[k]);
		c->obj_data[k] = NULL;
	}
}

/* A round's messages. A versioned read at version 0 (nothing committed
 * yet: an empty file) asks nobody: zeros, as past any file's end. */
static int send_round(struct nc_call *c, uint8_t *stage)
{
	if (c->vread && !c->rd.vr) {
		for (uint32_t k = 0; k < c->plan.round.n_objects; k++)
			memset(c->obj_data[k], 0, c->plan.round.objects[k].bytes);
		return 0;
	}
	return run_round(c, stage);
}

static int one_round(struct nc_call *c)
{
	const struct tc_plan_round *rd = &c->plan.round;
	uint64_t len = rd->last - rd->first;
	uint8_t *stage = c->mem.contig ? c->mem.contig + (rd->first - c->first) : NULL;
	int rc;

	if (!stage) {
		if (c->stage_cap < len) {
			free(c->stage);
			c->stage = malloc(len);
			c->stage_cap = c->stage ? len : 0;
			if (!c->stage)
				return tc_fail(c->fs, -ENOMEM, "%s: out of memory", c->label);
		}
		stage = c->stage;
		if (writing(c) && (rc = mem_move(&c->mem, stage, len, NC_INTO_STAGE)))
			return tc_fail(c->fs, rc, "%s: memory description ended early", c->label);
	}
	if (!writing(c))
		for (uint32_t k = 0; k < rd->n_objects; k++) {
			uint64_t b = rd->objects[k].bytes;

			if (!(c->obj_data[k] = malloc(b ? b : 1)))
				return tc_fail(c->fs, -ENOMEM, "%s: out of memory", c->label);
		}
	if ((rc = send_round(c, stage)))
		return rc;
	if (!writing(c)) {
		move_pieces(c, stage, c->obj_data, NC_INTO_STAGE);
		if (!c->mem.contig && (rc = mem_move(&c->mem, stage, len, NC_OUT_OF_STAGE)))
			return tc_fail(c->fs, rc, "%s: memory description ended early", c->label);
	}
	return 0;
}

static ssize_t run_call_plain(struct nc_call *c);

/* A versioned file's read takes a read version first (and the room to
 * pick each object's commits), ended after. */
static ssize_t run_call(struct nc_call *c)
{
	ssize_t rc;

	if (writing(c) || !tc_versioned(c->f))
		return run_call_plain(c);
	if ((rc = tc_vfile_read_begin(c->f, &c->rd, c->f->path)))
		return rc;
	c->vread = 1;
	c->pick = calloc(c->rd.rep->n_vmap + 1, sizeof(*c->pick));
	rc = c->pick ? run_call_plain(c) : tc_fail(c->fs, -ENOMEM, "%s: out of memory", c->label);
	free(c->pick);
	c->pick = NULL;
	tc_vfile_read_done(c->f, &c->rd);
	c->vread = 0;
	return rc;
}

/* The call's rounds from where the plan stands to its end; `wrote`
 * (NULL: not kept) marks the slots they reach. A versioned write's round
 * k is part k of its T. */
static int rounds(struct nc_call *c, uint8_t *wrote)
{
	struct tc_plan *p = &c->plan;
	int rc = 0;

	while (!rc && !tc_plan_done(p)) {
		rc = tc_plan_next(p);
		if (rc)
			rc = tc_fail(c->fs, rc, "%s: planning stream bytes from %llu: %s", c->label,
				     (unsigned long long)p->round.first, strerror(-rc));
		else if (p->round.last == p->round.first)
			rc = tc_fail(c->fs, -EIO, "%s: no progress at stream byte %llu", c->label,
				     (unsigned long long)p->round.first);
		else if (wrote && c->vpart == UINT32_MAX)
			rc = tc_fail(c->fs, -EFBIG, "%s: more than %u rounds, the parts one version "
				     "may have", c->label, UINT32_MAX);
		else
			rc = one_round(c);
		for (uint32_t k = 0; wrote && k < p->round.n_objects; k++)
			wrote[p->round.objects[k].slot] = 1;
		c->vpart += wrote != NULL; /* 0 on any other call's messages */
		free_round(c);
	}
	return rc;
}

/* A versioned write (tc_vers_modify's send): the whole call under T,
 * from its start (a try after a full log or a lost ID# sends it all
 * again under a new T), and the slots it wrote, for the one commit. */
static int vcall_send(void *arg, uint64_t t, uint32_t *slots, size_t *n)
{
	struct nc_call *c = arg;
	uint8_t wrote[TESSERA_MAX_STRIPE] = { 0 };
	int rc;

	c->plan.file = c->vfile0;
	c->mem = c->vmem0;
	c->vt = t;
	c->vpart = 0;
	rc = rounds(c, wrote);
	for (uint32_t s = 0; s < c->f->layout.count; s++)
		if (wrote[s])
			slots[(*n)++] = s;
	return rc;
}

static ssize_t run_call_plain(struct nc_call *c)
{
	struct tc_plan *p = &c->plan;
	uint64_t at = 0;
	int rc = 0;

	if (writing(c) && (rc = tc_plan_check_overlap(p, &at)))
		return rc == -EINVAL
			? tc_fail(c->fs, rc, "%s: file regions overlap at offset %llu (writes must "
				  "name each byte once)", c->label, (unsigned long long)at)
			: tc_fail(c->fs, rc, "%s: checking the file regions for overlap: %s",
				  c->label, strerror(-rc));
	if (writing(c) && tc_versioned(c->f)) {
		/* one version, whatever the number of rounds */
		c->vfile0 = p->file;
		c->vmem0 = c->mem;
		rc = tc_vers_modify(c->f, vcall_send, c, c->label);
	} else {
		rc = rounds(c, NULL);
	}
	free(c->stage);
	return rc ? rc : (ssize_t)(p->end - c->first);
}

/* Limits of a call's rounds: one message per object per round, each
 * within the frame bound every daemon enforces. */
static struct tc_plan_limits call_limits(const tessera_fs *fs, uint32_t max_regions)
{
	struct tc_plan_limits lim = {
		.max_io = fs->cfg.max_io,
		.window = fs->cfg.window,
		.max_regions = max_regions,
		.max_pieces = TP_MAX_PIECES,  /* what a list message may name */
		.max_round_pieces = 65536,    /* bounds the plan's memory */
	};

	return lim;
}

static int plan_fail(struct nc_call *c, int rc)
{
	return tc_fail(c->fs, rc, "%s: cannot plan the access over %u objects of %llu-byte strips "
		       "(max_io %u, window %u): %s", c->label, c->f->layout.count,
		       (unsigned long long)c->f->layout.strip_size, c->fs->cfg.max_io,
		       c->fs->cfg.window, strerror(-rc));
}

static int call_start(struct nc_call *c, tessera_file *f, enum nc_dir dir, const char *method)
{
	int acc = f->flags & O_ACCMODE;

	memset(c, 0, sizeof(*c));
	c->fs = f->fs;
	c->f = f;
	c->dir = dir;
	snprintf(c->label, sizeof(c->label), "%s %s %s", method,
		 dir == NC_WRITE ? "write" : "read", f->path);
	if (dir == NC_WRITE && acc == O_RDONLY)
		return tc_fail(f->fs, -EBADF, "%s: file is open read-only", c->label);
	if (dir == NC_READ && acc == O_WRONLY)
		return tc_fail(f->fs, -EBADF, "%s: file is open write-only", c->label);
	return 0;
}

static struct tdl_layout layout_of(const tessera_file *f)
{
	struct tdl_layout tl = { f->layout.strip_size, f->layout.count };

	return tl;
}

/* ------------------------------------------------------------- list I/O */

/* The memory regions' total, within SSIZE_MAX: 0, or a negative errno
 * with the message. */
static int mem_total(struct nc_call *c, const struct iovec *mem, size_t mem_count,
		     uint64_t *total)
{
	*total = 0;
	for (size_t i = 0; i < mem_count; i++) {
		if (mem[i].iov_len > (uint64_t)SSIZE_MAX - *total)
			return tc_fail(c->fs, -EINVAL, "%s: memory regions exceed SSIZE_MAX bytes",
				       c->label);
		*total += mem[i].iov_len;
	}
	return 0;
}

/* The file regions' total, each within the largest file and all within
 * SSIZE_MAX. */
static int file_total(struct nc_call *c, const uint64_t *offs, const uint64_t *lens, size_t n,
		      uint64_t *total)
{
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		if (offs[i] > (uint64_t)INT64_MAX || lens[i] > (uint64_t)INT64_MAX - offs[i])
			return tc_fail(c->fs, -EFBIG, "%s: file region %zu (offset %llu, length %llu) "
				       "is beyond the largest file", c->label, i,
				       (unsigned long long)offs[i], (unsigned long long)lens[i]);
		if (lens[i] > (uint64_t)SSIZE_MAX - *total)
			return tc_fail(c->fs, -EINVAL, "%s: file regions exceed SSIZE_MAX bytes",
				       c->label);
		*total += lens[i];
	}
	return 0;
}

/* A list call's regions checked: memory and file hold the same bytes. */
static int list_check(struct nc_call *c, const struct iovec *mem, size_t mem_count,
		      const uint64_t *offs, const uint64_t *lens, size_t n)
{
	uint64_t mtotal, ftotal;
	int rc;

	if ((mem_count && !mem) || (n && (!offs || !lens)))
		return tc_fail(c->fs, -EINVAL, "%s: NULL region list", c->label);
	if ((rc = mem_total(c, mem, mem_count, &mtotal)) ||
	    (rc = file_total(c, offs, lens, n, &ftotal)))
		return rc;
	if (mtotal != ftotal)
		return tc_fail(c->fs, -EINVAL, "%s: memory regions hold %llu bytes but file regions "
			       "%llu", c->label, (unsigned long long)mtotal,
			       (unsigned long long)ftotal);
	return 0;
}

static ssize_t list_io(tessera_file *f, const struct iovec *mem, size_t mem_count,
		       const uint64_t *offs, const uint64_t *lens, size_t n, enum nc_dir dir)
{
	struct nc_call *c = malloc(sizeof(*c));
	struct tdl_layout tl = layout_of(f);
	struct tc_plan_limits lim = call_limits(f->fs, f->list_batch ? f->list_batch
						 : f->fs->cfg.list_io_max_regions);
	ssize_t rc;

	if (!c)
		return tc_fail(f->fs, -ENOMEM, "list I/O on %s: out of memory", f->path);
	if ((rc = call_start(c, f, dir, "list")) ||
	    (rc = list_check(c, mem, mem_count, offs, lens, n)))
		goto out;
	mem_init_iov(&c->mem, mem, mem_count);
	if ((rc = tc_plan_init_list(&c->plan, &tl, &lim, offs, lens, n)))
		rc = plan_fail(c, (int)rc);
	else
		rc = run_call(c);
	tc_plan_free(&c->plan);
out:
	free(c);
	return rc;
}

ssize_t tessera_write_list(tessera_file *f, const struct iovec *mem, size_t mem_count,
			   const uint64_t *offs, const uint64_t *lens, size_t n)
{
	ssize_t rc;

	if ((rc = tc_file_writing(f)))
		return rc;
	TC_CAP_RETRY(f, rc, list_io(f, mem, mem_count, offs, lens, n, NC_WRITE));
	return rc;
}

ssize_t tessera_read_list(tessera_file *f, const struct iovec *mem, size_t mem_count,
			  const uint64_t *offs, const uint64_t *lens, size_t n)
{
	ssize_t rc;

	TC_READ_RETRY(f, rc, list_io(f, mem, mem_count, offs, lens, n, NC_READ));
	return rc;
}

int tessera_file_set_list_batch(tessera_file *f, uint32_t max_regions)
{
	f->list_batch = max_regions;
	return 0;
}

/* --------------------------------------------------------- datatype I/O */

/* Data bytes a datatype message may carry beside the file type within
 * the frame bound (max_io + 256 KiB) every daemon enforces: less than
 * max_io when the file type's encoding exceeds that allowance. */
static uint64_t view_room(const struct nc_call *c)
{
	Tessera__DtypeIORequest m = TESSERA__DTYPE_IOREQUEST__INIT;
	size_t head, max = tp_config_max_frame(&c->fs->cfg);

	/* every number at its widest */
	m.handle = m.strip_size = m.desc_nonce = m.desc_id = UINT64_MAX;
	m.count = m.first = m.last = UINT64_MAX;
	m.stripe_count = m.slot = UINT32_MAX;
	m.disp = INT64_MIN;
	m.file_type = c->ftype_msg;
	head = TP_HDR_SIZE + c->fs->name_len + protobuf_c_message_get_packed_size(&m.base);
	return head < max ? max - head : 0;
}

static int view_recall(struct nc_call *c);

/* A datatype call's arguments checked: *total is the bytes the memory
 * holds (0: nothing to do). 0 or a negative errno, with the message. */
static int dtype_check(struct nc_call *c, const void *buf, uint64_t mem_count, uint64_t msize,
		       const struct tdl_dataloop *ftype, uint64_t first, uint64_t *total)
{
	tessera_fs *fs = c->fs;
	uint64_t fsize;

	*total = 0;
	if (!ftype || (!buf && mem_count && msize))
		return tc_fail(fs, -EINVAL, "%s: no %s", c->label, ftype ? "buffer" : "file type");
	if (msize && mem_count > (uint64_t)SSIZE_MAX / msize)
		return tc_fail(fs, -EINVAL, "%s: %llu memory instances of %llu bytes exceed SSIZE_MAX",
			       c->label, (unsigned long long)mem_count, (unsigned long long)msize);
	if (mem_count * msize == 0)
		return 0;
	fsize = tdl_size(ftype);
	if (fsize == 0 || first > (uint64_t)INT64_MAX - mem_count * msize)
		return tc_fail(fs, -EINVAL, "%s: %s", c->label, fsize ? "stream window overflows"
			       : "file type holds no data");
	*total = mem_count * msize;
	c->count = (first + *total + fsize - 1) / fsize;
	return 0;
}

/* The round limits of a datatype call: when the file type's message
 * leaves room for half a max_io of data beside it, the messages name the
 * view (by_view) and each daemon finds its pieces itself. */
static struct tc_plan_limits dtype_limits(struct nc_call *c)
{
	struct tc_plan_limits lim = call_limits(c->fs, 0);
	uint64_t room = view_room(c);

	if (room >= lim.max_io / 2) {
		/* The view travels; the data beside it must still fit a frame. */
		c->by_view = 1;
		lim.max_pieces = 0; /* the server finds its pieces itself */
		if (room < lim.max_io)
			lim.max_io = room;
	}
	return lim;
}

/* Plan and run a checked datatype call (c->ftype_msg made). */
static ssize_t dtype_run(struct nc_call *c, const struct tdl_dataloop *ftype, uint64_t total)
{
	tessera_fs *fs = c->fs;
	struct tc_plan_limits lim = dtype_limits(c);
	struct tdl_layout tl = layout_of(c->f);
	ssize_t rc;

	if ((rc = tc_plan_init_view(&c->plan, &tl, &lim, ftype, c->count, c->disp, c->first,
				    c->first + total))) {
		rc = plan_fail(c, (int)rc);
	} else {
		if (!c->by_view || !view_recall(c)) {
			pthread_mutex_lock(&fs->lock);
			c->desc_id = ++fs->next_desc_id;
			pthread_mutex_unlock(&fs->lock);
		}
		rc = run_call(c);
	}
	tc_plan_free(&c->plan);
	return rc;
}

static ssize_t dtype_io(tessera_file *f, void *buf, uint64_t mem_count,
			const struct tdl_dataloop *mtype, const struct tdl_dataloop *ftype,
			int64_t disp, uint64_t first, enum nc_dir dir)
{
	tessera_fs *fs = f->fs;
	struct nc_call *c = malloc(sizeof(*c));
	uint64_t msize = mtype ? tdl_size(mtype) : 1, total;
	char err[256];
	ssize_t rc;

	if (!c)
		return tc_fail(fs, -ENOMEM, "datatype I/O on %s: out of memory", f->path);
	if ((rc = call_start(c, f, dir, "datatype")))
		goto out;
	if ((rc = dtype_check(c, buf, mem_count, msize, ftype, first, &total)) || !total)
		goto out;
	if ((rc = tdl_check_view(ftype, c->count, disp, err, sizeof(err)))) {
		rc = tc_fail(fs, rc, "%s: file view: %s", c->label, err);
		goto out;
	}
	if ((rc = mem_init_dtype(&c->mem, buf, mem_count, mtype, total, err, sizeof(err)))) {
		rc = tc_fail(fs, rc, "%s: memory type: %s", c->label, err);
		goto out;
	}
	if ((rc = tp_dataloop_to_msg(ftype, &c->ftype_msg))) {
		rc = tc_fail(fs, rc, "%s: encoding the file type (%d nodes) failed: %s", c->label,
			     tdl_node_count(ftype), strerror((int)-rc));
		goto out;
	}
	c->disp = disp;
	c->first = first;
	rc = dtype_run(c, ftype, total);
	tp_dataloop_msg_release(c->ftype_msg);
out:
	free(c);
	return rc;
}

/* ------------------------------------------------------------ view memo */

struct tc_view_memo {
	uint8_t *bytes;            /* the view, packed */
	size_t len;
	uint64_t desc_id;
	uint8_t sent[TP_MAX_SERVERS];
};

static uint8_t *pack_view(const Tessera__Dataloop *msg, size_t *len)
{
	uint8_t *b;

	*len = protobuf_c_message_get_packed_size(&msg->base);
	b = malloc(*len ? *len : 1);
	if (b)
		protobuf_c_message_pack(&msg->base, b);
	return b;
}

void tc_view_forget(tessera_file *f)
{
	struct tc_view_memo *m;

	pthread_mutex_lock(&f->fs->lock);
	m = f->view_memo;
	f->view_memo = NULL;
	pthread_mutex_unlock(&f->fs->lock);
	if (m)
		free(m->bytes);
	free(m);
}

void tc_view_remember(tessera_file *f, const Tessera__Dataloop *msg, uint64_t desc_id,
		      const uint8_t *sent)
{
	struct tc_view_memo *m = calloc(1, sizeof(*m));

	tc_view_forget(f);
	if (!m || !(m->bytes = pack_view(msg, &m->len))) {
		free(m);
		return; /* only an optimisation */
	}
	m->desc_id = desc_id;
	memcpy(m->sent, sent, sizeof(m->sent));
	pthread_mutex_lock(&f->fs->lock);
	if (!f->view_memo) {
		f->view_memo = m;
		m = NULL;
	}
	pthread_mutex_unlock(&f->fs->lock);
	if (m)
		free(m->bytes);
	free(m);
}

/* The call's view is the one a lock sent: name it by the lock's id. */
static int view_recall(struct nc_call *c)
{
	struct tc_view_memo *m;
	size_t len;
	uint8_t *b;
	int hit = 0;

	if (!c->f->view_memo || !(b = pack_view(c->ftype_msg, &len)))
		return 0;
	pthread_mutex_lock(&c->fs->lock);
	m = c->f->view_memo;
	if (m && m->len == len && !memcmp(m->bytes, b, len)) {
		c->desc_id = m->desc_id;
		memcpy(c->desc_sent, m->sent, sizeof(c->desc_sent));
		hit = 1;
	}
	pthread_mutex_unlock(&c->fs->lock);
	free(b);
	return hit;
}

ssize_t tessera_write_dtype(tessera_file *f, const void *buf, uint64_t mem_count,
			    const struct tdl_dataloop *mtype, const struct tdl_dataloop *ftype,
			    int64_t disp, uint64_t first)
{
	ssize_t rc;

	if ((rc = tc_file_writing(f)))
		return rc;
	TC_CAP_RETRY(f, rc, dtype_io(f, (void *)buf, mem_count, mtype, ftype, disp, first, NC_WRITE));
	return rc;
}

ssize_t tessera_read_dtype(tessera_file *f, void *buf, uint64_t mem_count,
			   const struct tdl_dataloop *mtype, const struct tdl_dataloop *ftype,
			   int64_t disp, uint64_t first)
{
	ssize_t rc;

	TC_READ_RETRY(f, rc, dtype_io(f, buf, mem_count, mtype, ftype, disp, first, NC_READ));
	return rc;
}
