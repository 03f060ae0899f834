/*
 * test_client_abi.c - the public structs of tessera.h keep their sizes
 * within one ABI. The soname is libtessera.so.0.N while the major version
 * is 0 (client/client.mk, from TESSERA_VERSION): a struct that grows or
 * shrinks under the same soname breaks every program built before the
 * change, which the loader still hands the new library (the MPICH library
 * with the driver, cached by soname, crashed in MPI_File_get_size when
 * struct tessera_stat grew). So: change a public struct, raise the minor
 * version in tessera.h, and add the new sizes here as a new row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"

struct abi_size {
	const char *name;
	size_t size;
};

#define ABI_SIZE(s, n) { #s, n }
#define ABI_STRUCTS 19

/* The sizes each ABI (its "0.N") was released with, on x86-64. */
static const struct abi_row {
	const char *abi;
	struct abi_size sizes[ABI_STRUCTS];
} known[] = {
	{ "0.4", {
		ABI_SIZE(tessera_layout, 3088),
		ABI_SIZE(tessera_stat, 96),
		ABI_SIZE(tessera_dirent, 272),
		ABI_SIZE(tessera_statfs, 40),
		ABI_SIZE(tessera_cred, 264),
		ABI_SIZE(tessera_setattr, 48),
		ABI_SIZE(tessera_ping, 264),
		ABI_SIZE(tessera_server_status, 344),
		ABI_SIZE(tessera_write_outcome, 40),
		ABI_SIZE(tessera_file_share, 6176),
		ABI_SIZE(tessera_lock_conflict, 24),
		ABI_SIZE(tessera_lock_info, 40),
		ABI_SIZE(tessera_copy_stats, 40),
		ABI_SIZE(tessera_server_space, 504),
		ABI_SIZE(tessera_fsck, 72),
		ABI_SIZE(tessera_snapshot, 280),
		ABI_SIZE(tessera_version_state, 32),
		ABI_SIZE(tessera_vlog_state, 48),
		ABI_SIZE(tessera_version_ids, 80), /* new in 0.4: no program has an older size */
	} },
};

#define NOW(s) { #s, sizeof(struct s) }

static const struct abi_size now[ABI_STRUCTS] = {
	NOW(tessera_layout), NOW(tessera_stat), NOW(tessera_dirent), NOW(tessera_statfs),
	NOW(tessera_cred), NOW(tessera_setattr), NOW(tessera_ping), NOW(tessera_server_status),
	NOW(tessera_write_outcome), NOW(tessera_file_share), NOW(tessera_lock_conflict),
	NOW(tessera_lock_info), NOW(tessera_copy_stats), NOW(tessera_server_space),
	NOW(tessera_fsck), NOW(tessera_snapshot), NOW(tessera_version_state),
	NOW(tessera_vlog_state), NOW(tessera_version_ids),
};

/* "0.4" of "0.4.0": the part of the version the soname carries. */
static void abi_of(const char *version, char *out, size_t len)
{
	const char *dot = strchr(version, '.');
	size_t n = dot && strchr(dot + 1, '.') ? (size_t)(strchr(dot + 1, '.') - version)
					       : strlen(version);

	snprintf(out, len, "%.*s", (int)n, version);
}

static void test_sizes_match_the_abi(void **state)
{
	char abi[16];
	int bad = 0;

	(void)state;
	abi_of(TESSERA_VERSION, abi, sizeof(abi));
	for (size_t r = 0; r < sizeof(known) / sizeof(known[0]); r++) {
		if (strcmp(known[r].abi, abi))
			continue;
		for (int i = 0; i < ABI_STRUCTS; i++) {
			assert_string_equal(known[r].sizes[i].name, now[i].name);
			if (known[r].sizes[i].size != now[i].size) {
				fprintf(stderr, "struct %s is %zu bytes, ABI %s has %zu: raise the "
					"minor version in tessera.h (a new soname) and add a row\n",
					now[i].name, now[i].size, abi, known[r].sizes[i].size);
				bad++;
			}
		}
		assert_int_equal(bad, 0);
		return;
	}
	fail_msg("no sizes recorded for ABI %s (TESSERA_VERSION %s): add its row",
		 abi, TESSERA_VERSION);
}

/* The layout's kind (versioned files) took what was padding in 0.4: the
 * fields around it stay where programs built before expect them. */
static void test_layout_kind_in_padding(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct tessera_layout, servers), 12);
	assert_int_equal(offsetof(struct tessera_layout, kind), 1036);
	assert_int_equal(sizeof(enum tessera_layout_kind), 4);
	assert_int_equal(offsetof(struct tessera_layout, handles), 1040);
	assert_int_equal(TESSERA_LAYOUT_PLAIN, 0);   /* a zeroed layout is plain */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_match_the_abi),
		cmocka_unit_test(test_layout_kind_in_padding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
