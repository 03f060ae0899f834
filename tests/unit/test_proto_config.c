/*
 * test_proto_config.c - the configuration table and its parser
 * (proto/config.c, proto/tp_config_keys.h) and the size parser the CLI
 * shares (proto/size.c): every type, every range bound (refused just
 * outside, with a message stating the range), suffixes, unknown keys,
 * repeated keys, bad syntax, and defaults as they were before the table.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tproto.h"

#define BASE "mds = a:1\nios = b:2\n"

/* Parse BASE + one line; the status, with the message in err. */
static int parse_one(struct tp_config *cfg, const char *key, const char *value, char *err,
		     size_t errlen)
{
	char text[4096];

	snprintf(text, sizeof(text), BASE "%s = %s\n", key, value);
	err[0] = '\0';
	return tp_config_parse(text, "t", cfg, err, errlen);
}

static struct tp_config *new_cfg(void)
{
	struct tp_config *cfg = malloc(sizeof(*cfg));

	assert_non_null(cfg);
	return cfg;
}

static void test_size_parser(void **state)
{
	const struct {
		const char *text;
		int rc;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "65536", 0, 65536 },
		{ "64K", 0, 65536 },
		{ "64k", 0, 65536 },
		{ "64KB", 0, 65536 },
		{ "64KiB", 0, 65536 },
		{ "64kib", 0, 65536 },
		{ "1M", 0, 1 << 20 },
		{ "3G", 0, 3ull << 30 },
		{ "2T", 0, 2ull << 40 },
		{ "16777215T", 0, 16777215ull << 40 },
		{ "16777216T", -ERANGE, 0 },
		{ "99999999999999999999", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 K", -EINVAL, 0 },
		{ "1.5M", -EINVAL, 0 },
		{ "100B", -EINVAL, 0 },
		{ "1KX", -EINVAL, 0 },
		{ "1P", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;

		if (tp_parse_size(cases[i].text, &v) != cases[i].rc || v != cases[i].v)
			fail_msg("'%s': %llu", cases[i].text, (unsigned long long)v);
	}
	assert_int_equal(tp_parse_size(NULL, &(uint64_t){ 0 }), -EINVAL);
	tp_format_size(65536, buf, sizeof(buf));
	assert_string_equal(buf, "64 KiB");
	tp_format_size(4ull << 30, buf, sizeof(buf));
	assert_string_equal(buf, "4 GiB");
	tp_format_size(1025, buf, sizeof(buf));
	assert_string_equal(buf, "1025");
	tp_format_size(0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
}

/* The table is whole: every row has a doc and exactly one of a default or
 * what its absence means, and every default parses. */
static void test_table(void **state)
{
	struct tp_config *cfg = new_cfg();
	size_t n;
	const struct tp_config_key *keys = tp_config_keys(&n);
	char err[512];

	(void)state;
	assert_true(n >= 17);
	for (size_t i = 0; i < n; i++) {
		const struct tp_config_key *k = &keys[i];

		assert_ptr_equal(tp_config_key(k->key), k);
		assert_true(k->doc && *k->doc && k->unit);
		assert_true(!k->def != !k->unset);
		assert_true(k->min <= k->max);
		if (!k->def)
			continue;
		tp_config_defaults(cfg);
		if (tp_config_set(cfg, k->key, k->def, err, sizeof(err)))
			fail_msg("default of %s: %s", k->key, err);
	}
	assert_null(tp_config_key("bogus"));
	free(cfg);
}

/* The defaults the table gives are the ones tp_config_defaults set by
 * hand before it. */
static void test_defaults(void **state)
{
	struct tp_config *cfg = new_cfg();
	char err[256];

	(void)state;
	assert_int_equal(tp_config_parse(BASE, "t", cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg->provider, "tcp;msg");
	assert_int_equal(cfg->timeout_ms, 10000);
	assert_int_equal(cfg->connect_timeout_ms, 5000);
	assert_int_equal(cfg->max_io, 1 << 20);
	assert_int_equal(cfg->window, 16);
	assert_int_equal(cfg->strip_size, 65536);
	assert_int_equal(cfg->list_io_max_regions, 8192);
	assert_int_equal(cfg->lock_lease_ms, 10000);
	assert_int_equal(cfg->lock_list_batch, 0);
	assert_int_equal(cfg->cap_lifetime_ms, 600000);
	assert_int_equal(cfg->io_threads, TP_IO_THREADS_AUTO);
	assert_int_equal(cfg->local_reads, 1);
	assert_int_equal(cfg->root_squash, 0);
	assert_int_equal(cfg->daemon_uid, 0);
	assert_string_equal(cfg->admin_hosts, "");
	assert_int_equal(cfg->squash_uid, 65534);
	assert_int_equal(cfg->squash_gid, 65534);
	assert_string_equal(cfg->mount_point, "");
	assert_string_equal(cfg->munge_socket, "");
	assert_string_equal(cfg->key_file, "");
	assert_int_equal(cfg->n_ios, 1);
	free(cfg);
}

static uint64_t number_of(const struct tp_config *cfg, const struct tp_config_key *k)
{
	const char *f = (const char *)cfg + k->offset;

	return k->type == TP_CFG_SIZE64 ? *(const uint64_t *)f : *(const uint32_t *)f;
}

/* Every number: both bounds accepted, one past each refused with a
 * message that names the file, line, key and range. */
static void test_number_bounds(void **state)
{
	struct tp_config *cfg = new_cfg();
	size_t n;
	const struct tp_config_key *keys = tp_config_keys(&n);
	char err[512], expect[256], v[32], want[64];
	int numbers = 0;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		const struct tp_config_key *k = &keys[i];

		if (k->type != TP_CFG_U32 && k->type != TP_CFG_BOOL && k->type != TP_CFG_SIZE32 &&
		    k->type != TP_CFG_SIZE64)
			continue;
		numbers++;
		tp_config_expect(k, expect, sizeof(expect));
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k->min);
		if (parse_one(cfg, k->key, v, err, sizeof(err)))
			fail_msg("%s = %s: %s", k->key, v, err);
		assert_int_equal(number_of(cfg, k), k->min);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k->max);
		if (parse_one(cfg, k->key, v, err, sizeof(err)))
			fail_msg("%s = %s: %s", k->key, v, err);
		assert_int_equal(number_of(cfg, k), k->max);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k->max + 1);
		assert_int_equal(parse_one(cfg, k->key, v, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "t:3: bad value '%s' for '%s'", v, k->key);
		if (!strstr(err, want) || !strstr(err, expect))
			fail_msg("'%s' does not say '%s' and '%s'", err, want, expect);
		if (k->min) {
			snprintf(v, sizeof(v), "%llu", (unsigned long long)k->min - 1);
			assert_int_equal(parse_one(cfg, k->key, v, err, sizeof(err)), -EINVAL);
			assert_non_null(strstr(err, expect));
		}
		/* never a sign, a fraction or spaces inside */
		assert_int_equal(parse_one(cfg, k->key, "-1", err, sizeof(err)), -EINVAL);
		assert_int_equal(parse_one(cfg, k->key, "1.0", err, sizeof(err)), -EINVAL);
		assert_int_equal(parse_one(cfg, k->key, "1 0", err, sizeof(err)), -EINVAL);
		assert_int_equal(parse_one(cfg, k->key, "", err, sizeof(err)), -EINVAL);
	}
	assert_int_equal(numbers, 36);
	free(cfg);
}

