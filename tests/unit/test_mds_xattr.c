/*
 * test_mds_xattr.c - extended attributes of the metadata store
 * (server/mds/mds_xattr.h) against a real LevelDB in a fresh temporary
 * directory per test: values, set modes, every refusal (names, sizes,
 * caps, namespaces, permissions), and their removal with the file's last
 * name in the same batch (mds_batch_drop_inode).
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

#include <cmocka.h>

#include "mds_store_int.h"
#include "mds_xattr.h"

struct fx {
	char dir[64];
	struct mds_store *st;
};

static const uint32_t root_gids[] = { 0 };
static const struct mds_cred ROOT = { 0, 1, root_gids };
static const uint32_t u1_gids[] = { 1000 };
static const struct mds_cred U1 = { 1000, 1, u1_gids };
static const uint32_t u2_gids[] = { 2000 };
static const struct mds_cred U2 = { 2000, 1, u2_gids };

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static void reopen(struct fx *f)
{
	char err[256] = "";

	mds_store_close(f->st);
	f->st = NULL;
	if (mds_store_open(f->dir, 1, 2, &f->st, err, sizeof(err)))
		fail_msg("open %s: %s", f->dir, err);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);

	assert_non_null(f);
	strcpy(f->dir, "/tmp/test_mds_xattr-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	reopen(f);
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

static void mkfile(struct mds_store *st, const struct mds_cred *c, const char *path,
		   uint32_t mode, struct mds_attr *out)
{
	struct mds_create_req rq = { .path = path, .mode = mode, .how = MDS_CREATE_EXCLUSIVE };

	if (mds_create(st, c, &rq, out, NULL))
		fail_msg("create %s: %s", path, mds_store_errmsg(st));
}

static int set(struct mds_store *st, const struct mds_cred *c, const char *path,
	       const char *name, const char *value, enum mds_xattr_how how)
{
	return mds_xattr_set(st, c, path, MDS_FOLLOW, name, strlen(name), value, strlen(value), how);
}

static int get(struct mds_store *st, const struct mds_cred *c, const char *path,
	       const char *name, char *buf, size_t cap, size_t *size)
{
	return mds_xattr_get(st, c, path, MDS_FOLLOW, name, strlen(name), buf, cap, size);
}

static int rm(struct mds_store *st, const struct mds_cred *c, const char *path, const char *name)
{
	return mds_xattr_remove(st, c, path, MDS_FOLLOW, name, strlen(name));
}

/* "X" records of `handle` in the database. */
static unsigned x_records(struct mds_store *st, uint64_t handle)
{
	unsigned char prefix[9];
	leveldb_iterator_t *it = leveldb_create_iterator(st->db, st->ropts);
	unsigned n = 0;

	prefix[0] = 'X';
	mds_put_be64(prefix + 1, handle);
	for (leveldb_iter_seek(it, (char *)prefix, 9); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);

		if (kl < 9 || memcmp(k, prefix, 9))
			break;
		n++;
	}
	leveldb_iter_destroy(it);
	return n;
}

