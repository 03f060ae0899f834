/*
 * ad_tessera_rdwr.c - contiguous reads and writes straight to libtessera
 * (locked in atomic mode), flush, resize and fcntl.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ad_tessera.h"
#include "adioi.h"

/* The open file of fd, or NULL with *error_code set. */
static struct adt_file *open_state(ADIO_File fd, const char *myname, const char *what,
				   int *error_code)
{
	struct adt_file *s = fd->fs_ptr;

	if (!s || !s->file) {
		*error_code = adt_error(myname, __LINE__, -EBADF, "%s %s: file is not open", what,
					fd->filename);
		return NULL;
	}
	return s;
}

/* The transfer of one contiguous access: reads stop at end of file,
 * writes insist on progress. Bytes moved into *done; 0, a negative errno
 * (libtessera's, its words in tessera_errmsg), or NO_PROGRESS. */
#define NO_PROGRESS 1
static int contig_transfer(struct adt_file *s, char *buf, uint64_t len, uint64_t offset,
			   int write, uint64_t *done)
{
	ssize_t n = 0;

	*done = 0;
	while (*done < len) {
		n = write ? tessera_pwrite(s->file, buf + *done, len - *done, offset + *done)
			  : tessera_pread(s->file, buf + *done, len - *done, offset + *done);
		s->n.requests++;
		if (n <= 0)
			break; /* reads: 0 is the end of file */
		*done += (uint64_t)n;
	}
	if (n < 0)
		return (int)n;
	return n == 0 && write && *done < len ? NO_PROGRESS : 0;
}

/* After a contiguous access of done bytes at offset: counters, pointers, status. */
static void contig_done(ADIO_File fd, struct adt_file *s, MPI_Datatype datatype,
			int file_ptr_type, ADIO_Offset offset, uint64_t done, int write,
			ADIO_Status *status)
{
	if (write) {
		s->n.contig_writes++;
		s->n.bytes_written += done;
	} else {
		s->n.contig_reads++;
		s->n.bytes_read += done;
	}
	if (file_ptr_type == ADIO_INDIVIDUAL)
		fd->fp_ind += (ADIO_Offset)done;
	fd->fp_sys_posn = offset + (ADIO_Offset)done;
#ifdef HAVE_STATUS_SET_BYTES
	MPIR_Status_set_bytes(status, datatype, (MPI_Count)done);
#else
	(void)status;
	(void)datatype;
#endif
}

/* One contiguous access of count x datatype at offset (or the individual
 * file pointer). In atomic mode the bytes are locked around it
 * (ad_tessera_lock.c); a versioned file's call is one version, atomic
 * without a lock. */
int64_t adt_contig_io(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		      int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		      int *error_code, int write, const char *myname)
{
	const char *what = write ? "write" : "read";
	struct adt_file *s = open_state(fd, myname, what, error_code);
	struct adt_held held;
	char why[1024];
	MPI_Count size;
	uint64_t len, done = 0, off;
	int rc;

	if (!s)
		return -1;
	MPI_Type_size_x(datatype, &size);
	len = (uint64_t)size * (uint64_t)count;
	if (file_ptr_type == ADIO_INDIVIDUAL)
		offset = fd->fp_ind;
	off = (uint64_t)offset;
	memset(&held, 0, sizeof(held));
	if (fd->atomicity && len && !s->versioned &&
	    (rc = adt_lock_regions(fd, write ? TESSERA_LOCK_WRITE : TESSERA_LOCK_READ, &off,
				   &len, 1, &held, why, sizeof(why)))) {
		*error_code = ADT_ERROR(rc, "atomic %s %s: %s", what, fd->filename, why);
		return -1;
	}
	rc = contig_transfer(s, buf, len, off, write, &done);
	if (rc) {
		*error_code = ADT_ERROR(rc == NO_PROGRESS ? -EIO : rc, "%s %s: %s", what,
					fd->filename, rc == NO_PROGRESS ? "no progress"
					: tessera_errmsg(tessera_file_fs(s->file)));
		adt_unlock(fd, &held, why, sizeof(why));
		return -1;
	}
	rc = adt_unlock(fd, &held, why, sizeof(why));
	if (rc) {
		*error_code = ADT_ERROR(rc, "atomic %s %s: %s", what, fd->filename, why);
		return -1;
	}
	contig_done(fd, s, datatype, file_ptr_type, offset, done, write, status);
	*error_code = MPI_SUCCESS;
	return (int64_t)done;
}

void ADIOI_TESSERA_ReadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			      int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			      int *error_code)
{
	adt_contig_io(fd, buf, count, datatype, file_ptr_type, offset, status, error_code, 0,
		      "ADIOI_TESSERA_READCONTIG");
}

void ADIOI_TESSERA_WriteContig(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			       int *error_code)
{
	adt_contig_io(fd, (void *)buf, count, datatype, file_ptr_type, offset, status, error_code,
		      1, "ADIOI_TESSERA_WRITECONTIG");
}

/* Nonblocking contiguous reads complete at once (libtessera's calls
 * block) and report the bytes really read: ROMIO's generic one reports
 * the whole request even past the end of the file. */
