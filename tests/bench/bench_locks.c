/*
 * bench_locks.c - the dissertation's lock benchmark (seed 001, §7.5.1,
 * Figs. 7.3-7.6) on libtessera's byte-range locks, against a running
 * cluster: separate client processes (fork, each its own tessera_connect)
 * take 1-byte write locks `spacing` bytes apart on one file striped over
 * every storage daemon (64 KiB strips, as the dissertation's PVFS2).
 *
 *   tessera-bench-locks -c CONFIG [-o CSV] [--clients N] [--uncontended]
 *       [--contention] [--false-sharing] [--locks N] [--posix-locks N] [--full] [--reps R]
 *       [--spacing B]... [--methods LIST] [--protocols LIST] [--block B]
 *       [--pid-dir DIR]
 *   tessera-bench-locks --report CSV
 *
 * Runs (no flag: all three):
 *   --uncontended  Figs. 7.3 (64 B) and 7.4 (4096 B): clients (default:
 *                  as many as storage daemons) each acquire their set,
 *                  all wait at a barrier, then release it; every method
 *                  with the two-phase and one-try protocols (the
 *                  dissertation lets one-try stand for alt-try, which
 *                  does the same without overlap).
 *   --contention   Figs. 7.5 and 7.6: the clients' sets overlap by 0, 25,
 *                  50, 75 and 100 %; every method x protocol.
 *   --false-sharing  §7.1's case: the clients' locks interleave (lock j of
 *                  client i at (j x clients + i) x spacing), so no byte is
 *                  wanted twice but blocks are shared: byte-range methods
 *                  do not conflict, block does; every protocol.
 *
 * Methods (the lock messages each sends: docs/benchmarks.md):
 *   posix         the dissertation's POSIX locks (§7.2.1): one lock request
 *                 per region, all taken under the protocol before the
 *                 clock stops (tessera_lock_list_split, SPLIT_REGION);
 *   posix-seq     what an fcntl user does: one tessera_lock_range per
 *                 region, one after another (uncontended runs only);
 *   list          tessera_lock_list with the config's lock_list_batch
 *                 (one request per daemon);
 *   list64        the same with 64 regions per message, PVFS2's split,
 *                 still one request per daemon (released by one message
 *                 per daemon);
 *   list64-split  the dissertation's list locks (§7.2.2): one request per
 *                 64-region message, released by one message each
 *                 (SPLIT_MESSAGE);
 *   datatype      tessera_lock_dtype of an hvector;
 *   block         block-granular locks (tessera_lock_blocks, --block B,
 *                 4096): the regions rounded out to whole blocks, as
 *                 Lustre's and GPFS's locks, the false-sharing baseline of
 *                 §7.1; counted in the regions asked for.
 *
 * Overlap, as §7.5.1 has it: "the locks began with no contention (lined
 * up one after the other) and then overlap each other at 25%, 50%, 75%,
 * and 100% (full overlap)". Client i's set spans S = locks x spacing
 * bytes from i x S x (1 - overlap): at 0 % the sets follow one another,
 * at p % each set shares p % of its locks (the same bytes) with the next
 * client's, at 100 % every client wants the same bytes. Write locks
 * exclude each other, so a client cannot hold its set across a barrier
 * while another waits for it: in these runs each client releases as soon
 * as it holds its whole set, and the acquire time is from the start until
 * the last client holds its set (its waiting for others' releases
 * included).
 *
 * Figures: aggregate locks per second = all clients' locks / (latest end
 * - earliest start), acquire and release. Where the time goes: client CPU
 * (getrusage in each client), storage-daemon CPU (the scheduler's account
 * of the daemons named by --pid-dir's ios*.pid), lock messages
 * (tessera_lock_info) and TCP bytes both ways (TCP_INFO of the clients'
 * sockets), per lock. The clients live across the runs (connecting costs
 * a tenth of a second) and ping every daemon before any clock starts.
 *
 * POSIX costs a lock request per lock (posix-seq a round trip too), so
 * both are measured on --posix-locks locks per client (8192; --full:
 * --locks) and reported in locks/s like the rest. (A storage daemon's lock table holds at most 65,536 lock
 * requests, so --full's POSIX runs fail once clients x locks / daemons
 * passes that.) Every row goes to the CSV (one per repetition); --report prints
 * the figures of a CSV beside the dissertation's, the ratios and the
 * targets. Figures, not tests: nothing here asserts a time.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <time.h>
#include <unistd.h>

#include "tdl.h"
#include "tessera.h"

#define PROG "tessera-bench-locks"
#define STRIP (64 * 1024)
#define MAX_CLIENTS 64
#define MAX_SPACINGS 8
#define POINT_TIMEOUT_S 900

enum { M_POSIX, M_POSIX_SEQ, M_LIST, M_LIST64, M_LIST64_SPLIT, M_DTYPE, M_BLOCK, N_METHODS };
static const char *const method_names[N_METHODS] = {
	"posix", "posix-seq", "list", "list64", "list64-split", "datatype", "block"
};
static const char *const proto_names[] = { "two-phase", "one-try", "alt-try" };
static const int overlaps[] = { 0, 25, 50, 75, 100 };
#define N_OVERLAPS (int)(sizeof(overlaps) / sizeof(overlaps[0]))

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* ------------------------------------------------------------ costs */

/* What a process has spent so far. */
struct costs {
	double cpu_s;         /* user + system, every thread */
	uint64_t tcp_bytes;   /* sent (acked) + received on its TCP sockets */
};

/* Bytes on every TCP socket this process holds (libfabric's tcp provider
 * opens them; the library offers no byte counter of its own). */
static uint64_t tcp_bytes(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct tcp_info ti;
		socklen_t len = sizeof(ti);
		int fd = atoi(e->d_name);
		struct stat st;

		if (!isdigit((unsigned char)e->d_name[0]) || fd == dirfd(d) || fstat(fd, &st) ||
		    !S_ISSOCK(st.st_mode))
			continue;
		memset(&ti, 0, sizeof(ti));
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
		    len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(uint64_t))
			sum += ti.tcpi_bytes_acked + ti.tcpi_bytes_received;
	}
	closedir(d);
	return sum;
}

static struct costs costs_now(void)
{
	struct rusage ru;
	struct costs c = { 0, tcp_bytes() };

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return c;
}

/* CPU seconds the storage daemons have used (0 without their PIDs). */
struct daemons {
	pid_t pid[256];
	int n;
};

static void daemons_find(const char *dir, struct daemons *d)
{
	d->n = 0;
	for (int i = 0; dir && i < 256; i++) {
		char path[4096];
		FILE *f;
		long pid;

		snprintf(path, sizeof(path), "%s/ios%d.pid", dir, i);
		if (!(f = fopen(path, "r")))
			break;
		if (fscanf(f, "%ld", &pid) == 1)
			d->pid[d->n++] = (pid_t)pid;
		fclose(f);
	}
}

/* CPU seconds the storage daemons' threads have run, from the scheduler's
 * nanosecond account (/proc/PID/task/TID/schedstat; /proc/PID/stat counts
 * in clock ticks, too coarse for a tenth of a second). */
static double daemons_cpu(const struct daemons *d)
{
	double sum = 0;

	for (int i = 0; i < d->n; i++) {
		char path[64];
		struct dirent *e;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%ld/task", (long)d->pid[i]);
		if (!(dir = opendir(path)))
			continue;
		while ((e = readdir(dir))) {
			char stat[128];
			unsigned long long ns;
			FILE *f;

			if (!isdigit((unsigned char)e->d_name[0]))
				continue;
			snprintf(stat, sizeof(stat), "%s/%.20s/schedstat", path, e->d_name);
			if (!(f = fopen(stat, "r")))
				continue;
			if (fscanf(f, "%llu", &ns) == 1)
				sum += (double)ns / 1e9;
			fclose(f);
		}
		closedir(dir);
	}
	return sum;
}

