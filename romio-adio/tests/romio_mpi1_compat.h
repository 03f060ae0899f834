/*
 * romio_mpi1_compat.h - force-included when build-romio.sh compiles ROMIO's
 * own test programs: a few still call MPI-1 type constructors that Open
 * MPI 4 removed (mpi.h turns them into static assertions). Each has an
 * MPI-2 twin with the same arguments.
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
