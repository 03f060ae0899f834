/*
 * fuzz_mds.c - libFuzzer target for the metadata daemon: its dispatch
 * table and every handler (mds_main.c over mds_ops.c, mds_path.c,
 * mds_rename.c, mds_xattr.c) on a real LevelDB store in a temporary directory, driven
 * in-process through the daemon core (srv_create_local) by records of
 * frames (fuzz_daemon.h). Each input starts a fresh store. After every
 * namespace change that succeeded, lookups check that it took effect.
 *
 * VERSION requests (the version server, mds_version.c) name a file by
 * handle, which is random, with a capability for it, which the fuzzer
 * cannot sign: each fuzzed one is delivered again aimed at the last
 * regular file a fuzzed request created or looked up (its handle, a
 * capability signed for it, `handle` < the stripe count taken as that
 * slot's object; a block of ID#s with no MAC signed for it too), and
 * what it answers is checked (a commit verifies and is the version
 * answered; a read's commits are at or below it; a block verifies).
 *
 * The daemon's own source is compiled in (its main renamed), so the
 * dispatch table and handlers are exactly the daemon's. Built with
 * -DFUZZ_SEED_MAIN it writes a seed corpus of requests into a directory.
 */
#define main tessera_mds_main
#include "mds_main.c"
#undef main

#include "fuzz_daemon.h"

/* Every opcode the daemon serves. */
static unsigned ops[TP_OP_LIMIT];
static size_t nops;

static void ops_init(void)
{
	for (unsigned op = 0; op < TP_OP_LIMIT; op++)
		if (mds_handlers[op])
			ops[nops++] = op;
}

#ifndef FUZZ_SEED_MAIN

/* ------------------------------------------------------------ the oracle
 *
 * After each namespace change that succeeded, a lookup (as root) must
 * agree: a made or created name is there with the handle the reply gave,
 * a removed one is gone, a renamed one is at its new name and not at its
 * old one (unless both named one file: a no-op), a link made is there;
 * an extended attribute set reads back (as root) with its value, a
 * removed one is gone. Lookups do not follow a link in the last
 * component, except after a create (which follows one to its target). */
struct oracle {
	struct srv *srv;
	uint64_t reqid;             /* the fuzzed request being served */
	unsigned opcode;
	ProtobufCMessage *msg;      /* decoded, or NULL */
	int status, replied;        /* its answer */
	uint64_t handle;            /* an AttrReply's handle */
	uint64_t lookups;           /* our own requests so far */
	int lk_status, lk_replied;  /* the last lookup's answer */
	uint64_t lk_handle;
	size_t lk_len;              /* an XattrReply's value, in lk_value */
	/* The last regular file a fuzzed request's reply named (VERSION
	 * requests are aimed at it). */
	uint64_t file;
	uint32_t nobj;
	uint64_t objs[TP_MAX_STRIPE];
	uint64_t aimed;             /* the aimed VERSION's request id */
	unsigned aimed_op;
};

static uint8_t lk_value[65536]; /* the largest value the store keeps */

#define ORACLE_REQID (1ull << 62) /* above any fuzzed request id */

/* A fuzzed request's reply named a (NULL: none): a regular file's is
 * where VERSION requests are aimed from now on. */
static void oracle_note_file(struct oracle *o, const Tessera__Attr *a)
{
	size_t n;

	if (!a || a->type != TESSERA__FILE_TYPE__FILE_REGULAR || !a->layout)
		return;
	n = a->layout->n_handles < TP_MAX_STRIPE ? a->layout->n_handles : TP_MAX_STRIPE;
	o->file = a->handle;
	o->nobj = (uint32_t)n;
	memcpy(o->objs, a->layout->handles, n * sizeof(*o->objs));
}

/* An aimed VERSION's answer (r NULL: an error): its commits, grant and
 * block of ID#s verify under the daemon's key, for the file, no commit
 * above what it answered. */
