/*
 * mds_logsync.c - the commit's sync of LevelDB's logs (mds_logsync.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "mds_logsync.h"

/* A log's name ("NNNNNN.log") is at most this long with its NUL. */
#define LOG_NAME_MAX 32

struct mds_log {
	char name[LOG_NAME_MAX];
	int fd;
};

struct mds_logsync {
	char *dir;
	int watch;            /* the inotify descriptor, -1 without one */
	int stale;            /* list the directory before the next sync */
	struct mds_log *logs;
	size_t n, cap;
};

/* "NNNNNN.log": one of LevelDB's write-ahead logs (its file naming,
 * doc/impl.md), and short enough to keep. */
static int is_log(const char *name)
{
	size_t len = strlen(name);

	if (len < 5 || len >= LOG_NAME_MAX || strcmp(name + len - 4, ".log"))
		return 0;
	for (size_t i = 0; i < len - 4; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return 1;
}

static void watch_start(struct mds_logsync *ls)
{
	const uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM |
			      IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

	ls->watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ls->watch >= 0 && inotify_add_watch(ls->watch, ls->dir, mask) < 0) {
		close(ls->watch);
		ls->watch = -1;
	}
}

struct mds_logsync *mds_logsync_new(const char *dir, enum mds_logsync_mode mode)
{
	struct mds_logsync *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->dir = strdup(dir);
	if (!ls->dir) {
		free(ls);
		return NULL;
	}
	ls->watch = -1;
	ls->stale = 1;
	if (mode == MDS_LOGSYNC_WATCH)
		watch_start(ls);
	return ls;
}

static void close_logs(struct mds_logsync *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		close(ls->logs[i].fd);
	ls->n = 0;
}

void mds_logsync_free(struct mds_logsync *ls)
{
	if (!ls)
		return;
	close_logs(ls);
	if (ls->watch >= 0)
		close(ls->watch);
	free(ls->logs);
	free(ls->dir);
	free(ls);
}

size_t mds_logsync_open_logs(const struct mds_logsync *ls)
{
	return ls->n;
}

int mds_logsync_watching(const struct mds_logsync *ls)
{
	return ls->watch >= 0;
}

/* The events queued since the last call: a log made, renamed or removed,
 * or events lost, make the list stale; the directory itself gone ends the
 * watch (listing at every commit from then on). */
static void drain(struct mds_logsync *ls)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t got;

	while ((got = read(ls->watch, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + got;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))
				ls->stale = 1;
			else if (ev->len && is_log(ev->name))
				ls->stale = 1;
			if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
				close(ls->watch);
				ls->watch = -1;
				return;
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	if (got < 0 && errno != EAGAIN)
		ls->stale = 1;
}

static int keep(struct mds_logsync *ls, const char *name, int fd)
{
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? 2 * ls->cap : 4;
		struct mds_log *logs = realloc(ls->logs, cap * sizeof(*logs));

		if (!logs)
			return -ENOMEM;
		ls->logs = logs;
		ls->cap = cap;
	}
	/* (is_log: shorter than LOG_NAME_MAX) */
	memcpy(ls->logs[ls->n].name, name, strlen(name) + 1);
	ls->logs[ls->n++].fd = fd;
	return 0;
}

/* Open every log in the directory, dropping those held before. A log
 * removed between the listing and its open is skipped. */
static int rescan(struct mds_logsync *ls, char *err, size_t errlen)
{
	char path[4096];
	struct dirent *e;
	DIR *d;
	int fd, rc = 0;

	close_logs(ls);
	d = opendir(ls->dir);
	if (!d) {
		snprintf(err, errlen, "commit: open %s: %s", ls->dir, strerror(errno));
		return -EIO;
	}
	while (!rc && (e = readdir(d))) {
		if (!is_log(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", ls->dir, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0) {
			snprintf(err, errlen, "commit: open %s: %s", path, strerror(errno));
			rc = -EIO;
		} else if (keep(ls, e->d_name, fd)) {
			close(fd);
			snprintf(err, errlen, "commit: %s: out of memory", path);
			rc = -EIO;
		}
	}
	closedir(d);
	if (rc)
		close_logs(ls);
	return rc;
}

int mds_logsync_run(struct mds_logsync *ls, char *err, size_t errlen)
{
	int rc;

	if (ls->watch >= 0)
		drain(ls);
	if (ls->watch < 0 || ls->stale) {
		if ((rc = rescan(ls, err, errlen))) {
			/* (the directory may be gone: a watch of it would say
			 * nothing of one made again under its name) */
			if (ls->watch >= 0)
				close(ls->watch);
			ls->watch = -1;
			return rc;
		}
		ls->stale = 0;
	}
	for (size_t i = 0; i < ls->n; i++)
		if (fdatasync(ls->logs[i].fd)) {
			snprintf(err, errlen, "commit: fdatasync %s/%s: %s", ls->dir,
				 ls->logs[i].name, strerror(errno));
			return -EIO;
		}
	return 0;
}
