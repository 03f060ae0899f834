/*
 * daemon_int.h - the daemon core's internals, shared by its files and by
 * nothing else (the roles, ios_*.c and mds_*.c, use daemon.h):
 *
 *   daemon.c       the loop: libev watchers, frame checking and dispatch,
 *                  ticks, wakeups, signals; ping; life (network and
 *                  in-process); command line and pidfile
 *   daemon_peer.c  what the daemon owes each peer: reply queues, parked
 *                  requests, budgets, deadlines, admission
 *   daemon_auth.c  AUTH: opening sessions, dropping unauthenticated frames
 *   daemon_log.c   the log: levels, stderr or syslog
 *
 * Only the loop thread touches struct srv (srv_wakeup is the one call
 * another thread may make). Who owns a reply, a parked request and a peer
 * record is said in daemon_peer.c.
 */
#ifndef TESSERA_DAEMON_INT_H
#define TESSERA_DAEMON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <ev.h>

#include "daemon.h"
#include "tp_clock.h" /* deadlines, session ages: tp_mono_s() */

#define SRV_PEER_BUCKETS 1024 /* power of 2 */
#define SRV_TICK_S 0.05
/* A reply that meets -EAGAIN (its peer's connection is being set up, or
 * the provider's queue is full) is retried at once for SRV_STALL_SPIN_S,
 * then once a tick; a peer whose replies have made no progress for
 * SRV_REACH_S is unreachable (an AUTH naming an address that does not
 * answer): its replies, parked requests and sessions are dropped and its
 * address forgotten. A client's own connection carries its replies, so a
 * live client never waits on the daemon connecting out. */
#define SRV_STALL_SPIN_S 0.01
#define SRV_REACH_S      2.0

/* An outgoing reply. */
struct srv_tx {
	struct tnet_ctx ctx;
	struct srv_peer *peer;      /* NULL once abandoned */
	struct srv_tx *prev, *next; /* in the peer's waiting or posted list,
				     * or the abandoned list */
	double deadline;            /* monotonic seconds */
	size_t cost;                /* bytes charged to the budgets */
	void *data;                 /* owned raw data, or NULL */
	size_t data_len;
	size_t head_len;
	int tagged;                 /* send with tag `tag` (srv_req.reply_tagged) */
	uint64_t tag;
	uint64_t gen;               /* leaves once this commit is done */
	uint64_t need;              /* and once acks_floor is above it (0: none) */
	uint8_t head[];             /* header | body */
};

struct srv_txlist {
	struct srv_tx *head, *tail;
	unsigned n;
};

/* A request answered later (srv_park). */
struct srv_parked {
	struct srv_req req;         /* req.parked points here */
	struct srv_peer *peer;
	struct srv_parked *prev, *next; /* the peer's parked requests */
	double deadline;
	size_t cost;
	srv_expire_fn expire;
	void *arg;
	int gone;                   /* the client is gone: replies go nowhere */
	int retired;                /* answered or dropped: off the peer's list,
				     * on srv->retired until the loop iteration
				     * ends, so pointers to req stay valid */
	void *data;                 /* the frame's raw data, in `data_mem` */
	void *data_mem;             /* what to free: a copy, or the receive
				     * buffer's memory taken (tnet_rbuf_take) */
	struct srv_seal_check check; /* req.unchecked: the frame in data_mem */
};

/* Whether parking req keeps its receive buffer's memory (bulk data, at
 * least half the buffer) rather than copying the data out. */
static inline int srv_takes_rbuf(const struct srv_req *req)
{
	return req->rbuf && req->frame.hdr.data_len &&
	       req->frame.hdr.data_len >= req->rbuf->cap / 2;
}

struct srv_peer {
	uint64_t addr;
	struct srv_peer *hnext;         /* hash chain */
	struct srv_peer *prev, *next;   /* all peers */
	struct srv_txlist waiting;      /* not yet handed to the provider */
	struct srv_txlist posted;       /* in the provider */
	struct srv_parked *parked;      /* parked requests (list head) */
	unsigned entries;               /* waiting + posted + parked */
	size_t bytes;                   /* their cost */
	int warned;                     /* a drop was logged this episode */
	double stalled_since;           /* a send met -EAGAIN then (0: moving) */
	double retry_at;                /* stalled past the spin: next try */
	int forget_after_send;          /* unreachable: forget the address once
					 * no send of it is in the provider */
	int forgotten;                  /* its address is gone (tnet_forget) */
};

struct srv_counters {
	uint64_t replies_expired, requests_refused, requests_dropped;
	uint64_t peers_closed, parked_expired, parked_gone;
	uint64_t peers_unreachable;     /* given up on (SRV_REACH_S) */
	uint64_t unauthenticated;       /* frames dropped: no session, bad MAC */
	uint64_t data_kept, data_copied; /* parked requests' data (srv_park_sized) */
};

/* Where uid 0 is root of the file system (admin_hosts, daemon_auth.c). */
#define SRV_ADMIN_MAX  256              /* IPv4 addresses kept */
#define SRV_SQUASH_LOGGED 64            /* hosts whose squashed root was logged */
struct srv_admins {
	uint32_t addr[SRV_ADMIN_MAX];   /* IPv4, network byte order */
	unsigned n;
	int loopback;                   /* any 127/8 origin counts (a daemon
					 * host of the config is loopback) */
	uint32_t logged[SRV_SQUASH_LOGGED];
	unsigned n_logged;
};

