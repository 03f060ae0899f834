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
 *   ad_tessera_open.c     open (collective: one open, a broadcast; a versioned
 *                         file's writer IDs, one request for all ranks), close, delete
 *   ad_tessera_rdwr.c     contiguous reads and writes, flush, resize, fcntl
 *   ad_tessera_hints.c    hints (striping, access methods, list batch)
 *   ad_tessera_view.c     walking a file view as (offset, length) regions
 *   ad_tessera_strided.c  strided reads and writes by method, collective calls
 *   ad_tessera_lock.c     atomic mode: byte-range locks around accesses, and the
 *                         locks ROMIO's generic code asks for
 *   ad_tessera_sharedfp.c shared file pointers (a fetch-and-add on a storage daemon)
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

/* How atomic mode describes the bytes it locks (seed 001, §7.2). */
enum adt_lock_method {
	ADT_LOCK_POSIX = 0, /* §7.2.1: a lock request per region, all taken under
			     * the protocol (tessera_lock_list_split, REGION) */
	ADT_LOCK_LIST,      /* one lock of the regions as a list (tessera_lock_list) */
	ADT_LOCK_DTYPE,     /* the view travels as a dataloop (tessera_lock_dtype) */
	ADT_LOCK_POSIX_SEQ, /* independent one-region locks one after another, in
			     * offset order (what an fcntl user does) */
	ADT_LOCK_LIST_SPLIT, /* §7.2.2: a lock request per list-lock message
			      * (lock_list_batch regions: 64 is the
			      * dissertation's), each released on its own */
	ADT_LOCK_BLOCK,     /* the false-sharing baseline (§7.1): regions rounded
			     * out to ADT_LOCK_BLOCK_SIZE blocks (tessera_lock_blocks) */
	ADT_LOCK_METHODS
};
/* The block of the "block" lock method: a page, as block-granular file
 * systems' extent locks round to. */
#define ADT_LOCK_BLOCK_SIZE 4096
extern const char *const adt_lock_method_names[ADT_LOCK_METHODS];
/* Protocols by TESSERA_LOCK_* value: "two-phase", "one-try", "alt-try". */
#define ADT_LOCK_PROTOCOLS 3
extern const char *const adt_lock_protocol_names[ADT_LOCK_PROTOCOLS];
#define ADT_DEFAULT_LOCK_METHOD ADT_LOCK_DTYPE
#define ADT_DEFAULT_LOCK_PROTOCOL TESSERA_LOCK_ALT_TRY

/* Who syncs the file in MPI_File_sync (hint tessera_sync). */
enum adt_sync {
	ADT_SYNC_EVERY = 0, /* every rank syncs its handle (the default) */
	ADT_SYNC_ONE,       /* seed 001 §5.3: after a barrier rank 0 syncs the
			     * file's objects for all; the others take its result */
	ADT_SYNC_MODES
};
extern const char *const adt_sync_names[ADT_SYNC_MODES];

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
	uint64_t locks;                       /* locks taken (atomic mode, sieving writes) */
	uint64_t lock_requests;               /* the storage daemons' lock requests they
					       * made (tessera_lock_requests): what the
					       * lock method sends */
	uint64_t generic_locks;               /* locks ROMIO's generic code asked for */
	uint64_t shared_fp_ops;               /* shared file pointer fetch-adds and sets */
	uint64_t lock_us, unlock_us;          /* time spent taking and releasing locks */
	uint64_t version_ids;                 /* VERSION_ID requests: the job's block
					       * (rank 0 at open), then the handle's own */
	uint64_t coll_bytes_sent;             /* two-phase writes: this rank's bytes in
					       * another aggregator's file domain */
	uint64_t coll_bytes_received;         /* two-phase reads: likewise, received */
	uint64_t mem_list_calls;              /* list calls whose memory was an iovec
					       * list (tessera_mem_pack=false) */
};

/* A lock ROMIO's generic code took (ADIOI_WRITE_LOCK and the others,
 * routed here for Tessera files by a patch to adioi.h). */
