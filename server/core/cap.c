/* cap.c - capability keys, signing and MAC checks (cap.h). The
 * cryptography is libsodium's HMAC-SHA256 (the frames' MACs use the same
 * library: proto/seal.c). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cap.h"

_Static_assert(CAP_KEY_LEN == crypto_auth_hmacsha256_KEYBYTES, "the key is an HMAC-SHA256 key");
_Static_assert(TP_CAP_MAC_LEN == crypto_auth_hmacsha256_BYTES, "a capability MAC is one HMAC-SHA256");

int cap_key_load(const char *path, struct cap_key *key, char *err, size_t errlen)
{
	char text[256];
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, rc = 0;

	if (!path || !*path) {
		snprintf(err, errlen, "no key_file in the config: the daemons need the shared"
			 " capability key (tessera-genconfig writes one)");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		goto out;
	}
	/* A key others can read lets them forge any capability. */
	if (st.st_mode & 077) {
		snprintf(err, errlen, "key file %s: mode %04o lets group or others read it;"
			 " refusing to start (chmod 600 %s)", path, (unsigned)(st.st_mode & 07777), path);
		rc = -EPERM;
		goto out;
	}
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		goto out;
	}
	text[n] = '\0';
	for (const char *p = text; *p && !isspace((unsigned char)*p); p += 2) {
		unsigned v;

		if (got == CAP_KEY_LEN || !isxdigit((unsigned char)p[0]) ||
		    !isxdigit((unsigned char)p[1]) || sscanf(p, "%2x", &v) != 1) {
			got = 0;
			break;
		}
		key->key[got++] = (uint8_t)v;
	}
	if (got != CAP_KEY_LEN) {
		snprintf(err, errlen, "key file %s: expected %d hex digits", path, 2 * CAP_KEY_LEN);
		rc = -EINVAL;
	}
out:
	close(fd);
	return rc;
}

