/*
 * session.c - the connection lifecycle above the transport: a session
 * with each daemon (docs/security.md), opened by AUTH on first use,
 * renewed before the daemon would drop it for idleness, replaced when a
 * probe finds the daemon restarted; and tc_run, which the I/O paths call:
 * sessions in place, then the request engine (engine.c) runs the
 * requests. Uses engine.c, peer.c (through it), trace.c and thread.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "client_int.h"

static void probe_answered(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr);

/*
 * Probes. A restarted daemon has lost its sessions and drops their frames
 * unanswered (answering would mean sending to an address nobody vouched
 * for), so a client would learn of it only at its timeout. Instead, a
 * request that has heard nothing from its daemon for TC_PROBE_NS (at once
 * when its send failed, or when the connection had to be made again: the
 * daemon may have restarted behind it) has an AUTH probe sent on its
 * behalf, which asks after the session the request went out on; another
 * follows after a wait that doubles while none is answered. When the
 * daemon still knows the session (and has not restarted: its boot id is
 * the same) it is merely busy: the probe's session is left to idle out,
 * and only requests whose send failed are sent again. Otherwise
 * (restarted, or the session was evicted) the probe's session replaces
 * the lost one, and every request still waiting on the lost session is
 * sealed again and resent: a write in flight across a restart completes.
 * A daemon that answers no probe for connect_timeout_ms is down (health.c):
 * the requests waiting on it fail, saying so.
 */
#define TC_PROBES_IN_FLIGHT 4

/* A probe ended (under lock): answered (fr), or failed or expired (NULL).
 * When the daemon restarted or lost the session, the probe's session
 * replaces the lost one and what waits on that is resent. */
static void probe_done(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr)
{
	if (fr)
		probe_answered(fs, p, fr);
	tc_session_of(fs, p->server)->probing--;
	tc_req_drop(fs, p);
}

/*
 * A session opened (AUTH answered with rep, under key): its id, key and
 * sealing mode, and both directions' numbers afresh (the AUTH reply was
 * the daemon's number 0). The mode is the daemon's choice, at least what
 * this client's config demands (tp_seal_mode_of): -EACCES otherwise.
 */
static int session_adopt(tessera_fs *fs, struct tc_session *ses, const Tessera__AuthReply *rep,
			 const uint8_t key[TP_KEY_SIZE])
{
	enum tp_seal_mode mode = (enum tp_seal_mode)rep->seal_mode;

	if (mode >= TP_SEAL_MODES || tp_seal_stronger(mode, tp_seal_mode_of(&fs->cfg)) != mode)
		return -EACCES;
	ses->s.id = rep->session;
	memcpy(ses->s.key, key, TP_KEY_SIZE);
	ses->s.mode = mode;
	ses->tx_seq = 0;
	memset(&ses->rx, 0, sizeof(ses->rx));
	tp_replay_accept(&ses->rx, 0);
	ses->boot = rep->boot;
	return 0;
}

static void probe_answered(tessera_fs *fs, struct tc_req *p, const struct tp_frame *fr)
{
	struct tc_session *ses = tc_session_of(fs, p->server);
	Tessera__AuthReply *rep = NULL;
	uint64_t lost = p->probe_of;

	if (fr->hdr.status == 0)
		rep = (Tessera__AuthReply *)tp_body_unpack(fr, &tessera__auth_reply__descriptor);
	if (!rep || !rep->session)
		goto out;
	ses->reconnect = 0;
	if (!rep->known || rep->boot != ses->boot) {
		/* Restarted, or it evicted the session: the probe's session is
		 * the one to use from now on (unless another replaced the lost
		 * one first), and what went out on the lost one goes again. */
		if (ses->s.id == lost) {
			if (session_adopt(fs, ses, rep, p->ses.key))
				goto out; /* a weaker seal than ours asks for: refused */
			ses->valid = 1;
			ses->used_ns = tp_mono_ns();
		}
		if (ses->valid)
			tc_req_reseal(fs, p->server, lost, TC_RESEND_ALL);
	} else {
		/* The same daemon knows it: our connection broke, not the
		 * session. Requests whose send failed go again. */
		if (ses->s.id == lost)
			ses->valid = 1;
		tc_req_reseal(fs, p->server, lost, TC_RESEND_LOST);
	}
out:
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
}

