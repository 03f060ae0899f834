/*
 * ad_tessera_strided.c - strided (noncontiguous) reads and writes, by the
 * method the file's hints chose (locked in atomic mode), and the
 * collective entry points.
 *
 * An access is the byte range [pos, pos + len) of the view's data stream.
 * Memory is one contiguous run of those bytes: the user's buffer when the
 * memory type is contiguous, else a packed copy (MPI_Pack / MPI_Unpack),
 * except for datatype I/O, which hands libtessera the memory type too,
 * and list I/O with the hint tessera_mem_pack=false, which sends the
 * memory as an iovec list walked from the flattened memory type.
 *
 *   posix    one pread/pwrite per file region
 *   sieve    reads: one read per window of ind_rd_buffer_size bytes
 *            covering many regions; writes: lock the window, read it,
 *            patch it, write it back, unlock (so other writers' bytes in
 *            the window are safe)
 *   list     the regions travel as lists (tessera_*_list)
 *   datatype the view travels as a dataloop (tessera_*_dtype)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad_tessera.h"
#include "ad_tessera_dtype.h"
#include "adioi.h"

#define LIST_CHUNK 65536 /* file regions per list call */

struct access {
	ADIO_File fd;
	struct adt_file *s;
	struct adt_view view;
	uint64_t pos, len;     /* stream range */
	char *stream;          /* len contiguous bytes of data */
	char *packed;          /* stream, when it is a packed copy (owned) */
	int mem_list;          /* memory goes as an iovec list (no stream) */
	struct adt_view mem;   /* then: the memory type, tiled from mem_base */
	char *mem_base;
	const char *what;      /* "read" or "write", for messages */
	char why[1024];        /* a failure outside libtessera, in words */
};

static int prepare(struct access *a, ADIO_File fd, int count, MPI_Datatype datatype,
		   int file_ptr_type, ADIO_Offset offset, int writing, const char *myname,
		   int *error_code)
{
	MPI_Count size;
	int rc;

	memset(a, 0, sizeof(*a));
	a->fd = fd;
	a->s = fd->fs_ptr;
	a->what = writing ? "write" : "read";
	if (!a->s || !a->s->file) {
		*error_code = adt_error(myname, __LINE__, -EBADF, "%s %s: file is not open", a->what,
					fd->filename);
		return -1;
	}
	MPI_Type_size_x(datatype, &size);
	a->len = (uint64_t)size * (uint64_t)count;
	/* An access of no bytes needs no view, and succeeds whatever the view
	 * is: a rank whose view holds no data (a filetype of size 0) takes
	 * part in collective calls with count 0, as on ROMIO's own drivers.
	 * The stream position stays 0; nothing reads it (run, the locks and
	 * finish skip an empty access). */
	if (a->len == 0)
		return 0;
	rc = adt_view_init(fd, &a->view);
	if (rc) {
		*error_code = adt_error(myname, __LINE__, rc,
					"%s %s: %llu bytes, but the file view holds no data",
					a->what, fd->filename, (unsigned long long)a->len);
		return -1;
	}
	if (file_ptr_type == ADIO_EXPLICIT_OFFSET)
		a->pos = (uint64_t)offset * (uint64_t)fd->etype_size;
	else
		a->pos = adt_view_stream_pos(&a->view, fd->fp_ind);
	return 0;
}

/* Where the access's memory is, for `method`: the user's buffer when the
 * memory type is contiguous; an iovec list walked from the flattened
 * memory type for list I/O when the file's hint says not to pack
 * (tessera_mem_pack=false); else a packed copy (datatype I/O replaces it
 * by the memory type's dataloop, by_dtype). */
static int place_memory(struct access *a, void *buf, int count, MPI_Datatype datatype,
			int method, int writing, const char *myname, int *error_code)
{
	int contig, position = 0;

	ADIOI_Datatype_iscontig(datatype, &contig);
	if (contig || a->len == 0) {
		a->stream = buf;
		return 0;
	}
	if (method == ADT_LIST && !a->s->mem_pack && !adt_mem_view_init(a->fd, datatype, &a->mem)) {
		a->mem_list = 1;
		a->mem_base = buf;
		return 0;
	}
	a->packed = malloc(a->len);
	if (!a->packed) {
		*error_code = adt_error(myname, __LINE__, -ENOMEM,
					"%s %s: out of memory for %llu bytes", a->what,
					a->fd->filename, (unsigned long long)a->len);
		return -1;
	}
	a->stream = a->packed;
	if (writing)
		MPI_Pack(buf, count, datatype, a->packed, (int)a->len, &position, MPI_COMM_SELF);
	return 0;
}

