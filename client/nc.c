/*
 * nc.c - noncontiguous I/O: list I/O and datatype I/O.
 *
 * Both sides of a call describe one byte stream. The memory side is read
 * (or filled) in stream order through a cursor; the file side yields file
 * pieces (offset, length) in stream order: the caller's region list, or
 * the segment engine walking the file view.
 *
 * A call proceeds in rounds. A round takes the next stretch of the stream
 * [rfirst, rlast) such that no storage object receives more than max_io
 * bytes, at most `window` objects are involved, and (list I/O) at most the
 * list batch of file regions is touched. Each involved object gets one
 * message: list I/O names its pieces (object offset, length); datatype I/O
 * names the file view and the stream window, and the server computes its
 * own pieces (the view travels once per call and server). Data moves as
 * each object's bytes concatenated in stream order, staged through one
 * buffer unless memory is contiguous.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

#define RUN_CAP 65536                  /* runs planned in one round */
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
	if (!rc)
		rc = tdl_segment_init(&m->seg, type, count, MEM_SHIFT, 0, total);
	if (!rc)
		rc = tdl_segment_next(&m->seg, &m->cur, 1, &n);
	if (rc)
		return rc;
	if (n == 1 && m->cur.length == total)
		m->contig = m->buf + (int64_t)(m->cur.offset - (uint64_t)MEM_SHIFT);
	return 0;
}

/* Move the next `len` bytes of the memory stream to (to_mem: from) stage. */
static int mem_move(struct nc_mem *m, uint8_t *stage, uint64_t len, int to_mem)
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
		if (to_mem)
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

/* ------------------------------------------------------------------ file */

struct nc_file {
	int dtype;                   /* a file view, else a region list */
	const uint64_t *offs, *lens; /* list I/O: the regions */
	size_t n, idx;
	struct tdl_segment seg;      /* datatype I/O: the view's walk */
	struct tdl_piece batch[64];
	size_t bn, bi;
	uint64_t within;             /* bytes of the current piece consumed */
	uint64_t pos;                /* stream position */
};

/* The rest of the current piece: 1 and *off, *len; 0 at the end. */
static int file_peek(struct nc_file *f, uint64_t *off, uint64_t *len)
{
	if (!f->dtype) {
		while (f->idx < f->n && f->lens[f->idx] == 0)
			f->idx++;
		if (f->idx == f->n)
			return 0;
		*off = f->offs[f->idx] + f->within;
		*len = f->lens[f->idx] - f->within;
		return 1;
	}
	if (f->bi == f->bn) {
		int rc = tdl_segment_next(&f->seg, f->batch, sizeof(f->batch) / sizeof(f->batch[0]),
					  &f->bn);

		if (rc)
			return rc;
		f->bi = 0;
		if (!f->bn)
			return 0;
	}
	*off = f->batch[f->bi].offset + f->within;
	*len = f->batch[f->bi].length - f->within;
	return 1;
}

