/*
 * test_vlog.c - a versioned object's log (server/ios/ios_vlog.h) against a
 * brute-force model: the object at version R is the base with every
 * committed write and truncate of version <= R applied in version order
 * (a write of several parts: its parts in part order). Random overlapping
 * list and dataloop writes from several writers, some in several parts
 * sent out of order and resent, commits in random order, aborts,
 * discards, pins, reads at random
 * versions, merges at random points, reopening from disk (also with a torn
 * tail, and after a merge a failing base cut short); plus the limits, the
 * refusals of bad calls and of hostile records on disk. The log lives in
 * a fresh temporary directory through the system disk; the base object is
 * in memory (it outlives a reopen, as the store's object would).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "ios_disk.h"
#include "ios_vlog.h"
#include "rng.h"
#include "tdl.h"
#include "tp_crc.h"

#define SPAN 4096u /* object bytes the random tests touch */
#define CAP (2 * SPAN)

/* ------------------------------------------------------------ the base */

struct mbase {
	uint8_t buf[CAP];
	uint64_t size;
	int writes_left; /* < 0: no fault; else writes until one fails */
};

static int mb_read(void *ctx, uint64_t off, uint64_t len, uint8_t *out)
{
	struct mbase *b = ctx;
	for (uint64_t i = 0; i < len; i++)
		out[i] = off + i < b->size && off + i < CAP ? b->buf[off + i] : 0;
	return 0;
}

static int mb_write(void *ctx, uint64_t off, uint64_t len, const uint8_t *in)
{
	struct mbase *b = ctx;
	if (b->writes_left == 0)
		return -EIO;
	if (b->writes_left > 0)
		b->writes_left--;
	if (off + len > CAP)
		return -EFBIG;
	memcpy(b->buf + off, in, len);
	if (off + len > b->size)
		b->size = off + len;
	return 0;
}

static int mb_truncate(void *ctx, uint64_t size)
{
	struct mbase *b = ctx;
	if (size > CAP)
		return -EFBIG;
	if (size < b->size)
		memset(b->buf + size, 0, b->size - size);
	b->size = size;
	return 0;
}

static int mb_size(void *ctx, uint64_t *size)
{
	*size = ((struct mbase *)ctx)->size;
	return 0;
}

static int mb_sync(void *ctx)
{
	(void)ctx;
	return 0;
}

static const struct ios_vlog_base_ops mb_ops = { mb_read, mb_write, mb_truncate, mb_size, mb_sync };

/* ------------------------------------------------------------ the model */

struct mop {
	uint64_t vm;
	int trunc;
	uint64_t size;        /* trunc */
	uint64_t *off;        /* write: one entry per byte, in write order */
	uint8_t *val;
	uint64_t n;
};

struct model {
	struct mop *ops; /* committed, ascending vm */
	size_t n;
	uint8_t img[CAP];
	uint64_t size;
};

/* The object at version r into m->img and m->size. */
static void model_at(struct model *m, uint64_t r)
{
	memset(m->img, 0, sizeof(m->img));
	m->size = 0;
	for (size_t i = 0; i < m->n && m->ops[i].vm <= r; i++) {
		const struct mop *o = &m->ops[i];
		if (o->trunc) {
			if (o->size < m->size)
				memset(m->img + o->size, 0, m->size - o->size);
			m->size = o->size;
			continue;
		}
		for (uint64_t k = 0; k < o->n; k++) {
			m->img[o->off[k]] = o->val[k];
			if (o->off[k] + 1 > m->size)
				m->size = o->off[k] + 1;
		}
	}
}

static void model_commit(struct model *m, const struct mop *o)
{
	m->ops = realloc(m->ops, (m->n + 1) * sizeof(*m->ops));
	assert_non_null(m->ops);
	m->ops[m->n++] = *o; /* commits come with ascending vm */
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ops[i].off);
		free(m->ops[i].val);
	}
	free(m->ops);
}

/* ------------------------------------------------------------ fixture */

