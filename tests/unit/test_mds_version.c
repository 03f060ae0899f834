/*
 * test_mds_version.c - the version server's tables (server/mds/mds_version.h)
 * over a real LevelDB store (mds_store_fx.h): versioned files at create and
 * as a directory's default, ID#s, commits in order, resends, forged and
 * foreign ID#s, the limits, reads and snapshots pinning merges, MERGED
 * dropping commits, a session's end, a restart (what survives, what does
 * not), an unlink dropping the table, and blocks of ID#s one session takes
 * for a job that others commit under (signed, the file's, live).
 */
#include "mds_store_fx.h"

#include "cap.h"
#include "mds_version.h"

#define SA 0xa11ceull  /* a session */
#define SB 0xb0bull    /* another */
#define SC 0xc0ffeeull /* a third session */
#define T(id, io) ((uint64_t)(id) << 32 | (io))

static const struct cap_key KEY = { { 1, 2, 3, 4, 5, 6, 7, 8 } };

/* A versioned file of 3 objects, and the tables over the store. */
struct vfx {
	struct fx *f;
	struct mds_attr a;
	struct mds_vfile vf;
	struct mds_versions *vs;
};

static struct mds_versions *tables(struct fx *f, size_t vmap_bytes)
{
	struct mds_versions *vs = mds_versions_new(f->st, &KEY, vmap_bytes, 1000);

	assert_non_null(vs);
	return vs;
}

static void vfile(struct vfx *x, struct fx *f, const char *path)
{
	int created;

	x->f = f;
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){
			.path = path, .mode = 0644, .how = MDS_CREATE_EXCLUSIVE,
			.stripe_count = 3, .versioned = MDS_VERSIONING_ON }, &x->a, &created), 0);
	assert_true(x->a.layout.versioned);
	x->vf = (struct mds_vfile){ x->a.handle, x->a.layout.count, x->a.layout.handles };
	x->vs = tables(f, 1 << 20);
}

static void vdone(struct vfx *x)
{
	mds_versions_free(x->vs);
}

/* The error message names the file and says `what`. */
static void msg_has(struct vfx *x, const char *what)
{
	char hex[17];
	const char *m = mds_versions_errmsg(x->vs);

	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)x->a.handle);
	if (!strstr(m, hex) || !strstr(m, what))
		fail_msg("message \"%s\" lacks %s or %s", m, hex, what);
}

static uint64_t commit(struct vfx *x, uint64_t session, uint64_t t, const uint32_t *slots,
		       size_t n)
{
	Tessera__VersionCommit c;
	int rc = mds_version_commit(x->vs, &x->vf, session, t, slots, n, &c);

	if (rc)
		fail_msg("commit %016llx: %d %s", (unsigned long long)t, rc,
			 mds_versions_errmsg(x->vs));
	assert_int_equal(c.file, x->a.handle);
	assert_int_equal(c.t, t);
	assert_true(cap_commit_ok(&KEY, &c));
	return c.vm;
}

static int try_commit(struct vfx *x, uint64_t session, uint64_t t, uint32_t slot)
{
	Tessera__VersionCommit c;

	return mds_version_commit(x->vs, &x->vf, session, t, &slot, 1, &c);
}

static uint32_t ids(struct vfx *x, uint64_t session, uint32_t n)
{
	uint32_t first = 0;

	assert_int_equal(mds_version_ids(x->vs, &x->vf, session, n, &first), 0);
	return first;
}

static struct mds_vstate vstate(struct vfx *x)
{
	struct mds_vstate s;

	assert_int_equal(mds_version_state(x->vs, &x->vf, &s), 0);
	return s;
}

static uint64_t upto(struct vfx *x)
{
	struct mds_vgrant g;

	assert_int_equal(mds_version_merge(x->vs, &x->vf, 5000, &g), 0);
	assert_true(cap_grant_ok(&KEY, &g.msg));
	assert_int_equal(g.msg.expires_ns, 6000);
	return g.msg.upto;
}

