/*
 * ios_local.c - local reads: a client on this daemon's host reads an
 * object's files itself (docs/design.md, "Local reads").
 *
 * LOCAL_OPEN (its capability checked as a READ's) opens the object's data
 * and checksum files read-only and keeps the descriptors under a random
 * token; the reply names the token and this daemon's abstract Unix socket.
 * The client connects there and sends the token; this file's thread
 * answers one status byte with the descriptors attached (SCM_RIGHTS) and
 * closes the connection. An abstract socket belongs to the network
 * namespace it was made in, so a client that could not reach this daemon
 * over loopback cannot reach it either.
 *
 * Who may fetch: the token is TP_LOCAL_TOKEN random bytes, sent only in
 * the reply to an authenticated session, and the connecting process's uid
 * (SO_PEERCRED: the kernel's word) must be the session's, or 0.
 *
 * Bounds: at most IOS_LOCAL_PENDING tokens wait, each at most
 * IOS_LOCAL_TTL_MS, and at most local_tokens_per_uid of one uid (more is
 * refused with EDQUOT); a LOCAL_OPEN that finds the table full of live
 * ones takes the oldest of the uid holding the most, unless that is its
 * own uid (then EBUSY). At most IOS_LOCAL_CONNS connections are served at
 * once, each for at most IOS_LOCAL_CONN_MS, reading exactly TP_LOCAL_TOKEN
 * bytes, and at most local_conns_per_uid of one uid (SO_PEERCRED); one
 * more of that uid is closed at once, and when all are taken the oldest
 * of the uid holding the most makes room for another uid's. Root (uid 0)
 * has no per-uid share. The loop thread fills the table, the socket
 * thread empties it, under one mutex.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ios.h"
#include "tp_clock.h"

#define IOS_LOCAL_PENDING 64
#define IOS_LOCAL_TTL_MS 5000
#define IOS_LOCAL_CONNS 32
#define IOS_LOCAL_CONN_MS 2000
#define IOS_LOCAL_POLL_MS 250

struct local_pending {
	uint8_t token[TP_LOCAL_TOKEN];
	int fd, sums;              /* fd -1: entry free */
	uint32_t uid;              /* the session's */
	uint64_t expires_ns;
};

struct local_conn {
	int fd;                    /* -1: free */
	uint32_t uid;              /* the connecting process's (SO_PEERCRED) */
	uint64_t since_ns;
	size_t got;
	uint8_t token[TP_LOCAL_TOKEN];
	uint64_t deadline_ns;
};

struct ios_local {
	int lsock;
	int wake[2];               /* a byte on wake[1] stops the thread */
	pthread_t thread;
	pthread_mutex_t mu;        /* guards pend[] and the counters */
	struct local_pending pend[IOS_LOCAL_PENDING];
	struct local_conn conns[IOS_LOCAL_CONNS];
	char name[80];             /* the abstract socket's, without its NUL */
	uint32_t tokens_per_uid, conns_per_uid; /* the config's */
	uint64_t handed, refused;
};

static void pending_drop(struct local_pending *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->sums >= 0)
		close(p->sums);
	p->fd = p->sums = -1;
}

static void conn_close(struct local_conn *c)
{
	close(c->fd);
	c->fd = -1;
}

/* Tokens compared without an early exit. */
static int token_eq(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;

	for (size_t i = 0; i < TP_LOCAL_TOKEN; i++)
		d |= (uint8_t)(a[i] ^ b[i]);
	return d == 0;
}

/* A connection sent its token: answer it, with the descriptors if the
 * token is live and the peer may have them. */
static void answer(struct ios_local *lc, struct local_conn *c)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fds[2] = { -1, -1 }, nfd = 0;
	uint8_t status = TP_LOCAL_UNKNOWN;
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { &status, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	uint64_t now = tp_mono_ns();

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		cred.uid = (uid_t)-1;
	pthread_mutex_lock(&lc->mu);
	for (size_t i = 0; i < IOS_LOCAL_PENDING; i++) {
		struct local_pending *p = &lc->pend[i];

		if (p->fd < 0 || p->expires_ns < now || !token_eq(p->token, c->token))
			continue;
		if (cred.uid != 0 && cred.uid != p->uid) {
			status = TP_LOCAL_NOT_YOURS;
			break; /* the token stays for its owner */
		}
		fds[nfd++] = p->fd;
		if (p->sums >= 0)
			fds[nfd++] = p->sums;
		p->fd = p->sums = -1;
		status = TP_LOCAL_OK;
		break;
	}
	if (status == TP_LOCAL_OK)
		lc->handed++;
	else
		lc->refused++;
	pthread_mutex_unlock(&lc->mu);
	if (nfd) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfd * sizeof(int));
	}
	/* One byte into a fresh socket's empty buffer: never blocks. */
	(void)sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	conn_close(c);
}