struct fx {
	char dir[64], path[96];
	struct ios_disk *disk;
	struct mbase base;
	struct ios_vlog_config cfg;
	struct ios_vlog *log;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/tessera-vlog-XXXXXX");
	if (!mkdtemp(f->dir) || ios_disk_system(&f->disk)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/obj.vlog", f->dir);
	f->base.writes_left = -1;
	f->cfg = (struct ios_vlog_config){ .disk = f->disk, .handle = 0x1a00000001, .path = f->path,
					   .base = { &mb_ops, &f->base },
					   .durability = IOS_VLOG_SYNC_LATER };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[128];
	ios_vlog_close(f->log);
	f->disk->ops->destroy(f->disk);
	unlink(f->path);
	snprintf(p, sizeof(p), "%s.new", f->path);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void open_log(struct fx *f)
{
	int rc = ios_vlog_open(&f->cfg, &f->log);
	if (rc)
		fail_msg("open: %d %s", rc, ios_vlog_why(f->log));
}

static void reopen(struct fx *f)
{
	ios_vlog_close(f->log);
	f->log = NULL;
	open_log(f);
}

/* ------------------------------------------------------------ random run */

#define WRITERS 4
#define PENDING 8
#define PARTS 4     /* parts of one pending write, at most */
#define PART_NUMS 8 /* numbered below this, in any order */

struct mpart {
	uint32_t part;
	uint64_t *off; /* one entry per byte, in write order */
	uint8_t *val;
	uint64_t n;
};

struct pend {
	uint64_t t;
	struct mop op; /* vm 0 until committed; a write's bytes come from parts then */
	struct mpart parts[PARTS];
	size_t nparts;
};

struct run {
	struct rng rng;
	struct fx *f;
	struct model m;
	uint32_t io[WRITERS + 1];
	struct pend pend[WRITERS * PENDING];
	size_t npend;
	uint64_t v;       /* the version server's counter */
	uint64_t pins[8]; /* versions pinned */
	size_t npins;
	struct tdl_dataloop *byte;
	uint64_t checks;
};

static uint64_t new_t(struct run *r, uint32_t *id)
{
	*id = 1 + (uint32_t)below(&r->rng, WRITERS);
	return ios_vlog_tver(*id, ++r->io[*id]);
}

static void keep(struct run *r, uint64_t t, const struct mop *op)
{
	assert_true(r->npend < WRITERS * PENDING);
	r->pend[r->npend++] = (struct pend){ .t = t, .op = *op };
}

static void drop_pend(struct run *r, size_t i, int free_op)
{
	if (free_op) {
		free(r->pend[i].op.off);
		free(r->pend[i].op.val);
	}
	for (size_t k = 0; free_op && k < r->pend[i].nparts; k++) {
		free(r->pend[i].parts[k].off);
		free(r->pend[i].parts[k].val);
	}
	r->pend[i] = r->pend[--r->npend];
}

/* Records a pending T holds in the log: a truncate, or its parts. */
static uint32_t pend_records(const struct pend *p)
{
	return p->op.trunc ? 1 : (uint32_t)p->nparts;
}

static int part_used(const struct pend *p, uint32_t part)
{
	for (size_t k = 0; k < p->nparts; k++)
		if (p->parts[k].part == part)
			return 1;
	return 0;
}

/* Where the next write goes: a new T, or (one time in three) another part
 * of a pending write that has room; *part is a number that T has not used
 * yet, so parts arrive out of order. */
static struct pend *write_target(struct run *r, uint32_t *part)
{
	size_t open[WRITERS * PENDING], k = 0;
	struct pend *p;
	uint32_t id;
	for (size_t i = 0; i < r->npend; i++)
		if (!r->pend[i].op.trunc && r->pend[i].nparts < PARTS)
			open[k++] = i;
	if (k && below(&r->rng, 3) == 0) {
		p = &r->pend[open[below(&r->rng, k)]];
	} else {
		assert_true(r->npend < WRITERS * PENDING);
		p = &r->pend[r->npend++];
		*p = (struct pend){ .t = new_t(r, &id) };
	}
	do
		*part = (uint32_t)below(&r->rng, PART_NUMS);
	while (part_used(p, *part));
	return p;
}

static uint64_t log_bytes(struct run *r)
{
	struct ios_vlog_stats st;
	ios_vlog_stats(r->f->log, &st);
	return st.log_bytes;
}

/* A write was accepted as part `part` of p: the model keeps its bytes. */
static void keep_part(struct pend *p, uint32_t part, const struct mop *bytes)
{
	p->parts[p->nparts++] = (struct mpart){ part, bytes->off, bytes->val, bytes->n };
}

static int cmp_part(const void *a, const void *b)
{
	const struct mpart *x = a, *y = b;
	return x->part < y->part ? -1 : x->part > y->part;
}

/* A committed write's bytes: its parts' in part order (later win). */
static void join_parts(struct pend *p)
{
	uint64_t n = 0;
	qsort(p->parts, p->nparts, sizeof(p->parts[0]), cmp_part);
	for (size_t k = 0; k < p->nparts; k++)
		n += p->parts[k].n;
	p->op.off = malloc((n ? n : 1) * sizeof(uint64_t));
	p->op.val = malloc(n ? n : 1);
	assert_true(p->op.off && p->op.val);
	for (size_t k = 0; k < p->nparts; k++) {
		memcpy(p->op.off + p->op.n, p->parts[k].off, p->parts[k].n * sizeof(uint64_t));
		memcpy(p->op.val + p->op.n, p->parts[k].val, p->parts[k].n);
		p->op.n += p->parts[k].n;
		free(p->parts[k].off);
		free(p->parts[k].val);
	}
	p->nparts = 0;
}

/* A list write: 1..8 pieces, overlapping at random, in random order. */
static void do_list_write(struct run *r)
{
	struct ios_piece p[8];
	uint8_t data[8 * 64];
	size_t n = 1 + below(&r->rng, 8), len = 0;
	struct mop op = { 0 };
	op.off = malloc(sizeof(data) * sizeof(uint64_t));
	op.val = malloc(sizeof(data));
	for (size_t i = 0; i < n; i++) {
		p[i].length = 1 + below(&r->rng, 64);
		p[i].offset = below(&r->rng, SPAN - p[i].length);
		for (uint64_t k = 0; k < p[i].length; k++, len++) {
			data[len] = (uint8_t)rnd(&r->rng);
			op.off[len] = p[i].offset + k;
			op.val[len] = data[len];
		}
	}
	op.n = len;
	uint32_t part;
	struct pend *w = write_target(r, &part);
	int rc = ios_vlog_write(r->f->log, w->t, part, p, n, data, len);
	if (rc)
		fail_msg("list write: %d %s", rc, ios_vlog_why(r->f->log));
	keep_part(w, part, &op);
	if (below(&r->rng, 4) == 0) { /* a resend: done, nothing appended */
		uint64_t before = log_bytes(r);
		assert_int_equal(ios_vlog_write(r->f->log, w->t, part, p, n, data, len), 0);
		assert_int_equal(log_bytes(r), before);
	}
}

/* A dataloop write: a vector over a 2-object layout, this object's slot. */
static void do_dataloop_write(struct run *r)
{
	struct tdl_layout lay = { 64, 2 };
	uint32_t slot = (uint32_t)below(&r->rng, 2), part;
	int64_t count = 1 + (int64_t)below(&r->rng, 16), bl = 1 + (int64_t)below(&r->rng, 24);
	int64_t stride = bl + (int64_t)below(&r->rng, 40), disp = (int64_t)below(&r->rng, 2048);
	struct tdl_dataloop *vec;
	struct mop op = { 0 };
	uint8_t data[16 * 24];
	assert_int_equal(tdl_vector(count, bl, stride, r->byte, &vec), 0);
	op.off = malloc(sizeof(data) * sizeof(uint64_t));
	op.val = malloc(sizeof(data));
	for (int64_t k = 0; k < count * bl; k++) { /* the stream, byte by byte */
		uint32_t s;
		uint64_t obj;
		tdl_layout_map(&lay, (uint64_t)(disp + k / bl * stride + k % bl), &s, &obj);
		if (s != slot)
			continue;
		op.off[op.n] = obj;
		op.val[op.n] = data[op.n] = (uint8_t)rnd(&r->rng);
		op.n++;
	}
	struct pend *w = write_target(r, &part);
	int rc = ios_vlog_write_dataloop(r->f->log, w->t, part, vec, 1, disp, 0,
					 (uint64_t)(count * bl), &lay, slot, data, op.n);
	/* (Nothing on this slot is a write of no pieces, still a version.) */
	if (rc)
		fail_msg("dataloop write: %d %s", rc, ios_vlog_why(r->f->log));
	keep_part(w, part, &op);
	if (below(&r->rng, 4) == 0) { /* a resend: done, nothing appended */
		uint64_t before = log_bytes(r);
		assert_int_equal(ios_vlog_write_dataloop(r->f->log, w->t, part, vec, 1, disp, 0,
							 (uint64_t)(count * bl), &lay, slot, data,
							 op.n), 0);
		assert_int_equal(log_bytes(r), before);
	}
	tdl_free(vec);
}

static void do_truncate(struct run *r)
{
	uint32_t id;
	uint64_t t = new_t(r, &id);
	struct mop op = { .trunc = 1, .size = below(&r->rng, SPAN) };
	assert_int_equal(ios_vlog_truncate(r->f->log, t, op.size), 0);
	keep(r, t, &op);
}

static void do_commit(struct run *r)
{
	if (!r->npend)
		return;
	size_t i = below(&r->rng, r->npend);
	r->v += 1 + below(&r->rng, 2); /* some versions are other objects' */
	assert_int_equal(ios_vlog_commit(r->f->log, r->pend[i].t, r->v), 0);
	/* A resend is harmless. */
	if (below(&r->rng, 4) == 0)
		assert_int_equal(ios_vlog_commit(r->f->log, r->pend[i].t, r->v), 0);
	if (!r->pend[i].op.trunc)
		join_parts(&r->pend[i]);
	r->pend[i].op.vm = r->v;
	model_commit(&r->m, &r->pend[i].op);
	drop_pend(r, i, 0);
}

static void do_abort(struct run *r)
{
	if (!r->npend)
		return;
	size_t i = below(&r->rng, r->npend);
	assert_int_equal(ios_vlog_abort(r->f->log, r->pend[i].t), 0);
	drop_pend(r, i, 1);
}

/* A writer's lease ended: its uncommitted records go. */
static void do_discard(struct run *r)
{
	uint32_t id = 1 + (uint32_t)below(&r->rng, WRITERS), n, want = 0;
	for (size_t i = 0; i < r->npend;)
		if (ios_vlog_id(r->pend[i].t) == id) {
			want += pend_records(&r->pend[i]); /* each part counts */
			drop_pend(r, i, 1);
		} else {
			i++;
		}
	assert_int_equal(ios_vlog_discard(r->f->log, id, &n), 0);
	assert_int_equal(n, want);
}

static uint64_t merged(struct run *r)
{
	struct ios_vlog_stats st;
	ios_vlog_stats(r->f->log, &st);
	return st.merged;
}

/* A read version the log can serve: from the merged version to now. */
static uint64_t some_version(struct run *r)
{
	uint64_t lo = merged(r);
	return lo + below(&r->rng, r->v - lo + 1);
}

static void check_read_at(struct run *r, uint64_t ver)
{
	struct ios_piece p[4];
	uint8_t got[4 * 512];
	uint64_t size, pos = 0;
	size_t n = 1 + below(&r->rng, 4);
	for (size_t i = 0; i < n; i++) {
		p[i].length = 1 + below(&r->rng, 512);
		p[i].offset = below(&r->rng, SPAN + 256);
	}
	int rc = ios_vlog_read(r->f->log, ver, p, n, got, &size);
	if (rc)
		fail_msg("read at %llu: %d %s", (unsigned long long)ver, rc,
			 ios_vlog_why(r->f->log));
	model_at(&r->m, ver);
	assert_int_equal(size, r->m.size);
	for (size_t i = 0; i < n; pos += p[i].length, i++)
		if (memcmp(got + pos, r->m.img + p[i].offset, p[i].length))
			fail_msg("read at version %llu of [%llu, +%llu) differs from the model",
				 (unsigned long long)ver, (unsigned long long)p[i].offset,
				 (unsigned long long)p[i].length);
	r->checks++;
}

static void do_read(struct run *r)
{
	check_read_at(r, some_version(r));
}

static void do_pin(struct run *r)
{
	if (r->npins && below(&r->rng, 2)) {
		size_t i = below(&r->rng, r->npins);
		assert_int_equal(ios_vlog_unpin(r->f->log, r->pins[i]), 0);
		r->pins[i] = r->pins[--r->npins];
	} else if (r->npins < 8) {
		uint64_t ver = some_version(r);
		assert_int_equal(ios_vlog_pin(r->f->log, ver), 0);
		r->pins[r->npins++] = ver;
	}
}

static void do_merge(struct run *r)
{
	uint64_t upto = some_version(r), want = upto, got;
	for (size_t i = 0; i < r->npins; i++)
		want = r->pins[i] < want ? r->pins[i] : want;
	want = want > merged(r) ? want : merged(r);
	/* Sometimes the base fails part-way: the restart finishes the merge. */
	int fault = below(&r->rng, 5) == 0;
	r->f->base.writes_left = fault ? (int)below(&r->rng, 3) : -1;
	int rc = ios_vlog_merge(r->f->log, upto, &got);
	r->f->base.writes_left = -1;
	if (rc && fault) {
		assert_int_equal(rc, -EIO);
		r->npins = 0;
		reopen(r->f);
		got = merged(r);
	} else if (rc)
		fail_msg("merge to %llu: %d %s", (unsigned long long)upto, rc,
			 ios_vlog_why(r->f->log));
	assert_int_equal(got, want);
	/* Every pinned read still gets its version. */
	for (size_t i = 0; i < r->npins; i++)
		check_read_at(r, r->pins[i]);
}

/* A restart: pins are gone (reads do not survive one), uncommitted
 * records stay. */
static void do_reopen(struct run *r)
{
	r->npins = 0;
	ios_vlog_close(r->f->log);
	r->f->log = NULL;
	if (below(&r->rng, 3) == 0) { /* a torn append: garbage at the end */
		uint8_t junk[100];
		size_t n = 1 + below(&r->rng, sizeof(junk));
		for (size_t i = 0; i < n; i++)
			junk[i] = (uint8_t)rnd(&r->rng);
		int fd = open(r->f->path, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, junk, n), (ssize_t)n);
		close(fd);
	}
	open_log(r->f);
}

static void random_run(struct fx *f, uint64_t seed, int steps)
{
	struct run r = { .rng = { seed }, .f = f };
	assert_int_equal(tdl_bytes(1, &r.byte), 0);
	open_log(f);
	for (int s = 0; s < steps; s++) {
		uint64_t a = below(&r.rng, 100);
		if (a < 16 && r.npend < WRITERS * PENDING)
			do_list_write(&r);
		else if (a < 24 && r.npend < WRITERS * PENDING)
			do_dataloop_write(&r);
		else if (a < 28 && r.npend < WRITERS * PENDING)
			do_truncate(&r);
		else if (a < 48)
			do_commit(&r);
		else if (a < 52)
			do_abort(&r);
		else if (a < 54)
			do_discard(&r);
		else if (a < 80)
			do_read(&r);
		else if (a < 86)
			do_pin(&r);
		else if (a < 95)
			do_merge(&r);
		else
			do_reopen(&r);
	}
	/* Everything committed, merged, then read back from the base alone. */
	while (r.npend)
		do_commit(&r);
	r.npins = 0;
	reopen(f);
	assert_int_equal(ios_vlog_merge(f->log, r.v, NULL), 0);
	model_at(&r.m, r.v);
	assert_int_equal(f->base.size, r.m.size);
	assert_memory_equal(f->base.buf, r.m.img, r.m.size);
	struct ios_vlog_stats st;
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.committed + st.uncommitted, 0);
	assert_int_equal(st.log_bytes, 64); /* a fresh log: BASE alone */
	assert_true(r.checks > (uint64_t)steps / 5);
	tdl_free(r.byte);
	model_free(&r.m);
}

