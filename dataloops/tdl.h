/*
 * tdl.h - Tessera dataloops: pure access-pattern and striping math.
 *
 * No I/O, no network, no allocation unless a function says so; no other
 * part's header. Shared by the client library, the storage daemons, the
 * ROMIO driver, and proto/, which encodes dataloops as messages through the
 * node records below.
 */
#ifndef TESSERA_TDL_H
#define TESSERA_TDL_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ layout
 *
 * A file is cut into strips of strip_size bytes dealt round-robin over
 * `count` objects (slots). Logical strip s lives in slot s % count, at
 * object offset (s / count) * strip_size. Slot i is stored on the server
 * the file's layout names at position i.
 */
struct tdl_layout {
	uint64_t strip_size; /* bytes per strip, 1 .. TDL_MAX_STRIP_SIZE */
	uint32_t count;      /* number of slots (objects), 1 .. TDL_MAX_COUNT */
};

/* The largest layout the math below is defined for. With both, a row of
 * strips (strip_size x count) stays below 2^48 bytes, so no step of the
 * math overflows and nothing divides by zero. Every function below
 * expects a layout tdl_layout_check accepted. */
#define TDL_MAX_STRIP_SIZE (1ull << 32) /* 4 GiB */
#define TDL_MAX_COUNT (1u << 16)

/* 0, or -EINVAL naming the broken limit in err (may be NULL). */
int tdl_layout_check(const struct tdl_layout *layout, char *err, size_t errlen);

/* Where logical byte `offset` lives. */
void tdl_layout_map(const struct tdl_layout *layout, uint64_t offset,
		    uint32_t *slot, uint64_t *object_offset);

/* The logical offset of byte `object_offset` of slot `slot`; UINT64_MAX
 * when that is beyond 2^64 (an object offset no file of 2^64 bytes has). */
uint64_t tdl_layout_unmap(const struct tdl_layout *layout, uint32_t slot,
			  uint64_t object_offset);

/* Bytes from `offset` to the end of its strip, capped at `length`. */
uint64_t tdl_layout_run(const struct tdl_layout *layout, uint64_t offset,
			uint64_t length);

/* Size slot `slot`'s object has when the file is `logical_size` long and
 * fully written (used by truncate). */
uint64_t tdl_layout_object_size(const struct tdl_layout *layout, uint32_t slot,
				uint64_t logical_size);

/* The logical file size implied by slot `slot` holding `object_size`
 * bytes: one past the logical offset of its last byte, 0 if empty,
 * UINT64_MAX if beyond. The file size is the maximum of this over all
 * slots. */
uint64_t tdl_layout_logical_size(const struct tdl_layout *layout, uint32_t slot,
				 uint64_t object_size);

/* ---------------------------------------------------------------- dataloops
 *
 * A dataloop describes a typed access pattern (an MPI datatype's typemap)
 * as a small tree of nodes. Every node places `blocks` of elements of one
 * child (a node, or a single byte) at byte offsets relative to its origin:
 *
 *   contig        1 block of `count` elements at offset 0
 *   vector        `count` blocks of `blocklen` elements, block b at b*stride
 *   blockindexed  `count` blocks of `blocklen` elements at offsets[b]
 *   indexed       `count` blocks of blocklens[b] elements at offsets[b]
 *   struct        like indexed, block b made of children[b] elements
 *
 * Elements of a block tile at the child's extent. Every node carries its
 * lower bound and extent (natural, or set by tdl_resized), and a dataloop
 * repeated `count` times tiles at its root's extent. Strides, offsets and
 * extents are bytes and may be negative.
 *
 * The "data stream" of (dataloop, count) is the concatenation of its
 * typemap's bytes in typemap order; a view with displacement d maps stream
 * byte k to file offset d + offset(k).
 *
 * A struct tdl_dataloop is immutable once built; it is freed with tdl_free.
 * Builders allocate a new dataloop and never take ownership of inputs.
 */
struct tdl_dataloop;

enum tdl_kind {
	TDL_CONTIG = 1,
	TDL_VECTOR = 2,
	TDL_BLOCKINDEXED = 3,
	TDL_INDEXED = 4,
	TDL_STRUCT = 5,
};

/* Limits every dataloop obeys (builders and tdl_from_nodes enforce them). */
#define TDL_MAX_DEPTH 24          /* nodes on any root-to-leaf path */
#define TDL_MAX_NODES 4096        /* nodes in one dataloop */
#define TDL_MAX_ENTRIES (1 << 22) /* offsets + block lengths, all nodes */

