/*
 * test_ios_vlogs.c - the storage daemon's versioned objects (issue 25):
 * the version paths of WRITE/READ, LIST_*, DTYPE_*, TRUNCATE and GETSIZE,
 * VLOG merge and state, the registry's limits, REMOVE and restart.
 *
 * The daemon runs in-process (srv_create_local, as the fuzz targets do)
 * over a real store in a temporary directory, so requests go through the
 * capability check, the handlers and the disk work exactly as they do in
 * tessera-ios (inline: no workers). Capabilities, commits and grants are
 * signed with the test's key, as the metadata daemon would; the refusals
 * (plain I/O of a versioned object, forged commits, another file's,
 * expired grants, limits) each have a case that fails without the check.
 */
#define main tessera_ios_main
#include "ios_main.c"
#undef main

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tdl.h"
#include "tp_clock.h"

#define FILE_ID 0x77ull
#define H1 0x1001ull
#define H2 0x1002ull
#define T(id, io) ios_vlog_tver(id, io)

static const char addr[] = "test";

struct fx {
	char dir[256];
	struct tp_config cfg;
	struct ios_disk *disk;
	struct ios ios;
	struct cap_key key;
	uint64_t reqid;
	/* the last reply */
	int status;
	char msg[1024];
	uint8_t data[65536];
	size_t data_len;
	ProtobufCMessage *rep;
};

static void sink(void *arg, uint64_t peer, const struct iovec *iov, int n)
{
	struct fx *f = arg;
	size_t len = iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0);
	uint8_t *buf = malloc(len);
	struct tp_frame fr;
	char err[256];

	(void)peer;
	assert_non_null(buf);
	memcpy(buf, iov[0].iov_base, iov[0].iov_len);
	if (n > 1)
		memcpy(buf + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
	assert_int_equal(tp_frame_parse(buf, len, SIZE_MAX, &fr, err, sizeof(err)), 0);
	f->status = fr.hdr.status;
	f->msg[0] = 0;
	if (f->rep)
		protobuf_c_message_free_unpacked(f->rep, NULL);
	f->rep = NULL;
	if (fr.hdr.status < 0) {
		Tessera__ErrorReply *er = (Tessera__ErrorReply *)
			tp_body_unpack(&fr, &tessera__error_reply__descriptor);

		assert_non_null(er);
		snprintf(f->msg, sizeof(f->msg), "%s", er->message);
		protobuf_c_message_free_unpacked(&er->base, NULL);
	} else {
		f->rep = tp_body_unpack(&fr, tp_reply_desc(fr.hdr.opcode));
		assert_non_null(f->rep);
	}
	f->data_len = fr.hdr.data_len < sizeof(f->data) ? fr.hdr.data_len : sizeof(f->data);
	memcpy(f->data, fr.data, f->data_len);
	free(buf);
}

static void daemon_up(struct fx *f)
{
	char *msg = NULL, *notice = NULL, err[256] = "";
	struct srv_role role = { "ios", 1, ios_handlers, ios_tick, &f->ios, NULL, NULL, NULL, NULL, NULL };
	struct srv_opts so = { &f->cfg, NULL, NULL, 0, NULL, NULL };

	memset(&f->ios, 0, sizeof(f->ios));
	f->ios.disk = f->disk;
	f->ios.cfg = &f->cfg;
	f->ios.index = 1;
	assert_int_equal(ios_store_open(f->dir, 16, IOS_STORE_NEW, 0, f->disk, &f->ios.store, &notice,
					&msg), 0);
	free(notice);
	assert_int_equal(ios_locks_create(&f->ios, 1000, &f->ios.locks, err, sizeof(err)), 0);
	assert_int_equal(ios_caps_create(&f->key, &f->ios.caps), 0);
	assert_int_equal(srv_create_local(&so, &role, sink, f, &f->ios.srv), 0);
}

