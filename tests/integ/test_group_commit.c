/*
 * test_group_commit.c - the metadata daemon's group commit and what a
 * remove costs (issue 28).
 *
 * The daemon writes a change unsynced and holds the replies of the loop
 * turn until one synced write at its end covers every change of the turn.
 * So: every create and remove four clients at once were answered for
 * before a kill -9 of the metadata daemon is there (or gone) after its
 * restart; and, counted by strace (not timed), a remove costs at most one
 * synced write on the metadata daemon (the purge intent's shrinking is
 * not synced), and no storage daemon unlinks anything twice (the client
 * does not remove the objects the purger removes).
 *
 * Attribute changes (chmod, chown, utimes) are acknowledged once written,
 * not synced: a serial run of them costs a synced write per tick at most,
 * each survives a kill -9 that follows its answer at once, and a client's
 * fsync after one asks the daemon to sync (META_SYNC), once.
 *
 * The commit syncs on a thread of its own while the daemon goes on
 * serving. With every fdatasync of the metadata daemon held 400 ms (strace
 * injects the delay), an unlink's answer and that of a stat made while
 * its commit syncs both wait for it, and the purger removes none of the
 * file's objects before then.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define CLIENTS 4
#define MAX_OPS 100000
#define STRIP 4096
#define REMOVES 40
#define PURGE_WAIT_S 20.0

static int setup(void **state)
{
	return cluster_setup(state, "tcp;ofi_rxm");
}

/* ------------------------------------------------ kill -9 under load */

/* Client k's i-th file. */
static void name_of(int k, int i, char *buf, size_t len)
{
	snprintf(buf, len, "/gc/c%d-%d", k, i);
}

/* Client k: create file i, and after each odd i remove file i - 1, each
 * call's success appended to `log` ("C i" or "R i") once it is answered,
 * until a call fails (the metadata daemon is gone). */
static int client_load(const char *conf, int k, const char *log)
{
	char err[512], path[64], line[32];
	tessera_fs *fs;
	tessera_file *f;
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);

	if (fd < 0 || tessera_connect(conf, &fs, err, sizeof(err)))
		return 1;
	for (int i = 0; i < MAX_OPS; i++) {
		name_of(k, i, path, sizeof(path));
		if (tessera_open(fs, path, O_CREAT | O_EXCL | O_WRONLY, 0644, NULL, &f))
			break;
		tessera_close(f);
		snprintf(line, sizeof(line), "C %d\n", i);
		if (write(fd, line, strlen(line)) < 0)
			break;
		if (i % 2 == 0)
			continue;
		name_of(k, i - 1, path, sizeof(path));
		if (tessera_unlink(fs, path))
			break;
		snprintf(line, sizeof(line), "R %d\n", i - 1);
		if (write(fd, line, strlen(line)) < 0)
			break;
	}
	close(fd);
	return 0;
}

/* What client k's log says was answered: *ops lines; state[i] 1 for a
 * file whose create was answered and whose remove was not. Returns the
 * index of the file whose call may have been in flight at the kill (its
 * state is unknown). */
static int read_log(const char *log, uint8_t *state, int *ops)
{
	FILE *in = fopen(log, "r");
	char op;
	int i, next = 0;

	*ops = 0;
	assert_non_null(in);
	while (fscanf(in, " %c %d", &op, &i) == 2) {
		assert_true(i >= 0 && i < MAX_OPS);
		state[i] = op == 'C';
		/* the call after "C i" removes i - 1 when i is odd, else
		 * creates i + 1; after "R i" it creates i + 2 */
		next = op == 'C' ? (i % 2 ? i - 1 : i + 1) : i + 2;
		(*ops)++;
	}
	fclose(in);
	return next;
}

/* Lines the clients' logs hold so far (each an answered call). */
static int logged_lines(char logs[][400], int n)
{
	int lines = 0, ch;

	for (int k = 0; k < n; k++) {
		FILE *in = fopen(logs[k], "r");

		if (!in)
			continue;
		while ((ch = getc(in)) != EOF)
			lines += ch == '\n';
		fclose(in);
	}
	return lines;
}

