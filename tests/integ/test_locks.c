/*
 * test_locks.c - byte-range locks on real daemons (1 mds + 4 ios, 4 KiB
 * strips so a lock spans every storage daemon): conflicts wait and
 * non-conflicting bytes do not, every method x protocol, a stress run of 8
 * clients checked against a shared log, a client killed while holding
 * locks, a storage daemon restarted under a lock, malformed requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"
#include "tdl.h"

#define STRIP 4096
#define LEASE_MS 2000
#define FILE_SPAN (256 * 1024)

/* posix: independent range locks, one after another; posix-split: the
 * dissertation's POSIX locks, a request per region taken together under
 * the protocol (tessera_lock_list_split), several on one daemon. */
enum { M_POSIX, M_POSIX_SPLIT, M_LIST, M_DTYPE, N_METHODS };
static const char *method_name[] = { "posix", "posix-split", "list", "datatype" };
static const char *proto_name[] = { "two-phase", "one-try", "alt-try" };

static tessera_file *open_file(tessera_fs *fs, const char *path)
{
	return cluster_open_striped(fs, path, STRIP, N_IOS);
}

/* One byte, the element of the types below. */
static struct tdl_dataloop *byte_type(void)
{
	struct tdl_dataloop *b;

	assert_int_equal(tdl_bytes(1, &b), 0);
	return b;
}

/* ------------------------------------------------------------ a lock set */

#define MAX_REGIONS 16
struct lockset {
	int mode;
	size_t n;
	uint64_t off[MAX_REGIONS], len[MAX_REGIONS]; /* sorted, disjoint */
	tessera_lock *locks[MAX_REGIONS];            /* posix: one per region */
	size_t nlocks;
};

/* Take a set by `method`: posix = one range lock per region, ascending. */
static int lockset_take(tessera_file *f, struct lockset *s, int method, int protocol)
{
	int rc = 0;

	s->nlocks = 0;
	if (method == M_POSIX) {
		for (size_t i = 0; i < s->n && !rc; i++) {
			rc = tessera_lock_range(f, s->mode, s->off[i], s->len[i], protocol,
						&s->locks[s->nlocks]);
			if (!rc)
				s->nlocks++;
		}
	} else if (method == M_LIST) {
		rc = tessera_lock_list(f, s->mode, s->off, s->len, s->n, protocol, &s->locks[0]);
		s->nlocks = !rc;
	} else if (method == M_POSIX_SPLIT) {
		rc = tessera_lock_list_split(f, s->mode, s->off, s->len, s->n,
					     TESSERA_LOCK_SPLIT_REGION, protocol, &s->locks[0]);
		s->nlocks = !rc;
	} else {
		int64_t bl[MAX_REGIONS], dp[MAX_REGIONS];
		struct tdl_dataloop *dl, *byte = byte_type();
		uint64_t total = 0;

		for (size_t i = 0; i < s->n; i++) {
			bl[i] = (int64_t)s->len[i];
			dp[i] = (int64_t)s->off[i];
			total += s->len[i];
		}
		assert_int_equal(tdl_hindexed((int64_t)s->n, bl, dp, byte, &dl), 0);
		tdl_free(byte);
		rc = tessera_lock_dtype(f, s->mode, dl, 0, 0, total, protocol, &s->locks[0]);
		s->nlocks = !rc;
		tdl_free(dl);
	}
	return rc;
}

static int lockset_release(struct lockset *s)
{
	int rc = 0;

	while (s->nlocks) {
		int r = tessera_unlock(s->locks[--s->nlocks]);

		if (r && !rc)
			rc = r;
	}
	return rc;
}

static void random_set(uint64_t *seed, struct lockset *s, uint64_t span, size_t maxn)
{
	size_t want = 1 + rnd(seed) % maxn;

	s->mode = rnd(seed) % 2 ? TESSERA_LOCK_WRITE : TESSERA_LOCK_READ;
	s->n = 0;
	/* ascending, disjoint regions of 1 B to 5000 B */
	uint64_t at = rnd(seed) % (span / 4);

	for (size_t i = 0; i < want && at < span; i++) {
		uint64_t len = 1 + rnd(seed) % 5000;

		if (at + len > span)
			len = span - at;
		s->off[s->n] = at;
		s->len[s->n++] = len;
		at += len + 1 + rnd(seed) % (span / (2 * maxn));
	}
}

static int sets_conflict(const struct lockset *a, const struct lockset *b)
{
	if (a->mode == TESSERA_LOCK_READ && b->mode == TESSERA_LOCK_READ)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (a->off[i] < b->off[j] + b->len[j] && b->off[j] < a->off[i] + a->len[i])
				return 1;
	return 0;
}

/* ------------------------------------------------------------ waiting */

struct waiter {
	tessera_file *f;
	struct lockset set;
	int method, protocol;
	volatile int done;
	int rc;
	double took;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	double t0 = now_s();

	w->rc = lockset_take(w->f, &w->set, w->method, w->protocol);
	w->took = now_s() - t0;
	w->done = 1;
	return NULL;
}

/* A conflicting lock waits until the holder lets go; bytes the holder
 * does not hold (even between its regions) are free at once; readers
 * share. Every method x protocol. */
