/*
 * romio_mpi1_compat.h - force-included when build-romio.sh compiles ROMIO's
 * own test programs: a few still use MPI-1 names that Open MPI 4 removed
 * from mpi.h (it turns them into static assertions).
 *
 * The type constructors each have an MPI-2 twin with the same arguments.
 * The MPI_LB and MPI_UB markers (noncontig, noncontig_coll,
 * noncontig_coll2, i_noncontig) have none, but libmpi still exports the
 * datatypes behind them: declare them as Open MPI's MPI-1 compatibility
 * mode (--enable-mpi1-compatibility) would.
 */
#include <mpi.h>

#undef MPI_Type_hindexed
#define MPI_Type_hindexed MPI_Type_create_hindexed
#undef MPI_Type_hvector
#define MPI_Type_hvector MPI_Type_create_hvector
#undef MPI_Type_struct
#define MPI_Type_struct MPI_Type_create_struct
#undef MPI_Address
#define MPI_Address MPI_Get_address

#undef MPI_LB
#undef MPI_UB
extern struct ompi_predefined_datatype_t ompi_mpi_lb, ompi_mpi_ub;
#define MPI_LB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_lb)
#define MPI_UB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_ub)
