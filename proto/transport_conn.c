/*
 * transport_conn.c - tnet's connected mode: libfabric's tcp provider
 * through its connections (FI_EP_MSG), one peer id per connection. The
 * public tnet_* calls (transport.c) come here when net->conns is set.
 */
#include "transport_int.h"

/*
 * TNET_PROVIDER_CONN: libfabric's tcp provider through its connections
 * (FI_EP_MSG), with no rxm above. Why: rxm names a peer that connects to
 * us by its source IP and a port the peer merely claims in rxm's
 * connection data, and a new claim replaces the old connection, so any
 * local process could take another's replies (docs/security.md,
 * "Connection takeover"). Here a peer id is one accepted or made
 * connection and nothing else; a daemon answers on the connection that
 * carried the request (TNET_RECV's peer), and a connection cannot be
 * claimed because nothing is looked up by name on the accepting side.
 *
 * A peer id is (generation << 32 | slot + 1): a closed connection's id
 * never names the next one in its slot. Each connection keeps its own
 * receive buffers posted (TNET_CONN_RECVS of buf_size; their memory is
 * touched only as far as messages fill it). Closing a connection makes
 * the provider complete each of its posted receives and sends with
 * FI_ECANCELED (tcp's fi_close flushes its queues into the CQ): sends are
 * handed up as failed, receives are counted back, and an accepted
 * connection's memory is freed once none is posted or held by the caller.
 *
 * A connection we made (tnet_lookup) is redialled under the same peer id
 * by the first send after it closed, once its receives are all back (as
 * rxm reconnects to a name): a restarted daemon is reached again. The
 * daemon sees a new connection, on which the client's old session is not
 * accepted: the client authenticates again, as after any restart.
 *
 * tcp cannot cut a message short as rxm does: a message larger than the
 * receive buffer it lands in completes with FI_ETRUNC and nothing of it
 * (the provider keeps the header), and the provider closes the
 * connection, so the receiver cannot answer it. So each end says in its
 * connection data (struct tnet_hello) how large its receive buffers are,
 * and a send that would not fit fails at once with -EMSGSIZE on the
 * sender's side, which can say what failed. A message that overflows
 * anyway (a peer that ignores the hello) is handed up as a -EMSGSIZE
 * receive of 0 bytes, and its connection is closed here.
 */
#define TNET_CONN_RECVS 8      /* receives kept posted per connection */
#define TNET_CONN_SLOTS 65536  /* connections open at once */
#define TNET_REDIAL_S 0.05     /* between dials of one closed connection */
#define TNET_HELLO_MAGIC 0x31434e54u /* "TNC1", little-endian */

/* Connection data, both ways (fi_connect's and fi_accept's): the
 * receive buffer size of the end that sends it, little-endian. */
struct tnet_hello {
	uint32_t magic;
	uint32_t cap;             /* its receive buffers' size, bytes */
};

/* The eq entry of a connection event with the peer's data after it (its
 * flexible data[] with room behind it; a struct holding the entry and an
 * array after it would be a GNU extension, which clang refuses). */
struct tnet_cm_event {
	_Alignas(struct fi_eq_cm_entry) uint8_t raw[sizeof(struct fi_eq_cm_entry) + 64];
};

static const struct fi_eq_cm_entry *cm_entry(const struct tnet_cm_event *e)
{
	return (const struct fi_eq_cm_entry *)(const void *)e->raw;
}

enum tnet_conn_state {
	TNET_CONN_CONNECTING = 1, /* fi_connect sent, no FI_CONNECTED yet */
	TNET_CONN_ACCEPTING,      /* fi_accept sent, no FI_CONNECTED yet */
	TNET_CONN_UP,
	TNET_CONN_DOWN,           /* closed; freed when nothing is posted or held */
};

/* Where each receive buffer of a connection is. */
enum tnet_rbuf_state { TNET_RBUF_FREE = 0, TNET_RBUF_POSTED, TNET_RBUF_HELD };