static double load1(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l = 0;

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = 0;
		fclose(f);
	}
	return l;
}

/* ------------------------------------------------------------ clients */

struct point {
	const char *fig;          /* "7.3" ... or "-" */
	int contention;           /* release at once (overlap runs) */
	uint64_t spacing;
	int overlap;              /* percent */
	int method, protocol;     /* method -1: the clients exit */
	uint64_t locks;           /* per client */
	uint64_t block;           /* the block method's block size */
	int interleave;           /* false sharing: the clients' locks alternate (their count) */
};

/* One client's account of a point, in shared memory. */
struct client_result {
	double t[4];              /* acquire start, end; release start, end */
	struct costs c[4];        /* at those times */
	uint64_t messages;        /* lock messages to acquire */
	uint64_t release_messages;
	uint64_t optimistic_rounds, blocking_rounds, partial_releases;
	int rc;
	char err[256];
};

/* What the parent and its clients share (MAP_SHARED). */
struct shared {
	struct point point;       /* the next point, written before its go */
	struct client_result r[MAX_CLIENTS];
};

/* The client processes, which live across points (so connecting, which
 * takes a tenth of a second, is paid once), and the pipes that pace them:
 * each writes a byte to `ready` at every barrier and waits for a byte on
 * its own go pipe (its own, so a quick client cannot take a slow one's). */
struct clients {
	int n;
	pid_t pid[MAX_CLIENTS];
	int ready;                /* read end */
	int go[MAX_CLIENTS];      /* write ends */
	int alive;
};

struct run_ctx {
	const char *conf, *conf64; /* the config, and a copy with lock_list_batch = 64 */
	struct daemons daemons;
	uint32_t servers;
	struct shared *shared;
	struct clients clients;
};

static void client_fail(struct client_result *r, tessera_fs *fs, int rc, const char *what)
{
	if (r->rc)
		return;
	r->rc = rc ? rc : -EIO;
	snprintf(r->err, sizeof(r->err), "%s: %.200s", what, fs ? tessera_errmsg(fs) : strerror(-rc));
	for (char *p = r->err; *p; p++) /* the CSV has no quoting */
		if (*p == ',' || *p == '\n')
			*p = ';';
}

static void client_sync(int ready_fd, int go_fd)
{
	char c = 'r';

	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
		_exit(3); /* the parent is gone */
}

/* A client's connection (two: list64 needs its own lock_list_batch). */
struct conn {
	tessera_fs *fs;
	tessera_file *f;
	char err[256];            /* why not, when f is NULL */
};

static int conn_open(const struct run_ctx *ctx, const char *conf, struct conn *c)
{
	struct tessera_layout l = { .strip_size = STRIP, .count = ctx->servers };
	struct tessera_ping pings[1 + 256];
	struct client_result scratch = { .rc = 0 }, *r = &scratch;
	char err[512];
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = tessera_connect(conf, &c->fs, err, sizeof(err)))) {
		c->fs = NULL;
		snprintf(c->err, sizeof(c->err), "connect: %.200s", err);
		return rc;
	}
	if ((rc = tessera_open(c->fs, "/lockbench", O_RDWR | O_CREAT, 0644, &l, &c->f))) {
		c->f = NULL;
		client_fail(r, c->fs, rc, "open /lockbench");
	} else if ((rc = tessera_ping(c->fs, pings, sizeof(pings) / sizeof(pings[0]))) < 0) {
		/* connections to every daemon are made before any clock starts */
		client_fail(r, c->fs, rc, "ping");
		tessera_close(c->f);
		c->f = NULL;
	}
	if (rc < 0)
		memcpy(c->err, r->err, sizeof(c->err));
	return rc < 0 ? rc : 0;
}

static void conn_close(struct conn *c)
{
	if (c->f)
		tessera_close(c->f);
	if (c->fs)
		tessera_disconnect(c->fs);
}

/* A client's set of locks at one point: n ranges of 1 byte spacing
 * apart from base, as offsets and lengths (POSIX, list) or an hvector
 * (datatype); and the locks that hold them. */
struct lock_set {
	uint64_t n, base;
	uint64_t *offs, *lens;
	struct tdl_dataloop *byte, *type;
	tessera_lock **locks;
	size_t held;
};

/* Describes client me's set; a failure is noted in r. */
static void set_describe(const struct point *pt, int me, struct lock_set *s,
			 struct client_result *r)
{
	uint64_t stride = pt->spacing * (uint64_t)(pt->interleave ? pt->interleave : 1);

	s->n = pt->locks;
	/* whole locks, so overlapping sets share exactly the same bytes;
	 * interleaved, client me takes every interleave-th lock from its own */
	s->base = pt->interleave ? (uint64_t)me * pt->spacing :
		  (uint64_t)me * (s->n * (uint64_t)(100 - pt->overlap) / 100) * pt->spacing;
	s->locks = calloc(pt->method == M_POSIX_SEQ ? s->n : 1, sizeof(*s->locks));
	if (pt->method != M_DTYPE) {
		s->offs = malloc(s->n * sizeof(*s->offs));
		s->lens = malloc(s->n * sizeof(*s->lens));
	}
	if (!s->locks || (pt->method != M_DTYPE && (!s->offs || !s->lens)))
		client_fail(r, NULL, -ENOMEM, "describing the set");
	for (uint64_t i = 0; s->offs && s->lens && i < s->n; i++) {
		s->offs[i] = s->base + i * stride;
		s->lens[i] = 1;
	}
	if (pt->method == M_DTYPE &&
	    (tdl_bytes(1, &s->byte) ||
	     tdl_hvector((int64_t)s->n, 1, (int64_t)stride, s->byte, &s->type)))
		client_fail(r, NULL, -ENOMEM, "building the hvector");
}

/* Locks the set by the point's method: a lock per range, one after
 * another (posix-seq), or one lock of them all. */
static void set_acquire(const struct point *pt, struct conn *conn, struct lock_set *s,
			struct client_result *r)
{
	int rc = 0;

	if (pt->method == M_POSIX_SEQ) {
		for (uint64_t i = 0; i < s->n && !rc; i++) {
			rc = tessera_lock_range(conn->f, TESSERA_LOCK_WRITE, s->offs[i], 1,
						pt->protocol, &s->locks[s->held]);
			if (!rc)
				s->held++;
		}
	} else if (pt->method == M_DTYPE) {
		rc = tessera_lock_dtype(conn->f, TESSERA_LOCK_WRITE, s->type, (int64_t)s->base, 0, s->n,
					pt->protocol, &s->locks[0]);
		s->held = !rc;
	} else if (pt->method == M_BLOCK) {
		rc = tessera_lock_blocks(conn->f, TESSERA_LOCK_WRITE, s->offs, s->lens, s->n, pt->block,
					 pt->protocol, &s->locks[0]);
		s->held = !rc;
	} else if (pt->method == M_POSIX || pt->method == M_LIST64_SPLIT) {
		rc = tessera_lock_list_split(conn->f, TESSERA_LOCK_WRITE, s->offs, s->lens, s->n,
					     pt->method == M_POSIX ? TESSERA_LOCK_SPLIT_REGION :
					     TESSERA_LOCK_SPLIT_MESSAGE, pt->protocol, &s->locks[0]);
		s->held = !rc;
	} else {
		rc = tessera_lock_list(conn->f, TESSERA_LOCK_WRITE, s->offs, s->lens, s->n,
				       pt->protocol, &s->locks[0]);
		s->held = !rc;
	}
	if (rc)
		client_fail(r, conn->fs, rc, "acquire");
}

