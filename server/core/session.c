/*
 * session.c - the daemon's session table (session.h): a hash of sessions
 * by their random id, bounded in count, per uid and in idle time, with a
 * count of each uid's sessions (so a full table knows who holds the most).
 *
 * Eviction scans the table (at most `max` entries, 16,384 by default):
 * an AUTH costs a munged round trip anyway, and expiry runs once a second.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "session.h"

#define SESS_BUCKETS 4096 /* power of 2 */
#define UID_BUCKETS 256   /* power of 2 */

/* How many sessions one uid holds (an entry exists while it holds one). */
struct uid_count {
	uint32_t uid;
	unsigned n;
	struct uid_count *next;
};

struct srv_sessions {
	struct srv_session *buckets[SESS_BUCKETS];
	struct uid_count *uids[UID_BUCKETS];
	unsigned n, max, per_uid;
	double idle_s;
	void (*on_end)(void *arg, uint64_t id); /* srv_sessions_on_end; NULL: none */
	void *on_end_arg;
};

static struct uid_count **uid_slot(struct srv_sessions *t, uint32_t uid)
{
	struct uid_count **pp = &t->uids[(uid * 2654435761u) >> 24 & (UID_BUCKETS - 1)];

	while (*pp && (*pp)->uid != uid)
		pp = &(*pp)->next;
	return pp;
}

unsigned srv_sessions_of_uid(struct srv_sessions *t, uint32_t uid)
{
	struct uid_count *c = *uid_slot(t, uid);

	return c ? c->n : 0;
}

/* One more (delta 1) or one fewer (-1) session of uid; -ENOMEM. */
static int uid_add(struct srv_sessions *t, uint32_t uid, int delta)
{
	struct uid_count **pp = uid_slot(t, uid), *c = *pp;

	if (!c) {
		if (delta < 0 || !(c = calloc(1, sizeof(*c))))
			return -ENOMEM;
		c->uid = uid;
		*pp = c;
	}
	c->n += (unsigned)delta;
	if (!c->n) {
		*pp = c->next;
		free(c);
	}
	return 0;
}

/* The uid holding the most sessions (asked only of a full table). */
static uint32_t uid_most(struct srv_sessions *t)
{
	const struct uid_count *best = NULL;

	for (unsigned b = 0; b < UID_BUCKETS; b++)
		for (const struct uid_count *c = t->uids[b]; c; c = c->next)
			if (!best || c->n > best->n)
				best = c;
	return best ? best->uid : 0;
}

static unsigned bucket(uint64_t id)
{
	return (unsigned)(id & (SESS_BUCKETS - 1)); /* ids are random */
}

int srv_sessions_create(unsigned max, unsigned per_uid, double idle_s,
			struct srv_sessions **out)
{
	struct srv_sessions *t;

	if (sodium_init() < 0)
		return -EIO;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->max = max;
	t->per_uid = per_uid;
	t->idle_s = idle_s;
	*out = t;
	return 0;
}

static void unlink_free(struct srv_sessions *t, struct srv_session **pp)
{
	struct srv_session *s = *pp;

	*pp = s->hnext;
	if (t->on_end)
		t->on_end(t->on_end_arg, s->ident.session);
	uid_add(t, s->ident.uid, -1);
	sodium_memzero(s->ident.key, sizeof(s->ident.key));
	free(s);
	t->n--;
}

void srv_sessions_destroy(struct srv_sessions *t)
{
	if (!t)
		return;
	t->on_end = NULL;
	for (unsigned b = 0; b < SESS_BUCKETS; b++)
		while (t->buckets[b])
			unlink_free(t, &t->buckets[b]);
	free(t); /* the uid counts went with their last sessions */
}

void srv_sessions_on_end(struct srv_sessions *t, void (*fn)(void *arg, uint64_t id), void *arg)
{
	t->on_end = fn;
	t->on_end_arg = arg;
}

struct srv_session *srv_session_find(struct srv_sessions *t, uint64_t id)
{
	for (struct srv_session *s = t->buckets[bucket(id)]; s; s = s->hnext)
		if (s->ident.session == id)
			return s;
	return NULL;
}

void srv_sessions_expire(struct srv_sessions *t, double now)
{
	for (unsigned b = 0; b < SESS_BUCKETS; b++)
		for (struct srv_session **pp = &t->buckets[b]; *pp;)
			if (now - (*pp)->last_used > t->idle_s)
				unlink_free(t, pp);
			else
				pp = &(*pp)->hnext;
}

void srv_sessions_drop_peer(struct srv_sessions *t, uint64_t peer)
{
	for (unsigned b = 0; b < SESS_BUCKETS; b++)
		for (struct srv_session **pp = &t->buckets[b]; *pp;)
			if ((*pp)->peer == peer)
				unlink_free(t, pp);
			else
				pp = &(*pp)->hnext;
}

/* The least recently used session of `uid`. */
static struct srv_session **oldest(struct srv_sessions *t, uint32_t uid)
{
	struct srv_session **best = NULL;

	for (unsigned b = 0; b < SESS_BUCKETS; b++)
		for (struct srv_session **pp = &t->buckets[b]; *pp; pp = &(*pp)->hnext)
			if ((*pp)->ident.uid == uid &&
			    (!best || (*pp)->last_used < (*best)->last_used))
				best = pp;
	return best;
}

int srv_session_add(struct srv_sessions *t, struct srv_ident *ident, uint64_t peer,
		    double now, struct srv_session **out)
{
	struct srv_session *s, **victim;
	uint64_t id;

	/* A uid at its share makes room from its own sessions. */
	if (srv_sessions_of_uid(t, ident->uid) >= t->per_uid &&
	    (victim = oldest(t, ident->uid)))
		unlink_free(t, victim);
	if (t->n >= t->max)
		srv_sessions_expire(t, now);
	/* Still full (many uids, each within its share): the uid holding the
	 * most gives way, so root, the daemons and a new uid always get in. */
	if (t->n >= t->max && (victim = oldest(t, uid_most(t))))
		unlink_free(t, victim);
	if (t->n >= t->max)
		return -EBUSY;
	s = calloc(1, sizeof(*s));
	if (!s || uid_add(t, ident->uid, 1)) {
		free(s);
		return -ENOMEM;
	}
	do
		randombytes_buf(&id, sizeof(id));
	while (!id || srv_session_find(t, id));
	ident->session = id;
	s->ident = *ident;
	s->peer = peer;
	s->last_used = now;
	s->hnext = t->buckets[bucket(id)];
	t->buckets[bucket(id)] = s;
	t->n++;
	*out = s;
	return 0;
}

unsigned srv_sessions_count(const struct srv_sessions *t)
{
	return t->n;
}
