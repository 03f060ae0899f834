/*
 * test_crash.c - the crash test: kill -9 of a random daemon (metadata or
 * storage) at a random moment under a mixed load, then restart it and
 * check that everything the load generator (tessera-crash-load) was told
 * had succeeded is still there, and that fsck finds nothing it cannot
 * explain (no orphan, no misplaced object, no size disagreement; objects
 * awaiting the purger are explained), both while the load still runs after
 * the restart and once it stopped.
 *
 * TESSERA_CRASH_TRIALS trials (default 10; `make crash` runs 100), each
 * in its own directory of one file system; TESSERA_CRASH_SEED fixes the
 * random choices (default: from the clock, printed, so a failure can be
 * replayed).
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"
#include "crash.h"

enum state { LIVE, GONE, UNCERTAIN, SYMLINK };

struct entry {
	char path[64];
	enum state state;
	char target[64];         /* SYMLINK only */
	uint64_t size;
	uint8_t *bytes;          /* CRASH_MAX_SIZE, LIVE only */
};

struct model {
	struct entry *v;
	size_t n, cap;
};

static struct entry *find(struct model *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].path, path))
			return &m->v[i];
	return NULL;
}

static struct entry *get(struct model *m, const char *path)
{
	struct entry *e = find(m, path);

	if (e)
		return e;
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
		assert_non_null(m->v);
	}
	e = &m->v[m->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->state = UNCERTAIN;
	return e;
}

static void set_gone(struct entry *e)
{
	free(e->bytes);
	e->bytes = NULL;
	e->size = 0;
	e->state = GONE;
}

static void put(struct entry *e, uint64_t seed, uint64_t *stream, uint64_t off, uint64_t len)
{
	assert_true(e->state == LIVE && off + len <= CRASH_MAX_SIZE);
	for (uint64_t k = 0; k < len; k++)
		e->bytes[off + k] = crash_fill(seed, (*stream)++);
	if (off + len > e->size)
		e->size = off + len;
}

/* Replay the generator's log (a torn last line is ignored). */
static void replay(struct model *m, const char *log)
{
	FILE *f = fopen(log, "r");
	char line[512], a[64], b[64];
	unsigned long long seed, off, len, gap;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct entry *e, *t;
		uint64_t stream = 0;

		if (!strchr(line, '\n'))
			break;
		if (sscanf(line, "C %63s", a) == 1) {
			e = get(m, a);
			e->state = LIVE;
			e->bytes = calloc(1, CRASH_MAX_SIZE);
			assert_non_null(e->bytes);
		} else if (sscanf(line, "W %63s %llu %llu %llu", a, &seed, &off, &len) == 4) {
			put(get(m, a), seed, &stream, off, len);
		} else if (sscanf(line, "L %63s %llu %llu %llu %llu", a, &seed, &off, &len, &gap) == 5) {
			for (int k = 0; k < 3; k++)
				put(get(m, a), seed, &stream, off + (uint64_t)k * (len + gap), len);
		} else if (sscanf(line, "D %63s %llu %llu %llu %llu", a, &seed, &off, &len, &gap) == 5) {
			for (int k = 0; k < 4; k++)   /* gap is the vector's stride here */
				put(get(m, a), seed, &stream, off + (uint64_t)k * gap, len);
		} else if (sscanf(line, "R %63s %63s", a, b) == 2) {
			t = get(m, b);   /* first: adding b may move the entries */
			e = get(m, a);
			assert_true(e->state == LIVE);
			free(t->bytes);
			t->bytes = e->bytes;
			t->size = e->size;
			t->state = LIVE;
			e->bytes = NULL;
			set_gone(e);
		} else if (sscanf(line, "H %63s %63s", a, b) == 2) {
			t = get(m, b);   /* first: adding b may move the entries */
			e = get(m, a);
			assert_true(e->state == LIVE);
			t->bytes = malloc(CRASH_MAX_SIZE);
			assert_non_null(t->bytes);
			memcpy(t->bytes, e->bytes, CRASH_MAX_SIZE);
			t->size = e->size;
			t->state = LIVE;
		} else if (sscanf(line, "S %63s %63s", a, b) == 2) {
			e = get(m, a);
			e->state = SYMLINK;
			snprintf(e->target, sizeof(e->target), "%s", b);
		} else if (sscanf(line, "U %63s", a) == 1) {
			set_gone(get(m, a));
		} else if (sscanf(line, "? %63s", a) == 1) {
			e = get(m, a);
			free(e->bytes);
			e->bytes = NULL;
			e->state = UNCERTAIN;
		} else {
			fail_msg("%s: unknown line: %s", log, line);
		}
	}
	fclose(f);
}

