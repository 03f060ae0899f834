/*
 * mds_store_fx.h - the fixture the metadata store's unit tests share
 * (test_mds_store*.c): a real LevelDB store in a fresh temporary directory
 * per test, users to act as, and small helpers. Every test file includes
 * it; what one file does not use is marked so the compiler does not warn.
 */
#ifndef MDS_STORE_FX_H
#define MDS_STORE_FX_H
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <leveldb/c.h>

#include "mds_store.h"
#include "mds_store_int.h" /* the encoders, for a store written by hand */
#include "mds_xattr.h"

#define FX_UNUSED __attribute__((unused))

#define N_IOS 4
#define MDS_INDEX 3

struct fx {
	char dir[64];
	struct mds_store *st;
};

FX_UNUSED static const uint32_t root_gids[] = { 0 };
FX_UNUSED static const struct mds_cred ROOT = { 0, 1, root_gids };
FX_UNUSED static const uint32_t u1_gids[] = { 1000 };
FX_UNUSED static const struct mds_cred U1 = { 1000, 1, u1_gids };
FX_UNUSED static const uint32_t u2_gids[] = { 2000, 500 };
FX_UNUSED static const struct mds_cred U2 = { 2000, 2, u2_gids };   /* in group 500 */
FX_UNUSED static const uint32_t u3_gids[] = { 3000 };
FX_UNUSED static const struct mds_cred U3 = { 3000, 1, u3_gids };

FX_UNUSED static int rm_cb(const char *p, const struct stat *sb, int flag,
		 struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

FX_UNUSED static void reopen(struct fx *f, uint32_t n_ios)
{
	char err[256] = "";
	int rc;

	if (f->st)
		mds_store_close(f->st);
	f->st = NULL;
	rc = mds_store_open(f->dir, MDS_INDEX, n_ios, &f->st, err, sizeof(err));
	if (rc)
		fail_msg("open %s: %d %s", f->dir, rc, err);
}

FX_UNUSED static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);

	assert_non_null(f);
	strcpy(f->dir, "/tmp/test_mds_store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	reopen(f, N_IOS);
	*state = f;
	return 0;
}

FX_UNUSED static int teardown(void **state)
{
	struct fx *f = *state;

	mds_store_close(f->st);
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

FX_UNUSED static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Create a file (non-exclusive off: exclusive) with the default layout. */
FX_UNUSED static int mkfile(struct mds_store *st, const struct mds_cred *c,
		  const char *path, struct mds_attr *out)
{
	struct mds_attr a;
	int created = -1, rc;

	rc = mds_create(st, c, &(struct mds_create_req){ .path = path, .mode = 0644,
			.how = MDS_CREATE_EXCLUSIVE }, out ? out : &a, &created);
	if (rc == 0)
		assert_int_equal(created, 1);
	return rc;
}

FX_UNUSED static void lookup_ok(struct mds_store *st, const char *path,
		      struct mds_attr *out)
{
	int rc = mds_lookup(st, &ROOT, path, out);

	if (rc)
		fail_msg("lookup %s: %d %s", path, rc, mds_store_errmsg(st));
}

FX_UNUSED static uint32_t intents(struct mds_store *st, struct mds_intent *out)
{
	uint32_t n = 0;
	int eof = 0;

	assert_int_equal(mds_intent_list(st, NULL, 16, out, &n, &eof), 0);
	assert_true(eof);
	return n;
}

#endif
