/*
 * ios_cap.c - the storage daemon's capability check: every request that
 * reads, changes or reveals an object carries a capability (tessera.
 * Capability) the metadata daemon signed, and is served only if
 *   - its MAC verifies under the shared key (else EACCES: forged),
 *   - it has not expired, give or take IOS_CAP_SKEW_NS of clock skew
 *     between the daemons (else EKEYEXPIRED: the client renews it),
 *   - it names every object the request touches (admin capabilities name
 *     all), and
 *   - it holds a right the opcode needs (its row of TP_OPCODES, tproto.h;
 *     an exclusive LOCK_ACQUIRE and a VLOG merge need WRITE, which their
 *     bodies say).
 * The answer names the opcode, the object and this daemon.
 *
 * Verified capabilities are remembered (IOS_CAP_CACHE of them, direct
 * mapped by MAC), so a file's stream of requests costs one HMAC, not one
 * each: a hit needs the same MAC and the same signed bytes, so nothing
 * unverified is ever taken from the cache. Memory: at most IOS_CAP_CACHE
 * encodings of at most TP_CAP_MAX_HANDLES handles (about 2 KiB each).
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

const struct cap_key *ios_caps_key(const struct ios_caps *c)
{
	return &c->key;
}

/* Verified before (cached) or now (then cached). */
static int verified(struct ios_caps *c, const Tessera__Capability *cap)
{
	uint8_t enc[8 + 8 + 4 + 4 + 8 + 4 + 8 * TP_CAP_MAX_HANDLES];
	struct cap_entry *e;
	size_t len;

	if (cap->mac.len != TP_CAP_MAC_LEN || cap->n_handles > TP_CAP_MAX_HANDLES)
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

/* The field of msg named `name`, if it has type `type` and is repeated
 * exactly when `repeated` says so; NULL otherwise. */
static const ProtobufCFieldDescriptor *field(const ProtobufCMessage *msg, const char *name,
					     ProtobufCType type, int repeated)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);

	if (!f || f->type != type || (f->label == PROTOBUF_C_LABEL_REPEATED) != repeated)
		return NULL;
	return f;
}

/* What the body adds to the row's right: an exclusive lock keeps others
 * out of the bytes (and made the owner's own lock wait), so it changes
 * state and needs WRITE; a shared one keeps the row's read-or-write. A
 * mode that is neither is judged as exclusive (ios_lock.c refuses it
 * anyway). */
static uint32_t body_rights(unsigned op, const ProtobufCMessage *msg, uint32_t rights)
{
	if (op == TP_OP_LOCK_ACQUIRE && msg->descriptor == &tessera__lock_acquire_request__descriptor &&
	    ((const Tessera__LockAcquireRequest *)msg)->mode != TESSERA__LOCK_MODE__LOCK_READ)
		return TP_CAP_WRITE;
	/* VLOG: its row says STAT (the state); a merge changes the object
	 * (anything but the state is judged as a merge). */
	if (op == TP_OP_VLOG && msg->descriptor == &tessera__vlog_request__descriptor &&
	    ((const Tessera__VlogRequest *)msg)->op != TESSERA__VLOG_OP__VLOG_STATE)
		return TP_CAP_WRITE;
	return rights;
}

/* The right comes from the opcode's row of TP_OPCODES; the capability and
 * the objects from the request's fields `cap` and `handle` or `handles`
 * (tproto.h, enum tp_right). Anything else is refused, never waved
 * through: an opcode with no row, a request that needs a right but has
 * no `cap`, or one that must name its objects but has neither field
 * (tests/unit/test_ios_rights.c holds every storage opcode to this). */