static void test_answered_survive_kill(void **state)
{
	struct cluster *c = *state;
	char logs[CLIENTS][400], err[512], path[64];
	uint8_t *model = calloc(MAX_OPS, 1);
	pid_t pids[CLIENTS];
	tessera_fs *fs;
	struct tessera_stat st;
	int total = 0;

	assert_non_null(model);
	CHECK(c->fs, tessera_mkdir(c->fs, "/gc", 0777));
	for (int k = 0; k < CLIENTS; k++) {
		snprintf(logs[k], sizeof(logs[k]), "%s/gc-load-%d.log", c->dir, k);
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0)
			_exit(client_load(c->conf, k, logs[k]));
	}
	/* Let them run together (turns of several requests: 1.5 s, and on a
	 * loaded machine until they have logged a few calls each, at most
	 * 30 s), then kill the metadata daemon first and the clients after:
	 * whatever a client was told before the kill is in its log or was the
	 * call in flight. */
	usleep(1500000);
	for (int t = 0; t < 285 && logged_lines(logs, CLIENTS) < 4 * CLIENTS; t++)
		usleep(100000);
	cluster_stop_pid(c->mds, SIGKILL);
	for (int k = 0; k < CLIENTS; k++) {
		kill(pids[k], SIGKILL);
		waitpid(pids[k], NULL, 0);
	}
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect after the restart: %s", err);
	for (int k = 0; k < CLIENTS; k++) {
		int ops, unsure;

		memset(model, 0, MAX_OPS);
		unsure = read_log(logs[k], model, &ops);
		total += ops;
		for (int i = 0; i <= unsure + 2 && i < MAX_OPS; i++) {
			int rc;

			if (i == unsure)
				continue;
			name_of(k, i, path, sizeof(path));
			rc = tessera_lstat(fs, path, &st);
			if (model[i] && rc)
				fail_msg("%s: created and answered before the kill, gone after the"
					 " restart: %s", path, tessera_errmsg(fs));
			if (!model[i] && rc != -ENOENT)
				fail_msg("%s: removed (or never made) before the kill, there after"
					 " the restart (%d)", path, rc);
		}
	}
	print_message("%d answered calls from %d clients checked\n", total, CLIENTS);
	assert_true(total > CLIENTS); /* the load ran */
	tessera_disconnect(fs);
	free(model);
}

/* ------------------------------------------------ what a remove costs */

static int have_strace(void)
{
	return system("strace -V >/dev/null 2>&1") == 0;
}

/* strace -f on pid, the given calls (and, unless NULL, a second -e
 * expression: an injection), into out; its pid. */
static pid_t strace_start_with(pid_t pid, const char *calls, const char *inject, const char *out)
{
	char spid[16];
	pid_t s;

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	s = fork();
	assert_true(s >= 0);
	if (s == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		if (inject)
			execlp("strace", "strace", "-f", "-qq", "-e", calls, "-e", inject, "-o", out,
			       "-p", spid, (char *)NULL);
		else
			execlp("strace", "strace", "-f", "-qq", "-e", calls, "-o", out, "-p", spid,
			       (char *)NULL);
		_exit(127);
	}
	return s;
}

static pid_t strace_start(pid_t pid, const char *calls, const char *out)
{
	return strace_start_with(pid, calls, NULL, out);
}

/* Wait (up to 20 s) until strace (process spid) holds pid, then a moment
 * for its threads: calls made before would not be counted. A strace that
 * ended at once could not attach (ptrace not permitted): skipped. */
static void await_traced(pid_t pid, pid_t spid)
{
	char path[64], line[256];
	double deadline = now_s() + 20.0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	while (now_s() < deadline) {
		FILE *in = fopen(path, "r");
		int traced = 0;

		while (in && fgets(line, sizeof(line), in))
			if (!strncmp(line, "TracerPid:", 10))
				traced = atoi(line + 10) != 0;
		if (in)
			fclose(in);
		if (traced) {
			usleep(500000);
			return;
		}
		if (waitpid(spid, NULL, WNOHANG) == spid) {
			print_message("strace could not attach to %d (ptrace not permitted?)\n",
				      (int)pid);
			skip();
		}
		usleep(50000);
	}
	fail_msg("strace did not attach to %d within 20 s", (int)pid);
}

