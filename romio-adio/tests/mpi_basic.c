/*
 * mpi_basic.c - the Tessera ROMIO driver through MPI-IO: open, contiguous
 * I/O (independent, collective, nonblocking, file pointers), sizes, sync,
 * delete, hints and what the driver refuses, atomic mode and the shared
 * file pointer (at their simplest; mpi_atomic.c tests them in earnest).
 *
 *   mpi_basic MOUNT_DIR PLAIN_DIR
 *
 * Both name one Tessera directory: "tessera:<mount point>/d" and
 * "tessera:/d". Run with 1-4 ranks.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define BLOCK 10000 /* bytes per rank: not a multiple of any strip size */

static const char *mount_dir, *plain_dir;

static void name(char *buf, size_t len, const char *dir, const char *file)
{
	snprintf(buf, len, "%s/%s", dir, file);
}

static void fill(unsigned char *b, size_t n, int rank, int salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + rank * 31 + salt);
}

static int info_is(MPI_Info info, const char *key, const char *want, char *got)
{
	int flag = 0;

	got[0] = 0;
	MPI_Info_get(info, key, MPI_MAX_INFO_VAL, got, &flag);
	return flag && (!want || !strcmp(got, want));
}

/* The driver, not OMPIO, has the file: ROMIO names its file system. */
static void test_driver_selected(void)
{
	char f[512], v[MPI_MAX_INFO_VAL + 1];
	MPI_File fh;
	MPI_Info used;

	name(f, sizeof(f), mount_dir, "selected");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
				&fh));
	CHECK_MPI(MPI_File_get_info(fh, &used));
	CHECK(info_is(used, "romio_filesystem_type", NULL, v) && strstr(v, "TESSERA"),
	      "romio_filesystem_type is '%s', not the Tessera driver", v);
	MPI_Info_free(&used);
	CHECK_MPI(MPI_File_close(&fh));
}

static void test_collective_write_independent_read(void)
{
	char f[512];
	unsigned char *w = malloc(BLOCK), *r = malloc(BLOCK);
	int peer = (mc_rank + 1) % mc_size, count;
	MPI_File fh;
	MPI_Offset size;
	MPI_Status st;

	CHECK(w && r, "out of memory");
	name(f, sizeof(f), mount_dir, "contig");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
				&fh));
	fill(w, BLOCK, mc_rank, 1);
	CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)mc_rank * BLOCK, w, BLOCK, MPI_BYTE, &st));
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK(count == BLOCK, "write_at_all reported %d bytes", count);
	CHECK_MPI(MPI_File_sync(fh));
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * BLOCK, r, BLOCK, MPI_BYTE, &st));
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK(count == BLOCK, "read_at reported %d bytes", count);
	fill(w, BLOCK, peer, 1);
	CHECK(!memcmp(w, r, BLOCK), "rank %d's block reads back wrong", peer);
	CHECK_MPI(MPI_File_get_size(fh, &size));
	CHECK(size == (MPI_Offset)mc_size * BLOCK, "size %lld, expected %lld", (long long)size,
	      (long long)mc_size * BLOCK);
	/* Reading past the end: a short count, not an error. */
	CHECK_MPI(MPI_File_read_at(fh, size - 10, r, 100, MPI_BYTE, &st));
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK(count == 10, "read across the end gave %d bytes, expected 10", count);
	CHECK_MPI(MPI_File_close(&fh));
	free(w);
	free(r);
}

/* The same file by its plain Tessera path. */
static void test_plain_path(void)
{
	char f[512];
	unsigned char *w = malloc(BLOCK), *r = malloc(BLOCK);
	MPI_File fh;

	CHECK(w && r, "out of memory");
	name(f, sizeof(f), plain_dir, "contig");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
	CHECK_MPI(MPI_File_read_at_all(fh, (MPI_Offset)mc_rank * BLOCK, r, BLOCK, MPI_BYTE,
				       MPI_STATUS_IGNORE));
	fill(w, BLOCK, mc_rank, 1);
	CHECK(!memcmp(w, r, BLOCK), "block read by the plain path differs");
	CHECK_MPI(MPI_File_close(&fh));
	free(w);
	free(r);
}

