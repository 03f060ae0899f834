/*
 * ad_tessera_open.c - open, close and delete.
 *
 * A collective open is one open by rank 0 of the file's communicator (a
 * create, with the striping hints, when the mode says so), then one
 * broadcast of the outcome and the file's share: the other ranks open
 * from the share and never ask the metadata daemon. ROMIO's generic
 * collective open would open twice on rank 0 for a new file (create, close,
 * open again) and once on every other rank; this one sends one request.
 *
 * A versioned file opened for writing: rank 0 also takes one writer ID
 * per rank in one request (tessera_version_ids) and the block goes out in
 * the same broadcast; each rank writes under ID `rank` of it, so no rank
 * asks the version server for an ID of its own. The IDs are rank 0's: its
 * close ends them, after a barrier that every other rank reaches once its
 * own close (its last commit and merge) is done.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ad_tessera.h"
#include "adioi.h"

static int open_flags(int access_mode)
{
	int flags = O_RDONLY;

	if (access_mode & ADIO_RDWR)
		flags = O_RDWR;
	else if (access_mode & ADIO_WRONLY)
		flags = O_WRONLY;
	if (access_mode & ADIO_CREATE)
		flags |= O_CREAT;
	if (access_mode & ADIO_EXCL)
		flags |= O_EXCL;
	return flags;
}

static mode_t create_mode(ADIO_File fd)
{
	mode_t mask;

	if (fd->perm != ADIO_PERM_NULL)
		return (mode_t)fd->perm;
	mask = umask(022);
	umask(mask);
	return 0666 & ~mask;
}

/* What the opener broadcasts. */
struct open_outcome {
	int rc;                            /* 0 or negative errno */
	int flags;                         /* how it opened (see open_by_path) */
	char msg[768];                     /* the failure, in words */
	char path[4096];                   /* the name it resolved (everyone uses it) */
	uint64_t shared_fp_base;           /* key of this open's shared file pointer */
	struct tessera_file_share share;
	struct tessera_version_ids ids;    /* the job's writer IDs (count 0: none) */
};

/* An open file joins the process's list (see ad_tessera.c). */
static void opened(struct adt_file *s, int flags)
{
	s->writable = (flags & O_ACCMODE) != O_RDONLY;
	adt_track(s);
}

/* Close s->file: synced first once MPI_Finalize has begun (a file closed
 * then is one the program left open). 0 or negative errno, with the
 * reason in msg. */
static int close_file(struct adt_file *s, char *msg, size_t msglen)
{
	tessera_fs *fs;
	int rc = 0, rc2;

	if (!s->file)
		return 0;
	fs = tessera_file_fs(s->file);
	if (s->writable && adt_finalizing()) {
		rc = tessera_fsync(s->file);
		if (rc)
			snprintf(msg, msglen, "%s", tessera_errmsg(fs));
	}
	rc2 = tessera_close(s->file);
	if (rc2 && !rc) {
		rc = rc2;
		snprintf(msg, msglen, "%s", tessera_errmsg(fs));
	}
	s->file = NULL;
	adt_untrack(s);
	return rc;
}

/* Open by path (asking the metadata daemon). 0 or negative errno, with the
 * reason in msg; *flags_out says how it was opened.
 *
 * Write-only files are opened for reading too where permitted, as ROMIO's
 * own drivers do: two-phase collective writes read the holes of their
 * buffers, and sieving writes read their windows. */
