/*
 * mpi_s3asim.c - S3aSim, the sequence-similarity search simulator of seed
 * 001 chapter 6 (Ching, Feng, Lin, Ma, Choudhary: "Exploring I/O strategies
 * for parallel sequence-search tools with S3aSim", HPDC 2006), written anew
 * for the Tessera driver.
 *
 *   mpi_s3asim [-q QUERIES] [-f FRAGMENTS] [-n MIN:MAX] [-m MIN_RESULT]
 *              [-c SPEED,...] [-C STARTUP_S:S_PER_MB] [-s SEED]
 *              [-S STRATEGY,...] [-y nosync|sync,...] [-a off|METHOD:PROTOCOL,...]
 *              [-Q HISTOGRAM] [-D HISTOGRAM] [-r REPS] [-E] [-V] NAME
 *
 * The model (§6.2). A database of FRAGMENTS fragments (128) is searched by
 * QUERIES queries (20); rank 0 is the master, the others workers. Query q
 * has MIN..MAX results (1000:2000) over the whole database, each in one
 * fragment. A query's and a database sequence's lengths are drawn from box
 * histograms (-Q, -D: "LO-HI:WEIGHT,..."; the default is NT-like: 6 bytes
 * to 43 MB, mean about 4.4 KB, §6.2.2); a result is MIN_RESULT (6) to 3 x
 * max(query, database sequence) bytes. Searching (query, fragment) takes
 * (STARTUP_S + S_PER_MB x its results' MB) / SPEED seconds (0.05 s and 1 s
 * per MB: about 0.13 s a task of the dissertation's runs at speed 1, as
 * its 54 s of compute per worker at speed 0.1 on 64 processes imply). The
 * task generates its results' bytes and sleeps for what is left of that
 * time: a sleep, not a spin, since this machine's ranks share two cores
 * with the daemons.
 *
 * Everything about a result (its fragment, score, length and bytes) is a
 * function of SEED, the query and its number, so the output file (each
 * query's results by descending score, the queries one after another) is
 * byte-identical whatever the strategy, the process count or the driver.
 *
 * The master hands out (query, fragment) tasks in order to workers asking
 * for work (Algorithm 1); a worker computes one, sends the scores (and in
 * MW the results) and asks again (Algorithm 2). Once every fragment of a
 * query and of the queries before it is in, the query is written, by
 * STRATEGY (§6.1):
 *   mw        the master writes the query's results in one contiguous
 *             MPI_File_write_at (it receives them from the workers)
 *   ww-coll   the master sends each worker the offsets of its results; all
 *             workers write together: a file view of an hindexed type and
 *             MPI_File_write_all (romio_cb_write=enable: two-phase)
 *   ww-posix  each worker writes its pieces one by one, each contiguous
 *             (MPI_File_write_at per result), as soon as its offsets come
 *   ww-list   each worker writes its pieces as one noncontiguous access:
 *             a file view of an hindexed type and one MPI_File_write
 *             (tessera_io_write=list)
 * (ww-posix and ww-list workers write through a handle of their own, on
 * MPI_COMM_SELF, as views and syncs are collective over a handle's
 * communicator.) Every write is followed by MPI_File_sync (§6.2.2).
 * "sync" (query sync) makes the workers (in MW every rank) wait for each
 * other after each query's I/O. -E writes every query at the end instead
 * (mpiBLAST 1.2 and pioBLAST). -a METHOD:PROTOCOL opens the file in
 * atomic mode (MPI_File_set_atomicity) with the driver's hints
 * tessera_lock_method and tessera_lock_protocol (§7.5.3: list:one-try
 * against off, "no-lock").
 *
 * Comma lists (-c, -S, -y, -a) run every combination, REPS times each,
 * round by round, in one MPI job; each writes NAME.STRATEGY.SYNC.ATOMIC
 * (":" as "-"), truncated first. Rank 0 prints one line per run:
 *   s3asim rep=R strategy=S sync=Y atomic=A endwrite=E ranks=N speed=X
 *     queries=Q fragments=F results=N bytes=B total_s=T
 *     m_setup_s= m_dist_s= m_compute_s= m_merge_s= m_gather_s= m_io_s=
 *     m_sync_s= m_other_s=      (the master's phases, §6.2)
 *     w_setup_s= ... w_other_s= (the workers' mean) w_io_max_s= verify=V
 * (total_s: the slowest rank; verify is ok, FAILED or - without -V, which
 * reads the file back after the run and compares every byte with the
 * results the master computes on its own from the seed.) Bad parameters
 * are refused with a message and exit status 2.
 */
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BOXES 16
#define MAX_LIST 16
#define TAG_REQ 1
#define TAG_WORK 2
#define TAG_SCORES 3
#define TAG_DATA 4
#define TAG_OFFSETS 5
#define TAG_SYNC 6

enum strategy { MW, WW_COLL, WW_POSIX, WW_LIST, N_STRATEGIES };
static const char *const strategy_names[N_STRATEGIES] = {"mw", "ww-coll", "ww-posix", "ww-list"};
enum phase { SETUP, DIST, COMPUTE, MERGE, GATHER, IO, SYNC, OTHER, N_PHASES };
static const char *const phase_names[N_PHASES] = {"setup", "dist", "compute", "merge",
						  "gather", "io", "sync", "other"};

/* One box of a histogram: lengths lo..hi, drawn with weight / total. */
struct box {
	uint64_t lo, hi, weight;
};

struct histogram {
	int n;
	struct box box[MAX_BOXES];
};

/* The model's parameters, broadcast by the master at setup (§6.2's step 1). */
struct params {
	uint64_t seed;
	int queries, fragments, rmin, rmax;
	uint64_t min_result;
	double startup_s, s_per_mb;
	struct histogram qhist, dhist;
	int write_at_end;
};

/* One run's configuration (a combination of the comma lists). */
struct config {
	enum strategy strategy;
	int qsync;            /* query sync */
	double speed;
	const char *atomic;   /* "off" or METHOD:PROTOCOL */
};

/* A result's header: what a worker sends the master (with its bytes in MW).
 * Sorted by score, highest first, ties by number. */
struct result {
	uint64_t score;
	int32_t j;            /* its number in the query */
	int32_t len;
};

/* The command line: the model and the lists of the runs. */
struct options {
	struct params p;
	double speeds[MAX_LIST];
	int n_speeds, n_strategies, n_syncs, n_atomics, reps, verify;
	enum strategy strategies[MAX_LIST];
	int syncs[MAX_LIST];
	const char *atomics[MAX_LIST];
	const char *name;
};

