/*
 * test_name_lease.c - name leases (docs/design.md, "Name leases"): a
 * client with tessera_name_cache answers a stat it already made from
 * memory; another client's change of any kind (mode, removal, rename of a
 * directory above, a write and close, a new writer) is seen by it once
 * the metadata daemon's word of it arrives, and before the change
 * returns (breaks that wait); its own changes at once (and
 * its creates keep their directory's attributes; an empty file it made
 * is held from the create's reply, its close not waited for; two of its
 * changes answered crosswise leave nothing stale held); a
 * client cut off from the daemon (stopped with SIGSTOP) stops answering
 * from memory within the lease; a daemon restart makes it forget all;
 * and a daemon with name_lease_ms 0 grants none.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"

#define LEASE_MS 1000

static int setup(void **state)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "name_lease_ms = %d\n", LEASE_MS);
	return cluster_setup_conf(state, CLUSTER_TCP, extra);
}

static struct tessera_name_cache_stats cache_of(tessera_fs *fs)
{
	struct tessera_name_cache_stats s;

	tessera_name_cache_stats(fs, &s);
	return s;
}

#define hits(fs) (cache_of(fs).hits)
#define breaks(fs) (cache_of(fs).breaks)

/* A client with the cache on. */
static tessera_fs *cached(struct cluster *c)
{
	tessera_fs *fs = cluster_connect_more(c->conf);

	CHECK(fs, tessera_name_cache(fs, TESSERA_NAME_CACHE_LEASED));
	return fs;
}

static void put(tessera_fs *fs, const char *path, size_t len)
{
	char buf[4096];
	tessera_file *f;

	assert_true(len <= sizeof(buf));
	memset(buf, 'x', len);
	CHECK(fs, tessera_open(fs, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, NULL, &f));
	assert_int_equal(tessera_pwrite(f, buf, len, 0), (ssize_t)len);
	CHECK(fs, tessera_close(f));
}

/* Stat path twice: the second is answered from memory. */
static void learnt(tessera_fs *fs, const char *path, struct tessera_stat *st)
{
	uint64_t h;

	CHECK(fs, tessera_stat(fs, path, st));
	h = hits(fs);
	CHECK(fs, tessera_stat(fs, path, st));
	assert_int_equal(hits(fs), h + 1);
}

/* Until fs has heard of `n` more broken leases than `before` (at most a
 * lease: the word goes out with the change's own reply). */
static void heard(tessera_fs *fs, uint64_t before, uint64_t n)
{
	double end = now_s() + LEASE_MS / 1000.0;

	while (breaks(fs) < before + n && now_s() < end)
		usleep(1000);
	assert_true(breaks(fs) >= before + n);
}

/* A stat asked twice is answered from memory, with what the daemon said. */
static void test_second_stat_from_memory(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_stat st, st2;
	uint64_t h0;

	CHECK(c->fs, tessera_mkdir(c->fs, "/d", 0755));
	put(c->fs, "/d/f", 1000);
	learnt(a, "/d/f", &st);
	CHECK(c->fs, tessera_stat(c->fs, "/d/f", &st2));
	assert_int_equal(st.size, 1000);
	assert_int_equal(st.handle, st2.handle);
	assert_int_equal(st.mode, st2.mode);
	assert_int_equal(st.mtime.tv_sec, st2.mtime.tv_sec);
	assert_int_equal(st.mtime.tv_nsec, st2.mtime.tv_nsec);
	learnt(a, "/d", &st);
	assert_true(S_ISDIR(st.mode));
	learnt(a, "/", &st);
	assert_true(S_ISDIR(st.mode));
	/* a missing name: asked once, then held as missing */
	assert_int_equal(tessera_stat(a, "/d/nothing", &st), -ENOENT);
	h0 = hits(a);
	assert_int_equal(tessera_stat(a, "/d/nothing", &st), -ENOENT);
	assert_int_equal(hits(a), h0 + 1);
	assert_non_null(strstr(tessera_errmsg(a), "/d/nothing"));
	/* under a missing directory: asked every time */
	assert_int_equal(tessera_stat(a, "/nodir/x", &st), -ENOENT);
	h0 = hits(a);
	assert_int_equal(tessera_stat(a, "/nodir/x", &st), -ENOENT);
	assert_int_equal(hits(a), h0);
	/* a path not as the daemon takes it is asked (and answered as
	 * without leases), never answered from what "/d/f" holds */
	static const char *const odd[] = { "/d//f", "/d/f/", "/d/./f", "/d/../d/f", "d/f" };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		uint64_t h = hits(a);

		assert_int_equal(tessera_stat(a, odd[i], &st), tessera_stat(c->fs, odd[i], &st2));
		assert_int_equal(hits(a), h);
	}
	tessera_disconnect(a);
}

