/*
 * fuzz_ios.c - libFuzzer target for the storage daemon: its dispatch table
 * and every handler (ios_main.c, ios_io.c, ios_lock.c) over a real object
 * store in a temporary directory, driven in-process through the daemon
 * core (srv_create_local) by records of frames (fuzz_daemon.h).
 *
 * One source, three targets, by the opcodes a record may name:
 *   fuzz_ios        every storage daemon opcode;
 *   fuzz_ios_list   (-DFUZZ_IOS_LIST) list reads and writes: the pieces'
 *                   validation, with contiguous I/O and sizes around it;
 *   fuzz_ios_lock   (-DFUZZ_IOS_LOCK) the lock service: range, list and
 *                   datatype descriptions, releases, leases, ticks, with
 *                   fenced I/O.
 * Each input starts a fresh daemon and an empty store (in one directory for
 * the whole run: the files an input made are removed after it, found
 * through the store's disk ops table); whatever is parked at the end is
 * ended by srv_destroy, and the sanitizers' leak check sees the rest.
 *
 * The daemon's own source is compiled in (its main renamed), so the
 * dispatch table and handlers are exactly the daemon's. Built with
 * -DFUZZ_SEED_MAIN it writes a seed corpus of requests into a directory.
 */
#define main tessera_ios_main
#include "ios_main.c"
#undef main

#include "fuzz_daemon.h"
#include "tdl.h"
#include "tlk.h"

#if defined(FUZZ_IOS_LIST)
static const unsigned list_ops[] = { TP_OP_LIST_WRITE, TP_OP_LIST_READ, TP_OP_WRITE, TP_OP_READ,
				     TP_OP_GETSIZE, TP_OP_TRUNCATE };
#elif defined(FUZZ_IOS_LOCK)
static const unsigned list_ops[] = { TP_OP_LOCK_ACQUIRE, TP_OP_LOCK_RELEASE, TP_OP_LEASE,
				     TP_OP_DTYPE_WRITE, TP_OP_LIST_WRITE, TP_OP_WRITE };
#endif

/* The opcodes a record chooses from: the list above, or every opcode the
 * daemon's dispatch table serves. */
static unsigned ops[TP_OP_LIMIT];
static size_t nops;

static void ops_init(void)
{
#if defined(FUZZ_IOS_LIST) || defined(FUZZ_IOS_LOCK)
	for (size_t i = 0; i < sizeof(list_ops) / sizeof(list_ops[0]); i++)
		ops[nops++] = list_ops[i];
#else
	for (unsigned op = 0; op < TP_OP_LIMIT; op++)
		if (ios_handlers[op])
			ops[nops++] = op;
#endif
}

/* The lock epoch of every run (seeds name it). The lock target's
 * sessions expire at every tick; the others' outlive a run. */
#define FZ_EPOCH 5
#ifdef FUZZ_IOS_LOCK
#define FZ_LEASE_MS 0
#else
#define FZ_LEASE_MS 10000
#endif

#ifndef FUZZ_SEED_MAIN

#include <fcntl.h>
#include <unistd.h>

/* ------------------------------------------------------------ the disk
 *
 * The system's disk, through a wrapper that remembers every file it
 * created, so that an input's objects can be removed after it and the
 * next input starts from an empty store in the same directory (making the
 * 256 object directories anew for each input would cost more than the
 * input). */
struct fz_disk {
	struct ios_disk base;
	struct ios_disk *inner;
	char **made;               /* paths opened with O_CREAT */
	size_t n, cap;
};

#define FZ_INNER(d) (((struct fz_disk *)(d))->inner)

static int fzd_open(struct ios_disk *d, uint64_t handle, const char *path, int flags,
		    mode_t mode)
{
	struct fz_disk *fd = (struct fz_disk *)d;
	int rc = fd->inner->ops->open(fd->inner, handle, path, flags, mode);

	if (rc >= 0 && (flags & O_CREAT)) {
		if (fd->n == fd->cap) {
			size_t cap = fd->cap ? 2 * fd->cap : 64;
			char **m = realloc(fd->made, cap * sizeof(*m));

			if (!m)
				abort();
			fd->made = m;
			fd->cap = cap;
		}
		if (!(fd->made[fd->n++] = strdup(path)))
			abort();
	}
	return rc;
}

