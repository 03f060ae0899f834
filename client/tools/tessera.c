/*
 * tessera.c - the `tessera` command: main, command table, option parsing,
 * messages and small helpers shared by the commands.
 *
 *   tessera [-c CONFIG] COMMAND [ARGS...]
 *
 * Exit status: 0 success, 1 a command failed, 2 a usage error.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json.h>

#include "tool.h"

#define DEFAULT_CONFIG "./var/tessera.conf"

/* What -h means to a command: help, or (ls -lh) human-readable sizes. */
enum h_meaning { H_HELP, H_HUMAN };

struct command {
	const char *name;
	int (*run)(struct tool *t, int argc, char **argv);
	const char *usage;      /* after "tessera [-c CONFIG] NAME " */
	const char *summary;
	enum h_meaning h;
};

static const struct command commands[] = {
	{ "ping", cmd_ping, "[-j|--json]", "ask every server for its role, version and round-trip time", H_HELP },
	{ "ls", cmd_ls, "[-l|--long] [-h|--human-readable] PATH...",
	  "list directories (-l: mode, links, owner, size, mtime; -h: sizes as 1.5M)", H_HUMAN },
	{ "mkdir", cmd_mkdir, "[-p|--parents] PATH...",
	  "make directories (-p: with parents, no error if they exist)", H_HELP },
	{ "rm", cmd_rm, "[-r|--recursive] PATH...", "remove files (-r: directories too, recursively)", H_HELP },
	{ "mv", cmd_mv, "FROM TO", "rename; into TO if TO is a directory", H_HELP },
	{ "ln", cmd_ln, "[-s|--symbolic] TARGET LINK_NAME",
	  "a hard link LINK_NAME to file TARGET (-s: a symbolic link whose target is "
	  "TARGET as written)", H_HELP },
	{ "readlink", cmd_readlink, "PATH...", "print symbolic links' targets", H_HELP },
	{ "mknod", cmd_mknod, "NAME p | NAME c|b MAJOR MINOR",
	  "make a FIFO (p) or device node (c, b; root only): metadata only", H_HELP },
	{ "stat", cmd_stat, "[-j|--json] PATH...",
	  "all attributes and the layout (strips, servers, objects)", H_HELP },
	{ "cp", cmd_cp, "[-q|--quiet] [-r|--recursive] SRC DST",
	  "copy; Tessera paths as tessera:/PATH, - is stdin/stdout, others are local "
	  "(-r: a directory tree, modes kept; the summary goes to stderr, -q: none)", H_HELP },
	{ "cat", cmd_cat, "[-S|--snapshot NAME] PATH...",
	  "write files to standard output (-S: a versioned file as of snapshot NAME)", H_HELP },
	{ "df", cmd_df, "[-j|--json]", "space over all storage daemons, and the number of files", H_HELP },
	{ "stats", cmd_stats, "[-j|--json]",
	  "storage daemons' counters: requests, pieces, bytes by method", H_HELP },
	{ "fsck", cmd_fsck, "[-r|--repair] [-j|--json]",
	  "objects against layouts: orphans, misplaced objects, sizes (root; -r removes orphans)", H_HELP },
	{ "setstripe", cmd_setstripe,
	  "[-s|--stripe-size STRIP_SIZE] [-c|--stripe-count COUNT] [-V|--versioned] PATH | "
	  "-d|--delete DIR",
	  "set a directory's default layout, or create a new empty file with this layout "
	  "(-c -1: all storage daemons; -V: versioned files; -d: the directory inherits "
	  "again)", H_HELP },
	{ "getstripe", cmd_getstripe, "[-j|--json] PATH...",
	  "show a file's layout or a directory's default", H_HELP },
	{ "truncate", cmd_truncate, "-s|--size SIZE PATH...", "set file sizes", H_HELP },
	{ "snapshot", cmd_snapshot, "create|drop FILE NAME | list [-j|--json] FILE",
	  "name the newest version of a versioned file, drop a name, or list them", H_HELP },
	{ "vstat", cmd_vstat, "[-j|--json] [-l|--long] FILE...",
	  "a versioned file's version server state: newest, merged, unmerged, reads, IDs "
	  "(-l: and each object's log: merged, records, bytes)", H_HELP },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_usage(FILE *f)
{
	fprintf(f, "usage: tessera [-c|--config CONFIG] COMMAND [ARGS...]\n"
		   "       tessera COMMAND -h|--help\n"
		   "       tessera [COMMAND] --version\n\n"
		   "The config file is CONFIG, else $TESSERA_CONFIG, else %s,\n"
		   "else /etc/tessera/tessera.conf.\n"
		   "Sizes take K, M, G or T suffixes (powers of 1024).\n\ncommands:\n",
		DEFAULT_CONFIG);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n  %-10s   %s\n", commands[i].name, commands[i].usage, "",
			commands[i].summary);
}