static void daemon_down(struct fx *f)
{
	srv_destroy(f->ios.srv);
	ios_locks_destroy(f->ios.locks);
	ios_caps_destroy(f->ios.caps);
	ios_descs_clear(&f->ios);
	ios_vlogs_destroy(f->ios.vlogs);
	ios_store_close(f->ios.store);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *text = "mds = 127.0.0.1:1\nios = 127.0.0.1:2\nios = 127.0.0.1:3\n"
			   "";
	char err[256];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/test-vlogs.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(tp_config_parse(text, "test", &f->cfg, err, sizeof(err)), 0);
	assert_int_equal(ios_disk_system(&f->disk), 0);
	for (size_t i = 0; i < sizeof(f->key.key); i++)
		f->key.key[i] = (uint8_t)(i * 7 + 3);
	daemon_up(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	daemon_down(f);
	if (f->rep)
		protobuf_c_message_free_unpacked(f->rep, NULL);
	f->disk->ops->destroy(f->disk);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* ------------------------------------------------------------ signing */

struct caps {
	Tessera__Capability c;
	uint64_t handles[2];
	uint8_t mac[TP_CAP_MAC_LEN];
};

static Tessera__Capability *cap_of(struct fx *f, struct caps *k, uint64_t file, uint32_t rights)
{
	tessera__capability__init(&k->c);
	k->handles[0] = H1;
	k->handles[1] = H2;
	k->c.file = file;
	k->c.handles = k->handles;
	k->c.n_handles = 2;
	k->c.rights = rights;
	k->c.expires_ns = tp_real_ns() + 3600ll * 1000000000;
	assert_int_equal(cap_sign(&f->key, &k->c, k->mac), 0);
	return &k->c;
}

#define VRW (TP_CAP_READ | TP_CAP_WRITE | TP_CAP_STAT | TP_CAP_VERSIONED)

struct commit {
	Tessera__VersionCommit c;
	uint64_t handles[2];
	uint8_t mac[TP_CAP_MAC_LEN];
};

static Tessera__VersionCommit *commit_of(struct fx *f, struct commit *k, uint64_t file,
					 uint64_t t, uint64_t vm, uint64_t handle)
{
	tessera__version_commit__init(&k->c);
	k->handles[0] = handle;
	k->c.file = file;
	k->c.t = t;
	k->c.vm = vm;
	k->c.handles = k->handles;
	k->c.n_handles = 1;
	assert_int_equal(cap_sign_commit(&f->key, &k->c, k->mac), 0);
	return &k->c;
}

/* ------------------------------------------------------------ requests */

static int send_req(struct fx *f, unsigned op, const ProtobufCMessage *m, const void *data,
		    size_t dlen)
{
	static uint8_t frame[TP_HDR_SIZE + sizeof(addr) + 2 * 65536];
	struct tp_hdr h = { TP_MAGIC, TP_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t *p = frame + TP_HDR_SIZE + sizeof(addr);

	h.opcode = (uint16_t)op;
	h.reqid = ++f->reqid;
	h.addr_len = sizeof(addr);
	h.body_len = (uint32_t)protobuf_c_message_pack(m, p);
	h.data_len = (uint32_t)dlen;
	if (dlen)
		memcpy(p + h.body_len, data, dlen);
	tp_hdr_encode(&h, frame);
	memcpy(frame + TP_HDR_SIZE, addr, sizeof(addr));
	f->status = 1; /* no reply */
	srv_deliver(f->ios.srv, 1, frame, TP_HDR_SIZE + sizeof(addr) + h.body_len + dlen);
	assert_true(f->status <= 0);
	return f->status;
}

static int vwrite(struct fx *f, const Tessera__Capability *cap, uint64_t h, uint64_t t,
		  uint64_t off, const char *s)
{
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;

	m.handle = h;
	m.offset = off;
	m.version_t = t;
	m.cap = (Tessera__Capability *)cap;
	return send_req(f, TP_OP_WRITE, &m.base, s, strlen(s));
}

static int vread(struct fx *f, const Tessera__Capability *cap, uint64_t h, uint64_t r,
		 Tessera__VersionCommit **vmap, size_t n, uint64_t off, uint64_t len)
{
	Tessera__ReadRequest m = TESSERA__READ_REQUEST__INIT;

	m.handle = h;
	m.offset = off;
	m.length = len;
	m.read_version = r;
	m.vmap = vmap;
	m.n_vmap = n;
	m.cap = (Tessera__Capability *)cap;
	return send_req(f, TP_OP_READ, &m.base, NULL, 0);
}

static uint64_t object_size(struct fx *f)
{
	return ((Tessera__ReadReply *)f->rep)->object_size;
}

#define HAS(f, word) do { if (!strstr((f)->msg, (word))) \
	fail_msg("message \"%s\" lacks \"%s\"", (f)->msg, (word)); } while (0)

/* ------------------------------------------------------------ tests */

/* A write is invisible until a read brings its commit; reads see the
 * version asked for, the base below; a resent commit is fine. */
static void test_write_read_at_version(void **state)
{
	struct fx *f = *state;
	struct caps k;
	struct commit c1, c2;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__VersionCommit *vm[2];

	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, "hello"), 0);
	assert_int_equal(vwrite(f, cap, H1, T(2, 1), 2, "XY"), 0);
	/* Nothing committed: a read at any version sees the empty base. */
	assert_int_equal(vread(f, cap, H1, 5, NULL, 0, 0, 16), 0);
	assert_int_equal(f->data_len, 0);
	assert_int_equal(object_size(f), 0);
	vm[0] = commit_of(f, &c1, FILE_ID, T(2, 1), 1, H1);
	vm[1] = commit_of(f, &c2, FILE_ID, T(1, 1), 2, H1);
	assert_int_equal(vread(f, cap, H1, 1, vm, 2, 0, 16), 0);
	assert_int_equal(object_size(f), 4);
	assert_int_equal(f->data_len, 4);
	assert_memory_equal(f->data, "\0\0XY", 4);
	/* Version 2 (commit order: hello over XY), the commits again. */
	assert_int_equal(vread(f, cap, H1, 2, vm, 2, 0, 16), 0);
	assert_int_equal(f->data_len, 5);
	assert_memory_equal(f->data, "hello", 5);
	/* Without the vmap: the log remembers them. */
	assert_int_equal(vread(f, cap, H1, 1, NULL, 0, 0, 16), 0);
	assert_memory_equal(f->data, "\0\0XY", 4);
}

