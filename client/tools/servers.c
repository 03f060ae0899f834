/* servers.c - ping, df and stats. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json.h>

#include "tool.h"

void tool_state_words(const struct tessera_server_status *st, char *buf, size_t len)
{
	time_t when = (time_t)st->since_s;
	char at[32] = "?";
	struct tm tm;

	if (st->state == TESSERA_SERVER_UP) {
		snprintf(buf, len, "up");
		return;
	}
	if (localtime_r(&when, &tm))
		strftime(at, sizeof(at), "%H:%M:%S", &tm);
	snprintf(buf, len, "%s since %s (%s)",
		 st->state == TESSERA_SERVER_DOWN ? "down" : "suspect", at,
		 st->why[0] ? st->why : "no reason given");
}

int tool_report_down(struct tool *t)
{
	int n = 0;

	for (int i = -1; i < (int)tessera_ios_count(t->fs); i++) {
		struct tessera_server_status st;
		char words[256];

		if (tessera_server_status(t->fs, i, &st) || st.state == TESSERA_SERVER_UP)
			continue;
		tool_state_words(&st, words, sizeof(words));
		tool_err(t, 0, "%s: %s", st.name, words);
		n++;
	}
	return n;
}

static void jadd_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static const char *state_name(enum tessera_server_state s)
{
	return s == TESSERA_SERVER_UP ? "up" : s == TESSERA_SERVER_DOWN ? "down" : "suspect";
}

/* Server i of a ping or df listing (0: the metadata daemon) as this
 * process knows it. */
static void server_state(struct tool *t, int i, struct tessera_server_status *st)
{
	if (tessera_server_status(t->fs, i - 1, st)) {
		memset(st, 0, sizeof(*st));
		st->index = i - 1;
	}
}

/* --json for ping: {"servers": [...]} (docs/user-guide.md). */
static struct json_object *ping_json(struct tool *t, const struct tessera_ping *p, int n)
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
		struct tessera_server_status st;

		if (!e)
			break;
		server_state(t, i, &st);
		json_object_object_add(e, "state", json_object_new_string(state_name(st.state)));
		json_object_object_add(e, "why", st.why[0] ? json_object_new_string(st.why) : NULL);
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

static void ping_text(struct tool *t, const struct tessera_ping *p, int n)
{
	printf("%-4s %5s  %-24s %-12s %12s %12s %7s\n", "role", "index", "address", "version",
	       "rtt", "owed", "parked");
	for (int i = 0; i < n; i++) {
		if (p[i].status) {
			struct tessera_server_status st;
			char words[256];

			server_state(t, i, &st);
			tool_state_words(&st, words, sizeof(words));
			printf("%-4s %5" PRIu32 "  %-24s %-12s %12s  (%s; %s)\n", p[i].role, p[i].index,
			       p[i].address, "-", "FAILED", strerror(-p[i].status), words);
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
		rc = tool_json_print(t, ping_json(t, p, n));
	else
		ping_text(t, p, n);
	for (int i = 0; i < n; i++)
		failed += p[i].status != 0;
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		struct tessera_server_status st;
		char words[256];

		if (!p[i].status)
			continue;
		server_state(t, i, &st);
		tool_state_words(&st, words, sizeof(words));
		tool_err(t, p[i].status, "%s %" PRIu32 " (%s): %s; %s",
			 i == 0 ? "metadata daemon" : "storage daemon", p[i].index, p[i].address,
			 strerror(-p[i].status), words);
	}
	if (failed && !rc)
		rc = tool_err(t, -EIO, "%d of %d servers did not answer", failed, n);
out:
	free(p);
	tool_opts_free(&o);
	return rc;
}

/* --json for df (docs/user-guide.md): the sums over the daemons that
 * answered, and each server with its state. */
static struct json_object *df_json(struct tool *t, const struct tessera_statfs *sf,
				   uint64_t used, const struct tessera_server_space *sp, int n)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	int answered = 0;

	if (!o || !arr) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	jadd_u64(o, "bytes_total", sf->bytes_total);
	jadd_u64(o, "bytes_used", used);
	jadd_u64(o, "bytes_free", sf->bytes_free);
	jadd_u64(o, "files", sf->files);
	jadd_u64(o, "servers", sf->n_ios);
	for (int i = 0; i < n; i++) {
		struct json_object *e = json_object_new_object();
		struct tessera_server_status st;

		if (!e)
			break;
		server_state(t, i, &st);
		answered += i > 0 && !sp[i].status;
		json_object_object_add(e, "role", json_object_new_string(i ? "ios" : "mds"));
		json_object_object_add(e, "index", json_object_new_int(i ? i - 1 : 0));
		json_object_object_add(e, "name", json_object_new_string(sp[i].name));
		json_object_object_add(e, "ok", json_object_new_boolean(!sp[i].status));
		json_object_object_add(e, "state", json_object_new_string(state_name(st.state)));
		json_object_object_add(e, "error", sp[i].status ? json_object_new_string(sp[i].why) : NULL);
		if (i && !sp[i].status) {
			jadd_u64(e, "bytes_total", sp[i].bytes_total);
			jadd_u64(e, "bytes_free", sp[i].bytes_free);
		}
		json_object_array_add(arr, e);
	}
	jadd_u64(o, "servers_answered", (uint64_t)answered);
	json_object_object_add(o, "daemons", arr);
	return o;
}