/* The held locks' protocol counts into r. */
static void set_count(const struct lock_set *s, struct client_result *r)
{
	for (size_t i = 0; i < s->held; i++) {
		struct tessera_lock_info info;

		tessera_lock_info(s->locks[i], &info);
		r->messages += info.messages;
		r->optimistic_rounds += info.optimistic_rounds;
		r->blocking_rounds += info.blocking_rounds;
		r->partial_releases += info.partial_releases;
		r->release_messages += tessera_lock_requests(s->locks[i]);
	}
}

static void set_release(struct conn *conn, struct lock_set *s, struct client_result *r)
{
	for (size_t i = 0; i < s->held; i++) {
		int rc = tessera_unlock(s->locks[i]);

		if (rc)
			client_fail(r, conn->fs, rc, "release");
	}
}

static void set_free(struct lock_set *s)
{
	tdl_free(s->type);
	tdl_free(s->byte);
	free(s->locks);
	free(s->offs);
	free(s->lens);
}

/* One point as client `me`: describe its set, then the phases the parent
 * paces (barriers: described; acquired; released). */
static void client_point(struct shared *sh, int me, struct conn *conn, int ready_fd, int go_fd)
{
	const struct point *pt = &sh->point;
	struct client_result *r = &sh->r[me];
	struct lock_set s = { 0 };

	memset(r, 0, sizeof(*r));
	if (!conn->f) {
		r->rc = -ENOTCONN;
		snprintf(r->err, sizeof(r->err), "%s", conn->err);
	}
	if (!r->rc)
		set_describe(pt, me, &s, r);
	client_sync(ready_fd, go_fd);
	/* acquire (and, under contention, release at once) */
	r->c[0] = costs_now();
	r->t[0] = now_s();
	if (!r->rc)
		set_acquire(pt, conn, &s, r);
	r->t[1] = now_s();
	r->c[1] = costs_now();
	set_count(&s, r);
	if (!pt->contention)
		client_sync(ready_fd, go_fd);
	/* release */
	r->c[2] = costs_now();
	r->t[2] = now_s();
	set_release(conn, &s, r);
	r->t[3] = now_s();
	r->c[3] = costs_now();
	if (pt->contention)
		client_sync(ready_fd, go_fd);
	client_sync(ready_fd, go_fd);
	set_free(&s);
}

/* A client process: connect, then run the points it is given. */
static void client_main(const struct run_ctx *ctx, int me, int ready_fd, int go_fd)
{
	struct shared *sh = ctx->shared;
	struct conn plain, list64;

	conn_open(ctx, ctx->conf, &plain);
	conn_open(ctx, ctx->conf64, &list64);
	for (;;) {
		client_sync(ready_fd, go_fd); /* the parent has written the point */
		if (sh->point.method < 0)
			break;
		client_point(sh, me, sh->point.method == M_LIST64 ||
				     sh->point.method == M_LIST64_SPLIT ? &list64 : &plain,
			     ready_fd, go_fd);
	}
	conn_close(&list64);
	conn_close(&plain);
}

/* Wait until every client has written its ready byte; 0, or -1 if a
 * client died or the point ran out of time. */
static int wait_ready(const struct clients *cl, double deadline)
{
	int got = 0;

	while (got < cl->n) {
		struct pollfd p = { cl->ready, POLLIN, 0 };
		char buf[MAX_CLIENTS];
		int k = poll(&p, 1, 200);

		if (k > 0) {
			ssize_t m = read(cl->ready, buf, (size_t)(cl->n - got));

			if (m > 0)
				got += (int)m;
			continue;
		}
		for (int i = 0; i < cl->n; i++) {
			int st;

			if (waitpid(cl->pid[i], &st, WNOHANG) == cl->pid[i]) {
				fprintf(stderr, PROG ": client %d exited early (status %d)\n", i, st);
				return -1;
			}
		}
		if (now_s() > deadline) {
			fprintf(stderr, PROG ": clients did not finish within %d s\n",
				POINT_TIMEOUT_S);
			return -1;
		}
	}
	return 0;
}

static void go(const struct clients *cl)
{
	for (int i = 0; i < cl->n; i++)
		if (write(cl->go[i], "g", 1) != 1)
			die("writing to client %d's pipe: %s", i, strerror(errno));
}

