/* servers.c - ping, df and stats. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

int cmd_ping(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_ping *p = NULL;
	size_t want;
	int rc, n, failed = 0;

	rc = tool_start_bare(t, argc, argv, &o);
	if (rc)
		goto out;
	want = 1 + (size_t)tessera_ios_count(t->fs);
	p = calloc(want, sizeof(*p));
	if (!p) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	n = tessera_ping(t->fs, p, want);
	if (n < 0) {
		rc = tool_fserr(t, n);
		goto out;
	}
	printf("%-4s %5s  %-24s %-12s %12s %12s %7s\n", "role", "index", "address", "version",
	       "rtt", "owed", "parked");
	for (int i = 0; i < n; i++) {
		if (p[i].status) {
			printf("%-4s %5" PRIu32 "  %-24s %-12s %12s  (%s)\n", p[i].role, p[i].index,
			       p[i].address, "-", "FAILED", strerror(-p[i].status));
			failed++;
		} else {
			printf("%-4s %5" PRIu32 "  %-24s %-12s %9.0f us %12" PRIu64 " %7" PRIu32 "\n",
			       p[i].role, p[i].index, p[i].address, p[i].version, p[i].rtt_us,
			       p[i].owed_bytes, p[i].parked);
		}
	}
	fflush(stdout);
	for (int i = 0; i < n; i++)
		if (p[i].status)
			tool_err(t, p[i].status, "%s %" PRIu32 " (%s): %s",
				 i == 0 ? "metadata daemon" : "storage daemon",
				 p[i].index, p[i].address, strerror(-p[i].status));
	if (failed)
		rc = tool_err(t, -EIO, "%d of %d servers did not answer", failed, n);
out:
	free(p);
	tool_opts_free(&o);
	return rc;
}

int cmd_df(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_statfs sf;
	char tot[32], used[32], fr[32];
	uint64_t u;
	int rc;

	rc = tool_start_bare(t, argc, argv, &o);
	if (rc)
		goto out;
	rc = tessera_statfs(t->fs, &sf);
	if (rc) {
		tool_fserr(t, rc);
		goto out;
	}
	u = sf.bytes_total > sf.bytes_free ? sf.bytes_total - sf.bytes_free : 0;
	tool_human(sf.bytes_total, tot, sizeof(tot));
	tool_human(u, used, sizeof(used));
	tool_human(sf.bytes_free, fr, sizeof(fr));
	printf("%-10s %8s %8s %8s %5s %10s %8s\n", "Filesystem", "Size", "Used", "Avail", "Use%",
	       "Files", "Servers");
	printf("%-10s %8s %8s %8s %4.0f%% %10" PRIu64 " %8" PRIu32 "\n", "tessera", tot, used, fr,
	       sf.bytes_total ? (double)u * 100.0 / (double)sf.bytes_total : 0.0, sf.files,
	       sf.n_ios);
	printf("bytes: total %" PRIu64 ", used %" PRIu64 ", free %" PRIu64 "\n", sf.bytes_total, u,
	       sf.bytes_free);
out:
	tool_opts_free(&o);
	return rc;
}

/* Counters of every storage daemon, by access method, and their sum; the
 * columns are tessera_stats.h's list. */
int cmd_stats(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_ios_stats s, sum;
	uint32_t n;
	int rc;

	memset(&sum, 0, sizeof(sum));
	rc = tool_start_bare(t, argc, argv, &o);
	if (rc)
		goto out;
	n = tessera_ios_count(t->fs);
	printf("%-5s %-8s", "ios", "method");
#define HEAD(field, num, label, what) printf(" %14s", label);
	TESSERA_FOR_EACH_METHOD_COUNTER(HEAD)
#undef HEAD
	printf("\n");
	for (uint32_t i = 0; i <= n; i++) {
		const char *sep = "";
		char who[16];

		if (i < n) {
			rc = tessera_ios_stats(t->fs, i, &s);
			if (rc) {
				tool_fserr(t, rc);
				goto out;
			}
			snprintf(who, sizeof(who), "%" PRIu32, i);
		} else {
			s = sum;
			snprintf(who, sizeof(who), "all");
		}
		for (unsigned m = 0; m < TESSERA_METHODS; m++) {
			printf("%-5s %-8s", who, tessera_method_name(m));
#define ROW(field, num, label, what) printf(" %14" PRIu64, s.field[m]);
			TESSERA_FOR_EACH_METHOD_COUNTER(ROW)
#undef ROW
			printf("\n");
		}
		printf("%-5s %-8s ", who, "");
#define ONCE(field, num, label, what)                                 \
		printf("%s%s %" PRIu64, sep, label, s.field);           \
		sep = ", ";
		TESSERA_FOR_EACH_COUNTER(ONCE)
#undef ONCE
		printf("\n");
		if (i < n)
			tessera_ios_stats_add(&sum, &s);
	}
out:
	tool_opts_free(&o);
	return rc;
}
