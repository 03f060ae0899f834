/*
 * fuzz_seal.c - libFuzzer target for sealed frames (proto/seal.c).
 *
 * An input is: mode (u8 % 3), an action (u8), a split point (u8), then
 * bytes. Two checks per input:
 *   - the bytes as a received frame: parsed, then opened under a fixed
 *     session in that mode with a fresh window; one that opens must be
 *     exactly what sealing its opened content again gives (a forgery
 *     that opens would not be), and opening it again is a replay;
 *   - the bytes as a WRITE's body and raw data, sealed under the session
 *     (the data in two runs split at the split point, as a lent payload
 *     lies), then changed as the action says: nothing (it opens, once,
 *     and gives the bytes back), one byte flipped (header, tag, body or
 *     data: refused), cut short (a truncated tag or frame: refused by
 *     parse or by the tag), or renumbered (refused).
 * Built with -DFUZZ_SEED_MAIN it writes a seed corpus of sealed frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "tproto.h"

#define MAX_FRAME (1 << 16)

static void session(struct tp_session *s, unsigned mode)
{
	memset(s, 0, sizeof(*s));
	s->id = 0x5ea1ull;
	s->mode = (enum tp_seal_mode)(mode % 3);
	for (int i = 0; i < TP_KEY_SIZE; i++)
		s->key[i] = (uint8_t)(0xa5 ^ i);
}

#ifndef FUZZ_SEED_MAIN

/* The bytes as a received frame. */
static void check_received(const struct tp_session *s, const uint8_t *in, size_t len)
{
	static uint8_t buf[MAX_FRAME], again[MAX_FRAME];
	struct tp_replay w = { 0 };
	struct tp_frame fr;
	char err[256];

	if (len > MAX_FRAME)
		return;
	memcpy(buf, in, len);
	if (tp_frame_parse(buf, len, MAX_FRAME, &fr, err, sizeof(err)))
		return;
	if (tp_frame_open(&fr, NULL, 0, s, &w))
		return;
	/* opened: sealing the plain content again gives the input back */
	memcpy(again, buf, len);
	tp_frame_seal(again, TP_HDR_SIZE + fr.hdr.addr_len + fr.hdr.body_len, NULL, 0, s, fr.hdr.seq);
	if (memcmp(again, in, len))
		abort();
	memcpy(buf, in, len);
	if (tp_frame_open(&fr, NULL, 0, s, &w) != -EALREADY)
		abort();
}

/* The bytes as a sealed WRITE's body and data, then changed. */
static void check_sealed(const struct tp_session *s, unsigned action, unsigned split,
			 const uint8_t *in, size_t len)
{
	static uint8_t frame[MAX_FRAME], data[MAX_FRAME];
	struct tp_hdr h = { .opcode = TP_OP_WRITE, .reqid = 1 };
	size_t body = len / 3, dlen = len - body, cut = dlen ? split % (dlen + 1) : 0;
	struct iovec runs[2] = { { data, cut }, { data + cut, dlen - cut } };
	struct tp_replay w = { 0 };
	struct tp_frame fr;
	char err[256];
	size_t head, total;
	uint64_t seq = action;

	if (TP_HDR_SIZE + 8 + len > MAX_FRAME)
		return;
	h.data_len = (uint32_t)dlen;
	h.body_len = (uint32_t)body;
	h.addr_len = 8;
	h.magic = TP_MAGIC;
	h.version = TP_VERSION;
	tp_hdr_encode(&h, frame);
	memcpy(frame + TP_HDR_SIZE, "fuzzaddr", 8);
	memcpy(frame + TP_HDR_SIZE + 8, in, body);
	memcpy(data, in + body, dlen);
	head = TP_HDR_SIZE + 8 + body;
	total = head + dlen;
	tp_frame_seal(frame, head, runs, 2, s, seq);
	memcpy(frame + head, data, dlen); /* on the wire: one piece */
	switch (action % 4) {
	case 0: /* as sealed: opens once, gives the bytes back */
		memcpy(data, frame, total); /* a copy to send again */
		if (tp_frame_parse(frame, total, MAX_FRAME, &fr, err, sizeof(err)) ||
		    tp_frame_open(&fr, NULL, 0, s, &w) || memcmp(frame + TP_HDR_SIZE + 8, in, len) ||
		    tp_frame_parse(data, total, MAX_FRAME, &fr, err, sizeof(err)) ||
		    tp_frame_open(&fr, NULL, 0, s, &w) != -EALREADY)
			abort();
		return;
	case 1: /* one byte flipped */
		frame[(split * 131u + action) % total] ^= (uint8_t)(1u << (action % 8));
		break;
	case 2: /* cut short: the tag, the body or the data truncated */
		total = (split * 257u + action) % total;
		break;
	case 3: /* renumbered */
		frame[TP_SEQ_OFF + split % 8] ^= (uint8_t)(1u + action % 255); /* never 0 */
		break;
	}
	if (action % 4 == 1 && s->mode == TP_SEAL_MEASURE && (split * 131u + action) % total >= head)
		return; /* measurement mode: raw data is outside the tag */
	if (!tp_frame_parse(frame, total, MAX_FRAME, &fr, err, sizeof(err)) &&
	    tp_frame_open(&fr, NULL, 0, s, &w) != -EBADMSG)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t len)
{
	struct tp_session s;

	if (len < 3 || sodium_init() < 0)
		return 0;
	session(&s, in[0]);
	check_received(&s, in + 3, len - 3);
	check_sealed(&s, in[1], in[2], in + 3, len - 3);
	return 0;
}

#else

/* Seeds: sealed frames in each mode, prefixed as inputs are. */
int main(int argc, char **argv)
{
	static uint8_t frame[4096];
	char path[4096];

	if (argc < 2 || sodium_init() < 0)
		return 2;
	for (unsigned mode = 0; mode < 3; mode++) {
		struct tp_session s;
		Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;
		struct tp_hdr h = { .opcode = TP_OP_WRITE, .reqid = 5, .data_len = 100 };
		FILE *f;
		long n;

		session(&s, mode);
		m.handle = 77;
		m.offset = 4096;
		frame[0] = (uint8_t)mode;
		frame[1] = 0;
		frame[2] = 40;
		n = tp_frame_build(frame + 3, sizeof(frame) - 3, &h, "fuzzaddr", 8, &m.base);
		if (n < 0)
			return 1;
		memset(frame + 3 + n, 'd', 100);
		tp_frame_seal(frame + 3, (size_t)n, NULL, 0, &s, 9);
		snprintf(path, sizeof(path), "%s/sealed-%u", argv[1], mode);
		f = fopen(path, "wb");
		if (!f || fwrite(frame, 1, 3 + (size_t)n + 100, f) != 3 + (size_t)n + 100 || fclose(f))
			return 1;
	}
	return 0;
}

#endif
