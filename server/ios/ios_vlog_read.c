/*
 * ios_vlog_read.c - reads of a versioned object at a version, and merges
 * of committed versions into the base object (ios_vlog.h; the log's format
 * and invariants are in ios_vlog.c).
 */
#include "ios_vlog_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ios_disk.h"
#include "tdl.h"
#include "tp_crc.h"

/* ------------------------------------------------------------ read */

/* What covers a range at a version: a committed write's piece or truncate. */
struct cand {
	uint64_t vm;
	uint32_t part, seq;
	const struct vidx *piece; /* NULL: a truncate to `size` */
	uint64_t size;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->vm != y->vm)
		return x->vm < y->vm ? -1 : 1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* First index entry that may overlap a range starting at `off`. */
static size_t idx_first(const struct ios_vlog *log, uint64_t off)
{
	size_t lo = 0, hi = log->nidx;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (log->pmax[mid] > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* realloc that frees the old block when it fails. */
static struct cand *reallocf_cand(struct cand *c, size_t cap)
{
	struct cand *n = realloc(c, cap * sizeof(*c));
	if (!n)
		free(c);
	return n;
}

static int collect(const struct ios_vlog *log, uint64_t r, uint64_t off, uint64_t len,
		   struct cand **out, size_t *n)
{
	size_t cap = 16, k = 0;
	struct cand *c = malloc(cap * sizeof(*c));
	for (size_t i = idx_first(log, off); c && i < log->nidx && log->idx[i].off < off + len;
	     i++) {
		const struct vidx *e = &log->idx[i];
		if (e->off + e->len <= off || e->vm > r)
			continue;
		if (k == cap && (cap *= 2, !(c = reallocf_cand(c, cap))))
			break;
		c[k++] = (struct cand){ e->vm, e->part, e->seq, e, 0 };
	}
	for (uint32_t i = 0; c && i < log->nrec; i++) {
		const struct vrec *t = &log->recs[i];
		if (t->op != VK_TRUNC || !t->vm || t->vm > r || t->arg >= off + len)
			continue;
		if (k == cap && (cap *= 2, !(c = reallocf_cand(c, cap))))
			break;
		c[k++] = (struct cand){ t->vm, t->part, 0, NULL, t->arg };
	}
	if (!c)
		return -ENOMEM;
	qsort(c, k, sizeof(*c), cmp_cand);
	*out = c;
	*n = k;
	return 0;
}

/* Where piece e's bytes within [off, off+len) are: object [*a, *b), and
 * log offset *at of byte *a. */
static void clip(const struct vidx *e, uint64_t off, uint64_t len, uint64_t *a, uint64_t *b,
		 uint64_t *at)
{
	*a = e->off > off ? e->off : off;
	*b = e->off + e->len < off + len ? e->off + e->len : off + len;
	*at = e->data_pos + (*a - e->off);
}

/* Candidates c[i..end) are consecutive pieces of one record (one T's
 * part), so their bytes lie back to back in the log: one read (at most
 * CHUNK) serves all. */
static size_t run_end(const struct cand *c, size_t n, size_t i, uint64_t off, uint64_t len)
{
	uint64_t a, b, lo, at;
	size_t j = i + 1;
	clip(c[i].piece, off, len, &a, &b, &lo);
	for (; j < n && c[j].piece && c[j].vm == c[i].vm && c[j].part == c[i].part &&
	       c[j].seq == c[j - 1].seq + 1;
	     j++) {
		clip(c[j].piece, off, len, &a, &b, &at);
		if (at + (b - a) - lo > CHUNK)
			break;
	}
	return j;
}

/* Copies the bytes of run c[i..j) into buf with one read of the log. */
static int paint_run(struct ios_vlog *log, const struct cand *c, size_t i, size_t j, uint64_t off,
		     uint64_t len, uint8_t *buf)
{
	uint64_t a, b, lo, at;
	clip(c[i].piece, off, len, &a, &b, &lo);
	clip(c[j - 1].piece, off, len, &a, &b, &at);
	uint64_t span = at + (b - a) - lo;
	uint8_t *tmp = malloc(span ? span : 1);
	int rc = tmp ? vlog_pread(log, tmp, span, lo) : -ENOMEM;
	for (size_t k = i; !rc && k < j; k++) { /* in piece order: later pieces win */
		clip(c[k].piece, off, len, &a, &b, &at);
		memcpy(buf + (a - off), tmp + (at - lo), b - a);
	}
	free(tmp);
	return rc;
}

/* Lays the candidates over buf (the base's bytes [off, off+len)), oldest
 * first, so each byte ends with the newest version covering it. */
static int paint(struct ios_vlog *log, const struct cand *c, size_t n, uint64_t off, uint64_t len,
		 uint8_t *buf)
{
	int rc = 0;
	for (size_t i = 0, j; !rc && i < n; i = j) {
		if (!c[i].piece) { /* truncate: bytes from its size on are zeros */
			uint64_t from = c[i].size > off ? c[i].size - off : 0;
			memset(buf + from, 0, len - from);
			j = i + 1;
			continue;
		}
		j = run_end(c, n, i, off, len);
		rc = paint_run(log, c, i, j, off, len, buf);
	}
	return rc;
}

/* Bytes [off, off+len) as of version r. */
static int read_at(struct ios_vlog *log, uint64_t r, uint64_t off, uint64_t len, uint8_t *buf)
{
	struct cand *c;
	size_t n;
	int rc = log->base.ops->read(log->base.ctx, off, len, buf);
	if (rc)
		return vlog_fail(log, rc, "read of the base object at %llu: %s",
				 (unsigned long long)off, strerror(-rc));
	/* The base past the size the log knows is a merge's leftover. */
	if (off + len > log->base_size)
		memset(buf + (log->base_size > off ? log->base_size - off : 0), 0,
		       len - (log->base_size > off ? log->base_size - off : 0));
	rc = collect(log, r, off, len, &c, &n);
	if (rc)
		return rc;
	rc = paint(log, c, n, off, len, buf);
	free(c);
	return rc;
}

static int cmp_vm(const void *a, const void *b)
{
	const struct vrec *x = *(const struct vrec *const *)a, *y = *(const struct vrec *const *)b;
	if (x->vm != y->vm)
		return x->vm < y->vm ? -1 : 1;
	return x->part < y->part ? -1 : x->part > y->part;
}

/* The committed records with merged < vm <= r, oldest first (*out
 * allocated). */
static int committed_upto(const struct ios_vlog *log, uint64_t r, const struct vrec ***out,
			  uint32_t *n)
{
	const struct vrec **v = malloc((log->nrec ? log->nrec : 1) * sizeof(*v));
	uint32_t k = 0;
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < log->nrec; i++)
		if (log->recs[i].vm && log->recs[i].vm <= r)
			v[k++] = &log->recs[i];
	qsort(v, k, sizeof(*v), cmp_vm);
	*out = v;
	*n = k;
	return 0;
}

/* The object's size as of version r: writes grow it, truncates set it. */
static uint64_t size_of(const struct vrec *const *v, uint32_t n, uint64_t base_size)
{
	uint64_t size = base_size;
	for (uint32_t i = 0; i < n; i++)
		size = v[i]->op == VK_TRUNC ? v[i]->arg : v[i]->arg > size ? v[i]->arg : size;
	return size;
}

int ios_vlog_read(struct ios_vlog *log, uint64_t r, const struct ios_piece *pieces, size_t n,
		  uint8_t *data, uint64_t *size)
{
	const struct vrec **v;
	uint32_t nv;
	int rc = vlog_usable(log);
	if (rc)
		return rc;
	if (r < log->merged)
		return vlog_fail(log, -ESTALE, "read at version %llu: merged up to %llu",
				 (unsigned long long)r, (unsigned long long)log->merged);
	uint64_t pos = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (pieces[i].offset > INT64_MAX || pieces[i].length > INT64_MAX - pieces[i].offset)
			return vlog_fail(log, -EINVAL, "read piece %zu ends past 2^63", i);
		rc = read_at(log, r, pieces[i].offset, pieces[i].length, data + pos);
		pos += pieces[i].length;
	}
	if (rc || !size)
		return rc;
	rc = committed_upto(log, r, &v, &nv);
	if (rc)
		return rc;
	*size = size_of(v, nv, log->base_size);
	free(v);
	return 0;
}