static void clients_start(struct run_ctx *ctx, int n)
{
	struct clients *cl = &ctx->clients;
	int ready[2], gop[MAX_CLIENTS][2];

	if (pipe(ready))
		die("pipe: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (pipe(gop[i]))
			die("pipe: %s", strerror(errno));
	fflush(NULL);
	cl->n = n;
	for (int i = 0; i < n; i++) {
		cl->pid[i] = fork();
		if (cl->pid[i] < 0)
			die("fork: %s", strerror(errno));
		if (cl->pid[i] == 0) {
			close(ready[0]);
			for (int j = 0; j < n; j++) {
				close(gop[j][1]);
				if (j != i)
					close(gop[j][0]);
			}
			for (int j = 0; j < i; j++)
				close(cl->go[j]); /* earlier siblings' go pipes */
			client_main(ctx, i, ready[1], gop[i][0]);
			_exit(0);
		}
		close(gop[i][0]);
		cl->go[i] = gop[i][1];
	}
	close(ready[1]);
	cl->ready = ready[0];
	cl->alive = 1;
}

/* Tell the clients to exit (kill them if they cannot hear it). */
static void clients_stop(struct run_ctx *ctx, int kill_them)
{
	struct clients *cl = &ctx->clients;

	if (!cl->alive)
		return;
	if (kill_them) {
		for (int i = 0; i < cl->n; i++)
			kill(cl->pid[i], SIGKILL);
	} else {
		ctx->shared->point.method = -1;
		go(cl);
	}
	for (int i = 0; i < cl->n; i++) {
		waitpid(cl->pid[i], NULL, 0);
		close(cl->go[i]);
	}
	close(cl->ready);
	cl->alive = 0;
}

/* What the CSV holds of one run. */
struct row {
	char fig[8], method[16], protocol[16], error[256];
	uint64_t spacing, locks;
	int servers, clients, overlap, rep;
	double acquire_s, release_s, acquire_lps, release_lps;
	double msgs_acquire, msgs_release, bytes_acquire, bytes_release;
	double ccpu_acquire, ccpu_release, scpu_acquire, scpu_release;
	double opt_rounds, blocking_rounds, partial_releases, load;
};

static const char csv_header[] =
	"fig,spacing,servers,clients,overlap,method,protocol,locks_per_client,rep,"
	"acquire_s,release_s,acquire_locks_per_s,release_locks_per_s,"
	"msgs_acquire,msgs_release,bytes_acquire,bytes_release,"
	"client_cpu_acquire_s,client_cpu_release_s,server_cpu_acquire_s,server_cpu_release_s,"
	"optimistic_rounds,blocking_rounds,partial_releases,load1,error";

static void csv_write(FILE *f, const struct row *r)
{
	fprintf(f, "%s,%llu,%d,%d,%d,%s,%s,%llu,%d,%.6f,%.6f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
		"%.4f,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.2f,%s\n",
		r->fig, (unsigned long long)r->spacing, r->servers, r->clients, r->overlap,
		r->method, r->protocol, (unsigned long long)r->locks, r->rep, r->acquire_s,
		r->release_s, r->acquire_lps, r->release_lps, r->msgs_acquire, r->msgs_release,
		r->bytes_acquire, r->bytes_release, r->ccpu_acquire, r->ccpu_release,
		r->scpu_acquire, r->scpu_release, r->opt_rounds, r->blocking_rounds,
		r->partial_releases, r->load, r->error);
}

/* Run one point on the clients (started if they are not running). */
static int run_point(struct run_ctx *ctx, const struct point *pt, int rep, struct row *out)
{
	struct clients *cl = &ctx->clients;
	double deadline = now_s() + POINT_TIMEOUT_S, cpu[3] = { 0, 0, 0 };
	int n;

	if (!cl->alive)
		clients_start(ctx, cl->n);
	n = cl->n;
	memset(out, 0, sizeof(*out));
	snprintf(out->fig, sizeof(out->fig), "%s", pt->fig);
	snprintf(out->method, sizeof(out->method), "%s", method_names[pt->method]);
	snprintf(out->protocol, sizeof(out->protocol), "%s", proto_names[pt->protocol]);
	out->spacing = pt->spacing;
	out->locks = pt->locks;
	out->servers = (int)ctx->servers;
	out->clients = n;
	out->overlap = pt->overlap;
	out->rep = rep;
	out->load = load1();
	/* barriers: at the loop's top (then the point is written); described;
	 * all hold their sets (under contention: all are done); all released */
	for (int phase = 0; phase < 4; phase++) {
		if (wait_ready(cl, deadline)) {
			clients_stop(ctx, 1);
			snprintf(out->error, sizeof(out->error), "a client died or hung");
			return -1;
		}
		if (phase == 0)
			ctx->shared->point = *pt;
		else
			cpu[phase - 1] = daemons_cpu(&ctx->daemons);
		go(cl);
	}

	double a0 = 1e300, a1 = 0, r0 = 1e300, r1 = 0;

	for (int i = 0; i < n; i++) {
		const struct client_result *c = &ctx->shared->r[i];

		if (c->rc && !out->error[0])
			snprintf(out->error, sizeof(out->error), "client %d: %.200s", i, c->err);
		a0 = c->t[0] < a0 ? c->t[0] : a0;
		a1 = c->t[1] > a1 ? c->t[1] : a1;
		r0 = c->t[2] < r0 ? c->t[2] : r0;
		r1 = c->t[3] > r1 ? c->t[3] : r1;
		out->msgs_acquire += (double)c->messages;
		out->msgs_release += (double)c->release_messages;
		out->bytes_acquire += (double)(c->c[1].tcp_bytes - c->c[0].tcp_bytes);
		out->bytes_release += (double)(c->c[3].tcp_bytes - c->c[2].tcp_bytes);
		out->ccpu_acquire += c->c[1].cpu_s - c->c[0].cpu_s;
		out->ccpu_release += c->c[3].cpu_s - c->c[2].cpu_s;
		out->opt_rounds += (double)c->optimistic_rounds;
		out->blocking_rounds += (double)c->blocking_rounds;
		out->partial_releases += (double)c->partial_releases;
	}
	out->acquire_s = a1 - a0;
	out->release_s = r1 - r0;
	out->acquire_lps = out->error[0] ? 0 : (double)pt->locks * n / out->acquire_s;
	out->release_lps = out->error[0] ? 0 : (double)pt->locks * n / out->release_s;
	out->scpu_acquire = cpu[1] - cpu[0];
	out->scpu_release = cpu[2] - cpu[1];
	return out->error[0] ? -1 : 0;
}

/* ------------------------------------------------------------ the dissertation */

/* The figures §7.5.1 states in its text (the PVFS2 prototype, 32 servers
 * and 32 clients at most, on the Feynman cluster); every other point of
 * Figs. 7.3-7.6 exists only as a curve. metric: 'a' acquire, 'r' release;
 * protocol NULL: any. */
struct paper {
	const char *fig;
	char metric;
	const char *method, *protocol;
	double value;
	const char *note;
};

static const struct paper paper_figures[] = {
	{ "7.3", 'a', "datatype", "one-try", 2059165, "max, <=32 servers" },
	{ "7.3", 'a', "list64", "one-try", 1123928, "at that max" },
	{ "7.3", 'a', "posix", "one-try", 40532, "at that max" },
	{ "7.3", 'r', "datatype", NULL, 55721183, "32 servers" },
	{ "7.3", 'r', "list64", NULL, 55721183.0 / 20, "'20x' below dtype" },
	{ "7.3", 'r', "posix", NULL, 55721183.0 / 3000, "'~3000x' below" },
	{ "7.4", 'r', "datatype", NULL, 55721183, "'~ Fig 7.3b'" },
	{ "7.4", 'r', "list64", NULL, 55721183.0 / 20, "'~ Fig 7.3b'" },
	{ "7.4", 'r', "posix", NULL, 55721183.0 / 3000, "'~ Fig 7.3b'" },
	{ "7.6", 'a', "datatype", "alt-try", 2062079, "max over overlaps" },
};

static const struct paper *paper_find(const char *fig, char metric, const char *method,
				      const char *protocol)
{
	/* the dissertation's list locks: 64 regions a message, PVFS2's split;
	 * list64 (one request per daemon) and list64-split (one per message,
	 * as §7.2.2) both stand beside them */
	if (!strcmp(method, "list64-split"))
		method = "list64";
	for (size_t i = 0; i < sizeof(paper_figures) / sizeof(paper_figures[0]); i++) {
		const struct paper *p = &paper_figures[i];

		if (!strcmp(p->fig, fig) && p->metric == metric && !strcmp(p->method, method) &&
		    (!p->protocol || !strcmp(p->protocol, protocol)))
			return p;
	}
	return NULL;
}

static void paper_cell(char *buf, size_t len, const char *fig, char metric, const char *method,
		       const char *protocol)
{
	const struct paper *p = paper_find(fig, metric, method, protocol);

	if (p)
		snprintf(buf, len, "%.0f (%s)", p->value, p->note);
	else if (!strcmp(method, "list"))
		snprintf(buf, len, "- (no 8192-region list there)");
	else if (!strcmp(method, "posix-seq"))
		snprintf(buf, len, "- (not a method there: independent locks)");
	else if (!strcmp(method, "block"))
		snprintf(buf, len, "- (block locks: Lustre in Figs. 7.7, 7.9 only)");
	else
		snprintf(buf, len, "curve only");
}

/* ------------------------------------------------------------ report */

struct table {
	struct row *rows;
	size_t n, cap;
};

static int field_split(char *line, char **f, int max)
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p && n < max; p++)
		if (*p == ',') {
			*p = '\0';
			f[n++] = p + 1;
		}
	return n;
}

