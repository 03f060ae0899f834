/*
 * ad_tessera.c - the driver's operations table, its features,
 * the process's connection, error reporting and the trace of what it did.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ad_tessera.h"
#include "ad_tessera_dtype.h"
#include "adioi.h"

struct ADIOI_Fns_struct ADIO_TESSERA_operations = {
	ADIOI_TESSERA_Open,             /* Open */
	ADIOI_TESSERA_OpenColl,         /* OpenColl */
	ADIOI_TESSERA_ReadContig,       /* ReadContig */
	ADIOI_TESSERA_WriteContig,      /* WriteContig */
	ADIOI_TESSERA_ReadStridedColl,  /* ReadStridedColl: two-phase */
	ADIOI_TESSERA_WriteStridedColl, /* WriteStridedColl: two-phase */
	ADIOI_GEN_SeekIndividual,       /* SeekIndividual */
	ADIOI_TESSERA_Fcntl,            /* Fcntl */
	ADIOI_TESSERA_SetInfo,          /* SetInfo */
	ADIOI_TESSERA_ReadStrided,      /* ReadStrided */
	ADIOI_TESSERA_WriteStrided,     /* WriteStrided */
	ADIOI_TESSERA_Close,            /* Close */
	/* libtessera calls are blocking: nonblocking MPI-IO completes at once */
	ADIOI_TESSERA_IreadContig,      /* IreadContig: the bytes really read */
	ADIOI_FAKE_IwriteContig,        /* IwriteContig */
	ADIOI_FAKE_IODone,              /* ReadDone */
	ADIOI_FAKE_IODone,              /* WriteDone */
	ADIOI_FAKE_IOComplete,          /* ReadComplete */
	ADIOI_FAKE_IOComplete,          /* WriteComplete */
	ADIOI_FAKE_IreadStrided,        /* IreadStrided */
	ADIOI_FAKE_IwriteStrided,       /* IwriteStrided */
	ADIOI_TESSERA_Flush,            /* Flush */
	ADIOI_TESSERA_Resize,           /* Resize */
	ADIOI_TESSERA_Delete,           /* Delete */
	ADIOI_TESSERA_Feature,          /* Feature */
	"TESSERA: the Tessera parallel file system (libtessera)",
	ADIOI_TESSERA_IreadStridedColl, /* IreadStridedColl: two-phase, or atomic */
	ADIOI_TESSERA_IwriteStridedColl, /* IwriteStridedColl: two-phase, or atomic */
#ifdef ADIOI_WRITE_LOCK_FUNC
	/* MPICH 4's ROMIO takes its locks through this slot (Open MPI's
	 * ROMIO 3.2.1, without it, has adioi.h patched instead): a Tessera
	 * file has no descriptor for fcntl, so the driver locks. */
	ADIOI_TESSERA_Set_lock,         /* SetLock */
#endif
};

const char *const adt_method_names[ADT_METHODS] = {"posix", "sieve", "list", "datatype"};
const char *const adt_sync_names[ADT_SYNC_MODES] = {"every", "one"};

int ADIOI_TESSERA_Feature(ADIO_File fd, int flag)
{
	(void)fd;
	switch (flag) {
	case ADIO_SCALABLE_OPEN:   /* one rank opens, the rest use its share */
	case ADIO_SCALABLE_RESIZE: /* one rank truncates */
	case ADIO_TWO_PHASE:
	case ADIO_UNLINK_AFTER_CLOSE:
	case ADIO_ATOMIC_MODE:     /* the driver locks its own accesses */
	case ADIO_SHARED_FP:       /* a fetch-and-add on a storage daemon */
		return 1;
	/* LOCKS stays 0 so that ROMIO's generic read and write never lock on
	 * top of the driver (ad_tessera_lock.c); the driver has its own
	 * strided writes, so ROMIO's data sieving writes are never used. */
	case ADIO_LOCKS:
	case ADIO_DATA_SIEVING_WRITES:
	default:
		return 0;
	}
}