static void test_range_messages(void **state)
{
	const struct {
		const char *key, *value, *words;
	} cases[] = {
		{ "timeout_ms", "0", "expected an integer from 1 to 3600000 (ms)" },
		{ "root_squash", "2", "expected an integer from 0 to 1" },
		{ "sieve_gap", "65M", "expected a size in bytes from 0 to 64 MiB" },
		{ "sieve_span", "-4K", "from 0 to 64 MiB" },
		{ "csum_block", "256", "expected a size in bytes from 512 to 1 MiB" },
		{ "csum_block", "2M", "from 512 to 1 MiB" },
		{ "io_threads", "65", "expected an integer from 0 to 64 (threads)" },
		{ "cap_lifetime_ms", "99", "from 100 to 604800000 (ms)" },
		{ "max_io", "4095", "expected a size in bytes from 4 KiB to 64 MiB" },
		{ "max_io", "65M", "suffixes K, M, G, T" },
		{ "strip_size", "0", "expected a size in bytes from 1 to 4 GiB" },
		{ "strip_size", "4097M", "from 1 to 4 GiB" },
		{ "provider", "", "a non-empty string of at most 63 bytes" },
		{ "mount_point", "relative", "an absolute path of at most 1023 bytes" },
		{ "key_file", "", "an absolute path" },
		{ "munge_socket", "sock", "an absolute path" },
		{ "mds", "b:1", "expected HOST:PORT or [IPV6]:PORT, on one line" },
		{ "ios", "nocolon", "HOST:PORT or [IPV6]:PORT, on at most 256 lines" },
		{ "ios", "b:", "HOST:PORT" },
		{ "ios", ":1", "HOST:PORT" },
		{ "ios", "b:12a", "HOST:PORT" },
		{ "admin_hosts", "a;b", "host names or addresses separated by spaces or commas" },
		{ "admin_hosts", " , ", "host names or addresses" },
		{ "admin_hosts", "a/b", "host names or addresses" },
	};
	struct tp_config *cfg = new_cfg();
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse_one(cfg, cases[i].key, cases[i].value, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, "t:3: bad value") || !strstr(err, cases[i].words))
			fail_msg("%s = %s: '%s' does not say '%s'", cases[i].key, cases[i].value,
				 err, cases[i].words);
	}
	free(cfg);
}

