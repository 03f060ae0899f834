/*
 * test_mds_store.c - the metadata namespace (server/mds_store.h) against a
 * real LevelDB in a fresh temporary directory per test.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <leveldb/c.h>

#include "mds_store.h"
#include "mds_store_int.h" /* the encoders, for a store written by hand */
#include "mds_xattr.h"

#define N_IOS 4
#define MDS_INDEX 3

struct fx {
	char dir[64];
	struct mds_store *st;
};

static const uint32_t root_gids[] = { 0 };
static const struct mds_cred ROOT = { 0, 1, root_gids };
static const uint32_t u1_gids[] = { 1000 };
static const struct mds_cred U1 = { 1000, 1, u1_gids };
static const uint32_t u2_gids[] = { 2000, 500 };
static const struct mds_cred U2 = { 2000, 2, u2_gids };   /* in group 500 */
static const uint32_t u3_gids[] = { 3000 };
static const struct mds_cred U3 = { 3000, 1, u3_gids };

static int rm_cb(const char *p, const struct stat *sb, int flag,
		 struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static void reopen(struct fx *f, uint32_t n_ios)
{
	char err[256] = "";
	int rc;

	if (f->st)
		mds_store_close(f->st);
	f->st = NULL;
	rc = mds_store_open(f->dir, MDS_INDEX, n_ios, &f->st, err, sizeof(err));
	if (rc)
		fail_msg("open %s: %d %s", f->dir, rc, err);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);

	assert_non_null(f);
	strcpy(f->dir, "/tmp/test_mds_store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	reopen(f, N_IOS);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	mds_store_close(f->st);
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Create a file (non-exclusive off: exclusive) with the default layout. */
static int mkfile(struct mds_store *st, const struct mds_cred *c,
		  const char *path, struct mds_attr *out)
{
	struct mds_attr a;
	int created = -1, rc;

	rc = mds_create(st, c, &(struct mds_create_req){ .path = path, .mode = 0644,
			.how = MDS_CREATE_EXCLUSIVE }, out ? out : &a, &created);
	if (rc == 0)
		assert_int_equal(created, 1);
	return rc;
}

static void lookup_ok(struct mds_store *st, const char *path,
		      struct mds_attr *out)
{
	int rc = mds_lookup(st, &ROOT, path, out);

	if (rc)
		fail_msg("lookup %s: %d %s", path, rc, mds_store_errmsg(st));
}

/* ---- basics ---- */

static void test_open_root(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;
	uint64_t n;

	lookup_ok(f->st, "/", &a);
	assert_int_equal(a.type, MDS_DIR);
	assert_int_equal(a.mode, 01777); /* sticky: see test_sticky */
	assert_int_equal(a.uid, 0);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(a.nentries, 0);
	assert_true(a.handle != 0);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 1);

	/* bad open arguments */
	struct mds_store *st = (struct mds_store *)1;
	char err[256] = "";
	assert_int_equal(mds_store_open(f->dir, 0, 0, &st, err, sizeof(err)), -EINVAL);
	assert_null(st);
	assert_true(err[0] != 0);
}

static void test_mkdir_create_lookup(void **state)
{
	struct fx *f = *state;
	struct mds_attr d, a, b, r;
	int64_t t0 = now_ns();

	assert_int_equal(mds_mkdir(f->st, &U1, "/a", 0755, &d), 0);
	assert_int_equal(d.type, MDS_DIR);
	assert_int_equal(d.mode, 0755);
	assert_int_equal(d.uid, 1000);
	assert_int_equal(d.gid, 1000);
	assert_int_equal(d.nlink, 2);
	assert_false(d.has_layout);
	assert_true(d.mtime_ns >= t0 && d.ctime_ns == d.mtime_ns &&
		    d.atime_ns == d.mtime_ns);
	assert_int_equal(mds_mkdir(f->st, &U1, "/a/b", 0700, NULL), 0);
	assert_int_equal(mkfile(f->st, &U1, "/a/b/file", &a), 0);
	assert_int_equal(a.type, MDS_FILE);
	assert_int_equal(a.mode, 0644);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(a.size, 0);
	assert_true(a.has_layout);

	lookup_ok(f->st, "/a/b/file", &b);
	assert_memory_equal(&a, &b, sizeof a);
	lookup_ok(f->st, "/a", &b);
	assert_int_equal(b.handle, d.handle);
	assert_int_equal(b.nlink, 3);
	assert_int_equal(b.nentries, 1);
	assert_true(b.mtime_ns >= d.mtime_ns);
	lookup_ok(f->st, "/a/b", &b);
	assert_int_equal(b.nentries, 1);
	assert_int_equal(b.nlink, 2);
	lookup_ok(f->st, "/", &r);
	assert_int_equal(r.nlink, 3);
	assert_int_equal(r.nentries, 1);
	/* mode bits beyond 07777 are dropped */
	assert_int_equal(mds_mkdir(f->st, &U1, "/a/c", 0170755, &d), 0);
	assert_int_equal(d.mode, 0755);
}

static void test_eexist(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;
	int created = 7;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), -EEXIST);
	assert_string_equal(mds_store_errmsg(f->st), "mkdir /d: file exists");
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/", 0755, NULL), -EEXIST);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/f", NULL), 0);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/d/f",
				    .mode = 0644, .how = MDS_CREATE_EXCLUSIVE }, &a, &created), -EEXIST);
	assert_int_equal(created, 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d/f", 0755, NULL), -EEXIST);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/d",
				    .mode = 0644, .how = MDS_CREATE_OR_OPEN }, &a, &created), -EISDIR);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/",
				    .mode = 0644, .how = MDS_CREATE_OR_OPEN }, &a, &created), -EISDIR);
}

static void test_create_nonexclusive(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b;
	int created = -1;
	uint64_t n;

	assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = "/f", .mode = 0600, .how = MDS_CREATE_OR_OPEN },
				    &a, &created), 0);
	assert_int_equal(created, 1);
	assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = "/f", .mode = 0666, .how = MDS_CREATE_OR_OPEN, .strip_size = 4096, .stripe_count = 1 },
				    &b, &created), 0);
	assert_int_equal(created, 0);
	assert_memory_equal(&a, &b, sizeof a);   /* the existing file */
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 2);
}

static void test_enoent_enotdir(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;

	assert_int_equal(mds_lookup(f->st, &ROOT, "/nope", &a), -ENOENT);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/x/y", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE },
				    &a, NULL), -ENOENT);
	assert_string_equal(mds_store_errmsg(f->st),
			    "create /x/y: no such directory /x");
	assert_int_equal(mkfile(f->st, &ROOT, "/a", NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/a/b", 0755, NULL), -ENOTDIR);
	assert_string_equal(mds_store_errmsg(f->st),
			    "mkdir /a/b: /a is not a directory");
	assert_int_equal(mds_lookup(f->st, &ROOT, "/a/b/c", &a), -ENOTDIR);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/d/e/f", &a), -ENOENT);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/d/none", &a), -ENOENT);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d/none"), -ENOENT);
	assert_int_equal(mds_setattr(f->st, &ROOT, "/none", MDS_SET_MODE, &a,
				     NULL), -ENOENT);
	uint32_t n;
	int eof;
	struct mds_dirent de[2];
	assert_int_equal(mds_readdir(f->st, &ROOT, "/none", "", 2, de, &n,
				     &eof), -ENOENT);
	assert_int_equal(mds_readdir(f->st, &ROOT, "/a", "", 2, de, &n,
				     &eof), -ENOTDIR);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/a", 0, 1),
			 -ENOTDIR);
}

static void test_unlink_rmdir(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, r, d;
	uint64_t n;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d/sub", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/f", &a), 0);
	/* wrong types */
	assert_int_equal(mds_unlink(f->st, &ROOT, "/d", &r), -EISDIR);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/", &r), -EISDIR);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d/f"), -ENOTDIR);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/"), -EBUSY);
	/* not empty */
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d"), -ENOTEMPTY);
	assert_string_equal(mds_store_errmsg(f->st),
			    "rmdir /d: directory not empty");

	assert_int_equal(mds_unlink(f->st, &ROOT, "/d/f", &r), 0);
	assert_int_equal(r.nlink, 0);            /* its last name: gone */
	a.nlink = 0;
	assert_memory_equal(&a, &r, sizeof a);   /* layout for the caller */
	assert_int_equal(mds_lookup(f->st, &ROOT, "/d/f", &r), -ENOENT);
	lookup_ok(f->st, "/d", &d);
	assert_int_equal(d.nentries, 1);
	assert_int_equal(d.nlink, 3);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d/sub"), 0);
	lookup_ok(f->st, "/d", &d);
	assert_int_equal(d.nentries, 0);
	assert_int_equal(d.nlink, 2);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d"), 0);
	lookup_ok(f->st, "/", &d);
	assert_int_equal(d.nentries, 0);
	assert_int_equal(d.nlink, 2);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 1);
	/* the name can be used again */
	assert_int_equal(mkfile(f->st, &ROOT, "/d", NULL), 0);
}

