/*
 * mpi_patterns.c - the access patterns of the dissertation's request-count
 * tables (seed 001, Ch. 3-4), one MPI-IO call per rank, for
 * tests/study/study.py, which reads the storage daemons' counters around it.
 *
 *   mpi_patterns -p tile [-f FRAMES] [-P] NAME METHOD      (Tab. 3.1, read)
 *   mpi_patterns -p block3d [-L SIDE] NAME METHOD          (Tab. 3.2, write)
 *   mpi_patterns -p flash [-b BLOCKS] NAME METHOD          (Tab. 3.3, write)
 *   mpi_patterns -p cyclic -S BYTES -A ACCESSES NAME METHOD (Figs. 3.9-3.10)
 *   mpi_patterns -p blockblock -S BYTES -A ACCESSES NAME METHOD (Figs. 3.11-3.12)
 * and for the bandwidth sweeps (tests/study/study.py's patterns part):
 *   -o read|write   the direction (default: the table's; cyclic and
 *                   blockblock write)
 *   -r REPS         the measured call REPS times, an "op" line each
 *   -P              (every pattern) first writes the file the pattern reads,
 *                   contiguously, and ends: not measured
 *
 * tile: 6 ranks, a 3 x 2 display of 1024 x 768 tiles of 24-bit pixels
 *   overlapping by 270 and 128 pixels; each rank reads its tile of FRAMES
 *   frames (1). -P first writes the frames (not part of the measured call;
 *   the driver runs it on its own before reading the counters).
 * block3d: SIDE^3 4-byte integers (600) in 3-D blocks over p^3 ranks
 *   (ROMIO's coll_perf.c); each rank writes its block.
 * flash: BLOCKS blocks (80) per rank of 8^3 interior cells with 4 guard
 *   cells a side and 24 doubles a cell, interleaved by cell in memory; the
 *   file holds variable 0 of every block of every rank, then variable 1...
 * cyclic (Fig. 3.7): a 2-D array of ACCESSES rows, each row a block of
 *   BYTES / (ranks * ACCESSES) bytes per rank in rank order: each rank's
 *   ACCESSES regions are interleaved cyclically with the others'.
 * blockblock (Fig. 3.8): a 2-D array split into p x p blocks over p^2
 *   ranks, each block ACCESSES rows of BYTES / (ranks * ACCESSES) bytes.
 *   Both keep the aggregate size (BYTES, rounded down to whole regions)
 *   fixed while the accesses vary, as the dissertation's synthetic test.
 * METHOD: posix sieve list datatype (the driver's hints; list with 64
 * regions a request, the dissertation's PVFS limit) or coll (two-phase,
 * one aggregator per rank); sieving and two-phase buffers of 4 MiB.
 *
 * Prints "op read|write DESIRED RESENT SECONDS" (rank 0): DESIRED the bytes
 * per rank, RESENT the mean bytes per rank that two-phase moves between
 * ranks (each rank's bytes that lie in another aggregator's file domain,
 * by ROMIO's even split of the aggregate extent; 0 for the other methods).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

/* Each rank's file regions, (offset, length) in file order. */
struct regions {
	long long *off, *len;
	long n;
};

static void add(struct regions *r, long long off, long long len)
{
	if (r->n && r->off[r->n - 1] + r->len[r->n - 1] == off) {
		r->len[r->n - 1] += len;
		return;
	}
	r->off[r->n] = off;
	r->len[r->n++] = len;
}