static int open_by_path(ADIO_File fd, int access_mode, struct adt_file *s, int *flags_out,
			char *msg, size_t msglen)
{
	struct tessera_layout layout;
	tessera_fs *fs;
	int rc, flags = open_flags(access_mode);

	rc = adt_resolve(fd->filename, s->path, sizeof(s->path));
	if (rc) {
		snprintf(msg, msglen, "%s: %s", fd->filename, strerror(-rc));
		return rc;
	}
	fs = adt_connect(msg, msglen);
	if (!fs)
		return -ENOTCONN;
	memset(&layout, 0, sizeof(layout));
	layout.strip_size = s->strip_size;  /* hints; 0: the directory's default */
	layout.count = s->stripe_count;
	layout.kind = s->versioned ? TESSERA_LAYOUT_VERSIONED : TESSERA_LAYOUT_PLAIN;
	if ((flags & O_ACCMODE) == O_WRONLY) {
		rc = tessera_open(fs, s->path, (flags & ~O_ACCMODE) | O_RDWR, create_mode(fd),
				  (access_mode & ADIO_CREATE) ? &layout : NULL, &s->file);
		if (rc != -EACCES) {
			flags = (flags & ~O_ACCMODE) | O_RDWR;
			goto opened;
		}
	}
	rc = tessera_open(fs, s->path, flags, create_mode(fd),
			  (access_mode & ADIO_CREATE) ? &layout : NULL, &s->file);
opened:
	*flags_out = flags;
	if (rc) {
		snprintf(msg, msglen, "%s", tessera_errmsg(fs));
		s->file = NULL;
		return rc;
	}
	opened(s, flags);
	s->n.mds_opens++;
	return 0;
}

/* Record the open file's striping where ROMIO and MPI_File_get_info see it:
 * two-phase aligns file domains to strip boundaries through
 * hints->striping_unit. */
static int adopt_layout(ADIO_File fd, struct adt_file *s, char *msg, size_t msglen)
{
	struct tessera_layout layout;
	char value[32];
	int rc;

	rc = tessera_file_layout(s->file, &layout);
	if (rc) {
		snprintf(msg, msglen, "%s", tessera_errmsg(tessera_file_fs(s->file)));
		return rc;
	}
	s->strip_size = layout.strip_size;
	s->stripe_count = layout.count;
	s->versioned = layout.kind == TESSERA_LAYOUT_VERSIONED;
	ADIOI_Info_set(fd->info, "tessera_versioned", s->versioned ? "true" : "false");
	fd->hints->striping_unit = (int)layout.strip_size;
	fd->hints->striping_factor = (int)layout.count;
	snprintf(value, sizeof(value), "%llu", (unsigned long long)layout.strip_size);
	ADIOI_Info_set(fd->info, "striping_unit", value);
	snprintf(value, sizeof(value), "%u", layout.count);
	ADIOI_Info_set(fd->info, "striping_factor", value);
	if (s->list_batch) {
		rc = tessera_file_set_list_batch(s->file, s->list_batch);
		if (rc) {
			snprintf(msg, msglen, "%s", tessera_errmsg(tessera_file_fs(s->file)));
			return rc;
		}
	}
	return 0;
}

static int finish_open(ADIO_File fd, struct adt_file *s, char *msg, size_t msglen)
{
	struct tessera_stat st;
	int rc = adopt_layout(fd, s, msg, msglen);

	if (rc)
		return rc;
	fd->fd_sys = -1; /* no POSIX descriptor: ROMIO's generic locks come to the driver */
	fd->fd_direct = -1;
	if (fd->access_mode & ADIO_APPEND) {
		rc = tessera_fstat(s->file, &st);
		if (rc) {
			snprintf(msg, msglen, "%s", tessera_errmsg(tessera_file_fs(s->file)));
			return rc;
		}
		fd->fp_ind = fd->fp_sys_posn = (ADIO_Offset)st.size;
	}
	return 0;
}

/* Independent open (ROMIO uses it for deferred opens, which this driver
 * turns off, and it serves MPI_COMM_SELF opens the same way). */
void ADIOI_TESSERA_Open(ADIO_File fd, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_OPEN";
	struct adt_file *s = adt_state(fd);
	char msg[768];
	int rc;

	if (!s) {
		*error_code = ADT_ERROR(-ENOMEM, "open %s: out of memory", fd->filename);
		return;
	}
	int flags;

	rc = open_by_path(fd, fd->access_mode, s, &flags, msg, sizeof(msg));
	s->shared_fp_base = adt_shared_fp_new_base();
	if (!rc && (rc = finish_open(fd, s, msg, sizeof(msg)))) {
		char ignored[8];

		close_file(s, ignored, sizeof(ignored));
	}
	if (rc) {
		*error_code = ADT_ERROR(rc, "MPI_File_open %s: %s", fd->filename, msg);
		return;
	}
	*error_code = MPI_SUCCESS;
}