/* Send a probe to `server` asking after session `of` (under lock). */
static void send_probe(tessera_fs *fs, int server, uint64_t of, uint64_t now)
{
	struct tc_session *ses = tc_session_of(fs, server);
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	char target[32], err[256], *cred = NULL;
	uint8_t key[TP_KEY_SIZE];
	struct tc_req *p;

	ses->probe_wait_ns = ses->probe_wait_ns ? ses->probe_wait_ns * 2 : TC_PROBE_NS;
	if (ses->probe_wait_ns > TC_PROBE_MAX_NS)
		ses->probe_wait_ns = TC_PROBE_MAX_NS;
	ses->probe_next_ns = now + ses->probe_wait_ns;
	if (!ses->silent_ns)
		ses->silent_ns = now;
	if (server == TC_MDS)
		snprintf(target, sizeof(target), "mds");
	else
		snprintf(target, sizeof(target), "ios:%d", server);
	if (tp_auth_encode(fs->cfg.munge_socket, fs->cfg.daemon_uid, target, fs->name,
			   fs->name_len, key, &cred, err, sizeof(err)))
		return; /* no munged: the request waits for its timeout */
	m.credential = cred;
	m.session = of;
	m.seal_mode = tp_seal_mode_of(&fs->cfg);
	p = tc_req_new(fs, server, TP_OP_AUTH, &m.base, NULL, 0);
	free(cred);
	if (p) {
		memcpy(p->ses.key, key, TP_KEY_SIZE);
		p->probe_of = of;
	}
	sodium_memzero(key, sizeof(key));
	if (!p)
		return;
	ses->probing++;
	tc_req_start(fs, p, tc_req_deadline(fs, p, now), probe_done);
}

/* r's daemon answered no probe for connect_timeout_ms (under lock): it
 * is down (for the reason already known, else silence), and r fails. */
static void give_up(tessera_fs *fs, struct tc_req *r)
{
	char why[64], msg[200];
	int err;

	if (tc_health_state(fs, r->server) != TESSERA_SERVER_DOWN) {
		tc_health_silence(why, sizeof(why), (uint64_t)fs->cfg.connect_timeout_ms * 1000000u);
		tc_health_down(fs, r->server, -ETIMEDOUT, why);
	}
	err = tc_health_refuse(fs, r->server, msg, sizeof(msg));
	tc_req_abort(fs, r, err ? err : -EHOSTDOWN, msg);
}

/* Watch r while it waits (under lock, each round of tc_engine_run): probe
 * its daemon when r has heard nothing from it for a while, and give up
 * when the probes go unanswered. */
static void maybe_probe(tessera_fs *fs, struct tc_req *r, uint64_t now)
{
	struct tc_session *ses = tc_session_of(fs, r->server);

	/* (a WATCH waits at the daemon on purpose: its silence says nothing) */
	if (r->replied || r->done || r->queued || r->opcode == TP_OP_AUTH ||
	    r->opcode == TP_OP_WATCH)
		return;
	if (ses->heard_ns > r->submit_ns && !r->lost)
		return; /* the daemon spoke since r went out on its session */
	if (!ses->reconnect && !r->lost && now - r->submit_ns < TC_PROBE_NS)
		return;
	tc_health_suspect(fs, r->server, "waiting for an answer");
	if (ses->silent_ns && now - ses->silent_ns > (uint64_t)fs->cfg.connect_timeout_ms * 1000000u) {
		give_up(fs, r);
		return;
	}
	if (ses->probing >= TC_PROBES_IN_FLIGHT || now < ses->probe_next_ns)
		return;
	send_probe(fs, r->server, r->ses.id, now);
}

/* Open a session with `server`: a fresh MUNGE credential (for this
 * daemon only, decodable only by the daemons' uid) proposing a random
 * key; the daemon answers with the session's id, in a reply sealed with
 * that key, which proves it read the credential. Any other answer fails
 * at once with -EACCES, "... failed to prove its identity". */