/* List and datatype writes and reads, truncate and GETSIZE at versions. */
static void test_list_dtype_truncate_sizes(void **state)
{
	struct fx *f = *state;
	struct caps k, kp;
	struct commit c[3];
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	Tessera__TruncateRequest t = TESSERA__TRUNCATE_REQUEST__INIT;
	Tessera__HandlesRequest g = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__VersionCommit *vm[3];
	uint64_t offs[2] = { 10, 0 }, lens[2] = { 3, 2 }, hs[2] = { H1, H2 };

	l.handle = H1;
	l.offsets = offs;
	l.lengths = lens;
	l.n_offsets = l.n_lengths = 2;
	l.version_t = T(1, 1);
	l.cap = cap;
	assert_int_equal(send_req(f, TP_OP_LIST_WRITE, &l.base, "abcde", 5), 0);
	t.handle = H1;
	t.size = 11;
	t.version_t = T(1, 2);
	t.cap = cap;
	assert_int_equal(send_req(f, TP_OP_TRUNCATE, &t.base, NULL, 0), 0);
	vm[0] = commit_of(f, &c[0], FILE_ID, T(1, 1), 1, H1);
	vm[1] = commit_of(f, &c[1], FILE_ID, T(1, 2), 2, H1);
	l.version_t = 0;
	l.read_version = 1;
	l.vmap = vm;
	l.n_vmap = 2;
	assert_int_equal(send_req(f, TP_OP_LIST_READ, &l.base, NULL, 0), 0);
	assert_int_equal(f->data_len, 5);
	assert_memory_equal(f->data, "abcde", 5);
	l.read_version = 2;
	assert_int_equal(send_req(f, TP_OP_LIST_READ, &l.base, NULL, 0), 0);
	assert_memory_equal(f->data, "a\0\0de", 5);
	/* GETSIZE of both objects at each version (H2: nothing). */
	g.handles = hs;
	g.n_handles = 2;
	g.read_version = 1;
	g.cap = cap;
	assert_int_equal(send_req(f, TP_OP_GETSIZE, &g.base, NULL, 0), 0);
	assert_int_equal(((Tessera__SizesReply *)f->rep)->sizes[0], 13);
	assert_int_equal(((Tessera__SizesReply *)f->rep)->sizes[1], 0);
	g.read_version = 2;
	assert_int_equal(send_req(f, TP_OP_GETSIZE, &g.base, NULL, 0), 0);
	assert_int_equal(((Tessera__SizesReply *)f->rep)->sizes[0], 11);
	/* At version 0 (nothing merged yet): the base alone. */
	g.read_version = 0;
	assert_int_equal(send_req(f, TP_OP_GETSIZE, &g.base, NULL, 0), 0);
	assert_int_equal(((Tessera__SizesReply *)f->rep)->sizes[0], 0);
	/* No handles: nothing to size, the fields checked all the same. */
	g.n_handles = 0;
	g.read_version = 2;
	assert_int_equal(send_req(f, TP_OP_GETSIZE, &g.base, NULL, 0), 0);
	assert_int_equal(((Tessera__SizesReply *)f->rep)->n_sizes, 0);
	g.cap = cap_of(f, &kp, FILE_ID, VRW & ~TP_CAP_VERSIONED);
	assert_int_equal(send_req(f, TP_OP_GETSIZE, &g.base, NULL, 0), -EINVAL);
	HAS(f, "not of a versioned file");
	(void)c[2];
}