static void finish(struct access *a, void *buf, int count, MPI_Datatype datatype,
		   int file_ptr_type, ADIO_Status *status, int reading)
{
	if (reading && a->packed) {
		int position = 0;

		MPI_Unpack(a->packed, (int)a->len, &position, buf, count, datatype, MPI_COMM_SELF);
	}
	if (file_ptr_type == ADIO_INDIVIDUAL && a->len)
		a->fd->fp_ind = adt_view_end(&a->view, a->pos, a->len);
	a->fd->fp_sys_posn = -1;
	if (reading)
		a->s->n.bytes_read += a->len;
	else
		a->s->n.bytes_written += a->len;
#ifdef HAVE_STATUS_SET_BYTES
	MPIR_Status_set_bytes(status, datatype, (MPI_Count)a->len);
#else
	(void)status;
#endif
	free(a->packed);
	a->packed = NULL;
}

/* Read exactly len bytes at off, zeros past the end of file. */
static int read_full(struct access *a, char *dst, uint64_t len, uint64_t off)
{
	uint64_t done = 0;
	ssize_t n;

	while (done < len) {
		n = tessera_pread(a->s->file, dst + done, len - done, off + done);
		a->s->n.requests++;
		if (n < 0)
			return (int)n;
		if (n == 0) {
			memset(dst + done, 0, len - done);
			break;
		}
		done += (uint64_t)n;
	}
	return 0;
}

static int write_full(struct access *a, const char *src, uint64_t len, uint64_t off)
{
	uint64_t done = 0;
	ssize_t n;

	while (done < len) {
		n = tessera_pwrite(a->s->file, src + done, len - done, off + done);
		a->s->n.requests++;
		if (n < 0)
			return (int)n;
		if (n == 0) {
			snprintf(a->why, sizeof(a->why), "wrote nothing at offset %llu",
				 (unsigned long long)(off + done));
			return -EIO;
		}
		done += (uint64_t)n;
	}
	return 0;
}

static int by_posix(struct access *a, int writing)
{
	struct adt_walk w;
	int64_t off;
	uint64_t len, at = 0;
	int rc;

	adt_walk_init(&w, &a->view, a->pos, a->len);
	while (adt_walk_next(&w, UINT64_MAX, &off, &len)) {
		rc = writing ? write_full(a, a->stream + at, len, (uint64_t)off)
			     : read_full(a, a->stream + at, len, (uint64_t)off);
		if (rc)
			return rc;
		at += len;
	}
	return 0;
}

/* Data sieving: windows of at most bufsize bytes, each covering as many
 * consecutive regions as fit; a region larger than the window goes alone
 * and directly. The plan comes first, so that the windows are known before
 * any is locked. */
struct sieve_region {
	int64_t off;
	uint64_t len;
};
struct sieve_window {
	int64_t start, end;    /* file bytes [start, end) */
	size_t first, n;       /* its regions */
	int direct;            /* one region bigger than a window: no sieving */
};
struct sieve_plan {
	struct sieve_region *r;
	struct sieve_window *w;
	size_t nr, nw;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;