static void print_command_usage(FILE *f, const struct command *c)
{
	fprintf(f, "usage: tessera [-c CONFIG] %s%s%s\n  %s\n", c->name, c->usage[0] ? " " : "",
		c->usage, c->summary);
}

/* ------------------------------------------------------------- messages */

int tool_err(struct tool *t, int rc, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tessera: %s: ", t->cmd ? t->cmd : "error");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return rc;
}

int tool_fserr(struct tool *t, int rc)
{
	const char *m = t->fs ? tessera_errmsg(t->fs) : NULL;

	if (!m || !*m)
		return tool_err(t, rc, "%s", strerror(-rc));
	return tool_err(t, rc, "%s", m);
}

int tool_usage(struct tool *t, const char *fmt, ...)
{
	const struct command *c = t->cmd ? find_command(t->cmd) : NULL;
	va_list ap;

	fprintf(stderr, "tessera: %s: ", t->cmd ? t->cmd : "usage");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (c)
		print_command_usage(stderr, c);
	else
		fprintf(stderr, "try 'tessera --help'\n");
	t->usage_error = 1;
	return -EINVAL;
}

/* -------------------------------------------------------------- options */

/* Long options: each is another name for a short one, accepted by a
 * command that takes that letter (and, for `only`, is one of those
 * commands: -r is --recursive for cp and rm but --repair for fsck). */
static const struct long_opt {
	const char *name;
	char letter;
	const char *only;       /* space-separated commands, or NULL */
} long_opts[] = {
	{ "long", 'l', NULL },          { "human-readable", 'h', NULL },
	{ "parents", 'p', NULL },       { "recursive", 'r', "cp rm" },
	{ "repair", 'r', "fsck" },      { "force", 'f', NULL },
	{ "quiet", 'q', NULL },         { "json", 'j', NULL },
	{ "stripe-count", 'c', NULL },  { "stripe-size", 's', "setstripe" },
	{ "size", 's', "truncate" },    { "delete", 'd', NULL },
	{ "symbolic", 's', "ln" },       { "versioned", 'V', "setstripe" },
	{ "snapshot", 'S', "cat" },
};

static int in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* One value option's letter `c`: its value is `inline_val` if not NULL,
 * else the next argument. */
static int take_value(struct tool *t, int argc, char **argv, int *i, const char *inline_val,
		      unsigned char c, struct tool_opts *o, const char *shown)
{
	o->flags[c]++;
	if (inline_val)
		o->vals[c] = inline_val;
	else if (*i + 1 < argc)
		o->vals[c] = argv[++*i];
	else
		return tool_usage(t, "option %s needs a value", shown);
	return 0;
}

/* "--name" or "--name=VALUE". */
static int long_opt(struct tool *t, int argc, char **argv, int *i, const char *bools,
		    const char *withval, struct tool_opts *o)
{
	const char *a = argv[*i] + 2, *eq = strchr(a, '=');
	size_t len = eq ? (size_t)(eq - a) : strlen(a);

	for (size_t k = 0; k < sizeof(long_opts) / sizeof(long_opts[0]); k++) {
		const struct long_opt *l = &long_opts[k];
		unsigned char c = (unsigned char)l->letter;

		if (strlen(l->name) != len || strncmp(l->name, a, len))
			continue;
		if (l->only && !(t->cmd && in_list(l->only, t->cmd)))
			continue;
		if (strchr(withval, c))
			return take_value(t, argc, argv, i, eq ? eq + 1 : NULL, c, o, argv[*i]);
		if (!strchr(bools, c))
			continue;
		if (eq)
			return tool_usage(t, "option --%.*s takes no value", (int)len, a);
		o->flags[c]++;
		return 0;
	}
	return tool_usage(t, "unknown option '%s'", argv[*i]);
}

/* One cluster of short options, argv[*i] ("-vs 1M", "-s1M"): a value
 * option takes the rest of the cluster or the next argument (*i moves on
 * past it). -h is help unless the command takes h (ls -lh). 0, or a
 * usage error. */
static int short_opts(struct tool *t, int argc, char **argv, int *i, const char *bools,
		      const char *withval, struct tool_opts *o)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		unsigned char c = (unsigned char)*p;
		char shown[3] = { '-', (char)c, '\0' };

		if (c < 128 && strchr(bools, c))
			o->flags[c]++;
		else if (c < 128 && strchr(withval, c))
			return take_value(t, argc, argv, i, p[1] ? p + 1 : NULL, c, o, shown);
		else if (c == 'h')
			o->help = 1;
		else
			return tool_usage(t, "unknown option '-%c'", c);
	}
	return 0;
}

