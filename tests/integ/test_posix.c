/*
 * test_posix.c - POSIX details of the library and the daemons (issue 23,
 * item 6), on one cluster for the whole group: set-ID bits cleared by a
 * non-owner's "kill priv", a truncate and a chown, and refused to a
 * non-owner who would set them; st_blocks from the objects' allocation;
 * statfs counting a file system shared by storage daemons once; rename
 * modes (no-replace, exchange); utimens with *_NOW and omitted fields;
 * fallocate through the library and raw to a storage daemon; what a
 * change's reply tells (tessera_dir_watch, tessera_setattr_stat).
 *
 * Callers other than root are played with tessera_set_thread_cred (the
 * metadata daemon checks the credential a root client names, as for the
 * mount's users).
 */
#include <errno.h>
#include <fcntl.h>
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

#include "cluster.h"

#define USER 1000u

static const struct tessera_cred user = { .uid = USER, .ngids = 1, .gids = { USER } };

static int group_setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static uint32_t mode_of(tessera_fs *fs, const char *path)
{
	struct tessera_stat st;

	CHECK(fs, tessera_stat(fs, path, &st));
	return st.mode & 07777;
}

static void set_mode(tessera_fs *fs, const char *path, uint32_t mode)
{
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = mode };

	CHECK(fs, tessera_setattr(fs, path, &sa));
}

static void make_file(tessera_fs *fs, const char *path, uint32_t mode)
{
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_WRONLY | O_CREAT, 0600, NULL, &f));
	assert_int_equal(tessera_pwrite(f, "data", 4, 0), 4);
	tessera_close(f);
	set_mode(fs, path, mode);
}

/* The mount's "kill priv": a chmod clearing only the set-ID bits, by a
 * user who may write the file but does not own it. Allowed with write
 * permission, refused without, and nothing else may change that way. */
static void test_kill_priv(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE };

	make_file(fs, "/kp", 06777);
	make_file(fs, "/kp-ro", 06755);
	CHECK(fs, tessera_set_thread_cred(fs, &user));
	/* not the owner: a plain chmod, setting a set-ID bit, or dropping
	 * more than the set-ID bits is refused */
	sa.mode = 0700;
	assert_int_equal(tessera_setattr(fs, "/kp", &sa), -EPERM);
	sa.mode = 06777 & ~(uint32_t)S_IWOTH;
	assert_int_equal(tessera_setattr(fs, "/kp", &sa), -EPERM);
	/* no write permission: kept */
	sa.mode = 0755;
	assert_int_equal(tessera_setattr(fs, "/kp-ro", &sa), -EPERM);
	print_message("kill priv without write permission: %s\n", tessera_errmsg(fs));
	/* write permission: setuid and setgid go, one then the other */
	sa.mode = 02777;
	CHECK(fs, tessera_setattr(fs, "/kp", &sa));
	sa.mode = 0777;
	CHECK(fs, tessera_setattr(fs, "/kp", &sa));
	/* and cannot come back */
	sa.mode = 04777;
	assert_int_equal(tessera_setattr(fs, "/kp", &sa), -EPERM);
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	assert_int_equal(mode_of(fs, "/kp"), 0777);
	assert_int_equal(mode_of(fs, "/kp-ro"), 06755);
}

/* A truncate by name through the library: a writer who is not root
 * clears setuid (and setgid with group-exec), root keeps them. */
static void test_truncate_kills_privs(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;

	make_file(fs, "/tk", 06777);
	CHECK(fs, tessera_truncate(fs, "/tk", 1));
	assert_int_equal(mode_of(fs, "/tk"), 06777);
	CHECK(fs, tessera_set_thread_cred(fs, &user));
	CHECK(fs, tessera_truncate(fs, "/tk", 2));
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	assert_int_equal(mode_of(fs, "/tk"), 0777);
	make_file(fs, "/tk-lock", 02767);   /* setgid without group-exec: stays */
	CHECK(fs, tessera_set_thread_cred(fs, &user));
	CHECK(fs, tessera_truncate(fs, "/tk-lock", 0));
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	assert_int_equal(mode_of(fs, "/tk-lock"), 02767);
}