static void test_bad_paths(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;
	static const char *bad[] = {
		"", "a", "a/b", "//", "/a//b", "/a/", "/.", "/..", "/a/./b",
		"/a/../b", "/a/..", ".", "..",
	};
	char name[300], path[5000];

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/a", 0755, NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/a/b", 0755, NULL), 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = mds_lookup(f->st, &ROOT, bad[i], &a);
		if (rc != -EINVAL)
			fail_msg("lookup \"%s\": %d, wanted -EINVAL", bad[i], rc);
		assert_int_equal(mds_mkdir(f->st, &ROOT, bad[i], 0755, NULL),
				 -EINVAL);
	}
	assert_int_equal(mds_lookup(f->st, &ROOT, NULL, &a), -EINVAL);
	/* "..." and names with dots are ordinary names */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/...", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/.hidden", NULL), 0);

	/* a 255-byte name is fine, 256 is too long */
	memset(name, 'n', 255);
	name[255] = '\0';
	snprintf(path, sizeof path, "/a/%s", name);
	assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
	lookup_ok(f->st, path, &a);
	snprintf(path, sizeof path, "/a/%sX", name);
	assert_int_equal(mkfile(f->st, &ROOT, path, NULL), -ENAMETOOLONG);
	snprintf(path, sizeof path, "/a/%sX/f", name);
	assert_int_equal(mds_lookup(f->st, &ROOT, path, &a), -ENAMETOOLONG);

	/* a path of 4097 bytes is too long, 4096 is not (just missing) */
	path[0] = '\0';
	while (strlen(path) < 4096 - 101)
		strcat(path, "/abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu");
	while (strlen(path) < 4094)
		strcat(path, "/x");
	if (strlen(path) == 4094)
		strcat(path, "/y");
	else
		strcat(path, "y");
	assert_int_equal(strlen(path), 4096);
	assert_int_equal(mds_lookup(f->st, &ROOT, path, &a), -ENOENT);
	strcat(path, "z");
	assert_int_equal(mds_lookup(f->st, &ROOT, path, &a), -ENAMETOOLONG);
}

/* ---- rename ---- */

static void test_rename_basic(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b, d1, d2, r;
	int rf = -1;
	uint64_t n;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d1", 0755, NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d2", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d1/f", &a), 0);

	/* within a directory */
	assert_int_equal(mds_rename(f->st, &ROOT, "/d1/f", "/d1/g", &r, &rf), 0);
	assert_int_equal(rf, 0);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/d1/f", &b), -ENOENT);
	lookup_ok(f->st, "/d1/g", &b);
	assert_int_equal(b.handle, a.handle);
	assert_memory_equal(&b.layout, &a.layout, sizeof a.layout);
	lookup_ok(f->st, "/d1", &d1);
	assert_int_equal(d1.nentries, 1);

	/* across directories */
	assert_int_equal(mds_rename(f->st, &ROOT, "/d1/g", "/d2/h", &r, &rf), 0);
	assert_int_equal(rf, 0);
	lookup_ok(f->st, "/d2/h", &b);
	assert_int_equal(b.handle, a.handle);
	lookup_ok(f->st, "/d1", &d1);
	lookup_ok(f->st, "/d2", &d2);
	assert_int_equal(d1.nentries, 0);
	assert_int_equal(d2.nentries, 1);

	/* a directory across directories moves its subtree and nlink */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d1/sub", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d1/sub/x", &a), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d1/sub", "/d2/sub2", &r,
				    &rf), 0);
	lookup_ok(f->st, "/d2/sub2/x", &b);
	assert_int_equal(b.handle, a.handle);
	lookup_ok(f->st, "/d1", &d1);
	lookup_ok(f->st, "/d2", &d2);
	assert_int_equal(d1.nlink, 2);
	assert_int_equal(d1.nentries, 0);
	assert_int_equal(d2.nlink, 3);
	assert_int_equal(d2.nentries, 2);

	/* to itself: nothing happens */
	assert_int_equal(mds_rename(f->st, &ROOT, "/d2/h", "/d2/h", &r, &rf), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d2", "/d2", &r, &rf), 0);
	lookup_ok(f->st, "/d2/h", &b);
	/* missing source, missing target directory, root */
	assert_int_equal(mds_rename(f->st, &ROOT, "/nope", "/x", &r, &rf),
			 -ENOENT);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d2/h", "/nope/x", &r, &rf),
			 -ENOENT);
	assert_int_equal(mds_rename(f->st, &ROOT, "/", "/x", &r, &rf), -EBUSY);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d1", "/", &r, &rf), -EBUSY);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d2/h", "/d2/h/x", &r, &rf),
			 -ENOTDIR);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 6);   /* / d1 d2 h sub2 x */
}

static void test_rename_replace(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b, r, d;
	int rf = -1;
	uint64_t n;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/src", &a), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/dst", &b), 0);

	/* file over file: the replaced file's attributes come back */
	assert_int_equal(mds_rename(f->st, &ROOT, "/d/src", "/dst", &r, &rf), 0);
	assert_int_equal(rf, 1);
	assert_int_equal(r.nlink, 0);   /* names left: none, it is gone */
	b.nlink = 0;
	assert_memory_equal(&r, &b, sizeof b);
	lookup_ok(f->st, "/dst", &r);
	assert_int_equal(r.handle, a.handle);
	lookup_ok(f->st, "/", &d);
	assert_int_equal(d.nentries, 2);   /* d, dst */
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 3);

	/* dir over empty dir */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/e", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/in", &a), 0);
	lookup_ok(f->st, "/d", &b);
	rf = -1;
	assert_int_equal(mds_rename(f->st, &ROOT, "/d", "/e", &r, &rf), 0);
	assert_int_equal(rf, 0);
	lookup_ok(f->st, "/e", &r);
	assert_int_equal(r.handle, b.handle);
	lookup_ok(f->st, "/e/in", &r);
	assert_int_equal(r.handle, a.handle);
	lookup_ok(f->st, "/", &d);
	assert_int_equal(d.nentries, 2);   /* e, dst */
	assert_int_equal(d.nlink, 3);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/d", &r), -ENOENT);

	/* dir over non-empty dir */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/g", 0755, NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/g", "/e", &r, &rf),
			 -ENOTEMPTY);
	/* dir into its own subtree */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/e/s", 0755, NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/e", "/e/s/e", &r, &rf),
			 -EINVAL);
	assert_int_equal(mds_rename(f->st, &ROOT, "/e", "/e/x", &r, &rf),
			 -EINVAL);
	/* a directory over its own parent: the parent is not empty */
	assert_int_equal(mds_rename(f->st, &ROOT, "/e/s", "/e", &r, &rf),
			 -ENOTEMPTY);
	/* a prefix that is not a path prefix is fine */
	assert_int_equal(mds_rename(f->st, &ROOT, "/e", "/ee", &r, &rf), 0);
	/* file over dir, dir over file */
	assert_int_equal(mds_rename(f->st, &ROOT, "/dst", "/g", &r, &rf),
			 -EISDIR);
	assert_int_equal(mds_rename(f->st, &ROOT, "/g", "/dst", &r, &rf),
			 -ENOTDIR);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 6);   /* / ee ee/in ee/s dst g */
}

/* ---- readdir ---- */

/* Read all of `dir` in pages of `page`; names into a malloc'd array. */
static char (*list_all(struct mds_store *st, const char *dir, uint32_t page,
		       uint32_t *total))[256]
{
	struct mds_dirent *ents = calloc(page, sizeof *ents);
	char (*names)[256] = NULL;
	char cursor[256] = "";
	uint32_t n, cap = 0;
	int eof = 0;

	*total = 0;
	while (!eof) {
		assert_int_equal(mds_readdir(st, &ROOT, dir, cursor, page, ents,
					     &n, &eof), 0);
		assert_true(n <= page);
		if (!eof)
			assert_int_equal(n, page);
		if (*total + n > cap) {
			cap = (*total + n) * 2;
			names = realloc(names, cap * sizeof *names);
		}
		for (uint32_t i = 0; i < n; i++)
			strcpy(names[(*total)++], ents[i].name);
		if (n)
			strcpy(cursor, ents[n - 1].name);
	}
	free(ents);
	return names;
}

static void test_readdir_paging(void **state)
{
	struct fx *f = *state;
	/* 10,000 synchronous creates: about 1-2 s on the dev VM (fdatasync
	 * ~70 us); the whole suite runs in ~3 s. */
	enum { N = 10000, PAGE = 100 };
	char path[64];
	char (*names)[256];
	uint32_t total;
	struct mds_attr a;
	struct mds_dirent de[3];
	uint32_t n;
	int eof;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/big", 0755, NULL), 0);
	/* an empty directory: one page, eof */
	assert_int_equal(mds_readdir(f->st, &ROOT, "/big", "", 3, de, &n, &eof),
			 0);
	assert_int_equal(n, 0);
	assert_true(eof);
	/* neighbours whose keys sort right around /big's */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/a", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/a/zzz", NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/c", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/c/aaa", NULL), 0);
	for (int i = 0; i < N; i++) {
		/* not in name order */
		snprintf(path, sizeof path, "/big/f%05d", (i * 7919) % N);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
	}
	lookup_ok(f->st, "/big", &a);
	assert_int_equal(a.nentries, N);

	names = list_all(f->st, "/big", PAGE, &total);
	assert_int_equal(total, N);
	for (int i = 0; i < N; i++) {
		char want[16];
		snprintf(want, sizeof want, "f%05d", i);
		assert_string_equal(names[i], want);
	}
	free(names);

	/* a page exactly at the end: n == max and eof */
	assert_int_equal(mds_readdir(f->st, &ROOT, "/big", "f09997", 2, de, &n,
				     &eof), 0);
	assert_int_equal(n, 2);
	assert_true(eof);
	assert_string_equal(de[1].name, "f09999");
	assert_int_equal(de[1].type, MDS_FILE);
	/* a cursor that is not a name */
	assert_int_equal(mds_readdir(f->st, &ROOT, "/big", "f09998x", 3, de, &n,
				     &eof), 0);
	assert_int_equal(n, 1);
	assert_true(eof);
	assert_string_equal(de[0].name, "f09999");
	/* max 0: nothing, not eof since entries follow */
	assert_int_equal(mds_readdir(f->st, &ROOT, "/big", "", 0, de, &n, &eof),
			 0);
	assert_int_equal(n, 0);
	assert_false(eof);
}

