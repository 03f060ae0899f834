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
 */
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

uint64_t tc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
		(double)ns / 1e6, what, (double)(tc_now_ns() - fs->trace_t0) / 1e6,
		(peak_rss_kb() + 512) / 1024);
}

void tc_trace_init(tessera_fs *fs)
{
	const char *v = getenv("TESSERA_TRACE_STARTUP");

	fs->trace = v && *v && strcmp(v, "0") != 0;
	if (!fs->trace)
		return;
	uint64_t age = process_age_ns();

	/* "at" counts from the process's start, as near as it is known */
	fs->trace_t0 = tc_now_ns() - age;
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

void tc_trace_request(tessera_fs *fs, struct tc_req *const *reqs, size_t n, uint64_t ns)
{
	char server[200];
	unsigned nth;

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
