/*
 * ad_tessera_strided.c - strided (noncontiguous) reads and writes, by the
 * method the file's hints chose, and the collective entry points.
 *
 * An access is the byte range [pos, pos + len) of the view's data stream.
 * Memory is one contiguous run of those bytes: the user's buffer when the
 * memory type is contiguous, else a packed copy (MPI_Pack / MPI_Unpack),
 * except for datatype I/O, which hands libtessera the memory type too.
 *
 *   posix    one pread/pwrite per file region
 *   sieve    reads: one read per window of ind_rd_buffer_size bytes
 *            covering many regions; writes: read the window, patch it,
 *            write it back (not safe against another writer in the window
 *            until Tessera has locks: two-phase collective writes are)
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
	char why[256];         /* a failure outside libtessera, in words */
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
	rc = adt_view_init(fd, &a->view);
	if (rc) {
		*error_code = adt_error(myname, __LINE__, rc, "%s %s: file view holds no data",
					a->what, fd->filename);
		return -1;
	}
	MPI_Type_size_x(datatype, &size);
	a->len = (uint64_t)size * (uint64_t)count;
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

/* File offset one past stream byte end - 1 (end > 0). */
static int64_t file_end(const struct adt_view *v, uint64_t end)
{
	struct adt_walk w;
	int64_t off = 0;
	uint64_t len = 0;

	adt_walk_init(&w, v, end - 1, 1);
	adt_walk_next(&w, 1, &off, &len);
	return off + (int64_t)len;
}

static void finish(struct access *a, void *buf, int count, MPI_Datatype datatype,
		   int file_ptr_type, ADIO_Status *status, int reading)
{
	if (reading && a->packed) {
		int position = 0;

		MPI_Unpack(a->packed, (int)a->len, &position, buf, count, datatype, MPI_COMM_SELF);
	}
	if (file_ptr_type == ADIO_INDIVIDUAL && a->len)
		a->fd->fp_ind = file_end(&a->view, a->pos + a->len);
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
 * and directly. */
static int by_sieve(struct access *a, int writing)
{
	uint64_t bufsize = (uint64_t)(writing ? a->fd->hints->ind_wr_buffer_size
					      : a->fd->hints->ind_rd_buffer_size);
	struct region { int64_t off; uint64_t len; } *r = NULL;
	struct adt_walk w;
	size_t nr, cap = 256;
	int64_t off, start, end;
	uint64_t len, at = 0;
	int more, rc = 0;
	char *win;

	if (bufsize == 0)
		bufsize = 4 << 20;
	win = malloc(bufsize);
	r = malloc(cap * sizeof(*r));
	if (!win || !r) {
		rc = -ENOMEM;
		goto out;
	}
	adt_walk_init(&w, &a->view, a->pos, a->len);
	more = adt_walk_next(&w, UINT64_MAX, &off, &len);
	while (more) {
		if (len >= bufsize) { /* bigger than a window: alone, directly */
			rc = writing ? write_full(a, a->stream + at, len, (uint64_t)off)
				     : read_full(a, a->stream + at, len, (uint64_t)off);
			if (rc)
				goto out;
			at += len;
			more = adt_walk_next(&w, UINT64_MAX, &off, &len);
			continue;
		}
		/* Gather the regions that fit one window from this one on. */
		start = off;
		end = off + (int64_t)len;
		r[0].off = off;
		r[0].len = len;
		nr = 1;
		while ((more = adt_walk_next(&w, UINT64_MAX, &off, &len)) && off >= start &&
		       (uint64_t)(off + (int64_t)len - start) <= bufsize) {
			if (nr == cap) {
				struct region *p = realloc(r, 2 * cap * sizeof(*r));

				if (!p) {
					rc = -ENOMEM;
					goto out;
				}
				r = p;
				cap *= 2;
			}
			r[nr].off = off;
			r[nr].len = len;
			nr++;
			if (off + (int64_t)len > end)
				end = off + (int64_t)len;
		}
		rc = read_full(a, win, (uint64_t)(end - start), (uint64_t)start);
		if (rc)
			goto out;
		for (size_t i = 0; i < nr; i++) {
			if (writing)
				memcpy(win + (r[i].off - start), a->stream + at, r[i].len);
			else
				memcpy(a->stream + at, win + (r[i].off - start), r[i].len);
			at += r[i].len;
		}
		if (writing) {
			rc = write_full(a, win, (uint64_t)(end - start), (uint64_t)start);
			if (rc)
				goto out;
		}
	}
out:
	free(r);
	free(win);
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

static void strided_io(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		       int *error_code, int writing, const char *myname)
{
	struct access a;
	int rc, method;

	if (prepare(&a, fd, buf, count, datatype, file_ptr_type, offset, writing, myname,
		    error_code))
		return;
	method = writing ? a.s->write_method : a.s->read_method;
	rc = run(&a, &method, buf, count, datatype, writing);
	if (rc) {
		/* libtessera's words, unless the failure was the driver's own */
		const char *lib = tessera_errmsg(tessera_file_fs(a.s->file));

		*error_code = ADT_ERROR(rc, "%s %s (%s, %llu bytes at stream byte %llu): %s",
					a.what, fd->filename, adt_method_names[method],
					(unsigned long long)a.len, (unsigned long long)a.pos,
					a.why[0] ? a.why : rc == -ENOMEM ? "out of memory"
					: lib[0] ? lib : strerror(-rc));
		free(a.packed);
		return;
	}
	if (writing)
		a.s->n.strided_writes[method]++;
	else
		a.s->n.strided_reads[method]++;
	finish(&a, buf, count, datatype, file_ptr_type, status, !writing);
	*error_code = MPI_SUCCESS;
}

void ADIOI_TESSERA_ReadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			       int *error_code)
{
	strided_io(fd, buf, count, datatype, file_ptr_type, offset, status, error_code, 0,
		   "ADIOI_TESSERA_READSTRIDED");
}

void ADIOI_TESSERA_WriteStrided(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
				int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				int *error_code)
{
	strided_io(fd, (void *)buf, count, datatype, file_ptr_type, offset, status, error_code, 1,
		   "ADIOI_TESSERA_WRITESTRIDED");
}

void ADIOI_TESSERA_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				   int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				   int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->n.coll_reads++;
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
	ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
				   error_code);
}