static void test_readdir_concurrent_inserts(void **state)
{
	struct fx *f = *state;
	enum { N = 600, PAGE = 37 };
	struct mds_dirent ents[PAGE];
	char cursor[256] = "", path[64], last[256] = "";
	int seen[N] = { 0 }, eof = 0, pages = 0, extra = 0;
	uint32_t n;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof path, "/d/n%04d", 2 * i);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
	}
	while (!eof) {
		assert_int_equal(mds_readdir(f->st, &ROOT, "/d", cursor, PAGE,
					     ents, &n, &eof), 0);
		for (uint32_t i = 0; i < n; i++) {
			int k;
			/* strictly increasing over the whole listing */
			assert_true(strcmp(ents[i].name, last) > 0);
			strcpy(last, ents[i].name);
			assert_int_equal(sscanf(ents[i].name, "n%d", &k), 1);
			if (k % 2 == 0)
				seen[k / 2]++;
			else
				extra++;
		}
		if (n)
			strcpy(cursor, ents[n - 1].name);
		/* between pages: insert names before, at and after the
		 * cursor, and remove one inserted earlier */
		for (int j = 0; j < 3; j++) {
			int k = (pages * 97 + j * 211) % (2 * N);
			snprintf(path, sizeof path, "/d/n%04d", k | 1);
			int rc = mkfile(f->st, &ROOT, path, NULL);
			assert_true(rc == 0 || rc == -EEXIST);
		}
		snprintf(path, sizeof path, "/d/n%04d",
			 ((pages * 53) % (2 * N)) | 1);
		int rc = mds_unlink(f->st, &ROOT, path, NULL);
		assert_true(rc == 0 || rc == -ENOENT);
		pages++;
	}
	for (int i = 0; i < N; i++)
		if (seen[i] != 1)
			fail_msg("n%04d seen %d times", 2 * i, seen[i]);
	assert_true(pages >= N / PAGE);
	assert_true(extra > 0);   /* some inserted names were seen too */
}

static void test_readdir_perm(void **state)
{
	struct fx *f = *state;
	struct mds_dirent de[4];
	uint32_t n;
	int eof;

	assert_int_equal(mds_mkdir(f->st, &U1, "/d", 0311, NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &U1, "/d/s", 0755, NULL), 0);
	assert_int_equal(mds_readdir(f->st, &U1, "/d", "", 4, de, &n, &eof),
			 -EACCES);
	assert_int_equal(mds_readdir(f->st, &U3, "/d", "", 4, de, &n, &eof),
			 -EACCES);
	assert_int_equal(mds_readdir(f->st, &U3, "/d/s", "", 4, de, &n, &eof),
			 0);   /* search is enough to pass through */
	assert_int_equal(mds_readdir(f->st, &ROOT, "/d", "", 4, de, &n, &eof),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(de[0].name, "s");
	assert_int_equal(de[0].type, MDS_DIR);
}

/* ---- handles and persistence ---- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Append the handles of `a` (object and storage objects) to h[]. */
static void collect(const struct mds_attr *a, uint64_t *h, size_t *nh)
{
	h[(*nh)++] = a->handle;
	if (a->type == MDS_FILE)
		for (uint32_t i = 0; i < a->layout.count; i++)
			h[(*nh)++] = a->layout.handles[i];
}

/* Handles are random: distinct across reopens and removals, never 0, and
 * handles handed out one after another are no neighbours (a caller who
 * knows its own handles cannot count to anyone else's). */
static void test_unique_handles(void **state)
{
	struct fx *f = *state;
	enum { ROUNDS = 3, PER = 300 };
	size_t cap = 2 + ROUNDS * (PER * (1 + N_IOS) + 1), nh = 0, near = 0;
	uint64_t *h = calloc(cap, sizeof *h);
	struct mds_attr a;
	char path[64];

	lookup_ok(f->st, "/", &a);
	collect(&a, h, &nh);
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(path, sizeof path, "/r%d", r);
		assert_int_equal(mds_mkdir(f->st, &ROOT, path, 0755, &a), 0);
		collect(&a, h, &nh);
		for (int i = 0; i < PER; i++) {
			snprintf(path, sizeof path, "/r%d/f%d", r, i);
			assert_int_equal(mkfile(f->st, &ROOT, path, &a), 0);
			collect(&a, h, &nh);
		}
		reopen(f, N_IOS);
	}
	/* removing names does not free handles for reuse */
	assert_int_equal(mds_unlink(f->st, &ROOT, "/r0/f0", NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/r0/f0", &a), 0);
	h[nh++] = a.handle;
	/* in the order handed out: two within 2^32 of each other happen by
	 * chance with odds of 2^-31 a pair; sequential handles are all 1 apart */
	for (size_t i = 1; i < nh; i++) {
		uint64_t d = h[i] > h[i - 1] ? h[i] - h[i - 1] : h[i - 1] - h[i];

		near += d < (UINT64_C(1) << 32);
	}
	assert_int_equal(near, 0);
	qsort(h, nh, sizeof *h, u64_cmp);
	assert_true(h[0] != 0);
	for (size_t i = 1; i < nh; i++)
		assert_true(h[i] != h[i - 1]);
	/* spread over the whole 64 bits, not one daemon's 48-bit range */
	assert_true(h[0] < (UINT64_C(1) << 60) && h[nh - 1] > (UINT64_C(15) << 60));
	free(h);
}

static uint32_t intents(struct mds_store *st, struct mds_intent *out)
{
	uint32_t n = 0;
	int eof = 0;

	assert_int_equal(mds_intent_list(st, NULL, 16, out, &n, &eof), 0);
	assert_true(eof);
	return n;
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static void put_meta(leveldb_writebatch_t *b, const char *key, uint64_t v)
{
	unsigned char val[8];

	put_be64(val, v);
	leveldb_writebatch_put(b, key, strlen(key), (char *)val, sizeof val);
}

#define LEGACY(n) (((uint64_t)MDS_INDEX << 48) | (n))
#define LEGACY_NEXT 4097 /* what a store that reserved one block persisted */

/* A store as the daemon wrote it when handles were sequential: the root
 * (counter 1), /old (2), /old/f (3, objects 4 to 7), "next_handle" past
 * the block it had reserved. Written with the store's own encoders. */
static void write_legacy_store(const char *dir)
{
	struct mds_attr root = { .handle = LEGACY(1), .type = MDS_DIR, .mode = 01777,
				 .nlink = 3, .nentries = 1 };
	struct mds_attr old = { .handle = LEGACY(2), .type = MDS_DIR, .mode = 0755,
				.nlink = 2, .nentries = 1 };
	struct mds_attr file = { .handle = LEGACY(3), .type = MDS_FILE, .mode = 0644,
				 .nlink = 1, .size = 5, .has_layout = 1 };
	leveldb_options_t *o = leveldb_options_create();
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	leveldb_writebatch_t *b = leveldb_writebatch_create();
	char *err = NULL;
	leveldb_t *db;

	file.layout.strip_size = 65536;
	file.layout.count = N_IOS;
	for (uint32_t i = 0; i < N_IOS; i++) {
		file.layout.servers[i] = i;
		file.layout.handles[i] = LEGACY(4 + i);
	}
	leveldb_options_set_create_if_missing(o, 1);
	db = leveldb_open(o, dir, &err);
	if (err)
		fail_msg("leveldb open %s: %s", dir, err);
	mds_batch_put_attr(b, &root);
	mds_batch_put_attr(b, &old);
	mds_batch_put_attr(b, &file);
	mds_batch_put_dirent(b, root.handle, "old", 3, old.handle, MDS_DIR);
	mds_batch_put_dirent(b, old.handle, "f", 1, file.handle, MDS_FILE);
	put_meta(b, "Mroot", root.handle);
	put_meta(b, "Mnnames", 3);
	put_meta(b, "Mnext_handle", LEGACY_NEXT);
	leveldb_write(db, wo, b, &err);
	if (err)
		fail_msg("leveldb write %s: %s", dir, err);
	leveldb_writebatch_destroy(b);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_options_destroy(o);
}

/* A store made when handles were sequential opens as it was and keeps
 * working: its handles are unchanged, new ones are random and never
 * inside the range it counted through, and its old files purge. */
static void test_legacy_store(void **state)
{
	struct fx *f = *state;
	static struct mds_intent in[16];
	struct mds_attr a, removed;
	char path[32];

	mds_store_close(f->st);
	f->st = NULL;
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	write_legacy_store(f->dir);
	reopen(f, N_IOS);

	lookup_ok(f->st, "/", &a);
	assert_true(a.handle == LEGACY(1));
	lookup_ok(f->st, "/old/f", &a);
	assert_true(a.handle == LEGACY(3) && a.size == 5 && a.layout.count == N_IOS);
	assert_true(a.layout.handles[N_IOS - 1] == LEGACY(3 + N_IOS));
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof path, "/old/n%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, &a), 0);
		for (uint32_t s = 0; s <= a.layout.count; s++) {
			uint64_t h = s ? a.layout.handles[s - 1] : a.handle;

			assert_true(h != 0);
			assert_false(h >= LEGACY(0) && h < LEGACY(LEGACY_NEXT));
		}
	}
	assert_int_equal(mds_unlink(f->st, &ROOT, "/old/f", &removed), 0);
	assert_int_equal(intents(f->st, in), 1);
	assert_true(in[0].file == LEGACY(3) && in[0].count == N_IOS);
	assert_true(in[0].handles[0] == LEGACY(4));
	reopen(f, N_IOS);
	lookup_ok(f->st, "/old/n199", &a);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/old"), -ENOTEMPTY);
}

static void test_persistence(void **state)
{
	struct fx *f = *state;
	enum { N = 200 };
	struct mds_attr a[N], b, d;
	char path[64];
	uint64_t n;

	assert_int_equal(mds_mkdir(f->st, &U1, "/p", 0750, NULL), 0);
	assert_int_equal(mds_set_dir_layout(f->st, &U1, "/p", 1 << 20, 2), 0);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof path, "/p/file-%d", i);
		assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = path, .mode = 0640, .how = MDS_CREATE_EXCLUSIVE, .stripe_count = (i % N_IOS) + 1 },
				    &a[i], NULL), 0);
	}
	assert_int_equal(mds_rename(f->st, &U1, "/p/file-0", "/p/renamed",
				    NULL, NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/p/file-1", NULL), 0);
	reopen(f, N_IOS);
	lookup_ok(f->st, "/p", &d);
	assert_int_equal(d.nentries, N - 1);
	assert_int_equal(d.mode, 0750);
	assert_int_equal(d.uid, 1000);
	assert_true(d.has_layout);
	assert_int_equal(d.layout.strip_size, 1 << 20);
	assert_int_equal(d.layout.count, 2);
	lookup_ok(f->st, "/p/renamed", &b);
	assert_int_equal(b.handle, a[0].handle);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/p/file-1", &b), -ENOENT);
	for (int i = 2; i < N; i++) {
		snprintf(path, sizeof path, "/p/file-%d", i);
		lookup_ok(f->st, path, &b);
		a[i].ctime_ns = b.ctime_ns;
		assert_memory_equal(&a[i], &b, sizeof b);
	}
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 1 + 1 + N - 1);
}

