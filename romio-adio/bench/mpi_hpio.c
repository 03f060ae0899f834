/*
 * mpi_hpio.c - an MPI version of the HPIO benchmark (Ching, Choudhary,
 * Liao, Ward, Pundit: "Evaluating I/O characteristics and methods for
 * storing structured scientific data", IPDPS 2006) for the Tessera driver.
 *
 *   mpi_hpio [-n REGIONS] [-s SIZE] [-g SPACING] [-r REPS] [-c CASES] [-V] [-R]
 *            [-S every|one] NAME METHOD...
 *
 * Each rank moves REGIONS regions (default 4096) of SIZE bytes (8); where
 * an access is noncontiguous, regions are SPACING bytes apart (128). In a
 * noncontiguous file the ranks' regions interleave (region i of rank p is
 * slot i * nprocs + p). Access cases: c-c, nc-c, c-nc, nc-nc (memory-file).
 * METHOD is one of
 *   posix sieve list datatype     Tessera: tessera_io_read/_write hints,
 *                                 independent I/O ("list": Tessera's own list
 *                                 I/O, the config's regions per request,
 *                                 noncontiguous memory packed)
 *   list64                        the dissertation's list I/O (seed 001,
 *                                 §4.2, §5.3): 64 file regions per request
 *                                 (tessera_list_batch=64) and noncontiguous
 *                                 memory sent as a list of its regions
 *                                 (tessera_mem_pack=false)
 *   ufs-posix ufs-sieve           ROMIO's UFS driver: romio_ds_read/_write
 *                                 disable/enable, independent I/O
 *   coll                          collective I/O (two-phase), any driver
 * Independent sieving writes to an interleaved file run at once: the
 * Tessera driver locks each window around its read-modify-write (ROMIO's
 * UFS sieving takes fcntl locks).
 *
 * Prints one line per case and method: bandwidth of write (with sync) and
 * read in MiB/s, best of REPS runs, over all ranks' bytes.
 *   -c CASES   only these cases, e.g. "c-c,c-nc" (all four by default)
 *   -S MODE    the hint tessera_sync=MODE on every open: "one" has one rank
 *              sync the file for all in MPI_File_sync (seed 001, §5.3: the
 *              PVFS2 driver's optimization the dissertation's two-phase
 *              runs had), "every" (the driver's default) every rank
 *   -V         verify: each read is checked against what was written (every
 *              rank, every region); the line ends "verify ok" or
 *              "verify FAILED"
 *   -R         also one line per repetition, "rep CASE METHOD I WRITE_S
 *              READ_S W_OPEN_S W_CALL_S W_SYNC_S W_CLOSE_S R_OPEN_S
 *              R_CLOSE_S" (seconds, each the slowest rank's; -1 for a failed
 *              run), for a driver that averages its own way (tests/study/).
 *              WRITE_S is the write call and MPI_File_sync together, as the
 *              bandwidth is; W_CALL_S and W_SYNC_S are its two parts; the
 *              opens and closes are outside both (READ_S is the read call).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int regions = 4096, size = 8, spacing = 128, reps = 3, verify, raw;
static const char *case_list, *sync_mode;
static int rank, nprocs;

static void make_types(int mem_nc, int file_nc, MPI_Datatype *mem, MPI_Datatype *file,
		       MPI_Offset *disp)
{
	MPI_Datatype t;

	if (mem_nc) {
		MPI_Type_vector(regions, size, size + spacing, MPI_BYTE, mem);
	} else {
		MPI_Type_contiguous(regions * size, MPI_BYTE, mem);
	}
	MPI_Type_commit(mem);
	if (file_nc) {
		/* one slot per rank per region: my region, then the others' */
		MPI_Type_contiguous(size, MPI_BYTE, &t);
		MPI_Type_create_resized(t, 0, (MPI_Aint)(size + spacing) * nprocs, file);
		MPI_Type_free(&t);
		*disp = (MPI_Offset)rank * (size + spacing);
	} else {
		MPI_Type_contiguous(size, MPI_BYTE, file);
		*disp = (MPI_Offset)rank * regions * size;
	}
	MPI_Type_commit(file);
}

