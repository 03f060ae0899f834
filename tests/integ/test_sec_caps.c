/*
 * test_sec_caps.c - capabilities mean what they say, and locks belong to
 * who took them (issue 29.3, docs/security.md "Lifetime and renewal",
 * "Who checks what", "Lock owners"), attacked as a real other user:
 *   - renewal by a counted handle of a 0644 file inside root's 0700
 *     directory is refused (no proof, another file's, root's, a forged
 *     one), and so is a share without a capability;
 *   - a read capability cannot FETCH_ADD, take an exclusive lock or SYNC
 *     (and fsync of a read-only file still succeeds);
 *   - nobody cannot release, renew or join root's lock even knowing its
 *     owner id, and no daemon log shows that id;
 *   - a blocking lock wait four times longer than the lease succeeds (it
 *     failed with ENOLCK).
 *
 * The attacker is uid 65534 (nobody): a child drops to it and calls the
 * library, or makes the MUNGE credential of a raw endpoint the test holds
 * (cluster.h). Needs root; skipped otherwise. The lease is short
 * (LEASE_MS) and the daemons' long poll (half of timeout_ms) longer than
 * it, as with the defaults (15 s against 10 s), so the long wait is quick.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define LEASE_MS 1000
#define WAIT_S 4.0 /* the long wait: four leases */

static int setup(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to drop to uid %u and own the victims\n", NOBODY);
		*state = NULL;
		return 0;
	}
	return cluster_setup_conf(state, CLUSTER_TCP,
				  "lock_lease_ms = 1000\ntimeout_ms = 10000\n");
}

static int teardown(void **state)
{
	return *state ? cluster_teardown(state) : 0;
}

/* The capability an open of `path` for `rights` gives nobody (LOOKUP with
 * open_rights on a session of nobody's). */
static Tessera__Capability *nobody_open_cap(struct cluster *c, const char *path, uint32_t rights)
{
	Tessera__PathRequest pr = TESSERA__PATH_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_LOOKUP, .reqid = 77 };
	Tessera__AttrReply *rep;
	Tessera__Capability *cap;
	struct tp_frame reply;
	uint8_t frame[4096];
	struct raw raw;
	char msg[512];
	long len;

	raw_open_as_nobody(c, -1, &raw);
	pr.path = (char *)path;
	pr.open_rights = rights;
	len = tp_frame_build(frame, sizeof(frame), &h, raw.name, raw.name_len, &pr.base);
	assert_true(len > 0);
	if (raw_roundtrip(&raw, frame, (size_t)len, &reply, msg, sizeof(msg)))
		fail_msg("nobody's open of %s: %s", path, msg);
	rep = (Tessera__AttrReply *)tp_body_unpack(&reply, &tessera__attr_reply__descriptor);
	assert_non_null(rep);
	assert_non_null(rep->cap);
	cap = rep->cap;
	rep->cap = NULL;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	tnet_close(raw.net);
	return cap;
}

/* A CAP renewal of `file` for read, as nobody, presenting `proof`: the
 * status, the words in msg. */
static int nobody_renew(struct cluster *c, uint64_t file, Tessera__Capability *proof, char *msg,
			size_t msglen)
{
	Tessera__CapRequest cr = TESSERA__CAP_REQUEST__INIT;
	struct raw raw;
	int rc;

	raw_open_as_nobody(c, -1, &raw);
	cr.file = file;
	cr.rights = TP_CAP_READ;
	cr.proof = proof;
	rc = raw_request(&raw, TP_OP_CAP, &cr.base, NULL, 0, msg, msglen);
	tnet_close(raw.net);
	return rc;
}

/* ------------------------------------------------ renewal by handle */

static struct tessera_file_share counted_share; /* the child's copy: fork */

