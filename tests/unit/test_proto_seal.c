/* test_proto_seal.c - sealing (proto/seal.c): ChaCha20-Poly1305 over
 * header, address, body and raw data, in place or over runs; modes;
 * sequence numbers and the replay window. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "tproto.h"

#define MAX_FRAME (1 << 20)
#define DATA 300 /* raw data bytes: several ChaCha20 blocks and a partial one */

/* A WRITE request frame: header | 10-byte address | body | DATA bytes
 * (i * 3 + 1). Returns the head's length (before the data). */
static size_t build_write(uint8_t *buf, uint16_t flags)
{
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_WRITE, .reqid = 99, .data_len = DATA, .flags = flags };
	long len;

	m.handle = 0x1234567890abcdefull;
	m.offset = 4096;
	len = tp_frame_build(buf, 1024, &h, "addr-bytes", 10, &m.base);
	assert_true(len > TP_HDR_SIZE + 10);
	for (int i = 0; i < DATA; i++)
		buf[len + i] = (uint8_t)(i * 3 + 1);
	return (size_t)len;
}

static void session(struct tp_session *s, enum tp_seal_mode mode)
{
	memset(s, 0, sizeof(*s));
	s->id = 0x1122334455667788ull;
	s->mode = mode;
	for (int i = 0; i < TP_KEY_SIZE; i++)
		s->key[i] = (uint8_t)(i * 7 + 1);
}

static void parse(const uint8_t *buf, size_t len, struct tp_frame *fr)
{
	char err[256];

	assert_int_equal(tp_frame_parse(buf, len, MAX_FRAME, fr, err, sizeof(err)), 0);
}

/* The tag is RFC 8439's AEAD: libsodium's, for a contiguous frame, with
 * the header (but its tag) and address as associated data and body and
 * data as the message (SECRECY), or everything as associated data and an
 * empty message (INTEGRITY). */
static void test_is_the_standard_aead(void **state)
{
	uint8_t buf[1024], plain[1024], ad[512], ct[1024], tag[16], nonce[12] = { 0 };
	struct tp_session s;
	size_t head = build_write(buf, 0), body, adl;
	unsigned long long tl;

	(void)state;
	memcpy(plain, buf, head + DATA);
	session(&s, TP_SEAL_SECRECY);
	tp_frame_seal(buf, head, NULL, 0, &s, 5);
	nonce[4] = 5;
	/* associated data: header bytes 0..47 and 64..71, the address */
	memcpy(ad, buf, 48);
	memcpy(ad + 48, buf + 64, 8);
	memcpy(ad + 56, buf + TP_HDR_SIZE, 10);
	adl = 66;
	body = head - TP_HDR_SIZE - 10;
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct, tag, &tl, plain + TP_HDR_SIZE + 10,
							   body + DATA, ad, adl, NULL, nonce, s.key);
	assert_memory_equal(buf + TP_HDR_SIZE + 10, ct, body + DATA);
	assert_memory_equal(buf + TP_TAG_OFF, tag, 16);

	build_write(buf, TP_FLAG_REPLY); /* a reply: the nonce's direction byte */
	session(&s, TP_SEAL_INTEGRITY);
	tp_frame_seal(buf, head, NULL, 0, &s, 6);
	memset(nonce, 0, sizeof(nonce));
	nonce[0] = 1;
	nonce[4] = 6;
	memcpy(ad, buf, 48);
	memcpy(ad + 48, buf + 64, 8);
	memcpy(ad + 56, buf + TP_HDR_SIZE, head - TP_HDR_SIZE + DATA);
	adl = 56 + head - TP_HDR_SIZE + DATA;
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct, tag, &tl, NULL, 0, ad, adl, NULL,
							   nonce, s.key);
	assert_memory_equal(buf + TP_TAG_OFF, tag, 16);
	assert_memory_equal(buf + head, plain + head, DATA); /* not encrypted */
}

/* Any byte of header (tag included), address, body or raw data changed:
 * refused, in both modes, and under another key or another mode. */