/* A DTYPE_WRITE of object H1 (one slot of 64 KiB strips) under T t with
 * file type enc (description 1); the caller sets the range. */
static void dtype_write_req(Tessera__DtypeIORequest *d, Tessera__Capability *cap,
			    Tessera__Dataloop *enc, uint64_t t)
{
	d->handle = H1;
	d->strip_size = 65536;
	d->stripe_count = 1;
	d->slot = 0;
	d->desc_nonce = 1;
	d->desc_id = 1;
	d->file_type = enc;
	d->version_t = t;
	d->cap = cap;
}

/* A datatype write is unrolled into this object's pieces. */
static void test_dtype(void **state)
{
	struct fx *f = *state;
	struct caps k;
	struct commit c;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__DtypeIORequest d = TESSERA__DTYPE_IOREQUEST__INIT;
	Tessera__VersionCommit *vm[1];
	struct tdl_dataloop *b, *dl;
	Tessera__Dataloop *enc = NULL;

	/* 4 bytes of every 8, twice: object bytes 0-3 and 8-11 (one slot). */
	assert_int_equal(tdl_bytes(1, &b), 0);
	assert_int_equal(tdl_vector(2, 4, 8, b, &dl), 0);
	assert_int_equal(tp_dataloop_to_msg(dl, &enc), 0);
	dtype_write_req(&d, cap, enc, T(3, 1));
	d.count = 1;
	d.first = 0;
	d.last = 8;
	assert_int_equal(send_req(f, TP_OP_DTYPE_WRITE, &d.base, "abcdefgh", 8), 0);
	vm[0] = commit_of(f, &c, FILE_ID, T(3, 1), 1, H1);
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 12), 0);
	assert_int_equal(f->data_len, 12);
	assert_memory_equal(f->data, "abcd\0\0\0\0efgh", 12);
	d.version_t = 0;
	d.read_version = 1;
	d.file_type = NULL;
	assert_int_equal(send_req(f, TP_OP_DTYPE_READ, &d.base, NULL, 0), 0);
	assert_int_equal(f->data_len, 8);
	assert_memory_equal(f->data, "abcdefgh", 8);
	tp_dataloop_msg_release(enc);
	tdl_free(dl);
	tdl_free(b);
}

/* Plain I/O on a versioned capability, version fields on a plain one,
 * and the operations with no version path. */
static void test_plain_and_versioned_mixed(void **state)
{
	struct fx *f = *state;
	struct caps kv, kp;
	Tessera__Capability *vcap = cap_of(f, &kv, FILE_ID, VRW);
	Tessera__Capability *pcap = cap_of(f, &kp, FILE_ID, VRW & ~TP_CAP_VERSIONED);
	Tessera__FallocateRequest fa = TESSERA__FALLOCATE_REQUEST__INIT;
	Tessera__LocalOpenRequest lo = TESSERA__LOCAL_OPEN_REQUEST__INIT;
	Tessera__TruncateRequest t = TESSERA__TRUNCATE_REQUEST__INIT;

	assert_int_equal(vwrite(f, vcap, H1, 0, 0, "plain"), -EINVAL);
	HAS(f, "versioned");
	HAS(f, "0000000000001001");
	/* A read at version 0 is one before any commit (main's rule since
	 * test_version): the base, empty here. */
	assert_int_equal(vread(f, vcap, H1, 0, NULL, 0, 0, 4), 0);
	assert_int_equal(f->data_len, 0);
	assert_int_equal(vwrite(f, pcap, H1, T(1, 1), 0, "v"), -EINVAL);
	HAS(f, "not of a versioned file");
	assert_int_equal(vread(f, pcap, H1, 3, NULL, 0, 0, 4), -EINVAL);
	{
		struct commit c;
		Tessera__VersionCommit *vm[1] = { commit_of(f, &c, FILE_ID, T(1, 1), 1, H1) };

		assert_int_equal(vread(f, pcap, H1, 0, vm, 1, 0, 4), -EINVAL);
		HAS(f, "vmap");
	}
	t.handle = H1;
	t.size = 3;
	t.cap = vcap;
	assert_int_equal(send_req(f, TP_OP_TRUNCATE, &t.base, NULL, 0), -EINVAL);
	fa.handle = H1;
	fa.length = 10;
	fa.cap = vcap;
	assert_int_equal(send_req(f, TP_OP_FALLOCATE, &fa.base, NULL, 0), -EOPNOTSUPP);
	HAS(f, "versioned");
	lo.handle = H1;
	lo.cap = vcap;
	assert_int_equal(send_req(f, TP_OP_LOCAL_OPEN, &lo.base, NULL, 0), -EOPNOTSUPP);
	/* Nothing was written. */
	assert_int_equal(vread(f, pcap, H1, 0, NULL, 0, 0, 8), 0);
	assert_int_equal(f->data_len, 0);
}

