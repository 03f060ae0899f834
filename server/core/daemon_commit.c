/*
 * daemon_commit.c - group commit: replies that tell of changes not yet
 * durable wait for the commit that makes them so.
 *
 * A handler that wrote a change calls srv_hold_replies. Every reply made
 * from then on waits for that turn's commit (its generation, tx->gen):
 * any reply may tell of the change, even one to another client. At the
 * turn's end (srv_commit_turn) the commit is made: on the loop, by the
 * role's commit; or, with srv_role.background, begun on the loop and
 * synced by the commit thread while the loop goes on serving. When the
 * sync is done the loop learns it (an ev_async), calls the role's done and
 * lets the replies go. A commit asked while another syncs waits for it;
 * the next sync covers every commit asked meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"

struct srv_committer {
	struct srv *srv;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* the thread waits for a commit asked */
	pthread_cond_t synced_cond; /* srv_commit_wait waits for a sync */
	ev_async done;     /* the thread's word to the loop */
	/* Under lock: the newest generation asked, the newest synced, the
	 * first failure (no sync after it), and whether to stop. */
	uint64_t asked, synced;
	int rc;
	int stop;
};

void srv_hold_replies(struct srv *srv)
{
	srv->held = 1;
	srv->gen_wait = srv->gen_next;
}

/* A commit failed: the replies that wait for it acknowledge changes that
 * may not survive a crash. None is sent, and the daemon stops (a store
 * whose synced write failed takes no more writes anyway). */
static void commit_failed(struct srv *srv, int rc)
{
	srv->commit_failed = 1;
	srv_error(srv, "commit failed (%s): replies withheld, stopping", strerror(-rc));
	if (srv->loop)
		ev_break(srv->loop, EVBREAK_ALL);
}

/* Generation gen was synced (rc 0) or failed: the role's done, then the
 * replies of generation gen and before may leave. gen_done moves first, so
 * that done sees srv_all_durable as it is. */
static void commit_end(struct srv *srv, uint64_t gen, int rc)
{
	uint64_t before = srv->gen_done;

	if (!rc && gen > srv->gen_done)
		srv->gen_done = gen;
	rc = srv->role.background ? srv->role.background->done(srv->role.ctx, rc) : rc;
	if (rc) {
		srv->gen_done = before;
		commit_failed(srv, rc);
		return;
	}
	srv_pump_all(srv);
}

/* The whole commit at once (no commit thread): the role's commit, or its
 * three steps in a row. */
static void commit_inline(struct srv *srv, uint64_t gen)
{
	const struct srv_commit_ops *bg = srv->role.background;
	void *ctx = srv->role.ctx;

	if (!bg) {
		commit_end(srv, gen, srv->role.commit ? srv->role.commit(ctx) : 0);
		return;
	}
	bg->begin(ctx);
	commit_end(srv, gen, bg->sync(ctx));
}

int srv_all_durable(const struct srv *srv)
{
	return !srv->held && srv->gen_done + 1 == srv->gen_next && !srv->commit_failed;
}

static void commit_ask(struct srv_committer *c, uint64_t gen)
{
	pthread_mutex_lock(&c->lock);
	c->asked = gen;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void srv_commit_turn(struct srv *srv)
{
	uint64_t gen = srv->gen_next;

	if (!srv->held || srv->commit_failed)
		return;
	srv->held = 0;
	srv->gen_next++;
	if (srv->committer) {
		srv->role.background->begin(srv->role.ctx);
		commit_ask(srv->committer, gen);
		return;
	}
	commit_inline(srv, gen);
}

static void *commit_thread(void *arg)
{
	struct srv_committer *c = arg;
	const struct srv_commit_ops *bg = c->srv->role.background;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (c->asked > c->synced && !c->rc) {
			uint64_t gen = c->asked;
			int rc;

			pthread_mutex_unlock(&c->lock);
			rc = bg->sync(c->srv->role.ctx);
			pthread_mutex_lock(&c->lock);
			if (rc)
				c->rc = rc;
			else
				c->synced = gen;
			pthread_cond_broadcast(&c->synced_cond);
			ev_async_send(c->srv->loop, &c->done);
			continue;
		}
		if (c->stop)
			break;
		pthread_cond_wait(&c->cond, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* On the loop: take what the commit thread finished. */
static void collect(struct srv_committer *c)
{
	struct srv *srv = c->srv;
	uint64_t gen;
	int rc;

	pthread_mutex_lock(&c->lock);
	gen = c->synced;
	rc = c->rc;
	pthread_mutex_unlock(&c->lock);
	if (srv->commit_failed || (gen <= srv->gen_done && !rc))
		return;
	commit_end(srv, gen, rc);
	/* What the role's done wrote (a merge after a commit) is committed
	 * now, not at the next turn's end or tick: its replies wait. */
	srv_commit_turn(srv);
}

static void on_synced(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)loop, (void)revents;
	collect(w->data);
}

int srv_commit_wait(struct srv *srv)
{
	struct srv_committer *c = srv->committer;

	if (c) {
		pthread_mutex_lock(&c->lock);
		while (c->asked > c->synced && !c->rc)
			pthread_cond_wait(&c->synced_cond, &c->lock);
		pthread_mutex_unlock(&c->lock);
		collect(c);
	}
	return srv->commit_failed ? -EIO : 0;
}

int srv_commit_start(struct srv *srv)
{
	struct srv_committer *c;
	int rc;

	if (!srv->role.background || !srv->loop)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->srv = srv;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	pthread_cond_init(&c->synced_cond, NULL);
	ev_async_init(&c->done, on_synced);
	c->done.data = c;
	ev_async_start(srv->loop, &c->done);
	rc = pthread_create(&c->thread, NULL, commit_thread, c);
	if (rc) {
		ev_async_stop(srv->loop, &c->done);
		pthread_cond_destroy(&c->synced_cond);
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return -rc;
	}
	srv->committer = c;
	return 0;
}

void srv_commit_stop(struct srv *srv)
{
	struct srv_committer *c = srv->committer;

	if (!c)
		return;
	/* A commit asked is still synced (its replies are not sent: the
	 * loop has ended), so that what a client may have seen is durable. */
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	ev_async_stop(srv->loop, &c->done);
	pthread_cond_destroy(&c->synced_cond);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
	srv->committer = NULL;
}