/* Individual file pointers: seek, write, read, position; nonblocking. */
static void test_file_pointers(void)
{
	char f[512];
	int w[100], r[100], i;
	MPI_File fh;
	MPI_Offset pos;
	MPI_Request req;
	MPI_Status st;

	for (i = 0; i < 100; i++)
		w[i] = mc_rank * 1000 + i;
	name(f, sizeof(f), mount_dir, "pointers");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
				&fh));
	CHECK_MPI(MPI_File_seek(fh, (MPI_Offset)mc_rank * sizeof(w), MPI_SEEK_SET));
	CHECK_MPI(MPI_File_write(fh, w, 50, MPI_INT, &st));
	CHECK_MPI(MPI_File_write(fh, w + 50, 50, MPI_INT, &st));
	CHECK_MPI(MPI_File_get_position(fh, &pos));
	CHECK(pos == (MPI_Offset)(mc_rank + 1) * (MPI_Offset)sizeof(w), "position %lld after writes",
	      (long long)pos);
	CHECK_MPI(MPI_File_seek(fh, -(MPI_Offset)sizeof(w), MPI_SEEK_CUR));
	CHECK_MPI(MPI_File_read_all(fh, r, 100, MPI_INT, &st));
	CHECK(!memcmp(w, r, sizeof(w)), "read_all after seek differs");
	memset(r, 0, sizeof(r));
	CHECK_MPI(MPI_File_iread_at(fh, (MPI_Offset)mc_rank * sizeof(w), r, 100, MPI_INT, &req));
	CHECK_MPI(MPI_Wait(&req, &st));
	CHECK(!memcmp(w, r, sizeof(w)), "iread_at differs");
	for (i = 0; i < 100; i++)
		w[i] = -w[i];
	CHECK_MPI(MPI_File_iwrite_at(fh, (MPI_Offset)mc_rank * sizeof(w), w, 100, MPI_INT, &req));
	CHECK_MPI(MPI_Wait(&req, &st));
	CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)mc_rank * sizeof(w), r, 100, MPI_INT, &st));
	CHECK(!memcmp(w, r, sizeof(w)), "iwrite_at then read_at differs");
	CHECK_MPI(MPI_File_close(&fh));
}

static void test_sizes(void)
{
	char f[512];
	MPI_File fh;
	MPI_Offset size;

	name(f, sizeof(f), mount_dir, "sizes");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
				&fh));
	CHECK_MPI(MPI_File_set_size(fh, 123457));
	CHECK_MPI(MPI_File_get_size(fh, &size));
	CHECK(size == 123457, "size %lld after set_size(123457)", (long long)size);
	CHECK_MPI(MPI_File_set_size(fh, 10));
	CHECK_MPI(MPI_File_get_size(fh, &size));
	CHECK(size == 10, "size %lld after set_size(10)", (long long)size);
	CHECK_MPI(MPI_File_preallocate(fh, 5000));
	CHECK_MPI(MPI_File_get_size(fh, &size));
	CHECK(size >= 5000, "size %lld after preallocate(5000)", (long long)size);
	CHECK_MPI(MPI_File_close(&fh));
}

/* Striping hints apply at create; get_info reports the file's own. */
static void test_hints_in_force(void)
{
	char f[512], v[MPI_MAX_INFO_VAL + 1];
	MPI_File fh;
	MPI_Info info, used;

	name(f, sizeof(f), mount_dir, "hinted");
	MPI_File_delete(f, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Info_create(&info);
	MPI_Info_set(info, "striping_unit", "8192");
	MPI_Info_set(info, "striping_factor", "2");
	MPI_Info_set(info, "tessera_io_read", "posix");
	MPI_Info_set(info, "tessera_io_write", "sieve");
	MPI_Info_set(info, "tessera_list_batch", "64");
	MPI_Info_set(info, "tessera_lock_method", "list");
	MPI_Info_set(info, "tessera_lock_protocol", "two-phase");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
	MPI_Info_free(&info);
	CHECK_MPI(MPI_File_get_info(fh, &used));
	CHECK(info_is(used, "striping_unit", "8192", v), "striping_unit is '%s'", v);
	CHECK(info_is(used, "striping_factor", "2", v), "striping_factor is '%s'", v);
	CHECK(info_is(used, "tessera_io_read", "posix", v), "tessera_io_read is '%s'", v);
	CHECK(info_is(used, "tessera_io_write", "sieve", v), "tessera_io_write is '%s'", v);
	CHECK(info_is(used, "tessera_list_batch", "64", v), "tessera_list_batch is '%s'", v);
	CHECK(info_is(used, "tessera_lock_method", "list", v), "tessera_lock_method is '%s'", v);
	CHECK(info_is(used, "tessera_lock_protocol", "two-phase", v),
	      "tessera_lock_protocol is '%s'", v);
	MPI_Info_free(&used);
	CHECK_MPI(MPI_File_close(&fh));

	/* Reopened without hints: the file's striping, the default methods. */
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
	CHECK_MPI(MPI_File_get_info(fh, &used));
	CHECK(info_is(used, "striping_unit", "8192", v), "reopened: striping_unit is '%s'", v);
	CHECK(info_is(used, "striping_factor", "2", v), "reopened: striping_factor is '%s'", v);
	CHECK(info_is(used, "tessera_io_read", NULL, v), "reopened: no tessera_io_read");
	MPI_Info_free(&used);
	CHECK_MPI(MPI_File_close(&fh));
}

static void expect_refused(const char *key, const char *value)
{
	char f[512];
	MPI_File fh;
	MPI_Info info;
	int rc;

	name(f, sizeof(f), mount_dir, "refused");
	MPI_Info_create(&info);
	MPI_Info_set(info, (char *)key, (char *)value);
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
	MPI_Info_free(&info);
	if (rc == MPI_SUCCESS) {
		MPI_File_close(&fh);
		mc_fail("open with %s=%s succeeded", key, value);
	}
}

static void test_bad_hints_refused(void)
{
	expect_refused("tessera_io_read", "fast");
	expect_refused("tessera_io_write", "none");
	expect_refused("striping_unit", "12k");
	expect_refused("striping_factor", "1000");
	expect_refused("tessera_list_batch", "-1");
	expect_refused("tessera_lock_method", "fcntl");
	expect_refused("tessera_lock_protocol", "optimistic");
}

/* Atomic mode is accepted, reads back, and its I/O works. */
static void test_atomicity(void)
{
	unsigned char w[BLOCK], r[BLOCK];
	char f[512];
	MPI_File fh;
	int flag = -1;

	name(f, sizeof(f), mount_dir, "contig");
	fill(w, BLOCK, mc_rank, 9);
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
	CHECK_MPI(MPI_File_set_atomicity(fh, 1));
	CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
	CHECK(flag == 1, "atomicity reads %d after set_atomicity(1)", flag);
	CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)mc_rank * BLOCK, w, BLOCK, MPI_BYTE,
				    MPI_STATUS_IGNORE));
	CHECK_MPI(MPI_File_read_at_all(fh, (MPI_Offset)mc_rank * BLOCK, r, BLOCK, MPI_BYTE,
				       MPI_STATUS_IGNORE));
	CHECK(!memcmp(w, r, BLOCK), "atomic mode: read back other bytes");
	CHECK_MPI(MPI_File_set_atomicity(fh, 0));
	CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
	CHECK(flag == 0, "atomicity reads %d after set_atomicity(0)", flag);
	CHECK_MPI(MPI_File_close(&fh));
}

