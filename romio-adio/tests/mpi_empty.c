/*
 * mpi_empty.c - calls in which some ranks' file views hold no data, on
 * ROMIO's UFS driver and on Tessera (issue 27 item 6).
 *
 *   mpi_empty TESSERA_DIR UFS_DIR     (tessera:/dir ufs:/dir; run with
 *                                      OMPI_MCA_io=romio321 so that the
 *                                      ufs: name goes to ROMIO too)
 *
 * The even ranks have data: a view of B ints in every tile of P x B ints
 * (a strided view, rank r's slot r). The odd ranks are empty, one way per
 * test:
 *   zero_type         a filetype of size 0 and extent 0
 *   zero_type_extent  a filetype of size 0 and a tile's extent
 *   count0            the data ranks' kind of view, and count 0
 *   past_data         a contiguous view starting past all data: writes of
 *                     count 0, reads of N ints that find the end of file
 *                     (they must succeed; what they return is not
 *                     compared: see run_test)
 * Each test makes the same calls on both file systems: collective writes
 * (write_all, write_at_all) and an independent write_at, then collective
 * reads (read_at_all; read_all, whole and in two halves) and an
 * independent read_at, and again in atomic mode. (Not the nonblocking
 * collective calls: ROMIO's ufs driver has none in Open MPI's build, and
 * MPI_File_iwrite_all crashes on it.) Every call must succeed
 * on both; each rank's reads must return the same counts and bytes on
 * both; and the two files must be equal byte for byte.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define B 4            /* ints per rank per tile */
#define N 64           /* ints one write call of a data rank moves */
#define READS 4        /* read calls recorded per run */
#define PAST (1 << 20) /* the past_data view's displacement, bytes */

enum empty_kind { ZERO_TYPE, ZERO_TYPE_EXTENT, COUNT0, PAST_DATA };
static const char *const kind_names[] = {"zero_type", "zero_type_extent", "count0",
					 "past_data"};

static const char *dirs[2]; /* [0] UFS, [1] Tessera */

/* What one rank saw on one file system. */
struct outcome {
	const char *fs;             /* the directory, for messages */
	int count[READS];           /* ints each read returned */
	int data[READS][4 * N];     /* and the ints themselves */
};

/* Record a failed call and go on: every rank must make the same
 * collective calls, or the ranks still running would hang. */
