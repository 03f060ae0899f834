/*
 * ios_vlog.c - a versioned object's log and its offset-length index
 * (ios_vlog.h; docs/design.md "Versioning"); reads at a version and
 * merges are in ios_vlog_read.c.
 *
 * The log file is a run of records, each a 64-byte header, `count` pieces
 * (16 bytes each: object offset, length) and `data_len` bytes, with a
 * CRC32C over all of it. Host byte order: a log never leaves its disk.
 * The first record is always BASE (the merged version and the base
 * object's size as of it; its `t` is the format, VLOG_FORMAT); the log is
 * replaced by a fresh BASE (written aside, renamed over) when a merge
 * leaves no live record.
 *
 * Format 2 (parts): a write record carries its part in the header word
 * format 1 wrote as 0, so a format 1 log reads as one whose every T has
 * the single part 0; an unknown format fails the open.
 *
 * Invariants kept in memory: recs[] holds the live records (uncommitted,
 * or committed with merged < vm), one per (T, part); the records of one T
 * are all writes (any number of parts) or one truncate (part 0), and are
 * uncommitted or committed together; idx[] holds one entry per piece of
 * each committed write, sorted by offset, pmax[i] the largest piece end
 * among idx[0..i] (so the entries overlapping a range are found by one
 * binary search and a scan that stops at the range's end). Where records
 * overlap, the order is (vm, part, piece): later wins.
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

int vlog_fail(struct ios_vlog *log, int rc, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(log->why, sizeof(log->why), "log %s (object %llx): ", log->path,
			 (unsigned long long)log->handle);
	va_start(ap, fmt);
	if (k > 0 && (size_t)k < sizeof(log->why))
		vsnprintf(log->why + k, sizeof(log->why) - (size_t)k, fmt, ap);
	va_end(ap);
	return rc;
}

const char *ios_vlog_why(const struct ios_vlog *log)
{
	return log->why;
}

/* ------------------------------------------------------------ disk */

static int log_pwrite(struct ios_vlog *log, struct iovec *iov, int n, uint64_t len, uint64_t off)
{
	ssize_t w = log->disk->ops->pwritev(log->disk, log->fd, iov, n, (off_t)off);
	if (w < 0)
		return vlog_fail(log, (int)w, "write at %llu: %s", (unsigned long long)off,
				 strerror((int)-w));
	if ((uint64_t)w != len)
		return vlog_fail(log, -EIO, "short write at %llu", (unsigned long long)off);
	return 0;
}

int vlog_pread(struct ios_vlog *log, void *buf, uint64_t len, uint64_t off)
{
	struct iovec iov = { buf, len };
	ssize_t r = log->disk->ops->preadv(log->disk, log->fd, &iov, 1, (off_t)off);
	if (r < 0)
		return vlog_fail(log, (int)r, "read at %llu: %s", (unsigned long long)off,
				 strerror((int)-r));
	return (uint64_t)r == len
		       ? 0
		       : vlog_fail(log, -EIO, "short read at %llu", (unsigned long long)off);
}

int vlog_sync(struct ios_vlog *log)
{
	int rc = log->disk->ops->fdatasync(log->disk, log->fd);
	return rc ? vlog_fail(log, rc, "sync: %s", strerror(-rc)) : 0;
}

/* Appends one record at the log's end; a failed append leaves no tail. */
static int append(struct ios_vlog *log, struct vhdr *h, const struct ios_piece *pieces,
		  const uint8_t *data)
{
	struct iovec iov[3] = { { h, HDR },
				{ (void *)pieces, h->count * PIECE },
				{ (void *)data, h->data_len } };
	h->magic = VLOG_MAGIC;
	h->total = HDR + h->count * PIECE + h->data_len;
	h->crc = 0;
	uint32_t crc = tp_crc32c(0, h, HDR);
	crc = tp_crc32c(crc, pieces, h->count * PIECE);
	h->crc = tp_crc32c(crc, data, h->data_len);
	int rc = log_pwrite(log, iov, 3, h->total, log->end);
	if (rc) {
		(void)log->disk->ops->ftruncate(log->disk, log->fd, (off_t)log->end);
		return rc;
	}
	log->end += h->total;
	return 0;
}

int vlog_append_ctl(struct ios_vlog *log, enum vkind kind, uint64_t t, uint64_t vm, uint64_t arg)
{
	struct vhdr h = { .kind = kind, .t = t, .vm = vm, .arg = arg };
	return append(log, &h, NULL, NULL);
}

/* ------------------------------------------------------------ records */

/* A record of T (any part). */
static int find_rec(const struct ios_vlog *log, uint64_t t)
{
	for (uint32_t i = 0; i < log->nrec; i++)
		if (log->recs[i].t == t)
			return (int)i;
	return -1;
}