static void die(const char *what)
{
	fprintf(stderr, "mpi_patterns: rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

struct options {
	const char *pattern, *name, *method;
	int frames, side, blocks, prepare;
	int reps;              /* measured calls */
	int op;                /* OP_DEFAULT, OP_READ or OP_WRITE */
	long long size;        /* cyclic, blockblock: aggregate bytes */
	long long accesses;    /* cyclic, blockblock: regions per rank */
};

enum { OP_DEFAULT, OP_READ, OP_WRITE };

/* The measured call's types, regions and direction. */
struct job {
	MPI_Datatype mem, file;
	struct regions reg;
	long long desired;     /* bytes per rank */
	int writing;
};

/* The tile display: frame 2532 x 1408 pixels of 3 bytes; tile 1024 x 768
 * pixels, overlapping by 270 and 128. */
#define TILE_FW (2532 * 3)
#define TILE_FH 1408
#define TILE_TW (1024 * 3)
#define TILE_TH 768

/* 0, or -1 for a usage error. */
static int parse_args(int argc, char **argv, struct options *o)
{
	int a = 1;

	*o = (struct options){.pattern = "tile", .frames = 1, .side = 600, .blocks = 80,
			      .reps = 1, .size = 1LL << 24, .accesses = 1024};
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "-P")) {
			o->prepare = 1;
			continue;
		}
		if (a + 1 >= argc)
			break;
		switch (argv[a][1]) {
		case 'p': o->pattern = argv[++a]; break;
		case 'f': o->frames = atoi(argv[++a]); break;
		case 'L': o->side = atoi(argv[++a]); break;
		case 'b': o->blocks = atoi(argv[++a]); break;
		case 'r': o->reps = atoi(argv[++a]); break;
		case 'S': o->size = atoll(argv[++a]); break;
		case 'A': o->accesses = atoll(argv[++a]); break;
		case 'o':
			a++;
			o->op = !strcmp(argv[a], "read") ? OP_READ : !strcmp(argv[a], "write") ? OP_WRITE : -1;
			break;
		default: a++; break;
		}
	}
	if (a + 2 != argc || o->op < 0 || o->reps < 1 || o->size < 1 || o->accesses < 1)
		return -1;
	o->name = argv[a];
	o->method = argv[a + 1];
	return 0;
}

/* tile -P: the frames, written contiguously by rank 0 (not measured). */
static void write_frames(const struct options *o)
{
	MPI_File fh;
	size_t flen = (size_t)TILE_FW * TILE_FH;
	char *fb = malloc(flen);

	if (!fb)
		die("no memory for a frame");
	memset(fb, 7, flen);
	if (MPI_File_open(MPI_COMM_WORLD, o->name, MPI_MODE_CREATE | MPI_MODE_WRONLY,
			  MPI_INFO_NULL, &fh) != MPI_SUCCESS)
		die("cannot create the frames file");
	if (rank == 0)
		for (int f = 0; f < o->frames; f++)
			if (MPI_File_write_at(fh, (MPI_Offset)f * flen, fb, (int)flen, MPI_BYTE,
					      MPI_STATUS_IGNORE) != MPI_SUCCESS)
				die("cannot write a frame");
	MPI_File_close(&fh);
	free(fb);
}

/* tile: this rank's tile of every frame, read. */
static void pattern_tile(const struct options *o, struct job *j)
{
	int c = rank % 3, r = rank / 3;
	int sizes[2] = {TILE_FH, TILE_FW}, sub[2] = {TILE_TH, TILE_TW},
	    start[2] = {r * (768 - 128), c * (1024 - 270) * 3};

	j->writing = 0;
	MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_BYTE, &j->file);
	j->desired = (long long)o->frames * TILE_TH * TILE_TW;
	j->reg.off = malloc(sizeof(long long) * o->frames * TILE_TH);
	j->reg.len = malloc(sizeof(long long) * o->frames * TILE_TH);
	for (int f = 0; f < o->frames; f++)
		for (int y = 0; y < TILE_TH; y++)
			add(&j->reg, (long long)f * TILE_FW * TILE_FH +
					     (long long)(start[0] + y) * TILE_FW + start[1], TILE_TW);
	MPI_Type_contiguous((int)j->desired, MPI_BYTE, &j->mem);
}

/* block3d: this rank's cube of the SIDE^3 integers, written. */
static void pattern_block3d(const struct options *o, struct job *j)
{
	int p = 1, L, side = o->side;

	while ((p + 1) * (p + 1) * (p + 1) <= nprocs)
		p++;
	if (p * p * p != nprocs || side % p)
		die("block3d wants a cube number of ranks that divides SIDE");
	L = side / p;
	int sizes[3] = {side, side, side}, sub[3] = {L, L, L};
	int start[3] = {(rank / (p * p)) * L, ((rank / p) % p) * L, (rank % p) * L};

	MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_INT, &j->file);
	j->desired = 4LL * L * L * L;
	j->reg.off = malloc(sizeof(long long) * L * L);
	j->reg.len = malloc(sizeof(long long) * L * L);
	for (int z = 0; z < L; z++)
		for (int y = 0; y < L; y++)
			add(&j->reg, 4LL * (((long long)(start[0] + z) * side + start[1] + y) * side + start[2]),
			    4LL * L);
	MPI_Type_contiguous((int)j->desired, MPI_BYTE, &j->mem);
}