static void oracle_version_reply(struct oracle *o, const Tessera__VersionReply *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_vmap; i++) {
		const Tessera__VersionCommit *c = r->vmap[i];
		int ok = cap_commit_ok(&fz_key, c) && c->file == o->file && c->n_handles >= 1;

		if (o->aimed_op == TESSERA__VERSION_OP__VERSION_COMMIT)
			ok = ok && r->n_vmap == 1 && c->vm == r->version;
		if (o->aimed_op == TESSERA__VERSION_OP__VERSION_READ)
			ok = ok && c->vm <= r->version;
		if (!ok) {
			fprintf(stderr, "fuzz_mds: version op %u of file %016llx answered a"
				" commit that does not hold (vm %llu, version %llu)\n",
				o->aimed_op, (unsigned long long)o->file,
				(unsigned long long)c->vm, (unsigned long long)r->version);
			abort();
		}
	}
	if (r->grant && !cap_grant_ok(&fz_key, r->grant)) {
		fprintf(stderr, "fuzz_mds: a merge grant that does not verify\n");
		abort();
	}
	/* a block of ID#s: signed, the file's, starting at the ID# answered */
	if (r->signed_ids && (!cap_ids_ok(&fz_key, r->signed_ids) ||
			      r->signed_ids->file != o->file ||
			      r->signed_ids->first != r->id_first || !r->signed_ids->count)) {
		fprintf(stderr, "fuzz_mds: a block of ID#s that does not hold\n");
		abort();
	}
}

static void oracle_check(void *arg, const struct tp_frame *fr, const ProtobufCMessage *rep)
{
	struct oracle *o = arg;
	const Tessera__AttrReply *ar = (const void *)rep;
	int attr = rep && tp_reply_desc(fr->hdr.opcode) == &tessera__attr_reply__descriptor &&
		   ar->attr;

	if (fr->hdr.reqid == o->reqid) {
		o->replied = 1;
		o->status = fr->hdr.status;
		o->handle = attr ? ar->attr->handle : 0;
		oracle_note_file(o, attr ? ar->attr : NULL);
	} else if (o->aimed && fr->hdr.reqid == o->aimed) {
		oracle_version_reply(o, (const Tessera__VersionReply *)rep);
	} else if (fr->hdr.reqid == (ORACLE_REQID | o->lookups)) {
		o->lk_replied = 1;
		o->lk_status = fr->hdr.status;
		o->lk_handle = attr ? ar->attr->handle : 0;
		o->lk_len = 0;
		if (rep && tp_reply_desc(fr->hdr.opcode) == &tessera__xattr_reply__descriptor) {
			const Tessera__XattrReply *xr = (const void *)rep;

			o->lk_len = xr->data.len < sizeof(lk_value) ? xr->data.len : sizeof(lk_value);
			if (o->lk_len)
				memcpy(lk_value, xr->data.data, o->lk_len);
		}
	}
}

/* Look path up as root (following a link in its last component or not);
 * its status (and *handle). */
static int oracle_lookup(struct oracle *o, const char *path, enum mds_follow follow,
			 uint64_t *handle)
{
	static uint8_t frame[8192];
	Tessera__PathRequest pr = TESSERA__PATH_REQUEST__INIT;
	Tessera__Cred root = TESSERA__CRED__INIT;
	uint32_t gid = 0;
	struct tp_hdr h = { 0 };
	long n;

	root.n_gids = 1;
	root.gids = &gid;
	pr.cred = &root;
	pr.path = (char *)path;
	pr.nofollow = follow == MDS_NOFOLLOW;
	h.opcode = TP_OP_LOOKUP;
	h.reqid = ORACLE_REQID | ++o->lookups;
	n = tp_frame_build(frame, sizeof(frame), &h, "oracle", 6, &pr.base);
	if (n < 0)
		return 1; /* a path too long to ask about */
	o->lk_replied = 0;
	srv_deliver(o->srv, 99, frame, (size_t)n);
	if (!o->lk_replied) {
		fprintf(stderr, "fuzz_mds: a lookup of %s was not answered\n", path);
		abort();
	}
	*handle = o->lk_handle;
	return o->lk_status;
}

/* Read attribute `name` of path as root (following a link in the last
 * component unless nofollow): its status (the value in lk_value,
 * o->lk_len bytes). */
