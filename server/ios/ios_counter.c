/*
 * ios_counter.c - an object's named counters (ios_store_counter), kept in
 * a side file beside its data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

#include "ios_disk.h"
#include "ios_registry.h" /* ios_le_get, ios_le_put */
#include "ios_store_int.h"

/*
 * The side file is CTR_MAGIC (8 bytes) then (key, value, owner uid, zero)
 * records of 24 bytes each, little-endian, the most recently used first.
 * A file without the magic is the older format: records of (key, value),
 * 16 bytes, whose owner is unknown (CTR_UNKNOWN); it is rewritten in the
 * new one at its next change. It is small (1.5 KiB at most) and read and
 * rewritten whole by each request. */
#define CTR_MAGIC 0x0000000252544354ull /* "TCTR", version 2 */
#define CTR_OLD_RECORD 16
#define CTR_RECORD 24
#define CTR_UNKNOWN UINT32_MAX

struct ctr {
	uint64_t key;
	int64_t value;
	uint32_t uid;
};

/* The records in buf (got bytes); a torn last record (a crash) is dropped. */
static size_t ctr_parse(const uint8_t *buf, size_t got, struct ctr *c)
{
	int v2 = got >= 8 && ios_le_get(buf, 8) == CTR_MAGIC;
	size_t size = v2 ? CTR_RECORD : CTR_OLD_RECORD, n;

	if (v2) {
		buf += 8;
		got -= 8;
	}
	n = got / size;
	if (n > IOS_COUNTERS)
		n = IOS_COUNTERS;
	for (size_t i = 0; i < n; i++, buf += size) {
		c[i].key = ios_le_get(buf, 8);
		c[i].value = (int64_t)ios_le_get(buf + 8, 8);
		c[i].uid = v2 ? (uint32_t)ios_le_get(buf + 16, 4) : CTR_UNKNOWN;
	}
	return n;
}

static size_t ctr_format(uint8_t *buf, const struct ctr *c, size_t n)
{
	memset(buf, 0, 8 + n * CTR_RECORD);
	ios_le_put(buf, 8, CTR_MAGIC);
	for (size_t i = 0; i < n; i++) {
		uint8_t *r = buf + 8 + i * CTR_RECORD;

		ios_le_put(r, 8, c[i].key);
		ios_le_put(r + 8, 8, (uint64_t)c[i].value);
		ios_le_put(r + 16, 4, c[i].uid);
	}
	return 8 + n * CTR_RECORD;
}

/* The least recently used record of the uid holding the most records
 * (owners unknown count as one uid). */
static size_t ctr_victim(const struct ctr *c, size_t n)
{
	uint32_t hog = c[n - 1].uid;
	size_t most = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		for (size_t j = 0; j < n; j++)
			k += c[j].uid == c[i].uid;
		if (k > most) {
			most = k;
			hog = c[i].uid;
		}
	}
	for (size_t i = n; i-- > 0;)
		if (c[i].uid == hog)
			return i;
	return n - 1;
}

/* key's record in c[0..*n), made for uid if there is none: its index, or
 * -EDQUOT when uid (not root) holds `share` records already. A full table
 * drops the least recently used record of the uid holding the most, so
 * one uid's keys push out only its own, not another user's counter. */
static long ctr_find(struct ctr *c, size_t *n, uint64_t key, uint32_t uid, uint32_t share)
{
	size_t mine = 0, at;

	for (size_t i = 0; i < *n; i++) {
		if (c[i].key == key)
			return (long)i;
		mine += c[i].uid == uid;
	}
	if (uid != 0 && mine >= share)
		return -EDQUOT;
	at = *n < IOS_COUNTERS ? (*n)++ : ctr_victim(c, *n);
	c[at] = (struct ctr){ key, 0, uid };
	return (long)at;
}

int ios_store_counter(struct ios_store *st, uint64_t handle, uint64_t key, enum ios_counter_op op,
		int64_t value, int64_t *old)
{
	return ios_store_counter_as(st, handle, key, op, value, NULL, old);
}

int ios_store_counter_as(struct ios_store *st, uint64_t handle, uint64_t key,
			 enum ios_counter_op op, int64_t value,
			 const struct ios_counter_owner *who, int64_t *old)
{
	struct ios_disk *d = st->disk;
	uint8_t buf[8 + IOS_COUNTERS * CTR_RECORD];
	struct ctr c[IOS_COUNTERS], mine;
	uint64_t syscalls = 0;
	struct iovec iov = { buf, sizeof(buf) };
	char path[4096];
	ssize_t got;
	size_t n;
	long at;
	int fd, rc = 0;

	store_object_path(st, handle, ".ctr", path, sizeof(path));
	fd = d->ops->open(d, handle, IOS_FILE_COUNTERS, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	got = store_full_read(st, fd, &iov, 1, 0, &syscalls);
	if (got < 0) {
		rc = (int)got;
		goto out;
	}
	n = ctr_parse(buf, (size_t)got, c);
	at = ctr_find(c, &n, key, who ? who->uid : 0, who ? who->share : IOS_COUNTERS);
	if (at < 0) {
		rc = (int)at;
		goto out;
	}
	mine = c[at];
	if (op == IOS_COUNTER_SET) {
		*old = mine.value;
		mine.value = value;
	} else if ((value > 0 && mine.value > INT64_MAX - value) ||
		   (value < 0 && mine.value < INT64_MIN - value)) {
		rc = -EOVERFLOW;
		goto out;
	} else {
		*old = mine.value;
		mine.value += value;
	}
	memmove(c + 1, c, (size_t)at * sizeof(*c)); /* the one used now goes first */
	c[0] = mine;
	iov.iov_base = buf;
	iov.iov_len = ctr_format(buf, c, n);
	got = store_full_write(st, fd, &iov, 1, 0, &syscalls);
	if (got < 0)
		rc = (int)got;
out:
	d->ops->close(d, fd);
	return rc;
}