static void test_conflicts(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs2 = cluster_connect_more(c->conf);
	tessera_file *fa = open_file(c->fs, "/locked"), *fb = open_file(fs2, "/locked");

	for (int method = 0; method < N_METHODS; method++)
		for (int proto = 0; proto < 3; proto++) {
			/* A holds 8-byte blocks every 64 bytes over 12 strips */
			struct lockset a = { .mode = TESSERA_LOCK_WRITE, .n = MAX_REGIONS };
			struct lockset gap = { .mode = TESSERA_LOCK_WRITE, .n = 1 };
			struct waiter w = { .f = fb, .method = method, .protocol = proto };
			pthread_t th;

			for (size_t i = 0; i < a.n; i++) {
				a.off[i] = i * 3000 + 64;
				a.len[i] = 8;
			}
			CHECK(c->fs, lockset_take(fa, &a, method, proto));
			/* the gap between two held blocks is free */
			gap.off[0] = 3000 + 72;
			gap.len[0] = 2928;
			CHECK(fs2, lockset_take(fb, &gap, method, proto));
			CHECK(fs2, lockset_release(&gap));
			/* one byte of a held block is not */
			w.set.mode = TESSERA_LOCK_READ;
			w.set.n = 2;
			w.set.off[0] = 100;
			w.set.len[0] = 10;
			w.set.off[1] = 5 * 3000 + 71;
			w.set.len[1] = 2;
			assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
			usleep(300000);
			assert_false(w.done);
			CHECK(c->fs, lockset_release(&a));
			for (double end = now_s() + 5; !w.done && now_s() < end;)
				usleep(1000);
			assert_true(w.done);
			pthread_join(th, NULL);
			CHECK(fs2, w.rc);
			/* readers share: A reads the same bytes at once */
			a.mode = TESSERA_LOCK_READ;
			CHECK(c->fs, lockset_take(fa, &a, method, proto));
			CHECK(c->fs, lockset_release(&a));
			CHECK(fs2, lockset_release(&w.set));
			print_message("%-8s %-9s: waited %.0f ms for the holder\n", method_name[method],
				      proto_name[proto], w.took * 1e3);
		}
	tessera_close(fa);
	tessera_close(fb);
	tessera_disconnect(fs2);
}

/* What locks cost: a datatype lock of 4096 blocks over 4 servers is one
 * message per server in an optimistic round; two-phase adds the ordered
 * rounds; a list of PVFS2's 64-region batches needs N/64 messages. */
static void test_lock_messages(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_file(c->fs, "/counted");
	struct tdl_dataloop *vec, *byte = byte_type();
	struct tessera_lock_info info;
	tessera_lock *lk;
	uint64_t offs[4096], lens[4096];

	assert_int_equal(tdl_hvector(4096, 1, 64, byte, &vec), 0);
	tdl_free(byte);
	CHECK(c->fs, tessera_lock_dtype(f, TESSERA_LOCK_WRITE, vec, 0, 0, 4096,
					TESSERA_LOCK_ONE_TRY, &lk));
	tessera_lock_info(lk, &info);
	print_message("datatype one-try: %lu messages, %u objects\n",
		      (unsigned long)info.messages, info.objects);
	assert_int_equal(info.objects, N_IOS);
	assert_int_equal(info.messages, N_IOS); /* one optimistic round did it */
	assert_int_equal(info.blocking_rounds, 0);
	CHECK(c->fs, tessera_unlock(lk));
	CHECK(c->fs, tessera_lock_dtype(f, TESSERA_LOCK_WRITE, vec, 0, 0, 4096,
					TESSERA_LOCK_TWO_PHASE, &lk));
	tessera_lock_info(lk, &info);
	print_message("datatype two-phase: %lu messages, %lu blocking rounds\n",
		      (unsigned long)info.messages, (unsigned long)info.blocking_rounds);
	assert_true(info.blocking_rounds >= N_IOS);
	CHECK(c->fs, tessera_unlock(lk));
	/* The datatype I/O under a datatype lock names the view the lock sent:
	 * no description bytes travel again. */
	{
		struct tessera_ios_stats s0, s1, s2, sum0 = { 0 }, sum1 = { 0 }, sum2 = { 0 };
		uint8_t data[4096];

		memset(data, 7, sizeof(data));
		for (uint32_t i = 0; i < N_IOS; i++) {
			CHECK(c->fs, tessera_ios_stats(c->fs, i, &s0));
			tessera_ios_stats_add(&sum0, &s0);
		}
		CHECK(c->fs, tessera_lock_dtype(f, TESSERA_LOCK_WRITE, vec, 0, 0, 4096,
						TESSERA_LOCK_ALT_TRY, &lk));
		for (uint32_t i = 0; i < N_IOS; i++) {
			CHECK(c->fs, tessera_ios_stats(c->fs, i, &s1));
			tessera_ios_stats_add(&sum1, &s1);
		}
		CHECK(c->fs, tessera_write_dtype(f, data, sizeof(data), NULL, vec, 0, 0));
		for (uint32_t i = 0; i < N_IOS; i++) {
			CHECK(c->fs, tessera_ios_stats(c->fs, i, &s2));
			tessera_ios_stats_add(&sum2, &s2);
		}
		CHECK(c->fs, tessera_unlock(lk));
		print_message("view bytes: lock %lu, write under it %lu; cache hits %lu\n",
			      (unsigned long)(sum1.desc_bytes[TESSERA_METHOD_DTYPE] -
					      sum0.desc_bytes[TESSERA_METHOD_DTYPE]),
			      (unsigned long)(sum2.desc_bytes[TESSERA_METHOD_DTYPE] -
					      sum1.desc_bytes[TESSERA_METHOD_DTYPE]),
			      (unsigned long)(sum2.desc_cache_hits - sum1.desc_cache_hits));
		assert_true(sum1.desc_bytes[TESSERA_METHOD_DTYPE] > sum0.desc_bytes[TESSERA_METHOD_DTYPE]);
		assert_int_equal(sum2.desc_bytes[TESSERA_METHOD_DTYPE],
				 sum1.desc_bytes[TESSERA_METHOD_DTYPE]);
		assert_true(sum2.desc_cache_hits > sum1.desc_cache_hits);
	}
	tdl_free(vec);
	for (int i = 0; i < 4096; i++) {
		offs[i] = (uint64_t)i * 64;
		lens[i] = 1;
	}
	CHECK(c->fs, tessera_lock_list(f, TESSERA_LOCK_READ, offs, lens, 4096,
				       TESSERA_LOCK_ONE_TRY, &lk));
	tessera_lock_info(lk, &info);
	assert_int_equal(info.messages, N_IOS); /* all regions fit one message each */
	CHECK(c->fs, tessera_unlock(lk));
	/* PVFS2's split: 64 regions per message, 1024 regions per server */
	{
		char conf[400], cmd[1400], err[512];
		tessera_fs *fs64;
		tessera_file *f64;

		snprintf(conf, sizeof(conf), "%s.batch64", c->conf);
		snprintf(cmd, sizeof(cmd), "cp %s %s && echo 'lock_list_batch = 64' >> %s", c->conf,
			 conf, conf);
		assert_int_equal(system(cmd), 0);
		if (tessera_connect(conf, &fs64, err, sizeof(err)))
			fail_msg("connect: %s", err);
		f64 = open_file(fs64, "/counted");
		for (int proto = 0; proto < 3; proto++) {
			CHECK(fs64, tessera_lock_list(f64, TESSERA_LOCK_WRITE, offs, lens, 4096, proto,
						      &lk));
			tessera_lock_info(lk, &info);
			print_message("list of 4096 in batches of 64, %s: %lu messages\n",
				      proto_name[proto], (unsigned long)info.messages);
			assert_true(info.messages >= 4096 / 64);
			assert_int_equal(info.objects, N_IOS);
			CHECK(fs64, tessera_unlock(lk));
		}
		tessera_close(f64);
		tessera_disconnect(fs64);
	}
	tessera_close(f);
}

