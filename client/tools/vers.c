/*
 * vers.c - versioned files' commands (docs/user-guide.md, "Versioned
 * files"):
 *
 *   tessera snapshot create FILE NAME   name the newest committed version
 *   tessera snapshot drop FILE NAME     forget a name (merges go past it)
 *   tessera snapshot list [-j] FILE     the names, versions and times
 *   tessera vstat [-j] [-l] FILE...     the version server's state (-l:
 *                                       and each object's log)
 *
 * Reading as of a snapshot is `tessera cat -S NAME FILE` (data.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json.h>

#include "tool.h"

#define SNAP_LIST_MAX 4096

/* What a snapshot subcommand is. */
enum snap_op { SNAP_CREATE, SNAP_DROP, SNAP_LIST };

static int snap_op_of(const char *word, enum snap_op *op)
{
	static const struct { const char *name; enum snap_op op; } ops[] = {
		{ "create", SNAP_CREATE }, { "drop", SNAP_DROP }, { "list", SNAP_LIST },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(word, ops[i].name)) {
			*op = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

static void when_text(const struct timespec *ts, char *buf, size_t len)
{
	time_t s = ts->tv_sec;
	struct tm tm;

	if (localtime_r(&s, &tm))
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	else
		snprintf(buf, len, "%lld", (long long)s);
}

static int list_print(struct tool *t, const struct tessera_snapshot *s, size_t n, int json)
{
	struct json_object *arr;

	if (!json) {
		printf("%-24s %20s  %s\n", "name", "version", "taken");
		for (size_t i = 0; i < n; i++) {
			char when[64];

			when_text(&s[i].ctime, when, sizeof(when));
			printf("%-24s %20" PRIu64 "  %s\n", s[i].name, s[i].version, when);
		}
		return 0;
	}
	if (!(arr = json_object_new_array()))
		return tool_err(t, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		if (!o || json_object_array_add(arr, o)) {
			json_object_put(o);
			break;
		}
		json_object_object_add(o, "name", json_object_new_string(s[i].name));
		json_object_object_add(o, "version", json_object_new_uint64(s[i].version));
		json_object_object_add(o, "ctime_ns",
				       json_object_new_int64((int64_t)s[i].ctime.tv_sec * 1000000000 +
							     s[i].ctime.tv_nsec));
	}
	return tool_json_print(t, arr);
}

static int snap_list(struct tool *t, tessera_file *f, int json)
{
	struct tessera_snapshot *s = calloc(SNAP_LIST_MAX, sizeof(*s));
	size_t n = 0;
	int rc;

	if (!s)
		return tool_err(t, -ENOMEM, "out of memory");
	rc = tessera_snapshot_list(f, s, SNAP_LIST_MAX, &n);
	if (rc)
		rc = tool_fserr(t, rc);
	else
		rc = list_print(t, s, n < SNAP_LIST_MAX ? n : SNAP_LIST_MAX, json);
	free(s);
	return rc;
}

/* The operands: OP FILE [NAME], NAME for create and drop only. */
static int snap_args(struct tool *t, const struct tool_opts *o, enum snap_op *op)
{
	if (o->nops < 1)
		return tool_usage(t, "give create, drop or list");
	if (snap_op_of(o->ops[0], op))
		return tool_usage(t, "unknown subcommand '%s' (create, drop or list)", o->ops[0]);
	if (*op != SNAP_LIST && o->nops != 3)
		return tool_usage(t, "%s needs FILE and NAME", o->ops[0]);
	if (*op == SNAP_LIST && o->nops != 2)
		return tool_usage(t, "list needs one FILE");
	if (*op != SNAP_LIST && o->flags['j'])
		return tool_usage(t, "-j goes with list only");
	return 0;
}

static int snap_run(struct tool *t, tessera_file *f, enum snap_op op, const char *path,
		    const char *name, int json)
{
	uint64_t version = 0;
	int rc;

	switch (op) {
	case SNAP_CREATE:
		rc = tessera_snapshot_create(f, name, &version);
		if (!rc)
			printf("%s: snapshot '%s' is version %" PRIu64 "\n", path, name, version);
		break;
	case SNAP_DROP:
		rc = tessera_snapshot_drop(f, name);
		break;
	default:
		return snap_list(t, f, json);
	}
	return rc ? tool_fserr(t, rc) : 0;
}

int cmd_snapshot(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	enum snap_op op = SNAP_LIST;
	tessera_file *f = NULL;
	const char *path;
	int rc;

	rc = tool_opts_parse(t, argc, argv, "j", "", &o);
	if (!rc)
		rc = snap_args(t, &o, &op);
	if (!rc)
		rc = tool_connect(t);
	if (rc)
		goto out;
	path = tool_path(o.ops[1]);
	rc = tessera_open(t->fs, path, op == SNAP_LIST ? O_RDONLY : O_WRONLY, 0, NULL, &f);
	if (rc) {
		tool_fserr(t, rc);
		goto out;
	}
	rc = snap_run(t, f, op, path, op == SNAP_LIST ? NULL : o.ops[2], o.flags['j']);
	if (tessera_close(f) && !rc)
		rc = tool_fserr(t, -EIO);
out:
	tool_opts_free(&o);
	return rc;
}

static struct json_object *vstat_json(const char *path, const struct tessera_version_state *v)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "newest", json_object_new_uint64(v->newest));
	json_object_object_add(o, "merged", json_object_new_uint64(v->merged));
	json_object_object_add(o, "unmerged", json_object_new_int64(v->unmerged));
	json_object_object_add(o, "reads", json_object_new_int64(v->reads));
	json_object_object_add(o, "ids", json_object_new_int64(v->ids));
	json_object_object_add(o, "snapshots", json_object_new_int64(v->snapshots));
	return o;
}

