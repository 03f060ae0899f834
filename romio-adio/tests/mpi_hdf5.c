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
 *
 * A metadata cache image (H5Pset_mdc_image_config): at close HDF5 stores
 * its metadata cache in the file, and the next open loads it back instead
 * of reading the objects one by one. A parallel open reads the image on
 * rank 0 alone and broadcasts it, the first time the cache is used: at
 * open when the program reads anything, otherwise in H5Fclose, or in
 * MPI_Finalize for a file left open. The other ranks wait in MPI_Bcast, so
 * a read that fails on rank 0 there leaves them waiting for good.
 *
 *   mpi_hdf5 PATH write-image    no MPI: HDF5's serial API (its default
 *                                POSIX driver) writes the datasets for 2
 *                                ranks and an image; PATH is a local name
 *                                or one on the mount
 *   mpi_hdf5 FILE image-read     every rank opens it read-only, checks the
 *                                image is there, reads every dataset, closes
 *   mpi_hdf5 FILE image-close    the same, reading nothing before H5Fclose
 *   mpi_hdf5 FILE image-exit     the same, leaving the file to MPI_Finalize
 */
#include <hdf5.h>
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define ROWS 8   /* per rank */
#define COLS 100
#define IMAGE_RANKS 2 /* write-image writes the rows of this many ranks */

static const char *file;
static int open_at_exit; /* leave the written file open for MPI_Finalize */

/* The four datasets; dataset i holds value(row, col, i + 1). The chunked
 * ones are read back with the other transfer mode than they were written. */
static const struct {
	const char *name;
	int chunked;
	H5FD_mpio_xfer_t write_xfer, read_xfer;
} datasets[] = {
	{"contig_collective", 0, H5FD_MPIO_COLLECTIVE, H5FD_MPIO_COLLECTIVE},
	{"contig_independent", 0, H5FD_MPIO_INDEPENDENT, H5FD_MPIO_INDEPENDENT},
	{"chunked_collective", 1, H5FD_MPIO_COLLECTIVE, H5FD_MPIO_INDEPENDENT},
	{"chunked_independent", 1, H5FD_MPIO_INDEPENDENT, H5FD_MPIO_COLLECTIVE},
};
#define N_DATASETS ((int)(sizeof(datasets) / sizeof(datasets[0])))

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

/* Read dataset `name` whole (every row the file has) and check it. */
static void check_dataset(hid_t f, const char *name, H5FD_mpio_xfer_t xfer, int which)
{
	hid_t d = H5Dopen2(f, name, H5P_DEFAULT), space, dxpl;
	hsize_t dims[2] = {0, 0};
	int n, *buf;
	herr_t rc;

	CHECK(d >= 0, "cannot open dataset %s", name);
	space = H5Dget_space(d);
	rc = H5Sget_simple_extent_dims(space, dims, NULL);
	H5Sclose(space);
	if (rc != 2 || dims[1] != COLS || dims[0] == 0 ||
	    dims[0] > (hsize_t)INT_MAX / COLS) {
		H5Dclose(d);
		mc_fail("dataset %s is not (rows, %d)", name, COLS);
		return;
	}
	n = (int)dims[0];
	buf = malloc(sizeof(int) * (size_t)n * COLS);
	dxpl = H5Pcreate(H5P_DATASET_XFER);
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
	for (int i = 0; i < N_DATASETS; i++)
		write_dataset(f, datasets[i].name, datasets[i].chunked, datasets[i].write_xfer, i + 1);
	if (!open_at_exit)
		CHECK(H5Fclose(f) >= 0, "H5Fclose failed");
}

static void check_datasets(hid_t f)
{
	for (int i = 0; i < N_DATASETS; i++)
		check_dataset(f, datasets[i].name, datasets[i].read_xfer, i + 1);
}

static void test_read_back(void)
{
	hid_t f = open_file(0);

	CHECK(f >= 0, "H5Fopen %s failed", file);
	check_datasets(f);
	H5Fclose(f);
}

/* ------------------------------------------------ metadata cache image */

