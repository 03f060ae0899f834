/*
 * test_mds_store_durable.c - the metadata store across restarts: unique handles, old stores,
 * persistence, purge intents and group commit,
 * against a real LevelDB in a fresh temporary directory per test
 * (mds_store_fx.h).
 */
#include "mds_store_fx.h"

/* ---- handles and persistence ---- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Append the handles of `a` (object and storage objects) to h[]. */
static void collect(const struct mds_attr *a, uint64_t *h, size_t *nh)
{
	h[(*nh)++] = a->handle;
	if (a->type == MDS_FILE)
		for (uint32_t i = 0; i < a->layout.count; i++)
			h[(*nh)++] = a->layout.handles[i];
}

/* Handles are random: distinct across reopens and removals, never 0, and
 * handles handed out one after another are no neighbours (a caller who
 * knows its own handles cannot count to anyone else's). */
static void test_unique_handles(void **state)
{
	struct fx *f = *state;
	enum { ROUNDS = 3, PER = 300 };
	size_t cap = 2 + ROUNDS * (PER * (1 + N_IOS) + 1), nh = 0, near = 0;
	uint64_t *h = calloc(cap, sizeof *h);
	struct mds_attr a;
	char path[64];

	lookup_ok(f->st, "/", &a);
	collect(&a, h, &nh);
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(path, sizeof path, "/r%d", r);
		assert_int_equal(mds_mkdir(f->st, &ROOT, path, 0755, &a), 0);
		collect(&a, h, &nh);
		for (int i = 0; i < PER; i++) {
			snprintf(path, sizeof path, "/r%d/f%d", r, i);
			assert_int_equal(mkfile(f->st, &ROOT, path, &a), 0);
			collect(&a, h, &nh);
		}
		reopen(f, N_IOS);
	}
	/* removing names does not free handles for reuse */
	assert_int_equal(mds_unlink(f->st, &ROOT, "/r0/f0", NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/r0/f0", &a), 0);
	h[nh++] = a.handle;
	/* in the order handed out: two within 2^32 of each other happen by
	 * chance with odds of 2^-31 a pair; sequential handles are all 1 apart */
	for (size_t i = 1; i < nh; i++) {
		uint64_t d = h[i] > h[i - 1] ? h[i] - h[i - 1] : h[i - 1] - h[i];

		near += d < (UINT64_C(1) << 32);
	}
	assert_int_equal(near, 0);
	qsort(h, nh, sizeof *h, u64_cmp);
	assert_true(h[0] != 0);
	for (size_t i = 1; i < nh; i++)
		assert_true(h[i] != h[i - 1]);
	/* spread over the whole 64 bits, not one daemon's 48-bit range */
	assert_true(h[0] < (UINT64_C(1) << 60) && h[nh - 1] > (UINT64_C(15) << 60));
	free(h);
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static void put_meta(leveldb_writebatch_t *b, const char *key, uint64_t v)
{
	unsigned char val[8];

	put_be64(val, v);
	leveldb_writebatch_put(b, key, strlen(key), (char *)val, sizeof val);
}

#define LEGACY(n) (((uint64_t)MDS_INDEX << 48) | (n))
#define LEGACY_NEXT 4097 /* what a store that reserved one block persisted */

/* A store as the daemon wrote it when handles were sequential: the root
 * (counter 1), /old (2), /old/f (3, objects 4 to 7), "next_handle" past
 * the block it had reserved. Written with the store's own encoders. */
static void write_legacy_store(const char *dir)
{
	struct mds_attr root = { .handle = LEGACY(1), .type = MDS_DIR, .mode = 01777,
				 .nlink = 3, .nentries = 1 };
	struct mds_attr old = { .handle = LEGACY(2), .type = MDS_DIR, .mode = 0755,
				.nlink = 2, .nentries = 1 };
	struct mds_attr file = { .handle = LEGACY(3), .type = MDS_FILE, .mode = 0644,
				 .nlink = 1, .size = 5, .has_layout = 1 };
	leveldb_options_t *o = leveldb_options_create();
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	leveldb_writebatch_t *b = leveldb_writebatch_create();
	char *err = NULL;
	leveldb_t *db;

	file.layout.strip_size = 65536;
	file.layout.count = N_IOS;
	for (uint32_t i = 0; i < N_IOS; i++) {
		file.layout.servers[i] = i;
		file.layout.handles[i] = LEGACY(4 + i);
	}
	leveldb_options_set_create_if_missing(o, 1);
	db = leveldb_open(o, dir, &err);
	if (err)
		fail_msg("leveldb open %s: %s", dir, err);
	mds_batch_put_attr(b, &root);
	mds_batch_put_attr(b, &old);
	mds_batch_put_attr(b, &file);
	mds_batch_put_dirent(b, root.handle, "old", 3, old.handle, MDS_DIR);
	mds_batch_put_dirent(b, old.handle, "f", 1, file.handle, MDS_FILE);
	put_meta(b, "Mroot", root.handle);
	put_meta(b, "Mnnames", 3);
	put_meta(b, "Mnext_handle", LEGACY_NEXT);
	leveldb_write(db, wo, b, &err);
	if (err)
		fail_msg("leveldb write %s: %s", dir, err);
	leveldb_writebatch_destroy(b);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_options_destroy(o);
}

/* A store made when handles were sequential opens as it was and keeps
 * working: its handles are unchanged, new ones are random and never
 * inside the range it counted through, and its old files purge. */
static void test_legacy_store(void **state)
{
	struct fx *f = *state;
	static struct mds_intent in[16];
	struct mds_attr a, removed;
	char path[32];

	mds_store_close(f->st);
	f->st = NULL;
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	write_legacy_store(f->dir);
	reopen(f, N_IOS);

	lookup_ok(f->st, "/", &a);
	assert_true(a.handle == LEGACY(1));
	lookup_ok(f->st, "/old/f", &a);
	assert_true(a.handle == LEGACY(3) && a.size == 5 && a.layout.count == N_IOS);
	assert_true(a.layout.handles[N_IOS - 1] == LEGACY(3 + N_IOS));
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof path, "/old/n%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, &a), 0);
		for (uint32_t s = 0; s <= a.layout.count; s++) {
			uint64_t h = s ? a.layout.handles[s - 1] : a.handle;

			assert_true(h != 0);
			assert_false(h >= LEGACY(0) && h < LEGACY(LEGACY_NEXT));
		}
	}
	assert_int_equal(mds_unlink(f->st, &ROOT, "/old/f", &removed), 0);
	assert_int_equal(intents(f->st, in), 1);
	assert_true(in[0].file == LEGACY(3) && in[0].count == N_IOS);
	assert_true(in[0].handles[0] == LEGACY(4));
	reopen(f, N_IOS);
	lookup_ok(f->st, "/old/n199", &a);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/old"), -ENOTEMPTY);
}

static void test_persistence(void **state)
{
	struct fx *f = *state;
	enum { N = 200 };
	struct mds_attr a[N], b, d;
	char path[64];
	uint64_t n;

	assert_int_equal(mds_mkdir(f->st, &U1, "/p", 0750, NULL), 0);
	assert_int_equal(mds_set_dir_layout(f->st, &U1, "/p", 1 << 20, 2), 0);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof path, "/p/file-%d", i);
		assert_int_equal(mds_create(f->st, &U1, &(struct mds_create_req){ .path = path, .mode = 0640, .how = MDS_CREATE_EXCLUSIVE, .stripe_count = (i % N_IOS) + 1 },
				    &a[i], NULL), 0);
	}
	assert_int_equal(mds_rename(f->st, &U1, "/p/file-0", "/p/renamed",
				    NULL, NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/p/file-1", NULL), 0);
	reopen(f, N_IOS);
	lookup_ok(f->st, "/p", &d);
	assert_int_equal(d.nentries, N - 1);
	assert_int_equal(d.mode, 0750);
	assert_int_equal(d.uid, 1000);
	assert_true(d.has_layout);
	assert_int_equal(d.layout.strip_size, 1 << 20);
	assert_int_equal(d.layout.count, 2);
	lookup_ok(f->st, "/p/renamed", &b);
	assert_int_equal(b.handle, a[0].handle);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/p/file-1", &b), -ENOENT);
	for (int i = 2; i < N; i++) {
		snprintf(path, sizeof path, "/p/file-%d", i);
		lookup_ok(f->st, path, &b);
		a[i].ctime_ns = b.ctime_ns;
		assert_memory_equal(&a[i], &b, sizeof b);
	}
	assert_int_equal(mds_statfs(f->st, &n), 0);
	assert_int_equal(n, 1 + 1 + N - 1);
}

/* A record written before mtime_set existed (version 1: no trailing
 * mtime_set) still reads, with mtime_set = mtime. */
static void test_attr_version1(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b;
	unsigned char key[9];
	leveldb_options_t *opts;
	leveldb_readoptions_t *ro;
	leveldb_writeoptions_t *wo;
	leveldb_t *db;
	char *err = NULL, *val;
	size_t vlen;

	assert_int_equal(mkfile(f->st, &U1, "/old", &a), 0);
	mds_store_close(f->st);
	f->st = NULL;
	key[0] = 'A';
	for (int i = 0; i < 8; i++)
		key[1 + i] = (unsigned char)(a.handle >> (56 - 8 * i));
	opts = leveldb_options_create();
	ro = leveldb_readoptions_create();
	wo = leveldb_writeoptions_create();
	db = leveldb_open(opts, f->dir, &err);
	assert_null(err);
	val = leveldb_get(db, ro, (char *)key, sizeof key, &vlen, &err);
	assert_null(err);
	assert_non_null(val);
	assert_int_equal((unsigned char)val[0], 2);
	val[0] = 1;
	leveldb_put(db, wo, (char *)key, sizeof key, val, vlen - 8, &err);
	assert_null(err);
	leveldb_free(val);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_readoptions_destroy(ro);
	leveldb_options_destroy(opts);
	reopen(f, N_IOS);
	lookup_ok(f->st, "/old", &b);
	assert_true(b.mtime_set_ns == b.mtime_ns);
	assert_memory_equal(&a, &b, sizeof a);
}

/* ---- purge intents ---- */

/* Counts the changes a deferred store announces (mds_store_defer_sync). */
static void count_pending(void *arg)
{
	(*(int *)arg)++;
}

/* What a change costs in synced writes: one per change by default, none
 * for an acknowledged purge; deferred (the daemon's group commit), none
 * until the commit, which is one for all, and nothing is lost by a close
 * and reopen after it. */
static void test_group_commit(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, removed;
	static struct mds_intent in[16];
	char path[32];
	uint64_t before;
	int pending = 0;

	assert_int_equal(mkfile(f->st, &ROOT, "/a", &a), 0);
	before = mds_store_synced_writes(f->st);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/a", &removed), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	for (uint32_t s = 0; s < N_IOS; s++)
		assert_int_equal(mds_intent_done(f->st, a.handle, s), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	assert_int_equal(intents(f->st, in), 0);

	mds_store_defer_sync(f->st, count_pending, &pending);
	before = mds_store_synced_writes(f->st);
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "/g%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
	}
	for (int i = 0; i < 10; i += 2) {
		snprintf(path, sizeof(path), "/g%d", i);
		assert_int_equal(mds_unlink(f->st, &ROOT, path, &removed), 0);
	}
	assert_true(pending >= 15);                /* each change announced */
	assert_true(mds_store_synced_writes(f->st) == before);
	assert_int_equal(mds_store_commit(f->st), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	assert_int_equal(mds_store_commit(f->st), 0); /* nothing pending: no write */
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	reopen(f, N_IOS);
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "/g%d", i);
		assert_int_equal(mds_lookup(f->st, &ROOT, path, &a), i % 2 ? 0 : -ENOENT);
	}
	assert_int_equal(intents(f->st, in), 5);
}

