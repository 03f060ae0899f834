/*
 * mpi_finalize.c - files still open at MPI_Finalize, as HDF5 leaves them:
 * it closes its files from an MPI_COMM_SELF attribute callback, which
 * MPI_Finalize runs in the reverse order the attributes were set, so
 * before or after the driver's own. Both orders are here, with a file on
 * MPI_COMM_SELF and one nobody closes (Open MPI closes it after all the
 * callbacks).
 *
 *   mpi_finalize write DIR   leave the files open, finish them from the
 *                            callbacks; exit status 0 when every call the
 *                            callbacks made succeeded
 *   mpi_finalize check DIR   a later run: every file is complete
 *
 * DIR is a "tessera:" name (or any name the driver claims).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define HALF 50000 /* bytes per rank and half */

enum { LATE, EARLY, UNCLOSED, SELF, N_FILES };
static const char *const file_names[N_FILES] = { "late", "early", "unclosed", "self" };

static const char *dir;
static MPI_File files[N_FILES];
static int callback_failures;

static unsigned char byte_of(int file, int rank, size_t i)
{
	return (unsigned char)(file * 31 + rank * 7 + i * 13);
}

/* Bytes of `file` at [off, off + len) for rank `rank`. */
static void fill(unsigned char *b, int file, int rank, size_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = byte_of(file, rank, off + i);
}

static void path_of(char *buf, size_t len, int file)
{
	if (file == SELF)
		snprintf(buf, len, "%s/%s.%d", dir, file_names[file], mc_rank);
	else
		snprintf(buf, len, "%s/%s", dir, file_names[file]);
}

/* Where rank r's bytes go, and how many: each rank two halves. */
static MPI_Offset region(int file)
{
	return file == SELF ? 0 : (MPI_Offset)mc_rank * 2 * HALF;
}

/* Write half `half` (0 or 1) of this rank's region; 0 or an MPI error. */
static int write_half(int file, int half)
{
	unsigned char *b = malloc(HALF);
	int rc;

	fill(b, file, mc_rank, (size_t)half * HALF, HALF);
	rc = MPI_File_write_at(files[file], region(file) + (MPI_Offset)half * HALF, b, HALF,
			       MPI_BYTE, MPI_STATUS_IGNORE);
	free(b);
	return rc;
}

static void callback_failed(const char *what, int file, int rc)
{
	char s[MPI_MAX_ERROR_STRING];
	int l = 0;

	MPI_Error_string(rc, s, &l);
	fprintf(stderr, "rank %d: at finalize: %s %s/%s: %s\n", mc_rank, what, dir,
		file_names[file], s);
	callback_failures++;
}

/* Finish `file`: its second half, then close. */
static void finish(int file)
{
	int rc = write_half(file, 1);

	if (rc != MPI_SUCCESS)
		callback_failed("write", file, rc);
	rc = MPI_File_close(&files[file]);
	if (rc != MPI_SUCCESS)
		callback_failed("close", file, rc);
}

/* Set before any file was opened: runs after the driver's callback. */
static int late_cb(MPI_Comm comm, int key, void *value, void *extra)
{
	(void)comm; (void)key; (void)value; (void)extra;
	finish(LATE);
	finish(SELF);
	return MPI_SUCCESS;
}

/* Set after the opens: runs before the driver's callback. */
static int early_cb(MPI_Comm comm, int key, void *value, void *extra)
{
	(void)comm; (void)key; (void)value; (void)extra;
	finish(EARLY);
	return MPI_SUCCESS;
}

static int open_file(int file, int amode)
{
	char path[1024];
	int rc;

	path_of(path, sizeof(path), file);
	rc = MPI_File_open(file == SELF ? MPI_COMM_SELF : MPI_COMM_WORLD, path, amode,
			   MPI_INFO_NULL, &files[file]);
	if (rc != MPI_SUCCESS) {
		char s[MPI_MAX_ERROR_STRING];
		int l = 0;

		MPI_Error_string(rc, s, &l);
		fprintf(stderr, "rank %d: open %s: %s\n", mc_rank, path, s);
	}
	return rc;
}

static int write_mode(void)
{
	int late_key, early_key, amode = MPI_MODE_CREATE | MPI_MODE_RDWR;

	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, late_cb, &late_key, NULL);
	MPI_Comm_set_attr(MPI_COMM_SELF, late_key, NULL);
	for (int f = 0; f < N_FILES; f++) {
		if (open_file(f, amode) != MPI_SUCCESS || write_half(f, 0) != MPI_SUCCESS)
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* The unclosed file is complete now: nobody writes it again. */
	if (write_half(UNCLOSED, 1) != MPI_SUCCESS)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, early_cb, &early_key, NULL);
	MPI_Comm_set_attr(MPI_COMM_SELF, early_key, NULL);
	MPI_Finalize();
	if (!callback_failures)
		printf("rank %d: files finished at finalize\n", mc_rank);
	return callback_failures ? 1 : 0;
}

static void check_file(int file)
{
	unsigned char *want = malloc(2 * HALF), *got = malloc(2 * HALF);
	MPI_Offset size;
	MPI_Status st;
	int n = 0;

	CHECK(want && got, "out of memory");
	CHECK_MPI(open_file(file, MPI_MODE_RDONLY));
	CHECK_MPI(MPI_File_get_size(files[file], &size));
	CHECK(size == (MPI_Offset)(file == SELF ? 1 : mc_size) * 2 * HALF,
	      "%s/%s is %lld bytes", dir, file_names[file], (long long)size);
	CHECK_MPI(MPI_File_read_at(files[file], region(file), got, 2 * HALF, MPI_BYTE, &st));
	MPI_Get_count(&st, MPI_BYTE, &n);
	CHECK_MPI(MPI_File_close(&files[file]));
	CHECK(n == 2 * HALF, "read %d of %d bytes", n, 2 * HALF);
	fill(want, file, mc_rank, 0, 2 * HALF);
	for (int i = 0; i < 2 * HALF; i++)
		CHECK(got[i] == want[i], "%s/%s: rank %d's byte %d is %d, not %d", dir,
		      file_names[file], mc_rank, i, got[i], want[i]);
	free(want);
	free(got);
}

static void test_late(void) { check_file(LATE); }
static void test_early(void) { check_file(EARLY); }
static void test_unclosed(void) { check_file(UNCLOSED); }
static void test_self(void) { check_file(SELF); }

int main(int argc, char **argv)
{
	int rc;

	MPI_Init(&argc, &argv);
	mc_init();
	if (argc != 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "check"))) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpi_finalize write|check DIR\n");
		MPI_Finalize();
		return 2;
	}
	dir = argv[2];
	if (!strcmp(argv[1], "write"))
		return write_mode();
	mc_test("finalize_closed_after_driver_callback", test_late);
	mc_test("finalize_closed_before_driver_callback", test_early);
	mc_test("finalize_never_closed", test_unclosed);
	mc_test("finalize_comm_self_file", test_self);
	rc = mc_finish();
	MPI_Finalize();
	return rc;
}
