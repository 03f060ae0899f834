/*
 * ios_registry.c - the log of the objects a store holds (ios_registry.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_crc.h"
#include "ios_disk.h"
#include "ios_registry.h"

#define REC 16
enum { REC_MADE = 1, REC_REMOVED = 2 };

struct ios_registry {
	struct ios_disk *disk;   /* the store's */
	char *path;
	int fd;
	uint64_t *live;          /* ascending, n_live of cap */
	size_t n_live, cap;
	uint64_t records;        /* records in the file: the next one's index */
	int dirty;               /* appended since the last sync */
};

/* The index of the first live handle >= h. */
static size_t lower_bound(const struct ios_registry *r, uint64_t h)
{
	size_t lo = 0, hi = r->n_live;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->live[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ios_registry_holds(const struct ios_registry *r, uint64_t handle)
{
	size_t i = lower_bound(r, handle);

	return i < r->n_live && r->live[i] == handle;
}

size_t ios_registry_count(const struct ios_registry *r)
{
	return r->n_live;
}

size_t ios_registry_list(const struct ios_registry *r, uint64_t after, uint64_t *out,
			 size_t max)
{
	size_t i = after == UINT64_MAX ? r->n_live : lower_bound(r, after + 1), n = 0;

	while (i < r->n_live && n < max)
		out[n++] = r->live[i++];
	return n;
}

/* The live set changes in memory: 1 if it changed, 0 if it held that
 * state already, or -ENOMEM. Handles are random, so an insert moves half
 * the set on average, as a removal always did: a memmove of 4 MB at a
 * million objects, against the object file's create. */
enum live_state { LIVE_REMOVED, LIVE_MADE };

static enum live_state record_state(uint32_t kind)
{
	return kind == REC_MADE ? LIVE_MADE : LIVE_REMOVED;
}

static int set_live(struct ios_registry *r, uint64_t h, enum live_state state)
{
	size_t i = lower_bound(r, h);
	int has = i < r->n_live && r->live[i] == h;

	if (has == (state == LIVE_MADE))
		return 0;
	if (state == LIVE_REMOVED) {
		memmove(r->live + i, r->live + i + 1, (r->n_live - i - 1) * sizeof(*r->live));
		r->n_live--;
		return 1;
	}
	if (r->n_live == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		uint64_t *l = realloc(r->live, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		r->live = l;
		r->cap = cap;
	}
	memmove(r->live + i + 1, r->live + i, (r->n_live - i) * sizeof(*r->live));
	r->live[i] = h;
	r->n_live++;
	return 1;
}

static void record_make(uint8_t *rec, uint64_t h, uint32_t kind)
{
	ios_le_put(rec, 8, h);
	ios_le_put(rec + 8, 4, kind);
	ios_le_put(rec + 12, 4, tp_crc32c(0, rec, 12));
}

/* The whole of buf at off (retrying short writes). */
static int write_all(struct ios_disk *d, int fd, const uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		struct iovec iov = { (void *)buf, len };
		ssize_t k = d->ops->pwritev(d, fd, &iov, 1, (off_t)off);

		if (k == -EINTR)
			continue;
		if (k < 0)
			return (int)k;
		if (k == 0)
			return -EIO;
		buf += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return snprintf(dir, len, ".") < 0 ? -EINVAL : 0;
	return snprintf(dir, len, "%.*s", (int)(slash - path), path) < 0 ? -EINVAL : 0;
}

/* Rewrite the log with the live records only: aside, synced, renamed over,
 * the directory synced. */
static int compact(struct ios_registry *r)
{
	struct ios_disk *d = r->disk;
	size_t len = r->n_live * REC;
	uint8_t *buf = malloc(len ? len : 1);
	char tmp[4200], dir[4200];
	int fd, rc;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_live; i++)
		record_make(buf + i * REC, r->live[i], REC_MADE);
	snprintf(tmp, sizeof(tmp), "%s.new", r->path);
	fd = d->ops->open(d, 0, IOS_FILE_STORE, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	rc = write_all(d, fd, buf, len, 0);
	free(buf);
	if (!rc)
		rc = d->ops->fdatasync(d, fd);
	if (!rc)
		rc = d->ops->rename(d, tmp, r->path, IOS_RENAME_REPLACE);
	if (!rc)
		rc = dir_of(r->path, dir, sizeof(dir));
	if (!rc)
		rc = d->ops->syncdir(d, dir);
	if (rc) {
		d->ops->close(d, fd);
		return rc;
	}
	if (r->fd >= 0)
		d->ops->close(d, r->fd);
	r->fd = fd;
	r->records = r->n_live;
	r->dirty = 0;
	return 0;
}

static int append(struct ios_registry *r, uint64_t h, uint32_t kind)
{
	uint8_t rec[REC];
	int rc = set_live(r, h, record_state(kind));

	if (rc <= 0)
		return rc;
	record_make(rec, h, kind);
	if ((rc = write_all(r->disk, r->fd, rec, REC, r->records * REC))) {
		(void)set_live(r, h, kind == REC_MADE ? LIVE_REMOVED : LIVE_MADE); /* as it was */
		return rc;
	}
	r->records++;
	r->dirty = 1;
	/* Removed records past the live ones: rewrite (synced, so the
	 * records appended before are durable too). */
	if (kind == REC_REMOVED && r->records > 2 * r->n_live + 4096)
		return compact(r);
	return 0;
}

int ios_registry_add(struct ios_registry *r, uint64_t handle)
{
	return append(r, handle, REC_MADE);
}

int ios_registry_drop(struct ios_registry *r, uint64_t handle)
{
	return append(r, handle, REC_REMOVED);
}

int ios_registry_sync(struct ios_registry *r)
{
	int rc;

	if (!r->dirty)
		return 0;
	if ((rc = r->disk->ops->fdatasync(r->disk, r->fd)))
		return rc;
	r->dirty = 0;
	return 0;
}

/* A record of the log, with its place in it. */
struct rec_at {
	uint64_t handle;
	uint64_t index;
	uint32_t kind;
};

static int rec_at_cmp(const void *a, const void *b)
{
	const struct rec_at *x = a, *y = b;

	if (x->handle != y->handle)
		return x->handle < y->handle ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The live set from the records: each handle's last record decides. The
 * records are sorted by handle, then by place, rather than replayed one by
 * one: handles are random, so a replay would insert into the middle of the
 * sorted live set each time (quadratic in the objects held). */
static int replay(struct ios_registry *r, const uint8_t *buf, size_t n)
{
	struct rec_at *recs = malloc((n ? n : 1) * sizeof(*recs));
	size_t live = 0;

	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		recs[i] = (struct rec_at){ ios_le_get(buf + i * REC, 8), i,
					   (uint32_t)ios_le_get(buf + i * REC + 8, 4) };
	qsort(recs, n, sizeof(*recs), rec_at_cmp);
	for (size_t i = 0; i < n; i++)
		if ((i + 1 == n || recs[i + 1].handle != recs[i].handle) &&
		    recs[i].kind == REC_MADE)
			recs[live++].handle = recs[i].handle;
	free(r->live);
	r->live = malloc((live ? live : 1) * sizeof(*r->live));
	if (!r->live) {
		free(recs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < live; i++)
		r->live[i] = recs[i].handle;
	r->cap = live ? live : 1;
	r->n_live = live;
	free(recs);
	return 0;
}

/* Read the log and check its records, then replay them. */
static int load(struct ios_registry *r, char *err, size_t errlen)
{
	struct ios_disk *d = r->disk;
	struct stat sb;
	uint8_t *buf;
	size_t n, got = 0;
	int rc;

	if ((rc = d->ops->fstat(d, r->fd, &sb)))
		return rc;
	n = (size_t)sb.st_size / REC; /* a torn last record is dropped */
	if (!(buf = malloc(n ? n * REC : 1)))
		return -ENOMEM;
	while (got < n * REC) {
		struct iovec iov = { buf + got, n * REC - got };
		ssize_t k = d->ops->preadv(d, r->fd, &iov, 1, (off_t)got);

		if (k == -EINTR)
			continue;
		if (k <= 0) {
			free(buf);
			return k < 0 ? (int)k : -EIO;
		}
		got += (size_t)k;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *rec = buf + i * REC;
		uint32_t kind = (uint32_t)ios_le_get(rec + 8, 4);

		if (ios_le_get(rec + 12, 4) != tp_crc32c(0, rec, 12) ||
		    (kind != REC_MADE && kind != REC_REMOVED)) {
			if (i + 1 == n) {
				n--; /* torn by a crash while it was appended */
				break;
			}
			snprintf(err, errlen, "registry %s: record %zu of %zu is damaged", r->path,
				 i + 1, n);
			free(buf);
			return -EIO;
		}
	}
	rc = replay(r, buf, n);
	free(buf);
	if (rc)
		return rc;
	r->records = n;
	if (r->records > 2 * r->n_live + 4096)
		return compact(r);
	return 0;
}

int ios_registry_open(struct ios_disk *d, const char *path, enum ios_registry_open how,
		      struct ios_registry **out, char *err, size_t errlen)
{
	struct ios_registry *r = calloc(1, sizeof(*r));
	int rc = -ENOMEM;

	snprintf(err, errlen, "registry %s: no memory", path);
	if (!r)
		return rc;
	r->fd = -1;
	if (!(r->path = strdup(path)))
		goto fail;
	r->disk = d;
	r->fd = d->ops->open(d, 0, IOS_FILE_STORE, path,
			     O_RDWR | O_CLOEXEC | (how == IOS_REGISTRY_CREATE ? O_CREAT | O_EXCL : 0), 0600);
	if (r->fd < 0) {
		rc = r->fd;
		snprintf(err, errlen, "registry %s: %s", path, strerror(-rc));
		goto fail;
	}
	err[0] = 0;
	if ((rc = load(r, err, errlen))) {
		if (!err[0])
			snprintf(err, errlen, "registry %s: %s", path, strerror(-rc));
		goto fail;
	}
	*out = r;
	return 0;
fail:
	ios_registry_close(r);
	return rc;
}

void ios_registry_close(struct ios_registry *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		r->disk->ops->close(r->disk, r->fd);
	free(r->live);
	free(r->path);
	free(r);
}