/* Another client's changes: each is seen once its word arrives. */
static void test_others_changes_seen(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = 0600 };
	struct tessera_stat st;
	uint64_t b;

	CHECK(c->fs, tessera_mkdir(c->fs, "/d", 0755));
	CHECK(c->fs, tessera_mkdir(c->fs, "/d/e", 0755));
	put(c->fs, "/d/e/f", 10);
	put(c->fs, "/d/g", 10);
	learnt(a, "/d/e/f", &st);
	learnt(a, "/d/g", &st);

	b = breaks(a);
	CHECK(c->fs, tessera_setattr(c->fs, "/d/e/f", &sa));
	heard(a, b, 1);
	CHECK(a, tessera_stat(a, "/d/e/f", &st));
	assert_int_equal(st.mode & 07777, 0600);

	/* a write and close: the size */
	learnt(a, "/d/e/f", &st);
	b = breaks(a);
	put(c->fs, "/d/e/f", 3000);
	heard(a, b, 1);
	CHECK(a, tessera_stat(a, "/d/e/f", &st));
	assert_int_equal(st.size, 3000);

	/* a directory above renamed: the old path is gone */
	learnt(a, "/d/e/f", &st);
	b = breaks(a);
	CHECK(c->fs, tessera_rename(c->fs, "/d/e", "/d/e2"));
	heard(a, b, 1);
	assert_int_equal(tessera_stat(a, "/d/e/f", &st), -ENOENT);
	CHECK(a, tessera_stat(a, "/d/e2/f", &st));
	assert_int_equal(st.size, 3000);

	/* a removal */
	b = breaks(a);
	CHECK(c->fs, tessera_unlink(c->fs, "/d/g"));
	heard(a, b, 1);
	assert_int_equal(tessera_stat(a, "/d/g", &st), -ENOENT);
	tessera_disconnect(a);
}

/* Breaks that wait: a change returns only once every holder has heard of
 * it, so what another client does right after never answers from what
 * it held before (no waiting for the word here: close-to-open, a chmod
 * then a stat, as a job's steps on two nodes do). */
static void test_change_returns_after_holders_heard(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE };
	struct tessera_stat st;
	uint64_t b;

	put(c->fs, "/x", 1);
	for (int i = 2; i < 40; i++) {
		learnt(a, "/x", &st);
		b = breaks(a);
		if (i % 2) {
			put(c->fs, "/x", (size_t)i);
		} else {
			sa.mode = (mode_t)(0600 | (i & 7));
			CHECK(c->fs, tessera_setattr(c->fs, "/x", &sa));
		}
		assert_true(breaks(a) > b);
		CHECK(a, tessera_stat(a, "/x", &st));
		if (i % 2)
			assert_int_equal(st.size, i);
		else
			assert_int_equal(st.mode & 07777, 0600 | (i & 7));
	}
	tessera_disconnect(a);
}

/* A name held as missing appears as soon as anyone makes it: another
 * client (its change returns once this one has heard), or this one. */