static void file_take(struct nc_file *f, uint64_t k)
{
	uint64_t len = f->dtype ? f->batch[f->bi].length : f->lens[f->idx];

	f->within += k;
	f->pos += k;
	if (f->within == len) {
		f->within = 0;
		if (f->dtype)
			f->bi++;
		else
			f->idx++;
	}
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Writes: no byte of the file may be named twice. A walk that finds the
 * pieces ascending proves it at once; otherwise they are sorted. */
static int check_overlap(tessera_fs *fs, struct nc_file f, const char *label)
{
	struct nc_file again = f;
	uint64_t off, len, end = 0, *ranges = NULL;
	size_t n = 0, cap = 0;
	int rc, sorted = 1;

	while ((rc = file_peek(&f, &off, &len)) > 0) {
		if (off < end) {
			sorted = 0;
			break;
		}
		end = off + len;
		file_take(&f, len);
	}
	if (rc < 0 || sorted)
		return rc < 0 ? tc_fail(fs, rc, "%s: walking the file view failed", label) : 0;
	while ((rc = file_peek(&again, &off, &len)) > 0) {
		if (n == cap) {
			uint64_t *r = realloc(ranges, (cap = cap ? 2 * cap : 4096) * 2 * sizeof(*r));

			if (!r) {
				free(ranges);
				return tc_fail(fs, -ENOMEM, "%s: out of memory", label);
			}
			ranges = r;
		}
		ranges[2 * n] = off;
		ranges[2 * n++ + 1] = len;
		file_take(&again, len);
	}
	qsort(ranges, n, 2 * sizeof(*ranges), cmp_range);
	for (size_t i = 1; i < n && !rc; i++)
		if (ranges[2 * i] < ranges[2 * (i - 1)] + ranges[2 * (i - 1) + 1])
			rc = tc_fail(fs, -EINVAL, "%s: file regions overlap at offset %llu (writes "
				     "must name each byte once)", label,
				     (unsigned long long)ranges[2 * i]);
	free(ranges);
	return rc;
}

/* ---------------------------------------------------------------- rounds */

struct nc_run {
	uint64_t obj, len;    /* object range */
	uint64_t stream;      /* stream position of its first byte */
	uint32_t slot;
};

struct nc_call {
	tessera_fs *fs;
	tessera_file *f;
	struct tdl_layout tl;
	int write;
	char label[4200];         /* "list write /a/b" */
	struct nc_mem mem;
	struct nc_file file;
	uint64_t total;           /* stream bytes */
	uint32_t max_regions;     /* list I/O: file regions per round */
	/* datatype I/O */
	Tessera__Dataloop *ftype_msg;
	int64_t disp;
	uint64_t count, first, desc_id;
	uint8_t desc_sent[TP_MAX_SERVERS];
	/* the current round */
	uint64_t rfirst, rlast;
	struct nc_run *runs;
	size_t n_runs;
	uint32_t slots[TESSERA_MAX_STRIPE], n_slots; /* involved, first use order */
	int64_t last_run[TESSERA_MAX_STRIPE];        /* a slot's last run, -1 */
	uint64_t bytes[TESSERA_MAX_STRIPE];          /* a slot's bytes */
	uint32_t pieces[TESSERA_MAX_STRIPE];
	struct tc_req *reqs[TESSERA_MAX_STRIPE];     /* by position in slots[] */
	uint8_t *slot_data[TESSERA_MAX_STRIPE];      /* reads: replies land here */
	uint8_t *stage;
	size_t stage_cap;
};

static int plan_round(struct nc_call *c)
{
	tessera_fs *fs = c->fs;
	uint64_t max_io = fs->cfg.max_io, off, len;
	uint32_t window = fs->cfg.window, regions;
	int rc, is_list = !c->file.dtype;

	for (uint32_t i = 0; i < c->n_slots; i++) {
		uint32_t s = c->slots[i];

		c->last_run[s] = -1;
		c->bytes[s] = 0;
		c->pieces[s] = 0;
	}
	c->n_slots = 0;
	c->n_runs = 0;
	c->rfirst = c->file.pos;
	regions = c->file.within ? 1 : 0; /* a region begun last round */
	while ((rc = file_peek(&c->file, &off, &len)) > 0) {
		uint32_t slot;
		uint64_t obj, run, take;
		int64_t last;

		if (is_list && c->file.within == 0 && regions == c->max_regions)
			break;
		run = tdl_layout_run(&c->tl, off, len);
		tdl_layout_map(&c->tl, off, &slot, &obj);
		last = c->last_run[slot];
		if (last < 0 && c->n_slots == window)
			break;
		if (c->bytes[slot] == max_io)
			break;
		take = max_io - c->bytes[slot] < run ? max_io - c->bytes[slot] : run;
		if (last >= 0 && c->runs[last].obj + c->runs[last].len == obj &&
		    c->runs[last].stream + c->runs[last].len == c->file.pos) {
			c->runs[last].len += take;
		} else {
			if (c->n_runs == RUN_CAP || (is_list && c->pieces[slot] == TP_MAX_PIECES))
				break;
			if (last < 0)
				c->slots[c->n_slots++] = slot;
			c->runs[c->n_runs] = (struct nc_run){ obj, take, c->file.pos, slot };
			c->last_run[slot] = (int64_t)c->n_runs++;
			c->pieces[slot]++;
		}
		if (is_list && c->file.within == 0)
			regions++;
		c->bytes[slot] += take;
		file_take(&c->file, take);
	}
	if (rc < 0)
		return tc_fail(fs, rc, "%s: walking the file view failed", c->label);
	c->rlast = c->file.pos;
	return 0;
}

/* The message for the round's i-th involved slot. */
static struct tc_req *round_msg(struct nc_call *c, uint32_t i)
{
	tessera_fs *fs = c->fs;
	uint32_t slot = c->slots[i], server = c->f->layout.servers[slot];
	uint64_t handle = c->f->layout.handles[slot];
	size_t data_len = c->write ? c->bytes[slot] : 0;
	struct tc_req *r;

	if (!c->file.dtype) {
		Tessera__ListIORequest m = TESSERA__LIST_IOREQUEST__INIT;
		uint64_t *offs = malloc(2 * c->pieces[slot] * sizeof(*offs));
		size_t n = 0;

		if (!offs)
			return NULL;
		/* The slot's runs in order; object-adjacent ones join. */
		for (size_t k = 0; k < c->n_runs; k++) {
			const struct nc_run *u = &c->runs[k];

			if (u->slot != slot)
				continue;
			if (n && offs[n - 1] + offs[c->pieces[slot] + n - 1] == u->obj) {
				offs[c->pieces[slot] + n - 1] += u->len;
				continue;
			}
			offs[n] = u->obj;
			offs[c->pieces[slot] + n++] = u->len;
		}
		m.handle = handle;
		m.n_offsets = m.n_lengths = n;
		m.offsets = offs;
		m.lengths = offs + c->pieces[slot];
		r = tc_req_new(fs, (int)server, c->write ? TP_OP_LIST_WRITE : TP_OP_LIST_READ,
			       &m.base, NULL, data_len);
		free(offs);
	} else {
		Tessera__DtypeIORequest m = TESSERA__DTYPE_IOREQUEST__INIT;

		m.handle = handle;
		m.strip_size = c->tl.strip_size;
		m.stripe_count = c->tl.count;
		m.slot = slot;
		m.desc_nonce = fs->desc_nonce;
		m.desc_id = c->desc_id;
		m.file_type = c->desc_sent[server] ? NULL : c->ftype_msg;
		m.disp = c->disp;
		m.count = c->count;
		m.first = c->rfirst;
		m.last = c->rlast;
		r = tc_req_new(fs, (int)server, c->write ? TP_OP_DTYPE_WRITE : TP_OP_DTYPE_READ,
			       &m.base, NULL, data_len);
	}
	if (r && !c->write) {
		r->data_dst = c->slot_data[slot];
		r->data_cap = c->bytes[slot];
	}
	return r;
}

/* Copy between the stage (the round's stream bytes) and each slot's data,
 * run by run. */
static void move_runs(struct nc_call *c, uint8_t *stage, uint8_t **slot_data, int to_stage)
{
	uint64_t fill[TESSERA_MAX_STRIPE];

	for (uint32_t i = 0; i < c->n_slots; i++)
		fill[c->slots[i]] = 0;
	for (size_t k = 0; k < c->n_runs; k++) {
		const struct nc_run *u = &c->runs[k];
		uint8_t *s = stage + (u->stream - c->rfirst), *d = slot_data[u->slot] + fill[u->slot];

		if (to_stage)
			memcpy(s, d, u->len);
		else
			memcpy(d, s, u->len);
		fill[u->slot] += u->len;
	}
}

/* Send the round's messages and wait. A server that lost the call's file
 * type (restarted, or evicted it) answers ESTALE and gets it once more. */
static int run_round(struct nc_call *c)
{
	tessera_fs *fs = c->fs;
	uint8_t *data[TESSERA_MAX_STRIPE];
	struct tc_req *again[TESSERA_MAX_STRIPE];
	uint32_t n_again = 0, other = 0;
	int rc;

	for (uint32_t i = 0; i < c->n_slots; i++) {
		if (!(c->reqs[i] = round_msg(c, i)))
			return tc_fail(fs, -ENOMEM, "%s: out of memory", c->label);
		data[c->slots[i]] = tc_req_data(c->reqs[i]);
	}
	if (c->write)
		move_runs(c, c->mem.contig ? c->mem.contig + (c->rfirst - c->first) : c->stage,
			  data, 0);
	rc = tc_run(fs, c->reqs, c->n_slots);
	for (uint32_t i = 0; i < c->n_slots; i++) {
		uint32_t server = c->f->layout.servers[c->slots[i]];
		int st = c->reqs[i]->status;

		if (!st)
			c->desc_sent[server] = 1;
		else if (st == -ESTALE && c->file.dtype)
			c->desc_sent[server] = 0;
		else
			other++;
	}
	if (rc && !other) {
		for (uint32_t i = 0; i < c->n_slots; i++) {
			struct tc_req *old = c->reqs[i], *r;

			if (!old->status)
				continue;
			if (!(r = round_msg(c, i)))
				return tc_fail(fs, -ENOMEM, "%s: out of memory", c->label);
			if (c->write)
				memcpy(tc_req_data(r), tc_req_data(old), c->bytes[c->slots[i]]);
			tc_req_free(fs, old);
			c->reqs[i] = again[n_again++] = r;
		}
		rc = tc_run(fs, again, n_again);
	}
	if (rc) {
		for (uint32_t i = 0; i < c->n_slots; i++)
			if (c->reqs[i]->status)
				return tc_req_fail(fs, c->reqs[i], c->label);
		return rc;
	}
	if (!c->write)
		for (uint32_t i = 0; i < c->n_slots; i++)
			if (c->reqs[i]->data_len != c->bytes[c->slots[i]])
				return tc_fail(fs, -EPROTO, "%s: storage daemon %u sent %zu bytes for "
					       "%llu asked", c->label,
					       c->f->layout.servers[c->slots[i]], c->reqs[i]->data_len,
					       (unsigned long long)c->bytes[c->slots[i]]);
	return 0;
}

static void free_round(struct nc_call *c)
{
	for (uint32_t i = 0; i < c->n_slots; i++) {
		tc_req_free(c->fs, c->reqs[i]);
		c->reqs[i] = NULL;
		free(c->slot_data[c->slots[i]]);
		c->slot_data[c->slots[i]] = NULL;
	}
}

static int one_round(struct nc_call *c)
{
	uint64_t len = c->rlast - c->rfirst;
	uint8_t *stage = c->mem.contig ? c->mem.contig + (c->rfirst - c->first) : NULL;
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
		if (c->write && (rc = mem_move(&c->mem, stage, len, 0)))
			return tc_fail(c->fs, rc, "%s: memory description ended early", c->label);
	}
	if (!c->write)
		for (uint32_t i = 0; i < c->n_slots; i++) {
			uint32_t s = c->slots[i];

			if (!(c->slot_data[s] = malloc(c->bytes[s] ? c->bytes[s] : 1)))
				return tc_fail(c->fs, -ENOMEM, "%s: out of memory", c->label);
		}
	if ((rc = run_round(c)))
		return rc;
	if (!c->write) {
		move_runs(c, stage, c->slot_data, 1);
		if (!c->mem.contig && (rc = mem_move(&c->mem, stage, len, 1)))
			return tc_fail(c->fs, rc, "%s: memory description ended early", c->label);
	}
	return 0;
}