int tool_opts_parse(struct tool *t, int argc, char **argv, const char *bools,
		    const char *withval, struct tool_opts *o)
{
	int only_ops = 0, rc;

	memset(o, 0, sizeof(*o));
	o->ops = calloc((size_t)argc + 1, sizeof(*o->ops));
	if (!o->ops)
		return tool_err(t, -ENOMEM, "out of memory");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		rc = 0;
		if (only_ops || a[0] != '-' || !a[1])
			o->ops[o->nops++] = argv[i];
		else if (!strcmp(a, "--"))
			only_ops = 1;
		else if (!strcmp(a, "--help"))
			o->help = 1;
		else if (a[1] == '-')
			rc = long_opt(t, argc, argv, &i, bools, withval, o);
		else
			rc = short_opts(t, argc, argv, &i, bools, withval, o);
		if (rc)
			return rc;
	}
	return 0;
}

void tool_opts_free(struct tool_opts *o)
{
	free(o->ops);
	o->ops = NULL;
}

int tool_start(struct tool *t, int argc, char **argv, const char *bools,
	       const char *withval, struct tool_opts *o, const char *none)
{
	int rc = tool_opts_parse(t, argc, argv, bools, withval, o);

	if (rc)
		return rc;
	if (!o->nops)
		return tool_usage(t, "%s", none);
	return tool_connect(t);
}

int tool_start_bare(struct tool *t, int argc, char **argv, const char *bools,
		    struct tool_opts *o)
{
	int rc = tool_opts_parse(t, argc, argv, bools, "", o);

	if (rc)
		return rc;
	if (o->nops)
		return tool_usage(t, "takes no operands");
	return tool_connect(t);
}

/* -------------------------------------------------------------- helpers */

int tool_json_print(struct tool *t, struct json_object *doc)
{
	const char *s;

	if (!doc)
		return tool_err(t, -ENOMEM, "out of memory");
	s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s)
		printf("%s\n", s);
	json_object_put(doc);
	return s ? 0 : tool_err(t, -ENOMEM, "out of memory");
}

struct json_object *tool_json_layout(struct tool *t, const struct tessera_layout *l, int is_dir)
{
	struct json_object *o = json_object_new_object(), *objs;

	if (!o)
		return NULL;
	json_object_object_add(o, "strip_size", json_object_new_uint64(l->strip_size));
	json_object_object_add(o, "stripe_count", json_object_new_int64(l->count));
	json_object_object_add(o, "versioned",
			       json_object_new_boolean(l->kind == TESSERA_LAYOUT_VERSIONED));
	if (is_dir)
		return o;
	objs = json_object_new_array();
	json_object_object_add(o, "objects", objs);
	for (uint32_t i = 0; objs && i < l->count && i < TESSERA_MAX_STRIPE; i++) {
		struct json_object *e = json_object_new_object();
		char addr[200];

		if (!e)
			break;
		tool_ios_address(t, l->servers[i], addr, sizeof(addr));
		json_object_object_add(e, "slot", json_object_new_int64(i));
		json_object_object_add(e, "server", json_object_new_int64(l->servers[i]));
		json_object_object_add(e, "address", json_object_new_string(addr));
		json_object_object_add(e, "handle", json_object_new_uint64(l->handles[i]));
		json_object_array_add(objs, e);
	}
	return o;
}

void tool_human(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "BKMGTPE";
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)bytes);
	else
		snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

const char *tool_tpath(const char *s)
{
	return strncmp(s, "tessera:", 8) ? NULL : s + 8;
}

char *tool_path(char *s)
{
	char *p = strncmp(s, "tessera:", 8) ? s : s + 8, *r = p, *w = p;

	/* "//a//b/" -> "/a/b": the metadata daemon takes no empty components */
	for (; *r; r++)
		if (*r != '/' || w == p || w[-1] != '/')
			*w++ = *r;
	while (w > p + 1 && w[-1] == '/')
		w--;
	*w = '\0';
	return p;
}

char *tool_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = malloc(dl + nl + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	if (!dl || dir[dl - 1] != '/')
		p[dl++] = '/';
	memcpy(p + dl, name, nl + 1);
	return p;
}