/* flash: memory [block][z][y][x][var] with 16^3 cells a block (4 guard
 * cells a side); file [var][rank][block][8^3 doubles]; written. */
static void pattern_flash(const struct options *o, struct job *j)
{
	const int nv = 24, g = 4, nx = 8, n = nx + 2 * g, blocks = o->blocks;
	long cnt = (long)nv * blocks * nx * nx * nx, k = 0;
	MPI_Aint *md = malloc(sizeof(MPI_Aint) * cnt), *fd = malloc(sizeof(MPI_Aint) * nv * blocks);

	if (!md || !fd)
		die("no memory for the FLASH types");
	j->reg.off = malloc(sizeof(long long) * nv * blocks);
	j->reg.len = malloc(sizeof(long long) * nv * blocks);
	for (int v = 0; v < nv; v++)
		for (int b = 0; b < blocks; b++) {
			fd[v * blocks + b] = (((MPI_Aint)v * nprocs + rank) * blocks + b) * 4096;
			add(&j->reg, fd[v * blocks + b], 4096);
			for (int z = 0; z < nx; z++)
				for (int y = 0; y < nx; y++)
					for (int x = 0; x < nx; x++)
						md[k++] = ((((MPI_Aint)b * n + z + g) * n + y + g) * n + x + g) *
								  nv * 8 + v * 8;
		}
	MPI_Type_create_hindexed_block((int)cnt, 8, md, MPI_BYTE, &j->mem);
	MPI_Type_create_hindexed_block(nv * blocks, 4096, fd, MPI_BYTE, &j->file);
	free(md);
	free(fd);
	j->desired = 8LL * cnt;
}

/* cyclic and blockblock: one region's bytes, the aggregate size split
 * into ACCESSES regions per rank (die if that leaves none). */
static long long region_size(const struct options *o)
{
	long long b = o->size / ((long long)nprocs * o->accesses);

	if (b < 1 || b > (1LL << 30) || o->accesses > (1 << 30))
		die("-S BYTES / (ranks * ACCESSES) must be from 1 byte to 1 GiB");
	return b;
}

/* This rank's n regions of b bytes, the first at `first`, one a `stride`
 * further each; a contiguous memory type of their bytes. */
static void rows_regions(struct job *j, long long n, long long first, long long stride, long long b)
{
	j->reg.off = malloc(sizeof(long long) * n);
	j->reg.len = malloc(sizeof(long long) * n);
	if (!j->reg.off || !j->reg.len)
		die("no memory for the regions");
	for (long long y = 0; y < n; y++)
		add(&j->reg, first + y * stride, b);
	j->desired = n * b;
	MPI_Type_contiguous((int)j->desired, MPI_BYTE, &j->mem);
}

/* cyclic (Fig. 3.7): ACCESSES rows of nprocs blocks of b bytes, block r of
 * every row this rank's. */
static void pattern_cyclic(const struct options *o, struct job *j)
{
	long long b = region_size(o);
	int sizes[2] = {(int)o->accesses, (int)(b * nprocs)}, sub[2] = {(int)o->accesses, (int)b},
	    start[2] = {0, (int)(b * rank)};

	if (b * nprocs > (1LL << 30))
		die("cyclic: a row of more than 1 GiB");
	MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_BYTE, &j->file);
	rows_regions(j, o->accesses, b * rank, b * nprocs, b);
}

/* blockblock (Fig. 3.8): p x p blocks of ACCESSES rows of b bytes; rank r
 * the block at row r / p, column r % p. */
static void pattern_blockblock(const struct options *o, struct job *j)
{
	long long b = region_size(o);
	int p = 1;

	while ((p + 1) * (p + 1) <= nprocs)
		p++;
	if (p * p != nprocs)
		die("blockblock wants a square number of ranks");
	int sizes[2] = {(int)(o->accesses * p), (int)(b * p)}, sub[2] = {(int)o->accesses, (int)b},
	    start[2] = {(int)(rank / p * o->accesses), (int)(rank % p * b)};

	MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_BYTE, &j->file);
	rows_regions(j, o->accesses, (rank / p * o->accesses) * b * p + rank % p * b, b * p, b);
}