static int oracle_getxattr(struct oracle *o, const char *path, ProtobufCBinaryData name,
			   int nofollow)
{
	static uint8_t frame[8192];
	Tessera__XattrRequest xr = TESSERA__XATTR_REQUEST__INIT;
	Tessera__Cred root = TESSERA__CRED__INIT;
	uint32_t gid = 0;
	struct tp_hdr h = { 0 };
	long n;

	root.n_gids = 1;
	root.gids = &gid;
	xr.cred = &root;
	xr.path = (char *)path;
	xr.name = name;
	xr.nofollow = nofollow;   /* as the request it checks */
	xr.size = sizeof(lk_value);
	h.opcode = TP_OP_XATTR_GET;
	h.reqid = ORACLE_REQID | ++o->lookups;
	n = tp_frame_build(frame, sizeof(frame), &h, "oracle", 6, &xr.base);
	if (n < 0)
		abort(); /* path and name passed the daemon's checks: they fit */
	o->lk_replied = 0;
	srv_deliver(o->srv, 99, frame, (size_t)n);
	if (!o->lk_replied) {
		fprintf(stderr, "fuzz_mds: a getxattr of %s was not answered\n", path);
		abort();
	}
	return o->lk_status;
}

#define ORACLE_CHECK(cond, path)                                                     \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_mds: after %s, a lookup of %s: %s\n",  \
				tp_opcode_name(o->opcode), path, #cond);             \
			abort();                                                     \
		}                                                                    \
	} while (0)

/* After a request that succeeded: if it was an XATTR_SET, the value
 * reads back; an XATTR_REMOVE, the attribute is gone. */
static void oracle_xattr(struct oracle *o)
{
	const Tessera__XattrRequest *x = (const void *)o->msg;
	int rc;

	if (o->opcode != TP_OP_XATTR_SET && o->opcode != TP_OP_XATTR_REMOVE)
		return;
	rc = oracle_getxattr(o, x->path, x->name, x->nofollow);
	if (o->opcode == TP_OP_XATTR_REMOVE) {
		ORACLE_CHECK(rc == -ENODATA, x->path);
		return;
	}
	ORACLE_CHECK(rc == 0 && o->lk_len == x->value.len &&
		     (!o->lk_len || !memcmp(lk_value, x->value.data, o->lk_len)), x->path);
}

/* A fuzzed VersionRequest (o->msg): delivered again, aimed at o->file. */
static void oracle_aim_version(struct oracle *o)
{
	static uint8_t frame[65536];
	const Tessera__VersionRequest *v = (const void *)o->msg;
	Tessera__VersionRequest a;
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	Tessera__VersionIds ids;
	uint8_t mac[TP_CAP_MAC_LEN], ids_mac[TP_CAP_MAC_LEN];
	struct tp_hdr h = { 0 };
	long n;

	if (!o->msg || o->opcode != TP_OP_VERSION || !o->file)
		return;
	a = *v;
	a.file = o->file;
	if (a.handle < o->nobj)
		a.handle = o->objs[a.handle];
	cap.file = o->file;
	cap.handles = o->objs;
	cap.n_handles = o->nobj;
	cap.rights = v->cap && v->cap->rights ? v->cap->rights : TP_CAP_READ | TP_CAP_WRITE;
	cap.expires_ns = INT64_MAX / 2;
	if (cap_sign(&fz_key, &cap, mac))
		abort();
	a.cap = &cap;
	/* a block of ID#s with no MAC is signed (the file's, as the version
	 * server would): commits under it get past the signature to the
	 * rules behind it; one with a MAC stays as fuzzed (forged) */
	if (v->ids && !v->ids->mac.len) {
		ids = *v->ids;
		ids.file = o->file;
		if (cap_sign_ids(&fz_key, &ids, ids_mac))
			abort();
		a.ids = &ids;
	}
	h.opcode = TP_OP_VERSION;
	h.reqid = o->aimed = ORACLE_REQID | ++o->lookups;
	o->aimed_op = v->op;
	n = tp_frame_build(frame, sizeof(frame), &h, "oracle", 6, &a.base);
	if (n >= 0)
		srv_deliver(o->srv, 99, frame, (size_t)n);
	o->aimed = 0;
}