static void test_missing_names(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_stat st;
	tessera_file *f;
	uint64_t h;

	CHECK(c->fs, tessera_mkdir(c->fs, "/m", 0755));
	static const char *const names[] = { "/m/put", "/m/dir", "/m/link", "/m/renamed",
					     "/m/mine", "/m/mydir", "/m/mylink" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(tessera_stat(a, names[i], &st), -ENOENT);
		h = hits(a);
		assert_int_equal(tessera_stat(a, names[i], &st), -ENOENT);
		assert_int_equal(hits(a), h + 1);
	}
	/* another client's */
	put(c->fs, "/m/put", 10);
	CHECK(a, tessera_stat(a, "/m/put", &st));
	assert_int_equal(st.size, 10);
	CHECK(c->fs, tessera_mkdir(c->fs, "/m/dir", 0755));
	CHECK(a, tessera_stat(a, "/m/dir", &st));
	assert_true(S_ISDIR(st.mode));
	CHECK(c->fs, tessera_symlink(c->fs, "put", "/m/link"));
	CHECK(a, tessera_lstat(a, "/m/link", &st));
	assert_true(S_ISLNK(st.mode));
	put(c->fs, "/m/src", 20);
	CHECK(c->fs, tessera_rename(c->fs, "/m/src", "/m/renamed"));
	CHECK(a, tessera_stat(a, "/m/renamed", &st));
	assert_int_equal(st.size, 20);
	/* this client's own (held again as missing first) */
	assert_int_equal(tessera_stat(a, "/m/mine", &st), -ENOENT);
	CHECK(a, tessera_open(a, "/m/mine", O_CREAT | O_WRONLY, 0644, NULL, &f));
	CHECK(a, tessera_close(f));
	CHECK(a, tessera_stat(a, "/m/mine", &st));
	assert_int_equal(tessera_stat(a, "/m/mydir", &st), -ENOENT);
	CHECK(a, tessera_mkdir(a, "/m/mydir", 0755));
	CHECK(a, tessera_stat(a, "/m/mydir", &st));
	assert_int_equal(tessera_lstat(a, "/m/mylink", &st), -ENOENT);
	CHECK(a, tessera_symlink(a, "mine", "/m/mylink"));
	CHECK(a, tessera_lstat(a, "/m/mylink", &st));
	/* a directory this client made: every name it holds there is all
	 * there is, so even a first stat of a missing name asks nobody */
	CHECK(a, tessera_mkdir(a, "/m/made", 0755));
	h = hits(a);
	assert_int_equal(tessera_stat(a, "/m/made/new", &st), -ENOENT);
	assert_int_equal(hits(a), h + 1);
	CHECK(a, tessera_open(a, "/m/made/new", O_CREAT | O_WRONLY, 0644, NULL, &f));
	CHECK(a, tessera_close(f));
	CHECK(a, tessera_stat(a, "/m/made/new", &st));
	CHECK(a, tessera_rename(a, "/m/mine", "/m/made/moved"));
	CHECK(a, tessera_stat(a, "/m/made/moved", &st));
	CHECK(a, tessera_symlink(a, "new", "/m/made/sl"));
	CHECK(a, tessera_lstat(a, "/m/made/sl", &st));
	CHECK(a, tessera_link(a, "/m/made/new", "/m/made/hard"));
	CHECK(a, tessera_stat(a, "/m/made/hard", &st));
	CHECK(a, tessera_mkdir(a, "/m/made2", 0755));
	put(c->fs, "/m/made2/theirs", 5);   /* another client's */
	CHECK(a, tessera_stat(a, "/m/made2/theirs", &st));
	assert_int_equal(st.size, 5);
	/* removed again: missing again, held once asked */
	CHECK(c->fs, tessera_unlink(c->fs, "/m/put"));
	assert_int_equal(tessera_stat(a, "/m/put", &st), -ENOENT);
	h = hits(a);
	assert_int_equal(tessera_stat(a, "/m/put", &st), -ENOENT);
	assert_int_equal(hits(a), h + 1);
	tessera_disconnect(a);
}

/* Open path as `who` (NULL: the connection's own) and read it whole:
 * its size, from what the open knew. */
static int open_read(tessera_fs *fs, const struct tessera_cred *who, const char *path, int flags,
		     int64_t *size)
{
	struct tessera_stat st;
	char buf[8192];
	tessera_file *f;
	int rc;

	CHECK(fs, tessera_set_thread_cred(fs, who));
	rc = tessera_open(fs, path, flags, 0, NULL, &f);
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	if (rc)
		return rc;
	CHECK(fs, tessera_open_attrs(f, &st));
	*size = (int64_t)st.size;
	assert_true(st.size <= sizeof(buf));
	assert_int_equal(tessera_pread(f, buf, sizeof(buf), 0), (ssize_t)st.size);
	for (size_t i = 0; i < st.size; i++)
		assert_int_equal(buf[i], 'x');
	CHECK(fs, tessera_close(f));
	return 0;
}

/* Opens from memory: a second open of a held file asks nobody, for the
 * same uid and rights; another client's write and close, a chmod of the
 * file, of a directory above, a removal: each is seen by the next open,
 * with no wait (breaks that wait). */