static ssize_t run_call(struct nc_call *c)
{
	int rc = 0;

	for (uint32_t s = 0; s < TESSERA_MAX_STRIPE; s++)
		c->last_run[s] = -1;
	if (c->write && (rc = check_overlap(c->fs, c->file, c->label)))
		return rc;
	c->runs = malloc(RUN_CAP * sizeof(*c->runs));
	if (!c->runs)
		return tc_fail(c->fs, -ENOMEM, "%s: out of memory", c->label);
	while (!rc && c->file.pos < c->total) {
		rc = plan_round(c);
		if (!rc && c->rlast == c->rfirst)
			rc = tc_fail(c->fs, -EIO, "%s: no progress at stream byte %llu", c->label,
				     (unsigned long long)c->rfirst);
		if (!rc)
			rc = one_round(c);
		free_round(c);
	}
	free(c->runs);
	free(c->stage);
	return rc ? rc : (ssize_t)c->total;
}

static int call_start(struct nc_call *c, tessera_file *f, int write, const char *method)
{
	int acc = f->flags & O_ACCMODE;

	memset(c, 0, sizeof(*c));
	c->fs = f->fs;
	c->f = f;
	c->write = write;
	c->tl.strip_size = f->layout.strip_size;
	c->tl.count = f->layout.count;
	snprintf(c->label, sizeof(c->label), "%s %s %s", method, write ? "write" : "read",
		 f->path);
	if (write && acc == O_RDONLY)
		return tc_fail(f->fs, -EBADF, "%s: file is open read-only", c->label);
	if (!write && acc == O_WRONLY)
		return tc_fail(f->fs, -EBADF, "%s: file is open write-only", c->label);
	return 0;
}