/* Rank 0, a versioned file open for writing: one writer ID per rank (at
 * most TESSERA_VERSION_IDS_MAX; ranks past them take their own), in one
 * request. Not having them fails nothing: each rank then takes its own
 * at its first write, as a process alone does. */
static void take_job_ids(ADIO_File fd, struct adt_file *s, int flags,
			 struct tessera_version_ids *out)
{
	struct tessera_layout layout;
	int nprocs = 1;

	memset(out, 0, sizeof(*out));
	if (!s->file || (flags & O_ACCMODE) == O_RDONLY ||
	    tessera_file_layout(s->file, &layout) || layout.kind != TESSERA_LAYOUT_VERSIONED)
		return;
	MPI_Comm_size(fd->comm, &nprocs);
	if (nprocs < 2)
		return;
	if (nprocs > TESSERA_VERSION_IDS_MAX)
		nprocs = TESSERA_VERSION_IDS_MAX;
	if (tessera_version_ids(s->file, (uint32_t)nprocs, out) == 0)
		s->n.version_ids++;
	else
		memset(out, 0, sizeof(*out));
}

/* Every rank, at the end of the open (`job`: the broadcast block's count,
 * the same on every rank): write under ID `rank` of the job's block, once
 * every rank has opened. Should one rank have failed, ROMIO closes the
 * others alone, so no close may wait for all: the IDs then end with rank
 * 0's close as any handle's block does. */
static void use_job_ids(ADIO_File fd, struct adt_file *s, const struct open_outcome *o,
			uint32_t job, int rank, int opened)
{
	int all = opened;

	if (!job)
		return;
	MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, fd->comm);
	if (!all)
		return;
	s->job_ids = 1; /* on every rank alike: the close's barrier */
	if ((uint32_t)rank < o->ids.count)
		(void)tessera_version_use_id(s->file, &o->ids, (uint32_t)rank);
}

/* A refused hint fails the open on every rank, before anything is
 * created (ROMIO itself goes on after a failed SetInfo): nonzero then,
 * with *error_code set. */
static int refused_hints(ADIO_File fd, struct adt_file *s, const char *myname, int *error_code)
{
	int rc = s ? s->hint_error : -ENOMEM;

	MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MIN, fd->comm);
	if (!rc)
		return 0;
	*error_code = adt_error_class(myname, __LINE__,
				      rc == -ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_INFO_VALUE,
				      "MPI_File_open %s: %s", fd->filename,
				      s && s->hint_error ? s->hint_msg : "a hint was refused");
	return 1;
}

/* Rank 0: the open itself, its outcome into o for the others. */
static void open_as_opener(ADIO_File fd, int access_mode, struct adt_file *s,
			   struct open_outcome *o)
{
	o->rc = open_by_path(fd, access_mode, s, &o->flags, o->msg, sizeof(o->msg));
	if (!o->rc) {
		tessera_file_share(s->file, &o->share);
		take_job_ids(fd, s, o->flags, &o->ids);
	}
	snprintf(o->path, sizeof(o->path), "%s", s->path);
	o->shared_fp_base = adt_shared_fp_new_base();
}

/* Rank 0's outcome to every rank (o may be NULL, out of memory: the
 * broadcast still happens); the job's writer IDs' count. */
static uint32_t share_outcome(ADIO_File fd, struct open_outcome *o)
{
	struct open_outcome dummy;
	struct open_outcome *to = o ? o : &dummy;

	MPI_Bcast(to, (int)sizeof(*to), MPI_BYTE, 0, fd->comm);
	return to->ids.count;
}

/* The other ranks: open from the opener's share, without the metadata
 * daemon. 0 or the MPI error code. */
static int open_from_share(ADIO_File fd, struct adt_file *s, struct open_outcome *o,
			   const char *myname)
{
	char err[256];
	tessera_fs *fs = adt_connect(err, sizeof(err));
	int rc;

	if (!fs)
		return ADT_ERROR(-ENOTCONN, "MPI_File_open %s: %s", fd->filename, err);
	snprintf(s->path, sizeof(s->path), "%s", o->path);
	rc = tessera_open_shared(fs, s->path, &o->share, o->flags, &s->file);
	if (rc)
		return ADT_ERROR(rc, "MPI_File_open %s: %s", fd->filename, tessera_errmsg(fs));
	opened(s, o->flags);
	s->n.shared_opens++;
	return 0;
}