static void test_excl_and_delete(void)
{
	char f[512];
	MPI_File fh;
	int rc, cls;

	name(f, sizeof(f), mount_dir, "contig");
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	CHECK(rc != MPI_SUCCESS, "exclusive create of an existing file succeeded");
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_FILE_EXISTS, "exclusive create: error class %d", cls);
	MPI_Barrier(MPI_COMM_WORLD);
	if (mc_rank == 0)
		CHECK_MPI(MPI_File_delete(f, MPI_INFO_NULL));
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	CHECK(rc != MPI_SUCCESS, "a deleted file opened");
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_NO_SUCH_FILE, "open of a deleted file: error class %d", cls);
	rc = MPI_File_delete(f, MPI_INFO_NULL);
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_NO_SUCH_FILE, "delete of a missing file: error class %d", cls);
	/* Delete on close. */
	name(f, sizeof(f), mount_dir, "scratch");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f,
				MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
				MPI_INFO_NULL, &fh));
	CHECK_MPI(MPI_File_close(&fh));
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	CHECK(rc != MPI_SUCCESS, "file opened with DELETE_ON_CLOSE still exists");
}

/* Shared file pointers: one int per rank lands once each. */
static void test_shared_pointer(void)
{
	char f[512];
	MPI_File fh;
	MPI_Offset pos;
	int x = mc_rank, seen = 0, *all = malloc(sizeof(int) * mc_size);

	CHECK(all, "out of memory");
	name(f, sizeof(f), mount_dir, "shared");
	CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
				&fh));
	CHECK_MPI(MPI_File_write_shared(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE));
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
	CHECK(pos == 4 * mc_size, "the shared pointer is at %lld after %d ints", (long long)pos,
	      mc_size);
	CHECK_MPI(MPI_File_read_at_all(fh, 0, all, mc_size, MPI_INT, MPI_STATUS_IGNORE));
	for (int i = 0; i < mc_size; i++)
		if (all[i] >= 0 && all[i] < mc_size)
			seen |= 1 << all[i];
	free(all);
	CHECK(seen == (1 << mc_size) - 1, "the file does not hold each rank's int once");
	CHECK_MPI(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	mc_init();
	if (argc != 3) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpi_basic MOUNT_DIR PLAIN_DIR\n");
		MPI_Finalize();
		return 2;
	}
	mount_dir = argv[1];
	plain_dir = argv[2];
	mc_test("driver_selected", test_driver_selected);
	mc_test("collective_write_independent_read", test_collective_write_independent_read);
	mc_test("plain_path", test_plain_path);
	mc_test("file_pointers", test_file_pointers);
	mc_test("sizes", test_sizes);
	mc_test("hints_in_force", test_hints_in_force);
	mc_test("bad_hints_refused", test_bad_hints_refused);
	mc_test("atomicity", test_atomicity);
	mc_test("excl_and_delete", test_excl_and_delete);
	mc_test("shared_pointer", test_shared_pointer);
	int rc = mc_finish();
	MPI_Finalize();
	return rc;
}
