/*
 * store_fixture.h - the object-store unit tests' fixture: a store over a
 * disk in a fresh temporary directory, removed with all it holds after
 * each test (CMocka setup and teardown).
 */
#ifndef TESSERA_TEST_STORE_FIXTURE_H
#define TESSERA_TEST_STORE_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

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

static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	fx_close(f);
	fx_wipe(f);
	free(f);
	return 0;
}

#endif