static void oracle_observe(void *arg, const uint8_t *frame, size_t len, int done)
{
	struct oracle *o = arg;
	struct tp_frame fr;
	uint64_t handle = 0;
	char err[64];
	int rc;

	if (!done) {
		o->msg = NULL;
		o->replied = 0;
		if (tp_frame_parse(frame, len, SIZE_MAX, &fr, err, sizeof(err)))
			return;
		o->reqid = fr.hdr.reqid;
		o->opcode = fr.hdr.opcode;
		o->msg = tp_body_unpack(&fr, tp_request_desc(fr.hdr.opcode));
		return;
	}
	oracle_aim_version(o);
	if (o->msg && o->replied && o->status == 0) {
		oracle_xattr(o);
		switch (o->opcode) {
		case TP_OP_MKDIR:
		case TP_OP_CREATE: {
			/* the path field follows cred in both messages */
			const char *path = o->opcode == TP_OP_MKDIR
				? ((Tessera__MkdirRequest *)o->msg)->path
				: ((Tessera__CreateRequest *)o->msg)->path;

			rc = oracle_lookup(o, path, o->opcode == TP_OP_CREATE ? MDS_FOLLOW
					   : MDS_NOFOLLOW, &handle);
			ORACLE_CHECK(rc == 0 && handle == o->handle, path);
			break;
		}
		case TP_OP_SYMLINK:
		case TP_OP_LINK:
		case TP_OP_MKNOD: {
			const char *path = ((Tessera__LinkRequest *)o->msg)->path;

			rc = oracle_lookup(o, path, MDS_NOFOLLOW, &handle);
			ORACLE_CHECK(rc == 0 && handle == o->handle, path);
			break;
		}
		case TP_OP_UNLINK:
		case TP_OP_RMDIR: {
			const char *path = ((Tessera__PathRequest *)o->msg)->path;

			rc = oracle_lookup(o, path, MDS_NOFOLLOW, &handle);
			ORACLE_CHECK(rc == -ENOENT, path);
			break;
		}
		case TP_OP_RENAME: {
			const Tessera__RenameRequest *r = (const void *)o->msg;
			uint64_t moved;

			rc = oracle_lookup(o, r->to, MDS_NOFOLLOW, &moved);
			ORACLE_CHECK(rc == 0, r->to);
			if (strcmp(r->from, r->to)) {
				/* gone, or another name of the same file (a no-op) */
				rc = oracle_lookup(o, r->from, MDS_NOFOLLOW, &handle);
				ORACLE_CHECK(rc == -ENOENT || (rc == 0 && handle == moved), r->from);
			}
			break;
		}
		}
	}
	if (o->msg)
		protobuf_c_message_free_unpacked(o->msg, NULL);
	o->msg = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tp_config cfg;
	struct fz_in in = { data, size };
	struct oracle oracle = { 0 };
	struct fz_replies seen = { 0, 0, getenv("FUZZ_VERBOSE") != NULL, oracle_check, &oracle };
	struct mds mds = { 0 };
	char dir[4096], err[256] = "";
	int rc;

	if (!cfg.n_ios) {
		fz_config(&cfg);
		ops_init();
	}
	if (fz_tmpdir("fuzz-mds", dir, sizeof(dir)))
		abort();
	mds.n_ios = cfg.n_ios;
	mds.dir = dir; /* STATFS reads its file system */
	mds.key = fz_key;
	mds.cap_lifetime_ms = cfg.cap_lifetime_ms;
	/* a small table (eviction), quiet from the start (reports taken) */
	mds.sizes = mds_sizes_new(8, 0, 0);
	if ((rc = mds_store_open(dir, 0, cfg.n_ios, &mds.store, err, sizeof(err)))) {
		fprintf(stderr, "fuzz_mds: %s\n", err);
		abort();
	}
	/* small bounds: "merge first" within reach */
	mds.versions = mds_versions_new(mds.store, &mds.key, 4096, 1000000000);
	struct srv_role role = { "mds", 0, mds_handlers, NULL, &mds, NULL, mds_session_end, NULL, NULL, NULL };
	struct srv_opts so = { &cfg, NULL, NULL, 0, NULL, NULL };

	if (srv_create_local(&so, &role, fz_reply_sink, &seen, &mds.srv))
		abort();
	oracle.srv = mds.srv;
	fz_drive(mds.srv, ops, nops, &in, NULL, oracle_observe, &oracle);
	srv_destroy(mds.srv);
	mds_versions_free(mds.versions);
	mds_store_close(mds.store);
	mds_sizes_free(mds.sizes);
	fz_rmtree(dir);
	return 0;
}