void ADIOI_TESSERA_IreadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, MPI_Request *request,
			       int *error_code)
{
	ADIO_Status status;
	int64_t n = adt_contig_io(fd, buf, count, datatype, file_ptr_type, offset, &status,
				  error_code, 0, "ADIOI_TESSERA_IREADCONTIG");

	MPIO_Completed_request_create(&fd, n < 0 ? 0 : n, error_code, request);
}

/* MPI_File_sync (collective: ROMIO calls it on every rank and nowhere
 * else). tessera_sync=every: each rank syncs its handle. tessera_sync=one
 * (seed 001, §5.3, as ROMIO's PVFS2 driver did for two-phase): a sync is
 * of the file's objects, whoever wrote them, so after a barrier (every
 * rank's writes have returned, and a returned write is on its storage
 * daemon) rank 0 alone syncs and the others take its result. A versioned
 * file syncs on every rank: its merge is of each writer's log. */
void ADIOI_TESSERA_Flush(ADIO_File fd, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_FLUSH";
	struct adt_file *s = fd->fs_ptr;
	int rank, one = s && s->sync_mode == ADT_SYNC_ONE && !s->versioned, rc = 0;

	MPI_Comm_rank(fd->comm, &rank);
	if (one)
		MPI_Barrier(fd->comm);
	if (!one || rank == 0) {
		if (!open_state(fd, myname, "sync", error_code))
			rc = -EBADF;
		else
			rc = tessera_fsync(s->file);
	}
	if (one)
		MPI_Bcast(&rc, 1, MPI_INT, 0, fd->comm);
	if (rc == -EBADF && (!one || rank == 0))
		return; /* open_state said so */
	if (rc) {
		*error_code = ADT_ERROR(rc, "MPI_File_sync %s%s: %s", fd->filename,
					one && rank != 0 ? " (rank 0 synced for all)" : "",
					one && rank != 0 ? strerror(-rc)
					: tessera_errmsg(tessera_file_fs(s->file)));
		return;
	}
	*error_code = MPI_SUCCESS;
}

/* Collective (every rank calls it): rank 0 truncates, all learn the outcome. */
void ADIOI_TESSERA_Resize(ADIO_File fd, ADIO_Offset size, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_RESIZE";
	struct adt_file *s = fd->fs_ptr;
	int rank, rc = 0;

	MPI_Comm_rank(fd->comm, &rank);
	if (rank == 0) {
		if (!s || !s->file)
			rc = -EBADF;
		else if (size < 0)
			rc = -EINVAL;
		else
			rc = tessera_ftruncate(s->file, (uint64_t)size);
		if (rc)
			*error_code = ADT_ERROR(rc, "MPI_File_set_size %s to %lld: %s", fd->filename,
						(long long)size,
						rc == -EBADF ? "file is not open"
						: rc == -EINVAL ? "negative size"
						: tessera_errmsg(tessera_file_fs(s->file)));
	}
	MPI_Bcast(&rc, 1, MPI_INT, 0, fd->comm);
	if (rc && rank != 0)
		*error_code = ADT_ERROR(rc, "MPI_File_set_size %s to %lld: failed on rank 0: %s",
					fd->filename, (long long)size, strerror(-rc));
	if (!rc)
		*error_code = MPI_SUCCESS;
}

void ADIOI_TESSERA_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t *fcntl_struct, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_FCNTL";
	struct adt_file *s;
	struct tessera_stat st;
	int rc;

	switch (flag) {
	case ADIO_FCNTL_GET_FSIZE:
		s = open_state(fd, myname, "MPI_File_get_size", error_code);
		if (!s)
			return;
		rc = tessera_fstat(s->file, &st);
		if (rc) {
			*error_code = ADT_ERROR(rc, "MPI_File_get_size %s: %s", fd->filename,
						tessera_errmsg(tessera_file_fs(s->file)));
			return;
		}
		fcntl_struct->fsize = (ADIO_Offset)st.size;
		*error_code = MPI_SUCCESS;
		return;
	case ADIO_FCNTL_SET_DISKSPACE:
		/* Storage daemons allocate on write; preallocating means the
		 * size reads back at least as asked. */
		s = open_state(fd, myname, "MPI_File_preallocate", error_code);
		if (!s)
			return;
		rc = tessera_fstat(s->file, &st);
		if (!rc && (ADIO_Offset)st.size < fcntl_struct->diskspace)
			rc = tessera_ftruncate(s->file, (uint64_t)fcntl_struct->diskspace);
		if (rc) {
			*error_code = ADT_ERROR(rc, "MPI_File_preallocate %s: %s", fd->filename,
						tessera_errmsg(tessera_file_fs(s->file)));
			return;
		}
		*error_code = MPI_SUCCESS;
		return;
	case ADIO_FCNTL_SET_ATOMICITY:
		/* From now on every access locks its bytes (ad_tessera_lock.c). */
		fd->atomicity = fcntl_struct->atomicity ? 1 : 0;
		*error_code = MPI_SUCCESS;
		return;
	default:
		*error_code = ADT_ERROR(-EINVAL, "fcntl %s: unknown request %d", fd->filename, flag);
		return;
	}
}