static void table_load(struct table *t, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[2048];

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *fl[32];
		struct row r;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "fig,", 4) || !line[0])
			continue;
		if (field_split(line, fl, 32) != 26)
			die("%s: a line without 26 fields", path);
		memset(&r, 0, sizeof(r));
		snprintf(r.fig, sizeof(r.fig), "%s", fl[0]);
		r.spacing = strtoull(fl[1], NULL, 10);
		r.servers = atoi(fl[2]);
		r.clients = atoi(fl[3]);
		r.overlap = atoi(fl[4]);
		snprintf(r.method, sizeof(r.method), "%s", fl[5]);
		snprintf(r.protocol, sizeof(r.protocol), "%s", fl[6]);
		r.locks = strtoull(fl[7], NULL, 10);
		r.rep = atoi(fl[8]);
		double *d[] = { &r.acquire_s, &r.release_s, &r.acquire_lps, &r.release_lps,
				&r.msgs_acquire, &r.msgs_release, &r.bytes_acquire, &r.bytes_release,
				&r.ccpu_acquire, &r.ccpu_release, &r.scpu_acquire, &r.scpu_release,
				&r.opt_rounds, &r.blocking_rounds, &r.partial_releases, &r.load };
		for (int i = 0; i < 16; i++)
			*d[i] = strtod(fl[9 + i], NULL);
		snprintf(r.error, sizeof(r.error), "%s", fl[25]);
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 256;
			t->rows = realloc(t->rows, t->cap * sizeof(*t->rows));
			if (!t->rows)
				die("out of memory");
		}
		t->rows[t->n++] = r;
	}
	fclose(f);
}

/* The mean over repetitions of one point (rows with errors left out);
 * 0 when there is none. */
static int table_mean(const struct table *t, const char *fig, int servers, int overlap,
		      const char *method, const char *protocol, struct row *out)
{
	int k = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];

		if (strcmp(r->fig, fig) || (servers && r->servers != servers) ||
		    r->overlap != overlap || strcmp(r->method, method) ||
		    strcmp(r->protocol, protocol) || r->error[0])
			continue;
		if (!k)
			*out = *r;
		else {
			out->acquire_s += r->acquire_s;
			out->release_s += r->release_s;
			out->msgs_acquire += r->msgs_acquire;
			out->msgs_release += r->msgs_release;
			out->bytes_acquire += r->bytes_acquire;
			out->bytes_release += r->bytes_release;
			out->ccpu_acquire += r->ccpu_acquire;
			out->ccpu_release += r->ccpu_release;
			out->scpu_acquire += r->scpu_acquire;
			out->scpu_release += r->scpu_release;
			out->load += r->load;
		}
		k++;
	}
	if (!k)
		return 0;
	double *sums[] = { &out->acquire_s, &out->release_s, &out->msgs_acquire, &out->msgs_release,
			   &out->bytes_acquire, &out->bytes_release, &out->ccpu_acquire,
			   &out->ccpu_release, &out->scpu_acquire, &out->scpu_release, &out->load };
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		*sums[i] /= k;
	/* rates from the mean times, as the dissertation averages runs */
	out->acquire_lps = (double)out->locks * out->clients / out->acquire_s;
	out->release_lps = (double)out->locks * out->clients / out->release_s;
	return k;
}

/* An error row of that point, if every run of it failed. */
static const char *table_error(const struct table *t, const char *fig, int servers, int overlap,
			       const char *method, const char *protocol)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];

		if (!strcmp(r->fig, fig) && r->servers == servers && r->overlap == overlap &&
		    !strcmp(r->method, method) && !strcmp(r->protocol, protocol) && r->error[0])
			return r->error;
	}
	return NULL;
}

static int table_max_servers(const struct table *t, const char *fig)
{
	int m = 0;

	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->rows[i].fig, fig) && t->rows[i].servers > m)
			m = t->rows[i].servers;
	return m;
}

static uint64_t table_locks(const struct table *t, const char *fig, const char *method)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->rows[i].fig, fig) && !strcmp(t->rows[i].method, method))
			return t->rows[i].locks;
	return 0;
}

static void fmt_rate(char *buf, size_t len, double v)
{
	if (v >= 1e6)
		snprintf(buf, len, "%.2f M", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1f K", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
}

/* Figs. 7.3 / 7.4: rate against clients = servers. */
static void report_scaling(const struct table *t, const char *fig, uint64_t spacing)
{
	int maxn = table_max_servers(t, fig);
	uint64_t full = table_locks(t, fig, "datatype"), posix = table_locks(t, fig, "posix");

	if (!maxn)
		return;
	printf("\n== Fig. %s: no contention, 1-byte write locks %llu B apart, clients = servers\n",
	       fig, (unsigned long long)spacing);
	printf("   (%llu locks per client; POSIX measured on %llu per client, in locks/s)\n",
	       (unsigned long long)full, (unsigned long long)posix);
	for (int m = 0; m < 2; m++) {
		char metric = m ? 'r' : 'a';

		printf("\n%s locks/s (aggregate)\n", m ? "(b) release" : "(a) acquire");
		printf("%-22s", "method-protocol");
		for (int s = 1; s <= maxn; s++)
			printf(" %10s%d", "N=", s);
		printf("  %s\n", "dissertation (PVFS2, Feynman cluster)");
		for (int me = 0; me < N_METHODS; me++)
			for (int p = 0; p < 2; p++) {
				char name[40], cell[80];

				snprintf(name, sizeof(name), "%s-%s", method_names[me], proto_names[p]);
				printf("%-22s", name);
				for (int s = 1; s <= maxn; s++) {
					struct row r;
					char v[32];

					if (table_mean(t, fig, s, 0, method_names[me], proto_names[p], &r))
						fmt_rate(v, sizeof(v), m ? r.release_lps : r.acquire_lps);
					else
						snprintf(v, sizeof(v), table_error(t, fig, s, 0,
							 method_names[me], proto_names[p]) ? "failed" : "-");
					printf(" %11s", v);
				}
				paper_cell(cell, sizeof(cell), fig, metric, method_names[me],
					   proto_names[p]);
				printf("  %s\n", cell);
			}
	}
	printf("\nratios (acquire; release), one-try\n%-22s", "");
	for (int s = 1; s <= maxn; s++)
		printf(" %16s%d", "N=", s);
	printf("  dissertation\n");
	static const struct {
		const char *num, *den, *paper_a, *paper_r;
	} ratios[] = {
		{ "datatype", "list", "-", "-" },
		{ "datatype", "list64", "1.8", "20" },
		{ "datatype", "list64-split", "1.8", "20" },
		{ "datatype", "posix", "51", "~3000" },
		{ "posix", "posix-seq", "-", "-" },
	};
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		char name[40];

		snprintf(name, sizeof(name), "%s/%s", ratios[i].num, ratios[i].den);
		printf("%-22s", name);
		for (int s = 1; s <= maxn; s++) {
			struct row a, b;
			char v[40] = "-";

			if (table_mean(t, fig, s, 0, ratios[i].num, "one-try", &a) &&
			    table_mean(t, fig, s, 0, ratios[i].den, "one-try", &b))
				snprintf(v, sizeof(v), "%.1f; %.1f", a.acquire_lps / b.acquire_lps,
					 a.release_lps / b.release_lps);
			printf(" %17s", v);
		}
		if (!strcmp(fig, "7.3"))
			printf("  %s; %s\n", ratios[i].paper_a, ratios[i].paper_r);
		else
			printf("  curve only\n");
	}
}

