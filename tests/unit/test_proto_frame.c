/* test_proto_frame.c - frames, message encode/decode and config parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tproto.h"

#define MAX_FRAME (1 << 20)

static long build_read(uint8_t *buf, size_t cap, uint64_t reqid)
{
	Tessera__ReadRequest m = TESSERA__READ_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_READ, .reqid = reqid };

	m.handle = 0x1234567890abcdefull;
	m.offset = 1ull << 40;
	m.length = 65536;
	return tp_frame_build(buf, cap, &h, "addr-bytes", 10, &m.base);
}

static void test_roundtrip(void **state)
{
	uint8_t buf[512];
	struct tp_frame fr;
	char err[256];
	long len = build_read(buf, sizeof(buf), 42);
	Tessera__ReadRequest *m;

	(void)state;
	assert_true(len > TP_HDR_SIZE + 10);
	assert_int_equal(tp_frame_parse(buf, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), 0);
	assert_int_equal(fr.hdr.magic, TP_MAGIC);
	assert_int_equal(fr.hdr.version, TP_VERSION);
	assert_int_equal(fr.hdr.opcode, TP_OP_READ);
	assert_int_equal(fr.hdr.reqid, 42);
	assert_int_equal(fr.hdr.addr_len, 10);
	assert_memory_equal(fr.addr, "addr-bytes", 10);
	m = (Tessera__ReadRequest *)tp_body_unpack(&fr, tp_request_desc(TP_OP_READ));
	assert_non_null(m);
	assert_int_equal(m->handle, 0x1234567890abcdefull);
	assert_int_equal(m->offset, 1ull << 40);
	assert_int_equal(m->length, 65536);
	protobuf_c_message_free_unpacked(&m->base, NULL);
	assert_string_equal(tp_opcode_name(TP_OP_READ), "READ");
	assert_null(tp_opcode_name(9999));
}

static void test_data_after_body(void **state)
{
	uint8_t buf[512];
	struct tp_frame fr;
	char err[256];
	struct tp_hdr h = { .opcode = TP_OP_WRITE, .reqid = 7, .data_len = 5 };
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;
	long len = tp_frame_build(buf, sizeof(buf), &h, "a", 1, &m.base);

	(void)state;
	memcpy(buf + len, "HELLO", 5);
	assert_int_equal(tp_frame_parse(buf, (size_t)len + 5, MAX_FRAME, &fr, err, sizeof(err)), 0);
	assert_memory_equal(fr.data, "HELLO", 5);
	/* the data that was announced must all be there */
	assert_int_equal(tp_frame_parse(buf, (size_t)len + 4, MAX_FRAME, &fr, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "announces"));
}

static void test_truncated(void **state)
{
	uint8_t buf[512];
	struct tp_frame fr;
	char err[256];
	long len = build_read(buf, sizeof(buf), 1);

	(void)state;
	/* every cut: too short for the header, or shorter than announced */
	for (long cut = 0; cut < len; cut++) {
		int rc = tp_frame_parse(buf, (size_t)cut, MAX_FRAME, &fr, err, sizeof(err));

		assert_int_equal(rc, -EPROTO);
		assert_non_null(strstr(err, cut < TP_HDR_SIZE ? "shorter" : "announces"));
	}
}

static void test_corrupt(void **state)
{
	uint8_t buf[512], bad[512];
	struct tp_frame fr;
	char err[256];
	long len = build_read(buf, sizeof(buf), 1);

	(void)state;
	memcpy(bad, buf, (size_t)len);
	bad[1] ^= 0x40;
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "magic"));
	assert_int_equal(fr.hdr.reqid, 1); /* the header is still read for the reply */

	memcpy(bad, buf, (size_t)len);
	bad[4] = 99;
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)),
			 -EPROTONOSUPPORT);

	memcpy(bad, buf, (size_t)len);
	bad[6] = 0xee;
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), -EOPNOTSUPP);
	bad[26] = TP_FLAG_REPLY; /* a reply echoes whatever opcode it answers */
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), 0);

	memcpy(bad, buf, (size_t)len);
	bad[25] = 0xff; /* address length 65290 */
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), -EPROTO);

	memcpy(bad, buf, (size_t)len);
	bad[19] = 0x7f; /* body of ~2 GiB */
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "maximum"));

	/* a body that does not decode */
	memcpy(bad, buf, (size_t)len);
	memset(bad + TP_HDR_SIZE + 10, 0xff, (size_t)len - TP_HDR_SIZE - 10);
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), 0);
	assert_null(tp_body_unpack(&fr, tp_request_desc(TP_OP_READ)));
}

static void test_build_limits(void **state)
{
	uint8_t buf[TP_HDR_SIZE + 8];
	struct tp_hdr h = { .opcode = TP_OP_PING };
	uint8_t addr[TP_MAX_ADDR + 1] = { 0 };

	(void)state;
	assert_int_equal(build_read(buf, sizeof(buf), 1), -EMSGSIZE);
	assert_int_equal(tp_frame_build(buf, sizeof(buf), &h, addr, sizeof(addr), NULL), -EMSGSIZE);
	assert_int_equal(tp_frame_build(buf, sizeof(buf), &h, addr, 8, NULL), TP_HDR_SIZE + 8);
}

