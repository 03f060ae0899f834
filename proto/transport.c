/*
 * transport.c - tnet: reliable datagrams over a libfabric RDM endpoint.
 *
 * One endpoint, one completion queue (with a wait fd, so a daemon's libev
 * loop can watch it) and one address vector. Receives go into a fixed set
 * of buffers kept posted; a message larger than a buffer completes with
 * FI_ETRUNC, which we hand up as -EMSGSIZE with the bytes that fit (enough
 * for the frame header, so the daemon can answer). Sends carry the caller's
 * context and complete as TNET_SENT events. Tagged messages (tnet_tsend,
 * tnet_trecv) go around the posted buffers: a client receives a read's
 * data straight into its caller's memory that way.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <sys/epoll.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tp_clock.h"
#include "tproto.h"

_Static_assert(sizeof(struct fi_context2) <= 64, "fi_context2 fits tnet_ctx");

#define TNET_FI_VERSION FI_VERSION(1, 9)
#define TNET_NAME_CACHE 1024 /* peers remembered by raw name (power of 2) */

struct tnet_peer_name {
	uint8_t len; /* 0: empty slot */
	uint8_t name[TP_MAX_ADDR - 1];
	fi_addr_t addr;
};

struct tnet_conns; /* connected mode (below) */

struct tnet {
	struct tnet_conns *conns;    /* connected mode; NULL for RDM */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int fd;                      /* the cq's wait fd */
	unsigned nrecv;
	struct tnet_rbuf *rbufs;     /* nrecv buffers, all posted when idle */
	struct tnet_peer_name *names; /* open-addressing cache of raw names */
	struct tnet_times times;     /* tnet_open's */
	int tagged;                  /* FI_TAGGED granted */
	int lends;                   /* tnet_can_lend */
	size_t iov_limit;            /* of sends and receives both */
};

/*
 * rxm keeps two pools of 1024 eager buffers per endpoint, plus one per
 * connection, each buffer `FI_OFI_RXM_BUFFER_SIZE` bytes (16 KiB by
 * default) and all touched when created: some 85 MB of resident memory in
 * a process that only asks the metadata daemon a question. Our messages
 * are either small (metadata, under 4 KiB) or bulk (up to max_io, which
 * goes by rendezvous whatever this size), so 4 KiB eager buffers cost
 * nothing in speed and cut that to about 21 MB. Both ends of a connection
 * must agree on the size (rxm refuses a connection between ends whose
 * eager limits differ), which is why every Tessera process sets the same
 * default, and only when the user has not set the variable. libfabric
 * reads it once, when it starts (the first fi_getinfo in the process), so
 * this runs before ours; a program that started libfabric earlier must
 * have it in its environment (tessera-mpi-env.sh exports it for MPI).
 */
#define TNET_RXM_BUFFER_SIZE "4096"

/*
 * rxm looks at its connection events (a peer's connection request, say)
 * only every FI_OFI_RXM_CM_PROGRESS_INTERVAL microseconds of progress, 10
 * ms by default, unless a connection of its own is under way. So a daemon
 * answered each new client's first message 10 ms late (spinning, as its
 * completion queue's fd stayed readable meanwhile), and a client that
 * talks to the metadata daemon and four storage daemons waited 50 ms in
 * all. 1 ms keeps those checks rare (they cost an fi_eq_read) and a
 * connection's set-up short. Only this process's progress depends on it,
 * so processes need not agree on it.
 */
#define TNET_RXM_CM_PROGRESS_INTERVAL "1000"

/*
 * rxm posts this many eager receive buffers on its shared receive context
 * when the endpoint is enabled, each touched as it is made: 4096 by
 * default, 17 MB of a client's 29 MB resident before it has sent
 * anything. A client has at most a few requests in flight per daemon, so
 * 1024 (rxm's pools grow by 1024 buffers at a time: one chunk, 4.5 MB) is
 * plenty; a message that finds no buffer posted waits in its socket until
 * one is, it is not lost. Only this process's receive side depends on it,
 * so the ends need not agree; the daemons, which serve many clients at
 * once, keep rxm's default.
 */
#define TNET_RXM_CLIENT_MSG_RX_SIZE "1024"

/* The variables libfabric reads when it starts, set unless the user set
 * them; a daemon's (listening) process keeps rxm's receive depth. */