static size_t vmap_len(struct vfx *x, uint64_t to)
{
	Tessera__VersionCommit **v;
	size_t n;

	assert_int_equal(mds_version_vmap(x->vs, &x->vf, to, &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(cap_commit_ok(&KEY, v[i]));
		assert_true(v[i]->vm <= to);
		assert_true(i == 0 || v[i]->vm > v[i - 1]->vm);
	}
	free(v);
	return n;
}

/* ---- versioned files in the store */

static void test_versioned_layout(void **state)
{
	struct fx *f = *state;
	struct mds_attr a;
	int created;

	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d", 0755, NULL), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/plain", &a), 0);
	assert_false(a.layout.versioned);
	assert_int_equal(mds_set_dir_versioned(f->st, &ROOT, "/d"), 0);
	assert_int_equal(mds_set_dir_versioned(f->st, &U1, "/d"), -EPERM);
	lookup_ok(f->st, "/d", &a);
	assert_true(a.has_layout && a.layout.versioned);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/v", &a), 0);
	assert_true(a.layout.versioned);
	/* a subdirectory takes the default; a strip change keeps it */
	assert_int_equal(mds_mkdir(f->st, &ROOT, "/d/sub", 0755, NULL), 0);
	assert_int_equal(mds_set_dir_layout(f->st, &ROOT, "/d/sub", 0, 2), 0);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/sub/v", &a), 0);
	assert_true(a.layout.versioned);
	assert_int_equal(a.layout.count, 2);
	/* asked for at create, outside */
	assert_int_equal(mds_create(f->st, &ROOT, &(struct mds_create_req){
			.path = "/asked", .mode = 0644, .how = MDS_CREATE_EXCLUSIVE,
			.versioned = MDS_VERSIONING_ON }, &a, &created), 0);
	assert_true(a.layout.versioned);
	/* kept across a reopen */
	reopen(f, N_IOS);
	lookup_ok(f->st, "/d/v", &a);
	assert_true(a.layout.versioned);
	lookup_ok(f->st, "/asked", &a);
	assert_true(a.layout.versioned);
	assert_int_equal(mds_file_by_handle(f->st, a.handle, &a), 0);
	assert_true(a.layout.versioned);
	lookup_ok(f->st, "/d/plain", &a);
	assert_false(a.layout.versioned);
	/* inherit clears it: new files plain again, old ones stay */
	assert_int_equal(mds_clear_dir_layout(f->st, &ROOT, "/d"), 0);
	lookup_ok(f->st, "/d", &a);
	assert_false(a.has_layout);
	assert_int_equal(mkfile(f->st, &ROOT, "/d/plain2", &a), 0);
	assert_false(a.layout.versioned);
	lookup_ok(f->st, "/d/v", &a);
	assert_true(a.layout.versioned);
}

/* ---- ID#s and commits */

static void test_commit_order(void **state)
{
	struct vfx x;
	uint32_t s0 = 0, s01[] = { 1, 0, 1 }, s2 = 2;
	Tessera__VersionCommit c;

	vfile(&x, *state, "/f");
	assert_int_equal(ids(&x, SA, 2), 1);
	assert_int_equal(ids(&x, SB, 1), 3);
	assert_int_equal(commit(&x, SA, T(1, 1), &s0, 1), 1);
	assert_int_equal(commit(&x, SB, T(3, 1), &s2, 1), 2);
	/* slots to handles, in slot order, each once */
	assert_int_equal(mds_version_commit(x.vs, &x.vf, SA, T(2, 7), s01, 3, &c), 0);
	assert_int_equal(c.vm, 3);
	assert_int_equal(c.n_handles, 2);
	assert_int_equal(c.handles[0], x.a.layout.handles[0]);
	assert_int_equal(c.handles[1], x.a.layout.handles[1]);
	/* a resend: the same version, signed the same */
	assert_int_equal(commit(&x, SA, T(1, 1), &s0, 1), 1);
	assert_int_equal(commit(&x, SA, T(2, 7), s01, 3), 3);
	/* ... but not with other objects */
	assert_int_equal(try_commit(&x, SA, T(1, 1), 2), -EINVAL);
	msg_has(&x, "other objects");
	/* bad slots, none, IO# 0 */
	assert_int_equal(try_commit(&x, SA, T(1, 2), 3), -EINVAL);
	msg_has(&x, "slot 3");
	assert_int_equal(mds_version_commit(x.vs, &x.vf, SA, T(1, 2), NULL, 0, &c), -EINVAL);
	assert_int_equal(try_commit(&x, SA, T(1, 0), 0), -EINVAL);
	assert_int_equal(vstate(&x).newest, 3);
	assert_int_equal(vstate(&x).unmerged, 3);
	/* a read sees them all; the newest first version is the newest */
	uint64_t vr;

	assert_int_equal(mds_version_read(x.vs, &x.vf, SA, "", 0, &vr), 0);
	assert_int_equal(vr, 3);
	assert_int_equal(vmap_len(&x, vr), 3);
	assert_int_equal(vmap_len(&x, 2), 2);
	vdone(&x);
}