static void test_suffixes(void **state)
{
	const struct {
		const char *key, *value;
		uint64_t want;
	} ok[] = {
		{ "strip_size", "64K", 65536 },
		{ "strip_size", "64KiB", 65536 },
		{ "strip_size", "1m", 1 << 20 },
		{ "strip_size", "4G", 4ull << 30 },
		{ "max_io", "64MiB", 64u << 20 },
		{ "max_io", "4K", 4096 },
	};
	const char *bad[][2] = {
		{ "strip_size", "64X" }, { "strip_size", "64 K" }, { "strip_size", "1.5M" },
		{ "strip_size", "1T" }, { "max_io", "1G" },
		/* counts and times are plain integers */
		{ "timeout_ms", "1K" }, { "window", "1K" }, { "list_io_max_regions", "8K" },
	};
	struct tp_config *cfg = new_cfg();
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (parse_one(cfg, ok[i].key, ok[i].value, err, sizeof(err)))
			fail_msg("%s = %s: %s", ok[i].key, ok[i].value, err);
		assert_int_equal(number_of(cfg, tp_config_key(ok[i].key)), ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse_one(cfg, bad[i][0], bad[i][1], err, sizeof(err)) != -EINVAL)
			fail_msg("%s = %s accepted", bad[i][0], bad[i][1]);
	free(cfg);
}

