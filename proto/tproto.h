/*
 * tproto.h - Tessera's wire protocol, configuration and libfabric transport.
 *
 * The one header other parts include from proto/ (with the message code
 * protoc-c generates from tessera.proto, tessera.pb-c.h). Four pieces:
 *   - frames: a fixed header + reply address + protobuf body + raw data
 *     (frame.c);
 *   - the file system configuration: servers, provider, tunables
 *     (config.c);
 *   - tnet, a small reliable-datagram transport over a libfabric RDM
 *     endpoint whose completion queue exposes a wait fd for event loops
 *     (transport.c);
 *   - dataloops as protobuf messages (dataloop.c).
 */
#ifndef TESSERA_TPROTO_H
#define TESSERA_TPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "tessera.pb-c.h"
#include "tessera_stats.h"  /* the storage daemons' counters */

#define TP_VERSION_STRING "0.4.0"

/* ------------------------------------------------------------------ frames
 *
 * Frame layout: tp_hdr (TP_HDR_SIZE bytes, little-endian) | sender's
 * address (addr_len bytes: its transport name; informational, a daemon
 * replies only to the address its session was authenticated with) |
 * protobuf body (body_len) | raw data (data_len: write payloads, read
 * results). Bytes 32..39 of the header name the session (auth.c), 40..47
 * hold the sender's sequence number in its direction of the session,
 * 48..63 the ChaCha20-Poly1305 tag (seal.c) over the header (but the tag),
 * address, body and raw data, 64..71 are reserved (zero, under the tag).
 */
#define TP_MAGIC       0x41525354u /* "TSRA" */
#define TP_VERSION     2
#define TP_HDR_SIZE    72
#define TP_SEQ_OFF     40
#define TP_TAG_OFF     48
#define TP_TAG_SIZE    16  /* Poly1305 (seal.c) */
#define TP_RSV_OFF     64
#define TP_KEY_SIZE    32
#define TP_FLAG_REPLY  0x1
/* How the frame is sealed (seal.c), under its tag; the receiver wants
 * its session's mode (enum tp_seal_mode). */
#define TP_FLAG_SECRET    0x2 /* body and raw data encrypted */
#define TP_FLAG_DATA_OPEN 0x4 /* raw data outside the tag (measurement only) */
#define TP_MAX_ADDR    256
/* Pieces in one list I/O message; with the frame's 256 KiB allowance for
 * the body beyond max_io, the largest list still fits. */
#define TP_MAX_PIECES  8192

struct tp_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t opcode;     /* TP_OP_* */
	uint64_t reqid;      /* chosen by the client, echoed in the reply */
	uint32_t body_len;
	uint32_t data_len;
	uint16_t addr_len;
	uint16_t flags;      /* TP_FLAG_* */
	int32_t status;      /* replies: 0 or a negative errno (body: ErrorReply) */
	uint64_t session;    /* the sender's session (0: none, as in AUTH) */
	uint64_t seq;        /* the sender's sequence number (seal.c) */
};

/* X(name, number, request message, reply message, served by, right)
 *
 * The one opcode table. "Served by" is MDS, IOS or ALL; each daemon builds
 * its dispatch table from this list (server/daemon.h, SRV_HANDLERS), so an
 * opcode, its messages and the daemon that serves it are named once. CORE:
 * the daemon core itself (AUTH, which opens the session others need).
 * "Right" is what a request's capability must hold (enum tp_right below),
 * which the storage daemon's gatekeeper (server/ios_cap.c) reads from here:
 * every row names one, NONE included, so a row without it does not
 * compile and no opcode skips the check by omission. */
