/*
 * fuse_mount.c - tessera-fuse's start-up: the command line (mount.fuse3's
 * form too), the defaults it adds, the checks before mounting, the mount
 * itself with its readahead, the library's connection and the request
 * loop, and a clean unmount on a stop signal. What the mount promises is
 * in tessera_fuse.c's header.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuse_int.h"

/* At unmount, how long jobs still at work are waited for (fuse_job.c):
 * their calls on the mount fail at once once it is gone. */
#define JOBS_DRAIN_MS 1000

/* The library's watcher: one line per change of a server's state
 * ("storage daemon 1 (10.0.0.2:7402): down since 12:03:04 (connection
 * refused)", then "... up again"). */
static void log_state(const struct tessera_server_status *st, void *arg)
{
	time_t when = (time_t)st->since_s;
	char at[32] = "?";
	struct tm tm;

	(void)arg;
	if (localtime_r(&when, &tm))
		strftime(at, sizeof(at), "%H:%M:%S", &tm);
	if (st->state == TESSERA_SERVER_UP)
		fprintf(stderr, "tessera-fuse: %s: up again since %s\n", st->name, at);
	else
		fprintf(stderr, "tessera-fuse: %s: %s since %s (%s); calls that need it fail "
			"with EIO until it answers\n", st->name,
			st->state == TESSERA_SERVER_DOWN ? "down" : "suspect", at, st->why);
}

static uint32_t deadlock_ms(void)
{
	const char *v = getenv("TESSERA_FUSE_DEADLOCK_MS");
	char *end;
	unsigned long ms = v ? strtoul(v, &end, 10) : 0;

	return v && *v && !*end && ms > 0 && ms <= UINT32_MAX ? (uint32_t)ms : TF_DEADLOCK_MS;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [-c CONFIG] MOUNTPOINT [fuse options]\n"
		"       %s CONFIG MOUNTPOINT [-o OPTIONS]   (mount.fuse3's form: fstab)\n"
		"\n"
		"Mount the Tessera file system of CONFIG (default: $TESSERA_CONFIG, else\n"
		"./var/tessera.conf, else /etc/tessera/tessera.conf) on\n"
		"MOUNTPOINT. Tessera path /a/b is MOUNTPOINT/a/b.\n"
		"\n"
		"  -c CONFIG              the file system's config file\n"
		"  -f                     stay in the foreground\n"
		"  -s                     serve one request at a time\n"
		"  -o allow_other         let other users use the mount\n"
		"  -o attr_timeout=S      seconds the kernel caches attributes (default 1)\n"
		"  -o entry_timeout=S     seconds the kernel caches names (default 1)\n"
		"  -o negative_timeout=S  seconds the kernel caches missing names (default 0)\n"
		"                         (0 everywhere: every mount sees changes at once)\n"
		"  -o hard_remove         unlink open files at once, not at close\n"
		"  -o name_cache=0        no name leases: every stat asks the metadata\n"
		"                         daemon (also with a timeout of 0 above)\n"
		"  -o remove_behind=0     an unlink waits for the metadata daemon (by\n"
		"                         default it is answered first and sent at once\n"
		"                         behind; off without name leases)\n"
		"\n"
		"Always on: default_permissions, max_read=1048576, max_write 1 MiB,\n"
		"readahead 4 MiB. POSIX ACLs are not supported (EOPNOTSUPP).\n",
		prog, prog);
}

/* mount(8) runs a FUSE file system's program through mount.fuse3 as
 * "PROGRAM SOURCE MOUNTPOINT -o OPTIONS" (an fstab line or a mount unit of
 * type fuse.tessera-fuse; docs/admin.md): with two operands, the first,
 * the source, is the config. It is taken out of argv here (which stays
 * NULL-terminated), as if given with -c. 0, or -EINVAL when -c names a
 * config too. */
static int take_source(int *argc, char **argv, const char **config)
{
	int first = 0, operands = 0, dash_c = 0;

	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
			dash_c = 1;
			i++;
		} else if (!strncmp(a, "-c", 2) || !strncmp(a, "--config=", 9)) {
			dash_c = 1;
		} else if (!strcmp(a, "-o")) {
			i++;   /* its value is no operand */
		} else if (a[0] != '-' && !operands++) {
			first = i;
		}
	}
	if (operands != 2)
		return 0;
	if (dash_c) {
		fprintf(stderr, "tessera-fuse: two configs: -c, and the source %s\n", argv[first]);
		return -EINVAL;
	}
	*config = argv[first];
	memmove(&argv[first], &argv[first + 1], (size_t)(*argc - first) * sizeof(*argv));
	(*argc)--;
	return 0;
}