static void test_forged_ids(void **state)
{
	struct vfx x;

	vfile(&x, *state, "/f");
	assert_int_equal(ids(&x, SA, 1), 1);
	assert_int_equal(ids(&x, SB, 1), 2);
	/* another session's ID# */
	assert_int_equal(try_commit(&x, SB, T(1, 1), 0), -EPERM);
	msg_has(&x, "forged commit");
	msg_has(&x, "not your ID#");
	/* never handed out, 0, above 32 bits */
	assert_int_equal(try_commit(&x, SA, T(9, 1), 0), -EPERM);
	msg_has(&x, "never handed out");
	assert_int_equal(try_commit(&x, SA, T(0, 1), 0), -EPERM);
	/* ended: its own session may not, nor may it end another's */
	assert_int_equal(mds_version_id_end(x.vs, &x.vf, SB, 1), -EPERM);
	msg_has(&x, "not your ID#");
	assert_int_equal(mds_version_id_end(x.vs, &x.vf, SA, 1), 0);
	assert_int_equal(mds_version_id_end(x.vs, &x.vf, SA, 1), 0); /* again: nothing */
	assert_int_equal(try_commit(&x, SA, T(1, 1), 0), -EPERM);
	msg_has(&x, "not live");
	assert_int_equal(vstate(&x).newest, 0);
	assert_int_equal(vstate(&x).ids, 1);
	vdone(&x);
}

static void test_limits(void **state)
{
	struct vfx x;
	uint32_t first;
	uint64_t vr, v;
	char name[300];

	vfile(&x, *state, "/f");
	assert_int_equal(mds_version_ids(x.vs, &x.vf, SA, 0, &first), -EINVAL);
	assert_int_equal(mds_version_ids(x.vs, &x.vf, SA, MDS_VERSION_ID_COUNT + 1, &first),
			 -EINVAL);
	msg_has(&x, "ID#s");
	assert_int_equal(ids(&x, SA, MDS_VERSION_ID_COUNT), 1);
	assert_int_equal(mds_version_ids(x.vs, &x.vf, SB, 1, &first), -EBUSY);
	msg_has(&x, "live");
	/* commits */
	for (uint32_t i = 1; i <= MDS_VERSION_COMMITS; i++)
		assert_int_equal(try_commit(&x, SA, T(1, i), 0), 0);
	assert_int_equal(try_commit(&x, SA, T(1, MDS_VERSION_COMMITS + 1), 0), -EBUSY);
	msg_has(&x, "merge first");
	/* reads */
	for (int i = 0; i < MDS_VERSION_READS; i++)
		assert_int_equal(mds_version_read(x.vs, &x.vf, SB, NULL, 0, &vr), 0);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, NULL, 0, &vr), -EBUSY);
	msg_has(&x, "reads in progress");
	/* ending one (Vr > 0) in the same call makes room */
	assert_int_equal(vr, MDS_VERSION_COMMITS);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, NULL, vr, &vr), 0);
	/* snapshots: names and count */
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, "", 1, &v), -EINVAL);
	memset(name, 'n', sizeof(name));
	name[MDS_VERSION_SNAP_NAME + 1] = '\0';
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, name, 1, &v), -EINVAL);
	msg_has(&x, "snapshot's name");
	name[MDS_VERSION_SNAP_NAME] = '\0';
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, name, 1, &v), 0);
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, name, 1, &v), -EEXIST);
	for (int i = 1; i < MDS_VERSION_SNAPS; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(mds_version_snap_create(x.vs, &x.vf, name, 1, &v), 0);
	}
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, "one-more", 1, &v), -EBUSY);
	msg_has(&x, "snapshots");
	vdone(&x);
}

/* The commits of a file fit one reply: a small byte bound is "merge first"
 * too. */
static void test_vmap_bytes(void **state)
{
	struct vfx x;
	int i, rc = 0;

	vfile(&x, *state, "/f");
	mds_versions_free(x.vs);
	x.vs = tables(*state, 1000);
	assert_int_equal(ids(&x, SA, 1), 1);
	for (i = 1; i < 100 && !(rc = try_commit(&x, SA, T(1, i), 0)); i++)
		;
	assert_int_equal(rc, -EBUSY);
	msg_has(&x, "merge first");
	assert_true(i > 5 && i < 30);
	vdone(&x);
}

/* ---- merges: pinned by reads and snapshots; MERGED drops commits */

