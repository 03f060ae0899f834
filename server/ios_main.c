/* ios_main.c - tessera-ios, the storage daemon. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios.h"

static int ios_serves(unsigned op)
{
	switch (op) {
	case TP_OP_PING: case TP_OP_WRITE: case TP_OP_READ: case TP_OP_GETSIZE:
	case TP_OP_TRUNCATE: case TP_OP_REMOVE: case TP_OP_SYNC: case TP_OP_IOS_STATFS:
	case TP_OP_IOS_STATS: case TP_OP_LIST_WRITE: case TP_OP_LIST_READ:
	case TP_OP_DTYPE_WRITE: case TP_OP_DTYPE_READ:
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

static void do_handles(struct ios *ios, struct srv_req *req)
{
	Tessera__HandlesRequest *h = (Tessera__HandlesRequest *)req->msg;
	unsigned op = req->frame.hdr.opcode;
	const char *what = tp_opcode_name(op);
	uint64_t *sizes = NULL;
	int64_t *mtimes = NULL;
	int rc = 0;

	if (op == TP_OP_GETSIZE && (!(sizes = calloc(h->n_handles + 1, sizeof(*sizes))) ||
				    !(mtimes = calloc(h->n_handles + 1, sizeof(*mtimes))))) {
		free(sizes);
		srv_reply_error(req, -ENOMEM, "getsize: no memory");
		return;
	}
	for (size_t i = 0; i < h->n_handles; i++) {
		if (op == TP_OP_GETSIZE)
			rc = ios_size(ios->store, h->handles[i], &sizes[i], &mtimes[i]);
		else if (op == TP_OP_REMOVE)
			rc = ios_remove(ios->store, h->handles[i]);
		else if (!(rc = ios_sync(ios->store, h->handles[i])))
			ios->stats.syncs++;
		if (rc) {
			srv_reply_error(req, rc, "%s object %016" PRIx64 ": %s", what,
					h->handles[i], strerror(-rc));
			free(sizes);
			free(mtimes);
			return;
		}
	}
	if (op == TP_OP_GETSIZE) {
		Tessera__SizesReply rep = TESSERA__SIZES_REPLY__INIT;

		rep.n_sizes = rep.n_mtimes_ns = h->n_handles;
		rep.sizes = sizes;
		rep.mtimes_ns = mtimes;
		srv_reply(req, &rep.base, NULL, 0);
	} else {
		Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;

		srv_reply(req, &rep.base, NULL, 0);
	}
	free(sizes);
	free(mtimes);
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
	case TP_OP_WRITE: ios_do_write(ios, req); break;
	case TP_OP_READ: ios_do_read(ios, req); break;
	case TP_OP_LIST_WRITE: case TP_OP_LIST_READ: ios_do_list(ios, req); break;
	case TP_OP_DTYPE_WRITE: case TP_OP_DTYPE_READ: ios_do_dtype(ios, req); break;
	case TP_OP_IOS_STATS: ios_do_stats(ios, req); break;
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
	ios_descs_clear(&ios);
	ios_store_close(ios.store);
	return 0;
}
