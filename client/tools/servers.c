/* servers.c - ping, df and stats. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "tool.h"

static void jadd_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

/* --json for ping: {"servers": [...]} (docs/user-guide.md). */
static struct json_object *ping_json(const struct tessera_ping *p, int n)
{
	struct json_object *doc = json_object_new_object(), *arr = json_object_new_array();

	if (!doc || !arr) {
		json_object_put(doc);
		json_object_put(arr);
		return NULL;
	}
	json_object_object_add(doc, "servers", arr);
	for (int i = 0; i < n; i++) {
		struct json_object *e = json_object_new_object();
		int ok = p[i].status == 0;

		if (!e)
			break;
		json_object_object_add(e, "role", json_object_new_string(p[i].role));
		jadd_u64(e, "index", p[i].index);
		json_object_object_add(e, "address", json_object_new_string(p[i].address));
		json_object_object_add(e, "ok", json_object_new_boolean(ok));
		json_object_object_add(e, "error",
				       ok ? NULL : json_object_new_string(strerror(-p[i].status)));
		json_object_object_add(e, "version", ok ? json_object_new_string(p[i].version) : NULL);
		json_object_object_add(e, "rtt_us", ok ? json_object_new_double(p[i].rtt_us) : NULL);
		jadd_u64(e, "owed_bytes", p[i].owed_bytes);
		jadd_u64(e, "owed_replies", p[i].owed_replies);
		jadd_u64(e, "parked", p[i].parked);
		jadd_u64(e, "peers_closed", p[i].peers_closed);
		json_object_array_add(arr, e);
	}
	return doc;
}

static void ping_text(const struct tessera_ping *p, int n)
{
	printf("%-4s %5s  %-24s %-12s %12s %12s %7s\n", "role", "index", "address", "version",
	       "rtt", "owed", "parked");
	for (int i = 0; i < n; i++) {
		if (p[i].status) {
			printf("%-4s %5" PRIu32 "  %-24s %-12s %12s  (%s)\n", p[i].role, p[i].index,
			       p[i].address, "-", "FAILED", strerror(-p[i].status));
		} else {
			printf("%-4s %5" PRIu32 "  %-24s %-12s %9.0f us %12" PRIu64 " %7" PRIu32 "\n",
			       p[i].role, p[i].index, p[i].address, p[i].version, p[i].rtt_us,
			       p[i].owed_bytes, p[i].parked);
		}
	}
}

int cmd_ping(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_ping *p = NULL;
	size_t want;
	int rc, n, failed = 0;

	rc = tool_start_bare(t, argc, argv, "j", &o);
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
	if (o.flags['j'])
		rc = tool_json_print(t, ping_json(p, n));
	else
		ping_text(p, n);
	for (int i = 0; i < n; i++)
		failed += p[i].status != 0;
	fflush(stdout);
	for (int i = 0; i < n; i++)
		if (p[i].status)
			tool_err(t, p[i].status, "%s %" PRIu32 " (%s): %s",
				 i == 0 ? "metadata daemon" : "storage daemon",
				 p[i].index, p[i].address, strerror(-p[i].status));
	if (failed && !rc)
		rc = tool_err(t, -EIO, "%d of %d servers did not answer", failed, n);
out:
	free(p);
	tool_opts_free(&o);
	return rc;
}

/* --json for df (docs/user-guide.md). */
static struct json_object *df_json(const struct tessera_statfs *sf, uint64_t used)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	jadd_u64(o, "bytes_total", sf->bytes_total);
	jadd_u64(o, "bytes_used", used);
	jadd_u64(o, "bytes_free", sf->bytes_free);
	jadd_u64(o, "files", sf->files);
	jadd_u64(o, "servers", sf->n_ios);
	return o;
}

int cmd_df(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_statfs sf;
	char tot[32], used[32], fr[32];
	uint64_t u;
	int rc;

	rc = tool_start_bare(t, argc, argv, "j", &o);
	if (rc)
		goto out;
	rc = tessera_statfs(t->fs, &sf);
	if (rc) {
		tool_fserr(t, rc);
		goto out;
	}
	u = sf.bytes_total > sf.bytes_free ? sf.bytes_total - sf.bytes_free : 0;
	if (o.flags['j']) {
		rc = tool_json_print(t, df_json(&sf, u));
		goto out;
	}
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

/* One daemon's (or the sum's) counters as JSON: {"methods": {NAME:
 * {COUNTER: n}}, COUNTER: n...}, the names tessera_stats.h's fields. */
static struct json_object *stats_one_json(const struct tessera_ios_stats *s)
{
	struct json_object *o = json_object_new_object(), *ms = json_object_new_object();

	if (!o || !ms) {
		json_object_put(o);
		json_object_put(ms);
		return NULL;
	}
	json_object_object_add(o, "methods", ms);
	for (unsigned m = 0; m < TESSERA_METHODS; m++) {
		struct json_object *e = json_object_new_object();

		if (!e)
			break;
#define JM(field, num, label, what) jadd_u64(e, #field, s->field[m]);
		TESSERA_FOR_EACH_METHOD_COUNTER(JM)
#undef JM
		json_object_object_add(ms, tessera_method_name(m), e);
	}
#define JC(field, num, label, what) jadd_u64(o, #field, s->field);
	TESSERA_FOR_EACH_COUNTER(JC)
#undef JC
	return o;
}

/* --json for stats: {"servers": [{"index": i, ...}], "all": {...}}. */
static int stats_json(struct tool *t, uint32_t n)
{
	struct json_object *doc = json_object_new_object(), *arr = json_object_new_array(), *e;
	struct tessera_ios_stats s, sum;
	int rc;

	memset(&sum, 0, sizeof(sum));
	if (!doc || !arr) {
		json_object_put(arr);
		return tool_json_print(t, NULL);
	}
	json_object_object_add(doc, "servers", arr);
	for (uint32_t i = 0; i < n; i++) {
		rc = tessera_ios_stats(t->fs, i, &s);
		if (rc) {
			json_object_put(doc);
			return tool_fserr(t, rc);
		}
		tessera_ios_stats_add(&sum, &s);
		e = stats_one_json(&s);
		if (e)
			jadd_u64(e, "index", i);
		json_object_array_add(arr, e);
	}
	json_object_object_add(doc, "all", stats_one_json(&sum));
	return tool_json_print(t, doc);
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
	rc = tool_start_bare(t, argc, argv, "j", &o);
	if (rc)
		goto out;
	n = tessera_ios_count(t->fs);
	if (o.flags['j']) {
		rc = stats_json(t, n);
		goto out;
	}
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