/* Random runs: 40 (2 s); 6 under AddressSanitizer, where each costs 20
 * times as much (make check runs every unit test under it too, and 40
 * took 144 s there). TESSERA_VLOG_RUNS sets any number, for a longer
 * search. */
#if defined(__SANITIZE_ADDRESS__)
#define VLOG_RUNS 6
#else
#define VLOG_RUNS 40
#endif

static void test_random(void **state)
{
	struct fx *f = *state;
	const char *env = getenv("TESSERA_VLOG_RUNS");
	uint64_t runs = env ? strtoull(env, NULL, 10) : VLOG_RUNS;

	for (uint64_t seed = 1; seed <= runs; seed++) {
		random_run(f, seed * 0x9e3779b97f4a7c15ull, 1000);
		ios_vlog_close(f->log);
		f->log = NULL;
		unlink(f->path);
		memset(&f->base, 0, sizeof(f->base));
		f->base.writes_left = -1;
	}
}

/* The same with every record synced as the daemon does. */
static void test_random_synced(void **state)
{
	struct fx *f = *state;
	f->cfg.durability = IOS_VLOG_SYNC_EACH;
	random_run(f, 77, 300);
}

/* ------------------------------------------------------------ fixed cases */

static void put(struct fx *f, uint64_t t, uint64_t off, uint64_t len, uint8_t fill)
{
	uint8_t data[4096];
	struct ios_piece p = { off, len };
	memset(data, fill, len);
	int rc = ios_vlog_write(f->log, t, 0, &p, 1, data, len);
	if (rc)
		fail_msg("write: %d %s", rc, ios_vlog_why(f->log));
}