static uint8_t *put(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

#define CAP_TAG "TSRACAP1"

size_t cap_encoded_size(const Tessera__Capability *c)
{
	return 8 + 8 + 4 + 4 + 8 + 4 + 8 * c->n_handles;
}

size_t cap_encode(const Tessera__Capability *c, uint8_t *buf)
{
	uint8_t *p = buf;

	memcpy(p, CAP_TAG, 8);
	p = put(p + 8, c->file, 8);
	p = put(p, c->rights, 4);
	p = put(p, c->uid, 4);
	p = put(p, (uint64_t)c->expires_ns, 8);
	p = put(p, c->n_handles, 4);
	for (size_t i = 0; i < c->n_handles; i++)
		p = put(p, c->handles[i], 8);
	return (size_t)(p - buf);
}

/* The MAC of one kind of signed message, over its fixed encoding. */
typedef int (*mac_fn)(const struct cap_key *key, const void *msg, uint8_t *mac);

/* Sign msg by f into mac[TP_CAP_MAC_LEN], which *field then points to. */
static int sign_with(const struct cap_key *key, mac_fn f, const void *msg,
		     ProtobufCBinaryData *field, uint8_t *mac)
{
	int rc = f(key, msg, mac);

	if (rc)
		return rc;
	field->data = mac;
	field->len = TP_CAP_MAC_LEN;
	return 0;
}

/* Whether *field is f's MAC of msg (constant-time compare). */
static int mac_matches(const struct cap_key *key, mac_fn f, const void *msg,
		       const ProtobufCBinaryData *field)
{
	uint8_t mac[TP_CAP_MAC_LEN];

	if (field->len != TP_CAP_MAC_LEN || f(key, msg, mac))
		return 0;
	return sodium_memcmp(mac, field->data, TP_CAP_MAC_LEN) == 0;
}

static int cap_mac(const struct cap_key *key, const void *msg, uint8_t *mac)
{
	const Tessera__Capability *c = msg;
	uint8_t buf[8 + 8 + 4 + 4 + 8 + 4 + 8 * TP_CAP_MAX_HANDLES];

	if (c->n_handles > TP_CAP_MAX_HANDLES)
		return -EINVAL;
	crypto_auth_hmacsha256(mac, buf, cap_encode(c, buf), key->key);
	return 0;
}

int cap_sign(const struct cap_key *key, Tessera__Capability *c, uint8_t *mac)
{
	return sign_with(key, cap_mac, c, &c->mac, mac);
}

int cap_mac_ok(const struct cap_key *key, const Tessera__Capability *c)
{
	return mac_matches(key, cap_mac, c, &c->mac);
}

/* Versioning: commits and merge grants (cap.h). */
#define COMMIT_TAG "TSRAVCM1"
#define GRANT_TAG "TSRAVGR1"
#define IDS_TAG "TSRAVID1"

static int commit_mac(const struct cap_key *key, const void *msg, uint8_t *mac)
{
	const Tessera__VersionCommit *c = msg;
	uint8_t buf[8 + 8 + 8 + 8 + 4 + 8 * TP_MAX_STRIPE];
	uint8_t *p = buf;

	if (c->n_handles > TP_MAX_STRIPE)
		return -EINVAL;
	memcpy(p, COMMIT_TAG, 8);
	p = put(p + 8, c->file, 8);
	p = put(p, c->t, 8);
	p = put(p, c->vm, 8);
	p = put(p, c->n_handles, 4);
	for (size_t i = 0; i < c->n_handles; i++)
		p = put(p, c->handles[i], 8);
	crypto_auth_hmacsha256(mac, buf, (size_t)(p - buf), key->key);
	return 0;
}

int cap_sign_commit(const struct cap_key *key, Tessera__VersionCommit *c, uint8_t *mac)
{
	return sign_with(key, commit_mac, c, &c->mac, mac);
}

int cap_commit_ok(const struct cap_key *key, const Tessera__VersionCommit *c)
{
	return mac_matches(key, commit_mac, c, &c->mac);
}

static int grant_mac(const struct cap_key *key, const void *msg, uint8_t *mac)
{
	const Tessera__VersionGrant *g = msg;
	uint8_t buf[8 + 8 + 8 + 4 + 8 + 4 + 4 * TP_VERSION_MAX_IDS];
	uint8_t *p = buf;

	if (g->n_live_ids > TP_VERSION_MAX_IDS)
		return -EINVAL;
	memcpy(p, GRANT_TAG, 8);
	p = put(p + 8, g->file, 8);
	p = put(p, g->upto, 8);
	p = put(p, g->next_id, 4);
	p = put(p, (uint64_t)g->expires_ns, 8);
	p = put(p, g->n_live_ids, 4);
	for (size_t i = 0; i < g->n_live_ids; i++)
		p = put(p, g->live_ids[i], 4);
	crypto_auth_hmacsha256(mac, buf, (size_t)(p - buf), key->key);
	return 0;
}

int cap_sign_grant(const struct cap_key *key, Tessera__VersionGrant *g, uint8_t *mac)
{
	return sign_with(key, grant_mac, g, &g->mac, mac);
}

int cap_grant_ok(const struct cap_key *key, const Tessera__VersionGrant *g)
{
	return mac_matches(key, grant_mac, g, &g->mac);
}

static int ids_mac(const struct cap_key *key, const void *msg, uint8_t *mac)
{
	const Tessera__VersionIds *b = msg;
	uint8_t buf[8 + 8 + 4 + 4];
	uint8_t *p = buf;

	memcpy(p, IDS_TAG, 8);
	p = put(p + 8, b->file, 8);
	p = put(p, b->first, 4);
	p = put(p, b->count, 4);
	crypto_auth_hmacsha256(mac, buf, (size_t)(p - buf), key->key);
	return 0;
}

int cap_sign_ids(const struct cap_key *key, Tessera__VersionIds *b, uint8_t *mac)
{
	return sign_with(key, ids_mac, b, &b->mac, mac);
}

int cap_ids_ok(const struct cap_key *key, const Tessera__VersionIds *b)
{
	return mac_matches(key, ids_mac, b, &b->mac);
}