/* ------------------------------------------------------------ stress */

struct stress {
	struct cluster *c;
	int method, protocol, iters;
	pthread_mutex_t mu;
	struct lockset *held[64];     /* the shared log: sets held right now */
	size_t nheld;
	int violations;
	uint64_t acquired;
};

struct stress_client {
	struct stress *st;
	int id;
	int rc;
	char err[1024];
};

static void *stress_main(void *arg)
{
	struct stress_client *sc = arg;
	struct stress *st = sc->st;
	tessera_fs *fs;
	tessera_file *f;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(sc->id + 1) + (uint64_t)st->method * 7 +
			(uint64_t)st->protocol;
	char err[512];

	if ((sc->rc = tessera_connect(sc->st->c->conf, &fs, err, sizeof(err)))) {
		snprintf(sc->err, sizeof(sc->err), "connect: %s", err);
		return NULL;
	}
	if ((sc->rc = tessera_open(fs, "/stress", O_RDWR, 0, NULL, &f))) {
		snprintf(sc->err, sizeof(sc->err), "open: %s", tessera_errmsg(fs));
		tessera_disconnect(fs);
		return NULL;
	}
	for (int i = 0; i < st->iters && !sc->rc; i++) {
		struct lockset s;

		random_set(&seed, &s, FILE_SPAN / 8, 6);
		if ((sc->rc = lockset_take(f, &s, st->method, st->protocol))) {
			snprintf(sc->err, sizeof(sc->err), "lock: %s", tessera_errmsg(fs));
			lockset_release(&s);
			break;
		}
		pthread_mutex_lock(&st->mu);
		for (size_t k = 0; k < st->nheld; k++)
			if (sets_conflict(st->held[k], &s))
				st->violations++;
		st->held[st->nheld++] = &s;
		st->acquired++;
		pthread_mutex_unlock(&st->mu);
		if (rnd(&seed) % 4 == 0)
			usleep(200);
		pthread_mutex_lock(&st->mu);
		for (size_t k = 0; k < st->nheld; k++)
			if (st->held[k] == &s) {
				st->held[k] = st->held[--st->nheld];
				break;
			}
		pthread_mutex_unlock(&st->mu);
		if ((sc->rc = lockset_release(&s)))
			snprintf(sc->err, sizeof(sc->err), "unlock: %s", tessera_errmsg(fs));
	}
	tessera_close(f);
	tessera_disconnect(fs);
	return NULL;
}

static int stress_iters(void)
{
	const char *e = getenv("TESSERA_LOCK_STRESS");

	/* make check's share: 8 x 400 sets for each of the nine method x
	 * protocol pairs, about 25 s loaded; TESSERA_LOCK_STRESS=N for a longer run */
	return e ? atoi(e) : 400;
}