/* A record written before mtime_set existed (version 1: no trailing
 * mtime_set) still reads, with mtime_set = mtime. */
static void test_attr_version1(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b;
	unsigned char key[9];
	leveldb_options_t *opts;
	leveldb_readoptions_t *ro;
	leveldb_writeoptions_t *wo;
	leveldb_t *db;
	char *err = NULL, *val;
	size_t vlen;

	assert_int_equal(mkfile(f->st, &U1, "/old", &a), 0);
	mds_store_close(f->st);
	f->st = NULL;
	key[0] = 'A';
	for (int i = 0; i < 8; i++)
		key[1 + i] = (unsigned char)(a.handle >> (56 - 8 * i));
	opts = leveldb_options_create();
	ro = leveldb_readoptions_create();
	wo = leveldb_writeoptions_create();
	db = leveldb_open(opts, f->dir, &err);
	assert_null(err);
	val = leveldb_get(db, ro, (char *)key, sizeof key, &vlen, &err);
	assert_null(err);
	assert_non_null(val);
	assert_int_equal((unsigned char)val[0], 2);
	val[0] = 1;
	leveldb_put(db, wo, (char *)key, sizeof key, val, vlen - 8, &err);
	assert_null(err);
	leveldb_free(val);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_readoptions_destroy(ro);
	leveldb_options_destroy(opts);
	reopen(f, N_IOS);
	lookup_ok(f->st, "/old", &b);
	assert_true(b.mtime_set_ns == b.mtime_ns);
	assert_memory_equal(&a, &b, sizeof a);
}

/* ---- layouts ---- */

static void check_servers(const struct mds_attr *a)
{
	uint32_t first = a->layout.servers[0];

	for (uint32_t i = 0; i < a->layout.count; i++) {
		assert_int_equal(a->layout.servers[i], (first + i) % N_IOS);
		assert_true(a->layout.handles[i] != a->handle);
		for (uint32_t j = 0; j < i; j++)
			assert_true(a->layout.handles[i] !=
				    a->layout.handles[j]);
	}
}

static void test_layouts(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, d;

	/* default: all storage daemons, default strip */
	assert_int_equal(mkfile(f->st, &ROOT, "/def", &a), 0);
	assert_true(a.has_layout);
	assert_int_equal(a.layout.strip_size, MDS_DEFAULT_STRIP);
	assert_int_equal(a.layout.count, N_IOS);
	check_servers(&a);
	/* explicit */
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/exp", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .strip_size = 1 << 20, .stripe_count = 2 },
				    &a, NULL), 0);
	assert_int_equal(a.layout.strip_size, 1 << 20);
	assert_int_equal(a.layout.count, 2);
	check_servers(&a);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/too", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .stripe_count = N_IOS + 1 },
				    &a, NULL), -EINVAL);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/too", &a), -ENOENT);

	/* directory defaults */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d", 131072, 0), 0);
	lookup_ok(f->st, "/d", &d);
	assert_true(d.has_layout);
	assert_int_equal(d.layout.strip_size, 131072);
	assert_int_equal(d.layout.count, 0);   /* still inherited */
	assert_int_equal(mkfile(f->st, &ROOT, "/d/a", &a), 0);
	assert_int_equal(a.layout.strip_size, 131072);
	assert_int_equal(a.layout.count, N_IOS);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d", 0, 3), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/b", &a), 0);
	assert_int_equal(a.layout.strip_size, 131072);   /* kept */
	assert_int_equal(a.layout.count, 3);
	check_servers(&a);
	/* arguments win over the default, field by field */
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/d/c", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .strip_size = 4096 },
				    &a, NULL), 0);
	assert_int_equal(a.layout.strip_size, 4096);
	assert_int_equal(a.layout.count, 3);
	/* the caller's default strip (its config) comes after the
	 * directory's, before ours */
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/d/e", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .default_strip = 8192 },
				    &a, NULL), 0);
	assert_int_equal(a.layout.strip_size, 131072);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/d/g", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .strip_size = 4096, .default_strip = 8192 },
				    &a, NULL), 0);
	assert_int_equal(a.layout.strip_size, 4096);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/e", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .default_strip = 8192 },
				    &a, NULL), 0);
	assert_int_equal(a.layout.strip_size, 8192);
	assert_int_equal(mkfile(f->st, &ROOT, "/e0", &a), 0);
	assert_int_equal(a.layout.strip_size, MDS_DEFAULT_STRIP);
	/* a subdirectory starts with its parent's default */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d/sub", 0755, &d), 0);
	assert_true(d.has_layout);
	/* cleared (setstripe -d): its files take the default again; only
	 * the owner or root may, and only on a directory */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d/cleared", 0755, NULL), 0);
	assert_int_equal(mds_clear_dir_layout(f->st, &U1, "/d/cleared"), -EPERM);
	assert_int_equal(mds_clear_dir_layout(f->st, &ROOT, "/d/e"), -ENOTDIR);
	assert_int_equal(mds_clear_dir_layout(f->st, &ROOT, "/d/cleared"), 0);
	lookup_ok(f->st, "/d/cleared", &d);
	assert_false(d.has_layout);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/cleared/f", &a), 0);
	assert_int_equal(a.layout.strip_size, MDS_DEFAULT_STRIP);
	assert_int_equal(a.layout.count, N_IOS);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/sub/f", &a), 0);
	assert_int_equal(a.layout.strip_size, 131072);
	assert_int_equal(a.layout.count, 3);
	/* bad defaults and permissions */
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d", 0, N_IOS + 1),
			 -EINVAL);
	assert_int_equal(mds_set_dir_layout(f->st, &U1, "/d", 0, 1), -EPERM);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/def", 0, 1),
			 -ENOTDIR);
	lookup_ok(f->st, "/d", &d);
	assert_int_equal(d.layout.count, 3);

	/* The strip size limit (4 GiB): `tessera setstripe -s 4194304T` made
	 * 2^62-byte strips whose rows wrapped to 0, and reads divided by
	 * it. Refused whichever way it comes, with the limit named. */
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d", 1ull << 62, 4), -EINVAL);
	assert_non_null(strstr(mds_store_errmsg(f->st), "strip size 4611686018427387904 above "
			       "the limit of 4 GiB"));
	lookup_ok(f->st, "/d", &d);
	assert_int_equal(d.layout.strip_size, 131072);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d", 4ull << 30, 0), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/huge", &a), 0);
	assert_int_equal(a.layout.strip_size, 4ull << 30);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/big", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .strip_size = (4ull << 30) + 1 },
				    &a, NULL), -EINVAL);
	assert_non_null(strstr(mds_store_errmsg(f->st), "create /big: layout (strip size "
			       "4294967297, stripe count 4): strip size above the limit of 4 GiB"));
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/big", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .default_strip = 1ull << 62 },
				    &a, NULL),
			 -EINVAL);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/big", &a), -ENOENT);
}

static void test_layout_rotation(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;
	char path[32];
	uint32_t prev = 0;
	int used[N_IOS] = { 0 };

	for (int i = 0; i < 4 * N_IOS; i++) {
		snprintf(path, sizeof path, "/s%d", i);
		assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = path, .mode = 0644, .how = MDS_CREATE_EXCLUSIVE, .stripe_count = 1 },
				    &a, NULL), 0);
		assert_int_equal(a.layout.count, 1);
		if (i)
			assert_int_equal(a.layout.servers[0],
					 (prev + 1) % N_IOS);
		prev = a.layout.servers[0];
		used[prev]++;
	}
	for (int i = 0; i < N_IOS; i++)
		assert_int_equal(used[i], 4);
}

static void test_layout_many_ios(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;

	/* more storage daemons than a file may use */
	reopen(f, TP_MAX_STRIPE + 44);
	assert_int_equal(mkfile(f->st, &ROOT, "/wide", &a), 0);
	assert_int_equal(a.layout.count, TP_MAX_STRIPE);
	lookup_ok(f->st, "/wide", &a);
	assert_int_equal(a.layout.count, TP_MAX_STRIPE);
	for (uint32_t i = 1; i < a.layout.count; i++)
		assert_int_equal(a.layout.servers[i],
				 (a.layout.servers[0] + i) % (TP_MAX_STRIPE + 44));
	/* fewer storage daemons than an inherited default asks for */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d", 0, 200), 0);
	reopen(f, 2);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/f", &a), 0);
	assert_int_equal(a.layout.count, 2);
}