struct adt_generic_lock {
	int64_t offset, len;
	int mode;                             /* TESSERA_LOCK_READ or _WRITE */
	tessera_lock *lock;
	struct adt_generic_lock *next;
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
	int mem_pack;                  /* list I/O packs noncontiguous memory into one
					* buffer (1, the default) or sends it as an
					* iovec list (0; hint tessera_mem_pack) */
	int sync_mode;                 /* enum adt_sync */
	int lock_method;               /* enum adt_lock_method */
	int lock_protocol;             /* TESSERA_LOCK_TWO_PHASE, _ONE_TRY or _ALT_TRY */
	struct adt_generic_lock *generic; /* held for ROMIO's generic code */
	uint64_t shared_fp_base;       /* this open's shared pointer: its counter's key */
	uint64_t shared_fp_views;      /* views set since open (mixed into the key) */
	uint64_t strip_size;           /* of the open file, else the striping_unit hint */
	uint32_t stripe_count;         /* likewise striping_factor */
	int versioned;                 /* the open file is versioned (chapter 8:
					* atomic mode takes no locks); before the
					* open, the tessera_versioned hint, for a
					* create */
	int job_ids;                   /* writes under the job's block of writer IDs
					* (a versioned file open for writing: rank 0
					* took one per rank; its close ends them) */
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

/* An MPI error code for a failure, its text "tessera: <what>" (what
 * MPI_Error_string of the code returns) and nothing printed: see the
 * errors section of ad_tessera.c. The text also goes to the debug log
 * when TESSERA_DEBUG asks (a value other than "0": stderr, or the file it
 * names when it starts with '/'). `err` is a negative errno choosing the
 * MPI error class; adt_error_class takes the class itself. */
#define ADT_ERROR_CODES 16 /* error classes the driver makes codes for (Open MPI) */
int adt_error(const char *myname, int line, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int adt_error_class(const char *myname, int line, int cls, const char *fmt, ...)
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
	int64_t lb;                /* filetype lower bound: tile k spans
				    * disp + lb + k * extent on (it may lie
				    * far past the extent: absolute offsets) */
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
/* The same for a memory type of `count` copies at a buffer: offsets are
 * relative to the buffer (disp 0, tiles at the type's extent). */
int adt_mem_view_init(ADIO_File fd, MPI_Datatype datatype, struct adt_view *v);
/* After the access: the memory type's flattened form is dropped again
 * (Open MPI's ROMIO: see ad_tessera_view.c). */
void adt_mem_view_done(ADIO_File fd, MPI_Datatype datatype);
/* Stream position of the first stream byte at or after file offset off. */
uint64_t adt_view_stream_pos(const struct adt_view *v, int64_t off);
void adt_walk_init(struct adt_walk *w, const struct adt_view *v, uint64_t pos, uint64_t len);
/* The next region, at most max bytes; 0 when the walk is done. */
int adt_walk_next(struct adt_walk *w, uint64_t max, int64_t *off, uint64_t *len);
/* File offset one past the last byte of stream bytes [pos, pos + len)
 * (len > 0), and the offset of the first. */
int64_t adt_view_end(const struct adt_view *v, uint64_t pos, uint64_t len);
int64_t adt_view_start(const struct adt_view *v, uint64_t pos);

/* ------------------------------------------------------------ locks
 *
 * The locks one access holds, taken by the file's lock method and
 * protocol (hints tessera_lock_method, tessera_lock_protocol). A lock an
 * access needs that a lock of ROMIO's generic code already covers is not
 * taken twice (locks of one process conflict with each other too). On
 * failure `why` says what failed; nothing is held then. */
struct adt_held {
	tessera_lock **locks;
	size_t n, cap;
};
/* Regions (any order, overlaps merged), mode TESSERA_LOCK_READ or _WRITE. */
int adt_lock_regions(ADIO_File fd, int mode, const uint64_t *offs, const uint64_t *lens,
		     size_t n, struct adt_held *h, char *why, size_t whylen);
/* Stream bytes [pos, pos + len) of the view (len > 0). */
int adt_lock_view(ADIO_File fd, int mode, const struct adt_view *v, uint64_t pos,
		  uint64_t len, struct adt_held *h, char *why, size_t whylen);
/* Release everything h holds (also after a failed I/O); 0 or the first
 * failure, with why set. */
int adt_unlock(ADIO_File fd, struct adt_held *h, char *why, size_t whylen);
/* Release what ROMIO's generic code left held (at close). */
void adt_generic_release_all(struct adt_file *s);

/* One contiguous or strided access, as the ops table's functions do it
 * (locked in atomic mode): the collective calls use them in atomic mode.
 * Returns the bytes moved, or -1 with *error_code set. */
int64_t adt_contig_io(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		      int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		      int *error_code, int writing, const char *myname);
int64_t adt_strided_io(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		       int *error_code, int writing, const char *myname);

/* ------------------------------------------------------------ two-phase exchange
 *
 * The bytes of this rank's access that ROMIO's two-phase code moves to or
 * from another rank: those in a file domain whose aggregator is another
 * rank, by ROMIO's own partition (ADIOI_Calc_file_domains and
 * ADIOI_Calc_aggregator with the file's hints), and 0 when ROMIO would
 * take the independent path instead (cb_* disabled, or automatic and not
 * interleaved). Collective over fd->comm: called by every rank before
 * ROMIO's collective call. */
uint64_t adt_coll_exchange_bytes(ADIO_File fd, int count, MPI_Datatype datatype,
				 int file_ptr_type, ADIO_Offset offset, int writing);
/* Publish the file's counters in fd->info (MPI_File_get_info). */
void adt_publish_counters(ADIO_File fd);

/* ------------------------------------------------------------ shared file pointer
 *
 * Kept as a counter of the file (tessera_fetch_add) under a key of this
 * open: a random base rank 0 draws at open (shared_fp_base) mixed with
 * the number of views set since, so every open, and every view, starts
 * at 0 without a message. */
uint64_t adt_shared_fp_key(const struct adt_file *s);
uint64_t adt_shared_fp_new_base(void);

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
void ADIOI_TESSERA_IreadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			       int file_ptr_type, ADIO_Offset offset, MPI_Request *request,
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
void ADIOI_TESSERA_IreadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				    int file_ptr_type, ADIO_Offset offset, MPI_Request *request,
				    int *error_code);
void ADIOI_TESSERA_IwriteStridedColl(ADIO_File fd, const void *buf, int count,
				     MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
				     MPI_Request *request, int *error_code);
void ADIOI_TESSERA_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code);
void ADIOI_TESSERA_Flush(ADIO_File fd, int *error_code);
void ADIOI_TESSERA_Resize(ADIO_File fd, ADIO_Offset size, int *error_code);
int ADIOI_TESSERA_Feature(ADIO_File fd, int flag);
/* Not in the ops table: patches route ROMIO's calls here for Tessera
 * files (patches/08-*, 09-*). */
int ADIOI_TESSERA_Set_lock(ADIO_File fd, int cmd, int type, ADIO_Offset offset, int whence,
			   ADIO_Offset len);
void ADIOI_TESSERA_Get_shared_fp(ADIO_File fd, ADIO_Offset incr, ADIO_Offset *shared_fp,
				 int *error_code);
void ADIOI_TESSERA_Set_shared_fp(ADIO_File fd, ADIO_Offset offset, int *error_code);
void ADIOI_TESSERA_Reset_shared_fp(ADIO_File fd);

#endif /* AD_TESSERA_H */