/* 8 clients with random overlapping noncontiguous read and write sets:
 * every acquisition completes (no deadlock, no livelock), and no two
 * conflicting sets are ever held at once. */
static void test_stress(void **state)
{
	struct cluster *c = *state;
	int iters = stress_iters();
	tessera_file *f = open_file(c->fs, "/stress");

	tessera_close(f);
	for (int method = 0; method < N_METHODS; method++)
		for (int proto = 0; proto < 3; proto++) {
			struct stress st = { .c = c, .method = method, .protocol = proto,
					     .iters = iters };
			struct stress_client sc[8];
			pthread_t th[8];
			double t0 = now_s();

			pthread_mutex_init(&st.mu, NULL);
			for (int i = 0; i < 8; i++) {
				sc[i] = (struct stress_client){ .st = &st, .id = i };
				assert_int_equal(pthread_create(&th[i], NULL, stress_main, &sc[i]), 0);
			}
			for (int i = 0; i < 8; i++)
				pthread_join(th[i], NULL);
			print_message("%-8s %-9s: %lu acquisitions by 8 clients in %.1f s, "
				      "%d conflicts\n", method_name[method], proto_name[proto],
				      (unsigned long)st.acquired, now_s() - t0, st.violations);
			for (int i = 0; i < 8; i++)
				if (sc[i].rc)
					fail_msg("client %d: %s", i, sc[i].err);
			assert_int_equal(st.violations, 0);
			assert_int_equal(st.acquired, 8 * (uint64_t)iters);
			pthread_mutex_destroy(&st.mu);
		}
}

/* ------------------------------------------------------------ failures */

/* A client killed while holding locks: the others proceed within the
 * lease plus a second. */
static void test_client_killed(void **state)
{
	struct cluster *c = *state;
	int fds[2];
	pid_t child;
	char ok;

	tessera_close(open_file(c->fs, "/victim"));
	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		tessera_fs *fs;
		tessera_file *f;
		tessera_lock *lk;
		char err[512];

		if (tessera_connect(c->conf, &fs, err, sizeof(err)) ||
		    tessera_open(fs, "/victim", O_RDWR, 0, NULL, &f) ||
		    tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, 8 * STRIP,
				       TESSERA_LOCK_ALT_TRY, &lk))
			_exit(2);
		if (write(fds[1], "x", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &ok, 1), 1);
	close(fds[0]);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	double t0 = now_s(), took;
	tessera_file *f = open_file(c->fs, "/victim");
	tessera_lock *lk;

	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, STRIP / 2, 6 * STRIP,
					TESSERA_LOCK_TWO_PHASE, &lk));
	took = now_s() - t0;
	print_message("lock of a killed holder taken after %.2f s (lease %.1f s)\n", took,
		      LEASE_MS / 1000.0);
	assert_true(took > LEASE_MS / 1000.0 / 2); /* it did wait for the lease */
	assert_true(took < LEASE_MS / 1000.0 + 3); /* and no longer than it */
	CHECK(c->fs, tessera_unlock(lk));
	tessera_close(f);
}

/* A storage daemon restarted while locks are held: the holder's release
 * fails with the epoch error naming the daemon; new requests work. */
static void test_daemon_restarted(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_file(c->fs, "/epoch");
	struct tessera_ping ping[N_IOS + 1];
	tessera_lock *lk;
	int rc;

	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, N_IOS * STRIP,
					TESSERA_LOCK_ONE_TRY, &lk));
	cluster_stop_pid(c->ios[1], SIGKILL);
	c->ios[1] = cluster_spawn(c, "tessera-ios", "ios1", 1);
	tessera_ping(c->fs, ping, N_IOS + 1); /* reconnects */
	/* I/O under the lost lock is fenced off on the restarted daemon ... */
	{
		char buf[N_IOS * STRIP];

		memset(buf, 'x', sizeof(buf));
		rc = (int)tessera_pwrite(f, buf, sizeof(buf), 0);
		print_message("write under the lost lock: %s\n", tessera_errmsg(c->fs));
		assert_int_equal(rc, -ESTALE);
		assert_non_null(strstr(tessera_errmsg(c->fs), "storage daemon 1"));
	}
	rc = tessera_unlock(lk);
	print_message("unlock after the restart: %s\n", tessera_errmsg(c->fs));
	assert_int_equal(rc, -ESTALE);
	assert_non_null(strstr(tessera_errmsg(c->fs), "storage daemon 1"));
	assert_non_null(strstr(tessera_errmsg(c->fs), "restarted"));
	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, N_IOS * STRIP,
					TESSERA_LOCK_ALT_TRY, &lk));
	{ /* ... and works under a lock of the new epoch, and without one */
		char buf[N_IOS * STRIP];

		memset(buf, 'y', sizeof(buf));
		CHECK(c->fs, tessera_pwrite(f, buf, sizeof(buf), 0));
		CHECK(c->fs, tessera_unlock(lk));
		CHECK(c->fs, tessera_pwrite(f, buf, sizeof(buf), 0));
	}
	tessera_close(f);
}

/* ------------------------------------------------------------ record locks */

/* Record locks (tessera_lock_record): one owner never conflicts with
 * itself, other owners and other connections do, across strips and to
 * the end of the file; they meet byte-range locks both ways; the
 * library refuses nonsense. */
