/*
 * test_vios.c - a real storage daemon's versioned objects (issue 25),
 * through raw frames: the disk pool's workers run the version work (the
 * in-process unit test, tests/unit/test_ios_vlogs.c, runs it inline), a
 * merge reaches the base object, and a daemon killed with SIGKILL
 * recovers its log and loses no committed write.
 *
 * The test plays the version server: it holds the daemons' key (the
 * cluster's key file) and signs the versioned capability, the commits and
 * the merge grant itself. The end-to-end test with the real version
 * server and clients is test_version.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "cap.h"
#include "cluster.h"

#define T(id, io) ((uint64_t)(id) << 32 | (io))

struct fx {
	struct cluster *c;
	struct cap_key key;
	struct tessera_layout l;
	tessera_file *f;
	Tessera__Capability *plain;  /* the file's, as the metadata daemon gave it */
	Tessera__Capability vcap;    /* the same, versioned, signed here */
	uint8_t vmac[TP_CAP_MAC_LEN];
	struct raw raw;
	uint8_t got[8192];
};

static int setup(void **state)
{
	static struct fx fx;
	struct fx *x = &fx;
	struct tessera_layout want = { .strip_size = 65536, .count = 1 };
	char err[512];

	memset(x, 0, sizeof(*x));
	if (cluster_setup(state, CLUSTER_TCP))
		return -1;
	x->c = *state;
	if (cap_key_load(x->c->key, &x->key, err, sizeof(err)))
		fail_msg("%s", err);
	CHECK(x->c->fs, tessera_open(x->c->fs, "/v", O_CREAT | O_RDWR, 0600, &want, &x->f));
	CHECK(x->c->fs, tessera_file_layout(x->f, &x->l));
	x->plain = file_cap(x->f);
	x->vcap = *x->plain;
	x->vcap.rights |= TP_CAP_VERSIONED;
	assert_int_equal(cap_sign(&x->key, &x->vcap, x->vmac), 0);
	raw_open(x->c, x->l.servers[0], &x->raw);
	x->raw.reply_data = x->got;
	x->raw.reply_cap = sizeof(x->got);
	x->raw.cap = &x->vcap;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	tnet_close(x->raw.net);
	protobuf_c_message_free_unpacked(&x->plain->base, NULL);
	tessera_close(x->f);
	*state = x->c;
	return cluster_teardown(state);
}

static int vwrite(struct fx *x, uint64_t t, uint64_t off, const char *s, char *err)
{
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;

	m.handle = x->l.handles[0];
	m.offset = off;
	m.version_t = t;
	return raw_request(&x->raw, TP_OP_WRITE, &m.base, s, strlen(s), err, 512);
}

static void commit_of(struct fx *x, Tessera__VersionCommit *c, uint8_t *mac, uint64_t t,
		      uint64_t vm)
{
	tessera__version_commit__init(c);
	c->file = x->vcap.file;
	c->t = t;
	c->vm = vm;
	c->handles = &x->l.handles[0];
	c->n_handles = 1;
	assert_int_equal(cap_sign_commit(&x->key, c, mac), 0);
}

static int vread(struct fx *x, uint64_t r, Tessera__VersionCommit **vm, size_t n, uint64_t len,
		 char *err)
{
	Tessera__ReadRequest m = TESSERA__READ_REQUEST__INIT;

	m.handle = x->l.handles[0];
	m.length = len;
	m.read_version = r;
	m.vmap = vm;
	m.n_vmap = n;
	x->raw.reply_len = 0;
	return raw_request(&x->raw, TP_OP_READ, &m.base, NULL, 0, err, 512);
}

/* Writes by several writers, committed in another order, read at each
 * version; a merge; a plain read then sees the base. */