static int open_counted_share(const char *conf)
{
	tessera_fs *fs = NULL;
	tessera_file *f;
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open_shared(fs, "/vault/plain", &counted_share, O_RDONLY, &f) == -EACCES);
	EXPECT(strstr(tessera_errmsg(fs), "no capability"));
	tessera_disconnect(fs);
	return 0;
}

/* A 0644 file inside root's 0700 directory: nobody knows its handle (they
 * were sequential) and its layout, but no path walk of nobody's reaches
 * it, so nothing nobody can present renews a capability for it. */
static void test_renewal_by_counted_handle(void **state)
{
	struct cluster *c = *state;
	Tessera__Capability *other, *roots, forged;
	struct tessera_stat st, ost;
	tessera_file *f;
	char msg[512];

	NEED_ROOT(c);
	CHECK(c->fs, tessera_mkdir(c->fs, "/vault", 0700));
	cluster_put_file(c->fs, "/vault/plain", 0644, "root's words");
	CHECK(c->fs, tessera_mkdir(c->fs, "/pub", 0755));
	cluster_put_file(c->fs, "/pub/open", 0644, "anyone's words");
	CHECK(c->fs, tessera_stat(c->fs, "/vault/plain", &st));
	CHECK(c->fs, tessera_stat(c->fs, "/pub/open", &ost));

	assert_int_equal(nobody_renew(c, st.handle, NULL, msg, sizeof(msg)), -EACCES);
	print_message("no proof       -> %s\n", msg);
	assert_non_null(strstr(msg, "no capability"));

	other = nobody_open_cap(c, "/pub/open", TP_CAP_READ);
	assert_int_equal(nobody_renew(c, st.handle, other, msg, sizeof(msg)), -EACCES);
	print_message("another file's -> %s\n", msg);
	assert_non_null(strstr(msg, "for file"));
	forged = *other;
	forged.file = st.handle;
	assert_int_equal(nobody_renew(c, st.handle, &forged, msg, sizeof(msg)), -EACCES);
	print_message("forged         -> %s\n", msg);
	assert_non_null(strstr(msg, "does not verify"));

	CHECK(c->fs, tessera_open(c->fs, "/vault/plain", O_RDONLY, 0, NULL, &f));
	roots = file_cap(f);
	assert_int_equal(nobody_renew(c, st.handle, roots, msg, sizeof(msg)), -EACCES);
	print_message("root's         -> %s\n", msg);
	assert_non_null(strstr(msg, "issued to uid 0"));

	/* a share of handle and layout alone (what tessera_get_layout gave
	 * before the directory was closed) */
	memset(&counted_share, 0, sizeof(counted_share));
	counted_share.handle = st.handle;
	CHECK(c->fs, tessera_get_layout(c->fs, "/vault/plain", &counted_share.layout));
	assert_int_equal(cluster_as_nobody(c, open_counted_share), 0);

	/* and a renewal with a proof of one's own open works */
	assert_int_equal(nobody_renew(c, ost.handle, other, msg, sizeof(msg)), 0);
	tessera_close(f);
	protobuf_c_message_free_unpacked(&roots->base, NULL);
	protobuf_c_message_free_unpacked(&other->base, NULL);
}

/* ------------------------------------------------ read capability */

#define SHARED_FP_KEY 42
#define SHARED_FP 12288

static int read_only_mutations(const char *conf)
{
	tessera_fs *fs = NULL;
	tessera_file *ro;
	tessera_lock *lk;
	int64_t old;
	char err[512];

	EXPECT(tessera_connect(conf, &fs, err, sizeof(err)) == 0);
	EXPECT(tessera_open(fs, "/pub/counted", O_RDONLY, 0, NULL, &ro) == 0);
	EXPECT(tessera_fetch_add(ro, SHARED_FP_KEY, 1, &old) == -EACCES);
	EXPECT(strstr(tessera_errmsg(fs), "needs write"));
	EXPECT(tessera_fetch_set(ro, SHARED_FP_KEY, 0, &old) == -EACCES);
	EXPECT(tessera_lock_range(ro, TESSERA_LOCK_WRITE, 0, 16, TESSERA_LOCK_ALT_TRY, &lk) ==
	       -EACCES);
	EXPECT(strstr(tessera_errmsg(fs), "LOCK_ACQUIRE"));
	/* a shared lock and fsync stay the reader's */
	EXPECT(tessera_lock_range(ro, TESSERA_LOCK_READ, 0, 16, TESSERA_LOCK_ALT_TRY, &lk) == 0);
	EXPECT(tessera_unlock(lk) == 0);
	EXPECT(tessera_fsync(ro) == 0);
	tessera_close(ro);
	tessera_disconnect(fs);
	return 0;
}