/* T's record `part`. */
static int find_part(const struct ios_vlog *log, uint64_t t, uint32_t part)
{
	for (uint32_t i = 0; i < log->nrec; i++)
		if (log->recs[i].t == t && log->recs[i].part == part)
			return (int)i;
	return -1;
}

/* What the log holds of one T: its records, their pieces and bytes, its
 * version (0: uncommitted), whether it is a truncate. */
struct tsum {
	uint32_t recs;
	uint64_t pieces, bytes, vm;
	int trunc;
};

static struct tsum t_sum(const struct ios_vlog *log, uint64_t t)
{
	struct tsum s = { 0 };
	for (uint32_t i = 0; i < log->nrec; i++) {
		const struct vrec *r = &log->recs[i];
		if (r->t != t)
			continue;
		s.recs++;
		s.pieces += r->n;
		s.bytes += r->bytes;
		s.vm = r->vm;
		s.trunc |= r->op == VK_TRUNC;
	}
	return s;
}

static void drop_rec(struct ios_vlog *log, uint32_t i)
{
	log->npieces -= log->recs[i].n;
	free(log->recs[i].pieces);
	log->recs[i] = log->recs[--log->nrec];
}

/* Every record of T goes; returns how many. */
static uint32_t drop_t(struct ios_vlog *log, uint64_t t)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < log->nrec;)
		if (log->recs[i].t == t) {
			drop_rec(log, i); /* the last moved to i: look at i again */
			k++;
		} else {
			i++;
		}
	return k;
}

/* Sets the version of every record of T. */
static void set_vm(struct ios_vlog *log, uint64_t t, uint64_t vm)
{
	for (uint32_t i = 0; i < log->nrec; i++)
		if (log->recs[i].t == t)
			log->recs[i].vm = vm;
}

static int add_rec(struct ios_vlog *log, const struct vrec *r)
{
	if (log->nrec == log->caprec) {
		uint32_t cap = log->caprec ? log->caprec * 2 : 16;
		struct vrec *nr = realloc(log->recs, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		log->recs = nr;
		log->caprec = cap;
	}
	log->recs[log->nrec++] = *r;
	log->npieces += r->n;
	return 0;
}

static int cmp_idx(const void *a, const void *b)
{
	const struct vidx *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Appends record r's pieces to idx at *k. */
static void idx_put(struct vidx *idx, size_t *k, const struct vrec *r)
{
	uint64_t pos = r->data_pos;
	for (uint32_t j = 0; r->op == VK_WRITE && j < r->n; j++) {
		idx[(*k)++] = (struct vidx){ r->pieces[j].offset, r->pieces[j].length, r->vm, pos,
					     r->part, j };
		pos += r->pieces[j].length;
	}
}

/* idx[0..n) (sorted) becomes the index, with its running maximum of
 * piece ends in pmax (room for n). */
static void index_install(struct ios_vlog *log, struct vidx *idx, uint64_t *pmax, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t e = idx[i].off + idx[i].len;
		pmax[i] = i && pmax[i - 1] > e ? pmax[i - 1] : e;
	}
	free(log->idx);
	free(log->pmax);
	log->idx = idx;
	log->pmax = pmax;
	log->nidx = n;
}

/* Rebuilds the index from the committed writes. */
int vlog_rebuild_index(struct ios_vlog *log)
{
	size_t n = 0;
	for (uint32_t i = 0; i < log->nrec; i++)
		if (log->recs[i].vm && log->recs[i].op == VK_WRITE)
			n += log->recs[i].n;
	struct vidx *idx = malloc((n ? n : 1) * sizeof(*idx));
	uint64_t *pmax = malloc((n ? n : 1) * sizeof(*pmax));
	if (!idx || !pmax) { /* the index no longer matches the records */
		free(idx);
		free(pmax);
		log->broken = 1;
		return vlog_fail(log, -ENOMEM, "no memory for an index of %zu pieces", n);
	}
	size_t k = 0;
	for (uint32_t i = 0; i < log->nrec; i++)
		if (log->recs[i].vm)
			idx_put(idx, &k, &log->recs[i]);
	qsort(idx, n, sizeof(*idx), cmp_idx);
	index_install(log, idx, pmax, n);
	return 0;
}

/* Adds the committed writes of T (all its parts) to the index: their
 * pieces sorted, then merged with the index in one pass (O(n + k log k),
 * where a rebuild sorts all). */
static int index_add(struct ios_vlog *log, uint64_t t)
{
	struct tsum ts = t_sum(log, t);
	size_t n = log->nidx, k = ts.trunc ? 0 : ts.pieces, i = 0, j = 0, o = 0;
	if (!k)
		return 0;
	struct vidx *add = malloc(k * sizeof(*add)), *idx = malloc((n + k) * sizeof(*idx));
	uint64_t *pmax = malloc((n + k) * sizeof(*pmax));
	if (!add || !idx || !pmax) {
		free(add);
		free(idx);
		free(pmax);
		return vlog_rebuild_index(log); /* says -ENOMEM and marks the log */
	}
	size_t q = 0;
	for (uint32_t r = 0; r < log->nrec; r++)
		if (log->recs[r].t == t)
			idx_put(add, &q, &log->recs[r]);
	qsort(add, k, sizeof(*add), cmp_idx);
	while (i < n || j < k)
		idx[o++] = j == k || (i < n && log->idx[i].off <= add[j].off) ? log->idx[i++]
									 : add[j++];
	free(add);
	index_install(log, idx, pmax, n + k);
	return 0;
}

/* Pieces a write may carry: nonempty, ending by INT64_MAX, their total
 * data_len. Returns the end of the last byte in *end. */
static int check_pieces(struct ios_vlog *log, const struct ios_piece *p, uint64_t n,
			uint64_t data_len, uint64_t *end)
{
	uint64_t sum = 0;
	*end = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (p[i].length == 0 || p[i].offset > INT64_MAX ||
		    p[i].length > INT64_MAX - p[i].offset)
			return vlog_fail(log, -EINVAL,
					 "piece %llu [%llu, +%llu) is empty or ends past 2^63",
					 (unsigned long long)i, (unsigned long long)p[i].offset,
					 (unsigned long long)p[i].length);
		sum += p[i].length; /* no overflow: n <= 2^32, each < 2^63 ... checked below */
		if (sum < p[i].length)
			return vlog_fail(log, -EINVAL, "pieces' total overflows");
		if (p[i].offset + p[i].length > *end)
			*end = p[i].offset + p[i].length;
	}
	if (sum != data_len)
		return vlog_fail(log, -EINVAL, "%llu data bytes for pieces of %llu",
				 (unsigned long long)data_len, (unsigned long long)sum);
	return 0;
}

