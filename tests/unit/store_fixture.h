/*
 * store_fixture.h - the object-store unit tests' fixture: a store over a
 * disk in a fresh temporary directory, removed with all it holds after
 * each test (CMocka setup and teardown).
 */
#ifndef TESSERA_TEST_STORE_FIXTURE_H
#define TESSERA_TEST_STORE_FIXTURE_H

#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios_disk.h"
#include "ios_store.h"

struct fx {
	char dir[64];
	struct ios_disk *disk;     /* NULL: none made yet */
	struct ios_store *st;      /* NULL: not open */
	uint32_t block;            /* the store's csum_block; 0: the default */
};

static inline int fx_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/tessera-ios-store-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* The same with a store of another checksum block (the config's
 * csum_block): the tests that run at both. */
static inline int fx_setup_block(void **state, uint32_t block)
{
	int rc = fx_setup(state);

	if (!rc)
		((struct fx *)*state)->block = block;
	return rc;
}

static inline int fx_setup_512(void **state)
{
	return fx_setup_block(state, 512);
}

static inline int fx_setup_64k(void **state)
{
	return fx_setup_block(state, 65536);
}

/* Close the store and its disk (both may be absent). */
static inline void fx_close(struct fx *f)
{
	ios_store_close(f->st);
	f->st = NULL;
	if (f->disk)
		f->disk->ops->destroy(f->disk);
	f->disk = NULL;
}

/* Remove f->dir and all it holds. */
static inline void fx_wipe(struct fx *f)
{
	nftw(f->dir, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* One piece of object h written from data / filled with `fill`, or read
 * into data: what the store returns (bytes or -errno). */
static inline ssize_t fx_put(struct fx *f, uint64_t h, uint64_t off, const uint8_t *data,
			     size_t len)
{
	struct ios_piece p = { off, len };
	uint64_t calls = 0;

	return ios_store_write_pieces(f->st, h, &p, 1, data, &calls);
}

static inline ssize_t fx_put_fill(struct fx *f, uint64_t h, uint64_t off, uint8_t fill,
				  size_t len)
{
	uint8_t *data = malloc(len ? len : 1);
	ssize_t rc;

	if (!data)
		abort();
	memset(data, fill, len);
	rc = fx_put(f, h, off, data, len);
	free(data);
	return rc;
}

static inline ssize_t fx_get(struct fx *f, uint64_t h, uint64_t off, uint8_t *data, size_t len)
{
	struct ios_piece p = { off, len };
	uint64_t calls = 0, size;

	return ios_store_read_pieces(f->st, h, &p, 1, data, &size, &calls);
}

/* The path of object h's file with `suffix` ("", ".sum"). */
static inline void fx_file_of(struct fx *f, uint64_t h, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/objects/%02x/%016" PRIx64 "%s", f->dir, (unsigned)(h & 0xff), h,
		 suffix);
}

static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	fx_close(f);
	fx_wipe(f);
	free(f);
	return 0;
}

#endif