/* ---- permissions ---- */

static void test_perm_create_lookup(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;

	assert_int_equal(mds_mkdir(f->st, &U1, "/home", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &U3, "/home/x", NULL), -EACCES);
	assert_int_equal(mds_mkdir(f->st, &U3, "/home/x", 0755, NULL), -EACCES);
	assert_int_equal(mkfile(f->st, &U1, "/home/x", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U3, "/home/x", NULL), -EACCES);
	assert_int_equal(mds_rename(f->st, &U3, "/home/x", "/y", NULL, NULL),
			 -EACCES);
	lookup_ok(f->st, "/home/x", &a);
	assert_int_equal(mds_lookup(f->st, &U3, "/home/x", &a), 0);

	/* no search permission */
	assert_int_equal(mds_mkdir(f->st, &U1, "/home/priv", 0700, NULL), 0);
	assert_int_equal(mkfile(f->st, &U1, "/home/priv/f", NULL), 0);
	assert_int_equal(mds_lookup(f->st, &U3, "/home/priv/f", &a), -EACCES);
	assert_int_equal(mds_lookup(f->st, &U3, "/home/priv", &a), 0);
	assert_int_equal(mds_lookup(f->st, &U1, "/home/priv/f", &a), 0);
	/* the owner class decides for the owner, even if others may */
	assert_int_equal(mds_mkdir(f->st, &U1, "/home/odd", 0077, NULL), 0);
	assert_int_equal(mkfile(f->st, &U1, "/home/odd/f", NULL), -EACCES);
	assert_int_equal(mkfile(f->st, &U3, "/home/odd/f", NULL), 0);

	/* root may do anything */
	assert_int_equal(mkfile(f->st, &ROOT, "/home/priv/r", NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &U1, "/home/none", 0, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/home/none/r", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/home/none/r", NULL), 0);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/home/none"), 0);
}

static void test_perm_group(void **state)
{
	struct fx *f = *state;
	struct mds_attr in, a;

	memset(&in, 0, sizeof in);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/grp", 0770, NULL), 0);
	in.gid = 500;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/grp", MDS_SET_GID, &in,
				     &a), 0);
	assert_int_equal(a.gid, 500);
	/* U2 is in group 500 through its supplementary gids */
	assert_int_equal(mkfile(f->st, &U2, "/grp/f", &a), 0);
	assert_int_equal(a.gid, 2000);   /* primary group */
	assert_int_equal(mkfile(f->st, &U1, "/grp/g", NULL), -EACCES);
	assert_int_equal(mds_lookup(f->st, &U1, "/grp/f", &a), -EACCES);
	/* a set-group-ID directory passes its group on */
	in.mode = 02770;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/grp", MDS_SET_MODE, &in,
				     NULL), 0);
	assert_int_equal(mkfile(f->st, &U2, "/grp/h", &a), 0);
	assert_int_equal(a.gid, 500);
	assert_int_equal(mds_mkdir(f->st, &U2, "/grp/sub", 0750, &a), 0);
	assert_int_equal(a.gid, 500);
	assert_int_equal(a.mode, 02750);
}

static void test_perm_setattr(void **state)
{
	struct fx *f = *state;
	struct mds_attr in, a;

	memset(&in, 0, sizeof in);
	assert_int_equal(mds_create(f->st, &U2, &(struct mds_create_req){ .path = "/f", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE },
				    &a, NULL),
			 0);
	/* chmod: owner or root only */
	in.mode = 0600;
	assert_int_equal(mds_setattr(f->st, &U1, "/f", MDS_SET_MODE, &in, &a),
			 -EPERM);
	assert_int_equal(mds_setattr(f->st, &U2, "/f", MDS_SET_MODE, &in, &a),
			 0);
	assert_int_equal(a.mode, 0600);
	in.mode = 0664;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/f", MDS_SET_MODE, &in, &a),
			 0);
	assert_int_equal(a.mode, 0664);
	/* chown: root only */
	in.uid = 1000;
	assert_int_equal(mds_setattr(f->st, &U2, "/f", MDS_SET_UID, &in, &a),
			 -EPERM);
	assert_int_equal(mds_setattr(f->st, &U1, "/f", MDS_SET_UID, &in, &a),
			 -EPERM);
	in.uid = 2000;   /* to itself: allowed */
	assert_int_equal(mds_setattr(f->st, &U2, "/f", MDS_SET_UID, &in, &a),
			 0);
	/* chgrp: the owner to one of its groups */
	in.gid = 500;
	assert_int_equal(mds_setattr(f->st, &U2, "/f", MDS_SET_GID, &in, &a),
			 0);
	assert_int_equal(a.gid, 500);
	in.gid = 1000;
	assert_int_equal(mds_setattr(f->st, &U2, "/f", MDS_SET_GID, &in, &a),
			 -EPERM);
	assert_int_equal(mds_setattr(f->st, &U1, "/f", MDS_SET_GID, &in, &a),
			 -EPERM);
	in.uid = 1000;
	in.gid = 1000;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/f",
				     MDS_SET_UID | MDS_SET_GID, &in, &a), 0);
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1000);
	/* a failed setattr changes nothing */
	in.mode = 0;
	assert_int_equal(mds_setattr(f->st, &U2, "/f",
				     MDS_SET_ATIME_NOW | MDS_SET_MODE, &in, &a),
			 -EPERM);
	lookup_ok(f->st, "/f", &a);
	assert_int_equal(a.mode, 0664);
}

static void test_setattr_times_size(void **state)
{
	struct fx *f = *state;
	struct mds_attr in, a, b;
	int64_t t0;

	memset(&in, 0, sizeof in);
	assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = "/f", .mode = 0666, .how = MDS_CREATE_EXCLUSIVE },
				    &a, NULL),
			 0);
	/* storage objects count for mtime once written after creation */
	assert_true(a.mtime_set_ns == a.mtime_ns);
	/* explicit times: owner only */
	in.atime_ns = 1000000000123;
	in.mtime_ns = 2000000000456;
	assert_int_equal(mds_setattr(f->st, &U3, "/f",
				     MDS_SET_ATIME | MDS_SET_MTIME, &in, &b),
			 -EPERM);
	t0 = now_ns();
	assert_int_equal(mds_setattr(f->st, &U1, "/f",
				     MDS_SET_ATIME | MDS_SET_MTIME, &in, &b), 0);
	assert_int_equal(b.atime_ns, 1000000000123);
	assert_int_equal(b.mtime_ns, 2000000000456);
	assert_true(b.ctime_ns >= t0);
	/* objects written before now no longer speak for mtime */
	assert_true(b.mtime_set_ns >= t0);
	lookup_ok(f->st, "/f", &a);
	assert_memory_equal(&a, &b, sizeof a);
	/* an atime alone leaves that be */
	assert_int_equal(mds_setattr(f->st, &U1, "/f", MDS_SET_ATIME, &in, &b),
			 0);
	assert_true(b.mtime_set_ns == a.mtime_set_ns);
	/* "now": anyone who may write */
	t0 = now_ns();
	assert_int_equal(mds_setattr(f->st, &U3, "/f",
				     MDS_SET_ATIME_NOW | MDS_SET_MTIME_NOW, &in,
				     &b), 0);
	assert_true(b.atime_ns >= t0 && b.mtime_ns >= t0);
	assert_true(b.mtime_set_ns >= t0);
	in.mode = 0644;
	t0 = b.mtime_set_ns;
	assert_int_equal(mds_setattr(f->st, &U1, "/f", MDS_SET_MODE, &in, &b),
			 0);
	/* chmod: the objects' times still count */
	assert_true(b.mtime_set_ns == t0);
	assert_int_equal(mds_setattr(f->st, &U3, "/f", MDS_SET_MTIME_NOW, &in,
				     &b), -EACCES);
	/* size: needs write permission; changes mtime */
	in.size = 123456789;
	assert_int_equal(mds_setattr(f->st, &U3, "/f", MDS_SET_SIZE, &in, &b),
			 -EACCES);
	t0 = now_ns();
	assert_int_equal(mds_setattr(f->st, &U1, "/f", MDS_SET_SIZE, &in, &b),
			 0);
	assert_int_equal(b.size, 123456789);
	assert_true(b.mtime_ns >= t0);
	assert_true(b.mtime_set_ns >= t0);
	in.size = 7;
	in.mtime_ns = 5;
	assert_int_equal(mds_setattr(f->st, &U1, "/f",
				     MDS_SET_SIZE | MDS_SET_MTIME, &in, &b), 0);
	assert_int_equal(b.size, 7);
	assert_int_equal(b.mtime_ns, 5);
	lookup_ok(f->st, "/f", &a);
	assert_int_equal(a.size, 7);
	/* directories have no size */
	assert_int_equal(mds_setattr(f->st, &ROOT, "/", MDS_SET_SIZE, &in, &b),
			 -EISDIR);
	/* nothing valid: just the attributes */
	assert_int_equal(mds_setattr(f->st, &U3, "/f", 0, &in, &b), 0);
	assert_memory_equal(&a, &b, sizeof a);
}

static void test_statfs(void **state)
{
	struct fx *f = *state;
	uint64_t n;
	char path[32];

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof path, "/d/%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
	}
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 12);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/d/0", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d/1", "/d/2", NULL, NULL),
			 0);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 10);
	/* failures do not count */
	assert_int_equal(mkfile(f->st, &ROOT, "/d/2", NULL), -EEXIST);
	reopen(f, N_IOS);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 10);
}

/* ---- purge intents ---- */

