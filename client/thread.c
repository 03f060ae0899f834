/*
 * thread.c - a client thread's state: its last error message and the
 * credentials it acts with; how a server is named in messages; the
 * library's own background threads' start. A leaf:
 * every other client file may use it, it uses none of them.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_int.h"

void tc_thread_free(void *p)
{
	free(p);
}

struct tc_thread *tc_thread(tessera_fs *fs)
{
	struct tc_thread *t = pthread_getspecific(fs->thread_key);

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			abort(); /* a few hundred bytes: nothing sensible left to do */
		pthread_setspecific(fs->thread_key, t);
	}
	return t;
}

int tc_fail(tessera_fs *fs, int rc, const char *fmt, ...)
{
	struct tc_thread *t = tc_thread(fs);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->errmsg, sizeof(t->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

const char *tessera_errmsg(tessera_fs *fs)
{
	return tc_thread(fs)->errmsg;
}

int tessera_set_thread_cred(tessera_fs *fs, const struct tessera_cred *cred)
{
	struct tc_thread *t = tc_thread(fs);

	/* Only a privileged process may act for others: the metadata daemon
	 * honours a request's credentials only from a uid 0 session, so this
	 * is a courtesy that says so early. */
	if (cred && geteuid() != 0)
		return tc_fail(fs, -EPERM, "set credentials: only root may act for another user "
			       "(this process is uid %u)", (unsigned)geteuid());
	if (cred && cred->ngids > TESSERA_MAX_GROUPS)
		return tc_fail(fs, -EINVAL, "set credentials: %u groups exceed %d", cred->ngids,
			       TESSERA_MAX_GROUPS);
	t->has_cred = cred != NULL;
	if (cred)
		t->cred = *cred;
	return 0;
}

const struct tessera_cred *tc_thread_cred(tessera_fs *fs)
{
	struct tc_thread *t = tc_thread(fs);

	return t->has_cred ? &t->cred : &fs->default_cred;
}

void tc_cred(tessera_fs *fs, Tessera__Cred *out, uint32_t *gids_store)
{
	tc_cred_msg(tc_thread_cred(fs), out, gids_store);
}

void tc_cred_msg(const struct tessera_cred *c, Tessera__Cred *out, uint32_t *gids_store)
{
	tessera__cred__init(out);
	out->uid = c->uid;
	out->n_gids = c->ngids;
	memcpy(gids_store, c->gids, c->ngids * sizeof(*gids_store));
	out->gids = gids_store;
}

void tc_server_name(tessera_fs *fs, int server, char *buf, size_t len)
{
	const struct tp_server *s = server == TC_MDS ? &fs->cfg.mds : &fs->cfg.ios[server];

	if (server == TC_MDS)
		snprintf(buf, len, "metadata daemon (%s:%s)", s->host, s->port);
	else
		snprintf(buf, len, "storage daemon %d (%s:%s)", server, s->host, s->port);
}

int tc_start_quiet_thread(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t stop, old;
	int rc;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
