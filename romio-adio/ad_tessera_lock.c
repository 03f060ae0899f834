/*
 * ad_tessera_lock.c - byte-range locks for atomic mode and sieving writes,
 * and the locks ROMIO's generic code asks for.
 *
 * The contract (seed 001 §7.4.3, as ROMIO's NFS driver does with fcntl):
 * ROMIO's ADIO_LOCKS feature stays 0, so ROMIO's generic read and write
 * paths never lock on top of the driver; instead, when fd->atomicity is
 * set, the driver's own contiguous and strided reads and writes lock
 * exactly the bytes they touch (shared for reads, exclusive for writes),
 * do the I/O and release. The bytes are described by the lock method
 * (hint tessera_lock_method: posix, the dissertation's POSIX locks, a
 * lock request per region; list; datatype, the default; list-split, the
 * dissertation's list locks, a request per message of lock_list_batch
 * regions (its 64 in the config reproduce §7.2.2); posix-seq,
 * independent one-region locks one after another; block, regions rounded
 * out to 4 KiB blocks) and taken by the protocol (tessera_lock_protocol:
 * two-phase, one-try, alt-try, the default).
 *
 * ROMIO's generic code still locks in a few places through
 * ADIOI_WRITE_LOCK and its siblings (the shared-pointer reads and writes
 * in atomic mode, the generic strided write, which this driver never
 * uses). Those macros call fcntl on fd_sys, which for a Tessera file is -1:
 * fcntl fails with EBADF, the one error ROMIO ignores, so the lock would
 * silently not happen. A patch (patches/08-*) sends them here instead:
 * ADIOI_TESSERA_Set_lock takes a real range lock, or stops the job saying
 * why (ROMIO does not look at the result, so a failure cannot be
 * returned). An access of the driver's own that such a lock covers does
 * not lock again: two locks of one process conflict like anyone's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ad_tessera.h"
#include "ad_tessera_dtype.h"
#include "adioi.h"

const char *const adt_lock_method_names[ADT_LOCK_METHODS] = {
	[ADT_LOCK_POSIX] = "posix",
	[ADT_LOCK_LIST] = "list",
	[ADT_LOCK_DTYPE] = "datatype",
	[ADT_LOCK_POSIX_SEQ] = "posix-seq",
	[ADT_LOCK_LIST_SPLIT] = "list-split",
	[ADT_LOCK_BLOCK] = "block",
};
const char *const adt_lock_protocol_names[ADT_LOCK_PROTOCOLS] = {
	[TESSERA_LOCK_TWO_PHASE] = "two-phase",
	[TESSERA_LOCK_ONE_TRY] = "one-try",
	[TESSERA_LOCK_ALT_TRY] = "alt-try",
};

static const char *mode_name(int mode)
{
	return mode == TESSERA_LOCK_READ ? "shared" : "exclusive";
}

/* Whether a lock of ROMIO's generic code holds [lo, hi) in `mode` or
 * stronger. */
static int generic_covers(const struct adt_file *s, int mode, uint64_t lo, uint64_t hi)
{
	for (const struct adt_generic_lock *g = s->generic; g; g = g->next)
		if ((g->mode == TESSERA_LOCK_WRITE || mode == TESSERA_LOCK_READ) &&
		    (uint64_t)g->offset <= lo && hi <= (uint64_t)(g->offset + g->len))
			return 1;
	return 0;
}

static int held_push(struct adt_held *h, tessera_lock *lk)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 4;
		tessera_lock **p = realloc(h->locks, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		h->locks = p;
		h->cap = cap;
	}
	h->locks[h->n++] = lk;
	return 0;
}

/* A lock's failure, in words (`cause`, else libtessera's); what was
 * taken is released. */