	if (n < *cap)
		return 0;
	q = realloc(*p, 2 * *cap * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap *= 2;
	return 0;
}

static int sieve_plan(struct access *a, uint64_t bufsize, struct sieve_plan *p)
{
	size_t rcap = 256, wcap = 16;
	struct adt_walk w;
	int64_t off;
	uint64_t len;

	memset(p, 0, sizeof(*p));
	p->r = malloc(rcap * sizeof(*p->r));
	p->w = malloc(wcap * sizeof(*p->w));
	if (!p->r || !p->w)
		return -ENOMEM;
	adt_walk_init(&w, &a->view, a->pos, a->len);
	while (adt_walk_next(&w, UINT64_MAX, &off, &len)) {
		struct sieve_window *win = p->nw ? &p->w[p->nw - 1] : NULL;

		if (grow((void **)&p->r, &rcap, p->nr, sizeof(*p->r)))
			return -ENOMEM;
		p->r[p->nr].off = off;
		p->r[p->nr].len = len;
		/* Joins the current window if it fits; else opens one. */
		if (win && !win->direct && len < bufsize && off >= win->start &&
		    (uint64_t)(off + (int64_t)len - win->start) <= bufsize) {
			win->n++;
			if (off + (int64_t)len > win->end)
				win->end = off + (int64_t)len;
		} else {
			if (grow((void **)&p->w, &wcap, p->nw, sizeof(*p->w)))
				return -ENOMEM;
			p->w[p->nw++] = (struct sieve_window){ off, off + (int64_t)len, p->nr, 1,
							       len >= bufsize };
		}
		p->nr++;
	}
	return 0;
}

/* Sieving writes lock their windows, which hold bytes of other writers
 * between the access's own: in atomic mode all of them for the whole
 * call, else each around its read-modify-write. */
static int lock_windows(struct access *a, const struct sieve_plan *p, size_t first, size_t n,
			struct adt_held *h)
{
	uint64_t *offs = malloc((n ? n : 1) * sizeof(*offs));
	uint64_t *lens = malloc((n ? n : 1) * sizeof(*lens));
	int rc = -ENOMEM;

	if (offs && lens) {
		for (size_t i = 0; i < n; i++) {
			offs[i] = (uint64_t)p->w[first + i].start;
			lens[i] = (uint64_t)(p->w[first + i].end - p->w[first + i].start);
		}
		rc = adt_lock_regions(a->fd, TESSERA_LOCK_WRITE, offs, lens, n, h, a->why,
				      sizeof(a->why));
	} else {
		snprintf(a->why, sizeof(a->why), "out of memory for the windows' locks");
	}
	free(offs);
	free(lens);
	return rc;
}

/* Releases h's locks. The first failure wins: an unlock after a failed
 * transfer says nothing into a->why, which names the transfer's. */
static int unlock_after(struct access *a, struct adt_held *h, int rc)
{
	char ignored[8];
	int rc2;

	if (!h->n)
		return rc;
	rc2 = adt_unlock(a->fd, h, rc ? ignored : a->why, rc ? sizeof(ignored) : sizeof(a->why));
	return rc ? rc : rc2;
}

/* A window of one region bigger than the buffer: moved directly. */
static int sieve_direct(struct access *a, const struct sieve_region *r, int writing,
			uint64_t *at)
{
	int rc = writing ? write_full(a, a->stream + *at, r->len, (uint64_t)r->off)
			 : read_full(a, a->stream + *at, r->len, (uint64_t)r->off);

	*at += r->len;
	return rc;
}

/* Moves the window's regions between the stream (from *at on) and the
 * window's bytes in win: into win when writing, out of it when reading. */
static void sieve_copy(struct access *a, const struct sieve_window *w,
		       const struct sieve_region *r, char *win, int writing, uint64_t *at)
{
	for (size_t i = 0; i < w->n; i++) {
		if (writing)
			memcpy(win + (r[i].off - w->start), a->stream + *at, r[i].len);
		else
			memcpy(a->stream + *at, win + (r[i].off - w->start), r[i].len);
		*at += r[i].len;
	}
}

/* Window k: read it whole, then copy the regions out (reads) or patch
 * them in and write it back (writes), under the window's own lock unless
 * the call holds all of them (atomic). */
static int sieve_window(struct access *a, const struct sieve_plan *p, size_t k, char *win,
			int writing, int atomic, uint64_t *at)
{
	const struct sieve_window *w = &p->w[k];
	const struct sieve_region *r = &p->r[w->first];
	uint64_t span = (uint64_t)(w->end - w->start);
	struct adt_held one;
	int rc;

	if (w->direct)
		return sieve_direct(a, r, writing, at);
	memset(&one, 0, sizeof(one));
	if (writing && !atomic && (rc = lock_windows(a, p, k, 1, &one)))
		return rc;
	rc = read_full(a, win, span, (uint64_t)w->start);
	if (!rc)
		sieve_copy(a, w, r, win, writing, at);
	if (!rc && writing)
		rc = write_full(a, win, span, (uint64_t)w->start);
	return unlock_after(a, &one, rc);
}

static int by_sieve(struct access *a, int writing)
{
	uint64_t bufsize = (uint64_t)(writing ? a->fd->hints->ind_wr_buffer_size
					      : a->fd->hints->ind_rd_buffer_size);
	int atomic = writing && a->fd->atomicity;
	struct adt_held all;
	struct sieve_plan p;
	uint64_t at = 0;
	char *win = NULL;
	int rc;

	memset(&all, 0, sizeof(all));
	if (bufsize == 0)
		bufsize = 4 << 20;
	rc = sieve_plan(a, bufsize, &p);
	if (!rc && !(win = malloc(bufsize)))
		rc = -ENOMEM;
	if (!rc && atomic)
		rc = lock_windows(a, &p, 0, p.nw, &all);
	for (size_t k = 0; k < p.nw && !rc; k++)
		rc = sieve_window(a, &p, k, win, writing, atomic, &at);
	rc = unlock_after(a, &all, rc);
	free(win);
	free(p.r);
	free(p.w);
	return rc;
}

/* One list call's two sides: file regions and memory pieces, at most
 * LIST_CHUNK of each, describing the same number of stream bytes. */
struct list_round {
	uint64_t *offs, *lens;  /* file regions */
	struct iovec *iov;      /* memory pieces */
	size_t nf, nm;
	uint64_t bytes;
};

/* The next round of a packed (or contiguous) stream: file regions up to
 * LIST_CHUNK, memory the next run of the stream. */
static void round_stream(struct access *a, struct adt_walk *fw, uint64_t at,
			 struct list_round *r)
{
	int64_t off;
	uint64_t len;

