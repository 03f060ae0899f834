/*
 * daemon.h - the shell both daemons share: a libev loop watching a tnet
 * endpoint, frame checking, dispatch to the role's handler, replies.
 *
 * A request is handled to completion inside the loop; its handler answers
 * with exactly one srv_reply() or srv_reply_error(). Anything malformed is
 * answered here with an ErrorReply naming the problem, and the daemon goes
 * on serving.
 */
#ifndef TESSERA_DAEMON_H
#define TESSERA_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "tproto.h"

struct srv;

struct srv_req {
	struct srv *srv;
	struct tp_frame frame;     /* pointers into the receive buffer */
	uint64_t peer;             /* where the reply goes */
	ProtobufCMessage *msg;     /* decoded body (the opcode's request) */
	int replied;
};

struct srv_role {
	const char *name;          /* "mds" or "ios" */
	uint32_t index;
	/* Opcodes this role serves; others get -EOPNOTSUPP. */
	int (*serves)(unsigned opcode);
	/* Handle one request; must reply. */
	void (*handle)(void *ctx, struct srv_req *req);
	void *ctx;
};

struct srv_opts {
	const struct tp_config *cfg;
	const char *host, *port;   /* where to listen */
	unsigned nrecv;            /* receive buffers kept posted */
};

int srv_create(const struct srv_opts *opts, const struct srv_role *role,
	       struct srv **out, char *err, size_t errlen);
/* Run until SIGTERM/SIGINT. */
int srv_run(struct srv *srv);
void srv_destroy(struct srv *srv);

/* Reply with msg and optional raw data (copied, or taken over with
 * srv_reply_owned so a read's buffer is not copied again). */
int srv_reply(struct srv_req *req, const ProtobufCMessage *msg,
	      const void *data, size_t data_len);
int srv_reply_owned(struct srv_req *req, const ProtobufCMessage *msg,
		    void *data, size_t data_len);
int srv_reply_error(struct srv_req *req, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Log a line to stderr with time and role. */
void srv_log(struct srv *srv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Common command line: -c config -d dir -i index [-p pidfile]. */
struct srv_cmdline {
	const char *config, *dir, *pidfile;
	uint32_t index;
};
int srv_parse_cmdline(int argc, char **argv, const char *prog,
		      struct srv_cmdline *cl);
int srv_write_pidfile(const char *path);

#endif /* TESSERA_DAEMON_H */