static void put_part(struct fx *f, uint64_t t, uint32_t part, uint64_t off, uint64_t len,
		     uint8_t fill)
{
	uint8_t data[4096];
	struct ios_piece p = { off, len };
	memset(data, fill, len);
	int rc = ios_vlog_write(f->log, t, part, &p, 1, data, len);
	if (rc)
		fail_msg("write of part %u: %d %s", part, rc, ios_vlog_why(f->log));
}

static uint8_t byte_at(struct fx *f, uint64_t r, uint64_t off)
{
	uint8_t b;
	struct ios_piece p = { off, 1 };
	assert_int_equal(ios_vlog_read(f->log, r, &p, 1, &b, NULL), 0);
	return b;
}

#define T(id, io) ios_vlog_tver(id, io)

/* Order is commit order, not write order; uncommitted is invisible. */
static void test_commit_order(void **state)
{
	struct fx *f = *state;
	open_log(f);
	put(f, T(1, 0), 0, 10, 'a');
	put(f, T(2, 0), 5, 10, 'b');
	assert_int_equal(byte_at(f, 100, 7), 0);
	assert_int_equal(ios_vlog_commit(f->log, T(2, 0), 1), 0);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 0), 2), 0);
	assert_int_equal(byte_at(f, 1, 7), 'b');
	assert_int_equal(byte_at(f, 1, 2), 0);
	assert_int_equal(byte_at(f, 2, 7), 'a');
	assert_int_equal(byte_at(f, 2, 12), 'b');
}

/* Bad calls are refused and change nothing. */
static void test_refusals(void **state)
{
	struct fx *f = *state;
	uint8_t d[16] = { 0 };
	struct ios_piece zero = { 5, 0 }, wrap = { UINT64_MAX - 2, 8 }, past = { INT64_MAX, 1 };
	struct ios_piece ok = { 0, 8 };
	open_log(f);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &zero, 1, d, 0), -EINVAL);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &wrap, 1, d, 8), -EINVAL);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &past, 1, d, 1), -EINVAL);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &ok, 1, d, 9), -EINVAL);
	assert_int_equal(ios_vlog_write(f->log, 0, 0, &ok, 1, d, 8), -EINVAL);
	assert_int_equal(ios_vlog_truncate(f->log, T(1, 1), (uint64_t)INT64_MAX + 1), -EINVAL);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &ok, 1, d, 8), 0);
	/* (T, part) in use: the same record again is a resend (test_parts),
	 * other pieces under its name are refused; a truncate needs a T of
	 * its own. */
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &wrap, 1, d, 8), -EINVAL);
	assert_int_equal(ios_vlog_truncate(f->log, T(1, 1), 4), -EINVAL);
	put(f, T(1, 2), 0, 4, 'x');
	assert_int_equal(ios_vlog_commit(f->log, T(9, 9), 1), -ENOENT);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 0), -EINVAL);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 3), 0);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 4), -EEXIST); /* T is 3 */
	assert_int_equal(ios_vlog_commit(f->log, T(1, 2), 3), -EEXIST); /* 3 is T(1,1) */
	assert_int_equal(ios_vlog_abort(f->log, T(1, 1)), -EBUSY);
	assert_int_equal(ios_vlog_abort(f->log, T(7, 1)), -ENOENT);
	assert_int_equal(ios_vlog_merge(f->log, 5, NULL), 0);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 2), 4), -ESTALE); /* too late */
	assert_int_equal(ios_vlog_read(f->log, 4, &ok, 1, d, NULL), -ESTALE);
	assert_int_equal(ios_vlog_pin(f->log, 4), -ESTALE);
	assert_int_equal(ios_vlog_unpin(f->log, 9), -ENOENT);
	assert_int_equal(ios_vlog_read(f->log, 5, &ok, 1, d, NULL), 0);
	assert_memory_equal(d, "\0\0\0\0\0\0\0\0", 8);
}

/* One T in several parts: invisible until its commit, then all of it at
 * its version, later parts over earlier ones whatever order they came in;
 * a resent part is done without a second record, also after the commit
 * (a late resend never lands over a later part); a new part after the
 * commit, other pieces under a part's name, a truncate under the T are
 * refused; a restart replays the parts together; abort and discard take
 * every part. */
