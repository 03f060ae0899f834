/*
 * mpi_hpio.c - an MPI version of the HPIO benchmark (Ching, Choudhary,
 * Liao, Ward, Pundit: "Evaluating I/O characteristics and methods for
 * storing structured scientific data", IPDPS 2006) for the Tessera driver.
 *
 *   mpi_hpio [-n REGIONS] [-s SIZE] [-g SPACING] [-r REPS] NAME METHOD...
 *
 * Each rank moves REGIONS regions (default 4096) of SIZE bytes (8); where
 * an access is noncontiguous, regions are SPACING bytes apart (128). In a
 * noncontiguous file the ranks' regions interleave (region i of rank p is
 * slot i * nprocs + p). Access cases: c-c, nc-c, c-nc, nc-nc (memory-file).
 * METHOD is one of
 *   posix sieve list datatype     Tessera: tessera_io_read/_write hints,
 *                                 independent I/O
 *   ufs-posix ufs-sieve           ROMIO's UFS driver: romio_ds_read/_write
 *                                 disable/enable, independent I/O
 *   coll                          collective I/O (two-phase), any driver
 * Independent sieving writes to an interleaved file run at once: the
 * Tessera driver locks each window around its read-modify-write (ROMIO's
 * UFS sieving takes fcntl locks).
 *
 * Prints one line per case and method: bandwidth of write (with sync) and
 * read in MiB/s, best of REPS runs, over all ranks' bytes.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int regions = 4096, size = 8, spacing = 128, reps = 3;
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
	if (!strcmp(method, "posix") || !strcmp(method, "sieve") || !strcmp(method, "list") ||
	    !strcmp(method, "datatype")) {
		MPI_Info_set(info, "tessera_io_read", (char *)method);
		MPI_Info_set(info, "tessera_io_write", (char *)method);
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

/* One timed run; returns seconds (max over ranks), or -1 on failure. */
static double run(const char *name, const char *method, int mem_nc, int file_nc, int writing,
		  char *buf)
{
	MPI_Datatype mem, file;
	MPI_Offset disp;
	MPI_File fh;
	double t0, t, tmax;
	int coll = !strcmp(method, "coll"), rc = MPI_SUCCESS, bad;

	make_types(mem_nc, file_nc, &mem, &file, &disp);
	if (open_file(name, method, &fh) != MPI_SUCCESS) {
		if (rank == 0)
			fprintf(stderr, "mpi_hpio: cannot open %s\n", name);
		return -1;
	}
	MPI_File_set_view(fh, disp, MPI_BYTE, file, "native", MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (writing) {
		if (coll)
			rc = MPI_File_write_at_all(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE);
		else
			rc = MPI_File_write_at(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS)
			rc = MPI_File_sync(fh);
	} else {
		rc = coll ? MPI_File_read_at_all(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE)
			  : MPI_File_read_at(fh, 0, buf, 1, mem, MPI_STATUS_IGNORE);
	}
	t = MPI_Wtime() - t0;
	MPI_File_close(&fh);
	MPI_Type_free(&mem);
	MPI_Type_free(&file);
	MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	bad = rc != MPI_SUCCESS;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return bad ? -1 : tmax;
}

int main(int argc, char **argv)
{
	static const char *cases[4] = {"c-c", "nc-c", "c-nc", "nc-nc"};
	const char *name;
	char *buf, fname[1024];
	int a = 1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
	for (; a < argc - 1 && argv[a][0] == '-'; a += 2) {
		int v = atoi(argv[a + 1]);

		switch (argv[a][1]) {
		case 'n': regions = v; break;
		case 's': size = v; break;
		case 'g': spacing = v; break;
		case 'r': reps = v; break;
		}
	}
	if (a >= argc - 1) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_hpio [-n REGIONS] [-s SIZE] [-g SPACING] [-r REPS] "
					"NAME METHOD...\n");
		MPI_Finalize();
		return 2;
	}
	name = argv[a++];
	buf = malloc((size_t)regions * (size + spacing));
	for (size_t i = 0; i < (size_t)regions * (size + spacing); i++)
		buf[i] = (char)(i + rank);
	if (rank == 0)
		printf("# %d ranks, %d regions of %d bytes, spacing %d, best of %d; MiB/s\n", nprocs,
		       regions, size, spacing, reps);
	for (; a < argc; a++) {
		const char *method = argv[a];

		for (int c = 0; c < 4; c++) {
			int mem_nc = c == 1 || c == 3, file_nc = c >= 2;
			double best_w = 0, best_r = 0, t;

			snprintf(fname, sizeof(fname), "%s.%s.%s", name, method, cases[c]);
			for (int r = 0; r < reps; r++) {
				t = run(fname, method, mem_nc, file_nc, 1, buf);
				if (t > 0 && (best_w == 0 || t < best_w))
					best_w = t;
				t = run(fname, method, mem_nc, file_nc, 0, buf);
				if (t > 0 && (best_r == 0 || t < best_r))
					best_r = t;
			}
			if (rank == 0) {
				double mib = (double)regions * size * nprocs / (1 << 20);

				printf("%-6s %-10s write %9.2f  read %9.2f\n", cases[c], method,
				       best_w > 0 ? mib / best_w : 0.0, best_r > 0 ? mib / best_r : 0.0);
				fflush(stdout);
			}
			if (rank == 0)
				MPI_File_delete(fname, MPI_INFO_NULL);
			MPI_Barrier(MPI_COMM_WORLD);
		}
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
