/*
 * mpi_atomic.c - MPI atomic mode and shared file pointers through the
 * Tessera driver. Files are made with 4 KiB strips over 4 storage daemons,
 * so one access spans several daemons and only locks keep it whole.
 *
 *   mpi_atomic DIR atomicity [REPS [POSIX_VECTOR_REPS]]   (8 ranks) for
 *       every lock method x protocol: rank 0 overwrites 10,000 ints,
 *       contiguously and then through a vector view, while the other ranks
 *       read them; every read is all old or all new (REPS repetitions, 20
 *       by default; the posix methods lock the vector view's 10,000 ints
 *       one by one, 160,000 lock messages a repetition, about 5 s here, so
 *       they repeat that POSIX_VECTOR_REPS times, 3 by default)
 *   mpi_atomic DIR serial [ROUNDS]    (8 ranks) every rank writes its own
 *       byte value to a random noncontiguous view, overlapping the others',
 *       at once, independently or collectively; every maximal region of
 *       the file covered by the same writers holds one of their values, and
 *       the order of writers this implies agrees across regions (no cycle);
 *       and sieving writes of interleaved ints by all ranks at once
 *   mpi_atomic DIR shared             (8 ranks) write_shared of varying
 *       sizes leave no gap and no overlap; ordered writes land in rank
 *       order; read_shared returns each record once; read_ordered; seek,
 *       position, set_view, MPI_MODE_SEQUENTIAL, MPI_MODE_APPEND, the
 *       nonblocking and split forms; shared writes in atomic mode
 *   mpi_atomic DIR victim PIDFILE     (1 rank) takes a lock and writes for a
 *       long time under it (the test script kills it)
 *   mpi_atomic DIR survivors STARTED  atomic writes and reads over the
 *       victim's bytes; STARTED is created just before; prints when they
 *       ended (seconds since the epoch)
 *
 * DIR is a directory name the driver claims ("tessera:/x" or on the mount).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_check.h"

static const char *dir;
static int reps = 20, posix_vector_reps = 3, rounds = 20;

static const char *const lock_methods[] = {"posix", "list", "datatype", "posix-seq",
					    "list-split", "block"};
static const char *const lock_protocols[] = {"two-phase", "one-try", "alt-try"};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Open (creating with 4 KiB strips) with the lock method and protocol
 * given (NULL: the defaults) and more hints as key, value pairs. The
 * method "versioned" creates a versioned file instead (chapter 8: atomic
 * mode takes no locks on it). */
static int open_file(const char *leaf, int amode, const char *method, const char *protocol,
		     MPI_File *fh, MPI_Comm comm, ...)
{
	char name[512];
	MPI_Info info;
	const char *k;
	va_list ap;
	int rc;

	snprintf(name, sizeof(name), "%s/%s", dir, leaf);
	MPI_Info_create(&info);
	MPI_Info_set(info, "striping_unit", "4096");
	MPI_Info_set(info, "striping_factor", "4");
	if (method && !strcmp(method, "versioned"))
		MPI_Info_set(info, "tessera_versioned", "true");
	else if (method)
		MPI_Info_set(info, "tessera_lock_method", (char *)method);
	if (protocol)
		MPI_Info_set(info, "tessera_lock_protocol", (char *)protocol);
	va_start(ap, comm);
	while ((k = va_arg(ap, const char *)))
		MPI_Info_set(info, (char *)k, va_arg(ap, char *));
	va_end(ap);
	rc = MPI_File_open(comm, name, amode, info, fh);
	MPI_Info_free(&info);
	return rc;
}