#define TP_OPCODES(X)                                                             \
	X(PING, 1, ping_request, ping_reply, ALL, NONE)                           \
	X(AUTH, 2, auth_request, auth_reply, CORE, NONE)                          \
	X(MKDIR, 10, mkdir_request, attr_reply, MDS, NONE)                        \
	X(CREATE, 11, create_request, attr_reply, MDS, NONE)                      \
	X(LOOKUP, 12, path_request, attr_reply, MDS, NONE)                        \
	X(SETATTR, 13, setattr_request, attr_reply, MDS, NONE)                    \
	X(READDIR, 14, readdir_request, readdir_reply, MDS, NONE)                 \
	X(UNLINK, 15, path_request, remove_reply, MDS, NONE)                      \
	X(RMDIR, 16, path_request, remove_reply, MDS, NONE)                       \
	X(RENAME, 17, rename_request, remove_reply, MDS, NONE)                    \
	X(STATFS, 18, path_request, statfs_reply, MDS, NONE)                      \
	X(SETLAYOUT, 19, set_layout_request, attr_reply, MDS, NONE)               \
	X(FILE_LIST, 20, file_list_request, file_list_reply, MDS, NONE)           \
	X(CAP, 21, cap_request, cap_reply, MDS, NONE)                             \
	X(SYMLINK, 22, link_request, attr_reply, MDS, NONE)                       \
	X(LINK, 23, link_request, attr_reply, MDS, NONE)                          \
	X(MKNOD, 24, link_request, attr_reply, MDS, NONE)                         \
	X(READLINK, 25, path_request, readlink_reply, MDS, NONE)                  \
	X(XATTR_GET, 26, xattr_request, xattr_reply, MDS, NONE)                   \
	X(XATTR_SET, 27, xattr_request, empty_reply, MDS, NONE)                   \
	X(XATTR_LIST, 28, xattr_request, xattr_reply, MDS, NONE)                  \
	X(XATTR_REMOVE, 29, xattr_request, empty_reply, MDS, NONE)                \
	X(WRITE, 30, write_request, write_reply, IOS, WRITE)                      \
	X(READ, 31, read_request, read_reply, IOS, READ)                          \
	X(GETSIZE, 32, handles_request, sizes_reply, IOS, STAT)                   \
	X(TRUNCATE, 33, truncate_request, empty_reply, IOS, WRITE)                \
	X(REMOVE, 34, handles_request, empty_reply, IOS, REMOVE)                  \
	X(SYNC, 35, handles_request, empty_reply, IOS, WRITE)                     \
	X(IOS_STATFS, 36, ping_request, statfs_reply, IOS, NONE)                  \
	X(IOS_STATS, 37, ping_request, ios_stats_reply, IOS, NONE)                \
	X(FETCH_ADD, 38, fetch_add_request, fetch_add_reply, IOS, WRITE)          \
	X(OBJECT_LIST, 39, object_list_request, object_list_reply, IOS, ADMIN)    \
	X(LIST_WRITE, 40, list_iorequest, write_reply, IOS, WRITE)                \
	X(LIST_READ, 41, list_iorequest, read_reply, IOS, READ)                   \
	X(DTYPE_WRITE, 42, dtype_iorequest, write_reply, IOS, WRITE)              \
	X(DTYPE_READ, 43, dtype_iorequest, read_reply, IOS, READ)                 \
	X(LOCAL_OPEN, 44, local_open_request, local_open_reply, IOS, READ)        \
	X(FALLOCATE, 45, fallocate_request, empty_reply, IOS, WRITE)              \
	X(LOCK_ACQUIRE, 50, lock_acquire_request, lock_reply, IOS, READ_OR_WRITE) \
	X(LOCK_RELEASE, 51, lock_release_request, lock_reply, IOS, READ_OR_WRITE) \
	X(LEASE, 52, lease_request, lock_reply, IOS, SESSION)                     \
	X(LOCK_TEST, 53, lock_test_request, lock_test_reply, IOS, READ_OR_WRITE) \
	X(CLOSE_WRITE, 56, close_write_request, attr_reply, MDS, NONE)           \
	X(SIZE_REPORT, 57, size_report_request, empty_reply, MDS, NONE)          \
	X(VERSION, 58, version_request, version_reply, MDS, NONE)                \
	X(META_SYNC, 60, meta_sync_request, empty_reply, MDS, NONE)              \
	X(WATCH, 61, watch_request, watch_reply, MDS, NONE)                      \
	X(VLOG, 59, vlog_request, vlog_reply, IOS, STAT) /* MERGE: WRITE, ios_vlogd.c */

/* RenameRequest.mode: what a rename does to an existing target. */
enum tp_rename_mode { TP_RENAME_REPLACE = 0, TP_RENAME_NOREPLACE = 1, TP_RENAME_EXCHANGE = 2 };

/* When an open for writing counts its writer at the metadata daemon: at
 * the open, or at its first write (PathRequest.writer_later, then
 * CapRequest.writer_only). */
enum tp_open_writer { TP_WRITER_NOW, TP_WRITER_LATER };

/* Capability rights (tessera.Capability.rights). READ and WRITE each
 * include STAT (sizes) and shared locks; WRITE alone covers whatever
 * changes state: writes, truncate, sync, fetch-and-add and exclusive
 * locks (a LOCK_ACQUIRE's mode is in its body: server/ios/ios_cap.c). REMOVE and ADMIN (fsck's listing; names every object) only the
 * metadata daemon grants: REMOVE for a file just removed (and its purger),
 * ADMIN with every right to root alone. */
#define TP_CAP_READ   0x1u
#define TP_CAP_WRITE  0x2u
#define TP_CAP_STAT   0x4u
#define TP_CAP_REMOVE 0x8u
#define TP_CAP_ADMIN  0x10u
/* Not a right: the capability's objects are versioned (issue 25). A
 * storage daemon refuses plain writes and reads of them, and versioned
 * ones of any other object. */
#define TP_CAP_VERSIONED 0x20u
#define TP_CAP_MAC_LEN 32 /* HMAC-SHA256 */
/* The most objects one capability names: a file's (TP_MAX_STRIPE) or those
 * of one REMOVE of the metadata daemon's purger (TP_MAX_HANDLES, several
 * files' objects under one capability). */
