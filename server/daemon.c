/* daemon.c - the event loop and request plumbing of both daemons. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "daemon.h"

/* An outgoing reply; lives until its send completes. */
struct srv_tx {
	struct tnet_ctx ctx;
	void *data;            /* owned raw data, or NULL */
	size_t data_len;
	size_t head_len;
	uint8_t head[];        /* header | body */
};

struct srv {
	struct srv_role role;
	const struct tp_config *cfg;
	size_t max_frame;
	struct tnet *net;
	struct ev_loop *loop;
	ev_io io;
	ev_prepare prepare;
	ev_idle idle;
	ev_timer tick;
	ev_signal sigterm, sigint;
	uint64_t inflight;     /* replies not yet completed */
	unsigned nrecv;
	struct tnet_event *deferred; /* receives seen while a send waited */
	unsigned ndeferred;          /* <= nrecv: each holds a buffer */
};

static void tx_done(struct srv *srv, const struct tnet_event *ev)
{
	struct srv_tx *tx = ev->user;

	if (ev->status)
		srv_log(srv, "a reply could not be delivered: %s", strerror(-ev->status));
	free(tx->data);
	free(tx);
	srv->inflight--;
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

static int srv_send(struct srv_req *req, int32_t status, const ProtobufCMessage *msg,
		    void *data, size_t data_len)
{
	struct srv *srv = req->srv;
	size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	struct srv_tx *tx = malloc(sizeof(*tx) + TP_HDR_SIZE + body);
	struct tp_hdr hdr = {
		.opcode = req->frame.hdr.opcode,
		.reqid = req->frame.hdr.reqid,
		.flags = TP_FLAG_REPLY,
		.status = status,
		.data_len = (uint32_t)data_len,
	};
	struct iovec iov[2];
	int rc;

	req->replied = 1;
	if (!tx) {
		free(data);
		return -ENOMEM;
	}
	tx->ctx.user = tx;
	tx->data = data;
	tx->data_len = data_len;
	tx->head_len = (size_t)tp_frame_build(tx->head, TP_HDR_SIZE + body, &hdr, NULL, 0, msg);
	iov[0] = (struct iovec){ tx->head, tx->head_len };
	iov[1] = (struct iovec){ data, data_len };
	/* The provider may be out of room (or the peer gone): progress and
	 * retry, but never longer than a client would wait for the answer,
	 * so a vanished client cannot stall the daemon. */
	time_t give_up = time(NULL) + (time_t)(srv->cfg->timeout_ms / 1000) + 1;

	while ((rc = tnet_send(srv->net, req->peer, iov, data_len ? 2 : 1, &tx->ctx)) == -EAGAIN) {
		if (time(NULL) > give_up) {
			rc = -ETIMEDOUT;
			break;
		}
		struct tnet_event ev[8];
		int n = tnet_poll(srv->net, ev, 8);

		/* Send completions free room; a request that arrives
		 * meanwhile waits in `deferred` until this one is answered. */
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_SENT)
				tx_done(srv, &ev[i]);
			else if (srv->ndeferred < srv->nrecv) /* always: one per buffer */
				srv->deferred[srv->ndeferred++] = ev[i];
			else
				tnet_repost(srv->net, ev[i].rbuf);
		}
	}
	if (rc) {
		srv_log(srv, "reply to request %llu (%s): send failed: %s",
			(unsigned long long)hdr.reqid, tp_opcode_name(hdr.opcode) ?: "?",
			strerror(-rc));
		free(tx->data);
		free(tx);
		return rc;
	}
	srv->inflight++;
	return 0;
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