	r->nf = 0;
	r->bytes = 0;
	while (r->nf < LIST_CHUNK && adt_walk_next(fw, UINT64_MAX, &off, &len)) {
		r->offs[r->nf] = (uint64_t)off;
		r->lens[r->nf++] = len;
		r->bytes += len;
	}
	r->iov[0].iov_base = a->stream + at;
	r->iov[0].iov_len = r->bytes;
	r->nm = r->bytes ? 1 : 0;
}

/* The next round of a memory list: the file side leads (whole regions),
 * memory follows capped to match it; when the memory side is full first,
 * the last file region is cut where memory ends (its rest starts the next
 * round). Invariant between steps: memory bytes <= file bytes. */
static void round_mem_list(struct access *a, struct adt_walk *fw, struct adt_walk *mw,
			   struct list_round *r)
{
	uint64_t tf = 0, tm = 0, len, last_start = 0;
	struct adt_walk before = *fw;
	int64_t off;

	r->nf = r->nm = 0;
	for (;;) {
		if (tf == tm) {
			if (r->nf == LIST_CHUNK || r->nm == LIST_CHUNK)
				break;
			before = *fw;
			if (!adt_walk_next(fw, UINT64_MAX, &off, &len))
				break;
			r->offs[r->nf] = (uint64_t)off;
			r->lens[r->nf++] = len;
			last_start = tf;
			tf += len;
		} else if (r->nm == LIST_CHUNK) {
			/* cut the last file region to the memory's end */
			*fw = before;
			adt_walk_next(fw, tm - last_start, &off, &len);
			r->lens[r->nf - 1] = len;
			tf = tm;
			break;
		} else {
			if (!adt_walk_next(mw, tf - tm, &off, &len))
				break; /* cannot happen: both sides hold a->len bytes */
			r->iov[r->nm].iov_base = a->mem_base + off;
			r->iov[r->nm++].iov_len = len;
			tm += len;
		}
	}
	r->bytes = tm;
}

static int by_list(struct access *a, int writing)
{
	struct list_round r = { malloc(LIST_CHUNK * sizeof(*r.offs)),
				malloc(LIST_CHUNK * sizeof(*r.lens)),
				malloc((a->mem_list ? LIST_CHUNK : 1) * sizeof(*r.iov)), 0, 0, 0 };
	struct adt_walk fw, mw;
	uint64_t at = 0;
	ssize_t got;
	int rc = 0;

	if (!r.offs || !r.lens || !r.iov) {
		rc = -ENOMEM;
		goto out;
	}
	adt_walk_init(&fw, &a->view, a->pos, a->len);
	if (a->mem_list)
		adt_walk_init(&mw, &a->mem, 0, a->len);
	while (at < a->len) {
		if (a->mem_list)
			round_mem_list(a, &fw, &mw, &r);
		else
			round_stream(a, &fw, at, &r);
		if (!r.bytes)
			break;
		got = writing ? tessera_write_list(a->s->file, r.iov, r.nm, r.offs, r.lens, r.nf)
			      : tessera_read_list(a->s->file, r.iov, r.nm, r.offs, r.lens, r.nf);
		a->s->n.requests++;
		a->s->n.mem_list_calls += a->mem_list;
		if (got < 0) {
			rc = (int)got;
			goto out;
		}
		if ((uint64_t)got != r.bytes) {
			snprintf(a->why, sizeof(a->why), "list I/O moved %lld of %llu bytes",
				 (long long)got, (unsigned long long)r.bytes);
			rc = -EIO;
			goto out;
		}
		at += r.bytes;
	}
out:
	free(r.offs);
	free(r.lens);
	free(r.iov);
	return rc;
}

static int by_dtype(struct access *a, const void *buf, int count, MPI_Datatype datatype,
		    int writing)
{
	const struct tdl_dataloop *file_dl, *mem_dl = NULL;
	uint64_t mem_count = a->len;
	ssize_t got;
	int rc;

	rc = adt_dtype_get(a->fd->filetype, &file_dl);
	if (rc) {
		snprintf(a->why, sizeof(a->why), "the file type has no dataloop: %s",
			 adt_dtype_why(rc));
		return rc;
	}
	if (a->packed) { /* noncontiguous memory: describe it instead of packing */
		rc = adt_dtype_get(datatype, &mem_dl);
		if (rc) {
			snprintf(a->why, sizeof(a->why), "the memory type has no dataloop: %s",
				 adt_dtype_why(rc));
			return rc;
		}
		mem_count = (uint64_t)count;
		free(a->packed);
		a->packed = NULL;
		a->stream = (char *)buf;
	}
	got = writing ? tessera_write_dtype(a->s->file, a->stream, mem_count, mem_dl, file_dl,
					    a->fd->disp, a->pos)
		      : tessera_read_dtype(a->s->file, a->stream, mem_count, mem_dl, file_dl,
					   a->fd->disp, a->pos);
	a->s->n.requests++;
	if (got < 0)
		return (int)got;
	if ((uint64_t)got != a->len) {
		snprintf(a->why, sizeof(a->why), "datatype I/O moved %lld of %llu bytes",
			 (long long)got, (unsigned long long)a->len);
		return -EIO;
	}
	return 0;
}

/* Move the access by *method; a type the dataloop converter does not know
 * (Fortran-only combiners) or cannot hold (beyond the dataloop limits)
 * goes by list I/O instead, and *method says so. */
static int run(struct access *a, int *method, const void *buf, int count, MPI_Datatype datatype,
	       int writing)
{
	int rc;

	if (a->len == 0)
		return 0;
	switch (*method) {
	case ADT_POSIX: return by_posix(a, writing);
	case ADT_SIEVE: return by_sieve(a, writing);
	case ADT_LIST: return by_list(a, writing);
	case ADT_DTYPE:
		rc = by_dtype(a, buf, count, datatype, writing);
		if (rc == -ENOTSUP || (rc == -EINVAL && a->why[0])) {
			a->why[0] = '\0';
			*method = ADT_LIST;
			rc = by_list(a, writing);
		}
		return rc;
	}
	return -EINVAL;
}

/* The method of an access of a versioned file, whose one library call is
 * one version (atomic without a lock): in atomic mode one list call
 * rather than a call per region (posix) or per window (sieve); and never
 * a sieving write, whose read-modify-write of windows others write
 * meanwhile only a lock makes safe. Other files: the hint's method. */
static int versioned_method(const struct adt_file *s, int atomic, int writing, int method)
{
	if (!s->versioned)
		return method;
	if (method == ADT_SIEVE && (writing || atomic))
		return ADT_LIST;
	if (method == ADT_POSIX && atomic)
		return ADT_LIST;
	return method;
}

/* Atomic mode: the exact bytes, locked by the lock method (a versioned
 * file: none); sieving writes lock their windows themselves (by_sieve).
 * Then the access by its method, and the locks released. */
static int locked_run(struct access *a, int *method, const void *buf, int count,
		      MPI_Datatype datatype, int writing)
{
	ADIO_File fd = a->fd;
	struct adt_held held;
	char ignored[8];
	int rc = 0, rc2;

	memset(&held, 0, sizeof(held));
	if (fd->atomicity && a->len && !a->s->versioned && !(writing && *method == ADT_SIEVE))
		rc = adt_lock_view(fd, writing ? TESSERA_LOCK_WRITE : TESSERA_LOCK_READ, &a->view,
				   a->pos, a->len, &held, a->why, sizeof(a->why));
	if (rc)
		return rc;
	rc = run(a, method, buf, count, datatype, writing);
	if (!held.n)
		return rc;
	rc2 = adt_unlock(fd, &held, rc ? ignored : a->why, rc ? sizeof(ignored) : sizeof(a->why));
	return rc ? rc : rc2;
}

/* The error code of a failed access: libtessera's words, unless the
 * failure was the driver's own. */
static int access_error(struct access *a, int rc, int method, const char *myname)
{
	const char *lib = tessera_errmsg(tessera_file_fs(a->s->file));
	ADIO_File fd = a->fd;

	return ADT_ERROR(rc, "%s%s %s (%s, %llu bytes at stream byte %llu): %s",
			 fd->atomicity ? "atomic " : "", a->what, fd->filename,
			 adt_method_names[method], (unsigned long long)a->len,
			 (unsigned long long)a->pos,
			 a->why[0] ? a->why : rc == -ENOMEM ? "out of memory"
			 : lib[0] ? lib : strerror(-rc));
}

int64_t adt_strided_io(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		       int *error_code, int writing, const char *myname)
{
	struct access a;
	int rc, method;

	if (prepare(&a, fd, count, datatype, file_ptr_type, offset, writing, myname, error_code))
		return -1;
	method = versioned_method(a.s, fd->atomicity, writing,
				  writing ? a.s->write_method : a.s->read_method);
	if (place_memory(&a, buf, count, datatype, method, writing, myname, error_code))
		return -1;
	rc = locked_run(&a, &method, buf, count, datatype, writing);
	if (a.mem_list)
		adt_mem_view_done(fd, datatype);
	if (rc) {
		*error_code = access_error(&a, rc, method, myname);
		free(a.packed);
		return -1;
	}
	if (writing)
		a.s->n.strided_writes[method]++;
	else
		a.s->n.strided_reads[method]++;
	finish(&a, buf, count, datatype, file_ptr_type, status, !writing);
	if (a.mem_list)
		adt_publish_counters(fd); /* tessera_mem_list_calls changed */
	*error_code = MPI_SUCCESS;
	return (int64_t)a.len;
}

void ADIOI_TESSERA_ReadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			       int *error_code)
{
	adt_strided_io(fd, buf, count, datatype, file_ptr_type, offset, status, error_code, 0,
		       "ADIOI_TESSERA_READSTRIDED");
}

