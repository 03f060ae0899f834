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

#include "client_int.h"

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