/* A reader reset the owner's MPI shared file pointer, held an exclusive
 * lock the owner waited on, and made the daemons flush. */
static void test_read_cap_cannot_mutate(void **state)
{
	struct cluster *c = *state;
	Tessera__HandlesRequest h = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__Capability *cap;
	struct tessera_layout l;
	tessera_file *f;
	tessera_lock *lk;
	struct raw raw;
	char msg[512];
	int64_t old;

	NEED_ROOT(c);
	CHECK(c->fs, tessera_mkdir(c->fs, "/pub", 0755));
	cluster_put_file(c->fs, "/pub/counted", 0644, "counted");
	CHECK(c->fs, tessera_open(c->fs, "/pub/counted", O_RDWR, 0, NULL, &f));
	CHECK(c->fs, tessera_fetch_set(f, SHARED_FP_KEY, SHARED_FP, &old));
	assert_int_equal(cluster_as_nobody(c, read_only_mutations), 0);

	/* SYNC with nobody's read capability, raw */
	CHECK(c->fs, tessera_get_layout(c->fs, "/pub/counted", &l));
	cap = nobody_open_cap(c, "/pub/counted", TP_CAP_READ);
	raw_open_as_nobody(c, (int)l.servers[0], &raw);
	raw.cap = cap;
	h.handles = &l.handles[0];
	h.n_handles = 1;
	assert_int_equal(raw_request(&raw, TP_OP_SYNC, &h.base, NULL, 0, msg, sizeof(msg)),
			 -EACCES);
	print_message("SYNC with read -> %s\n", msg);
	assert_non_null(strstr(msg, "needs write"));
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);

	/* the owner's pointer is where it was, and its bytes are free */
	CHECK(c->fs, tessera_fetch_add(f, SHARED_FP_KEY, 0, &old));
	assert_int_equal(old, SHARED_FP);
	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, 16, TESSERA_LOCK_ONE_TRY, &lk));
	CHECK(c->fs, tessera_unlock(lk));
	tessera_close(f);
}

/* ------------------------------------------------ lock owners */

/* A lock message on raw: its status, the words in msg. */
static int raw_lock_msg(struct raw *raw, unsigned op, ProtobufCMessage *m, char *msg,
			size_t msglen, Tessera__LockReply **rep)
{
	struct tp_hdr h = { .opcode = (uint16_t)op, .reqid = 900 };
	size_t cap = TP_HDR_SIZE + raw->name_len + protobuf_c_message_get_packed_size(m) + 4096;
	uint8_t *frame = malloc(cap);
	struct tp_frame reply;
	long len;
	int rc;

	assert_non_null(frame);
	len = tp_frame_build(frame, cap, &h, raw->name, raw->name_len, m);
	assert_true(len > 0);
	rc = raw_roundtrip(raw, frame, (size_t)len, &reply, msg, msglen);
	if (!rc && rep)
		*rep = (Tessera__LockReply *)tp_body_unpack(&reply,
							    &tessera__lock_reply__descriptor);
	free(frame);
	return rc;
}

/* Whether any daemon's log holds `word`. */
static int logs_hold(const struct cluster *c, const char *word)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "grep -qri -- '%s' '%s'/*.log", word, c->dir);
	return system(cmd) == 0;
}