static int authenticate(tessera_fs *fs, int server)
{
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	const Tessera__AuthReply *rep;
	struct tc_session *ses = tc_session_of(fs, server);
	char target[32], err[512], name[200];
	uint8_t key[TP_KEY_SIZE];
	struct tc_req *r;
	char *cred = NULL;
	uint64_t t;
	int rc;

	if (server == TC_MDS)
		snprintf(target, sizeof(target), "mds");
	else
		snprintf(target, sizeof(target), "ios:%d", server);
	tc_server_name(fs, server, name, sizeof(name));
	t = tp_mono_ns();
	rc = tp_auth_encode(fs->cfg.munge_socket, fs->cfg.daemon_uid, target, fs->name,
			    fs->name_len, key, &cred, err, sizeof(err));
	if (rc)
		return tc_fail(fs, rc, "authenticate to the %s: %s", name, err);
	tc_trace(fs, tp_mono_ns() - t, "MUNGE credential for the %s", name);
	t = tp_mono_ns();
	m.credential = cred;
	m.seal_mode = tp_seal_mode_of(&fs->cfg);
	r = tc_req_new(fs, server, TP_OP_AUTH, &m.base, NULL, 0);
	free(cred);
	if (!r) {
		sodium_memzero(key, sizeof(key));
		return tc_fail(fs, -ENOMEM, "authenticate to the %s: out of memory", name);
	}
	memcpy(r->ses.key, key, TP_KEY_SIZE);
	sodium_memzero(key, sizeof(key));
	rc = tc_engine_run(fs, &r, 1, maybe_probe);
	if (rc && r->unproven) {
		/* Not the daemon: whoever answered could not decode a
		 * credential restricted to the daemons' uid. Nothing more
		 * goes to it. */
		tc_fail(fs, -EACCES, "%s failed to prove its identity (%s; the daemons run as "
			"uid %u, daemon_uid)", name, r->errmsg, fs->cfg.daemon_uid);
		rc = -EACCES;
	} else if (rc) {
		tc_fail(fs, rc, "authenticate: %s", r->errmsg[0] ? r->errmsg : strerror(-rc));
	} else {
		rep = (const Tessera__AuthReply *)r->reply;
		pthread_mutex_lock(&fs->lock);
		rc = session_adopt(fs, ses, rep, r->ses.key);
		ses->used_ns = tp_mono_ns();
		ses->valid = !rc && rep->session != 0;
		pthread_mutex_unlock(&fs->lock);
		if (rc)
			tc_fail(fs, rc, "authenticate to the %s: it offers %s sealing, this "
				"client's config demands %s", name, tp_seal_mode_name(rep->seal_mode),
				tp_seal_mode_name(tp_seal_mode_of(&fs->cfg)));
		else
			tc_trace(fs, tp_mono_ns() - t, "AUTH with the %s (address, connection, "
				 "round trip)", name);
	}
	sodium_memzero(r->ses.key, sizeof(r->ses.key));
	tc_req_free(fs, r);
	return rc;
}

/* Daemons drop sessions idle for the config's session_idle_s; a client
 * renews its own after half of it (a daemon with another config drops it
 * earlier, and the probe finds that out). */
#define TC_SESSION_RENEW_NS(fs) ((uint64_t)(fs)->cfg.session_idle_s * 500000000ull)

/* Whether ses may seal a request now, not due for renewal (under lock). */
static int session_fresh(tessera_fs *fs, const struct tc_session *ses, uint64_t now)
{
	return ses->valid && now - ses->used_ns < TC_SESSION_RENEW_NS(fs);
}