/* MPI order and distribution constants for subarray/darray. */
#define TDL_ORDER_C 0
#define TDL_ORDER_FORTRAN 1
#define TDL_DISTRIBUTE_NONE 0
#define TDL_DISTRIBUTE_BLOCK 1
#define TDL_DISTRIBUTE_CYCLIC 2
#define TDL_DISTRIBUTE_DFLT_DARG (-1)

/* Builders (mirror the MPI type constructors). Element strides and
 * displacements are in units of old's extent, h* variants in bytes. */
int tdl_bytes(int64_t n, struct tdl_dataloop **out);
int tdl_contig(int64_t count, const struct tdl_dataloop *old,
	       struct tdl_dataloop **out);
int tdl_vector(int64_t count, int64_t blocklen, int64_t stride,
	       const struct tdl_dataloop *old, struct tdl_dataloop **out);
int tdl_hvector(int64_t count, int64_t blocklen, int64_t stride_bytes,
		const struct tdl_dataloop *old, struct tdl_dataloop **out);
int tdl_indexed_block(int64_t count, int64_t blocklen, const int64_t *displs,
		      const struct tdl_dataloop *old, struct tdl_dataloop **out);
int tdl_hindexed_block(int64_t count, int64_t blocklen,
		       const int64_t *displs_bytes,
		       const struct tdl_dataloop *old,
		       struct tdl_dataloop **out);
int tdl_indexed(int64_t count, const int64_t *blocklens, const int64_t *displs,
		const struct tdl_dataloop *old, struct tdl_dataloop **out);
int tdl_hindexed(int64_t count, const int64_t *blocklens,
		 const int64_t *displs_bytes, const struct tdl_dataloop *old,
		 struct tdl_dataloop **out);
int tdl_struct(int64_t count, const int64_t *blocklens,
	       const int64_t *displs_bytes,
	       const struct tdl_dataloop *const *types,
	       struct tdl_dataloop **out);
int tdl_resized(const struct tdl_dataloop *old, int64_t lb, int64_t extent,
		struct tdl_dataloop **out);
int tdl_subarray(int ndims, const int64_t *sizes, const int64_t *subsizes,
		 const int64_t *starts, int order,
		 const struct tdl_dataloop *old, struct tdl_dataloop **out);
int tdl_darray(int size, int rank, int ndims, const int64_t *gsizes,
	       const int *distribs, const int *dargs, const int *psizes,
	       int order, const struct tdl_dataloop *old,
	       struct tdl_dataloop **out);
int tdl_dup(const struct tdl_dataloop *dl, struct tdl_dataloop **out);
void tdl_free(struct tdl_dataloop *dl);

/* Properties of one instance of the type (precomputed, O(1)). */
uint64_t tdl_size(const struct tdl_dataloop *dl);   /* data bytes */
int64_t tdl_extent(const struct tdl_dataloop *dl);
int64_t tdl_lb(const struct tdl_dataloop *dl);
int64_t tdl_true_lb(const struct tdl_dataloop *dl); /* lowest byte offset */
int64_t tdl_true_ub(const struct tdl_dataloop *dl); /* one past highest */
int tdl_node_count(const struct tdl_dataloop *dl);
int tdl_depth(const struct tdl_dataloop *dl);
/* Bytes the dataloop's arrays and nodes take in memory (what keeping it
 * costs; malloc's own overhead aside). */
size_t tdl_mem_bytes(const struct tdl_dataloop *dl);

/* Whether `count` instances at displacement `disp` stay within [0, 2^63):
 * every produced file offset >= 0 and no overflow. 0 or -EINVAL with a
 * reason in err (may be NULL). */
int tdl_check_view(const struct tdl_dataloop *dl, uint64_t count, int64_t disp,
		   char *err, size_t errlen);

/* A smaller dataloop with the same typemap, lb and extent. */
int tdl_normalize(const struct tdl_dataloop *dl, struct tdl_dataloop **out);

/* ------------------------------------------------------------ node records
 *
 * A dataloop as plain records, one per node, so a codec outside this
 * library (proto/ encodes dataloops as protobuf) can read one and build one
 * without seeing its internals. Children are node indexes (-1: one byte).
 */