static int fzd_unlink(struct ios_disk *d, uint64_t handle, const char *path)
{
	return FZ_INNER(d)->ops->unlink(FZ_INNER(d), handle, path);
}

static int fzd_close(struct ios_disk *d, int fd)
{
	return FZ_INNER(d)->ops->close(FZ_INNER(d), fd);
}

static ssize_t fzd_preadv(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	return FZ_INNER(d)->ops->preadv(FZ_INNER(d), fd, iov, n, off);
}

static ssize_t fzd_pwritev(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	return FZ_INNER(d)->ops->pwritev(FZ_INNER(d), fd, iov, n, off);
}

static int fzd_fstat(struct ios_disk *d, int fd, struct stat *sb)
{
	return FZ_INNER(d)->ops->fstat(FZ_INNER(d), fd, sb);
}

static int fzd_ftruncate(struct ios_disk *d, int fd, off_t size)
{
	return FZ_INNER(d)->ops->ftruncate(FZ_INNER(d), fd, size);
}

static int fzd_fdatasync(struct ios_disk *d, int fd)
{
	return FZ_INNER(d)->ops->fdatasync(FZ_INNER(d), fd);
}

static int fzd_mkdir(struct ios_disk *d, const char *path, mode_t mode)
{
	return FZ_INNER(d)->ops->mkdir(FZ_INNER(d), path, mode);
}

static int fzd_syncdir(struct ios_disk *d, const char *path)
{
	return FZ_INNER(d)->ops->syncdir(FZ_INNER(d), path);
}

static int fzd_statvfs(struct ios_disk *d, const char *path, struct statvfs *sv)
{
	return FZ_INNER(d)->ops->statvfs(FZ_INNER(d), path, sv);
}

static void fzd_destroy(struct ios_disk *d)
{
	(void)d; /* lives for the whole run */
}

static const struct ios_disk_ops fz_disk_ops = {
	sizeof(struct ios_disk_ops), fzd_open, fzd_unlink, fzd_close, fzd_preadv, fzd_pwritev,
	fzd_fstat, fzd_ftruncate, fzd_fdatasync, fzd_mkdir, fzd_syncdir, fzd_statvfs,
	fzd_destroy,
};

/* Remove the files the last input made. */
static void fz_disk_clean(struct fz_disk *d)
{
	for (size_t i = 0; i < d->n; i++) {
		unlink(d->made[i]);
		free(d->made[i]);
	}
	d->n = 0;
}

static struct fz_disk disk;
static char dir[4096];