static void test_record_locks(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs2 = cluster_connect_more(c->conf);
	tessera_file *fa = open_file(c->fs, "/record"), *fb = open_file(fs2, "/record");
	tessera_lock *a, *all, *x, *lib;
	struct tessera_lock_conflict cf;

	/* [100, 50000) crosses 12 strips on 4 objects */
	CHECK(c->fs, tessera_lock_record(fa, TESSERA_LOCK_WRITE, 7, 100, 50000, &a));
	CHECK(c->fs, tessera_lock_record(fa, TESSERA_LOCK_WRITE, 7, 0, TESSERA_RECORD_END, &all));
	assert_int_equal(tessera_lock_record(fa, TESSERA_LOCK_READ, 8, 49999, 50000, &x), -EAGAIN);
	assert_non_null(strstr(tessera_errmsg(c->fs), "conflicting"));
	assert_int_equal(tessera_lock_record(fb, TESSERA_LOCK_READ, 7, 1u << 30, (1u << 30) + 1,
					     &x), -EAGAIN);
	CHECK(c->fs, tessera_unlock(all));
	/* F_GETLK: the lowest conflicting lock, its mode and range; not one's own */
	CHECK(fs2, tessera_lock_record_test(fb, TESSERA_LOCK_READ, 9, 0, TESSERA_RECORD_END, &cf));
	assert_int_equal(cf.mode, TESSERA_LOCK_WRITE);
	assert_int_equal(cf.start, 100);
	assert_int_equal(cf.end, 50000);
	CHECK(c->fs, tessera_lock_record_test(fa, TESSERA_LOCK_WRITE, 7, 0, 1u << 20, &cf));
	assert_int_equal(cf.mode, 0);
	CHECK(c->fs, tessera_lock_record_test(fa, TESSERA_LOCK_WRITE, 8, 50000, 60000, &cf));
	assert_int_equal(cf.mode, 0);
	assert_int_equal(tessera_lock_record_test(fa, TESSERA_LOCK_WRITE, 8, 5, 5, &cf), -EINVAL);
	CHECK(fs2, tessera_lock_record(fb, TESSERA_LOCK_WRITE, 7, 50000, 60000, &x));
	CHECK(fs2, tessera_unlock(x));
	CHECK(fs2, tessera_lock_record(fb, TESSERA_LOCK_READ, 9, 0, 100, &x));
	CHECK(fs2, tessera_unlock(x));
	assert_int_equal(tessera_lock_record(fb, TESSERA_LOCK_READ, 9, 99, 101, &x), -EAGAIN);
	/* the reserved bytes are apart from every file offset */
	CHECK(fs2, tessera_lock_record(fb, TESSERA_LOCK_WRITE, 9, TESSERA_RECORD_FLOCK,
				       TESSERA_RECORD_APPEND + 1, &x));
	CHECK(fs2, tessera_unlock(x));
	/* byte-range locks, both ways */
	CHECK(fs2, tessera_lock_range(fb, TESSERA_LOCK_WRITE, 60000, 100, TESSERA_LOCK_ONE_TRY,
				      &lib));
	assert_int_equal(tessera_lock_record(fa, TESSERA_LOCK_READ, 7, 60099, 60100, &x), -EAGAIN);
	CHECK(fs2, tessera_unlock(lib));
	CHECK(c->fs, tessera_lock_record(fa, TESSERA_LOCK_READ, 7, 60099, 60100, &x));
	CHECK(c->fs, tessera_unlock(x));
	CHECK(c->fs, tessera_unlock(a));
	CHECK(fs2, tessera_lock_range(fb, TESSERA_LOCK_WRITE, 0, FILE_SPAN, TESSERA_LOCK_ONE_TRY,
				      &lib));
	CHECK(fs2, tessera_unlock(lib));
	/* nonsense */
	assert_int_equal(tessera_lock_record(fa, TESSERA_LOCK_READ, 0, 0, 1, &x), -EINVAL);
	assert_int_equal(tessera_lock_record(fa, TESSERA_LOCK_READ, 7, 5, 5, &x), -EINVAL);
	assert_int_equal(tessera_lock_record(fa, TESSERA_LOCK_READ, 7, 0, TESSERA_RECORD_APPEND + 2,
					     &x), -EINVAL);
	assert_int_equal(tessera_lock_record(fa, 3, 7, 0, 1, &x), -EINVAL);
	tessera_close(fa);
	tessera_close(fb);
	tessera_disconnect(fs2);
}

/* Appenders on two connections, 2 threads each: every 100-byte record
 * whole, none lost, at the offsets tessera_append reported. */
#define APPENDS 150
#define RECORD 100

struct appender {
	tessera_fs *fs;
	tessera_file *f;
	char tag;
	uint64_t offs[APPENDS];
	int rc;
};

static void *appender_main(void *arg)
{
	struct appender *ap = arg;
	char rec[RECORD];

	memset(rec, ap->tag, sizeof(rec));
	for (int i = 0; i < APPENDS && !ap->rc; i++)
		ap->rc = tessera_append(ap->f, rec, sizeof(rec), &ap->offs[i]);
	return NULL;
}