static void test_text_lengths(void **state)
{
	struct tp_config *cfg = new_cfg();
	char err[512], v[1100];

	(void)state;
	memset(v, 'p', 63);
	v[63] = '\0';
	assert_int_equal(parse_one(cfg, "provider", v, err, sizeof(err)), 0);
	assert_int_equal(strlen(cfg->provider), 63);
	strcat(v, "p");
	assert_int_equal(parse_one(cfg, "provider", v, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 63 bytes"));
	v[0] = '/';
	memset(v + 1, 'd', 1022);
	v[1023] = '\0';
	assert_int_equal(parse_one(cfg, "key_file", v, err, sizeof(err)), 0);
	assert_int_equal(strlen(cfg->key_file), 1023);
	strcat(v, "d");
	assert_int_equal(parse_one(cfg, "key_file", v, err, sizeof(err)), -EINVAL);
	/* a mount point's trailing slashes go, but "/" stays */
	assert_int_equal(parse_one(cfg, "mount_point", "/mnt/x//", err, sizeof(err)), 0);
	assert_string_equal(cfg->mount_point, "/mnt/x");
	assert_int_equal(parse_one(cfg, "mount_point", "/", err, sizeof(err)), 0);
	assert_string_equal(cfg->mount_point, "/");
	/* a host list is kept as written, words separated by spaces or commas */
	assert_int_equal(parse_one(cfg, "admin_hosts", "adm1, 10.0.0.7 fe80::1%eth0", err,
				   sizeof(err)), 0);
	assert_string_equal(cfg->admin_hosts, "adm1, 10.0.0.7 fe80::1%eth0");
	free(cfg);
}

static void test_repeats(void **state)
{
	struct tp_config *cfg = new_cfg();
	char err[512], *text = malloc(300 * 32);
	size_t len;

	(void)state;
	assert_non_null(text);
	/* scalars: the last line wins (tests append overrides to a config) */
	assert_int_equal(tp_config_parse(BASE "timeout_ms = 5\ntimeout_ms = 7\n", "t", cfg, err,
					 sizeof(err)), 0);
	assert_int_equal(cfg->timeout_ms, 7);
	/* mds once */
	assert_int_equal(tp_config_parse("mds = a:1\nios = b:2\nmds = a:1\n", "t", cfg, err,
					 sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:3: bad value 'a:1' for 'mds': expected"));
	assert_non_null(strstr(err, "on one line"));
	/* ios: a line each, up to TP_MAX_SERVERS */
	len = (size_t)sprintf(text, "mds = a:1\n");
	for (int i = 0; i < TP_MAX_SERVERS; i++)
		len += (size_t)sprintf(text + len, "ios = h%d:%d\n", i, 7000 + i);
	assert_int_equal(tp_config_parse(text, "t", cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg->n_ios, TP_MAX_SERVERS);
	assert_string_equal(cfg->ios[255].host, "h255");
	assert_string_equal(cfg->ios[255].port, "7255");
	sprintf(text + len, "ios = one:1\n");
	assert_int_equal(tp_config_parse(text, "t", cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:258: bad value 'one:1' for 'ios'"));
	assert_non_null(strstr(err, "at most 256 lines"));
	free(text);
	free(cfg);
}

static void test_syntax(void **state)
{
	const struct {
		const char *text, *words;
	} bad[] = {
		{ BASE "bogus = 1\n", "t:3: unknown key 'bogus'" },
		{ BASE "Timeout_ms = 1\n", "t:3: unknown key 'Timeout_ms'" },
		{ BASE "= 5\n", "t:3: unknown key ''" },
		{ BASE "timeout_ms 5\n", "t:3: expected 'key = value', got 'timeout_ms 5'" },
		{ BASE "\n\n  # comment\nwindow = 0\n", "t:6: bad value '0' for 'window'" },
		{ BASE "window = 1 = 2\n", "t:3: bad value '1 = 2' for 'window'" },
		{ "ios = a:1\n", "t: no 'mds = HOST:PORT' line" },
		{ "mds = a:1\n", "t: no 'ios = HOST:PORT' line" },
		{ "", "t: no 'mds" },
	};
	struct tp_config *cfg = new_cfg();
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(tp_config_parse(bad[i].text, "t", cfg, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].words))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].words);
	}
	/* comments, blank lines, CRLF, spaces and tabs around keys and values */
	assert_int_equal(tp_config_parse("# top\r\n\r\n\tmds=a:1 # x\r\nios =  [::1]:2\t\r\n"
					 "provider = verbs;ofi_rxm#c\n# end", "t", cfg, err,
					 sizeof(err)), 0);
	assert_string_equal(cfg->mds.host, "a");
	assert_string_equal(cfg->ios[0].host, "::1");
	assert_string_equal(cfg->ios[0].port, "2");
	assert_string_equal(cfg->provider, "verbs;ofi_rxm");
	free(cfg);
}

/* tp_config_set, the parser's step for one key, says why without a
 * file and line. */
static void test_set(void **state)
{
	struct tp_config *cfg = new_cfg();
	char err[512];

	(void)state;
	tp_config_defaults(cfg);
	assert_int_equal(tp_config_set(cfg, "strip_size", "2M", err, sizeof(err)), 0);
	assert_int_equal(cfg->strip_size, 2 << 20);
	assert_int_equal(tp_config_set(cfg, "nope", "1", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown key 'nope'");
	assert_int_equal(tp_config_set(cfg, "window", "0", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad value '0' for 'window': expected an integer from 1 to "
				 "1024 (requests)");
	free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_parser),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_number_bounds),
		cmocka_unit_test(test_range_messages),
		cmocka_unit_test(test_suffixes),
		cmocka_unit_test(test_text_lengths),
		cmocka_unit_test(test_repeats),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
