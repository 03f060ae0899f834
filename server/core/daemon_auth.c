/*
 * daemon_auth.c - AUTH, the one request a daemon takes without a session:
 * munged's credential says who asks and where replies go, and a session
 * (session.h) is opened for it. A frame nobody vouches for is dropped
 * unanswered and counted.
 *
 * Ownership: the session key copied into a request's identity is wiped
 * before srv_auth returns; the session table keeps its own copy.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "daemon_int.h"
#include "session.h"

int srv_check_daemon_uid(const struct tp_config *cfg, char *err, size_t errlen)
{
	uid_t euid = geteuid();

	if ((uint32_t)euid == cfg->daemon_uid)
		return 0;
	snprintf(err, errlen, "runs as uid %u, but the config says daemon_uid = %u: clients "
		 "restrict their credentials to that uid, so this daemon could read none (run it "
		 "as uid %u, or give daemon_uid the daemons' uid everywhere)", (unsigned)euid,
		 cfg->daemon_uid, cfg->daemon_uid);
	return -EPERM;
}

/* ------------------------------------------------------------ admin hosts
 *
 * Root of one node is not root everywhere: every node's root holds the
 * MUNGE key, so uid 0 in a credential says only "root of the host that
 * encoded it". munged records that host's address (its origin), and a
 * uid-0 session is root of the file system only when the origin is an
 * admin host. The origin is IPv4 (MUNGE_OPT_ADDR4); an admin host named
 * by an IPv6 address alone never matches.
 */
static int is_loopback(uint32_t a)
{
	return (ntohl(a) >> 24) == 127;
}

static void admins_add(struct srv_admins *ad, uint32_t a)
{
	for (unsigned i = 0; i < ad->n; i++)
		if (ad->addr[i] == a)
			return;
	if (ad->n < SRV_ADMIN_MAX)
		ad->addr[ad->n++] = a;
}

/* This host's own IPv4 addresses: what a loopback daemon host stands for. */
static void admins_add_local(struct srv_admins *ad)
{
	struct ifaddrs *ifs, *i;

	ad->loopback = 1;
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			admins_add(ad, ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
	freeifaddrs(ifs);
}

static void admins_add_host(struct srv *srv, const char *host)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *res, *r;
	int rc = getaddrinfo(host, NULL, &hints, &res);

	if (rc) {
		srv_warn(srv, "admin host %s: %s; uid 0 from it is not root here", host,
			 gai_strerror(rc));
		return;
	}
	for (r = res; r; r = r->ai_next) {
		uint32_t a = ((struct sockaddr_in *)r->ai_addr)->sin_addr.s_addr;

		if (is_loopback(a))
			admins_add_local(&srv->admins);
		else
			admins_add(&srv->admins, a);
	}
	freeaddrinfo(res);
}

void srv_admins_load(struct srv *srv)
{
	const struct tp_config *cfg = srv->cfg;
	char word[256];
	size_t n = 0;

	memset(&srv->admins, 0, sizeof(srv->admins));
	if (!cfg->admin_hosts[0]) { /* default: the daemons' hosts */
		admins_add_host(srv, cfg->mds.host);
		for (uint32_t i = 0; i < cfg->n_ios; i++)
			admins_add_host(srv, cfg->ios[i].host);
		return;
	}
	for (const char *p = cfg->admin_hosts;; p++) {
		if (*p && *p != ',' && !isspace((unsigned char)*p)) {
			if (n < sizeof(word) - 1)
				word[n++] = *p;
			continue;
		}
		if (n) {
			word[n] = '\0';
			admins_add_host(srv, word);
			n = 0;
		}
		if (!*p)
			break;
	}
}

static int is_admin_origin(const struct srv_admins *ad, const uint8_t origin4[4])
{
	uint32_t a;

	memcpy(&a, origin4, sizeof(a));
	if (!a)
		return 0; /* munged knew no address of its own */
	if (ad->loopback && is_loopback(a))
		return 1;
	for (unsigned i = 0; i < ad->n; i++)
		if (ad->addr[i] == a)
			return 1;
	return 0;
}

/* A uid-0 session from a host that is not an admin host: logged once per
 * host (a bounded list; past it, not again). */