static void test_set_get_list_remove(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b;
	char buf[256];
	size_t size;

	mkfile(f->st, &U1, "/f", 0644, &a);
	assert_int_equal(set(f->st, &U1, "/f", "user.b", "two", MDS_XATTR_ANY), 0);
	assert_int_equal(set(f->st, &U1, "/f", "user.a", "one", MDS_XATTR_ANY), 0);
	/* size 0 asks the length; a buffer too small is ERANGE */
	assert_int_equal(get(f->st, &U1, "/f", "user.a", NULL, 0, &size), 0);
	assert_int_equal(size, 3);
	assert_int_equal(get(f->st, &U1, "/f", "user.a", buf, 2, &size), -ERANGE);
	assert_int_equal(get(f->st, &U1, "/f", "user.a", buf, sizeof(buf), &size), 0);
	assert_int_equal(size, 3);
	assert_memory_equal(buf, "one", 3);
	/* an empty value is a value */
	assert_int_equal(set(f->st, &U1, "/f", "user.empty", "", MDS_XATTR_ANY), 0);
	assert_int_equal(get(f->st, &U1, "/f", "user.empty", buf, sizeof(buf), &size), 0);
	assert_int_equal(size, 0);
	/* names in order, each with its NUL */
	assert_int_equal(mds_xattr_list(f->st, &U1, "/f", MDS_FOLLOW, NULL, 0, &size), 0);
	assert_int_equal(size, 7 + 7 + 11);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/f", MDS_FOLLOW, buf, 10, &size), -ERANGE);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/f", MDS_FOLLOW, buf, sizeof(buf), &size), 0);
	assert_int_equal(size, 25);
	assert_memory_equal(buf, "user.a\0user.b\0user.empty\0", 25);
	/* replace, then remove */
	assert_int_equal(set(f->st, &U1, "/f", "user.a", "uno", MDS_XATTR_ANY), 0);
	assert_int_equal(get(f->st, &U1, "/f", "user.a", buf, sizeof(buf), &size), 0);
	assert_memory_equal(buf, "uno", 3);
	assert_int_equal(rm(f->st, &U1, "/f", "user.a"), 0);
	assert_int_equal(get(f->st, &U1, "/f", "user.a", buf, sizeof(buf), &size), -ENODATA);
	assert_int_equal(rm(f->st, &U1, "/f", "user.a"), -ENODATA);
	/* a set changes ctime */
	assert_int_equal(mds_lookup(f->st, &U1, "/f", &b), 0);
	assert_true(b.ctime_ns >= a.ctime_ns);
	/* directories have them too, and they survive a restart */
	assert_int_equal(mds_mkdir(f->st, &U1, "/d", 0755, NULL), 0);
	assert_int_equal(set(f->st, &U1, "/d", "user.dir", "yes", MDS_XATTR_ANY), 0);
	reopen(f);
	assert_int_equal(get(f->st, &U1, "/d", "user.dir", buf, sizeof(buf), &size), 0);
	assert_memory_equal(buf, "yes", 3);
	assert_int_equal(get(f->st, &U1, "/f", "user.b", buf, sizeof(buf), &size), 0);
	assert_memory_equal(buf, "two", 3);
}

static void test_create_replace(void **state)
{
	struct fx *f = *state;
	char buf[16];
	size_t size;

	mkfile(f->st, &U1, "/f", 0644, NULL);
	assert_int_equal(set(f->st, &U1, "/f", "user.x", "1", MDS_XATTR_REPLACE), -ENODATA);
	assert_int_equal(set(f->st, &U1, "/f", "user.x", "1", MDS_XATTR_CREATE), 0);
	assert_int_equal(set(f->st, &U1, "/f", "user.x", "2", MDS_XATTR_CREATE), -EEXIST);
	assert_int_equal(set(f->st, &U1, "/f", "user.x", "3", MDS_XATTR_REPLACE), 0);
	assert_int_equal(get(f->st, &U1, "/f", "user.x", buf, sizeof(buf), &size), 0);
	assert_memory_equal(buf, "3", 1);
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "user.x", 6, "4", 1,
				       (enum mds_xattr_how)7), -EINVAL);
}

static void test_names(void **state)
{
	struct fx *f = *state;
	char name[300], buf[16];
	size_t size;

	mkfile(f->st, &ROOT, "/f", 0666, NULL);
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	/* 255 bytes are fine, 256 and 0 are ERANGE, as Linux */
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, name, 255, "v", 1, MDS_XATTR_ANY), 0);
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, name, 256, "v", 1, MDS_XATTR_ANY),
			 -ERANGE);
	assert_int_equal(mds_xattr_get(f->st, &U1, "/f", MDS_FOLLOW, name, 256, buf, sizeof(buf), &size),
			 -ERANGE);
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "", 0, "v", 1, MDS_XATTR_ANY), -ERANGE);
	/* a NUL inside, a bare prefix */
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "user.a\0b", 8, "v", 1, MDS_XATTR_ANY),
			 -EINVAL);
	assert_int_equal(set(f->st, &U1, "/f", "user.", "v", MDS_XATTR_ANY), -EINVAL);
	/* ACLs and other namespaces: EOPNOTSUPP, even for root, and nothing
	 * is stored */
	assert_int_equal(set(f->st, &ROOT, "/f", "system.posix_acl_access", "v", MDS_XATTR_ANY),
			 -EOPNOTSUPP);
	assert_int_equal(set(f->st, &ROOT, "/f", "system.posix_acl_default", "v", MDS_XATTR_ANY),
			 -EOPNOTSUPP);
	assert_int_equal(get(f->st, &ROOT, "/f", "system.posix_acl_access", buf, sizeof(buf),
			     &size), -EOPNOTSUPP);
	assert_int_equal(rm(f->st, &ROOT, "/f", "system.posix_acl_access"), -EOPNOTSUPP);
	assert_int_equal(set(f->st, &ROOT, "/f", "os2.name", "v", MDS_XATTR_ANY), -EOPNOTSUPP);
	assert_int_equal(set(f->st, &ROOT, "/f", "User.x", "v", MDS_XATTR_ANY), -EOPNOTSUPP);
	assert_int_equal(mds_xattr_list(f->st, &ROOT, "/f", MDS_FOLLOW, NULL, 0, &size), 0);
	assert_int_equal(size, 256);   /* the 255-byte name alone */
	/* missing files */
	assert_int_equal(set(f->st, &U1, "/nope", "user.x", "v", MDS_XATTR_ANY), -ENOENT);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/nope", MDS_FOLLOW, NULL, 0, &size), -ENOENT);
}

