/*
 * test_links.c - every file type through the library on real daemons:
 * symbolic links (readlink, lstat, O_NOFOLLOW, loops, the path walk),
 * hard links (counts, the data kept until the last name goes, then purged
 * by the metadata daemon), FIFOs, sockets and device nodes (metadata
 * only: no storage object), and the refusals, each named.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define PURGE_WAIT_S 20.0

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

/* The whole of file `path` into buf (NUL-terminated): its length. */
static ssize_t read_all(tessera_fs *fs, const char *path, int flags, char *buf, size_t len)
{
	tessera_file *f;
	ssize_t n;
	int rc = tessera_open(fs, path, O_RDONLY | flags, 0, NULL, &f);

	if (rc)
		return rc;
	n = tessera_pread(f, buf, len - 1, 0);
	tessera_close(f);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static void object_file(struct cluster *c, uint32_t ios, uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%s/ios%u/objects/%02x/%016" PRIx64, c->dir, ios,
		 (unsigned)(handle & 0xff), handle);
}

static int objects_left(struct cluster *c, const struct tessera_layout *l)
{
	char path[600];
	int n = 0;

	for (uint32_t i = 0; i < l->count; i++) {
		object_file(c, l->servers[i], l->handles[i], path, sizeof(path));
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* Objects a storage daemon holds, over all daemons. */
static int objects_held(struct cluster *c)
{
	char cmd[700], line[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "find %s/ios*/objects -type f -name '[0-9a-f]*' | "
		 "grep -Ev '\\.(sum|tmp)$' | wc -l", c->dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	return atoi(line);
}

static void test_symlinks(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_stat st, lst;
	struct tessera_dirent ents[16];
	char buf[5000], big[4097];
	uint32_t n;
	int eof, types = 0;

	CHECK(fs, tessera_mkdir(fs, "/d", 0755));
	cluster_put_file(fs, "/d/f", 0644, "the data");
	CHECK(fs, tessera_symlink(fs, "d/f", "/rel"));
	CHECK(fs, tessera_symlink(fs, "/d", "/abs"));
	/* readlink: the length, the target as given, cut to the buffer */
	assert_int_equal(tessera_readlink(fs, "/rel", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "d/f");
	assert_int_equal(tessera_readlink(fs, "/rel", buf, 2), 3);
	assert_memory_equal(buf, "d/", 2);
	assert_int_equal(tessera_readlink(fs, "/d/f", buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(fs), "not a symbolic link"));
	/* stat follows, lstat does not; readdir gives the type */
	CHECK(fs, tessera_stat(fs, "/rel", &st));
	assert_true(S_ISREG(st.mode));
	assert_int_equal(st.size, 8);
	CHECK(fs, tessera_lstat(fs, "/rel", &lst));
	assert_true(S_ISLNK(lst.mode));
	assert_int_equal(lst.mode & 07777, 0777);
	assert_int_equal(lst.size, 3);
	assert_true(lst.handle != st.handle);
	CHECK(fs, tessera_readdir(fs, "/", "", ents, 16, &n, &eof));
	for (uint32_t i = 0; i < n; i++)
		types += S_ISLNK(ents[i].mode) ? 1 : S_ISDIR(ents[i].mode) ? 10 : 100;
	assert_int_equal(types, 2 + 10);
	/* a path through links, and reads through them */
	assert_int_equal(read_all(fs, "/abs/f", 0, buf, sizeof(buf)), 8);
	assert_int_equal(read_all(fs, "/rel", 0, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "the data");
	assert_int_equal(read_all(fs, "/rel", O_NOFOLLOW, buf, sizeof(buf)), -ELOOP);
	assert_int_equal(read_all(fs, "/abs/f", O_NOFOLLOW, buf, sizeof(buf)), 8);
	/* O_CREAT through a dangling link makes its target */
	CHECK(fs, tessera_symlink(fs, "/d/new", "/dangling"));
	assert_int_equal(tessera_stat(fs, "/dangling", &st), -ENOENT);
	cluster_put_file(fs, "/dangling", 0644, "made");
	assert_int_equal(read_all(fs, "/d/new", 0, buf, sizeof(buf)), 4);
	/* loops, long targets, existing names */
	CHECK(fs, tessera_symlink(fs, "/loop2", "/loop1"));
	CHECK(fs, tessera_symlink(fs, "loop1", "/loop2"));
	assert_int_equal(tessera_stat(fs, "/loop1", &st), -ELOOP);
	print_message("loop: %s\n", tessera_errmsg(fs));
	assert_int_equal(read_all(fs, "/loop1", 0, buf, sizeof(buf)), -ELOOP);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(tessera_symlink(fs, big, "/big"), -ENAMETOOLONG);
	print_message("long target: %s\n", tessera_errmsg(fs));
	big[4095] = '\0';
	CHECK(fs, tessera_symlink(fs, big, "/big"));
	assert_int_equal(tessera_readlink(fs, "/big", buf, sizeof(buf)), 4095);
	assert_int_equal(tessera_symlink(fs, "x", "/rel"), -EEXIST);
	assert_int_equal(tessera_symlink(fs, "", "/empty"), -ENOENT);
	/* chown of the link itself, or of its target */
	struct tessera_setattr sa = { .valid = TESSERA_SET_UID | TESSERA_SET_GID,
				      .uid = 1234, .gid = 1234 };
	CHECK(fs, tessera_lsetattr(fs, "/rel", &sa));
	CHECK(fs, tessera_lstat(fs, "/rel", &lst));
	CHECK(fs, tessera_stat(fs, "/rel", &st));
	assert_int_equal(lst.uid, 1234);
	assert_int_equal(st.uid, 0);
	/* the mount's mode: a last component's link is never followed */
	tessera_follow_links(fs, TESSERA_NOFOLLOW);
	CHECK(fs, tessera_stat(fs, "/rel", &st));
	assert_true(S_ISLNK(st.mode));
	assert_int_equal(read_all(fs, "/rel", 0, buf, sizeof(buf)), -ELOOP);
	CHECK(fs, tessera_stat(fs, "/abs/f", &st));   /* the middle still is */
	assert_true(S_ISREG(st.mode));
	tessera_follow_links(fs, TESSERA_FOLLOW);
	/* unlink takes the link, not the target; symlinks have no objects */
	CHECK(fs, tessera_unlink(fs, "/rel"));
	CHECK(fs, tessera_stat(fs, "/d/f", &st));
	assert_int_equal(tessera_lstat(fs, "/rel", &st), -ENOENT);
}

/* Hard links: one file, nlink names; its objects stay until the last. */
static void test_hard_links(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_layout l;
	struct tessera_stat st, st2;
	char buf[64];
	double deadline;
	int written;

	CHECK(fs, tessera_mkdir(fs, "/h", 0755));
	cluster_put_file(fs, "/h/a", 0644, "shared bytes");
	CHECK(fs, tessera_get_layout(fs, "/h/a", &l));
	written = objects_left(c, &l);   /* objects are made by the first write */
	assert_true(written > 0);
	CHECK(fs, tessera_link(fs, "/h/a", "/b"));
	CHECK(fs, tessera_stat(fs, "/h/a", &st));
	CHECK(fs, tessera_stat(fs, "/b", &st2));
	assert_int_equal(st.nlink, 2);
	assert_true(st.handle == st2.handle);
	assert_int_equal(st2.size, 12);
	/* refusals */
	assert_int_equal(tessera_link(fs, "/h", "/h2"), -EPERM);
	print_message("link of a directory: %s\n", tessera_errmsg(fs));
	assert_int_equal(tessera_link(fs, "/h/a", "/b"), -EEXIST);
	assert_int_equal(tessera_link(fs, "/h/none", "/c"), -ENOENT);
	/* the first name goes: data and objects stay */
	CHECK(fs, tessera_unlink(fs, "/h/a"));
	usleep(300000);
	assert_int_equal(objects_left(c, &l), written);
	assert_int_equal(read_all(fs, "/b", 0, buf, sizeof(buf)), 12);
	assert_string_equal(buf, "shared bytes");
	CHECK(fs, tessera_stat(fs, "/b", &st));
	assert_int_equal(st.nlink, 1);
	/* rename over one of two names: the other keeps the data */
	CHECK(fs, tessera_link(fs, "/b", "/h/c"));
	cluster_put_file(fs, "/h/new", 0644, "new");
	CHECK(fs, tessera_rename(fs, "/h/new", "/b"));
	assert_int_equal(read_all(fs, "/h/c", 0, buf, sizeof(buf)), 12);
	assert_int_equal(objects_left(c, &l), written);
	/* the last name goes: the objects are purged */
	CHECK(fs, tessera_unlink(fs, "/h/c"));
	deadline = now_s() + PURGE_WAIT_S;
	while (objects_left(c, &l) && now_s() < deadline)
		usleep(50000);
	assert_int_equal(objects_left(c, &l), 0);
}

static void test_special_files(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_layout l;
	struct tessera_stat st;
	tessera_file *f;
	int held;

	held = objects_held(c);
	CHECK(fs, tessera_mknod(fs, "/fifo", S_IFIFO | 0640, 0));
	CHECK(fs, tessera_mknod(fs, "/sock", S_IFSOCK | 0755, 0));
	CHECK(fs, tessera_stat(fs, "/fifo", &st));
	assert_int_equal(st.mode, S_IFIFO | 0640);
	CHECK(fs, tessera_stat(fs, "/sock", &st));
	assert_true(S_ISSOCK(st.mode));
	if (geteuid() == 0) {
		CHECK(fs, tessera_mknod(fs, "/null", S_IFCHR | 0666, makedev(1, 3)));
		CHECK(fs, tessera_mknod(fs, "/sda", S_IFBLK | 0660, makedev(8, 1)));
		CHECK(fs, tessera_stat(fs, "/null", &st));
		assert_true(S_ISCHR(st.mode));
		assert_true(st.rdev == makedev(1, 3));
		CHECK(fs, tessera_stat(fs, "/sda", &st));
		assert_true(S_ISBLK(st.mode) && st.rdev == makedev(8, 1));
	} else {
		print_message("devices by root not tried: not running as root\n");
	}
	/* no data: no objects, no open */
	assert_int_equal(tessera_open(fs, "/fifo", O_RDONLY, 0, NULL, &f), -ENXIO);
	print_message("open of a FIFO: %s\n", tessera_errmsg(fs));
	assert_int_equal(tessera_truncate(fs, "/fifo", 0), -ENXIO);
	CHECK(fs, tessera_get_layout(fs, "/fifo", &l));
	assert_int_equal(l.count, 0);
	assert_int_equal(objects_held(c), held);
	/* mknod of a regular file makes one; of a directory or nonsense: no */
	CHECK(fs, tessera_mknod(fs, "/reg", S_IFREG | 0600, 0));
	CHECK(fs, tessera_stat(fs, "/reg", &st));
	assert_int_equal(st.mode, S_IFREG | 0600);
	CHECK(fs, tessera_get_layout(fs, "/reg", &l));
	assert_true(l.count > 0);
	assert_int_equal(tessera_mknod(fs, "/dir", S_IFDIR | 0755, 0), -EPERM);
	assert_int_equal(tessera_mknod(fs, "/lnk", S_IFLNK | 0777, 0), -EINVAL);
	assert_int_equal(tessera_mknod(fs, "/fifo", S_IFIFO | 0640, 0), -EEXIST);
	/* hard links of special files are fine too */
	CHECK(fs, tessera_link(fs, "/fifo", "/fifo2"));
	CHECK(fs, tessera_unlink(fs, "/fifo"));
	CHECK(fs, tessera_stat(fs, "/fifo2", &st));
	assert_true(S_ISFIFO(st.mode) && st.nlink == 1);
}

/* Another user: no device nodes, no name for root's private file (Linux's
 * protected_hardlinks), even in the sticky root where anyone may create;
 * a file they may read and write is fine. Needs a root client, which may
 * act for another uid. */
static void test_other_user(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_cred other = { .uid = 1000, .ngids = 1, .gids = { 1000 } };
	struct tessera_stat st;

	if (geteuid() != 0) {
		print_message("skipped: acting for another uid needs a root client\n");
		skip();
	}
	cluster_put_file(fs, "/private", 0600, "root's");
	cluster_put_file(fs, "/shared", 0666, "everyone's");
	CHECK(fs, tessera_set_thread_cred(fs, &other));
	assert_int_equal(tessera_mknod(fs, "/mydev", S_IFCHR | 0666, makedev(1, 3)), -EPERM);
	print_message("device by uid 1000: %s\n", tessera_errmsg(fs));
	assert_int_equal(tessera_link(fs, "/private", "/mine"), -EPERM);
	print_message("link to root's 0600 file by uid 1000: %s\n", tessera_errmsg(fs));
	CHECK(fs, tessera_link(fs, "/shared", "/mine"));
	CHECK(fs, tessera_symlink(fs, "/private", "/peek"));
	/* the name is uid 1000's to make; the file stays root's */
	CHECK(fs, tessera_stat(fs, "/mine", &st));
	assert_int_equal(st.uid, 0);
	assert_int_equal(st.nlink, 2);
	/* following a link checks the target's permissions */
	tessera_file *f;
	assert_int_equal(tessera_open(fs, "/peek", O_RDONLY, 0, NULL, &f), -EACCES);
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	CHECK(fs, tessera_lstat(fs, "/peek", &st));
	assert_int_equal(st.uid, 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_symlinks, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_hard_links, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_special_files, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_other_user, setup, cluster_teardown),
	};

	return cmocka_run_group_tests_name("links", tests, NULL, NULL);
}