/* What a rank shares with its helpers during one run. */
struct run {
	const struct params *p;
	const struct config *c;
	int rank, nprocs, workers;
	MPI_Comm wcomm;       /* the workers (MPI_COMM_NULL on the master) */
	MPI_File fh;          /* the output: the master's in MW, the workers' else */
	double ph[N_PHASES];
};

/* ------------------------------------------------------------ the model */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A pseudo-random number that depends on the seed and (q, j, what) only. */
static uint64_t draw(const struct params *p, int q, int j, int what)
{
	return mix(mix(p->seed ^ mix((uint64_t)q << 32 | (uint32_t)j)) + (uint64_t)what);
}

static uint64_t hist_draw(const struct histogram *h, uint64_t r1, uint64_t r2)
{
	uint64_t total = 0, at;
	int b;

	for (b = 0; b < h->n; b++)
		total += h->box[b].weight;
	at = r1 % total;
	for (b = 0; b < h->n - 1 && at >= h->box[b].weight; b++)
		at -= h->box[b].weight;
	return h->box[b].lo + r2 % (h->box[b].hi - h->box[b].lo + 1);
}

static int query_results(const struct params *p, int q)
{
	return p->rmin + (int)(draw(p, q, -1, 0) % (uint64_t)(p->rmax - p->rmin + 1));
}

static int result_fragment(const struct params *p, int q, int j)
{
	return (int)(draw(p, q, j, 1) % (uint64_t)p->fragments);
}

/* Result j of query q: its score and length (min_result .. 3 x max(query,
 * database sequence), §6.2). */
static struct result make_result(const struct params *p, int q, int j)
{
	uint64_t ql = hist_draw(&p->qhist, draw(p, q, -1, 2), draw(p, q, -1, 3));
	uint64_t dl = hist_draw(&p->dhist, draw(p, q, j, 4), draw(p, q, j, 5));
	uint64_t hi = 3 * (ql > dl ? ql : dl), len = p->min_result;
	struct result r;

	if (hi > p->min_result)
		len += draw(p, q, j, 6) % (hi - p->min_result + 1);
	r.score = draw(p, q, j, 7);
	r.j = j;
	r.len = (int32_t)len;
	return r;
}

/* The bytes of result j of query q: a header line, then bases. */
static void result_bytes(const struct params *p, int q, const struct result *r, char *buf)
{
	char head[64];
	int n = snprintf(head, sizeof(head), "query %d result %d score %016llx\n", q, r->j,
			 (unsigned long long)r->score);
	uint64_t x = draw(p, q, r->j, 8);

	if (n > r->len)
		n = r->len;
	memcpy(buf, head, (size_t)n);
	for (int i = n; i < r->len; i++) {
		if ((i - n) % 32 == 0)
			x = mix(x);
		buf[i] = "ACGT"[(x >> (2 * ((i - n) % 32))) & 3];
	}
}

static int by_score(const void *a, const void *b)
{
	const struct result *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return (x->j > y->j) - (x->j < y->j);
}

/* The results of (q, f), sorted; their count into *n (an array of at most
 * rmax entries the caller frees). */
static struct result *search(const struct params *p, int q, int f, int *n)
{
	int nq = query_results(p, q);
	struct result *v = malloc(sizeof(*v) * (size_t)(nq ? nq : 1));

	if (!v)
		MPI_Abort(MPI_COMM_WORLD, 1);
	*n = 0;
	for (int j = 0; j < nq; j++)
		if (result_fragment(p, q, j) == f)
			v[(*n)++] = make_result(p, q, j);
	qsort(v, (size_t)*n, sizeof(*v), by_score);
	return v;
}

static int64_t results_bytes(const struct result *v, int n)
{
	int64_t b = 0;

	for (int i = 0; i < n; i++)
		b += v[i].len;
	return b;
}

static void sleep_s(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------ the file */

/* WW-POSIX and WW-List: each worker writes on its own (§6.1.3). */
static int individual(const struct config *c)
{
	return c->strategy == WW_POSIX || c->strategy == WW_LIST;
}

/* A worker of an individual strategy: the file it opened, created and
 * truncated with the others on their communicator (*fh), opened again on
 * MPI_COMM_SELF in its place. MPI_File_set_view and MPI_File_sync are
 * collective over the file's communicator (ROMIO's set_view checks its
 * info with an MPI_Allreduce there), but each worker sets a view and
 * syncs on its own, as often as it has results to write (a worker with
 * none in a query gets no offset list): on the workers' handle, a worker
 * with one view more than the others waited in that Allreduce forever,
 * and the run hung with nothing said. */
static int reopen_own(const char *path, MPI_Info info, int atomic, MPI_File *fh,
		      const char **what)
{
	int rc;

	MPI_File_close(fh); /* collective; the truncate is done (set_size returned) */
	*what = "open (its own handle of)";
	rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDWR, info, fh);
	if (rc == MPI_SUCCESS && (rc = MPI_File_set_atomicity(*fh, atomic)) != MPI_SUCCESS)
		*what = "set the atomic mode of";
	return rc;
}

/* Opens NAME.STRATEGY.SYNC.ATOMIC on comm, truncated, with the strategy's
 * hints and the atomic mode (an individual strategy's worker then writes
 * through a handle of its own: reopen_own); MPI_FILE_NULL (said) on
 * failure. */
static MPI_File open_output(const char *name, const struct config *c, MPI_Comm comm, int rank)
{
	char path[4096], method[32] = "", protocol[32] = "", tag[64];
	MPI_File fh = MPI_FILE_NULL;
	MPI_Info info;
	int atomic = strcmp(c->atomic, "off") != 0, rc;
	const char *what;

	snprintf(tag, sizeof(tag), "%s", c->atomic);
	for (char *s = tag; *s; s++)
		if (*s == ':')
			*s = '-';
	snprintf(path, sizeof(path), "%s.%s.%s.%s", name, strategy_names[c->strategy],
		 c->qsync ? "sync" : "nosync", tag);
	MPI_Info_create(&info);
	if (c->strategy == WW_LIST) {
		MPI_Info_set(info, "tessera_io_write", "list");
	} else if (c->strategy == WW_COLL) {
		MPI_Info_set(info, "romio_cb_write", "enable");
	}
	if (atomic && sscanf(c->atomic, "%31[^:]:%31s", method, protocol) == 2) {
		MPI_Info_set(info, "tessera_lock_method", method);
		MPI_Info_set(info, "tessera_lock_protocol", protocol);
	}
	rc = MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
	what = "open";
	if (rc == MPI_SUCCESS && (rc = MPI_File_set_size(fh, 0)) != MPI_SUCCESS)
		what = "truncate";
	else if (rc == MPI_SUCCESS && (rc = MPI_File_set_atomicity(fh, atomic)) != MPI_SUCCESS)
		what = "set the atomic mode of";
	else if (rc == MPI_SUCCESS && individual(c))
		rc = reopen_own(path, info, atomic, &fh, &what);
	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len = 0;

		MPI_Error_string(rc, msg, &len);
		fprintf(stderr, "mpi_s3asim: rank %d: cannot %s %s (atomic %s): %s\n", rank, what,
			path, c->atomic, msg);
		if (fh != MPI_FILE_NULL)
			MPI_File_close(&fh);
		fh = MPI_FILE_NULL;
	}
	MPI_Info_free(&info);
	return fh;
}