#define TP_CAP_MAX_HANDLES 256

/* What an opcode's request needs (TP_OPCODES' last column): a capability
 * holding one of the rights tp_right_caps() gives, naming the objects the
 * request names (its `handle` or `handles` field) when
 * tp_right_names_objects() says so. A request that needs a capability
 * carries it in its `cap` field. */
enum tp_right {
	TP_RIGHT_UNDECLARED = 0, /* not an opcode of the table: refused */
	TP_RIGHT_NONE,           /* no capability: names no object (PING, AUTH,
				  * a storage daemon's own statfs and counters)
				  * or a metadata daemon's opcode (which checks
				  * the caller's identity itself) */
	TP_RIGHT_READ,           /* READ */
	TP_RIGHT_WRITE,          /* WRITE */
	TP_RIGHT_READ_OR_WRITE,  /* READ or WRITE (locks: a shared one; the
				  * gatekeeper wants WRITE for an exclusive
				  * one, whose mode is in the request's body;
				  * releasing one's own lock) */
	TP_RIGHT_STAT,           /* STAT, READ or WRITE (sizes) */
	TP_RIGHT_REMOVE,         /* REMOVE */
	TP_RIGHT_SESSION,        /* READ or WRITE, naming no object (a lock
				  * session's lease) */
	TP_RIGHT_ADMIN,          /* ADMIN, which names every object (listing) */
	TP_RIGHT_LIMIT
};

/* The right opcode `opcode` needs; TP_RIGHT_UNDECLARED for an unknown one. */
enum tp_right tp_opcode_right(unsigned opcode);
/* The capability rights (TP_CAP_*) of which a request needing r needs one;
 * 0 for NONE and UNDECLARED. */
uint32_t tp_right_caps(enum tp_right r);
/* 1 if the capability must name each object the request names. */
int tp_right_names_objects(enum tp_right r);

/* Local reads (LOCAL_OPEN): the token's length. On the daemon's socket a
 * client sends the token; the daemon answers one status byte (below)
 * with, on TP_LOCAL_OK, the object's descriptor and its checksum file's
 * (when it has one) as SCM_RIGHTS. */
#define TP_LOCAL_TOKEN 16
#define TP_LOCAL_OK 0
#define TP_LOCAL_UNKNOWN 1  /* no such token (expired, or used) */
#define TP_LOCAL_NOT_YOURS 2 /* the token was given to another uid */
/* Send token to the daemon's abstract socket `name`; wait up to
 * timeout_ms for the answer. 0: *status is the daemon's byte, and the
 * descriptors that came with it are fds[0..*nfds) (at most 2; the
 * caller closes them). -ENOTCONN: no such socket here (another host or
 * network namespace); other negative errnos: this attempt failed. */
int tp_local_fetch(const char *name, const uint8_t *token, uint32_t timeout_ms, int fds[2],
		   int *nfds, uint8_t *status);

/* The most storage objects one file may have (a layout's stripe count),
 * and so the most a capability names. The client's public name for it is
 * TESSERA_MAX_STRIPE (client/tessera.h), checked equal at compile time. */
#define TP_MAX_STRIPE 256
/* The most handles one GETSIZE, REMOVE or SYNC request may name: a bound
 * on a request's size, which batching senders (the purger, fsck) fill.
 * A separate limit from TP_MAX_STRIPE that happens to be equal. */
#define TP_MAX_HANDLES 256
_Static_assert(TP_CAP_MAX_HANDLES >= TP_MAX_STRIPE && TP_CAP_MAX_HANDLES >= TP_MAX_HANDLES,
	       "a capability can name a file's objects and a purger's REMOVE");

/* Opcodes are below this bound (checked at compile time in frame.c), so a
 * daemon's dispatch table is a plain array indexed by opcode. */
#define TP_OP_LIMIT 64

/* The longest Tessera path, in bytes without its NUL (the metadata
 * daemon's limit; a buffer holding one is TP_PATH_MAX + 1). */
#define TP_PATH_MAX 4096

/* The length of the directory part of path's first n bytes: "/a/b" -> 2
 * ("/a"), "/a" -> 1 ("/"), trailing slashes ignored; 0 when no '/' comes
 * before the last name (a relative name). The client's and the metadata
 * daemon's one reading of "the directory a change of path changed". */
static inline size_t tp_path_dir_len(const char *path, size_t n)
{
	while (n > 1 && path[n - 1] == '/')
		n--;
	while (n > 0 && path[n - 1] != '/')
		n--;
	while (n > 1 && path[n - 1] == '/')
		n--;
	return n;
}

