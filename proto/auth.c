/*
 * auth.c - who is calling: the MUNGE credentials that open a session.
 *
 * Why MUNGE: a process cannot prove its uid over a network by itself, and
 * a uid written into a request is whatever the sender wants. munged (one
 * per machine, all sharing a key) encodes a credential holding the uid and
 * gid of the process that asked it, over a local socket where the kernel
 * tells munged who is asking; any munged with the key decodes it, once
 * (a second decode is reported as a replay) and within its lifetime.
 *
 * Why sessions: one munged round trip per request would cost more than the
 * request. The credential's payload (encrypted by munged) carries a fresh
 * random key, so after one AUTH both sides share a secret nobody else
 * saw; a MAC under it (seal.c) proves each frame came from the holder.
 * The payload also names the daemon the credential is for, so a daemon
 * that receives it cannot replay it to another daemon (whose munged, on
 * another machine, has not seen it), and the caller's transport name, so
 * replies go only where the authenticated caller listens.
 *
 * Why a uid restriction: a credential any process could decode would hand
 * its key to whoever listens on a daemon's port while the daemon is down
 * (a squatter), and the squatter could then answer correctly sealed. So a
 * client restricts every credential to the daemons' uid (the config's
 * daemon_uid, MUNGE_OPT_UID_RESTRICTION): munged decodes it only for a
 * process of that effective uid - root included, munge 0.5.15 makes no
 * exception for root - and the AUTH reply, sealed with the proposed key,
 * proves that a process of the daemons' uid read it. A daemon refuses a
 * credential without a restriction (a client that forgot it exposes its
 * key).
 *
 * Why the origin: munged records the address of the host that encoded
 * the credential (its origin, MUNGE_OPT_ADDR4); a daemon decides from it
 * whether a uid-0 caller is root of the file system (admin_hosts).
 *
 * Payload: target length (1 byte) | target | key (TP_KEY_SIZE) | address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <munge.h>
#include <sodium.h>

#include "tproto.h"


#define TP_TARGET_MAX 32

static int munge_ctx(const char *socket, munge_ctx_t *ctx, char *err, size_t errlen)
{
	*ctx = munge_ctx_create();
	if (!*ctx) {
		snprintf(err, errlen, "munge_ctx_create: out of memory");
		return -ENOMEM;
	}
	if (socket && *socket && munge_ctx_set(*ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge socket %s: %s", socket, munge_ctx_strerror(*ctx));
		munge_ctx_destroy(*ctx);
		return -EINVAL;
	}
	return 0;
}

static int munge_rc(munge_err_t e)
{
	switch (e) {
	case EMUNGE_SOCKET:
	case EMUNGE_TIMEOUT:
		return -ECONNREFUSED;
	case EMUNGE_NO_MEMORY:
		return -ENOMEM;
	default:
		return -EACCES;
	}
}

int tp_auth_encode(const char *socket, uint32_t daemon_uid, const char *target, const void *addr,
		   size_t addr_len, uint8_t key_out[TP_KEY_SIZE], char **cred, char *err,
		   size_t errlen)
{
	uint8_t payload[1 + TP_TARGET_MAX + TP_KEY_SIZE + TP_MAX_ADDR];
	size_t tlen = strlen(target), len;
	munge_ctx_t ctx;
	munge_err_t e;
	int rc;

	if (tlen > TP_TARGET_MAX || addr_len > TP_MAX_ADDR || !addr_len) {
		snprintf(err, errlen, "credential for %s: target or address too long", target);
		return -EINVAL;
	}
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium does not initialise");
		return -EIO;
	}
	randombytes_buf(key_out, TP_KEY_SIZE);
	payload[0] = (uint8_t)tlen;
	memcpy(payload + 1, target, tlen);
	memcpy(payload + 1 + tlen, key_out, TP_KEY_SIZE);
	memcpy(payload + 1 + tlen + TP_KEY_SIZE, addr, addr_len);
	len = 1 + tlen + TP_KEY_SIZE + addr_len;
	if ((rc = munge_ctx(socket, &ctx, err, errlen)))
		return rc;
	if (munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)daemon_uid) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge: cannot restrict a credential to uid %u: %s",
			 (unsigned)daemon_uid, munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		sodium_memzero(payload, sizeof(payload));
		return -EINVAL;
	}
	e = munge_encode(cred, ctx, payload, (int)len);
	sodium_memzero(payload, sizeof(payload));
	if (e != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge_encode (munged at %s): %s",
			 socket && *socket ? socket : "the default socket", munge_ctx_strerror(ctx));
		rc = munge_rc(e);
	}
	munge_ctx_destroy(ctx);
	return rc;
}

int tp_auth_payload(const void *payload, size_t len, const char *target, struct tp_auth_id *out)
{
	const uint8_t *p = payload;
	size_t tlen = strlen(target);

	if (len < 2 || p[0] != tlen || len < 1 + tlen + TP_KEY_SIZE + 1 ||
	    len > 1 + tlen + TP_KEY_SIZE + TP_MAX_ADDR || memcmp(p + 1, target, tlen))
		return -EACCES;
	memcpy(out->key, p + 1 + tlen, TP_KEY_SIZE);
	out->addr_len = len - 1 - tlen - TP_KEY_SIZE;
	memcpy(out->addr, p + 1 + tlen + TP_KEY_SIZE, out->addr_len);
	return 0;
}

/* What munged says about a decoded credential: the payload, who encoded
 * it, whether it is restricted (to us: munged decoded it) and where it was
 * encoded. */
