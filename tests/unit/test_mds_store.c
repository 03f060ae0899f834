/*
 * test_mds_store.c - the metadata namespace (server/mds_store.h): names, rename, readdir,
 * layouts and permissions,
 * against a real LevelDB in a fresh temporary directory per test
 * (mds_store_fx.h).
 */
#include "mds_store_fx.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_open_root),
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
		T(test_layouts),
		T(test_layout_rotation),
		T(test_layout_many_ios),
		T(test_perm_create_lookup),
		T(test_perm_group),
		T(test_perm_setattr),
		T(test_setattr_times_size),
		T(test_statfs),
#undef T
	};

	return cmocka_run_group_tests_name("mds_store", tests, NULL, NULL);
}