static void test_reads_pin(void **state)
{
	struct vfx x;
	uint64_t vr, vr2;

	vfile(&x, *state, "/f");
	assert_int_equal(upto(&x), 0);
	ids(&x, SA, 1);
	for (int i = 1; i <= 3; i++)
		try_commit(&x, SA, T(1, i), 0);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, NULL, 0, &vr), 0);
	assert_int_equal(vr, 3);
	try_commit(&x, SA, T(1, 4), 0);
	try_commit(&x, SA, T(1, 5), 0);
	assert_int_equal(upto(&x), 3);
	/* a second read at 5; the first ends through end_read */
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, NULL, vr, &vr2), 0);
	assert_int_equal(vr2, 5);
	assert_int_equal(upto(&x), 5);
	/* a read of another session's Vr cannot end it */
	try_commit(&x, SA, T(1, 6), 0);
	assert_int_equal(mds_version_read_end(x.vs, &x.vf, SA, 5), 0);
	assert_int_equal(upto(&x), 5);
	assert_int_equal(mds_version_read_end(x.vs, &x.vf, SB, 5), 0);
	assert_int_equal(upto(&x), 6);
	assert_int_equal(vstate(&x).reads, 0);
	vdone(&x);
}

static void test_snapshots_pin(void **state)
{
	struct vfx x;
	uint64_t v, vr;
	Tessera__VersionSnapshot *s;
	size_t n;

	vfile(&x, *state, "/f");
	ids(&x, SA, 1);
	try_commit(&x, SA, T(1, 1), 0);
	try_commit(&x, SA, T(1, 2), 1);
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, "two", 77, &v), 0);
	assert_int_equal(v, 2);
	for (int i = 3; i <= 5; i++)
		try_commit(&x, SA, T(1, i), 2);
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, "five", 78, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(upto(&x), 2);
	/* a read as of it */
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, "two", 0, &vr), 0);
	assert_int_equal(vr, 2);
	assert_int_equal(vmap_len(&x, vr), 2);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, "nope", 0, &vr), -ENOENT);
	msg_has(&x, "no such snapshot");
	assert_int_equal(mds_version_read_end(x.vs, &x.vf, SB, 2), 0);
	/* listed in version order */
	assert_int_equal(mds_version_snap_list(x.vs, &x.vf, &s, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].name, "two");
	assert_int_equal(s[0].ctime_ns, 77);
	assert_string_equal(s[1].name, "five");
	free(s);
	assert_int_equal(mds_version_snap_drop(x.vs, &x.vf, "two"), 0);
	assert_int_equal(mds_version_snap_drop(x.vs, &x.vf, "two"), -ENOENT);
	assert_int_equal(upto(&x), 5);
	vdone(&x);
}

static void test_merged_drops(void **state)
{
	struct vfx x;
	uint32_t s01[] = { 0, 1 }, s0 = 0;
	const uint64_t *h;

	vfile(&x, *state, "/f");
	h = x.a.layout.handles;
	ids(&x, SA, 1);
	commit(&x, SA, T(1, 1), s01, 2);   /* 1: objects 0 and 1 */
	commit(&x, SA, T(1, 2), &s0, 1);   /* 2: object 0 */
	commit(&x, SA, T(1, 3), s01, 2);   /* 3 */
	assert_int_equal(upto(&x), 3);
	/* not one of its objects; past what a merge may reach */
	assert_int_equal(mds_version_merged(x.vs, &x.vf, 0x1234, 2), -EINVAL);
	msg_has(&x, "not one of its objects");
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[0], 4), -EINVAL);
	msg_has(&x, "past what a merge may reach");
	/* object 0 up to 2: commit 2 goes, 1 waits for object 1 */
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[0], 2), 0);
	assert_int_equal(vstate(&x).unmerged, 2);
	assert_int_equal(vstate(&x).merged, 0);
	assert_int_equal(vmap_len(&x, UINT64_MAX), 2);
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[1], 2), 0);
	assert_int_equal(vstate(&x).unmerged, 1);
	assert_int_equal(vstate(&x).merged, 2);
	/* again: nothing more; object 2 never wrote them */
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[1], 2), 0);
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[2], 3), 0);
	assert_int_equal(vstate(&x).unmerged, 1);
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[0], 3), 0);
	assert_int_equal(mds_version_merged(x.vs, &x.vf, h[1], 3), 0);
	assert_int_equal(vstate(&x).unmerged, 0);
	assert_int_equal(vstate(&x).merged, 3);
	assert_int_equal(vmap_len(&x, UINT64_MAX), 0);
	/* the next commit goes on from V */
	assert_int_equal(commit(&x, SA, T(1, 4), &s0, 1), 4);
	vdone(&x);
}

