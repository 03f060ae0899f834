/*
 * fuzz_daemon.h - what the daemon fuzz targets share: reading fuzz bytes,
 * driving a daemon core in-process (srv_create_local, server/daemon.h)
 * with records of frames, checking every reply it sends, and temporary
 * directories for the stores.
 *
 * An input is a sequence of records:
 *   kind < 0xf0   a request: opcode ops[kind % nops], then peer (u8, of 4),
 *                 body length (u16), body bytes (a protobuf message, or
 *                 anything), data length (u16), data (input bytes, zeros
 *                 once the input ends); framed with a valid header. With
 *                 a minting key, a body that decodes as the opcode's
 *                 request and carries no capability gets a valid one (every
 *                 right, every object) unless the peer byte's top bit is
 *                 set, so the handlers behind the capability check are
 *                 reached as well as the check itself;
 *   0xf0..0xf7    a tick: deadlines and the role's tick (srv_local_tick);
 *   0xf8..0xff    a raw frame: length (u16) and the bytes as received.
 * The seed writers (FUZZ_SEED_MAIN) build records with fz_seed_*.
 */
#ifndef TESSERA_FUZZ_DAEMON_H
#define TESSERA_FUZZ_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "cap.h"
#include "daemon.h"

/* Fuzz bytes, consumed from the front; reads past the end give zeros. */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

uint8_t fz_u8(struct fz_in *in);
uint16_t fz_u16(struct fz_in *in);
uint64_t fz_u64(struct fz_in *in);
/* Up to len bytes into out (zeros beyond the input); returns the bytes
 * that came from the input. */
size_t fz_take(struct fz_in *in, void *out, size_t len);

#define FZ_TICK 0xf0
#define FZ_RAW 0xf8

/* What the reply sink saw. */
struct fz_replies {
	unsigned replies, errors;
	int verbose;               /* print each reply (FUZZ_VERBOSE set) */
	/* A target's own check of each well-formed reply (may be NULL):
	 * msg is the decoded reply, NULL for an error reply. */
	void (*check)(void *arg, const struct tp_frame *fr, const ProtobufCMessage *msg);
	void *check_arg;
};

/* The sink for srv_create_local: aborts unless the reply is a well-formed
 * reply frame whose body decodes (ErrorReply with a message and the
 * status as its code when the status is negative, the opcode's reply
 * message otherwise). arg: struct fz_replies. */
void fz_reply_sink(void *arg, uint64_t peer, const struct iovec *iov, int n);

/* Run the records of `in` against srv; ops[] are the opcodes a request
 * record chooses from. observe (may be NULL) sees each request frame
 * before the daemon does (done 0), and again once the daemon is through
 * with it (done 1), when it may deliver requests of its own. */
typedef void (*fz_observe_fn)(void *arg, const uint8_t *frame, size_t len, int done);
void fz_drive(struct srv *srv, const unsigned *ops, size_t nops, struct fz_in *in,
	      const struct cap_key *mint, fz_observe_fn observe, void *arg);

/* The key in-process daemons share with fz_drive's minting. */
extern const struct cap_key fz_key;

/* A fresh directory under $TMPDIR (else /dev/shm, else /tmp), and its
 * removal with all it holds. */
int fz_tmpdir(const char *prefix, char *out, size_t len);
void fz_rmtree(const char *dir);

/* A configuration for in-process daemons: defaults, 4 storage daemons, a
 * timeout of 0 (parked requests expire at the next tick). */
void fz_config(struct tp_config *cfg);

/* Seed files (the FUZZ_SEED_MAIN builds): records appended to a buffer,
 * then saved. A record that does not fit marks the seed bad, and saving a
 * bad seed fails. */
struct fz_seed {
	uint8_t buf[65536];
	size_t len;
	int bad;
};

void fz_seed_bytes(struct fz_seed *s, const void *p, size_t n);
/* A u16 length and the packed message (length 0 for NULL). */
void fz_seed_msg(struct fz_seed *s, const ProtobufCMessage *msg);
/* A u16 length and that many bytes of a pattern. */
void fz_seed_data(struct fz_seed *s, size_t dlen);
/* A request record of ops[op_index] from `peer`, and a tick record. */
void fz_seed_request(struct fz_seed *s, unsigned op_index, unsigned peer,
		     const ProtobufCMessage *msg, size_t dlen);
void fz_seed_tick(struct fz_seed *s);
/* Write dir/name and empty the seed. */
int fz_seed_save(struct fz_seed *s, const char *dir, const char *name);
int fz_seed_write(const char *dir, const char *name, const uint8_t *buf, size_t len);

#endif