/* Counts the changes a deferred store announces (mds_store_defer_sync). */
static void count_pending(void *arg)
{
	(*(int *)arg)++;
}

/* What a change costs in synced writes: one per change by default, none
 * for an acknowledged purge; deferred (the daemon's group commit), none
 * until the commit, which is one for all, and nothing is lost by a close
 * and reopen after it. */
static void test_group_commit(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, removed;
	static struct mds_intent in[16];
	char path[32];
	uint64_t before;
	int pending = 0;

	assert_int_equal(mkfile(f->st, &ROOT, "/a", &a), 0);
	before = mds_store_synced_writes(f->st);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/a", &removed), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	for (uint32_t s = 0; s < N_IOS; s++)
		assert_int_equal(mds_intent_done(f->st, a.handle, s), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	assert_int_equal(intents(f->st, in), 0);

	mds_store_defer_sync(f->st, count_pending, &pending);
	before = mds_store_synced_writes(f->st);
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "/g%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
	}
	for (int i = 0; i < 10; i += 2) {
		snprintf(path, sizeof(path), "/g%d", i);
		assert_int_equal(mds_unlink(f->st, &ROOT, path, &removed), 0);
	}
	assert_true(pending >= 15);                /* each change announced */
	assert_true(mds_store_synced_writes(f->st) == before);
	assert_int_equal(mds_store_commit(f->st), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	assert_int_equal(mds_store_commit(f->st), 0); /* nothing pending: no write */
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	reopen(f, N_IOS);
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "/g%d", i);
		assert_int_equal(mds_lookup(f->st, &ROOT, path, &a), i % 2 ? 0 : -ENOENT);
	}
	assert_int_equal(intents(f->st, in), 5);
}

/* Deferred changes larger than LevelDB's memory table (4 MiB by
 * default): LevelDB switches to a new log on the way, so the commit syncs
 * the older one too (mds_store_commit); every change is there after a
 * reopen. Whether the older log was still there to sync depends on
 * LevelDB's compaction thread; the commit succeeds either way. */
static void test_group_commit_log_switch(void **state)
{
	struct fx *f = *state;
	static char value[MDS_XATTR_VALUE_MAX], got[MDS_XATTR_VALUE_MAX];
	char path[32], name[24];
	size_t size;
	int pending = 0;

	mds_store_defer_sync(f->st, count_pending, &pending);
	for (int i = 0; i < 24; i++) {
		snprintf(path, sizeof(path), "/big%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
		for (int k = 0; k < 3; k++) {
			memset(value, 'a' + (i + k) % 26, sizeof(value));
			snprintf(name, sizeof(name), "user.v%d", k);
			assert_int_equal(mds_xattr_set(f->st, &ROOT, path, MDS_FOLLOW, name,
						       strlen(name), value, sizeof(value),
						       MDS_XATTR_ANY), 0);
		}
	}
	assert_int_equal(mds_store_commit(f->st), 0);
	reopen(f, N_IOS);
	for (int i = 0; i < 24; i++)
		for (int k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "/big%d", i);
			snprintf(name, sizeof(name), "user.v%d", k);
			assert_int_equal(mds_xattr_get(f->st, &ROOT, path, MDS_FOLLOW, name,
						       strlen(name), got, sizeof(got), &size), 0);
			assert_int_equal(size, sizeof(value));
			assert_int_equal(got[0], 'a' + (i + k) % 26);
			assert_int_equal(got[sizeof(got) - 1], 'a' + (i + k) % 26);
		}
}

static void test_intent_unlink_rename(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b, removed, replaced;
	static struct mds_intent in[16];
	int replaced_file = 0;

	assert_int_equal(mkfile(f->st, &ROOT, "/a", &a), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/b", &b), 0);
	assert_int_equal(intents(f->st, in), 0);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/a", &removed), 0);
	/* the name's removal and the intent are one batch: reopen (a crash
	 * right after the reply) and the intent is there, naming every object */
	reopen(f, N_IOS);
	assert_int_equal(intents(f->st, in), 1);
	assert_true(in[0].file == a.handle);
	assert_int_equal(in[0].count, a.layout.count);
	for (uint32_t i = 0; i < a.layout.count; i++) {
		assert_int_equal(in[0].servers[i], a.layout.servers[i]);
		assert_true(in[0].handles[i] == a.layout.handles[i]);
	}
	/* rename over a file: its objects get an intent too */
	assert_int_equal(mkfile(f->st, &ROOT, "/c", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/c", "/b", &replaced, &replaced_file), 0);
	assert_int_equal(replaced_file, 1);
	assert_int_equal(intents(f->st, in), 2);
	/* in handle order, which is not the order of creation */
	assert_true(in[a.handle < b.handle].file == b.handle);
	/* acknowledgements shrink an intent server by server, then drop it */
	for (uint32_t s = 0; s < N_IOS; s++) {
		assert_int_equal(mds_intent_done(f->st, a.handle, s), 0);
		assert_int_equal(mds_intent_done(f->st, a.handle, s), 0); /* twice: fine */
		reopen(f, N_IOS);
		uint32_t n = intents(f->st, in);
		if (s + 1 < N_IOS) {
			const struct mds_intent *ia = &in[a.handle > b.handle];

			assert_int_equal(n, 2);
			assert_true(ia->file == a.handle);
			for (uint32_t i = 0; i < ia->count; i++)
				assert_true(ia->servers[i] > s);
		} else {
			assert_int_equal(n, 1);
			assert_true(in[0].file == b.handle);
		}
	}
	/* directories and failed removals record nothing */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d"), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/ro", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/ro/x", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/ro/x", &removed), -EACCES);
	assert_int_equal(intents(f->st, in), 1);
}

static void test_file_list_paging(void **state)
{
	struct fx *f = *state;
	static struct mds_attr got[8];
	struct mds_attr a;
	uint64_t after = 0, made[20];
	uint32_t n, total = 0;
	int eof = 0, resume = 0;
	char path[32];

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/dir", 0755, NULL), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof(path), "/dir/f%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, &a), 0);
		made[i] = a.handle;
	}
	qsort(made, 20, sizeof(*made), u64_cmp); /* the listing is in handle order */
	while (!eof) {
		assert_int_equal(mds_file_list(f->st, resume ? &after : NULL, 8, got, &n, &eof), 0);
		assert_true(n <= 8);
		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(got[i].type, MDS_FILE); /* no directories */
			assert_true(got[i].handle == made[total + i]);
			assert_true(got[i].has_layout);
		}
		total += n;
		if (n) {
			after = got[n - 1].handle;
			resume = 1;
		}
	}
	assert_int_equal(total, 20);
}

/* The sticky bit: in "/" (1777) and any sticky directory, another
 * user's entry cannot be removed or renamed (away or over), the entry's
 * owner, the directory's owner and root can. */
static void test_sticky(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, r;
	int replaced;

	assert_int_equal(mkfile(f->st, &U1, "/u1file", NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &U1, "/u1dir", 0777, &a), 0);
	assert_int_equal(mds_unlink(f->st, &U2, "/u1file", &r), -EPERM);
	assert_non_null(strstr(mds_store_errmsg(f->st), "sticky"));
	assert_int_equal(mds_rmdir(f->st, &U2, "/u1dir"), -EPERM);
	assert_int_equal(mds_rename(f->st, &U2, "/u1file", "/stolen", &r, &replaced), -EPERM);
	assert_int_equal(mkfile(f->st, &U2, "/u2file", NULL), 0);
	assert_int_equal(mds_rename(f->st, &U2, "/u2file", "/u1file", &r, &replaced), -EPERM);
	lookup_ok(f->st, "/u1file", &a);
	assert_int_equal(a.uid, U1.uid);
	lookup_ok(f->st, "/u1dir", &a);
	/* a sticky directory of U3's: U3 (its owner) may remove U1's entry */
	assert_int_equal(mds_mkdir(f->st, &U3, "/t", 01777, &a), 0);
	assert_int_equal(a.mode, 01777);
	assert_int_equal(mkfile(f->st, &U1, "/t/a", NULL), 0);
	assert_int_equal(mkfile(f->st, &U1, "/t/b", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U2, "/t/a", &r), -EPERM);
	assert_int_equal(mds_unlink(f->st, &U3, "/t/a", &r), 0);
	/* the owner and root may */
	assert_int_equal(mds_rename(f->st, &U1, "/t/b", "/t/c", &r, &replaced), 0);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/t/c", &r), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/u1file", &r), 0);
	assert_int_equal(mds_rmdir(f->st, &U1, "/u1dir"), 0);
	/* without the bit, write permission on the directory is enough */
	assert_int_equal(mds_mkdir(f->st, &U3, "/open", 0777, &a), 0);
	assert_int_equal(mkfile(f->st, &U1, "/open/x", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U2, "/open/x", &r), 0);
}

/* ---- other file types: symbolic links, hard links, special files ---- */

/* Open the closed store's database raw (the test edits records). */
static leveldb_t *raw_open(struct fx *f)
{
	leveldb_options_t *opts = leveldb_options_create();
	char *err = NULL;
	leveldb_t *db;

	mds_store_close(f->st);
	f->st = NULL;
	db = leveldb_open(opts, f->dir, &err);
	assert_null(err);
	leveldb_options_destroy(opts);
	return db;
}

static void raw_key(unsigned char *key, char kind, uint64_t h)
{
	key[0] = (unsigned char)kind;
	for (int i = 0; i < 8; i++)
		key[1 + i] = (unsigned char)(h >> (56 - 8 * i));
}

/* Whether record kind+h exists. */
static int raw_has(leveldb_t *db, char kind, uint64_t h)
{
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	unsigned char key[9];
	char *err = NULL, *val;
	size_t vlen;

	raw_key(key, kind, h);
	val = leveldb_get(db, ro, (char *)key, sizeof key, &vlen, &err);
	assert_null(err);
	leveldb_readoptions_destroy(ro);
	leveldb_free(val);
	return val != NULL;
}

