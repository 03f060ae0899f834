/*
 * mpi_s3d.c - an S3D-like checkpoint (seed 001 §7.5.2, after the S3D-IO
 * kernel) for the Tessera driver: the cost of MPI atomic mode.
 *
 *   mpi_s3d [-n N] [-r REPS] [-p POSIX_REPS] NAME CONFIG...
 *
 * A global N x N x N grid (default 128) is split block-block-block over the
 * ranks (the most even factorisation of their number). A checkpoint writes
 * four arrays of doubles, one after the other in one shared file, each in
 * Fortran order with x fastest: yspecies (11 values per point), u (3),
 * pressure and temperature (1 each); 16 doubles a point in all. Each rank
 * writes its block of each array through a subarray view, independently
 * (MPI_File_write_at_all would be two-phase with atomic mode off and the
 * rank's own locked write with it on: independent writes compare the locks
 * alone), then the file is synced.
 *
 * CONFIG is "off" (atomic mode off) or METHOD:PROTOCOL (atomic mode on,
 * hints tessera_lock_method and tessera_lock_protocol), e.g.
 * datatype:alt-try. Prints one line per CONFIG: ranks, config, MB/s (best
 * of REPS checkpoints, 5 by default, POSIX_REPS for the posix method, 1 by
 * default, whose one lock per row costs seconds; bytes over the slowest
 * rank's time from a barrier to the end of its sync). The configs'
 * checkpoints are interleaved, each on its own open of the file.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n = 128, reps = 5, posix_reps = 1;
static int rank, nprocs;

static const struct {
	const char *name;
	int comps;
} arrays[] = { {"yspecies", 11}, {"u", 3}, {"pressure", 1}, {"temperature", 1} };
#define N_ARRAYS 4

/* One checkpoint; seconds (max over ranks), or -1. */
static double checkpoint(MPI_File fh, const int *dims, const int *coords, double *buf)
{
	MPI_Offset disp = 0;
	double t0, t;
	int rc = MPI_SUCCESS, bad;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int a = 0; a < N_ARRAYS && rc == MPI_SUCCESS; a++) {
		int gs[4] = {arrays[a].comps, n, n, n}, ls[4], st[4];
		MPI_Datatype sub;
		int count = arrays[a].comps;

		/* C order of (comp, z, y, x): x fastest, as Fortran's (x, y, z, comp) */
		ls[0] = arrays[a].comps;
		st[0] = 0;
		for (int d = 0; d < 3; d++) {
			ls[3 - d] = n / dims[d];
			st[3 - d] = coords[d] * ls[3 - d];
			count *= ls[3 - d];
		}
		MPI_Type_create_subarray(4, gs, ls, st, MPI_ORDER_C, MPI_DOUBLE, &sub);
		MPI_Type_commit(&sub);
		rc = MPI_File_set_view(fh, disp, MPI_DOUBLE, sub, "native", MPI_INFO_NULL);
		if (rc == MPI_SUCCESS)
			rc = MPI_File_write_at(fh, 0, buf, count, MPI_DOUBLE, MPI_STATUS_IGNORE);
		MPI_Type_free(&sub);
		disp += (MPI_Offset)arrays[a].comps * n * n * n * (MPI_Offset)sizeof(double);
	}
	if (rc == MPI_SUCCESS)
		rc = MPI_File_sync(fh);
	t = MPI_Wtime() - t0;
	bad = rc != MPI_SUCCESS;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return bad ? -1 : t;
}

/* One CONFIG: its own open of the file, its number of checkpoints and its
 * best time (-1: none succeeded). */
struct config {
	const char *name;
	MPI_File fh;          /* MPI_FILE_NULL: not run */
	int runs;
	double best;
};

/* -n, -r, -p; 0, or -1 for a usage error. */
static int parse_args(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "n:r:p:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'r')
			reps = atoi(optarg);
		else if (opt == 'p')
			posix_reps = atoi(optarg);
		else
			return -1;
	}
	if (optind + 2 > argc || n <= 0 || reps <= 0 || posix_reps <= 0)
		return -1;
	return 0;
}

/* The ranks as a block-block-block grid: dims, and this rank's coords in
 * the new communicator *cart. -1 (said by rank 0) when N does not split. */