static void strace_stop(pid_t s)
{
	int status;

	kill(s, SIGINT);
	waitpid(s, &status, 0);
}

/* Lines of `file` that contain `what`; with `paths`, each quoted first
 * argument is also kept (up to max) to find repeats. */
static int count_calls(const char *file, const char *what, char (*paths)[600], int max)
{
	FILE *in = fopen(file, "r");
	char line[1200];
	int n = 0;

	if (!in)
		return 0;
	while (fgets(line, sizeof(line), in)) {
		char *q, *e;

		if (!strstr(line, what) || strstr(line, "resumed>"))
			continue;
		if (paths && n < max && (q = strchr(line, '"')) && (e = strchr(q + 1, '"'))) {
			*e = '\0';
			snprintf(paths[n], 600, "%s", q + 1);
		}
		n++;
	}
	fclose(in);
	return n;
}

static int objects_left(struct cluster *c, const struct tessera_layout *l, int nfiles)
{
	char path[600];
	int n = 0;

	for (int f = 0; f < nfiles; f++)
		for (uint32_t i = 0; i < l[f].count; i++) {
			snprintf(path, sizeof(path), "%s/ios%u/objects/%02x/%016" PRIx64, c->dir,
				 l[f].servers[i], (unsigned)(l[f].handles[i] & 0xff),
				 l[f].handles[i]);
			n += access(path, F_OK) == 0;
		}
	return n;
}

static void test_remove_costs(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout want = { .strip_size = STRIP, .count = N_IOS }, *lay;
	static uint8_t buf[STRIP * N_IOS];
	static char paths[REMOVES * N_IOS * 8][600];
	char mds_out[400], ios_out[N_IOS][400], path[64];
	pid_t smds, sios[N_IOS];
	int syncs, unlinks = 0;
	double deadline;

	if (!have_strace())
		skip(); /* counted with strace: none here */
	lay = calloc(REMOVES, sizeof(*lay));
	assert_non_null(lay);
	memset(buf, 'r', sizeof(buf));
	/* files with an object on every storage daemon, on disk */
	CHECK(c->fs, tessera_mkdir(c->fs, "/rc", 0777));
	for (int i = 0; i < REMOVES; i++) {
		tessera_file *f;

		snprintf(path, sizeof(path), "/rc/f%d", i);
		CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &want, &f));
		assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		CHECK(c->fs, tessera_fsync(f));
		CHECK(c->fs, tessera_file_layout(f, &lay[i]));
		tessera_close(f);
	}
	snprintf(mds_out, sizeof(mds_out), "%s/strace-mds.txt", c->dir);
	smds = strace_start(c->mds, "trace=fsync,fdatasync,sync_file_range", mds_out);
	for (int s = 0; s < N_IOS; s++) {
		snprintf(ios_out[s], sizeof(ios_out[s]), "%s/strace-ios%d.txt", c->dir, s);
		sios[s] = strace_start(c->ios[s], "trace=unlink,unlinkat,rename,renameat2",
				       ios_out[s]);
	}
	await_traced(c->mds, smds);
	for (int s = 0; s < N_IOS; s++)
		await_traced(c->ios[s], sios[s]);
	for (int i = 0; i < REMOVES; i++) {
		snprintf(path, sizeof(path), "/rc/f%d", i);
		CHECK(c->fs, tessera_unlink(c->fs, path));
	}
	deadline = now_s() + PURGE_WAIT_S;
	while (objects_left(c, lay, REMOVES) && now_s() < deadline)
		usleep(50000);
	usleep(300000); /* the purger's acknowledgements */
	strace_stop(smds);
	for (int s = 0; s < N_IOS; s++)
		strace_stop(sios[s]);
	assert_int_equal(objects_left(c, lay, REMOVES), 0);

	syncs = count_calls(mds_out, "sync", NULL, 0);
	print_message("%d removes: %d synced writes on the metadata daemon\n", REMOVES, syncs);
	if (syncs > REMOVES)
		fail_msg("%d removes made %d synced writes on the metadata daemon (at most one"
			 " each)", REMOVES, syncs);
	for (int s = 0; s < N_IOS; s++) {
		int n = count_calls(ios_out[s], "unlink", paths + unlinks,
				    (int)(sizeof(paths) / sizeof(paths[0])) - unlinks);

		unlinks += n;
	}
	print_message("storage daemons: %d unlink calls\n", unlinks);
	assert_true(unlinks >= REMOVES * N_IOS); /* each object once at least */
	for (int a = 0; a < unlinks; a++)
		for (int b = a + 1; b < unlinks; b++)
			if (!strcmp(paths[a], paths[b]))
				fail_msg("a storage daemon unlinked %s twice (the client's removal"
					 " sent again?)", paths[a]);
	free(lay);
}