/* Every rank with the file open: the open's last steps. 0 or the MPI
 * error code (the file closed again). */
static int complete_open(ADIO_File fd, struct adt_file *s, struct open_outcome *o,
			 const char *myname)
{
	char ignored[8];
	int rc, code;

	s->shared_fp_base = o->shared_fp_base;
	rc = finish_open(fd, s, o->msg, sizeof(o->msg));
	if (!rc)
		return 0;
	code = ADT_ERROR(rc, "MPI_File_open %s: %s", fd->filename, o->msg);
	close_file(s, ignored, sizeof(ignored));
	return code;
}

void ADIOI_TESSERA_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_OPENCOLL";
	struct adt_file *s = adt_state(fd);
	struct open_outcome *o;
	uint32_t job;
	int code = 0;

	fd->access_mode = access_mode;
	if (refused_hints(fd, s, myname, error_code))
		return;
	o = calloc(1, sizeof(*o));
	if (rank == 0 && o && s)
		open_as_opener(fd, access_mode, s, o);
	job = share_outcome(fd, o); /* everyone reaches it: errors after */
	if (!o || !s)
		code = ADT_ERROR(-ENOMEM, "MPI_File_open %s: out of memory", fd->filename);
	else if (o->rc) /* every rank the opener's class and words */
		code = ADT_ERROR(o->rc, "MPI_File_open %s: %s", fd->filename, o->msg);
	else if (rank != 0)
		code = open_from_share(fd, s, o, myname);
	if (!code)
		code = complete_open(fd, s, o, myname);
	if (!code)
		fd->is_open = 1;
	*error_code = code ? code : MPI_SUCCESS;
	use_job_ids(fd, s, o, job, rank, *error_code == MPI_SUCCESS);
	free(o);
}

/* Close; with the job's writer IDs, rank 0 (whose close ends them) after
 * every other rank's close: a rank's last commit is never refused for an
 * ID ended under it. (A file closed at MPI_Finalize, which the program
 * left open, skips the barrier: a rank still writing then would only
 * write its call again under an ID of its own.) */
static int close_job(ADIO_File fd, struct adt_file *s, char *msg, size_t msglen)
{
	int rank = 0, rc = 0;

	if (!s->job_ids || adt_finalizing())
		return close_file(s, msg, msglen);
	MPI_Comm_rank(fd->comm, &rank);
	if (rank != 0)
		rc = close_file(s, msg, msglen);
	MPI_Barrier(fd->comm);
	if (rank == 0)
		rc = close_file(s, msg, msglen);
	return rc;
}

void ADIOI_TESSERA_Close(ADIO_File fd, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_CLOSE";
	struct adt_file *s = fd->fs_ptr;
	char msg[768];
	int rc;

	*error_code = MPI_SUCCESS;
	if (!s)
		return;
	adt_trace(fd, "close");
	adt_generic_release_all(s);
	rc = close_job(fd, s, msg, sizeof(msg));
	if (rc)
		*error_code = ADT_ERROR(rc, "MPI_File_close %s: %s", fd->filename, msg);
	free(s);
	fd->fs_ptr = NULL;
}

void ADIOI_TESSERA_Delete(const char *filename, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_DELETE";
	char err[512], path[4096];
	tessera_fs *fs;
	int rc = adt_resolve(filename, path, sizeof(path));

	if (rc) {
		*error_code = ADT_ERROR(rc, "MPI_File_delete %s: %s", filename, strerror(-rc));
		return;
	}
	fs = adt_connect(err, sizeof(err));
	if (!fs) {
		*error_code = ADT_ERROR(-ENOTCONN, "MPI_File_delete %s: %s", filename, err);
		return;
	}
	rc = tessera_unlink(fs, path);
	/* (A missing file is often asked for, to be sure a name is free:
	 * PnetCDF's NC_CLOBBER.) */
	if (rc) {
		*error_code = ADT_ERROR(rc, "MPI_File_delete %s: %s", filename, tessera_errmsg(fs));
		return;
	}
	*error_code = MPI_SUCCESS;
}