/* Commits that are not the version server's, or not this file's or
 * object's, are refused and change nothing. */
static void test_forged_commits(void **state)
{
	struct fx *f = *state;
	struct caps k;
	struct commit c;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__VersionCommit *vm[1];

	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, "secret"), 0);
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 1), 1, H1);
	c.mac[3] ^= 1;
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 8), -EACCES);
	HAS(f, "forged commit");
	HAS(f, "0000000000001001");
	/* Signed, but with a version the signature does not cover. */
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 1), 1, H1);
	c.c.vm = 7;
	assert_int_equal(vread(f, cap, H1, 7, vm, 1, 0, 8), -EACCES);
	/* Another file's. */
	vm[0] = commit_of(f, &c, FILE_ID + 1, T(1, 1), 1, H1);
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 8), -EACCES);
	HAS(f, "of file 0000000000000078");
	/* Another object's. */
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 1), 1, H2);
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 8), -EACCES);
	HAS(f, "does not name the object");
	/* Still uncommitted. */
	assert_int_equal(vread(f, cap, H1, 9, NULL, 0, 0, 8), 0);
	assert_int_equal(f->data_len, 0);
}

struct grant {
	Tessera__VersionGrant g;
	uint32_t live[2];
	uint8_t mac[TP_CAP_MAC_LEN];
};

static Tessera__VersionGrant *grant_of(struct fx *f, struct grant *k, uint64_t file,
				       uint64_t upto, uint32_t next_id, int64_t expires)
{
	tessera__version_grant__init(&k->g);
	k->live[0] = 2;
	k->g.file = file;
	k->g.upto = upto;
	k->g.next_id = next_id;
	k->g.live_ids = k->live;
	k->g.n_live_ids = 1;
	k->g.expires_ns = expires;
	assert_int_equal(cap_sign_grant(&f->key, &k->g, k->mac), 0);
	return &k->g;
}

static int vlog(struct fx *f, const Tessera__Capability *cap, Tessera__VlogOp op,
		Tessera__VersionGrant *g, Tessera__VersionCommit **vm, size_t n)
{
	Tessera__VlogRequest m = TESSERA__VLOG_REQUEST__INIT;

	m.handle = H1;
	m.op = op;
	m.grant = g;
	m.vmap = vm;
	m.n_vmap = n;
	m.cap = (Tessera__Capability *)cap;
	return send_req(f, TP_OP_VLOG, &m.base, NULL, 0);
}

/* VLOG merge: the grant is checked; a good one merges, discards dead
 * IDs' uncommitted records, and the state shows it. */
