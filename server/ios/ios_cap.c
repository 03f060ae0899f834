/*
 * ios_cap.c - the storage daemon's capability check: every request that
 * reads, changes or reveals an object carries a capability (tessera.
 * Capability) the metadata daemon signed, and is served only if
 *   - its MAC verifies under the shared key (else EACCES: forged),
 *   - it has not expired, give or take IOS_CAP_SKEW_NS of clock skew
 *     between the daemons (else EKEYEXPIRED: the client renews it),
 *   - it names every object the request touches (admin capabilities name
 *     all), and
 *   - it holds a right the opcode needs (the table in need_of()).
 * The answer names the opcode, the object and this daemon.
 *
 * Verified capabilities are remembered (IOS_CAP_CACHE of them, direct
 * mapped by MAC), so a file's stream of requests costs one HMAC, not one
 * each: a hit needs the same MAC and the same signed bytes, so nothing
 * unverified is ever taken from the cache. Memory: at most IOS_CAP_CACHE
 * encodings of at most CAP_MAX_HANDLES handles (about 2 KiB each).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "ios.h"

#define IOS_CAP_CACHE 1024
#define IOS_CAP_SKEW_NS (5 * 1000000000LL)

struct cap_entry {
	uint8_t mac[TP_CAP_MAC_LEN];
	size_t len;        /* of enc; 0: free */
	uint8_t *enc;      /* cap_encode() of the verified capability */
};

struct ios_caps {
	struct cap_key key;
	struct cap_entry cache[IOS_CAP_CACHE];
	uint64_t hits, misses;
};

int ios_caps_create(const struct cap_key *key, struct ios_caps **out)
{
	struct ios_caps *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->key = *key;
	*out = c;
	return 0;
}

void ios_caps_destroy(struct ios_caps *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < IOS_CAP_CACHE; i++)
		free(c->cache[i].enc);
	free(c);
}

/* Verified before (cached) or now (then cached). */
static int verified(struct ios_caps *c, const Tessera__Capability *cap)
{
	uint8_t enc[8 + 8 + 4 + 4 + 8 + 4 + 8 * CAP_MAX_HANDLES];
	struct cap_entry *e;
	size_t len;

	if (cap->mac.len != TP_CAP_MAC_LEN || cap->n_handles > CAP_MAX_HANDLES)
		return 0;
	len = cap_encode(cap, enc);
	e = &c->cache[(cap->mac.data[0] | (unsigned)cap->mac.data[1] << 8) % IOS_CAP_CACHE];
	if (e->len == len && !memcmp(e->mac, cap->mac.data, TP_CAP_MAC_LEN) &&
	    !memcmp(e->enc, enc, len)) {
		c->hits++;
		return 1;
	}
	c->misses++;
	if (!cap_mac_ok(&c->key, cap))
		return 0;
	free(e->enc);
	e->len = 0;
	if ((e->enc = malloc(len))) {
		memcpy(e->enc, enc, len);
		memcpy(e->mac, cap->mac.data, TP_CAP_MAC_LEN);
		e->len = len;
	}
	return 1;
}

/* What a request of opcode `op` touches and needs: its capability, the
 * handles it names (n may be 0: a lease names a session), and the rights
 * of which it needs one. 0: the opcode needs no capability. */
struct need {
	const Tessera__Capability *cap;
	const uint64_t *handles;
	size_t n;
	uint32_t rights;
};

