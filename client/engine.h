/*
 * engine.h - the client's request engine (engine.c) and the peer
 * addresses it sends to (peer.c): the bottom of libtessera's internal
 * layers, which client_int.h describes. Nothing here calls up into
 * sessions, the connection's set-up or the I/O paths.
 */
#ifndef TESSERA_CLIENT_ENGINE_H
#define TESSERA_CLIENT_ENGINE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tessera.h"
#include "tproto.h"

#define TC_MDS (-1) /* server number of the metadata daemon */

/* A request that has heard nothing from its daemon this long has a probe
 * sent on its behalf (session.c); the wait doubles up to TC_PROBE_MAX_NS
 * while probes go unanswered. */
#define TC_PROBE_NS (250ull * 1000000u)
#define TC_PROBE_MAX_NS (2000ull * 1000000u)

/* One request to one server, from submission to reply. */
#define TC_LEND_IOV 8              /* most iovec entries of lent memory */

struct tc_req {
	struct tnet_ctx ctx;       /* send completion context */
	struct tc_req *next, *prev;/* on the pending list while in flight */
	uint64_t reqid;
	int server;                /* TC_MDS or a storage daemon index */
	unsigned opcode;
	uint8_t *frame;            /* what was sent (header|addr|body|data) */
	uint8_t *stale_frame;      /* a frame a dead connection held (renew_frame) */
	int spare_frame;           /* frame is max_frame bytes, from fs->spares */
	size_t frame_len;
	size_t head_len;           /* frame bytes before the raw data */
	uint64_t deadline_ns;
	uint64_t submit_ns;        /* when last sent */
	/* For the request trace (trace.c): the body's and the raw data's
	 * bytes sent, the file regions the request names (0: none or not
	 * known), when its reply (or failure) came. */
	size_t body_out, data_out;
	uint32_t regions;
	uint64_t done_ns;
	struct tp_session ses;     /* sealed with (AUTH: the key it proposes) */
	/* Posting: the provider said -EAGAIN (connecting, or its queue is
	 * full) and the engine posts r again each round (queued_ns: since
	 * when); `checked`: whether a refused connection was looked for. */
	int queued;
	uint64_t queued_ns;
	int checked;
	int lost;                  /* its send failed: resent when the daemon is found */
	uint64_t probe_of;         /* a probe (session.c): the session it asks after */
	/* SECRECY: a lent write's payload, encrypted (from fs->spares or
	 * malloc, max_frame bytes); sent in place of the caller's runs. */
	uint8_t *bounce;
	int unproven;              /* AUTH: answered by someone who could not
				    * read the credential (errmsg says how) */
	/* A detached request (tc_req_start: session.c's probes) when set:
	 * nobody waits for it; called under fs->lock when it ends. */
	void (*done)(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr);
	/* state, under the connection lock */
	int sent;                  /* send completed */
	int replied;               /* reply arrived, or failed: see status */
	int abandoned;             /* caller gave up; free on send completion */
	int background;            /* a background thread waits for it (make_progress) */
	int status;                /* 0 or negative errno */
	char errmsg[256];          /* server's or transport's words on failure */
	ProtobufCMessage *reply;   /* decoded reply body (status 0) */
	/* where a reply's raw data goes: to data_dst, or, when data_put is
	 * set, handed to data_put straight from the receive buffer (a
	 * striped read scatters it into the caller's buffer, no staging) */
	void *data_dst;
	size_t data_cap;
	void (*data_put)(void *arg, const uint8_t *data, size_t len);
	void *data_arg;
	size_t data_len;           /* bytes the reply carried */
	/*
	 * Lent memory (docs/design.md, "Bulk data path"). A write's payload sent
	 * straight from the caller's buffer (lend[0..n_lend) follow the frame
	 * in one send), or a read's tagged receive: [rhead, lend[0..n_lend)]
	 * with the caller's runs, posted before the request is sent. While
	 * `sent` is 0 (lend_write) or `rposted` is 1, the provider may touch
	 * the caller's memory: see engine.c for how that ends.
	 */
	int lend_write, lend_read;
	size_t n_lend;
	struct iovec lend[TC_LEND_IOV];
	struct tnet_ctx rctx;      /* the tagged receive's completion context */
	int rposted;               /* tagged receive not yet completed */
	int rcancel;               /* fi_cancel asked */
	uint64_t reclaim_ns;       /* past its deadline, the peer was forgotten */
	int let_go;                /* ...and the grace after it has passed */
	uint8_t rhead[TP_TAGGED_HEAD];
};

/* A session with one daemon (session.c, docs/security.md): opened by AUTH
 * on first use, dropped when a request to the daemon fails in transport or
 * times out (a restarted daemon has lost it), renewed before the daemon
 * would drop it for idleness. */
