/*
 * session.c - the daemon's session table (session.h): a hash of sessions
 * by their random id, bounded in count, per uid and in idle time.
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

struct srv_sessions {
	struct srv_session *buckets[SESS_BUCKETS];
	unsigned n, max, per_uid;
	double idle_s;
};

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
	sodium_memzero(s->ident.key, sizeof(s->ident.key));
	free(s);
	t->n--;
}

void srv_sessions_destroy(struct srv_sessions *t)
{
	if (!t)
		return;
	for (unsigned b = 0; b < SESS_BUCKETS; b++)
		while (t->buckets[b])
			unlink_free(t, &t->buckets[b]);
	free(t);
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

/* The least recently used session of `uid`, and how many uid has. */
static struct srv_session **oldest(struct srv_sessions *t, uint32_t uid, unsigned *count)
{
	struct srv_session **best = NULL;

	*count = 0;
	for (unsigned b = 0; b < SESS_BUCKETS; b++)
		for (struct srv_session **pp = &t->buckets[b]; *pp; pp = &(*pp)->hnext) {
			if ((*pp)->ident.uid != uid)
				continue;
			(*count)++;
			if (!best || (*pp)->last_used < (*best)->last_used)
				best = pp;
		}
	return best;
}

int srv_session_add(struct srv_sessions *t, struct srv_ident *ident, uint64_t peer,
		    double now, struct srv_session **out)
{
	struct srv_session *s, **victim;
	unsigned count;
	uint64_t id;

	victim = oldest(t, ident->uid, &count);
	if (victim && count >= t->per_uid)
		unlink_free(t, victim);
	if (t->n >= t->max)
		srv_sessions_expire(t, now);
	if (t->n >= t->max)
		return -EBUSY;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
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