/* Attribute changes (mode, owner, times): synchronous by default; once
 * deferred, written without announcing a change (no reply waits for
 * them) but awaiting the next commit (mds_store_needs_commit), which
 * syncs them; a size change is announced as names are. Each is there
 * after a reopen. */
static void test_attrs_relaxed(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, in = { .mode = 0600 };
	uint64_t before;
	int pending = 0;

	assert_int_equal(mkfile(f->st, &ROOT, "/r", &a), 0);
	before = mds_store_synced_writes(f->st);
	assert_int_equal(mds_setattr(f->st, &ROOT, "/r", MDS_SET_MODE, &in, &a), 0);
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	assert_false(mds_store_needs_commit(f->st));

	mds_store_defer_sync(f->st, count_pending, &pending);
	before = mds_store_synced_writes(f->st);
	for (uint32_t m = 0; m < 8; m++) {
		in.mode = 0640 | m;
		assert_int_equal(mds_setattr(f->st, &ROOT, "/r", MDS_SET_MODE, &in, &a), 0);
	}
	in.uid = 77;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/r", MDS_SET_UID, &in, &a), 0);
	assert_int_equal(pending, 0);
	assert_true(mds_store_needs_commit(f->st));
	assert_true(mds_store_synced_writes(f->st) == before);
	in.size = 10;
	assert_int_equal(mds_setattr(f->st, &ROOT, "/r", MDS_SET_SIZE, &in, &a), 0);
	assert_int_equal(pending, 1);
	assert_int_equal(mds_store_commit(f->st), 0);
	assert_false(mds_store_needs_commit(f->st));
	assert_true(mds_store_synced_writes(f->st) == before + 1);
	reopen(f, N_IOS);
	assert_int_equal(mds_lookup(f->st, &ROOT, "/r", &a), 0);
	assert_int_equal(a.mode & 07777, 0647);
	assert_int_equal(a.uid, 77);
}