static void test_open_from_memory(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	const struct tessera_cred user = { 65534, 1, { 65534 } };
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE };
	struct tessera_stat st;
	int64_t size;
	uint64_t h;

	CHECK(c->fs, tessera_mkdir(c->fs, "/o", 0755));
	put(c->fs, "/o/f", 100);
	learnt(a, "/o/f", &st);
	learnt(a, "/o", &st);
	learnt(a, "/", &st);
	for (int round = 0; round < 2; round++) {
		const struct tessera_cred *who = round ? &user : NULL;

		CHECK(a, open_read(a, who, "/o/f", O_RDONLY, &size)); /* asks: learns the grant */
		assert_int_equal(size, 100);
		h = hits(a);
		CHECK(a, open_read(a, who, "/o/f", O_RDONLY, &size));
		assert_int_equal(hits(a), h + 1);
		assert_int_equal(size, 100);
	}
	/* O_RDWR needs a grant with write: asked once, then from memory */
	sa.mode = 0666;
	CHECK(c->fs, tessera_setattr(c->fs, "/o/f", &sa));
	CHECK(a, open_read(a, &user, "/o/f", O_RDWR, &size));
	h = hits(a);
	CHECK(a, open_read(a, &user, "/o/f", O_RDWR, &size));
	assert_int_equal(hits(a), h + 1);
	/* another client writes and closes: the next open sees all of it */
	for (size_t len = 200; len < 4000; len += 700) {
		put(c->fs, "/o/f", len);
		CHECK(a, tessera_stat(a, "/o/f", &st)); /* learnt again */
		CHECK(a, open_read(a, &user, "/o/f", O_RDONLY, &size));
		assert_int_equal(size, len);
	}
	/* the file's mode, then a directory's, taken from the uid */
	sa.mode = 0600;
	CHECK(c->fs, tessera_setattr(c->fs, "/o/f", &sa));
	assert_int_equal(open_read(a, &user, "/o/f", O_RDONLY, &size), -EACCES);
	sa.mode = 0644;
	CHECK(c->fs, tessera_setattr(c->fs, "/o/f", &sa));
	CHECK(a, tessera_stat(a, "/o/f", &st));
	CHECK(a, tessera_stat(a, "/o", &st));
	CHECK(a, open_read(a, &user, "/o/f", O_RDONLY, &size));
	sa.mode = 0700;
	CHECK(c->fs, tessera_setattr(c->fs, "/o", &sa));
	CHECK(a, tessera_stat(a, "/o", &st));
	CHECK(a, tessera_stat(a, "/o/f", &st)); /* (root may search it) */
	assert_int_equal(open_read(a, &user, "/o/f", O_RDONLY, &size), -EACCES);
	/* held and searchable, but this uid has no grant and may not read */
	sa.mode = 0755;
	CHECK(c->fs, tessera_setattr(c->fs, "/o", &sa));
	sa.mode = 0640;
	CHECK(c->fs, tessera_setattr(c->fs, "/o/f", &sa));
	CHECK(a, tessera_stat(a, "/o/f", &st));
	CHECK(a, tessera_stat(a, "/o", &st));
	h = hits(a);
	assert_int_equal(open_read(a, &user, "/o/f", O_RDONLY, &size), -EACCES);
	assert_int_equal(hits(a), h);
	/* removed by the other client: gone for the next open */
	CHECK(c->fs, tessera_unlink(c->fs, "/o/f"));
	assert_int_equal(open_read(a, NULL, "/o/f", O_RDONLY, &size), -ENOENT);
	tessera_disconnect(a);
}

/* A file another client opens for writing: its size is that writer's, so
 * a stat asks the storage daemons from then on, and sees it grow. */
static void test_new_writer_breaks(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_stat st;
	tessera_file *f;
	char buf[100] = { 0 };
	uint64_t b;

	put(c->fs, "/w", 10);
	learnt(a, "/w", &st);
	b = breaks(a);
	CHECK(c->fs, tessera_open(c->fs, "/w", O_WRONLY, 0, NULL, &f));
	heard(a, b, 1);
	assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	CHECK(a, tessera_stat(a, "/w", &st));
	assert_int_equal(st.size, sizeof(buf));
	/* not kept while it is written */
	assert_int_equal(tessera_pwrite(f, buf, sizeof(buf), 100), (ssize_t)sizeof(buf));
	CHECK(a, tessera_stat(a, "/w", &st));
	assert_int_equal(st.size, 2 * sizeof(buf));
	CHECK(c->fs, tessera_close(f));
	tessera_disconnect(a);
}