static int need_of(unsigned op, const ProtobufCMessage *msg, struct need *n)
{
	const uint32_t rw = TP_CAP_READ | TP_CAP_WRITE;

	memset(n, 0, sizeof(*n));
	switch (op) {
#define ONE(OP, type, right)                                      \
	case TP_OP_##OP: {                                        \
		const type *m = (const type *)msg;                \
		n->cap = m->cap;                                  \
		n->handles = &m->handle;                          \
		n->n = 1;                                         \
		n->rights = (right);                              \
		return 1;                                         \
	}
	ONE(WRITE, Tessera__WriteRequest, TP_CAP_WRITE)
	ONE(READ, Tessera__ReadRequest, TP_CAP_READ)
	ONE(TRUNCATE, Tessera__TruncateRequest, TP_CAP_WRITE)
	ONE(LIST_WRITE, Tessera__ListIORequest, TP_CAP_WRITE)
	ONE(LIST_READ, Tessera__ListIORequest, TP_CAP_READ)
	ONE(DTYPE_WRITE, Tessera__DtypeIORequest, TP_CAP_WRITE)
	ONE(DTYPE_READ, Tessera__DtypeIORequest, TP_CAP_READ)
	ONE(LOCAL_OPEN, Tessera__LocalOpenRequest, TP_CAP_READ)
	ONE(FETCH_ADD, Tessera__FetchAddRequest, rw)
	ONE(LOCK_ACQUIRE, Tessera__LockAcquireRequest, rw)
	ONE(LOCK_RELEASE, Tessera__LockReleaseRequest, rw)
#undef ONE
	case TP_OP_GETSIZE:
	case TP_OP_SYNC:
	case TP_OP_REMOVE: {
		const Tessera__HandlesRequest *m = (const Tessera__HandlesRequest *)msg;

		n->cap = m->cap;
		n->handles = m->handles;
		n->n = m->n_handles;
		n->rights = op == TP_OP_GETSIZE ? TP_CAP_STAT | rw :
			    op == TP_OP_SYNC ? rw : TP_CAP_REMOVE; /* fsync(2) of a
								    * read-only fd works */
		return 1;
	}
	case TP_OP_LEASE:
		n->cap = ((const Tessera__LeaseRequest *)msg)->cap;
		n->rights = rw;
		return 1;
	case TP_OP_OBJECT_LIST:
		n->cap = ((const Tessera__ObjectListRequest *)msg)->cap;
		n->rights = TP_CAP_ADMIN;
		return 1;
	default:
		return 0;
	}
}

static int names(const Tessera__Capability *cap, uint64_t h)
{
	if (cap->rights & TP_CAP_ADMIN)
		return 1;
	for (size_t i = 0; i < cap->n_handles; i++)
		if (cap->handles[i] == h)
			return 1;
	return 0;
}

#define OBJ "object %016" PRIx64

int ios_cap_check(struct ios *ios, struct srv_req *req)
{
	unsigned op = req->frame.hdr.opcode;
	const char *what = tp_opcode_name(op);
	uint64_t first;
	char obj[64];
	struct need n;

	if (!need_of(op, req->msg, &n))
		return 0;
	/* The request's size first: matching a million handles against the
	 * capability would cost what the limit is there to prevent. */
	if (n.n > IOS_MAX_HANDLES)
		return srv_reply_error(req, -E2BIG, "%s: %zu handles exceed the limit of %d per"
				       " request", what, n.n, IOS_MAX_HANDLES), -E2BIG;
	first = n.n ? n.handles[0] : 0;
	if (n.n)
		snprintf(obj, sizeof(obj), OBJ "%s", first, n.n > 1 ? " (and others)" : "");
	else
		snprintf(obj, sizeof(obj), "%s", op == TP_OP_LEASE ? "a lock session" : "the objects");
	if (!n.cap)
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: no capability (open the file first)",
				       what, obj, ios->index), -EACCES;
	if (!verified(ios->caps, n.cap))
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: capability does not verify (forged or from"
				       " another file system)", what, obj, ios->index), -EACCES;
	/* Bound to whom it was issued: a capability sniffed from the network
	 * or handed to another user serves nobody else. A uid 0 session (the
	 * FUSE mount acting for its callers, the metadata daemon's purger)
	 * may present anyone's. */
	if (req->ident.uid != 0 && req->ident.uid != n.cap->uid)
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: the capability (file %016" PRIx64 ") was issued"
				       " to uid %u, not to the caller (uid %u)", what, obj,
				       ios->index, n.cap->file, n.cap->uid, req->ident.uid), -EACCES;
	if (cap_now_ns() > n.cap->expires_ns + IOS_CAP_SKEW_NS)
		return srv_reply_error(req, -EKEYEXPIRED, "%s of %s on storage daemon %u:"
				       " capability for file %016" PRIx64 " expired",
				       what, obj, ios->index, n.cap->file), -EKEYEXPIRED;
	for (size_t i = 0; i < n.n; i++)
		if (!names(n.cap, n.handles[i]))
			return srv_reply_error(req, -EACCES, "%s of " OBJ " on storage daemon %u:"
					       " permission denied: the capability (file %016"
					       PRIx64 ") does not name this object",
					       what, n.handles[i], ios->index, n.cap->file), -EACCES;
	if (!(n.cap->rights & n.rights))
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: the capability (file %016" PRIx64 ") grants %s%s%s%s%s"
				       "but not this", what, obj, ios->index, n.cap->file,
				       n.cap->rights & TP_CAP_READ ? "read " : "",
				       n.cap->rights & TP_CAP_WRITE ? "write " : "",
				       n.cap->rights & TP_CAP_STAT ? "stat " : "",
				       n.cap->rights & TP_CAP_REMOVE ? "remove " : "",
				       n.cap->rights & TP_CAP_ADMIN ? "admin " : ""), -EACCES;
	return 0;
}
