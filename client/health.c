/*
 * health.c - what this process knows of each server's state (up, suspect,
 * down), shared by every call of one tessera_fs (docs/design.md, "When a
 * server is down"). The request engine records each request's outcome
 * here; a call to a server that is down fails at once instead of paying
 * the timeout again, until a probe finds the server back. Changes are
 * handed to the watcher (tessera_server_watch) outside the locks. A leaf
 * over thread.c: the engine and the sessions use it, it uses neither.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

/* The entry of `server` (TC_MDS or a storage daemon's index). */
static struct tc_health *slot(tessera_fs *fs, int server)
{
	return &fs->health[server + 1];
}

int tc_health_init(tessera_fs *fs)
{
	fs->health = calloc(fs->cfg.n_ios + 1, sizeof(*fs->health));
	if (!fs->health)
		return -ENOMEM;
	pthread_mutex_init(&fs->watch_lock, NULL);
	for (uint32_t i = 0; i <= fs->cfg.n_ios; i++) {
		fs->health[i].since_s = (int64_t)time(NULL);
		fs->health[i].told = 1; /* up from the start is no change */
	}
	return 0;
}

void tc_health_fini(tessera_fs *fs)
{
	if (!fs->health)
		return;
	pthread_mutex_destroy(&fs->watch_lock);
	free(fs->health);
	fs->health = NULL;
}

/* Move server to `state` (under fs->lock); nothing when it is there with
 * the same reason already. */
static void change(tessera_fs *fs, int server, enum tessera_server_state state, int err,
		   const char *why)
{
	struct tc_health *h = slot(fs, server);

	if (h->state == state && !strcmp(h->why, why))
		return;
	if (h->state != state) {
		h->since_s = (int64_t)time(NULL);
		h->since_ns = tp_mono_ns();
	}
	h->state = state;
	h->err = err;
	snprintf(h->why, sizeof(h->why), "%s", why);
	h->told = 0;
}

void tc_health_up(tessera_fs *fs, int server)
{
	struct tc_health *h = slot(fs, server);

	if (h->state == TESSERA_SERVER_UP)
		return;
	h->backoff_ns = 0;
	h->next_probe_ns = 0;
	change(fs, server, TESSERA_SERVER_UP, 0, "");
}

void tc_health_suspect(tessera_fs *fs, int server, const char *why)
{
	if (slot(fs, server)->state == TESSERA_SERVER_UP)
		change(fs, server, TESSERA_SERVER_SUSPECT, 0, why);
}

void tc_health_down(tessera_fs *fs, int server, int err, const char *why)
{
	struct tc_health *h = slot(fs, server);

	if (h->state != TESSERA_SERVER_DOWN) {
		h->backoff_ns = TC_DOWN_PROBE_FIRST_NS;
		h->next_probe_ns = tp_mono_ns() + TC_DOWN_PROBE_FIRST_NS;
		pthread_cond_broadcast(&fs->prober_cond);
	}
	change(fs, server, TESSERA_SERVER_DOWN, err == -ECONNREFUSED ? err : -EHOSTDOWN, why);
}

int tc_health_refuse(tessera_fs *fs, int server, char *msg, size_t len)
{
	const struct tc_health *h = slot(fs, server);
	char when[16];
	time_t t;
	struct tm tm;

	if (h->state != TESSERA_SERVER_DOWN)
		return 0;
	t = (time_t)h->since_s;
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	if (len)
		snprintf(msg, len, "not reachable since %s (%s)", when, h->why);
	return h->err;
}

int tc_health_due(tessera_fs *fs, uint64_t now, uint64_t *next)
{
	int due = TC_NO_SERVER;

	*next = UINT64_MAX;
	for (int s = TC_MDS; s < (int)fs->cfg.n_ios; s++) {
		const struct tc_health *h = slot(fs, s);

		if (h->state != TESSERA_SERVER_DOWN)
			continue;
		if (h->next_probe_ns <= now && due == TC_NO_SERVER)
			due = s;
		else if (h->next_probe_ns < *next)
			*next = h->next_probe_ns;
	}
	return due;
}

void tc_health_backoff(tessera_fs *fs, int server)
{
	struct tc_health *h = slot(fs, server);

	h->backoff_ns *= 2;
	if (h->backoff_ns > TC_DOWN_PROBE_MAX_NS)
		h->backoff_ns = TC_DOWN_PROBE_MAX_NS;
	h->next_probe_ns = tp_mono_ns() + h->backoff_ns;
}

void tc_health_silence(char *buf, size_t len, uint64_t ns)
{
	uint64_t ms = (ns + 500000u) / 1000000u;

	if (ms < 1000)
		snprintf(buf, len, "no answer for %llu ms", (unsigned long long)ms);
	else if (ms % 1000 < 50 || ms % 1000 >= 950 || ms >= 10000)
		snprintf(buf, len, "no answer for %llu s", (unsigned long long)((ms + 500) / 1000));
	else
		snprintf(buf, len, "no answer for %.1f s", (double)ms / 1000);
}

enum tessera_server_state tc_health_state(tessera_fs *fs, int server)
{
	return slot(fs, server)->state;
}

/* out from server's entry (under fs->lock). */
static void fill(tessera_fs *fs, int server, struct tessera_server_status *out)
{
	const struct tc_health *h = slot(fs, server);

	memset(out, 0, sizeof(*out));
	out->index = server;
	out->state = h->state;
	out->since_s = h->since_s;
	tc_server_name(fs, server, out->name, sizeof(out->name));
	snprintf(out->why, sizeof(out->why), "%s", h->why);
}

void tc_health_notify(tessera_fs *fs)
{
	struct tessera_server_status st;
	tessera_server_watch_fn fn;
	void *arg;

	/* watch_lock keeps the watcher's calls in the order of the changes
	 * and one at a time; fs->lock is not held while it runs. */
	pthread_mutex_lock(&fs->watch_lock);
	for (int s = TC_MDS; s < (int)fs->cfg.n_ios; s++) {
		pthread_mutex_lock(&fs->lock);
		fn = fs->watch_fn;
		arg = fs->watch_arg;
		if (slot(fs, s)->told) {
			pthread_mutex_unlock(&fs->lock);
			continue;
		}
		slot(fs, s)->told = 1;
		fill(fs, s, &st);
		pthread_mutex_unlock(&fs->lock);
		if (fn)
			fn(&st, arg);
	}
	pthread_mutex_unlock(&fs->watch_lock);
}

int tessera_server_status(tessera_fs *fs, int index, struct tessera_server_status *out)
{
	if (index < TC_MDS || index >= (int)fs->cfg.n_ios || !out)
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	fill(fs, index, out);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

void tessera_server_watch(tessera_fs *fs, tessera_server_watch_fn fn, void *arg)
{
	pthread_mutex_lock(&fs->watch_lock);
	pthread_mutex_lock(&fs->lock);
	fs->watch_fn = fn;
	fs->watch_arg = arg;
	/* Changes from before are not news to a new watcher. */
	for (uint32_t i = 0; i <= fs->cfg.n_ios; i++)
		fs->health[i].told = 1;
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->watch_lock);
}