void tool_basename(const char *path, char *buf, size_t len)
{
	size_t end = strlen(path), start;

	while (end > 1 && path[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (end - start >= len)
		end = start + len - 1;
	memcpy(buf, path + start, end - start);
	buf[end - start] = '\0';
}

/* ls's letter for a file type. */
static char type_char(uint32_t mode)
{
	static const struct { uint32_t type; char c; } types[] = {
		{ S_IFREG, '-' }, { S_IFDIR, 'd' }, { S_IFLNK, 'l' }, { S_IFIFO, 'p' },
		{ S_IFSOCK, 's' }, { S_IFCHR, 'c' }, { S_IFBLK, 'b' },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((mode & S_IFMT) == types[i].type)
			return types[i].c;
	return '?';
}

void tool_mode_string(uint32_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = type_char(mode);
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

/* The public API has no call that names a server without contacting it,
 * so read the `ios = HOST:PORT` lines of the config file ourselves. */
void tool_ios_address(struct tool *t, uint32_t want, char *buf, size_t len)
{
	FILE *f = fopen(t->config, "r");
	char line[1024];
	uint32_t i = 0;

	snprintf(buf, len, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *p = line, *eq, *v, *e;

		if (hash)
			*hash = '\0';
		while (isspace((unsigned char)*p))
			p++;
		eq = strchr(p, '=');
		if (!eq || strncmp(p, "ios", 3))
			continue;
		for (e = p + 3; e < eq && isspace((unsigned char)*e); e++)
			;
		if (e != eq)
			continue;
		if (i++ != want)
			continue;
		for (v = eq + 1; isspace((unsigned char)*v); v++)
			;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]); e--)
			;
		*e = '\0';
		snprintf(buf, len, "%s", v);
		break;
	}
	fclose(f);
}

/* ----------------------------------------------------------- connecting */

int tool_connect(struct tool *t)
{
	char err[512] = "";
	int rc;

	if (t->fs)
		return 0;
	/* The library's search path: -c, $TESSERA_CONFIG, ./var, /etc/tessera. */
	if ((rc = tessera_config_find(t->config, &t->config, err, sizeof(err))))
		return tool_err(t, rc, "%s", err);
	rc = tessera_connect(t->config, &t->fs, err, sizeof(err));
	if (rc) {
		t->fs = NULL;
		return tool_err(t, rc, "connect using %s: %s", t->config,
				err[0] ? err : strerror(-rc));
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

/* The global options before the command (-c CONFIG, -cCONFIG, --, and
 * --help): *at is where the command starts. The exit status when main
 * must stop here (help, or 2 for a bad option), else -1. */
static int global_opts(int argc, char **argv, int *at, const char **config)
{
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("tessera %s\n", TESSERA_VERSION);
			return 0;
		} else if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc) {
			*config = argv[i + 1];
			i += 2;
		} else if (!strncmp(a, "--config=", 9) && a[9]) {
			*config = a + 9;
			i++;
		} else if (!strncmp(a, "-c", 2) && a[2] && a[1] != '-') {
			*config = a + 2;
			i++;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else {
			fprintf(stderr, "tessera: unknown or incomplete option '%s'\n", a);
			print_usage(stderr);
			return 2;
		}
	}
	*at = i;
	return -1;
}

/* argv[0] is the command's name: help with it, or the command. The exit
 * status when main must stop here, else -1 with *out the command. */
static int pick_command(int argc, char **argv, const struct command **out)
{
	const struct command *c;

	if (argc < 1) {
		fprintf(stderr, "tessera: no command given\n");
		print_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[0], "help")) {
		c = argc > 1 ? find_command(argv[1]) : NULL;
		if (c)
			print_command_usage(stdout, c);
		else
			print_usage(stdout);
		return 0;
	}
	c = find_command(argv[0]);
	if (!c) {
		fprintf(stderr, "tessera: unknown command '%s'\n", argv[0]);
		print_usage(stderr);
		return 2;
	}
	for (int j = 1; j < argc && strcmp(argv[j], "--"); j++) {
		if (!strcmp(argv[j], "--help") || (!strcmp(argv[j], "-h") && c->h == H_HELP)) {
			print_command_usage(stdout, c);
			return 0;
		}
		if (!strcmp(argv[j], "--version")) {
			printf("tessera %s\n", TESSERA_VERSION);
			return 0;
		}
	}
	*out = c;
	return -1;
}

int main(int argc, char **argv)
{
	struct tool t = { 0 };
	const char *config = NULL;
	const struct command *c = NULL;
	int i = 1, rc;

	t.umask = umask(022);
	umask(t.umask);
	t.stderr_tty = isatty(STDERR_FILENO);
	if ((rc = global_opts(argc, argv, &i, &config)) >= 0)
		return rc;
	if ((rc = pick_command(argc - i, argv + i, &c)) >= 0)
		return rc;
	t.cmd = c->name;
	t.config = config;
	rc = c->run(&t, argc - i, argv + i);
	tessera_disconnect(t.fs);
	if (fflush(stdout) && !rc) {
		fprintf(stderr, "tessera: %s: write standard output: %s\n", c->name, strerror(errno));
		rc = -EIO;
	}
	if (!rc)
		return 0;
	return t.usage_error ? 2 : 1;
}