/* A sealed frame verifies under its key only, and any change to its
 * header (but the tag), address or body breaks it (raw data, modes and
 * sequence numbers: test_proto_seal). */
static void test_seal(void **state)
{
	struct tp_session ses = { .id = 0x1122334455667788ull };
	struct tp_session other;
	uint8_t buf[512], bad[512];
	struct tp_frame fr;
	char err[256];
	long len = build_read(buf, sizeof(buf), 1);

	(void)state;
	for (int i = 0; i < TP_KEY_SIZE; i++)
		ses.key[i] = (uint8_t)(i * 7 + 1);
	other = ses;
	other.key[5] ^= 1;
	tp_frame_seal(buf, (size_t)len, NULL, 0, &ses, 7);
	assert_int_equal(tp_frame_parse(buf, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), 0);
	assert_int_equal(fr.hdr.session, ses.id);
	assert_int_equal(fr.hdr.seq, 7);
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &ses), 0);
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &other), -EBADMSG);
	for (long i = 0; i < len; i++) {
		if (i >= TP_TAG_OFF && i < TP_TAG_OFF + TP_TAG_SIZE)
			continue; /* the tag itself: changing it fails as well, below */
		memcpy(bad, buf, (size_t)len);
		bad[i] ^= 0x01;
		if (tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)))
			continue; /* a frame that does not parse is never verified */
		assert_int_equal(tp_frame_verify(&fr, NULL, 0, &ses), -EBADMSG);
	}
	memcpy(bad, buf, (size_t)len);
	bad[TP_TAG_OFF + 3] ^= 0x80;
	assert_int_equal(tp_frame_parse(bad, (size_t)len, MAX_FRAME, &fr, err, sizeof(err)), 0);
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &ses), -EBADMSG);
}

static void test_config_ok(void **state)
{
	struct tp_config cfg;
	char err[256];
	const char *text =
		"# a comment\n"
		"provider = shm\n"
		"mds = 10.0.0.1:7400   # trailing comment\n"
		"ios = node1:7401\n"
		"ios = [::1]:7402\n"
		"timeout_ms = 2500\n"
		"max_io = 65536\n"
		"window = 8\n"
		"strip_size = 1\n"
		"mount_point = /mnt/tessera/\n"
		"munge_socket = /run/munge/munge.socket.2\n"
		"root_squash = 1\n";

	(void)state;
	assert_int_equal(tp_config_parse(text, "t", &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.provider, "shm");
	assert_string_equal(cfg.mds.host, "10.0.0.1");
	assert_string_equal(cfg.mds.port, "7400");
	assert_int_equal(cfg.n_ios, 2);
	assert_string_equal(cfg.ios[1].host, "::1");
	assert_int_equal(cfg.timeout_ms, 2500);
	assert_int_equal(cfg.max_io, 65536);
	assert_int_equal(cfg.window, 8);
	assert_int_equal(cfg.strip_size, 1);
	assert_string_equal(cfg.mount_point, "/mnt/tessera");
	assert_string_equal(cfg.munge_socket, "/run/munge/munge.socket.2");
	assert_int_equal(cfg.root_squash, 1);
	assert_int_equal(tp_config_max_frame(&cfg), 65536 + 256 * 1024);
}

static void test_config_errors(void **state)
{
	const struct {
		const char *text, *words;
	} bad[] = {
		{ "ios = a:1\n", "no 'mds" },
		{ "mds = a:1\n", "no 'ios" },
		{ "mds = a:1\nios = b:2\nbogus = 1\n", "t:3: unknown key 'bogus'" },
		{ "mds = a:1\nios = b:2\njust words\n", "t:3: expected" },
		{ "mds = a\nios = b:2\n", "t:1: bad value 'a'" },
		{ "mds = a:x1\nios = b:2\n", "bad value" },
		{ "mds = a:1\nmds = b:1\nios = b:2\n", "t:2: bad value" },
		{ "mds = a:1\nios = b:2\ntimeout_ms = 0\n", "timeout_ms" },
		{ "mds = a:1\nios = b:2\ntimeout_ms = -5\n", "timeout_ms" },
		{ "mds = a:1\nios = b:2\nmax_io = 99999999999\n", "max_io" },
		{ "mds = a:1\nios = b:2\nwindow = 12x\n", "window" },
		{ "mds = a:1\nios = b:2\nmount_point = relative\n", "mount_point" },
		{ "mds = a:1\nios = b:2\nprovider =\n", "provider" },
		{ "mds = a:1\nios = b:2\nmunge_socket = sock\n", "munge_socket" },
		{ "mds = a:1\nios = b:2\nroot_squash = 2\n", "root_squash" },
	};
	struct tp_config cfg;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(tp_config_parse(bad[i].text, "t", &cfg, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].words))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].words);
	}
	assert_int_equal(tp_config_load("/nonexistent/tessera.conf", &cfg, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/tessera.conf"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_data_after_body),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_build_limits),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_config_ok),
		cmocka_unit_test(test_config_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