void ADIOI_TESSERA_WriteStrided(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
				int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				int *error_code)
{
	adt_strided_io(fd, (void *)buf, count, datatype, file_ptr_type, offset, status,
		       error_code, 1, "ADIOI_TESSERA_WRITESTRIDED");
}

/* ------------------------------------------------------------ collective
 *
 * Two-phase I/O moves each rank's data through aggregators, in pieces and
 * at different times (and fills the holes of a write by reading them
 * first), so no lock a rank could hold would make its call atomic. In
 * atomic mode a collective call is therefore the rank's own access,
 * locked, as an independent call would be: MPI gives collective calls no
 * other meaning. */
static int64_t own_access(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			  int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			  int *error_code, int writing, const char *myname)
{
	int buf_contig, file_contig;

	ADIOI_Datatype_iscontig(datatype, &buf_contig);
	ADIOI_Datatype_iscontig(fd->filetype, &file_contig);
	if (!(buf_contig && file_contig))
		return adt_strided_io(fd, buf, count, datatype, file_ptr_type, offset, status,
				      error_code, writing, myname);
	if (file_ptr_type == ADIO_EXPLICIT_OFFSET)
		offset = fd->disp + (ADIO_Offset)fd->etype_size * offset;
	return adt_contig_io(fd, buf, count, datatype, file_ptr_type, offset, status,
			     error_code, writing, myname);
}