static void test_sizes(void **state)
{
	struct fx *f = *state;
	char *big = calloc(1, MDS_XATTR_VALUE_MAX + 1);
	char *buf = malloc(MDS_XATTR_VALUE_MAX);
	char name[300];
	size_t size;
	int i, rc;

	assert_non_null(big);
	assert_non_null(buf);
	mkfile(f->st, &U1, "/f", 0644, NULL);
	memset(big, 'v', MDS_XATTR_VALUE_MAX + 1);
	/* 64 KiB is the largest value; one more byte is E2BIG */
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "user.big", 8, big,
				       MDS_XATTR_VALUE_MAX, MDS_XATTR_ANY), 0);
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "user.big2", 9, big,
				       MDS_XATTR_VALUE_MAX + 1, MDS_XATTR_ANY), -E2BIG);
	assert_int_equal(get(f->st, &U1, "/f", "user.big", buf, MDS_XATTR_VALUE_MAX, &size), 0);
	assert_int_equal(size, MDS_XATTR_VALUE_MAX);
	assert_memory_equal(buf, big, MDS_XATTR_VALUE_MAX);
	/* names and values of one file: at most MDS_XATTR_TOTAL_MAX */
	for (i = 2; i <= 3; i++) {
		snprintf(name, sizeof(name), "user.big%d", i);
		assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, name, strlen(name), big,
					       MDS_XATTR_VALUE_MAX, MDS_XATTR_ANY), 0);
	}
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "user.big4", 9, big,
				       MDS_XATTR_VALUE_MAX, MDS_XATTR_ANY), -ENOSPC);
	/* replacing a value counts it once */
	assert_int_equal(mds_xattr_set(f->st, &U1, "/f", MDS_FOLLOW, "user.big3", 9, big,
				       MDS_XATTR_VALUE_MAX, MDS_XATTR_ANY), 0);
	/* names of one file: at most MDS_XATTR_LIST_MAX with their NULs */
	mkfile(f->st, &U1, "/g", 0644, NULL);
	for (i = 0, rc = 0; rc == 0; i++) {
		snprintf(name, sizeof(name), "user.%0250d", i);
		rc = mds_xattr_set(f->st, &U1, "/g", MDS_FOLLOW, name, strlen(name), "", 0, MDS_XATTR_ANY);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(i - 1, MDS_XATTR_LIST_MAX / 256);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/g", MDS_FOLLOW, NULL, 0, &size), 0);
	assert_true(size <= MDS_XATTR_LIST_MAX);
	free(big);
	free(buf);
}