struct tdl_node_rec {
	uint32_t kind;            /* enum tdl_kind */
	int32_t child;            /* all kinds but struct; -1: one byte */
	int64_t count;            /* blocks (contig: elements) */
	int64_t blocklen;         /* vector, blockindexed; else 0 */
	int64_t stride;           /* vector, bytes; else 0 */
	const int64_t *offsets;   /* blockindexed, indexed, struct */
	size_t n_offsets;         /* entries in offsets: count, else 0 */
	const int64_t *blocklens; /* indexed, struct */
	size_t n_blocklens;
	const int32_t *children;  /* struct (-1: one byte) */
	size_t n_children;
	int64_t lb, extent;       /* as declared (natural or resized) */
};

/* The root's index, and node i (0 <= i < tdl_node_count) as a record whose
 * arrays point into dl (valid while dl lives). */
int tdl_root(const struct tdl_dataloop *dl);
void tdl_node_get(const struct tdl_dataloop *dl, int i,
		  struct tdl_node_rec *out);
/* A dataloop from n records; the arrays are copied. Trusts nothing: array
 * lengths must fit the kind and count, and every rule a dataloop obeys
 * (limits, signs, references, cycles, depth, overflow) is checked. On
 * failure returns -EINVAL (or -ENOMEM) and names the broken rule in err
 * (may be NULL). */
int tdl_from_nodes(const struct tdl_node_rec *nodes, int32_t n, int32_t root,
		   struct tdl_dataloop **out, char *err, size_t errlen);

/* -------------------------------------------------------- segment engine
 *
 * Walks stream bytes [first, last) of (dataloop, count) at displacement
 * disp and emits (file offset, length, stream position) pieces in stream
 * order, adjacent pieces coalesced. The state is a plain struct owned by
 * the caller (copyable, no allocation); the dataloop must outlive it.
 *
 * A per-server walk emits only bytes that fall on `slot`'s strips of
 * `layout`; `stream` then tells which bytes of the stream each piece is.
 * Its object offset is tdl_layout_map(piece.offset) (tdl_piece_object).
 */
struct tdl_piece {
	uint64_t offset; /* file offset */
	uint64_t length;
	uint64_t stream; /* position of the first byte in the data stream */
};

struct tdl_frame {
	int32_t node; /* -1: the (count x root) repetition */
	int64_t block;
	int64_t elem;  /* element in block, or byte in a contiguous block */
	int64_t base;  /* file offset of this node instance's origin */
};

struct tdl_segment {
	const struct tdl_dataloop *dl;
	int64_t count;
	uint64_t pos, last; /* next stream byte; end of the window */
	int depth;          /* frames in use; 0 when finished */
	int filtered;
	uint32_t slot;
	struct tdl_layout layout;
	int have_pending;   /* a piece not yet handed out (for coalescing) */
	/* Work done so far: runs visited, frames pushed and popped, strips
	 * and empty-block searches stepped through. Each is O(1), so steps
	 * measure the walk's time whatever the dataloop's shape. */
	uint64_t steps;
	/* 0: no limit (set by init). Else, set by the caller after init:
	 * tdl_segment_next fails with -E2BIG once steps would pass it, so a
	 * server can bound the work one request costs. */
	uint64_t max_steps;
	struct tdl_piece pending;
	struct tdl_frame frames[TDL_MAX_DEPTH + 1];
};

int tdl_segment_init(struct tdl_segment *seg, const struct tdl_dataloop *dl,
		     uint64_t count, int64_t disp, uint64_t first,
		     uint64_t last);
int tdl_segment_init_server(struct tdl_segment *seg,
			    const struct tdl_dataloop *dl, uint64_t count,
			    int64_t disp, uint64_t first, uint64_t last,
			    const struct tdl_layout *layout, uint32_t slot);
/* Up to `max` (>= 1) pieces into out, *n set. Once tdl_segment_done, *n is
 * 0. Resuming with a smaller or larger batch yields the same pieces.
 * -E2BIG when the walk passed seg->max_steps (the pieces in out before it
 * are valid; the walk cannot go on). Empty blocks cost no byte: a run of
 * k of them is skipped in O(log k) steps, and one that is not empty is
 * found in O(1). */
int tdl_segment_next(struct tdl_segment *seg, struct tdl_piece *out,
		     size_t max, size_t *n);
int tdl_segment_done(const struct tdl_segment *seg);
/* Where a piece of a per-server walk lives in that server's object. */
uint64_t tdl_piece_object(const struct tdl_layout *layout,
			  const struct tdl_piece *piece);

#endif /* TESSERA_TDL_H */