static void remove_file(const char *leaf)
{
	char name[512];

	snprintf(name, sizeof(name), "%s/%s", dir, leaf);
	MPI_Barrier(MPI_COMM_WORLD);
	if (mc_rank == 0)
		MPI_File_delete(name, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
}

static int info_is(MPI_Info info, const char *key, const char *want)
{
	char v[MPI_MAX_INFO_VAL + 1];
	int flag = 0;

	MPI_Info_get(info, (char *)key, MPI_MAX_INFO_VAL, v, &flag);
	return flag && !strcmp(v, want);
}

/* ------------------------------------------------------------ atomicity */

#define N_INTS 10000

static const char *cur_method, *cur_protocol;

/* Rank 0 writes `value` everywhere while the others read; a read must be
 * uniform and old or new. Returns the torn reads seen on this rank. */
static int one_round(MPI_File fh, int old, int value, int *buf, int *saw_new)
{
	MPI_Status st;
	int torn = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	if (mc_rank == 0) {
		for (int i = 0; i < N_INTS; i++)
			buf[i] = value;
		if (MPI_File_write_at(fh, 0, buf, N_INTS, MPI_INT, &st) != MPI_SUCCESS)
			torn = -1;
	} else {
		if (MPI_File_read_at(fh, 0, buf, N_INTS, MPI_INT, &st) != MPI_SUCCESS)
			torn = -1;
		for (int i = 1; i < N_INTS && !torn; i++)
			if (buf[i] != buf[0])
				torn = 1;
		if (!torn && buf[0] != old && buf[0] != value)
			torn = 1;
		*saw_new += !torn && buf[0] == value;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	return torn;
}

/* Rank 0 writes N_INTS zeros; every rank learns whether it worked (a
 * failure seen by rank 0 alone must not leave the others at a barrier). */
static int zero_by_rank0(MPI_File fh, int *buf)
{
	int failed = 0;

	memset(buf, 0, N_INTS * sizeof(int));
	if (mc_rank == 0 &&
	    MPI_File_write_at(fh, 0, buf, N_INTS, MPI_INT, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		failed = 1;
	MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return failed ? -1 : 0;
}

static int atomic_rounds(MPI_File fh, int *buf, int base, int n, int *saw_new)
{
	int torn = 0;

	for (int r = 0; r < n && torn >= 0; r++) {
		int t = one_round(fh, base + r, base + r + 1, buf, saw_new), failed = t < 0;

		/* Every rank stops at the same round when one fails, or the
		 * others would wait at the next barrier for ever. */
		MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		torn = failed ? -1 : torn + t;
	}
	return torn;
}

static void test_atomicity(void)
{
	char leaf[64];
	int *buf = malloc(N_INTS * sizeof(int)), torn[2] = {0, 0}, saw_new = 0, all, news, flag;
	int vreps;
	MPI_Datatype vec;
	MPI_File fh;
	MPI_Info used;
	double t0 = MPI_Wtime();

	CHECK(buf, "out of memory");
	snprintf(leaf, sizeof(leaf), "atomicity-%s-%s", cur_method, cur_protocol);
	remove_file(leaf);
	CHECK_MPI(open_file(leaf, MPI_MODE_CREATE | MPI_MODE_RDWR, cur_method, cur_protocol, &fh,
			    MPI_COMM_WORLD, NULL));
	CHECK_MPI(MPI_File_set_atomicity(fh, 1));
	CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
	CHECK(flag == 1, "atomicity reads %d after set_atomicity(1)", flag);
	CHECK_MPI(MPI_File_get_info(fh, &used));
	flag = strcmp(cur_method, "versioned")
		       ? info_is(used, "tessera_lock_method", cur_method)
		       : info_is(used, "tessera_versioned", "true");
	flag = flag && info_is(used, "tessera_lock_protocol", cur_protocol);
	MPI_Info_free(&used);
	CHECK(flag, "MPI_File_get_info does not report tessera_lock_method=%s (or"
	      " tessera_versioned=true), tessera_lock_protocol=%s", cur_method, cur_protocol);
	/* Contiguous: starts from 0s. */
	CHECK(zero_by_rank0(fh, buf) == 0, "rank 0 could not write the initial zeros");
	torn[0] = atomic_rounds(fh, buf, 0, reps, &saw_new);
	/* Through a vector view (every other int), as ROMIO's atomicity.c. */
	MPI_Type_vector(N_INTS, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, vec, "native", MPI_INFO_NULL));
	CHECK(zero_by_rank0(fh, buf) == 0, "rank 0 could not write the initial zeros");
	/* posix and posix-seq: a lock request per int of the view */
	vreps = strncmp(cur_method, "posix", 5) ? reps : posix_vector_reps;
	torn[1] = atomic_rounds(fh, buf, 0, vreps, &saw_new);
	MPI_Type_free(&vec);
	CHECK_MPI(MPI_File_close(&fh));
	free(buf);
	MPI_Allreduce(&saw_new, &news, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, torn, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	CHECK(torn[0] >= 0 && torn[1] >= 0, "an I/O call failed (see above)");
	MPI_Allreduce(&torn[0], &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (mc_rank == 0)
		printf("    %s %s: %d reads of %d ints in %.2f s, %d saw the new values\n",
		       cur_method, cur_protocol, (reps + vreps) * (mc_size - 1), N_INTS,
		       MPI_Wtime() - t0, news);
	CHECK(torn[0] == 0, "%d contiguous reads mixed old and new values", torn[0]);
	CHECK(torn[1] == 0, "%d reads through the vector view mixed old and new values",
	      torn[1]);
}

/* Not a check: the same without atomic mode, to show what the locks
 * prevent (mixed reads are likely here, not certain). */
static void test_without_atomic_mode(void)
{
	int *buf = malloc(N_INTS * sizeof(int)), saw_new = 0, torn, all;
	MPI_File fh;

	CHECK(buf, "out of memory");
	remove_file("not-atomic");
	CHECK_MPI(open_file("not-atomic", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	CHECK(zero_by_rank0(fh, buf) == 0, "rank 0 could not write the initial zeros");
	torn = atomic_rounds(fh, buf, 0, reps, &saw_new);
	CHECK_MPI(MPI_File_close(&fh));
	free(buf);
	MPI_Allreduce(&torn, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (mc_rank == 0)
		printf("    without atomic mode: %d of %d reads mixed old and new values\n", all,
		       reps * (mc_size - 1));
}

/* ------------------------------------------------------------ serializability */

#define SER_FILE 65536
#define SER_MAX_BLOCKS 48

static int cur_coll;

/* A random view of this rank: nb sorted disjoint blocks in [0, SER_FILE). */
static int random_blocks(uint64_t *seed, int *lens, MPI_Aint *displs)
{
	int nb = 1 + (int)(rnd(seed) % SER_MAX_BLOCKS), cuts[2 * SER_MAX_BLOCKS], n = 0;

	while (n < 2 * nb) {
		int c = (int)(rnd(seed) % (SER_FILE + 1)), dup = 0;

		for (int i = 0; i < n; i++)
			dup |= cuts[i] == c;
		if (!dup)
			cuts[n++] = c;
	}
	for (int i = 1; i < n; i++) /* sort */
		for (int j = i; j > 0 && cuts[j] < cuts[j - 1]; j--) {
			int t = cuts[j];

			cuts[j] = cuts[j - 1];
			cuts[j - 1] = t;
		}
	for (int b = 0; b < nb; b++) {
		displs[b] = cuts[2 * b];
		lens[b] = cuts[2 * b + 1] - cuts[2 * b];
	}
	return nb;
}

/* Checks the final file against every writer's blocks; the number of
 * regions written by two or more (contended), or -1 with why set. */
static int check_serial(const unsigned char *file, const int *nbs, const int *lens,
			const MPI_Aint *displs, int nprocs, char *why, size_t whylen)
{
	unsigned mask[SER_FILE];
	int before[32][32], contended = 0;

	memset(mask, 0, sizeof(mask));
	memset(before, 0, sizeof(before));
	for (int r = 0, k = 0; r < nprocs; k += nbs[r], r++)
		for (int b = 0; b < nbs[r]; b++)
			for (int i = 0; i < lens[k + b]; i++)
				mask[displs[k + b] + i] |= 1u << r;
	for (int i = 0; i < SER_FILE;) {
		int j = i, v = file[i], w = v - 1;

		while (j < SER_FILE && mask[j] == mask[i] && file[j] == v)
			j++;
		if (!mask[i]) {
			if (v) {
				snprintf(why, whylen, "byte %d, written by nobody, holds %d", i, v);
				return -1;
			}
		} else {
			if (w < 0 || w >= nprocs || !(mask[i] >> w & 1)) {
				snprintf(why, whylen, "byte %d holds %d, not a value of its writers "
					 "(mask %#x)", i, v, mask[i]);
				return -1;
			}
			if (j < SER_FILE && mask[j] == mask[i]) {
				snprintf(why, whylen, "bytes %d and %d, both written by mask %#x, hold "
					 "%d and %d: a write was cut in two", j - 1, j, mask[i], v,
					 file[j]);
				return -1;
			}
			for (int r = 0; r < nprocs; r++)
				if (r != w && (mask[i] >> r & 1))
					before[r][w] = 1; /* r's write came before w's */
			contended += (mask[i] & (mask[i] - 1)) != 0;
		}
		i = j;
	}
	/* The order must be a partial order: no cycle (transitive closure). */
	for (int k = 0; k < nprocs; k++)
		for (int i = 0; i < nprocs; i++)
			for (int j = 0; j < nprocs; j++)
				if (before[i][k] && before[k][j])
					before[i][j] = 1;
	for (int i = 0; i < nprocs; i++)
		if (before[i][i]) {
			snprintf(why, whylen, "the writers' order has a cycle through rank %d: "
				 "regions disagree on who wrote last", i);
			return -1;
		}
	return contended;
}

/* One round: everyone writes its view at once; rank 0 checks. Returns the
 * contended regions (rank 0), or -1. */
static int serial_round(MPI_File fh, uint64_t *seed, char *why, size_t whylen)
{
	int lens[SER_MAX_BLOCKS], nb, total = 0, *all_nb = NULL, *all_lens = NULL, *counts = NULL,
	    *offs = NULL, sum = 0, result = 0, ok = 1;
	MPI_Aint displs[SER_MAX_BLOCKS], *all_displs = NULL;
	unsigned char *buf, *file = NULL;
	MPI_Datatype type;

	nb = random_blocks(seed, lens, displs);
	for (int b = 0; b < nb; b++)
		total += lens[b];
	buf = malloc(total ? total : 1);
	memset(buf, mc_rank + 1, total);
	MPI_Type_create_hindexed(nb, lens, displs, MPI_BYTE, &type);
	MPI_Type_commit(&type);
	if (MPI_File_set_size(fh, 0) != MPI_SUCCESS ||
	    MPI_File_set_view(fh, 0, MPI_BYTE, type, "native", MPI_INFO_NULL) != MPI_SUCCESS)
		ok = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	if (ok && (cur_coll ? MPI_File_write_at_all(fh, 0, buf, total, MPI_BYTE, MPI_STATUS_IGNORE)
			    : MPI_File_write_at(fh, 0, buf, total, MPI_BYTE, MPI_STATUS_IGNORE)) !=
		  MPI_SUCCESS)
		ok = 0;
	MPI_Type_free(&type);
	free(buf);
	if (MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL) != MPI_SUCCESS)
		ok = 0;
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!ok) {
		snprintf(why, whylen, "an I/O call failed (see above)");
		return -1;
	}
	/* Everyone's blocks to rank 0. */
	if (mc_rank == 0) {
		all_nb = malloc(mc_size * sizeof(int));
		counts = malloc(mc_size * sizeof(int));
		offs = malloc(mc_size * sizeof(int));
	}
	MPI_Gather(&nb, 1, MPI_INT, all_nb, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (mc_rank == 0) {
		for (int r = 0; r < mc_size; r++) {
			offs[r] = sum;
			counts[r] = all_nb[r];
			sum += all_nb[r];
		}
		all_lens = malloc(sum * sizeof(int));
		all_displs = malloc(sum * sizeof(MPI_Aint));
		file = calloc(1, SER_FILE);
	}
	MPI_Gatherv(lens, nb, MPI_INT, all_lens, counts, offs, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Gatherv(displs, nb, MPI_AINT, all_displs, counts, offs, MPI_AINT, 0, MPI_COMM_WORLD);
	if (mc_rank == 0) {
		if (MPI_File_read_at(fh, 0, file, SER_FILE, MPI_BYTE, MPI_STATUS_IGNORE) !=
		    MPI_SUCCESS) {
			snprintf(why, whylen, "reading the file back failed");
			result = -1;
		} else {
			result = check_serial(file, all_nb, all_lens, all_displs, mc_size, why,
					      whylen);
		}
	}
	free(all_nb);
	free(counts);
	free(offs);
	free(all_lens);
	free(all_displs);
	free(file);
	MPI_Bcast(&result, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return result;
}

static int serial_rounds(int atomic, uint64_t seed, int n, int *contended, char *why,
			 size_t whylen)
{
	char leaf[96];
	MPI_File fh;
	int bad = 0;

	snprintf(leaf, sizeof(leaf), "serial-%s-%s-%s-%d", cur_method, cur_protocol,
		 cur_coll ? "coll" : "indep", atomic);
	remove_file(leaf);
	if (open_file(leaf, MPI_MODE_CREATE | MPI_MODE_RDWR, cur_method, cur_protocol, &fh,
		      MPI_COMM_WORLD, NULL) != MPI_SUCCESS ||
	    MPI_File_set_atomicity(fh, atomic) != MPI_SUCCESS) {
		snprintf(why, whylen, "open or set_atomicity failed");
		return -1;
	}
	*contended = 0;
	for (int r = 0; r < n; r++) {
		int c = serial_round(fh, &seed, why, whylen);

		if (c < 0) {
			bad++;
			if (atomic)
				break;
		} else {
			*contended += c;
		}
	}
	MPI_File_close(&fh);
	return bad;
}

static void test_serial(void)
{
	uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(mc_rank + 1) + (uint64_t)cur_coll;
	int contended, bad;
	char why[512] = "";
	double t0 = MPI_Wtime();

	for (const char *p = cur_method; *p; p++)
		seed = seed * 31 + (uint64_t)*p;
	for (const char *p = cur_protocol; *p; p++)
		seed = seed * 31 + (uint64_t)*p;
	bad = serial_rounds(1, seed, rounds, &contended, why, sizeof(why));
	if (mc_rank == 0)
		printf("    %s %s %s: %d rounds in %.2f s, %d regions written by several ranks\n",
		       cur_method, cur_protocol, cur_coll ? "collective" : "independent", rounds,
		       MPI_Wtime() - t0, contended);
	CHECK(bad == 0, "%s", why);
}

/* Not a check: the same without atomic mode. */
static void test_serial_without_atomic_mode(void)
{
	int contended, bad;
	char why[512] = "";

	cur_method = "datatype";
	cur_protocol = "alt-try";
	cur_coll = 0;
	bad = serial_rounds(0, 99 + (uint64_t)mc_rank, 4 * rounds, &contended, why, sizeof(why));
	if (mc_rank == 0)
		printf("    without atomic mode: %d of %d rounds not serializable%s%s\n", bad,
		       4 * rounds, bad ? ", e.g.: " : "", bad ? why : "");
}

/* Sieving writes at once: every rank owns every P-th int and writes them
 * all through a window that holds the others' (tessera_io_write=sieve,
 * 16 KiB windows over 64 KiB), round after round. Each window is locked
 * around its read-modify-write, so every int ends with its owner's last
 * value; without the locks writers would undo each other. Not atomic
 * mode: the locks are the sieving's own. */
#define SIEVE_INTS 2048 /* per rank */
#define SIEVE_ROUNDS 10

static int sieve_value(int rank, int round, int i)
{
	return round * 1000000 + rank * 10000 + i;
}

/* The same on a versioned file: the driver makes each sieving write one
 * list write (a version), with no lock and no window read back. */
static const char *sieve_method;

static void test_sieve_concurrent(void)
{
	int *buf = malloc(SIEVE_INTS * sizeof(int)), *all = NULL, ok = 1;
	const char *leaf = sieve_method ? "sieve-versioned" : "sieve";
	MPI_Datatype vec, tiled;
	MPI_File fh;

	CHECK(buf, "out of memory");
	remove_file(leaf);
	CHECK_MPI(open_file(leaf, MPI_MODE_CREATE | MPI_MODE_RDWR, sieve_method, NULL, &fh,
			    MPI_COMM_WORLD, "tessera_io_write", "sieve", "ind_wr_buffer_size", "16384",
			    NULL));
	MPI_Type_vector(SIEVE_INTS, 1, mc_size, MPI_INT, &vec);
	MPI_Type_create_resized(vec, 0, (MPI_Aint)sizeof(int) * SIEVE_INTS * mc_size, &tiled);
	MPI_Type_commit(&tiled);
	CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)sizeof(int) * mc_rank, MPI_INT, tiled, "native",
				    MPI_INFO_NULL));
	for (int r = 0; r < SIEVE_ROUNDS && ok; r++) {
		for (int i = 0; i < SIEVE_INTS; i++)
			buf[i] = sieve_value(mc_rank, r, i);
		MPI_Barrier(MPI_COMM_WORLD);
		ok = MPI_File_write_at(fh, 0, buf, SIEVE_INTS, MPI_INT, MPI_STATUS_IGNORE) ==
		     MPI_SUCCESS;
	}
	MPI_Type_free(&vec);
	MPI_Type_free(&tiled);
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	CHECK(ok, "a sieving write failed (see above)");
	CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
	if (mc_rank == 0) {
		all = malloc(sizeof(int) * SIEVE_INTS * mc_size);
		ok = all && MPI_File_read_at(fh, 0, all, SIEVE_INTS * mc_size, MPI_INT,
					     MPI_STATUS_IGNORE) == MPI_SUCCESS;
		for (int k = 0; ok && k < SIEVE_INTS * mc_size; k++)
			if (all[k] != sieve_value(k % mc_size, SIEVE_ROUNDS - 1, k / mc_size)) {
				mc_fail("int %d is %d, expected %d (rank %d's last): a sieving write "
					"undid another", k, all[k],
					sieve_value(k % mc_size, SIEVE_ROUNDS - 1, k / mc_size),
					k % mc_size);
				ok = 0;
			}
		free(all);
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(buf);
	CHECK_MPI(MPI_File_close(&fh));
	CHECK(ok, "the file does not hold every rank's last values");
}

/* ------------------------------------------------------------ shared pointers */

#define REC_MAGIC 0x52454331u /* "REC1" */
#define WRITES 1000

struct rec_hdr {
	uint32_t magic, rank, seq, len; /* len: the whole record */
};

static uint32_t rec_len(int rank, int seq)
{
	return (uint32_t)(sizeof(struct rec_hdr) + (uint32_t)(seq * 37 + rank * 101) % 300);
}

static void rec_fill(unsigned char *b, int rank, int seq, uint32_t len)
{
	struct rec_hdr h = {REC_MAGIC, (uint32_t)rank, (uint32_t)seq, len};

	memcpy(b, &h, sizeof(h));
	for (uint32_t i = sizeof(h); i < len; i++)
		b[i] = (unsigned char)(rank * 31 + seq + i);
}

/* A record at b (avail bytes): its length, or 0 if it is not whole and
 * right. */
static uint32_t rec_check(const unsigned char *b, uint64_t avail, struct rec_hdr *h)
{
	if (avail < sizeof(*h))
		return 0;
	memcpy(h, b, sizeof(*h));
	if (h->magic != REC_MAGIC || h->len < sizeof(*h) || h->len > avail)
		return 0;
	for (uint32_t i = sizeof(*h); i < h->len; i++)
		if (b[i] != (unsigned char)(h->rank * 31 + h->seq + i))
			return 0;
	return h->len;
}

/* Rank 0 reads the whole file; every rank learns its size. */
static unsigned char *read_all(MPI_File fh, MPI_Offset *size)
{
	unsigned char *b = NULL;
	int ok = 1;

	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_File_get_size(fh, size);
	if (mc_rank == 0) {
		b = malloc(*size ? (size_t)*size : 1);
		ok = b && MPI_File_read_at(fh, 0, b, (int)*size, MPI_BYTE, MPI_STATUS_IGNORE) ==
				  MPI_SUCCESS;
		if (!ok) {
			free(b);
			b = NULL;
		}
	}
	return b;
}

/* Parse the file as records: whole, no gap, no overlap, each (rank, seq)
 * of `per_rank` once. Rank 0's verdict; why says what is wrong. */
static int records_tile(MPI_File fh, int per_rank, char *why, size_t whylen)
{
	MPI_Offset size;
	unsigned char *b = read_all(fh, &size), *seen = NULL;
	uint64_t at = 0, n = 0;
	struct rec_hdr h;
	int ok = 1;

	if (mc_rank == 0) {
		seen = calloc((size_t)mc_size * per_rank, 1);
		if (!b || !seen) {
			snprintf(why, whylen, "reading the file failed");
			ok = 0;
		}
		while (ok && at < (uint64_t)size) {
			uint32_t len = rec_check(b + at, (uint64_t)size - at, &h);

			if (!len) {
				snprintf(why, whylen, "no whole record at byte %llu of %lld (a gap or "
					 "an overlap)", (unsigned long long)at, (long long)size);
				ok = 0;
			} else if ((int)h.rank >= mc_size || (int)h.seq >= per_rank ||
				   seen[h.rank * per_rank + h.seq]++) {
				snprintf(why, whylen, "record %u of rank %u at byte %llu is there twice "
					 "or should not be", h.seq, h.rank, (unsigned long long)at);
				ok = 0;
			}
			at += len;
			n++;
		}
		if (ok && n != (uint64_t)mc_size * per_rank) {
			snprintf(why, whylen, "%llu records, expected %d", (unsigned long long)n,
				 mc_size * per_rank);
			ok = 0;
		}
	}
	free(b);
	free(seen);
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return ok;
}

/* Every rank appends WRITES records of varying size through the shared
 * pointer (every tenth nonblocking): they tile the file. */
static void test_write_shared(void)
{
	unsigned char buf[512];
	MPI_Offset pos, size;
	MPI_Request req;
	MPI_File fh;
	char why[256];
	double t0 = MPI_Wtime();

	remove_file("shared");
	CHECK_MPI(open_file("shared", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	int ok = 1;

	/* (no early return: the others would wait in a collective call) */
	for (int i = 0; i < WRITES && ok; i++) {
		uint32_t len = rec_len(mc_rank, i);

		rec_fill(buf, mc_rank, i, len);
		if (i % 10 == 9)
			ok = MPI_File_iwrite_shared(fh, buf, (int)len, MPI_BYTE, &req) ==
				     MPI_SUCCESS &&
			     MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS;
		else
			ok = MPI_File_write_shared(fh, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE) ==
			     MPI_SUCCESS;
	}
	CHECK(ok, "write_shared failed (see above)");
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
	ok = records_tile(fh, WRITES, why, sizeof(why));

	if (mc_rank == 0)
		printf("    %d write_shared calls on %d ranks in %.2f s\n", WRITES * mc_size, mc_size,
		       MPI_Wtime() - t0);
	CHECK(ok, "%s", why);
	CHECK_MPI(MPI_File_get_size(fh, &size));
	CHECK(pos == size, "the shared pointer is at %lld, the file's end at %lld", (long long)pos,
	      (long long)size);
	CHECK_MPI(MPI_File_close(&fh));
}

/* Fixed-size records, then read_shared (and iread_shared) until the end:
 * each record is read by exactly one rank. */
#define READ_RECS 100
#define READ_LEN 64

static void test_read_shared(void)
{
	unsigned char buf[READ_LEN];
	int mine = 0, *got = malloc(sizeof(int) * READ_RECS * 8 * 2), total, count, *all = NULL,
	    *counts = NULL, *offs = NULL, ok = 1;
	MPI_Request req;
	MPI_Status st;
	MPI_File fh;

	CHECK(got && mc_size <= 8, "needs at most 8 ranks");
	remove_file("read-shared");
	CHECK_MPI(open_file("read-shared", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	for (int i = 0; i < READ_RECS; i++) {
		rec_fill(buf, mc_rank, i, READ_LEN);
		CHECK_MPI(MPI_File_write_shared(fh, buf, READ_LEN, MPI_BYTE, MPI_STATUS_IGNORE));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
	/* (no early return: the others would wait in a collective call) */
	for (int i = 0; ok && mine < READ_RECS * 8 * 2; i++) {
		struct rec_hdr h;

		if (i % 7 == 3)
			ok = MPI_File_iread_shared(fh, buf, READ_LEN, MPI_BYTE, &req) == MPI_SUCCESS &&
			     MPI_Wait(&req, &st) == MPI_SUCCESS;
		else
			ok = MPI_File_read_shared(fh, buf, READ_LEN, MPI_BYTE, &st) == MPI_SUCCESS;
		count = 0;
		if (ok)
			MPI_Get_count(&st, MPI_BYTE, &count);
		if (count == 0)
			break;
		if (count != READ_LEN || rec_check(buf, READ_LEN, &h) != READ_LEN) {
			mc_fail("read_shared %d returned %d bytes, not a whole record", i, count);
			ok = 0;
			break;
		}
		got[mine++] = (int)(h.rank * READ_RECS + h.seq);
	}
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (mc_rank == 0) {
		all = malloc(sizeof(int) * (total ? total : 1));
		counts = malloc(sizeof(int) * mc_size);
		offs = malloc(sizeof(int) * mc_size);
	}
	MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (mc_rank == 0)
		for (int r = 0, s = 0; r < mc_size; s += counts[r], r++)
			offs[r] = s;
	MPI_Gatherv(got, mine, MPI_INT, all, counts, offs, MPI_INT, 0, MPI_COMM_WORLD);
	if (mc_rank == 0 && ok) {
		char *seen = calloc(READ_RECS * mc_size, 1);

		ok = total == READ_RECS * mc_size;
		for (int i = 0; ok && i < total; i++)
			ok = all[i] >= 0 && all[i] < READ_RECS * mc_size && !seen[all[i]]++;
		free(seen);
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(all);
	free(counts);
	free(offs);
	free(got);
	CHECK(ok, "%d records read in all, expected each of %d once", total, READ_RECS * mc_size);
	CHECK_MPI(MPI_File_close(&fh));
}

/* Ordered writes (blocking and split) land in rank order, round after
 * round; read_ordered gives each rank its own records back. */
#define ORD_ROUNDS 40

static void test_ordered(void)
{
	unsigned char buf[512];
	MPI_Offset size;
	MPI_Status st;
	MPI_File fh;
	unsigned char *b;
	int ok = 1, count;

	remove_file("ordered");
	CHECK_MPI(open_file("ordered", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	for (int r = 0; r < ORD_ROUNDS; r++) {
		uint32_t len = rec_len(mc_rank, r);

		rec_fill(buf, mc_rank, r, len);
		if (r % 4 == 3) {
			CHECK_MPI(MPI_File_write_ordered_begin(fh, buf, (int)len, MPI_BYTE));
			CHECK_MPI(MPI_File_write_ordered_end(fh, buf, &st));
		} else {
			CHECK_MPI(MPI_File_write_ordered(fh, buf, (int)len, MPI_BYTE, &st));
		}
	}
	b = read_all(fh, &size);
	if (mc_rank == 0) {
		uint64_t at = 0;
		struct rec_hdr h;

		ok = b != NULL;
		for (int r = 0; ok && r < ORD_ROUNDS; r++)
			for (int k = 0; ok && k < mc_size; k++) {
				uint32_t len = rec_check(b + at, (uint64_t)size - at, &h);

				ok = len && (int)h.rank == k && (int)h.seq == r;
				if (!ok)
					fprintf(stderr, "    at byte %llu: expected round %d of rank %d, "
						"found %s (rank %u, round %u)\n", (unsigned long long)at,
						r, k, len ? "another" : "no whole record", h.rank, h.seq);
				at += len;
			}
		ok = ok && at == (uint64_t)size;
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(b);
	CHECK(ok, "ordered writes are not in rank order");
	/* Read them back in order: each rank its own record of each round. */
	CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
	/* (collective calls: every rank goes through every round) */
	for (int r = 0; r < ORD_ROUNDS; r++) {
		uint32_t len = rec_len(mc_rank, r);
		struct rec_hdr h;
		int rc;

		if (r % 4 == 1) {
			rc = MPI_File_read_ordered_begin(fh, buf, (int)len, MPI_BYTE);
			if (rc == MPI_SUCCESS)
				rc = MPI_File_read_ordered_end(fh, buf, &st);
		} else {
			rc = MPI_File_read_ordered(fh, buf, (int)len, MPI_BYTE, &st);
		}
		count = 0;
		if (rc == MPI_SUCCESS)
			MPI_Get_count(&st, MPI_BYTE, &count);
		if (ok && !(count == (int)len && rec_check(buf, len, &h) == len &&
			    (int)h.rank == mc_rank && (int)h.seq == r)) {
			mc_fail("read_ordered of round %d gave %d bytes, not this rank's record",
				r, count);
			ok = 0;
		}
	}
	CHECK_MPI(MPI_File_close(&fh));
}

/* The shared pointer, once every rank has read it (the next call may move
 * it: seek_shared's rank 0 does not wait for the others to arrive). */
static int position_shared(MPI_File fh, MPI_Offset *pos)
{
	int rc = MPI_File_get_position_shared(fh, pos);

	MPI_Barrier(MPI_COMM_WORLD);
	return rc;
}

/* Seek, position, set_view (which resets the pointer), MODE_APPEND and
 * MODE_SEQUENTIAL. */
static void test_pointer_calls(void)
{
	MPI_Offset pos, size;
	MPI_File fh;
	int v = mc_rank, vals[64], ok = 1;

	remove_file("pointer");
	CHECK_MPI(open_file("pointer", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	CHECK_MPI(position_shared(fh, &pos));
	CHECK(pos == 0, "a new open's shared pointer is at %lld", (long long)pos);
	CHECK_MPI(MPI_File_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(position_shared(fh, &pos));
	CHECK(pos == 4 * mc_size, "after %d ints the pointer is at %lld", mc_size, (long long)pos);
	CHECK_MPI(MPI_File_seek_shared(fh, 100, MPI_SEEK_SET));
	CHECK_MPI(position_shared(fh, &pos));
	CHECK(pos == 100, "seek_shared(100) then position %lld", (long long)pos);
	CHECK_MPI(MPI_File_seek_shared(fh, -40, MPI_SEEK_CUR));
	CHECK_MPI(position_shared(fh, &pos));
	CHECK(pos == 60, "seek_shared(-40, CUR) from 100: %lld", (long long)pos);
	CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
	CHECK_MPI(position_shared(fh, &pos));
	CHECK_MPI(MPI_File_get_size(fh, &size));
	CHECK(pos == size, "seek_shared(END): %lld, size %lld", (long long)pos, (long long)size);
	/* A view in ints: the pointer counts etypes, from 0 again. */
	CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
	CHECK_MPI(position_shared(fh, &pos));
	CHECK(pos == 0, "set_view left the shared pointer at %lld", (long long)pos);
	CHECK_MPI(MPI_File_read_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(position_shared(fh, &pos));
	CHECK(pos == mc_size, "after %d reads of one int the pointer is at %lld etypes", mc_size,
	      (long long)pos);
	CHECK_MPI(MPI_File_close(&fh));

	/* Another open starts at 0; MODE_APPEND at the end. */
	CHECK_MPI(open_file("pointer", MPI_MODE_RDWR | MPI_MODE_APPEND, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
	CHECK(pos == 4 * mc_size, "MODE_APPEND: the shared pointer is at %lld, the end at %d",
	      (long long)pos, 4 * mc_size);
	CHECK_MPI(MPI_File_close(&fh));

	/* MODE_SEQUENTIAL: only shared-pointer access; ints in some order. */
	remove_file("sequential");
	CHECK_MPI(open_file("sequential", MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
			    NULL, NULL, &fh, MPI_COMM_WORLD, NULL));
	for (int i = 0; i < 8; i++) {
		v = mc_rank * 8 + i;
		CHECK_MPI(MPI_File_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
	}
	CHECK_MPI(MPI_File_close(&fh));
	CHECK(mc_size <= 8, "needs at most 8 ranks");
	CHECK_MPI(open_file("sequential", MPI_MODE_RDONLY, NULL, NULL, &fh, MPI_COMM_WORLD, NULL));
	CHECK_MPI(MPI_File_read_at_all(fh, 0, vals, 8 * mc_size, MPI_INT, MPI_STATUS_IGNORE));
	CHECK_MPI(MPI_File_close(&fh));
	{
		char seen[64] = {0};

		for (int i = 0; i < 8 * mc_size; i++)
			ok = ok && vals[i] >= 0 && vals[i] < 8 * mc_size && !seen[vals[i]]++;
	}
	CHECK(ok, "MODE_SEQUENTIAL: the file does not hold each int once");
}

/* Shared writes in atomic mode: ROMIO's generic code takes an exclusive
 * lock around each (routed to the driver), which the driver's own write
 * does not take again. */
static void test_shared_atomic(void)
{
	unsigned char buf[512];
	MPI_File fh;
	char why[256];
	int ok;

	remove_file("shared-atomic");
	CHECK_MPI(open_file("shared-atomic", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh,
			    MPI_COMM_WORLD, NULL));
	CHECK_MPI(MPI_File_set_atomicity(fh, 1));
	for (int i = 0; i < 100; i++) {
		uint32_t len = rec_len(mc_rank, i);

		rec_fill(buf, mc_rank, i, len);
		CHECK_MPI(MPI_File_write_shared(fh, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE));
	}
	ok = records_tile(fh, 100, why, sizeof(why));
	CHECK(ok, "%s", why);
	CHECK_MPI(MPI_File_close(&fh));
}

/* ------------------------------------------------------------ a killed holder */

#define VICTIM_BLOCKS 1000000

static double epoch_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One rank: an atomic write of many small pieces one call each (the posix
 * method), so that it holds its lock for a long time. */
static int victim(const char *pidfile)
{
	MPI_Datatype vec;
	MPI_File fh;
	char *buf = malloc(8 * VICTIM_BLOCKS);
	FILE *f;

	if (!buf || open_file("killed", MPI_MODE_CREATE | MPI_MODE_RDWR, "datatype", "alt-try",
			      &fh, MPI_COMM_SELF, "tessera_io_write", "posix", NULL) != MPI_SUCCESS)
		return 1;
	MPI_File_set_atomicity(fh, 1);
	MPI_Type_vector(VICTIM_BLOCKS, 8, 16, MPI_BYTE, &vec);
	MPI_Type_commit(&vec);
	MPI_File_set_view(fh, 0, MPI_BYTE, vec, "native", MPI_INFO_NULL);
	memset(buf, 'v', 8 * VICTIM_BLOCKS);
	f = fopen(pidfile, "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	MPI_File_write_at(fh, 0, buf, 8 * VICTIM_BLOCKS, MPI_BYTE, MPI_STATUS_IGNORE);
	printf("victim: the write finished before it was killed\n");
	return 1;
}

/* Atomic writes over the victim's bytes: they wait for its lease, then
 * go on. Each rank writes and reads back its own 4 KiB. */
static const char *started_file;

static void test_survivors(void)
{
	char out[4096], in[4096];
	MPI_File fh;
	double end;

	CHECK_MPI(open_file("killed", MPI_MODE_RDWR, NULL, NULL, &fh, MPI_COMM_WORLD, NULL));
	CHECK_MPI(MPI_File_set_atomicity(fh, 1));
	memset(out, 'a' + mc_rank, sizeof(out));
	MPI_Barrier(MPI_COMM_WORLD);
	if (mc_rank == 0) {
		FILE *f = fopen(started_file, "w");

		if (f)
			fclose(f);
	}
	CHECK_MPI(MPI_File_write_at(fh, 4096 * mc_rank, out, 4096, MPI_BYTE, MPI_STATUS_IGNORE));
	CHECK_MPI(MPI_File_read_at(fh, 4096 * mc_rank, in, 4096, MPI_BYTE, MPI_STATUS_IGNORE));
	CHECK(!memcmp(in, out, sizeof(in)), "rank %d read back other bytes", mc_rank);
	end = epoch_now();
	MPI_Allreduce(MPI_IN_PLACE, &end, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (mc_rank == 0)
		printf("survivors-ended-at %.3f\n", end);
	CHECK_MPI(MPI_File_close(&fh));
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	const char *what;
	char name[128];
	int rc;

	MPI_Init(&argc, &argv);
	mc_init();
	if (argc < 3) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpi_atomic DIR atomicity|serial|shared|victim|"
				"survivors [ARG]\n");
		MPI_Finalize();
		return 2;
	}
	dir = argv[1];
	what = argv[2];
	if (!strcmp(what, "victim")) {
		rc = argc > 3 ? victim(argv[3]) : 2;
		MPI_Finalize();
		return rc;
	}
	if (!strcmp(what, "atomicity")) {
		if (argc > 3)
			reps = atoi(argv[3]);
		if (argc > 4)
			posix_vector_reps = atoi(argv[4]);
		for (size_t m = 0; m < sizeof(lock_methods) / sizeof(lock_methods[0]); m++)
			for (int p = 0; p < 3; p++) {
				cur_method = lock_methods[m];
				cur_protocol = lock_protocols[p];
				snprintf(name, sizeof(name), "atomicity_%s_%s", cur_method, cur_protocol);
				mc_test(name, test_atomicity);
			}
		/* a versioned file: versions, not locks (the protocol is unused) */
		cur_method = "versioned";
		cur_protocol = "alt-try";
		mc_test("atomicity_versioned", test_atomicity);
		mc_test("without_atomic_mode_for_comparison", test_without_atomic_mode);
	} else if (!strcmp(what, "serial")) {
		if (argc > 3)
			rounds = atoi(argv[3]);
		for (size_t m = 0; m < sizeof(lock_methods) / sizeof(lock_methods[0]); m++)
			for (int p = 0; p < 3; p++)
				for (int c = 0; c < 2; c++) {
					cur_method = lock_methods[m];
					cur_protocol = lock_protocols[p];
					cur_coll = c;
					snprintf(name, sizeof(name), "serializable_%s_%s_%s", cur_method,
						 cur_protocol, c ? "collective" : "independent");
					mc_test(name, test_serial);
				}
		for (int c = 0; c < 2; c++) {
			cur_method = "versioned";
			cur_protocol = "alt-try";
			cur_coll = c;
			mc_test(c ? "serializable_versioned_collective"
				  : "serializable_versioned_independent", test_serial);
		}
		mc_test("serial_without_atomic_mode_for_comparison",
			test_serial_without_atomic_mode);
		mc_test("sieving_writes_at_once", test_sieve_concurrent);
		sieve_method = "versioned";
		mc_test("sieving_writes_at_once_versioned", test_sieve_concurrent);
	} else if (!strcmp(what, "shared")) {
		mc_test("write_shared_tiles_the_file", test_write_shared);
		mc_test("read_shared_reads_each_record_once", test_read_shared);
		mc_test("ordered_in_rank_order", test_ordered);
		mc_test("seek_position_view_append_sequential", test_pointer_calls);
		mc_test("write_shared_in_atomic_mode", test_shared_atomic);
	} else if (!strcmp(what, "survivors") && argc > 3) {
		started_file = argv[3];
		mc_test("killed_holder_survivors_go_on", test_survivors);
	} else {
		if (mc_rank == 0)
			fprintf(stderr, "mpi_atomic: unknown test %s\n", what);
		MPI_Finalize();
		return 2;
	}
	rc = mc_finish();
	MPI_Finalize();
	return rc;
}
