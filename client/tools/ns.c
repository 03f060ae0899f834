/* ns.c - namespace commands: ls mkdir rm mv stat setstripe getstripe
 * truncate (ln, readlink and mknod are in links.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json.h>

#include "tp_size.h" /* sizes as the config file writes them */
#include "tool.h"

/* Keep the first failure of a command that goes on over several paths. */
#define KEEP(first, expr)                        \
	do {                                     \
		int keep_rc = (expr);            \
		if (keep_rc && !(first))         \
			(first) = keep_rc;       \
	} while (0)

/* ------------------------------------------------------------------- ls */

/* How ls -l shows a size: bytes, or (-h) 1.5M. */
enum ls_size { LS_BYTES, LS_HUMAN };

/* st->size is not a size when size_rc is set: '?' stands for it. A
 * symbolic link shows "name -> target" (`target` its target). */
static void print_long(const struct tessera_stat *st, int size_rc, const char *name,
		       enum ls_size sz, const char *target)
{
	char mode[11], when[32], size[32];
	time_t mt = st->mtime.tv_sec;
	struct tm tm;

	tool_mode_string(st->mode, mode);
	if (localtime_r(&mt, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	else
		snprintf(when, sizeof(when), "%lld", (long long)mt);
	if (size_rc)
		snprintf(size, sizeof(size), "?");
	else if (sz == LS_HUMAN)
		tool_human(st->size, size, sizeof(size));
	else
		snprintf(size, sizeof(size), "%" PRIu64, st->size);
	printf("%s %3" PRIu32 " %6" PRIu32 " %6" PRIu32 " %12s %s %s%s%s\n", mode, st->nlink,
	       st->uid, st->gid, size, when, name, target ? " -> " : "", target ? target : "");
}

/* print_long for `path`, with a link's target read first. */
static void print_long_path(struct tool *t, const char *path, const struct tessera_stat *st,
			    int size_rc, const char *name, enum ls_size sz)
{
	char target[4097];
	ssize_t n = S_ISLNK(st->mode) ? tessera_readlink(t->fs, path, target, sizeof(target)) : -1;

	if (n >= 0)
		target[n < (ssize_t)sizeof(target) ? n : (ssize_t)sizeof(target) - 1] = '\0';
	print_long(st, size_rc, name, sz, n >= 0 ? target : NULL);
}

/* One entry of ls -l: every name is listed; a size that cannot be got
 * (a storage daemon down) is '?', and the command fails at the end with
 * one line per daemon that is not up (tool_report_down), not one per
 * file. *sizes_missing counts them. */
static int ls_entry(struct tool *t, const char *path, const char *name, enum ls_size sz,
		    int *sizes_missing)
{
	char *child = tool_join(path, name);
	struct tessera_stat st;
	int rc, size_rc;

	if (!child)
		return tool_err(t, -ENOMEM, "ls %s: out of memory", path);
	rc = tessera_stat_partial(t->fs, child, &st, &size_rc);
	if (rc) {
		free(child);
		return tool_fserr(t, rc);
	}
	if (size_rc && !(*sizes_missing)++)
		tool_fserr(t, size_rc); /* the first says why; the summary says who */
	print_long_path(t, child, &st, size_rc, name, sz);
	free(child);
	return size_rc;
}

static int ls_dir(struct tool *t, const char *path, int lng, enum ls_size sz)
{
	int sizes_missing = 0;

	struct tessera_dirent *ents = malloc(TOOL_PAGE * sizeof(*ents));
	char cursor[sizeof(ents->name)] = "";
	uint32_t n = 0;
	int eof = 0, rc = 0, first = 0;

	if (!ents)
		return tool_err(t, -ENOMEM, "ls %s: out of memory", path);
	do {
		rc = tessera_readdir(t->fs, path, cursor, ents, TOOL_PAGE, &n, &eof);
		if (rc) {
			tool_fserr(t, rc);
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (lng)
				KEEP(first, ls_entry(t, path, ents[i].name, sz, &sizes_missing));
			else
				printf("%s\n", ents[i].name);
		}
		if (n)
			snprintf(cursor, sizeof(cursor), "%s", ents[n - 1].name);
	} while (!eof && n);
	rc = first;
out:
	if (sizes_missing) {
		fflush(stdout);
		tool_err(t, 0, "%s: %d size%s shown as '?'", path, sizes_missing,
			 sizes_missing == 1 ? "" : "s");
		tool_report_down(t);
	}
	free(ents);
	return rc;
}

static int ls_one(struct tool *t, char *arg, int lng, enum ls_size sz, int header,
		  int *printed)
{
	const char *path = tool_path(arg);
	struct tessera_stat st;
	int size_rc, rc = tessera_stat_partial(t->fs, path, &st, &size_rc);

	if (rc)
		return tool_fserr(t, rc);
	if (!S_ISDIR(st.mode)) {
		if (lng)
			print_long_path(t, path, &st, size_rc, arg, sz);
		else
			printf("%s\n", arg);
		if (lng && size_rc) {
			fflush(stdout);
			tool_fserr(t, size_rc);
			tool_report_down(t);
			return size_rc;
		}
		return 0;
	}
	if (header)
		printf("%s%s:\n", (*printed)++ ? "\n" : "", arg);
	return ls_dir(t, path, lng, sz);
}

int cmd_ls(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	enum ls_size sz;
	int rc, first = 0, printed = 0;

	rc = tool_opts_parse(t, argc, argv, "lh", "", &o);
	if (rc)
		goto out;
	sz = o.flags['h'] ? LS_HUMAN : LS_BYTES;
	rc = tool_connect(t);
	if (rc)
		goto out;
	/* ls -l shows links themselves (as ls -l does with its operands) */
	if (o.flags['l'])
		tessera_follow_links(t->fs, TESSERA_NOFOLLOW);
	if (!o.nops) {
		char root[] = "/";

		rc = ls_one(t, root, o.flags['l'], sz, 0, &printed);
		goto out;
	}
	for (int i = 0; i < o.nops; i++)
		KEEP(first, ls_one(t, o.ops[i], o.flags['l'], sz, o.nops > 1, &printed));
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}

/* ---------------------------------------------------------------- mkdir */

/* A name that exists: fine for -p if it is a directory. */
static int exists_as_dir(struct tool *t, const char *path)
{
	struct tessera_stat st;
	int rc = tessera_stat(t->fs, path, &st);

	if (rc)
		return tool_fserr(t, rc);
	if (!S_ISDIR(st.mode))
		return tool_err(t, -ENOTDIR, "mkdir %s: exists and is not a directory", path);
	return 0;
}

static int mkdir_p(struct tool *t, const char *path, mode_t mode)
{
	char *copy = strdup(path);
	int rc = 0;

	if (!copy)
		return tool_err(t, -ENOMEM, "mkdir %s: out of memory", path);
	/* Each proper prefix ending before a '/', then the whole path. */
	for (char *p = copy + 1;; p++) {
		int last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		if (p[-1] != '/') {
			*p = '\0';
			rc = tessera_mkdir(t->fs, copy, mode);
			if (rc == -EEXIST)
				rc = exists_as_dir(t, copy);
			else if (rc)
				tool_fserr(t, rc);
			if (rc)
				break;
			*p = last ? '\0' : '/';
		}
		if (last)
			break;
	}
	free(copy);
	return rc;
}

int cmd_mkdir(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	mode_t mode = 0777 & ~t->umask;
	int rc, first = 0;

	rc = tool_start(t, argc, argv, "p", "", &o, "no directory given");
	if (rc)
		goto out;
	for (int i = 0; i < o.nops; i++) {
		const char *path = tool_path(o.ops[i]);

		if (o.flags['p'] && path[0] == '/') {
			KEEP(first, mkdir_p(t, path, mode));
		} else {
			rc = tessera_mkdir(t->fs, path, mode);
			if (rc)
				KEEP(first, tool_fserr(t, rc));
		}
	}
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}

/* ------------------------------------------------------------------- rm */

/* Remove a directory's contents, page by page, then the directory. Stops
 * at the first failure. */
static int rm_tree(struct tool *t, const char *path)
{
	struct tessera_dirent *ents = malloc(TOOL_PAGE * sizeof(*ents));
	char cursor[sizeof(ents->name)] = "";
	uint32_t n = 0;
	int eof = 0, rc = 0;

	if (!ents)
		return tool_err(t, -ENOMEM, "rm %s: out of memory", path);
	do {
		rc = tessera_readdir(t->fs, path, cursor, ents, TOOL_PAGE, &n, &eof);
		if (rc) {
			tool_fserr(t, rc);
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			char *child = tool_join(path, ents[i].name);

			if (!child) {
				rc = tool_err(t, -ENOMEM, "rm %s: out of memory", path);
				goto out;
			}
			if (S_ISDIR(ents[i].mode)) {
				rc = rm_tree(t, child);
			} else {
				rc = tessera_unlink(t->fs, child);
				if (rc)
					tool_fserr(t, rc);
			}
			free(child);
			if (rc)
				goto out;
		}
		if (n)
			snprintf(cursor, sizeof(cursor), "%s", ents[n - 1].name);
	} while (!eof && n);
	rc = tessera_rmdir(t->fs, path);
	if (rc)
		tool_fserr(t, rc);
out:
	free(ents);
	return rc;
}

static int rm_one(struct tool *t, const char *path, int recursive)
{
	struct tessera_stat st;
	int rc = tessera_lstat(t->fs, path, &st);   /* rm removes a link, not its target */

	/* A file whose object is lost or damaged has no size to stat, and
	 * removing it is what its owner wants: the metadata daemon refuses a
	 * directory (EISDIR). */
	if (rc == -EIO)
		st.mode = S_IFREG;
	else if (rc)
		return tool_fserr(t, rc);
	if (!S_ISDIR(st.mode)) {
		rc = tessera_unlink(t->fs, path);
		return rc ? tool_fserr(t, rc) : 0;
	}
	if (!recursive)
		return tool_err(t, -EISDIR, "%s: is a directory (use rm -r)", path);
	if (!strcmp(path, "/") || !path[strspn(path, "/")])
		return tool_err(t, -EPERM, "%s: will not remove the root directory", path);
	return rm_tree(t, path);
}

int cmd_rm(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	int rc, first = 0;

	rc = tool_start(t, argc, argv, "rRf", "", &o, "nothing to remove");
	if (rc)
		goto out;
	for (int i = 0; i < o.nops; i++)
		KEEP(first, rm_one(t, tool_path(o.ops[i]), o.flags['r'] || o.flags['R']));
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}

/* ------------------------------------------------------------------- mv */

int cmd_mv(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_stat st;
	char base[256], *into = NULL;
	const char *from, *to;
	int rc;

	rc = tool_opts_parse(t, argc, argv, "", "", &o);
	if (rc)
		goto out;
	if (o.nops != 2) {
		rc = tool_usage(t, "expected FROM and TO, got %d operand(s)", o.nops);
		goto out;
	}
	rc = tool_connect(t);
	if (rc)
		goto out;
	from = tool_path(o.ops[0]);
	to = tool_path(o.ops[1]);
	/* Like mv(1): a directory as the target means "into it". */
	if (tessera_stat(t->fs, to, &st) == 0 && S_ISDIR(st.mode)) {
		tool_basename(from, base, sizeof(base));
		into = tool_join(to, base);
		if (!into) {
			rc = tool_err(t, -ENOMEM, "out of memory");
			goto out;
		}
		to = into;
	}
	rc = tessera_rename(t->fs, from, to);
	if (rc)
		tool_fserr(t, rc);
out:
	free(into);
	tool_opts_free(&o);
	return rc;
}

/* --------------------------------------------------------------- layouts */

static void print_layout(struct tool *t, const struct tessera_layout *l, int is_dir)
{
	char h[32];

	if (l->strip_size) {
		tool_human(l->strip_size, h, sizeof(h));
		printf("  strip_size:   %" PRIu64 " (%s)\n", l->strip_size, h);
	} else {
		printf("  strip_size:   inherited\n");
	}
	if (l->count)
		printf("  stripe_count: %" PRIu32 "\n", l->count);
	else
		printf("  stripe_count: inherited\n");
	printf("  versioned:    %s\n", l->kind == TESSERA_LAYOUT_VERSIONED ? "yes" : "no");
	if (is_dir)
		return;
	printf("  %4s  %6s  %-24s  %s\n", "slot", "server", "address", "object handle");
	for (uint32_t i = 0; i < l->count && i < TESSERA_MAX_STRIPE; i++) {
		char addr[200];

		tool_ios_address(t, l->servers[i], addr, sizeof(addr));
		printf("  %4" PRIu32 "  %6" PRIu32 "  %-24s  0x%016" PRIx64 "\n", i, l->servers[i],
		       addr, l->handles[i]);
	}
}

static void print_time(const char *label, const struct timespec *ts)
{
	char when[64];
	time_t s = ts->tv_sec;
	struct tm tm;

	if (localtime_r(&s, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	else
		snprintf(when, sizeof(when), "%lld", (long long)s);
	printf("%s %s.%09ld\n", label, when, ts->tv_nsec);
}

/* How stat and getstripe print: text, or (--json) one array of objects. */
struct show {
	struct json_object *arr;        /* NULL: text */
};

/* The common shape of stat and getstripe: run `one` on each path, keep
 * going after a failure, return the first; with --json print the array of
 * what succeeded. */
static int each_path(struct tool *t, int argc, char **argv,
		     int (*one)(struct tool *t, char *arg, struct show *sh))
{
	struct tool_opts o;
	struct show sh = { NULL };
	int rc, first = 0;

	rc = tool_start(t, argc, argv, "j", "", &o, "no path given");
	if (rc)
		goto out;
	if (o.flags['j'] && !(sh.arr = json_object_new_array())) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < o.nops; i++)
		KEEP(first, one(t, o.ops[i], &sh));
	if (sh.arr)
		KEEP(first, tool_json_print(t, sh.arr));
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}

/* A file type in words: for stat's text and (`json`) its JSON. */
enum type_words { TYPE_TEXT, TYPE_JSON };

static const char *type_name(uint32_t mode, enum type_words how)
{
	static const struct { uint32_t type; const char *text, *json; } names[] = {
		{ S_IFDIR, "directory", "directory" },  { S_IFREG, "regular file", "file" },
		{ S_IFLNK, "symbolic link", "symlink" }, { S_IFIFO, "fifo", "fifo" },
		{ S_IFSOCK, "socket", "socket" },
		{ S_IFCHR, "character special file", "chardev" },
		{ S_IFBLK, "block special file", "blockdev" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((mode & S_IFMT) == names[i].type)
			return how == TYPE_JSON ? names[i].json : names[i].text;
	return "unknown";
}

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* A path's stat (and layout) as JSON (docs/user-guide.md). */
static struct json_object *stat_json(struct tool *t, const char *arg,
				     const struct tessera_stat *st, int size_rc,
				     const struct tessera_layout *l, int with_attrs)
{
	struct json_object *o = json_object_new_object();
	int dir = S_ISDIR(st->mode);

	if (!o)
		return NULL;
	json_object_object_add(o, "path", json_object_new_string(arg));
	json_object_object_add(o, "type", json_object_new_string(type_name(st->mode, TYPE_JSON)));
	if (with_attrs) {
		json_object_object_add(o, "handle", json_object_new_uint64(st->handle));
		json_object_object_add(o, "mode", json_object_new_int64(st->mode & 07777));
		json_object_object_add(o, "nlink", json_object_new_int64(st->nlink));
		json_object_object_add(o, "uid", json_object_new_int64(st->uid));
		json_object_object_add(o, "gid", json_object_new_int64(st->gid));
		json_object_object_add(o, "size", size_rc ? NULL : json_object_new_uint64(st->size));
		json_object_object_add(o, "atime_ns", json_object_new_int64(ns_of(&st->atime)));
		json_object_object_add(o, "mtime_ns", json_object_new_int64(ns_of(&st->mtime)));
		json_object_object_add(o, "ctime_ns", json_object_new_int64(ns_of(&st->ctime)));
	}
	json_object_object_add(o, "layout", tool_json_layout(t, l, dir));
	return o;
}

static void stat_text(struct tool *t, const char *arg, const struct tessera_stat *st,
		      const char *size_why, const struct tessera_layout *l)
{
	char mode[11];

	tool_mode_string(st->mode, mode);
	printf("  File: %s\n", arg);
	printf("  Type: %s\n", type_name(st->mode, TYPE_TEXT));
	printf("Handle: 0x%016" PRIx64 "\n", st->handle);
	printf("  Mode: %04o (%s)\n", st->mode & 07777, mode);
	printf(" Links: %" PRIu32 "\n", st->nlink);
	printf("   Uid: %" PRIu32 "\n   Gid: %" PRIu32 "\n", st->uid, st->gid);
	if (size_why)
		printf("  Size: ? (%s)\n", size_why);
	else
		printf("  Size: %" PRIu64 "%s\n", st->size, S_ISDIR(st->mode) ? " (entries)" : "");
	print_time("Access:", &st->atime);
	print_time("Modify:", &st->mtime);
	print_time("Change:", &st->ctime);
	printf("Layout:%s\n", S_ISDIR(st->mode) ? " (default for new files)" : "");
	print_layout(t, l, S_ISDIR(st->mode));
}

/* What stat shows, or getstripe (the layout alone). */
enum show_what { SHOW_STAT, SHOW_STRIPE };

static int show_one(struct tool *t, char *arg, struct show *sh, enum show_what what)
{
	const char *path = tool_path(arg);
	struct tessera_stat st;
	struct tessera_layout *l = malloc(sizeof(*l));
	char why[1024] = "";
	int rc, size_rc = 0;

	if (!l)
		return tool_err(t, -ENOMEM, "%s: out of memory", path);
	/* Everything but the size still shows when a daemon holding part of
	 * the file is down; the command then fails naming it. */
	rc = tessera_stat_partial(t->fs, path, &st, &size_rc);
	if (size_rc)
		snprintf(why, sizeof(why), "%s", tessera_errmsg(t->fs));
	if (!rc)
		rc = tessera_get_layout(t->fs, path, l);
	if (rc) {
		tool_fserr(t, rc);
		goto out;
	}
	if (sh->arr) {
		struct json_object *o = stat_json(t, arg, &st, size_rc, l, what == SHOW_STAT);

		if (!o || json_object_array_add(sh->arr, o))
			rc = tool_err(t, -ENOMEM, "out of memory");
	} else if (what == SHOW_STAT) {
		stat_text(t, arg, &st, size_rc ? why : NULL, l);
	} else {
		printf("%s%s\n", arg, S_ISDIR(st.mode) ? " (directory default)" : "");
		print_layout(t, l, S_ISDIR(st.mode));
	}
	if (!rc && size_rc && what == SHOW_STAT) {
		fflush(stdout);
		rc = tool_err(t, size_rc, "%s", why);
		tool_report_down(t);
	}
out:
	free(l);
	return rc;
}

static int stat_one(struct tool *t, char *arg, struct show *sh)
{
	return show_one(t, arg, sh, SHOW_STAT);
}

static int getstripe_one(struct tool *t, char *arg, struct show *sh)
{
	return show_one(t, arg, sh, SHOW_STRIPE);
}

int cmd_stat(struct tool *t, int argc, char **argv)
{
	return each_path(t, argc, argv, stat_one);
}

int cmd_getstripe(struct tool *t, int argc, char **argv)
{
	return each_path(t, argc, argv, getstripe_one);
}

/* setstripe's operands and options: one PATH, -s STRIP_SIZE and/or -c
 * COUNT (0 to TESSERA_MAX_STRIPE; -1, as in Lustre: every storage daemon,
 * *all set, counted once connected). */
static int setstripe_args(struct tool *t, const struct tool_opts *o, uint64_t *strip,
			  uint64_t *count, int *all)
{
	if (o->nops != 1)
		return tool_usage(t, "expected one PATH, got %d", o->nops);
	if (!o->vals['s'] && !o->vals['c'] && !o->flags['V'])
		return tool_usage(t, "give -s STRIP_SIZE, -c COUNT, -V or more of them");
	if (o->vals['s'] && tp_parse_size(o->vals['s'], strip))
		return tool_usage(t, "bad strip size '%s'", o->vals['s']);
	*all = o->vals['c'] && !strcmp(o->vals['c'], "-1");
	if (o->vals['c'] && !*all &&
	    (tp_parse_size(o->vals['c'], count) || *count > TESSERA_MAX_STRIPE))
		return tool_usage(t, "bad stripe count '%s' (0 to %d)", o->vals['c'],
				  TESSERA_MAX_STRIPE);
	return 0;
}

/* A new, empty file at path with the layout (0s: the directory's). */
static int setstripe_create(struct tool *t, const char *path, uint64_t strip, uint64_t count,
			    enum tessera_layout_kind kind)
{
	struct tessera_layout *l = calloc(1, sizeof(*l));
	tessera_file *f = NULL;
	int rc;

	if (!l)
		return tool_err(t, -ENOMEM, "out of memory");
	l->strip_size = strip;
	l->count = (uint32_t)count;
	l->kind = kind;
	rc = tessera_open(t->fs, path, O_WRONLY | O_CREAT | O_EXCL, 0666 & ~t->umask, l, &f);
	if (!rc)
		rc = tessera_close(f);
	if (rc)
		tool_fserr(t, rc);
	free(l);
	return rc;
}

/* setstripe -d DIR: the directory's default layout cleared, so that its
 * new files take the file system's default again (Lustre's idiom). */
static int setstripe_delete(struct tool *t, const struct tool_opts *o)
{
	int rc;

	if (o->vals['s'] || o->vals['c'] || o->flags['V'])
		return tool_usage(t, "-d takes no -s, -c or -V");
	if (o->nops != 1)
		return tool_usage(t, "expected one directory, got %d", o->nops);
	rc = tool_connect(t);
	if (rc)
		return rc;
	rc = tessera_clear_dir_layout(t->fs, tool_path(o->ops[0]));
	return rc ? tool_fserr(t, rc) : 0;
}

int cmd_setstripe(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_stat st;
	uint64_t strip = 0, count = 0;
	const char *path;
	int rc, all = 0;
	enum tessera_layout_kind kind;

	rc = tool_opts_parse(t, argc, argv, "dV", "sc", &o);
	if (!rc && o.flags['d']) {
		rc = setstripe_delete(t, &o);
		goto out;
	}
	if (!rc)
		rc = setstripe_args(t, &o, &strip, &count, &all);
	if (!rc)
		rc = tool_connect(t);
	if (rc)
		goto out;
	path = tool_path(o.ops[0]);
	kind = o.flags['V'] ? TESSERA_LAYOUT_VERSIONED : TESSERA_LAYOUT_PLAIN;
	if (all)
		count = tessera_ios_count(t->fs);
	if (count > tessera_ios_count(t->fs)) {
		rc = tool_err(t, -EINVAL, "%s: stripe count %" PRIu64 " exceeds the %" PRIu32
			      " storage daemons", path, count, tessera_ios_count(t->fs));
		goto out;
	}
	rc = tessera_stat(t->fs, path, &st);
	if (!rc && S_ISDIR(st.mode)) {
		rc = kind == TESSERA_LAYOUT_VERSIONED
			     ? tessera_set_dir_layout_kind(t->fs, path, strip, (uint32_t)count, kind)
			     : tessera_set_dir_layout(t->fs, path, strip, (uint32_t)count);
		if (rc)
			tool_fserr(t, rc);
	} else if (!rc) {
		rc = tool_err(t, -EEXIST, "%s: %s (a file's layout is fixed when it is created; "
			      "give a new name)", path, strerror(EEXIST));
	} else if (rc != -ENOENT) {
		tool_fserr(t, rc);
	} else {
		rc = setstripe_create(t, path, strip, count, kind);
	}
out:
	tool_opts_free(&o);
	return rc;
}

/* ------------------------------------------------------------- truncate */

int cmd_truncate(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	uint64_t size;
	int rc, first = 0;

	rc = tool_opts_parse(t, argc, argv, "", "s", &o);
	if (rc)
		goto out;
	if (!o.vals['s']) {
		rc = tool_usage(t, "-s SIZE is required");
		goto out;
	}
	if (tp_parse_size(o.vals['s'], &size)) {
		rc = tool_usage(t, "bad size '%s'", o.vals['s']);
		goto out;
	}
	if (!o.nops) {
		rc = tool_usage(t, "no file given");
		goto out;
	}
	rc = tool_connect(t);
	if (rc)
		goto out;
	for (int i = 0; i < o.nops; i++) {
		rc = tessera_truncate(t->fs, tool_path(o.ops[i]), size);
		if (rc)
			KEEP(first, tool_fserr(t, rc));
	}
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}