/* Deferred changes larger than LevelDB's memory table (4 MiB by
 * default): LevelDB switches to a new log on the way, so the commit syncs
 * the older one too (mds_store_commit); every change is there after a
 * reopen. Whether the older log was still there to sync depends on
 * LevelDB's compaction thread; the commit succeeds either way. */
static void test_group_commit_log_switch(void **state)
{
	struct fx *f = *state;
	static char value[MDS_XATTR_VALUE_MAX], got[MDS_XATTR_VALUE_MAX];
	char path[32], name[24];
	size_t size;
	int pending = 0;

	mds_store_defer_sync(f->st, count_pending, &pending);
	for (int i = 0; i < 24; i++) {
		snprintf(path, sizeof(path), "/big%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, NULL), 0);
		for (int k = 0; k < 3; k++) {
			memset(value, 'a' + (i + k) % 26, sizeof(value));
			snprintf(name, sizeof(name), "user.v%d", k);
			assert_int_equal(mds_xattr_set(f->st, &ROOT, path, MDS_FOLLOW, name,
						       strlen(name), value, sizeof(value),
						       MDS_XATTR_ANY), 0);
		}
	}
	assert_int_equal(mds_store_commit(f->st), 0);
	reopen(f, N_IOS);
	for (int i = 0; i < 24; i++)
		for (int k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "/big%d", i);
			snprintf(name, sizeof(name), "user.v%d", k);
			assert_int_equal(mds_xattr_get(f->st, &ROOT, path, MDS_FOLLOW, name,
						       strlen(name), got, sizeof(got), &size), 0);
			assert_int_equal(size, sizeof(value));
			assert_int_equal(got[0], 'a' + (i + k) % 26);
			assert_int_equal(got[sizeof(got) - 1], 'a' + (i + k) % 26);
		}
}