struct tnet_conn {
	struct fid_ep *ep;        /* NULL once closed */
	enum tnet_conn_state state;
	uint64_t id;              /* the peer id callers hold */
	struct fi_info *dial;     /* one we made: how to dial it again; NULL:
				   * accepted (never redialled) */
	double down_at;           /* when it last closed (tp_mono_s) */
	unsigned posted;          /* receives in the provider */
	unsigned held;            /* receives handed to the caller */
	int accepted;             /* made by conn_accept: its close is told
				   * (TNET_CLOSED) */
	size_t peer_cap;          /* the peer's receive buffers (its hello);
				   * 0: it sent none, nothing is checked */
	struct tnet_rbuf rbufs[TNET_CONN_RECVS];
	uint8_t rstate[TNET_CONN_RECVS]; /* enum tnet_rbuf_state */
};

struct tnet_conn_slot {
	struct tnet_conn *conn;   /* NULL: free */
	uint32_t gen;
};

struct tnet_conns {
	struct fid_eq *eq;        /* connection events of every endpoint */
	struct fid_pep *pep;      /* listening (opts->listen) */
	int epfd;                 /* tnet_fd: the cq's and the eq's wait fds */
	size_t buf_size;
	unsigned recvs;           /* posted per connection */
	uint32_t next;            /* where the search for a free slot starts */
	/* Accepted connections that closed, for TNET_CLOSED events: a ring
	 * of the newest TNET_CLOSED_KEPT (older ones are overwritten). */
	uint64_t closed[TNET_CLOSED_KEPT];
	unsigned closed_head, closed_n;
	struct tnet_conn_slot slots[TNET_CONN_SLOTS];
};

/* Our hello, for fi_connect and fi_accept. */
static struct tnet_hello conn_hello(const struct tnet *net)
{
	struct tnet_hello h = { htole32(TNET_HELLO_MAGIC), htole32((uint32_t)net->conns->buf_size) };

	return h;
}

/* The receive buffer size a peer's connection data says, or 0 when it
 * holds no hello. */
static size_t conn_peer_cap(const struct tnet_cm_event *e, ssize_t got)
{
	struct tnet_hello h;

	if (got < (ssize_t)(sizeof(struct fi_eq_cm_entry) + sizeof(h)))
		return 0;
	memcpy(&h, cm_entry(e)->data, sizeof(h));
	return le32toh(h.magic) == TNET_HELLO_MAGIC ? le32toh(h.cap) : 0;
}

static struct tnet_conn *conn_of(struct tnet *net, uint64_t id)
{
	uint32_t slot = (uint32_t)id - 1;
	struct tnet_conn *c;

	if (slot >= TNET_CONN_SLOTS)
		return NULL;
	c = net->conns->slots[slot].conn;
	return c && c->id == id ? c : NULL;
}

static void conn_maybe_free(struct tnet *net, struct tnet_conn *c)
{
	struct tnet_conn_slot *s;

	if (c->state != TNET_CONN_DOWN || c->posted || c->held || c->dial)
		return;
	s = &net->conns->slots[(uint32_t)c->id - 1];
	s->conn = NULL;
	s->gen++;
	for (unsigned i = 0; i < net->conns->recvs; i++)
		free(c->rbufs[i].data);
	free(c);
}

/* An accepted connection closed: its id waits for a TNET_CLOSED event. */
static void conn_note_closed(struct tnet_conns *cs, uint64_t id)
{
	cs->closed[(cs->closed_head + cs->closed_n) % TNET_CLOSED_KEPT] = id;
	if (cs->closed_n < TNET_CLOSED_KEPT)
		cs->closed_n++;
	else
		cs->closed_head = (cs->closed_head + 1) % TNET_CLOSED_KEPT;
}