/* Whether a caller (uid, its groups gids[0..ngids)) may do `want`
 * (read 4, write 2, search or execute 1) to a name of permission bits
 * `mode` owned by fuid:fgid: exactly one class applies, the first that
 * matches (an owner denied by the owner bits is not rescued by the group
 * or other bits); root may do anything. The metadata daemon's check, and
 * the client's when it answers an open from memory. */
static inline int tp_mode_permits(uint32_t uid, const uint32_t *gids, uint32_t ngids,
				  uint32_t mode, uint32_t fuid, uint32_t fgid, uint32_t want)
{
	uint32_t bits = mode & 7, i;

	if (uid == 0)
		return 1;
	if (uid == fuid) {
		bits = (mode >> 6) & 7;
	} else {
		for (i = 0; i < ngids; i++)
			if (gids[i] == fgid) {
				bits = (mode >> 3) & 7;
				break;
			}
	}
	return (bits & want) == want;
}

enum tp_opcode {
#define TP_ENUM(name, num, req, rep, who, right) TP_OP_##name = num,
	TP_OPCODES(TP_ENUM)
#undef TP_ENUM
};

/* "READ", or NULL for an unknown opcode. */
const char *tp_opcode_name(unsigned opcode);
/* The protobuf descriptors of an opcode's request and reply (NULL if
 * unknown). */
const ProtobufCMessageDescriptor *tp_request_desc(unsigned opcode);
const ProtobufCMessageDescriptor *tp_reply_desc(unsigned opcode);

/* A parsed frame: pointers into the receive buffer. */
struct tp_frame {
	struct tp_hdr hdr;
	const uint8_t *addr;
	const uint8_t *body;
	const uint8_t *data;
};

/* Encode a header into out[TP_HDR_SIZE]. */
void tp_hdr_encode(const struct tp_hdr *hdr, uint8_t *out);

/* Check and split a received frame of `len` bytes. Returns 0, or -EPROTO
 * (bad magic, short header, lengths that disagree with len), -EPROTONOSUPPORT
 * (version), -EMSGSIZE (over max_frame), -EOPNOTSUPP (a request with an
 * unknown opcode); `err`
 * says which. The header is decoded into out->hdr as far as it could be,
 * so a daemon can still answer the request id. */
int tp_frame_parse(const void *buf, size_t len, size_t max_frame,
		   struct tp_frame *out, char *err, size_t errlen);

/* Build a frame into buf (cap bytes): header, addr, packed msg (may be
 * NULL for an empty body). Data is not copied: the caller sends it as a
 * second iovec, or appends it. Sets hdr->body_len. Returns the frame
 * length before data, or -EMSGSIZE. */
long tp_frame_build(uint8_t *buf, size_t cap, struct tp_hdr *hdr,
		    const void *addr, size_t addr_len,
		    const ProtobufCMessage *msg);

/*
 * A read reply sent as a tagged message into the caller's buffer (docs/design.md,
 * "Bulk data path"): the client's receive is [a TP_TAGGED_HEAD-byte
 * buffer, the caller's runs], so the reply's header and body must fill
 * exactly TP_TAGGED_HEAD bytes for its data to start at the caller's first
 * run. A reply has no address, and a ReadReply's body is padded (its `pad`
 * field) to TP_TAGGED_BODY bytes.
 */
#define TP_TAGGED_BODY 24
#define TP_TAGGED_HEAD (TP_HDR_SIZE + TP_TAGGED_BODY)
/* Set rep->pad (pointing into pad_store) so that rep packs to exactly
 * TP_TAGGED_BODY bytes; -EMSGSIZE when its other fields leave too little
 * room. */
int tp_read_reply_pad(Tessera__ReadReply *rep, uint8_t pad_store[TP_TAGGED_BODY]);

/* Decode a frame's body as `desc`; NULL if it does not decode. Free with
 * protobuf_c_message_free_unpacked(msg, NULL). */
ProtobufCMessage *tp_body_unpack(const struct tp_frame *frame,
				 const ProtobufCMessageDescriptor *desc);

/* ------------------------------------------------------------------ identity
 *
 * auth.c. Who calls is proven by a MUNGE credential, once per daemon: its
 * payload (encrypted by munged) carries the daemon it is meant for
 * ("mds", "ios:3"), the caller's transport name and a fresh random session
 * key. The daemon answers AUTH with a session id; every later frame names
 * the session and is sealed under the session key (seal.c), and so are the
 * daemon's replies to it.
 */

/* How a session's frames are sealed (AuthRequest/AuthReply.seal_mode; the
 * values are the wire's). Always ChaCha20-Poly1305 under the session key,
 * the nonce the direction and the sender's sequence number. */
enum tp_seal_mode {
	TP_SEAL_INTEGRITY = 0, /* the tag covers header, address, body, raw data */
	TP_SEAL_SECRECY = 1,   /* ...and body and raw data are encrypted */
	TP_SEAL_MEASURE = 2,   /* measurement only (`make bench`): raw data
				* left outside the tag, as before issue 29 */
	TP_SEAL_MODES
};
/* The stronger of two modes (MEASURE < INTEGRITY < SECRECY); an unknown
 * value counts as SECRECY. */