/* ------------------------------------------------------------ two-phase exchange
 *
 * What ROMIO's two-phase code sends between ranks is not counted by it,
 * and its exchange is MPI point-to-point inside ROMIO. So the driver
 * repeats ROMIO's own partition before handing the call over: the same
 * functions (ADIOI_Calc_my_off_len, ADIOI_Calc_file_domains,
 * ADIOI_Calc_aggregator) on the same inputs (every rank's first and last
 * offset, the cb_nodes aggregators of fd->hints->ranklist, the file's
 * min_fdomain_size and striping_unit) give each of this rank's bytes the
 * aggregator that reads or writes it; the bytes whose aggregator is
 * another rank are the bytes the exchange moves (ROMIO copies the rest
 * within the rank). The cost is one allgather of two offsets and one
 * flattening of the rank's access, beside ROMIO's own. Not counted:
 * persistent file realms (cb_pfr, off by default), whose domains ROMIO
 * computes elsewhere. */

/* The interleaving check of ROMIO's collective calls: 0 when ROMIO takes
 * the independent path (cb automatic and the ranks' ranges in order). */
static int romio_goes_two_phase(int hint, const ADIO_Offset *st, const ADIO_Offset *end,
				int nprocs)
{
	int interleaved = 0;

	for (int i = 1; i < nprocs; i++)
		if (st[i] < end[i - 1] && st[i] <= end[i])
			interleaved++;
	return hint != ADIOI_HINT_DISABLE && (interleaved || hint != ADIOI_HINT_AUTO);
}