static int make_grid(int *dims, int *coords, MPI_Comm *cart)
{
	int periods[3] = {0, 0, 0}, crank;

	MPI_Dims_create(nprocs, 3, dims);
	for (int d = 0; d < 3; d++)
		if (n % dims[d]) {
			if (rank == 0)
				fprintf(stderr, "mpi_s3d: N=%d does not split into %d x %d x %d\n", n,
					dims[0], dims[1], dims[2]);
			return -1;
		}
	MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, cart);
	MPI_Comm_rank(*cart, &crank);
	MPI_Cart_coords(*cart, crank, 3, coords);
	return 0;
}

/* Opens `path` for cfg->name ("off" or METHOD:PROTOCOL) with its hints and
 * atomicity; a config that does not parse or open stays MPI_FILE_NULL. */
static void open_config(const char *path, struct config *cfg)
{
	char method[32] = "", protocol[32] = "";
	int atomic = strcmp(cfg->name, "off") != 0;
	MPI_Info info;

	cfg->fh = MPI_FILE_NULL;
	cfg->best = -1;
	if (atomic && sscanf(cfg->name, "%31[^:]:%31s", method, protocol) != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_s3d: config %s is neither off nor METHOD:PROTOCOL\n",
				cfg->name);
		return;
	}
	cfg->runs = strcmp(method, "posix") ? reps : posix_reps;
	MPI_Info_create(&info);
	if (atomic) {
		MPI_Info_set(info, "tessera_lock_method", method);
		MPI_Info_set(info, "tessera_lock_protocol", protocol);
	}
	if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info,
			  &cfg->fh) != MPI_SUCCESS) {
		if (rank == 0)
			fprintf(stderr, "mpi_s3d: cannot open %s\n", path);
		cfg->fh = MPI_FILE_NULL;
	} else {
		MPI_File_set_atomicity(cfg->fh, atomic);
	}
	MPI_Info_free(&info);
}

/* The checkpoints interleaved round by round, so that a noisy machine's
 * drifts hit every config alike. */
static void run_configs(struct config *cfgs, int nc, const int *dims, const int *coords,
			double *buf)
{
	for (int r = 0; r < reps || r < posix_reps; r++)
		for (int c = 0; c < nc; c++) {
			double t;

			if (cfgs[c].fh == MPI_FILE_NULL || r >= cfgs[c].runs)
				continue;
			t = checkpoint(cfgs[c].fh, dims, coords, buf);
			if (t > 0 && (cfgs[c].best < 0 || t < cfgs[c].best))
				cfgs[c].best = t;
		}
}

/* Closes each config's file; rank 0 prints its line. */
static void report_configs(struct config *cfgs, int nc)
{
	for (int c = 0; c < nc; c++) {
		if (cfgs[c].fh != MPI_FILE_NULL)
			MPI_File_close(&cfgs[c].fh);
		if (rank != 0)
			continue;
		if (cfgs[c].best > 0)
			printf("%d %s %.1f\n", nprocs, cfgs[c].name,
			       16.0 * n * n * n * 8 / 1e6 / cfgs[c].best);
		else
			printf("%d %s failed\n", nprocs, cfgs[c].name);
	}
}

int main(int argc, char **argv)
{
	int dims[3] = {0, 0, 0}, coords[3], nc;
	struct config *cfgs;
	MPI_Comm cart;
	double *buf;
	size_t local;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (parse_args(argc, argv)) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_s3d [-n N] [-r REPS] [-p POSIX_REPS] NAME CONFIG...\n");
		MPI_Finalize();
		return 2;
	}
	if (make_grid(dims, coords, &cart)) {
		MPI_Finalize();
		return 2;
	}
	local = (size_t)11 * (n / dims[0]) * (n / dims[1]) * (n / dims[2]);
	buf = malloc(local * sizeof(double));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < local; i++)
		buf[i] = (double)rank + (double)i * 1e-6;
	if (rank == 0)
		printf("# S3D-like checkpoint: %d^3 grid, 16 doubles a point (%.1f MB), %d ranks "
		       "(%d x %d x %d), independent writes and a sync\n", n,
		       16.0 * n * n * n * 8 / 1e6, nprocs, dims[0], dims[1], dims[2]);
	/* Every config's file handle open at once (the same file, each with
	 * its hints). */
	nc = argc - optind - 1;
	cfgs = calloc(nc, sizeof(*cfgs));
	if (!cfgs)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int c = 0; c < nc; c++) {
		cfgs[c].name = argv[optind + 1 + c];
		open_config(argv[optind], &cfgs[c]);
	}
	run_configs(cfgs, nc, dims, coords, buf);
	report_configs(cfgs, nc);
	free(cfgs);
	free(buf);
	MPI_Comm_free(&cart);
	MPI_Finalize();
	return 0;
}
