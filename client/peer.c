/*
 * peer.c - the connection lifecycle at the transport: a daemon's address
 * is resolved on first use (the provider connects on the first send to
 * it) and forgotten after a transport failure or a timeout, so that the
 * next request connects afresh (docs/design.md, "Bulk data path": forgetting a peer
 * is also how a request's lent memory is reclaimed from a daemon that
 * never completes its transfers, see engine.c). Used by the request engine
 * (engine.c) and nothing else; uses only trace.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"

/* How long tc_peer_refused waits for the kernel's answer: a refusal comes
 * within a round trip; silence is not a refusal (the caller waits for its
 * own timeout then). */
#define TC_REFUSED_WAIT_MS 20

/* Where server's address and whether it is known live in fs. */
static void peer_slot(tessera_fs *fs, int server, int **known, uint64_t **addr)
{
	*known = server == TC_MDS ? &fs->mds_known : &fs->ios_known[server];
	*addr = server == TC_MDS ? &fs->peer_mds : &fs->peer_ios[server];
}

int tc_peer_resolve(tessera_fs *fs, int server, uint64_t *peer)
{
	const struct tp_server *s = server == TC_MDS ? &fs->cfg.mds : &fs->cfg.ios[server];
	uint64_t *p;
	int *known;
	int rc;

	peer_slot(fs, server, &known, &p);
	if (!*known) {
		uint64_t t = tp_mono_ns();

		rc = tnet_lookup(fs->net, s->host, s->port, p);
		if (rc)
			return rc;
		*known = 1;
		tc_trace(fs, tp_mono_ns() - t, "address of %s:%s", s->host, s->port);
	}
	*peer = *p;
	return 0;
}

void tc_peer_forget(tessera_fs *fs, int server)
{
	uint64_t *p;
	int *known;

	peer_slot(fs, server, &known, &p);
	tc_session_of(fs, server)->valid = 0;
	if (*known) {
		tnet_forget(fs->net, *p);
		*known = 0;
	}
}

/* One connect() to addr: -ECONNREFUSED or 0. */
static int connect_refused(const struct addrinfo *ai)
{
	struct pollfd pfd;
	int fd, err = 0, rc = 0;
	socklen_t len = sizeof(err);

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
	if (fd < 0)
		return 0;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno == ECONNREFUSED) {
			rc = -ECONNREFUSED;
		} else if (errno == EINPROGRESS) {
			pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
			if (poll(&pfd, 1, TC_REFUSED_WAIT_MS) == 1 &&
			    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && err == ECONNREFUSED)
				rc = -ECONNREFUSED;
		}
	}
	close(fd);
	return rc;
}

int tc_peer_refused(tessera_fs *fs, int server)
{
	const struct tp_server *s = server == TC_MDS ? &fs->cfg.mds : &fs->cfg.ios[server];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai;
	int rc;

	if (!strstr(fs->cfg.provider, "tcp"))
		return 0;
	if (getaddrinfo(s->host, s->port, &hints, &ai))
		return 0;
	rc = connect_refused(ai);
	freeaddrinfo(ai);
	return rc;
}