static void test_user_permissions(void **state)
{
	struct fx *f = *state;
	char buf[16];
	size_t size;

	mkfile(f->st, &U1, "/ro", 0644, NULL);
	mkfile(f->st, &U1, "/none", 0600, NULL);
	assert_int_equal(set(f->st, &U1, "/ro", "user.x", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(set(f->st, &U1, "/none", "user.x", "1", MDS_XATTR_ANY), 0);
	/* read needs read permission, write needs write permission */
	assert_int_equal(get(f->st, &U2, "/ro", "user.x", buf, sizeof(buf), &size), 0);
	assert_int_equal(set(f->st, &U2, "/ro", "user.x", "2", MDS_XATTR_ANY), -EACCES);
	assert_int_equal(rm(f->st, &U2, "/ro", "user.x"), -EACCES);
	assert_int_equal(get(f->st, &U2, "/none", "user.x", buf, sizeof(buf), &size), -EACCES);
	/* listing needs no read permission (as Linux) */
	assert_int_equal(mds_xattr_list(f->st, &U2, "/none", MDS_FOLLOW, NULL, 0, &size), 0);
	assert_int_equal(size, 7);
	/* root may */
	assert_int_equal(set(f->st, &ROOT, "/none", "user.y", "2", MDS_XATTR_ANY), 0);
	/* a sticky directory's own user. attributes: its owner's (or root's)
	 * even when others may write it */
	assert_int_equal(mds_mkdir(f->st, &U1, "/t", 01777, NULL), 0);
	assert_int_equal(set(f->st, &U2, "/t", "user.x", "1", MDS_XATTR_ANY), -EPERM);
	assert_int_equal(set(f->st, &U1, "/t", "user.x", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(rm(f->st, &U2, "/t", "user.x"), -EPERM);
	assert_int_equal(get(f->st, &U2, "/t", "user.x", buf, sizeof(buf), &size), 0);
	/* without the bit, write permission is enough */
	assert_int_equal(mds_mkdir(f->st, &U1, "/o", 0777, NULL), 0);
	assert_int_equal(set(f->st, &U2, "/o", "user.x", "1", MDS_XATTR_ANY), 0);
	/* search permission on the way */
	assert_int_equal(mds_mkdir(f->st, &U1, "/closed", 0700, NULL), 0);
	mkfile(f->st, &U1, "/closed/f", 0666, NULL);
	assert_int_equal(set(f->st, &U2, "/closed/f", "user.x", "1", MDS_XATTR_ANY), -EACCES);
	assert_int_equal(mds_xattr_list(f->st, &U2, "/closed/f", MDS_FOLLOW, NULL, 0, &size), -EACCES);
}

static void test_trusted_security(void **state)
{
	struct fx *f = *state;
	char buf[64];
	size_t size;

	mkfile(f->st, &U1, "/f", 0666, NULL);
	/* trusted.: root's alone, invisible to others */
	assert_int_equal(set(f->st, &U1, "/f", "trusted.t", "1", MDS_XATTR_ANY), -EPERM);
	assert_int_equal(set(f->st, &ROOT, "/f", "trusted.t", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(get(f->st, &U1, "/f", "trusted.t", buf, sizeof(buf), &size), -ENODATA);
	assert_int_equal(rm(f->st, &U1, "/f", "trusted.t"), -EPERM);
	assert_int_equal(get(f->st, &ROOT, "/f", "trusted.t", buf, sizeof(buf), &size), 0);
	/* security.: set by root, read by all */
	assert_int_equal(set(f->st, &U1, "/f", "security.selinux", "l", MDS_XATTR_ANY), -EPERM);
	assert_int_equal(set(f->st, &ROOT, "/f", "security.selinux", "l", MDS_XATTR_ANY), 0);
	assert_int_equal(get(f->st, &U2, "/f", "security.selinux", buf, sizeof(buf), &size), 0);
	assert_int_equal(rm(f->st, &U1, "/f", "security.selinux"), -EPERM);
	/* security.capability goes when a writer writes: whoever may write
	 * the file may remove it, not set it */
	assert_int_equal(set(f->st, &U1, "/f", "security.capability", "c", MDS_XATTR_ANY), -EPERM);
	assert_int_equal(set(f->st, &ROOT, "/f", "security.capability", "c", MDS_XATTR_ANY), 0);
	mkfile(f->st, &U1, "/ro", 0644, NULL);
	assert_int_equal(set(f->st, &ROOT, "/ro", "security.capability", "c", MDS_XATTR_ANY), 0);
	assert_int_equal(rm(f->st, &U2, "/ro", "security.capability"), -EPERM);
	assert_int_equal(rm(f->st, &U2, "/f", "security.capability"), 0);
	assert_int_equal(set(f->st, &U1, "/f", "user.u", "1", MDS_XATTR_ANY), 0);
	/* lists: trusted. only for root */
	assert_int_equal(mds_xattr_list(f->st, &U2, "/f", MDS_FOLLOW, buf, sizeof(buf), &size), 0);
	assert_int_equal(size, 17 + 7);
	assert_memory_equal(buf, "security.selinux\0user.u\0", size);
	assert_int_equal(mds_xattr_list(f->st, &ROOT, "/f", MDS_FOLLOW, buf, sizeof(buf), &size), 0);
	assert_int_equal(size, 17 + 10 + 7);
}

/* The last name's removal drops the attributes in its batch: unlink,
 * rmdir, rename over a name; the renamed file keeps its own. */
static void test_dropped_with_name(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, d, victim, moved, r;
	int replaced;
	size_t size;

	mkfile(f->st, &U1, "/f", 0644, &a);
	assert_int_equal(set(f->st, &U1, "/f", "user.a", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(set(f->st, &U1, "/f", "user.b", "2", MDS_XATTR_ANY), 0);
	assert_int_equal(set(f->st, &ROOT, "/f", "trusted.c", "3", MDS_XATTR_ANY), 0);
	assert_int_equal(x_records(f->st, a.handle), 3);
	assert_int_equal(mds_unlink(f->st, &U1, "/f", &r), 0);
	assert_int_equal(x_records(f->st, a.handle), 0);

	assert_int_equal(mds_mkdir(f->st, &U1, "/d", 0755, &d), 0);
	assert_int_equal(set(f->st, &U1, "/d", "user.a", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(mds_rmdir(f->st, &U1, "/d"), 0);
	assert_int_equal(x_records(f->st, d.handle), 0);

	mkfile(f->st, &U1, "/victim", 0644, &victim);
	mkfile(f->st, &U1, "/moved", 0644, &moved);
	assert_int_equal(set(f->st, &U1, "/victim", "user.v", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(set(f->st, &U1, "/moved", "user.m", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(mds_rename(f->st, &U1, "/moved", "/victim", &r, &replaced), 0);
	assert_int_equal(replaced, 1);
	assert_int_equal(x_records(f->st, victim.handle), 0);
	assert_int_equal(x_records(f->st, moved.handle), 1);
	assert_int_equal(get(f->st, &U1, "/victim", "user.m", NULL, 0, &size), 0);
	assert_int_equal(get(f->st, &U1, "/victim", "user.v", NULL, 0, &size), -ENODATA);
	/* a directory over an empty directory too */
	assert_int_equal(mds_mkdir(f->st, &U1, "/d1", 0755, &d), 0);
	assert_int_equal(mds_mkdir(f->st, &U1, "/d2", 0755, NULL), 0);
	assert_int_equal(set(f->st, &U1, "/d1", "user.a", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(mds_rename(f->st, &U1, "/d2", "/d1", &r, &replaced), 0);
	assert_int_equal(x_records(f->st, d.handle), 0);
}

/* Links: the l- calls (MDS_NOFOLLOW) name the link itself, whose user.
 * attributes Linux refuses; the others its target. A hard link's names
 * share the attributes, which go with the last name only. */
static void test_links(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, l, r;
	char buf[16];
	size_t size;

	mkfile(f->st, &U1, "/f", 0644, &a);
	assert_int_equal(mds_symlink(f->st, &U1, "/l", "f", &l), 0);
	assert_int_equal(set(f->st, &U1, "/l", "user.a", "1", MDS_XATTR_ANY), 0);
	assert_int_equal(x_records(f->st, a.handle), 1);
	assert_int_equal(mds_xattr_set(f->st, &U1, "/l", MDS_NOFOLLOW, "user.b", 6, "2", 1,
				       MDS_XATTR_ANY), -EPERM);
	assert_int_equal(mds_xattr_get(f->st, &U1, "/l", MDS_NOFOLLOW, "user.a", 6, buf,
				       sizeof(buf), &size), -ENODATA);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/l", MDS_NOFOLLOW, buf, sizeof(buf),
					&size), 0);
	assert_int_equal(size, 0);
	/* root's trusted. on the link itself goes with the link */
	assert_int_equal(mds_xattr_set(f->st, &ROOT, "/l", MDS_NOFOLLOW, "trusted.t", 9, "3", 1,
				       MDS_XATTR_ANY), 0);
	assert_int_equal(x_records(f->st, l.handle), 1);
	assert_int_equal(mds_unlink(f->st, &U1, "/l", &r), 0);
	assert_int_equal(x_records(f->st, l.handle), 0);
	assert_int_equal(x_records(f->st, a.handle), 1);
	/* a dangling link: the l- calls still work, the others ENOENT */
	assert_int_equal(mds_symlink(f->st, &U1, "/dang", "/none", NULL), 0);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/dang", MDS_FOLLOW, buf, sizeof(buf),
					&size), -ENOENT);
	assert_int_equal(mds_xattr_list(f->st, &U1, "/dang", MDS_NOFOLLOW, buf, sizeof(buf),
					&size), 0);
	/* hard links share them; the last name takes them */
	assert_int_equal(mds_link(f->st, &U1, "/f", "/g", NULL), 0);
	assert_int_equal(get(f->st, &U1, "/g", "user.a", buf, sizeof(buf), &size), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/f", &r), 0);
	assert_int_equal(x_records(f->st, a.handle), 1);
	assert_int_equal(mds_unlink(f->st, &U1, "/g", &r), 0);
	assert_int_equal(x_records(f->st, a.handle), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_set_get_list_remove),
		T(test_create_replace),
		T(test_names),
		T(test_sizes),
		T(test_user_permissions),
		T(test_trusted_security),
		T(test_dropped_with_name),
		T(test_links),
#undef T
	};

	return cmocka_run_group_tests_name("mds_xattr", tests, NULL, NULL);
}