static int failed(ADIO_File fd, struct adt_held *h, int rc, int mode, const char *cause,
		  char *why, size_t whylen)
{
	struct adt_file *s = fd->fs_ptr;
	char ignored[8];

	snprintf(why, whylen, "%s lock (%s, %s): %s", mode_name(mode),
		 adt_lock_method_names[s->lock_method], adt_lock_protocol_names[s->lock_protocol],
		 cause ? cause : tessera_errmsg(tessera_file_fs(s->file)));
	adt_unlock(fd, h, ignored, sizeof(ignored));
	return rc;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* After a lock call begun at t0 (its rc, and the lock taken): keep the
 * lock in h, or say what failed. */
static int keep(ADIO_File fd, struct adt_held *h, int rc, tessera_lock *lk, int mode,
		uint64_t t0, char *why, size_t whylen)
{
	struct adt_file *s = fd->fs_ptr;

	s->n.lock_us += now_us() - t0;
	if (rc)
		return failed(fd, h, rc, mode, NULL, why, whylen);
	if (held_push(h, lk)) {
		tessera_unlock(lk);
		return failed(fd, h, -ENOMEM, mode, "out of memory", why, whylen);
	}
	s->n.locks++;
	s->n.lock_requests += tessera_lock_requests(lk);
	return 0;
}

static int cmp_region(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* posix-seq: one range lock per region, ascending (so that, waiting at
 * a region, the process holds nothing above it: no deadlock). */
static int lock_each(ADIO_File fd, int mode, const uint64_t *offs, const uint64_t *lens,
		     size_t n, struct adt_held *h, char *why, size_t whylen)
{
	struct adt_file *s = fd->fs_ptr;
	uint64_t (*reg)[2] = malloc((n ? n : 1) * sizeof(*reg));
	size_t m = 0;
	int rc = 0;

	if (!reg)
		return failed(fd, h, -ENOMEM, mode, "out of memory", why, whylen);
	for (size_t i = 0; i < n; i++) {
		reg[i][0] = offs[i];
		reg[i][1] = lens[i];
	}
	qsort(reg, n, sizeof(*reg), cmp_region);
	for (size_t i = 0; i < n; i++) { /* merge overlapping and touching regions */
		if (m && reg[i][0] <= reg[m - 1][0] + reg[m - 1][1]) {
			uint64_t end = reg[i][0] + reg[i][1];

			if (end > reg[m - 1][0] + reg[m - 1][1])
				reg[m - 1][1] = end - reg[m - 1][0];
			continue;
		}
		reg[m][0] = reg[i][0];
		reg[m++][1] = reg[i][1];
	}
	for (size_t i = 0; i < m && !rc; i++) {
		tessera_lock *lk = NULL;
		uint64_t t0 = now_us();

		rc = tessera_lock_range(s->file, mode, reg[i][0], reg[i][1], s->lock_protocol, &lk);
		rc = keep(fd, h, rc, lk, mode, t0, why, whylen);
	}
	free(reg);
	return rc;
}

/* The regions as the lock method sends a list: the dissertation's POSIX
 * locks (a request per region) and list locks (a request per 64 regions),
 * block-granular locks, or Tessera's list lock; list and datatype lock a
 * given list of regions alike (its dataloop would be that list again). */
static int lock_as_list(struct adt_file *s, int mode, const uint64_t *offs, const uint64_t *lens,
			size_t n, tessera_lock **lk)
{
	switch (s->lock_method) {
	case ADT_LOCK_POSIX:
		return tessera_lock_list_split(s->file, mode, offs, lens, n,
					       TESSERA_LOCK_SPLIT_REGION, s->lock_protocol, lk);
	case ADT_LOCK_LIST_SPLIT:
		return tessera_lock_list_split(s->file, mode, offs, lens, n,
					       TESSERA_LOCK_SPLIT_MESSAGE, s->lock_protocol, lk);
	case ADT_LOCK_BLOCK:
		return tessera_lock_blocks(s->file, mode, offs, lens, n, ADT_LOCK_BLOCK_SIZE,
					   s->lock_protocol, lk);
	default:
		return tessera_lock_list(s->file, mode, offs, lens, n, s->lock_protocol, lk);
	}
}

int adt_lock_regions(ADIO_File fd, int mode, const uint64_t *offs, const uint64_t *lens,
		     size_t n, struct adt_held *h, char *why, size_t whylen)
{
	struct adt_file *s = fd->fs_ptr;
	uint64_t lo = UINT64_MAX, hi = 0;
	tessera_lock *lk = NULL;
	uint64_t t0;
	int rc;

	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < n; i++) {
		if (offs[i] < lo)
			lo = offs[i];
		if (offs[i] + lens[i] > hi)
			hi = offs[i] + lens[i];
	}
	if (!n || generic_covers(s, mode, lo, hi))
		return 0;
	if (s->lock_method == ADT_LOCK_POSIX_SEQ)
		return lock_each(fd, mode, offs, lens, n, h, why, whylen);
	t0 = now_us();
	rc = lock_as_list(s, mode, offs, lens, n, &lk);
	return keep(fd, h, rc, lk, mode, t0, why, whylen);
}

/* The view's regions of stream bytes [pos, pos + len), as arrays. */
static int view_regions(const struct adt_view *v, uint64_t pos, uint64_t len, uint64_t **offs,
			uint64_t **lens, size_t *n)
{
	struct adt_walk w;
	size_t cap = 64;
	int64_t off;
	uint64_t l;

	*n = 0;
	*offs = malloc(cap * sizeof(**offs));
	*lens = malloc(cap * sizeof(**lens));
	if (!*offs || !*lens)
		return -ENOMEM;
	adt_walk_init(&w, v, pos, len);
	while (adt_walk_next(&w, UINT64_MAX, &off, &l)) {
		if (*n == cap) {
			uint64_t *o = realloc(*offs, 2 * cap * sizeof(*o)), *q;

			if (!o)
				return -ENOMEM;
			*offs = o;
			if (!(q = realloc(*lens, 2 * cap * sizeof(*q))))
				return -ENOMEM;
			*lens = q;
			cap *= 2;
		}
		(*offs)[*n] = (uint64_t)off;
		(*lens)[(*n)++] = l;
	}
	return 0;
}

int adt_lock_view(ADIO_File fd, int mode, const struct adt_view *v, uint64_t pos,
		  uint64_t len, struct adt_held *h, char *why, size_t whylen)
{
	struct adt_file *s = fd->fs_ptr;
	const struct tdl_dataloop *file_dl;
	uint64_t *offs = NULL, *lens = NULL;
	size_t n;
	int rc;

	memset(h, 0, sizeof(*h));
	if (!len || (s->generic && generic_covers(s, mode, (uint64_t)adt_view_start(v, pos),
						  (uint64_t)adt_view_end(v, pos, len))))
		return 0;
	/* A datatype lock needs the file type as a dataloop; one the
	 * converter cannot make (Fortran-only combiners, beyond the limits)
	 * is locked as a list, as its I/O goes. */
	if (s->lock_method == ADT_LOCK_DTYPE && !adt_dtype_get(fd->filetype, &file_dl)) {
		tessera_lock *lk = NULL;
		uint64_t t0 = now_us();

		rc = tessera_lock_dtype(s->file, mode, file_dl, fd->disp, pos, len, s->lock_protocol,
					&lk);
		return keep(fd, h, rc, lk, mode, t0, why, whylen);
	}
	rc = view_regions(v, pos, len, &offs, &lens, &n);
	if (rc)
		rc = failed(fd, h, rc, mode, "out of memory", why, whylen);
	else
		rc = adt_lock_regions(fd, mode, offs, lens, n, h, why, whylen);
	free(offs);
	free(lens);
	return rc;
}

int adt_unlock(ADIO_File fd, struct adt_held *h, char *why, size_t whylen)
{
	struct adt_file *s = fd->fs_ptr;
	uint64_t t0 = now_us();
	int rc = 0;

	/* Release in reverse order of taking. */
	while (h->n) {
		tessera_lock *lk = h->locks[--h->n];
		int r = tessera_unlock(lk);

		if (r && !rc) {
			rc = r;
			snprintf(why, whylen, "unlock: %s", tessera_errmsg(tessera_file_fs(s->file)));
		}
	}
	free(h->locks);
	memset(h, 0, sizeof(*h));
	s->n.unlock_us += now_us() - t0;
	return rc;
}

/* ------------------------------------------------- ROMIO's generic locks */

/* ROMIO ignores what its lock macros return, so a lock that cannot be
 * taken (or released) as asked stops the job here, saying why, as
 * ROMIO's own ADIOI_Set_lock does when fcntl fails. */
__attribute__((noreturn, format(printf, 2, 3))) static void generic_fatal(ADIO_File fd,
									 const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "tessera: %s: %s\n", fd->filename, msg);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	abort();
}

