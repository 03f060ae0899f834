/*
 * trace.c - where a process's start-up goes, on request.
 *
 * With TESSERA_TRACE_STARTUP=1 in the environment, a connection writes to
 * stderr, as each step ends, how long it took and the process's peak
 * resident memory so far: the time before tessera_connect (loading the
 * program and its libraries, whose constructors run then), libfabric's
 * first fi_getinfo (where it initialises every provider it was built
 * with), our endpoint, each server's address and session (MUNGE
 * credential, AUTH round trip) when first used, the first requests, and
 * the total at disconnect. Lines start with "tessera-startup:", so they
 * are easy to pick out of a program's own stderr.
 *
 * With TESSERA_TRACE_REQUESTS=PATH, every request a connection runs (every
 * tc_run) is a line of the file PATH.PID, written when its call ends:
 *
 *   seq opcode server regions body_out data_out data_in start_ns end_ns status
 *
 * tab-separated, after a header line "# tessera-trace 1" and a line naming
 * the fields. seq counts the connection's requests from 1; server is "mds"
 * or "iosN"; regions the file regions the request names (list I/O's
 * offset-length pairs, datatype I/O's pieces of the object in its round,
 * 1 for a contiguous read or write, 0 otherwise); body_out the request's
 * encoded body (the description), data_out and data_in the raw data bytes
 * sent and received; start_ns when its call began and end_ns when its
 * reply (or failure) came, CLOCK_MONOTONIC, so the files of processes on
 * one host share a clock; status 0 or a negative errno.
 * tests/study/trace_summary.py turns files into request-count tables.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"

/* Requests after the session traced one by one; later ones are not
 * start-up any more. */
#define TC_TRACE_REQUESTS 4

static long peak_rss_kb(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss;
}

/* How long this process has lived, in ns, from its start time in
 * /proc/self/stat (in clock ticks since boot, so to 10 ms at 100 Hz),
 * or 0 if it cannot be read. */
static uint64_t process_age_ns(void)
{
	char buf[1024], *p;
	unsigned long long start_ticks;
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name, field 2, may hold spaces: count from its ')' */
	p = strrchr(buf, ')');
	if (!p || hz <= 0)
		return 0;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start_ticks) != 1)
		return 0;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint64_t start = start_ticks * (1000000000u / (uint64_t)hz);
	return now > start ? now - start : 0;
}

static void vline(tessera_fs *fs, uint64_t ns, const char *fmt, va_list ap)
{
	char what[256];

	vsnprintf(what, sizeof(what), fmt, ap);
	fprintf(stderr, "tessera-startup: %8.1f ms  %-58s (at %7.1f ms, peak RSS %ld MB)\n",
		(double)ns / 1e6, what, (double)(tp_mono_ns() - fs->trace_t0) / 1e6,
		(peak_rss_kb() + 512) / 1024);
}

/* TESSERA_TRACE_REQUESTS=PATH: the request trace goes to PATH.PID (one
 * file per process: the ranks of an MPI job share the environment). A file
 * that cannot be made is said once on stderr; the program runs untraced. */
static void trace_file_open(tessera_fs *fs)
{
	const char *path = getenv("TESSERA_TRACE_REQUESTS");
	char name[4096];

	if (!path || !*path)
		return;
	snprintf(name, sizeof(name), "%s.%ld", path, (long)getpid());
	fs->req_trace = fopen(name, "w");
	if (!fs->req_trace) {
		fprintf(stderr, "tessera: TESSERA_TRACE_REQUESTS: cannot write %s: %s; not tracing\n",
			name, strerror(errno));
		return;
	}
	fprintf(fs->req_trace, "# tessera-trace 1\n# seq\topcode\tserver\tregions\tbody_out\t"
		"data_out\tdata_in\tstart_ns\tend_ns\tstatus\n");
}

void tc_trace_fini(tessera_fs *fs)
{
	if (fs->req_trace)
		fclose(fs->req_trace);
	fs->req_trace = NULL;
}

/* Regions of a request for the trace: set by list and datatype I/O, 1
 * for a contiguous read or write. */
static uint32_t trace_regions(const struct tc_req *r)
{
	if (r->regions)
		return r->regions;
	return r->opcode == TP_OP_READ || r->opcode == TP_OP_WRITE;
}

/* Every request of one tc_run, a line each; one fprintf a line, so lines
 * of threads running requests at once do not mix (stdio locks the file). */
static void trace_file_write(tessera_fs *fs, struct tc_req *const *reqs, size_t n,
			     uint64_t start)
{
	for (size_t i = 0; i < n; i++) {
		const struct tc_req *r = reqs[i];
		uint64_t seq = __atomic_add_fetch(&fs->req_trace_seq, 1, __ATOMIC_RELAXED);
		const char *op = tp_opcode_name(r->opcode);
		char server[16];

		if (r->server == TC_MDS)
			snprintf(server, sizeof(server), "mds");
		else
			snprintf(server, sizeof(server), "ios%d", r->server);
		fprintf(fs->req_trace, "%llu\t%s\t%s\t%u\t%zu\t%zu\t%zu\t%llu\t%llu\t%d\n",
			(unsigned long long)seq, op ? op : "?", server,
			trace_regions(r), r->body_out, r->data_out, r->status ? 0 : r->data_len,
			(unsigned long long)start,
			(unsigned long long)(r->done_ns ? r->done_ns : tp_mono_ns()), r->status);
	}
}

void tc_trace_init(tessera_fs *fs)
{
	const char *v = getenv("TESSERA_TRACE_STARTUP");

	trace_file_open(fs);
	fs->trace = v && *v && strcmp(v, "0") != 0;
	if (!fs->trace)
		return;
	uint64_t age = process_age_ns();

	/* "at" counts from the process's start, as near as it is known */
	fs->trace_t0 = tp_mono_ns() - age;
	tc_trace(fs, age, "before tessera_connect: program, libraries and their "
		 "constructors (to 10 ms)");
}

void tc_trace(tessera_fs *fs, uint64_t ns, const char *fmt, ...)
{
	va_list ap;

	if (!fs->trace)
		return;
	va_start(ap, fmt);
	vline(fs, ns, fmt, ap);
	va_end(ap);
}

void tc_trace_request(tessera_fs *fs, struct tc_req *const *reqs, size_t n, uint64_t start)
{
	uint64_t ns = tp_mono_ns() - start;
	char server[200];
	unsigned nth;

	if (fs->req_trace)
		trace_file_write(fs, reqs, n, start);
	/* threads may run requests at once (the FUSE mount's); the load
	 * first keeps the count from ever wrapping */
	if (!fs->trace || n == 0 ||
	    __atomic_load_n(&fs->trace_requests, __ATOMIC_RELAXED) >= TC_TRACE_REQUESTS)
		return;
	nth = __atomic_add_fetch(&fs->trace_requests, 1, __ATOMIC_RELAXED);
	if (nth > TC_TRACE_REQUESTS)
		return;
	tc_server_name(fs, reqs[0]->server, server, sizeof(server));
	tc_trace(fs, ns, "request %u: %s to the %s%s", nth,
		 tp_opcode_name(reqs[0]->opcode), server, n > 1 ? " and others" : "");
}
