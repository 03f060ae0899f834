/*
 * bench_tlk.c - acquire and release rates of the lock table alone (no
 * network, one thread), on the lock benchmark of the dissertation's Figs.
 * 7.3 and 7.4: 128K 1-byte locks spaced 64 B and 4096 B apart.
 *
 *   tessera-bench-tlk [-n LOCKS] [-r REPEATS]
 *
 * Cases, each for both spacings:
 *   list/datatype  one request holding every lock (what one list or
 *                  datatype lock request becomes on a server): create +
 *                  nonblocking acquire, then one full release;
 *   32 requests    the same locks split over 32 requests, as one server of
 *                  a 32-server run holds 32 clients' shares;
 *   POSIX          one request per lock (create + acquire, then release);
 *   two-phase      one request acquired by blocking rounds, each capped at
 *                  the next 64 KiB strip boundary, as two-phase rounds are
 *                  (1024 locks per round at 64 B, 16 at 4096 B);
 *   beside 128K    the list case next to another request's 128K locks,
 *                  interleaved (every check searches a full tree);
 *   partial        the list case, then a partial release of the upper half
 *                  (the optimistic round's release), then the rest.
 * Rates are locks per second over the best of REPEATS runs.
 *
 * Figures, not tests: nothing here asserts a time.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tlk.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "tessera-bench-tlk: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static void check(const char *what, int rc)
{
	if (rc)
		die(what, rc);
}

/* `n` 1-byte locks from `first`, `spacing` apart; logical = object here. */
static struct tlk_range *make_ranges(size_t n, uint64_t first, uint64_t spacing)
{
	struct tlk_range *g = malloc(n * sizeof(*g));

	if (!g)
		die("malloc", -ENOMEM);
	for (size_t i = 0; i < n; i++)
		g[i] = (struct tlk_range){ first + i * spacing, 1, first + i * spacing };
	return g;
}

struct result {
	double acquire_s, release_s;
	size_t memory; /* table bytes while every lock is held */
};

static void keep_best(struct result *best, const struct result *r)
{
	if (!best->acquire_s || r->acquire_s < best->acquire_s)
		best->acquire_s = r->acquire_s;
	if (!best->release_s || r->release_s < best->release_s)
		best->release_s = r->release_s;
	best->memory = r->memory;
}

static size_t held_memory(struct tlk_table *t, size_t locks)
{
	struct tlk_stats st;

	tlk_table_stats(t, &st);
	if (st.write_locks != locks) {
		fprintf(stderr, "tessera-bench-tlk: %zu locks held, %zu expected\n",
			st.write_locks, locks);
		exit(1);
	}
	return st.memory;
}

/* `parts` requests share the locks; each is created and acquired
 * nonblocking, then all are released (`partial`: each from its middle
 * first, then whole). */
static struct result run_split(const struct tlk_range *g, size_t n, size_t parts,
			       bool partial)
{
	struct tlk_table *t;
	struct tlk_answer a;
	struct result r;
	uint64_t *ids = malloc(parts * sizeof(*ids));
	size_t each = n / parts;
	double t0;

	check("create table", tlk_table_create(NULL, &t));
	t0 = now_s();
	for (size_t p = 0; p < parts; p++) {
		size_t count = p + 1 == parts ? n - p * each : each;
		check("create request", tlk_request_create(t, 1, p + 1, TLK_WRITE, g + p * each,
							   count, &ids[p]));
		check("acquire", tlk_acquire(t, ids[p], 0, TLK_NONE, NULL, &a));
		if (a.state != TLK_GRANTED)
			die("acquire not granted", -EDEADLK);
	}
	r.acquire_s = now_s() - t0;
	r.memory = held_memory(t, n);
	t0 = now_s();
	for (size_t p = 0; p < parts; p++) {
		if (partial)
			check("partial release",
			      tlk_release_from(t, ids[p], g[p * each + each / 2].logical, &a));
		check("release", tlk_release(t, ids[p]));
	}
	r.release_s = now_s() - t0;
	tlk_table_destroy(t);
	free(ids);
	return r;
}

/* Blocking rounds, each up to the next 64 KiB strip boundary. */
static struct result run_two_phase(const struct tlk_range *g, size_t n)
{
	const uint64_t strip = 65536;
	struct tlk_table *t;
	struct tlk_answer a = { TLK_PARTIAL, TLK_NONE, 0 };
	struct result r;
	uint64_t id;
	double t0;

