/*
 * fuse_kattr.c - what the kernel was last told of each file's attributes,
 * so that an open drops the kernel's attributes only when they are not
 * the ones the open found.
 *
 * Close-to-open (tessera_fuse.c): an open of a file makes the kernel's
 * attributes of it those of the servers. Its size and mtime, which the
 * kernel keeps itself under the writeback cache, are set
 * (tf_sync_kernel_attrs); the rest were dropped at every open (a notice
 * through /dev/fuse), and the kernel asked them again (a GETATTR) at the
 * next permission check of the name and at the program's fstat right
 * after the open (which a close since asks anyway: under the writeback
 * cache the kernel drops st_blocks at every close). Now they are dropped
 * only when the attributes the open found differ from the last the mount
 * gave the kernel for that file (getattr's answers, which also answer its
 * lookups, creates and setattrs): another client changed them since, or
 * this mount did through a path that does not record them.
 *
 * A table of KATTR_SLOTS (1 MiB, made at mount), direct-mapped by handle,
 * each slot a file's handle and a 64-bit digest of the attributes given:
 * a file whose slot another took is not known, and its open drops the
 * kernel's attributes as before; two different sets of attributes are
 * taken for the same one at odds of about 2^-64. Entries given by
 * readdirplus forget their file's record (the listing's answer may reach
 * the kernel after a getattr's). Only under the writeback cache: without
 * it, the kernel takes the size from these attributes, and every open
 * drops them.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_int.h"

static unsigned slot_of(uint64_t handle)
{
	handle ^= handle >> 33;
	handle *= 0xff51afd7ed558ccdull;
	handle ^= handle >> 33;
	return (unsigned)(handle % KATTR_SLOTS);
}

/* FNV-1a over one value's bytes, continuing from h. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t time_mix(uint64_t h, const struct timespec *t)
{
	int64_t s = (int64_t)t->tv_sec, ns = (int64_t)t->tv_nsec;

	return mix(mix(h, &s, sizeof(s)), &ns, sizeof(ns));
}

/* The digest of every attribute the kernel is given (field by field:
 * no padding counts). */
static uint64_t digest(const struct tessera_stat *ts)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mix(h, &ts->mode, sizeof(ts->mode));
	h = mix(h, &ts->uid, sizeof(ts->uid));
	h = mix(h, &ts->gid, sizeof(ts->gid));
	h = mix(h, &ts->nlink, sizeof(ts->nlink));
	h = mix(h, &ts->size, sizeof(ts->size));
	h = mix(h, &ts->blocks, sizeof(ts->blocks));
	h = mix(h, &ts->rdev, sizeof(ts->rdev));
	h = time_mix(h, &ts->atime);
	h = time_mix(h, &ts->mtime);
	return time_mix(h, &ts->ctime);
}

int tf_kattrs_init(struct tf_kattrs *k)
{
	k->slot = calloc(KATTR_SLOTS, sizeof(*k->slot));
	if (!k->slot)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	return 0;
}

void tf_kattrs_free(struct tf_kattrs *k)
{
	if (!k->slot)
		return;
	free(k->slot);
	k->slot = NULL;
	pthread_mutex_destroy(&k->lock);
}

void tf_kattr_told(struct tfuse *t, const struct tessera_stat *ts)
{
	uint64_t sum = digest(ts);
	struct tf_kattr *k;

	if (!ts->handle || !t->kattrs.slot)
		return;
	k = &t->kattrs.slot[slot_of(ts->handle)];
	pthread_mutex_lock(&t->kattrs.lock);
	k->handle = ts->handle;
	k->sum = sum;
	pthread_mutex_unlock(&t->kattrs.lock);
}

void tf_kattr_forget(struct tfuse *t, uint64_t handle)
{
	struct tf_kattr *k;

	if (!t->kattrs.slot)
		return;
	k = &t->kattrs.slot[slot_of(handle)];
	pthread_mutex_lock(&t->kattrs.lock);
	if (k->handle == handle)
		k->handle = 0;
	pthread_mutex_unlock(&t->kattrs.lock);
}

int tf_kattr_current(struct tfuse *t, const struct tessera_stat *ts)
{
	const struct tf_kattr *k;
	uint64_t sum;
	int same;

	if (!t->writeback || !ts->handle || !t->kattrs.slot)
		return 0;
	sum = digest(ts);
	k = &t->kattrs.slot[slot_of(ts->handle)];
	pthread_mutex_lock(&t->kattrs.lock);
	same = k->handle == ts->handle && k->sum == sum;
	pthread_mutex_unlock(&t->kattrs.lock);
	return same;
}