static void test_tamper_any_byte(void **state)
{
	static const enum tp_seal_mode modes[] = { TP_SEAL_INTEGRITY, TP_SEAL_SECRECY };
	uint8_t buf[1024], bad[1024];
	struct tp_session s, other;
	struct tp_frame fr;
	char err[256];

	(void)state;
	for (size_t m = 0; m < 2; m++) {
		size_t head = build_write(buf, 0), len = head + DATA;

		session(&s, modes[m]);
		tp_frame_seal(buf, head, NULL, 0, &s, 1);
		parse(buf, len, &fr);
		assert_int_equal(tp_frame_verify(&fr, NULL, 0, &s), 0);
		other = s;
		other.key[0] ^= 1;
		assert_int_equal(tp_frame_verify(&fr, NULL, 0, &other), -EBADMSG);
		other = s;
		other.mode = modes[1 - m]; /* the flags say otherwise: refused */
		assert_int_equal(tp_frame_verify(&fr, NULL, 0, &other), -EBADMSG);
		for (size_t i = 0; i < len; i++) {
			memcpy(bad, buf, len);
			bad[i] ^= 0x20;
			if (tp_frame_parse(bad, len, MAX_FRAME, &fr, err, sizeof(err)))
				continue; /* a frame that does not parse is never verified */
			assert_int_equal(tp_frame_verify(&fr, NULL, 0, &s), -EBADMSG);
			assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, NULL), -EBADMSG);
		}
	}
}

/* Raw data in runs elsewhere (a lent write; a tagged read's runs, which
 * may hold more than data_len) seals and verifies as if contiguous; a
 * flipped byte in a run is refused. */
static void test_runs(void **state)
{
	uint8_t a[1024], b[1024], runs[DATA + 40];
	struct iovec iov[3] = { { runs, 7 }, { runs + 7, 129 }, { runs + 136, DATA + 40 - 136 } };
	struct tp_session s;
	struct tp_frame fr;
	size_t head;

	(void)state;
	for (int mode = TP_SEAL_INTEGRITY; mode <= TP_SEAL_SECRECY; mode++) {
		session(&s, (enum tp_seal_mode)mode);
		head = build_write(a, TP_FLAG_REPLY);
		memcpy(b, a, head + DATA);
		memcpy(runs, a + head, DATA);
		tp_frame_seal(a, head, NULL, 0, &s, 3);
		tp_frame_seal(b, head, iov, 3, &s, 3);
		assert_memory_equal(a, b, head);              /* same tag, same body */
		assert_memory_equal(runs, a + head, DATA);    /* same data */
		parse(b, head + DATA, &fr);                   /* header only is read */
		assert_int_equal(tp_frame_verify(&fr, iov, 3, &s), 0);
		runs[150] ^= 1;
		assert_int_equal(tp_frame_verify(&fr, iov, 3, &s), -EBADMSG);
		runs[150] ^= 1;
		runs[DATA + 5] ^= 1; /* beyond data_len: not part of the frame */
		assert_int_equal(tp_frame_open(&fr, iov, 3, &s, NULL), 0);
		for (int i = 0; i < DATA; i++)
			assert_int_equal(runs[i], (uint8_t)(i * 3 + 1));
	}
}

/* SECRECY: body and data are not in the clear on the wire, open gives
 * them back; a lent payload is encrypted into the bounce buffer and the
 * caller's memory is left alone; unseal undoes a seal (to reseal). */
