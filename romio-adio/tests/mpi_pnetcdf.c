/*
 * mpi_pnetcdf.c - PnetCDF over the Tessera driver: ncmpi_create (CDF-5),
 * put_vara_all of each rank's rows, get_vara_all of the whole variable.
 *
 *   mpi_pnetcdf FILE     (a "tessera:" name under the mount point)
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdlib.h>

#include "mpi_check.h"

#define ROWS 5
#define COLS 40

static const char *file;

#define NCMPI(call)                                                                  \
	do {                                                                         \
		int nc_rc_ = (call);                                                 \
		CHECK(nc_rc_ == NC_NOERR, "%s: %s", #call, ncmpi_strerror(nc_rc_)); \
	} while (0)

static void test_create_put(void)
{
	int ncid, dims[2], var;
	double buf[ROWS * COLS];
	MPI_Offset start[2] = {(MPI_Offset)ROWS * mc_rank, 0}, count[2] = {ROWS, COLS};

	for (int i = 0; i < ROWS * COLS; i++)
		buf[i] = (ROWS * mc_rank + i / COLS) + (i % COLS) / 100.0;
	NCMPI(ncmpi_create(MPI_COMM_WORLD, file, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
	NCMPI(ncmpi_def_dim(ncid, "y", (MPI_Offset)ROWS * mc_size, &dims[0]));
	NCMPI(ncmpi_def_dim(ncid, "x", COLS, &dims[1]));
	NCMPI(ncmpi_def_var(ncid, "temperature", NC_DOUBLE, 2, dims, &var));
	NCMPI(ncmpi_enddef(ncid));
	NCMPI(ncmpi_put_vara_double_all(ncid, var, start, count, buf));
	NCMPI(ncmpi_close(ncid));
}

static void test_read_back(void)
{
	int ncid, var, n = ROWS * mc_size;
	double *buf = malloc(sizeof(double) * (size_t)n * COLS);
	MPI_Offset start[2] = {0, 0}, count[2] = {n, COLS};

	NCMPI(ncmpi_open(MPI_COMM_WORLD, file, NC_NOWRITE, MPI_INFO_NULL, &ncid));
	NCMPI(ncmpi_inq_varid(ncid, "temperature", &var));
	NCMPI(ncmpi_get_vara_double_all(ncid, var, start, count, buf));
	NCMPI(ncmpi_close(ncid));
	for (int i = 0; i < n * COLS; i++)
		CHECK(buf[i] == (i / COLS) + (i % COLS) / 100.0, "temperature[%d][%d] is %g",
		      i / COLS, i % COLS, buf[i]);
	free(buf);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "pnetcdf_create_put_vara_all", "pnetcdf_get_vara_all" };
	static void (*const fns[])(void) = { test_create_put, test_read_back };

	return mc_main_on_file(argc, argv, &file, names, fns, 2);
}