static int session_ok(tessera_fs *fs, int server)
{
	int ok;

	pthread_mutex_lock(&fs->lock);
	ok = session_fresh(fs, tc_session_of(fs, server), tp_mono_ns());
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

/* A session with `server` (its auth_lock held): AUTH. When the daemon
 * restarted since the session it replaces (another boot id), requests
 * still waiting on that one are sealed with the new one and resent. */
static int open_session(tessera_fs *fs, int server)
{
	struct tc_session *ses = tc_session_of(fs, server);
	uint64_t old_id, old_boot;
	int rc;

	pthread_mutex_lock(&fs->lock);
	old_id = ses->s.id;
	old_boot = ses->boot;
	pthread_mutex_unlock(&fs->lock);
	rc = authenticate(fs, server);
	pthread_mutex_lock(&fs->lock);
	if (!rc) {
		ses->reconnect = 0; /* the AUTH went on the new connection */
		if (old_id && old_id != ses->s.id && old_boot != ses->boot)
			tc_req_reseal(fs, server, old_id, TC_RESEND_ALL);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Whether calls may go to `server` now: 0, or (it is down) the errno
 * they fail with and why in msg. A daemon down for a refused connection
 * is asked again at once (a refusal costs a round trip): a restarted one
 * is used by the very next call. */
static int may_call(tessera_fs *fs, int server, char *msg, size_t len)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = tc_health_refuse(fs, server, msg, len);
	pthread_mutex_unlock(&fs->lock);
	if (rc == -ECONNREFUSED && tc_peer_refused(fs, server) != -ECONNREFUSED)
		return 0;
	return rc;
}

/* A session with one server, opened on a thread of its own when several
 * are needed at once (ensure_sessions): rc, and the failure's words. */
struct auth_job {
	tessera_fs *fs;
	int server;
	int rc;
	char msg[256];
	pthread_t th;
	int threaded;
};

static void *auth_job_run(void *arg)
{
	struct auth_job *j = arg;
	struct tc_session *ses = tc_session_of(j->fs, j->server);

	pthread_mutex_lock(&ses->auth_lock);
	j->rc = session_ok(j->fs, j->server) ? 0 : open_session(j->fs, j->server);
	pthread_mutex_unlock(&ses->auth_lock);
	if (j->rc)
		snprintf(j->msg, sizeof(j->msg), "%s", tessera_errmsg(j->fs));
	/* Silence or a refusal made the daemon down: say it as every later
	 * call will ("not reachable since ..."). */
	if (j->rc == -ETIMEDOUT || j->rc == -ECONNREFUSED || j->rc == -EHOSTDOWN) {
		char msg[sizeof(j->msg)];
		int rc;

		pthread_mutex_lock(&j->fs->lock);
		rc = tc_health_refuse(j->fs, j->server, msg, sizeof(msg));
		pthread_mutex_unlock(&j->fs->lock);
		if (rc) {
			j->rc = rc;
			memcpy(j->msg, msg, sizeof(msg));
		}
	}
	return NULL;
}

/* Fail the requests to `server` among reqs (before they were sent). */
static void fail_server(struct tc_req **reqs, size_t n, int server, int rc, const char *msg)
{
	for (size_t j = 0; j < n; j++) {
		struct tc_req *r = reqs[j];

		if (r->server != server || r->replied)
			continue;
		r->replied = r->sent = 1;
		r->status = rc;
		snprintf(r->errmsg, sizeof(r->errmsg), "%s", msg);
	}
}

/* The AUTHs of jobs[0..n), at the same time when there are several (a
 * silent daemon costs connect_timeout_ms once, not once per daemon). */
static void run_auth_jobs(struct auth_job *jobs, size_t n)
{
	for (size_t i = 0; n > 1 && i < n; i++)
		jobs[i].threaded = !pthread_create(&jobs[i].th, NULL, auth_job_run, &jobs[i]);
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].threaded)
			pthread_join(jobs[i].th, NULL);
		else
			auth_job_run(&jobs[i]);
	}
}

/* Each server the requests go to is up and has a session, or those
 * requests fail with why not (at once when it is known to be down). */
static void ensure_sessions(tessera_fs *fs, struct tc_req **reqs, size_t n)
{
	struct auth_job *jobs = NULL;
	size_t n_jobs = 0;

	for (size_t i = 0; i < n; i++) {
		int server = reqs[i]->server, seen = 0;
		char msg[256];
		int rc;

		for (size_t j = 0; j < i && !seen; j++)
			seen = reqs[j]->server == server;
		if (reqs[i]->replied || seen)
			continue;
		rc = may_call(fs, server, msg, sizeof(msg));
		if (rc) {
			fail_server(reqs, n, server, rc, msg);
		} else if (!session_ok(fs, server)) {
			if (!jobs)
				jobs = calloc(n, sizeof(*jobs));
			if (!jobs) {
				fail_server(reqs, n, server, -ENOMEM, "out of memory");
				continue;
			}
			jobs[n_jobs++] = (struct auth_job){ .fs = fs, .server = server };
		}
	}
	run_auth_jobs(jobs, n_jobs);
	for (size_t i = 0; i < n_jobs; i++)
		if (jobs[i].rc)
			fail_server(reqs, n, jobs[i].server, jobs[i].rc, jobs[i].msg);
	free(jobs);
}

/*
 * The background prober: a thread per tessera_fs, started when a server
 * is found down and ended when none is. It asks each down server again
 * (a refused port: a TCP connect; else an AUTH, bounded by
 * connect_timeout_ms) when its back-off has passed (health.c: the wait
 * doubles from TC_PROBE_FIRST_NS up to TC_PROBE_MAX_NS), so that a server
 * that comes back is up again before the next call to it, with nobody
 * calling meanwhile (the mount logs the change).
 */
