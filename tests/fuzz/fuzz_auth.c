/*
 * fuzz_auth.c - libFuzzer target for the daemon side of AUTH: what a daemon
 * does with a credential once munged has decoded it (proto/auth.c's
 * tp_auth_check, server/core/daemon_auth.c: identity, groups, admin hosts,
 * admission, the session table and its quotas, the probe, the seal mode,
 * the reply). munged cannot run under a fuzzer, so the in-process daemons
 * decode credentials with srv_local_auth: a credential's text is the hex
 * of what munged would have given (decode_hex below), checked by
 * tp_auth_check as a daemon checks munged's answer.
 *
 * An input is a sequence of records:
 *   kind < 0xf0   an AUTH to the storage daemon (kind even) or the
 *                 metadata daemon (odd) from peer 1 + (kind >> 1) % 4:
 *                 uid (u32), gid (u32), origin (4 bytes, IPv4), restricted
 *                 (u8, bit 0), seal mode asked (u32), probe (u8: 0 none,
 *                 1 the session this daemon opened last, else a u64
 *                 follows), payload length (u8) and the payload (target
 *                 length, target, key, address: auth.c);
 *   0xf0..0xf7    a tick of both daemons (srv_local_tick: sessions expire);
 *   0xf8..0xff    a raw frame: daemon (u8, bit 0), length (u16), the bytes
 *                 as received (its credential, if any, decoded as above).
 * Checks, besides every reply being a well-formed reply frame (fuzz_daemon.h's
 * sink): an AUTH whose credential tp_auth_check refuses gets no answer at
 * all; one it accepts is answered with a session for exactly the
 * credential's uid and gid, in the stronger of the daemon's seal mode and
 * the one asked, or refused with an error (no room, over quota). Each
 * input gets fresh daemons with small session tables (24, 6 a uid).
 * Built with -DFUZZ_SEED_MAIN it writes a seed corpus.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "fuzz_daemon.h"
#include "tproto.h"

/* uid gid origin restricted: what decode_hex reads before the payload. */
#define MUNGED_HEAD (4 + 4 + 4 + 1)
#define PAYLOAD_MAX 255

#ifndef FUZZ_SEED_MAIN

/* Bytes as the hex a credential's text carries (2 * n + 1 bytes). */
static void to_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static struct tp_config cfg;
static struct fz_replies seen;
static struct srv *daemons[2]; /* ios:0, mds */

/* The AUTH being delivered, as the decoder and the reply check see it. */
static struct {
	int auth;                  /* an AUTH frame is being delivered */
	int decoded;               /* tp_auth_check accepted its credential */
	uint32_t uid, gid, asked;
	uint64_t last[2];          /* the session each daemon opened last */
	int which;
} cur;

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A credential's hex into out: the bytes, or 0 unless all of it is hex
 * pairs that fit. */
static size_t from_hex(const char *cred, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (; cred[0] && cred[1] && n < cap; cred += 2) {
		int hi = hex_digit(cred[0]), lo = hex_digit(cred[1]);

		if (hi < 0 || lo < 0)
			return 0;
		out[n++] = (uint8_t)(hi << 4 | lo);
	}
	return *cred ? 0 : n;
}

/* srv_local_auth's decoder: the credential's hex is munged's answer. */
static int decode_hex(void *arg, const char *cred, const char *target, struct tp_auth_id *out,
		      char *err, size_t errlen)
{
	uint8_t raw[MUNGED_HEAD + PAYLOAD_MAX];
	struct tp_auth_munged m = { 0 };
	size_t n = 0;
	int rc;

	(void)arg;
	if ((n = from_hex(cred, raw, sizeof(raw))) < MUNGED_HEAD) {
		snprintf(err, errlen, "credential refused: not one munged made");
		return -EACCES;
	}
	m.uid = get32(raw);
	m.gid = get32(raw + 4);
	memcpy(m.origin4, raw + 8, 4);
	m.restricted = raw[12] & 1;
	m.payload = raw + MUNGED_HEAD;
	m.len = n - MUNGED_HEAD;
	rc = tp_auth_check(&m, target, out, err, errlen);
	if (!rc) {
		if (out->uid != m.uid || out->gid != m.gid || !out->addr_len ||
		    out->addr_len > TP_MAX_ADDR || memcmp(out->origin4, m.origin4, 4))
			abort();
		cur.decoded = 1;
		cur.uid = m.uid;
		cur.gid = m.gid;
	} else if (rc != -EACCES || !err[0]) {
		abort();
	}
	return rc;
}