/* ------------------------------------- attribute changes, not synced */

#define CHMODS 40

/* Lines of the request trace `file` whose opcode is `op`, and of them
 * how many ended with status 0 (*ok). */
static int traced(const char *file, const char *op, int *ok)
{
	FILE *in = fopen(file, "r");
	char line[512], name[64];
	int n = 0, status;

	*ok = 0;
	assert_non_null(in);
	while (fgets(line, sizeof(line), in)) {
		if (line[0] == '#' ||
		    sscanf(line, "%*s %63s %*s %*s %*s %*s %*s %*s %*s %d", name, &status) != 2)
			continue;
		if (!strcmp(name, op)) {
			n++;
			*ok += status == 0;
		}
	}
	fclose(in);
	return n;
}

static void test_attrs_not_synced(void **state)
{
	struct cluster *c = *state;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE };
	char out[400], trace[400], file[480], err[512];
	struct tessera_stat st;
	tessera_file *f;
	tessera_fs *fs;
	pid_t s;
	int syncs, n, ok;

	CHECK(c->fs, tessera_open(c->fs, "/attrs", O_CREAT | O_RDWR, 0644, NULL, &f));
	if (have_strace()) {
		snprintf(out, sizeof(out), "%s/strace-attrs.txt", c->dir);
		s = strace_start(c->mds, "trace=fsync,fdatasync,sync_file_range", out);
		await_traced(c->mds, s);
		for (int i = 0; i < CHMODS; i++) {
			sa.mode = 0600 | (i & 07);
			CHECK(c->fs, tessera_setattr(c->fs, "/attrs", &sa));
		}
		usleep(300000); /* the ticks that sync them */
		strace_stop(s);
		syncs = count_calls(out, "sync", NULL, 0);
		print_message("%d chmods: %d synced writes on the metadata daemon\n", CHMODS, syncs);
		assert_true(syncs >= 1);
		if (syncs > CHMODS / 2)
			fail_msg("%d chmods made %d synced writes (one per tick expected)", CHMODS,
				 syncs);
	}

	/* fsync after a change: one META_SYNC, answered; none when nothing
	 * changed since */
	snprintf(trace, sizeof(trace), "%s/attrs-trace", c->dir);
	setenv("TESSERA_TRACE_REQUESTS", trace, 1);
	n = tessera_connect(c->conf, &fs, err, sizeof(err));
	unsetenv("TESSERA_TRACE_REQUESTS");
	if (n)
		fail_msg("second client: %s", err);
	tessera_file *g;

	CHECK(fs, tessera_open(fs, "/attrs", O_RDWR, 0, NULL, &g));
	sa.mode = 0604;
	CHECK(fs, tessera_setattr(fs, "/attrs", &sa));
	CHECK(fs, tessera_fsync(g));
	CHECK(fs, tessera_fsync(g));
	CHECK(fs, tessera_close(g));
	tessera_disconnect(fs);
	snprintf(file, sizeof(file), "%s.%ld", trace, (long)getpid());
	assert_int_equal(traced(file, "META_SYNC", &ok), 1);
	assert_int_equal(ok, 1);

	/* answered, then the daemon killed at once: the change is there */
	sa.mode = 0751;
	CHECK(c->fs, tessera_setattr(c->fs, "/attrs", &sa));
	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	CHECK(c->fs, tessera_stat(c->fs, "/attrs", &st));
	assert_int_equal(st.mode & 07777, 0751);
	(void)tessera_close(f);
}

