/*
 * mpi_hdf5.c - parallel HDF5 over the Tessera driver: each rank writes its
 * rows of a contiguous and a chunked 2-D dataset by hyperslab, collective
 * and independent transfers, then all ranks read every row back; and a
 * 1-D dataset of 1-element chunks written collectively as one I/O (a file
 * type of one block per chunk, tens of thousands of them); and datasets
 * written and read back in MPI atomic mode (H5Fset_mpi_atomicity).
 *
 *   mpi_hdf5 FILE                write, close, read back
 *   mpi_hdf5 FILE open-at-exit   write and leave the file open: HDF5 closes
 *                                it from its MPI_Finalize callback, which may
 *                                run after the driver's own
 *   mpi_hdf5 FILE read           read back only (after open-at-exit)
 *
 * FILE is a "tessera:" name (or any name the driver claims).
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define ROWS 8   /* per rank */
#define COLS 100

static const char *file;
static int open_at_exit; /* leave the written file open for MPI_Finalize */

static int value(int row, int col, int which)
{
	return row * 1000 + col + which * 1000000;
}

/* Write dataset `name` (chunked or not) with transfer mode `xfer`. */
static void write_dataset(hid_t f, const char *name, int chunked, H5FD_mpio_xfer_t xfer,
			  int which)
{
	hsize_t dims[2] = {(hsize_t)ROWS * mc_size, COLS}, start[2] = {(hsize_t)ROWS * mc_rank, 0},
		count[2] = {ROWS, COLS}, chunk[2] = {4, 32};
	hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), dxpl = H5Pcreate(H5P_DATASET_XFER), d;
	int *buf = malloc(sizeof(int) * ROWS * COLS);

	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++)
			buf[r * COLS + c] = value(ROWS * mc_rank + r, c, which);
	if (chunked)
		H5Pset_chunk(dcpl, 2, chunk);
	d = H5Dcreate2(f, name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
	H5Pset_dxpl_mpio(dxpl, xfer);
	herr_t rc = H5Dwrite(d, H5T_NATIVE_INT, mem, space, dxpl, buf);
	H5Dclose(d);
	H5Pclose(dxpl);
	H5Pclose(dcpl);
	H5Sclose(mem);
	H5Sclose(space);
	free(buf);
	CHECK(d >= 0 && rc >= 0, "writing %s failed", name);
}

static void check_dataset(hid_t f, const char *name, H5FD_mpio_xfer_t xfer, int which)
{
	hid_t d = H5Dopen2(f, name, H5P_DEFAULT), dxpl = H5Pcreate(H5P_DATASET_XFER);
	int n = ROWS * mc_size, *buf = malloc(sizeof(int) * (size_t)n * COLS);
	herr_t rc;

	CHECK(d >= 0, "cannot open dataset %s", name);
	H5Pset_dxpl_mpio(dxpl, xfer);
	rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, dxpl, buf);
	H5Dclose(d);
	H5Pclose(dxpl);
	CHECK(rc >= 0, "reading %s failed", name);
	for (int r = 0; r < n; r++)
		for (int c = 0; c < COLS; c++)
			CHECK(buf[r * COLS + c] == value(r, c, which), "%s[%d][%d] is %d, expected %d",
			      name, r, c, buf[r * COLS + c], value(r, c, which));
	free(buf);
}

static hid_t open_file(int create)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f;

	H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
	f = create ? H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
		   : H5Fopen(file, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	return f;
}

static void test_write(void)
{
	hid_t f = open_file(1);

	CHECK(f >= 0, "H5Fcreate %s failed", file);
	write_dataset(f, "contig_collective", 0, H5FD_MPIO_COLLECTIVE, 1);
	write_dataset(f, "contig_independent", 0, H5FD_MPIO_INDEPENDENT, 2);
	write_dataset(f, "chunked_collective", 1, H5FD_MPIO_COLLECTIVE, 3);
	write_dataset(f, "chunked_independent", 1, H5FD_MPIO_INDEPENDENT, 4);
	if (!open_at_exit)
		CHECK(H5Fclose(f) >= 0, "H5Fclose failed");
}

static void test_read_back(void)
{
	hid_t f = open_file(0);

	CHECK(f >= 0, "H5Fopen %s failed", file);
	check_dataset(f, "contig_collective", H5FD_MPIO_COLLECTIVE, 1);
	check_dataset(f, "contig_independent", H5FD_MPIO_INDEPENDENT, 2);
	check_dataset(f, "chunked_collective", H5FD_MPIO_INDEPENDENT, 3);
	check_dataset(f, "chunked_independent", H5FD_MPIO_COLLECTIVE, 4);
	H5Fclose(f);
}