/* ------------------------------------------------------------- list I/O */

static ssize_t list_io(tessera_file *f, const struct iovec *mem, size_t mem_count,
		       const uint64_t *offs, const uint64_t *lens, size_t n, int write)
{
	struct nc_call *c = malloc(sizeof(*c));
	uint64_t mtotal = 0, ftotal = 0;
	ssize_t rc;

	if (!c)
		return tc_fail(f->fs, -ENOMEM, "list I/O on %s: out of memory", f->path);
	if ((rc = call_start(c, f, write, "list")))
		goto out;
	if ((mem_count && !mem) || (n && (!offs || !lens))) {
		rc = tc_fail(f->fs, -EINVAL, "%s: NULL region list", c->label);
		goto out;
	}
	for (size_t i = 0; i < mem_count; i++) {
		if (mem[i].iov_len > (uint64_t)SSIZE_MAX - mtotal) {
			rc = tc_fail(f->fs, -EINVAL, "%s: memory regions exceed SSIZE_MAX bytes",
				     c->label);
			goto out;
		}
		mtotal += mem[i].iov_len;
	}
	for (size_t i = 0; i < n; i++) {
		if (offs[i] > (uint64_t)INT64_MAX || lens[i] > (uint64_t)INT64_MAX - offs[i]) {
			rc = tc_fail(f->fs, -EFBIG, "%s: file region %zu (offset %llu, length %llu) "
				     "is beyond the largest file", c->label, i,
				     (unsigned long long)offs[i], (unsigned long long)lens[i]);
			goto out;
		}
		if (lens[i] > (uint64_t)SSIZE_MAX - ftotal) {
			rc = tc_fail(f->fs, -EINVAL, "%s: file regions exceed SSIZE_MAX bytes",
				     c->label);
			goto out;
		}
		ftotal += lens[i];
	}
	if (mtotal != ftotal) {
		rc = tc_fail(f->fs, -EINVAL, "%s: memory regions hold %llu bytes but file regions "
			     "%llu", c->label, (unsigned long long)mtotal,
			     (unsigned long long)ftotal);
		goto out;
	}
	mem_init_iov(&c->mem, mem, mem_count);
	c->file.offs = offs;
	c->file.lens = lens;
	c->file.n = n;
	c->total = ftotal;
	c->max_regions = f->list_batch ? f->list_batch : f->fs->cfg.list_io_max_regions;
	rc = run_call(c);
out:
	free(c);
	return rc;
}