/* "major:minor" of the file system mounted at `dir` (the last mount
 * there), from /proc/self/mountinfo: asking the mount itself (stat)
 * would wait for the loop, which does not run yet. 0 if found. */
static int mount_device(const char *dir, char *dev, size_t len)
{
	char line[8192], point[4096], id[64];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t o = 0;

		/* fields: id, parent, major:minor, root, mount point, ... */
		if (sscanf(line, "%*s %*s %63s %*s %4095s", id, point) != 2)
			continue;
		/* the mount point is octal-escaped: \040 for a space */
		for (size_t i = 0; point[i]; i++, o++) {
			if (point[i] == '\\' && point[i + 1] >= '0' && point[i + 1] <= '3' &&
			    point[i + 2] >= '0' && point[i + 2] <= '7' &&
			    point[i + 3] >= '0' && point[i + 3] <= '7') {
				point[o] = (char)((point[i + 1] - '0') * 64 +
						  (point[i + 2] - '0') * 8 + (point[i + 3] - '0'));
				i += 3;
			} else {
				point[o] = point[i];
			}
		}
		point[o] = '\0';
		if (!strcmp(point, dir) && strlen(id) < len) {
			strcpy(dev, id);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/* Raise the readahead of the new mount at `dir` (a real path, resolved
 * before mounting) to READAHEAD_KB; on failure say so (reads still work,
 * at the kernel's default readahead). */
static void set_readahead(const char *dir)
{
	char dev[64], path[160];
	FILE *f;

	if (mount_device(dir, dev, sizeof(dev))) {
		fprintf(stderr, "tessera-fuse: readahead left at the kernel's default: "
			"%s not found in /proc/self/mountinfo\n", dir);
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "w");
	if (f) {
		int bad = fprintf(f, "%d\n", READAHEAD_KB) < 0;

		if (!fclose(f) && !bad)
			return;
	}
	fprintf(stderr, "tessera-fuse: readahead left at the kernel's default: %s: %s\n",
		path, strerror(errno));
}

/* The last max_read=N among the -o options of args (def if none). */
/* The last NAME=N (name: "NAME=") among the -o options of argv (def if
 * none). */
static unsigned option_uint(int argc, char *const *argv, const char *name, unsigned def)
{
	size_t len = strlen(name);

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];

		if (!strcmp(o, "-o") && i + 1 < argc)
			o = argv[++i];
		else if (!strncmp(o, "-o", 2))
			o += 2;
		else
			continue;
		for (const char *p = o; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
			if (!strncmp(p, name, len))
				def = (unsigned)strtoul(p + len, NULL, 0);
	}
	return def;
}

/* The last max_read=N among the -o options of args (def if none). */
static unsigned max_read_of(const struct fuse_args *args, unsigned def)
{
	return option_uint(args->argc, args->argv, "max_read=", def);
}

/* Connect and ping every server in a child process, before the mount
 * exists: config errors and a dead metadata daemon fail the command
 * here, and the fabric is opened only after fuse_daemonize's fork. */
static int precheck(const char *config)
{
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		perror("tessera-fuse: fork");
		return -1;
	}
	if (pid == 0) {
		struct tessera_ping ping[TESSERA_MAX_STRIPE + 1];
		tessera_fs *fs;
		char err[512];
		int rc = tessera_connect(config, &fs, err, sizeof(err)), n;

		if (rc) {
			fprintf(stderr, "tessera-fuse: %s\n", err);
			_exit(1);
		}
		n = tessera_ping(fs, ping, TESSERA_MAX_STRIPE + 1);
		rc = 0;
		for (int i = 0; i < n; i++) {
			if (!ping[i].status)
				continue;
			fprintf(stderr, "tessera-fuse: %s %u (%s) does not answer: %s\n",
				ping[i].role, ping[i].index, ping[i].address,
				strerror(-ping[i].status));
			if (i == 0)
				rc = 1;   /* no metadata daemon: nothing works */
		}
		tessera_disconnect(fs);
		_exit(rc);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int bad_options(const char *prog, const char *opts)
{
	fprintf(stderr, "%s: options too long: %.80s...\n", prog, opts);
	return 2;
}

/* A timeout option set to 0 ("attr_timeout=0"): the user asks the
 * kernel to cache nothing, and so the mount too. */
static int no_cache_asked(const char *opt)
{
	static const char *const keys[] = { "attr_timeout=", "entry_timeout=" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strncmp(opt, keys[i], strlen(keys[i])))
			return strtod(opt + strlen(keys[i]), NULL) == 0;
	return 0;
}

/* Our -o options come out of a comma-separated list (into out), and
 * what they say goes into t: name_cache=0|1, remove_behind=0|1. 0, or
 * -EINVAL. */
static int take_own_options(const char *opts, struct tfuse *t, char *out, size_t len)
{
	char *copy = strdup(opts), *save = NULL;
	size_t n = 0;

	if (!copy)
		return -ENOMEM;
	out[0] = '\0';
	for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "name_cache=0") || !strcmp(o, "name_cache=1")) {
			t->no_name_cache = o[11] == '0';
			continue;
		}
		if (!strcmp(o, "remove_behind=0") || !strcmp(o, "remove_behind=1")) {
			t->no_remove_behind = o[14] == '0';
			continue;
		}
		if (no_cache_asked(o))
			t->no_name_cache = 1;
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s", n ? "," : "", o);
	}
	free(copy);
	return n < len ? 0 : -EINVAL;
}