static void test_versions_on_workers(void **state)
{
	struct fx *x = *state;
	Tessera__VersionCommit c[3], *vm[3] = { &c[0], &c[1], &c[2] };
	Tessera__VersionGrant g = TESSERA__VERSION_GRANT__INIT;
	Tessera__VlogRequest v = TESSERA__VLOG_REQUEST__INIT;
	uint8_t mac[4][TP_CAP_MAC_LEN];
	char err[512];

	assert_int_equal(vwrite(x, T(1, 1), 0, "aaaaaaaa", err), 0);
	assert_int_equal(vwrite(x, T(2, 1), 2, "bbbb", err), 0);
	assert_int_equal(vwrite(x, T(3, 1), 4, "cc", err), 0);
	commit_of(x, &c[0], mac[0], T(3, 1), 1);
	commit_of(x, &c[1], mac[1], T(1, 1), 2);
	commit_of(x, &c[2], mac[2], T(2, 1), 3);
	assert_int_equal(vread(x, 1, vm, 3, 16, err), 0);
	assert_int_equal(x->raw.reply_len, 6);
	assert_memory_equal(x->got, "\0\0\0\0cc", 6);
	assert_int_equal(vread(x, 2, vm, 3, 16, err), 0);
	assert_memory_equal(x->got, "aaaaaaaa", 8);
	assert_int_equal(vread(x, 3, NULL, 0, 16, err), 0);
	assert_memory_equal(x->got, "aabbbbaa", 8);
	/* A plain write of it is refused, naming the object and the daemon. */
	assert_int_equal(vwrite(x, 0, 0, "plain", err), -EINVAL);
	assert_non_null(strstr(err, "storage daemon"));
	/* Merge up to 3: the base holds it, the log is empty. */
	g.file = x->vcap.file;
	g.upto = 3;
	g.next_id = 4;
	g.expires_ns = tp_real_ns() + 60ll * 1000000000;
	assert_int_equal(cap_sign_grant(&x->key, &g, mac[3]), 0);
	v.handle = x->l.handles[0];
	v.op = TESSERA__VLOG_OP__VLOG_MERGE;
	v.grant = &g;
	v.vmap = vm;
	v.n_vmap = 3;
	assert_int_equal(raw_request(&x->raw, TP_OP_VLOG, &v.base, NULL, 0, err, sizeof(err)), 0);
	x->raw.cap = x->plain;
	assert_int_equal(vread(x, 0, NULL, 0, 16, err), 0);
	assert_int_equal(x->raw.reply_len, 8);
	assert_memory_equal(x->got, "aabbbbaa", 8);
	x->raw.cap = &x->vcap;
}

/* SIGKILL after the writes' replies and a read that applied the commit:
 * the restarted daemon reads the same (the vmap resent, as the version
 * server keeps it until merged), and the uncommitted write stays
 * invisible. */
static void test_kill_recovers(void **state)
{
	struct fx *x = *state;
	Tessera__VersionCommit c, *vm[1] = { &c };
	uint8_t mac[TP_CAP_MAC_LEN];
	char err[512];
	uint32_t s = x->l.servers[0];

	assert_int_equal(vwrite(x, T(1, 1), 0, "durable", err), 0);
	assert_int_equal(vwrite(x, T(2, 1), 0, "LOST", err), 0);
	commit_of(x, &c, mac, T(1, 1), 1);
	assert_int_equal(vread(x, 1, vm, 1, 16, err), 0);
	assert_memory_equal(x->got, "durable", 7);
	tnet_close(x->raw.net);
	cluster_stop_pid(x->c->ios[s], SIGKILL);
	cluster_restart_ios(x->c, (int)s, NULL);
	raw_open(x->c, s, &x->raw);
	x->raw.reply_data = x->got;
	x->raw.reply_cap = sizeof(x->got);
	x->raw.cap = &x->vcap;
	assert_int_equal(vread(x, 1, vm, 1, 16, err), 0);
	assert_int_equal(x->raw.reply_len, 7);
	assert_memory_equal(x->got, "durable", 7);
	assert_int_equal(vread(x, 5, NULL, 0, 16, err), 0);
	assert_memory_equal(x->got, "durable", 7);
}

/* What a versioned write costs against a plain one, one 4 KiB write at a
 * time through raw frames (the record synced before each reply; the plain
 * write followed by a SYNC, for the same durability), and 64 KiB reads at
 * a version over 16 committed records. Figures, not checks: printed. */
#define COST_N 100

static double plain_writes(struct fx *x, const char *buf)
{
	struct tessera_layout want = { .strip_size = 65536, .count = 1 }, gl;
	Tessera__HandlesRequest sy = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__WriteRequest p = TESSERA__WRITE_REQUEST__INIT;
	tessera_file *g;
	struct raw raw;
	char err[512];
	double t0;

	CHECK(x->c->fs, tessera_open(x->c->fs, "/p", O_CREAT | O_RDWR, 0600, &want, &g));
	CHECK(x->c->fs, tessera_file_layout(g, &gl));
	raw_open(x->c, gl.servers[0], &raw);
	raw.cap = file_cap(g);
	p.handle = gl.handles[0];
	sy.handles = &gl.handles[0];
	sy.n_handles = 1;
	t0 = now_s();
	for (int i = 0; i < COST_N; i++) {
		p.offset = (uint64_t)i * 4096;
		assert_int_equal(raw_request(&raw, TP_OP_WRITE, &p.base, buf, 4096, err,
					     sizeof(err)), 0);
		assert_int_equal(raw_request(&raw, TP_OP_SYNC, &sy.base, NULL, 0, err,
					     sizeof(err)), 0);
	}
	t0 = now_s() - t0;
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked((ProtobufCMessage *)&raw.cap->base, NULL);
	tessera_close(g);
	return t0;
}