ssize_t tessera_write_list(tessera_file *f, const struct iovec *mem, size_t mem_count,
			   const uint64_t *offs, const uint64_t *lens, size_t n)
{
	return list_io(f, mem, mem_count, offs, lens, n, 1);
}

ssize_t tessera_read_list(tessera_file *f, const struct iovec *mem, size_t mem_count,
			  const uint64_t *offs, const uint64_t *lens, size_t n)
{
	return list_io(f, mem, mem_count, offs, lens, n, 0);
}

int tessera_file_set_list_batch(tessera_file *f, uint32_t max_regions)
{
	f->list_batch = max_regions;
	return 0;
}

/* --------------------------------------------------------- datatype I/O */

static ssize_t dtype_io(tessera_file *f, void *buf, uint64_t mem_count,
			const struct tdl_dataloop *mtype, const struct tdl_dataloop *ftype,
			int64_t disp, uint64_t first, int write)
{
	tessera_fs *fs = f->fs;
	struct nc_call *c = malloc(sizeof(*c));
	uint64_t msize = mtype ? tdl_size(mtype) : 1, fsize;
	char err[256];
	ssize_t rc;

	if (!c)
		return tc_fail(fs, -ENOMEM, "datatype I/O on %s: out of memory", f->path);
	if ((rc = call_start(c, f, write, "datatype")))
		goto out;
	if (!ftype || (!buf && mem_count && msize)) {
		rc = tc_fail(fs, -EINVAL, "%s: no %s", c->label, ftype ? "buffer" : "file type");
		goto out;
	}
	if (msize && mem_count > (uint64_t)SSIZE_MAX / msize) {
		rc = tc_fail(fs, -EINVAL, "%s: %llu memory instances of %llu bytes exceed SSIZE_MAX",
			     c->label, (unsigned long long)mem_count, (unsigned long long)msize);
		goto out;
	}
	c->total = mem_count * msize;
	if (c->total == 0)
		goto out;
	fsize = tdl_size(ftype);
	if (fsize == 0 || first > (uint64_t)INT64_MAX - c->total) {
		rc = tc_fail(fs, -EINVAL, "%s: %s", c->label, fsize ? "stream window overflows"
				: "file type holds no data");
		goto out;
	}
	c->count = (first + c->total + fsize - 1) / fsize;
	if ((rc = tdl_check_view(ftype, c->count, disp, err, sizeof(err)))) {
		rc = tc_fail(fs, rc, "%s: file view: %s", c->label, err);
		goto out;
	}
	if ((rc = mem_init_dtype(&c->mem, buf, mem_count, mtype, c->total, err, sizeof(err)))) {
		rc = tc_fail(fs, rc, "%s: memory type: %s", c->label, err);
		goto out;
	}
	if ((rc = tdl_segment_init(&c->file.seg, ftype, c->count, disp, first, first + c->total))) {
		rc = tc_fail(fs, rc, "%s: file view cannot be walked", c->label);
		goto out;
	}
	if ((rc = tp_dataloop_to_msg(ftype, &c->ftype_msg))) {
		rc = tc_fail(fs, rc, "%s: encoding the file type failed", c->label);
		goto out;
	}
	c->file.dtype = 1;
	c->disp = disp;
	c->first = first;
	c->file.pos = first;
	c->total += first; /* run_call stops at this stream position */
	pthread_mutex_lock(&fs->lock);
	c->desc_id = ++fs->next_desc_id;
	pthread_mutex_unlock(&fs->lock);
	rc = run_call(c);
	if (rc > 0)
		rc -= (ssize_t)first;
	tp_dataloop_msg_release(c->ftype_msg);
out:
	free(c);
	return rc;
}