static void munged_view(munge_ctx_t ctx, const void *payload, int len, uid_t uid, gid_t gid,
			struct tp_auth_munged *m)
{
	uid_t restricted = (uid_t)MUNGE_UID_ANY;
	struct in_addr origin = { 0 };

	memset(m, 0, sizeof(*m));
	m->payload = payload;
	m->len = (size_t)len;
	m->uid = (uint32_t)uid;
	m->gid = (uint32_t)gid;
	m->restricted = munge_ctx_get(ctx, MUNGE_OPT_UID_RESTRICTION, &restricted) ==
				EMUNGE_SUCCESS && restricted != (uid_t)MUNGE_UID_ANY;
	if (munge_ctx_get(ctx, MUNGE_OPT_ADDR4, &origin) != EMUNGE_SUCCESS)
		origin.s_addr = 0; /* unknown: never an admin host */
	memcpy(m->origin4, &origin.s_addr, sizeof(m->origin4));
}

int tp_auth_check(const struct tp_auth_munged *m, const char *target, struct tp_auth_id *out,
		  char *err, size_t errlen)
{
	if (!m->restricted) {
		snprintf(err, errlen, "credential of uid %u is not restricted to the daemons' uid "
			 "(a client older than daemon_uid?)", (unsigned)m->uid);
		return -EACCES;
	}
	if (tp_auth_payload(m->payload, m->len, target, out)) {
		snprintf(err, errlen, "credential of uid %u is not meant for %s", (unsigned)m->uid,
			 target);
		return -EACCES;
	}
	memcpy(out->origin4, m->origin4, sizeof(out->origin4));
	out->uid = m->uid;
	out->gid = m->gid;
	return 0;
}

int tp_auth_decode(const char *socket, const char *cred, const char *target,
		   struct tp_auth_id *out, char *err, size_t errlen)
{
	struct tp_auth_munged m;
	void *payload = NULL;
	int len = 0, rc;
	uid_t uid;
	gid_t gid;
	munge_ctx_t ctx;
	munge_err_t e;

	if ((rc = munge_ctx(socket, &ctx, err, errlen)))
		return rc;
	e = munge_decode(cred, ctx, &payload, &len, &uid, &gid);
	if (e != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "credential refused: %s", munge_ctx_strerror(ctx));
		rc = munge_rc(e);
		goto out;
	}
	munged_view(ctx, payload, len, uid, gid, &m);
	rc = tp_auth_check(&m, target, out, err, errlen);
out:
	if (payload) {
		sodium_memzero(payload, (size_t)len);
		free(payload);
	}
	munge_ctx_destroy(ctx);
	return rc;
}