/* Where the time goes, at the most servers of a figure. */
static void report_costs(const struct table *t, const char *fig, int overlap)
{
	int s = table_max_servers(t, fig);

	if (!s)
		return;
	printf("\n-- Fig. %s, %d clients x %d servers%s: per lock (acquire | release)\n", fig,
	       s, s, overlap >= 0 ? ", 0 % overlap" : "");
	printf("%-22s %9s %9s %9s %9s %9s | %9s %9s %9s %9s %9s\n", "method-protocol", "wall us",
	       "cli CPU", "srv CPU", "msgs/cli", "bytes", "wall us", "cli CPU", "srv CPU",
	       "msgs/cli", "bytes");
	for (int me = 0; me < N_METHODS; me++)
		for (int p = 0; p < 3; p++) {
			struct row r;
			char name[40];
			double n;

			snprintf(name, sizeof(name), "%s-%s", method_names[me], proto_names[p]);
			if (!table_mean(t, fig, s, overlap < 0 ? 0 : overlap, method_names[me],
					proto_names[p], &r))
				continue;
			n = (double)r.locks * r.clients;
			printf("%-22s %9.3f %9.3f %9.3f %9.0f %9.2f | %9.3f %9.3f %9.3f %9.0f %9.2f\n",
			       name, 1e6 / r.acquire_lps,
			       1e6 * r.ccpu_acquire / n, 1e6 * r.scpu_acquire / n,
			       r.msgs_acquire / r.clients, r.bytes_acquire / n, 1e6 / r.release_lps,
			       1e6 * r.ccpu_release / n, 1e6 * r.scpu_release / n,
			       r.msgs_release / r.clients, r.bytes_release / n);
		}
	printf("   (wall us = 1e6 / aggregate rate; CPU in us per lock, summed over the clients\n"
	       "    or over the storage daemons; msgs/cli = lock messages one client sent to\n"
	       "    acquire its set, and to release it (one per lock request the daemons\n"
	       "    held); bytes = TCP bytes both ways per lock.%s)\n",
	       overlap >= 0 ? " The daemons' CPU\n    for releasing is in the acquire column here" : "");
}

/* Figs. 7.5 / 7.6: rate against overlap. */
static void report_overlap(const struct table *t, const char *fig, uint64_t spacing)
{
	int s = table_max_servers(t, fig);

	if (!s)
		return;
	printf("\n== Fig. %s: contention, %d clients, %d servers, locks %llu B apart; each\n"
	       "   client's set starts (100 - overlap) %% of a set's span after the previous\n"
	       "   one's and is released as soon as it is held; acquire locks/s (aggregate)\n",
	       fig, s, s, (unsigned long long)spacing);
	printf("%-22s", "method-protocol");
	for (int o = 0; o < N_OVERLAPS; o++)
		printf(" %10d%%", overlaps[o]);
	printf("  %8s  %s\n", "min/0%", "dissertation");
	for (int me = 0; me < N_METHODS; me++)
		for (int p = 0; p < 3; p++) {
			char name[40], cell[80];
			double base = 0, worst = 1e300;
			int any = 0;

			snprintf(name, sizeof(name), "%s-%s", method_names[me], proto_names[p]);
			for (int o = 0; o < N_OVERLAPS; o++) {
				struct row r;

				any |= table_mean(t, fig, s, overlaps[o], method_names[me],
						  proto_names[p], &r) ||
				       table_error(t, fig, s, overlaps[o], method_names[me],
						   proto_names[p]);
			}
			if (!any)
				continue;
			printf("%-22s", name);
			for (int o = 0; o < N_OVERLAPS; o++) {
				struct row r;
				char v[32];

				if (table_mean(t, fig, s, overlaps[o], method_names[me], proto_names[p],
					       &r)) {
					fmt_rate(v, sizeof(v), r.acquire_lps);
					if (!o)
						base = r.acquire_lps;
					if (r.acquire_lps < worst)
						worst = r.acquire_lps;
				} else {
					snprintf(v, sizeof(v), "failed");
				}
				printf(" %11s", v);
			}
			if (base > 0 && worst < 1e300)
				printf("  %8.2f", worst / base);
			else
				printf("  %8s", "-");
			paper_cell(cell, sizeof(cell), fig, 'a', method_names[me], proto_names[p]);
			if ((me == M_LIST || me == M_LIST64_SPLIT) && !strcmp(proto_names[p], "two-phase"))
				snprintf(cell, sizeof(cell), "curve only ('about a constant 1/3 drop')");
			printf("  %s\n", cell);
		}
}

/* False sharing (§7.1): the clients' 1-byte locks alternate, so no byte is
 * wanted twice but every block holds every client's bytes. */
static void report_false_sharing(const struct table *t, const char *fig, uint64_t spacing)
{
	int s = table_max_servers(t, fig);

	if (!s)
		return;
	printf("\n== False sharing (§7.1, §7.5): %d clients, %d servers, lock j of client i at\n"
	       "   (j x %d + i) x %llu B: no byte wanted twice, %s; each set\n"
	       "   released as soon as it is held; acquire locks/s (aggregate)\n",
	       s, s, s, (unsigned long long)spacing,
	       spacing < 4096 ? "4 KiB blocks shared by the clients" : "no 4 KiB block shared");
	printf("%-22s %11s %11s %11s  %s\n", "method", proto_names[0], proto_names[1],
	       proto_names[2], "msgs/cli (one-try)");
	for (int me = 0; me < N_METHODS; me++) {
		struct row r;
		double msgs = -1;
		int any = 0;

		for (int p = 0; p < 3; p++)
			any |= table_mean(t, fig, s, 0, method_names[me], proto_names[p], &r) ||
			       table_error(t, fig, s, 0, method_names[me], proto_names[p]);
		if (!any)
			continue;
		printf("%-22s", method_names[me]);
		for (int p = 0; p < 3; p++) {
			char v[32] = "failed";

			if (table_mean(t, fig, s, 0, method_names[me], proto_names[p], &r)) {
				fmt_rate(v, sizeof(v), r.acquire_lps);
				if (p == 1)
					msgs = r.msgs_acquire / r.clients;
			}
			printf(" %11s", v);
		}
		if (msgs >= 0)
			printf("  %.0f", msgs);
		printf("\n");
	}
	printf("   (block: Lustre/GPFS-style locks rounded to whole blocks, so with shared\n"
	       "    blocks the clients take turns: its messages count the waits, and what it\n"
	       "    costs an application is the I/O serialized behind them; the others lock\n"
	       "    exact bytes, so interleaving costs them nothing but the pattern)\n");
}

static void target(const char *what, double ours, double want, const char *unit)
{
	char a[32], b[32];

	if (!strcmp(unit, "x")) {
		snprintf(a, sizeof(a), "%.2f", ours);
		snprintf(b, sizeof(b), "%.2f", want);
	} else {
		fmt_rate(a, sizeof(a), ours);
		fmt_rate(b, sizeof(b), want);
	}
	printf("  %-54s %10s%s  target >= %s%s  %s\n", what, a, unit, b, unit,
	       ours >= want ? "met" : "NOT met");
}

