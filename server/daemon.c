/*
 * daemon.c - the event loop and request plumbing of both daemons: frame
 * checking, dispatch through the role's opcode table, per-peer reply
 * queues with deadlines and budgets, parked requests.
 *
 * Ownership: a reply (struct srv_tx) belongs to its peer's queue from
 * srv_send() until its send completes (then freed), its deadline passes
 * unsent (freed), or its peer is closed while the provider still holds it
 * (then its data is freed and the small record is kept on the abandoned
 * list, because the provider may still report its context; it is freed
 * when that happens or at exit). A peer record exists only while it is
 * owed something: a reply or a parked request.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <sodium.h>

#include "daemon.h"
#include "session.h"

#define SRV_PEER_BUCKETS 1024 /* power of 2 */
#define SRV_TICK_S 0.05
#define SRV_TRIM_ABOVE (32u << 20) /* debt after which freed memory is returned */

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
};

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
};

struct srv_counters {
	uint64_t replies_expired, requests_refused, requests_dropped;
	uint64_t peers_closed, parked_expired, parked_gone;
	uint64_t unauthenticated;       /* frames dropped: no session, bad MAC */
	uint64_t data_kept, data_copied; /* parked requests' data (srv_park_sized) */
};

struct srv {
	struct srv_role role;
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
	struct srv_peer *buckets[SRV_PEER_BUCKETS];
	struct srv_peer *peers;         /* list of all peer records */
	unsigned npeers;
	unsigned entries, posted, parked, waiting;
	size_t bytes, parked_bytes;
	struct srv_txlist abandoned;    /* contexts the provider may still hold */
	struct srv_parked *retired;     /* parked requests done, freed by reap */
	int eagain;                     /* a send met -EAGAIN: poll and retry */
	size_t peak_bytes;              /* highest debt since memory was trimmed */
	struct srv_counters count;
	struct srv_sessions *sessions;
	char target[40];                /* what credentials must name: "mds", "ios:3" */
	uint64_t boot;                  /* random per start, in AuthReply */
	double sessions_expired_at;     /* last expiry scan */
	double unauth_logged_at;        /* last "dropped unauthenticated" line */
	uint64_t unauth_logged;         /* the counter then */
	/* In-process (srv_create_local): no endpoint or loop (net and loop
	 * are NULL); a reply leaves through sink as soon as it is sent, and
	 * a frame comes from local_peer. */
	srv_sink_fn sink;
	void *sink_arg;
	uint64_t local_peer;
	struct srv_ident local_ident;
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void srv_log(struct srv *srv, const char *fmt, ...)
{
	char when[32];
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	fprintf(stderr, "%s tessera-%s[%u]: ", when, srv->role.name, srv->role.index);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------ lists */

static void txlist_append(struct srv_txlist *l, struct srv_tx *tx)
{
	tx->next = NULL;
	tx->prev = l->tail;
	if (l->tail)
		l->tail->next = tx;
	else
		l->head = tx;
	l->tail = tx;
	l->n++;
}

static void txlist_remove(struct srv_txlist *l, struct srv_tx *tx)
{
	if (tx->prev)
		tx->prev->next = tx->next;
	else
		l->head = tx->next;
	if (tx->next)
		tx->next->prev = tx->prev;
	else
		l->tail = tx->prev;
	tx->prev = tx->next = NULL;
	l->n--;
}

/* ------------------------------------------------------------ peers */

static unsigned peer_bucket(uint64_t addr)
{
	return (unsigned)((addr * 0x9e3779b97f4a7c15ull) >> 54) & (SRV_PEER_BUCKETS - 1);
}

static struct srv_peer *peer_find(struct srv *srv, uint64_t addr)
{
	for (struct srv_peer *p = srv->buckets[peer_bucket(addr)]; p; p = p->hnext)
		if (p->addr == addr)
			return p;
	return NULL;
}

static struct srv_peer *peer_get(struct srv *srv, uint64_t addr)
{
	struct srv_peer *p = peer_find(srv, addr);
	unsigned b = peer_bucket(addr);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->addr = addr;
	p->hnext = srv->buckets[b];
	srv->buckets[b] = p;
	p->next = srv->peers;
	if (srv->peers)
		srv->peers->prev = p;
	srv->peers = p;
	srv->npeers++;
	return p;
}

/* Free a peer record that is owed nothing. */
static void peer_release_if_idle(struct srv *srv, struct srv_peer *p)
{
	struct srv_peer **pp;

	if (!p || p->entries)
		return;
	for (pp = &srv->buckets[peer_bucket(p->addr)]; *pp != p; pp = &(*pp)->hnext)
		;
	*pp = p->hnext;
	if (p->prev)
		p->prev->next = p->next;
	else
		srv->peers = p->next;
	if (p->next)
		p->next->prev = p->prev;
	srv->npeers--;
	free(p);
}

static void charge(struct srv *srv, struct srv_peer *p, size_t cost)
{
	p->entries++;
	p->bytes += cost;
	srv->entries++;
	srv->bytes += cost;
	if (srv->bytes > srv->peak_bytes)
		srv->peak_bytes = srv->bytes;
}

static void uncharge(struct srv *srv, struct srv_peer *p, size_t cost)
{
	p->entries--;
	p->bytes -= cost;
	srv->entries--;
	srv->bytes -= cost;
	if (!p->entries)
		p->warned = 0;
}

/* Room for one more entry of `cost` bytes for this peer? */
static int room_for(const struct srv *srv, const struct srv_peer *p, size_t cost)
{
	return p->entries < srv->lim.peer_entries && srv->entries < srv->lim.total_entries &&
	       p->bytes + cost <= srv->lim.peer_bytes && srv->bytes + cost <= srv->lim.budget_bytes;
}

/* ------------------------------------------------------------ replies */

static void tx_free(struct srv_tx *tx)
{
	free(tx->data);
	free(tx);
}

/* Hand waiting replies to the provider, within the posting limits. */
static void peer_pump(struct srv *srv, struct srv_peer *p)
{
	while (p->waiting.head && p->posted.n < srv->lim.peer_posted &&
	       srv->posted < srv->lim.total_posted) {
		struct srv_tx *tx = p->waiting.head;
		struct iovec iov[2] = { { tx->head, tx->head_len }, { tx->data, tx->data_len } };
		int rc;

		if (!srv->net) { /* in-process: delivered at once */
			txlist_remove(&p->waiting, tx);
			srv->waiting--;
			srv->sink(srv->sink_arg, p->addr, iov, tx->data_len ? 2 : 1);
			uncharge(srv, p, tx->cost);
			tx_free(tx);
			continue;
		}
		rc = -ENOSYS;
		if (tx->tagged)
			rc = tnet_tsend(srv->net, p->addr, iov, tx->data_len ? 2 : 1, tx->tag, &tx->ctx);
		if (rc == -ENOSYS) /* (no tagged messages: the client copes) */
			rc = tnet_send(srv->net, p->addr, iov, tx->data_len ? 2 : 1, &tx->ctx);
		if (rc == -EAGAIN) {
			srv->eagain = 1;
			return;
		}
		txlist_remove(&p->waiting, tx);
		srv->waiting--;
		if (rc) {
			srv_log(srv, "a reply could not be sent: %s", strerror(-rc));
			uncharge(srv, p, tx->cost);
			tx_free(tx);
			continue;
		}
		txlist_append(&p->posted, tx);
		srv->posted++;
	}
}

static void pump_all(struct srv *srv)
{
	struct srv_peer *p, *next;

	srv->eagain = 0;
	for (p = srv->peers; p && !srv->eagain; p = next) {
		next = p->next;
		if (p->waiting.head) {
			peer_pump(srv, p);
			peer_release_if_idle(srv, p);
		}
	}
}

static void parked_retire(struct srv *srv, struct srv_parked *pk);

/* The peer's client is gone (closed = we closed its connection because it
 * stopped reading): cancel its parked requests and drop what waits. */
static void peer_gone(struct srv *srv, struct srv_peer *p, int closed)
{
	while (p->parked) {
		struct srv_parked *pk = p->parked;

		pk->gone = 1;
		srv->count.parked_gone++;
		if (pk->expire)
			pk->expire(pk->arg, &pk->req, -ECONNRESET);
		if (!pk->retired) /* expire did not reply */
			parked_retire(srv, pk);
	}
	while (p->waiting.head) {
		struct srv_tx *tx = p->waiting.head;

		txlist_remove(&p->waiting, tx);
		srv->waiting--;
		uncharge(srv, p, tx->cost);
		tx_free(tx);
	}
	if (!closed)
		return;
	/* The provider may still report these contexts; their data is no
	 * longer read once the connection is gone. */
	while (p->posted.head) {
		struct srv_tx *tx = p->posted.head;

		txlist_remove(&p->posted, tx);
		srv->posted--;
		uncharge(srv, p, tx->cost);
		free(tx->data);
		tx->data = NULL;
		tx->peer = NULL;
		txlist_append(&srv->abandoned, tx);
	}
}

static void tx_done(struct srv *srv, const struct tnet_event *ev)
{
	struct srv_tx *tx = ev->user;
	struct srv_peer *p = tx->peer;

	if (!p) {
		txlist_remove(&srv->abandoned, tx);
		tx_free(tx);
		return;
	}
	txlist_remove(&p->posted, tx);
	srv->posted--;
	uncharge(srv, p, tx->cost);
	tx_free(tx);
	if (ev->status) {
		srv_log(srv, "a reply could not be delivered: %s", strerror(-ev->status));
		peer_gone(srv, p, 0);
	} else {
		peer_pump(srv, p);
	}
	peer_release_if_idle(srv, p);
}

static int srv_send(struct srv_req *req, int32_t status, const ProtobufCMessage *msg,
		    void *data, size_t data_len)
{
	struct srv *srv = req->srv;
	struct srv_parked *pk = req->parked;
	size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	struct srv_tx *tx;
	struct srv_peer *p;
	struct tp_hdr hdr = {
		.opcode = req->frame.hdr.opcode,
		.reqid = req->frame.hdr.reqid,
		.flags = TP_FLAG_REPLY,
		.status = status,
		.data_len = (uint32_t)data_len,
	};
	int rc = 0;

	req->replied = 1;
	if (pk && !pk->retired)
		parked_retire(srv, pk);
	if (pk && pk->gone) { /* nobody to tell */
		free(data);
		return -ECONNRESET;
	}
	tx = malloc(sizeof(*tx) + TP_HDR_SIZE + body);
	p = peer_get(srv, req->peer);
	if (!tx || !p) {
		free(tx);
		free(data);
		rc = -ENOMEM;
		goto out;
	}
	memset(tx, 0, sizeof(*tx));
	tx->ctx.user = tx;
	tx->peer = p;
	tx->data = data;
	tx->data_len = data_len;
	tx->tagged = status == 0 && req->reply_tagged;
	tx->tag = hdr.reqid;
	tx->head_len = (size_t)tp_frame_build(tx->head, TP_HDR_SIZE + body, &hdr, NULL, 0, msg);
	if (srv->net) { /* the client checks its replies came from this session */
		struct tp_session ses = { .id = req->ident.session };

		memcpy(ses.key, req->ident.key, TP_KEY_SIZE);
		tp_frame_seal(tx->head, tx->head_len, &ses);
	}
	tx->cost = sizeof(*tx) + tx->head_len + data_len;
	tx->deadline = mono_now() + srv->timeout_s;
	/* A request is admitted with room for one reply of any size
	 * (handle_frame); a parked request's reply comes later, so one with
	 * data is checked now. */
	if (pk && data_len && !room_for(srv, p, tx->cost)) {
		tx_free(tx);
		return srv_reply_error(req, -EBUSY, "%s: no room for a %zu-byte reply",
				       tp_opcode_name(hdr.opcode) ?: "?", data_len);
	}
	charge(srv, p, tx->cost);
	txlist_append(&p->waiting, tx);
	srv->waiting++;
	peer_pump(srv, p);
out:
	if (!pk) /* a parked request's peer is released by whoever walks it */
		peer_release_if_idle(srv, p);
	if (rc)
		srv_log(srv, "reply to request %llu (%s): %s", (unsigned long long)hdr.reqid,
			tp_opcode_name(hdr.opcode) ?: "?", strerror(-rc));
	return rc;
}

int srv_reply(struct srv_req *req, const ProtobufCMessage *msg, const void *data,
	      size_t data_len)
{
	void *copy = NULL;

	if (data_len) {
		copy = malloc(data_len);
		if (!copy)
			return srv_reply_error(req, -ENOMEM, "no memory for a %zu-byte reply", data_len);
		memcpy(copy, data, data_len);
	}
	return srv_send(req, 0, msg, copy, data_len);
}

int srv_reply_owned(struct srv_req *req, const ProtobufCMessage *msg, void *data,
		    size_t data_len)
{
	return srv_send(req, 0, msg, data, data_len);
}

int srv_reply_error(struct srv_req *req, int code, const char *fmt, ...)
{
	Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	er.code = code;
	er.message = text;
	return srv_send(req, code, &er.base, NULL, 0);
}

/* ------------------------------------------------------------ parking */

/* Take a parked request off its peer; it is freed by parked_reap(). */
static void parked_retire(struct srv *srv, struct srv_parked *pk)
{
	struct srv_peer *p = pk->peer;

	if (pk->prev)
		pk->prev->next = pk->next;
	else
		p->parked = pk->next;
	if (pk->next)
		pk->next->prev = pk->prev;
	uncharge(srv, p, pk->cost);
	srv->parked--;
	srv->parked_bytes -= pk->cost;
	pk->retired = 1;
	pk->prev = NULL;
	pk->next = srv->retired;
	srv->retired = pk;
	/* the caller releases the peer record if it is now idle */
}

static void parked_reap(struct srv *srv)
{
	while (srv->retired) {
		struct srv_parked *pk = srv->retired;

		srv->retired = pk->next;
		if (pk->req.msg)
			protobuf_c_message_free_unpacked(pk->req.msg, NULL);
		free(pk->data_mem);
		free(pk);
	}
}

int srv_park(struct srv_req *req, uint32_t ms, srv_expire_fn expire, void *arg,
	     struct srv_req **out)
{
	return srv_park_sized(req, ms, 0, expire, arg, out);
}

int srv_park_sized(struct srv_req *req, uint32_t ms, size_t extra, srv_expire_fn expire,
		   void *arg, struct srv_req **out)
{
	struct srv *srv = req->srv;
	struct srv_peer *p = peer_get(srv, req->peer);
	struct srv_parked *pk;
	/* Bulk data (at least half a receive buffer) keeps its place: the
	 * receive buffer's memory goes with the parked request, and the
	 * buffer is reposted with new memory (malloc's heap reuses freed
	 * frames). Less data is copied. */
	int take = req->rbuf && req->frame.hdr.data_len &&
		   req->frame.hdr.data_len >= req->rbuf->cap / 2;
	/* The decoded message can be several times its packed size. */
	size_t cost = sizeof(*pk) + 4 * (size_t)req->frame.hdr.body_len + extra +
		      (take ? req->rbuf->cap : req->frame.hdr.data_len);
	double hold = ms / 1000.0;

	if (!p)
		return -ENOMEM;
	if (req->parked || !room_for(srv, p, cost)) {
		peer_release_if_idle(srv, p);
		return -EBUSY;
	}
	pk = calloc(1, sizeof(*pk));
	if (pk && req->frame.hdr.data_len) {
		uint8_t *mem = NULL;

		if (take) {
			uint8_t *base = req->rbuf->data;

			if ((mem = tnet_rbuf_take(req->rbuf))) {
				pk->data = mem + ((const uint8_t *)req->frame.data - base);
				srv->count.data_kept += req->frame.hdr.data_len;
			}
		}
		if (!mem && (mem = malloc(req->frame.hdr.data_len))) {
			memcpy(mem, req->frame.data, req->frame.hdr.data_len);
			pk->data = mem;
			srv->count.data_copied += req->frame.hdr.data_len;
		}
		if (!mem) {
			free(pk);
			pk = NULL;
		}
		pk->data_mem = mem;
	}
	if (!pk) {
		peer_release_if_idle(srv, p);
		return -ENOMEM;
	}
	pk->req = *req;
	pk->req.frame.addr = NULL;
	pk->req.frame.body = NULL;
	pk->req.frame.data = pk->data;
	pk->req.parked = pk;
	pk->req.rbuf = NULL;
	pk->peer = p;
	pk->cost = cost;
	pk->expire = expire;
	pk->arg = arg;
	pk->deadline = mono_now() + (hold < srv->timeout_s ? hold : srv->timeout_s);
	pk->next = p->parked;
	if (p->parked)
		p->parked->prev = pk;
	p->parked = pk;
	charge(srv, p, cost);
	srv->parked++;
	srv->parked_bytes += cost;
	/* The original no longer owns its message, and needs no answer. */
	req->msg = NULL;
	req->replied = 1;
	*out = &pk->req;
	return 0;
}

void *srv_park_take_data(struct srv_req *parked, const uint8_t **data)
{
	struct srv_parked *pk = parked->parked;
	void *mem = pk->data_mem;

	*data = pk->data;
	pk->data = pk->data_mem = NULL;
	return mem;
}

/* ------------------------------------------------------------ deadlines */

static void peer_expire(struct srv *srv, struct srv_peer *p, double now)
{
	struct srv_tx *tx, *next;
	struct srv_parked *pk, *pnext;

	/* Replies the provider has held past their deadline: the peer stopped
	 * reading. Closing its connection is the only way to get the memory
	 * back from the provider. */
	for (tx = p->posted.head; tx; tx = tx->next)
		if (tx->deadline < now)
			break;
	if (tx) {
		srv_log(srv, "a peer has not taken %u replies (%zu bytes) within %.0f s: "
			"closing its connection", p->posted.n + p->waiting.n, p->bytes,
			srv->timeout_s);
		srv->count.peers_closed++;
		tnet_forget(srv->net, p->addr);
		peer_gone(srv, p, 1);
		return;
	}
	for (tx = p->waiting.head; tx; tx = next) {
		next = tx->next;
		if (tx->deadline >= now)
			continue;
		txlist_remove(&p->waiting, tx);
		srv->waiting--;
		uncharge(srv, p, tx->cost);
		tx_free(tx);
		srv->count.replies_expired++;
	}
	for (pk = p->parked; pk; pk = pnext) {
		pnext = pk->next;
		if (pk->deadline >= now)
			continue;
		srv->count.parked_expired++;
		if (pk->expire)
			pk->expire(pk->arg, &pk->req, -ETIMEDOUT);
		if (!pk->req.replied)
			srv_reply_error(&pk->req, -ETIMEDOUT, "%s: parked request reached its "
					"deadline", tp_opcode_name(pk->req.frame.hdr.opcode) ?: "?");
		/* the reply retired pk; pnext is untouched (only pk left the list) */
	}
}

static void expire_all(struct srv *srv)
{
	double now = mono_now();
	struct srv_peer *p, *next;

	for (p = srv->peers; p; p = next) {
		next = p->next;
		peer_expire(srv, p, now);
		peer_release_if_idle(srv, p);
	}
}

/* ------------------------------------------------------------ requests */

/* Admission: the peer must have room for one more reply of any size.
 * Returns 0 to go on; otherwise the request was dropped. */
static int admit(struct srv *srv, struct srv_req *req)
{
	struct srv_peer *p = peer_get(srv, req->peer);

	if (!p || p->entries >= srv->lim.peer_entries || srv->entries >= srv->lim.total_entries) {
		srv->count.requests_dropped++;
		if (p && !p->warned) {
			p->warned = 1;
			srv_log(srv, "a peer owed %u replies is not reading them: dropping its "
				"requests", p->entries);
		}
		peer_release_if_idle(srv, p);
		return -EBUSY;
	}
	return 0;
}

/* A frame nobody vouches for is dropped: answering it would send to an
 * address it merely claims. Logged at most once a second. */
static void unauthenticated(struct srv *srv, const char *why)
{
	double now = mono_now();

	srv->count.unauthenticated++;
	if (now - srv->unauth_logged_at < 1.0)
		return;
	srv_log(srv, "dropped %llu unauthenticated frame(s) (last: %s)",
		(unsigned long long)(srv->count.unauthenticated - srv->unauth_logged), why);
	srv->unauth_logged_at = now;
	srv->unauth_logged = srv->count.unauthenticated;
}

/* The caller's groups: its gid, then the supplementary groups the
 * daemon's own user database gives its uid (as Slurm does). */
static void ident_groups(struct srv_ident *ident)
{
	struct passwd pw, *found = NULL;
	gid_t groups[SRV_MAX_GROUPS];
	int n = SRV_MAX_GROUPS;
	char buf[4096];

	ident->gids[0] = ident->gid;
	ident->ngids = 1;
	if (getpwuid_r(ident->uid, &pw, buf, sizeof(buf), &found) || !found)
		return;
	if (getgrouplist(pw.pw_name, ident->gid, groups, &n) < 0 || n > SRV_MAX_GROUPS)
		n = SRV_MAX_GROUPS; /* the first ones */
	for (int i = 0; i < n && ident->ngids < SRV_MAX_GROUPS; i++)
		if ((uint32_t)groups[i] != ident->gid)
			ident->gids[ident->ngids++] = (uint32_t)groups[i];
}

/* AUTH: decode the credential (munged says who), open a session replying
 * to the credential's address, answer with its id. A credential that does
 * not decode gets no answer: there is no address anyone vouched for. */
static void srv_auth(struct srv *srv, struct srv_req *req)
{
	Tessera__AuthRequest *m = (Tessera__AuthRequest *)
		tp_body_unpack(&req->frame, &tessera__auth_request__descriptor);
	Tessera__AuthReply rep = TESSERA__AUTH_REPLY__INIT;
	struct tp_auth_id id;
	struct srv_session *ses;
	char err[256];
	int rc;

	if (!m || !m->credential || !*m->credential) {
		unauthenticated(srv, "AUTH without a credential");
		goto out;
	}
	rc = tp_auth_decode(srv->cfg->munge_socket, m->credential, srv->target, &id, err,
			    sizeof(err));
	if (rc) {
		unauthenticated(srv, err); /* logged at most once a second: a flood costs no log */
		goto out;
	}
	if (tnet_insert_name(srv->net, id.addr, id.addr_len, &req->peer)) {
		srv_log(srv, "AUTH of uid %u: its address is unusable", id.uid);
		goto out;
	}
	memset(&req->ident, 0, sizeof(req->ident));
	req->ident.uid = id.uid;
	req->ident.gid = id.gid;
	memcpy(req->ident.key, id.key, TP_KEY_SIZE);
	sodium_memzero(id.key, sizeof(id.key));
	ident_groups(&req->ident);
	if (admit(srv, req))
		goto out;
	rc = srv_session_add(srv->sessions, &req->ident, req->peer, mono_now(), &ses);
	if (rc) {
		srv_reply_error(req, rc, "AUTH of uid %u: %u sessions are open, the limit",
				req->ident.uid, srv_sessions_count(srv->sessions));
		goto out;
	}
	/* A probe asks after a session it holds (evicted, or lost in a
	 * restart?); only about its own uid's. */
	if (m->session) {
		struct srv_session *old = srv_session_find(srv->sessions, m->session);

		rep.known = old && old->ident.uid == req->ident.uid;
	}
	rep.session = req->ident.session;
	rep.uid = req->ident.uid;
	rep.gid = req->ident.gid;
	rep.boot = srv->boot;
	srv_reply(req, &rep.base, NULL, 0);
out:
	sodium_memzero(req->ident.key, sizeof(req->ident.key));
	if (m)
		protobuf_c_message_free_unpacked(&m->base, NULL);
}

/* Check, decode and dispatch one received frame of ev->len bytes in
 * ev->rbuf->data (ev->status: -EMSGSIZE when the transport truncated it). */
static void handle_frame(struct srv *srv, const struct tnet_event *ev)
{
	struct srv_req req = { .srv = srv, .rbuf = srv->net ? ev->rbuf : NULL };
	const ProtobufCMessageDescriptor *desc;
	struct srv_peer *p;
	srv_handler handler = NULL;
	char err[256];
	int rc;

	rc = tp_frame_parse(ev->rbuf->data, ev->len, srv->max_frame, &req.frame, err, sizeof(err));
	if (ev->status == -EMSGSIZE && rc == -EPROTO)
		rc = -EMSGSIZE; /* truncated by the transport: say so */
	if (rc == -EMSGSIZE && ev->status == -EMSGSIZE)
		snprintf(err, sizeof(err), "frame larger than the %zu-byte maximum", srv->max_frame);
	if (ev->len < TP_HDR_SIZE) {
		srv_log(srv, "dropped a %zu-byte message: %s", ev->len, err);
		return;
	}
	/* Who sent it: a session's frames are answered at the session's
	 * address (never at one the frame claims), once their MAC is right. A
	 * frame that cannot be checked (cut, malformed) is answered only when
	 * it names a session: its owner, and nobody else, hears of it. */
	if (!srv->net) {
		req.peer = srv->local_peer;
		req.ident = srv->local_ident;
		if (!rc && req.frame.hdr.opcode == TP_OP_AUTH) {
			srv_reply_error(&req, -EOPNOTSUPP, "AUTH: an in-process daemon has no sessions");
			return;
		}
	} else if (!req.frame.hdr.session) {
		if (!rc && req.frame.hdr.opcode == TP_OP_AUTH && !(req.frame.hdr.flags & TP_FLAG_REPLY))
			srv_auth(srv, &req);
		else
			unauthenticated(srv, "no session");
		return;
	} else {
		struct srv_session *ses = srv_session_find(srv->sessions, req.frame.hdr.session);

		if (!ses || (!rc && tp_frame_verify(&req.frame, ses->ident.key))) {
			unauthenticated(srv, ses ? "bad MAC" : "unknown session");
			return;
		}
		ses->last_used = mono_now();
		req.peer = ses->peer;
		req.ident = ses->ident;
	}
	if (admit(srv, &req))
		return;
	p = peer_find(srv, req.peer);
	if (!room_for(srv, p, srv->max_frame)) {
		srv->count.requests_refused++;
		srv_reply_error(&req, -EBUSY, "request %llu: the %s daemon owes %zu bytes of "
				"replies (limit %zu per client, %zu in all): read them first",
				(unsigned long long)req.frame.hdr.reqid, srv->role.name, p->bytes,
				srv->lim.peer_bytes, srv->lim.budget_bytes);
		return;
	}
	if (rc) {
		srv_reply_error(&req, rc, "request %llu: %s", (unsigned long long)req.frame.hdr.reqid, err);
		return;
	}
	if (req.frame.hdr.flags & TP_FLAG_REPLY) {
		srv_reply_error(&req, -EPROTO, "a reply was sent to the %s daemon", srv->role.name);
		return;
	}
	if (req.frame.hdr.opcode < TP_OP_LIMIT)
		handler = srv->role.handlers[req.frame.hdr.opcode];
	if (!handler) {
		srv_reply_error(&req, -EOPNOTSUPP, "%s is not served by the %s daemon",
				tp_opcode_name(req.frame.hdr.opcode), srv->role.name);
		return;
	}
	desc = tp_request_desc(req.frame.hdr.opcode);
	req.msg = tp_body_unpack(&req.frame, desc);
	if (!req.msg) {
		srv_reply_error(&req, -EBADMSG, "%s: the %u-byte body does not decode as %s",
				tp_opcode_name(req.frame.hdr.opcode), req.frame.hdr.body_len,
				desc->name);
		return;
	}
	handler(srv->role.ctx, &req);
	if (!req.replied)
		srv_reply_error(&req, -EIO, "%s: the daemon produced no answer",
				tp_opcode_name(req.frame.hdr.opcode));
	if (req.msg)
		protobuf_c_message_free_unpacked(req.msg, NULL);
	peer_release_if_idle(srv, peer_find(srv, req.peer));
}

static void handle_recv(struct srv *srv, const struct tnet_event *ev)
{
	if (ev->status && ev->status != -EMSGSIZE)
		srv_log(srv, "receive failed: %s", strerror(-ev->status));
	else
		handle_frame(srv, ev);
	tnet_repost(srv->net, ev->rbuf);
}

static void drain(struct srv *srv)
{
	struct tnet_event ev[16];
	int n;

	do {
		n = tnet_poll(srv->net, ev, 16);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_SENT)
				tx_done(srv, &ev[i]);
			else
				handle_recv(srv, &ev[i]);
		}
		if (srv->waiting)
			pump_all(srv);
	} while (n > 0);
	parked_reap(srv);
	if (n < 0)
		srv_log(srv, "completion queue: %s", strerror(-n));
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop, (void)revents;
	drain(w->data);
}