/* On a failure, keep the cluster's directory (logs, daemons' data) for
 * a post-mortem: the teardown removes it. */
static const char *evidence_dir;

#define CRASH_FAIL(...)                                                        \
	do {                                                                   \
		char cmd_[700];                                                \
		snprintf(cmd_, sizeof(cmd_), "cp -a %s %s.kept 2>/dev/null",  \
			 evidence_dir, evidence_dir);                          \
		if (system(cmd_) == 0)                                         \
			print_error("kept the cluster in %s.kept\n", evidence_dir); \
		fail_msg(__VA_ARGS__);                                         \
	} while (0)

/* Every acknowledged name and byte against the file system. */
static void check_model(tessera_fs *fs, struct model *m, unsigned *live, unsigned *gone)
{
	static uint8_t buf[CRASH_MAX_SIZE];

	for (size_t i = 0; i < m->n; i++) {
		struct entry *e = &m->v[i];
		struct tessera_stat st;
		tessera_file *f;
		char target[64];
		ssize_t n;
		int rc;

		if (e->state == SYMLINK) {
			n = tessera_readlink(fs, e->path, target, sizeof(target));
			if (n != (ssize_t)strlen(e->target) || memcmp(target, e->target, (size_t)n))
				CRASH_FAIL("%s: a symbolic link to %s (acknowledged), but readlink"
					   " gives %zd: %s", e->path, e->target, n,
					   n < 0 ? tessera_errmsg(fs) : "another target");
			(*live)++;
			continue;
		}
		rc = tessera_stat(fs, e->path, &st);

		if (e->state == GONE) {
			if (rc != -ENOENT)
				CRASH_FAIL("%s: removed (acknowledged), but stat says %d", e->path, rc);
			(*gone)++;
			continue;
		}
		if (e->state != LIVE)
			continue;
		if (rc)
			CRASH_FAIL("%s: acknowledged, but: %s", e->path, tessera_errmsg(fs));
		if (st.size != e->size)
			CRASH_FAIL("%s: size %" PRIu64 ", acknowledged writes give %" PRIu64, e->path,
				 st.size, e->size);
		CHECK(fs, tessera_open(fs, e->path, O_RDONLY, 0, NULL, &f));
		if (tessera_pread(f, buf, e->size, 0) != (ssize_t)e->size)
			CRASH_FAIL("read %s: %s", e->path, tessera_errmsg(fs));
		for (uint64_t k = 0; k < e->size; k++)
			if (buf[k] != e->bytes[k])
				CRASH_FAIL("%s: byte %" PRIu64 " is %u, acknowledged %u", e->path, k,
					 buf[k], e->bytes[k]);
		tessera_close(f);
		(*live)++;
	}
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].bytes);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static pid_t start_load(struct cluster *c, int trial, uint64_t seed, char *log, size_t loglen)
{
	char prog[1100], dir[32], seedstr[32], err[400];
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/tessera-crash-load", c->bin);
	snprintf(dir, sizeof(dir), "/t%d", trial);
	snprintf(log, loglen, "%s/load%d.log", c->dir, trial);
	snprintf(err, sizeof(err), "%s/load%d.err", c->dir, trial);
	snprintf(seedstr, sizeof(seedstr), "%" PRIu64, seed);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execl(prog, prog, c->conf, dir, log, seedstr, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Lines the generator has logged so far. */
static unsigned log_lines(const char *log)
{
	FILE *f = fopen(log, "r");
	unsigned n = 0;
	int ch;

	if (!f)
		return 0;
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Wait (at most 5 s) until the generator has logged `want` lines. */
static void await_lines(const char *log, unsigned want)
{
	double deadline = now_s() + 5;

	while (log_lines(log) < want && now_s() < deadline)
		usleep(20000);
}

static void report_line(void *arg, const char *line)
{
	(void)arg;
	print_message("  fsck: %s\n", line);
}

/* fsck from a fresh connection (no peer state from before the crash); a
 * daemon just restarted may need a moment to answer. */
static void check_fsck(struct cluster *c, int trial, const char *when)
{
	struct tessera_fsck r;
	tessera_fs *fs;
	char err[512];
	int rc = -1;

	if (tessera_connect(c->conf, &fs, err, sizeof(err)))
		fail_msg("connect: %s", err);
	for (int attempt = 0; attempt < 5 && rc; attempt++)
		if ((rc = tessera_fsck(fs, 0, report_line, NULL, &r)))
			print_message("  fsck (attempt %d): %s\n", attempt, tessera_errmsg(fs));
	if (rc)
		fail_msg("trial %d: fsck: %s", trial, tessera_errmsg(fs));
	if (r.orphans || r.misplaced || r.size_mismatch)
		CRASH_FAIL("trial %d: fsck %s: %" PRIu64 " orphans, %" PRIu64 " misplaced, %" PRIu64
			 " size disagreements", trial, when, r.orphans, r.misplaced,
			 r.size_mismatch);
	print_message("  fsck %s: %" PRIu64 " files, %" PRIu64 " objects, %" PRIu64
		      " awaiting the purger, %" PRIu64 " created during the scan: clean\n", when,
		      r.files, r.objects, r.pending, r.young);
	tessera_disconnect(fs);
}

static int setup(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "timeout_ms = 1000\n");
}

static void test_crash(void **state)
{
	struct cluster *c = *state;
	const char *e = getenv("TESSERA_CRASH_TRIALS");
	const char *s = getenv("TESSERA_CRASH_SEED");
	int trials = e ? atoi(e) : 10;
	uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);

	evidence_dir = c->dir;
	print_message("crash test: %d trials, TESSERA_CRASH_SEED=%" PRIu64 "\n", trials, seed);
	seed |= 1;
	for (int t = 0; t < trials; t++) {
		struct model m = { 0 };
		char log[400], name[16];
		unsigned live = 0, gone = 0;
		int victim = (int)(rnd(&seed) % (N_IOS + 1)), status;
		pid_t load = start_load(c, t, rnd(&seed), log, sizeof(log));

		/* the kill falls at a random moment once the load is going */
		await_lines(log, 1);
		usleep((useconds_t)(50000 + rnd(&seed) % 450000));
		if (victim == 0) {
			cluster_stop_pid(c->mds, SIGKILL);
			usleep((useconds_t)(rnd(&seed) % 300000));
			c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
		} else {
			snprintf(name, sizeof(name), "ios%d", victim - 1);
			cluster_stop_pid(c->ios[victim - 1], SIGKILL);
			usleep((useconds_t)(rnd(&seed) % 300000));
			c->ios[victim - 1] = cluster_spawn(c, "tessera-ios", name, victim - 1);
		}
		/* the load goes on after the restart: a few more acknowledged calls */
		await_lines(log, log_lines(log) + 3);
		check_fsck(c, t, "under load");  /* the generator is still going */
		kill(load, SIGTERM);
		assert_int_equal(waitpid(load, &status, 0), load);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			char cmd[600];

			snprintf(cmd, sizeof(cmd), "cat %s/load%d.err >&2", c->dir, t);
			if (system(cmd))
				print_error("(no error output)\n");
			fail_msg("trial %d: the load generator failed (status %#x)", t, status);
		}
		print_message("trial %d: killed and restarted %s\n", t,
			      victim ? name : "the metadata daemon");
		replay(&m, log);
		{
			tessera_fs *fs;
			char err[512];

			if (tessera_connect(c->conf, &fs, err, sizeof(err)))
				fail_msg("connect: %s", err);
			check_model(fs, &m, &live, &gone);
			tessera_disconnect(fs);
		}
		print_message("trial %d: %u files and %u removed names acknowledged, all there\n",
			      t, live, gone);
		check_fsck(c, t, "after");
		model_free(&m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crash, setup, cluster_teardown),
	};

	return cmocka_run_group_tests_name("crash", tests, NULL, NULL);
}