/* Its own changes a client sees at once, without waiting for any word. */
static void test_own_changes_at_once(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = 0640 };
	struct tessera_stat st;
	tessera_file *f;
	uint64_t h;

	CHECK(a, tessera_mkdir(a, "/own", 0755));
	put(a, "/own/f", 10);
	/* the close told the size: the first stat already from memory */
	h = hits(a);
	CHECK(a, tessera_stat(a, "/own/f", &st));
	assert_int_equal(hits(a), h + 1);
	assert_int_equal(st.size, 10);
	CHECK(a, tessera_setattr(a, "/own/f", &sa));
	h = hits(a);
	CHECK(a, tessera_stat(a, "/own/f", &st));
	assert_int_equal(st.mode & 07777, 0640);
	put(a, "/own/f", 77);
	CHECK(a, tessera_stat(a, "/own/f", &st));
	assert_int_equal(st.size, 77);
	/* a read-write open that writes: the size, then the close's */
	learnt(a, "/own/f", &st);
	CHECK(a, tessera_open(a, "/own/f", O_RDWR, 0, NULL, &f));
	assert_int_equal(tessera_pwrite(f, "abc", 3, 200), 3);
	CHECK(a, tessera_stat(a, "/own/f", &st));
	assert_int_equal(st.size, 203);
	CHECK(a, tessera_close(f));
	CHECK(a, tessera_stat(a, "/own/f", &st));
	assert_int_equal(st.size, 203);
	CHECK(a, tessera_rename(a, "/own/f", "/own/g"));
	assert_int_equal(tessera_stat(a, "/own/f", &st), -ENOENT);
	CHECK(a, tessera_stat(a, "/own/g", &st));
	CHECK(a, tessera_link(a, "/own/g", "/own/h"));
	CHECK(a, tessera_stat(a, "/own/g", &st));
	assert_int_equal(st.nlink, 2);
	/* a change through one name shows through the other */
	learnt(a, "/own/h", &st);
	sa.mode = 0600;
	CHECK(a, tessera_setattr(a, "/own/g", &sa));
	CHECK(a, tessera_stat(a, "/own/h", &st));
	assert_int_equal(st.mode & 07777, 0600);
	CHECK(a, tessera_unlink(a, "/own/g"));
	assert_int_equal(tessera_stat(a, "/own/g", &st), -ENOENT);
	CHECK(a, tessera_stat(a, "/own/h", &st));
	assert_int_equal(st.nlink, 1);
	CHECK(a, tessera_truncate(a, "/own/h", 5));
	CHECK(a, tessera_stat(a, "/own/h", &st));
	assert_int_equal(st.size, 5);
	CHECK(a, tessera_symlink(a, "h", "/own/l"));
	tessera_follow_links(a, TESSERA_NOFOLLOW);
	learnt(a, "/own/l", &st);
	assert_true(S_ISLNK(st.mode));
	tessera_disconnect(a);
}

struct crossed {
	tessera_fs *fs;
	tessera_file *f;   /* the closer's */
	int rc;
};

static void *close_it(void *arg)
{
	struct crossed *x = arg;

	x->rc = tessera_close(x->f);
	return NULL;
}

static void *set_mtime(void *arg)
{
	struct crossed *x = arg;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MTIME, .mtime = { 1000000, 5 } };

	x->rc = tessera_setattr(x->fs, "/x/f", &sa);
	return NULL;
}

/* Two of this client's own changes of one file in flight at once (the
 * metadata daemon stopped): the close of a writer, then a utimens. The
 * daemon answers them in that order; the close's answer, learnt first,
 * has the mtime from before the utimens, and the utimens's answer came
 * back after another change was learnt. What is held then must not be
 * the close's (rsync closes, then sets the time, and the mount's release
 * runs beside its utimensat: rsync found the time not set). */