static void test_symlink_basic(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, l, t;
	char buf[MDS_TARGET_MAX + 1], big[MDS_TARGET_MAX + 2];
	uint64_t n;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d/e", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/e/f", &t), 0);
	assert_int_equal(mds_symlink(f->st, &U1, "/rel", "d/e/f", &l), 0);
	assert_int_equal(l.type, MDS_SYMLINK);
	assert_int_equal(l.mode, 0777);
	assert_int_equal(l.uid, U1.uid);
	assert_int_equal(l.size, 5);
	assert_int_equal(l.has_layout, 0);
	/* lookup follows; the NOFOLLOW lookup is the link itself */
	lookup_ok(f->st, "/rel", &a);
	assert_true(a.handle == t.handle);
	assert_int_equal(mds_lookup_follow(f->st, &ROOT, "/rel", MDS_NOFOLLOW, &a), 0);
	assert_true(a.handle == l.handle);
	assert_int_equal(a.type, MDS_SYMLINK);
	assert_int_equal(mds_readlink(f->st, &U2, "/rel", buf, sizeof buf), 0);
	assert_string_equal(buf, "d/e/f");
	/* absolute targets are Tessera paths; "." and ".." mean what they do */
	assert_int_equal(mds_symlink(f->st, &ROOT, "/d/e/abs", "/d/e/f", NULL), 0);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/d/e/up", "../../d/./e//f", NULL), 0);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/d/toe", "e", NULL), 0);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/d/e/top", "..", NULL), 0);
	lookup_ok(f->st, "/d/e/abs", &a);
	assert_true(a.handle == t.handle);
	lookup_ok(f->st, "/d/e/up", &a);
	assert_true(a.handle == t.handle);
	/* links in the middle of a path are always followed */
	assert_int_equal(mds_lookup_follow(f->st, &ROOT, "/d/toe/f", MDS_NOFOLLOW, &a), 0);
	assert_true(a.handle == t.handle);
	lookup_ok(f->st, "/d/e/top/e/top/toe/f", &a);
	assert_true(a.handle == t.handle);
	lookup_ok(f->st, "/d/e/top", &a);
	assert_int_equal(a.type, MDS_DIR);
	/* a file under a link to a directory: created in the target */
	assert_int_equal(mkfile(f->st, &ROOT, "/d/toe/g", &a), 0);
	lookup_ok(f->st, "/d/e/g", &t);
	assert_true(a.handle == t.handle);
	/* refusals */
	assert_int_equal(mds_readlink(f->st, &ROOT, "/d", buf, sizeof buf), -EINVAL);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/rel", "x", NULL), -EEXIST);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/d/e", "x", NULL), -EEXIST);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/empty", "", NULL), -ENOENT);
	memset(big, 'x', MDS_TARGET_MAX + 1);
	big[MDS_TARGET_MAX + 1] = '\0';
	assert_int_equal(mds_symlink(f->st, &ROOT, "/big", big, NULL), -ENAMETOOLONG);
	big[MDS_TARGET_MAX] = '\0';
	assert_int_equal(mds_symlink(f->st, &ROOT, "/big", big, NULL), 0);
	assert_int_equal(mds_readlink(f->st, &ROOT, "/big", buf, sizeof buf), 0);
	assert_int_equal(strlen(buf), MDS_TARGET_MAX);
	assert_int_equal(mds_symlink(f->st, &U1, "/d/no", "x", NULL), -EACCES);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/rel", 0755, NULL), -EEXIST);
	/* a dangling link: lookup ENOENT, the link itself is there */
	assert_int_equal(mds_symlink(f->st, &ROOT, "/dang", "/nowhere", NULL), 0);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/dang", &a), -ENOENT);
	assert_int_equal(mds_lookup_follow(f->st, &ROOT, "/dang", MDS_NOFOLLOW, &a), 0);
	/* a link to a file in the middle of a path */
	assert_int_equal(mds_lookup(f->st, &ROOT, "/rel/x", &a), -ENOTDIR);
	/* chmod of a link itself: no (Linux's lchmod) */
	a.mode = 0700;
	assert_int_equal(mds_setattr_follow(f->st, &ROOT, "/rel", MDS_NOFOLLOW, MDS_SET_MODE,
					    &a, &a), -EOPNOTSUPP);
	/* unlink removes the link (and its "S" record), not the target */
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/rel", &a), 0);
	assert_int_equal(a.type, MDS_SYMLINK);
	assert_int_equal(a.nlink, 0);
	assert_int_equal(mds_statfs(f->st, &a.nentries), 0);
	assert_true(a.nentries == n - 1);
	lookup_ok(f->st, "/d/e/f", &a);
	leveldb_t *db = raw_open(f);
	assert_false(raw_has(db, 'S', l.handle));
	assert_false(raw_has(db, 'A', l.handle));
	leveldb_close(db);
	reopen(f, N_IOS);
	assert_int_equal(mds_readlink(f->st, &ROOT, "/d/e/abs", buf, sizeof buf), 0);
	assert_string_equal(buf, "/d/e/f");
}

static void test_symlink_loops(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;
	char name[32], target[32];

	assert_int_equal(mds_symlink(f->st, &ROOT, "/self", "self", NULL), 0);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/self", &a), -ELOOP);
	assert_non_null(strstr(mds_store_errmsg(f->st), "symbolic links"));
	assert_int_equal(mds_lookup(f->st, &ROOT, "/self/x", &a), -ELOOP);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/a", "/b", NULL), 0);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/b", "a", NULL), 0);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/a", &a), -ELOOP);
	assert_int_equal(mkfile(f->st, &ROOT, "/a", NULL), -EEXIST);
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){ .path = "/b/x",
			 .mode = 0644 }, &a, NULL), -ELOOP);
	/* a chain of 40 links is followed, 41 is a loop */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/c", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/c/l0", NULL), 0);
	for (int i = 1; i <= 41; i++) {
		snprintf(name, sizeof name, "/c/l%d", i);
		snprintf(target, sizeof target, "l%d", i - 1);
		assert_int_equal(mds_symlink(f->st, &ROOT, name, target, NULL), 0);
	}
	lookup_ok(f->st, "/c/l40", &a);
	assert_int_equal(a.type, MDS_FILE);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/c/l41", &a), -ELOOP);
}

/* O_CREAT follows a link (a dangling one: the target is made), O_EXCL
 * does not, O_NOFOLLOW refuses. */
static void test_create_through_symlink(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b;
	int created = -1;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0777, NULL), 0);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/l", "d/t", NULL), 0);
	assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = "/l",
			 .mode = 0644 }, &a, &created), 0);
	assert_int_equal(created, 1);
	lookup_ok(f->st, "/d/t", &b);
	assert_true(a.handle == b.handle);
	assert_int_equal(b.uid, U1.uid);
	assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = "/l",
			 .mode = 0644 }, &a, &created), 0);
	assert_int_equal(created, 0);
	assert_true(a.handle == b.handle);
	assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = "/l",
			 .mode = 0644, .follow = MDS_NOFOLLOW }, &a, &created), -ELOOP);
	assert_int_equal(mkfile(f->st, &ROOT, "/l", NULL), -EEXIST);
}

/* Set the names-count of path's file in the record itself (no call makes
 * 65000 names quickly). */
static void raw_set_nlink(struct fx *f, uint64_t h, uint32_t nlink)
{
	leveldb_t *db = raw_open(f);
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	unsigned char key[9];
	char *err = NULL, *val;
	size_t vlen;

	raw_key(key, 'A', h);
	val = leveldb_get(db, ro, (char *)key, sizeof key, &vlen, &err);
	assert_non_null(val);
	/* version(1) type(1) mode(4) uid(4) gid(4), then nlink */
	for (int i = 0; i < 4; i++)
		val[14 + i] = (char)(nlink >> (24 - 8 * i));
	leveldb_put(db, wo, (char *)key, sizeof key, val, vlen, &err);
	assert_null(err);
	leveldb_free(val);
	leveldb_writeoptions_destroy(wo);
	leveldb_readoptions_destroy(ro);
	leveldb_close(db);
	reopen(f, N_IOS);
}

