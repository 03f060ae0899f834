/*
 * test_xattr.c - extended attributes through the library on real daemons
 * (tessera_getxattr & co.): values, set modes, limits, namespaces, a
 * second user refused where Linux refuses, attributes gone with the file;
 * and the metadata daemon's own refusals of hostile raw requests that the
 * library would never send (sizes, names, modes).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define F TESSERA_FOLLOW

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static int set(tessera_fs *fs, const char *path, const char *name, const char *value,
	       enum tessera_xattr_set how)
{
	return tessera_setxattr(fs, path, name, value, strlen(value), how, F);
}

static void test_values(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	char buf[128];

	cluster_put_file(fs, "/f", 0644, "data");
	CHECK(fs, set(fs, "/f", "user.mime_type", "text/plain", TESSERA_XATTR_SET_ANY));
	CHECK(fs, set(fs, "/f", "user.a", "1", TESSERA_XATTR_SET_CREATE));
	assert_int_equal(set(fs, "/f", "user.a", "2", TESSERA_XATTR_SET_CREATE), -EEXIST);
	assert_int_equal(set(fs, "/f", "user.b", "2", TESSERA_XATTR_SET_REPLACE), -ENODATA);
	print_message("replace of a missing attribute: %s\n", tessera_errmsg(fs));
	assert_non_null(strstr(tessera_errmsg(fs), "/f"));
	/* size 0 asks the length; too small a buffer is ERANGE */
	assert_int_equal(tessera_getxattr(fs, "/f", "user.mime_type", NULL, 0, F), 10);
	assert_int_equal(tessera_getxattr(fs, "/f", "user.mime_type", buf, 4, F), -ERANGE);
	assert_int_equal(tessera_getxattr(fs, "/f", "user.mime_type", buf, sizeof(buf), F), 10);
	assert_memory_equal(buf, "text/plain", 10);
	/* lists, in name order */
	assert_int_equal(tessera_listxattr(fs, "/f", NULL, 0, F), 7 + 15);
	assert_int_equal(tessera_listxattr(fs, "/f", buf, 5, F), -ERANGE);
	assert_int_equal(tessera_listxattr(fs, "/f", buf, sizeof(buf), TESSERA_NOFOLLOW), 22);
	assert_memory_equal(buf, "user.a\0user.mime_type\0", 22);
	CHECK(fs, tessera_removexattr(fs, "/f", "user.a", F));
	assert_int_equal(tessera_removexattr(fs, "/f", "user.a", F), -ENODATA);
	assert_int_equal(tessera_getxattr(fs, "/f", "user.a", buf, sizeof(buf), F), -ENODATA);
	/* directories, and the mount point's path */
	CHECK(fs, tessera_mkdir(fs, "/d", 0755));
	CHECK(fs, set(fs, "/d", "trusted.t", "root's", TESSERA_XATTR_SET_ANY));
	CHECK(fs, set(fs, "/", "user.root", "r", TESSERA_XATTR_SET_ANY));
	assert_int_equal(tessera_getxattr(fs, "/d", "trusted.t", buf, sizeof(buf), F), 6);
	/* ACLs are refused, never stored */
	assert_int_equal(set(fs, "/f", "system.posix_acl_access", "x", TESSERA_XATTR_SET_ANY),
			 -EOPNOTSUPP);
	assert_int_equal(tessera_getxattr(fs, "/f", "system.posix_acl_default", buf, sizeof(buf),
					  F), -EOPNOTSUPP);
	assert_int_equal(tessera_listxattr(fs, "/f", NULL, 0, F), 15);
	/* a file's attributes go with its last name */
	CHECK(fs, tessera_unlink(fs, "/f"));
	assert_int_equal(tessera_listxattr(fs, "/f", NULL, 0, F), -ENOENT);
	cluster_put_file(fs, "/f", 0644, "again");
	assert_int_equal(tessera_listxattr(fs, "/f", NULL, 0, F), 0);
}