static void tnet_env_defaults(const struct tnet_opts *opts)
{
	if (!opts->listen)
		setenv("FI_OFI_RXM_MSG_RX_SIZE", TNET_RXM_CLIENT_MSG_RX_SIZE, 0);
	setenv("FI_OFI_RXM_BUFFER_SIZE", TNET_RXM_BUFFER_SIZE, 0);
	setenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL", TNET_RXM_CM_PROGRESS_INTERVAL, 0);
	/* Forgetting a peer must make rxm close its connection and so let go
	 * of every transfer with it (tnet_can_lend). Read once, like the
	 * above. */
	setenv("FI_AV_REMOVE_CLEANUP", "1", 0);
}

/* libfabric's own reading of a boolean variable. */
static int env_true(const char *name)
{
	const char *v = getenv(name);

	return v && (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
		     !strcasecmp(v, "on"));
}

static int fi_err(int rc)
{
	/* libfabric's codes are errno values (negated), plus a few of its own
	 * above 256, which we fold into EIO. */
	rc = rc < 0 ? -rc : rc;
	return rc < 256 ? -rc : -EIO;
}

/*
 * tnet_open's steps. Each sets *step to what it is doing, for the message
 * tnet_open writes when one fails, and returns 0 or a libfabric code (or
 * -ENOMEM); what it made is in net for tnet_close to undo.
 */

/* An RDM endpoint of the provider, tagged if it can (shm in some
 * libfabric versions cannot). */
static int tnet_getinfo(struct tnet *net, const struct tnet_opts *opts, const char **step)
{
	struct fi_info *hints = fi_allocinfo();
	uint64_t flags = opts->listen ? FI_SOURCE : 0;
	int rc;

	*step = "fi_allocinfo";
	if (!hints)
		return -ENOMEM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	hints->fabric_attr->prov_name = strdup(opts->provider);
	tnet_env_defaults(opts);
	*step = "fi_getinfo";
	rc = fi_getinfo(TNET_FI_VERSION, opts->node, opts->service, flags, hints, &net->info);
	if (rc == -FI_ENODATA) { /* a provider without tagged messages */
		hints->caps = FI_MSG;
		rc = fi_getinfo(TNET_FI_VERSION, opts->node, opts->service, flags, hints,
				&net->info);
	}
	fi_freeinfo(hints);
	return rc;
}

/* What the endpoint granted: tagged messages, iovec length, lending. */
static void tnet_note_caps(struct tnet *net)
{
	const struct fi_info *info = net->info;

	net->tagged = (info->caps & FI_TAGGED) != 0;
	net->iov_limit = info->tx_attr->iov_limit < info->rx_attr->iov_limit
			 ? info->tx_attr->iov_limit : info->rx_attr->iov_limit;
	if (net->iov_limit < 1)
		net->iov_limit = 1;
	/* rxm: forgetting a peer closes its connection (rxm_av_remove_handler,
	 * with FI_AV_REMOVE_CLEANUP), and with it every transfer from or into
	 * our memory. shm has no such handler. */
	net->lends = net->tagged && net->iov_limit >= 2 &&
		     strstr(info->fabric_attr->prov_name, "ofi_rxm") &&
		     env_true("FI_AV_REMOVE_CLEANUP");
}

/* The completion queue, with a wait fd when the provider has one. */
static int tnet_open_cq(struct tnet *net, unsigned nrecv, const char **step)
{
	struct fi_cq_attr cq_attr = { 0 };
	int rc;

	cq_attr.format = FI_CQ_FORMAT_MSG;
	cq_attr.wait_obj = FI_WAIT_FD;
	cq_attr.size = nrecv * 4 + 256;
	*step = "fi_cq_open";
	rc = fi_cq_open(net->domain, &cq_attr, &net->cq, NULL);
	if (rc == -FI_ENOSYS) {
		/* No wait fd (shm in libfabric 1.17): callers poll instead. */
		cq_attr.wait_obj = FI_WAIT_NONE;
		return fi_cq_open(net->domain, &cq_attr, &net->cq, NULL);
	}
	if (rc)
		return rc;
	*step = "fi_control(FI_GETWAIT)";
	return fi_control(&net->cq->fid, FI_GETWAIT, &net->fd);
}