#define TRY(o, call)                                                             \
	do {                                                                     \
		int try_rc_ = (call);                                            \
		if (try_rc_ != MPI_SUCCESS) {                                    \
			char try_s_[MPI_MAX_ERROR_STRING];                       \
			int try_l_ = 0;                                          \
			MPI_Error_string(try_rc_, try_s_, &try_l_);              \
			mc_fail("%s: %s: %s", (o)->fs, #call, try_s_);           \
		}                                                                \
	} while (0)

static int is_empty(void)
{
	return mc_rank % 2 == 1;
}

/* The rank's view: the data ranks' strided one, or an empty kind. */
static void set_view(MPI_File fh, enum empty_kind kind, struct outcome *o)
{
	MPI_Aint tile = (MPI_Aint)mc_size * B * (MPI_Aint)sizeof(int);
	MPI_Datatype zero, ftype;
	MPI_Offset disp = (MPI_Offset)mc_rank * B * (MPI_Offset)sizeof(int);

	MPI_Type_contiguous(0, MPI_INT, &zero);
	if (!is_empty() || kind == COUNT0) {
		MPI_Datatype block;

		MPI_Type_contiguous(B, MPI_INT, &block);
		MPI_Type_create_resized(block, 0, tile, &ftype);
		MPI_Type_free(&block);
	} else if (kind == ZERO_TYPE) {
		MPI_Type_dup(zero, &ftype);
	} else if (kind == ZERO_TYPE_EXTENT) {
		MPI_Type_create_resized(zero, 0, tile, &ftype);
	} else { /* PAST_DATA */
		MPI_Type_contiguous(1, MPI_INT, &ftype);
		disp = PAST;
	}
	MPI_Type_free(&zero);
	MPI_Type_commit(&ftype);
	TRY(o, MPI_File_set_view(fh, disp, MPI_INT, ftype, "native", MPI_INFO_NULL));
	MPI_Type_free(&ftype);
}

/* One read, recorded: count ints at offset (ints of the view), by how. */
enum read_how { READ_AT_ALL, READ_ALL, READ_ALL_AGAIN, READ_AT };

static void read_one(MPI_File fh, enum read_how how, int count, struct outcome *o)
{
	int *buf = o->data[how], half = 0;
	MPI_Status st;

	memset(&st, 0, sizeof(st));
	/* ints a read does not reach keep a value no file holds */
	for (int i = 0; i < 4 * N; i++)
		buf[i] = -1;
	switch (how) {
	case READ_AT_ALL:
		TRY(o, MPI_File_read_at_all(fh, 0, buf, count, MPI_INT, &st));
		break;
	case READ_ALL_AGAIN:
		TRY(o, MPI_File_seek(fh, 0, MPI_SEEK_SET));
		TRY(o, MPI_File_read_all(fh, buf, count / 2, MPI_INT, &st));
		MPI_Get_count(&st, MPI_INT, &half);
		TRY(o, MPI_File_read_all(fh, buf + count / 2, count - count / 2, MPI_INT, &st));
		break;
	case READ_ALL:
		TRY(o, MPI_File_seek(fh, 0, MPI_SEEK_SET));
		TRY(o, MPI_File_read_all(fh, buf, count, MPI_INT, &st));
		break;
	case READ_AT:
		TRY(o, MPI_File_read_at(fh, 0, buf, count, MPI_INT, &st));
		break;
	}
	MPI_Get_count(&st, MPI_INT, &o->count[how]);
	o->count[how] += half;
}

/* The calls of one test on one file (open on every rank). */
static void run_calls(MPI_File fh, enum empty_kind kind, struct outcome *o)
{
	int buf[N], n = is_empty() ? 0 : N, nread;
	MPI_Status st;

	for (int i = 0; i < N; i++)
		buf[i] = mc_rank * 100000 + i + 1;
	set_view(fh, kind, o);
	TRY(o, MPI_File_write_all(fh, buf, n, MPI_INT, &st));
	TRY(o, MPI_File_write_at_all(fh, N, buf, n, MPI_INT, &st));
	TRY(o, MPI_File_write_at_all(fh, 2 * N, buf, n, MPI_INT, &st));
	TRY(o, MPI_File_write_at(fh, 3 * N, buf, n, MPI_INT, &st));
	TRY(o, MPI_File_sync(fh));
	MPI_Barrier(MPI_COMM_WORLD);
	TRY(o, MPI_File_sync(fh));
	/* data ranks read all they wrote; past_data ranks ask for N ints
	 * past the end of the file; other empty ranks read nothing */
	nread = !is_empty() ? 4 * N : kind == PAST_DATA ? N : 0;
	for (int how = 0; how < READS; how++)
		read_one(fh, (enum read_how)how, nread, o);
}

/* The bytes the writes will reach, written first with a pattern: ROMIO's
 * two-phase writes fill the holes of a buffer past the end of the file
 * with whatever their buffer held, so on UFS holes past the end would
 * differ from run to run. */
static void prefill(MPI_File fh, struct outcome *o)
{
	int len = mc_size * B * (int)sizeof(int) * (4 * N / B);
	char *bytes = malloc((size_t)len);
	MPI_Status st;

	if (mc_rank == 0 && bytes) {
		memset(bytes, 0x5a, (size_t)len);
		TRY(o, MPI_File_write_at(fh, 0, bytes, len, MPI_BYTE, &st));
	}
	free(bytes);
	TRY(o, MPI_File_sync(fh));
	MPI_Barrier(MPI_COMM_WORLD);
	TRY(o, MPI_File_sync(fh));
}

static void run_on(int fs, enum empty_kind kind, int atomic, struct outcome *o)
{
	char path[1024];
	MPI_File fh;
	int rc;

	memset(o, 0, sizeof(*o));
	o->fs = dirs[fs];
	snprintf(path, sizeof(path), "%s/%s%s", dirs[fs], kind_names[kind],
		 atomic ? "_atomic" : "");
	if (mc_rank == 0) /* a new file each run (a missing one is no error) */
		MPI_File_delete(path, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
			   &fh);
	TRY(o, rc);
	if (rc != MPI_SUCCESS)
		return; /* failed on every rank: an open is collective */
	prefill(fh, o);
	if (atomic)
		TRY(o, MPI_File_set_atomicity(fh, 1));
	run_calls(fh, kind, o);
	TRY(o, MPI_File_close(&fh));
}

/* Rank 0: the whole of path, into *bytes (malloc'd); its size, or -1. */
static long slurp(const char *path, char **bytes)
{
	MPI_Offset size = -1;
	MPI_Status st;
	MPI_File fh;
	int got = 0;

	*bytes = NULL;
	if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) !=
	    MPI_SUCCESS)
		return -1;
	if (MPI_File_get_size(fh, &size) == MPI_SUCCESS && (*bytes = malloc(size + 1)) &&
	    MPI_File_read_at(fh, 0, *bytes, (int)size, MPI_BYTE, &st) == MPI_SUCCESS)
		MPI_Get_count(&st, MPI_BYTE, &got);
	MPI_File_close(&fh);
	return got == size ? (long)size : -1;
}