/* One -o argument: without our options, to libfuse (if anything is left). */
static int add_options(struct fuse_args *args, const char *opts, struct tfuse *t)
{
	char rest[4096];

	if (take_own_options(opts, t, rest, sizeof(rest)))
		return -EINVAL;
	if (rest[0] && (fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, rest)))
		return -ENOMEM;
	return 0;
}

/* Our own options, -c CONFIG (or -cCONFIG, --config[=]CONFIG) and -o
 * name_cache=0|1, come out; the rest goes to libfuse after our defaults,
 * so the user's options win. 0, or 2 after a usage message. */
static int split_args(int argc, char **argv, struct fuse_args *args, struct tfuse *t)
{
	static const char *const defaults =
		"default_permissions,fsname=tessera,subtype=tessera,max_read=1048576,"
		"entry_timeout=1,attr_timeout=1,negative_timeout=0";

	fuse_opt_add_arg(args, argv[0]);
	fuse_opt_add_arg(args, "-o");
	fuse_opt_add_arg(args, defaults);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) {
			if (i + 1 >= argc) {
				usage(stderr, argv[0]);
				return 2;
			}
			t->config = argv[++i];
		} else if (!strncmp(argv[i], "-c", 2) && argv[i][2]) {
			t->config = argv[i] + 2;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			t->config = argv[i] + 9;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			if (add_options(args, argv[++i], t))
				return bad_options(argv[0], argv[i]);
		} else if (!strncmp(argv[i], "-o", 2) && argv[i][2]) {
			if (add_options(args, argv[i] + 2, t))
				return bad_options(argv[0], argv[i] + 2);
		} else {
			fuse_opt_add_arg(args, argv[i]);
		}
	}
	return 0;
}

/* --help, --version and a missing mount point are answered here: the
 * exit status, or -1 to go on. */
static int answer_early(const struct fuse_cmdline_opts *opts, struct fuse_args *args,
			const char *argv0)
{
	if (opts->show_help) {
		usage(stdout, argv0);
		printf("\nFUSE options:\n");
		fuse_cmdline_help();
		fuse_lib_help(args);
		return 0;
	}
	if (opts->show_version) {
		printf("tessera-fuse %s\n", TESSERA_VERSION);
		fuse_lowlevel_version();
		return 0;
	}
	if (!opts->mountpoint) {
		fprintf(stderr, "tessera-fuse: no mount point given\n");
		usage(stderr, argv0);
		return 2;
	}
	return -1;
}

/* The config (the library's search path: -c, $TESSERA_CONFIG,
 * ./var/tessera.conf, /etc/tessera/tessera.conf) by its full name, which
 * fuse_daemonize's change to "/" does not break, checked: 0, or the exit
 * status. */
static int find_config(struct tfuse *t, char *config)
{
	char err[512];

	if (tessera_config_find(t->config, &t->config, err, sizeof(err))) {
		fprintf(stderr, "tessera-fuse: %s\n", err);
		return 2;
	}
	if (!realpath(t->config, config)) {
		fprintf(stderr, "tessera-fuse: config %s: %s\n", t->config, strerror(errno));
		return 1;
	}
	t->config = config;
	return precheck(t->config) ? 1 : 0;
}