int ios_cap_need(unsigned op, const ProtobufCMessage *msg, struct ios_cap_need *n)
{
	enum tp_right right = tp_opcode_right(op);
	const char *base = (const char *)msg;
	const ProtobufCFieldDescriptor *f;

	memset(n, 0, sizeof(*n));
	if (right == TP_RIGHT_NONE)
		return 0;
	if (!(n->rights = tp_right_caps(right)) || !msg ||
	    !(f = field(msg, "cap", PROTOBUF_C_TYPE_MESSAGE, 0)) ||
	    f->descriptor != &tessera__capability__descriptor)
		return -EPROTO;
	n->cap = *(const Tessera__Capability *const *)(base + f->offset);
	n->rights = body_rights(op, msg, n->rights);
	if (!tp_right_names_objects(right))
		return 1;
	if ((f = field(msg, "handle", PROTOBUF_C_TYPE_UINT64, 0))) {
		n->handles = (const uint64_t *)(base + f->offset);
		n->n = 1;
	} else if ((f = field(msg, "handles", PROTOBUF_C_TYPE_UINT64, 1))) {
		n->handles = *(const uint64_t *const *)(base + f->offset);
		n->n = *(const size_t *)(base + f->quantifier_offset);
	} else {
		return -EPROTO;
	}
	return 1;
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

/* The objects a request names, for its error messages. */
static void describe_objects(const struct ios_cap_need *n, unsigned op, char *obj, size_t len)
{
	if (n->n)
		snprintf(obj, len, OBJ "%s", n->handles[0], n->n > 1 ? " (and others)" : "");
	else
		snprintf(obj, len, "%s", op == TP_OP_LEASE ? "a lock session" : "the objects");
}

/* Refuses a request whose capability is missing, forged, someone else's
 * or expired: the reply's error, or 0 to go on. */
static int refuse_holder(struct ios *ios, struct srv_req *req, const struct ios_cap_need *n,
			 const char *what, const char *obj)
{
	if (!n->cap)
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: no capability (open the file first)",
				       what, obj, ios->index), -EACCES;
	if (!verified(ios->caps, n->cap))
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: capability does not verify (forged or from"
				       " another file system)", what, obj, ios->index), -EACCES;
	/* Bound to whom it was issued: a capability sniffed from the network
	 * or handed to another user serves nobody else. A uid 0 session (the
	 * FUSE mount acting for its callers, the metadata daemon's purger)
	 * may present anyone's. */
	if (req->ident.uid != 0 && req->ident.uid != n->cap->uid)
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: the capability (file %016" PRIx64 ") was issued"
				       " to uid %u, not to the caller (uid %u)", what, obj,
				       ios->index, n->cap->file, n->cap->uid, req->ident.uid), -EACCES;
	if (tp_real_ns() > n->cap->expires_ns + IOS_CAP_SKEW_NS)
		return srv_reply_error(req, -EKEYEXPIRED, "%s of %s on storage daemon %u:"
				       " capability for file %016" PRIx64 " expired",
				       what, obj, ios->index, n->cap->file), -EKEYEXPIRED;
	return 0;
}

/* Refuses a request for objects or rights a valid capability does not
 * grant: the reply's error, or 0 to go on. */
static int refuse_scope(struct ios *ios, struct srv_req *req, const struct ios_cap_need *n,
			const char *what, const char *obj)
{
	const Tessera__Capability *cap = n->cap;

	for (size_t i = 0; i < n->n; i++)
		if (!names(cap, n->handles[i]))
			return srv_reply_error(req, -EACCES, "%s of " OBJ " on storage daemon %u:"
					       " permission denied: the capability (file %016"
					       PRIx64 ") does not name this object",
					       what, n->handles[i], ios->index, cap->file), -EACCES;
	if (!(cap->rights & n->rights))
		return srv_reply_error(req, -EACCES, "%s of %s on storage daemon %u: permission"
				       " denied: the capability (file %016" PRIx64 ") grants %s%s%s%s%s"
				       "but not this%s", what, obj, ios->index, cap->file,
				       cap->rights & TP_CAP_READ ? "read " : "",
				       cap->rights & TP_CAP_WRITE ? "write " : "",
				       cap->rights & TP_CAP_STAT ? "stat " : "",
				       cap->rights & TP_CAP_REMOVE ? "remove " : "",
				       cap->rights & TP_CAP_ADMIN ? "admin " : "",
				       n->rights == TP_CAP_WRITE ? " (it needs write: open the file"
				       " for writing)" : ""), -EACCES;
	return 0;
}

int ios_refuse_by_cap(struct ios *ios, struct srv_req *req)
{
	unsigned op = req->frame.hdr.opcode;
	const char *what = tp_opcode_name(op);
	char obj[64];
	struct ios_cap_need n;
	int rc = ios_cap_need(op, req->msg, &n);

	if (rc == 0)
		return 0;
	if (rc < 0)
		return srv_reply_error(req, -EACCES, "%s on storage daemon %u: permission denied:"
				       " the opcode has no right a capability must hold (a bug:"
				       " see TP_OPCODES)", what ? what : "an unknown opcode",
				       ios->index), -EACCES;
	/* The request's size first: matching a million handles against the
	 * capability would cost what the limit is there to prevent. */
	if (n.n > TP_MAX_HANDLES)
		return srv_reply_error(req, -E2BIG, "%s: %zu handles exceed the limit of %d per"
				       " request", what, n.n, TP_MAX_HANDLES), -E2BIG;
	describe_objects(&n, op, obj, sizeof(obj));
	if ((rc = refuse_holder(ios, req, &n, what, obj)))
		return rc;
	return refuse_scope(ios, req, &n, what, obj);
}