struct srv {
	struct srv_role role;
	struct srv_log_opts log;        /* set by srv_log_open, then only read */
	char log_ident[32];             /* syslog's identifier: openlog keeps it */
	const struct tp_config *cfg;
	struct srv_limits lim;
	size_t max_frame;
	double timeout_s;
	struct tnet *net;
	struct ev_loop *loop;
	ev_io io;
	ev_prepare prepare;
	ev_idle idle;
	ev_timer tick;
	ev_signal sigterm, sigint;
	ev_async wake;                  /* srv_wakeup: work done on other threads */
	void (*wake_fn)(void *arg);
	void *wake_arg;
	int (*check_later)(void *arg, const struct tp_hdr *hdr); /* srv_check_later_set */
	void *check_later_arg;
	struct srv_peer *buckets[SRV_PEER_BUCKETS];
	struct srv_peer *peers;         /* list of all peer records */
	unsigned npeers;
	unsigned entries, posted, parked, waiting;
	size_t bytes, parked_bytes;
	struct srv_txlist abandoned;    /* contexts the provider may still hold */
	struct srv_parked *retired;     /* parked requests done, freed by reap */
	int eagain;                     /* a send met -EAGAIN within its spin
					 * window: poll and retry at once */
	/* srv_hold_replies: this turn ends with a commit (srv_commit_turn);
	 * the replies made since wait for it. After a failed commit
	 * (commit_failed) no reply is sent any more. */
	int held;
	int commit_failed;
	/* Commits by generation: a reply waits for gen_wait as of when it was
	 * made (the newest commit a hold asked for), and leaves once gen_done
	 * reaches it. gen_next is the generation the next hold will wait for.
	 * With a commit thread (srv_role.background), commits run there. */
	uint64_t gen_next, gen_wait, gen_done;
	struct srv_committer *committer;
	size_t peak_bytes;              /* highest debt since memory was trimmed */
	struct srv_counters count;
	struct srv_sessions *sessions;
	char target[40];                /* what credentials must name: "mds", "ios:3" */
	uint64_t boot;                  /* random per start, in AuthReply */
	double sessions_expired_at;     /* last expiry scan */
	double unauth_logged_at;        /* last "dropped unauthenticated" line */
	uint64_t unauth_logged;         /* the counter then */
	struct srv_admins admins;       /* srv_admins_load */
	/* In-process (srv_create_local): no endpoint or loop (net and loop
	 * are NULL); a reply leaves through sink as soon as it is sent, and
	 * a frame comes from local_peer. */
	srv_sink_fn sink;
	void *sink_arg;
	uint64_t local_peer;
	struct srv_ident local_ident;
	srv_cred_decoder local_decode;  /* srv_local_auth; NULL: AUTH refused */
	void *local_decode_arg;
};

/* daemon_auth.c: resolve admin_hosts (by default the config's daemon
 * hosts) into srv->admins; a name that does not resolve is logged and
 * left out (fail closed). */
void srv_admins_load(struct srv *srv);

/* daemon_peer.c: peer records, budgets and admission (handle_frame). */
struct srv_peer *srv_peer_find(struct srv *srv, uint64_t addr);
void srv_peer_release_if_idle(struct srv *srv, struct srv_peer *p);
int srv_room_for(const struct srv *srv, const struct srv_peer *p, size_t cost);
int srv_admit(struct srv *srv, struct srv_req *req);

/* daemon_peer.c: what the loop does with the queues. A send completed
 * (ev->user is its struct srv_tx); hand waiting replies to the provider;
 * free the parked requests retired during this loop iteration; drop
 * replies and expire parked requests past their deadlines. */
void srv_tx_done(struct srv *srv, const struct tnet_event *ev);
void srv_pump_all(struct srv *srv);
/* daemon_commit.c. End of a loop turn (or of one in-process frame): if a
 * handler held replies, run the role's commit, or ask the commit thread
 * for it; the replies go once it is done (or, when it failed, are kept for
 * ever and the loop stops). srv_commit_start starts the commit thread
 * when the role has background commits and the daemon a loop;
 * srv_commit_stop (srv_destroy) lets it finish what was asked and joins
 * it. */
void srv_commit_turn(struct srv *srv);
int srv_commit_start(struct srv *srv);
void srv_commit_stop(struct srv *srv);
void srv_parked_reap(struct srv *srv);
void srv_expire_all(struct srv *srv);
/* srv_destroy: parked requests are told -ESHUTDOWN and freed; once the
 * endpoint is closed (the provider holds no reply any more),
 * srv_peers_free frees the peer records and the replies left. */
void srv_peers_shutdown(struct srv *srv);
void srv_peers_free(struct srv *srv);

/* daemon_auth.c: AUTH from a frame without a session; a frame dropped
 * unanswered (no session, unknown session, bad MAC). */
void srv_auth(struct srv *srv, struct srv_req *req);
void srv_unauthenticated(struct srv *srv, const char *why);
/* A parked unchecked request's check is done (rc): dropped unanswered on
 * failure (daemon_peer.c). */
void srv_park_checked(struct srv_req *parked, int rc);

/* The log's target and threshold (NULL: the defaults), from srv_create
 * and srv_create_local; srv_log_close at srv_destroy. */
void srv_log_open(struct srv *srv, const struct srv_log_opts *opts);
void srv_log_close(struct srv *srv);

#endif /* TESSERA_DAEMON_INT_H */