#else /* FUZZ_SEED_MAIN */

static struct fz_seed seed;

static void req(unsigned op, unsigned peer, const ProtobufCMessage *m)
{
	unsigned i = 0;

	while (i < nops && ops[i] != op)
		i++;
	fz_seed_request(&seed, i, peer, m, 0);
}

int main(int argc, char **argv)
{
	uint32_t gids[2] = { 100, 5 };
	Tessera__Cred root = TESSERA__CRED__INIT, user = TESSERA__CRED__INIT;
	Tessera__MkdirRequest mk = TESSERA__MKDIR_REQUEST__INIT;
	Tessera__CreateRequest cr = TESSERA__CREATE_REQUEST__INIT;
	Tessera__PathRequest pr = TESSERA__PATH_REQUEST__INIT;
	Tessera__SetattrRequest sa = TESSERA__SETATTR_REQUEST__INIT;
	Tessera__SetLayoutRequest sl = TESSERA__SET_LAYOUT_REQUEST__INIT;
	Tessera__ReaddirRequest rd = TESSERA__READDIR_REQUEST__INIT;
	Tessera__RenameRequest rn = TESSERA__RENAME_REQUEST__INIT;
	Tessera__XattrRequest xa = TESSERA__XATTR_REQUEST__INIT;
	Tessera__Layout lay = TESSERA__LAYOUT__INIT;
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	Tessera__LinkRequest ln = TESSERA__LINK_REQUEST__INIT;
	const char *dir;
	int rc = 0;

	if (argc != 2)
		return 2;
	dir = argv[1];
	ops_init();
	user.uid = 1000;
	user.n_gids = 2;
	user.gids = gids;

	/* A tree: directories, files, a layout, lookups, a page of names. */
	mk.cred = &root;
	mk.path = "/d";
	mk.mode = 0777;
	req(TP_OP_MKDIR, 0, &mk.base);
	mk.path = "/d/e";
	req(TP_OP_MKDIR, 0, &mk.base);
	sl.cred = &root;
	sl.path = "/d";
	sl.strip_size = 4096;
	sl.stripe_count = 2;
	req(TP_OP_SETLAYOUT, 0, &sl.base);
	cr.cred = &user;
	cr.path = "/d/f";
	cr.mode = 0644;
	req(TP_OP_CREATE, 1, &cr.base);
	cr.path = "/d/g";
	cr.exclusive = 1;
	lay.strip_size = 8192;
	cr.layout = &lay;
	cr.stripe_count = 3;
	req(TP_OP_CREATE, 1, &cr.base);
	req(TP_OP_CREATE, 1, &cr.base); /* EEXIST */
	pr.cred = &user;
	pr.path = "/d/f";
	req(TP_OP_LOOKUP, 1, &pr.base);
	rd.cred = &user;
	rd.path = "/d";
	rd.max_entries = 2;
	req(TP_OP_READDIR, 1, &rd.base);
	rd.cursor = "f";
	req(TP_OP_READDIR, 1, &rd.base);
	pr.path = "/";
	req(TP_OP_STATFS, 1, &pr.base);
	req(TP_OP_PING, 2, &ping.base);
	rc |= fz_seed_save(&seed, dir, "tree");

	/* Changes: setattr, rename over a file, into a subdirectory, removal. */
	mk.path = "/a";
	req(TP_OP_MKDIR, 0, &mk.base);
	cr.cred = &root;
	cr.exclusive = 0;
	cr.layout = NULL;
	cr.path = "/a/x";
	req(TP_OP_CREATE, 0, &cr.base);
	cr.path = "/a/y";
	req(TP_OP_CREATE, 0, &cr.base);
	sa.cred = &root;
	sa.path = "/a/x";
	sa.valid = MDS_SET_MODE | MDS_SET_UID | MDS_SET_MTIME | MDS_SET_SIZE;
	sa.mode = 0600;
	sa.uid = 1000;
	sa.mtime_ns = 123456789;
	sa.size = 77;
	req(TP_OP_SETATTR, 0, &sa.base);
	rn.cred = &root;
	rn.from = "/a/x";
	rn.to = "/a/y";
	req(TP_OP_RENAME, 0, &rn.base);
	mk.path = "/a/sub";
	req(TP_OP_MKDIR, 0, &mk.base);
	rn.from = "/a";
	rn.to = "/a/sub/z"; /* into itself: EINVAL */
	req(TP_OP_RENAME, 0, &rn.base);
	rn.from = "/a/y";
	rn.to = "/a/sub/y";
	req(TP_OP_RENAME, 0, &rn.base);
	pr.cred = &user;
	pr.path = "/a/sub/y";
	req(TP_OP_UNLINK, 1, &pr.base); /* not the owner's directory */
	pr.cred = &root;
	req(TP_OP_UNLINK, 0, &pr.base);
	pr.path = "/a/sub";
	req(TP_OP_RMDIR, 0, &pr.base);
	pr.path = "/a";
	req(TP_OP_RMDIR, 0, &pr.base);
	rc |= fz_seed_save(&seed, dir, "changes");

	/* Other file types: links through the walk, a loop, hard links, a
	 * FIFO and a device, readlink, a lookup that does not follow. */
	mk.path = "/l";
	req(TP_OP_MKDIR, 0, &mk.base);
	cr.path = "/l/f";
	req(TP_OP_CREATE, 0, &cr.base);
	ln.cred = &root;
	ln.path = "/l/up";
	ln.target = "../l";
	req(TP_OP_SYMLINK, 0, &ln.base);
	ln.path = "/loop";
	ln.target = "/loop";
	req(TP_OP_SYMLINK, 0, &ln.base);
	pr.cred = &root;
	pr.path = "/l/up/up/f";
	req(TP_OP_LOOKUP, 0, &pr.base);
	pr.path = "/loop";
	req(TP_OP_LOOKUP, 0, &pr.base); /* ELOOP */
	pr.nofollow = 1;
	req(TP_OP_LOOKUP, 0, &pr.base);
	req(TP_OP_READLINK, 0, &pr.base);
	pr.nofollow = 0;
	ln.path = "/l/g";
	ln.target = "/l/f";
	req(TP_OP_LINK, 0, &ln.base);
	ln.path = "/l/h";
	ln.target = "/l";
	req(TP_OP_LINK, 0, &ln.base); /* a directory: EPERM */
	ln.path = "/l/fifo";
	ln.type = TESSERA__FILE_TYPE__FILE_FIFO;
	ln.mode = 0644;
	req(TP_OP_MKNOD, 0, &ln.base);
	ln.cred = &user;
	ln.path = "/l/dev";
	ln.type = TESSERA__FILE_TYPE__FILE_CHARDEV;
	ln.rdev = 0x103;
	req(TP_OP_MKNOD, 1, &ln.base); /* not root: EPERM */
	rn.from = "/l/f";
	rn.to = "/l/g"; /* two names of one file: a no-op */
	req(TP_OP_RENAME, 0, &rn.base);
	pr.path = "/l/f";
	req(TP_OP_UNLINK, 0, &pr.base);
	rc |= fz_seed_save(&seed, dir, "links");

	/* Extended attributes: set modes, sizes asked, namespaces, a removal,
	 * and a file dropped with its attributes (by unlink, by a rename over
	 * it). */
	cr.cred = &user;
	cr.path = "/x";
	cr.exclusive = 1;
	req(TP_OP_CREATE, 1, &cr.base);
	cr.path = "/y";
	req(TP_OP_CREATE, 1, &cr.base);
	xa.cred = &user;
	xa.path = "/x";
	xa.name.data = (uint8_t *)"user.a";
	xa.name.len = 6;
	xa.value.data = (uint8_t *)"value";
	xa.value.len = 5;
	req(TP_OP_XATTR_SET, 1, &xa.base);
	xa.how = TESSERA__XATTR_SET_MODE__XATTR_SET_CREATE;
	req(TP_OP_XATTR_SET, 1, &xa.base); /* EEXIST */
	xa.how = TESSERA__XATTR_SET_MODE__XATTR_SET_REPLACE;
	xa.name.data = (uint8_t *)"user.b";
	req(TP_OP_XATTR_SET, 1, &xa.base); /* ENODATA */
	xa.how = 0;
	xa.name.data = (uint8_t *)"trusted";
	xa.name.len = 7;
	req(TP_OP_XATTR_SET, 1, &xa.base); /* EOPNOTSUPP: no namespace */
	xa.name.data = (uint8_t *)"trusted.t";
	xa.name.len = 9;
	req(TP_OP_XATTR_SET, 1, &xa.base); /* EPERM */
	xa.cred = &root;
	req(TP_OP_XATTR_SET, 0, &xa.base);
	xa.name.data = (uint8_t *)"system.posix_acl_access";
	xa.name.len = 23;
	req(TP_OP_XATTR_SET, 0, &xa.base); /* EOPNOTSUPP */
	xa.cred = &user;
	xa.name.data = (uint8_t *)"user.a";
	xa.name.len = 6;
	xa.size = 0;
	req(TP_OP_XATTR_GET, 1, &xa.base);
	xa.size = 2;
	req(TP_OP_XATTR_GET, 1, &xa.base); /* ERANGE */
	xa.size = 1u << 31;
	req(TP_OP_XATTR_GET, 1, &xa.base);
	req(TP_OP_XATTR_LIST, 1, &xa.base);
	xa.size = 0;
	req(TP_OP_XATTR_LIST, 0, &xa.base);
	req(TP_OP_XATTR_REMOVE, 1, &xa.base);
	req(TP_OP_XATTR_REMOVE, 1, &xa.base); /* ENODATA */
	xa.path = "/y";
	req(TP_OP_XATTR_SET, 1, &xa.base);
	rn.cred = &user;
	rn.from = "/x";
	rn.to = "/y";
	req(TP_OP_RENAME, 1, &rn.base);
	req(TP_OP_XATTR_LIST, 1, &xa.base);
	pr.cred = &user;
	pr.path = "/y";
	req(TP_OP_UNLINK, 1, &pr.base);
	rc |= fz_seed_save(&seed, dir, "xattrs");

	/* Odd paths and a request without credentials. */
	pr.cred = &root;
	pr.path = "//d/../x/./";
	req(TP_OP_LOOKUP, 0, &pr.base);
	pr.path = "";
	req(TP_OP_LOOKUP, 0, &pr.base);
	pr.cred = NULL;
	pr.path = "/";
	req(TP_OP_LOOKUP, 0, &pr.base);
	rc |= fz_seed_save(&seed, dir, "odd-paths");

	/* Sizes (mds_size.h): an open for writing, its close (no capability:
	 * refused), a stat, reports with a guessed token and a huge size. */
	Tessera__CloseWriteRequest cw = TESSERA__CLOSE_WRITE_REQUEST__INIT;
	Tessera__SizeReportRequest sr = TESSERA__SIZE_REPORT_REQUEST__INIT;

	cr.cred = &root;
	cr.path = "/s";
	cr.exclusive = 0;
	cr.open_rights = TP_CAP_WRITE;
	req(TP_OP_CREATE, 0, &cr.base);
	cw.file = 2;
	cw.write_token = 1;
	cw.size_known = 1;
	cw.size = 10;
	req(TP_OP_CLOSE_WRITE, 0, &cw.base);
	pr.cred = &root;
	pr.path = "/s";
	pr.nofollow = 0;
	pr.open_rights = 0;
	req(TP_OP_LOOKUP, 0, &pr.base);
	sr.cred = &root;
	sr.file = 2;
	sr.size_token = 0x0123456789abcdefull;
	sr.size = UINT64_MAX;
	sr.blocks = UINT64_MAX;
	sr.data_mtime_ns = INT64_MIN;
	req(TP_OP_SIZE_REPORT, 0, &sr.base);
	sr.size_token = 0;
	req(TP_OP_SIZE_REPORT, 1, &sr.base);
	req(TP_OP_LOOKUP, 0, &pr.base);
	rc |= fz_seed_save(&seed, dir, "sizes");

	/* Attribute changes, answered before they are synced, and the sync a
	 * client's fsync asks for (twice: the second finds nothing). */
	Tessera__MetaSyncRequest ms = TESSERA__META_SYNC_REQUEST__INIT;

	sa.cred = &root;
	sa.path = "/s";
	sa.valid = MDS_SET_MODE;
	sa.mode = 0600;
	req(TP_OP_SETATTR, 0, &sa.base);
	req(TP_OP_META_SYNC, 0, &ms.base);
	req(TP_OP_META_SYNC, 1, &ms.base);
	rc |= fz_seed_save(&seed, dir, "meta-sync");

	/* Versions (mds_version.h): a versioned directory and a file in it,
	 * then each op of VERSION (the oracle aims them at the file): ID#s,
	 * commits (one resent, one by an ID# never handed out), reads (as of
	 * a snapshot too), a merge and MERGED reports, snapshots, the state,
	 * an unknown op; and a plain file refusing them. */
	Tessera__VersionRequest vr = TESSERA__VERSION_REQUEST__INIT;
	uint32_t slots[2] = { 0, 1 };

	mk.cred = &root;
	mk.path = "/v";
	req(TP_OP_MKDIR, 0, &mk.base);
	sl.cred = &root;
	sl.path = "/v";
	sl.strip_size = 0;
	sl.stripe_count = 2;
	sl.versioned = 1;
	req(TP_OP_SETLAYOUT, 0, &sl.base);
	cr.cred = &root;
	cr.path = "/v/f";
	cr.exclusive = 0;
	cr.layout = NULL;
	cr.open_rights = TP_CAP_READ | TP_CAP_WRITE;
	req(TP_OP_CREATE, 0, &cr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_ID;
	vr.count = 2;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_COMMIT;
	vr.t = 1ull << 32 | 1;
	vr.slots = slots;
	vr.n_slots = 2;
	req(TP_OP_VERSION, 0, &vr.base);
	req(TP_OP_VERSION, 0, &vr.base); /* a resend */
	vr.t = 2ull << 32 | 1;
	vr.n_slots = 1;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.t = 77ull << 32 | 1; /* never handed out: EPERM */
	req(TP_OP_VERSION, 0, &vr.base);
	/* under a block of ID#s (the job's: VersionIds): signed when aimed,
	 * then an ID# outside it, then a forged MAC */
	Tessera__VersionIds blk = TESSERA__VERSION_IDS__INIT;
	uint8_t forged[TP_CAP_MAC_LEN] = { 1 };

	blk.first = 1;
	blk.count = 2;
	vr.ids = &blk;
	vr.t = 2ull << 32 | 7;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.t = 3ull << 32 | 1;
	req(TP_OP_VERSION, 0, &vr.base);
	blk.mac.data = forged;
	blk.mac.len = sizeof(forged);
	vr.t = 1ull << 32 | 9;
	req(TP_OP_VERSION, 0, &vr.base);
	blk.mac.data = NULL;
	blk.mac.len = 0;
	vr.ids = NULL;
	vr.op = TESSERA__VERSION_OP__VERSION_SNAP_CREATE;
	vr.name = "snap";
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_READ;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.name = "";
	vr.end_read = 2;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_MERGE;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_MERGED;
	vr.handle = 0; /* slot 0's object, once aimed */
	vr.version = 2;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.handle = 1;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_SNAP_LIST;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_SNAP_DROP;
	vr.name = "snap";
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_READ_END;
	vr.version = 2;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_ID_END;
	vr.version = 1;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.ids = &blk; /* the block's end */
	req(TP_OP_VERSION, 0, &vr.base);
	vr.ids = NULL;
	vr.op = TESSERA__VERSION_OP__VERSION_STATE;
	req(TP_OP_VERSION, 0, &vr.base);
	vr.op = 99;
	req(TP_OP_VERSION, 0, &vr.base);
	pr.cred = &root;
	pr.path = "/v/f";
	req(TP_OP_UNLINK, 0, &pr.base);
	cr.path = "/plain";
	req(TP_OP_CREATE, 0, &cr.base);
	vr.op = TESSERA__VERSION_OP__VERSION_ID;
	req(TP_OP_VERSION, 0, &vr.base); /* not versioned: EINVAL */
	rc |= fz_seed_save(&seed, dir, "versions");
	return rc ? 1 : 0;
}

#endif
