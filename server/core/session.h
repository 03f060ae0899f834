/*
 * session.h - the sessions a daemon has opened (AUTH), found by id.
 *
 * A session is an identity munged vouched for, the key its frames are
 * sealed with (and the mode, the numbers sent and received: seal.c), and
 * the transport address its replies go to. The table is
 * bounded: at most `max` sessions, at most `per_uid` of one uid (a uid
 * past it loses its own least recently used session, so one user's flood
 * of AUTH costs nobody else), and a session idle for `idle_s` is dropped
 * (its client authenticates again). When the table is full of sessions
 * in use (many uids, each within its share), the uid holding the most
 * loses its least recently used one: root, the daemons' uid and a uid
 * new to the daemon always get in.
 */
#ifndef TESSERA_SESSION_H
#define TESSERA_SESSION_H

#include "daemon.h"

struct srv_sessions;

#define SRV_SESSION_HELD 64 /* frames of one session checked at once off the loop */

struct srv_session {
	struct srv_ident ident;
	uint64_t peer;             /* transport address of the credential's name */
	enum tp_seal_mode mode;    /* how its frames are sealed (AUTH settles it) */
	uint64_t tx_seq;           /* the next reply's sequence number (AUTH's: 0) */
	struct tp_replay rx;       /* the requests' numbers accepted */
	/* Numbers of frames whose tags are being checked off the loop
	 * (daemon.h, srv_seal_check): neither accepted nor free. */
	uint64_t held[SRV_SESSION_HELD];
	unsigned n_held;
	double last_used;          /* monotonic seconds */
	struct srv_session *hnext;
};

int srv_sessions_create(unsigned max, unsigned per_uid, double idle_s,
			struct srv_sessions **out);
/* Ends every session without telling the end hook (the daemon stops). */
void srv_sessions_destroy(struct srv_sessions *t);
/* fn(arg, id) is told of each session that ends while the daemon runs:
 * expired, evicted to make room, or dropped with its peer. */
void srv_sessions_on_end(struct srv_sessions *t, void (*fn)(void *arg, uint64_t id), void *arg);
/* Add a session for `ident` (whose session id this fills in, random and
 * unique) replying to `peer`, making room as said above; -ENOMEM. */
int srv_session_add(struct srv_sessions *t, struct srv_ident *ident, uint64_t peer,
		    double now, struct srv_session **out);
struct srv_session *srv_session_find(struct srv_sessions *t, uint64_t id);
/* Drop sessions idle for longer than the limit. */
void srv_sessions_expire(struct srv_sessions *t, double now);
/* Drop the sessions replying to `peer` (its address is being forgotten). */
void srv_sessions_drop_peer(struct srv_sessions *t, uint64_t peer);
unsigned srv_sessions_count(const struct srv_sessions *t);
unsigned srv_sessions_of_uid(struct srv_sessions *t, uint32_t uid);

#endif /* TESSERA_SESSION_H */