/* Root's lock, taken on a raw session of root's with a known owner id:
 * nobody, on a session of its own with its own read capability for the
 * file, names that id and is refused every way; root's lock stays root's.
 * Then root goes silent: the daemon drops the lock and logs it by uid,
 * not by the id. */
static void test_foreign_lock_release(void **state)
{
	struct cluster *c = *state;
	Tessera__LockAcquireRequest acq = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
	Tessera__LockReleaseRequest rel = TESSERA__LOCK_RELEASE_REQUEST__INIT;
	Tessera__LeaseRequest lease = TESSERA__LEASE_REQUEST__INIT;
	Tessera__LockTestRequest test = TESSERA__LOCK_TEST_REQUEST__INIT;
	Tessera__Capability *roots, *nobodys;
	Tessera__LockReply *rep = NULL;
	const uint64_t owner = 0x5ec2e7c0ffee1234ull; /* "from the log" */
	uint64_t off = 0, len = 16;
	struct tessera_layout l;
	struct raw root, att;
	tessera_file *f;
	char msg[512], hex[32];

	NEED_ROOT(c);
	CHECK(c->fs, tessera_mkdir(c->fs, "/pub", 0755));
	cluster_put_file(c->fs, "/pub/locked", 0644, "locked");
	CHECK(c->fs, tessera_open(c->fs, "/pub/locked", O_RDWR, 0, NULL, &f));
	CHECK(c->fs, tessera_get_layout(c->fs, "/pub/locked", &l));
	roots = file_cap(f);
	nobodys = nobody_open_cap(c, "/pub/locked", TP_CAP_READ);

	raw_open(c, l.servers[0], &root);
	acq.session = owner;
	acq.handle = l.handles[0];
	acq.cap = roots;
	acq.mode = TESSERA__LOCK_MODE__LOCK_WRITE;
	acq.strip_size = l.strip_size;
	acq.stripe_count = l.count;
	acq.slot = 0;
	acq.n_offsets = acq.n_lengths = 1;
	acq.offsets = &off;
	acq.lengths = &len;
	assert_int_equal(raw_lock_msg(&root, TP_OP_LOCK_ACQUIRE, &acq.base, msg, sizeof(msg), &rep),
			 0);
	assert_non_null(rep);
	assert_int_equal(rep->state, TESSERA__LOCK_STATE__LOCK_GRANTED);

	raw_open_as_nobody(c, (int)l.servers[0], &att);
	rel.session = owner;
	rel.epoch = rep->epoch;
	rel.lock_id = rep->lock_id;
	rel.handle = l.handles[0];
	rel.cap = nobodys;
	assert_int_equal(raw_lock_msg(&att, TP_OP_LOCK_RELEASE, &rel.base, msg, sizeof(msg), NULL),
			 -EACCES);
	print_message("release root's  -> %s\n", msg);
	assert_non_null(strstr(msg, "another user"));
	snprintf(hex, sizeof(hex), "%016" PRIx64, owner);
	assert_null(strstr(msg, hex));
	rel.partial = 1;
	assert_int_equal(raw_lock_msg(&att, TP_OP_LOCK_RELEASE, &rel.base, msg, sizeof(msg), NULL),
			 -EACCES);
	lease.session = owner;
	lease.cap = nobodys;
	assert_int_equal(raw_lock_msg(&att, TP_OP_LEASE, &lease.base, msg, sizeof(msg), NULL),
			 -EACCES);
	print_message("lease as root's -> %s\n", msg);
	acq.cap = nobodys; /* a shared lock of one's own, under root's id */
	acq.mode = TESSERA__LOCK_MODE__LOCK_READ;
	off = 4096;
	assert_int_equal(raw_lock_msg(&att, TP_OP_LOCK_ACQUIRE, &acq.base, msg, sizeof(msg), NULL),
			 -EACCES);
	/* nor may it ask, under root's id, which locks stand in its way */
	test.session = owner;
	test.handle = l.handles[0];
	test.cap = nobodys;
	test.mode = TESSERA__LOCK_MODE__LOCK_READ;
	test.group = 1;
	test.length = 16;
	assert_int_equal(raw_lock_msg(&att, TP_OP_LOCK_TEST, &test.base, msg, sizeof(msg), NULL),
			 -EACCES);
	print_message("test as root's  -> %s\n", msg);
	assert_non_null(strstr(msg, "another user"));

	/* still root's: its own release works (once) */
	rel.cap = roots;
	rel.partial = 0;
	assert_int_equal(raw_lock_msg(&root, TP_OP_LOCK_RELEASE, &rel.base, msg, sizeof(msg), NULL),
			 0);
	/* a lock root leaves to its lease: dropped, logged by uid alone */
	acq.cap = roots;
	acq.mode = TESSERA__LOCK_MODE__LOCK_WRITE;
	acq.epoch = 0;
	off = 0;
	assert_int_equal(raw_lock_msg(&root, TP_OP_LOCK_ACQUIRE, &acq.base, msg, sizeof(msg), NULL),
			 0);
	usleep((useconds_t)(LEASE_MS * 2500));
	assert_true(logs_hold(c, "lock session of uid 0"));
	assert_false(logs_hold(c, hex));
	tnet_close(att.net);
	tnet_close(root.net);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	protobuf_c_message_free_unpacked(&roots->base, NULL);
	protobuf_c_message_free_unpacked(&nobodys->base, NULL);
	tessera_close(f);
}