static void test_merge(void **state)
{
	struct fx *f = *state;
	struct caps k, kr;
	struct commit c;
	struct grant gk;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__Capability *rcap = cap_of(f, &kr, FILE_ID, VRW & ~TP_CAP_WRITE);
	Tessera__VersionCommit *vm[1];
	int64_t later = tp_real_ns() + 60ll * 1000000000;
	Tessera__VlogReply *r;

	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, "one"), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 2), 8, "dead"), 0); /* ID 1 dies */
	assert_int_equal(vwrite(f, cap, H1, T(2, 1), 16, "live"), 0);
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 1), 1, H1);
	/* Refused: a read capability, expired, forged, another file's. */
	assert_int_equal(vlog(f, rcap, TESSERA__VLOG_OP__VLOG_MERGE,
			      grant_of(f, &gk, FILE_ID, 1, 3, later), vm, 1), -EACCES);
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_MERGE,
			      grant_of(f, &gk, FILE_ID, 1, 3, tp_real_ns() - 1), vm, 1),
			 -EKEYEXPIRED);
	HAS(f, "expired");
	HAS(f, "0000000000001001");
	grant_of(f, &gk, FILE_ID, 1, 3, later);
	gk.mac[0] ^= 1;
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_MERGE, &gk.g, vm, 1), -EACCES);
	HAS(f, "forged merge grant");
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_MERGE,
			      grant_of(f, &gk, FILE_ID + 1, 1, 3, later), vm, 1), -EACCES);
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_MERGE, NULL, vm, 1), -EINVAL);
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_STATE, NULL, NULL, 0), 0);
	r = (Tessera__VlogReply *)f->rep;
	assert_int_equal(r->uncommitted, 3);
	assert_int_equal(r->merged, 0);
	/* A good one. */
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_MERGE,
			      grant_of(f, &gk, FILE_ID, 1, 3, later), vm, 1), 0);
	r = (Tessera__VlogReply *)f->rep;
	assert_int_equal(r->merged, 1);
	assert_int_equal(r->discarded, 1);
	assert_int_equal(r->uncommitted, 1);
	assert_int_equal(r->committed, 0);
	/* The base holds it now (a plain read sees it). */
	assert_int_equal(vread(f, cap, H1, 1, NULL, 0, 0, 3), 0);
	assert_memory_equal(f->data, "one", 3);
	/* Version 0 is merged away now. */
	assert_int_equal(vread(f, cap, H1, 0, NULL, 0, 0, 3), -ESTALE);
	HAS(f, "0000000000001001");
	/* A commit for a version merged already is skipped (a late resend). */
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 3), 0);
	/* The dead record is gone: its commit fails. */
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 2), 2, H1);
	assert_int_equal(vread(f, cap, H1, 2, vm, 1, 0, 3), -EIO);
	HAS(f, "applying commit");
}

static int vwrite_part(struct fx *f, const Tessera__Capability *cap, uint64_t h, uint64_t t,
		       uint32_t part, uint64_t off, const char *s)
{
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;

	m.handle = h;
	m.offset = off;
	m.version_t = t;
	m.version_part = part;
	m.cap = (Tessera__Capability *)cap;
	return send_req(f, TP_OP_WRITE, &m.base, s, strlen(s));
}

static uint64_t log_bytes(struct fx *f, const Tessera__Capability *cap)
{
	assert_int_equal(vlog(f, cap, TESSERA__VLOG_OP__VLOG_STATE, NULL, NULL, 0), 0);
	return ((Tessera__VlogReply *)f->rep)->log_bytes;
}

/* One T in parts through WRITE, LIST_WRITE and DTYPE_WRITE (version_part):
 * invisible until committed, then all at its version in part order; a
 * resent part (the same request again) is answered as done and logged
 * once; a late resend of an earlier part after a later one changes
 * nothing; version_part on a plain capability or on a read is refused. */