static void test_cost(void **state)
{
	struct fx *x = *state;
	Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;
	static Tessera__VersionCommit c[COST_N], *vm[COST_N];
	static uint8_t mac[COST_N][TP_CAP_MAC_LEN];
	static char buf[4096];
	char err[512];
	double t0, tv, tp, tr;

	memset(buf, 'w', sizeof(buf));
	m.handle = x->l.handles[0];
	t0 = now_s();
	for (int i = 0; i < COST_N; i++) {
		m.offset = (uint64_t)i * 4096;
		m.version_t = T(1, i + 1);
		assert_int_equal(raw_request(&x->raw, TP_OP_WRITE, &m.base, buf, 4096, err,
					     sizeof(err)), 0);
	}
	tv = now_s() - t0;
	tp = plain_writes(x, buf);
	for (int i = 0; i < COST_N; i++) {
		commit_of(x, &c[i], mac[i], T(1, i + 1), (uint64_t)i + 1);
		vm[i] = &c[i];
	}
	assert_int_equal(vread(x, COST_N, vm, COST_N, 65536, err), 0);
	t0 = now_s();
	for (int i = 0; i < COST_N; i++)
		assert_int_equal(vread(x, COST_N, NULL, 0, 65536, err), 0);
	tr = now_s() - t0;
	print_message("versioned 4 KiB write (record synced): %.0f us; plain write + SYNC: "
		      "%.0f us; 64 KiB read at a version over 16 records: %.0f us\n",
		      tv / COST_N * 1e6, tp / COST_N * 1e6, tr / COST_N * 1e6);
}

/* Through the library (the client and the version server as built): a
 * versioned file striped over two daemons, overlapping writes across
 * strips, a truncate, a snapshot, fsync (merges), close and reopen; then
 * unlink removes the objects' logs. A smoke test of the chain; the
 * concurrent one is test_version.c. */
static void test_library(void **state)
{
	struct fx *x = *state;
	struct tessera_layout want = { .strip_size = 4096, .count = 2,
				       .kind = TESSERA_LAYOUT_VERSIONED }, got;
	static uint8_t a[12288], b[12288], r[12288 + 16];
	struct tessera_version_state vs;
	struct tessera_stat st;
	tessera_file *f, *s;
	uint64_t snap;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	CHECK(x->c->fs, tessera_open(x->c->fs, "/lib", O_CREAT | O_RDWR, 0600, &want, &f));
	CHECK(x->c->fs, tessera_file_layout(f, &got));
	assert_int_equal(got.kind, TESSERA_LAYOUT_VERSIONED);
	assert_int_equal(tessera_pwrite(f, a, sizeof(a), 0), sizeof(a));
	assert_int_equal(tessera_pwrite(f, b, 6000, 3000), 6000);
	CHECK(x->c->fs, tessera_snapshot_create(f, "one", &snap));
	CHECK(x->c->fs, tessera_ftruncate(f, 5000));
	assert_int_equal(tessera_pread(f, r, sizeof(r), 0), 5000);
	assert_memory_equal(r, a, 3000);
	assert_memory_equal(r + 3000, b, 2000);
	CHECK(x->c->fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, 5000);
	CHECK(x->c->fs, tessera_open_snapshot(x->c->fs, "/lib", "one", &s));
	assert_int_equal(tessera_pread(s, r, sizeof(r), 0), sizeof(a));
	assert_memory_equal(r + 3000, b, 6000);
	assert_memory_equal(r + 9000, a, 3288);
	CHECK(x->c->fs, tessera_close(s));
	CHECK(x->c->fs, tessera_snapshot_drop(f, "one"));
	CHECK(x->c->fs, tessera_fsync(f));
	CHECK(x->c->fs, tessera_version_state(f, &vs));
	assert_int_equal(vs.unmerged, 0);
	CHECK(x->c->fs, tessera_close(f));
	CHECK(x->c->fs, tessera_open(x->c->fs, "/lib", O_RDONLY, 0, NULL, &f));
	assert_int_equal(tessera_pread(f, r, sizeof(r), 0), 5000);
	assert_memory_equal(r + 3000, b, 2000);
	CHECK(x->c->fs, tessera_close(f));
	CHECK(x->c->fs, tessera_unlink(x->c->fs, "/lib"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_versions_on_workers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill_recovers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cost, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