/* A table seen as entries with an owner uid and an age. */
struct hog_view {
	uint32_t (*uid_of)(const void *tab, size_t i);
	uint64_t (*age_of)(const void *tab, size_t i); /* smaller: older */
	int (*used)(const void *tab, size_t i);
};

static size_t count_uid(const void *tab, size_t n, const struct hog_view *v, uint32_t uid)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (v->used(tab, i) && v->uid_of(tab, i) == uid)
			k++;
	return k;
}

/* Of n entries, the oldest of the uid holding the most, if that uid is
 * not `uid` and holds more than it: its index, or -1. */
static long hog_victim(const void *tab, size_t n, const struct hog_view *v, uint32_t uid)
{
	size_t best_n = count_uid(tab, n, v, uid);
	long victim = -1;
	uint32_t hog = uid;

	for (size_t i = 0; i < n; i++) {
		size_t k;

		if (!v->used(tab, i) || v->uid_of(tab, i) == hog)
			continue;
		k = count_uid(tab, n, v, v->uid_of(tab, i));
		if (k > best_n) {
			best_n = k;
			hog = v->uid_of(tab, i);
		}
	}
	if (hog == uid)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (v->used(tab, i) && v->uid_of(tab, i) == hog &&
		    (victim < 0 || v->age_of(tab, i) < v->age_of(tab, (size_t)victim)))
			victim = (long)i;
	return victim;
}

static uint32_t conn_uid(const void *tab, size_t i)
{
	return ((const struct local_conn *)tab)[i].uid;
}

static uint64_t conn_age(const void *tab, size_t i)
{
	return ((const struct local_conn *)tab)[i].since_ns;
}

static int conn_used(const void *tab, size_t i)
{
	return ((const struct local_conn *)tab)[i].fd >= 0;
}

static const struct hog_view conn_view = { conn_uid, conn_age, conn_used };

/* A free slot for a connection of uid: NULL when uid holds its share, or
 * every slot is taken and no other uid holds more (the client falls back
 * to reading through the daemon). */
static struct local_conn *conn_slot(struct ios_local *lc, uint32_t uid)
{
	long victim;

	if (uid != 0 && count_uid(lc->conns, IOS_LOCAL_CONNS, &conn_view, uid) >=
	    lc->conns_per_uid)
		return NULL;
	for (size_t i = 0; i < IOS_LOCAL_CONNS; i++)
		if (lc->conns[i].fd < 0)
			return &lc->conns[i];
	victim = hog_victim(lc->conns, IOS_LOCAL_CONNS, &conn_view, uid);
	if (victim < 0)
		return NULL;
	conn_close(&lc->conns[victim]);
	return &lc->conns[victim];
}

static void accept_all(struct ios_local *lc, uint64_t now)
{
	for (;;) {
		int fd = accept4(lc->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct local_conn *slot;
		struct ucred cred;
		socklen_t clen = sizeof(cred);

		if (fd < 0)
			return; /* EAGAIN, or a connection that went away */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
		    !(slot = conn_slot(lc, (uint32_t)cred.uid))) {
			close(fd);
			continue;
		}
		slot->fd = fd;
		slot->uid = (uint32_t)cred.uid;
		slot->since_ns = now;
		slot->got = 0;
		slot->deadline_ns = now + IOS_LOCAL_CONN_MS * 1000000ull;
	}
}