/* ------------------------------------------------------------ open */

static uint32_t max_or(uint32_t v, uint32_t dflt)
{
	return v ? v : dflt;
}

static int write_base(struct ios_vlog *log)
{
	return vlog_append_ctl(log, VK_BASE, VLOG_FORMAT, log->merged, log->base_size);
}

/* A fresh log holding only BASE, written aside and renamed over the old
 * one, so a crash leaves one or the other whole. */
int vlog_reset(struct ios_vlog *log)
{
	size_t len = strlen(log->path);
	char *tmp = malloc(len + 5), *dir = strdup(log->path);
	int rc = -ENOMEM, old = log->fd;
	if (!tmp || !dir)
		goto out;
	memcpy(tmp, log->path, len);
	memcpy(tmp + len, ".new", 5);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	struct ios_disk *d = log->disk;
	int fd = d->ops->open(d, log->handle, IOS_FILE_VLOG, tmp,
			      O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = fd < 0 ? vlog_fail(log, fd, "make %s: %s", tmp, strerror(-fd)) : 0;
	if (rc)
		goto out;
	log->fd = fd;
	log->end = 0;
	rc = write_base(log);
	rc = rc ? rc : vlog_sync(log);
	rc = rc ? rc : d->ops->rename(d, tmp, log->path, IOS_RENAME_REPLACE);
	rc = rc ? rc : d->ops->syncdir(d, slash ? dir : ".");
	(void)d->ops->close(d, rc ? fd : old);
	if (rc) {
		log->fd = old;
		vlog_fail(log, rc, "replace by a fresh log: %s", strerror(-rc));
	}
out:
	free(tmp);
	free(dir);
	return rc;
}

struct scan {
	uint64_t pos, size;
	uint64_t pending_merge; /* a MERGING without its MERGED */
};

/* Whether T may take a new record `part` of this kind: a write joins T's
 * uncommitted writes (a part it does not hold yet), a truncate is a T of
 * its own (part 0). */
static int t_accepts(struct ios_vlog *log, uint32_t kind, uint64_t t, uint32_t part,
		     const struct tsum *ts)
{
	if (t == 0)
		return vlog_fail(log, -EINVAL, "T 0");
	if (kind == VK_TRUNC && (ts->recs || part))
		return vlog_fail(log, -EINVAL, "truncate under T %llx part %u: T in use, or a part",
				 (unsigned long long)t, part);
	if (ts->recs && (ts->vm || ts->trunc))
		return vlog_fail(log, -EINVAL, "part %u of T %llx: T is %s", part,
				 (unsigned long long)t,
				 ts->vm ? "committed already" : "a truncate");
	if (find_part(log, t, part) >= 0)
		return vlog_fail(log, -EINVAL, "T %llx part %u is in the log already",
				 (unsigned long long)t, part);
	return 0;
}

static int apply_write(struct ios_vlog *log, const struct vhdr *h, struct ios_piece *pieces,
		       uint64_t pos)
{
	struct vrec r = { .t = h->t, .part = h->part, .op = h->kind, .bytes = h->total,
			  .arg = h->arg, .n = (uint32_t)h->count, .pieces = pieces,
			  .data_pos = pos + HDR + h->count * PIECE };
	struct tsum ts = t_sum(log, h->t);
	uint64_t end;
	int rc = t_accepts(log, h->kind, h->t, h->part, &ts);
	if (rc)
		return rc;
	if (h->kind == VK_WRITE) {
		rc = check_pieces(log, pieces, h->count, h->data_len, &end);
		if (rc)
			return rc;
		r.arg = end;
	} else if (h->count || h->data_len || h->arg > INT64_MAX) {
		return vlog_fail(log, -EINVAL, "truncate with pieces or past 2^63");
	}
	return add_rec(log, &r);
}

static int commit_rec(struct ios_vlog *log, uint64_t t, uint64_t vm)
{
	int i = find_rec(log, t);
	if (i < 0)
		return vlog_fail(log, -ENOENT, "commit of T %llx: no such record",
				 (unsigned long long)t);
	if (log->recs[i].vm)
		return log->recs[i].vm == vm
			       ? 1
			       : vlog_fail(log, -EEXIST, "T %llx is already version %llu",
					   (unsigned long long)t,
					   (unsigned long long)log->recs[i].vm);
	if (vm <= log->merged)
		return vlog_fail(log, -ESTALE, "version %llu is at or below the merged %llu",
				 (unsigned long long)vm, (unsigned long long)log->merged);
	for (uint32_t k = 0; k < log->nrec; k++)
		if (log->recs[k].vm == vm)
			return vlog_fail(log, -EEXIST, "version %llu names another T",
					 (unsigned long long)vm);
	set_vm(log, t, vm); /* every part of T at once */
	return 0;
}

int vlog_drop_merged(struct ios_vlog *log, uint64_t upto, uint64_t size)
{
	for (uint32_t i = 0; i < log->nrec;)
		if (log->recs[i].vm && log->recs[i].vm <= upto)
			drop_rec(log, i);
		else
			i++;
	log->merged = upto;
	log->base_size = size;
	return 0;
}

/* Replays a merge's records: MERGING says one began (recover finishes
 * it unless its MERGED follows), MERGED that the base holds it. */
static int replay_merge(struct ios_vlog *log, struct scan *s, const struct vhdr *h)
{
	if (h->vm <= log->merged || h->arg > INT64_MAX)
		return vlog_fail(log, -EINVAL, "merge back to %llu, or past 2^63",
				 (unsigned long long)h->vm);
	if (h->kind == VK_MERGING) {
		s->pending_merge = h->vm;
		return 0;
	}
	s->pending_merge = 0;
	return vlog_drop_merged(log, h->vm, h->arg);
}

static int replay_abort(struct ios_vlog *log, const struct vhdr *h)
{
	int i = find_rec(log, h->t);
	if (i < 0 || log->recs[i].vm)
		return vlog_fail(log, -EINVAL, "abort of T %llx, not uncommitted",
				 (unsigned long long)h->t);
	drop_t(log, h->t);
	return 0;
}

static int replay_base(struct ios_vlog *log, const struct vhdr *h)
{
	/* t: the format (format 1 wrote 0) */
	if (h->t > VLOG_FORMAT)
		return vlog_fail(log, -EINVAL, "log format %llu: this daemon reads formats 1 to %u",
				 (unsigned long long)h->t, VLOG_FORMAT);
	if (h->arg > INT64_MAX)
		return vlog_fail(log, -EINVAL, "base size past 2^63");
	return vlog_drop_merged(log, h->vm, h->arg);
}

/* Applies one recovered record to the in-memory state. */
static int replay(struct ios_vlog *log, struct scan *s, const struct vhdr *h,
		  struct ios_piece *pieces)
{
	int rc;
	if ((h->kind == VK_BASE) != (s->pos == 0) ||
	    (h->kind != VK_WRITE && h->part) || (h->kind > VK_TRUNC && (h->count || h->data_len)))
		return vlog_fail(log, -EINVAL, "record kind %u out of place", h->kind);
	switch (h->kind) {
	case VK_BASE:
		return replay_base(log, h);
	case VK_WRITE:
	case VK_TRUNC:
		return apply_write(log, h, pieces, s->pos);
	case VK_COMMIT:
		rc = commit_rec(log, h->t, h->vm);
		return rc > 0 ? 0 : rc;
	case VK_ABORT:
		return replay_abort(log, h);
	case VK_MERGING:
	case VK_MERGED:
		return replay_merge(log, s, h);
	default:
		return vlog_fail(log, -EINVAL, "unknown record kind %u", h->kind);
	}
}

/* CRC32C of the record at pos, `total` bytes long, its crc field as 0. */
static int rec_crc(struct ios_vlog *log, uint64_t pos, const struct vhdr *h, uint32_t *crc)
{
	struct vhdr z = *h;
	uint8_t *buf = malloc(CHUNK);
	int rc = buf ? 0 : -ENOMEM;
	z.crc = 0;
	*crc = tp_crc32c(0, &z, HDR);
	for (uint64_t o = HDR; !rc && o < h->total; o += CHUNK) {
		uint64_t n = h->total - o < CHUNK ? h->total - o : CHUNK;
		rc = vlog_pread(log, buf, n, pos + o);
		*crc = rc ? *crc : tp_crc32c(*crc, buf, n);
	}
	free(buf);
	return rc;
}

/* Reads and checks the record at s->pos: 1 and *h, *pieces (allocated)
 * for a good one; 0 where the log's good part ends (its end, or a record
 * not whole: torn by a crash; as appends are sequential and synced, all
 * from there on was never synced, so nothing promised is cut); -EIO for
 * a whole record (checksum right) that breaks the format (hostile). */
static int read_rec(struct ios_vlog *log, struct scan *s, struct vhdr *h, struct ios_piece **pieces)
{
	uint64_t left = s->size - s->pos;
	uint32_t crc;
	*pieces = NULL;
	if (left < HDR)
		return 0;
	int rc = vlog_pread(log, h, HDR, s->pos);
	if (rc || h->magic != VLOG_MAGIC || h->total < HDR || h->total > left)
		return rc;
	rc = rec_crc(log, s->pos, h, &crc);
	if (rc || crc != h->crc)
		return rc;
	if (h->count > log->lim.max_pieces || h->data_len > h->total - HDR ||
	    h->count * PIECE != h->total - HDR - h->data_len)
		return vlog_fail(log, -EIO, "record at %llu: %llu pieces, %llu data bytes in %llu",
				 (unsigned long long)s->pos, (unsigned long long)h->count,
				 (unsigned long long)h->data_len, (unsigned long long)h->total);
	*pieces = malloc(h->count ? h->count * PIECE : 1);
	if (!*pieces)
		return -ENOMEM;
	rc = vlog_pread(log, *pieces, h->count * PIECE, s->pos + HDR);
	if (rc) {
		free(*pieces);
		*pieces = NULL;
		return rc;
	}
	return 1;
}

/* Replays the log's good records; s->pos ends where they end. */
static int scan_log(struct ios_vlog *log, struct scan *s)
{
	for (;;) {
		struct vhdr h;
		struct ios_piece *pieces;
		int rc = read_rec(log, s, &h, &pieces);
		if (rc <= 0)
			return rc;
		rc = replay(log, s, &h, pieces);
		/* A write or truncate kept its pieces. */
		if (rc || (h.kind != VK_WRITE && h.kind != VK_TRUNC))
			free(pieces);
		if (rc == -ENOMEM)
			return rc;
		if (rc) { /* a whole record the format forbids: hostile or damaged */
			char why[sizeof(log->why)];
			const char *inner = strstr(log->why, "): "); /* past our prefix */
			snprintf(why, sizeof(why), "%s", inner ? inner + 3 : log->why);
			return vlog_fail(log, -EIO, "record at %llu refused (%s)",
					 (unsigned long long)s->pos, why);
		}
		s->pos += h.total;
	}
}

static int recover(struct ios_vlog *log)
{
	struct stat sb;
	struct scan s = { 0 };
	int rc = log->disk->ops->fstat(log->disk, log->fd, &sb);
	if (rc)
		return vlog_fail(log, rc, "stat: %s", strerror(-rc));
	s.size = (uint64_t)sb.st_size;
	rc = scan_log(log, &s);
	if (rc)
		return rc;
	log->end = s.pos;
	log->cut = s.size - s.pos;
	if (s.pos < s.size) /* cut the torn tail */
		rc = log->disk->ops->ftruncate(log->disk, log->fd, (off_t)s.pos);
	if (!rc && s.pos == 0) { /* a new log, or its BASE torn: the base as it is */
		rc = log->base.ops->size(log->base.ctx, &log->base_size);
		rc = rc ? rc : write_base(log);
		rc = rc ? rc : vlog_sync(log);
	}
	rc = rc ? rc : vlog_rebuild_index(log);
	return rc ? rc : s.pending_merge ? vlog_do_merge(log, s.pending_merge) : 0;
}

int ios_vlog_open(const struct ios_vlog_config *cfg, struct ios_vlog **out)
{
	struct ios_vlog *log = calloc(1, sizeof(*log));
	*out = NULL;
	if (!log || !(log->path = strdup(cfg->path))) {
		free(log);
		return -ENOMEM;
	}
	log->disk = cfg->disk;
	log->handle = cfg->handle;
	log->base = cfg->base;
	log->dur = cfg->durability;
	log->lim.max_records = max_or(cfg->limits.max_records, IOS_VLOG_MAX_RECORDS);
	log->lim.max_pieces = max_or(cfg->limits.max_pieces, IOS_VLOG_MAX_PIECES);
	log->lim.max_bytes = cfg->limits.max_bytes ? cfg->limits.max_bytes : IOS_VLOG_MAX_BYTES;
	log->lim.max_live_pieces = max_or(cfg->limits.max_live_pieces, IOS_VLOG_MAX_LIVE_PIECES);
	log->fd = cfg->disk->ops->open(cfg->disk, cfg->handle, IOS_FILE_VLOG, cfg->path,
				       O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (log->fd < 0) {
		int rc = vlog_fail(log, log->fd, "open: %s", strerror(-log->fd));
		*out = log;
		return rc;
	}
	int rc = recover(log);
	*out = log;
	return rc;
}

void ios_vlog_close(struct ios_vlog *log)
{
	if (!log)
		return;
	if (log->fd >= 0)
		(void)log->disk->ops->close(log->disk, log->fd);
	while (log->nrec)
		drop_rec(log, log->nrec - 1);
	free(log->recs);
	free(log->idx);
	free(log->pmax);
	free(log->path);
	free(log);
}

/* ------------------------------------------------------------ modify */

int vlog_usable(struct ios_vlog *log)
{
	return log->broken
		       ? vlog_fail(log, -EIO, "a merge or commit failed half-way; reopen the log")
		       : 0;
}

/* Whether T's records with this one (n pieces, len bytes) could ever be
 * live together: -ENOSPC if not (a call too large to be one version
 * here, however empty the log). */
static int room_for_t(struct ios_vlog *log, uint64_t t, const struct tsum *ts, uint64_t n,
		      uint64_t len)
{
	/* (no overflow: each term is bounded by max_bytes or the log's size) */
	uint64_t recs = ts->recs + 1ull, pieces = ts->pieces + n;
	uint64_t bytes = ts->bytes + HDR + n * PIECE + len + HDR * (recs + 3) + HDR;
	if (recs <= log->lim.max_records && pieces <= log->lim.max_live_pieces &&
	    bytes <= log->lim.max_bytes)
		return 0;
	return vlog_fail(log, -ENOSPC,
			 "T %llx with this part: %llu records, %llu pieces, %llu log "
			 "bytes, past the log's limits (%u records, %u pieces, %llu bytes): a call "
			 "this large can never be one version of this object",
			 (unsigned long long)t, (unsigned long long)recs,
			 (unsigned long long)pieces, (unsigned long long)bytes,
			 log->lim.max_records, log->lim.max_live_pieces,
			 (unsigned long long)log->lim.max_bytes);
}

/* Room for a record of n pieces and len bytes under T: each live record
 * keeps room for its commit or abort, and two more for a merge. */
static int room(struct ios_vlog *log, uint64_t t, const struct tsum *ts, uint64_t n, uint64_t len)
{
	uint64_t lim = log->lim.max_bytes, fixed = 5 * HDR; /* BASE, this, 3 control */
	if (n > log->lim.max_pieces || n > log->lim.max_live_pieces || lim < fixed ||
	    len > lim - fixed || n * PIECE > lim - fixed - len)
		return vlog_fail(log, -ENOSPC,
				 "a record of %llu pieces and %llu bytes passes the limits",
				 (unsigned long long)n, (unsigned long long)len);
	int rc = room_for_t(log, t, ts, n, len);
	if (rc)
		return rc;
	uint64_t need = HDR + n * PIECE + len + HDR * ((uint64_t)log->nrec + 3);
	if (log->nrec >= log->lim.max_records || need > lim || log->end > lim - need ||
	    log->npieces + n > log->lim.max_live_pieces)
		return vlog_fail(log, -EBUSY,
				 "log full (%u records, %llu pieces, %llu bytes): merge first",
				 log->nrec, (unsigned long long)log->npieces,
				 (unsigned long long)log->end);
	return 0;
}

/* Record (T, part) is in the log already: a resend of the same record
 * is done (0; nothing appended, so a late resend never lands after a
 * later part), another one under its name -EINVAL. */
static int resent(struct ios_vlog *log, const struct vrec *r, enum vkind kind,
		  const struct ios_piece *p, size_t n, uint64_t len, uint64_t arg)
{
	int same = r->op == kind && r->n == n && r->bytes == HDR + n * PIECE + len &&
		   (kind == VK_WRITE ? !n || !memcmp(r->pieces, p, n * PIECE) : r->arg == arg);
	return same ? 0
		    : vlog_fail(log, -EINVAL,
				"T %llx part %u is in the log already, with other "
				"pieces",
				(unsigned long long)r->t, r->part);
}

static int add_record(struct ios_vlog *log, enum vkind kind, uint64_t t, uint32_t part,
		      const struct ios_piece *p, size_t n, const uint8_t *data, uint64_t len,
		      uint64_t arg)
{
	int rc = vlog_usable(log), i = find_part(log, t, part);
	if (rc)
		return rc;
	if (t && i >= 0)
		return resent(log, &log->recs[i], kind, p, n, len, arg);
	struct tsum ts = t_sum(log, t);
	rc = t_accepts(log, kind, t, part, &ts);
	rc = rc ? rc : room(log, t, &ts, n, len);
	struct ios_piece *copy = rc ? NULL : malloc(n ? n * PIECE : 1);
	if (rc || !copy)
		return rc ? rc : -ENOMEM;
	if (n)
		memcpy(copy, p, n * PIECE);
	struct vhdr h = { .kind = kind, .t = t, .count = n, .data_len = len, .arg = arg,
			  .part = part };
	uint64_t pos = log->end;
	rc = append(log, &h, copy, data);
	if (rc) {
		free(copy);
		return rc;
	}
	rc = log->dur != IOS_VLOG_SYNC_EACH ? 0 : vlog_sync(log);
	rc = rc ? rc : apply_write(log, &h, copy, pos);
	if (rc) { /* not kept: take it off the log too, so T may come again */
		free(copy);
		(void)log->disk->ops->ftruncate(log->disk, log->fd, (off_t)pos);
		log->end = pos;
	}
	return rc;
}

int ios_vlog_write(struct ios_vlog *log, uint64_t t, uint32_t part, const struct ios_piece *pieces,
		   size_t n, const uint8_t *data, uint64_t data_len)
{
	uint64_t end;
	if (n > log->lim.max_pieces)
		return vlog_fail(log, -ENOSPC, "%zu pieces: more than %u", n, log->lim.max_pieces);
	int rc = check_pieces(log, pieces, n, data_len, &end);
	return rc ? rc : add_record(log, VK_WRITE, t, part, pieces, n, data, data_len, end);
}

int ios_vlog_truncate(struct ios_vlog *log, uint64_t t, uint64_t size)
{
	if (size > INT64_MAX)
		return vlog_fail(log, -EINVAL, "truncate to %llu: past 2^63",
				 (unsigned long long)size);
	return add_record(log, VK_TRUNC, t, 0, NULL, 0, NULL, 0, size);
}

/* Adds object piece (off, len) to p[], joining it to the last when they
 * touch. -ENOSPC past max. */
static int push_piece(struct ios_piece *p, size_t *n, size_t max, uint64_t off, uint64_t len)
{
	if (*n && p[*n - 1].offset + p[*n - 1].length == off) {
		p[*n - 1].length += len;
		return 0;
	}
	if (*n == max)
		return -ENOSPC;
	p[(*n)++] = (struct ios_piece){ off, len };
	return 0;
}

int ios_vlog_write_dataloop(struct ios_vlog *log, uint64_t t, uint32_t part,
			    const struct tdl_dataloop *dl,
			    uint64_t count, int64_t disp, uint64_t first, uint64_t last,
			    const struct tdl_layout *layout, uint32_t slot, const uint8_t *data,
			    uint64_t data_len)
{
	struct tdl_segment seg;
	struct tdl_piece batch[256];
	size_t max = log->lim.max_pieces, n = 0, got = 0;
	struct ios_piece *p = malloc(max * PIECE);
	int rc = p ? tdl_segment_init_server(&seg, dl, count, disp, first, last, layout, slot)
		   : -ENOMEM;
	/* Bound the walk's work as the pieces are bounded. */
	seg.max_steps = 64 * (uint64_t)max + (1u << 20);
	while (!rc && !tdl_segment_done(&seg)) {
		rc = tdl_segment_next(&seg, batch, 256, &got);
		for (size_t i = 0; !rc && i < got; i++)
			rc = push_piece(p, &n, max, tdl_piece_object(layout, &batch[i]),
					batch[i].length);
	}
	if (rc == -ENOSPC || rc == -E2BIG)
		rc = vlog_fail(log, -ENOSPC, "dataloop unrolls to more than %zu pieces", max);
	else if (rc)
		rc = vlog_fail(log, rc, "dataloop walk: %s", strerror(-rc));
	rc = rc ? rc : ios_vlog_write(log, t, part, p, n, data, data_len);
	free(p);
	return rc;
}

int ios_vlog_commit(struct ios_vlog *log, uint64_t t, uint64_t vm)
{
	int rc = vlog_usable(log);
	if (rc)
		return rc;
	if (t == 0 || vm == 0)
		return vlog_fail(log, -EINVAL, "commit of T %llx as version %llu",
				 (unsigned long long)t, (unsigned long long)vm);
	rc = commit_rec(log, t, vm);
	if (rc)
		return rc > 0 ? 0 : rc;
	rc = vlog_append_ctl(log, VK_COMMIT, t, vm, 0);
	if (rc) { /* not logged: not committed */
		set_vm(log, t, 0);
		return rc;
	}
	return index_add(log, t);
}

int ios_vlog_abort(struct ios_vlog *log, uint64_t t)
{
	int rc = vlog_usable(log), i = find_rec(log, t);
	if (rc)
		return rc;
	if (i < 0)
		return vlog_fail(log, -ENOENT, "abort of T %llx: no such record",
				 (unsigned long long)t);
	if (log->recs[i].vm)
		return vlog_fail(log, -EBUSY, "abort of T %llx: committed", (unsigned long long)t);
	rc = vlog_append_ctl(log, VK_ABORT, t, 0, 0);
	if (!rc)
		drop_t(log, t);
	return rc;
}

/* Which uncommitted records a discard drops: those of one ID#, or those
 * of every ID# a merge grant says is dead. */
struct doom {
	uint32_t id;             /* ONE_ID */
	uint32_t next_id;        /* DEAD_IDS: IDs from here were handed out later */
	const uint32_t *live;
	size_t n_live;
	enum { ONE_ID, DEAD_IDS } kind;
};

static int id_live(uint32_t id, const uint32_t *live, size_t n_live)
{
	for (size_t i = 0; i < n_live; i++)
		if (live[i] == id)
			return 1;
	return 0;
}

static int doomed(const struct doom *d, uint32_t id)
{
	if (d->kind == ONE_ID)
		return id == d->id;
	/* IDs handed out after the grant was made may be writing now. */
	return id < d->next_id && !id_live(id, d->live, d->n_live);
}

/* Committed records stay (the merge's to apply); the doomed uncommitted
 * ones are aborted, every part of their T with one ABORT. */
static int discard_doomed(struct ios_vlog *log, const struct doom *d, uint32_t *n)
{
	uint32_t k = 0;
	int rc = 0;
	for (uint32_t i = 0; !rc && i < log->nrec;) {
		const struct vrec *r = &log->recs[i];
		if (r->vm || !doomed(d, ios_vlog_id(r->t))) {
			i++;
			continue;
		}
		/* Drops recs[i] and T's other parts, all at i or after (those
		 * before were looked at): i now names the next. */
		uint32_t parts = t_sum(log, r->t).recs;
		rc = ios_vlog_abort(log, r->t);
		k += rc ? 0 : parts;
	}
	if (n)
		*n = k;
	return rc;
}

int ios_vlog_discard(struct ios_vlog *log, uint32_t id, uint32_t *n)
{
	struct doom d = { .id = id, .kind = ONE_ID };
	return discard_doomed(log, &d, n);
}

int ios_vlog_discard_dead(struct ios_vlog *log, uint32_t next_id, const uint32_t *live,
			  size_t n_live, uint32_t *n)
{
	struct doom d = { .next_id = next_id, .live = live, .n_live = n_live, .kind = DEAD_IDS };
	return discard_doomed(log, &d, n);
}

/* ------------------------------------------------------------ pins */

int ios_vlog_pin(struct ios_vlog *log, uint64_t r)
{
	if (r < log->merged)
		return vlog_fail(log, -ESTALE, "pin of version %llu: merged up to %llu",
				 (unsigned long long)r, (unsigned long long)log->merged);
	if (log->npins == IOS_VLOG_MAX_PINS)
		return vlog_fail(log, -ENOSPC, "more than %u reads in progress", IOS_VLOG_MAX_PINS);
	log->pins[log->npins++] = r;
	return 0;
}

int ios_vlog_unpin(struct ios_vlog *log, uint64_t r)
{
	for (uint32_t i = 0; i < log->npins; i++)
		if (log->pins[i] == r) {
			log->pins[i] = log->pins[--log->npins];
			return 0;
		}
	return vlog_fail(log, -ENOENT, "unpin of version %llu: not pinned", (unsigned long long)r);
}