static void test_parts(void **state)
{
	struct fx *f = *state;
	struct ios_vlog_stats st;
	struct ios_piece p1 = { 4, 8 }, other = { 5, 8 };
	uint8_t d[8];
	uint32_t n;
	open_log(f);
	put_part(f, T(1, 1), 0, 0, 10, 'a');
	put_part(f, T(1, 1), 2, 8, 8, 'c');
	put_part(f, T(1, 1), 1, 4, 8, 'b'); /* part 1 arrives last */
	put(f, T(2, 1), 0, 20, 'z');
	assert_int_equal(ios_vlog_commit(f->log, T(2, 1), 1), 0);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.uncommitted, 3); /* each part is a record */
	assert_int_equal(byte_at(f, 9, 0), 'z'); /* none of T(1,1) yet */
	assert_int_equal(byte_at(f, 9, 9), 'z');
	/* A resend of part 1 (its first reply lost): done, no record. */
	uint64_t bytes = st.log_bytes;
	memset(d, 'b', 8);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 1, &p1, 1, d, 8), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 1, &other, 1, d, 8), -EINVAL);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.log_bytes, bytes);
	assert_int_equal(st.uncommitted, 3);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 2), 0);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.committed, 4);
	assert_int_equal(st.index_pieces, 4);
	/* All three parts at version 2, in part order: a[0,4), b[4,8)
	 * (part 2 covers the rest of part 1), c[8,16), z past. */
	const char want[] = "aaaabbbbccccccccz";
	for (uint64_t i = 0; i < 17; i++)
		assert_int_equal(byte_at(f, 2, i), want[i]);
	assert_int_equal(byte_at(f, 1, 5), 'z');
	/* A late resend of part 0 after the commit lands nowhere (part 1
	 * still wins where they overlap); a new part, a truncate under T and
	 * its abort are refused. */
	memset(d, 'a', 8);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &(struct ios_piece){ 0, 8 }, 1, d, 8),
			 -EINVAL); /* not part 0's pieces: refused, not a resend */
	put_part(f, T(1, 1), 0, 0, 10, 'a');
	assert_int_equal(byte_at(f, 2, 5), 'b');
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.log_bytes, bytes + 64); /* only the COMMIT since */
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 3, &p1, 1, d, 8), -EINVAL);
	assert_int_equal(ios_vlog_truncate(f->log, T(1, 1), 3), -EINVAL);
	assert_int_equal(ios_vlog_abort(f->log, T(1, 1)), -EBUSY);
	/* A restart replays the parts as one version. */
	reopen(f);
	for (uint64_t i = 0; i < 17; i++)
		assert_int_equal(byte_at(f, 2, i), want[i]);
	/* Abort and discard take every part of a T; so does a replay. */
	put_part(f, T(3, 1), 0, 0, 4, 'q');
	put_part(f, T(3, 1), 1, 100, 4, 'q');
	put_part(f, T(4, 1), 5, 0, 4, 'r');
	put_part(f, T(4, 1), 6, 200, 4, 'r');
	put_part(f, T(4, 1), 7, 300, 4, 'r');
	assert_int_equal(ios_vlog_abort(f->log, T(3, 1)), 0);
	assert_int_equal(ios_vlog_discard(f->log, 4, &n), 0);
	assert_int_equal(n, 3);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.uncommitted, 0);
	reopen(f);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.uncommitted, 0);
	assert_int_equal(ios_vlog_commit(f->log, T(3, 1), 3), -ENOENT);
	/* The merge applies the parts in part order too. */
	assert_int_equal(ios_vlog_merge(f->log, 2, NULL), 0);
	assert_memory_equal(f->base.buf, want, 17);
}

/* The limits count each part as a record, and a T whose parts can
 * never be live together is -ENOSPC (not -EBUSY: a merge would not
 * help), while one that fits an empty log is -EBUSY when the log is
 * full now. */
static void test_part_limits(void **state)
{
	struct fx *f = *state;
	uint8_t d[1000] = { 0 };
	struct ios_piece p = { 0, 1000 };
	f->cfg.limits = (struct ios_vlog_limits){ .max_records = 4, .max_bytes = 4096 };
	open_log(f);
	/* T(1,1): 3 parts of 1000 bytes fit (1080 each + 7 headers + BASE). */
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(ios_vlog_write(f->log, T(1, 1), i, &p, 1, d, 1000), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 3, &p, 1, d, 1000), -ENOSPC);
	assert_non_null(strstr(ios_vlog_why(f->log), "can never be one version"));
	assert_int_equal(ios_vlog_abort(f->log, T(1, 1)), 0);
	assert_int_equal(ios_vlog_merge(f->log, 0, NULL), 0); /* a fresh log */
	/* Records: 4 parts of 1 byte, then a fifth can never fit. */
	struct ios_piece one = { 0, 1 };
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(ios_vlog_write(f->log, T(2, 1), i, &one, 1, d, 1), 0);
	assert_int_equal(ios_vlog_write(f->log, T(2, 1), 4, &one, 1, d, 1), -ENOSPC);
	/* Another T when T(2,1) fills the log: busy now, not never. */
	assert_int_equal(ios_vlog_write(f->log, T(3, 1), 0, &one, 1, d, 1), -EBUSY);
	assert_int_equal(ios_vlog_commit(f->log, T(2, 1), 1), 0);
	assert_int_equal(ios_vlog_merge(f->log, 1, NULL), 0);
	assert_int_equal(ios_vlog_write(f->log, T(3, 1), 0, &one, 1, d, 1), 0);
	/* Pieces over T's parts. */
	f->cfg.limits.max_live_pieces = 3;
	reopen(f);
	struct ios_piece three[3] = { { 0, 1 }, { 4, 1 }, { 8, 1 } };
	assert_int_equal(ios_vlog_write(f->log, T(4, 1), 0, three, 3, d, 3), -EBUSY);
	assert_int_equal(ios_vlog_abort(f->log, T(3, 1)), 0);
	assert_int_equal(ios_vlog_write(f->log, T(4, 1), 0, three, 3, d, 3), 0);
	assert_int_equal(ios_vlog_write(f->log, T(4, 1), 1, &one, 1, d, 1), -ENOSPC);
}