static void log_foreign_root(struct srv *srv, const uint8_t origin4[4])
{
	struct srv_admins *ad = &srv->admins;
	char host[INET_ADDRSTRLEN];
	uint32_t a;

	memcpy(&a, origin4, sizeof(a));
	for (unsigned i = 0; i < ad->n_logged; i++)
		if (ad->logged[i] == a)
			return;
	if (ad->n_logged == SRV_SQUASH_LOGGED)
		return;
	ad->logged[ad->n_logged++] = a;
	inet_ntop(AF_INET, origin4, host, sizeof(host));
	srv_warn(srv, "uid 0 of host %s is not root here: %s is not an admin host (admin_hosts); "
		 "its sessions act as uid %u for themselves and get no admin capability",
		 host, a ? host : "an unknown origin (munged --origin)", srv->cfg->squash_uid);
}

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

/* AUTH once the credential decoded as `id`: a session replying to the
 * credential's address (or the connection), answered with its id. Where
 * the fuzz target enters (srv_local_auth): everything past munged. */
static void auth_open(struct srv *srv, struct srv_req *req, const Tessera__AuthRequest *m,
		      struct tp_auth_id *id)
{
	Tessera__AuthReply rep = TESSERA__AUTH_REPLY__INIT;
	struct srv_session *ses;
	int rc;

	/* Answers go on the connection that carried the AUTH when the
	 * transport knows it (connected mode), else to the credential's
	 * address (rxm: docs/security.md, "Connection takeover"). In-process,
	 * to whoever delivered the frame. */
	if (!srv->net)
		req->peer = srv->local_peer;
	else if (req->src != TNET_PEER_UNKNOWN)
		req->peer = req->src;
	else if (tnet_insert_name(srv->net, id->addr, id->addr_len, &req->peer)) {
		srv_warn(srv, "AUTH of uid %u: its address is unusable", id->uid);
		return;
	}
	memset(&req->ident, 0, sizeof(req->ident));
	req->ident.uid = id->uid;
	req->ident.gid = id->gid;
	memcpy(req->ident.key, id->key, TP_KEY_SIZE);
	ident_groups(&req->ident);
	memcpy(req->ident.origin4, id->origin4, sizeof(id->origin4));
	if (id->uid == 0 && !is_admin_origin(&srv->admins, id->origin4)) {
		req->ident.foreign_root = 1;
		log_foreign_root(srv, id->origin4);
	}
	if (srv_admit(srv, req))
		return;
	rc = srv_session_add(srv->sessions, &req->ident, req->peer, tp_mono_s(), &ses);
	if (rc) {
		srv_reply_error(req, rc, "AUTH of uid %u: daemon %s has no room for a session "
				"(%u open of sessions_max): %s", req->ident.uid, srv->target,
				srv_sessions_count(srv->sessions), strerror(-rc));
		return;
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
	/* The stronger of the daemon's mode and the client's demand; said
	 * in the reply, whose seal the client checks. */
	ses->mode = tp_seal_stronger(tp_seal_mode_of(srv->cfg), (enum tp_seal_mode)m->seal_mode);
	rep.seal_mode = ses->mode;
	rep.session = req->ident.session;
	rep.uid = req->ident.uid;
	rep.gid = req->ident.gid;
	rep.boot = srv->boot;
	srv_reply(req, &rep.base, NULL, 0);
	srv_debug(srv, "session %016llx opened for uid %u gid %u (%u open)",
		  (unsigned long long)req->ident.session, req->ident.uid, req->ident.gid,
		  srv_sessions_count(srv->sessions));
}

/* AUTH: decode the credential (munged says who), then auth_open. A
 * credential that does not decode gets no answer: there is no address
 * anyone vouched for. */
void srv_auth(struct srv *srv, struct srv_req *req)
{
	Tessera__AuthRequest *m = (Tessera__AuthRequest *)
		tp_body_unpack(&req->frame, &tessera__auth_request__descriptor);
	struct tp_auth_id id;
	char err[256];
	int rc;

	if (!m || !m->credential || !*m->credential) {
		srv_unauthenticated(srv, "AUTH without a credential");
		goto out;
	}
	if (srv->local_decode)
		rc = srv->local_decode(srv->local_decode_arg, m->credential, srv->target, &id,
				       err, sizeof(err));
	else
		rc = tp_auth_decode(srv->cfg->munge_socket, m->credential, srv->target, &id,
				    err, sizeof(err));
	if (rc) {
		srv_unauthenticated(srv, err); /* logged at most once a second: a flood costs no log */
		goto out;
	}
	auth_open(srv, req, m, &id);
out:
	sodium_memzero(&id, sizeof(id));
	sodium_memzero(req->ident.key, sizeof(req->ident.key));
	if (m)
		protobuf_c_message_free_unpacked(&m->base, NULL);
}