/* A buffer as long as the memory type's upper bound, filled. */
static char *make_buffer(MPI_Datatype mem)
{
	MPI_Aint lb, ext;
	size_t buflen;
	char *buf;

	MPI_Type_get_extent(mem, &lb, &ext);
	buflen = (size_t)(lb + ext);
	buf = malloc(buflen);
	if (!buf)
		die("no memory for the buffer");
	for (size_t i = 0; i < buflen; i++)
		buf[i] = (char)(i + rank);
	return buf;
}

/* Two-phase's resent bytes, summed over the ranks: each rank's bytes
 * outside its own file domain, the aggregate extent split evenly over the
 * nprocs aggregators. */
static long long resent_bytes(const struct regions *reg)
{
	long long lo = reg->off[0], hi = reg->off[reg->n - 1] + reg->len[reg->n - 1], glo, ghi;
	long long fdsz, mlo, mhi, resent = 0;

	MPI_Allreduce(&lo, &glo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(&hi, &ghi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
	fdsz = (ghi - glo + nprocs - 1) / nprocs;
	mlo = glo + (long long)rank * fdsz;
	mhi = mlo + fdsz;
	for (long i = 0; i < reg->n; i++) {
		long long s = reg->off[i] > mlo ? reg->off[i] : mlo;
		long long e = reg->off[i] + reg->len[i] < mhi ? reg->off[i] + reg->len[i] : mhi;

		resent += reg->len[i] - (e > s ? e - s : 0);
	}
	MPI_Allreduce(MPI_IN_PLACE, &resent, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	return resent;
}

/* Opens the file with METHOD's hints: buffers of 4 MiB; coll is
 * two-phase with one aggregator per rank, the others the driver's
 * independent method (lists of 64 regions). */
static void open_file(const struct options *o, int writing, MPI_File *fh)
{
	int coll = !strcmp(o->method, "coll"), rc;
	MPI_Info info;
	char nag[16];

	MPI_Info_create(&info);
	MPI_Info_set(info, "ind_rd_buffer_size", "4194304");
	MPI_Info_set(info, "ind_wr_buffer_size", "4194304");
	MPI_Info_set(info, "cb_buffer_size", "4194304");
	if (coll) {
		snprintf(nag, sizeof(nag), "%d", nprocs);
		MPI_Info_set(info, "romio_cb_read", "enable");
		MPI_Info_set(info, "romio_cb_write", "enable");
		MPI_Info_set(info, "cb_nodes", nag);
		/* ROMIO's default list ("*:1") allows one aggregator per host */
		MPI_Info_set(info, "cb_config_list", "*:*");
	} else {
		MPI_Info_set(info, "romio_cb_read", "disable");
		MPI_Info_set(info, "romio_cb_write", "disable");
		MPI_Info_set(info, "tessera_io_read", (char *)o->method);
		MPI_Info_set(info, "tessera_io_write", (char *)o->method);
		MPI_Info_set(info, "tessera_list_batch", "64");
	}
	rc = MPI_File_open(MPI_COMM_WORLD, o->name,
			   writing ? MPI_MODE_CREATE | MPI_MODE_RDWR : MPI_MODE_RDONLY, info, fh);
	MPI_Info_free(&info);
	if (rc != MPI_SUCCESS)
		die("cannot open the file (for reading the tile reader's frames: run -P first)");
}

/* -P for the patterns other than tile: the file's whole extent (the
 * ranks' last region's end) written contiguously, each rank its share in
 * pieces of 4 MiB; not measured. */
static void write_extent(const struct options *o, const struct job *j)
{
	long long end = j->reg.off[j->reg.n - 1] + j->reg.len[j->reg.n - 1], share, lo, hi;
	const long long piece = 4LL << 20;
	MPI_File fh;
	char *b = calloc(1, piece);

	if (!b)
		die("no memory for the file's pieces");
	MPI_Allreduce(MPI_IN_PLACE, &end, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
	share = (end + nprocs - 1) / nprocs;
	lo = share * rank;
	hi = lo + share < end ? lo + share : end;
	if (MPI_File_open(MPI_COMM_WORLD, o->name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
			  &fh) != MPI_SUCCESS)
		die("cannot create the pattern's file");
	for (long long at = lo; at < hi; at += piece) {
		int n = (int)(hi - at < piece ? hi - at : piece);

		if (MPI_File_write_at(fh, at, b, n, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			die("cannot write the pattern's file");
	}
	MPI_File_close(&fh);
	free(b);
}

/* The measured call (a write ends with a sync); seconds, max over ranks.
 * A failure ends the program naming MPI's error. */
static double timed_call(MPI_File fh, int coll, const struct job *j, char *buf)
{
	double t0 = MPI_Wtime(), t;
	int rc;

	if (j->writing) {
		rc = coll ? MPI_File_write_at_all(fh, 0, buf, 1, j->mem, MPI_STATUS_IGNORE)
			  : MPI_File_write_at(fh, 0, buf, 1, j->mem, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS)
			rc = MPI_File_sync(fh);
	} else {
		rc = coll ? MPI_File_read_at_all(fh, 0, buf, 1, j->mem, MPI_STATUS_IGNORE)
			  : MPI_File_read_at(fh, 0, buf, 1, j->mem, MPI_STATUS_IGNORE);
	}
	t = MPI_Wtime() - t0;
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len;

		MPI_Error_string(rc, msg, &len);
		die(msg);
	}
	return t;
}

/* The pattern's types and regions (die on an unknown one). */
static void build_pattern(const struct options *o, struct job *j)
{
	*j = (struct job){.writing = 1};
	if (!strcmp(o->pattern, "tile"))
		pattern_tile(o, j);
	else if (!strcmp(o->pattern, "block3d"))
		pattern_block3d(o, j);
	else if (!strcmp(o->pattern, "flash"))
		pattern_flash(o, j);
	else if (!strcmp(o->pattern, "cyclic"))
		pattern_cyclic(o, j);
	else if (!strcmp(o->pattern, "blockblock"))
		pattern_blockblock(o, j);
	else
		die("unknown pattern (tile, block3d, flash, cyclic, blockblock)");
	if (o->op != OP_DEFAULT)
		j->writing = o->op == OP_WRITE;
	MPI_Type_commit(&j->mem);
	MPI_Type_commit(&j->file);
}

int main(int argc, char **argv)
{
	struct options o;
	struct job j;
	long long resent;
	MPI_File fh;
	char *buf;
	double t;
	int coll;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
	if (parse_args(argc, argv, &o)) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_patterns -p tile|block3d|flash|cyclic|blockblock "
					"[-f FRAMES] [-L SIDE] [-b BLOCKS] [-S BYTES] [-A ACCESSES] "
					"[-o read|write] [-r REPS] [-P] NAME METHOD\n");
		MPI_Finalize();
		return 2;
	}
	if (!strcmp(o.pattern, "tile") && nprocs != 6)
		die("the tile reader runs on 6 ranks (a 3 x 2 display)");
	if (!strcmp(o.pattern, "tile") && o.prepare) {
		write_frames(&o);
		MPI_Finalize();
		return 0;
	}
	build_pattern(&o, &j);
	if (o.prepare) {
		write_extent(&o, &j);
		MPI_Finalize();
		return 0;
	}
	buf = make_buffer(j.mem);
	resent = resent_bytes(&j.reg);
	coll = !strcmp(o.method, "coll");
	open_file(&o, j.writing, &fh);
	MPI_File_set_view(fh, 0, MPI_BYTE, j.file, "native", MPI_INFO_NULL);
	for (int r = 0; r < o.reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t = timed_call(fh, coll, &j, buf);
		if (rank == 0)
			printf("op %s %lld %lld %.6f\n", j.writing ? "write" : "read", j.desired,
			       coll ? resent / nprocs : 0, t);
	}
	MPI_File_close(&fh);
	free(buf);
	free(j.reg.off);
	free(j.reg.len);
	MPI_Type_free(&j.mem);
	MPI_Type_free(&j.file);
	MPI_Finalize();
	return 0;
}