/* write-image: 0, or 1 with the reason on stderr. */
static int write_image(const char *path)
{
	H5AC_cache_image_config_t image = {
		.version = H5AC__CURR_CACHE_IMAGE_CONFIG_VERSION,
		.generate_image = 1,
		.save_resize_status = 0,
		.entry_ageout = H5AC__CACHE_IMAGE__ENTRY_AGEOUT__NONE,
	};
	hsize_t dims[2] = {(hsize_t)ROWS * IMAGE_RANKS, COLS}, chunk[2] = {4, 32};
	int *buf = malloc(sizeof(int) * ROWS * IMAGE_RANKS * COLS), failed = 0;
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), space = H5Screate_simple(2, dims, NULL), f;
	haddr_t addr = HADDR_UNDEF;
	hsize_t len = 0;

	/* HDF5 writes an image only in the 1.10 format (superblock 2 and up)
	 * and otherwise silently leaves it out: checked below. */
	H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	H5Pset_mdc_image_config(fapl, &image);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	for (int i = 0; f >= 0 && i < N_DATASETS && !failed; i++) {
		hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), d;

		for (int r = 0; r < ROWS * IMAGE_RANKS; r++)
			for (int c = 0; c < COLS; c++)
				buf[r * COLS + c] = value(r, c, i + 1);
		if (datasets[i].chunked)
			H5Pset_chunk(dcpl, 2, chunk);
		d = H5Dcreate2(f, datasets[i].name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl,
			       H5P_DEFAULT);
		failed = d < 0 || H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0;
		if (d >= 0)
			H5Dclose(d);
		H5Pclose(dcpl);
	}
	if (f < 0 || H5Fclose(f) < 0 || failed) {
		fprintf(stderr, "writing %s with a metadata cache image failed\n", path);
		failed = 1;
	} else {
		f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
		if (f < 0 || H5Fget_mdc_image_info(f, &addr, &len) < 0 || addr == HADDR_UNDEF ||
		    len == 0) {
			fprintf(stderr, "%s holds no metadata cache image\n", path);
			failed = 1;
		}
		if (f >= 0)
			H5Fclose(f);
	}
	H5Sclose(space);
	H5Pclose(fapl);
	free(buf);
	return failed;
}

/* Every rank opens the file read-only and finds its image (which asking
 * about does not load). -1 on failure, with the reason. */
static hid_t open_image(void)
{
	hid_t f = open_file(0);
	haddr_t addr = HADDR_UNDEF;
	hsize_t len = 0;

	if (f < 0) {
		mc_fail("H5Fopen %s read-only failed", file);
		return -1;
	}
	if (H5Fget_mdc_image_info(f, &addr, &len) < 0 || addr == HADDR_UNDEF || len == 0) {
		mc_fail("%s holds no metadata cache image", file);
		H5Fclose(f);
		return -1;
	}
	return f;
}

static void test_image_read(void)
{
	hid_t f = open_image();

	if (f < 0)
		return;
	check_datasets(f);
	CHECK(H5Fclose(f) >= 0, "H5Fclose %s failed", file);
}

static void test_image_close(void)
{
	hid_t f = open_image();

	if (f >= 0)
		CHECK(H5Fclose(f) >= 0, "H5Fclose %s (which loads the image) failed", file);
}

static void test_image_exit(void)
{
	open_image(); /* HDF5 closes it, and loads the image, in MPI_Finalize */
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
	/* The modes of one test each; the image tests' names say which name
	 * form FILE has. */
	static const struct {
		const char *mode, *name;
		void (*fn)(void);
	} modes[] = {
		{"open-at-exit", "hdf5_write_left_open_at_finalize", test_write},
		{"read", "hdf5_read_back", test_read_back},
		{"image-read", "hdf5_image_loaded_at_open", test_image_read},
		{"image-close", "hdf5_image_loaded_at_close", test_image_close},
		{"image-exit", "hdf5_image_loaded_at_finalize", test_image_exit},
	};
	char name[128];
	int rc, m = 0, n = (int)(sizeof(modes) / sizeof(modes[0]));

	if (argc != 3)
		return mc_main_on_file(argc, argv, &file, names, fns, 4);
	if (!strcmp(argv[2], "write-image"))
		return write_image(argv[1]); /* serial: no MPI at all */
	while (m < n && strcmp(argv[2], modes[m].mode))
		m++;
	if (m == n)
		return 2;
	MPI_Init(&argc, &argv);
	mc_init();
	file = argv[1];
	open_at_exit = !strcmp(modes[m].mode, "open-at-exit");
	snprintf(name, sizeof(name), "%s%s", modes[m].name,
		 strncmp(modes[m].mode, "image-", 6) ? ""
		 : strncmp(file, "tessera:", 8) ? "_unprefixed_name" : "_tessera_name");
	mc_test(name, modes[m].fn);
	rc = mc_finish();
	/* With open-at-exit, HDF5 flushes and closes the file in here. */
	MPI_Finalize();
	return rc;
}