/* ---- the commit's log sync (mds_logsync.h) ---- */

static void touch_log(const char *dir, const char *name)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(fp = fopen(path, "w"));
	fputs("record", fp);
	fclose(fp);
}

static void drop_file(const char *dir, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(unlink(path), 0);
}

/* Both modes hold every log of the directory and only logs, a log made
 * or removed since the last sync included, whether it came by the
 * watch's events or by listing; LevelDB's other files (tables, its info
 * log, the manifest) are not synced. */
static void test_logsync_follows_logs(void **state)
{
	static const enum mds_logsync_mode modes[] = { MDS_LOGSYNC_WATCH, MDS_LOGSYNC_SCAN };
	char err[256];

	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char dir[] = "/tmp/tessera-logsync.XXXXXX";
		struct mds_logsync *ls;

		assert_non_null(mkdtemp(dir));
		touch_log(dir, "000003.log");
		touch_log(dir, "LOG");
		assert_non_null(ls = mds_logsync_new(dir, modes[m]));
		assert_int_equal(mds_logsync_watching(ls), modes[m] == MDS_LOGSYNC_WATCH);
		assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
		assert_int_equal(mds_logsync_open_logs(ls), 1);
		assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
		assert_int_equal(mds_logsync_open_logs(ls), 1);
		touch_log(dir, "000005.log");
		touch_log(dir, "000004.ldb");
		touch_log(dir, "MANIFEST-000002");
		assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
		assert_int_equal(mds_logsync_open_logs(ls), 2);
		drop_file(dir, "000003.log");
		assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
		assert_int_equal(mds_logsync_open_logs(ls), 1);
		drop_file(dir, "000005.log");
		drop_file(dir, "000004.ldb");
		drop_file(dir, "MANIFEST-000002");
		drop_file(dir, "LOG");
		assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
		assert_int_equal(mds_logsync_open_logs(ls), 0);
		mds_logsync_free(ls);
		assert_int_equal(rmdir(dir), 0);
	}
}

