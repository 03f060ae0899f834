/*
 * seal.c - every frame after AUTH sealed under its session's key (auth.c
 * opens the session and shares the key): ChaCha20-Poly1305 as RFC 8439
 * builds it, over pieces. The nonce is the direction (a reply's byte 0 is
 * 1) and the sender's sequence number in that direction (bytes 4..11), so
 * no nonce repeats under one key; the one-time Poly1305 key is the first
 * ChaCha20 block, encryption starts at block 1, and the tag is over
 *   AAD | pad16 | ciphertext | pad16 | le64(AAD length) | le64(ct length).
 * The AAD is the header without its tag (bytes 0..47 and 64..71), the
 * address, and, in INTEGRITY mode, body and raw data (ciphertext empty);
 * in SECRECY mode body and raw data are the ciphertext. So a contiguous
 * frame's tag is exactly libsodium's crypto_aead_chacha20poly1305_ietf
 * (the unit test checks), while raw data may lie elsewhere: a write's
 * payload in the caller's buffer (encrypted into a bounce buffer), a read
 * reply received into the caller's runs (verified there, then decrypted
 * in place). MEASURE leaves raw data out of the tag (`make bench` only).
 *
 * The mode travels in the header's flags, under the tag; a receiver wants
 * its session's mode, so nobody can strip the encryption off a frame.
 * Sequence numbers are checked against a sliding window (tp_replay_*).
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "tproto.h"

_Static_assert(TP_KEY_SIZE == crypto_stream_chacha20_ietf_KEYBYTES, "session key keys ChaCha20");
_Static_assert(TP_TAG_SIZE == crypto_onetimeauth_poly1305_BYTES, "frame tag is Poly1305");
_Static_assert(TP_TAG_OFF + TP_TAG_SIZE == TP_RSV_OFF && TP_RSV_OFF + 8 == TP_HDR_SIZE,
	       "header: seq, tag, reserved");
_Static_assert(TP_REPLAY_WINDOW % 64 == 0, "replay window in whole words");

#define FLAG_OFF 26 /* the header's flags, little-endian 16 bits */
#define SEAL_CHUNK (16u << 10) /* encrypt then MAC a chunk while it is in cache */

enum tp_seal_mode tp_seal_stronger(enum tp_seal_mode a, enum tp_seal_mode b)
{
	/* strength: MEASURE 0, INTEGRITY 1, SECRECY (or unknown) 2 */
	int sa = a == TP_SEAL_MEASURE ? 0 : a == TP_SEAL_INTEGRITY ? 1 : 2;
	int sb = b == TP_SEAL_MEASURE ? 0 : b == TP_SEAL_INTEGRITY ? 1 : 2;

	if (sa >= sb)
		return sa == 2 ? TP_SEAL_SECRECY : a;
	return sb == 2 ? TP_SEAL_SECRECY : b;
}

enum tp_seal_mode tp_seal_mode_of(const struct tp_config *cfg)
{
	if (cfg->encrypt)
		return TP_SEAL_SECRECY;
	return cfg->measure_seal_off ? TP_SEAL_MEASURE : TP_SEAL_INTEGRITY;
}

const char *tp_seal_mode_name(enum tp_seal_mode mode)
{
	switch (mode) {
	case TP_SEAL_INTEGRITY: return "integrity";
	case TP_SEAL_SECRECY: return "secrecy";
	case TP_SEAL_MEASURE: return "measurement (raw data unsealed)";
	default: return "unknown";
	}
}

static uint16_t mode_flags(enum tp_seal_mode mode)
{
	return mode == TP_SEAL_SECRECY ? TP_FLAG_SECRET
	       : mode == TP_SEAL_MEASURE ? TP_FLAG_DATA_OPEN : 0;
}

/* ------------------------------------------------------------ replay */

static int seen(const struct tp_replay *w, uint64_t seq)
{
	uint64_t bit = seq % TP_REPLAY_WINDOW;

	return (int)((w->seen[bit / 64] >> (bit % 64)) & 1);
}

int tp_replay_check(const struct tp_replay *w, uint64_t seq)
{
	if (seq == UINT64_MAX)
		return -EALREADY; /* never sent: top would wrap */
	if (seq >= w->top)
		return 0;
	if (w->top - seq > TP_REPLAY_WINDOW || seen(w, seq))
		return -EALREADY;
	return 0;
}