enum tp_seal_mode tp_seal_stronger(enum tp_seal_mode a, enum tp_seal_mode b);
/* The mode a config asks for (encrypt, measure_seal_off). */
struct tp_config;
enum tp_seal_mode tp_seal_mode_of(const struct tp_config *cfg);
/* "integrity", "secrecy", "measurement (raw data unsealed)". */
const char *tp_seal_mode_name(enum tp_seal_mode mode);

struct tp_session {
	uint64_t id;                 /* 0: none */
	uint8_t key[TP_KEY_SIZE];
	enum tp_seal_mode mode;
};

/* The sequence numbers a receiver has accepted from one sender: the
 * highest, and which of the TP_REPLAY_WINDOW below it. Zeroed: none yet. */
#define TP_REPLAY_WINDOW 1024
struct tp_replay {
	uint64_t top;                /* highest accepted + 1; 0: none */
	uint64_t seen[TP_REPLAY_WINDOW / 64]; /* bit (seq % WINDOW) */
};
/* Accept seq once: 0, or -EALREADY when it was accepted before or is
 * older than the window. tp_replay_check answers without recording. */
int tp_replay_check(const struct tp_replay *w, uint64_t seq);
int tp_replay_accept(struct tp_replay *w, uint64_t seq);

/* What a daemon learns from a decoded credential. */
struct tp_auth_id {
	uint32_t uid, gid;           /* from munged, never from the caller */
	uint8_t key[TP_KEY_SIZE];
	uint8_t addr[TP_MAX_ADDR];   /* where replies go */
	size_t addr_len;
	uint8_t origin4[4];          /* IPv4 address of the encoding host, as
				      * munged says (0.0.0.0: unknown) */
};

/*
 * Sealing (seal.c). A built frame's head (header | address | body,
 * head_len bytes) and its raw data data[0..n) (n 0: none; the runs may
 * hold more than the header's data_len, which is what counts) are sealed
 * under s with sequence number seq: the session id, seq and the mode's
 * flags go into the header, then, in SECRECY mode, body and data are
 * encrypted in place, and the tag is written. The direction is the
 * header's TP_FLAG_REPLY. Each seq is used once per session and direction.
 */
void tp_frame_seal(uint8_t *frame, size_t head_len, const struct iovec *data, size_t n,
		   const struct tp_session *s, uint64_t seq);
/* The same with the data read from src[0..n) and the sealed data (its
 * ciphertext in SECRECY mode, a copy otherwise) written to dst (data_len
 * bytes): a write's payload lent by the caller is encrypted into a
 * bounce buffer, never in the caller's memory. */
void tp_frame_seal_copy(uint8_t *frame, size_t head_len, const struct iovec *src, size_t n,
			uint8_t *dst, const struct tp_session *s, uint64_t seq);
/* Check a parsed frame's tag under s (data: as for tp_frame_seal; NULL
 * for the frame's own f->data), and that it is sealed in s's mode: 0 or
 * -EBADMSG. Touches nothing. */
int tp_frame_verify(const struct tp_frame *f, const struct iovec *data, size_t n,
		    const struct tp_session *s);
/* Undo a SECRECY frame's encryption in place (nothing otherwise): a
 * verified frame's body and data (f's memory is the caller's receive
 * buffer, so writable), or, with tp_frame_unseal, a frame this side
 * sealed (to seal it again under another session). */
void tp_frame_decrypt(const struct tp_frame *f, const struct iovec *data, size_t n,
		      const struct tp_session *s);
void tp_frame_unseal(uint8_t *frame, size_t head_len, const struct iovec *data, size_t n,
		     const struct tp_session *s);
/* XOR a SECRECY frame's body with its keystream in place (nothing in
 * other modes; f's memory is the caller's): its own inverse. A receiver
 * that decodes a body before the frame's tag is checked (a storage
 * daemon's bulk write, checked by its disk worker) decrypts the body so,
 * and encrypts it back before tp_frame_verify; until then the plaintext
 * is not to be trusted. */
void tp_frame_crypt_body(const struct tp_frame *f, const struct tp_session *s);
/* Everything a receiver does: tp_frame_verify, then (w not NULL) the
 * sequence number accepted once in w, then tp_frame_decrypt. 0, -EBADMSG
 * (tag or mode) or -EALREADY (replayed, or older than the window). */
int tp_frame_open(const struct tp_frame *f, const struct iovec *data, size_t n,
		  const struct tp_session *s, struct tp_replay *w);

/* A fresh credential for daemon `target` (munged at `socket`, NULL or ""
 * for the default), with a new random key in *key_out, that only a
 * process of uid `daemon_uid` (the config's daemon_uid) can decode;
 * *cred (free()) is the credential's text. -ECONNREFUSED when munged
 * cannot be reached. */
