/*
 * ad_tessera_dtype.h - MPI datatypes as Tessera dataloops.
 *
 * Every type constructor (combiner) maps to its dataloop builder: named,
 * dup, contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block, struct, subarray, darray (C and Fortran order), resized.
 * A derived type's dataloop is converted once and cached on the type as an
 * MPI attribute, freed by the attribute's delete callback when the type
 * is; named types are cached for the life of the process. Depends on MPI
 * and dataloops/ only (no ROMIO), so a plain MPI program can test it.
 */
#ifndef AD_TESSERA_DTYPE_H
#define AD_TESSERA_DTYPE_H

#include <stdint.h>

#include <mpi.h>

#include "tdl.h"

/* The dataloop of `type`, borrowed: valid while the type exists. 0, or
 * -ENOTSUP for combiners outside the list above (Fortran-only and F90
 * parameterized types), -ENOMEM, -EINVAL. */
int adt_dtype_get(MPI_Datatype type, const struct tdl_dataloop **out);
/* adt_dtype_get's failure in words. */
const char *adt_dtype_why(int rc);

/* Conversions done and cache hits, process-wide. */
struct adt_dtype_stats {
	uint64_t conversions;
	uint64_t hits;
};
void adt_dtype_stats(struct adt_dtype_stats *out);

#endif /* AD_TESSERA_DTYPE_H */