static void test_limits(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	char name[300];
	char *big = malloc(TESSERA_XATTR_SIZE_MAX + 1);
	char *back = malloc(TESSERA_XATTR_SIZE_MAX);
	int i;

	assert_non_null(big);
	assert_non_null(back);
	memset(big, 'v', TESSERA_XATTR_SIZE_MAX + 1);
	cluster_put_file(fs, "/f", 0644, "");
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[256] = '\0';
	assert_int_equal(set(fs, "/f", name, "v", TESSERA_XATTR_SET_ANY), -ERANGE);
	name[255] = '\0';
	CHECK(fs, set(fs, "/f", name, "v", TESSERA_XATTR_SET_ANY));
	assert_int_equal(set(fs, "/f", "", "v", TESSERA_XATTR_SET_ANY), -ERANGE);
	/* 64 KiB values, and no larger */
	CHECK(fs, tessera_setxattr(fs, "/f", "user.big", big, TESSERA_XATTR_SIZE_MAX,
				   TESSERA_XATTR_SET_ANY, F));
	assert_int_equal(tessera_setxattr(fs, "/f", "user.big1", big, TESSERA_XATTR_SIZE_MAX + 1,
					  TESSERA_XATTR_SET_ANY, F), -E2BIG);
	assert_int_equal(tessera_getxattr(fs, "/f", "user.big", back, TESSERA_XATTR_SIZE_MAX, F),
			 TESSERA_XATTR_SIZE_MAX);
	assert_memory_equal(back, big, TESSERA_XATTR_SIZE_MAX);
	/* a file's total */
	for (i = 2; i <= 3; i++) {
		snprintf(name, sizeof(name), "user.big%d", i);
		CHECK(fs, tessera_setxattr(fs, "/f", name, big, TESSERA_XATTR_SIZE_MAX,
					   TESSERA_XATTR_SET_ANY, F));
	}
	assert_int_equal(tessera_setxattr(fs, "/f", "user.big4", big, TESSERA_XATTR_SIZE_MAX,
					  TESSERA_XATTR_SET_ANY, F), -ENOSPC);
	print_message("over the total: %s\n", tessera_errmsg(fs));
	free(big);
	free(back);
}

/* Root's session acts for another user (as the mount does). */
static void act_as(tessera_fs *fs, uint32_t uid)
{
	struct tessera_cred cred = { .uid = uid, .ngids = 1, .gids = { uid } };

	CHECK(fs, tessera_set_thread_cred(fs, uid ? &cred : NULL));
}

static void test_second_user(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	char buf[64];

	CHECK(fs, tessera_mkdir(fs, "/t", 01777));
	act_as(fs, 1000);
	cluster_put_file(fs, "/t/mine", 0644, "1000's");
	CHECK(fs, set(fs, "/t/mine", "user.owner", "1000", TESSERA_XATTR_SET_ANY));
	/* security. is root's to set */
	assert_int_equal(set(fs, "/t/mine", "security.label", "x", TESSERA_XATTR_SET_ANY), -EPERM);
	act_as(fs, 0);
	CHECK(fs, set(fs, "/t/mine", "security.label", "x", TESSERA_XATTR_SET_ANY));
	CHECK(fs, set(fs, "/t/mine", "trusted.secret", "s", TESSERA_XATTR_SET_ANY));
	act_as(fs, 2000);
	/* reading needs read permission, writing write permission */
	assert_int_equal(tessera_getxattr(fs, "/t/mine", "user.owner", buf, sizeof(buf), F), 4);
	assert_int_equal(set(fs, "/t/mine", "user.owner", "2000", TESSERA_XATTR_SET_ANY), -EACCES);
	print_message("second user: %s\n", tessera_errmsg(fs));
	assert_int_equal(tessera_removexattr(fs, "/t/mine", "user.owner", F), -EACCES);
	/* trusted.: invisible and untouchable */
	assert_int_equal(tessera_getxattr(fs, "/t/mine", "trusted.secret", buf, sizeof(buf), F),
			 -ENODATA);
	assert_int_equal(set(fs, "/t/mine", "trusted.x", "1", TESSERA_XATTR_SET_ANY), -EPERM);
	assert_int_equal(tessera_listxattr(fs, "/t/mine", buf, sizeof(buf), F), 15 + 11);
	assert_memory_equal(buf, "security.label\0user.owner\0", 26);
	/* a sticky directory's own attributes are its owner's */
	assert_int_equal(set(fs, "/t", "user.x", "1", TESSERA_XATTR_SET_ANY), -EPERM);
	act_as(fs, 0);
	CHECK(fs, set(fs, "/t", "user.x", "1", TESSERA_XATTR_SET_ANY));
}

