/*
 * mpi_errors.c - errors the Tessera driver returns to the caller carry
 * their words in the error code, and the driver prints nothing (issue 27
 * item 6; the calling script checks stderr).
 *
 *   mpi_errors DIR    (a "tessera:" directory)
 *
 * On every rank: an open of a missing file fails with MPI_ERR_NO_SUCH_FILE
 * (as IOR's existence check does), an exclusive create of an existing file
 * with MPI_ERR_FILE_EXISTS (on MPI_COMM_WORLD and on MPI_COMM_SELF), and a
 * delete of a missing file with MPI_ERR_NO_SUCH_FILE; MPI_Error_string of
 * each returned code names the file and says what happened.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpi_check.h"

static const char *dir;

/* rc is an error of class cls whose text holds name and words. */
static int says(int rc, int cls, const char *name, const char *words)
{
	char s[MPI_MAX_ERROR_STRING];
	int got = -1, len = 0;

	MPI_Error_class(rc, &got);
	MPI_Error_string(rc, s, &len);
	if (rc == MPI_SUCCESS || got != cls || !strstr(s, name) || !strstr(s, words)) {
		mc_fail("error class %d (expected %d), text \"%s\" (expected %s and \"%s\")", got,
			cls, s, name, words);
		return 0;
	}
	return 1;
}

static void test_open_missing(void)
{
	char path[1024];
	MPI_File fh;
	int rc;

	snprintf(path, sizeof(path), "%s/missing", dir);
	rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	CHECK(rc != MPI_SUCCESS, "open of %s succeeded", path);
	says(rc, MPI_ERR_NO_SUCH_FILE, "/missing", "no such file");
}

static void test_exclusive_create_of_existing(void)
{
	char path[1024];
	MPI_File fh;
	int rc;

	snprintf(path, sizeof(path), "%s/exists", dir);
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
				MPI_INFO_NULL, &fh));
	CHECK_MPI(MPI_File_close(&fh));
	rc = MPI_File_open(MPI_COMM_WORLD, path,
			   MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
	CHECK(rc != MPI_SUCCESS, "exclusive create of %s succeeded", path);
	CHECK(says(rc, MPI_ERR_FILE_EXISTS, "/exists", "exists"), "on MPI_COMM_WORLD");
	/* every rank on its own: each is the opener */
	rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
			   MPI_INFO_NULL, &fh);
	CHECK(rc != MPI_SUCCESS, "exclusive create of %s on MPI_COMM_SELF succeeded", path);
	CHECK(says(rc, MPI_ERR_FILE_EXISTS, "/exists", "exists"), "on MPI_COMM_SELF");
}

static void test_delete_missing(void)
{
	char path[1024];
	int rc;

	snprintf(path, sizeof(path), "%s/missing-%d", dir, mc_rank);
	rc = MPI_File_delete(path, MPI_INFO_NULL);
	CHECK(rc != MPI_SUCCESS, "delete of %s succeeded", path);
	says(rc, MPI_ERR_NO_SUCH_FILE, "/missing-", "no such file");
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"open_missing_file", "exclusive_create_of_existing",
					    "delete_missing_file"};
	static void (*const fns[])(void) = {test_open_missing, test_exclusive_create_of_existing,
					    test_delete_missing};

	return mc_main_on_file(argc, argv, &dir, names, fns, 3);
}