static void test_hard_links(void **state)
{
	struct fx *f = *state;
	static struct mds_intent in[8];
	struct mds_attr a, b, r;
	uint64_t n0, n;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0777, NULL), 0);
	assert_int_equal(mkfile(f->st, &U1, "/d/f", &a), 0);
	assert_int_equal(mds_statfs(f->st, &n0), 0);
	assert_int_equal(mds_link(f->st, &U1, "/d/f", "/g", &b), 0);
	assert_int_equal(b.nlink, 2);
	assert_true(b.handle == a.handle);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, n0 + 1);
	lookup_ok(f->st, "/g", &r);
	assert_true(r.handle == a.handle);
	assert_int_equal(r.nlink, 2);
	assert_memory_equal(&r.layout, &a.layout, sizeof a.layout);
	lookup_ok(f->st, "/", &r);
	assert_int_equal(r.nentries, 2);
	assert_int_equal(r.nlink, 3);    /* directories only */
	/* refusals */
	assert_int_equal(mds_link(f->st, &ROOT, "/d", "/d2", NULL), -EPERM);
	assert_non_null(strstr(mds_store_errmsg(f->st), "directory"));
	assert_int_equal(mds_link(f->st, &ROOT, "/", "/r2", NULL), -EPERM);
	assert_int_equal(mds_link(f->st, &ROOT, "/d/f", "/g", NULL), -EEXIST);
	assert_int_equal(mds_link(f->st, &ROOT, "/d/none", "/h", NULL), -ENOENT);
	assert_int_equal(mds_link(f->st, &ROOT, "/d/f", "/none/h", NULL), -ENOENT);
	/* one name goes: the file stays, nothing to purge */
	assert_int_equal(mds_unlink(f->st, &U1, "/d/f", &r), 0);
	assert_int_equal(r.nlink, 1);
	assert_int_equal(intents(f->st, in), 0);
	lookup_ok(f->st, "/g", &r);
	assert_int_equal(r.nlink, 1);
	reopen(f, N_IOS);
	/* the last name takes the file and its objects (intent) in one batch */
	assert_int_equal(mds_link(f->st, &U1, "/g", "/d/h", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/g", &r), 0);
	assert_int_equal(intents(f->st, in), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/d/h", &r), 0);
	assert_int_equal(r.nlink, 0);
	assert_int_equal(intents(f->st, in), 1);
	assert_true(in[0].file == a.handle);
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, n0 - 1);
	/* a link to a symbolic link is to the link itself (not followed) */
	assert_int_equal(mds_symlink(f->st, &ROOT, "/s", "/nowhere", &a), 0);
	assert_int_equal(mds_link(f->st, &ROOT, "/s", "/s2", &b), 0);
	assert_true(b.handle == a.handle);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/s", &r), 0);
	char buf[64];
	assert_int_equal(mds_readlink(f->st, &ROOT, "/s2", buf, sizeof buf), 0);
	assert_string_equal(buf, "/nowhere");
}

static void test_link_limits(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;

	assert_int_equal(mkfile(f->st, &U1, "/f", &a), 0);
	raw_set_nlink(f, a.handle, MDS_LINK_MAX - 1);
	assert_int_equal(mds_link(f->st, &U1, "/f", "/g", &a), 0);
	assert_int_equal(a.nlink, MDS_LINK_MAX);
	assert_int_equal(mds_link(f->st, &U1, "/f", "/h", NULL), -EMLINK);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/h", &a), -ENOENT);
	/* protected hard links: another user's file that U2 may not read
	 * and write gets no name from U2 (it could pin it or keep it) */
	assert_int_equal(mkfile(f->st, &U1, "/private", &a), 0);
	assert_int_equal(mds_link(f->st, &U2, "/private", "/mine", NULL), -EPERM);
	a.mode = 0666;
	assert_int_equal(mds_setattr(f->st, &U1, "/private", MDS_SET_MODE, &a, &a), 0);
	assert_int_equal(mds_link(f->st, &U2, "/private", "/mine", NULL), 0);
	a.mode = 04666;
	assert_int_equal(mds_setattr(f->st, &U1, "/private", MDS_SET_MODE, &a, &a), 0);
	assert_int_equal(mds_link(f->st, &U2, "/private", "/mine2", NULL), -EPERM);
	/* U2 may not remove U1's name in the sticky root, only its own */
	struct mds_attr r;
	assert_int_equal(mds_unlink(f->st, &U2, "/private", &r), -EPERM);
	assert_int_equal(mds_unlink(f->st, &U2, "/mine", &r), -EPERM); /* owner is U1 */
	assert_int_equal(mds_unlink(f->st, &U1, "/mine", &r), 0);
	assert_int_equal(r.nlink, 1);
}

/* rename over one name of a file with several: only that name goes */
static void test_rename_over_hard_link(void **state)
{
	struct fx *f = *state;
	static struct mds_intent in[8];
	struct mds_attr a, r;
	int replaced = -1;

	assert_int_equal(mkfile(f->st, &ROOT, "/a", &a), 0);
	assert_int_equal(mds_link(f->st, &ROOT, "/a", "/b", NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/c", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/c", "/b", &r, &replaced), 0);
	assert_int_equal(replaced, 0);
	assert_int_equal(intents(f->st, in), 0);
	lookup_ok(f->st, "/a", &r);
	assert_int_equal(r.nlink, 1);
	/* two names of one file: rename does nothing (POSIX) */
	assert_int_equal(mds_link(f->st, &ROOT, "/a", "/a2", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/a", "/a2", &r, &replaced), 0);
	lookup_ok(f->st, "/a", &r);
	lookup_ok(f->st, "/a2", &r);
	assert_int_equal(r.nlink, 2);
	/* a directory reached through a link does not move inside itself */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_symlink(f->st, &ROOT, "/ld", "d", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/d", "/ld/x", &r, &replaced), -EINVAL);
	/* renaming a link moves the link, not its target */
	assert_int_equal(mds_rename(f->st, &ROOT, "/ld", "/ld2", &r, &replaced), 0);
	assert_int_equal(mds_lookup_follow(f->st, &ROOT, "/ld2", MDS_NOFOLLOW, &r), 0);
	assert_int_equal(r.type, MDS_SYMLINK);
	lookup_ok(f->st, "/d", &r);
	/* the last name replaced: purged */
	assert_int_equal(mkfile(f->st, &ROOT, "/e", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/e", "/a2", &r, &replaced), 0);
	assert_int_equal(replaced, 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/a2", "/a", &r, &replaced), 0);
	assert_int_equal(replaced, 1);
	assert_true(r.handle == a.handle);
	assert_int_equal(intents(f->st, in), 1);
}

static void test_mknod(void **state)
{
	struct fx *f = *state;
	static struct mds_intent in[8];
	struct mds_attr a, r;

	assert_int_equal(mds_mknod(f->st, &U1, "/fifo", MDS_FIFO, 0640, 99, &a), 0);
	assert_int_equal(a.type, MDS_FIFO);
	assert_int_equal(a.mode, 0640);
	assert_true(a.rdev == 0);
	assert_int_equal(a.has_layout, 0);
	assert_int_equal(mds_mknod(f->st, &U1, "/sock", MDS_SOCKET, 0755, 0, NULL), 0);
	/* devices: root only; rdev kept */
	assert_int_equal(mds_mknod(f->st, &U1, "/null", MDS_CHARDEV, 0666, 0x103, NULL), -EPERM);
	assert_int_equal(mds_mknod(f->st, &ROOT, "/null", MDS_CHARDEV, 0666, 0x103, NULL), 0);
	assert_int_equal(mds_mknod(f->st, &ROOT, "/sda", MDS_BLOCKDEV, 0660, 0x800, NULL), 0);
	reopen(f, N_IOS);
	lookup_ok(f->st, "/null", &r);
	assert_int_equal(r.type, MDS_CHARDEV);
	assert_true(r.rdev == 0x103);
	lookup_ok(f->st, "/sda", &r);
	assert_int_equal(r.type, MDS_BLOCKDEV);
	assert_true(r.rdev == 0x800);
	lookup_ok(f->st, "/sock", &r);
	assert_int_equal(r.type, MDS_SOCKET);
	/* not through mknod: files, directories, links, unknown types */
	assert_int_equal(mds_mknod(f->st, &ROOT, "/x", MDS_FILE, 0644, 0, NULL), -EINVAL);
	assert_int_equal(mds_mknod(f->st, &ROOT, "/x", MDS_DIR, 0755, 0, NULL), -EINVAL);
	assert_int_equal(mds_mknod(f->st, &ROOT, "/x", MDS_SYMLINK, 0777, 0, NULL), -EINVAL);
	assert_int_equal(mds_mknod(f->st, &ROOT, "/x", 99, 0644, 0, NULL), -EINVAL);
	assert_int_equal(mds_mknod(f->st, &ROOT, "/fifo", MDS_FIFO, 0644, 0, NULL), -EEXIST);
	/* no size to set, no objects to purge; other attributes change */
	r.size = 10;
	assert_int_equal(mds_setattr(f->st, &U1, "/fifo", MDS_SET_SIZE, &r, &r), -EINVAL);
	r.mode = 0600;
	assert_int_equal(mds_setattr(f->st, &U1, "/fifo", MDS_SET_MODE, &r, &r), 0);
	assert_int_equal(r.mode, 0600);
	assert_int_equal(mds_link(f->st, &U1, "/fifo", "/fifo2", &r), 0);
	assert_int_equal(r.type, MDS_FIFO);
	assert_int_equal(mds_unlink(f->st, &U1, "/fifo", &r), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/fifo2", &r), 0);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/null", &r), 0);
	assert_int_equal(r.nlink, 0);
	assert_int_equal(intents(f->st, in), 0);
	/* not regular files: fsck's file list skips them */
	static struct mds_attr files[8];
	uint32_t n;
	int eof;
	assert_int_equal(mds_file_list(f->st, NULL, 8, files, &n, &eof), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_group_commit),
		T(test_group_commit_log_switch),
		T(test_open_root),
		T(test_sticky),
		T(test_mkdir_create_lookup),
		T(test_eexist),
		T(test_create_nonexclusive),
		T(test_enoent_enotdir),
		T(test_unlink_rmdir),
		T(test_bad_paths),
		T(test_rename_basic),
		T(test_rename_replace),
		T(test_readdir_paging),
		T(test_readdir_concurrent_inserts),
		T(test_readdir_perm),
		T(test_unique_handles),
		T(test_legacy_store),
		T(test_persistence),
		T(test_attr_version1),
		T(test_layouts),
		T(test_layout_rotation),
		T(test_layout_many_ios),
		T(test_perm_create_lookup),
		T(test_perm_group),
		T(test_perm_setattr),
		T(test_setattr_times_size),
		T(test_statfs),
		T(test_intent_unlink_rename),
		T(test_file_list_paging),
		T(test_symlink_basic),
		T(test_symlink_loops),
		T(test_create_through_symlink),
		T(test_hard_links),
		T(test_link_limits),
		T(test_rename_over_hard_link),
		T(test_mknod),
#undef T
	};

	return cmocka_run_group_tests_name("mds_store", tests, NULL, NULL);
}