static void test_secrecy_roundtrip(void **state)
{
	uint8_t buf[1024], plain[1024], src[DATA], dst[DATA];
	struct iovec run = { src, DATA }, out = { dst, DATA };
	struct tp_session s, s2;
	struct tp_frame fr;
	size_t head = build_write(buf, 0), body = head - TP_HDR_SIZE - 10;

	(void)state;
	memcpy(plain, buf, head + DATA);
	session(&s, TP_SEAL_SECRECY);
	tp_frame_seal(buf, head, NULL, 0, &s, 9);
	assert_memory_not_equal(buf + TP_HDR_SIZE + 10, plain + TP_HDR_SIZE + 10, body);
	assert_memory_not_equal(buf + head, plain + head, DATA);
	assert_memory_equal(buf + TP_HDR_SIZE, "addr-bytes", 10); /* the address stays */
	parse(buf, head + DATA, &fr);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, NULL), 0);
	assert_memory_equal(buf + TP_HDR_SIZE, plain + TP_HDR_SIZE, head - TP_HDR_SIZE + DATA);

	/* a lent payload: src untouched, dst the ciphertext */
	build_write(buf, 0);
	memcpy(src, buf + head, DATA);
	tp_frame_seal_copy(buf, head, &run, 1, dst, &s, 10);
	assert_memory_equal(src, plain + head, DATA);
	assert_memory_not_equal(dst, src, DATA);
	parse(buf, head + DATA, &fr);
	assert_int_equal(tp_frame_verify(&fr, &out, 1, &s), 0);
	/* sealed again under another session: unseal, then seal */
	session(&s2, TP_SEAL_SECRECY);
	s2.id++;
	s2.key[3] ^= 0x55;
	tp_frame_unseal(buf, head, &out, 1, &s);
	assert_memory_equal(dst, src, DATA);
	assert_memory_equal(buf + TP_HDR_SIZE, plain + TP_HDR_SIZE, head - TP_HDR_SIZE);
	tp_frame_seal(buf, head, &out, 1, &s2, 0);
	parse(buf, head + DATA, &fr);
	assert_int_equal(tp_frame_verify(&fr, &out, 1, &s), -EBADMSG);
	assert_int_equal(tp_frame_open(&fr, &out, 1, &s2, NULL), 0);
	assert_memory_equal(dst, src, DATA);
	/* in INTEGRITY mode the copy is the plain data, under the tag */
	session(&s, TP_SEAL_INTEGRITY);
	build_write(buf, 0);
	tp_frame_seal_copy(buf, head, &run, 1, dst, &s, 11);
	assert_memory_equal(dst, src, DATA);
	parse(buf, head + DATA, &fr);
	assert_int_equal(tp_frame_verify(&fr, &out, 1, &s), 0);
}

/* A body decoded before its frame is checked (a storage daemon's bulk
 * write, checked by its disk worker): tp_frame_crypt_body gives a SECRECY
 * body's plaintext in place, the data untouched, and once more the
 * ciphertext, which then verifies and opens; in INTEGRITY mode it does
 * nothing. */
static void test_crypt_body(void **state)
{
	uint8_t buf[1024], plain[1024], sealed[1024];
	struct tp_session s;
	struct tp_frame fr;
	size_t head = build_write(buf, 0), body = head - TP_HDR_SIZE - 10;

	(void)state;
	memcpy(plain, buf, head + DATA);
	session(&s, TP_SEAL_SECRECY);
	tp_frame_seal(buf, head, NULL, 0, &s, 12);
	memcpy(sealed, buf, head + DATA);
	parse(buf, head + DATA, &fr);
	tp_frame_crypt_body(&fr, &s);
	assert_memory_equal(buf + TP_HDR_SIZE + 10, plain + TP_HDR_SIZE + 10, body);
	assert_memory_equal(buf + head, sealed + head, DATA);
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &s), -EBADMSG); /* not as sealed */
	tp_frame_crypt_body(&fr, &s);
	assert_memory_equal(buf, sealed, head + DATA);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, NULL), 0);
	assert_memory_equal(buf + TP_HDR_SIZE, plain + TP_HDR_SIZE, head - TP_HDR_SIZE + DATA);

	session(&s, TP_SEAL_INTEGRITY);
	build_write(buf, 0);
	tp_frame_seal(buf, head, NULL, 0, &s, 13);
	memcpy(sealed, buf, head + DATA);
	parse(buf, head + DATA, &fr);
	tp_frame_crypt_body(&fr, &s);
	assert_memory_equal(buf, sealed, head + DATA);
}