static void io_failed(const struct run *r, const char *what, int q)
{
	fprintf(stderr, "mpi_s3asim: rank %d: %s of query %d failed (%s)\n", r->rank, what, q,
		strategy_names[r->c->strategy]);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A worker's pieces of one query (offsets increasing) from one contiguous
 * buffer: a file view of an hindexed type, one write (collective in
 * WW-Coll), then the sync. */
static void write_view(struct run *r, int q, const int64_t *off, const int *len, int n,
		       const char *buf, int64_t bytes)
{
	MPI_Datatype ft = MPI_BYTE;
	MPI_Aint *disp = malloc(sizeof(*disp) * (size_t)(n > 0 ? n : 1));
	int rc;

	if (!disp)
		MPI_Abort(MPI_COMM_WORLD, 1);
	/* The view starts at the first piece and the type's displacements are
	 * from there (its lower bound 0). A type of absolute offsets (lower
	 * bound far past its extent) works too since the driver's fix
	 * (mpi_views' "far" view); this form also suits older drivers. */
	if (n > 0) {
		for (int i = 0; i < n; i++)
			disp[i] = (MPI_Aint)(off[i] - off[0]);
		MPI_Type_create_hindexed(n, len, disp, MPI_BYTE, &ft);
		MPI_Type_commit(&ft);
	}
	rc = MPI_File_set_view(r->fh, n > 0 ? off[0] : 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
	if (rc == MPI_SUCCESS && r->c->strategy == WW_COLL)
		rc = MPI_File_write_all(r->fh, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
	else if (rc == MPI_SUCCESS)
		rc = MPI_File_write(r->fh, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
	if (rc == MPI_SUCCESS)
		rc = MPI_File_sync(r->fh);
	if (rc != MPI_SUCCESS)
		io_failed(r, "write", q);
	if (n > 0)
		MPI_Type_free(&ft);
	free(disp);
}

/* ------------------------------------------------------------ the master */

/* A result as the master keeps it: its header, who has it, its bytes (MW). */
struct mrec {
	struct result r;
	int owner;
	const char *data;
};

/* A query at the master: its results as they come in. */
struct mquery {
	struct mrec *v;
	int n, cap, frags;
	char **bufs;          /* MW: the received data, freed once written */
	int nbufs;
};

/* A receive in flight: a task's scores, then (MW) its bytes. */
struct pending {
	MPI_Request req;
	int src, q, have_scores;
	struct result *v;
	int n;
	char *data;
};

/* Sends in flight (offset lists, sync notices), freed when done. */
struct sends {
	MPI_Request *req;
	void **buf;
	int n, cap;
};

struct master {
	struct run *r;
	struct mquery *mq;
	struct pending *pend;
	int npend, cappend;
	struct sends sends;
	int next_out;         /* the first query not yet written */
	int64_t base;         /* its offset */
	int tasks_done, total_tasks;
};

static void *grow(void *v, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return v;
	*cap = need * 2 + 8;
	v = realloc(v, size * (size_t)*cap);
	if (!v)
		MPI_Abort(MPI_COMM_WORLD, 1);
	return v;
}

static void sends_add(struct sends *s, MPI_Request req, void *buf)
{
	int cap = s->cap;

	s->req = grow(s->req, &cap, s->n + 1, sizeof(*s->req));
	s->buf = grow(s->buf, &s->cap, s->n + 1, sizeof(*s->buf));
	s->req[s->n] = req;
	s->buf[s->n++] = buf;
}

/* Frees the sends that are done; all of them with `wait`. */
static void sends_test(struct sends *s, int wait)
{
	int k = 0, done;

	for (int i = 0; i < s->n; i++) {
		if (wait)
			MPI_Wait(&s->req[i], MPI_STATUS_IGNORE);
		else
			MPI_Test(&s->req[i], &done, MPI_STATUS_IGNORE);
		if (s->req[i] == MPI_REQUEST_NULL) {
			free(s->buf[i]);
		} else {
			s->req[k] = s->req[i];
			s->buf[k++] = s->buf[i];
		}
	}
	s->n = k;
}

static void mquery_add(struct mquery *mq, const struct pending *pd)
{
	const char *at = pd->data;

	mq->v = grow(mq->v, &mq->cap, mq->n + pd->n, sizeof(*mq->v));
	for (int i = 0; i < pd->n; i++) {
		mq->v[mq->n].r = pd->v[i];
		mq->v[mq->n].owner = pd->src;
		mq->v[mq->n++].data = at;
		if (at)
			at += pd->v[i].len;
	}
	if (pd->data) {
		mq->bufs = realloc(mq->bufs, sizeof(*mq->bufs) * (size_t)(mq->nbufs + 1));
		if (!mq->bufs)
			MPI_Abort(MPI_COMM_WORLD, 1);
		mq->bufs[mq->nbufs++] = pd->data;
	}
	mq->frags++;
}

static int by_mrec(const void *a, const void *b)
{
	return by_score(&((const struct mrec *)a)->r, &((const struct mrec *)b)->r);
}

/* MW: the query's results in one contiguous write and a sync. */
static void master_write(struct master *m, int q, struct mquery *mq, int64_t bytes)
{
	char *buf = malloc((size_t)(bytes ? bytes : 1)), *at = buf;
	double t = MPI_Wtime();

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < mq->n; i++) {
		memcpy(at, mq->v[i].data, (size_t)mq->v[i].r.len);
		at += mq->v[i].r.len;
	}
	if (MPI_File_write_at(m->r->fh, m->base, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE) !=
	    MPI_SUCCESS || MPI_File_sync(m->r->fh) != MPI_SUCCESS)
		io_failed(m->r, "write", q);
	m->r->ph[IO] += MPI_Wtime() - t;
	free(buf);
	if (m->r->c->qsync) {
		/* every rank waits for every other after the query's I/O */
		t = MPI_Wtime();
		for (int w = 1; w <= m->r->workers; w++) {
			MPI_Request req;
			int *note = malloc(sizeof(int));

			if (!note)
				MPI_Abort(MPI_COMM_WORLD, 1);
			*note = q;
			MPI_Isend(note, 1, MPI_INT, w, TAG_SYNC, MPI_COMM_WORLD, &req);
			sends_add(&m->sends, req, note);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		m->r->ph[SYNC] += MPI_Wtime() - t;
	}
}

/* WW: each worker gets the offsets of its results of query q ([q, off...]
 * in its own order, which is score order); workers without results get an
 * empty list when they must all take part (WW-Coll, query sync). */
static void master_send_offsets(struct master *m, int q, const struct mquery *mq)
{
	int all = m->r->c->strategy == WW_COLL || m->r->c->qsync;

	for (int w = 1; w <= m->r->workers; w++) {
		int64_t *list, off = m->base;
		int n = 0;
		MPI_Request req;

		for (int i = 0; i < mq->n; i++)
			n += mq->v[i].owner == w;
		if (!n && !all)
			continue;
		list = malloc(sizeof(*list) * (size_t)(n + 1));
		if (!list)
			MPI_Abort(MPI_COMM_WORLD, 1);
		list[0] = q;
		n = 1;
		for (int i = 0; i < mq->n; i++) {
			if (mq->v[i].owner == w)
				list[n++] = off;
			off += mq->v[i].r.len;
		}
		MPI_Isend(list, n, MPI_INT64_T, w, TAG_OFFSETS, MPI_COMM_WORLD, &req);
		sends_add(&m->sends, req, list);
	}
}

/* Writes (MW) or hands out (WW) every query whose fragments, and those of
 * the queries before it, are all in; with -E only once all are. */
static void master_release(struct master *m)
{
	const struct params *p = m->r->p;

	if (p->write_at_end && m->tasks_done < m->total_tasks)
		return;
	while (m->next_out < p->queries && m->mq[m->next_out].frags == p->fragments) {
		int q = m->next_out;
		struct mquery *mq = &m->mq[q];
		int64_t bytes = 0;
		double t = MPI_Wtime();

		qsort(mq->v, (size_t)mq->n, sizeof(*mq->v), by_mrec);
		for (int i = 0; i < mq->n; i++)
			bytes += mq->v[i].r.len;
		if (m->r->c->strategy != MW)
			master_send_offsets(m, q, mq);
		m->r->ph[GATHER] += MPI_Wtime() - t;
		if (m->r->c->strategy == MW)
			master_write(m, q, mq, bytes);
		for (int b = 0; b < mq->nbufs; b++)
			free(mq->bufs[b]);
		free(mq->bufs);
		free(mq->v);
		memset(mq, 0, sizeof(*mq));
		mq->frags = p->fragments;
		m->base += bytes;
		m->next_out++;
	}
}

/* One receive that completed: scores (then, in MW, post the bytes') or bytes. */
static void master_received(struct master *m, struct pending *pd, const MPI_Status *st)
{
	if (!pd->have_scores) {
		int count;

		MPI_Get_count(st, MPI_BYTE, &count);
		pd->n = count / (int)sizeof(struct result);
		pd->have_scores = 1;
		if (m->r->c->strategy == MW) {
			int64_t bytes = results_bytes(pd->v, pd->n);

			pd->data = malloc((size_t)(bytes ? bytes : 1));
			if (!pd->data)
				MPI_Abort(MPI_COMM_WORLD, 1);
			MPI_Irecv(pd->data, (int)bytes, MPI_BYTE, pd->src, TAG_DATA, MPI_COMM_WORLD,
				  &pd->req);
			return;
		}
	}
	mquery_add(&m->mq[pd->q], pd);
	free(pd->v);
	pd->v = NULL;
	pd->req = MPI_REQUEST_NULL;
	m->tasks_done++;
}

/* Tests (or with `wait`, waits for) the receives in flight. */
static void master_progress(struct master *m, int wait)
{
	double t = MPI_Wtime();
	int k = 0;

	for (int i = 0; i < m->npend; i++) {
		struct pending *pd = &m->pend[i];
		MPI_Status st;
		int done = 0;

		while (pd->req != MPI_REQUEST_NULL) {
			if (wait)
				MPI_Wait(&pd->req, &st), done = 1;
			else
				MPI_Test(&pd->req, &done, &st);
			if (!done)
				break;
			master_received(m, pd, &st);
		}
		if (pd->req != MPI_REQUEST_NULL)
			m->pend[k++] = *pd;
	}
	m->npend = k;
	sends_test(&m->sends, 0);
	m->r->ph[GATHER] += MPI_Wtime() - t;
	master_release(m);
}

/* Algorithm 1. */
static void master_loop(struct run *r)
{
	const struct params *p = r->p;
	struct master m = {.r = r, .total_tasks = p->queries * p->fragments};
	int next = 0, notified = 0;

	m.mq = calloc((size_t)p->queries, sizeof(*m.mq));
	if (!m.mq)
		MPI_Abort(MPI_COMM_WORLD, 1);
	while (notified < r->workers) {
		double t = MPI_Wtime();
		int task[2] = {-1, -1}, dummy;
		MPI_Status st;

		MPI_Recv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &st);
		if (next < m.total_tasks) {
			task[0] = next / p->fragments;
			task[1] = next % p->fragments;
			next++;
		} else {
			notified++;
		}
		MPI_Send(task, 2, MPI_INT, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
		r->ph[DIST] += MPI_Wtime() - t;
		if (task[0] >= 0) {
			struct pending *pd;

			t = MPI_Wtime();
			m.pend = grow(m.pend, &m.cappend, m.npend + 1, sizeof(*m.pend));
			pd = &m.pend[m.npend++];
			memset(pd, 0, sizeof(*pd));
			pd->src = st.MPI_SOURCE;
			pd->q = task[0];
			pd->v = malloc(sizeof(*pd->v) * (size_t)p->rmax + 1);
			if (!pd->v)
				MPI_Abort(MPI_COMM_WORLD, 1);
			MPI_Irecv(pd->v, (int)(sizeof(*pd->v) * (size_t)p->rmax), MPI_BYTE, pd->src,
				  TAG_SCORES, MPI_COMM_WORLD, &pd->req);
			r->ph[GATHER] += MPI_Wtime() - t;
		}
		master_progress(&m, 0);
	}
	master_progress(&m, 1);
	sends_test(&m.sends, 1);
	free(m.pend);
	free(m.mq);
	free(m.sends.req);
	free(m.sends.buf);
}

/* ------------------------------------------------------------ a worker */

/* A result as a worker keeps it until written. */
struct held {
	struct result r;
	const char *data;
};

/* A worker's results of one query, merged in score order (§6.2 "Merge"). */
struct wquery {
	struct held *v;
	int n;
	char **bufs;
	int nbufs;
	int written;
};

struct worker {
	struct run *r;
	struct wquery *wq;
	struct sends sends;
	int lists_seen, syncs_seen;
	MPI_Request sync_req; /* MW with query sync: the next notice */
	int sync_note;
};

/* Search (q, f): its results and their bytes, in at least the model's time. */
static struct result *worker_compute(struct worker *w, int q, int f, int *n, char **data)
{
	double t = MPI_Wtime(), model;
	struct result *v = search(w->r->p, q, f, n);
	int64_t bytes = results_bytes(v, *n);
	char *at;

	*data = malloc((size_t)(bytes ? bytes : 1));
	if (!*data)
		MPI_Abort(MPI_COMM_WORLD, 1);
	at = *data;
	for (int i = 0; i < *n; i++) {
		result_bytes(w->r->p, q, &v[i], at);
		at += v[i].len;
	}
	model = (w->r->p->startup_s + w->r->p->s_per_mb * (double)bytes / 1e6) / w->r->c->speed;
	sleep_s(model - (MPI_Wtime() - t));
	w->r->ph[COMPUTE] += MPI_Wtime() - t;
	return v;
}

/* Merges a task's sorted results into the query's (step 8). */
static void worker_merge(struct worker *w, int q, const struct result *v, int n, char *data)
{
	struct wquery *wq = &w->wq[q];
	struct held *out = malloc(sizeof(*out) * (size_t)(wq->n + n + 1));
	const char *at = data;
	int a = 0, b = 0, k = 0;
	double t = MPI_Wtime();

	if (!out)
		MPI_Abort(MPI_COMM_WORLD, 1);
	while (a < wq->n || b < n) {
		if (b >= n || (a < wq->n && by_score(&wq->v[a].r, &v[b]) < 0)) {
			out[k++] = wq->v[a++];
		} else {
			out[k].r = v[b];
			out[k++].data = at;
			at += v[b++].len;
		}
	}
	free(wq->v);
	wq->v = out;
	wq->n = k;
	wq->bufs = realloc(wq->bufs, sizeof(*wq->bufs) * (size_t)(wq->nbufs + 1));
	if (!wq->bufs)
		MPI_Abort(MPI_COMM_WORLD, 1);
	wq->bufs[wq->nbufs++] = data;
	w->r->ph[MERGE] += MPI_Wtime() - t;
}

/* WW-POSIX: each piece its own contiguous write, then one sync. */
static void write_pieces(struct run *r, int q, const struct wquery *wq, const int64_t *off)
{
	for (int i = 0; i < wq->n; i++)
		if (MPI_File_write_at(r->fh, off[i], wq->v[i].data, wq->v[i].r.len, MPI_BYTE,
				      MPI_STATUS_IGNORE) != MPI_SUCCESS)
			io_failed(r, "write", q);
	if (wq->n > 0 && MPI_File_sync(r->fh) != MPI_SUCCESS)
		io_failed(r, "sync", q);
}

/* WW-List and WW-Coll: the pieces packed, written through a view (every
 * worker takes part in WW-Coll, with or without pieces). */
static void write_packed(struct run *r, int q, const struct wquery *wq, const int64_t *off)
{
	int n = wq->n, *len = malloc(sizeof(*len) * (size_t)(n + 1));
	int64_t bytes = 0;
	char *buf, *at;

	if (!len)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < n; i++)
		bytes += (len[i] = wq->v[i].r.len);
	at = buf = malloc((size_t)(bytes ? bytes : 1));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < n; i++) {
		memcpy(at, wq->v[i].data, (size_t)len[i]);
		at += len[i];
	}
	if (n > 0 || r->c->strategy == WW_COLL)
		write_view(r, q, off, len, n, buf, bytes);
	free(len);
	free(buf);
}

/* Writes the worker's results of a query at the offsets the master sent. */
static void worker_write(struct worker *w, const int64_t *list, int n)
{
	int q = (int)list[0];
	struct wquery *wq;
	double t = MPI_Wtime();

	if (q < 0 || q >= w->r->p->queries || w->wq[q].n != n || w->wq[q].written) {
		fprintf(stderr, "mpi_s3asim: rank %d: offsets for query %d do not match its %d "
			"results\n", w->r->rank, q, q >= 0 && q < w->r->p->queries ? w->wq[q].n : -1);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	wq = &w->wq[q];
	if (w->r->c->strategy == WW_POSIX)
		write_pieces(w->r, q, wq, list + 1);
	else
		write_packed(w->r, q, wq, list + 1);
	w->r->ph[IO] += MPI_Wtime() - t;
	for (int b = 0; b < wq->nbufs; b++)
		free(wq->bufs[b]);
	free(wq->bufs);
	free(wq->v);
	memset(wq, 0, sizeof(*wq));
	wq->written = 1;
	w->lists_seen++;
	if (w->r->c->qsync) {
		t = MPI_Wtime();
		MPI_Barrier(w->r->wcomm);
		w->r->ph[SYNC] += MPI_Wtime() - t;
	}
}

/* Writes for every offset list that has come (steps 17-18); with `block`,
 * waits for one. */
static void worker_offsets(struct worker *w, int block)
{
	for (;;) {
		MPI_Status st;
		int flag = 1, n;
		int64_t *list;
		double t = MPI_Wtime();

		if (block)
			MPI_Probe(0, TAG_OFFSETS, MPI_COMM_WORLD, &st);
		else
			MPI_Iprobe(0, TAG_OFFSETS, MPI_COMM_WORLD, &flag, &st);
		/* a blocking wait is for the others (the end's sync) */
		w->r->ph[block ? SYNC : IO] += MPI_Wtime() - t;
		if (!flag)
			return;
		MPI_Get_count(&st, MPI_INT64_T, &n);
		if (n < 1 || n > w->r->p->rmax + 1) {
			fprintf(stderr, "mpi_s3asim: rank %d: an offset list of %d entries\n",
				w->r->rank, n);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		list = malloc(sizeof(*list) * (size_t)n);
		if (!list)
			MPI_Abort(MPI_COMM_WORLD, 1);
		MPI_Recv(list, n, MPI_INT64_T, 0, TAG_OFFSETS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		worker_write(w, list, n - 1);
		free(list);
		if (block)
			return;
	}
}

/* MW with query sync: a notice came; every rank waits for every other. */
static void worker_sync_notice(struct worker *w)
{
	double t = MPI_Wtime();

	MPI_Barrier(MPI_COMM_WORLD);
	w->r->ph[SYNC] += MPI_Wtime() - t;
	if (++w->syncs_seen < w->r->p->queries)
		MPI_Irecv(&w->sync_note, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD, &w->sync_req);
}

/* Steps 3-4: asks for work; the task, or -1 once all are handed out. */
static void worker_ask(struct worker *w, int *task)
{
	double t = MPI_Wtime();
	MPI_Request req[3];
	int dummy = 0, which;

	MPI_Isend(&dummy, 1, MPI_INT, 0, TAG_REQ, MPI_COMM_WORLD, &req[0]);
	MPI_Irecv(task, 2, MPI_INT, 0, TAG_WORK, MPI_COMM_WORLD, &req[1]);
	req[2] = w->sync_req;
	for (;;) {
		MPI_Waitany(2, req + 1, &which, MPI_STATUS_IGNORE);
		if (which == 0)
			break;
		w->r->ph[DIST] += MPI_Wtime() - t;
		w->sync_req = MPI_REQUEST_NULL;
		worker_sync_notice(w);
		req[2] = w->sync_req;
		t = MPI_Wtime();
	}
	w->sync_req = req[2];
	MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	w->r->ph[DIST] += MPI_Wtime() - t;
}

/* One task: compute, merge (WW), send the scores (and MW's bytes). */
static void worker_task(struct worker *w, int q, int f)
{
	char *data;
	int n;
	struct result *v = worker_compute(w, q, f, &n, &data);
	double t = MPI_Wtime();
	MPI_Request req;

	MPI_Isend(v, n * (int)sizeof(*v), MPI_BYTE, 0, TAG_SCORES, MPI_COMM_WORLD, &req);
	sends_add(&w->sends, req, v);
	if (w->r->c->strategy == MW) {
		MPI_Isend(data, (int)results_bytes(v, n), MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req);
		sends_add(&w->sends, req, data);
	}
	w->r->ph[GATHER] += MPI_Wtime() - t;
	if (w->r->c->strategy != MW)
		worker_merge(w, q, v, n, data);
}

/* How many offset lists this worker will get in all. */
static int worker_lists_due(const struct worker *w)
{
	int due = 0;

	if (w->r->c->strategy == WW_COLL || w->r->c->qsync)
		return w->r->p->queries;
	for (int q = 0; q < w->r->p->queries; q++)
		due += w->wq[q].n > 0 || w->wq[q].written;
	return due;
}

/* Algorithm 2. */
static void worker_loop(struct run *r)
{
	struct worker w = {.r = r, .sync_req = MPI_REQUEST_NULL};
	int task[2];
	double t;

	w.wq = calloc((size_t)r->p->queries, sizeof(*w.wq));
	if (!w.wq)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (r->c->strategy == MW && r->c->qsync)
		MPI_Irecv(&w.sync_note, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD, &w.sync_req);
	for (;;) {
		worker_ask(&w, task);
		if (task[0] < 0)
			break;
		worker_task(&w, task[0], task[1]);
		t = MPI_Wtime();
		sends_test(&w.sends, 0);
		r->ph[GATHER] += MPI_Wtime() - t;
		if (r->c->strategy != MW)
			worker_offsets(&w, 0);
	}
	if (r->c->strategy != MW)
		while (w.lists_seen < worker_lists_due(&w))
			worker_offsets(&w, 1);
	while (w.sync_req != MPI_REQUEST_NULL) {
		t = MPI_Wtime();
		MPI_Wait(&w.sync_req, MPI_STATUS_IGNORE);
		r->ph[SYNC] += MPI_Wtime() - t;
		worker_sync_notice(&w);
	}
	t = MPI_Wtime();
	sends_test(&w.sends, 1);
	r->ph[GATHER] += MPI_Wtime() - t;
	free(w.wq);
	free(w.sends.req);
	free(w.sends.buf);
}

/* ------------------------------------------------------------ a run */

/* Rank 0 after a run: the file holds every query's results in score order
 * (computed here from the seed alone); its size into *bytes. */
static const char *verify_file(const char *name, const struct config *c, const struct params *p,
			       int64_t *bytes)
{
	char path[4096], tag[64];
	MPI_File fh;
	MPI_Offset size, at = 0;
	int ok = 1;

	snprintf(tag, sizeof(tag), "%s", c->atomic);
	for (char *s = tag; *s; s++)
		if (*s == ':')
			*s = '-';
	snprintf(path, sizeof(path), "%s.%s.%s.%s", name, strategy_names[c->strategy],
		 c->qsync ? "sync" : "nosync", tag);
	if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
		return "FAILED";
	for (int q = 0; q < p->queries && ok; q++) {
		int n = 0, nq = query_results(p, q);
		struct result *v = malloc(sizeof(*v) * (size_t)(nq + 1));
		int64_t qb;
		char *want, *got, *w;

		for (int j = 0; j < nq; j++)
			v[n++] = make_result(p, q, j);
		qsort(v, (size_t)n, sizeof(*v), by_score);
		qb = results_bytes(v, n);
		w = want = malloc((size_t)qb + 1);
		got = malloc((size_t)qb + 1);
		for (int i = 0; i < n; i++) {
			result_bytes(p, q, &v[i], w);
			w += v[i].len;
		}
		ok = MPI_File_read_at(fh, at, got, (int)qb, MPI_BYTE, MPI_STATUS_IGNORE) ==
			MPI_SUCCESS && memcmp(want, got, (size_t)qb) == 0;
		if (!ok)
			fprintf(stderr, "mpi_s3asim: %s: query %d differs from the model\n", path, q);
		at += qb;
		free(v);
		free(want);
		free(got);
	}
	MPI_File_get_size(fh, &size);
	MPI_File_close(&fh);
	*bytes = at;
	return ok && size == at ? "ok" : "FAILED";
}

static int64_t model_bytes(const struct params *p)
{
	int64_t b = 0;

	for (int q = 0; q < p->queries; q++)
		for (int j = 0, nq = query_results(p, q); j < nq; j++)
			b += make_result(p, q, j).len;
	return b;
}

/* Rank 0: the run's line (the master's phases, the workers' mean). */
static void report(const struct options *o, const struct config *c, int rep, int nprocs,
		   const double *all, const char *verdict)
{
	double total = 0, io_max = 0;
	int results = 0;

	for (int q = 0; q < o->p.queries; q++)
		results += query_results(&o->p, q);
	for (int k = 0; k < nprocs; k++)
		if (all[k * N_PHASES + OTHER] > total)
			total = all[k * N_PHASES + OTHER];
	printf("s3asim rep=%d strategy=%s sync=%s atomic=%s endwrite=%d ranks=%d speed=%g "
	       "queries=%d fragments=%d results=%d bytes=%lld total_s=%.6f", rep,
	       strategy_names[c->strategy], c->qsync ? "sync" : "nosync", c->atomic,
	       o->p.write_at_end, nprocs, c->speed, o->p.queries, o->p.fragments, results,
	       (long long)model_bytes(&o->p), total);
	for (int side = 0; side < 2; side++)
		for (int ph = 0; ph < N_PHASES; ph++) {
			double v = 0, used = 0;

			for (int k = side ? 1 : 0; k < (side ? nprocs : 1); k++) {
				double x = all[k * N_PHASES + ph];

				if (ph == OTHER)
					for (int i = 0; i < OTHER; i++)
						x -= all[k * N_PHASES + i];
				if (ph == IO && side && x > io_max)
					io_max = x;
				v += x;
				used++;
			}
			printf(" %c_%s_s=%.6f", side ? 'w' : 'm', phase_names[ph], v / used);
		}
	printf(" w_io_max_s=%.6f verify=%s\n", io_max, verdict);
	fflush(stdout);
}

/* One run of configuration c: setup, the master's or a worker's loop, the
 * final synchronization; rank 0 reports. */
static void run_config(const struct options *o, const struct config *c, int rep, int rank,
		       int nprocs, MPI_Comm wcomm)
{
	struct params p = o->p;
	struct run r = {.p = &p, .c = c, .rank = rank, .nprocs = nprocs, .workers = nprocs - 1,
			.wcomm = wcomm, .fh = MPI_FILE_NULL};
	double t0, t, *all = NULL;
	int all_ok;
	const char *verdict = "-";
	int64_t bytes;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	MPI_Bcast(&p, (int)sizeof(p), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (rank == 0 && c->strategy == MW)
		r.fh = open_output(o->name, c, MPI_COMM_SELF, rank);
	else if (rank != 0 && c->strategy != MW)
		r.fh = open_output(o->name, c, wcomm, rank);
	all_ok = (rank == 0) == (c->strategy == MW) ? r.fh != MPI_FILE_NULL : 1;
	MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok)
		MPI_Abort(MPI_COMM_WORLD, 1);
	r.ph[SETUP] = MPI_Wtime() - t0;
	if (rank == 0)
		master_loop(&r);
	else
		worker_loop(&r);
	t = MPI_Wtime();
	MPI_Barrier(MPI_COMM_WORLD);
	r.ph[SYNC] += MPI_Wtime() - t;
	r.ph[OTHER] = MPI_Wtime() - t0; /* the total: report() subtracts the rest */
	if (r.fh != MPI_FILE_NULL)
		MPI_File_close(&r.fh);
	if (rank == 0) {
		all = malloc(sizeof(*all) * N_PHASES * (size_t)nprocs);
		if (!all)
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Gather(r.ph, N_PHASES, MPI_DOUBLE, all, N_PHASES, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (o->verify)
			verdict = verify_file(o->name, c, &p, &bytes);
		report(o, c, rep, nprocs, all, verdict);
		free(all);
	}
}

/* ------------------------------------------------------------ arguments */

static const struct box nt_boxes[] = {
	/* NT-like (§6.2.2): 6 bytes to slightly over 43 MB, mean about 4.4 KB */
	{6, 499, 200000}, {500, 1999, 400000}, {2000, 7999, 300000},
	{8000, 29999, 99980}, {30000, 43000000, 20},
};

/* "LO-HI:WEIGHT,..." into h; -1 if it does not parse. */
static int parse_histogram(const char *s, struct histogram *h)
{
	h->n = 0;
	while (*s) {
		unsigned long long lo, hi, wt;
		int used;

		if (h->n == MAX_BOXES ||
		    sscanf(s, "%llu-%llu:%llu%n", &lo, &hi, &wt, &used) != 3 || lo < 1 || hi < lo ||
		    hi > (256ull << 20) || wt == 0 || wt > (1ull << 32))
			return -1;
		h->box[h->n++] = (struct box){lo, hi, wt};
		s += used;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return h->n ? 0 : -1;
}

/* A comma list of names (of `names`, or for atomics off|METHOD:PROTOCOL)
 * into v; its length, or -1. */
static int parse_names(char *s, const char *const *names, int nnames, int *v)
{
	int n = 0;

	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		int k;

		for (k = 0; k < nnames && strcmp(tok, names[k]); k++)
			;
		if (k == nnames || n == MAX_LIST)
			return -1;
		v[n++] = k;
	}
	return n ? n : -1;
}

static int parse_atomics(char *s, const char **v)
{
	int n = 0;

	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		char method[32], protocol[32], extra;

		if (n == MAX_LIST || (strcmp(tok, "off") &&
				      sscanf(tok, "%31[^:]:%31[^:]%c", method, protocol, &extra) != 2))
			return -1;
		v[n++] = tok;
	}
	return n ? n : -1;
}

static int parse_speeds(char *s, double *v)
{
	int n = 0;

	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		char *end;

		if (n == MAX_LIST)
			return -1;
		v[n] = strtod(tok, &end);
		if (*end || !(v[n] > 0 && v[n] <= 1e6))
			return -1;
		n++;
	}
	return n ? n : -1;
}

/* A whole number in [lo, hi] into *v; -1 if it is not one. */
static int parse_int(const char *s, long long lo, long long hi, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return (!*s || *end || errno || *v < lo || *v > hi) ? -1 : 0;
}

/* One option of the model (-q -f -n -m -C -s -Q -D) into o; the message
 * of a refusal into why. */
static int parse_model_option(int opt, char *arg, struct options *o, const char **why)
{
	long long v, v2;
	char *colon = strchr(arg, ':');

	switch (opt) {
	case 'q': *why = "-q QUERIES: 1 to 100000";
		return parse_int(arg, 1, 100000, &v) ? -1 : (o->p.queries = (int)v, 0);
	case 'f': *why = "-f FRAGMENTS: 1 to 100000";
		return parse_int(arg, 1, 100000, &v) ? -1 : (o->p.fragments = (int)v, 0);
	case 'n': *why = "-n MIN:MAX results per query: 0 <= MIN <= MAX <= 1000000";
		if (!colon)
			return -1;
		*colon = 0;
		if (parse_int(arg, 0, 1000000, &v) || parse_int(colon + 1, v, 1000000, &v2))
			return -1;
		o->p.rmin = (int)v, o->p.rmax = (int)v2;
		return 0;
	case 'm': *why = "-m MIN_RESULT: 1 to 1 GiB";
		return parse_int(arg, 1, 1 << 30, &v) ? -1 : (o->p.min_result = (uint64_t)v, 0);
	case 'C': *why = "-C STARTUP_S:S_PER_MB: two numbers >= 0";
		return sscanf(arg, "%lf:%lf", &o->p.startup_s, &o->p.s_per_mb) != 2 ||
			!(o->p.startup_s >= 0 && o->p.s_per_mb >= 0) ? -1 : 0;
	case 's': *why = "-s SEED: a whole number >= 0";
		return parse_int(arg, 0, INT64_MAX, &v) ? -1 : (o->p.seed = (uint64_t)v, 0);
	case 'Q': *why = "-Q LO-HI:WEIGHT,...: boxes of lengths 1 to 256 MiB, weights > 0";
		return parse_histogram(arg, &o->p.qhist);
	case 'D': *why = "-D LO-HI:WEIGHT,...: boxes of lengths 1 to 256 MiB, weights > 0";
		return parse_histogram(arg, &o->p.dhist);
	default: *why = "unknown option";
		return -1;
	}
}

/* One option of the runs (-c -S -y -a -r -E -V, else the model's) into o. */
static int parse_option(int opt, char *arg, struct options *o, const char **why)
{
	static const char *const syncs[] = {"nosync", "sync"};
	long long v;

	switch (opt) {
	case 'c': *why = "-c SPEED,...: numbers > 0 (at most 16)";
		return (o->n_speeds = parse_speeds(arg, o->speeds)) < 0 ? -1 : 0;
	case 'S': *why = "-S STRATEGY,...: mw, ww-coll, ww-posix or ww-list";
		return (o->n_strategies = parse_names(arg, strategy_names, N_STRATEGIES,
						      (int *)o->strategies)) < 0 ? -1 : 0;
	case 'y': *why = "-y nosync|sync,...";
		return (o->n_syncs = parse_names(arg, syncs, 2, o->syncs)) < 0 ? -1 : 0;
	case 'a': *why = "-a off|METHOD:PROTOCOL,...";
		return (o->n_atomics = parse_atomics(arg, o->atomics)) < 0 ? -1 : 0;
	case 'r': *why = "-r REPS: 1 to 1000";
		return parse_int(arg, 1, 1000, &v) ? -1 : (o->reps = (int)v, 0);
	case 'E': o->p.write_at_end = 1;
		return 0;
	case 'V': o->verify = 1;
		return 0;
	default:
		return parse_model_option(opt, arg, o, why);
	}
}

/* The defaults (§6.2.2), then the command line; 0, or -1 with why set. */
static int parse_args(int argc, char **argv, struct options *o, const char **why)
{
	static char all_strategies[] = "mw,ww-coll,ww-posix,ww-list";
	static char nosync[] = "nosync", off[] = "off", one[] = "1";
	int opt;

	memset(o, 0, sizeof(*o));
	o->p = (struct params){.seed = 1, .queries = 20, .fragments = 128, .rmin = 1000,
			       .rmax = 2000, .min_result = 6, .startup_s = 0.05, .s_per_mb = 1.0};
	o->p.qhist.n = o->p.dhist.n = (int)(sizeof(nt_boxes) / sizeof(nt_boxes[0]));
	memcpy(o->p.qhist.box, nt_boxes, sizeof(nt_boxes));
	memcpy(o->p.dhist.box, nt_boxes, sizeof(nt_boxes));
	o->reps = 1;
	parse_option('S', all_strategies, o, why);
	parse_option('y', nosync, o, why);
	parse_option('a', off, o, why);
	parse_option('c', one, o, why);
	while ((opt = getopt(argc, argv, "q:f:n:m:C:s:c:S:y:a:Q:D:r:EV")) != -1)
		if (parse_option(opt, optarg ? optarg : (char *)"", o, why))
			return -1;
	if (optind + 1 != argc) {
		*why = "one output NAME is needed";
		return -1;
	}
	o->name = argv[optind];
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	const char *why = "";
	int rank, nprocs;
	MPI_Comm wcomm;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (parse_args(argc, argv, &o, &why) || (nprocs < 2 && (why = "at least 2 ranks are "
								"needed: a master and a worker"))) {
		if (rank == 0)
			fprintf(stderr, "mpi_s3asim: %s\nusage: mpi_s3asim [-q QUERIES] [-f FRAGMENTS] "
				"[-n MIN:MAX] [-m MIN_RESULT] [-c SPEED,...] [-C STARTUP_S:S_PER_MB] "
				"[-s SEED] [-S STRATEGY,...] [-y nosync|sync,...] "
				"[-a off|METHOD:PROTOCOL,...] [-Q HIST] [-D HIST] [-r REPS] [-E] [-V] "
				"NAME\n", why);
		MPI_Finalize();
		return 2;
	}
	MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &wcomm);
	for (int rep = 0; rep < o.reps; rep++)
		for (int s = 0; s < o.n_strategies; s++)
			for (int y = 0; y < o.n_syncs; y++)
				for (int a = 0; a < o.n_atomics; a++)
					for (int sp = 0; sp < o.n_speeds; sp++) {
						struct config c = {o.strategies[s], o.syncs[y],
								   o.speeds[sp], o.atomics[a]};

						run_config(&o, &c, rep, rank, nprocs, wcomm);
					}
	if (wcomm != MPI_COMM_NULL)
		MPI_Comm_free(&wcomm);
	MPI_Finalize();
	return 0;
}