static void test_parts(void **state)
{
	struct fx *f = *state;
	struct caps k, kp;
	struct commit c;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__Capability *pcap = cap_of(f, &kp, FILE_ID, VRW & ~TP_CAP_VERSIONED);
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	Tessera__DtypeIORequest d = TESSERA__DTYPE_IOREQUEST__INIT;
	Tessera__VersionCommit *vm[1];
	uint64_t offs[1] = { 2 }, lens[1] = { 4 }, bytes;
	struct tdl_dataloop *b;
	Tessera__Dataloop *enc = NULL;

	assert_int_equal(vwrite_part(f, cap, H1, T(1, 1), 0, 0, "aaaaaaaa"), 0);
	/* part 3 (a datatype write of bytes 4-5) arrives before part 1 */
	assert_int_equal(tdl_bytes(1, &b), 0);
	assert_int_equal(tp_dataloop_to_msg(b, &enc), 0);
	dtype_write_req(&d, cap, enc, T(1, 1));
	d.disp = 4;
	d.count = 2;
	d.first = 0;
	d.last = 2;
	d.version_part = 3;
	assert_int_equal(send_req(f, TP_OP_DTYPE_WRITE, &d.base, "dd", 2), 0);
	l.handle = H1;
	l.offsets = offs;
	l.lengths = lens;
	l.n_offsets = l.n_lengths = 1;
	l.version_t = T(1, 1);
	l.version_part = 1;
	l.cap = cap;
	assert_int_equal(send_req(f, TP_OP_LIST_WRITE, &l.base, "llll", 4), 0);
	bytes = log_bytes(f, cap);
	assert_int_equal(((Tessera__VlogReply *)f->rep)->uncommitted, 3);
	/* Resends, each answered as done: nothing logged again. */
	assert_int_equal(send_req(f, TP_OP_LIST_WRITE, &l.base, "llll", 4), 0);
	assert_int_equal(((Tessera__WriteReply *)f->rep)->written, 4);
	assert_int_equal(vwrite_part(f, cap, H1, T(1, 1), 0, 0, "aaaaaaaa"), 0);
	d.file_type = NULL;
	assert_int_equal(send_req(f, TP_OP_DTYPE_WRITE, &d.base, "dd", 2), 0);
	assert_int_equal(log_bytes(f, cap), bytes);
	/* Nothing visible before the commit; then a ll dd l a a. */
	assert_int_equal(vread(f, cap, H1, 5, NULL, 0, 0, 8), 0);
	assert_int_equal(f->data_len, 0);
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 1), 1, H1);
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 8), 0);
	assert_int_equal(f->data_len, 8);
	assert_memory_equal(f->data, "aallddaa", 8);
	/* A late resend of part 1 after the commit: done, nothing changes
	 * (part 3 still wins over it); a new part of a committed T fails. */
	assert_int_equal(send_req(f, TP_OP_LIST_WRITE, &l.base, "llll", 4), 0);
	assert_int_equal(vread(f, cap, H1, 1, NULL, 0, 0, 8), 0);
	assert_memory_equal(f->data, "aallddaa", 8);
	assert_int_equal(vwrite_part(f, cap, H1, T(1, 1), 7, 0, "x"), -EINVAL);
	HAS(f, "committed");
	HAS(f, "0000000000001001");
	/* version_part where it has no place. */
	assert_int_equal(vwrite_part(f, pcap, H1, T(1, 2), 1, 0, "p"), -EINVAL);
	HAS(f, "not of a versioned file");
	assert_int_equal(vwrite_part(f, pcap, H1, 0, 1, 0, "p"), -EINVAL);
	HAS(f, "version_part");
	l.version_t = 0;
	l.read_version = 1;
	assert_int_equal(send_req(f, TP_OP_LIST_READ, &l.base, NULL, 0), -EINVAL);
	HAS(f, "other kind");
	tp_dataloop_msg_release(enc);
	tdl_free(b);
}

/* The daemon's limits: live records over all logs, and open logs with
 * unmerged versions. */
static void test_limits(void **state)
{
	struct fx *f = *state;
	struct caps k;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	struct ios_vlogs_limits lim = { 1, 3, 0, { 0 }, 0 };
	struct ios_vlogs_totals tot;

	assert_int_equal(ios_vlogs_create(f->ios.disk, ios_store_dir(f->ios.store), 1, &lim,
					  &f->ios.vlogs), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, "a"), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 2), 0, "b"), 0);
	/* One log open, with live records: another object waits. */
	assert_int_equal(vwrite(f, cap, H2, T(1, 4), 0, "d"), -EBUSY);
	HAS(f, "IOS_VLOGS_OPEN");
	HAS(f, "0000000000001002");
	assert_int_equal(vwrite(f, cap, H1, T(1, 3), 0, "c"), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 5), 0, "e"), -EBUSY);
	HAS(f, "IOS_VLOGS_MAX_RECORDS");
	HAS(f, "0000000000001001");
	ios_vlogs_totals(f->ios.vlogs, &tot);
	assert_int_equal(tot.open, 1);
	assert_int_equal(tot.records, 3);
	assert_true(tot.bytes > 3);
}

static int said_half(struct fx *f)
{
	return ((Tessera__WriteReply *)f->rep)->vlog_half;
}

/* A write's reply says when its log, or the daemon's logs, pass the
 * share of a limit that asks the version server for a merge. */
static void test_half_full(void **state)
{
	struct fx *f = *state;
	struct caps k;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	/* the daemon's totals: 8 records, half from 4; each log's: 6, half from 3 */
	struct ios_vlogs_limits lim = { 0, 8, 0, { 6, 0, 0, 0 }, 50 };

	assert_int_equal(ios_vlogs_create(f->ios.disk, ios_store_dir(f->ios.store), 1, &lim,
					  &f->ios.vlogs), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, "a"), 0);
	assert_false(said_half(f));
	assert_int_equal(vwrite(f, cap, H1, T(1, 2), 0, "b"), 0);
	assert_false(said_half(f));
	assert_int_equal(vwrite(f, cap, H1, T(1, 3), 0, "c"), 0);
	assert_true(said_half(f));  /* H1's log: 3 of 6 */
	assert_int_equal(vwrite(f, cap, H2, T(1, 4), 0, "d"), 0);
	assert_true(said_half(f));  /* H2's log holds 1, the daemon's 4 of 8 */
}

