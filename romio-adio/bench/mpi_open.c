/*
 * mpi_open.c - what a process's first MPI_File_open costs, beside later
 * ones (make bench runs it through tests/bench/bench_startup.sh).
 *
 *   mpi_open NAME...
 *
 * After MPI_Init, opens (MPI_MODE_CREATE | MPI_MODE_RDWR) and closes each
 * NAME in turn, on MPI_COMM_WORLD, and prints one line for MPI_Init and one
 * per NAME: milliseconds, the slowest rank's, from a barrier to the end of
 * the open, and of the close. The first open of a process pays for what
 * Open MPI defers to it (choosing and loading its I/O component, and with
 * ROMIO's the libraries it links: libtessera and so libfabric), and the
 * first open of a Tessera name for the client's connection; so run it once
 * with a Tessera name first and once with a local name first. Each line
 * ends with the process's peak resident memory then (MB, the largest
 * rank's).
 */
#include <mpi.h>
#include <stdio.h>
#include <sys/resource.h>

static double slowest(double t)
{
	double max;

	MPI_Reduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	return max * 1e3;
}

/* The largest rank's peak resident memory so far, in MB. */
static double peak_rss_mb(void)
{
	struct rusage ru;
	double mb = 0, max;

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		mb = ru.ru_maxrss / 1024.0;
	MPI_Reduce(&mb, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	return max;
}

int main(int argc, char **argv)
{
	double t0 = MPI_Wtime(), init;
	int rank;

	MPI_Init(&argc, &argv);
	init = MPI_Wtime() - t0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	init = slowest(init);
	double rss = peak_rss_mb();
	if (rank == 0)
		printf("%-40s %8.1f ms  %21s rss %6.1f MB\n", "MPI_Init", init, "", rss);
	for (int i = 1; i < argc; i++) {
		MPI_File fh;
		double open_ms, close_ms, t;
		int rc;

		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		rc = MPI_File_open(MPI_COMM_WORLD, argv[i], MPI_MODE_CREATE | MPI_MODE_RDWR,
				   MPI_INFO_NULL, &fh);
		open_ms = slowest(MPI_Wtime() - t);
		if (rc != MPI_SUCCESS) {
			char msg[MPI_MAX_ERROR_STRING];
			int len;

			MPI_Error_string(rc, msg, &len);
			if (rank == 0)
				fprintf(stderr, "mpi_open: %s: %s\n", argv[i], msg);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		t = MPI_Wtime();
		MPI_File_close(&fh);
		close_ms = slowest(MPI_Wtime() - t);
		rss = peak_rss_mb();
		if (rank == 0)
			printf("open %-35s %8.1f ms  close %6.1f ms  rss %6.1f MB\n", argv[i], open_ms,
			       close_ms, rss);
	}
	MPI_Finalize();
	return 0;
}