/* ------------------------------------------------ the long wait */

struct waiter {
	const char *conf;
	int rc;
	double waited;
	char err[512];
};

static void *wait_for_lock(void *arg)
{
	struct waiter *w = arg;
	tessera_fs *fs = NULL;
	tessera_file *f = NULL;
	tessera_lock *lk;
	double t0;

	if ((w->rc = tessera_connect(w->conf, &fs, w->err, sizeof(w->err))))
		return NULL;
	t0 = now_s();
	if (!(w->rc = tessera_open(fs, "/pub/waited", O_RDWR, 0, NULL, &f)) &&
	    !(w->rc = tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, 16, TESSERA_LOCK_TWO_PHASE,
					 &lk)))
		w->rc = tessera_unlock(lk);
	w->waited = now_s() - t0;
	if (w->rc)
		snprintf(w->err, sizeof(w->err), "%s", tessera_errmsg(fs));
	if (f)
		tessera_close(f);
	tessera_disconnect(fs);
	return NULL;
}

/* A blocking wait longer than the lease: the waiter's first lock on the
 * daemon had no lease renewal, and the daemon dropped it at the lease
 * (ENOLCK). */
static void test_long_wait(void **state)
{
	struct cluster *c = *state;
	struct waiter w = { 0 };
	tessera_file *f;
	tessera_lock *lk;
	pthread_t t;

	NEED_ROOT(c);
	CHECK(c->fs, tessera_mkdir(c->fs, "/pub", 0755));
	cluster_put_file(c->fs, "/pub/waited", 0644, "waited");
	CHECK(c->fs, tessera_open(c->fs, "/pub/waited", O_RDWR, 0, NULL, &f));
	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, 16, TESSERA_LOCK_ONE_TRY, &lk));
	w.conf = c->conf;
	assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
	usleep((useconds_t)(WAIT_S * 1e6));
	CHECK(c->fs, tessera_unlock(lk));
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("waited %.1f s for a lock with a lease of %.1f s: %s\n", w.waited,
		      LEASE_MS / 1000.0, w.rc ? w.err : "granted");
	assert_int_equal(w.rc, 0);
	assert_true(w.waited > WAIT_S - 0.5);
	tessera_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_renewal_by_counted_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_cap_cannot_mutate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_lock_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_wait, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