static void *serve(void *arg)
{
	struct ios_local *lc = arg;
	struct pollfd pfd[2 + IOS_LOCAL_CONNS];
	struct local_conn *of[2 + IOS_LOCAL_CONNS];

	for (;;) {
		nfds_t n = 2;
		uint64_t now;

		pfd[0] = (struct pollfd){ .fd = lc->wake[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = lc->lsock, .events = POLLIN };
		for (size_t i = 0; i < IOS_LOCAL_CONNS; i++)
			if (lc->conns[i].fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = lc->conns[i].fd, .events = POLLIN };
				of[n++] = &lc->conns[i];
			}
		if (poll(pfd, n, IOS_LOCAL_POLL_MS) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		now = tp_mono_ns();
		for (nfds_t i = 2; i < n; i++) {
			struct local_conn *c = of[i];
			ssize_t k;

			if (!pfd[i].revents)
				continue;
			k = read(c->fd, c->token + c->got, TP_LOCAL_TOKEN - c->got);
			if (k <= 0) {
				if (k == 0 || (errno != EAGAIN && errno != EINTR))
					conn_close(c);
				continue;
			}
			c->got += (size_t)k;
			if (c->got == TP_LOCAL_TOKEN)
				answer(lc, c);
		}
		if (pfd[1].revents)
			accept_all(lc, now);
		for (size_t i = 0; i < IOS_LOCAL_CONNS; i++)
			if (lc->conns[i].fd >= 0 && lc->conns[i].deadline_ns < now)
				conn_close(&lc->conns[i]);
		pthread_mutex_lock(&lc->mu);
		for (size_t i = 0; i < IOS_LOCAL_PENDING; i++)
			if (lc->pend[i].fd >= 0 && lc->pend[i].expires_ns < now)
				pending_drop(&lc->pend[i]);
		pthread_mutex_unlock(&lc->mu);
	}
	return NULL;
}

int ios_local_start(struct ios *ios, char *err, size_t errlen)
{
	struct ios_local *lc = calloc(1, sizeof(*lc));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint32_t nonce;
	socklen_t len;
	int rc;

	if (!lc) {
		snprintf(err, errlen, "local reads: no memory");
		return -ENOMEM;
	}
	lc->lsock = lc->wake[0] = lc->wake[1] = -1;
	lc->tokens_per_uid = ios->cfg->local_tokens_per_uid;
	lc->conns_per_uid = ios->cfg->local_conns_per_uid;
	for (size_t i = 0; i < IOS_LOCAL_PENDING; i++)
		lc->pend[i].fd = lc->pend[i].sums = -1;
	for (size_t i = 0; i < IOS_LOCAL_CONNS; i++)
		lc->conns[i].fd = -1;
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
		rc = -errno;
		goto fail;
	}
	snprintf(lc->name, sizeof(lc->name), "tessera-ios-%u-%ld-%08" PRIx32, ios->index,
		 (long)getpid(), nonce);
	memcpy(sa.sun_path + 1, lc->name, strlen(lc->name));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(lc->name));
	lc->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lc->lsock < 0 || bind(lc->lsock, (struct sockaddr *)&sa, len) ||
	    listen(lc->lsock, IOS_LOCAL_CONNS) || pipe2(lc->wake, O_CLOEXEC)) {
		rc = -errno;
		goto fail;
	}
	pthread_mutex_init(&lc->mu, NULL);
	if ((rc = -pthread_create(&lc->thread, NULL, serve, lc))) {
		pthread_mutex_destroy(&lc->mu);
		goto fail;
	}
	ios->local = lc;
	return 0;
fail:
	snprintf(err, errlen, "local reads: socket @%s: %s", lc->name, strerror(-rc));
	if (lc->lsock >= 0)
		close(lc->lsock);
	if (lc->wake[0] >= 0) {
		close(lc->wake[0]);
		close(lc->wake[1]);
	}
	free(lc);
	return rc;
}

void ios_local_stop(struct ios *ios)
{
	struct ios_local *lc = ios->local;

	if (!lc)
		return;
	(void)!write(lc->wake[1], "", 1);
	pthread_join(lc->thread, NULL);
	for (size_t i = 0; i < IOS_LOCAL_CONNS; i++)
		if (lc->conns[i].fd >= 0)
			conn_close(&lc->conns[i]);
	for (size_t i = 0; i < IOS_LOCAL_PENDING; i++)
		pending_drop(&lc->pend[i]);
	close(lc->lsock);
	close(lc->wake[0]);
	close(lc->wake[1]);
	pthread_mutex_destroy(&lc->mu);
	free(lc);
	ios->local = NULL;
}

static uint32_t pend_uid(const void *tab, size_t i)
{
	return ((const struct local_pending *)tab)[i].uid;
}

static uint64_t pend_age(const void *tab, size_t i)
{
	return ((const struct local_pending *)tab)[i].expires_ns;
}

static int pend_used(const void *tab, size_t i)
{
	return ((const struct local_pending *)tab)[i].fd >= 0;
}

static const struct hog_view pend_view = { pend_uid, pend_age, pend_used };

/* A free entry for a token of uid (under mu, expired ones dropped):
 * NULL with -EDQUOT when uid holds its share, -EBUSY when every entry
 * holds a live token and no other uid holds more. */
