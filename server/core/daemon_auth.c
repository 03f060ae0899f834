/*
 * daemon_auth.c - AUTH, the one request a daemon takes without a session:
 * munged's credential says who asks and where replies go, and a session
 * (session.h) is opened for it. A frame nobody vouches for is dropped
 * unanswered and counted.
 *
 * Ownership: the session key copied into a request's identity is wiped
 * before srv_auth returns; the session table keeps its own copy.
 */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "daemon_int.h"
#include "session.h"

/* A frame nobody vouches for is dropped: answering it would send to an
 * address it merely claims. Logged at most once a second. */
void srv_unauthenticated(struct srv *srv, const char *why)
{
	double now = tp_mono_s();

	srv->count.unauthenticated++;
	if (now - srv->unauth_logged_at < 1.0)
		return;
	srv_warn(srv, "dropped %llu unauthenticated frame(s) (last: %s)",
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
void srv_auth(struct srv *srv, struct srv_req *req)
{
	Tessera__AuthRequest *m = (Tessera__AuthRequest *)
		tp_body_unpack(&req->frame, &tessera__auth_request__descriptor);
	Tessera__AuthReply rep = TESSERA__AUTH_REPLY__INIT;
	struct tp_auth_id id;
	struct srv_session *ses;
	char err[256];
	int rc;

	if (!m || !m->credential || !*m->credential) {
		srv_unauthenticated(srv, "AUTH without a credential");
		goto out;
	}
	rc = tp_auth_decode(srv->cfg->munge_socket, m->credential, srv->target, &id, err,
			    sizeof(err));
	if (rc) {
		srv_unauthenticated(srv, err); /* logged at most once a second: a flood costs no log */
		goto out;
	}
	/* Answers go on the connection that carried the AUTH when the
	 * transport knows it (connected mode), else to the credential's
	 * address (rxm: docs/security.md, "Connection takeover"). */
	if (req->src != TNET_PEER_UNKNOWN)
		req->peer = req->src;
	else if (tnet_insert_name(srv->net, id.addr, id.addr_len, &req->peer)) {
		srv_warn(srv, "AUTH of uid %u: its address is unusable", id.uid);
		goto out;
	}
	memset(&req->ident, 0, sizeof(req->ident));
	req->ident.uid = id.uid;
	req->ident.gid = id.gid;
	memcpy(req->ident.key, id.key, TP_KEY_SIZE);
	sodium_memzero(id.key, sizeof(id.key));
	ident_groups(&req->ident);
	if (srv_admit(srv, req))
		goto out;
	rc = srv_session_add(srv->sessions, &req->ident, req->peer, tp_mono_s(), &ses);
	if (rc) {
		srv_reply_error(req, rc, "AUTH of uid %u: %u sessions are open, the limit",
				req->ident.uid, srv_sessions_count(srv->sessions));
		goto out;
	}
	/* A probe asks after a session it holds (evicted, or lost in a
	 * restart?); only about its own uid's. */
	if (m->session) {
		struct srv_session *old = srv_session_find(srv->sessions, m->session);

		/* On a connected transport, a session of another connection is
		 * lost to this one: the client must take the new session. */
		rep.known = old && old->ident.uid == req->ident.uid &&
			    (req->src == TNET_PEER_UNKNOWN || old->peer == req->src);
	}
	rep.session = req->ident.session;
	rep.uid = req->ident.uid;
	rep.gid = req->ident.gid;
	rep.boot = srv->boot;
	srv_reply(req, &rep.base, NULL, 0);
	srv_debug(srv, "session %016llx opened for uid %u gid %u (%u open)",
		  (unsigned long long)req->ident.session, req->ident.uid, req->ident.gid,
		  srv_sessions_count(srv->sessions));
out:
	sodium_memzero(req->ident.key, sizeof(req->ident.key));
	if (m)
		protobuf_c_message_free_unpacked(&m->base, NULL);
}
