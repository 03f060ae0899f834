/*
 * test_core_cap.c - capability keys and MACs (server/core/cap.c): key files are
 * read only when well formed and private; a signature verifies under its
 * key only, and a change to any signed field breaks it.
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
#include <unistd.h>
#include <cmocka.h>

#include "cap.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tessera-cap-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write text to dir/name with mode; its path in path. */
static void key_file(const char *name, const char *text, mode_t mode, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	unlink(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

#define HEX64 "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF"

static void test_key_load(void **state)
{
	struct cap_key k;
	char path[128], err[512];

	(void)state;
	key_file("good", HEX64 "\n", 0600, path, sizeof(path));
	assert_int_equal(cap_key_load(path, &k, err, sizeof(err)), 0);
	assert_int_equal(k.key[0], 0x00);
	assert_int_equal(k.key[1], 0x11);
	assert_int_equal(k.key[31], 0xff);
	key_file("bare", HEX64, 0400, path, sizeof(path));
	assert_int_equal(cap_key_load(path, &k, err, sizeof(err)), 0);

	static const mode_t open_modes[] = { 0644, 0640, 0604, 0660, 0606 };
	for (size_t i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
		key_file("open", HEX64 "\n", open_modes[i], path, sizeof(path));
		assert_int_equal(cap_key_load(path, &k, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, path));
		assert_non_null(strstr(err, "group or others"));
	}
	static const char *bad[] = {
		"", "\n", "0011", HEX64 "00", "x" HEX64, HEX64 "x",
		"0011223344556677889 aabbccddeeff00112233445566778899aabbccddeeff",
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeef",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		key_file("bad", bad[i], 0600, path, sizeof(path));
		assert_int_equal(cap_key_load(path, &k, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "hex digits"));
	}
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(cap_key_load(path, &k, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	assert_int_equal(cap_key_load("", &k, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "key_file"));
}

static void test_sign_verify(void **state)
{
	struct cap_key k = { { 1, 2, 3 } }, other = { { 1, 2, 4 } };
	uint64_t handles[3] = { 10, 11, 12 }, copy[3];
	uint8_t mac[TP_CAP_MAC_LEN];
	Tessera__Capability c = TESSERA__CAPABILITY__INIT, t;

	(void)state;
	c.file = 9;
	c.handles = handles;
	c.n_handles = 3;
	c.rights = TP_CAP_READ | TP_CAP_STAT;
	c.uid = 1000;
	c.expires_ns = 123456789;
	assert_int_equal(cap_sign(&k, &c, mac), 0);
	assert_ptr_equal(c.mac.data, mac);
	assert_int_equal(c.mac.len, TP_CAP_MAC_LEN);
	assert_true(cap_mac_ok(&k, &c));
	assert_false(cap_mac_ok(&other, &c));

	/* each signed field, changed, breaks the MAC */
	t = c; t.file++; assert_false(cap_mac_ok(&k, &t));
	t = c; t.rights |= TP_CAP_WRITE; assert_false(cap_mac_ok(&k, &t));
	t = c; t.uid = 0; assert_false(cap_mac_ok(&k, &t));
	t = c; t.expires_ns++; assert_false(cap_mac_ok(&k, &t));
	t = c; t.n_handles = 2; assert_false(cap_mac_ok(&k, &t));
	memcpy(copy, handles, sizeof(copy));
	copy[2]++;
	t = c; t.handles = copy; assert_false(cap_mac_ok(&k, &t));
	t = c; t.mac.len = 31; assert_false(cap_mac_ok(&k, &t));
	t = c; t.mac.len = 0; t.mac.data = NULL; assert_false(cap_mac_ok(&k, &t));
	mac[0] ^= 0x80;
	assert_false(cap_mac_ok(&k, &c));
	mac[0] ^= 0x80;
	assert_true(cap_mac_ok(&k, &c));

	/* (handles, count) are not confused with the fields after them */
	assert_int_equal(cap_encoded_size(&c), 36 + 3 * 8);

	/* more handles than any file has: refused, never signed */
	uint64_t *many = calloc(TP_CAP_MAX_HANDLES + 1, sizeof(*many));

	assert_non_null(many);
	t = c;
	t.handles = many;
	t.n_handles = TP_CAP_MAX_HANDLES + 1;
	assert_int_equal(cap_sign(&k, &t, mac), -EINVAL);
	assert_false(cap_mac_ok(&k, &t));
	t.n_handles = TP_CAP_MAX_HANDLES;
	assert_int_equal(cap_sign(&k, &t, mac), 0);
	assert_true(cap_mac_ok(&k, &t));
	free(many);
}

/* A block of writer ID#s (VERSION_ID's answer): each field is signed,
 * and no other kind's MAC over the same numbers verifies as one (the
 * tags differ). */
static void test_ids_sign_verify(void **state)
{
	struct cap_key k = { { 7, 7, 7 } }, other = { { 7, 7, 8 } };
	uint8_t mac[TP_CAP_MAC_LEN], cmac[TP_CAP_MAC_LEN];
	Tessera__VersionIds b = TESSERA__VERSION_IDS__INIT, t;
	Tessera__VersionCommit c = TESSERA__VERSION_COMMIT__INIT;

	(void)state;
	b.file = 0x1234;
	b.first = 5;
	b.count = 8;
	assert_int_equal(cap_sign_ids(&k, &b, mac), 0);
	assert_ptr_equal(b.mac.data, mac);
	assert_int_equal(b.mac.len, TP_CAP_MAC_LEN);
	assert_true(cap_ids_ok(&k, &b));
	assert_false(cap_ids_ok(&other, &b));
	t = b; t.file++; assert_false(cap_ids_ok(&k, &t));
	t = b; t.first++; assert_false(cap_ids_ok(&k, &t));
	t = b; t.count++; assert_false(cap_ids_ok(&k, &t));
	t = b; t.mac.len = 31; assert_false(cap_ids_ok(&k, &t));
	t = b; t.mac.len = 0; t.mac.data = NULL; assert_false(cap_ids_ok(&k, &t));
	/* a commit's MAC over the same file is no block's */
	c.file = b.file;
	c.t = (uint64_t)b.count << 32 | b.first;
	assert_int_equal(cap_sign_commit(&k, &c, cmac), 0);
	t = b; t.mac = c.mac; assert_false(cap_ids_ok(&k, &t));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key_load, setup, teardown),
		cmocka_unit_test(test_sign_verify),
		cmocka_unit_test(test_ids_sign_verify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