static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	drain(srv);
	/* A polled provider keeps the idle watcher, and so does a send that
	 * met -EAGAIN until it goes out. */
	if (tnet_fd(srv->net) >= 0 && !srv->eagain)
		ev_idle_stop(loop, w);
}

/* Before the loop blocks: only if libfabric agrees nothing is pending. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	if (srv->eagain || tnet_trywait(srv->net))
		ev_idle_start(loop, &srv->idle);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct srv *srv = w->data;

	(void)loop, (void)revents;
	drain(srv);
	expire_all(srv);
	if (mono_now() - srv->sessions_expired_at > 1.0) {
		srv->sessions_expired_at = mono_now();
		srv_sessions_expire(srv->sessions, srv->sessions_expired_at);
	}
	if (srv->role.tick)
		srv->role.tick(srv->role.ctx);
	parked_reap(srv);
	/* After a burst of debt (a client that stopped reading, say), give
	 * the freed memory back to the system once the debt is small again;
	 * malloc keeps it otherwise. Replies stay on the heap meanwhile, which
	 * keeps the common case free of page faults. */
	if (srv->peak_bytes > SRV_TRIM_ABOVE && srv->bytes < SRV_TRIM_ABOVE / 4) {
		malloc_trim(0);
		srv->peak_bytes = srv->bytes;
	}
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
	struct srv *srv = w->data;

	(void)loop, (void)revents;
	if (srv->wake_fn)
		srv->wake_fn(srv->wake_arg);
	parked_reap(srv);
}