/* Fabric, domain, queue, address vector and the enabled endpoint. */
static int tnet_open_endpoint(struct tnet *net, const struct tnet_opts *opts,
			      const char **step)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int rc;

	*step = "fi_fabric";
	if ((rc = fi_fabric(net->info->fabric_attr, &net->fabric, NULL)))
		return rc;
	*step = "fi_domain";
	if ((rc = fi_domain(net->fabric, net->info, &net->domain, NULL)))
		return rc;
	if ((rc = tnet_open_cq(net, opts->nrecv, step)))
		return rc;
	*step = "fi_av_open";
	if ((rc = fi_av_open(net->domain, &av_attr, &net->av, NULL)))
		return rc;
	*step = "fi_endpoint";
	if ((rc = fi_endpoint(net->domain, net->info, &net->ep, NULL)))
		return rc;
	*step = "fi_ep_bind";
	if ((rc = fi_ep_bind(net->ep, &net->av->fid, 0)) ||
	    (rc = fi_ep_bind(net->ep, &net->cq->fid, FI_TRANSMIT | FI_RECV)))
		return rc;
	*step = "fi_enable";
	return fi_enable(net->ep);
}

/* The receive buffers, all posted, and the name cache. */
static int tnet_post_buffers(struct tnet *net, const struct tnet_opts *opts, const char **step)
{
	int rc;

	*step = "receive buffers";
	net->nrecv = opts->nrecv;
	net->rbufs = calloc(opts->nrecv, sizeof(*net->rbufs));
	net->names = calloc(TNET_NAME_CACHE, sizeof(*net->names));
	if (!net->rbufs || !net->names)
		return -ENOMEM;
	for (unsigned i = 0; i < opts->nrecv; i++) {
		struct tnet_rbuf *rb = &net->rbufs[i];

		rb->cap = opts->buf_size;
		rb->data = malloc(rb->cap);
		rb->ctx.user = rb;
		if (!rb->data)
			return -ENOMEM;
		*step = "fi_recv";
		if ((rc = tnet_repost(net, rb)))
			return rc;
	}
	return 0;
}


/* ------------------------------------------------------- the name cache */

static uint32_t name_hash(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* 0 and *peer when name is cached, else -ENOENT. */
static int tnet_find_name(struct tnet *net, const void *name, size_t len, uint64_t *peer)
{
	uint32_t slot = name_hash(name, len) & (TNET_NAME_CACHE - 1);

	if (len == 0 || len >= TP_MAX_ADDR)
		return -ENOENT;
	for (unsigned probe = 0; probe < 8; probe++) {
		struct tnet_peer_name *c = &net->names[(slot + probe) & (TNET_NAME_CACHE - 1)];

		if (c->len == len && !memcmp(c->name, name, len)) {
			*peer = c->addr;
			return 0;
		}
	}
	return -ENOENT;
}

static void tnet_cache_name(struct tnet *net, const void *name, size_t len, uint64_t peer)
{
	uint32_t slot = name_hash(name, len) & (TNET_NAME_CACHE - 1);
	struct tnet_peer_name *e = NULL;

	if (len == 0 || len >= TP_MAX_ADDR)
		return;
	for (unsigned probe = 0; probe < 8 && !e; probe++) {
		struct tnet_peer_name *c = &net->names[(slot + probe) & (TNET_NAME_CACHE - 1)];

		if (c->len == 0)
			e = c;
	}
	if (!e) /* cache full around this slot: evict the home entry */
		e = &net->names[slot];
	e->len = (uint8_t)len;
	memcpy(e->name, name, len);
	e->addr = peer;
}

/* ------------------------------------------------------ connected mode
 *
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

/* The eq entry of a connection event with the peer's data after it. */
struct tnet_cm_event {
	struct fi_eq_cm_entry ent;
	uint8_t data[64];
};

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

	if (got < (ssize_t)(sizeof(e->ent) + sizeof(h)))
		return 0;
	memcpy(&h, e->data, sizeof(h));
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

/* Close c: the provider completes what it holds of it as cancelled. */
static void conn_down(struct tnet *net, struct tnet_conn *c)
{
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
	return rc ? fi_err((int)rc) : 0;
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
		return fi_err(rc);
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
		rc = fi_err(fi_accept(c->ep, &hello, sizeof(hello)));
	}
	if (rc) {
		fi_reject(net->conns->pep, info->handle, NULL, 0);
		if (c)
			conn_down(net, c);
	} else {
		c->state = TNET_CONN_ACCEPTING;
	}
	fi_freeinfo(info);
}