/* Close c: the provider completes what it holds of it as cancelled. */
static void conn_down(struct tnet *net, struct tnet_conn *c)
{
	if (c->accepted && c->state != TNET_CONN_DOWN)
		conn_note_closed(net->conns, c->id);
	if (c->ep) {
		fi_close(&c->ep->fid);
		c->ep = NULL;
	}
	c->state = TNET_CONN_DOWN;
	c->down_at = tp_mono_s();
	conn_maybe_free(net, c);
}

/* tnet_forget's: close c for good (never redialled); the next lookup of
 * its address makes a new connection. */
static void conn_forget(struct tnet *net, struct tnet_conn *c)
{
	for (unsigned i = 0; i < TNET_NAME_CACHE; i++)
		if (net->names[i].len && net->names[i].addr == c->id)
			net->names[i].len = 0;
	fi_freeinfo(c->dial);
	c->dial = NULL;
	conn_down(net, c);
}

static int conn_post(struct tnet *net, struct tnet_conn *c, struct tnet_rbuf *rb)
{
	ssize_t rc;

	rb->ctx.kind = TNET_RECV;
	rb->ctx.user = rb;
	rb->peer = c->id;
	do {
		rc = fi_recv(c->ep, rb->data, rb->cap, NULL, FI_ADDR_UNSPEC, &rb->ctx);
		if (rc == -FI_EAGAIN)
			fi_cq_read(net->cq, NULL, 0); /* drive progress */
	} while (rc == -FI_EAGAIN);
	if (!rc) {
		c->posted++;
		c->rstate[rb - c->rbufs] = TNET_RBUF_POSTED;
	}
	return rc ? tnet_fi_err((int)rc) : 0;
}

/* c's endpoint made from info, bound and enabled, its free receive
 * buffers posted. */