static struct local_pending *pending_slot(struct ios_local *lc, uint32_t uid, int *rc)
{
	long victim;

	*rc = -EDQUOT;
	if (uid != 0 && count_uid(lc->pend, IOS_LOCAL_PENDING, &pend_view, uid) >=
	    lc->tokens_per_uid)
		return NULL;
	for (size_t i = 0; i < IOS_LOCAL_PENDING; i++)
		if (lc->pend[i].fd < 0)
			return &lc->pend[i];
	*rc = -EBUSY;
	victim = hog_victim(lc->pend, IOS_LOCAL_PENDING, &pend_view, uid);
	if (victim < 0)
		return NULL;
	pending_drop(&lc->pend[victim]);
	return &lc->pend[victim];
}

/* Keep fd and sums under a fresh token for `uid`: 0, or pending_slot's
 * -EDQUOT or -EBUSY. */
static int pending_put(struct ios_local *lc, int fd, int sums, uint32_t uid,
		       uint8_t token[TP_LOCAL_TOKEN])
{
	uint64_t now = tp_mono_ns();
	struct local_pending *slot;
	int rc = 0;

	if (getrandom(token, TP_LOCAL_TOKEN, 0) != TP_LOCAL_TOKEN)
		return -errno;
	pthread_mutex_lock(&lc->mu);
	for (size_t i = 0; i < IOS_LOCAL_PENDING; i++)
		if (lc->pend[i].fd >= 0 && lc->pend[i].expires_ns < now)
			pending_drop(&lc->pend[i]);
	slot = pending_slot(lc, uid, &rc);
	if (slot) {
		memcpy(slot->token, token, TP_LOCAL_TOKEN);
		slot->fd = fd;
		slot->sums = sums;
		slot->uid = uid;
		slot->expires_ns = now + IOS_LOCAL_TTL_MS * 1000000ull;
	}
	pthread_mutex_unlock(&lc->mu);
	return slot ? 0 : rc;
}

void ios_do_local_open(struct ios *ios, struct srv_req *req)
{
	const Tessera__LocalOpenRequest *m = (const Tessera__LocalOpenRequest *)req->msg;
	Tessera__LocalOpenReply rep = TESSERA__LOCAL_OPEN_REPLY__INIT;
	uint8_t token[TP_LOCAL_TOKEN];
	int fd, sums, rc;

	if (!ios->local) {
		srv_reply_error(req, -EOPNOTSUPP, "local open of object %016" PRIx64 " on storage "
				"daemon %u: local reads are off here (%s)", m->handle, ios->index,
				ios->local_off ? ios->local_off : "not started");
		return;
	}
	rc = ios_store_open_read(ios->store, m->handle, &fd, &sums);
	if (rc == -ENOENT) {
		rep.absent = 1;
		srv_reply(req, &rep.base, NULL, 0);
		return;
	}
	if (rc) {
		ios_reply_store_error(ios, req, "local open of", m->handle, rc,
				rc == -EIO ? "the store held the object, and its file is gone" : NULL);
		return;
	}
	if ((rc = pending_put(ios->local, fd, sums, req->ident.uid, token))) {
		close(fd);
		if (sums >= 0)
			close(sums);
		if (rc == -EDQUOT)
			srv_reply_error(req, rc, "local open of object %016" PRIx64 " on storage "
					"daemon %u: uid %u has %u local-read tokens waiting, the "
					"per-user limit (local_tokens_per_uid)", m->handle, ios->index,
					req->ident.uid, ios->local->tokens_per_uid);
		else
			srv_reply_error(req, rc, "local open of object %016" PRIx64 " on storage "
					"daemon %u: %d local opens wait for their clients already",
					m->handle, ios->index, IOS_LOCAL_PENDING);
		return;
	}
	rep.token.data = token;
	rep.token.len = TP_LOCAL_TOKEN;
	rep.socket = ios->local->name;
	rep.csum_block = ios_store_csum_block(ios->store);
	srv_reply(req, &rep.base, NULL, 0);
}

void ios_local_counts(const struct ios *ios, uint64_t *handed, uint64_t *refused)
{
	struct ios_local *lc = ios->local;

	*handed = *refused = 0;
	if (!lc)
		return;
	pthread_mutex_lock(&lc->mu);
	*handed = lc->handed;
	*refused = lc->refused;
	pthread_mutex_unlock(&lc->mu);
}