/* mds_versions_session_end's `dead`: the files whose ID#s ended. */
struct dead_files {
	uint64_t file[4];
	unsigned n;
};

static void note_dead(void *arg, uint64_t file)
{
	struct dead_files *d = arg;

	if (d->n < 4)
		d->file[d->n] = file;
	d->n++;
}

static void test_session_end(void **state)
{
	struct vfx x;
	struct dead_files dead = { { 0 }, 0 };
	uint64_t vr;

	vfile(&x, *state, "/f");
	ids(&x, SA, 2);
	ids(&x, SB, 1);
	try_commit(&x, SA, T(1, 1), 0);
	try_commit(&x, SA, T(1, 2), 0);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SA, NULL, 0, &vr), 0);
	assert_int_equal(vr, 2);
	try_commit(&x, SB, T(3, 1), 0);
	assert_int_equal(upto(&x), 2);
	assert_int_equal(mds_versions_session_end(x.vs, SA, note_dead, &dead), 3);
	/* its ID#s ended: the file is named once, for the merger's round */
	assert_int_equal(dead.n, 1);
	assert_true(dead.file[0] == x.vf.file);
	assert_int_equal(upto(&x), 3);
	assert_int_equal(vstate(&x).ids, 1);
	assert_int_equal(try_commit(&x, SA, T(1, 3), 0), -ESTALE);
	assert_int_equal(try_commit(&x, SB, T(3, 2), 0), 0);
	assert_int_equal(mds_versions_session_end(x.vs, SA, note_dead, &dead), 0);
	assert_int_equal(dead.n, 1);
	/* a session with a read in progress but no ID#: nothing to drop */
	assert_int_equal(mds_version_read(x.vs, &x.vf, SC, NULL, 0, &vr), 0);
	assert_int_equal(mds_versions_session_end(x.vs, SC, note_dead, &dead), 1);
	assert_int_equal(dead.n, 1);
	vdone(&x);
}

/* ---- a restart: commits, V, next ID#, snapshots and the floor survive;
 * live ID#s and reads do not */

static void test_restart(void **state)
{
	struct fx *f = *state;
	struct vfx x;
	uint32_t s01[] = { 0, 1 };
	uint64_t v, vr;
	Tessera__VersionCommit c;

	vfile(&x, f, "/f");
	ids(&x, SA, 2);
	commit(&x, SA, T(1, 1), s01, 2);
	commit(&x, SA, T(1, 2), s01, 2);
	commit(&x, SA, T(2, 1), s01, 1);
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, "s", 9, &v), 0);
	assert_int_equal(mds_version_merged(x.vs, &x.vf, x.a.layout.handles[0], 1), 0);
	assert_int_equal(mds_version_merged(x.vs, &x.vf, x.a.layout.handles[1], 1), 0);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, NULL, 0, &vr), 0);
	mds_versions_free(x.vs);
	reopen(f, N_IOS);
	x.vs = tables(f, 1 << 20);
	struct mds_vstate s = vstate(&x);

	assert_int_equal(s.newest, 3);
	assert_int_equal(s.merged, 1);
	assert_int_equal(s.unmerged, 2);
	assert_int_equal(s.snaps, 1);
	assert_int_equal(s.next_id, 3);
	assert_int_equal(s.ids, 0);
	assert_int_equal(s.reads, 0);
	assert_int_equal(vmap_len(&x, UINT64_MAX), 2);
	/* an ID# of before: -ESTALE, saying why */
	assert_int_equal(try_commit(&x, SA, T(1, 3), 0), -ESTALE);
	msg_has(&x, "restarted");
	/* a resend of a commit logged before: its version still */
	assert_int_equal(mds_version_commit(x.vs, &x.vf, SA, T(1, 2), s01, 2, &c), 0);
	assert_int_equal(c.vm, 2);
	/* new ID#s go on; the snapshot still pins */
	assert_int_equal(ids(&x, SA, 1), 3);
	assert_int_equal(commit(&x, SA, T(3, 1), s01, 1), 4);
	assert_int_equal(upto(&x), 3);
	assert_int_equal(mds_version_read(x.vs, &x.vf, SB, "s", 0, &vr), 0);
	assert_int_equal(vr, 3);
	vdone(&x);
}