static int conn_setup(struct tnet *net, struct tnet_conn *c, struct fi_info *info)
{
	int rc;

	if ((rc = fi_endpoint(net->domain, info, &c->ep, c)) ||
	    (rc = fi_ep_bind(c->ep, &net->conns->eq->fid, 0)) ||
	    (rc = fi_ep_bind(c->ep, &net->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (rc = fi_enable(c->ep)))
		return tnet_fi_err(rc);
	for (unsigned i = 0; i < net->conns->recvs; i++)
		if (c->rstate[i] == TNET_RBUF_FREE && (rc = conn_post(net, c, &c->rbufs[i])))
			return rc;
	return 0;
}

/* A new connection's record and slot, its endpoint made from info, bound
 * and enabled, its receives posted. */
static int conn_new(struct tnet *net, struct fi_info *info, struct tnet_conn **out)
{
	struct tnet_conns *cs = net->conns;
	struct tnet_conn *c;
	uint32_t slot;

	for (slot = 0; slot < TNET_CONN_SLOTS; slot++)
		if (!cs->slots[(cs->next + slot) % TNET_CONN_SLOTS].conn)
			break;
	if (slot == TNET_CONN_SLOTS)
		return -EMFILE;
	slot = (cs->next + slot) % TNET_CONN_SLOTS;
	cs->next = slot + 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!cs->slots[slot].gen)
		cs->slots[slot].gen = 1;
	c->id = (uint64_t)cs->slots[slot].gen << 32 | (slot + 1);
	c->state = TNET_CONN_DOWN; /* until it is set up */
	cs->slots[slot].conn = c;
	*out = c;
	for (unsigned i = 0; i < cs->recvs; i++) {
		c->rbufs[i].cap = cs->buf_size;
		c->rbufs[i].data = malloc(cs->buf_size);
		if (!c->rbufs[i].data)
			return -ENOMEM;
	}
	return conn_setup(net, c, info);
}

/* A connection request: accept it, whatever it says about itself (its
 * hello only bounds what we send it). */
static void conn_accept(struct tnet *net, struct fi_info *info, size_t peer_cap)
{
	struct tnet_hello hello = conn_hello(net);
	struct tnet_conn *c = NULL;
	int rc = conn_new(net, info, &c);

	if (!rc) {
		c->peer_cap = peer_cap;
		rc = tnet_fi_err(fi_accept(c->ep, &hello, sizeof(hello)));
	}
	if (rc) {
		fi_reject(net->conns->pep, info->handle, NULL, 0);
		if (c)
			conn_down(net, c);
	} else {
		c->state = TNET_CONN_ACCEPTING;
		c->accepted = 1;
	}
	fi_freeinfo(info);
}

/* One connection event of `got` bytes in e. */
static void conn_on_event(struct tnet *net, uint32_t event, struct tnet_cm_event *e, ssize_t got)
{
	struct tnet_conn *c = event == FI_CONNREQ ? NULL : cm_entry(e)->fid->context;

	if (event == FI_CONNREQ) {
		conn_accept(net, cm_entry(e)->info, conn_peer_cap(e, got));
	} else if (event == FI_CONNECTED && c && c->state != TNET_CONN_DOWN) {
		c->state = TNET_CONN_UP;
		if (c->dial) /* ours: the daemon's hello came with it */
			c->peer_cap = conn_peer_cap(e, got);
	} else if (event == FI_SHUTDOWN && c) {
		conn_down(net, c);
	}
}

/* Connection events: requests, set-ups, shutdowns, failures. */
static void conn_progress(struct tnet *net)
{
	for (;;) {
		struct tnet_cm_event e;
		uint32_t event;
		ssize_t got = fi_eq_read(net->conns->eq, &event, &e, sizeof(e), 0);

		if (got == -FI_EAVAIL) {
			struct fi_eq_err_entry ee = { 0 };

			if (fi_eq_readerr(net->conns->eq, &ee, 0) < 0)
				return;
			if (ee.fid && ee.fid->fclass == FI_CLASS_EP && ee.fid->context)
				conn_down(net, ee.fid->context); /* refused, reset */
			continue;
		}
		if (got < 0)
			return;
		conn_on_event(net, event, &e, got);
	}
}

/* The eq and cq, their wait fds under one epoll fd, the listener. */
static int conn_open_endpoint(struct tnet *net, const struct tnet_opts *opts, const char **step)
{
	struct tnet_conns *cs = net->conns;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct epoll_event ev = { .events = EPOLLIN };
	int rc, eqfd;

	if ((rc = tnet_open_domain(net, opts, step)))
		return rc;
	*step = "fi_eq_open";
	if ((rc = fi_eq_open(net->fabric, &eq_attr, &cs->eq, NULL)) ||
	    (rc = fi_control(&cs->eq->fid, FI_GETWAIT, &eqfd)))
		return rc;
	*step = "epoll";
	cs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cs->epfd < 0 || epoll_ctl(cs->epfd, EPOLL_CTL_ADD, net->fd, &ev) ||
	    epoll_ctl(cs->epfd, EPOLL_CTL_ADD, eqfd, &ev))
		return -errno;
	if (!opts->listen)
		return 0;
	*step = "fi_passive_ep";
	if ((rc = fi_passive_ep(net->fabric, net->info, &cs->pep, NULL)) ||
	    (rc = fi_pep_bind(cs->pep, &cs->eq->fid, 0)))
		return rc;
	*step = "fi_listen";
	return fi_listen(cs->pep);
}

/* tnet_open's: tcp's message endpoints. */
int tnet_conn_open(struct tnet *net, const struct tnet_opts *opts, const char **step)
{
	struct fi_info *hints = fi_allocinfo();
	int rc;

	*step = "fi_allocinfo";
	net->conns = calloc(1, sizeof(*net->conns));
	net->names = calloc(TNET_NAME_CACHE, sizeof(*net->names));
	if (!hints || !net->conns || !net->names) {
		fi_freeinfo(hints);
		return -ENOMEM;
	}
	net->conns->epfd = -1;
	net->conns->buf_size = opts->buf_size;
	net->conns->recvs = opts->nrecv < TNET_CONN_RECVS ? opts->nrecv : TNET_CONN_RECVS;
	if (!net->conns->recvs)
		net->conns->recvs = 1;
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	hints->fabric_attr->prov_name = strdup("tcp");
	*step = "fi_getinfo";
	rc = fi_getinfo(TNET_FI_VERSION, opts->node, opts->service, opts->listen ? FI_SOURCE : 0,
			hints, &net->info);
	fi_freeinfo(hints);
	if (rc)
		return rc;
	tnet_note_caps(net);
	net->tagged = 0; /* no tagged receives: nothing is lent */
	net->lends = 0;
	return conn_open_endpoint(net, opts, step);
}