/* ------------------------------------------------ a slow commit */

#define SLOW_SYNC_US 400000
#define SLOW_SPAN (N_IOS * STRIP)

struct unlinker {
	tessera_fs *fs;
	int rc;
	double done_at;
};

static void *unlink_slowly(void *arg)
{
	struct unlinker *u = arg;

	u->rc = tessera_unlink(u->fs, "/slow");
	u->done_at = now_s();
	return NULL;
}

static void test_slow_commit(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout want = { .strip_size = STRIP, .count = N_IOS }, l;
	static uint8_t buf[SLOW_SPAN];
	struct unlinker u = { 0 };
	char out[400], inject[64];
	struct tessera_stat st;
	tessera_file *f;
	pthread_t t;
	double t0, stat_at;
	pid_t s;
	int rc, left;

	if (!have_strace())
		skip(); /* the delay is strace's */
	memset(buf, 's', sizeof(buf));
	CHECK(c->fs, tessera_open(c->fs, "/slow", O_CREAT | O_RDWR, 0644, &want, &f));
	assert_int_equal(tessera_pwrite(f, buf, SLOW_SPAN, 0), SLOW_SPAN);
	CHECK(c->fs, tessera_fsync(f));
	CHECK(c->fs, tessera_file_layout(f, &l));
	CHECK(c->fs, tessera_close(f));
	assert_int_equal(objects_left(c, &l, 1), (int)l.count);

	snprintf(out, sizeof(out), "%s/strace-slow.txt", c->dir);
	snprintf(inject, sizeof(inject), "inject=fdatasync:delay_enter=%d", SLOW_SYNC_US);
	s = strace_start_with(c->mds, "trace=fdatasync", inject, out);
	await_traced(c->mds, s);
	u.fs = c->fs;
	t0 = now_s();
	assert_int_equal(pthread_create(&t, NULL, unlink_slowly, &u), 0);
	usleep(SLOW_SYNC_US / 4); /* the unlink is written; its commit syncs */
	left = objects_left(c, &l, 1);
	rc = tessera_stat(c->fs, "/slow", &st);
	stat_at = now_s();
	pthread_join(t, NULL);
	strace_stop(s);
	print_message("unlink answered after %.0f ms, a stat made while it synced after %.0f ms,"
		      " %d of %u objects left then\n", (u.done_at - t0) * 1e3,
		      (stat_at - t0) * 1e3, left, l.count);
	assert_int_equal(u.rc, 0);
	/* the stat was served after the unlink (the name is gone), and
	 * answered only once the unlink's commit was done */
	assert_int_equal(rc, -ENOENT);
	if (stat_at - t0 < 0.9 * SLOW_SYNC_US / 1e6)
		fail_msg("a stat made while a commit synced was answered after %.0f ms, before"
			 " the commit (%d ms)", (stat_at - t0) * 1e3, SLOW_SYNC_US / 1000);
	if (u.done_at - t0 < 0.9 * SLOW_SYNC_US / 1e6)
		fail_msg("the unlink was answered after %.0f ms, before its commit (%d ms)",
			 (u.done_at - t0) * 1e3, SLOW_SYNC_US / 1000);
	if (left != (int)l.count)
		fail_msg("the purger removed %d of %u objects before the unlink was durable",
			 (int)l.count - left, l.count);
	/* and once it is, the purger does */
	for (double end = now_s() + PURGE_WAIT_S; objects_left(c, &l, 1) && now_s() < end;)
		usleep(50000);
	assert_int_equal(objects_left(c, &l, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answered_survive_kill, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_remove_costs, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_attrs_not_synced, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_slow_commit, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