/* Count the store's "V" records of file. */
static int v_records(struct fx *f, uint64_t file)
{
	leveldb_iterator_t *it = leveldb_create_iterator(f->st->db, f->st->ropts);
	unsigned char prefix[9];
	int n = 0;

	prefix[0] = 'V';
	mds_put_be64(prefix + 1, file);
	for (leveldb_iter_seek(it, (char *)prefix, 9); leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);

		if (kl < 9 || memcmp(k, prefix, 9))
			break;
		n++;
	}
	leveldb_iter_destroy(it);
	return n;
}

static void test_unlink_drops(void **state)
{
	struct fx *f = *state;
	struct vfx x;
	struct mds_attr r;
	uint64_t v;

	vfile(&x, f, "/f");
	ids(&x, SA, 1);
	try_commit(&x, SA, T(1, 1), 0);
	try_commit(&x, SA, T(1, 2), 0);
	assert_int_equal(mds_version_snap_create(x.vs, &x.vf, "s", 9, &v), 0);
	assert_int_equal(v_records(f, x.a.handle), 4);
	assert_int_equal(mds_unlink(f->st, &ROOT, "/f", &r), 0);
	assert_int_equal(r.nlink, 0);
	assert_int_equal(v_records(f, x.a.handle), 0);
	mds_versions_forget(x.vs, x.a.handle);
	assert_int_equal(vstate(&x).newest, 0);
	vdone(&x);
}

/* A session's end: its ID#s' commits answer ESTALE (write again), not
 * EPERM. */
static void test_orphaned_ids(void **state)
{
	struct vfx x;

	vfile(&x, *state, "/f");
	ids(&x, SA, 1);
	ids(&x, SB, 1);
	assert_int_equal(try_commit(&x, SA, T(1, 1), 0), 0);
	assert_int_equal(mds_versions_session_end(x.vs, SA, NULL, NULL), 1);
	assert_int_equal(try_commit(&x, SA, T(1, 2), 0), -ESTALE);
	msg_has(&x, "ended with its session");
	/* the resend of its commit (the reply lost with the connection) */
	assert_int_equal(try_commit(&x, SB, T(1, 1), 0), 0);
	assert_int_equal(vstate(&x).newest, 1);
	/* another session still may not use it, nor the other's */
	assert_int_equal(try_commit(&x, SA, T(2, 1), 0), -EPERM);
	vdone(&x);
}

/* Per daemon: idle tables go when the bounds are reached (read back
 * from the store at the next use); busy ones stay, and past them the
 * answer is EBUSY. */
static void test_daemon_bounds(void **state)
{
	struct fx *f = *state;
	struct vfx x[3];
	char path[16];
	uint32_t first;

	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/f%d", i);
		vfile(&x[i], f, path);
		mds_versions_free(x[i].vs);
		x[i].vs = NULL;
	}
	struct mds_versions *vs = tables(f, 1 << 20);

	mds_versions_set_bounds(vs, 2, 3);
	for (int i = 0; i < 3; i++)
		x[i].vs = vs;
	/* f0 busy (a live ID#), f1 idle with two commits */
	assert_int_equal(ids(&x[0], SA, 1), 1);
	assert_int_equal(ids(&x[1], SA, 1), 1);
	assert_int_equal(try_commit(&x[1], SA, T(1, 1), 0), 0);
	assert_int_equal(try_commit(&x[1], SA, T(1, 2), 0), 0);
	assert_int_equal(mds_version_id_end(vs, &x[1].vf, SA, 1), 0);
	/* f2 takes f1's place; f1 comes back from the store */
	assert_int_equal(vstate(&x[2]).newest, 0);
	assert_int_equal(vstate(&x[1]).newest, 2);
	assert_int_equal(vstate(&x[1]).unmerged, 2);
	/* f0 and f1 busy: no room for f2 */
	assert_int_equal(ids(&x[1], SA, 1), 2);
	assert_int_equal(mds_version_ids(vs, &x[2].vf, SA, 1, &first), -EBUSY);
	msg_has(&x[2], "files in use");
	/* commits: 2 held, one more fits, then none (no idle table to let go) */
	assert_int_equal(try_commit(&x[0], SA, T(1, 1), 0), 0);
	assert_int_equal(try_commit(&x[0], SA, T(1, 2), 0), -EBUSY);
	msg_has(&x[0], "commits not merged in files in use");
	mds_versions_free(vs);
}