/* Record, byte and piece limits: -EBUSY until a merge, -ENOSPC never. */
static void test_limits(void **state)
{
	struct fx *f = *state;
	uint8_t d[8192] = { 0 };
	struct ios_piece many[5] = { { 0, 1 }, { 2, 1 }, { 4, 1 }, { 6, 1 }, { 8, 1 } };
	struct ios_piece big = { 0, 8192 };
	f->cfg.limits = (struct ios_vlog_limits){ .max_records = 3, .max_pieces = 4,
						  .max_bytes = 4096 };
	open_log(f);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, many, 5, d, 5), -ENOSPC);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, &big, 1, d, 8192), -ENOSPC);
	for (uint32_t i = 1; i <= 3; i++)
		put(f, T(1, i), i, 8, (uint8_t)i);
	assert_int_equal(ios_vlog_write(f->log, T(1, 4), 0, many, 4, d, 4), -EBUSY);
	assert_string_not_equal(ios_vlog_why(f->log), "");
	for (uint32_t i = 1; i <= 3; i++)
		assert_int_equal(ios_vlog_commit(f->log, T(1, i), i), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 4), 0, many, 4, d, 4), -EBUSY);
	assert_int_equal(ios_vlog_merge(f->log, 3, NULL), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 4), 0, many, 4, d, 4), 0);
	/* Bytes: a 3 KiB record fits once, not twice. */
	struct ios_piece k3 = { 100, 3000 };
	assert_int_equal(ios_vlog_abort(f->log, T(1, 4)), 0);
	assert_int_equal(ios_vlog_merge(f->log, 3, NULL), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 5), 0, &k3, 1, d, 3000), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 6), 0, &k3, 1, d, 3000), -EBUSY);
}

/* The index's size: pieces of all live records. */
static void test_live_pieces(void **state)
{
	struct fx *f = *state;
	uint8_t d[4] = { 0 };
	struct ios_piece p[4] = { { 0, 1 }, { 2, 1 }, { 4, 1 }, { 6, 1 } };
	f->cfg.limits.max_live_pieces = 6;
	open_log(f);
	assert_int_equal(ios_vlog_write(f->log, T(1, 1), 0, p, 4, d, 4), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 2), 0, p, 4, d, 4), -EBUSY);
	assert_int_equal(ios_vlog_write(f->log, T(1, 2), 0, p, 2, d, 2), 0);
	assert_int_equal(ios_vlog_abort(f->log, T(1, 1)), 0);
	assert_int_equal(ios_vlog_write(f->log, T(1, 3), 0, p, 4, d, 4), 0);
	f->cfg.limits.max_live_pieces = 3;
	reopen(f); /* a lower limit: what is there stays */
	assert_int_equal(ios_vlog_write(f->log, T(1, 4), 0, p, 4, d, 4), -ENOSPC);
	assert_int_equal(ios_vlog_write(f->log, T(1, 4), 0, p, 1, d, 1), -EBUSY);
}

/* A disk whose fdatasync fails on demand (the fault disk leaves logs be). */
struct sdisk {
	struct ios_disk d;
	struct ios_disk *in;
	int fail_sync;
};
#define IN(x) (((struct sdisk *)(x))->in)
static int sd_open(struct ios_disk *d, uint64_t h, enum ios_file f, const char *p, int fl, mode_t m)
{
	return IN(d)->ops->open(IN(d), h, f, p, fl, m);
}
static int sd_close(struct ios_disk *d, int fd)
{
	return IN(d)->ops->close(IN(d), fd);
}
static ssize_t sd_preadv(struct ios_disk *d, int fd, const struct iovec *v, int n, off_t o)
{
	return IN(d)->ops->preadv(IN(d), fd, v, n, o);
}
static ssize_t sd_pwritev(struct ios_disk *d, int fd, const struct iovec *v, int n, off_t o)
{
	return IN(d)->ops->pwritev(IN(d), fd, v, n, o);
}
static int sd_fstat(struct ios_disk *d, int fd, struct stat *sb)
{
	return IN(d)->ops->fstat(IN(d), fd, sb);
}
static int sd_ftruncate(struct ios_disk *d, int fd, off_t size)
{
	return IN(d)->ops->ftruncate(IN(d), fd, size);
}
static int sd_fdatasync(struct ios_disk *d, int fd)
{
	return ((struct sdisk *)d)->fail_sync ? -EIO : IN(d)->ops->fdatasync(IN(d), fd);
}
static int sd_syncdir(struct ios_disk *d, const char *p)
{
	return IN(d)->ops->syncdir(IN(d), p);
}
static int sd_rename(struct ios_disk *d, const char *a, const char *b, enum ios_rename how)
{
	return IN(d)->ops->rename(IN(d), a, b, how);
}
static const struct ios_disk_ops sd_ops = {
	.size = sizeof(struct ios_disk_ops), .open = sd_open, .close = sd_close,
	.preadv = sd_preadv, .pwritev = sd_pwritev, .fstat = sd_fstat,
	.ftruncate = sd_ftruncate, .fdatasync = sd_fdatasync, .syncdir = sd_syncdir,
	.rename = sd_rename,
};

/* A record whose sync fails is not kept, on disk either: the same T may
 * be sent again, and the log still opens. */
static void test_sync_fails(void **state)
{
	struct fx *f = *state;
	static struct sdisk sd; /* outlives a failed assertion: teardown closes through it */
	sd = (struct sdisk){ { &sd_ops }, f->disk, 0 };
	f->cfg.disk = &sd.d;
	f->cfg.durability = IOS_VLOG_SYNC_EACH;
	open_log(f);
	put(f, T(1, 1), 0, 8, 'a');
	sd.fail_sync = 1;
	uint8_t d[8] = { 0 };
	struct ios_piece p = { 0, 8 };
	assert_int_equal(ios_vlog_write(f->log, T(1, 2), 0, &p, 1, d, 8), -EIO);
	sd.fail_sync = 0;
	put(f, T(1, 2), 0, 8, 'b');
	assert_int_equal(ios_vlog_commit(f->log, T(1, 2), 1), 0);
	reopen(f);
	assert_int_equal(byte_at(f, 1, 3), 'b');
	ios_vlog_close(f->log);
	f->log = NULL;
}

/* A merge stops at the lowest pinned read version. */
static void test_pin_holds_merge(void **state)
{
	struct fx *f = *state;
	uint64_t m;
	open_log(f);
	put(f, T(1, 1), 0, 4, 'a');
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 1), 0);
	assert_int_equal(ios_vlog_pin(f->log, 1), 0);
	put(f, T(1, 2), 0, 4, 'b');
	assert_int_equal(ios_vlog_commit(f->log, T(1, 2), 2), 0);
	assert_int_equal(ios_vlog_merge(f->log, 2, &m), 0);
	assert_int_equal(m, 1);
	assert_int_equal(byte_at(f, 1, 0), 'a');
	assert_int_equal(f->base.buf[0], 'a');
	assert_int_equal(ios_vlog_unpin(f->log, 1), 0);
	assert_int_equal(ios_vlog_merge(f->log, 2, &m), 0);
	assert_int_equal(m, 2);
	assert_int_equal(f->base.buf[0], 'b');
}