static int open_file(const char *name, const char *method, MPI_File *fh)
{
	MPI_Info info;
	int rc;

	MPI_Info_create(&info);
	if (sync_mode) /* a Tessera hint: other drivers ignore it */
		MPI_Info_set(info, "tessera_sync", (char *)sync_mode);
	if (!strcmp(method, "posix") || !strcmp(method, "sieve") || !strcmp(method, "list") ||
	    !strcmp(method, "datatype")) {
		MPI_Info_set(info, "tessera_io_read", (char *)method);
		MPI_Info_set(info, "tessera_io_write", (char *)method);
	} else if (!strcmp(method, "list64")) {
		MPI_Info_set(info, "tessera_io_read", "list");
		MPI_Info_set(info, "tessera_io_write", "list");
		MPI_Info_set(info, "tessera_list_batch", "64");
		MPI_Info_set(info, "tessera_mem_pack", "false");
	} else if (!strcmp(method, "ufs-posix")) {
		MPI_Info_set(info, "romio_ds_read", "disable");
		MPI_Info_set(info, "romio_ds_write", "disable");
	} else if (!strcmp(method, "ufs-sieve")) {
		MPI_Info_set(info, "romio_ds_read", "enable");
		MPI_Info_set(info, "romio_ds_write", "enable");
	} else if (!strcmp(method, "coll")) {
		MPI_Info_set(info, "romio_cb_read", "enable");
		MPI_Info_set(info, "romio_cb_write", "enable");
	}
	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, fh);
	MPI_Info_free(&info);
	return rc;
}

/* Whether NAME is an item of the comma-separated LIST. */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0))
			return 1;
	return 0;
}

/* A run's phases in seconds, each the slowest rank's: open, the I/O call,
 * MPI_File_sync (writes only), close; all (the I/O call and the sync as
 * one, from one barrier: what the bandwidth is of). */
struct phases {
	double open, call, sync, close, all;
};

/* One timed run; returns seconds (max over ranks), or -1 on failure. */
static double run(const char *name, const char *method, int mem_nc, int file_nc, int writing,
		  char *buf, long *wrong, struct phases *ph)
{
	MPI_Datatype mem, file;
	MPI_Offset disp;
	MPI_File fh;
	double t0, t1, t2, mine[5], most[5];
	int coll = !strcmp(method, "coll"), rc = MPI_SUCCESS, bad;

	*ph = (struct phases){ -1, -1, -1, -1, -1 };
	make_types(mem_nc, file_nc, &mem, &file, &disp);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (open_file(name, method, &fh) != MPI_SUCCESS) {
		if (rank == 0)
			fprintf(stderr, "mpi_hpio: cannot open %s\n", name);
		return -1;
	}
	mine[0] = MPI_Wtime() - t0;
	MPI_File_set_view(fh, disp, MPI_BYTE, file, "native", MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (writing) {
		if (coll)
			rc = MPI_File_write_at_all(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE);
		else
			rc = MPI_File_write_at(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE);
	} else {
		rc = coll ? MPI_File_read_at_all(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE)
			  : MPI_File_read_at(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE);
	}
	t1 = MPI_Wtime();
	if (writing && rc == MPI_SUCCESS)
		rc = MPI_File_sync(fh);
	t2 = MPI_Wtime();
	mine[1] = t1 - t0;
	mine[2] = t2 - t1;
	mine[4] = t2 - t0;
	MPI_File_close(&fh);
	mine[3] = MPI_Wtime() - t2;
	MPI_Type_free(&mem);
	MPI_Type_free(&file);
	MPI_Allreduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	*ph = (struct phases){ most[0], most[1], most[2], most[3], most[4] };
	bad = rc != MPI_SUCCESS;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!writing && wrong) {
		/* the regions read against the pattern written (i + rank) */
		long w = 0;
		size_t stride = mem_nc ? (size_t)size + spacing : (size_t)size;

		for (size_t i = 0; i < (size_t)regions; i++)
			for (size_t j = 0; j < (size_t)size; j++) {
				size_t at = i * stride + j;

				w += buf[at] != (char)(at + rank);
			}
		MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		*wrong += w;
	}
	return bad ? -1 : most[4];
}

