/*
 * ad_tessera.h - the ROMIO (ADIO) driver for Tessera: shared declarations.
 *
 * The driver is selected by the "tessera:" file-name prefix, or by a name
 * on the Tessera mount without it (ad_tessera_names.c). ROMIO strips the
 * prefix; what remains, made absolute, is a path under the config's mount
 * point or a plain Tessera path (libtessera maps both). Files:
 *
 *   ad_tessera.c          operations table, features, errors, connection, trace
 *   ad_tessera_names.c    which names are Tessera's; relative names
 *   ad_tessera_open.c     open (collective: one open, a broadcast), close, delete
 *   ad_tessera_rdwr.c     contiguous reads and writes, flush, resize, fcntl
 *   ad_tessera_hints.c    hints (striping, access methods, list batch)
 *   ad_tessera_view.c     walking a file view as (offset, length) regions
 *   ad_tessera_strided.c  strided reads and writes by method
 *   ad_tessera_dtype.c    MPI datatypes to dataloops (see ad_tessera_dtype.h)
 */
#ifndef AD_TESSERA_H
#define AD_TESSERA_H

#include <stdint.h>

#include "adio.h"
#include "tessera.h"

/* How a strided (noncontiguous) access reaches the file system. */
enum adt_method {
	ADT_POSIX = 0, /* one contiguous call per file region */
	ADT_SIEVE,     /* read a window covering many regions (writes: modify, write back) */
	ADT_LIST,      /* tessera_read_list / tessera_write_list */
	ADT_DTYPE,     /* tessera_read_dtype / tessera_write_dtype: the view travels as a dataloop */
	ADT_METHODS
};
extern const char *const adt_method_names[ADT_METHODS];

/* Datatype I/O both ways unless hints say otherwise. */
#define ADT_DEFAULT_READ ADT_DTYPE
#define ADT_DEFAULT_WRITE ADT_DTYPE

/* What the driver did to one open file; written to $TESSERA_ROMIO_TRACE at
 * close so tests can prove the driver (not OMPIO) ran and which path. */
struct adt_counters {
	uint64_t mds_opens;                   /* opens that asked the metadata daemon */
	uint64_t shared_opens;                /* opens from the opener's broadcast share */
	uint64_t contig_reads, contig_writes;
	uint64_t strided_reads[ADT_METHODS], strided_writes[ADT_METHODS];
	uint64_t coll_reads, coll_writes;     /* collective calls (two-phase) */
	uint64_t bytes_read, bytes_written;
	uint64_t requests;                    /* libtessera calls that move data */
};

/* Driver state of one open file (fd->fs_ptr). Allocated by the first
 * SetInfo (ROMIO applies hints before it opens), freed at close. */
struct adt_file {
	tessera_file *file;            /* NULL until opened */
	char path[4096];               /* fd->filename resolved (adt_resolve), for libtessera */
	int writable;                  /* opened for writing: synced if closed at finalize */
	struct adt_file *next_open;    /* the process's open files (adt_track) */
	int read_method, write_method; /* enum adt_method */
	uint32_t list_batch;           /* file regions per list request (0: config's) */
	uint64_t strip_size;           /* of the open file, else the striping_unit hint */
	uint32_t stripe_count;         /* likewise striping_factor */
	int hint_error;                /* a refused hint (negative errno), or 0: */
	char hint_msg[512];            /* ROMIO ignores SetInfo's error at open,
					* so the open fails with this */
	struct adt_counters n;
};

/* The process's connection, made on first use from $TESSERA_CONFIG. NULL
 * on failure, with the reason in err. It lasts while files are open: see
 * ad_tessera.c for how MPI_Finalize ends it. */
tessera_fs *adt_connect(char *err, size_t errlen);
/* An open file joins (track) and leaves (untrack, after tessera_close) the
 * process's list; leaving last after MPI_Finalize began disconnects. */
void adt_track(struct adt_file *s);
void adt_untrack(struct adt_file *s);
/* MPI_Finalize has begun (files closed now are synced first). */
int adt_finalizing(void);