ssize_t tessera_write_dtype(tessera_file *f, const void *buf, uint64_t mem_count,
			    const struct tdl_dataloop *mtype, const struct tdl_dataloop *ftype,
			    int64_t disp, uint64_t first)
{
	return dtype_io(f, (void *)buf, mem_count, mtype, ftype, disp, first, 1);
}

ssize_t tessera_read_dtype(tessera_file *f, void *buf, uint64_t mem_count,
			   const struct tdl_dataloop *mtype, const struct tdl_dataloop *ftype,
			   int64_t disp, uint64_t first)
{
	return dtype_io(f, buf, mem_count, mtype, ftype, disp, first, 0);
}

/* ------------------------------------------------------------- counters */

int tessera_ios_stats(tessera_fs *fs, uint32_t ios, struct tessera_ios_stats *out)
{
	Tessera__PingRequest m = TESSERA__PING_REQUEST__INIT;
	Tessera__IosStatsReply *rep;
	struct tc_req *r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (ios >= fs->cfg.n_ios)
		return tc_fail(fs, -EINVAL, "stats: no storage daemon %u (the config has %u)", ios,
			       fs->cfg.n_ios);
	r = tc_req_new(fs, (int)ios, TP_OP_IOS_STATS, &m.base, NULL, 0);
	rc = tc_call(fs, r, "stats");
	if (rc) {
		tc_req_free(fs, r);
		return rc;
	}
	rep = (Tessera__IosStatsReply *)r->reply;
	for (size_t i = 0; i < TESSERA_METHODS; i++) {
		out->requests[i] = i < rep->n_requests ? rep->requests[i] : 0;
		out->pieces[i] = i < rep->n_pieces ? rep->pieces[i] : 0;
		out->bytes_read[i] = i < rep->n_bytes_read ? rep->bytes_read[i] : 0;
		out->bytes_written[i] = i < rep->n_bytes_written ? rep->bytes_written[i] : 0;
		out->desc_bytes[i] = i < rep->n_desc_bytes ? rep->desc_bytes[i] : 0;
		out->syscalls[i] = i < rep->n_syscalls ? rep->syscalls[i] : 0;
	}
	out->desc_cache_hits = rep->desc_cache_hits;
	out->desc_cache_misses = rep->desc_cache_misses;
	out->syncs = rep->syncs;
	tc_req_free(fs, r);
	return 0;
}