/* The directory removed under a watch: the next sync lists it, failing
 * with -EIO and a message that names it, and lists it at every sync from
 * then on (no watch); made again, it is listed again. */
static void test_logsync_dir_gone(void **state)
{
	char dir[] = "/tmp/tessera-logsync.XXXXXX";
	struct mds_logsync *ls;
	char err[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	touch_log(dir, "000007.log");
	assert_non_null(ls = mds_logsync_new(dir, MDS_LOGSYNC_WATCH));
	assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
	assert_int_equal(mds_logsync_open_logs(ls), 1);
	drop_file(dir, "000007.log");
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), -EIO);
	assert_false(mds_logsync_watching(ls));
	assert_non_null(strstr(err, dir));
	assert_int_equal(mds_logsync_open_logs(ls), 0);
	/* made again: the failed listing is tried again at the next sync */
	assert_int_equal(mkdir(dir, 0700), 0);
	touch_log(dir, "000009.log");
	assert_int_equal(mds_logsync_run(ls, err, sizeof(err)), 0);
	assert_int_equal(mds_logsync_open_logs(ls), 1);
	mds_logsync_free(ls);
	drop_file(dir, "000009.log");
	assert_int_equal(rmdir(dir), 0);
}

static void test_intent_unlink_rename(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, b, removed, replaced;
	static struct mds_intent in[16];
	int replaced_file = 0;

	assert_int_equal(mkfile(f->st, &ROOT, "/a", &a), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/b", &b), 0);
	assert_int_equal(intents(f->st, in), 0);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/a", &removed), 0);
	/* the name's removal and the intent are one batch: reopen (a crash
	 * right after the reply) and the intent is there, naming every object */
	reopen(f, N_IOS);
	assert_int_equal(intents(f->st, in), 1);
	assert_true(in[0].file == a.handle);
	assert_int_equal(in[0].count, a.layout.count);
	for (uint32_t i = 0; i < a.layout.count; i++) {
		assert_int_equal(in[0].servers[i], a.layout.servers[i]);
		assert_true(in[0].handles[i] == a.layout.handles[i]);
	}
	/* rename over a file: its objects get an intent too */
	assert_int_equal(mkfile(f->st, &ROOT, "/c", NULL), 0);
	assert_int_equal(mds_rename(f->st, &ROOT, "/c", "/b", &replaced, &replaced_file), 0);
	assert_int_equal(replaced_file, 1);
	assert_int_equal(intents(f->st, in), 2);
	/* in handle order, which is not the order of creation */
	assert_true(in[a.handle < b.handle].file == b.handle);
	/* acknowledgements shrink an intent server by server, then drop it */
	for (uint32_t s = 0; s < N_IOS; s++) {
		assert_int_equal(mds_intent_done(f->st, a.handle, s), 0);
		assert_int_equal(mds_intent_done(f->st, a.handle, s), 0); /* twice: fine */
		reopen(f, N_IOS);
		uint32_t n = intents(f->st, in);
		if (s + 1 < N_IOS) {
			const struct mds_intent *ia = &in[a.handle > b.handle];

			assert_int_equal(n, 2);
			assert_true(ia->file == a.handle);
			for (uint32_t i = 0; i < ia->count; i++)
				assert_true(ia->servers[i] > s);
		} else {
			assert_int_equal(n, 1);
			assert_true(in[0].file == b.handle);
		}
	}
	/* directories and failed removals record nothing */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mds_rmdir(f->st, &ROOT, "/d"), 0);
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/ro", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/ro/x", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/ro/x", &removed), -EACCES);
	assert_int_equal(intents(f->st, in), 1);
}