/* Each reply to an AUTH against the credential it carried. */
static void check_reply(void *arg, const struct tp_frame *fr, const ProtobufCMessage *msg)
{
	const Tessera__AuthReply *rep = (const Tessera__AuthReply *)msg;

	(void)arg;
	if (fr->hdr.opcode != TP_OP_AUTH || !cur.auth)
		return;
	if (!cur.decoded)
		abort(); /* a credential nobody vouched for was answered */
	if (!rep)
		return; /* refused: no room, over quota */
	if (rep->uid != cur.uid || rep->gid != cur.gid || !rep->session ||
	    rep->seal_mode != (uint32_t)tp_seal_stronger(tp_seal_mode_of(&cfg),
							 (enum tp_seal_mode)cur.asked))
		abort();
	cur.last[cur.which] = rep->session;
}

static size_t cfg_max_frame(void)
{
	return tp_config_max_frame(&cfg);
}

static void daemons_stop(void)
{
	srv_destroy(daemons[0]);
	srv_destroy(daemons[1]);
	daemons[0] = daemons[1] = NULL;
}

/* Fresh daemons for each input (what an input does is all it depends
 * on), with small session tables so that quotas and eviction are reached
 * within one input. */
static void daemons_start(void)
{
	static const srv_handler none[TP_OP_LIMIT];
	/* every fresh daemon would log its first refusal: errors only,
	 * unless FUZZ_VERBOSE */
	static struct srv_log_opts quiet = { SRV_LOG_STDERR, SRV_LOG_ERROR };
	struct srv_role ir = { "ios", 0, none, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	struct srv_role mr = { "mds", 0, none, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	struct srv_opts so = { &cfg, NULL, NULL, 0, NULL, &quiet };

	if (!cfg.n_ios) {
		fz_config(&cfg);
		cfg.sessions_max = 24;
		cfg.sessions_per_uid = 6;
		seen.check = check_reply;
		seen.verbose = getenv("FUZZ_VERBOSE") != NULL;
	}
	if (seen.verbose)
		so.log = NULL;
	if (srv_create_local(&so, &ir, fz_reply_sink, &seen, &daemons[0]) ||
	    srv_create_local(&so, &mr, fz_reply_sink, &seen, &daemons[1]))
		abort();
	srv_local_auth(daemons[0], decode_hex, NULL);
	srv_local_auth(daemons[1], decode_hex, NULL);
	memset(&cur, 0, sizeof(cur));
}

/* Deliver a frame; `auth`: it is a well-formed AUTH request, whose
 * replies check_reply judges. */
static void deliver(int which, uint64_t peer, const uint8_t *frame, size_t len, int auth,
		    uint32_t asked)
{
	cur.auth = auth;
	cur.decoded = 0;
	cur.asked = asked;
	cur.which = which;
	srv_deliver(daemons[which], peer, frame, len);
	cur.auth = 0;
}

/* An AUTH record: the credential made up, framed, delivered. */
static void auth_record(struct fz_in *in, unsigned kind)
{
	static uint8_t frame[4096];
	uint8_t raw[MUNGED_HEAD + PAYLOAD_MAX];
	char cred[2 * sizeof(raw) + 1];
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_AUTH, .reqid = 7 };
	int which = kind & 1;
	uint8_t probe;
	size_t plen;
	long n;

	uint8_t mode[4] = { 0 };

	memset(raw, 0, MUNGED_HEAD);
	fz_take(in, raw, MUNGED_HEAD); /* uid, gid, origin, restricted */
	fz_take(in, mode, 4);
	m.seal_mode = get32(mode);
	probe = fz_u8(in);
	m.session = probe == 0 ? 0 : probe == 1 ? cur.last[which] : fz_u64(in);
	plen = fz_u8(in);
	plen = fz_take(in, raw + MUNGED_HEAD, plen);
	to_hex(raw, MUNGED_HEAD + plen, cred);
	m.credential = cred;
	n = tp_frame_build(frame, sizeof(frame), &h, "fuzz", 4, &m.base);
	if (n < 0)
		abort(); /* every record fits */
	deliver(which, 1 + (kind >> 1) % 4, frame, (size_t)n, 1, m.seal_mode);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t raw[65536];
	struct fz_in in = { data, size };

	daemons_start();
	while (in.n) {
		unsigned kind = fz_u8(&in);

		if (kind < FZ_TICK) {
			auth_record(&in, kind);
		} else if (kind < FZ_RAW) {
			srv_local_tick(daemons[0]);
			srv_local_tick(daemons[1]);
		} else {
			int which = fz_u8(&in) & 1;
			size_t len = fz_take(&in, raw, fz_u16(&in));
			struct tp_frame fr;
			char err[64];
			Tessera__AuthRequest *m = NULL;

			/* a well-formed AUTH request's replies are judged, against
			 * the mode it asked */
			if (!tp_frame_parse(raw, len, cfg_max_frame(), &fr, err, sizeof(err)) &&
			    fr.hdr.opcode == TP_OP_AUTH && !(fr.hdr.flags & TP_FLAG_REPLY))
				m = (Tessera__AuthRequest *)tp_body_unpack(
					&fr, &tessera__auth_request__descriptor);
			deliver(which, 1, raw, len, m != NULL, m ? m->seal_mode : 0);
			if (m)
				protobuf_c_message_free_unpacked(&m->base, NULL);
		}
	}
	daemons_stop();
	return 0;
}

#else /* FUZZ_SEED_MAIN */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One AUTH record (see the top). */
static void seed_auth(struct fz_seed *s, unsigned kind, uint32_t uid, uint32_t gid,
		      const uint8_t origin[4], int restricted, uint32_t mode, uint8_t probe,
		      const char *target, const char *addr)
{
	uint8_t rec[32], payload[PAYLOAD_MAX];
	size_t tlen = strlen(target), alen = strlen(addr), plen = 1 + tlen + TP_KEY_SIZE + alen;

	rec[0] = (uint8_t)kind;
	put32(rec + 1, uid);
	put32(rec + 5, gid);
	memcpy(rec + 9, origin, 4);
	rec[13] = (uint8_t)restricted;
	put32(rec + 14, mode);
	rec[18] = probe;
	rec[19] = (uint8_t)plen;
	fz_seed_bytes(s, rec, 20);
	payload[0] = (uint8_t)tlen;
	memcpy(payload + 1, target, tlen);
	for (int i = 0; i < TP_KEY_SIZE; i++)
		payload[1 + tlen + i] = (uint8_t)(0x30 + i);
	memcpy(payload + 1 + tlen + TP_KEY_SIZE, addr, alen);
	fz_seed_bytes(s, payload, plen);
}

int main(int argc, char **argv)
{
	static const uint8_t local[4] = { 127, 0, 0, 1 }, away[4] = { 10, 9, 8, 7 },
			     none[4] = { 0 };
	static struct fz_seed s;
	const uint8_t tick = FZ_TICK;
	const char *dir = argc > 1 ? argv[1] : ".";
	int rc = 0;

	seed_auth(&s, 0, 1000, 1000, local, 1, 0, 0, "ios:0", "addr-of-a-client");
	seed_auth(&s, 0, 1000, 1000, local, 1, 0, 1, "ios:0", "addr-of-a-client");
	rc |= fz_seed_save(&s, dir, "auth-and-probe");
	seed_auth(&s, 1, 0, 0, away, 1, 1, 0, "mds", "root-elsewhere");
	seed_auth(&s, 1, 0, 0, local, 1, 2, 0, "mds", "root-here");
	rc |= fz_seed_save(&s, dir, "root-foreign-and-admin");
	seed_auth(&s, 0, 1000, 1000, none, 0, 0, 0, "ios:0", "unrestricted");
	seed_auth(&s, 1, 1000, 1000, none, 1, 0, 0, "ios:0", "meant-for-another");
	seed_auth(&s, 0, 65534, 65534, none, 1, 7, 0, "ios:0", "an-unknown-mode");
	rc |= fz_seed_save(&s, dir, "refusals-and-modes");
	for (int i = 0; i < 40; i++)
		seed_auth(&s, (unsigned)(2 * i) % 8, 4242, 4242, local, 1, 0, 0, "ios:0", "many");
	fz_seed_bytes(&s, &tick, 1);
	seed_auth(&s, 0, 4242, 4242, local, 1, 0, 1, "ios:0", "after-a-tick");
	rc |= fz_seed_save(&s, dir, "one-uid-many-sessions");
	return rc ? 1 : 0;
}

#endif