int tp_replay_accept(struct tp_replay *w, uint64_t seq)
{
	uint64_t bit;
	int rc = tp_replay_check(w, seq);

	if (rc)
		return rc;
	if (seq >= w->top) {
		/* the numbers from top to seq enter the window unseen; their
		 * bits last stood for numbers a window older */
		if (seq - w->top >= TP_REPLAY_WINDOW) {
			memset(w->seen, 0, sizeof(w->seen));
		} else {
			for (uint64_t q = w->top; q <= seq; q++) {
				bit = q % TP_REPLAY_WINDOW;
				w->seen[bit / 64] &= ~(1ull << (bit % 64));
			}
		}
		w->top = seq + 1;
	}
	bit = seq % TP_REPLAY_WINDOW;
	w->seen[bit / 64] |= 1ull << (bit % 64);
	return 0;
}

/* ------------------------------------------------------------ pieces */

/* One frame's cipher state: nonce, ChaCha20 keystream position, Poly1305. */
struct sealer {
	const uint8_t *key;
	uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
	uint32_t block;            /* next keystream block (0 made the MAC key) */
	uint8_t ks[64];            /* the current partial block's keystream */
	unsigned ks_used;          /* bytes of ks spent; 64: none left */
	crypto_onetimeauth_poly1305_state mac;
	uint64_t aad_len, ct_len;
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void sealer_init(struct sealer *z, const uint8_t *frame, const uint8_t *key)
{
	uint8_t otk[crypto_onetimeauth_poly1305_KEYBYTES];

	memset(z, 0, sizeof(*z));
	z->key = key;
	z->nonce[0] = (uint8_t)(frame[FLAG_OFF] & TP_FLAG_REPLY); /* the direction */
	memcpy(z->nonce + 4, frame + TP_SEQ_OFF, 8);
	crypto_stream_chacha20_ietf(otk, sizeof(otk), z->nonce, key);
	crypto_onetimeauth_poly1305_init(&z->mac, otk);
	sodium_memzero(otk, sizeof(otk));
	z->block = 1;
	z->ks_used = 64;
}

static void mac_update(struct sealer *z, const uint8_t *p, size_t len, int ct)
{
	crypto_onetimeauth_poly1305_update(&z->mac, p, len);
	*(ct ? &z->ct_len : &z->aad_len) += len;
}

/* Poly1305 padding of what was MACed so far to 16 bytes. */
static void mac_pad(struct sealer *z, uint64_t len)
{
	static const uint8_t zero[16];

	if (len % 16)
		crypto_onetimeauth_poly1305_update(&z->mac, zero, 16 - len % 16);
}

/* dst = src ^ keystream, continuing where the last call stopped. */
static void crypt(struct sealer *z, uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t full;

	while (len && z->ks_used < 64) {
		*dst++ = *src++ ^ z->ks[z->ks_used++];
		len--;
	}
	full = len & ~(size_t)63;
	if (full) {
		crypto_stream_chacha20_ietf_xor_ic(dst, src, full, z->nonce, z->block, z->key);
		z->block += (uint32_t)(full / 64);
		dst += full;
		src += full;
		len -= full;
	}
	if (len) {
		memset(z->ks, 0, sizeof(z->ks));
		crypto_stream_chacha20_ietf_xor_ic(z->ks, z->ks, sizeof(z->ks), z->nonce, z->block,
						   z->key);
		z->block++;
		z->ks_used = 0;
		while (len--)
			*dst++ = *src++ ^ z->ks[z->ks_used++];
	}
}

/* What to do with one run of body or data. */
enum run_op {
	RUN_MAC_AAD,      /* MAC it as associated data */
	RUN_MAC_CT,       /* MAC it as ciphertext (verify) */
	RUN_ENCRYPT_MAC,  /* encrypt src into dst, MAC the ciphertext (seal) */
	RUN_CRYPT,        /* src ^ keystream into dst only (decrypt) */
	RUN_COPY_AAD,     /* copy src into dst, MAC it as associated data */
};

static void run(struct sealer *z, enum run_op op, uint8_t *dst, const uint8_t *src, size_t len)
{
	while (len) {
		size_t c = len < SEAL_CHUNK ? len : SEAL_CHUNK;

		switch (op) {
		case RUN_MAC_AAD: mac_update(z, src, c, 0); break;
		case RUN_MAC_CT: mac_update(z, src, c, 1); break;
		case RUN_ENCRYPT_MAC:
			crypt(z, dst, src, c);
			mac_update(z, dst, c, 1);
			break;
		case RUN_CRYPT: crypt(z, dst, src, c); break;
		case RUN_COPY_AAD:
			memmove(dst, src, c);
			mac_update(z, dst, c, 0);
			break;
		}
		len -= c;
		src += c;
		if (dst)
			dst += c;
	}
}

/* run() over the first len bytes of iov[0..n) (into dst, contiguous, when
 * dst is set; else in place). */
static void run_iov(struct sealer *z, enum run_op op, const struct iovec *iov, size_t n,
		    uint8_t *dst, size_t len)
{
	for (size_t i = 0; i < n && len; i++) {
		size_t c = iov[i].iov_len < len ? iov[i].iov_len : len;
		uint8_t *src = iov[i].iov_base;

		run(z, op, dst ? dst : src, src, c);
		if (dst)
			dst += c;
		len -= c;
	}
}

/* The first len bytes of src[0..n) into dst. */
static void copy_iov(uint8_t *dst, const struct iovec *src, size_t n, size_t len)
{
	for (size_t i = 0; i < n && len; i++) {
		size_t c = src[i].iov_len < len ? src[i].iov_len : len;

		memcpy(dst, src[i].iov_base, c);
		dst += c;
		len -= c;
	}
}

/* The frame's ops on its body and data, by mode: seal (encrypt unless
 * only MACed), verify, decrypt. */
struct plan {
	enum run_op body, data;
	int data_in;               /* the data is under the tag */
};

static int plan_of(uint16_t flags, int sealing, struct plan *pl)
{
	switch (flags & (TP_FLAG_SECRET | TP_FLAG_DATA_OPEN)) {
	case 0:
		pl->body = pl->data = RUN_MAC_AAD;
		pl->data_in = 1;
		return 0;
	case TP_FLAG_SECRET:
		pl->body = pl->data = sealing ? RUN_ENCRYPT_MAC : RUN_MAC_CT;
		pl->data_in = 1;
		return 0;
	case TP_FLAG_DATA_OPEN:
		pl->body = RUN_MAC_AAD;
		pl->data_in = 0;
		return 0;
	default:
		return -EBADMSG;
	}
}

/* The frame's head: [0..48) and [64..72) of the header, then the address. */
static void mac_head(struct sealer *z, const uint8_t *frame, size_t addr_len)
{
	mac_update(z, frame, TP_TAG_OFF, 0);
	mac_update(z, frame + TP_RSV_OFF, TP_HDR_SIZE - TP_RSV_OFF, 0);
	mac_update(z, frame + TP_HDR_SIZE, addr_len, 0);
}

/* After the associated data: pad it (the ciphertext follows). */
static void mac_end_aad(struct sealer *z)
{
	mac_pad(z, z->aad_len);
}

static void mac_final(struct sealer *z, uint8_t tag[TP_TAG_SIZE])
{
	uint8_t lens[16];

	mac_pad(z, z->ct_len);
	put64(lens, z->aad_len);
	put64(lens + 8, z->ct_len);
	crypto_onetimeauth_poly1305_update(&z->mac, lens, sizeof(lens));
	crypto_onetimeauth_poly1305_final(&z->mac, tag);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

/*
 * The one pass of sealing and checking. frame: header | address | body
 * (body_len from the header); data: data_len bytes (the header's) of
 * src[0..n) (NULL: right after the body), into dst when set. The
 * associated data must all come before the ciphertext, so in INTEGRITY
 * mode body and data are MACed as AAD and the ciphertext is empty.
 */
static int pass(const uint8_t *frame, const struct iovec *src, size_t n, uint8_t *dst,
		const uint8_t *key, int sealing, uint8_t tag[TP_TAG_SIZE])
{
	size_t addr_len = get16(frame + 24), body_len = get32(frame + 16);
	size_t data_len = get32(frame + 20);
	uint8_t *body = (uint8_t *)frame + TP_HDR_SIZE + addr_len; /* the caller's, writable */
	struct iovec own = { body + body_len, data_len };
	struct sealer z;
	struct plan pl;

	if (plan_of(get16(frame + FLAG_OFF), sealing, &pl))
		return -EBADMSG;
	if (!src) {
		src = &own;
		n = 1;
	}
	sealer_init(&z, frame, key);
	mac_head(&z, frame, addr_len);
	if (pl.body != RUN_MAC_AAD) /* SECRECY: the AAD ends with the address */
		mac_end_aad(&z);
	run(&z, pl.body, body, body, body_len);
	if (pl.data_in)
		run_iov(&z, dst && pl.data == RUN_MAC_AAD ? RUN_COPY_AAD : pl.data, src, n, dst,
			data_len);
	else if (dst)
		copy_iov(dst, src, n, data_len);
	if (pl.body == RUN_MAC_AAD)
		mac_end_aad(&z);
	mac_final(&z, tag);
	sodium_memzero(&z, sizeof(z));
	return 0;
}

/* Session id, sequence number, mode flags and zero reserved bytes into a
 * built frame's header. */
static void stamp(uint8_t *frame, const struct tp_session *s, uint64_t seq)
{
	uint16_t flags = get16(frame + FLAG_OFF);

	flags = (uint16_t)((flags & ~(TP_FLAG_SECRET | TP_FLAG_DATA_OPEN)) | mode_flags(s->mode));
	frame[FLAG_OFF] = (uint8_t)flags;
	frame[FLAG_OFF + 1] = (uint8_t)(flags >> 8);
	put64(frame + 32, s->id);
	put64(frame + TP_SEQ_OFF, seq);
	memset(frame + TP_TAG_OFF, 0, TP_HDR_SIZE - TP_TAG_OFF);
}

void tp_frame_seal(uint8_t *frame, size_t head_len, const struct iovec *data, size_t n,
		   const struct tp_session *s, uint64_t seq)
{
	(void)head_len; /* the header's lengths say it */
	stamp(frame, s, seq);
	pass(frame, n ? data : NULL, n, NULL, s->key, 1, frame + TP_TAG_OFF);
}

void tp_frame_seal_copy(uint8_t *frame, size_t head_len, const struct iovec *src, size_t n,
			uint8_t *dst, const struct tp_session *s, uint64_t seq)
{
	(void)head_len;
	stamp(frame, s, seq);
	pass(frame, src, n, dst, s->key, 1, frame + TP_TAG_OFF);
}

int tp_frame_verify(const struct tp_frame *f, const struct iovec *data, size_t n,
		    const struct tp_session *s)
{
	const uint8_t *frame = f->addr - TP_HDR_SIZE;
	uint8_t tag[TP_TAG_SIZE];
	int rc;

	if ((f->hdr.flags & (TP_FLAG_SECRET | TP_FLAG_DATA_OPEN)) != mode_flags(s->mode))
		return -EBADMSG; /* not the session's mode: stripped, or forged */
	rc = pass(frame, data, data ? n : 0, NULL, s->key, 0, tag);
	if (!rc && crypto_verify_16(tag, frame + TP_TAG_OFF))
		rc = -EBADMSG;
	sodium_memzero(tag, sizeof(tag));
	return rc;
}

void tp_frame_unseal(uint8_t *frame, size_t head_len, const struct iovec *data, size_t n,
		     const struct tp_session *s)
{
	size_t addr_len = get16(frame + 24), body_len = get32(frame + 16);
	size_t data_len = get32(frame + 20);
	uint8_t *body = frame + TP_HDR_SIZE + addr_len;
	struct iovec own = { body + body_len, data_len };
	struct sealer z;

	(void)head_len;
	if (!(get16(frame + FLAG_OFF) & TP_FLAG_SECRET))
		return;
	if (!n) {
		data = &own;
		n = 1;
	}
	sealer_init(&z, frame, s->key);
	run(&z, RUN_CRYPT, body, body, body_len);
	run_iov(&z, RUN_CRYPT, data, n, NULL, data_len);
	sodium_memzero(&z, sizeof(z));
}

void tp_frame_crypt_body(const struct tp_frame *f, const struct tp_session *s)
{
	uint8_t *frame = (uint8_t *)(f->addr - TP_HDR_SIZE); /* the caller's */
	uint8_t *body = frame + TP_HDR_SIZE + get16(frame + 24);
	struct sealer z;

	if (!(get16(frame + FLAG_OFF) & TP_FLAG_SECRET))
		return;
	sealer_init(&z, frame, s->key);
	run(&z, RUN_CRYPT, body, body, get32(frame + 16));
	sodium_memzero(&z, sizeof(z));
}

void tp_frame_decrypt(const struct tp_frame *f, const struct iovec *data, size_t n,
		      const struct tp_session *s)
{
	/* f's memory is the caller's receive buffer */
	tp_frame_unseal((uint8_t *)(f->addr - TP_HDR_SIZE), 0, data, data ? n : 0, s);
}

int tp_frame_open(const struct tp_frame *f, const struct iovec *data, size_t n,
		  const struct tp_session *s, struct tp_replay *w)
{
	int rc = tp_frame_verify(f, data, n, s);

	if (rc)
		return rc;
	if (w && tp_replay_accept(w, f->hdr.seq))
		return -EALREADY;
	tp_frame_decrypt(f, data, n, s);
	return 0;
}
