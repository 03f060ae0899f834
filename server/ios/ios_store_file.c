/*
 * ios_store_file.c - the store file, DIR/store: what makes a directory a
 * store, when it was made, whether it was remade, and its checksum block
 * (on-disk format). Read and checked when a store opens, written when one
 * is made.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_objfmt.h"
#include "ios_disk.h"
#include "ios_registry.h"
#include "ios_store_int.h"

/*
 * DIR/store, four lines: "tessera-ios store 1", "made SECONDS", "remade
 * 0|1" and "csum_block BYTES". It is written aside and renamed in, last
 * when a store is made, so a directory with this file holds a whole store
 * and its checksum block size (on-disk format: a store's sums are read
 * with the block they were written with, or not at all). A store made
 * before the block was a tunable has no csum_block line: TP_OBJ_BLOCK.
 * A store with another block says "store 2" instead, so that a daemon
 * older than the line refuses it rather than reads its sums as 4 KiB
 * ones. */
#define STORE_MAGIC "tessera-ios store 1\n"
#define STORE_MAGIC2 "tessera-ios store 2\n"

static int store_file_write(struct ios_store *st)
{
	struct ios_disk *d = st->disk;
	char path[4200], tmp[4200], text[128];
	struct iovec iov = { text, 0 };
	int fd, rc;

	snprintf(path, sizeof(path), "%s/store", st->root);
	snprintf(tmp, sizeof(tmp), "%s/store.new", st->root);
	iov.iov_len = (size_t)snprintf(text, sizeof(text), "%smade %" PRId64 "\nremade %d\n"
				       "csum_block %" PRIu32 "\n",
				       st->sh->csum_block == TP_OBJ_BLOCK ? STORE_MAGIC : STORE_MAGIC2,
				       st->made_s, st->remade, st->sh->csum_block);
	fd = d->ops->open(d, 0, IOS_FILE_STORE, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	rc = d->ops->pwritev(d, fd, &iov, 1, 0);
	rc = rc < 0 ? rc : (size_t)rc == iov.iov_len ? 0 : -EIO;
	if (!rc)
		rc = d->ops->fdatasync(d, fd);
	d->ops->close(d, fd);
	if (!rc)
		rc = d->ops->rename(d, tmp, path, IOS_RENAME_REPLACE);
	return rc ? rc : d->ops->syncdir(d, st->root);
}

/* The store file's text to the store's fields (csum_block into *block);
 * -EINVAL if it is not one. */
static int store_file_parse(struct ios_store *st, const char *text, uint32_t *block)
{
	int v2 = !strncmp(text, STORE_MAGIC2, strlen(STORE_MAGIC2));
	unsigned long long b = TP_OBJ_BLOCK;
	const char *line = strstr(text, "\ncsum_block ");

	if (!v2 && strncmp(text, STORE_MAGIC, strlen(STORE_MAGIC)))
		return -EINVAL;
	if (sscanf(text + strlen(STORE_MAGIC), "made %" SCNd64 "\nremade %d", &st->made_s,
		   &st->remade) != 2)
		return -EINVAL;
	/* No line: a store 1 made before it, the old constant. */
	if ((line && sscanf(line + 1, "csum_block %llu", &b) != 1) || (!line && v2) ||
	    !tp_obj_block_valid(b))
		return -EINVAL;
	*block = (uint32_t)b;
	return 0;
}

/* 0 and the store's fields (its checksum block into *block), -ENOENT if
 * DIR has no store file, -EINVAL if it is not one. */
static int store_file_read(struct ios_store *st, uint32_t *block)
{
	struct ios_disk *d = st->disk;
	char path[4200], text[128] = { 0 };
	struct iovec iov = { text, sizeof(text) - 1 };
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/store", st->root);
	fd = d->ops->open(d, 0, IOS_FILE_STORE, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	k = d->ops->preadv(d, fd, &iov, 1, 0);
	d->ops->close(d, fd);
	if (k < 0)
		return (int)k;
	return store_file_parse(st, text, block);
}

/* An existing store's checksum block `block` against the one asked for
 * (0: any). Sums are never read with another block than they were
 * written with: all would fail, or a partial write would sum anew bytes
 * never checked. */
static int store_block_check(const struct ios_store *st, uint32_t block, uint32_t want,
			     char *err, size_t errlen)
{
	if (!want || block == want)
		return 0;
	snprintf(err, errlen, "the store was made with csum_block %" PRIu32 " (%s/store), the "
		 "config says csum_block %" PRIu32 ": its checksums cannot be read with another "
		 "block size; set csum_block = %" PRIu32 " or give this daemon a new directory",
		 block, st->root, want, block);
	return -EINVAL;
}

/* The log's word on a store made where one had been (remade), or one
 * declared whole again (-N); NULL if there is nothing to say or no
 * memory. */
static char *remade_notice(const struct ios_store *st)
{
	char *notice = NULL;

	if (asprintf(&notice, st->remade
		     ? "storage directory %s held no store: made one, remade: it "
		       "cannot tell the objects it held before from holes, so it reports "
		       "every missing object it has not made since as lost (once the files "
		       "on it are dealt with, start once with -N)"
		     : "storage directory %s: the remade store is declared whole (-N): "
		       "missing objects it never held read as holes again", st->root) < 0)
		return NULL;
	return notice;
}

/* The existing store's file into st and *block, or -ENOENT; any other
 * failure says why in err. */
static int store_file_load(struct ios_store *st, uint32_t *block, uint32_t want, char *err,
			   size_t errlen)
{
	int rc = store_file_read(st, block);

	if (rc == -EINVAL) {
		snprintf(err, errlen, "%s/store is not a storage daemon's store file", st->root);
		return rc;
	}
	if (rc && rc != -ENOENT) {
		snprintf(err, errlen, "%s/store: %s", st->root, strerror(-rc));
		return rc;
	}
	return rc ? rc : store_block_check(st, *block, want, err, errlen);
}

/* A store made with another block is refused: its sums would all fail,
 * or worse, be rewritten by another rule. */
int store_init(struct ios_store *st, int existed, unsigned flags, uint32_t want,
	       char **notice, char *err, size_t errlen)
{
	char path[4200];
	uint32_t block = want ? want : TP_OBJ_BLOCK;
	int rc = store_file_load(st, &block, want, err, errlen), made = rc == -ENOENT;
	int was_remade;

	if (rc && !made)
		return rc;
	st->sh->csum_block = block;
	if (made) {
		st->made_s = (int64_t)time(NULL);
		st->remade = existed && !(flags & IOS_STORE_NEW);
	}
	snprintf(path, sizeof(path), "%s/registry", st->root);
	if ((rc = ios_registry_open(st->disk, path,
				     made ? IOS_REGISTRY_CREATE : IOS_REGISTRY_LOAD, &st->sh->reg,
				     err, errlen)))
		return rc;
	if (!made && !(st->remade && (flags & IOS_STORE_NEW)))
		return 0;
	was_remade = st->remade;
	if (!made)
		st->remade = 0;
	if ((rc = store_file_write(st))) {
		snprintf(err, errlen, "%s/store: %s", st->root, strerror(-rc));
		return rc;
	}
	if (notice && (st->remade || was_remade))
		*notice = remade_notice(st);
	return 0;
}
