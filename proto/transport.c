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
 *
 * The connected mode (TNET_PROVIDER_CONN, the default for tcp) is in
 * transport_conn.c; what the two share is in transport_int.h.
 */
#include "transport_int.h"

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

int tnet_fi_err(int rc)
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
void tnet_note_caps(struct tnet *net)
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

int tnet_open_domain(struct tnet *net, const struct tnet_opts *opts, const char **step)
{
	int rc;

	*step = "fi_fabric";
	if ((rc = fi_fabric(net->info->fabric_attr, &net->fabric, NULL)))
		return rc;
	*step = "fi_domain";
	if ((rc = fi_domain(net->fabric, net->info, &net->domain, NULL)))
		return rc;
	return tnet_open_cq(net, opts->nrecv, step);
}

/* Fabric, domain, queue, address vector and the enabled endpoint. */
static int tnet_open_endpoint(struct tnet *net, const struct tnet_opts *opts,
			      const char **step)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int rc;

	if ((rc = tnet_open_domain(net, opts, step)))
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
int tnet_find_name(struct tnet *net, const void *name, size_t len, uint64_t *peer)
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

void tnet_cache_name(struct tnet *net, const void *name, size_t len, uint64_t peer)
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
		if ((rc = tnet_conn_open(net, opts, &step)))
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
	return rc == -ENOMEM ? rc : tnet_fi_err(rc);
}

void tnet_close(struct tnet *net)
{
	if (!net)
		return;
	if (net->conns)
		tnet_conn_destroy(net);
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
	return net->conns ? tnet_conn_fd(net) : net->fd;
}

int tnet_trywait(struct tnet *net)
{
	struct fid *fids[2] = { &net->cq->fid, net->conns ? tnet_conn_eq_fid(net) : NULL };

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
	if (net->conns)
		return tnet_conn_name(net, buf, len);
	return tnet_fi_err(fi_getname(&net->ep->fid, buf, len));
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
		return tnet_fi_err(rc);
	if (!info->dest_addr) {
		fi_freeinfo(info);
		return -EADDRNOTAVAIL;
	}
	if (net->conns) {
		rc = tnet_conn_connect(net, info, peer);
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
		return rc < 0 ? tnet_fi_err(rc) : -EADDRNOTAVAIL;
	tnet_cache_name(net, name, len, addr);
	*peer = addr;
	return 0;
}

void tnet_forget(struct tnet *net, uint64_t peer)
{
	fi_addr_t addr = peer;

	if (net->conns) {
		tnet_conn_forget(net, peer);
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
	return tnet_fi_err((int)fi_tsendv(net->ep, iov, NULL, n, peer, tag, ctx));
}

int tnet_trecv(struct tnet *net, const struct iovec *iov, size_t n, uint64_t tag,
	       struct tnet_ctx *ctx)
{
	if (!net->tagged)
		return -ENOSYS;
	if (n > net->iov_limit)
		return -EINVAL;
	ctx->kind = TNET_TRECV;
	return tnet_fi_err((int)fi_trecvv(net->ep, iov, NULL, n, FI_ADDR_UNSPEC, tag, 0, ctx));
}

int tnet_cancel(struct tnet *net, struct tnet_ctx *ctx)
{
	if (!net->ep)
		return -ENOSYS; /* connected mode: no tagged receives to cancel */
	return tnet_fi_err((int)fi_cancel(&net->ep->fid, ctx));
}

int tnet_send(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n,
	      struct tnet_ctx *ctx)
{
	ssize_t rc;

	if (n > net->iov_limit)
		return -EINVAL;
	if (net->conns)
		return tnet_conn_send(net, peer, iov, n, ctx);
	ctx->kind = TNET_SENT;
	if (n == 1)
		rc = fi_send(net->ep, iov[0].iov_base, iov[0].iov_len, NULL, peer, ctx);
	else
		rc = fi_sendv(net->ep, iov, NULL, n, peer, ctx);
	return rc ? tnet_fi_err((int)rc) : 0;
}

int tnet_repost(struct tnet *net, struct tnet_rbuf *rbuf)
{
	ssize_t rc;

	if (net->conns)
		return tnet_conn_repost(net, rbuf);
	do {
		rc = fi_recv(net->ep, rbuf->data, rbuf->cap, NULL, FI_ADDR_UNSPEC, &rbuf->ctx);
		if (rc == -FI_EAGAIN)
			fi_cq_read(net->cq, NULL, 0); /* drive progress */
	} while (rc == -FI_EAGAIN);
	return rc ? tnet_fi_err((int)rc) : 0;
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

/* An RDM completion into ev: always one event. A receive cut short
 * (FI_ETRUNC) reports the bytes that fit, its whole buffer. */
static int rdm_event(struct tnet *net, struct tnet_event *ev, void *op_context, size_t len,
		     int status)
{
	fill_event(net, ev, op_context, len, status);
	if (ev->type == TNET_RECV && status == -EMSGSIZE)
		ev->len = ev->rbuf->cap;
	return 1;
}

/* The status a failed completion is handed up with. */
static int cq_err_status(const struct fi_cq_err_entry *ee)
{
	if (ee->err == FI_ETRUNC)
		return -EMSGSIZE;
	return ee->err == FI_ECANCELED ? -ECANCELED : tnet_fi_err(ee->err);
}

int tnet_cq_drain(struct tnet *net, struct tnet_event *ev, int max, tnet_event_fn fn)
{
	struct fi_cq_msg_entry ent[16];
	int n = 0;

	while (n < max) {
		ssize_t got = fi_cq_read(net->cq, ent, (size_t)(max - n) < 16 ? (size_t)(max - n) : 16);

		if (got == -FI_EAGAIN)
			break;
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(net->cq, &ee, 0) != 1)
				break;
			if (ee.op_context)
				n += fn(net, &ev[n], ee.op_context, ee.len, cq_err_status(&ee));
			continue;
		}
		if (got < 0)
			return n ? n : tnet_fi_err((int)got);
		for (ssize_t i = 0; i < got; i++)
			n += fn(net, &ev[n], ent[i].op_context, ent[i].len, 0);
	}
	return n;
}

int tnet_poll(struct tnet *net, struct tnet_event *ev, int max)
{
	if (net->conns)
		return tnet_conn_poll(net, ev, max);
	return tnet_cq_drain(net, ev, max, rdm_event);
}