static void conn_close_all(struct tnet *net)
{
	struct tnet_conns *cs = net->conns;

	for (uint32_t i = 0; i < TNET_CONN_SLOTS; i++) {
		struct tnet_conn *c = cs->slots[i].conn;

		if (!c)
			continue;
		if (c->ep)
			fi_close(&c->ep->fid);
		for (unsigned j = 0; j < cs->recvs; j++)
			free(c->rbufs[j].data);
		fi_freeinfo(c->dial);
		free(c);
	}
	if (cs->pep)
		fi_close(&cs->pep->fid);
}

/* Connect c's endpoint to addr, with our hello. */
static int conn_dial(struct tnet *net, struct tnet_conn *c, const void *addr)
{
	struct tnet_hello hello = conn_hello(net);

	c->peer_cap = 0; /* until the answer's hello */
	return tnet_fi_err(fi_connect(c->ep, addr, &hello, sizeof(hello)));
}

/* tnet_lookup's: a new connection to node:service (or the one made
 * before, while it lasts). */
int tnet_conn_connect(struct tnet *net, struct fi_info *info, uint64_t *peer)
{
	struct tnet_conn *c = NULL;
	uint64_t id;
	int rc;

	if (!tnet_find_name(net, info->dest_addr, info->dest_addrlen, &id) && conn_of(net, id)) {
		*peer = id;
		return 0;
	}
	rc = conn_new(net, info, &c);
	if (!rc)
		rc = conn_dial(net, c, info->dest_addr);
	if (!rc && !(c->dial = fi_dupinfo(info)))
		rc = -ENOMEM;
	if (rc) {
		if (c)
			conn_forget(net, c);
		return rc;
	}
	c->state = TNET_CONN_CONNECTING;
	tnet_cache_name(net, info->dest_addr, info->dest_addrlen, c->id);
	*peer = c->id;
	return 0;
}

/* Dial a closed connection of ours again: 0 (now connecting), -EAGAIN
 * (not yet: its receives are still coming back, or it closed just now). */
static int conn_redial(struct tnet *net, struct tnet_conn *c)
{
	int rc;

	if (c->posted || tp_mono_s() - c->down_at < TNET_REDIAL_S)
		return -EAGAIN;
	rc = conn_setup(net, c, c->dial);
	if (!rc)
		rc = conn_dial(net, c, c->dial->dest_addr);
	if (rc) {
		conn_down(net, c); /* tried again after TNET_REDIAL_S */
		return -EAGAIN;
	}
	c->state = TNET_CONN_CONNECTING;
	return 0;
}

static size_t iov_total(const struct iovec *iov, size_t n)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += iov[i].iov_len;
	return len;
}

int tnet_conn_send(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n,
		   struct tnet_ctx *ctx)
{
	struct tnet_conn *c = conn_of(net, peer);

	if (c && c->state != TNET_CONN_UP) {
		conn_progress(net);
		c = conn_of(net, peer);
	}
	if (c && c->state == TNET_CONN_DOWN && c->dial && conn_redial(net, c))
		return -EAGAIN;
	if (!c || c->state == TNET_CONN_DOWN)
		return -ENOTCONN;
	if (c->state != TNET_CONN_UP)
		return -EAGAIN;
	if (c->peer_cap && iov_total(iov, n) > c->peer_cap)
		return -EMSGSIZE; /* it would close the connection, unanswered */
	ctx->kind = TNET_SENT;
	return tnet_fi_err((int)fi_sendv(c->ep, iov, NULL, n, 0, ctx));
}