static void report_targets(const struct table *t)
{
	int s = table_max_servers(t, "7.3");

	printf("\n== Targets (this machine; figures, not tests)\n");
	if (s) {
		struct row d, l, x;
		double best = 0;
		int best_n = 0;

		for (int n = 1; n <= s; n++)
			if (table_mean(t, "7.3", n, 0, "datatype", "one-try", &d) &&
			    d.acquire_lps > best) {
				best = d.acquire_lps;
				best_n = n;
			}
		char what[96];

		snprintf(what, sizeof(what), "datatype-one-try acquire, Fig 7.3, best (N=%d)", best_n);
		target(what, best, 2e6, " locks/s");
		for (int f = 0; f < 2; f++) {
			const char *fig = f ? "7.4" : "7.3";

			if (!(s = table_max_servers(t, fig)))
				continue;
			if (table_mean(t, fig, s, 0, "datatype", "one-try", &d)) {
				snprintf(what, sizeof(what), "datatype-one-try acquire, Fig %s, N=%d", fig,
					 s);
				target(what, d.acquire_lps, 2e6, " locks/s");
				snprintf(what, sizeof(what), "datatype release, Fig %s, N=%d", fig, s);
				target(what, d.release_lps, 10e6, " locks/s");
			}
			if (table_mean(t, fig, s, 0, "datatype", "one-try", &d) &&
			    table_mean(t, fig, s, 0, "list", "one-try", &l)) {
				snprintf(what, sizeof(what), "datatype / list acquire, Fig %s, N=%d", fig, s);
				target(what, d.acquire_lps / l.acquire_lps, 1.5, "x");
			}
			if (table_mean(t, fig, s, 0, "datatype", "one-try", &d) &&
			    table_mean(t, fig, s, 0, "list64", "one-try", &l)) {
				snprintf(what, sizeof(what), "datatype / list64 acquire, Fig %s, N=%d", fig,
					 s);
				target(what, d.acquire_lps / l.acquire_lps, 1.5, "x");
			}
			if (table_mean(t, fig, s, 0, "datatype", "one-try", &d) &&
			    table_mean(t, fig, s, 0, "posix", "one-try", &x)) {
				snprintf(what, sizeof(what), "datatype / POSIX acquire, Fig %s, N=%d", fig,
					 s);
				target(what, d.acquire_lps / x.acquire_lps, 50, "x");
			}
		}
	}
	for (int f = 0; f < 2; f++) {
		const char *fig = f ? "7.6" : "7.5";
		int n = table_max_servers(t, fig);

		for (int me = 0; n && me < N_METHODS; me++) {
			struct row base, r;
			double worst = 1e300;
			char what[96];

			if (!table_mean(t, fig, n, 0, method_names[me], "alt-try", &base))
				continue;
			for (int o = 1; o < N_OVERLAPS; o++)
				if (table_mean(t, fig, n, overlaps[o], method_names[me], "alt-try", &r) &&
				    r.acquire_lps < worst)
					worst = r.acquire_lps;
			if (worst == 1e300)
				continue;
			snprintf(what, sizeof(what), "%s-alt-try worst overlap / 0 %%, Fig %s",
				 method_names[me], fig);
			target(what, worst / base.acquire_lps, 0.8, "x");
		}
	}
}

static int report(const char *path)
{
	struct table t = { 0 };
	double lo = 1e300, hi = 0;

	table_load(&t, path);
	for (size_t i = 0; i < t.n; i++) {
		lo = t.rows[i].load < lo ? t.rows[i].load : lo;
		hi = t.rows[i].load > hi ? t.rows[i].load : hi;
	}
	printf("== Lock benchmark (seed 001, §7.5.1), %zu runs from %s; load average %.1f to %.1f\n"
	       "   on %ld cores during them. The dissertation's figures are PVFS2 on up to 32\n"
	       "   dual-P4 nodes over Myrinet; it states only the numbers shown, the rest are\n"
	       "   curves. Its list locks are a request per 64 regions: compare them with\n"
	       "   list64-split (list64 sends 64 a message but joins them per daemon). Its\n"
	       "   POSIX locks are posix; posix-seq takes independent locks one after\n"
	       "   another. Rates are means of the repetitions' times.\n",
	       t.n, path, lo, hi, sysconf(_SC_NPROCESSORS_ONLN));
	report_scaling(&t, "7.3", 64);
	report_costs(&t, "7.3", -1);
	report_scaling(&t, "7.4", 4096);
	report_costs(&t, "7.4", -1);
	report_overlap(&t, "7.5", 64);
	report_costs(&t, "7.5", 0);
	report_overlap(&t, "7.6", 4096);
	report_costs(&t, "7.6", 0);
	report_false_sharing(&t, "fs64", 64);
	report_false_sharing(&t, "fs4096", 4096);
	report_targets(&t);
	free(t.rows);
	return 0;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " -c CONFIG [-o CSV] [--clients N] [--uncontended] [--contention]\n"
		"           [--false-sharing]\n"
		"           [--locks N] [--posix-locks N] [--full] [--reps R] [--spacing B]...\n"
		"           [--methods posix,posix-seq,list,list64,list64-split,datatype,block]\n"
		"           [--protocols two-phase,one-try,alt-try] [--block B] [--pid-dir DIR]\n"
		"       " PROG " --report CSV\n");
	exit(2);
}

/* kind: 0 uncontended, 1 contention, 2 false sharing */
static const char *fig_name(int kind, uint64_t spacing)
{
	if (kind == 2)
		return spacing == 64 ? "fs64" : spacing == 4096 ? "fs4096" : "fs";
	if (spacing == 64)
		return kind ? "7.5" : "7.3";
	if (spacing == 4096)
		return kind ? "7.6" : "7.4";
	return "-";
}

/* A copy of the config with 64 regions per list-lock message (the last
 * value of a key counts). */
static char *config_list64(const char *conf)
{
	char *path = strdup("/tmp/tessera-bench-locks.XXXXXX");
	FILE *in = fopen(conf, "r"), *out;
	char buf[4096];
	size_t k;
	int fd;

	if (!path || !in)
		die("%s: %s", conf, strerror(errno));
	if ((fd = mkstemp(path)) < 0 || !(out = fdopen(fd, "w")))
		die("temporary config: %s", strerror(errno));
	while ((k = fread(buf, 1, sizeof(buf), in)))
		fwrite(buf, 1, k, out);
	fprintf(out, "\nlock_list_batch = 64\n");
	if (fclose(out))
		die("temporary config: %s", strerror(errno));
	fclose(in);
	return path;
}

/* Is `name` in the comma-separated `list` (NULL: everything is)? */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	return !list;
}

static void print_row(const struct row *r)
{
	char a[32], b[32];

	fmt_rate(a, sizeof(a), r->acquire_lps);
	fmt_rate(b, sizeof(b), r->release_lps);
	printf("%-4s %5llu %2d %2d %4d%% %-9s %-10s %7llu %3d %11s %11s %9.3f %9.3f %6.1f %s\n",
	       r->fig, (unsigned long long)r->spacing, r->servers, r->clients, r->overlap,
	       r->method, r->protocol, (unsigned long long)r->locks, r->rep, a, b,
	       1e6 * r->ccpu_acquire / ((double)r->locks * r->clients),
	       1e6 * r->scpu_acquire / ((double)r->locks * r->clients), r->load, r->error);
	fflush(stdout);
}

/* The command line. */
struct args {
	const char *conf, *csv, *pid_dir, *methods, *protocols;
	const char *report;       /* --report CSV: only report it */
	int clients, reps, full, do_unc, do_con, do_fs, nsp;
	int posix_given;          /* --posix-locks given (--full leaves it) */
	uint64_t locks, posix_locks, block, spacings[MAX_SPACINGS];
};

/* The switches without a value: 1 if a is one of them. */
static int parse_switch(struct args *g, const char *a)
{
	if (!strcmp(a, "--uncontended"))
		g->do_unc = 1;
	else if (!strcmp(a, "--contention"))
		g->do_con = 1;
	else if (!strcmp(a, "--false-sharing"))
		g->do_fs = 1;
	else if (!strcmp(a, "--full"))
		g->full = 1;
	else
		return 0;
	return 1;
}