/* Requests the library would not send: the daemon refuses them itself. */
static void test_raw_refusals(void **state)
{
	struct cluster *c = *state;
	Tessera__XattrRequest m = TESSERA__XATTR_REQUEST__INIT;
	size_t big_len = 1u << 20;
	uint8_t *big = calloc(1, big_len);
	struct raw raw;
	char msg[512];

	assert_non_null(big);
	cluster_put_file(c->fs, "/f", 0644, "");
	CHECK(c->fs, set(c->fs, "/f", "user.a", "1", TESSERA_XATTR_SET_ANY));
	raw_open_mds(c, &raw);
	m.path = "/f";
	m.name.data = (uint8_t *)"user.a";
	m.name.len = 6;
	/* a value over 64 KiB */
	m.value.data = big;
	m.value.len = TESSERA_XATTR_SIZE_MAX + 1;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -E2BIG);
	print_message("raw set of 64 KiB + 1: %s\n", msg);
	m.value.len = big_len;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -E2BIG);
	/* an unknown set mode */
	m.value.len = 1;
	m.how = 9;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EINVAL);
	m.how = 0;
	/* names: too long, with a NUL, none */
	m.name.data = big;
	memcpy(big, "user.", 5);
	memset(big + 5, 'n', 300);
	m.name.len = 300;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -ERANGE);
	m.name.data = (uint8_t *)"user.a\0b";
	m.name.len = 8;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EINVAL);
	m.name.len = 0;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_GET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -ERANGE);
	/* a huge buffer asked for costs no more than the value */
	m.name.data = (uint8_t *)"user.a";
	m.name.len = 6;
	m.size = UINT32_MAX;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_GET, &m.base, NULL, 0, msg, sizeof(msg)),
			 0);
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_LIST, &m.base, NULL, 0, msg, sizeof(msg)),
			 0);
	/* a bad path */
	m.path = "relative";
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_LIST, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EINVAL);
	tnet_close(raw.net);
	free(big);
}

/* A session of uid 65534 whose requests claim uid 0: judged as nobody's
 * (the daemon takes who acts from the session, as for every namespace
 * request), so root's namespaces and root's file stay out of reach. */
static void test_claimed_root(void **state)
{
	struct cluster *c = *state;
	Tessera__XattrRequest m = TESSERA__XATTR_REQUEST__INIT;
	Tessera__Cred root = TESSERA__CRED__INIT;
	uint32_t gid = 0;
	struct raw raw;
	char msg[512], buf[16];

	NEED_ROOT(getuid() == 0);
	cluster_put_file(c->fs, "/f", 0644, "root's");
	CHECK(c->fs, set(c->fs, "/f", "trusted.t", "root's", TESSERA_XATTR_SET_ANY));
	raw_open_as_nobody(c, -1, &raw);
	root.n_gids = 1;
	root.gids = &gid;
	m.cred = &root;
	m.path = "/f";
	m.value.data = (uint8_t *)"x";
	m.value.len = 1;
	m.name.data = (uint8_t *)"trusted.x";
	m.name.len = 9;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EPERM);
	print_message("trusted. claiming uid 0: %s\n", msg);
	m.name.data = (uint8_t *)"security.x";
	m.name.len = 10;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EPERM);
	m.name.data = (uint8_t *)"user.x";
	m.name.len = 6;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_SET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -EACCES);
	m.name.data = (uint8_t *)"trusted.t";
	m.name.len = 9;
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_GET, &m.base, NULL, 0, msg, sizeof(msg)),
			 -ENODATA);
	assert_int_equal(raw_request(&raw, TP_OP_XATTR_REMOVE, &m.base, NULL, 0, msg,
				     sizeof(msg)), -EPERM);
	tnet_close(raw.net);
	assert_int_equal(tessera_getxattr(c->fs, "/f", "trusted.t", buf, sizeof(buf), F), 6);
	assert_int_equal(tessera_listxattr(c->fs, "/f", NULL, 0, F), 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_values, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_second_user, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_raw_refusals, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_claimed_root, setup, cluster_teardown),
	};

	return cmocka_run_group_tests_name("xattr", tests, NULL, NULL);
}