/* This rank's bytes among (offs, lens)[0..n) whose aggregator is another rank. */
static uint64_t bytes_elsewhere(ADIO_File fd, const ADIO_Offset *offs, const ADIO_Offset *lens,
				int n, ADIO_Offset min_st, ADIO_Offset fd_size,
				ADIO_Offset *fd_start, ADIO_Offset *fd_end)
{
	uint64_t bytes = 0;
	int myrank;

	MPI_Comm_rank(fd->comm, &myrank);
	for (int i = 0; i < n; i++) {
		ADIO_Offset off = offs[i], rem = lens[i], len;

		while (rem > 0) {
			len = rem;
			if (ADIOI_Calc_aggregator(fd, off, min_st, &len, fd_size, fd_start, fd_end) !=
			    myrank)
				bytes += (uint64_t)len;
			off += len;
			rem -= len;
		}
	}
	return bytes;
}

uint64_t adt_coll_exchange_bytes(ADIO_File fd, int count, MPI_Datatype datatype,
				 int file_ptr_type, ADIO_Offset offset, int writing)
{
	int hint = writing ? fd->hints->cb_write : fd->hints->cb_read, nprocs, n = 0;
	ADIO_Offset *offs = NULL, *lens = NULL, *st, *end, mine[2], *both;
	ADIO_Offset *fd_start = NULL, *fd_end = NULL, min_st, fd_size, orig_fp = fd->fp_ind;
	uint64_t bytes = 0;

	if (hint == ADIOI_HINT_DISABLE || fd->hints->cb_pfr != ADIOI_HINT_DISABLE)
		return 0;
	MPI_Comm_size(fd->comm, &nprocs);
	ADIOI_Calc_my_off_len(fd, count, datatype, file_ptr_type, offset, &offs, &lens, &mine[0],
			      &mine[1], &n);
	fd->fp_ind = orig_fp; /* it advanced the individual pointer: ROMIO will */
	both = ADIOI_Malloc(4 * (size_t)nprocs * sizeof(*both));
	MPI_Allgather(mine, 2, ADIO_OFFSET, both, 2, ADIO_OFFSET, fd->comm);
	st = both + 2 * nprocs;
	end = st + nprocs;
	for (int i = 0; i < nprocs; i++) {
		st[i] = both[2 * i];
		end[i] = both[2 * i + 1];
	}
	if (romio_goes_two_phase(hint, st, end, nprocs)) {
		ADIOI_Calc_file_domains(st, end, nprocs, fd->hints->cb_nodes, &min_st, &fd_start,
					&fd_end, fd->hints->min_fdomain_size, &fd_size,
					fd->hints->striping_unit);
		bytes = bytes_elsewhere(fd, offs, lens, n, min_st, fd_size, fd_start, fd_end);
		ADIOI_Free(fd_start);
#ifndef ROMIO_INSIDE_MPICH
		ADIOI_Free(fd_end); /* MPICH's ROMIO allocates both as one */
#endif
	}
	ADIOI_Free(both);
	ADIOI_Free(offs);
#ifndef ROMIO_INSIDE_MPICH
	ADIOI_Free(lens); /* MPICH's ROMIO allocates both lists as one */
#endif
	return bytes;
}