static void vstat_text(const char *path, const struct tessera_version_state *v)
{
	printf("     File: %s\n", path);
	printf("   Newest: %" PRIu64 "\n", v->newest);
	printf("   Merged: %" PRIu64 "\n", v->merged);
	printf(" Unmerged: %" PRIu32 " commits\n", v->unmerged);
	printf("    Reads: %" PRIu32 " in progress\n", v->reads);
	printf("      IDs: %" PRIu32 " live writers\n", v->ids);
	printf("Snapshots: %" PRIu32 "\n", v->snapshots);
}

/* Each object's log: a table after the text, an array "logs" in JSON. */
static void logs_text(const struct tessera_vlog_state *l, size_t n)
{
	printf("     Logs:\n  %4s  %6s  %-18s  %12s  %8s  %8s  %12s  %8s\n", "slot", "server",
	       "object handle", "merged", "uncommit", "commit", "log bytes", "index");
	for (size_t i = 0; i < n; i++)
		printf("  %4" PRIu32 "  %6" PRIu32 "  0x%016" PRIx64 "  %12" PRIu64 "  %8" PRIu32
		       "  %8" PRIu32 "  %12" PRIu64 "  %8" PRIu64 "\n", l[i].slot, l[i].server,
		       l[i].handle, l[i].merged, l[i].uncommitted, l[i].committed, l[i].log_bytes,
		       l[i].index_pieces);
}

static struct json_object *logs_json(const struct tessera_vlog_state *l, size_t n)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && i < n; i++) {
		struct json_object *o = json_object_new_object();

		if (!o || json_object_array_add(arr, o)) {
			json_object_put(o);
			break;
		}
		json_object_object_add(o, "slot", json_object_new_int64(l[i].slot));
		json_object_object_add(o, "server", json_object_new_int64(l[i].server));
		json_object_object_add(o, "handle", json_object_new_uint64(l[i].handle));
		json_object_object_add(o, "merged", json_object_new_uint64(l[i].merged));
		json_object_object_add(o, "uncommitted", json_object_new_int64(l[i].uncommitted));
		json_object_object_add(o, "committed", json_object_new_int64(l[i].committed));
		json_object_object_add(o, "log_bytes", json_object_new_uint64(l[i].log_bytes));
		json_object_object_add(o, "index_pieces",
				       json_object_new_uint64(l[i].index_pieces));
	}
	return arr;
}

/* What vstat shows of one file: the state, and (-l) the logs, n of them. */
struct vstat_view {
	struct tessera_version_state v;
	struct tessera_vlog_state logs[TESSERA_MAX_STRIPE];
	size_t n;
};

static int vstat_show(struct tool *t, const char *path, const struct vstat_view *w, int logs,
		      struct json_object *arr)
{
	struct json_object *o;

	if (!arr) {
		vstat_text(path, &w->v);
		if (logs)
			logs_text(w->logs, w->n);
		return 0;
	}
	o = vstat_json(path, &w->v);
	if (o && logs)
		json_object_object_add(o, "logs", logs_json(w->logs, w->n));
	if (!o || json_object_array_add(arr, o))
		return tool_err(t, -ENOMEM, "out of memory");
	return 0;
}

static int vstat_one(struct tool *t, char *arg, int logs, struct json_object *arr)
{
	const char *path = tool_path(arg);
	struct vstat_view *w = calloc(1, sizeof(*w));
	struct tessera_layout *l = calloc(1, sizeof(*l));
	tessera_file *f = NULL;
	int rc = w && l ? tessera_open(t->fs, path, O_RDONLY, 0, NULL, &f) : -ENOMEM;

	if (!rc)
		rc = tessera_version_state(f, &w->v);
	if (!rc && logs && !(rc = tessera_file_layout(f, l))) {
		w->n = l->count;
		rc = tessera_version_logs(f, w->logs, w->n);
	}
	if (rc == -ENOMEM && !f)
		tool_err(t, rc, "out of memory");
	else if (rc)
		tool_fserr(t, rc);
	if (f)
		tessera_close(f);
	if (!rc)
		rc = vstat_show(t, path, w, logs, arr);
	free(w);
	free(l);
	return rc;
}

int cmd_vstat(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct json_object *arr = NULL;
	int rc, first = 0;

	rc = tool_start(t, argc, argv, "jl", "", &o, "no file given");
	if (rc)
		goto out;
	if (o.flags['j'] && !(arr = json_object_new_array())) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < o.nops; i++) {
		rc = vstat_one(t, o.ops[i], o.flags['l'], arr);
		if (rc && !first)
			first = rc;
	}
	if (arr && (rc = tool_json_print(t, arr)) && !first)
		first = rc;
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}
