/*
 * ad_tessera_strided.c - strided (noncontiguous) reads and writes, by the
 * method the file's hints chose (locked in atomic mode), and the
 * collective entry points.
 *
 * An access is the byte range [pos, pos + len) of the view's data stream.
 * Memory is one contiguous run of those bytes: the user's buffer when the
 * memory type is contiguous, else a packed copy (MPI_Pack / MPI_Unpack),
 * except for datatype I/O, which hands libtessera the memory type too.
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
	const char *what;      /* "read" or "write", for messages */
	char why[1024];        /* a failure outside libtessera, in words */
};

static int prepare(struct access *a, ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		   int file_ptr_type, ADIO_Offset offset, int writing, const char *myname,
		   int *error_code)
{
	MPI_Count size;
	int contig, rc;

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
	ADIOI_Datatype_iscontig(datatype, &contig);
	if (contig) {
		a->stream = buf;
		return 0;
	}
	a->packed = malloc(a->len ? a->len : 1);
	if (!a->packed) {
		*error_code = adt_error(myname, __LINE__, -ENOMEM,
					"%s %s: out of memory for %llu bytes", a->what,
					fd->filename, (unsigned long long)a->len);
		return -1;
	}
	a->stream = a->packed;
	if (writing) {
		int position = 0;

		MPI_Pack(buf, count, datatype, a->packed, (int)a->len, &position, MPI_COMM_SELF);
	}
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

static int by_list(struct access *a, int writing)
{
	uint64_t *offs = malloc(LIST_CHUNK * sizeof(*offs));
	uint64_t *lens = malloc(LIST_CHUNK * sizeof(*lens));
	struct adt_walk w;
	struct iovec iov;
	int64_t off;
	uint64_t len, at = 0, chunk;
	size_t n;
	ssize_t got;
	int more = 1, rc = 0;

	if (!offs || !lens) {
		rc = -ENOMEM;
		goto out;
	}
	adt_walk_init(&w, &a->view, a->pos, a->len);
	while (more) {
		n = 0;
		chunk = 0;
		while (n < LIST_CHUNK && (more = adt_walk_next(&w, UINT64_MAX, &off, &len))) {
			offs[n] = (uint64_t)off;
			lens[n] = len;
			chunk += len;
			n++;
		}
		if (!n)
			break;
		iov.iov_base = a->stream + at;
		iov.iov_len = chunk;
		got = writing ? tessera_write_list(a->s->file, &iov, 1, offs, lens, n)
			      : tessera_read_list(a->s->file, &iov, 1, offs, lens, n);
		a->s->n.requests++;
		if (got < 0) {
			rc = (int)got;
			goto out;
		}
		if ((uint64_t)got != chunk) {
			snprintf(a->why, sizeof(a->why), "list I/O moved %lld of %llu bytes",
				 (long long)got, (unsigned long long)chunk);
			rc = -EIO;
			goto out;
		}
		at += chunk;
	}
out:
	free(offs);
	free(lens);
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

int64_t adt_strided_io(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		       int *error_code, int writing, const char *myname)
{
	struct adt_held held;
	struct access a;
	char ignored[8];
	int rc, method;

	if (prepare(&a, fd, buf, count, datatype, file_ptr_type, offset, writing, myname,
		    error_code))
		return -1;
	method = versioned_method(a.s, fd->atomicity, writing,
				  writing ? a.s->write_method : a.s->read_method);
	memset(&held, 0, sizeof(held));
	/* Atomic mode: the exact bytes, locked by the lock method (a
	 * versioned file: none); sieving writes lock their windows themselves
	 * (by_sieve). */
	rc = 0;
	if (fd->atomicity && a.len && !a.s->versioned && !(writing && method == ADT_SIEVE))
		rc = adt_lock_view(fd, writing ? TESSERA_LOCK_WRITE : TESSERA_LOCK_READ, &a.view,
				   a.pos, a.len, &held, a.why, sizeof(a.why));
	if (!rc) {
		rc = run(&a, &method, buf, count, datatype, writing);
		if (held.n) {
			int rc2 = adt_unlock(fd, &held, rc ? ignored : a.why,
					     rc ? sizeof(ignored) : sizeof(a.why));

			if (!rc)
				rc = rc2;
		}
	}
	if (rc) {
		/* libtessera's words, unless the failure was the driver's own */
		const char *lib = tessera_errmsg(tessera_file_fs(a.s->file));

		*error_code = ADT_ERROR(rc, "%s%s %s (%s, %llu bytes at stream byte %llu): %s",
					fd->atomicity ? "atomic " : "", a.what, fd->filename,
					adt_method_names[method],
					(unsigned long long)a.len, (unsigned long long)a.pos,
					a.why[0] ? a.why : rc == -ENOMEM ? "out of memory"
					: lib[0] ? lib : strerror(-rc));
		free(a.packed);
		return -1;
	}
	if (writing)
		a.s->n.strided_writes[method]++;
	else
		a.s->n.strided_reads[method]++;
	finish(&a, buf, count, datatype, file_ptr_type, status, !writing);
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

void ADIOI_TESSERA_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				   int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				   int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_reads++;
	if (fd->atomicity)
		own_access(fd, buf, count, datatype, file_ptr_type, offset, status, error_code, 0,
			   "ADIOI_TESSERA_READSTRIDEDCOLL");
	else
		ADIOI_GEN_ReadStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
					  error_code);
}

void ADIOI_TESSERA_WriteStridedColl(ADIO_File fd, const void *buf, int count,
				    MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
				    ADIO_Status *status, int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_writes++;
	if (fd->atomicity)
		own_access(fd, (void *)buf, count, datatype, file_ptr_type, offset, status,
			   error_code, 1, "ADIOI_TESSERA_WRITESTRIDEDCOLL");
	else
		ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
					   error_code);
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
		ADIOI_GEN_IreadStridedColl(fd, buf, count, datatype, file_ptr_type, offset, request,
					   error_code);
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
		ADIOI_GEN_IwriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset,
					    request, error_code);
		return;
	}
#endif
	own_access_request(fd, (void *)buf, count, datatype, file_ptr_type, offset, request,
			   error_code, 1, "ADIOI_TESSERA_IWRITESTRIDEDCOLL");
}