/* Before ROMIO's collective call (not in atomic mode: see above): count
 * this rank's exchanged bytes. */
static void count_exchange(ADIO_File fd, int count, MPI_Datatype datatype, int file_ptr_type,
			   ADIO_Offset offset, int writing)
{
	struct adt_file *s = fd->fs_ptr;
	uint64_t bytes = adt_coll_exchange_bytes(fd, count, datatype, file_ptr_type, offset,
						 writing);

	if (!s)
		return;
	if (writing)
		s->n.coll_bytes_sent += bytes;
	else
		s->n.coll_bytes_received += bytes;
}

void ADIOI_TESSERA_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				   int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				   int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_reads++;
	if (fd->atomicity) {
		own_access(fd, buf, count, datatype, file_ptr_type, offset, status, error_code, 0,
			   "ADIOI_TESSERA_READSTRIDEDCOLL");
		return;
	}
	count_exchange(fd, count, datatype, file_ptr_type, offset, 0);
	ADIOI_GEN_ReadStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
				  error_code);
	adt_publish_counters(fd);
}

void ADIOI_TESSERA_WriteStridedColl(ADIO_File fd, const void *buf, int count,
				    MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
				    ADIO_Status *status, int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_writes++;
	if (fd->atomicity) {
		own_access(fd, (void *)buf, count, datatype, file_ptr_type, offset, status,
			   error_code, 1, "ADIOI_TESSERA_WRITESTRIDEDCOLL");
		return;
	}
	count_exchange(fd, count, datatype, file_ptr_type, offset, 1);
	ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
				   error_code);
	adt_publish_counters(fd);
}

/* Nonblocking collective calls: in atomic mode the rank's own access,
 * done at once (as every call of this driver is), then a completed
 * request; else ROMIO's nonblocking two-phase. */
static void own_access_request(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, MPI_Request *request,
			       int *error_code, int writing, const char *myname)
{
	ADIO_Status status;
	int64_t n = own_access(fd, buf, count, datatype, file_ptr_type, offset, &status,
			       error_code, writing, myname);

	MPIO_Completed_request_create(&fd, n < 0 ? 0 : n, error_code, request);
}

void ADIOI_TESSERA_IreadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				    int file_ptr_type, ADIO_Offset offset, MPI_Request *request,
				    int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_reads++;
#ifdef HAVE_MPI_GREQUEST_EXTENSIONS
	if (!fd->atomicity) {
		count_exchange(fd, count, datatype, file_ptr_type, offset, 0);
		ADIOI_GEN_IreadStridedColl(fd, buf, count, datatype, file_ptr_type, offset, request,
					   error_code);
		adt_publish_counters(fd);
		return;
	}
#endif
	own_access_request(fd, buf, count, datatype, file_ptr_type, offset, request, error_code,
			   0, "ADIOI_TESSERA_IREADSTRIDEDCOLL");
}

void ADIOI_TESSERA_IwriteStridedColl(ADIO_File fd, const void *buf, int count,
				     MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
				     MPI_Request *request, int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_writes++;
#ifdef HAVE_MPI_GREQUEST_EXTENSIONS
	if (!fd->atomicity) {
		count_exchange(fd, count, datatype, file_ptr_type, offset, 1);
		ADIOI_GEN_IwriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset,
					    request, error_code);
		adt_publish_counters(fd);
		return;
	}
#endif
	own_access_request(fd, (void *)buf, count, datatype, file_ptr_type, offset, request,
			   error_code, 1, "ADIOI_TESSERA_IWRITESTRIDEDCOLL");
}