/* ------------------------------------------------------------ connection
 *
 * One connection per process, made by the first open and kept while any
 * file is open on it. MPI_Finalize first deletes MPI_COMM_SELF's
 * attributes, in the reverse order they were set, and libraries close
 * their files from such callbacks (HDF5 does), before or after ours; files
 * nobody closed Open MPI closes after all the callbacks. So our callback
 * only marks that finalize began: the connection goes with the last open
 * file, and every file closed from then on is synced first. Whatever is
 * still open when the component is unloaded (or the process exits without
 * MPI_Finalize) is synced and closed then. */
static struct {
	tessera_fs *fs;            /* NULL until the first open, and after the last at finalize */
	int keyval;                /* MPI_COMM_SELF attribute whose deletion marks finalize */
	int finalizing;            /* that deletion happened */
	struct adt_file *open;     /* files open on fs, through next_open */
	/* (Open MPI) the error code of each class an error was returned in,
	 * in the order first used: see coded() */
	struct { int cls, code; } codes[ADT_ERROR_CODES];
	int n_codes;
} proc = { NULL, MPI_KEYVAL_INVALID, 0, NULL, {{0, 0}}, 0 };

static void disconnect(void)
{
	if (proc.fs) {
		tessera_disconnect(proc.fs);
		proc.fs = NULL;
	}
}

static int finalize_began(MPI_Comm comm, int key, void *value, void *extra)
{
	(void)comm; (void)key; (void)value; (void)extra;
	proc.finalizing = 1;
	if (!proc.open)
		disconnect();
	return MPI_SUCCESS;
}

tessera_fs *adt_connect(char *err, size_t errlen)
{
	int rc;

	if (proc.fs)
		return proc.fs;
	rc = tessera_connect(NULL, &proc.fs, err, errlen);
	if (rc) {
		proc.fs = NULL;
		return NULL;
	}
	if (!proc.finalizing && proc.keyval == MPI_KEYVAL_INVALID &&
	    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_began, &proc.keyval,
				   NULL) == MPI_SUCCESS)
		MPI_Comm_set_attr(MPI_COMM_SELF, proc.keyval, NULL);
	return proc.fs;
}

int adt_finalizing(void)
{
	return proc.finalizing;
}

void adt_track(struct adt_file *s)
{
	s->next_open = proc.open;
	proc.open = s;
}

void adt_untrack(struct adt_file *s)
{
	for (struct adt_file **p = &proc.open; *p; p = &(*p)->next_open)
		if (*p == s) {
			*p = s->next_open;
			break;
		}
	s->next_open = NULL;
	if (proc.finalizing && !proc.open)
		disconnect();
}

/* Files still open when the component goes (Open MPI unloads it at the
 * end of MPI_Finalize) or the process exits: synced, closed, then the
 * connection. */
__attribute__((destructor)) static void close_leftovers(void)
{
	while (proc.open) {
		struct adt_file *s = proc.open;

		proc.open = s->next_open;
		if (s->file) {
			if (s->writable && tessera_fsync(s->file))
				fprintf(stderr, "tessera: sync at exit %s: %s\n", s->path,
					tessera_errmsg(tessera_file_fs(s->file)));
			tessera_close(s->file);
			s->file = NULL;
		}
	}
	disconnect();
}

struct adt_file *adt_state(ADIO_File fd)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->read_method = ADT_DEFAULT_READ;
	s->write_method = ADT_DEFAULT_WRITE;
	s->lock_method = ADT_DEFAULT_LOCK_METHOD;
	s->lock_protocol = ADT_DEFAULT_LOCK_PROTOCOL;
	s->mem_pack = 1;
	s->sync_mode = ADT_SYNC_EVERY;
	fd->fs_ptr = s;
	return s;
}