/* The path libtessera is given for a name as ROMIO passes it (prefix
 * stripped): made absolute against the working directory and normalised,
 * and a name reached through symbolic links into the mount spelt under
 * the config's mount_point. 0 or a negative errno. */
int adt_resolve(const char *name, char *out, size_t len);
/* Whether a file name (with or without a prefix) is the driver's: the
 * "tessera:" prefix, ROMIO_FSTYPE_FORCE=tessera:, or a name on the
 * Tessera mount (a FUSE file system at the config's mount_point). Asked by
 * Open MPI's component selection and ROMIO's file system detection. */
int ADIOI_TESSERA_Claims(const char *filename);

/* The driver state of fd, allocating it with defaults if needed (NULL only
 * when out of memory). */
struct adt_file *adt_state(ADIO_File fd);

/* An MPI error code for a failure: prints "tessera: <what>" on stderr
 * (Open MPI's ROMIO glue drops the text of error codes, so this is where a
 * user sees it) and passes the text to MPIO_Err_create_code. `err` is a
 * negative errno chosing the MPI error class. */
int adt_error(const char *myname, int line, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define ADT_ERROR(err, ...) adt_error(myname, __LINE__, (err), __VA_ARGS__)

/* Append fd's counters to $TESSERA_ROMIO_TRACE, if set. */
void adt_trace(ADIO_File fd, const char *event);

/* ------------------------------------------------------------ file views
 *
 * A strided access is the byte range [pos, pos + len) of the view's data
 * stream; a walk yields its file regions in stream order. */
struct adt_view {
	ADIOI_Flatlist_node *flat; /* the filetype's blocks (owned by ROMIO) */
	int64_t disp;              /* view displacement, bytes */
	int64_t extent;            /* filetype extent: tile stride */
	uint64_t size;             /* data bytes per tile (> 0) */
	/* ROMIO does not flatten contiguous types: one block of our own */
	ADIOI_Flatlist_node whole;
	ADIO_Offset whole_off, whole_len;
};
struct adt_walk {
	const struct adt_view *v;
	uint64_t tile;             /* current tile */
	MPI_Count block;           /* current block of the flat list */
	uint64_t in_block;         /* bytes of it already passed */
	uint64_t left;             /* stream bytes still to yield */
};
int adt_view_init(ADIO_File fd, struct adt_view *v);
/* Stream position of the first stream byte at or after file offset off. */
uint64_t adt_view_stream_pos(const struct adt_view *v, int64_t off);
void adt_walk_init(struct adt_walk *w, const struct adt_view *v, uint64_t pos, uint64_t len);
/* The next region, at most max bytes; 0 when the walk is done. */
int adt_walk_next(struct adt_walk *w, uint64_t max, int64_t *off, uint64_t *len);

/* ------------------------------------------------------------ operations */
void ADIOI_TESSERA_Open(ADIO_File fd, int *error_code);
void ADIOI_TESSERA_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code);
void ADIOI_TESSERA_Close(ADIO_File fd, int *error_code);
void ADIOI_TESSERA_Delete(const char *filename, int *error_code);
void ADIOI_TESSERA_ReadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			      int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			      int *error_code);
void ADIOI_TESSERA_WriteContig(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			       int *error_code);
void ADIOI_TESSERA_ReadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			       int *error_code);
void ADIOI_TESSERA_WriteStrided(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
				int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				int *error_code);
void ADIOI_TESSERA_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				   int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
				   int *error_code);
void ADIOI_TESSERA_WriteStridedColl(ADIO_File fd, const void *buf, int count,
				    MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
				    ADIO_Status *status, int *error_code);
void ADIOI_TESSERA_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t *fcntl_struct, int *error_code);
void ADIOI_TESSERA_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code);
void ADIOI_TESSERA_Flush(ADIO_File fd, int *error_code);
void ADIOI_TESSERA_Resize(ADIO_File fd, ADIO_Offset size, int *error_code);
int ADIOI_TESSERA_Feature(ADIO_File fd, int flag);

#endif /* AD_TESSERA_H */
