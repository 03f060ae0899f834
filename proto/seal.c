/*
 * seal.c - the MAC that binds a frame to its session (auth.c opens the
 * session and shares its key): HMAC-SHA-512-256 (libsodium crypto_auth)
 * over the header (up to the MAC) and the address and body after it. Raw
 * data is left out: it can be a megabyte, and the threat model (README,
 * "Security") trusts the network not to rewrite frames.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "tproto.h"

_Static_assert(TP_MAC_SIZE == crypto_auth_BYTES, "frame MAC is crypto_auth's");

static void mac_of(const uint8_t *frame, size_t head_len, const uint8_t *key,
		   uint8_t out[TP_MAC_SIZE])
{
	crypto_auth_hmacsha512256_state st;

	crypto_auth_hmacsha512256_init(&st, key, TP_KEY_SIZE);
	/* the header up to the MAC, then everything after the header */
	crypto_auth_hmacsha512256_update(&st, frame, TP_MAC_OFF);
	crypto_auth_hmacsha512256_update(&st, frame + TP_HDR_SIZE, head_len - TP_HDR_SIZE);
	crypto_auth_hmacsha512256_final(&st, out);
}

void tp_frame_seal(uint8_t *frame, size_t head_len, const struct tp_session *s)
{
	for (int i = 0; i < 8; i++)
		frame[32 + i] = (uint8_t)(s->id >> (8 * i));
	mac_of(frame, head_len, s->key, frame + TP_MAC_OFF);
}

int tp_frame_verify(const struct tp_frame *f, const uint8_t key[TP_KEY_SIZE])
{
	const uint8_t *frame = f->addr - TP_HDR_SIZE;
	size_t head_len = TP_HDR_SIZE + f->hdr.addr_len + f->hdr.body_len;
	uint8_t mac[TP_MAC_SIZE];

	mac_of(frame, head_len, key, mac);
	return sodium_memcmp(mac, frame + TP_MAC_OFF, TP_MAC_SIZE) ? -EBADMSG : 0;
}

