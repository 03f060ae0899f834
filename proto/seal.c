/*
 * seal.c - the MAC that binds a frame to its session (auth.c opens the
 * session and shares its key): keyed BLAKE2b-256 (libsodium
 * crypto_generichash with the session key, BLAKE2's own MAC mode) over the
 * header (up to the MAC) and the address and body after it. BLAKE2b rather
 * than HMAC-SHA-512-256 (crypto_auth): 1.1 us against 4.0 us for a
 * 133-byte frame here, and every request and reply is sealed and checked
 * once each. Raw data is left out: it can be a megabyte, and the threat
 * model (docs/security.md) trusts the network not to rewrite frames.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "tproto.h"

_Static_assert(TP_MAC_SIZE == crypto_generichash_BYTES, "frame MAC is BLAKE2b-256");
_Static_assert(TP_KEY_SIZE >= crypto_generichash_KEYBYTES_MIN &&
	       TP_KEY_SIZE <= crypto_generichash_KEYBYTES_MAX, "session key keys BLAKE2b");

static void mac_of(const uint8_t *frame, size_t head_len, const uint8_t *key,
		   uint8_t out[TP_MAC_SIZE])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, TP_KEY_SIZE, TP_MAC_SIZE);
	/* the header up to the MAC, then everything after the header */
	crypto_generichash_update(&st, frame, TP_MAC_OFF);
	crypto_generichash_update(&st, frame + TP_HDR_SIZE, head_len - TP_HDR_SIZE);
	crypto_generichash_final(&st, out, TP_MAC_SIZE);
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

