/*
 * test_mds_store_types.c - the metadata store's other file types: symbolic links, hard links
 * and special files,
 * against a real LevelDB in a fresh temporary directory per test
 * (mds_store_fx.h).
 */
#include "mds_store_fx.h"

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

/* chown drops the set-ID bits of every type but directories (setgid
 * only with group-exec), root's chown too, as Linux's chown_common asks:
 * a mount with FUSE_HANDLE_KILLPRIV_V2 leaves it to the metadata daemon. */
static void test_chown_kills_privs_any_type(void **state)
{
	struct fx *f = *state;
	struct mds_attr r;

	assert_int_equal(mds_mknod(f->st, &ROOT, "/p", MDS_FIFO, 0755, 0, &r), 0);
	r.mode = 06755;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/p", MDS_SET_MODE, &r, &r), 0);
	assert_int_equal(r.mode & 07777, 06755);
	r.uid = 4242;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/p", MDS_SET_UID, &r, &r), 0);
	assert_int_equal(r.mode & 07777, 0755);
	/* setgid without group-exec is a locking mark, kept */
	assert_int_equal(mds_mknod(f->st, &ROOT, "/s", MDS_SOCKET, 0745, 0, &r), 0);
	r.mode = 02745;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/s", MDS_SET_MODE, &r, &r), 0);
	r.gid = 4242;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/s", MDS_SET_GID, &r, &r), 0);
	assert_int_equal(r.mode & 07777, 02745);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_symlink_basic),
		T(test_symlink_loops),
		T(test_create_through_symlink),
		T(test_hard_links),
		T(test_link_limits),
		T(test_rename_over_hard_link),
		T(test_mknod),
		T(test_chown_kills_privs_any_type),
#undef T
	};

	return cmocka_run_group_tests_name("mds_store_types", tests, NULL, NULL);
}