/* The grant: live ID#s, the next one, signed. */
static void test_grant(void **state)
{
	struct vfx x;
	struct mds_vgrant g;

	vfile(&x, *state, "/f");
	ids(&x, SA, 3);
	assert_int_equal(mds_version_id_end(x.vs, &x.vf, SA, 2), 0);
	assert_int_equal(mds_version_merge(x.vs, &x.vf, 10, &g), 0);
	assert_int_equal(g.msg.next_id, 4);
	assert_int_equal(g.msg.n_live_ids, 2);
	assert_true(g.msg.live_ids[0] + g.msg.live_ids[1] == 4);
	assert_true(cap_grant_ok(&KEY, &g.msg));
	g.msg.upto++;
	assert_false(cap_grant_ok(&KEY, &g.msg));
	vdone(&x);
}

/* ---- ID#s for a job: a block one session takes, others commit under */

static int commit_by(struct vfx *x, uint64_t session, const Tessera__VersionIds *b,
		     uint64_t t, uint64_t *vm)
{
	Tessera__VersionCommit c;
	uint32_t slot = 0;
	int rc = mds_version_commit_as(x->vs, &x->vf, session, b, t, &slot, 1, &c);

	if (!rc) {
		assert_true(cap_commit_ok(&KEY, &c));
		*vm = c.vm;
	}
	return rc;
}

static void test_job_ids(void **state)
{
	struct vfx x;
	struct mds_vids b;
	uint64_t vm = 0;

	vfile(&x, *state, "/f");
	assert_int_equal(mds_version_ids_signed(x.vs, &x.vf, SA, 4, &b), 0);
	assert_int_equal(b.msg.file, x.a.handle);
	assert_int_equal(b.msg.first, 1);
	assert_int_equal(b.msg.count, 4);
	assert_true(cap_ids_ok(&KEY, &b.msg));
	assert_int_equal(vstate(&x).ids, 4);
	/* other sessions commit under ID#s of the block, the taker too */
	assert_int_equal(commit_by(&x, SB, &b.msg, T(2, 1), &vm), 0);
	assert_int_equal(vm, 1);
	assert_int_equal(commit_by(&x, SC, &b.msg, T(3, 1), &vm), 0);
	assert_int_equal(vm, 2);
	assert_int_equal(commit_by(&x, SA, &b.msg, T(1, 1), &vm), 0);
	assert_int_equal(vm, 3);
	/* a resend answers its version again */
	assert_int_equal(commit_by(&x, SB, &b.msg, T(2, 1), &vm), 0);
	assert_int_equal(vm, 1);
	/* without the block, another session's ID# is still forged */
	assert_int_equal(try_commit(&x, SB, T(2, 2), 0), -EPERM);
	msg_has(&x, "not your ID#");
	/* the taker alone ends the block */
	assert_int_equal(mds_version_ids_end(x.vs, &x.vf, SB, &b.msg), -EPERM);
	msg_has(&x, "another session's");
	assert_int_equal(vstate(&x).ids, 4);
	assert_int_equal(commit_by(&x, SB, &b.msg, T(2, 2), &vm), 0);
	assert_int_equal(vm, 4);
	vdone(&x);
}

/* Blocks that are not the version server's, not the file's or do not
 * hold the ID#: -EPERM, nothing committed. */
static void test_job_ids_forged(void **state)
{
	struct fx *f = *state;
	struct vfx x, y;
	struct mds_vids b, other;
	Tessera__VersionIds t;
	uint8_t mac[TP_CAP_MAC_LEN];
	uint64_t vm = 0;

	vfile(&x, f, "/f");
	vfile(&y, f, "/g");
	assert_int_equal(mds_version_ids_signed(x.vs, &x.vf, SA, 2, &b), 0);
	assert_int_equal(ids(&x, SA, 1), 3); /* live, SA's, outside the block */
	assert_int_equal(mds_version_ids_signed(y.vs, &y.vf, SA, 4, &other), 0);
	/* a MAC not the version server's */
	t = b.msg;
	memcpy(mac, b.mac, sizeof(mac));
	mac[5] ^= 1;
	t.mac.data = mac;
	assert_int_equal(commit_by(&x, SB, &t, T(1, 1), &vm), -EPERM);
	msg_has(&x, "forged commit");
	msg_has(&x, "not signed");
	/* widened: the MAC no longer holds */
	t = b.msg;
	t.count = 3;
	assert_int_equal(commit_by(&x, SB, &t, T(3, 1), &vm), -EPERM);
	msg_has(&x, "not signed");
	/* signed with another key */
	struct cap_key bad = { { 9 } };

	t = b.msg;
	assert_int_equal(cap_sign_ids(&bad, &t, mac), 0);
	assert_int_equal(commit_by(&x, SB, &t, T(1, 1), &vm), -EPERM);
	/* another file's block (ID# 1 is live in both) */
	assert_int_equal(commit_by(&x, SB, &other.msg, T(1, 1), &vm), -EPERM);
	msg_has(&x, "forged commit");
	/* an ID# outside the block, live or never handed out */
	assert_int_equal(commit_by(&x, SB, &b.msg, T(3, 1), &vm), -EPERM);
	msg_has(&x, "not in its block");
	assert_int_equal(commit_by(&x, SB, &b.msg, T(0, 1), &vm), -EPERM);
	/* a forged block ends nothing */
	t = b.msg;
	t.mac.data = mac;
	assert_int_equal(mds_version_ids_end(x.vs, &x.vf, SA, &t), -EPERM);
	assert_int_equal(mds_version_ids_end(x.vs, &x.vf, SA, &other.msg), -EPERM);
	assert_int_equal(vstate(&x).ids, 3);
	assert_int_equal(vstate(&x).newest, 0);
	vdone(&y);
	vdone(&x);
}