/* A merge grant's discard: uncommitted records of IDs below next_id
 * that are not live go; committed ones, live IDs' and newer IDs' stay. */
static void test_discard_dead(void **state)
{
	struct fx *f = *state;
	const uint32_t live[] = { 3 };
	struct ios_vlog_stats st;
	uint32_t n = 99;
	open_log(f);
	put(f, T(1, 1), 0, 4, 'a');  /* dead, uncommitted: goes */
	put(f, T(1, 2), 4, 4, 'b');  /* dead, committed: stays */
	put(f, T(2, 1), 8, 4, 'c');  /* dead, uncommitted: goes */
	put(f, T(3, 1), 12, 4, 'd'); /* live: stays */
	put(f, T(5, 1), 16, 4, 'e'); /* at or past next_id: stays */
	assert_int_equal(ios_vlog_commit(f->log, T(1, 2), 1), 0);
	assert_int_equal(ios_vlog_discard_dead(f->log, 5, live, 1, &n), 0);
	assert_int_equal(n, 2);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.uncommitted, 2);
	assert_int_equal(st.committed, 1);
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 2), -ENOENT);
	assert_int_equal(ios_vlog_commit(f->log, T(2, 1), 2), -ENOENT);
	assert_int_equal(ios_vlog_commit(f->log, T(3, 1), 2), 0);
	assert_int_equal(ios_vlog_commit(f->log, T(5, 1), 3), 0);
	assert_int_equal(byte_at(f, 3, 0), 0);
	assert_int_equal(byte_at(f, 3, 4), 'b');
	assert_int_equal(byte_at(f, 3, 12), 'd');
	assert_int_equal(byte_at(f, 3, 16), 'e');
	/* Again: nothing more to drop; no live IDs at all drops nothing
	 * committed. */
	assert_int_equal(ios_vlog_discard_dead(f->log, 9, NULL, 0, &n), 0);
	assert_int_equal(n, 0);
}

static uint64_t file_size(const char *path)
{
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	return (uint64_t)sb.st_size;
}

/* A torn or garbled last record is cut; what was before is intact. */
static void test_torn_tail(void **state)
{
	struct fx *f = *state;
	struct ios_vlog_stats st;
	open_log(f);
	put(f, T(1, 1), 10, 20, 'a');
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 1), 0);
	put(f, T(2, 1), 15, 20, 'b'); /* the victim: uncommitted, last */
	ios_vlog_close(f->log);
	f->log = NULL;
	uint64_t size = file_size(f->path);
	assert_int_equal(truncate(f->path, (off_t)(size - 7)), 0);
	open_log(f);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.cut_bytes, 64 + 16 + 20 - 7);
	assert_int_equal(st.uncommitted, 0);
	assert_int_equal(st.committed, 1);
	assert_int_equal(byte_at(f, 1, 20), 'a');
	assert_int_equal(ios_vlog_commit(f->log, T(2, 1), 2), -ENOENT);
	/* Garbage appended after a good log: cut as well. */
	put(f, T(2, 2), 15, 20, 'c');
	assert_int_equal(ios_vlog_commit(f->log, T(2, 2), 2), 0);
	ios_vlog_close(f->log);
	f->log = NULL;
	int fd = open(f->path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "TVLRgarbage-garbage-garbage", 27), 27);
	close(fd);
	open_log(f);
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.cut_bytes, 27);
	assert_int_equal(byte_at(f, 2, 20), 'c');
	assert_int_equal(byte_at(f, 2, 12), 'a');
	assert_int_equal(byte_at(f, 1, 20), 'a');
}

/* A merge whose base writes fail part-way leaves the log unusable until
 * reopened; reopening finishes the merge. */
static void test_merge_cut_short(void **state)
{
	struct fx *f = *state;
	uint8_t d[4];
	open_log(f);
	put(f, T(1, 1), 0, 100, 'a');
	put(f, T(1, 2), 5000, 100, 'b'); /* apart: two base writes */
	put(f, T(1, 3), 50, 10, 'c');
	assert_int_equal(ios_vlog_truncate(f->log, T(1, 4), 5050), 0);
	for (uint32_t i = 1; i <= 4; i++)
		assert_int_equal(ios_vlog_commit(f->log, T(1, i), i), 0);
	f->base.writes_left = 1;
	assert_int_equal(ios_vlog_merge(f->log, 4, NULL), -EIO);
	struct ios_piece p = { 0, 4 };
	assert_int_equal(ios_vlog_read(f->log, 4, &p, 1, d, NULL), -EIO);
	f->base.writes_left = -1;
	reopen(f);
	struct ios_vlog_stats st;
	ios_vlog_stats(f->log, &st);
	assert_int_equal(st.merged, 4);
	assert_int_equal(f->base.size, 5050);
	assert_int_equal(f->base.buf[55], 'c');
	assert_int_equal(f->base.buf[99], 'a');
	assert_int_equal(f->base.buf[150], 0);
	assert_int_equal(f->base.buf[5049], 'b');
}

/* ------------------------------------------------------------ hostile log */

struct rawhdr {
	uint32_t magic, kind;
	uint64_t total, t, vm, count, data_len, arg;
	uint32_t crc, part;
};

/* Appends a record with a right checksum, whatever it says. */
static void raw(const char *path, struct rawhdr h, const void *pieces, size_t plen,
		const void *data, size_t dlen)
{
	h.magic = 0x524c5654u;
	h.total = sizeof(h) + plen + dlen;
	h.crc = 0;
	uint32_t crc = tp_crc32c(0, &h, sizeof(h));
	crc = tp_crc32c(crc, pieces, plen);
	h.crc = tp_crc32c(crc, data, dlen);
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	if (plen)
		assert_int_equal(write(fd, pieces, plen), (ssize_t)plen);
	if (dlen)
		assert_int_equal(write(fd, data, dlen), (ssize_t)dlen);
	close(fd);
}

enum { K_BASE = 1, K_WRITE, K_TRUNC, K_COMMIT, K_ABORT, K_MERGING, K_MERGED };

/* The log as it is, then the hostile record: the open must refuse it
 * (-EIO, saying where), not crash or lose. */