/* ---------------------------------------------------------------- errors
 *
 * An error the driver returns to its caller carries its words in the code
 * (MPI_Error_string), with the class MPI_Error_class reports, and nothing
 * is printed: the caller decides what an error means (IOR's existence
 * check expects a missing file, PnetCDF deletes a name to be sure it is
 * free). MPICH's ROMIO keeps the text MPIO_Err_create_code is given. Open
 * MPI's glue drops it and returns the bare class, so there each class the
 * driver returns gets one error code of the driver's (MPI_Add_error_code,
 * the first time; at most ADT_ERROR_CODES), whose string is the latest
 * error of that class on this process (MPI_Add_error_string replaces it).
 * Codes differ between ranks, and no rank passes its code to another
 * (ROMIO's collective writes reduce codes to MPI_ERR_IO first; the
 * driver's collective open and resize send errno values). TESSERA_DEBUG
 * also logs every error returned. */

static int mpi_class(int err)
{
	switch (-err) {
	case ENOENT: return MPI_ERR_NO_SUCH_FILE;
	case EEXIST: return MPI_ERR_FILE_EXISTS;
	case EACCES: case EPERM: return MPI_ERR_ACCESS;
	case ENOSPC: return MPI_ERR_NO_SPACE;
	case EISDIR: case ENOTDIR: case ENAMETOOLONG: return MPI_ERR_BAD_FILE;
	case EROFS: return MPI_ERR_READ_ONLY;
	case ENOMEM: return MPI_ERR_NO_MEM;
	case ENOTSUP: return MPI_ERR_UNSUPPORTED_OPERATION;
	case EINVAL: return MPI_ERR_ARG;
	default: return MPI_ERR_IO;
	}
}

/* The debug log: TESSERA_DEBUG unset, empty or "0" is none; a value
 * starting with '/' is a file the lines are appended to; any other value
 * is stderr. */
static void debug_log(const char *msg)
{
	const char *to = getenv("TESSERA_DEBUG");
	char line[1100];
	int n, fd;

	if (!to || !*to || !strcmp(to, "0"))
		return;
	n = snprintf(line, sizeof(line), "tessera: %s\n", msg);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	fd = to[0] == '/' ? open(to, O_WRONLY | O_CREAT | O_APPEND, 0644) : STDERR_FILENO;
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n) {
		/* a debug log that cannot be written is no error of the call */
	}
	if (fd != STDERR_FILENO)
		close(fd);
}

#ifdef ROMIO_INSIDE_MPICH
/* MPICH's ROMIO keeps the text in the code it creates. */
static int coded(const char *myname, int line, int cls, const char *msg)
{
	return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, line, cls, "**io",
				    "**io %s", msg);
}
#else
/* Open MPI's glue keeps only the class: the code is the class's own code
 * of the driver's (made the first time). -1 when there is none to use:
 * once MPI_Finalize has begun (MPI may refuse to make a code or set its
 * string then, and a refusal would be fatal), or with the table full. */
static int class_code(int cls, int *code)
{
	int finalized = 0;

	MPI_Finalized(&finalized);
	if (proc.finalizing || finalized)
		return -1;
	for (int i = 0; i < proc.n_codes; i++)
		if (proc.codes[i].cls == cls) {
			*code = proc.codes[i].code;
			return 0;
		}
	if (proc.n_codes == ADT_ERROR_CODES || MPI_Add_error_code(cls, code) != MPI_SUCCESS)
		return -1;
	proc.codes[proc.n_codes].cls = cls;
	proc.codes[proc.n_codes].code = *code;
	proc.n_codes++;
	return 0;
}

/* The class's code, its string now msg. */
static int coded(const char *myname, int line, int cls, const char *msg)
{
	char text[MPI_MAX_ERROR_STRING];
	int code;

	(void)myname;
	(void)line;
	if (class_code(cls, &code)) {
		/* No code can carry the words, and a close failing in
		 * MPI_Finalize reaches no caller: say it here. */
		if (proc.finalizing)
			fprintf(stderr, "tessera: %s\n", msg);
		return cls;
	}
	snprintf(text, sizeof(text), "tessera: %s", msg);
	MPI_Add_error_string(code, text);
	return code;
}
#endif