/* A non-owner cannot set setuid on a file it may write, nor setgid. */
static void test_non_owner_sets_suid(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE };

	make_file(fs, "/ns", 0777);
	CHECK(fs, tessera_set_thread_cred(fs, &user));
	sa.mode = 04777;
	assert_int_equal(tessera_setattr(fs, "/ns", &sa), -EPERM);
	sa.mode = 02777;
	assert_int_equal(tessera_setattr(fs, "/ns", &sa), -EPERM);
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	assert_int_equal(mode_of(fs, "/ns"), 0777);
}

/* chown of a regular file drops setuid, and setgid when group-exec is
 * on, root's chown too (Linux); setgid without group-exec stays. A
 * directory keeps its bits. */
static void test_chown_kills_privs(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_setattr own = { .valid = TESSERA_SET_UID | TESSERA_SET_GID,
				       .uid = USER, .gid = USER };

	make_file(fs, "/co", 06755);
	CHECK(fs, tessera_setattr(fs, "/co", &own));
	assert_int_equal(mode_of(fs, "/co"), 0755);
	make_file(fs, "/co-lock", 06745);   /* setgid without group-exec */
	CHECK(fs, tessera_setattr(fs, "/co-lock", &own));
	assert_int_equal(mode_of(fs, "/co-lock"), 02745);
	CHECK(fs, tessera_mkdir(fs, "/co-dir", 0755));
	set_mode(fs, "/co-dir", 02755);
	CHECK(fs, tessera_setattr(fs, "/co-dir", &own));
	assert_int_equal(mode_of(fs, "/co-dir"), 02755);
}

/* st_blocks is what the objects allocated: a file with one byte written
 * past 10 GiB costs a block or two, not 10 GiB; a dense MiB costs a MiB. */
static void test_blocks_sparse(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_stat st;
	tessera_file *f;
	static char mib[1 << 20];

	CHECK(fs, tessera_open(fs, "/sparse", O_WRONLY | O_CREAT, 0644, NULL, &f));
	assert_int_equal(tessera_pwrite(f, "x", 1, 10ull << 30), 1);
	CHECK(fs, tessera_fstat(f, &st));
	tessera_close(f);
	assert_int_equal(st.size, (10ull << 30) + 1);
	print_message("10 GiB sparse file: %llu blocks\n", (unsigned long long)st.blocks);
	assert_true(st.blocks > 0 && st.blocks <= 1024);
	CHECK(fs, tessera_stat(fs, "/sparse", &st));
	assert_true(st.blocks > 0 && st.blocks <= 1024);

	memset(mib, 'd', sizeof(mib));
	CHECK(fs, tessera_open(fs, "/dense", O_WRONLY | O_CREAT, 0644, NULL, &f));
	assert_int_equal(tessera_pwrite(f, mib, sizeof(mib), 0), (ssize_t)sizeof(mib));
	tessera_close(f);
	CHECK(fs, tessera_stat(fs, "/dense", &st));
	assert_true(st.blocks >= 2048);
	CHECK(fs, tessera_stat(fs, "/", &st));
	assert_int_equal(st.blocks, 0);
}

/* The test cluster's storage daemons share one file system: statfs counts
 * it once (each daemon still reports it), and the metadata daemon's room
 * for names is a count derived from its disk, not a constant. */
static void test_statfs_once(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_server_space sp[N_IOS + 1];
	struct tessera_statfs sf, sf2;

	assert_int_equal(tessera_statfs_servers(fs, &sf, sp, N_IOS + 1), N_IOS + 1);
	for (int i = 1; i <= N_IOS; i++) {
		assert_int_equal(sp[i].status, 0);
		assert_true(sp[i].fsid != 0);
		assert_true(sp[i].fsid == sp[1].fsid);
	}
	/* (free space moves between calls: compare totals) */
	assert_int_equal(sf.bytes_total, sp[1].bytes_total);
	CHECK(fs, tessera_statfs(fs, &sf2));
	assert_int_equal(sf2.bytes_total, sp[1].bytes_total);
	assert_true(sf2.bytes_free <= sf2.bytes_total);
	print_message("names %llu, room for %llu more\n", (unsigned long long)sf2.files,
		      (unsigned long long)sf2.files_free);
	assert_true(sf2.files > 0);
	assert_true(sf2.files_free > 0 && sf2.files_free != UINT32_MAX);
}