/* ------------------------------------------------------------ merge */

/* Writes bytes [off, off+len) as of version m to the base object. */
static int merge_range(struct ios_vlog *log, uint64_t m, uint64_t off, uint64_t len, uint8_t *buf)
{
	for (uint64_t o = 0; o < len; o += CHUNK) {
		uint64_t k = len - o < CHUNK ? len - o : CHUNK;
		int rc = read_at(log, m, off + o, k, buf);
		if (rc)
			return rc;
		rc = log->base.ops->write(log->base.ctx, off + o, k, buf);
		if (rc)
			return vlog_fail(log, rc, "write of the base object at %llu: %s",
					 (unsigned long long)(off + o), strerror(-rc));
	}
	return 0;
}

/* The lowest size records v[0..n) truncate to; UINT64_MAX: none. */
static uint64_t lowest_cut(const struct vrec *const *v, uint32_t n)
{
	uint64_t cut = UINT64_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (v[i]->op == VK_TRUNC && v[i]->arg < cut)
			cut = v[i]->arg;
	return cut;
}

/* Pieces of different records closer than this merge as one range: the
 * bytes between are rewritten as they are (the base's, or zeros below the
 * new size), which costs less than another read-modify-write of the
 * store's checksum block they share. */
#define MERGE_GAP 4096u