/* One connection event of `got` bytes in e. */
static void conn_on_event(struct tnet *net, uint32_t event, struct tnet_cm_event *e, ssize_t got)
{
	struct tnet_conn *c = event == FI_CONNREQ ? NULL : e->ent.fid->context;

	if (event == FI_CONNREQ) {
		conn_accept(net, e->ent.info, conn_peer_cap(e, got));
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

	*step = "fi_fabric";
	if ((rc = fi_fabric(net->info->fabric_attr, &net->fabric, NULL)))
		return rc;
	*step = "fi_domain";
	if ((rc = fi_domain(net->fabric, net->info, &net->domain, NULL)))
		return rc;
	if ((rc = tnet_open_cq(net, opts->nrecv, step)))
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
static int conn_open(struct tnet *net, const struct tnet_opts *opts, const char **step)
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
	return fi_err(fi_connect(c->ep, addr, &hello, sizeof(hello)));
}

/* tnet_lookup's: a new connection to node:service (or the one made
 * before, while it lasts). */
static int conn_connect(struct tnet *net, struct fi_info *info, uint64_t *peer)
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

static int conn_send(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n,
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
	return fi_err((int)fi_sendv(c->ep, iov, NULL, n, 0, ctx));
}

static int conn_repost(struct tnet *net, struct tnet_rbuf *rb)
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

static int conn_poll(struct tnet *net, struct tnet_event *ev, int max)
{
	struct fi_cq_msg_entry ent[16];
	int n = 0;

	conn_progress(net);
	while (n < max) {
		ssize_t got = fi_cq_read(net->cq, ent, (size_t)(max - n) < 16 ? (size_t)(max - n) : 16);

		if (got == -FI_EAGAIN)
			break;
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(net->cq, &ee, 0) != 1)
				break;
			if (ee.op_context)
				n += conn_event(net, &ev[n], ee.op_context, ee.len,
						ee.err == FI_ETRUNC ? -EMSGSIZE
						: ee.err == FI_ECANCELED ? -ECANCELED : fi_err(ee.err));
			continue;
		}
		if (got < 0)
			return n ? n : fi_err((int)got);
		for (ssize_t i = 0; i < got; i++)
			n += conn_event(net, &ev[n], ent[i].op_context, ent[i].len, 0);
	}
	return n;
}

int tnet_open(const struct tnet_opts *opts, struct tnet **out, char *err, size_t errlen)
{
	struct tnet *net = calloc(1, sizeof(*net));
	const char *step = "fi_allocinfo";
	uint64_t t = tp_mono_ns();
	int rc = -ENOMEM;

	if (!net)
		goto fail;
	net->fd = -1;
	if (!strcmp(opts->provider, TNET_PROVIDER_CONN)) {
		if ((rc = conn_open(net, opts, &step)))
			goto fail;
		net->times.endpoint_ns = tp_mono_ns() - t;
		*out = net;
		return 0;
	}
	if ((rc = tnet_getinfo(net, opts, &step)))
		goto fail;
	net->times.getinfo_ns = tp_mono_ns() - t;
	t = tp_mono_ns();
	tnet_note_caps(net);
	if ((rc = tnet_open_endpoint(net, opts, &step)))
		goto fail;
	net->times.endpoint_ns = tp_mono_ns() - t;
	t = tp_mono_ns();
	if ((rc = tnet_post_buffers(net, opts, &step)))
		goto fail;
	net->times.buffers_ns = tp_mono_ns() - t;
	*out = net;
	return 0;
fail:
	snprintf(err, errlen, "%s (provider %s%s%s%s%s): %s", step, opts->provider,
		 opts->node ? ", " : "", opts->node ? opts->node : "",
		 opts->service ? ":" : "", opts->service ? opts->service : "",
		 fi_strerror(rc < 0 ? -rc : rc));
	tnet_close(net);
	return rc == -ENOMEM ? rc : fi_err(rc);
}

void tnet_close(struct tnet *net)
{
	if (!net)
		return;
	if (net->conns) {
		conn_close_all(net);
		if (net->conns->eq)
			fi_close(&net->conns->eq->fid);
		if (net->conns->epfd >= 0)
			close(net->conns->epfd);
		free(net->conns);
	}
	if (net->ep)
		fi_close(&net->ep->fid);
	if (net->av)
		fi_close(&net->av->fid);
	if (net->cq)
		fi_close(&net->cq->fid);
	if (net->domain)
		fi_close(&net->domain->fid);
	if (net->fabric)
		fi_close(&net->fabric->fid);
	if (net->info)
		fi_freeinfo(net->info);
	if (net->rbufs)
		for (unsigned i = 0; i < net->nrecv; i++)
			free(net->rbufs[i].data);
	free(net->rbufs);
	free(net->names);
	free(net);
}