int ADIOI_TESSERA_Set_lock(ADIO_File fd, int cmd, int type, ADIO_Offset offset, int whence,
			   ADIO_Offset len)
{
	struct adt_file *s = fd->fs_ptr;
	struct adt_generic_lock *g, **p;
	int mode = type == F_RDLCK ? TESSERA_LOCK_READ : TESSERA_LOCK_WRITE, rc;

	if (len == 0) /* as ROMIO's ADIOI_Set_lock: nothing to lock */
		return MPI_SUCCESS;
	if (!s || !s->file)
		generic_fatal(fd, "ROMIO asked for a byte-range lock on a file that is not open");
	if (whence != SEEK_SET || offset < 0 || len < 0 || offset > INT64_MAX - len)
		generic_fatal(fd, "ROMIO asked for a lock the driver cannot take (offset %lld, "
			      "length %lld, whence %d)", (long long)offset, (long long)len, whence);
	if (type == F_UNLCK) {
		for (p = &s->generic; *p; p = &(*p)->next)
			if ((*p)->offset == offset && (*p)->len == len)
				break;
		if (!*p)
			generic_fatal(fd, "ROMIO released a lock it does not hold (offset %lld, "
				      "length %lld)", (long long)offset, (long long)len);
		g = *p;
		*p = g->next;
		rc = tessera_unlock(g->lock);
		free(g);
		if (rc)
			generic_fatal(fd, "unlock of bytes %lld to %lld for ROMIO: %s",
				      (long long)offset, (long long)(offset + len),
				      tessera_errmsg(tessera_file_fs(s->file)));
		return MPI_SUCCESS;
	}
	if ((type != F_RDLCK && type != F_WRLCK) || cmd != F_SETLKW)
		generic_fatal(fd, "ROMIO asked for lock command %d type %d, which the driver does "
			      "not take", cmd, type);
	g = calloc(1, sizeof(*g));
	if (!g)
		generic_fatal(fd, "out of memory for a lock ROMIO asked for");
	rc = tessera_lock_range(s->file, mode, (uint64_t)offset, (uint64_t)len, s->lock_protocol,
				&g->lock);
	if (rc)
		generic_fatal(fd, "%s lock of bytes %lld to %lld for ROMIO: %s", mode_name(mode),
			      (long long)offset, (long long)(offset + len),
			      tessera_errmsg(tessera_file_fs(s->file)));
	g->offset = offset;
	g->len = len;
	g->mode = mode;
	g->next = s->generic;
	s->generic = g;
	s->n.generic_locks++;
	return MPI_SUCCESS;
}

void adt_generic_release_all(struct adt_file *s)
{
	while (s->generic) {
		struct adt_generic_lock *g = s->generic;

		s->generic = g->next;
		tessera_unlock(g->lock);
		free(g);
	}
}