static void probe_down(tessera_fs *fs, int server)
{
	struct tc_session *ses = tc_session_of(fs, server);
	int rc = -ECONNREFUSED;

	pthread_mutex_lock(&fs->lock);
	if (tc_health_refuse(fs, server, NULL, 0) != -ECONNREFUSED)
		rc = 0;
	pthread_mutex_unlock(&fs->lock);
	if (!rc || tc_peer_refused(fs, server) != -ECONNREFUSED) {
		pthread_mutex_lock(&ses->auth_lock);
		rc = open_session(fs, server);
		pthread_mutex_unlock(&ses->auth_lock);
	}
	pthread_mutex_lock(&fs->lock);
	if (rc)
		tc_health_backoff(fs, server);
	pthread_mutex_unlock(&fs->lock);
	tc_health_notify(fs);
}

static void *prober_main(void *arg)
{
	tessera_fs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	while (!fs->prober_stop) {
		uint64_t now = tp_mono_ns(), next;
		int due = tc_health_due(fs, now, &next);
		struct timespec ts;

		if (due != TC_NO_SERVER) {
			pthread_mutex_unlock(&fs->lock);
			probe_down(fs, due);
			pthread_mutex_lock(&fs->lock);
			continue;
		}
		if (next == UINT64_MAX)
			break; /* nothing down */
		ts = tp_real_deadline((int)((next - now) / 1000000u) + 1);
		pthread_cond_timedwait(&fs->prober_cond, &fs->lock, &ts);
	}
	fs->prober_on = 0;
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

/* Start the prober if a server is down and it is not running. */
static void prober_kick(tessera_fs *fs)
{
	uint64_t next;
	int start;

	pthread_mutex_lock(&fs->lock);
	start = !fs->prober_on && !fs->prober_stop &&
		(tc_health_due(fs, tp_mono_ns(), &next) != TC_NO_SERVER || next != UINT64_MAX);
	if (start && fs->prober_made) {
		/* the last one has ended (prober_on is 0): collect it */
		pthread_t old = fs->prober;

		fs->prober_made = 0;
		pthread_mutex_unlock(&fs->lock);
		pthread_join(old, NULL);
		pthread_mutex_lock(&fs->lock);
		start = !fs->prober_on && !fs->prober_stop;
	}
	if (start && !pthread_create(&fs->prober, NULL, prober_main, fs))
		fs->prober_on = fs->prober_made = 1;
	pthread_mutex_unlock(&fs->lock);
}

void tc_prober_stop(tessera_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->prober_stop = 1;
	pthread_cond_broadcast(&fs->prober_cond);
	pthread_mutex_unlock(&fs->lock);
	if (fs->prober_made)
		pthread_join(fs->prober, NULL);
	fs->prober_made = 0;
}

int tc_run(tessera_fs *fs, struct tc_req **reqs, size_t n)
{
	uint64_t t;
	int rc;

	ensure_sessions(fs, reqs, n);
	t = tp_mono_ns();
	rc = tc_engine_run(fs, reqs, n, maybe_probe);
	tc_vers_note_replies(fs, reqs, n);
	tc_trace_request(fs, reqs, n, t);
	tc_health_notify(fs);
	prober_kick(fs);
	return rc;
}

/* A request sent behind ended (under lock): answered, refused, or past
 * its deadline. Nobody is told (it was best effort) but the request
 * trace, which counts it as any other. */
static void behind_done(tessera_fs *fs, struct tc_req *r, const struct tp_frame *fr)
{
	r->done_ns = tp_mono_ns();
	r->status = !fr ? -ETIMEDOUT : fr->hdr.status < 0 ? fr->hdr.status : 0;
	tc_trace_request(fs, &r, 1, r->submit_ns);
	fs->n_behind--;
	tc_req_drop(fs, r);
}

int tc_call_behind(tessera_fs *fs, struct tc_req *req)
{
	const struct tc_session *ses = tc_session_of(fs, req->server);
	uint64_t now = tp_mono_ns();
	int rc = -EAGAIN;

	pthread_mutex_lock(&fs->lock);
	/* (a session about to be renewed is left to tc_call, which renews it) */
	if (session_fresh(fs, ses, now) && fs->n_behind < TC_BEHIND_MAX) {
		fs->n_behind++;
		tc_req_start(fs, req, tc_req_deadline(fs, req, now), behind_done);
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

void tc_behind_drain(tessera_fs *fs)
{
	tc_engine_settle_detached(fs, &fs->n_behind);
}

int tc_call(tessera_fs *fs, struct tc_req *req, const char *what)
{
	int rc;

	if (!req)
		return tc_fail(fs, -ENOMEM, "%s: out of memory", what);
	rc = tc_run(fs, &req, 1);
	if (rc)
		tc_req_fail(fs, req, what);
	return rc;
}