void tnet_open_times(const struct tnet *net, struct tnet_times *out)
{
	*out = net->times;
}

int tnet_fd(struct tnet *net)
{
	return net->conns ? net->conns->epfd : net->fd;
}

int tnet_trywait(struct tnet *net)
{
	struct fid *fids[2] = { &net->cq->fid, net->conns ? &net->conns->eq->fid : NULL };

	if (net->fd < 0)
		return -EAGAIN; /* no wait object: never block */
	return fi_trywait(net->fabric, fids, net->conns ? 2 : 1) == FI_SUCCESS ? 0 : -EAGAIN;
}

int tnet_wait(struct tnet *net, int timeout_ms)
{
	struct pollfd pfd = { .fd = tnet_fd(net), .events = POLLIN };

	if (net->fd < 0) {
		/* polling provider: give the other side a moment */
		if (timeout_ms > 0)
			usleep(50);
		return 0;
	}
	if (tnet_trywait(net))
		return 0;
	if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

int tnet_name(struct tnet *net, void *buf, size_t *len)
{
	static const char anonymous[] = TNET_PROVIDER_CONN;

	if (!net->conns)
		return fi_err(fi_getname(&net->ep->fid, buf, len));
	if (net->conns->pep)
		return fi_err(fi_getname(&net->conns->pep->fid, buf, len));
	/* A client that listens nowhere: its name only fills the frames'
	 * (informational) address field; answers come on its connection. */
	if (*len < sizeof(anonymous))
		return -ENOSPC;
	memcpy(buf, anonymous, sizeof(anonymous));
	*len = sizeof(anonymous);
	return 0;
}

int tnet_lookup(struct tnet *net, const char *node, const char *service, uint64_t *peer)
{
	struct fi_info *hints = fi_dupinfo(net->info), *info = NULL;
	fi_addr_t addr;
	int rc;

	if (!hints)
		return -ENOMEM;
	free(hints->src_addr);
	hints->src_addr = NULL;
	hints->src_addrlen = 0;
	free(hints->dest_addr);
	hints->dest_addr = NULL;
	hints->dest_addrlen = 0;
	rc = fi_getinfo(TNET_FI_VERSION, node, service, 0, hints, &info);
	fi_freeinfo(hints);
	if (rc)
		return fi_err(rc);
	if (!info->dest_addr) {
		fi_freeinfo(info);
		return -EADDRNOTAVAIL;
	}
	if (net->conns) {
		rc = conn_connect(net, info, peer);
		fi_freeinfo(info);
		return rc;
	}
	rc = tnet_insert_name(net, info->dest_addr, info->dest_addrlen, &addr);
	fi_freeinfo(info);
	if (rc)
		return rc;
	*peer = addr;
	return 0;
}

int tnet_insert_name(struct tnet *net, const void *name, size_t len, uint64_t *peer)
{
	fi_addr_t addr;
	int rc;

	if (net->conns)
		return -EOPNOTSUPP; /* a peer is a connection, never a name */
	if (len == 0 || len >= TP_MAX_ADDR)
		return -EINVAL;
	if (!tnet_find_name(net, name, len, peer))
		return 0;
	rc = fi_av_insert(net->av, name, 1, &addr, 0, NULL);
	if (rc != 1)
		return rc < 0 ? fi_err(rc) : -EADDRNOTAVAIL;
	tnet_cache_name(net, name, len, addr);
	*peer = addr;
	return 0;
}

void tnet_forget(struct tnet *net, uint64_t peer)
{
	fi_addr_t addr = peer;

	if (net->conns) {
		struct tnet_conn *c = conn_of(net, peer);

		if (c)
			conn_forget(net, c);
		return;
	}
	for (unsigned i = 0; i < TNET_NAME_CACHE; i++)
		if (net->names[i].len && net->names[i].addr == addr)
			net->names[i].len = 0;
	fi_av_remove(net->av, &addr, 1, 0);
}

size_t tnet_iov_limit(struct tnet *net)
{
	return net->iov_limit;
}

int tnet_can_lend(struct tnet *net)
{
	return net->lends;
}

int tnet_tsend(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n, uint64_t tag,
	       struct tnet_ctx *ctx)
{
	if (!net->tagged)
		return -ENOSYS;
	if (n > net->iov_limit)
		return -EINVAL;
	ctx->kind = TNET_SENT;
	return fi_err((int)fi_tsendv(net->ep, iov, NULL, n, peer, tag, ctx));
}

int tnet_trecv(struct tnet *net, const struct iovec *iov, size_t n, uint64_t tag,
	       struct tnet_ctx *ctx)
{
	if (!net->tagged)
		return -ENOSYS;
	if (n > net->iov_limit)
		return -EINVAL;
	ctx->kind = TNET_TRECV;
	return fi_err((int)fi_trecvv(net->ep, iov, NULL, n, FI_ADDR_UNSPEC, tag, 0, ctx));
}

int tnet_cancel(struct tnet *net, struct tnet_ctx *ctx)
{
	if (!net->ep)
		return -ENOSYS; /* connected mode: no tagged receives to cancel */
	return fi_err((int)fi_cancel(&net->ep->fid, ctx));
}

int tnet_send(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n,
	      struct tnet_ctx *ctx)
{
	ssize_t rc;

	if (n > net->iov_limit)
		return -EINVAL;
	if (net->conns)
		return conn_send(net, peer, iov, n, ctx);
	ctx->kind = TNET_SENT;
	if (n == 1)
		rc = fi_send(net->ep, iov[0].iov_base, iov[0].iov_len, NULL, peer, ctx);
	else
		rc = fi_sendv(net->ep, iov, NULL, n, peer, ctx);
	return rc ? fi_err((int)rc) : 0;
}

int tnet_repost(struct tnet *net, struct tnet_rbuf *rbuf)
{
	ssize_t rc;

	if (net->conns)
		return conn_repost(net, rbuf);
	do {
		rc = fi_recv(net->ep, rbuf->data, rbuf->cap, NULL, FI_ADDR_UNSPEC, &rbuf->ctx);
		if (rc == -FI_EAGAIN)
			fi_cq_read(net->cq, NULL, 0); /* drive progress */
	} while (rc == -FI_EAGAIN);
	return rc ? fi_err((int)rc) : 0;
}

/* A completion is a receive exactly when its context is one of our
 * receive buffers (error entries do not always carry FI_RECV). */
static void fill_event(struct tnet *net, struct tnet_event *ev, void *op_context,
		       size_t len, int status)
{
	struct tnet_ctx *ctx = op_context;
	struct tnet_rbuf *rb = (struct tnet_rbuf *)op_context;

	memset(ev, 0, sizeof(*ev));
	ev->status = status;
	if (rb >= net->rbufs && rb < net->rbufs + net->nrecv) {
		ev->type = TNET_RECV;
		ev->rbuf = ctx->user;
		ev->len = len;
	} else {
		ev->type = ctx->kind == TNET_TRECV ? TNET_TRECV : TNET_SENT;
		ev->user = ctx->user;
		ev->len = len;
	}
}

int tnet_poll(struct tnet *net, struct tnet_event *ev, int max)
{
	struct fi_cq_msg_entry ent[16];
	int n = 0;

	if (net->conns)
		return conn_poll(net, ev, max);
	while (n < max) {
		ssize_t got = fi_cq_read(net->cq, ent, (size_t)(max - n) < 16 ? (size_t)(max - n) : 16);

		if (got == -FI_EAGAIN)
			break;
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(net->cq, &ee, 0) != 1)
				break;
			if (!ee.op_context)
				continue;
			fill_event(net, &ev[n], ee.op_context,
				   ee.len, ee.err == FI_ETRUNC ? -EMSGSIZE
				   : ee.err == FI_ECANCELED ? -ECANCELED : fi_err(ee.err));
			if (ev[n].type == TNET_RECV && ee.err == FI_ETRUNC)
				ev[n].len = ev[n].rbuf->cap;
			n++;
			continue;
		}
		if (got < 0)
			return n ? n : fi_err((int)got);
		for (ssize_t i = 0; i < got; i++, n++)
			fill_event(net, &ev[n], ent[i].op_context, ent[i].len, 0);
	}
	return n;
}
