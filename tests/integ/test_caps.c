/*
 * test_caps.c - capabilities on real daemons (docs/security.md,
 * "Capabilities"): a storage daemon serves a request on an object only
 * with a capability the metadata daemon signed for that object, with the
 * right the opcode needs, not expired. Forged, expired, borrowed (another
 * file's), read-only-for-a-write and missing capabilities are refused with
 * EACCES (EKEYEXPIRED) naming the object and the daemon, and the data is
 * still there afterwards; an open file outlives its capability's lifetime
 * unnoticed; a user who may not open a file gets EACCES however the
 * request is made; a key file others can read stops the daemons. The
 * version server (VERSION at the metadata daemon): a versioned file's
 * capabilities say so, VERSION wants one for that file, a commit by
 * another session's ID# is a forged one, and after a kill -9 of the
 * daemons an ID# of before answers ESTALE while the commits stay.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"

#define LEN 10000
#define LIFETIME_MS 1000
/* The storage daemons allow 5 s of clock skew past expiry. */
#define EXPIRED_AFTER_S (LIFETIME_MS / 1000.0 + 5.5)

static struct tessera_cred user = { 1000, 1, { 1000 } };

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static int setup_short(void **state)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "cap_lifetime_ms = %d\n", LIFETIME_MS);
	return cluster_setup_conf(state, CLUSTER_TCP, extra);
}

static void pattern(uint8_t *buf, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + seed);
}

/* A file of one object (so every request goes to one daemon) holding LEN
 * bytes of pattern `seed`, mode 0600, owned by root. */
static tessera_file *victim(struct cluster *c, const char *path, uint8_t seed,
			    struct tessera_layout *l)
{
	struct tessera_layout want = { .strip_size = 4096, .count = 1 };
	uint8_t buf[LEN];
	tessera_file *f;

	pattern(buf, LEN, seed);
	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0600, &want, &f));
	assert_int_equal(tessera_pwrite(f, buf, LEN, 0), LEN);
	CHECK(c->fs, tessera_file_layout(f, l));
	return f;
}

/* The file still holds its pattern and size. */
static void intact(struct cluster *c, const char *path, uint8_t seed)
{
	uint8_t want[LEN], got[LEN + 1];
	struct tessera_stat st;
	tessera_file *f;

	pattern(want, LEN, seed);
	CHECK(c->fs, tessera_stat(c->fs, path, &st));
	assert_int_equal(st.size, LEN);
	CHECK(c->fs, tessera_open(c->fs, path, O_RDONLY, 0, NULL, &f));
	assert_int_equal(tessera_pread(f, got, sizeof(got), 0), LEN);
	assert_memory_equal(got, want, LEN);
	tessera_close(f);
}