static void test_own_changes_crossed(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct crossed closer = { .fs = a }, setter = { .fs = a };
	struct tessera_stat st;
	pthread_t t1, t2;

	CHECK(a, tessera_mkdir(a, "/x", 0755));
	CHECK(a, tessera_open(a, "/x/f", O_CREAT | O_WRONLY, 0644, NULL, &closer.f));
	assert_int_equal(tessera_pwrite(closer.f, "abc", 3, 0), 3);
	assert_int_equal(kill(c->mds, SIGSTOP), 0);
	assert_int_equal(pthread_create(&t1, NULL, close_it, &closer), 0);
	usleep(200000);   /* (the close sent) */
	assert_int_equal(pthread_create(&t2, NULL, set_mtime, &setter), 0);
	usleep(200000);
	assert_int_equal(kill(c->mds, SIGCONT), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(a, closer.rc);
	CHECK(a, setter.rc);
	CHECK(a, tessera_stat(a, "/x/f", &st));
	assert_int_equal(st.mtime.tv_sec, 1000000);
	assert_int_equal(st.mtime.tv_nsec, 5);
	CHECK(c->fs, tessera_stat(c->fs, "/x/f", &st));
	assert_int_equal(st.mtime.tv_sec, 1000000);
	/* and the answer came from the daemon, then is held */
	learnt(a, "/x/f", &st);
	assert_int_equal(st.mtime.tv_nsec, 5);
	tessera_disconnect(a);
}

/* A file made and closed unwritten: the close is not waited for (the
 * metadata daemon is stopped), and what the create said is held, right
 * (another client sees the same), until another client's change. */
static void test_made_empty_held(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = 0600 };
	struct tessera_stat st, st2;
	tessera_file *f;
	uint64_t h, b;
	double t0;

	CHECK(a, tessera_mkdir(a, "/e", 0755));
	CHECK(a, tessera_open(a, "/e/f", O_CREAT | O_WRONLY, 0644, NULL, &f));
	assert_int_equal(kill(c->mds, SIGSTOP), 0);
	t0 = now_s();
	CHECK(a, tessera_close(f));
	h = hits(a);
	CHECK(a, tessera_stat(a, "/e/f", &st));
	assert_int_equal(kill(c->mds, SIGCONT), 0);
	assert_true(now_s() - t0 < TIMEOUT_MS / 1000.0 / 2);
	assert_int_equal(hits(a), h + 1);
	CHECK(c->fs, tessera_stat(c->fs, "/e/f", &st2));
	assert_int_equal(st.size, 0);
	assert_int_equal(st2.size, 0);
	assert_int_equal(st.handle, st2.handle);
	assert_int_equal(st.mode, st2.mode);
	assert_int_equal(st.uid, st2.uid);
	assert_int_equal(st.mtime.tv_sec, st2.mtime.tv_sec);
	assert_int_equal(st.mtime.tv_nsec, st2.mtime.tv_nsec);
	assert_int_equal(st.ctime.tv_nsec, st2.ctime.tv_nsec);
	/* another client's change is seen */
	b = breaks(a);
	CHECK(c->fs, tessera_setattr(c->fs, "/e/f", &sa));
	heard(a, b, 1);
	CHECK(a, tessera_stat(a, "/e/f", &st));
	assert_int_equal(st.mode & 07777, 0600);
	tessera_disconnect(a);
}

/* The directory as another client's plain stat sees it. */
static void same_dir(tessera_fs *plain, const char *path, const struct tessera_stat *held)
{
	struct tessera_stat st;

	CHECK(plain, tessera_stat(plain, path, &st));
	assert_int_equal(held->handle, st.handle);
	assert_int_equal(held->mode, st.mode);
	assert_int_equal(held->nlink, st.nlink);
	assert_int_equal(held->size, st.size);
	assert_int_equal(held->mtime.tv_sec, st.mtime.tv_sec);
	assert_int_equal(held->mtime.tv_nsec, st.mtime.tv_nsec);
	assert_int_equal(held->ctime.tv_nsec, st.ctime.tv_nsec);
}

/* A create keeps its directory's attributes from the create's reply (as
 * the create left them), and a change of a file's own attributes or size
 * (chmod, a close that wrote) leaves its directory's alone: a stat of the
 * directory after them is answered from memory, right. */
