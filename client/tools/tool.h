/*
 * tool.h - shared pieces of the `tessera` command-line tool.
 *
 * tessera.c   main, command table, options, messages, connection
 * ns.c        namespace commands: ls mkdir rm mv stat setstripe getstripe
 *             truncate
 * data.c      cp and cat
 * servers.c   ping, df and stats
 * fsck.c      fsck
 * vers.c      snapshot and vstat (versioned files)
 *
 * Everything uses only the public client API (tessera.h), and proto's
 * size parser (tp_size.h), which the config file shares. There is no
 * global mutable state: a struct tool is passed to every function.
 * Functions return 0 or a negative errno; a command's messages are
 * printed where the failure is found, so callers only pass the code on.
 */
#ifndef TESSERA_TOOL_H
#define TESSERA_TOOL_H

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "tessera.h"

struct json_object;

#define TOOL_BLOCK (8u << 20)   /* cp/cat transfer size */
#define TOOL_PAGE  256u         /* readdir page */

struct tool {
	const char *config;     /* -c, else resolved by tool_connect */
	const char *cmd;        /* the running command, for messages */
	tessera_fs *fs;         /* connected before a command runs */
	mode_t umask;           /* the process's umask, applied to creates */
	int stderr_tty;         /* progress bars only when stderr is a tty */
	int usage_error;        /* set by tool_usage: exit status 2 */
};

/* Parsed options of one command: flags[c] counts -c, vals[c] holds the
 * argument of an option that takes one; ops are the operands. */
struct tool_opts {
	int flags[128];
	const char *vals[128];
	char **ops;
	int nops;
	int help;               /* --help or -h given */
};

/* Connect (once) using the config tessera_config_find finds (-c first). */
int tool_connect(struct tool *t);

/* "tessera: CMD: <message>" on stderr; returns rc. */
int tool_err(struct tool *t, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, with the library's message for the last failed call. */
int tool_fserr(struct tool *t, int rc);
/* A usage error: message plus the command's usage line; exit status 2. */
int tool_usage(struct tool *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parse argv (argv[0] is the command). `bools` lists flag letters,
 * `withval` letters that take a value. Frees nothing: call
 * tool_opts_free. */
int tool_opts_parse(struct tool *t, int argc, char **argv, const char *bools,
		    const char *withval, struct tool_opts *o);
void tool_opts_free(struct tool_opts *o);
/* The start every command that takes paths shares: parse, insist on at
 * least one operand (else usage error `none`), connect. */
int tool_start(struct tool *t, int argc, char **argv, const char *bools,
	       const char *withval, struct tool_opts *o, const char *none);
/* The same for a command that takes no operands, and only the flags
 * `bools`. */
int tool_start_bare(struct tool *t, int argc, char **argv, const char *bools,
		    struct tool_opts *o);

/* --json: print `doc` (one JSON document, pretty, then a newline) on
 * stdout and release it. NULL (out of memory building it): an error. */
int tool_json_print(struct tool *t, struct json_object *doc);
/* A layout as JSON (docs/user-guide.md, "JSON output"); is_dir: no
 * objects. */
struct json_object *tool_json_layout(struct tool *t, const struct tessera_layout *l,
				     int is_dir);

/* 1536 -> "1.5K". */
void tool_human(uint64_t bytes, char *buf, size_t len);
/* "tessera:/a/b" -> "/a/b"; NULL if `s` has no tessera: prefix. */
const char *tool_tpath(const char *s);
/* A Tessera operand (with or without the tessera: prefix), tidied in
 * place: repeated and trailing slashes dropped. */
char *tool_path(char *s);
/* dir + "/" + name, malloc'd; NULL on ENOMEM. */
char *tool_join(const char *dir, const char *name);
/* The last component of a path ("/a/b/" -> "b"), into buf. */
void tool_basename(const char *path, char *buf, size_t len);
/* The address of storage daemon `i` from the config file ("?" if it
 * cannot be read). */
void tool_ios_address(struct tool *t, uint32_t i, char *buf, size_t len);
/* A server's state in words: "up", "down since 12:03:04 (connection
 * refused)", "suspect since ... (...)". */
void tool_state_words(const struct tessera_server_status *st, char *buf, size_t len);
/* One line on stderr per server this process knows is not up ("tessera:
 * CMD: storage daemon 1 (host:port): down since 12:03:04 (why)"). Returns
 * how many. */
int tool_report_down(struct tool *t);
/* "drwxr-xr-x", "lrwxrwxrwx", "prw-r--r--" */
void tool_mode_string(uint32_t mode, char out[11]);

int cmd_ls(struct tool *t, int argc, char **argv);
int cmd_mkdir(struct tool *t, int argc, char **argv);
int cmd_rm(struct tool *t, int argc, char **argv);
int cmd_mv(struct tool *t, int argc, char **argv);
int cmd_stat(struct tool *t, int argc, char **argv);
int cmd_setstripe(struct tool *t, int argc, char **argv);
int cmd_getstripe(struct tool *t, int argc, char **argv);
int cmd_truncate(struct tool *t, int argc, char **argv);
int cmd_cp(struct tool *t, int argc, char **argv);
int cmd_cat(struct tool *t, int argc, char **argv);
int cmd_ping(struct tool *t, int argc, char **argv);
int cmd_df(struct tool *t, int argc, char **argv);
int cmd_stats(struct tool *t, int argc, char **argv);
int cmd_fsck(struct tool *t, int argc, char **argv);
int cmd_ln(struct tool *t, int argc, char **argv);
int cmd_readlink(struct tool *t, int argc, char **argv);
int cmd_mknod(struct tool *t, int argc, char **argv);
int cmd_snapshot(struct tool *t, int argc, char **argv);
int cmd_vstat(struct tool *t, int argc, char **argv);

#endif /* TESSERA_TOOL_H */