struct span {
	uint64_t off, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The byte ranges records v[0..n) wrote below `size`, sorted, joined
 * where they overlap, touch or lie less than MERGE_GAP apart: *out
 * (malloc'd) and *nout. */
static int merge_spans(const struct vrec *const *v, uint32_t n, uint64_t size, struct span **out,
		       size_t *nout)
{
	size_t total = 0, k = 0, j = 0;
	for (uint32_t i = 0; i < n; i++)
		total += v[i]->op == VK_WRITE ? v[i]->n : 0;
	struct span *s = malloc((total ? total : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t p = 0; v[i]->op == VK_WRITE && p < v[i]->n; p++) {
			const struct ios_piece *q = &v[i]->pieces[p];
			uint64_t end = q->offset + q->length < size ? q->offset + q->length : size;
			if (q->offset < end)
				s[k++] = (struct span){ q->offset, end };
		}
	qsort(s, k, sizeof(*s), span_cmp);
	for (size_t i = 0; i < k; i++) {
		if (j && s[i].off <= s[j - 1].end + MERGE_GAP) {
			if (s[i].end > s[j - 1].end)
				s[j - 1].end = s[i].end;
			continue;
		}
		s[j++] = s[i];
	}
	*out = s;
	*nout = j;
	return 0;
}

/* Writes every byte records v[0..n) wrote, below `size`, as of m: each
 * joined range once (merge_spans), not each record's pieces one by one. */
static int merge_writes(struct ios_vlog *log, uint64_t m, const struct vrec *const *v,
			uint32_t n, uint64_t size)
{
	struct span *s = NULL;
	size_t ns = 0;
	uint8_t *buf = malloc(CHUNK);
	int rc = buf ? merge_spans(v, n, size, &s, &ns) : -ENOMEM;
	for (size_t i = 0; !rc && i < ns; i++)
		rc = merge_range(log, m, s[i].off, s[i].end - s[i].off, buf);
	free(s);
	free(buf);
	return rc;
}

/* Lays records v[0..n) (all with vm <= m) on the base object, which ends
 * `size` long. Repeatable: what it writes depends on the log alone, so a
 * merge a crash cut short is simply made again (recover). */
static int apply_to_base(struct ios_vlog *log, uint64_t m, const struct vrec *const *v,
			 uint32_t n, uint64_t size)
{
	const struct ios_vlog_base_ops *b = log->base.ops;
	uint64_t cut = lowest_cut(v, n);
	/* Past the lowest truncate nothing of the base survives. */
	int rc = cut < UINT64_MAX ? b->truncate(log->base.ctx, cut) : 0;
	rc = rc ? rc : merge_writes(log, m, v, n, size);
	rc = rc ? rc : b->truncate(log->base.ctx, size);
	rc = rc ? rc : b->sync(log->base.ctx);
	return rc && !log->why[0]
		       ? vlog_fail(log, rc, "merge into the base object: %s", strerror(-rc))
		       : rc;
}

int vlog_do_merge(struct ios_vlog *log, uint64_t m)
{
	const struct vrec **v;
	uint32_t n;
	int rc = committed_upto(log, m, &v, &n);
	if (rc)
		return rc;
	uint64_t size = size_of(v, n, log->base_size);
	/* MERGING first, synced with the commits before it: a crash from
	 * here on is finished by recover. */
	rc = vlog_append_ctl(log, VK_MERGING, 0, m, 0);
	rc = rc ? rc : vlog_sync(log);
	log->why[0] = 0;
	rc = rc ? rc : apply_to_base(log, m, v, n, size);
	free(v);
	if (rc) {
		log->broken = 1;
		return rc;
	}
	vlog_drop_merged(log, m, size);
	rc = vlog_rebuild_index(log);
	rc = rc ? rc : vlog_append_ctl(log, VK_MERGED, 0, m, size);
	rc = rc ? rc : vlog_sync(log);
	rc = rc || log->nrec ? rc : vlog_reset(log);
	log->broken = rc != 0;
	return rc;
}

int ios_vlog_merge(struct ios_vlog *log, uint64_t upto, uint64_t *merged)
{
	int rc = vlog_usable(log);
	for (uint32_t i = 0; i < log->npins; i++)
		if (log->pins[i] < upto)
			upto = log->pins[i];
	if (!rc && upto > log->merged)
		rc = vlog_do_merge(log, upto);
	else if (!rc && !log->nrec && log->end > HDR) /* aborts left nothing live */
		rc = vlog_reset(log);
	if (merged)
		*merged = log->merged;
	return rc;
}

int ios_vlog_sync(struct ios_vlog *log)
{
	int rc = vlog_usable(log);
	return rc ? rc : vlog_sync(log);
}

void ios_vlog_stats(const struct ios_vlog *log, struct ios_vlog_stats *out)
{
	*out = (struct ios_vlog_stats){ .index_pieces = log->nidx, .log_bytes = log->end,
					.merged = log->merged, .base_size = log->base_size,
					.cut_bytes = log->cut };
	for (uint32_t i = 0; i < log->nrec; i++) {
		out->committed += log->recs[i].vm != 0;
		out->uncommitted += log->recs[i].vm == 0;
	}
}