/* The signals that end a mount cleanly (unmount, exit 0): TERM from
 * systemd and from Slurm at the end of a step, INT from a terminal, HUP. */
static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

/* Hand the stop signals to libfuse's handler, which ends the loop.
 * libfuse takes a signal only while its action is SIG_DFL, but libfabric
 * loads libpsm2/libinfinipath, whose handlers for TERM and INT call
 * exit(1): the process died mounted ("Transport endpoint is not
 * connected"). The mount owns this process, so its own action wins. */
static int catch_stop_signals(struct fuse *fuse)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;
	int sig;

	sigemptyset(&dfl.sa_mask);
	stop_signals(&set);
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&set, sig) == 1 && sigaction(sig, &dfl, NULL))
			return -errno;
	return fuse_set_signal_handlers(fuse_get_session(fuse)) ? -EIO : 0;
}

/* The loop's result as the exit status: it ends with the number of the
 * signal that stopped it, which is a clean stop, or a negative errno. */
static int loop_status(int rc)
{
	return rc < 0 ? 1 : 0;
}

/* Serve until unmounted or stopped by a signal: 0, or 1 when the loop
 * failed. */
static int serve(struct fuse *fuse, const struct fuse_cmdline_opts *opts, unsigned threads)
{
	struct fuse_loop_config *lc;
	int rc;

	if (opts->singlethread)
		return loop_status(fuse_loop(fuse));
	lc = fuse_loop_cfg_create();
	if (!lc)
		return 1;
	fuse_loop_cfg_set_clone_fd(lc, opts->clone_fd);
	/* UINT_MAX is fuse_parse_cmdline's "not given": libfuse 3.14 logs
	 * "Ignoring invalid max threads value" for it and keeps its own
	 * default (never retire idle threads), which is what we want. */
	if (opts->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(lc, opts->max_idle_threads);
	fuse_loop_cfg_set_max_threads(lc, threads);
	rc = fuse_loop_mt(fuse, lc);
	fuse_loop_cfg_destroy(lc);
	return loop_status(rc);
}

/* Connect (after the fork: the fabric and its threads belong to this
 * process) and set the library up for the mount: its state watcher, link
 * rule, directory answers, name leases, removes sent behind and locks.
 * 0, or -1 once said why (t->fs NULL when the connection failed). */
static int connect_fs(struct tfuse *t, int singlethread)
{
	char err[512];
	sigset_t stop, old;
	int c;

	/* The fabric's threads start with the stop signals blocked, so a
	 * signal meant to end the mount reaches the main thread, whose wait
	 * in the loop it breaks (libfuse's handler only marks the session as
	 * exited). */
	stop_signals(&stop);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	c = tessera_connect(t->config, &t->fs, err, sizeof(err));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (c) {
		fprintf(stderr, "tessera-fuse: %s\n", err);
		t->fs = NULL;
		return -1;
	}
	tessera_server_watch(t->fs, log_state, NULL);
	/* the kernel follows symbolic links itself: a path's last component
	 * is always the link */
	tessera_follow_links(t->fs, TESSERA_NOFOLLOW);
	tessera_dir_watch(t->fs, tf_dir_changed, t);
	if (!t->no_name_cache && tessera_name_cache(t->fs, TESSERA_NAME_CACHE_LEASED)) {
		fprintf(stderr, "tessera-fuse: every stat asks the metadata daemon: %s\n",
			tessera_errmsg(t->fs));
		t->no_name_cache = 1;
	}
	/* removes answered first need what the name leases say (fuse_remove.c) */
	if (!t->no_name_cache && !t->no_remove_behind && tf_removes_start(t))
		fprintf(stderr, "tessera-fuse: every unlink waits for the metadata daemon: "
			"no thread to send them behind\n");
	return tf_locks_create(t->fs, deadlock_ms(), singlethread ? TF_CACHE_KEEP : TF_CACHE_DROP,
			       &t->locks) ? -1 : 0;
}

/* Mount, go to the background, connect, serve; then undo it all. The exit
 * status. */
static int mount_and_serve(struct fuse_args *args, const struct fuse_cmdline_opts *opts,
			   struct tfuse *t)
{
	char mount_dir[4096];
	struct fuse *fuse;
	int mount_ok = 0, rc = 1;
	unsigned left;

	t->max_read = max_read_of(args, IO_SIZE);
	t->singlethread = opts->singlethread;
	t->max_fixers = t->threads / 2;
	fuse = fuse_new(args, &tf_ops, sizeof(tf_ops), t);
	if (!fuse)
		return 1;
	/* resolved now: once mounted, looking at the mount point would ask
	 * the mount, whose loop does not run yet */
	if (!realpath(opts->mountpoint, mount_dir))
		snprintf(mount_dir, sizeof(mount_dir), "%s", strerror(errno));
	else
		mount_ok = 1;
	if (fuse_mount(fuse, opts->mountpoint) != 0)
		goto out_destroy;
	if (!opts->singlethread && tf_ask_killpriv_v2(fuse))
		fprintf(stderr, "tessera-fuse: cannot hook the FUSE_INIT answer; every write(2) "
			"will ask for security.capability\n");
	if (mount_ok) {
		set_readahead(mount_dir);
		t->mount_dir = mount_dir;   /* for the writeback cache */
	}
	else /* mount_dir says why */
		fprintf(stderr, "tessera-fuse: readahead left at the kernel's default: %s: %s\n",
			opts->mountpoint, mount_dir);
	if (fuse_daemonize(opts->foreground) != 0 || connect_fs(t, opts->singlethread))
		goto out_unmount;
	if (catch_stop_signals(fuse) != 0)
		goto out_unmount;
	rc = serve(fuse, opts, t->threads);
	fuse_remove_signal_handlers(fuse_get_session(fuse));
out_unmount:
	fuse_unmount(fuse);
out_destroy:
	/* fuse_destroy still unlinks the .fuse_hidden files of files that
	 * were open at unmount, through op_unlink: disconnect after it. */
	fuse_destroy(fuse);
	/* jobs left by requests (fuse_job.c) use t: main's, gone at return */
	left = tf_jobs_drain(t, JOBS_DRAIN_MS);
	if (left)
		fprintf(stderr, "tessera-fuse: %u fix-ups of the kernel's attributes still "
			"running at exit\n", left);
	tf_removes_stop(t);     /* (op_destroy did, if the mount came up) */
	tf_locks_destroy(t->locks);
	if (t->fs)
		tessera_disconnect(t->fs);
	return rc;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_cmdline_opts opts;
	struct tfuse t = { .max_read = IO_SIZE, .lock = PTHREAD_MUTEX_INITIALIZER,
			   .wake = PTHREAD_COND_INITIALIZER, .fixed = PTHREAD_COND_INITIALIZER,
			   .removes = { .lock = PTHREAD_MUTEX_INITIALIZER,
					.work = PTHREAD_COND_INITIALIZER,
					.done = PTHREAD_COND_INITIALIZER } };
	char config[4096];
	int rc;

	pthread_mutex_init(&t.nocap.lock, NULL);
	pthread_mutex_init(&t.links.lock, NULL);
	pthread_mutex_init(&t.answers.lock, NULL);
	pthread_mutex_init(&t.dirs.lock, NULL);

	/* mount.fuse3's form: CONFIG MOUNTPOINT -o OPTS (the source is the config) */
	if (take_source(&argc, argv, &t.config))
		return 2;
	/* (fuse_parse_cmdline takes it out, and puts 10 where it is not given) */
	t.threads = option_uint(argc, argv, "max_threads=", LOOP_THREADS);
	if (!t.threads || t.threads > 100000)
		t.threads = LOOP_THREADS;
	if (split_args(argc, argv, &args, &t)) {
		fuse_opt_free_args(&args);
		return 2;
	}
	if (fuse_parse_cmdline(&args, &opts) != 0) {
		usage(stderr, argv[0]);
		fuse_opt_free_args(&args);
		return 2;
	}
	rc = answer_early(&opts, &args, argv[0]);
	if (rc < 0) {
		rc = find_config(&t, config);
		if (!rc && tf_kattrs_init(&t.kattrs))
			fprintf(stderr, "tessera-fuse: no memory for the table of the kernel's "
				"attributes: every open drops them\n");
		if (!rc)
			rc = mount_and_serve(&args, &opts, &t);
	}
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	tf_kattrs_free(&t.kattrs);
	return rc;
}