static void test_file_list_paging(void **state)
{
	struct fx *f = *state;
	static struct mds_attr got[8];
	struct mds_attr a;
	uint64_t after = 0, made[20];
	uint32_t n, total = 0;
	int eof = 0, resume = 0;
	char path[32];

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/dir", 0755, NULL), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof(path), "/dir/f%d", i);
		assert_int_equal(mkfile(f->st, &ROOT, path, &a), 0);
		made[i] = a.handle;
	}
	qsort(made, 20, sizeof(*made), u64_cmp); /* the listing is in handle order */
	while (!eof) {
		assert_int_equal(mds_file_list(f->st, resume ? &after : NULL, 8, got, &n, &eof), 0);
		assert_true(n <= 8);
		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(got[i].type, MDS_FILE); /* no directories */
			assert_true(got[i].handle == made[total + i]);
			assert_true(got[i].has_layout);
		}
		total += n;
		if (n) {
			after = got[n - 1].handle;
			resume = 1;
		}
	}
	assert_int_equal(total, 20);
}

/* The sticky bit: in "/" (1777) and any sticky directory, another
 * user's entry cannot be removed or renamed (away or over), the entry's
 * owner, the directory's owner and root can. */
static void test_sticky(void **state)
{
	struct fx *f = *state;
	struct mds_attr a, r;
	int replaced;

	assert_int_equal(mkfile(f->st, &U1, "/u1file", NULL), 0);
	assert_int_equal(mds_mkdir(f->st, &U1, "/u1dir", 0777, &a), 0);
	assert_int_equal(mds_unlink(f->st, &U2, "/u1file", &r), -EPERM);
	assert_non_null(strstr(mds_store_errmsg(f->st), "sticky"));
	assert_int_equal(mds_rmdir(f->st, &U2, "/u1dir"), -EPERM);
	assert_int_equal(mds_rename(f->st, &U2, "/u1file", "/stolen", &r, &replaced), -EPERM);
	assert_int_equal(mkfile(f->st, &U2, "/u2file", NULL), 0);
	assert_int_equal(mds_rename(f->st, &U2, "/u2file", "/u1file", &r, &replaced), -EPERM);
	lookup_ok(f->st, "/u1file", &a);
	assert_int_equal(a.uid, U1.uid);
	lookup_ok(f->st, "/u1dir", &a);
	/* a sticky directory of U3's: U3 (its owner) may remove U1's entry */
	assert_int_equal(mds_mkdir(f->st, &U3, "/t", 01777, &a), 0);
	assert_int_equal(a.mode, 01777);
	assert_int_equal(mkfile(f->st, &U1, "/t/a", NULL), 0);
	assert_int_equal(mkfile(f->st, &U1, "/t/b", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U2, "/t/a", &r), -EPERM);
	assert_int_equal(mds_unlink(f->st, &U3, "/t/a", &r), 0);
	/* the owner and root may */
	assert_int_equal(mds_rename(f->st, &U1, "/t/b", "/t/c", &r, &replaced), 0);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/t/c", &r), 0);
	assert_int_equal(mds_unlink(f->st, &U1, "/u1file", &r), 0);
	assert_int_equal(mds_rmdir(f->st, &U1, "/u1dir"), 0);
	/* without the bit, write permission on the directory is enough */
	assert_int_equal(mds_mkdir(f->st, &U3, "/open", 0777, &a), 0);
	assert_int_equal(mkfile(f->st, &U1, "/open/x", NULL), 0);
	assert_int_equal(mds_unlink(f->st, &U2, "/open/x", &r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_group_commit),
		T(test_attrs_relaxed),
		T(test_group_commit_log_switch),
		T(test_sticky),
		T(test_unique_handles),
		T(test_legacy_store),
		T(test_persistence),
		T(test_attr_version1),
		T(test_intent_unlink_rename),
		T(test_file_list_paging),
#undef T
		cmocka_unit_test(test_logsync_follows_logs),
		cmocka_unit_test(test_logsync_dir_gone),
	};

	return cmocka_run_group_tests_name("mds_store_durable", tests, NULL, NULL);
}