struct tc_session {
	struct tp_session s;
	uint64_t tx_seq;           /* the next request's sequence number */
	struct tp_replay rx;       /* the replies' numbers accepted */
	uint64_t boot;             /* the daemon's start, from its AuthReply */
	uint64_t used_ns;          /* last request sealed with it */
	uint64_t heard_ns;         /* last reply from the daemon */
	int valid;
	/* Probes (session.c): how many are in flight; when the next may go
	 * and the wait after it (doubling while none is answered); since
	 * when probes have gone unanswered (0: the daemon was heard since);
	 * whether the connection looks new (probe at once: the daemon may
	 * have restarted behind it). */
	int probing;
	uint64_t probe_next_ns, probe_wait_ns;
	uint64_t silent_ns;
	int reconnect;
	pthread_mutex_t auth_lock; /* one AUTH at a time with this daemon */
};

/* The client's monotonic clock, in ns (trace.c). */

/* The engine's lists, at connect; what is left on them, at disconnect
 * (after the endpoint is closed: no completion can arrive then). */
void tc_engine_init(tessera_fs *fs);
void tc_engine_fini(tessera_fs *fs);

/* Make a request: msg packed, then data_len bytes of data copied from
 * `data`, or left for the caller to fill through tc_req_data() when data
 * is NULL. */
struct tc_req *tc_req_new(tessera_fs *fs, int server, unsigned opcode,
			  const ProtobufCMessage *msg, const void *data, size_t data_len);
void tc_req_free(tessera_fs *fs, struct tc_req *req);
uint8_t *tc_req_data(struct tc_req *req);
/* A write whose data_len bytes of payload are sent straight from the
 * caller's memory, runs[0..n) (n <= fs->lend_runs): the request must run
 * (tc_run) before that memory is reused; tc_run returns only when the
 * provider has let go of it. */
struct tc_req *tc_req_new_lent(tessera_fs *fs, int server, unsigned opcode,
			       const ProtobufCMessage *msg, const struct iovec *runs, size_t n);
/* Make r (a READ whose request asks tagged_reply) receive its reply's data
 * straight into runs[0..n) (n <= fs->lend_runs, data_cap bytes in all). */
void tc_req_lend_read(struct tc_req *r, const struct iovec *runs, size_t n);
/* Called under fs->lock for each request still waiting, once a round,
 * while tc_engine_run waits (session.c probes a silent daemon). */
typedef void (*tc_req_watch_fn)(tessera_fs *fs, struct tc_req *r, uint64_t now);
/* Send all, then wait until each has replied, failed or timed out, and the
 * provider has let go of every byte of the caller's memory they lent (the
 * lending invariant, engine.c). Sessions must be in place (tc_run). Returns
 * 0 if all succeeded, else the first failure's status. */
int tc_engine_run(tessera_fs *fs, struct tc_req **reqs, size_t n, tc_req_watch_fn watch);
/* Fail r now (under fs->lock) with status and msg, as if its deadline
 * had passed (what it lends is reclaimed). */
void tc_req_abort(tessera_fs *fs, struct tc_req *r, int status, const char *msg);
/* The deadline of a request started now: connect_timeout_ms for AUTH,
 * else timeout_ms plus its bytes at bulk_min_rate. */
uint64_t tc_req_deadline(tessera_fs *fs, const struct tc_req *r, uint64_t now);

/* The failure message of a finished request, for the thread's message. */
int tc_req_fail(tessera_fs *fs, struct tc_req *req, const char *what);

/* Detached requests (under fs->lock). Start r with `deadline`; done(fs,
 * r, frame) is called when its reply arrives, done(fs, r, NULL) when it
 * fails or expires (also at once when it cannot be sent); done ends with
 * tc_req_drop, which takes r off the books (freed, or parked until the
 * provider lets go of its frame). */
typedef void (*tc_req_done_fn)(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr);
void tc_req_start(tessera_fs *fs, struct tc_req *r, uint64_t deadline, tc_req_done_fn done);
void tc_req_drop(tessera_fs *fs, struct tc_req *r);
/* Run the engine until *left (a count of detached requests their done
 * lowers, under the lock) is 0: replies taken in, deadlines kept, so it
 * ends by the last one's deadline at worst. */
void tc_engine_settle_detached(tessera_fs *fs, const unsigned *left);
/* Requests to `server` in flight under session `lost` are sealed again
 * with the server's current session and resent (under fs->lock): all of
 * them (the daemon restarted and lost the session), or only those whose
 * send failed (the daemon still knows the session). */
enum tc_resend { TC_RESEND_ALL, TC_RESEND_LOST };
void tc_req_reseal(tessera_fs *fs, int server, uint64_t lost, enum tc_resend which);

/* Peer addresses (peer.c, under fs->lock). Resolve server's on first use;
 * forget it (and the session with it) after a transport failure or a
 * timeout, so that the next request connects and authenticates afresh. */
int tc_peer_resolve(tessera_fs *fs, int server, uint64_t *peer);
void tc_peer_forget(tessera_fs *fs, int server);
/* Whether server's port refuses connections: -ECONNREFUSED when a TCP
 * connection to it is refused now, else 0 (it accepts, does not answer
 * within a few ms, or the provider is not TCP). The providers hide a
 * refusal (rxm connects again and again), so a client would wait its
 * timeout instead of failing at once. Not under fs->lock. */
int tc_peer_refused(tessera_fs *fs, int server);

#endif /* TESSERA_CLIENT_ENGINE_H */