static void files_equal(enum empty_kind kind, int atomic)
{
	char path[2][1024], *bytes[2];
	long size[2];

	if (mc_rank != 0)
		return;
	for (int fs = 0; fs < 2; fs++) {
		snprintf(path[fs], sizeof(path[fs]), "%s/%s%s", dirs[fs], kind_names[kind],
			 atomic ? "_atomic" : "");
		size[fs] = slurp(path[fs], &bytes[fs]);
	}
	if (size[0] < 0 || size[1] < 0 || size[0] != size[1] ||
	    memcmp(bytes[0], bytes[1], (size_t)size[0]))
		mc_fail("%s (%ld bytes) and %s (%ld bytes) differ", path[0], size[0], path[1],
			size[1]);
	free(bytes[0]);
	free(bytes[1]);
}

static void run_test(enum empty_kind kind, int atomic)
{
	static struct outcome o[2];
	static const char *const how[READS] = {"read_at_all", "read_all", "read_all in halves",
					       "read_at"};

	for (int fs = 0; fs < 2; fs++)
		run_on(fs, kind, atomic, &o[fs]);
	if (kind == PAST_DATA && is_empty()) {
		/* Reads past the end of the file succeed (TRY checked that),
		 * but what they return is ROMIO's to say: its collective read
		 * may report the whole request as read, with what its own
		 * buffer held, on UFS as on Tessera. */
		files_equal(kind, atomic);
		return;
	}
	for (int r = 0; r < READS; r++) {
		CHECK(o[0].count[r] == o[1].count[r], "%s: %d ints on %s, %d on %s", how[r],
		      o[0].count[r], dirs[0], o[1].count[r], dirs[1]);
		CHECK(!memcmp(o[0].data[r], o[1].data[r], sizeof(o[0].data[r])),
		      "%s: the ints read differ between %s and %s", how[r], dirs[0], dirs[1]);
	}
	/* a data rank reads back its four writes */
	for (int i = 0; !is_empty() && i < 4 * N; i++)
		CHECK(o[1].data[READ_AT_ALL][i] == mc_rank * 100000 + i % N + 1,
		      "read_at_all: int %d is %d", i, o[1].data[READ_AT_ALL][i]);
	files_equal(kind, atomic);
}

#define TEST(kind, atomic)                                  \
	static void test_##kind##atomic(void)               \
	{                                                   \
		run_test(kind, atomic);                     \
	}
TEST(ZERO_TYPE, 0)
TEST(ZERO_TYPE_EXTENT, 0)
TEST(COUNT0, 0)
TEST(PAST_DATA, 0)
TEST(ZERO_TYPE, 1)
TEST(ZERO_TYPE_EXTENT, 1)
TEST(COUNT0, 1)
TEST(PAST_DATA, 1)

int main(int argc, char **argv)
{
	int rc;

	MPI_Init(&argc, &argv);
	mc_init();
	if (argc != 3) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpi_empty TESSERA_DIR UFS_DIR\n");
		MPI_Finalize();
		return 2;
	}
	dirs[0] = argv[2];
	dirs[1] = argv[1];
	mc_test("empty_zero_type", test_ZERO_TYPE0);
	mc_test("empty_zero_type_extent", test_ZERO_TYPE_EXTENT0);
	mc_test("empty_count0", test_COUNT00);
	mc_test("empty_past_data", test_PAST_DATA0);
	mc_test("empty_zero_type_atomic", test_ZERO_TYPE1);
	mc_test("empty_zero_type_extent_atomic", test_ZERO_TYPE_EXTENT1);
	mc_test("empty_count0_atomic", test_COUNT01);
	mc_test("empty_past_data_atomic", test_PAST_DATA1);
	rc = mc_finish();
	MPI_Finalize();
	return rc;
}