int tp_auth_encode(const char *socket, uint32_t daemon_uid, const char *target,
		   const void *addr, size_t addr_len, uint8_t key_out[TP_KEY_SIZE],
		   char **cred, char *err, size_t errlen);
/* A decoded credential's payload (auth.c says its layout): 0 and the key
 * and address into out when it is meant for `target`, else -EACCES. */
int tp_auth_payload(const void *payload, size_t len, const char *target,
		    struct tp_auth_id *out);
/* What munged gives for a credential it decoded (auth.c reads it from
 * munged; the AUTH fuzz target makes it up): the payload, the uid and gid
 * that encoded it, whether it is restricted to a uid, the encoding host. */
struct tp_auth_munged {
	const void *payload;
	size_t len;
	uint32_t uid, gid;
	int restricted;
	uint8_t origin4[4];
};
/* The daemon's checks of a decoded credential: restricted, its payload
 * (tp_auth_payload) meant for `target`. 0 and out filled, or -EACCES with
 * err saying why. */
int tp_auth_check(const struct tp_auth_munged *m, const char *target, struct tp_auth_id *out,
		  char *err, size_t errlen);
/* Decode a credential meant for `target`. -EACCES (invalid, expired,
 * replayed, meant for another daemon or another uid, not restricted to a
 * uid), -ECONNREFUSED (munged unreachable); err says which. */