	check("create table", tlk_table_create(NULL, &t));
	t0 = now_s();
	check("create request", tlk_request_create(t, 1, 1, TLK_WRITE, g, n, &id));
	while (a.state != TLK_GRANTED) {
		uint64_t upto = (a.next_abs_offset / strip + 1) * strip;
		check("acquire", tlk_acquire(t, id, TLK_BLOCKING, upto, NULL, &a));
		if (a.state == TLK_WAITING)
			die("round parked", -EDEADLK);
	}
	r.acquire_s = now_s() - t0;
	r.memory = held_memory(t, n);
	t0 = now_s();
	check("release", tlk_release(t, id));
	r.release_s = now_s() - t0;
	tlk_table_destroy(t);
	return r;
}

/* The list case beside another request holding `n` locks in between. */
static struct result run_beside(const struct tlk_range *g, size_t n, uint64_t spacing)
{
	struct tlk_range *other = make_ranges(n, spacing / 2, spacing);
	struct tlk_table *t;
	struct tlk_answer a;
	struct result r;
	uint64_t id, oid;
	double t0;

	check("create table", tlk_table_create(NULL, &t));
	check("create request", tlk_request_create(t, 1, 2, TLK_WRITE, other, n, &oid));
	check("acquire", tlk_acquire(t, oid, 0, TLK_NONE, NULL, &a));
	t0 = now_s();
	check("create request", tlk_request_create(t, 1, 1, TLK_WRITE, g, n, &id));
	check("acquire", tlk_acquire(t, id, 0, TLK_NONE, NULL, &a));
	if (a.state != TLK_GRANTED)
		die("acquire not granted", -EDEADLK);
	r.acquire_s = now_s() - t0;
	r.memory = held_memory(t, 2 * n);
	t0 = now_s();
	check("release", tlk_release(t, id));
	r.release_s = now_s() - t0;
	tlk_table_destroy(t);
	free(other);
	return r;
}

enum which { LIST, SPLIT32, POSIX, TWO_PHASE, BESIDE, PARTIAL, NCASES };

static const char *const names[NCASES] = {
	"list/datatype (1 request)", "32 requests", "POSIX (1 request per lock)",
	"two-phase rounds", "beside 128K held locks", "partial + full release",
};

int main(int argc, char **argv)
{
	size_t n = 128 * 1024;
	int repeats = 5, opt;
	static const uint64_t spacings[] = { 64, 4096 };

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			n = strtoull(optarg, NULL, 0);
		else if (opt == 'r')
			repeats = atoi(optarg);
		else {
			fprintf(stderr, "usage: tessera-bench-tlk [-n LOCKS] [-r REPEATS]\n");
			return 2;
		}
	}
	if (n < 64 || repeats < 1) {
		fprintf(stderr, "tessera-bench-tlk: need -n >= 64 and -r >= 1\n");
		return 2;
	}
	printf("lock table alone (lockmgr/), 1 thread: %zu 1-byte write locks, best of %d\n",
	       n, repeats);
	printf("%-28s %8s %16s %16s %10s\n", "case", "spacing", "acquire locks/s",
	       "release locks/s", "B/lock");
	for (int s = 0; s < 2; s++) {
		struct tlk_range *g = make_ranges(n, 0, spacings[s]);
		for (int c = 0; c < NCASES; c++) {
			struct result best = { 0, 0, 0 };
			for (int k = 0; k < repeats; k++) {
				struct result r;
				switch (c) {
				case LIST: r = run_split(g, n, 1, false); break;
				case SPLIT32: r = run_split(g, n, 32, false); break;
				case POSIX: r = run_split(g, n, n, false); break;
				case TWO_PHASE: r = run_two_phase(g, n); break;
				case BESIDE: r = run_beside(g, n, spacings[s]); break;
				default: r = run_split(g, n, 1, true); break;
				}
				keep_best(&best, &r);
			}
			printf("%-28s %6llu B %16.0f %16.0f %10.0f\n", names[c],
			       (unsigned long long)spacings[s], (double)n / best.acquire_s,
			       (double)n / best.release_s,
			       (double)best.memory / (double)(c == BESIDE ? 2 * n : n));
		}
		free(g);
	}
	return 0;
}