/* df's lines per daemon: its space, or why it is missing from the sums. */
static void df_servers(struct tool *t, const struct tessera_server_space *sp, int n)
{
	printf("%-40s %8s %8s %8s  %s\n", "daemon", "Size", "Used", "Avail", "state");
	for (int i = 0; i < n; i++) {
		struct tessera_server_status st;
		char tot[32] = "-", used[32] = "-", fr[32] = "-", words[300];

		server_state(t, i, &st);
		if (sp[i].status) {
			tool_state_words(&st, words, sizeof(words));
			if (st.state == TESSERA_SERVER_UP) /* failed for another reason */
				snprintf(words, sizeof(words), "FAILED (%s)", sp[i].why);
		} else {
			snprintf(words, sizeof(words), "up");
		}
		if (i > 0 && !sp[i].status) {
			tool_human(sp[i].bytes_total, tot, sizeof(tot));
			tool_human(sp[i].bytes_total - sp[i].bytes_free, used, sizeof(used));
			tool_human(sp[i].bytes_free, fr, sizeof(fr));
		}
		printf("%-40s %8s %8s %8s  %s\n", sp[i].name, tot, used, fr, words);
	}
}

/* The file system's space, over the daemons that answered, then each
 * server; exit non-zero with one line per server that did not answer. */
int cmd_df(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_statfs sf;
	struct tessera_server_space *sp = NULL;
	char tot[32], used[32], fr[32];
	uint64_t u;
	int rc, n, missing = 0;

	rc = tool_start_bare(t, argc, argv, "j", &o);
	if (rc)
		goto out;
	n = 1 + (int)tessera_ios_count(t->fs);
	sp = calloc((size_t)n, sizeof(*sp));
	if (!sp) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	n = tessera_statfs_servers(t->fs, &sf, sp, (size_t)n);
	if (n < 0) {
		rc = tool_fserr(t, n);
		goto out;
	}
	u = sf.bytes_total > sf.bytes_free ? sf.bytes_total - sf.bytes_free : 0;
	if (o.flags['j']) {
		rc = tool_json_print(t, df_json(t, &sf, u, sp, n));
	} else {
		tool_human(sf.bytes_total, tot, sizeof(tot));
		tool_human(u, used, sizeof(used));
		tool_human(sf.bytes_free, fr, sizeof(fr));
		printf("%-10s %8s %8s %8s %5s %10s %8s\n", "Filesystem", "Size", "Used", "Avail",
		       "Use%", "Files", "Servers");
		printf("%-10s %8s %8s %8s %4.0f%% %10" PRIu64 " %8" PRIu32 "\n", "tessera", tot, used,
		       fr, sf.bytes_total ? (double)u * 100.0 / (double)sf.bytes_total : 0.0,
		       sf.files, sf.n_ios);
		printf("bytes: total %" PRIu64 ", used %" PRIu64 ", free %" PRIu64 "\n",
		       sf.bytes_total, u, sf.bytes_free);
		df_servers(t, sp, n);
	}
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		struct tessera_server_status st;
		char words[256];

		if (!sp[i].status)
			continue;
		server_state(t, i, &st);
		if (st.state == TESSERA_SERVER_UP)
			snprintf(words, sizeof(words), "%s", sp[i].why);
		else
			tool_state_words(&st, words, sizeof(words));
		missing++;
		tool_err(t, sp[i].status, "%s: %s%s", sp[i].name, words,
			 i ? " (not counted in the sums)" : " (no file count)");
	}
	if (missing && !rc)
		rc = tool_err(t, -EIO, "%d of %d servers did not answer", missing, n);
out:
	free(sp);
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
