/*
 * mds_peers.h - the metadata daemon as a client of the storage daemons:
 * the part its purger (mds_purge.h) and its merger (mds_vmerge.h) share.
 *
 * One instance is one tnet endpoint and one slot per storage daemon. A
 * slot holds at most one request in flight. Before its first request,
 * and again after any failure (the storage daemon may have restarted and
 * lost the session), a slot opens a session (AUTH with a MUNGE
 * credential of the daemons' uid): mds_peers_send then sends the AUTH
 * instead of the request and answers MDS_PEERS_AUTHING, and the user
 * sends its request again once the slot is ready. A request that fails
 * (a refusal, a send that fails, no answer within timeout_ms) makes the
 * slot forget its connection and back off exponentially (100 ms doubling
 * to 5 s); the first failure in a row is logged, and the first answer
 * after failures.
 *
 * Each user (purger, merger) has its own instance, so a long merge never
 * holds a removal back, and neither sees the other's replies. Driven
 * from the daemon's loop (mds_peers_poll, then mds_peers_send for the
 * ready slots): never blocks.
 */
#ifndef TESSERA_MDS_PEERS_H
#define TESSERA_MDS_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "tproto.h"

struct mds_peers;

/* Where a user's log lines go (may be NULL: nowhere). */
struct mds_peers_log {
	void (*fn)(void *arg, const char *line);
	void *arg;
};

/* What the user is told about its requests. */
struct mds_peers_ops {
	/* Storage daemon s answered the slot's request with success; fr is
	 * opened (its body decodes with tp_body_unpack). */
	void (*answered)(void *user, uint32_t s, const struct tp_frame *fr);
	/* The slot's request (or the AUTH before it) failed: the slot backs
	 * off and will authenticate again; what the request covered is to be
	 * sent again. rc: the daemon's errno for a refusal, else the
	 * transport's or -ETIMEDOUT. */
	void (*failed)(void *user, uint32_t s, int rc);
};

/* `who` ("purger", "merger") starts the log lines; `cfg` outlives the
 * instance. On failure `err` says why. */
int mds_peers_create(const struct tp_config *cfg, const char *who,
		     const struct mds_peers_ops *ops, void *user, struct mds_peers **out,
		     char *err, size_t errlen);
void mds_peers_destroy(struct mds_peers *p);

/* Take replies and send completions, expire requests past their
 * deadline (each outcome through ops). */
void mds_peers_poll(struct mds_peers *p, const struct mds_peers_log *log);

/* Whether slot s may send now: no request in flight, its frame free, its
 * backoff over. */
int mds_peers_ready(const struct mds_peers *p, uint32_t s, uint64_t now_ns);

/* Whether slot s waits out a backoff after a failure (not ready, and
 * nothing in flight that could end it sooner). */
int mds_peers_backing_off(const struct mds_peers *p, uint32_t s, uint64_t now_ns);

enum mds_peers_sent {
	MDS_PEERS_SENT,      /* the request is in flight: ops says how it ends */
	MDS_PEERS_AUTHING,   /* an AUTH went first: send the request again once ready */
	MDS_PEERS_LATER,     /* the transport is busy: send it again next round */
	MDS_PEERS_FAILED     /* failed (logged, backing off; ops->failed not called) */
};
/* Send request `msg` (opcode `op`, named `what` in messages: "remove",
 * "merge") to storage daemon s, whose slot is ready. The message is
 * encoded at once: it need not outlive the call. */
enum mds_peers_sent mds_peers_send(struct mds_peers *p, uint32_t s, unsigned op,
				   const char *what, const ProtobufCMessage *msg,
				   const struct mds_peers_log *log);

/* Log a line for the user, "<who>: ..." (log may be NULL). */
void mds_peers_say(const struct mds_peers *p, const struct mds_peers_log *log,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* TESSERA_MDS_PEERS_H */