/* Check, decode and dispatch one received frame. */
static void handle_frame(struct srv *srv, const struct tnet_event *ev)
{
	struct srv_req req = { .srv = srv };
	const ProtobufCMessageDescriptor *desc;
	char err[256];
	int rc;

	rc = tp_frame_parse(ev->rbuf->data, ev->len, srv->max_frame, &req.frame, err, sizeof(err));
	if (ev->status == -EMSGSIZE && rc == -EPROTO)
		rc = -EMSGSIZE; /* truncated by the transport: say so */
	if (rc == -EMSGSIZE && ev->status == -EMSGSIZE)
		snprintf(err, sizeof(err), "frame larger than the %zu-byte maximum", srv->max_frame);
	/* Without a usable reply address nobody can be told. (The address
	 * length sits at a fixed place, so even a frame with a bad magic or
	 * version gets its answer.) */
	if (ev->len < TP_HDR_SIZE || req.frame.hdr.addr_len == 0 ||
	    req.frame.hdr.addr_len > TP_MAX_ADDR ||
	    TP_HDR_SIZE + (size_t)req.frame.hdr.addr_len > ev->len) {
		srv_log(srv, "dropped a %zu-byte message: %s", ev->len,
			rc ? err : "no reply address");
		return;
	}
	if (tnet_insert_name(srv->net, ev->rbuf->data + TP_HDR_SIZE, req.frame.hdr.addr_len,
			     &req.peer)) {
		srv_log(srv, "dropped a message with an unusable reply address");
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
	if (!srv->role.serves(req.frame.hdr.opcode)) {
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
	srv->role.handle(srv->role.ctx, &req);
	if (!req.replied)
		srv_reply_error(&req, -EIO, "%s: the daemon produced no answer",
				tp_opcode_name(req.frame.hdr.opcode));
	protobuf_c_message_free_unpacked(req.msg, NULL);
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
		while (srv->ndeferred) {
			struct tnet_event d = srv->deferred[--srv->ndeferred];

			handle_recv(srv, &d);
		}
		n = tnet_poll(srv->net, ev, 16);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_SENT)
				tx_done(srv, &ev[i]);
			else
				handle_recv(srv, &ev[i]);
		}
	} while (n > 0 || srv->ndeferred);
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
	if (tnet_fd(srv->net) >= 0) /* a polled provider keeps the idle watcher */
		ev_idle_stop(loop, w);
}

/* Before the loop blocks: only if libfabric agrees nothing is pending. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	if (tnet_trywait(srv->net))
		ev_idle_start(loop, &srv->idle);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	drain(w->data);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct srv *srv = w->data;

	(void)revents;
	srv_log(srv, "signal %d: shutting down", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

int srv_create(const struct srv_opts *opts, const struct srv_role *role, struct srv **out,
	       char *err, size_t errlen)
{
	struct srv *srv = calloc(1, sizeof(*srv));
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
	srv->role = *role;
	srv->cfg = opts->cfg;
	srv->max_frame = tp_config_max_frame(opts->cfg);
	srv->nrecv = opts->nrecv;
	srv->deferred = calloc(opts->nrecv, sizeof(*srv->deferred));
	if (!srv->deferred) {
		free(srv);
		return -ENOMEM;
	}
	to.buf_size = srv->max_frame;
	rc = tnet_open(&to, &srv->net, err, errlen);
	if (rc) {
		free(srv->deferred);
		free(srv);
		return rc;
	}
	srv->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!srv->loop) {
		snprintf(err, errlen, "ev_loop_new failed");
		tnet_close(srv->net);
		free(srv->deferred);
		free(srv);
		return -ENOMEM;
	}
	ev_io_init(&srv->io, on_io, tnet_fd(srv->net), EV_READ);
	ev_prepare_init(&srv->prepare, on_prepare);
	ev_idle_init(&srv->idle, on_idle);
	ev_timer_init(&srv->tick, on_tick, 0.05, 0.05);
	ev_signal_init(&srv->sigterm, on_signal, SIGTERM);
	ev_signal_init(&srv->sigint, on_signal, SIGINT);
	srv->io.data = srv->prepare.data = srv->idle.data = srv->tick.data = srv;
	srv->sigterm.data = srv->sigint.data = srv;
	if (tnet_fd(srv->net) >= 0)
		ev_io_start(srv->loop, &srv->io);
	else
		srv_log(srv, "provider %s has no wait fd: polling", opts->cfg->provider);
	ev_prepare_start(srv->loop, &srv->prepare);
	ev_timer_start(srv->loop, &srv->tick);
	ev_signal_start(srv->loop, &srv->sigterm);
	ev_signal_start(srv->loop, &srv->sigint);
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

void srv_destroy(struct srv *srv)
{
	if (!srv)
		return;
	ev_loop_destroy(srv->loop);
	tnet_close(srv->net);
	free(srv->deferred);
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