static void test_own_changes_keep_directory(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = 0600 };
	struct tessera_stat st;
	uint64_t h, b;

	CHECK(a, tessera_mkdir(a, "/kd", 0755));
	learnt(a, "/kd", &st);
	put(a, "/kd/f", 10);
	h = hits(a);
	CHECK(a, tessera_stat(a, "/kd", &st));
	assert_int_equal(hits(a), h + 1);
	same_dir(c->fs, "/kd", &st);
	CHECK(a, tessera_setattr(a, "/kd/f", &sa));
	put(a, "/kd/f", 20);
	h = hits(a);
	CHECK(a, tessera_stat(a, "/kd", &st));
	assert_int_equal(hits(a), h + 1);
	same_dir(c->fs, "/kd", &st);
	/* a remove's reply holds the directory as it left it (rm -rf stats
	 * the directory before each unlink) */
	put(a, "/kd/r", 1);
	CHECK(a, tessera_unlink(a, "/kd/r"));
	h = hits(a);
	CHECK(a, tessera_stat(a, "/kd", &st));
	assert_int_equal(hits(a), h + 1);
	same_dir(c->fs, "/kd", &st);
	/* another client's create in it breaks what a holds */
	b = breaks(a);
	put(c->fs, "/kd/g", 1);
	heard(a, b, 1);
	CHECK(a, tessera_stat(a, "/kd", &st));
	same_dir(c->fs, "/kd", &st);
	tessera_disconnect(a);
}

/* A client cut off from the daemon answers from memory only while its
 * lease runs: after it, the stat asks (and here waits for the stopped
 * daemon). */
static void test_cut_off_client_stops_within_lease(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_name_cache_stats s;
	struct tessera_stat st;
	double t0;

	put(c->fs, "/cut", 10);
	learnt(a, "/cut", &st);
	kill(c->mds, SIGSTOP);
	t0 = now_s();
	while (now_s() - t0 < 3.0 * LEASE_MS / 1000) {
		tessera_name_cache_stats(a, &s);
		if (!s.leased)
			break;
		usleep(10000);
	}
	kill(c->mds, SIGCONT);
	assert_false(s.leased);
	assert_true(now_s() - t0 <= 1.5 * LEASE_MS / 1000);
	/* back: the lease runs again */
	t0 = now_s();
	do {
		usleep(10000);
		tessera_name_cache_stats(a, &s);
	} while (!s.leased && now_s() - t0 < 5);
	assert_true(s.leased);
	CHECK(a, tessera_stat(a, "/cut", &st));
	tessera_disconnect(a);
}

/* A daemon that restarts lost every lease: the client forgets all. */
static void test_restart_forgets(void **state)
{
	struct cluster *c = *state;
	tessera_fs *a = cached(c);
	struct tessera_stat st;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = 0604 };

	put(c->fs, "/r", 10);
	learnt(a, "/r", &st);
	cluster_stop_pid(c->mds, SIGKILL);
	c->mds = cluster_spawn(c, "tessera-mds", "mds", 0);
	CHECK(c->fs, tessera_setattr(c->fs, "/r", &sa));
	/* whatever a asks now, it never answers 0644 after its lease */
	usleep(LEASE_MS * 1000 + 200000);
	CHECK(a, tessera_stat(a, "/r", &st));
	assert_int_equal(st.mode & 07777, 0604);
	tessera_disconnect(a);
}

/* name_lease_ms = 0: the daemon grants none, and says so. */
static void test_off_at_the_daemon(void **state)
{
	(void)state;
	void *st2 = NULL;
	tessera_fs *fs;

	assert_int_equal(cluster_setup_conf(&st2, CLUSTER_TCP, "name_lease_ms = 0\n"), 0);
	fs = cluster_connect_more(((struct cluster *)st2)->conf);
	assert_int_equal(tessera_name_cache(fs, TESSERA_NAME_CACHE_LEASED), -EOPNOTSUPP);
	assert_non_null(strstr(tessera_errmsg(fs), "name_lease_ms 0"));
	tessera_disconnect(fs);
	cluster_teardown(&st2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_second_stat_from_memory, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_others_changes_seen, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_new_writer_breaks, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_change_returns_after_holders_heard, setup,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_open_from_memory, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_missing_names, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_own_changes_at_once, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_made_empty_held, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_own_changes_crossed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_own_changes_keep_directory, setup,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_cut_off_client_stops_within_lease, setup,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_restart_forgets, setup, cluster_teardown),
		cmocka_unit_test(test_off_at_the_daemon),
	};

	cluster_test_filter();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