/* 20,000 ints per rank in chunks of one, written collectively with
 * H5FD_MPIO_CHUNK_ONE_IO: HDF5 hands the driver a struct of one type per
 * chunk. Read back whole by every rank. */
#define TINY 20000

static void test_tiny_chunks(void)
{
	hsize_t dims[1] = {(hsize_t)TINY * mc_size}, start[1] = {(hsize_t)TINY * mc_rank},
		count[1] = {TINY}, chunk[1] = {1};
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f, space, mem, dcpl, dxpl, d;
	int *buf = malloc(sizeof(int) * TINY * (size_t)mc_size);
	herr_t rc;

	H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
	f = H5Fopen(file, H5F_ACC_RDWR, fapl);
	H5Pclose(fapl);
	CHECK(f >= 0, "H5Fopen %s failed", file);
	space = H5Screate_simple(1, dims, NULL);
	mem = H5Screate_simple(1, count, NULL);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	dxpl = H5Pcreate(H5P_DATASET_XFER);
	H5Pset_chunk(dcpl, 1, chunk);
	for (int i = 0; i < TINY; i++)
		buf[i] = value(TINY * mc_rank + i, 0, 5);
	d = H5Dcreate2(f, "tiny_chunks", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
	H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
	H5Pset_dxpl_mpio_chunk_opt(dxpl, H5FD_MPIO_CHUNK_ONE_IO);
	rc = H5Dwrite(d, H5T_NATIVE_INT, mem, space, dxpl, buf);
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(mem);
	H5Sclose(space);
	if (d < 0 || rc < 0) {
		H5Pclose(dxpl);
		H5Fclose(f);
		free(buf);
	}
	CHECK(d >= 0 && rc >= 0, "collective write of %d 1-element chunks failed", TINY);
	d = H5Dopen2(f, "tiny_chunks", H5P_DEFAULT);
	rc = d >= 0 ? H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, dxpl, buf) : -1;
	H5Dclose(d);
	H5Pclose(dxpl);
	H5Fclose(f);
	if (rc < 0)
		free(buf);
	CHECK(rc >= 0, "reading the 1-element chunks back failed");
	for (int i = 0; i < TINY * mc_size; i++)
		if (buf[i] != value(i, 0, 5)) {
			mc_fail("tiny_chunks[%d] is %d, expected %d", i, buf[i], value(i, 0, 5));
			break;
		}
	free(buf);
}

/* MPI atomic mode through HDF5 (H5Fset_mpi_atomicity): datasets written
 * in it, collectively and independently, read back whole. */
static void test_atomic(void)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f;
	hbool_t flag = 0;

	H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
	f = H5Fopen(file, H5F_ACC_RDWR, fapl);
	H5Pclose(fapl);
	CHECK(f >= 0, "H5Fopen %s failed", file);
	if (H5Fset_mpi_atomicity(f, 1) < 0 || H5Fget_mpi_atomicity(f, &flag) < 0 || !flag) {
		H5Fclose(f);
		mc_fail("H5Fset_mpi_atomicity(1) failed or did not hold (atomicity %d)", (int)flag);
		return;
	}
	write_dataset(f, "atomic_collective", 0, H5FD_MPIO_COLLECTIVE, 6);
	write_dataset(f, "atomic_chunked_independent", 1, H5FD_MPIO_INDEPENDENT, 7);
	check_dataset(f, "atomic_collective", H5FD_MPIO_COLLECTIVE, 6);
	check_dataset(f, "atomic_chunked_independent", H5FD_MPIO_INDEPENDENT, 7);
	CHECK(H5Fclose(f) >= 0, "H5Fclose failed");
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "hdf5_write_contiguous_and_chunked", "hdf5_read_back",
					      "hdf5_tiny_chunks_collective", "hdf5_atomic_mode" };
	static void (*const fns[])(void) = { test_write, test_read_back, test_tiny_chunks,
					     test_atomic };
	int rc;

	if (argc != 3)
		return mc_main_on_file(argc, argv, &file, names, fns, 4);
	MPI_Init(&argc, &argv);
	mc_init();
	file = argv[1];
	if (!strcmp(argv[2], "open-at-exit")) {
		open_at_exit = 1;
		mc_test("hdf5_write_left_open_at_finalize", test_write);
	} else if (!strcmp(argv[2], "read")) {
		mc_test("hdf5_read_back", test_read_back);
	} else {
		MPI_Finalize();
		return 2;
	}
	rc = mc_finish();
	/* With open-at-exit, HDF5 flushes and closes the file in here. */
	MPI_Finalize();
	return rc;
}