int tnet_conn_repost(struct tnet *net, struct tnet_rbuf *rb)
{
	struct tnet_conn *c = conn_of(net, rb->peer);

	if (!c)
		return -ENOTCONN; /* not ours: a caller's bug */
	c->held--;
	c->rstate[rb - c->rbufs] = TNET_RBUF_FREE;
	if (c->state == TNET_CONN_DOWN) {
		conn_maybe_free(net, c);
		return 0;
	}
	return conn_post(net, c, rb);
}

/* One completion of connected mode into ev: 1, or 0 when it is a
 * closed connection's receive coming back (counted, not handed up). */
static int conn_event(struct tnet *net, struct tnet_event *ev, void *op_context, size_t len,
		      int status)
{
	struct tnet_ctx *ctx = op_context;
	struct tnet_rbuf *rb = op_context;
	struct tnet_conn *c;

	memset(ev, 0, sizeof(*ev));
	ev->status = status;
	ev->len = len;
	if (ctx->kind != TNET_RECV) {
		ev->type = TNET_SENT;
		ev->user = ctx->user;
		return 1;
	}
	c = conn_of(net, rb->peer);
	if (!c)
		return 0;
	c->posted--;
	c->rstate[rb - c->rbufs] = TNET_RBUF_FREE;
	/* Back from a closed connection, or flushed from one closing (its
	 * FI_SHUTDOWN is next in the event queue): not a message. */
	if (c->state == TNET_CONN_DOWN || status == -ECANCELED) {
		conn_maybe_free(net, c);
		return 0;
	}
	c->held++;
	c->rstate[rb - c->rbufs] = TNET_RBUF_HELD;
	ev->type = TNET_RECV;
	ev->rbuf = rb;
	ev->peer = rb->peer;
	if (status == -EMSGSIZE) {
		/* Nothing of it is in the buffer (tcp keeps its header), and
		 * the stream is past saving: close the connection (the
		 * provider may have), let the caller say so. */
		ev->len = 0;
		conn_down(net, c);
	}
	return 1;
}

int tnet_conn_poll(struct tnet *net, struct tnet_event *ev, int max)
{
	struct tnet_conns *cs = net->conns;
	int n = 0, rc;

	conn_progress(net);
	for (; n < max && cs->closed_n; n++, cs->closed_n--) {
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = TNET_CLOSED;
		ev[n].peer = cs->closed[cs->closed_head];
		cs->closed_head = (cs->closed_head + 1) % TNET_CLOSED_KEPT;
	}
	rc = tnet_cq_drain(net, ev + n, max - n, conn_event);
	return rc < 0 ? (n ? n : rc) : n + rc;
}


void tnet_conn_destroy(struct tnet *net)
{
	conn_close_all(net);
	if (net->conns->eq)
		fi_close(&net->conns->eq->fid);
	if (net->conns->epfd >= 0)
		close(net->conns->epfd);
	free(net->conns);
	net->conns = NULL;
}

int tnet_conn_fd(const struct tnet *net)
{
	return net->conns->epfd;
}

struct fid *tnet_conn_eq_fid(struct tnet *net)
{
	return &net->conns->eq->fid;
}

int tnet_conn_name(struct tnet *net, void *buf, size_t *len)
{
	static const char anonymous[] = TNET_PROVIDER_CONN;

	if (net->conns->pep)
		return tnet_fi_err(fi_getname(&net->conns->pep->fid, buf, len));
	/* A client that listens nowhere: its name only fills the frames'
	 * (informational) address field; answers come on its connection. */
	if (*len < sizeof(anonymous))
		return -ENOSPC;
	memcpy(buf, anonymous, sizeof(anonymous));
	*len = sizeof(anonymous);
	return 0;
}

void tnet_conn_forget(struct tnet *net, uint64_t peer)
{
	struct tnet_conn *c = conn_of(net, peer);

	if (c)
		conn_forget(net, c);
}