int srv_wakeup_set(struct srv *srv, void (*fn)(void *arg), void *arg)
{
	if (!srv->loop)
		return -ENOTSUP;
	srv->wake_fn = fn;
	srv->wake_arg = arg;
	return 0;
}

void srv_wakeup(struct srv *srv)
{
	ev_async_send(srv->loop, &srv->wake); /* libev's one call safe from any thread */
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	srv_log(srv, "signal %d: shutting down", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* ------------------------------------------------------------ ping */

void srv_core_stats(struct srv *srv, Tessera__CoreStats *out)
{
	tessera__core_stats__init(out);
	out->reply_entries = srv->entries - srv->parked;
	out->reply_bytes = srv->bytes - srv->parked_bytes;
	out->posted_entries = srv->posted;
	out->parked = srv->parked;
	out->parked_bytes = srv->parked_bytes;
	out->peers = srv->npeers;
	out->replies_expired = srv->count.replies_expired;
	out->requests_refused = srv->count.requests_refused;
	out->requests_dropped = srv->count.requests_dropped;
	out->peers_closed = srv->count.peers_closed;
	out->parked_expired = srv->count.parked_expired;
	out->parked_gone = srv->count.parked_gone;
	out->parked_data_kept = srv->count.data_kept;
	out->parked_data_copied = srv->count.data_copied;
	out->abandoned = srv->abandoned.n;
	out->budget_bytes = srv->lim.budget_bytes;
	out->peer_budget_bytes = srv->lim.peer_bytes;
	out->sessions = srv->sessions ? srv_sessions_count(srv->sessions) : 0;
	out->frames_unauthenticated = srv->count.unauthenticated;
}

static void ping_answer(struct srv *srv, struct srv_req *req)
{
	Tessera__PingReply rep = TESSERA__PING_REPLY__INIT;
	Tessera__CoreStats core;

	srv_core_stats(srv, &core);
	rep.role = (char *)srv->role.name;
	rep.index = srv->role.index;
	rep.version = TP_VERSION_STRING;
	rep.core = &core;
	srv_reply(req, &rep.base, NULL, 0);
}

static void ping_held(void *arg, struct srv_req *req, int reason)
{
	(void)arg;
	if (reason == -ETIMEDOUT) /* the hold is over */
		ping_answer(req->srv, req);
}

void srv_ping(struct srv *srv, struct srv_req *req)
{
	const Tessera__PingRequest *m = (const Tessera__PingRequest *)req->msg;
	struct srv_req *held;
	int rc;

	if (!m->hold_ms) {
		ping_answer(srv, req);
		return;
	}
	rc = srv_park(req, m->hold_ms, ping_held, NULL, &held);
	if (rc)
		srv_reply_error(req, rc, "ping: cannot hold the request: %s", strerror(-rc));
}

/* ------------------------------------------------------------ life */

/* A daemon core without endpoint or loop yet. */
static struct srv *srv_alloc(const struct srv_opts *opts, const struct srv_role *role)
{
	struct srv *srv = calloc(1, sizeof(*srv));
	const struct srv_limits defaults = {
		SRV_BUDGET_BYTES, SRV_PEER_BYTES, SRV_PEER_ENTRIES, SRV_TOTAL_ENTRIES,
		SRV_PEER_POSTED, SRV_TOTAL_POSTED,
	};

	if (!srv)
		return NULL;
	srv->role = *role;
	srv->cfg = opts->cfg;
	srv->lim = opts->limits ? *opts->limits : defaults;
	srv->max_frame = tp_config_max_frame(opts->cfg);
	srv->timeout_s = opts->cfg->timeout_ms / 1000.0;
	if (!strcmp(role->name, "mds"))
		snprintf(srv->target, sizeof(srv->target), "mds");
	else
		snprintf(srv->target, sizeof(srv->target), "%s:%u", role->name, role->index);
	srv->local_ident.ngids = 1; /* uid 0, gid 0 */
	if (srv_sessions_create(SRV_SESSIONS, SRV_SESSIONS_PER_UID, SRV_SESSION_IDLE_S,
				&srv->sessions)) {
		free(srv);
		return NULL;
	}
	randombytes_buf(&srv->boot, sizeof(srv->boot));
	return srv;
}

void srv_local_identity(struct srv *srv, uint32_t uid, uint32_t gid)
{
	memset(&srv->local_ident, 0, sizeof(srv->local_ident));
	srv->local_ident.uid = uid;
	srv->local_ident.gid = gid;
	srv->local_ident.gids[0] = gid;
	srv->local_ident.ngids = 1;
}

int srv_create(const struct srv_opts *opts, const struct srv_role *role, struct srv **out,
	       char *err, size_t errlen)
{
	struct srv *srv = srv_alloc(opts, role);
	struct tnet_opts to = {
		.provider = opts->cfg->provider,
		.node = opts->host,
		.service = opts->port,
		.listen = 1,
		.nrecv = opts->nrecv,
	};
	int rc;

	if (!srv)
		return -ENOMEM;
	/* Closing a peer's connection (tnet_forget) must release what the
	 * provider holds for it: libfabric's documented switch. */
	setenv("FI_AV_REMOVE_CLEANUP", "1", 1);
	/* Read replies are up to max_io bytes each and live for one request.
	 * Left to itself, glibc serves such blocks by mmap, or trims the
	 * heap's top after a free, so each request paid page faults and the
	 * zeroing of a fresh MiB: a third of a storage daemon's time in a
	 * streaming read. Keep them on the heap (below the mmap threshold,
	 * whose most is 32 MiB) and leave trimming to on_tick's malloc_trim
	 * after a burst of debt. */
	mallopt(M_MMAP_THRESHOLD, (int)(2 * srv->max_frame < SRV_TRIM_ABOVE ? 2 * srv->max_frame
									    : SRV_TRIM_ABOVE));
	mallopt(M_TRIM_THRESHOLD, (int)SRV_TRIM_ABOVE);
	to.buf_size = srv->max_frame;
	rc = tnet_open(&to, &srv->net, err, errlen);
	if (rc) {
		srv_sessions_destroy(srv->sessions);
		free(srv);
		return rc;
	}
	srv->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!srv->loop) {
		snprintf(err, errlen, "ev_loop_new failed");
		tnet_close(srv->net);
		srv_sessions_destroy(srv->sessions);
		free(srv);
		return -ENOMEM;
	}
	ev_io_init(&srv->io, on_io, tnet_fd(srv->net), EV_READ);
	ev_prepare_init(&srv->prepare, on_prepare);
	ev_idle_init(&srv->idle, on_idle);
	ev_timer_init(&srv->tick, on_tick, SRV_TICK_S, SRV_TICK_S);
	ev_signal_init(&srv->sigterm, on_signal, SIGTERM);
	ev_signal_init(&srv->sigint, on_signal, SIGINT);
	srv->io.data = srv->prepare.data = srv->idle.data = srv->tick.data = srv;
	ev_async_init(&srv->wake, on_wake);
	srv->sigterm.data = srv->sigint.data = srv->wake.data = srv;
	if (tnet_fd(srv->net) >= 0)
		ev_io_start(srv->loop, &srv->io);
	else
		srv_log(srv, "provider %s has no wait fd: polling", opts->cfg->provider);
	ev_prepare_start(srv->loop, &srv->prepare);
	ev_timer_start(srv->loop, &srv->tick);
	ev_signal_start(srv->loop, &srv->sigterm);
	ev_signal_start(srv->loop, &srv->sigint);
	ev_async_start(srv->loop, &srv->wake);
	*out = srv;
	return 0;
}

int srv_run(struct srv *srv)
{
	signal(SIGPIPE, SIG_IGN);
	srv_log(srv, "serving (provider %s, version %s)", srv->cfg->provider, TP_VERSION_STRING);
	ev_run(srv->loop, 0);
	return 0;
}

/* ------------------------------------------------------------ in-process */

int srv_create_local(const struct srv_opts *opts, const struct srv_role *role,
		     srv_sink_fn sink, void *arg, struct srv **out)
{
	struct srv *srv = srv_alloc(opts, role);

	if (!srv)
		return -ENOMEM;
	srv->sink = sink;
	srv->sink_arg = arg;
	*out = srv;
	return 0;
}

void srv_deliver(struct srv *srv, uint64_t peer, const void *frame, size_t len)
{
	struct tnet_rbuf rbuf = { .cap = len, .data = (uint8_t *)frame };
	struct tnet_event ev = { .type = TNET_RECV, .rbuf = &rbuf, .len = len };

	if (len > srv->max_frame) { /* what a receive buffer would have kept */
		ev.len = srv->max_frame;
		ev.status = -EMSGSIZE;
	}
	srv->local_peer = peer;
	handle_frame(srv, &ev);
	parked_reap(srv);
}

void srv_local_tick(struct srv *srv)
{
	expire_all(srv);
	if (srv->role.tick)
		srv->role.tick(srv->role.ctx);
	parked_reap(srv);
}

static void txlist_free(struct srv_txlist *l)
{
	while (l->head) {
		struct srv_tx *tx = l->head;

		txlist_remove(l, tx);
		tx_free(tx);
	}
}

void srv_destroy(struct srv *srv)
{
	if (!srv)
		return;
	/* Parked requests learn the daemon is stopping; then the endpoint
	 * closes, after which the provider holds no reply any more. */
	for (struct srv_peer *p = srv->peers; p; p = p->next) {
		while (p->parked) {
			struct srv_parked *pk = p->parked;

			pk->gone = 1;
			if (pk->expire)
				pk->expire(pk->arg, &pk->req, -ESHUTDOWN);
			if (!pk->retired)
				parked_retire(srv, pk);
		}
	}
	parked_reap(srv);
	if (srv->loop)
		ev_loop_destroy(srv->loop);
	if (srv->net)
		tnet_close(srv->net);
	while (srv->peers) {
		struct srv_peer *p = srv->peers;

		srv->peers = p->next;
		txlist_free(&p->waiting);
		txlist_free(&p->posted);
		free(p);
	}
	txlist_free(&srv->abandoned);
	srv_sessions_destroy(srv->sessions);
	free(srv);
}

int srv_parse_cmdline(int argc, char **argv, const char *prog, struct srv_cmdline *cl)
{
	int opt;

	memset(cl, 0, sizeof(*cl));
	while ((opt = getopt(argc, argv, "c:d:i:p:h")) != -1) {
		switch (opt) {
		case 'c': cl->config = optarg; break;
		case 'd': cl->dir = optarg; break;
		case 'i': cl->index = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'p': cl->pidfile = optarg; break;
		default:
			fprintf(stderr, "usage: %s -c CONFIG -d DIR [-i INDEX] [-p PIDFILE]\n", prog);
			return -EINVAL;
		}
	}
	if (!cl->config || !cl->dir) {
		fprintf(stderr, "%s: -c CONFIG and -d DIR are required\n", prog);
		return -EINVAL;
	}
	return 0;
}

int srv_write_pidfile(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (!path)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}