int tp_auth_decode(const char *socket, const char *cred, const char *target,
		   struct tp_auth_id *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ config
 *
 * A plain text file of "key = value" lines; '#' starts a comment. The keys,
 * their types, defaults, ranges and meanings are one table,
 * TP_CONFIG_KEYS in tp_config_keys.h; docs/configuration.md and
 * tessera.conf(5) are generated from it. A key may be given again (the
 * last line wins), except mds; each ios line adds a storage daemon.
 */
#include "tp_config_keys.h"
#include "tp_size.h"

struct tp_server {
	char host[128];
	char port[16];
};

/* The C type of each config type (tp_config_keys.h). */
#define TP_CFG_FIELD_STRING(f)  char f[64];
#define TP_CFG_FIELD_PATH(f)    char f[1024];
#define TP_CFG_FIELD_HOSTS(f)   char f[1024];
#define TP_CFG_FIELD_SERVER(f)  struct tp_server f;
#define TP_CFG_FIELD_SERVERS(f) uint32_t n_##f; struct tp_server f[TP_MAX_SERVERS];
#define TP_CFG_FIELD_U32(f)     uint32_t f;
#define TP_CFG_FIELD_BOOL(f)    uint32_t f;
#define TP_CFG_FIELD_SIZE32(f)  uint32_t f;
#define TP_CFG_FIELD_SIZE64(f)  uint64_t f;
#define TP_CFG_FIELD(key, field, type, def, min, max, unit, doc) TP_CFG_FIELD_##type(field)

/* One field per key, named and typed by the table: provider, mds, n_ios
 * and ios[], timeout_ms, ... io_threads (TP_IO_THREADS_AUTO: not set),
 * local_reads. */
struct tp_config {
	TP_CONFIG_KEYS(TP_CFG_FIELD)
};
#define TP_IO_THREADS_AUTO TP_CONFIG_UNSET

enum tp_config_type {
	TP_CFG_STRING,
	TP_CFG_PATH,
	TP_CFG_HOSTS,
	TP_CFG_SERVER,
	TP_CFG_SERVERS,
	TP_CFG_U32,
	TP_CFG_BOOL,
	TP_CFG_SIZE32,
	TP_CFG_SIZE64,
};

/* A row of the table, as data (for the parser, the documentation
 * generator and tests). */
struct tp_config_key {
	const char *key;
	enum tp_config_type type;
	size_t offset;       /* of the field in struct tp_config */
	size_t size;         /* of the field (a string's capacity) */
	size_t count_offset; /* SERVERS: of n_<field> */
	const char *def;     /* the default as config text; NULL: none */
	const char *unset;   /* what no line means, when def is NULL */
	uint64_t min, max;   /* the range (lines, for SERVER and SERVERS) */
	const char *unit;    /* "" if none */
	const char *doc;
};

/* The table's rows, in its order; *n gets their number. */
const struct tp_config_key *tp_config_keys(size_t *n);
/* The row of `key`, or NULL. */
const struct tp_config_key *tp_config_key(const char *key);
/* What a value of k must be, as messages and the reference say it: "an
 * integer from 1 to 3600000 (ms)", "HOST:PORT", ... */
void tp_config_expect(const struct tp_config_key *k, char *buf, size_t len);
/* The type's name in the reference: "integer", "size", "path", ... */
const char *tp_config_type_name(enum tp_config_type type);

/* Every field at its default (DEF), or empty (NONE). */
void tp_config_defaults(struct tp_config *cfg);
/* Set `key` from `value` (trimmed config text) as a line of the file
 * would; lines of a SERVER key already set are refused. -EINVAL with
 * "why" in err: "unknown key 'x'", "bad value 'v' for 'k': expected ...". */
int tp_config_set(struct tp_config *cfg, const char *key, const char *value,
		  char *err, size_t errlen);
/* Parse text (from a file named `name`, for messages). -EINVAL with
 * "name:LINE: why" in err on a bad line, unknown key, a value out of its
 * range (the message states the range), or a config without mds or ios. */
int tp_config_parse(const char *text, const char *name, struct tp_config *cfg,
		    char *err, size_t errlen);
int tp_config_load(const char *path, struct tp_config *cfg, char *err,
		   size_t errlen);
/* Largest frame any sender builds under this config. */
size_t tp_config_max_frame(const struct tp_config *cfg);

/* ------------------------------------------------------------------ tnet */

struct tnet;

/* Embedded by the caller in whatever a send belongs to; handed back in
 * the send's completion. Must stay put until then. */
struct tnet_ctx {
	uint8_t fi_space[64]; /* struct fi_context2, for providers that need it */
	void *user;
	int kind;             /* set by tnet: the event type it completes as */
};

/* A posted receive buffer. After a TNET_RECV event the caller owns it until
 * it calls tnet_repost(). */
struct tnet_rbuf {
	struct tnet_ctx ctx;
	size_t cap;
	uint8_t *data;
	uint64_t peer;        /* connected mode: the connection it is posted on */
};

/* Take a completed receive buffer's memory (the caller frees it) and give
 * the buffer fresh memory of the same size, so a message that must
 * outlive its completion needs no copy. Only between the completion and
 * tnet_repost. NULL (the buffer unchanged) when memory is short. Inline:
 * it touches no endpoint, so the fuzzers' transport (which replaces
 * transport.c) shares it. */
static inline void *tnet_rbuf_take(struct tnet_rbuf *rbuf)
{
	uint8_t *fresh = malloc(rbuf->cap), *old = rbuf->data;

	if (!fresh)
		return NULL;
	rbuf->data = fresh;
	return old;
}

/* TNET_TRECV: a tagged receive (tnet_trecv) completed, or was cancelled
 * (-ECANCELED), or the message was longer than its buffers (-EMSGSIZE). */
/* TNET_CLOSED: connected mode, on a listening endpoint only: a
 * connection a peer made to us (never one we made) has closed (its peer id, which names nothing from now
 * on); whatever was bound to it (a daemon's sessions) can go. At most
 * TNET_CLOSED_KEPT closes wait to be polled; beyond that the oldest are
 * not told. */
enum tnet_event_type { TNET_SENT = 1, TNET_RECV = 2, TNET_TRECV = 3, TNET_CLOSED = 4 };
#define TNET_CLOSED_KEPT 1024

struct tnet_event {
	enum tnet_event_type type;
	int status;             /* 0 or negative errno (-EMSGSIZE: truncated) */
	void *user;             /* TNET_SENT, TNET_TRECV: ctx->user */
	struct tnet_rbuf *rbuf; /* TNET_RECV */
	size_t len;             /* TNET_RECV, TNET_TRECV: bytes received */
	/* TNET_RECV: the connection the message came on, a peer to send the
	 * answer to (connected mode), or TNET_PEER_UNKNOWN: an RDM provider
	 * does not say who sent it (and rxm names a peer by what it claims). */
	uint64_t peer;
};
#define TNET_PEER_UNKNOWN 0

/* The provider name of tnet's connected mode: libfabric's tcp provider
 * through one connection per peer (FI_EP_MSG), every answer sent on the
 * connection that carried its request (docs/design.md, "Frames and
 * transport"). Without tagged messages: nothing is lent. */
#define TNET_PROVIDER_CONN "tcp;msg"

struct tnet_opts {
	const char *provider;   /* "tcp;ofi_rxm", "shm", TNET_PROVIDER_CONN, ... */
	const char *node;       /* listen: our address; else a peer to reach */
	const char *service;    /* listen: our port */
	int listen;             /* bind to node:service */
	size_t buf_size;        /* receive buffer size (largest frame) */
	unsigned nrecv;         /* receive buffers kept posted */
};

int tnet_open(const struct tnet_opts *opts, struct tnet **out, char *err,
	      size_t errlen);
void tnet_close(struct tnet *net);

/* Where tnet_open's time went, in ns: the first fi_getinfo of a process
 * is where libfabric initialises every provider it was built with. */
struct tnet_times {
	uint64_t getinfo_ns;    /* fi_getinfo */
	uint64_t endpoint_ns;   /* fabric, domain, cq, av, endpoint, enable */
	uint64_t buffers_ns;    /* our receive buffers, allocated and posted */
};
void tnet_open_times(const struct tnet *net, struct tnet_times *out);

/* The fd that becomes readable when completions may be waiting, or -1 for
 * a provider without wait objects (shm), which must be polled. Before
 * blocking on it call tnet_trywait(): 0 means blocking is safe, -EAGAIN
 * means poll first. */
int tnet_fd(struct tnet *net);
int tnet_trywait(struct tnet *net);

/* Our own transport name, for frames' reply address. */
int tnet_name(struct tnet *net, void *buf, size_t *len);
/* A peer by host and port (or provider name), for sending to. */
int tnet_lookup(struct tnet *net, const char *node, const char *service,
		uint64_t *peer);
/* A peer by raw transport name (from a frame); repeated names are cached.
 * -EOPNOTSUPP in connected mode, where a peer is a connection (a
 * TNET_RECV event's peer, or tnet_lookup's). */
int tnet_insert_name(struct tnet *net, const void *name, size_t len,
		     uint64_t *peer);
/* Forget a peer (after its daemon restarted, say), so the next lookup
 * makes a fresh connection. */
void tnet_forget(struct tnet *net, uint64_t peer);

/* Send the concatenation of iov[0..n) to peer (n up to tnet_iov_limit).
 * The provider may read the iov's memory until the send's completion
 * (TNET_SENT). -EAGAIN when the provider is out of resources: poll and
 * retry. */
int tnet_send(struct tnet *net, uint64_t peer, const struct iovec *iov,
	      size_t n, struct tnet_ctx *ctx);
/* The same as a tagged message: it lands only in a tagged receive posted
 * with the same tag, never in the posted receive buffers. -ENOSYS when
 * the endpoint has no tagged messaging. */
int tnet_tsend(struct tnet *net, uint64_t peer, const struct iovec *iov,
	       size_t n, uint64_t tag, struct tnet_ctx *ctx);
/* Post a receive of the tagged message `tag` (from any peer) into
 * iov[0..n); it completes as TNET_TRECV. The provider may write the iov's
 * memory until then. */
int tnet_trecv(struct tnet *net, const struct iovec *iov, size_t n,
	       uint64_t tag, struct tnet_ctx *ctx);
/* Ask the provider to cancel a posted tagged receive: it then completes
 * with -ECANCELED, or normally if a message had already matched it. */
int tnet_cancel(struct tnet *net, struct tnet_ctx *ctx);
/* How many iovec entries a send or tagged receive may have. */
size_t tnet_iov_limit(struct tnet *net);
/*
 * Whether the caller's own memory may be handed to the provider for a
 * send or a tagged receive that can outlive the caller's patience: 1 when
 * the endpoint has tagged messaging and forgetting a peer (tnet_forget)
 * makes the provider let go of every transfer with it (rxm, whose AV
 * removal with FI_AV_REMOVE_CLEANUP closes the peer's connection at
 * once), 0 otherwise (shm: a stopped peer's pending copy from or into our
 * memory survives the removal of its address).
 */
int tnet_can_lend(struct tnet *net);

/* Up to `max` completions, without blocking. Returns their count or a
 * negative error. */
int tnet_poll(struct tnet *net, struct tnet_event *ev, int max);
int tnet_repost(struct tnet *net, struct tnet_rbuf *rbuf);

/* Wait up to timeout_ms for the wait fd (after tnet_trywait). */
int tnet_wait(struct tnet *net, int timeout_ms);

/* --------------------------------------------------------------- dataloops
 *
 * A dataloop (dataloops/tdl.h) as the protobuf message tessera.Dataloop,
 * alone (encode/decode) or embedded in a request (to_msg/from_msg).
 */
#define TP_DATALOOP_MAX_ENCODED (64u << 20) /* bytes of one encoded dataloop */

struct tdl_dataloop;

size_t tp_dataloop_encoded_size(const struct tdl_dataloop *dl);
/* -ENOSPC (with *len the size needed) when cap is too small. */
int tp_dataloop_encode(const struct tdl_dataloop *dl, uint8_t *buf,
		       size_t cap, size_t *len);
/* Validates everything (limits, shapes, signs, overflow, cycles); on
 * failure returns -EINVAL (or -ENOMEM), names the broken rule in err and
 * sets *out to NULL. */
int tp_dataloop_decode(const uint8_t *buf, size_t len,
		       struct tdl_dataloop **out, char *err, size_t errlen);
int tp_dataloop_from_msg(const Tessera__Dataloop *msg,
			 struct tdl_dataloop **out, char *err, size_t errlen);
/* A message whose arrays point into dl (which must outlive it); release
 * it with tp_dataloop_msg_release, which leaves dl alone. */
int tp_dataloop_to_msg(const struct tdl_dataloop *dl, Tessera__Dataloop **msg);
void tp_dataloop_msg_release(Tessera__Dataloop *msg);

#endif /* TESSERA_TPROTO_H */
