/*
 * mpi_netcdf.c - NetCDF-4 parallel over the Tessera driver: nc_create_par
 * (NC_NETCDF4), each rank puts its rows collectively with nc_put_vara_int,
 * then every rank reads the whole variable back.
 *
 *   mpi_netcdf FILE      (a "tessera:" name)
 */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdlib.h>

#include "mpi_check.h"

#define ROWS 4
#define COLS 32

static const char *file;

#define NC(call)                                                                 \
	do {                                                                     \
		int nc_rc_ = (call);                                             \
		CHECK(nc_rc_ == NC_NOERR, "%s: %s", #call, nc_strerror(nc_rc_)); \
	} while (0)

static void test_create_put(void)
{
	int ncid, dims[2], var, buf[ROWS * COLS];
	size_t start[2] = {(size_t)ROWS * mc_rank, 0}, count[2] = {ROWS, COLS};

	for (int i = 0; i < ROWS * COLS; i++)
		buf[i] = (ROWS * mc_rank + i / COLS) * 100 + i % COLS;
	NC(nc_create_par(file, NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
	NC(nc_def_dim(ncid, "y", (size_t)ROWS * mc_size, &dims[0]));
	NC(nc_def_dim(ncid, "x", COLS, &dims[1]));
	NC(nc_def_var(ncid, "field", NC_INT, 2, dims, &var));
	NC(nc_put_att_text(ncid, NC_GLOBAL, "title", 14, "tessera netcdf"));
	NC(nc_enddef(ncid));
	NC(nc_var_par_access(ncid, var, NC_COLLECTIVE));
	NC(nc_put_vara_int(ncid, var, start, count, buf));
	NC(nc_close(ncid));
}

static void test_read_back(void)
{
	int ncid, var, n = ROWS * mc_size, *buf = malloc(sizeof(int) * (size_t)n * COLS);
	size_t start[2] = {0, 0}, count[2] = {(size_t)n, COLS};

	NC(nc_open_par(file, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
	NC(nc_inq_varid(ncid, "field", &var));
	NC(nc_var_par_access(ncid, var, NC_COLLECTIVE));
	NC(nc_get_vara_int(ncid, var, start, count, buf));
	NC(nc_close(ncid));
	for (int i = 0; i < n * COLS; i++)
		CHECK(buf[i] == (i / COLS) * 100 + i % COLS, "field[%d][%d] is %d", i / COLS,
		      i % COLS, buf[i]);
	free(buf);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "netcdf4_create_put_vara_collective", "netcdf4_read_back" };
	static void (*const fns[])(void) = { test_create_put, test_read_back };

	return mc_main_on_file(argc, argv, &file, names, fns, 2);
}