/* What ends a block's ID#s: its taker's ID_END (of the block or of one
 * ID#), its taker's session's end, a restart. Then: -ESTALE (write again
 * under an ID# of your own); resends still answer. */
static void test_job_ids_ended(void **state)
{
	struct fx *f = *state;
	struct vfx x;
	struct mds_vids b, b2;
	uint64_t vm = 0;

	vfile(&x, f, "/f");
	assert_int_equal(mds_version_ids_signed(x.vs, &x.vf, SA, 3, &b), 0);
	assert_int_equal(commit_by(&x, SB, &b.msg, T(2, 1), &vm), 0);
	/* one ID# ended by its taker */
	assert_int_equal(mds_version_id_end(x.vs, &x.vf, SA, 3), 0);
	assert_int_equal(commit_by(&x, SC, &b.msg, T(3, 1), &vm), -ESTALE);
	msg_has(&x, "no longer live");
	/* the block ended */
	assert_int_equal(mds_version_ids_end(x.vs, &x.vf, SA, &b.msg), 0);
	assert_int_equal(vstate(&x).ids, 0);
	assert_int_equal(commit_by(&x, SB, &b.msg, T(2, 2), &vm), -ESTALE);
	assert_int_equal(commit_by(&x, SB, &b.msg, T(2, 1), &vm), 0); /* a resend */
	assert_int_equal(vm, 1);
	assert_int_equal(mds_version_ids_end(x.vs, &x.vf, SA, &b.msg), 0); /* again */
	/* the taker's session ends */
	assert_int_equal(mds_version_ids_signed(x.vs, &x.vf, SA, 2, &b2), 0);
	assert_int_equal(commit_by(&x, SB, &b2.msg, T(4, 1), &vm), 0);
	assert_int_equal(mds_versions_session_end(x.vs, SB, NULL, NULL), 0); /* a user's end: nothing */
	assert_int_equal(commit_by(&x, SB, &b2.msg, T(4, 2), &vm), 0);
	assert_int_equal(mds_versions_session_end(x.vs, SA, NULL, NULL), 2);
	assert_int_equal(commit_by(&x, SB, &b2.msg, T(5, 1), &vm), -ESTALE);
	/* a restart forgets live ID#s: a block of before is stale */
	assert_int_equal(mds_version_ids_signed(x.vs, &x.vf, SA, 2, &b2), 0);
	mds_versions_free(x.vs);
	reopen(f, N_IOS);
	x.vs = tables(f, 1 << 20);
	assert_int_equal(commit_by(&x, SB, &b2.msg, T(6, 1), &vm), -ESTALE);
	assert_int_equal(vstate(&x).newest, 3);
	vdone(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T_(test_versioned_layout),
		T_(test_commit_order),
		T_(test_forged_ids),
		T_(test_limits),
		T_(test_vmap_bytes),
		T_(test_reads_pin),
		T_(test_snapshots_pin),
		T_(test_merged_drops),
		T_(test_session_end),
		T_(test_restart),
		T_(test_unlink_drops),
		T_(test_grant),
		T_(test_orphaned_ids),
		T_(test_daemon_bounds),
		T_(test_job_ids),
		T_(test_job_ids_forged),
		T_(test_job_ids_ended),
#undef T_
	};

	return cmocka_run_group_tests_name("mds_version", tests, NULL, NULL);
}
