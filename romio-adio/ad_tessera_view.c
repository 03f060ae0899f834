/*
 * ad_tessera_view.c - a file view (displacement + filetype tiled at its
 * extent) walked as file regions in data-stream order, from ROMIO's
 * flattened filetype. Invariants: a walk yields exactly `len` bytes unless
 * the filetype holds no data; adjacent regions are merged.
 */
#include <errno.h>
#include <string.h>

#include "ad_tessera.h"
#include "adioi.h"

int adt_view_init(ADIO_File fd, struct adt_view *v)
{
	MPI_Count size, lb, extent;
	int contig;

	MPI_Type_size_x(fd->filetype, &size);
	MPI_Type_get_extent_x(fd->filetype, &lb, &extent);
	if (size <= 0 || extent <= 0)
		return -EINVAL;
	ADIOI_Datatype_iscontig(fd->filetype, &contig);
	if (contig) {
		memset(&v->whole, 0, sizeof(v->whole));
		v->whole_off = lb;
		v->whole_len = size;
		v->whole.count = 1;
		v->whole.blocklens = &v->whole_len;
		v->whole.indices = &v->whole_off;
		v->flat = &v->whole;
	} else {
		v->flat = ADIOI_Flatten_and_find(fd->filetype);
	}
	v->disp = fd->disp;
	v->extent = extent;
	v->lb = lb;
	v->size = (uint64_t)size;
	return 0;
}

uint64_t adt_view_stream_pos(const struct adt_view *v, int64_t off)
{
	int64_t rel = off - v->disp, base, start, end;
	uint64_t tile, acc = 0;

	/* Tiles start at the lower bound, not at the displacement: a type of
	 * absolute offsets has its first tile far past one extent. */
	if (rel <= v->lb)
		return 0;
	tile = (uint64_t)((rel - v->lb) / v->extent);
	base = (int64_t)tile * v->extent;
	for (MPI_Count i = 0; i < v->flat->count; i++) {
		start = base + v->flat->indices[i];
		end = start + v->flat->blocklens[i];
		if (rel < end)
			return tile * v->size + acc + (uint64_t)(rel > start ? rel - start : 0);
		acc += (uint64_t)v->flat->blocklens[i];
	}
	return (tile + 1) * v->size;
}

void adt_walk_init(struct adt_walk *w, const struct adt_view *v, uint64_t pos, uint64_t len)
{
	uint64_t r = pos % v->size, acc = 0;

	w->v = v;
	w->tile = pos / v->size;
	w->left = len;
	w->block = 0;
	w->in_block = 0;
	for (MPI_Count i = 0; i < v->flat->count; i++) {
		uint64_t bl = (uint64_t)v->flat->blocklens[i];

		if (r < acc + bl) {
			w->block = i;
			w->in_block = r - acc;
			return;
		}
		acc += bl;
	}
}

/* One step: the rest of the current block, capped. */
static int step(struct adt_walk *w, uint64_t max, int64_t *off, uint64_t *len)
{
	const struct adt_view *v = w->v;

	while (w->left) {
		uint64_t bl, take;

		if (w->block >= v->flat->count) {
			w->block = 0;
			w->tile++;
		}
		bl = (uint64_t)v->flat->blocklens[w->block];
		if (w->in_block >= bl) { /* zero-length markers, finished blocks */
			w->block++;
			w->in_block = 0;
			continue;
		}
		take = bl - w->in_block;
		if (take > w->left)
			take = w->left;
		if (take > max)
			take = max;
		*off = v->disp + (int64_t)w->tile * v->extent + v->flat->indices[w->block] +
		       (int64_t)w->in_block;
		*len = take;
		w->in_block += take;
		w->left -= take;
		return 1;
	}
	return 0;
}

int adt_walk_next(struct adt_walk *w, uint64_t max, int64_t *off, uint64_t *len)
{
	struct adt_walk peek;
	int64_t o2;
	uint64_t l2;

	if (!step(w, max, off, len))
		return 0;
	/* Merge what follows in the file, up to max. */
	while (*len < max) {
		peek = *w;
		if (!step(&peek, max - *len, &o2, &l2) || o2 != *off + (int64_t)*len)
			break;
		*w = peek;
		*len += l2;
	}
	return 1;
}

int64_t adt_view_start(const struct adt_view *v, uint64_t pos)
{
	struct adt_walk w;
	int64_t off = 0;
	uint64_t len = 0;

	adt_walk_init(&w, v, pos, 1);
	adt_walk_next(&w, 1, &off, &len);
	return off;
}

int64_t adt_view_end(const struct adt_view *v, uint64_t pos, uint64_t len)
{
	return adt_view_start(v, pos + len - 1) + 1;
}

int adt_mem_view_init(ADIO_File fd, MPI_Datatype datatype, struct adt_view *v)
{
	MPI_Count size, lb, extent;

	MPI_Type_size_x(datatype, &size);
	MPI_Type_get_extent_x(datatype, &lb, &extent);
	if (size <= 0 || extent <= 0)
		return -EINVAL;
	/* ROMIO's flattened blocks are displacements from the buffer (lb
	 * included), as its own drivers add them to the user's pointer.
	 * Open MPI's ROMIO (3.2) keeps them in a list keyed by the type's
	 * handle and never drops an entry when the type is freed: a type
	 * given a freed one's handle later (a memory type, or the copy of a
	 * filetype set_view flattens) would find the old blocks. So a memory
	 * type is flattened afresh here and its entry dropped after the
	 * access (adt_mem_view_done). A view's filetype is ROMIO's own copy,
	 * never a user's type, so this is never the filetype's entry. MPICH's
	 * ROMIO keeps them as an attribute of the type, freed with it. */
#ifndef ROMIO_INSIDE_MPICH
	if (datatype != fd->filetype)
		ADIOI_Delete_flattened(datatype);
#else
	(void)fd;
#endif
	v->flat = ADIOI_Flatten_and_find(datatype);
	if (!v->flat)
		return -EINVAL;
	v->disp = 0;
	v->extent = extent;
	v->size = (uint64_t)size;
	return 0;
}

void adt_mem_view_done(ADIO_File fd, MPI_Datatype datatype)
{
#ifndef ROMIO_INSIDE_MPICH
	if (datatype != fd->filetype)
		ADIOI_Delete_flattened(datatype);
#else
	(void)fd;
	(void)datatype;
#endif
}