/* The options before NAME; returns the index of NAME, or -1 when no NAME
 * and METHOD follow them. */
static int parse_args(int argc, char **argv)
{
	int a = 1;

	for (; a < argc - 1 && argv[a][0] == '-'; a += 2) {
		int v = atoi(argv[a + 1]);

		switch (argv[a][1]) {
		case 'n': regions = v; break;
		case 's': size = v; break;
		case 'g': spacing = v; break;
		case 'r': reps = v; break;
		case 'c': case_list = argv[a + 1]; break;
		case 'S': sync_mode = argv[a + 1]; break;
		case 'V': verify = 1; a--; break;
		case 'R': raw = 1; a--; break;
		}
	}
	return a < argc - 1 ? a : -1;
}

/* Keeps the shorter of two run times; 0 or below is no time. */
static double best_of(double best, double t)
{
	return t > 0 && (best == 0 || t < best) ? t : best;
}

/* rank 0's line for one case and method. */
static void report(const char *acase, const char *method, double best_w, double best_r,
		   long wrong)
{
	double mib = (double)regions * size * nprocs / (1 << 20);

	printf("%-6s %-10s write %9.2f  read %9.2f%s\n", acase, method,
	       best_w > 0 ? mib / best_w : 0.0, best_r > 0 ? mib / best_r : 0.0,
	       !verify ? "" : wrong ? "  verify FAILED" : "  verify ok");
	if (wrong)
		fprintf(stderr, "mpi_hpio: %s %s: %ld bytes read back differ from those written\n",
			acase, method, wrong);
	fflush(stdout);
}

/* Case c (an index of cases[]) with one method: REPS writes and reads of
 * the file NAME.METHOD.CASE, reported and then deleted. */
static void run_case(const char *name, const char *method, int c, char *buf, char *rbuf,
		     size_t len)
{
	static const char *cases[4] = {"c-c", "nc-c", "c-nc", "nc-nc"};
	int mem_nc = c == 1 || c == 3, file_nc = c >= 2;
	double best_w = 0, best_r = 0, t, tr;
	struct phases pw, pr;
	char fname[1024];
	long wrong = 0;

	if (case_list && !in_list(case_list, cases[c]))
		return;
	snprintf(fname, sizeof(fname), "%s.%s.%s", name, method, cases[c]);
	for (int r = 0; r < reps; r++) {
		t = run(fname, method, mem_nc, file_nc, 1, buf, NULL, &pw);
		best_w = best_of(best_w, t);
		memset(rbuf, 0, len);
		tr = run(fname, method, mem_nc, file_nc, 0, rbuf, verify ? &wrong : NULL, &pr);
		best_r = best_of(best_r, tr);
		if (raw && rank == 0)
			printf("rep %s %s %d %.6f %.6f %.6f %.6f %.6f %.6f %.6f %.6f\n", cases[c],
			       method, r, t, tr, pw.open, pw.call, pw.sync, pw.close, pr.open,
			       pr.close);
	}
	if (rank == 0) {
		report(cases[c], method, best_w, best_r, wrong);
		MPI_File_delete(fname, MPI_INFO_NULL);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	const char *name;
	char *buf, *rbuf;
	size_t len;
	int a;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
	a = parse_args(argc, argv);
	if (a < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_hpio [-n REGIONS] [-s SIZE] [-g SPACING] [-r REPS] "
					"[-c CASES] [-V] [-R] [-S every|one] NAME METHOD...\n");
		MPI_Finalize();
		return 2;
	}
	name = argv[a++];
	len = (size_t)regions * (size + spacing);
	buf = malloc(len);
	rbuf = malloc(len);
	if (!buf || !rbuf) {
		fprintf(stderr, "mpi_hpio: rank %d: no memory for 2 x %zu bytes\n", rank, len);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i + rank);
	if (rank == 0)
		printf("# %d ranks, %d regions of %d bytes, spacing %d, best of %d; MiB/s\n", nprocs,
		       regions, size, spacing, reps);
	for (; a < argc; a++)
		for (int c = 0; c < 4; c++)
			run_case(name, argv[a], c, buf, rbuf, len);
	free(buf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