/* MEASURE (bench only) leaves raw data outside the tag, nothing else. */
static void test_measure_mode(void **state)
{
	uint8_t buf[1024];
	struct tp_session s, integ;
	struct tp_frame fr;
	size_t head = build_write(buf, 0);

	(void)state;
	session(&s, TP_SEAL_MEASURE);
	session(&integ, TP_SEAL_INTEGRITY);
	tp_frame_seal(buf, head, NULL, 0, &s, 1);
	parse(buf, head + DATA, &fr);
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &integ), -EBADMSG);
	buf[head + 3] ^= 1;
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &s), 0);
	buf[TP_HDR_SIZE + 12] ^= 1; /* the body is under the tag */
	assert_int_equal(tp_frame_verify(&fr, NULL, 0, &s), -EBADMSG);
	assert_int_equal(tp_seal_stronger(TP_SEAL_MEASURE, TP_SEAL_INTEGRITY), TP_SEAL_INTEGRITY);
	assert_int_equal(tp_seal_stronger(TP_SEAL_SECRECY, TP_SEAL_MEASURE), TP_SEAL_SECRECY);
	assert_int_equal(tp_seal_stronger(TP_SEAL_MEASURE, TP_SEAL_MEASURE), TP_SEAL_MEASURE);
	assert_int_equal(tp_seal_stronger(TP_SEAL_INTEGRITY, (enum tp_seal_mode)9), TP_SEAL_SECRECY);
}

/* The window: each number once; reordered within the window accepted
 * once; older than the window refused; a jump forgets what it passes. */
static void test_replay_window(void **state)
{
	struct tp_replay w;

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(tp_replay_accept(&w, 0), 0);
	assert_int_equal(tp_replay_accept(&w, 0), -EALREADY);
	assert_int_equal(tp_replay_accept(&w, 5), 0);
	assert_int_equal(tp_replay_accept(&w, 3), 0);  /* reordered: once */
	assert_int_equal(tp_replay_accept(&w, 3), -EALREADY);
	assert_int_equal(tp_replay_accept(&w, 5), -EALREADY);
	assert_int_equal(tp_replay_check(&w, 4), 0);
	assert_int_equal(tp_replay_check(&w, 4), 0);   /* check records nothing */
	assert_int_equal(tp_replay_accept(&w, 4), 0);
	assert_int_equal(tp_replay_accept(&w, 5 + TP_REPLAY_WINDOW), 0);
	assert_int_equal(tp_replay_accept(&w, 5), -EALREADY);   /* too old now */
	assert_int_equal(tp_replay_accept(&w, 6), 0);            /* the window's oldest */
	assert_int_equal(tp_replay_accept(&w, 6), -EALREADY);
	assert_int_equal(tp_replay_accept(&w, 100), 0);
	assert_int_equal(tp_replay_accept(&w, 10 * TP_REPLAY_WINDOW), 0);
	assert_int_equal(tp_replay_accept(&w, 10 * TP_REPLAY_WINDOW - 1), 0);
	assert_int_equal(tp_replay_accept(&w, 9 * TP_REPLAY_WINDOW + 1), 0);
	assert_int_equal(tp_replay_accept(&w, 9 * TP_REPLAY_WINDOW), -EALREADY);
	assert_int_equal(tp_replay_accept(&w, UINT64_MAX), -EALREADY);
}

/* A sealed frame opened twice: the second is a replay. Frames sealed
 * with different numbers and opened out of order: each once. */
static void test_open_replayed(void **state)
{
	uint8_t f[3][1024], copy[1024];
	struct tp_session s;
	struct tp_replay w;
	struct tp_frame fr;
	size_t head = 0;

	(void)state;
	session(&s, TP_SEAL_SECRECY);
	memset(&w, 0, sizeof(w));
	for (int i = 0; i < 3; i++) {
		head = build_write(f[i], 0);
		tp_frame_seal(f[i], head, NULL, 0, &s, (uint64_t)i);
	}
	memcpy(copy, f[2], head + DATA);
	parse(f[2], head + DATA, &fr);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, &w), 0);
	parse(f[0], head + DATA, &fr);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, &w), 0);
	parse(copy, head + DATA, &fr);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, &w), -EALREADY);
	parse(f[1], head + DATA, &fr);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, &w), 0);
	/* a forged frame with a new number does not move the window */
	memcpy(f[0], copy, head + DATA);
	f[0][TP_SEQ_OFF] = 50;
	parse(f[0], head + DATA, &fr);
	assert_int_equal(tp_frame_open(&fr, NULL, 0, &s, &w), -EBADMSG);
	assert_int_equal(w.top, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_the_standard_aead),
		cmocka_unit_test(test_tamper_any_byte),
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_secrecy_roundtrip),
		cmocka_unit_test(test_crypt_body),
		cmocka_unit_test(test_measure_mode),
		cmocka_unit_test(test_replay_window),
		cmocka_unit_test(test_open_replayed),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