static void fz_end(void)
{
	fz_disk_clean(&disk);
	disk.inner->ops->destroy(disk.inner);
	free(disk.made);
	fz_rmtree(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tp_config cfg;
	struct fz_in in = { data, size };
	struct fz_replies seen = { 0, 0, getenv("FUZZ_VERBOSE") != NULL };
	struct ios ios = { 0 };
	char *msg = NULL;
	int rc;

	if (!cfg.n_ios) {
		fz_config(&cfg);
		ops_init();
		disk.base.ops = &fz_disk_ops;
		if (fz_tmpdir("fuzz-ios", dir, sizeof(dir)) || ios_disk_system(&disk.inner))
			abort();
		atexit(fz_end);
	}
	ios.disk = &disk.base;
	ios.cfg = &cfg;
	ios.index = 1;
	if ((rc = ios_store_open(dir, 16, ios.disk, &ios.store, &msg)) ||
	    (rc = ios_locks_create(&ios, FZ_LEASE_MS, &ios.locks, &msg))) {
		fprintf(stderr, "fuzz_ios: %s\n", msg ? msg : strerror(-rc));
		abort();
	}
	ios_locks_set_epoch(ios.locks, FZ_EPOCH);
	struct srv_role role = { "ios", 1, ios_handlers, ios_tick, &ios };
	struct srv_opts so = { &cfg, NULL, NULL, 0, NULL };

	if (srv_create_local(&so, &role, fz_reply_sink, &seen, &ios.srv))
		abort();
	fz_drive(ios.srv, ops, nops, &in);
	srv_destroy(ios.srv);
	ios_locks_destroy(ios.locks);
	ios_descs_clear(&ios);
	ios_store_close(ios.store);
	fz_disk_clean(&disk);
	return 0;
}

#else /* FUZZ_SEED_MAIN */

#define CAP 65536

/* The index of opcode op in ops[] (for seeds); nops if not there. */
static unsigned op_index(unsigned op)
{
	unsigned i = 0;

	while (i < nops && ops[i] != op)
		i++;
	return i;
}

/* One seed file per scenario. */
struct seed {
	uint8_t buf[CAP];
	size_t len;
	int bad;
};

/* A request record, unless this target does not send op. */
static void req(struct seed *s, unsigned op, unsigned peer, const ProtobufCMessage *m,
		size_t dlen)
{
	if (op_index(op) < nops)
		s->bad |= fz_seed_request(s->buf, CAP, &s->len, op_index(op), peer, m, dlen);
}

static void tick(struct seed *s)
{
	s->bad |= fz_seed_tick(s->buf, CAP, &s->len);
}

static int save(const char *dir, const char *name, struct seed *s)
{
	int rc = s->bad || fz_seed_write(dir, name, s->buf, s->len);

	memset(s, 0, sizeof(*s));
	return rc;
}

/* Lock regions [off, off+len) pairs of one object: 4 slots of 64 KiB
 * strips, this daemon's slot 1. */
static void lock_msg(Tessera__LockAcquireRequest *m, uint64_t session, uint32_t mode,
		     uint64_t *offs, uint64_t *lens, size_t n, int blocking)
{
	tessera__lock_acquire_request__init(m);
	m->session = session;
	m->handle = 7;
	m->mode = mode;
	m->blocking = blocking;
	m->wait_ms = 5;
	m->strip_size = 65536;
	m->stripe_count = 4;
	m->slot = 1;
	m->n_offsets = m->n_lengths = n;
	m->offsets = offs;
	m->lengths = lens;
}

int main(int argc, char **argv)
{
	static struct seed s;
	Tessera__WriteRequest w = TESSERA__WRITE_REQUEST__INIT;
	Tessera__ReadRequest r = TESSERA__READ_REQUEST__INIT;
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	Tessera__HandlesRequest h = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__TruncateRequest t = TESSERA__TRUNCATE_REQUEST__INIT;
	Tessera__LockAcquireRequest la;
	Tessera__LockReleaseRequest lr = TESSERA__LOCK_RELEASE_REQUEST__INIT;
	Tessera__LeaseRequest lease = TESSERA__LEASE_REQUEST__INIT;
	Tessera__DtypeIORequest d = TESSERA__DTYPE_IOREQUEST__INIT;
	uint64_t offs[4] = { 0, 100, 4096, 70000 }, lens[4] = { 10, 50, 4096, 30 };
	uint64_t loffs[2] = { 65536, 65536 * 5 + 10 }, llens[2] = { 100, 200 };
	uint64_t handles[2] = { 7, 8 };
	struct tdl_dataloop *b, *v;
	Tessera__Dataloop *dm = NULL;
	const char *dir;
	int rc = 0;

	if (argc != 2)
		return 2;
	dir = argv[1];
	ops_init();

	/* Contiguous and list I/O on one object, sizes, truncate. */
	w.handle = 7;
	w.offset = 10;
	req(&s, TP_OP_WRITE, 0, &w.base, 300);
	l.handle = 7;
	l.n_offsets = l.n_lengths = 4;
	l.offsets = offs;
	l.lengths = lens;
	req(&s, TP_OP_LIST_WRITE, 0, &l.base, 10 + 50 + 4096 + 30);
	req(&s, TP_OP_LIST_READ, 1, &l.base, 0);
	r.handle = 7;
	r.length = 5000;
	req(&s, TP_OP_READ, 0, &r.base, 0);
	h.n_handles = 2;
	h.handles = handles;
	req(&s, TP_OP_GETSIZE, 0, &h.base, 0);
	t.handle = 7;
	t.size = 20;
	req(&s, TP_OP_TRUNCATE, 0, &t.base, 0);
	rc |= save(dir, "io-list", &s);

	/* Bad lists: lengths disagree, a piece beyond the largest object. */
	l.n_lengths = 3;
	req(&s, TP_OP_LIST_WRITE, 0, &l.base, 100);
	l.n_lengths = 4;
	offs[3] = UINT64_MAX - 5;
	req(&s, TP_OP_LIST_READ, 0, &l.base, 0);
	offs[3] = 70000;
	rc |= save(dir, "list-bad", &s);

	/* Locks: two sessions contend, one waits, releases, leases, ticks. */
	lock_msg(&la, 11, TLK_WRITE, loffs, llens, 2, 1);
	req(&s, TP_OP_LOCK_ACQUIRE, 0, &la.base, 0);
	lock_msg(&la, 12, TLK_READ, loffs, llens, 1, 1);
	req(&s, TP_OP_LOCK_ACQUIRE, 1, &la.base, 0);
	lease.session = 12;
	req(&s, TP_OP_LEASE, 1, &lease.base, 0);
	lr.session = 11;
	lr.epoch = FZ_EPOCH;
	lr.lock_id = 1;
	lr.handle = 7;
	req(&s, TP_OP_LOCK_RELEASE, 0, &lr.base, 0);
	tick(&s);
	lr.session = 12;
	lr.lock_id = 2;
	lr.partial = 1;
	lr.from = 65536 + 50;
	req(&s, TP_OP_LOCK_RELEASE, 1, &lr.base, 0);
	rc |= save(dir, "lock-list", &s);

	/* A description in several messages (more = true). */
	lock_msg(&la, 13, TLK_WRITE, loffs, llens, 1, 0);
	la.more = 1;
	req(&s, TP_OP_LOCK_ACQUIRE, 2, &la.base, 0);
	lock_msg(&la, 13, TLK_WRITE, loffs + 1, llens + 1, 1, 0);
	la.lock_id = (1ull << 63) | 1;
	req(&s, TP_OP_LOCK_ACQUIRE, 2, &la.base, 0);
	tick(&s);
	rc |= save(dir, "lock-more", &s);

	/* Datatype I/O and a view lock: a vector of 8-byte blocks. */
	tdl_bytes(8, &b);
	tdl_vector(16, 1, 3, b, &v);
	if (tp_dataloop_to_msg(v, &dm))
		return 1;
	d.handle = 7;
	d.strip_size = 65536;
	d.stripe_count = 4;
	d.slot = 1;
	d.desc_nonce = 99;
	d.desc_id = 1;
	d.file_type = dm;
	d.disp = 65536;
	d.count = 2;
	d.first = 0;
	d.last = 256;
	lock_msg(&la, 14, TLK_WRITE, NULL, NULL, 0, 1);
	la.view = &d;
	req(&s, TP_OP_LOCK_ACQUIRE, 3, &la.base, 0);
	la.view = NULL;
	d.file_type = NULL; /* cached by now */
	req(&s, TP_OP_DTYPE_WRITE, 3, &d.base, 256);
	rc |= save(dir, "lock-view", &s);
#if !defined(FUZZ_IOS_LIST) && !defined(FUZZ_IOS_LOCK)
	{
		Tessera__FetchAddRequest fa = TESSERA__FETCH_ADD_REQUEST__INIT;
		Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;

		d.file_type = dm;
		req(&s, TP_OP_DTYPE_WRITE, 0, &d.base, 256);
		d.file_type = NULL;
		req(&s, TP_OP_DTYPE_READ, 0, &d.base, 0);
		d.desc_id = 2;
		req(&s, TP_OP_DTYPE_READ, 0, &d.base, 0); /* not cached: ESTALE */
		fa.handle = 7;
		fa.key = 3;
		fa.value = 5;
		req(&s, TP_OP_FETCH_ADD, 0, &fa.base, 0);
		req(&s, TP_OP_FETCH_ADD, 0, &fa.base, 0);
		req(&s, TP_OP_IOS_STATS, 0, &ping.base, 0);
		req(&s, TP_OP_IOS_STATFS, 0, &ping.base, 0);
		ping.hold_ms = 1;
		req(&s, TP_OP_PING, 1, &ping.base, 0);
		tick(&s);
		req(&s, TP_OP_SYNC, 0, &h.base, 0);
		req(&s, TP_OP_REMOVE, 0, &h.base, 0);
		rc |= save(dir, "dtype-misc", &s);
	}
#endif
	tp_dataloop_msg_release(dm);
	tdl_free(v);
	tdl_free(b);
	return rc ? 1 : 0;
}

#endif