/* A byte limit over the daemon's logs. */
static void test_byte_limit(void **state)
{
	struct fx *f = *state;
	struct caps k;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	struct ios_vlogs_limits lim = { 0, 0, 4096, { 0 }, 0 };
	char big[3000];

	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(ios_vlogs_create(f->ios.disk, ios_store_dir(f->ios.store), 1, &lim,
					  &f->ios.vlogs), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, big), 0);
	assert_int_equal(vwrite(f, cap, H1, T(1, 2), 0, big), -EBUSY);
	HAS(f, "IOS_VLOGS_MAX_BYTES");
}

/* A call whose parts can never fit one object's log: ENOSPC at the part
 * that passes the limit, saying so and naming the object and daemon;
 * another that would fit an emptier log: EBUSY. */
static void test_call_too_large(void **state)
{
	struct fx *f = *state;
	struct caps k;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	struct ios_vlogs_limits lim = { 0, 0, 0, { .max_bytes = 8192 }, 0 };
	char part[3000];

	memset(part, 'p', sizeof(part) - 1);
	part[sizeof(part) - 1] = 0;
	assert_int_equal(ios_vlogs_create(f->ios.disk, ios_store_dir(f->ios.store), 1, &lim,
					  &f->ios.vlogs), 0);
	assert_int_equal(vwrite_part(f, cap, H1, T(1, 1), 0, 0, part), 0);
	assert_int_equal(vwrite_part(f, cap, H1, T(1, 1), 1, 3000, part), 0);
	assert_int_equal(vwrite_part(f, cap, H1, T(1, 1), 2, 6000, part), -ENOSPC);
	HAS(f, "can never be one version");
	HAS(f, "0000000000001001");
	HAS(f, "storage daemon 1");
	/* Another call while T(1,1)'s parts fill the log: busy now, not never. */
	assert_int_equal(vwrite_part(f, cap, H1, T(2, 1), 0, 0, part), -EBUSY);
}

static int exists(struct fx *f, uint64_t h, const char *suffix)
{
	char path[600];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%02x/%016" PRIx64 "%s", ios_store_dir(f->ios.store),
		 (unsigned)(h & 0xff), h, suffix);
	return stat(path, &sb) == 0;
}

/* A restart reopens the log (records and commits recovered); REMOVE
 * takes the log with the object. */
static void test_restart_and_remove(void **state)
{
	struct fx *f = *state;
	struct caps k, kr;
	struct commit c;
	Tessera__Capability *cap = cap_of(f, &k, FILE_ID, VRW);
	Tessera__VersionCommit *vm[1];
	Tessera__HandlesRequest rm = TESSERA__HANDLES_REQUEST__INIT;
	uint64_t hs[1] = { H1 };

	assert_int_equal(vwrite(f, cap, H1, T(1, 1), 0, "kept"), 0);
	vm[0] = commit_of(f, &c, FILE_ID, T(1, 1), 1, H1);
	assert_int_equal(vread(f, cap, H1, 1, vm, 1, 0, 4), 0);
	assert_true(exists(f, H1, ".vlog"));
	daemon_down(f);
	daemon_up(f);
	assert_int_equal(vread(f, cap, H1, 1, NULL, 0, 0, 8), 0);
	assert_int_equal(f->data_len, 4);
	assert_memory_equal(f->data, "kept", 4);
	daemon_down(f);
	daemon_up(f);
	/* REMOVE (the purger's capability: plain) before any versioned
	 * request since the restart. */
	rm.handles = hs;
	rm.n_handles = 1;
	rm.cap = cap_of(f, &kr, FILE_ID, TP_CAP_REMOVE);
	assert_int_equal(send_req(f, TP_OP_REMOVE, &rm.base, NULL, 0), 0);
	assert_false(exists(f, H1, ".vlog"));
	assert_int_equal(vread(f, cap, H1, 1, NULL, 0, 0, 8), 0);
	assert_int_equal(f->data_len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_read_at_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_dtype_truncate_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dtype, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_and_versioned_mixed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_too_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_and_remove, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
