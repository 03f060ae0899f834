/* ios_main.c - tessera-ios, the storage daemon. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "ios_store.h"

struct ios {
	struct ios_store *store;
	const struct tp_config *cfg;
	uint32_t index;
};

static int ios_serves(unsigned op)
{
	switch (op) {
	case TP_OP_PING: case TP_OP_WRITE: case TP_OP_READ: case TP_OP_GETSIZE:
	case TP_OP_TRUNCATE: case TP_OP_REMOVE: case TP_OP_SYNC: case TP_OP_IOS_STATFS:
		return 1;
	default:
		return 0;
	}
}

static void do_ping(struct ios *ios, struct srv_req *req)
{
	Tessera__PingReply rep = TESSERA__PING_REPLY__INIT;

	rep.role = "ios";
	rep.index = ios->index;
	rep.version = TP_VERSION_STRING;
	srv_reply(req, &rep.base, NULL, 0);
}

static void do_write(struct ios *ios, struct srv_req *req)
{
	Tessera__WriteRequest *w = (Tessera__WriteRequest *)req->msg;
	Tessera__WriteReply rep = TESSERA__WRITE_REPLY__INIT;
	ssize_t n = ios_write(ios->store, w->handle, w->offset, req->frame.data,
			      req->frame.hdr.data_len);

	if (n < 0) {
		srv_reply_error(req, (int)n, "write object %016" PRIx64 " at %" PRIu64 ": %s",
				w->handle, w->offset, strerror((int)-n));
		return;
	}
	rep.written = (uint64_t)n;
	srv_reply(req, &rep.base, NULL, 0);
}

static void do_read(struct ios *ios, struct srv_req *req)
{
	Tessera__ReadRequest *r = (Tessera__ReadRequest *)req->msg;
	Tessera__ReadReply rep = TESSERA__READ_REPLY__INIT;
	uint64_t objsize;
	void *buf;
	ssize_t n;

	if (r->length > ios->cfg->max_io) {
		srv_reply_error(req, -EMSGSIZE, "read object %016" PRIx64 ": %" PRIu64
				" bytes exceed max_io %u", r->handle, r->length, ios->cfg->max_io);
		return;
	}
	buf = malloc(r->length ? r->length : 1);
	if (!buf) {
		srv_reply_error(req, -ENOMEM, "read object %016" PRIx64 ": no memory", r->handle);
		return;
	}
	n = ios_read(ios->store, r->handle, r->offset, buf, r->length, &objsize);
	if (n < 0) {
		free(buf);
		srv_reply_error(req, (int)n, "read object %016" PRIx64 " at %" PRIu64 ": %s",
				r->handle, r->offset, strerror((int)-n));
		return;
	}
	rep.object_size = objsize;
	srv_reply_owned(req, &rep.base, buf, (size_t)n);
}

static void do_handles(struct ios *ios, struct srv_req *req)
{
	Tessera__HandlesRequest *h = (Tessera__HandlesRequest *)req->msg;
	unsigned op = req->frame.hdr.opcode;
	const char *what = tp_opcode_name(op);
	uint64_t *sizes = NULL;
	int rc = 0;

	if (op == TP_OP_GETSIZE && !(sizes = calloc(h->n_handles + 1, sizeof(*sizes)))) {
		srv_reply_error(req, -ENOMEM, "getsize: no memory");
		return;
	}
	for (size_t i = 0; i < h->n_handles; i++) {
		if (op == TP_OP_GETSIZE)
			rc = ios_size(ios->store, h->handles[i], &sizes[i]);
		else if (op == TP_OP_REMOVE)
			rc = ios_remove(ios->store, h->handles[i]);
		else
			rc = ios_sync(ios->store, h->handles[i]);
		if (rc) {
			srv_reply_error(req, rc, "%s object %016" PRIx64 ": %s", what,
					h->handles[i], strerror(-rc));
			free(sizes);
			return;
		}
	}
	if (op == TP_OP_GETSIZE) {
		Tessera__SizesReply rep = TESSERA__SIZES_REPLY__INIT;

		rep.n_sizes = h->n_handles;
		rep.sizes = sizes;
		srv_reply(req, &rep.base, NULL, 0);
	} else {
		Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;

		srv_reply(req, &rep.base, NULL, 0);
	}
	free(sizes);
}

static void do_truncate(struct ios *ios, struct srv_req *req)
{
	Tessera__TruncateRequest *t = (Tessera__TruncateRequest *)req->msg;
	Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;
	int rc = ios_truncate(ios->store, t->handle, t->size);

	if (rc)
		srv_reply_error(req, rc, "truncate object %016" PRIx64 " to %" PRIu64 ": %s",
				t->handle, t->size, strerror(-rc));
	else
		srv_reply(req, &rep.base, NULL, 0);
}

static void do_statfs(struct ios *ios, struct srv_req *req)
{
	Tessera__StatfsReply rep = TESSERA__STATFS_REPLY__INIT;
	int rc = ios_statfs(ios->store, &rep.bytes_total, &rep.bytes_free);

	if (rc)
		srv_reply_error(req, rc, "statfs: %s", strerror(-rc));
	else
		srv_reply(req, &rep.base, NULL, 0);
}

static void ios_handle(void *ctx, struct srv_req *req)
{
	struct ios *ios = ctx;

	switch (req->frame.hdr.opcode) {
	case TP_OP_PING: do_ping(ios, req); break;
	case TP_OP_WRITE: do_write(ios, req); break;
	case TP_OP_READ: do_read(ios, req); break;
	case TP_OP_TRUNCATE: do_truncate(ios, req); break;
	case TP_OP_IOS_STATFS: do_statfs(ios, req); break;
	default: do_handles(ios, req); break;
	}
}

int main(int argc, char **argv)
{
	struct srv_cmdline cl;
	struct tp_config cfg;
	struct ios ios = { 0 };
	struct srv *srv = NULL;
	char err[512], *msg = NULL;
	int rc;

	if (srv_parse_cmdline(argc, argv, "tessera-ios", &cl))
		return 2;
	if (tp_config_load(cl.config, &cfg, err, sizeof(err))) {
		fprintf(stderr, "tessera-ios: %s\n", err);
		return 1;
	}
	if (cl.index >= cfg.n_ios) {
		fprintf(stderr, "tessera-ios: index %u, but %s lists %u storage daemons\n",
			cl.index, cl.config, cfg.n_ios);
		return 1;
	}
	ios.cfg = &cfg;
	ios.index = cl.index;
	if ((rc = ios_store_open(cl.dir, 256, &ios.store, &msg))) {
		fprintf(stderr, "tessera-ios: %s\n", msg ? msg : strerror(-rc));
		free(msg);
		return 1;
	}
	struct srv_role role = { "ios", cl.index, ios_serves, ios_handle, &ios };
	struct srv_opts so = { &cfg, cfg.ios[cl.index].host, cfg.ios[cl.index].port, 32 };

	if ((rc = srv_create(&so, &role, &srv, err, sizeof(err)))) {
		fprintf(stderr, "tessera-ios %u: listen on %s:%s: %s\n", cl.index,
			so.host, so.port, err);
		ios_store_close(ios.store);
		return 1;
	}
	if ((rc = srv_write_pidfile(cl.pidfile)))
		fprintf(stderr, "tessera-ios: pid file %s: %s\n", cl.pidfile, strerror(-rc));
	srv_run(srv);
	srv_destroy(srv);
	ios_store_close(ios.store);
	return 0;
}