static void refuse_appended(struct fx *f, struct rawhdr h, const void *pieces, size_t plen,
			    const void *data, size_t dlen)
{
	ios_vlog_close(f->log);
	f->log = NULL;
	raw(f->path, h, pieces, plen, data, dlen);
	assert_int_equal(ios_vlog_open(&f->cfg, &f->log), -EIO);
	assert_non_null(strstr(ios_vlog_why(f->log), "record at"));
	ios_vlog_close(f->log);
	f->log = NULL;
	unlink(f->path);
}

/* After a fresh log holding one committed write. */
static void expect_refused(struct fx *f, struct rawhdr h, const void *pieces, size_t plen,
			   const void *data, size_t dlen)
{
	open_log(f);
	put(f, T(1, 1), 0, 8, 'a');
	assert_int_equal(ios_vlog_commit(f->log, T(1, 1), 1), 0);
	refuse_appended(f, h, pieces, plen, data, dlen);
}

/* The same after an uncommitted record (T t, part 4) in the log. */
static void expect_refused_after(struct fx *f, uint64_t t, struct rawhdr h, const void *pieces,
				 size_t plen, const void *data, size_t dlen)
{
	open_log(f);
	put_part(f, t, 4, 0, 8, 'b');
	refuse_appended(f, h, pieces, plen, data, dlen);
}

static void test_hostile_records(void **state)
{
	struct fx *f = *state;
	uint8_t d[32] = { 0 };
	struct ios_piece wrap[1] = { { UINT64_MAX - 3, 8 } };
	struct ios_piece two[2] = { { 0, 8 }, { 16, 8 } };
	struct ios_piece empty[1] = { { 7, 0 } };
	/* Huge count (the total disagrees, the checksum is right). */
	expect_refused(f, (struct rawhdr){ .kind = K_WRITE, .t = T(2, 1), .count = 1ull << 40,
					   .data_len = 8 }, two, 16, d, 8);
	/* A count just past the limit, consistent with the total. */
	f->cfg.limits.max_pieces = 1;
	expect_refused(f, (struct rawhdr){ .kind = K_WRITE, .t = T(2, 1), .count = 2,
					   .data_len = 16 }, two, 32, d, 16);
	f->cfg.limits.max_pieces = 0;
	/* Offsets that overflow; an empty piece. */
	expect_refused(f, (struct rawhdr){ .kind = K_WRITE, .t = T(2, 1), .count = 1,
					   .data_len = 8 }, wrap, 16, d, 8);
	expect_refused(f, (struct rawhdr){ .kind = K_WRITE, .t = T(2, 1), .count = 1,
					   .data_len = 0 }, empty, 16, NULL, 0);
	/* Data that does not match the pieces. */
	expect_refused(f, (struct rawhdr){ .kind = K_WRITE, .t = T(2, 1), .count = 2,
					   .data_len = 12 }, two, 32, d, 12);
	/* A commit of nothing, a second BASE, an unknown kind, a forged
	 * version, a truncate past 2^63. */
	expect_refused(f, (struct rawhdr){ .kind = K_COMMIT, .t = T(5, 5), .vm = 9 }, NULL, 0,
		       NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_BASE }, NULL, 0, NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = 99 }, NULL, 0, NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_MERGED, .vm = 0 }, NULL, 0, NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_MERGING, .vm = 0 }, NULL, 0, NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_MERGED, .vm = 5, .arg = UINT64_MAX },
		       NULL, 0, NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_TRUNC, .t = T(1, 1) }, NULL, 0, NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_TRUNC, .t = T(3, 1),
					   .arg = (uint64_t)INT64_MAX + 1 }, NULL, 0, NULL, 0);
	/* Parts: a part of a committed T, one twice, a truncate or a
	 * commit with a part number. */
	expect_refused(f, (struct rawhdr){ .kind = K_WRITE, .t = T(1, 1), .part = 1, .count = 1,
					   .data_len = 8 }, two, 16, d, 8);
	expect_refused_after(f, T(2, 1), (struct rawhdr){ .kind = K_WRITE, .t = T(2, 1), .part = 4,
							 .count = 1, .data_len = 8 }, two, 16, d, 8);
	expect_refused(f, (struct rawhdr){ .kind = K_TRUNC, .t = T(3, 1), .part = 1 }, NULL, 0,
		       NULL, 0);
	expect_refused(f, (struct rawhdr){ .kind = K_COMMIT, .t = T(1, 1), .vm = 1, .part = 2 },
		       NULL, 0, NULL, 0);
}

/* A log file holding BASE of format `format` alone (as written by the
 * code of that format). */
static void raw_base(const char *path, uint64_t format)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	close(fd);
	raw(path, (struct rawhdr){ .kind = K_BASE, .t = format }, NULL, 0, NULL, 0);
}

/* Format 1 logs (BASE's t 0, no parts) are read as they were; a format
 * this code does not know fails the open, naming it; fresh logs are
 * format 2. */
static void test_formats(void **state)
{
	struct fx *f = *state;
	struct ios_piece p = { 2, 3 };
	uint64_t t = T(1, 1);
	open_log(f); /* a fresh log: BASE alone */
	ios_vlog_close(f->log);
	f->log = NULL;
	struct rawhdr_base {
		uint32_t magic, kind;
		uint64_t total, t;
	} b;
	int fd = open(f->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &b, sizeof(b)), (ssize_t)sizeof(b));
	close(fd);
	assert_int_equal(b.t, 2);
	unlink(f->path);
	/* A format 1 log as the earlier code wrote it. */
	raw_base(f->path, 0);
	raw(f->path, (struct rawhdr){ .kind = 2, .t = t, .count = 1, .data_len = 3, .arg = 5 }, &p,
	    16, "xyz", 3);
	raw(f->path, (struct rawhdr){ .kind = 4, .t = t, .vm = 1 }, NULL, 0, NULL, 0);
	open_log(f);
	assert_int_equal(byte_at(f, 1, 3), 'y');
	put_part(f, T(1, 2), 1, 0, 2, 'p'); /* parts go on in it */
	assert_int_equal(ios_vlog_commit(f->log, T(1, 2), 2), 0);
	reopen(f);
	assert_int_equal(byte_at(f, 2, 1), 'p');
	assert_int_equal(byte_at(f, 2, 2), 'x');
	ios_vlog_close(f->log);
	f->log = NULL;
	unlink(f->path);
	raw_base(f->path, 3);
	assert_int_equal(ios_vlog_open(&f->cfg, &f->log), -EIO);
	assert_non_null(strstr(ios_vlog_why(f->log), "log format 3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_part_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_formats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_holds_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard_dead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_cut_short, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_synced, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