static void put(tessera_fs *fs, const char *path, const char *text)
{
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, NULL, &f));
	assert_int_equal(tessera_pwrite(f, text, strlen(text), 0), (ssize_t)strlen(text));
	tessera_close(f);
}

static void expect(tessera_fs *fs, const char *path, const char *text)
{
	char buf[64] = "";
	tessera_file *f;

	CHECK(fs, tessera_open(fs, path, O_RDONLY, 0, NULL, &f));
	assert_int_equal(tessera_pread(f, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(text));
	tessera_close(f);
	assert_string_equal(buf, text);
}

/* RENAME_NOREPLACE in the metadata daemon: EEXIST with both names left
 * as they were, a plain rename when the target is free. */
static void test_rename_noreplace(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_stat st;

	put(fs, "/rn-a", "a");
	put(fs, "/rn-b", "b");
	assert_int_equal(tessera_rename_with(fs, "/rn-a", "/rn-b", TESSERA_RENAME_NOREPLACE),
			 -EEXIST);
	print_message("no-replace: %s\n", tessera_errmsg(fs));
	expect(fs, "/rn-a", "a");
	expect(fs, "/rn-b", "b");
	CHECK(fs, tessera_rename_with(fs, "/rn-a", "/rn-c", TESSERA_RENAME_NOREPLACE));
	assert_int_equal(tessera_stat(fs, "/rn-a", &st), -ENOENT);
	expect(fs, "/rn-c", "a");
}

/* RENAME_EXCHANGE: two files, a file and a directory across directories
 * (link counts follow), refusals: a missing target, a directory with its
 * own child, an unknown mode. */
static void test_rename_exchange(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_stat st, d1, d2;

	put(fs, "/ex-a", "a");
	put(fs, "/ex-b", "b");
	CHECK(fs, tessera_rename_with(fs, "/ex-a", "/ex-b", TESSERA_RENAME_EXCHANGE));
	expect(fs, "/ex-a", "b");
	expect(fs, "/ex-b", "a");

	CHECK(fs, tessera_mkdir(fs, "/ex-d1", 0755));
	CHECK(fs, tessera_mkdir(fs, "/ex-d2", 0755));
	CHECK(fs, tessera_mkdir(fs, "/ex-d1/sub", 0755));
	put(fs, "/ex-d2/file", "f");
	CHECK(fs, tessera_stat(fs, "/ex-d1", &d1));
	CHECK(fs, tessera_stat(fs, "/ex-d2", &d2));
	CHECK(fs, tessera_rename_with(fs, "/ex-d1/sub", "/ex-d2/file", TESSERA_RENAME_EXCHANGE));
	CHECK(fs, tessera_stat(fs, "/ex-d1/sub", &st));
	assert_true((st.mode & S_IFMT) == S_IFREG);
	CHECK(fs, tessera_stat(fs, "/ex-d2/file", &st));
	assert_true((st.mode & S_IFMT) == S_IFDIR);
	expect(fs, "/ex-d1/sub", "f");
	CHECK(fs, tessera_stat(fs, "/ex-d1", &st));
	assert_int_equal(st.nlink, d1.nlink - 1);
	CHECK(fs, tessera_stat(fs, "/ex-d2", &st));
	assert_int_equal(st.nlink, d2.nlink + 1);
	CHECK(fs, tessera_rmdir(fs, "/ex-d2/file"));   /* an empty directory still */

	assert_int_equal(tessera_rename_with(fs, "/ex-a", "/ex-none", TESSERA_RENAME_EXCHANGE),
			 -ENOENT);
	CHECK(fs, tessera_mkdir(fs, "/ex-d2/in", 0755));
	assert_int_equal(tessera_rename_with(fs, "/ex-d2", "/ex-d2/in", TESSERA_RENAME_EXCHANGE),
			 -EINVAL);
	assert_int_equal(tessera_rename_with(fs, "/ex-d2/in", "/ex-d2", TESSERA_RENAME_EXCHANGE),
			 -EINVAL);
	assert_int_equal(tessera_rename_with(fs, "/ex-a", "/ex-b", (enum tessera_rename_mode)7),
			 -EINVAL);
	print_message("unknown mode: %s\n", tessera_errmsg(fs));
	expect(fs, "/ex-a", "b");
}

/* utimens through the library: *_NOW sets the daemon's time, a field not
 * named (UTIME_OMIT) stays; a writer who is not the owner may set now,
 * not a time of its choosing. */
static void test_utimens_omit_now(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_setattr sa = { .valid = TESSERA_SET_ATIME | TESSERA_SET_MTIME,
				      .atime = { 1000, 0 }, .mtime = { 2000, 0 } };
	struct tessera_stat st;

	make_file(fs, "/ut", 0666);
	CHECK(fs, tessera_setattr(fs, "/ut", &sa));
	sa = (struct tessera_setattr){ .valid = TESSERA_SET_ATIME_NOW };
	CHECK(fs, tessera_setattr(fs, "/ut", &sa));
	CHECK(fs, tessera_stat(fs, "/ut", &st));
	assert_int_equal(st.mtime.tv_sec, 2000);
	assert_true(st.atime.tv_sec > 1000000000);
	sa = (struct tessera_setattr){ .valid = TESSERA_SET_MTIME, .mtime = { 3000, 0 } };
	CHECK(fs, tessera_setattr(fs, "/ut", &sa));
	CHECK(fs, tessera_stat(fs, "/ut", &st));
	assert_int_equal(st.mtime.tv_sec, 3000);
	assert_true(st.atime.tv_sec > 1000000000);
	CHECK(fs, tessera_set_thread_cred(fs, &user));
	sa = (struct tessera_setattr){ .valid = TESSERA_SET_ATIME_NOW | TESSERA_SET_MTIME_NOW };
	CHECK(fs, tessera_setattr(fs, "/ut", &sa));
	sa = (struct tessera_setattr){ .valid = TESSERA_SET_MTIME, .mtime = { 5, 0 } };
	assert_int_equal(tessera_setattr(fs, "/ut", &sa), -EPERM);
	CHECK(fs, tessera_set_thread_cred(fs, NULL));
	CHECK(fs, tessera_stat(fs, "/ut", &st));
	assert_true(st.mtime.tv_sec > 1000000000);
}

/* fallocate: mode 0 allocates and grows the file to the range's end
 * (across all its objects), keep-size allocates only, bytes already
 * written stay; refusals: a read-only file, length 0, a "negative"
 * length, an end past the largest size, a mode not supported. */
static void test_fallocate(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_stat st;
	tessera_file *f;
	char buf[4] = "";

	CHECK(fs, tessera_open(fs, "/fa", O_RDWR | O_CREAT, 0644, NULL, &f));
	assert_int_equal(tessera_pwrite(f, "abc", 3, 0), 3);
	CHECK(fs, tessera_fallocate(f, TESSERA_FALLOC_EXTEND, 0, 8u << 20));
	CHECK(fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 8u << 20);
	print_message("8 MiB allocated: %llu blocks\n", (unsigned long long)st.blocks);
	assert_true(st.blocks >= (8u << 20) / 512);
	assert_int_equal(tessera_pread(f, buf, 3, 0), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_int_equal(tessera_pread(f, buf, 3, (8u << 20) - 3), 3);
	assert_memory_equal(buf, "\0\0\0", 3);
	/* keep-size past the end: allocated, size unchanged */
	CHECK(fs, tessera_fallocate(f, TESSERA_FALLOC_KEEP_SIZE, 8u << 20, 4u << 20));
	CHECK(fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 8u << 20);
	assert_true(st.blocks >= (12u << 20) / 512);
	/* a range inside the file: no change of size */
	CHECK(fs, tessera_fallocate(f, TESSERA_FALLOC_EXTEND, 1000, 1000));
	CHECK(fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 8u << 20);

	assert_int_equal(tessera_fallocate(f, TESSERA_FALLOC_EXTEND, 0, 0), -EINVAL);
	assert_int_equal(tessera_fallocate(f, TESSERA_FALLOC_EXTEND, 0, (uint64_t)-1), -EINVAL);
	assert_int_equal(tessera_fallocate(f, TESSERA_FALLOC_EXTEND, (uint64_t)-4096, 1), -EINVAL);
	assert_int_equal(tessera_fallocate(f, TESSERA_FALLOC_EXTEND, (uint64_t)INT64_MAX - 10, 100),
			 -EFBIG);
	print_message("past the largest size: %s\n", tessera_errmsg(fs));
	assert_int_equal(tessera_fallocate(f, (enum tessera_falloc_mode)3, 0, 10), -EOPNOTSUPP);
	tessera_close(f);
	CHECK(fs, tessera_open(fs, "/fa", O_RDONLY, 0, NULL, &f));
	assert_int_equal(tessera_fallocate(f, TESSERA_FALLOC_EXTEND, 0, 100u << 20), -EBADF);
	tessera_close(f);
	CHECK(fs, tessera_stat(fs, "/fa", &st));
	assert_int_equal(st.size, 8u << 20);
}

/* The storage daemon checks a FALLOCATE itself: a length of 0 and an end
 * past INT64_MAX are refused whatever the client checked. */
static void test_fallocate_raw(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	Tessera__FallocateRequest m = TESSERA__FALLOCATE_REQUEST__INIT;
	struct tessera_layout l;
	tessera_file *f;
	struct raw raw;
	char msg[512];

	CHECK(fs, tessera_open(fs, "/fr", O_RDWR | O_CREAT, 0644, NULL, &f));
	CHECK(fs, tessera_file_layout(f, &l));
	raw_open(c, l.servers[0], &raw);
	raw.cap = file_cap(f);
	m.handle = l.handles[0];
	m.length = 0;
	assert_int_equal(raw_request(&raw, TP_OP_FALLOCATE, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EINVAL);
	m.offset = (uint64_t)INT64_MAX;
	m.length = 2;
	assert_int_equal(raw_request(&raw, TP_OP_FALLOCATE, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EFBIG);
	print_message("raw: %s\n", msg);
	m.offset = 0;
	m.length = 4096;
	assert_int_equal(raw_request(&raw, TP_OP_FALLOCATE, &m.base, NULL, 0, msg, sizeof(msg)), 0);
	protobuf_c_message_free_unpacked((ProtobufCMessage *)raw.cap, NULL);
	tnet_close(raw.net);
	tessera_close(f);
}

/* ------------------------------------------ what a change's reply says */

struct seen {
	int calls;
	char dir[256];
	struct tessera_stat st;
};

static void watch(const char *dir, const struct tessera_stat *st, void *arg)
{
	struct seen *s = arg;

	s->calls++;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->st = *st;
}

/* The watcher was called `calls` times so far, last for dir, with what a
 * stat of it says now. */
static void saw(tessera_fs *fs, const struct seen *s, int calls, const char *dir)
{
	struct tessera_stat now;

	assert_int_equal(s->calls, calls);
	assert_string_equal(s->dir, dir);
	CHECK(fs, tessera_stat(fs, dir, &now));
	assert_int_equal(s->st.handle, now.handle);
	assert_int_equal(s->st.size, now.size);
	assert_int_equal(s->st.nlink, now.nlink);
	assert_int_equal(s->st.mode, now.mode);
	assert_int_equal(s->st.mtime.tv_sec, now.mtime.tv_sec);
	assert_int_equal(s->st.mtime.tv_nsec, now.mtime.tv_nsec);
	assert_int_equal(s->st.ctime.tv_nsec, now.ctime.tv_nsec);
}

/* tessera_dir_watch: each call that changes a directory's entries hands
 * the watcher that directory's attributes as the change left them; an
 * open of an existing file with O_CREAT changes none. */
static void test_dir_watch(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct seen s = { 0 };
	tessera_file *f;

	tessera_dir_watch(fs, watch, &s);
	CHECK(fs, tessera_mkdir(fs, "/dw", 0755));
	saw(fs, &s, 1, "/");
	CHECK(fs, tessera_open(fs, "/dw/f", O_CREAT | O_EXCL | O_WRONLY, 0644, NULL, &f));
	CHECK(fs, tessera_close(f));
	saw(fs, &s, 2, "/dw");
	CHECK(fs, tessera_open(fs, "/dw/f", O_CREAT | O_WRONLY, 0644, NULL, &f));
	CHECK(fs, tessera_close(f));
	assert_int_equal(s.calls, 2);
	CHECK(fs, tessera_symlink(fs, "f", "/dw/l"));
	saw(fs, &s, 3, "/dw");
	CHECK(fs, tessera_link(fs, "/dw/f", "/dw/h"));
	saw(fs, &s, 4, "/dw");
	CHECK(fs, tessera_mknod(fs, "/dw/p", S_IFIFO | 0600, 0));
	saw(fs, &s, 5, "/dw");
	assert_int_equal(s.st.size, 4);   /* entries */
	CHECK(fs, tessera_unlink(fs, "/dw/h"));
	saw(fs, &s, 6, "/dw");
	CHECK(fs, tessera_unlink(fs, "/dw/l"));
	CHECK(fs, tessera_unlink(fs, "/dw/p"));
	CHECK(fs, tessera_unlink(fs, "/dw/f"));
	saw(fs, &s, 9, "/dw");
	assert_int_equal(s.st.size, 0);
	CHECK(fs, tessera_rmdir(fs, "/dw"));
	saw(fs, &s, 10, "/");
	assert_int_equal(tessera_unlink(fs, "/dw"), -ENOENT);  /* a failure: no call */
	assert_int_equal(s.calls, 10);
	tessera_dir_watch(fs, NULL, NULL);
}

/* tessera_setattr_stat: the attributes the change left, with the size of
 * a closed file; without it while the file is open for writing. */
static void test_setattr_stat(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE, .mode = 0600 };
	struct tessera_stat st, now;
	tessera_file *f;
	int sized;

	make_file(fs, "/sas", 0644);
	CHECK(fs, tessera_open(fs, "/sas", O_WRONLY, 0, NULL, &f));
	assert_int_equal(tessera_pwrite(f, "12345", 5, 0), 5);
	CHECK(fs, tessera_close(f));
	CHECK(fs, tessera_stat(fs, "/sas", &now));  /* the size is known now */
	CHECK(fs, tessera_setattr_stat(fs, "/sas", &sa, &st, &sized));
	assert_int_equal(sized, 1);
	assert_int_equal(st.size, 5);
	assert_int_equal(st.blocks, now.blocks);
	assert_int_equal(st.mode & 07777, 0600);
	CHECK(fs, tessera_open(fs, "/sas", O_WRONLY, 0, NULL, &f));
	sa.mode = 0640;
	CHECK(fs, tessera_setattr_stat(fs, "/sas", &sa, &st, &sized));
	assert_int_equal(sized, 0);
	assert_int_equal(st.size, 0);
	assert_int_equal(st.mode & 07777, 0640);
	CHECK(fs, tessera_close(f));
	assert_int_equal(tessera_setattr_stat(fs, "/nonesuch", &sa, &st, &sized), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_priv),
		cmocka_unit_test(test_non_owner_sets_suid),
		cmocka_unit_test(test_truncate_kills_privs),
		cmocka_unit_test(test_chown_kills_privs),
		cmocka_unit_test(test_blocks_sparse),
		cmocka_unit_test(test_statfs_once),
		cmocka_unit_test(test_rename_noreplace),
		cmocka_unit_test(test_rename_exchange),
		cmocka_unit_test(test_utimens_omit_now),
		cmocka_unit_test(test_fallocate),
		cmocka_unit_test(test_fallocate_raw),
		cmocka_unit_test(test_dir_watch),
		cmocka_unit_test(test_setattr_stat),
	};

	return cmocka_run_group_tests(tests, group_setup, cluster_teardown);
}