/* Every kind of request that touches an object, on handle h. */
static int attempt(struct raw *raw, unsigned op, uint64_t h, char *err, size_t errlen)
{
	static uint8_t data[64];
	uint64_t off = 0, len = 8;

	switch (op) {
	case TP_OP_READ: {
		Tessera__ReadRequest m = TESSERA__READ_REQUEST__INIT;

		m.handle = h;
		m.length = 64;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_WRITE: {
		Tessera__WriteRequest m = TESSERA__WRITE_REQUEST__INIT;

		m.handle = h;
		return raw_request(raw, op, &m.base, data, sizeof(data), err, errlen);
	}
	case TP_OP_TRUNCATE: {
		Tessera__TruncateRequest m = TESSERA__TRUNCATE_REQUEST__INIT;

		m.handle = h;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_GETSIZE:
	case TP_OP_SYNC:
	case TP_OP_REMOVE: {
		Tessera__HandlesRequest m = TESSERA__HANDLES_REQUEST__INIT;

		m.handles = &h;
		m.n_handles = 1;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_LIST_WRITE:
	case TP_OP_LIST_READ: {
		Tessera__ListIORequest m = TESSERA__LIST_IOREQUEST__INIT;

		m.handle = h;
		m.n_offsets = m.n_lengths = 1;
		m.offsets = &off;
		m.lengths = &len;
		return raw_request(raw, op, &m.base, op == TP_OP_LIST_WRITE ? data : NULL,
				   op == TP_OP_LIST_WRITE ? len : 0, err, errlen);
	}
	case TP_OP_FETCH_ADD: {
		Tessera__FetchAddRequest m = TESSERA__FETCH_ADD_REQUEST__INIT;

		m.handle = h;
		m.value = 1;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_LOCK_ACQUIRE: {
		Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;

		m.session = 77;
		m.handle = h;
		m.mode = 2;
		m.strip_size = 4096;
		m.stripe_count = 1;
		m.n_offsets = m.n_lengths = 1;
		m.offsets = &off;
		m.lengths = &len;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_LOCK_RELEASE: {
		Tessera__LockReleaseRequest m = TESSERA__LOCK_RELEASE_REQUEST__INIT;

		m.session = 77;
		m.lock_id = 1;
		m.handle = h;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_LOCK_TEST: {
		Tessera__LockTestRequest m = TESSERA__LOCK_TEST_REQUEST__INIT;

		m.session = 77;
		m.handle = h;
		m.mode = 2;
		m.group = 5;
		m.offset = off;
		m.length = len;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_LEASE: {
		Tessera__LeaseRequest m = TESSERA__LEASE_REQUEST__INIT;

		m.session = 77;
		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	case TP_OP_OBJECT_LIST: {
		Tessera__ObjectListRequest m = TESSERA__OBJECT_LIST_REQUEST__INIT;

		return raw_request(raw, op, &m.base, NULL, 0, err, errlen);
	}
	}
	fail_msg("opcode %u not covered", op);
	return 0;
}

static const unsigned every_op[] = {
	TP_OP_READ, TP_OP_WRITE, TP_OP_TRUNCATE, TP_OP_GETSIZE, TP_OP_SYNC, TP_OP_REMOVE,
	TP_OP_LIST_WRITE, TP_OP_LIST_READ, TP_OP_FETCH_ADD, TP_OP_LOCK_ACQUIRE,
	TP_OP_LOCK_RELEASE, TP_OP_LEASE, TP_OP_OBJECT_LIST, TP_OP_LOCK_TEST,
};
#define N_OPS (sizeof(every_op) / sizeof(every_op[0]))

/* op on h with raw's capability answers `want`, and the answer names the
 * storage daemon and (when the request names one) the object. */
static void refused(struct raw *raw, unsigned op, uint64_t h, uint32_t ios, int want,
		    const char *words)
{
	char err[512], name[64];
	int rc = attempt(raw, op, h, err, sizeof(err));

	if (rc != want)
		fail_msg("%s of %016llx: %d (%s), expected %d", tp_opcode_name(op),
			 (unsigned long long)h, rc, err, want);
	snprintf(name, sizeof(name), "storage daemon %u", ios);
	assert_non_null(strstr(err, name));
	if (op != TP_OP_LEASE && op != TP_OP_OBJECT_LIST) {
		snprintf(name, sizeof(name), "%016llx", (unsigned long long)h);
		assert_non_null(strstr(err, name));
	}
	if (words && !strstr(err, words))
		fail_msg("%s: '%s' lacks '%s'", tp_opcode_name(op), err, words);
}

/* ------------------------------------------------------------ raw frames */

/* Raw frames with no capability, or a forged one, for the victim's
 * objects' handles and the handles after the first (which named other
 * objects when handles were sequential; random now, they name none, and
 * the refusal comes before any lookup all the same): every opcode is
 * refused, and the data is all still there. */
static void test_raw_frames(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	tessera_file *f = victim(c, "/victim", 3, &l);
	Tessera__Capability *cap = file_cap(f), forged;
	uint8_t mac[TP_CAP_MAC_LEN];
	struct raw raw;

	raw_open(c, l.servers[0], &raw);
	for (uint64_t h = l.handles[0]; h < l.handles[0] + 4; h++)
		for (size_t i = 0; i < N_OPS; i++)
			refused(&raw, every_op[i], h, l.servers[0], -EACCES, "no capability");
	for (uint32_t k = 1; k < l.count; k++)
		for (size_t i = 0; i < N_OPS; i++)
			refused(&raw, every_op[i], l.handles[k], l.servers[0], -EACCES,
				"no capability");
	/* Forged: the real one with its MAC changed, and the real one's MAC
	 * on more rights, a later expiry or other objects. */
	forged = *cap;
	memcpy(mac, cap->mac.data, sizeof(mac));
	mac[7] ^= 1;
	forged.mac.data = mac;
	raw.cap = &forged;
	for (size_t i = 0; i < N_OPS; i++)
		refused(&raw, every_op[i], l.handles[0], l.servers[0], -EACCES, "does not verify");
	forged = *cap;
	forged.rights |= TP_CAP_REMOVE | TP_CAP_ADMIN;
	refused(&raw, TP_OP_REMOVE, l.handles[0], l.servers[0], -EACCES, "does not verify");
	refused(&raw, TP_OP_OBJECT_LIST, 0, l.servers[0], -EACCES, "does not verify");
	forged = *cap;
	forged.expires_ns += 3600ll * 1000000000;
	refused(&raw, TP_OP_WRITE, l.handles[0], l.servers[0], -EACCES, "does not verify");
	{
		uint64_t more[2] = { l.handles[0], l.handles[0] + 1 };

		forged = *cap;
		forged.handles = more;
		forged.n_handles = 2;
		refused(&raw, TP_OP_REMOVE, l.handles[0] + 1, l.servers[0], -EACCES,
			"does not verify");
	}
	/* The file's own capability still serves (the daemon is fine), but
	 * not for what only the metadata daemon may do. */
	raw.cap = cap;
	refused(&raw, TP_OP_REMOVE, l.handles[0], l.servers[0], -EACCES, "grants read write");
	refused(&raw, TP_OP_OBJECT_LIST, 0, l.servers[0], -EACCES, "but not this");
	refused(&raw, TP_OP_READ, l.handles[0] + 1, l.servers[0], -EACCES,
		"does not name this object");
	{
		char err[512];

		assert_int_equal(attempt(&raw, TP_OP_GETSIZE, l.handles[0], err, sizeof(err)), 0);
	}
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tessera_close(f);
	intact(c, "/victim", 3);
}

/* One file's capability on another file's objects; a read-only
 * capability for writes. */
static void test_borrowed_and_readonly(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout la, lb;
	tessera_file *a = victim(c, "/a", 5, &la), *b = victim(c, "/b", 6, &lb), *ro;
	Tessera__Capability *cap_b = file_cap(b), *cap_ro;
	struct raw raw;
	char err[512];

	raw_open(c, la.servers[0], &raw);
	raw.cap = cap_b;
	for (size_t i = 0; i < N_OPS; i++) {
		if (every_op[i] == TP_OP_LEASE || every_op[i] == TP_OP_OBJECT_LIST)
			continue; /* name no object */
		refused(&raw, every_op[i], la.handles[0], la.servers[0], -EACCES,
			"does not name this object");
	}
	print_message("borrowed: %s\n", (attempt(&raw, TP_OP_READ, la.handles[0], err,
						  sizeof(err)), err));
	tnet_close(raw.net);

	CHECK(c->fs, tessera_open(c->fs, "/a", O_RDONLY, 0, NULL, &ro));
	cap_ro = file_cap(ro);
	assert_int_equal(cap_ro->rights, TP_CAP_READ | TP_CAP_STAT);
	raw_open(c, la.servers[0], &raw);
	raw.cap = cap_ro;
	static const unsigned writes[] = { TP_OP_WRITE, TP_OP_TRUNCATE, TP_OP_LIST_WRITE,
					   TP_OP_REMOVE };
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
		refused(&raw, writes[i], la.handles[0], la.servers[0], -EACCES, "grants read stat");
	print_message("read-only: %s\n", (attempt(&raw, TP_OP_WRITE, la.handles[0], err,
						   sizeof(err)), err));
	assert_int_equal(attempt(&raw, TP_OP_READ, la.handles[0], err, sizeof(err)), 0);
	tnet_close(raw.net);

	protobuf_c_message_free_unpacked(&cap_b->base, NULL);
	protobuf_c_message_free_unpacked(&cap_ro->base, NULL);
	tessera_close(ro);
	tessera_close(a);
	tessera_close(b);
	intact(c, "/a", 5);
	intact(c, "/b", 6);
}

/* ------------------------------------------------------------- lifetime */

/* A capability past its lifetime is refused with EKEYEXPIRED; the open
 * file it came from still reads and writes (renewed unnoticed), a lock
 * held across the lifetime keeps its lease and is released, and a file
 * opened from an old share works too. */
static void test_expiry_and_renewal(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	tessera_file *f = victim(c, "/long", 9, &l), *g;
	Tessera__Capability *old = file_cap(f);
	struct tessera_file_share *share = malloc(sizeof(*share));
	uint8_t buf[LEN], back[LEN];
	tessera_lock *lk;
	struct raw raw;
	char err[512];

	assert_non_null(share);
	CHECK(c->fs, tessera_file_share(f, share));
	CHECK(c->fs, tessera_lock_range(f, TESSERA_LOCK_WRITE, 0, 100, TESSERA_LOCK_TWO_PHASE, &lk));
	raw_open(c, l.servers[0], &raw);
	raw.cap = old;
	assert_int_equal(attempt(&raw, TP_OP_READ, l.handles[0], err, sizeof(err)), 0);
	usleep((useconds_t)(EXPIRED_AFTER_S * 1e6));
	refused(&raw, TP_OP_READ, l.handles[0], l.servers[0], -EKEYEXPIRED, "expired");
	(void)attempt(&raw, TP_OP_READ, l.handles[0], err, sizeof(err));
	print_message("expired: %s\n", err);
	tnet_close(raw.net);

	/* The file kept open: reads, writes, size, sync, under its lock. */
	pattern(buf, LEN, 10);
	assert_int_equal(tessera_pwrite(f, buf, LEN, 0), LEN);
	assert_int_equal(tessera_pread(f, back, LEN, 0), LEN);
	assert_memory_equal(back, buf, LEN);
	CHECK(c->fs, tessera_fsync(f));
	CHECK(c->fs, tessera_unlock(lk));
	/* From a share whose capability expired. */
	CHECK(c->fs, tessera_open_shared(c->fs, "/long", share, O_RDWR, &g));
	assert_int_equal(tessera_pread(g, back, LEN, 0), LEN);
	assert_memory_equal(back, buf, LEN);
	tessera_close(g);
	tessera_close(f);
	free(share);
	protobuf_c_message_free_unpacked(&old->base, NULL);
}

/* -------------------------------------------------------- another user */

/* A user who may not open a file: open, get_layout + open_shared, and
 * renewal by handle all answer EACCES; the user's stat still works. */
static void test_other_user(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l, seen;
	tessera_file *f = victim(c, "/private", 11, &l), *g;
	struct tessera_file_share *share = calloc(1, sizeof(*share));
	Tessera__CapRequest cr = TESSERA__CAP_REQUEST__INIT;
	Tessera__Cred cred = TESSERA__CRED__INIT;
	Tessera__Capability *got;
	struct tessera_stat st;
	char err[512];

	assert_non_null(share);
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &user));
	assert_int_equal(tessera_open(c->fs, "/private", O_RDONLY, 0, NULL, &g), -EACCES);
	print_message("open: %s\n", tessera_errmsg(c->fs));
	CHECK(c->fs, tessera_stat(c->fs, "/private", &st)); /* sizes need no permission */
	assert_int_equal(st.size, LEN);
	CHECK(c->fs, tessera_get_layout(c->fs, "/private", &seen));
	share->handle = st.handle;
	share->layout = seen;
	assert_int_equal(tessera_open_shared(c->fs, "/private", share, O_RDONLY, &g), -EACCES);
	print_message("open_shared: %s\n", tessera_errmsg(c->fs));
	assert_int_equal(tessera_open_shared(c->fs, "/private", share, O_WRONLY, &g), -EACCES);
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));

	/* Renewal names the file by handle, and the mode is checked then too;
	 * only root gets an admin capability. */
	cred.uid = 1000;
	cred.n_gids = 1;
	cred.gids = &user.gids[0];
	cr.cred = &cred;
	cr.file = st.handle;
	cr.rights = TP_CAP_READ;
	assert_int_equal(raw_mds_cap(c, &cr, &got, err, sizeof(err)), -EACCES);
	print_message("renew as uid 1000: %s\n", err);
	cr.admin = 1;
	assert_int_equal(raw_mds_cap(c, &cr, &got, err, sizeof(err)), -EPERM);
	print_message("admin as uid 1000: %s\n", err);
	/* and root gets it, presenting its open's capability (issue 29: a
	 * handle alone renews nothing, root's included) */
	cred.uid = 0;
	cr.admin = 0;
	assert_int_equal(raw_mds_cap(c, &cr, &got, err, sizeof(err)), -EACCES);
	cr.proof = file_cap(f);
	assert_int_equal(raw_mds_cap(c, &cr, &got, err, sizeof(err)), 0);
	protobuf_c_message_free_unpacked(&cr.proof->base, NULL);
	assert_int_equal(got->file, st.handle);
	assert_int_equal(got->n_handles, 1);
	assert_int_equal(got->handles[0], l.handles[0]);
	protobuf_c_message_free_unpacked(&got->base, NULL);

	/* A file the user may read: a share without a capability still opens
	 * nothing (issue 29: renewal needs a path walk's capability); one
	 * from the user's own open does, and its grant is read-only. */
	CHECK(c->fs, tessera_setattr(c->fs, "/private", &(struct tessera_setattr){
		.valid = TESSERA_SET_MODE, .mode = 0644 }));
	CHECK(c->fs, tessera_set_thread_cred(c->fs, &user));
	assert_int_equal(tessera_open_shared(c->fs, "/private", share, O_RDONLY, &g), -EACCES);
	CHECK(c->fs, tessera_open(c->fs, "/private", O_RDONLY, 0, NULL, &g));
	CHECK(c->fs, tessera_file_share(g, share));
	tessera_close(g);
	CHECK(c->fs, tessera_open_shared(c->fs, "/private", share, O_RDONLY, &g));
	tessera_close(g);
	assert_int_equal(tessera_open_shared(c->fs, "/private", share, O_RDWR, &g), -EACCES);
	print_message("open_shared for write with a read share: %s\n", tessera_errmsg(c->fs));
	CHECK(c->fs, tessera_set_thread_cred(c->fs, NULL));
	free(share);
	tessera_close(f);
	intact(c, "/private", 11);
}

/* The same from a process that really is another user (uid 65534), with
 * its own connection: it cannot read the key, open, open from a share
 * built from get_layout, or reach the objects with raw frames, not even
 * with root's own capability for the file (sniffed, say): a capability
 * serves only the uid it was issued to. */
static void test_unprivileged_process(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l;
	tessera_file *f = victim(c, "/root-only", 13, &l);
	Tessera__Capability *roots;
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		tessera_close(f);
		skip(); /* setresuid needs root */
	}
	roots = file_cap(f);
	/* The client reads the config; the key stays root's (0600). */
	assert_int_equal(chmod(c->dir, 0711), 0);
	assert_int_equal(chmod(c->conf, 0644), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct tessera_file_share share;
		struct tessera_stat st;
		tessera_fs *fs;
		tessera_file *g;
		char err[512];
		struct raw raw;
		int fails = 0;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (open(c->key, O_RDONLY) >= 0 || errno != EACCES)
			fails |= 1;
		if (tessera_connect(c->conf, &fs, err, sizeof(err)))
			_exit(11);
		if (tessera_open(fs, "/root-only", O_RDONLY, 0, NULL, &g) != -EACCES)
			fails |= 2;
		memset(&share, 0, sizeof(share));
		if (tessera_stat(fs, "/root-only", &st) ||
		    tessera_get_layout(fs, "/root-only", &share.layout))
			fails |= 4;
		share.handle = st.handle;
		if (tessera_open_shared(fs, "/root-only", &share, O_RDONLY, &g) != -EACCES)
			fails |= 8;
		raw_open(c, share.layout.servers[0], &raw);
		for (size_t i = 0; i < N_OPS; i++)
			if (attempt(&raw, every_op[i], share.layout.handles[0], err, sizeof(err)) !=
			    -EACCES)
				fails |= 16;
		raw.cap = roots;
		for (size_t i = 0; i < N_OPS; i++)
			if (attempt(&raw, every_op[i], share.layout.handles[0], err, sizeof(err)) !=
				    -EACCES || !strstr(err, "issued to uid 0"))
				fails |= 32;
		tnet_close(raw.net);
		tessera_disconnect(fs);
		_exit(fails);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("as uid 65534: failed checks 0x%x", WEXITSTATUS(status));
	protobuf_c_message_free_unpacked(&roots->base, NULL);
	assert_int_equal(chmod(c->dir, 0700), 0);
	tessera_close(f);
	intact(c, "/root-only", 13);
}

/* ------------------------------------------------------------- the key */

/* Run a daemon on c's config with key file `key`; its exit status, and
 * its stderr in log. */
static int run_daemon(struct cluster *c, const char *prog, const char *key, char *log,
		      size_t loglen)
{
	char conf[400], cmd[2400], dir[400];
	FILE *in = fopen(c->conf, "r"), *out, *p;
	char line[1200];
	size_t n;
	int status;

	snprintf(conf, sizeof(conf), "%s/other.conf", c->dir);
	snprintf(dir, sizeof(dir), "%s/other-%s", c->dir, prog);
	assert_non_null(in);
	out = fopen(conf, "w");
	assert_non_null(out);
	while (fgets(line, sizeof(line), in))
		if (strncmp(line, "key_file", 8))
			fputs(line, out);
	fprintf(out, "key_file = %s\n", key);
	fclose(in);
	fclose(out);
	/* a port taken by the running cluster is not reached: the key is
	 * checked before listening */
	snprintf(cmd, sizeof(cmd), "%s/%s -c %s -d %s -i 0 2>&1", c->bin, prog, conf, dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(log, 1, loglen - 1, p);
	log[n] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_key_file_mode(void **state)
{
	struct cluster *c = *state;
	static const char *progs[] = { "tessera-mds", "tessera-ios" };
	char key[400], log[2048];

	snprintf(key, sizeof(key), "%s/open.key", c->dir);
	cluster_write_key(key, 0644);
	for (size_t i = 0; i < 2; i++) {
		assert_int_not_equal(run_daemon(c, progs[i], key, log, sizeof(log)), 0);
		print_message("%s: %s", progs[i], log);
		assert_non_null(strstr(log, key));
		assert_non_null(strstr(log, "group or others"));
	}
	assert_int_equal(chmod(key, 0640), 0);
	assert_int_not_equal(run_daemon(c, "tessera-ios", key, log, sizeof(log)), 0);
	assert_non_null(strstr(log, "group or others"));
	/* no key at all */
	snprintf(key, sizeof(key), "%s/missing.key", c->dir);
	assert_int_not_equal(run_daemon(c, "tessera-mds", key, log, sizeof(log)), 0);
	assert_non_null(strstr(log, key));
}

/* Capabilities from another file system's key do not verify here. */
static void test_other_key(void **state)
{
	struct cluster *c = *state;
	struct cluster *d;
	struct tessera_layout la, lb;
	tessera_file *a = victim(c, "/here", 21, &la), *b;
	Tessera__Capability *foreign;
	void *other;
	struct raw raw;

	assert_int_equal(cluster_setup(&other, CLUSTER_TCP), 0);
	d = other;
	b = victim(d, "/there", 22, &lb);
	foreign = file_cap(b);
	/* Asked here for the object it names (handles are random, so two file
	 * systems no longer hand out the same ones; when they were sequential
	 * this was /here's object too): only the key it was signed with
	 * differs from one this file system's daemons would accept. */
	raw_open(c, lb.servers[0], &raw);
	raw.cap = foreign;
	refused(&raw, TP_OP_READ, lb.handles[0], lb.servers[0], -EACCES, "does not verify");
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&foreign->base, NULL);
	tessera_close(b);
	cluster_teardown(&other);
	tessera_close(a);
	intact(c, "/here", 21);
}

/* A VERSION request to the metadata daemon on raw: its status (err:
 * the words), *rep (may be NULL; free it) the answer. */
static int vcall(struct raw *raw, Tessera__VersionRequest *m, Tessera__VersionReply **rep,
		 char *err, size_t errlen)
{
	uint8_t frame[8192];
	struct tp_hdr h = { .opcode = TP_OP_VERSION, .reqid = 77 };
	struct tp_frame reply;
	long len = tp_frame_build(frame, sizeof(frame), &h, raw->name, raw->name_len, &m->base);
	int rc;

	assert_true(len > 0);
	rc = raw_roundtrip(raw, frame, (size_t)len, &reply, err, errlen);
	if (rep)
		*rep = rc ? NULL : (Tessera__VersionReply *)
			tp_body_unpack(&reply, &tessera__version_reply__descriptor);
	return rc;
}

static void version_refused(struct raw *raw, Tessera__VersionRequest *m, int want,
			    const char *words)
{
	char err[512] = "";

	assert_int_equal(vcall(raw, m, NULL, err, sizeof(err)), want);
	if (!strstr(err, words))
		fail_msg("VERSION op %d answered \"%s\", not \"%s\"", m->op, err, words);
}

static void test_version_server(void **state)
{
	struct cluster *c = *state;
	tessera_fs *fs = c->fs;
	struct tessera_layout l = { .count = 2, .kind = TESSERA_LAYOUT_VERSIONED };
	tessera_file *v, *p;
	Tessera__Capability *vcap, *pcap;
	Tessera__VersionRequest m = TESSERA__VERSION_REQUEST__INIT;
	Tessera__VersionReply *rep;
	uint32_t slots[1] = { 1 };
	char err[512];
	struct raw a, b;
	uint32_t id;

	CHECK(fs, tessera_open(fs, "/v", O_RDWR | O_CREAT, 0644, &l, &v));
	CHECK(fs, tessera_open(fs, "/p", O_RDWR | O_CREAT, 0644, NULL, &p));
	vcap = file_cap(v);
	pcap = file_cap(p);
	assert_true(vcap->rights & TP_CAP_VERSIONED);
	assert_false(pcap->rights & TP_CAP_VERSIONED);
	raw_open_mds(c, &a);
	raw_open_mds(c, &b);
	/* no capability; another file's; a plain file's own */
	m.file = vcap->file;
	m.op = TESSERA__VERSION_OP__VERSION_ID;
	m.count = 1;
	version_refused(&a, &m, -EACCES, "no capability to write it");
	m.cap = pcap;
	version_refused(&a, &m, -EACCES, "no capability to write it");
	m.file = pcap->file;
	version_refused(&a, &m, -EINVAL, "not a versioned file");
	/* an ID# for session a, a commit by it; b may not use it */
	m.file = vcap->file;
	m.cap = vcap;
	assert_int_equal(vcall(&a, &m, &rep, err, sizeof(err)), 0);
	id = rep->id_first;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	m.op = TESSERA__VERSION_OP__VERSION_COMMIT;
	m.t = (uint64_t)id << 32 | 1;
	m.slots = slots;
	m.n_slots = 1;
	assert_int_equal(vcall(&a, &m, &rep, err, sizeof(err)), 0);
	assert_int_equal(rep->n_vmap, 1);
	assert_int_equal(rep->vmap[0]->n_handles, 1);
	assert_int_equal(rep->vmap[0]->handles[0], vcap->handles[1]);
	assert_true(rep->version >= 1);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	m.t++;
	version_refused(&b, &m, -EPERM, "forged commit");
	tnet_close(a.net);
	tnet_close(b.net);
	/* kill -9 of every daemon: the commit stays, the ID# is forgotten */
	cluster_stop(c, SIGKILL);
	cluster_start(c);
	raw_open_mds(c, &a);
	version_refused(&a, &m, -ESTALE, "restarted");
	m.op = TESSERA__VERSION_OP__VERSION_STATE;
	assert_int_equal(vcall(&a, &m, &rep, err, sizeof(err)), 0);
	assert_true(rep->newest >= 1);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	tnet_close(a.net);
	protobuf_c_message_free_unpacked(&vcap->base, NULL);
	protobuf_c_message_free_unpacked(&pcap->base, NULL);
	tessera_close(p);
	tessera_close(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_raw_frames, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_borrowed_and_readonly, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_expiry_and_renewal, setup_short,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_other_user, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_unprivileged_process, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_key_file_mode, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_other_key, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_version_server, setup, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