int adt_error_class(const char *myname, int line, int cls, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	debug_log(msg);
	return coded(myname, line, cls, msg);
}

int adt_error(const char *myname, int line, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return adt_error_class(myname, line, mpi_class(err), "%s", msg);
}

/* ----------------------------------------------------------------- trace */

void adt_trace(ADIO_File fd, const char *event)
{
	const char *path = getenv("TESSERA_ROMIO_TRACE");
	struct adt_file *s = fd->fs_ptr;
	struct adt_dtype_stats dt;
	char line[2048];
	int rank = 0, n, tfd;

	if (!path || !*path || !s)
		return;
	MPI_Comm_rank(fd->comm, &rank);
	adt_dtype_stats(&dt);
	n = snprintf(line, sizeof(line),
		     "ad_tessera %s rank=%d file=%s mds_opens=%llu shared_opens=%llu "
		     "contig_r=%llu contig_w=%llu "
		     "strided_r=%llu/%llu/%llu/%llu strided_w=%llu/%llu/%llu/%llu "
		     "coll_r=%llu coll_w=%llu bytes_r=%llu bytes_w=%llu requests=%llu "
		     "read_method=%s write_method=%s strip=%llu stripes=%u "
		     "dtype_conversions=%llu dtype_cache_hits=%llu "
		     "atomic=%d lock_method=%s lock_protocol=%s locks=%llu lock_requests=%llu "
		     "generic_locks=%llu "
		     "shared_fp_ops=%llu lock_us=%llu unlock_us=%llu version_ids=%llu "
		     "coll_bytes_sent=%llu coll_bytes_received=%llu mem_list_calls=%llu\n",
		     event, rank, fd->filename,
		     (unsigned long long)s->n.mds_opens, (unsigned long long)s->n.shared_opens,
		     (unsigned long long)s->n.contig_reads, (unsigned long long)s->n.contig_writes,
		     (unsigned long long)s->n.strided_reads[ADT_POSIX],
		     (unsigned long long)s->n.strided_reads[ADT_SIEVE],
		     (unsigned long long)s->n.strided_reads[ADT_LIST],
		     (unsigned long long)s->n.strided_reads[ADT_DTYPE],
		     (unsigned long long)s->n.strided_writes[ADT_POSIX],
		     (unsigned long long)s->n.strided_writes[ADT_SIEVE],
		     (unsigned long long)s->n.strided_writes[ADT_LIST],
		     (unsigned long long)s->n.strided_writes[ADT_DTYPE],
		     (unsigned long long)s->n.coll_reads, (unsigned long long)s->n.coll_writes,
		     (unsigned long long)s->n.bytes_read, (unsigned long long)s->n.bytes_written,
		     (unsigned long long)s->n.requests,
		     adt_method_names[s->read_method], adt_method_names[s->write_method],
		     (unsigned long long)s->strip_size, s->stripe_count,
		     (unsigned long long)dt.conversions, (unsigned long long)dt.hits,
		     fd->atomicity, adt_lock_method_names[s->lock_method],
		     adt_lock_protocol_names[s->lock_protocol], (unsigned long long)s->n.locks,
		     (unsigned long long)s->n.lock_requests, (unsigned long long)s->n.generic_locks, (unsigned long long)s->n.shared_fp_ops,
		     (unsigned long long)s->n.lock_us, (unsigned long long)s->n.unlock_us,
		     (unsigned long long)(s->n.version_ids +
					  (s->file ? tessera_version_own_ids(s->file) : 0)),
		     (unsigned long long)s->n.coll_bytes_sent,
		     (unsigned long long)s->n.coll_bytes_received,
		     (unsigned long long)s->n.mem_list_calls);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	tfd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (tfd < 0) {
		fprintf(stderr, "tessera: trace %s: %s\n", path, strerror(errno));
		return;
	}
	if (write(tfd, line, (size_t)n) != n)
		fprintf(stderr, "tessera: trace %s: short write\n", path);
	close(tfd);
}