/* An option a with its value v; exits by usage() on an unknown one. */
static void parse_option(struct args *g, const char *a, const char *v)
{
	if (!strcmp(a, "-c")) {
		g->conf = v;
	} else if (!strcmp(a, "-o")) {
		g->csv = v;
	} else if (!strcmp(a, "--pid-dir")) {
		g->pid_dir = v;
	} else if (!strcmp(a, "--clients")) {
		g->clients = atoi(v);
	} else if (!strcmp(a, "--reps")) {
		g->reps = atoi(v);
	} else if (!strcmp(a, "--locks")) {
		g->locks = strtoull(v, NULL, 0);
	} else if (!strcmp(a, "--posix-locks")) {
		g->posix_locks = strtoull(v, NULL, 0);
		g->posix_given = 1;
	} else if (!strcmp(a, "--methods")) {
		g->methods = v;
	} else if (!strcmp(a, "--protocols")) {
		g->protocols = v;
	} else if (!strcmp(a, "--block")) {
		g->block = strtoull(v, NULL, 0);
	} else if (!strcmp(a, "--spacing") && g->nsp < MAX_SPACINGS) {
		g->spacings[g->nsp++] = strtoull(v, NULL, 0);
	} else {
		usage();
	}
}

/* Checks the options given and fills in the defaults of those not. */
static void complete_args(struct args *g)
{
	if (!g->conf || g->reps < 1 || g->clients < 0 || g->clients > MAX_CLIENTS || !g->locks ||
	    !g->posix_locks || !g->block)
		usage();
	if (!g->do_unc && !g->do_con && !g->do_fs)
		g->do_unc = g->do_con = g->do_fs = 1;
	if (!g->nsp) {
		g->spacings[g->nsp++] = 64;
		g->spacings[g->nsp++] = 4096;
	}
	if (g->full && !g->posix_given)
		g->posix_locks = g->locks;
}

/* Parses the command line; --report ends it (what follows is not read). */
static void parse_args(int argc, char **argv, struct args *g)
{
	*g = (struct args){ .reps = 1, .locks = 128 * 1024, .posix_locks = 8 * 1024, .block = 4096 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--report")) {
			if (!v)
				usage();
			g->report = v;
			return;
		}
		if (parse_switch(g, a))
			continue;
		if (!v)
			usage();
		parse_option(g, a, v);
		i++;
	}
	complete_args(g);
}

/* How many storage daemons: ask once, from a process that then exits
 * (the clients connect after fork, never a parent's connection). */
static uint32_t count_servers(const char *conf)
{
	char err[512];
	tessera_fs *fs;
	pid_t pid;
	int st = 0;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (tessera_connect(conf, &fs, err, sizeof(err))) {
			fprintf(stderr, PROG ": connect %s: %s\n", conf, err);
			_exit(255);
		}
		st = (int)tessera_ios_count(fs);
		tessera_disconnect(fs);
		_exit(st);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) == 255 ||
	    !WEXITSTATUS(st))
		die("cannot learn the storage daemons of %s", conf);
	return (uint32_t)WEXITSTATUS(st);
}

/* The CSV to append rows to (with a header if new), or NULL if none. */
static FILE *csv_open(const char *csv)
{
	FILE *out;
	int fresh;

	if (!csv)
		return NULL;
	fresh = access(csv, F_OK) != 0;
	if (!(out = fopen(csv, "a")))
		die("%s: %s", csv, strerror(errno));
	if (fresh)
		fprintf(out, "%s\n", csv_header);
	return out;
}

static void print_header(const struct run_ctx *ctx, const struct args *g)
{
	printf("lock benchmark: %u storage daemons, %d clients, %llu locks per client "
	       "(POSIX %llu), 64 KiB strips, %d rep(s)%s\n",
	       ctx->servers, g->clients, (unsigned long long)g->locks,
	       (unsigned long long)g->posix_locks, g->reps,
	       ctx->daemons.n ? "" : "; no --pid-dir: no daemon CPU");
	printf("%-4s %5s %2s %2s %5s %-9s %-10s %7s %3s %11s %11s %9s %9s %6s\n", "fig", "space",
	       "S", "C", "ovl", "method", "protocol", "locks", "rep", "acquire/s", "release/s",
	       "cliCPU/us", "srvCPU/us", "load");
}

/* The points of one spacing: uncontended (kind 0: 2 protocols), with
 * contention (kind 1: every overlap, 3 protocols; 7.5/7.6 have the
 * dissertation's datatype, list and POSIX methods, so not list64 nor
 * posix-seq, and the block baseline) or false sharing (kind 2: the
 * clients' locks interleaved, the methods of kind 1), as the command line
 * lets them. */
static size_t add_points(const struct args *g, int kind, uint64_t spacing, struct point *pts)
{
	size_t n = 0;

	for (int o = 0; o < (kind == 1 ? N_OVERLAPS : 1); o++)
		for (int me = 0; me < N_METHODS; me++)
			for (int p = 0; p < (kind ? 3 : 2); p++)
				if (!(kind && (me == M_LIST64 || me == M_POSIX_SEQ)) &&
				    listed(g->methods, method_names[me]) &&
				    listed(g->protocols, proto_names[p]))
					pts[n++] = (struct point){
						fig_name(kind, spacing), kind != 0, spacing,
						kind == 1 ? overlaps[o] : 0, me, p,
						me == M_POSIX || me == M_POSIX_SEQ ? g->posix_locks :
						g->locks, g->block, kind == 2 ? g->clients : 0
					};
	return n;
}

/* Every point asked for, uncontended first; *npts of them. */
static struct point *make_points(const struct args *g, size_t *npts)
{
	struct point *pts = calloc(3 * MAX_SPACINGS * N_OVERLAPS * N_METHODS * 3, sizeof(*pts));
	const int wanted[3] = { g->do_unc, g->do_con, g->do_fs };

	if (!pts)
		die("out of memory");
	*npts = 0;
	for (int kind = 0; kind < 3; kind++)
		for (int si = 0; si < g->nsp && wanted[kind]; si++)
			*npts += add_points(g, kind, g->spacings[si], pts + *npts);
	return pts;
}

/* Every repetition of the whole list of points: on a machine whose load
 * drifts, each point's repetitions then see the same spread of it.
 * Answers how many runs failed. */
static int run_points(struct run_ctx *ctx, const struct point *pts, size_t npts, int reps,
		      FILE *out)
{
	int failures = 0;

	for (int r = 0; r < reps; r++)
		for (size_t i = 0; i < npts; i++) {
			struct row row;

			if (run_point(ctx, &pts[i], r, &row))
				failures++;
			print_row(&row);
			if (out) {
				csv_write(out, &row);
				fflush(out);
			}
		}
	return failures;
}

int main(int argc, char **argv)
{
	struct args g;
	struct run_ctx ctx = { 0 };
	struct point *pts;
	size_t npts;
	FILE *out;
	int failures;

	parse_args(argc, argv, &g);
	if (g.report)
		return report(g.report);
	ctx.servers = count_servers(g.conf);
	if (!g.clients)
		g.clients = (int)ctx.servers;
	ctx.conf = g.conf;
	ctx.conf64 = config_list64(g.conf);
	daemons_find(g.pid_dir, &ctx.daemons);
	ctx.shared = mmap(NULL, sizeof(*ctx.shared), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctx.shared == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	ctx.clients.n = g.clients;
	out = csv_open(g.csv);
	print_header(&ctx, &g);
	pts = make_points(&g, &npts);
	failures = run_points(&ctx, pts, npts, g.reps, out);
	free(pts);
	if (out)
		fclose(out);
	unlink(ctx.conf64);
	free((char *)ctx.conf64);
	clients_stop(&ctx, 0);
	munmap(ctx.shared, sizeof(*ctx.shared));
	if (failures)
		printf("%d run(s) failed; their errors are in the last column\n", failures);
	return 0;
}