static void test_append(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs2 = cluster_connect_more(c->conf);
	struct appender ap[4];
	pthread_t th[4];
	static char data[4 * APPENDS * RECORD];
	int counts[4] = { 0 };
	tessera_file *ro;
	uint64_t off;

	for (int i = 0; i < 4; i++) {
		ap[i] = (struct appender){ .fs = i < 2 ? c->fs : fs2, .tag = (char)('a' + i) };
		ap[i].f = open_file(ap[i].fs, "/appended");
		assert_int_equal(pthread_create(&th[i], NULL, appender_main, &ap[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(ap[i].fs, ap[i].rc);
	}
	assert_int_equal(tessera_pread(ap[0].f, data, sizeof(data), 0), sizeof(data));
	for (size_t r = 0; r < 4 * APPENDS; r++) {
		char t = data[r * RECORD];

		assert_true(t >= 'a' && t <= 'd');
		for (size_t k = 1; k < RECORD; k++)
			assert_int_equal(data[r * RECORD + k], t);
		counts[t - 'a']++;
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(counts[i], APPENDS);
		for (int k = 0; k < APPENDS; k++)
			assert_int_equal(data[ap[i].offs[k]], ap[i].tag);
		tessera_close(ap[i].f);
	}
	/* read-only: refused */
	CHECK(c->fs, tessera_open(c->fs, "/appended", O_RDONLY, 0, NULL, &ro));
	assert_int_equal(tessera_append(ro, "x", 1, &off), -EBADF);
	tessera_close(ro);
	tessera_disconnect(fs2);
}

/* ------------------------------------------------------------ malformed */

static int raw_lock(struct raw *raw, unsigned op, const ProtobufCMessage *m, char *msg,
		    size_t msglen, Tessera__LockReply **reply)
{
	static uint8_t frame[2 << 20];
	struct tp_frame rep;
	struct tp_hdr h = { .opcode = (uint16_t)op, .reqid = 77 };
	long len;
	int rc;

	if (raw->cap)
		raw_set_cap(m, raw->cap);
	len = tp_frame_build(frame, sizeof(frame), &h, raw->name, raw->name_len, m);

	assert_true(len > 0);
	rc = raw_roundtrip(raw, frame, (size_t)len, &rep, msg, msglen);
	if (!rc && reply)
		*reply = (Tessera__LockReply *)tp_body_unpack(&rep, &tessera__lock_reply__descriptor);
	return rc;
}

/* One malformed acquire: the fields a case sets, the rest as a good
 * request on slot 0 of the file's first object. */
struct malformed_acquire {
	const char *what, *words; /* the case, and words the daemon's refusal must hold */
	int expect;
	uint64_t session;
	uint32_t mode, slot, count;
	size_t n_offsets, n_lengths;
	uint64_t offs[3], lens[3];
	uint64_t group;       /* record locks (LockAcquireRequest.group) */
	int object_range, blocking;
};

static const struct malformed_acquire malformed_acquires[] = {
	{ "no session", "no session", -EINVAL, 0, 2, 0, 4, 1, 1, { 0 }, { 8 }, 0, 0, 0 },
	{ "bad mode", "neither read", -EINVAL, 9, 7, 0, 4, 1, 1, { 0 }, { 8 }, 0, 0, 0 },
	{ "bad slot", "bad layout", -EINVAL, 9, 2, 5, 4, 1, 1, { 0 }, { 8 }, 0, 0, 0 },
	{ "unsorted", "ascend", -EINVAL, 9, 2, 0, 4, 2, 2, { 100, 50 }, { 8, 8 }, 0, 0, 0 },
	{ "overlap", "ascend", -EINVAL, 9, 2, 0, 4, 2, 2, { 0, 4 }, { 8, 8 }, 0, 0, 0 },
	{ "empty", "empty", -EINVAL, 9, 2, 0, 4, 1, 1, { 0 }, { 0 }, 0, 0, 0 },
	{ "overflow", "overflows", -EINVAL, 9, 2, 0, 4, 1, 1, { UINT64_MAX - 2 }, { 8 }, 0, 0, 0 },
	{ "other slot", "slot", -EINVAL, 9, 2, 0, 4, 1, 1, { STRIP }, { 8 }, 0, 0, 0 },
	{ "mismatch", "offsets but", -EINVAL, 9, 2, 0, 4, 2, 1, { 0, 64 }, { 8 }, 0, 0, 0 },
	/* record locks: one object range, in a group, nonblocking */
	{ "rec nogroup", "record lock", -EINVAL, 9, 2, 0, 4, 1, 1, { 0 }, { 8 }, 0, 1, 0 },
	{ "rec block", "nonblocking", -EINVAL, 9, 2, 0, 4, 1, 1, { 0 }, { 8 }, 5, 1, 1 },
	{ "rec 2 runs", "one region", -EINVAL, 9, 2, 0, 4, 2, 2, { 0, 100 }, { 8, 8 }, 5, 1, 0 },
	{ "rec empty", "empty or overflows", -EINVAL, 9, 2, 0, 4, 1, 1, { 0 }, { 0 }, 5, 1, 0 },
	{ "rec wraps", "empty or overflows", -EINVAL, 9, 2, 0, 4, 1, 1, { UINT64_MAX - 2 }, { 8 },
	  5, 1, 0 },
};

static void check_malformed_acquires(struct raw *raw, uint64_t handle)
{
	char msg[512];

	for (size_t i = 0; i < sizeof(malformed_acquires) / sizeof(malformed_acquires[0]); i++) {
		struct malformed_acquire k = malformed_acquires[i]; /* a copy: the request points into it */
		Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
		int rc;

		m.session = k.session;
		m.handle = handle;
		m.mode = k.mode;
		m.strip_size = STRIP;
		m.stripe_count = k.count;
		m.slot = k.slot;
		m.n_offsets = k.n_offsets;
		m.offsets = k.offs;
		m.n_lengths = k.n_lengths;
		m.lengths = k.lens;
		m.group = k.group;
		m.object_range = k.object_range;
		m.blocking = k.blocking;
		rc = raw_lock(raw, TP_OP_LOCK_ACQUIRE, &m.base, msg, sizeof(msg), NULL);
		print_message("%-10s -> %s\n", k.what, msg);
		assert_int_equal(rc, k.expect);
		assert_non_null(strstr(msg, k.words));
	}
}

/* LOCK_TEST: a mode that is neither, an empty or wrapping range. */
static void check_malformed_tests(struct raw *raw, uint64_t handle)
{
	static const struct { uint32_t mode; uint64_t off, len; } bad[] = {
		{ 7, 0, 8 }, { 2, 0, 0 }, { 2, UINT64_MAX - 2, 8 },
	};
	char msg[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		Tessera__LockTestRequest m = TESSERA__LOCK_TEST_REQUEST__INIT;

		m.session = 9;
		m.handle = handle;
		m.mode = bad[i].mode;
		m.group = 5;
		m.offset = bad[i].off;
		m.length = bad[i].len;
		assert_int_equal(raw_lock(raw, TP_OP_LOCK_TEST, &m.base, msg, sizeof(msg), NULL),
				 -EINVAL);
		print_message("test %zu     -> %s\n", i, msg);
		assert_non_null(strstr(msg, "lock test"));
	}
}

/* A view that unrolls to more ranges than a request may hold. */
static void check_huge_view(struct raw *raw, uint64_t handle)
{
	Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
	Tessera__DtypeIORequest v = TESSERA__DTYPE_IOREQUEST__INIT;
	struct tdl_dataloop *dl, *byte = byte_type();
	char msg[512];

	assert_int_equal(tdl_hvector(3 << 20, 1, 2, byte, &dl), 0);
	tdl_free(byte);
	assert_int_equal(tp_dataloop_to_msg(dl, &v.file_type), 0);
	v.desc_nonce = 5;
	v.desc_id = 1;
	v.count = 1;
	v.last = 3 << 20;
	m.session = 9;
	m.handle = handle;
	m.mode = 2;
	m.strip_size = 8 << 20;
	m.stripe_count = 1;
	m.view = &v;
	assert_int_equal(raw_lock(raw, TP_OP_LOCK_ACQUIRE, &m.base, msg, sizeof(msg), NULL), -E2BIG);
	print_message("huge view  -> %s\n", msg);
	assert_non_null(strstr(msg, "ranges"));
	tp_dataloop_msg_release(v.file_type);
	tdl_free(dl);
}

/* Acquires m raw and answers the granted lock's id and epoch; the first
 * 16 bytes are free, so the lock is granted at once. */
static void raw_acquire_granted(struct raw *raw, Tessera__LockAcquireRequest *m, uint64_t *id,
				uint64_t *epoch)
{
	Tessera__LockReply *rep = NULL;
	char msg[512];

	assert_int_equal(raw_lock(raw, TP_OP_LOCK_ACQUIRE, &m->base, msg, sizeof(msg), &rep), 0);
	assert_non_null(rep);
	*id = rep->lock_id;
	*epoch = rep->epoch;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
}

/* Releases r and checks the daemon's answer, and the words of a refusal. */
static void raw_release(struct raw *raw, Tessera__LockReleaseRequest *r, int expect,
			const char *what, const char *words)
{
	char msg[512];

	assert_int_equal(raw_lock(raw, TP_OP_LOCK_RELEASE, &r->base, msg, sizeof(msg), NULL), expect);
	if (what)
		print_message("%s -> %s\n", what, msg);
	if (words)
		assert_non_null(strstr(msg, words));
}

/* A lock taken raw, released; then its id is unknown, and an old epoch
 * is recognised; another session may not touch a session's lock. */
static void check_raw_lock_lifecycle(struct raw *raw, uint64_t handle)
{
	Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
	Tessera__LockReleaseRequest r = TESSERA__LOCK_RELEASE_REQUEST__INIT;
	Tessera__LockReply *rep = NULL;
	uint64_t off = 0, len = 16, epoch, id, other_id, other_epoch;
	char msg[512];

	m.session = 9;
	m.handle = handle;
	m.mode = 2;
	m.strip_size = STRIP;
	m.stripe_count = N_IOS;
	m.n_offsets = m.n_lengths = 1;
	m.offsets = &off;
	m.lengths = &len;
	assert_int_equal(raw_lock(raw, TP_OP_LOCK_ACQUIRE, &m.base, msg, sizeof(msg), &rep), 0);
	assert_non_null(rep);
	assert_int_equal(rep->state, 0);
	assert_int_equal(rep->last_abs_offset, 15);
	id = rep->lock_id;
	epoch = rep->epoch;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	r.session = 9;
	r.epoch = epoch;
	r.lock_id = id;
	r.handle = handle; /* the object its capability must name */
	raw_release(raw, &r, 0, NULL, NULL);
	raw_release(raw, &r, -ENOENT, "released twice", "no such lock");
	r.epoch = epoch + 1;
	raw_release(raw, &r, -ESTALE, "old epoch", "restarted");
	m.n_offsets = m.n_lengths = 0;
	m.lock_id = id;
	m.epoch = epoch;
	assert_int_equal(raw_lock(raw, TP_OP_LOCK_ACQUIRE, &m.base, msg, sizeof(msg), NULL), -ENOENT);
	/* another session may not touch a session's lock */
	m.lock_id = 0;
	m.epoch = 0;
	m.n_offsets = m.n_lengths = 1;
	raw_acquire_granted(raw, &m, &other_id, &other_epoch);
	r.lock_id = other_id;
	r.epoch = epoch;
	r.session = 10;
	raw_release(raw, &r, -ENOENT, NULL, NULL);
	r.session = 9;
	raw_release(raw, &r, 0, NULL, NULL);
}

/* Nothing of the malformed requests is held: the whole file locks at
 * once; and the library refuses nonsense before sending anything. */
static void check_nothing_held(struct cluster *c, tessera_file *f)
{
	tessera_lock *lk;
	double t0 = now_s();

	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, FILE_SPAN, TESSERA_LOCK_TWO_PHASE,
					&lk));
	assert_true(now_s() - t0 < LEASE_MS / 1000.0 / 2); /* no wait for a lease */
	CHECK(c->fs, tessera_unlock(lk));
	assert_int_equal(tessera_lock_range(f, 3, 0, 1, TESSERA_LOCK_ALT_TRY, &lk), -EINVAL);
	assert_int_equal(tessera_lock_range(f, TESSERA_LOCK_READ, 0, 0, TESSERA_LOCK_ALT_TRY, &lk),
			 -EINVAL);
	assert_int_equal(tessera_lock_range(f, TESSERA_LOCK_READ, 0, 1, 9, &lk), -EINVAL);
}

/* Malformed lock requests get an error naming the rule, and lock nothing. */
static void test_malformed(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = open_file(c->fs, "/malformed");
	struct tessera_layout l;
	struct raw raw;

	tessera_file_layout(f, &l);
	raw_open(c, l.servers[0], &raw);
	Tessera__Capability *cap = file_cap(f);

	raw.cap = cap;
	check_malformed_acquires(&raw, l.handles[0]);
	check_malformed_tests(&raw, l.handles[0]);
	check_huge_view(&raw, l.handles[0]);
	check_raw_lock_lifecycle(&raw, l.handles[0]);
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	check_nothing_held(c, f);
	tessera_close(f);
}

/* Lock descriptions that arrive in pieces (more = true) are held before
 * the lock table sees them; together they stay under the daemon's bound,
 * and the next one is refused with the limit named. */
static void test_pending_bound(void **state)
{
	struct cluster *c = *state;
	struct raw raw;
	const size_t per_msg = 50000, per_session = 1000000;
	uint64_t *offs = malloc(per_msg * sizeof(*offs)), *lens = malloc(per_msg * sizeof(*lens));
	char msg[512];
	int refused = 0;

	struct tessera_layout one = { .strip_size = STRIP, .count = 1 };
	tessera_file *f;
	Tessera__Capability *cap;

	assert_non_null(offs);
	assert_non_null(lens);
	CHECK(c->fs, tessera_open(c->fs, "/flood", O_RDWR | O_CREAT, 0644, &one, &f));
	CHECK(c->fs, tessera_file_layout(f, &one));
	raw_open(c, one.servers[0], &raw);
	raw.cap = cap = file_cap(f);
	for (uint64_t session = 100; session < 106 && !refused; session++) {
		uint64_t id = 0, at = 0;

		for (size_t sent = 0; sent < per_session && !refused; sent += per_msg) {
			Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
			Tessera__LockReply *rep = NULL;
			int rc;

			for (size_t i = 0; i < per_msg; i++, at += 2) {
				offs[i] = at;
				lens[i] = 1;
			}
			m.session = session;
			m.lock_id = id;
			m.handle = one.handles[0];
			m.mode = 2;
			m.strip_size = 1ull << 32;
			m.stripe_count = 1;
			m.n_offsets = m.n_lengths = per_msg;
			m.offsets = offs;
			m.lengths = lens;
			m.more = 1;
			rc = raw_lock(&raw, TP_OP_LOCK_ACQUIRE, &m.base, msg, sizeof(msg), &rep);
			if (rc) {
				print_message("session %lu: %s\n", (unsigned long)session, msg);
				assert_int_equal(rc, -ENOBUFS);
				assert_non_null(strstr(msg, "limit"));
				refused = 1;
				break;
			}
			id = rep->lock_id;
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		}
	}
	assert_true(refused);
	/* the daemon still serves */
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	assert_int_equal(raw_lock(&raw, TP_OP_PING, &ping.base, msg, sizeof(msg), NULL), 0);
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tessera_close(f);
	free(offs);
	free(lens);
}

static int setup(void **state)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "lock_lease_ms = %d\n", LEASE_MS);
	return cluster_setup_conf(state, CLUSTER_TCP, extra);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_conflicts, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_lock_messages, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_record_locks, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_append, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_pending_bound, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_client_killed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_restarted, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stress, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
