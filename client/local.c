/*
 * local.c - local reads (docs/design.md, "Local reads"): a file's objects on
 * storage daemons of this host are read from their files, with the
 * page cache's one copy instead of a message's three.
 *
 * The first read of at least TC_LOCAL_MIN bytes that touches a slot asks
 * its daemon for the object (LOCAL_OPEN, capability and session as for a
 * READ), then fetches the descriptors from the daemon's abstract Unix
 * socket with the token the reply carried. The file keeps them until it
 * is closed. A daemon that says local reads are off, or whose socket is
 * not reachable from here (another host, another network namespace), is
 * never asked again by this connection.
 *
 * Each run is read straight into the caller's buffer and its blocks are
 * checked against the object's checksum file as the daemon checks them
 * (the format and its rules are proto/tp_objfmt.h's), with the block size
 * the daemon's store was made with (its LOCAL_OPEN reply says; 0 from an
 * older daemon: 4096). A block that does not match, a file that
 * changed size under the read, or any error, and the chunk goes through
 * the daemon instead, which checks again under its per-object order and
 * reports real damage. Reads under byte-range locks (lock epochs) always
 * go through the daemon, which fences them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"
#include "tp_objfmt.h"

#define TC_LOCAL_MIN (64u << 10)

/* Per open file: each slot's descriptors (+1, so that 0 is none), its
 * store's checksum block, and whether asking failed for good on this
 * file. */
struct tc_local_file {
	int fd1[TESSERA_MAX_STRIPE];
	int sums1[TESSERA_MAX_STRIPE];
	uint32_t block[TESSERA_MAX_STRIPE];
	uint8_t failed[TESSERA_MAX_STRIPE];
};

void tc_local_init(tessera_fs *fs)
{
	const char *env = getenv("TESSERA_LOCAL_READS");
	struct rlimit rl;

	fs->local_on = fs->cfg.local_reads;
	if (env && *env)
		fs->local_on = strcmp(env, "0") != 0;
	/* Two descriptors a slot: keep them to a quarter of what the
	 * process may open, and at most TC_LOCAL_MAX_FDS. */
	fs->local_max_fds = TC_LOCAL_MAX_FDS;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < fs->local_max_fds)
		fs->local_max_fds = (unsigned)(rl.rlim_cur / 4);
}

void tc_local_close(tessera_file *f)
{
	struct tc_local_file *lf = f->local;
	unsigned n = 0;

	if (!lf)
		return;
	for (uint32_t s = 0; s < f->layout.count; s++) {
		if (lf->fd1[s]) {
			close(lf->fd1[s] - 1);
			n++;
		}
		if (lf->sums1[s]) {
			close(lf->sums1[s] - 1);
			n++;
		}
	}
	pthread_mutex_lock(&f->fs->lock);
	f->fs->local_fds -= n;
	pthread_mutex_unlock(&f->fs->lock);
	free(lf);
	f->local = NULL;
}

/* Fetch the descriptors a LOCAL_OPEN reply's token stands for from the
 * daemon's socket. 0 with fds[0..*n); -ENOTCONN: the socket is not
 * reachable from here; other errors: this time only. */
static int fetch(tessera_fs *fs, const char *name, const uint8_t *token, int fds[2], int *n)
{
	uint32_t ms = fs->cfg.timeout_ms < 5000 ? fs->cfg.timeout_ms : 5000;
	uint8_t status;
	int rc = tp_local_fetch(name, token, ms, fds, n, &status);

	if (!rc && (status != TP_LOCAL_OK || *n == 0)) {
		while (*n)
			close(fds[--*n]);
		rc = -EPROTO;
	}
	return rc;
}

/* A LOCAL_OPEN's status, and the store's checksum block into *block (0
 * in the reply: a daemon older than the field, whose block was 4096). A
 * block no store can have is -EPROTO: nothing to check the files with. */
static int reply_status(const struct tc_req *req, uint32_t *block)
{
	const Tessera__LocalOpenReply *rep = (const Tessera__LocalOpenReply *)req->reply;

	*block = rep && rep->csum_block ? rep->csum_block : TP_OBJ_BLOCK;
	if (!req->status && rep && !tp_obj_block_valid(*block))
		return -EPROTO;
	return req->status;
}

/* One LOCAL_OPEN per wanted slot of f; their slots into slot_of. The
 * number made. */
static size_t ask_slots(tessera_file *f, const uint8_t *want, struct tc_req **reqs,
			uint32_t *slot_of)
{
	size_t k = 0;

	for (uint32_t s = 0; s < f->layout.count; s++) {
		Tessera__LocalOpenRequest m = TESSERA__LOCAL_OPEN_REQUEST__INIT;

		if (!want[s])
			continue;
		m.handle = f->layout.handles[s];
		m.cap = (Tessera__Capability *)tc_cap_get(f);
		reqs[k] = tc_req_new(f->fs, (int)f->layout.servers[s], TP_OP_LOCAL_OPEN, &m.base,
				     NULL, 0);
		if (!reqs[k])
			break;
		slot_of[k++] = s;
	}
	return k;
}

/* A refused LOCAL_OPEN (rc) of slot s. Off there: never ask that daemon
 * again. A passing state (a capability to renew, a timeout, a full
 * table): asked again by a later read. Else (a lost object, no right to
 * read) not on this file: its reads through the daemon say why. */
static void note_refusal(tessera_file *f, uint32_t s, int rc)
{
	tessera_fs *fs = f->fs;

	pthread_mutex_lock(&fs->lock);
	if (rc == -EOPNOTSUPP)
		fs->ios_local[f->layout.servers[s]] = -1;
	else if (rc != -EKEYEXPIRED && rc != -ETIMEDOUT && rc != -EBUSY)
		f->local->failed[s] = 1;
	pthread_mutex_unlock(&fs->lock);
}

/* Fetch slot s's descriptors from the daemon's socket and keep them,
 * unless another thread was first or there are too many. */
static void take_fds(tessera_file *f, uint32_t s, const Tessera__LocalOpenReply *rep,
		     uint32_t block)
{
	tessera_fs *fs = f->fs;
	struct tc_local_file *lf = f->local;
	int fds[2] = { -1, -1 }, n = 0;
	int rc = fetch(fs, rep->socket, rep->token.data, fds, &n);

	pthread_mutex_lock(&fs->lock);
	if (rc == -ENOTCONN)
		fs->ios_local[f->layout.servers[s]] = -1;
	if (!rc && !lf->fd1[s] && fs->local_fds + 2 <= fs->local_max_fds) {
		lf->fd1[s] = fds[0] + 1;
		lf->sums1[s] = n > 1 ? fds[1] + 1 : 0;
		lf->block[s] = block;
		fs->local_fds += (unsigned)n;
		n = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	while (n) /* another thread was first, or too many */
		close(fds[--n]);
}

/* Ask for the slots of f whose chunks this read touches and that have no
 * descriptors yet (want[s]): one LOCAL_OPEN per slot, all at once. */
static void open_slots(tessera_file *f, const uint8_t *want)
{
	tessera_fs *fs = f->fs;
	struct tc_req *reqs[TESSERA_MAX_STRIPE];
	uint32_t slot_of[TESSERA_MAX_STRIPE];
	size_t k = ask_slots(f, want, reqs, slot_of);

	if (!k)
		return;
	(void)tc_run(fs, reqs, k); /* each answered or failed on its own */
	for (size_t i = 0; i < k; i++) {
		const Tessera__LocalOpenReply *rep = (const Tessera__LocalOpenReply *)reqs[i]->reply;
		uint32_t block;
		int rc = reply_status(reqs[i], &block);

		if (rc || !rep)
			note_refusal(f, slot_of[i], rc);
		else if (!rep->absent && rep->token.len == TP_LOCAL_TOKEN && rep->socket)
			take_fds(f, slot_of[i], rep, block);
		/* absent: a hole for now; asked again by a later read */
		tc_req_free(fs, reqs[i]);
	}
}

void tc_local_prepare(tessera_file *f, const uint32_t *slots, size_t n, uint64_t len)
{
	tessera_fs *fs = f->fs;
	uint8_t want[TESSERA_MAX_STRIPE] = { 0 };
	int any = 0;

	if (!fs->local_on || len < TC_LOCAL_MIN)
		return;
	pthread_mutex_lock(&fs->lock);
	if (!f->local)
		f->local = calloc(1, sizeof(*f->local));
	for (size_t i = 0; f->local && i < n; i++) {
		uint32_t s = slots[i];

		if (!want[s] && !f->local->fd1[s] && !f->local->failed[s] &&
		    fs->ios_local[f->layout.servers[s]] >= 0 && !tc_lock_epoch(f, s) &&
		    fs->local_fds + 2 <= fs->local_max_fds)
			want[s] = any = 1;
	}
	pthread_mutex_unlock(&fs->lock);
	if (any)
		open_slots(f, want);
}

/* The stored checksums of blocks [first, first + n) into out (0 where
 * none is, or with no checksum file). */
static int sums_get(int sums, uint64_t first, size_t n, uint32_t *out)
{
	uint8_t *raw = (uint8_t *)out; /* decoded in place */
	size_t want = n * TP_OBJ_SUM_SIZE, got = 0;

	while (sums >= 0 && got < want) {
		ssize_t k = pread(sums, raw + got, want - got,
				  (off_t)(tp_obj_sums_offset(first) + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	memset(raw + got, 0, want - got);
	tp_obj_sums_decode(out, raw, n);
	return 0;
}

/* n blocks at buf, of which `have` bytes are the object's (zeros after
 * them count), against stored[0..n). 0, or -EILSEQ on a mismatch (the
 * daemon decides what it means). */
static int check_blocks(const uint32_t *stored, const uint8_t *buf, size_t n, size_t have,
			size_t block)
{
	return tp_obj_blocks_check(stored, buf, n, have, block, NULL) < n ? -EILSEQ : 0;
}

/* buf[0..len) from fd at off; -ESTALE when the file ends before len (it
 * shrank under us). */
static int read_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t k = pread(fd, buf, len, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ESTALE;
		buf += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* What one chunk's local read works with. */
struct lread {
	int fd, sums;
	uint64_t block;            /* the store's checksum block */
	uint64_t size;             /* the object's, at the start */
	uint8_t *scratch;
	size_t scratch_len;
	uint32_t *stored;          /* checksums, stored_cap of them */
	size_t stored_cap;
};

static uint32_t *stored_room(struct lread *r, size_t n)
{
	if (n > r->stored_cap) {
		uint32_t *p = realloc(r->stored, n * sizeof(*p));

		if (!p)
			return NULL;
		r->stored = p;
		r->stored_cap = n;
	}
	return r->stored;
}

/* Object bytes [off, off + len) into dst, through whole blocks read into
 * the scratch buffer and checked there (a run that starts or ends inside
 * a block); zeros past the object's end. */
static int read_run(struct lread *r, uint64_t off, uint64_t len, uint8_t *dst)
{
	uint64_t B = r->block, have = off >= r->size ? 0 : r->size - off < len ? r->size - off : len;
	uint64_t b0 = off / B * B, b1 = (off + have + B - 1) / B * B;
	size_t span = (size_t)(b1 - b0), got = (size_t)((b1 < r->size ? b1 : r->size) - b0);
	uint32_t *stored;
	int rc;

	if (have) {
		if (span > r->scratch_len) {
			uint8_t *p = realloc(r->scratch, span);

			if (!p)
				return -ENOMEM;
			r->scratch = p;
			r->scratch_len = span;
		}
		if (!(stored = stored_room(r, span / B)))
			return -ENOMEM;
		if ((rc = read_full(r->fd, r->scratch, got, b0)) ||
		    (rc = sums_get(r->sums, b0 / B, span / B, stored)) ||
		    (rc = check_blocks(stored, r->scratch, span / B, got, B)))
			return rc;
		memcpy(dst, r->scratch + (off - b0), have);
	}
	memset(dst + have, 0, len - have);
	return 0;
}

/* Whether the runs iov[0..n) from off fit the common case of read_runs:
 * the chunk starts on a block, every run but the last is whole blocks,
 * and the object's bytes (have) end on a block or at its end. */
static int runs_on_blocks(const struct lread *r, uint64_t off, const struct iovec *iov, int n,
			  uint64_t have)
{
	uint64_t B = r->block;

	if (off % B || ((off + have) % B && off + have != r->size))
		return 0;
	for (int i = 0; i < n - 1; i++)
		if (iov[i].iov_len % B)
			return 0;
	return 1;
}

/* Each of the runs iov[0..m) checked where it landed, against stored
 * (from the first run's block on). */
static int check_runs(const uint32_t *stored, const struct iovec *iov, int m, uint64_t B)
{
	uint64_t done = 0;
	int rc;

	for (int i = 0; i < m; i++) {
		if ((rc = check_blocks(stored + done / B, iov[i].iov_base,
				       (iov[i].iov_len + B - 1) / B, iov[i].iov_len, B)))
			return rc;
		done += iov[i].iov_len;
	}
	return 0;
}

/* The common case (runs_on_blocks): one preadv straight into the
 * caller's runs iov[0..n), one read of the checksums, each run checked
 * where it landed. 1: not this case. */
static int read_runs(struct lread *r, uint64_t off, struct iovec *iov, int n, uint64_t have)
{
	uint64_t B = r->block, done = 0, blocks = (have + B - 1) / B;
	uint32_t *stored;
	ssize_t k;
	int m = 0, rc;

	if (!runs_on_blocks(r, off, iov, n, have))
		return 1;
	while (m < n && done < have) { /* the runs that hold object bytes */
		if (iov[m].iov_len > have - done)
			iov[m].iov_len = (size_t)(have - done);
		done += iov[m++].iov_len;
	}
	if (!m)
		return 0;
	if (!(stored = stored_room(r, (size_t)blocks)))
		return -ENOMEM;
	do
		k = preadv(r->fd, iov, m, (off_t)off);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	if ((uint64_t)k != have)
		return -ESTALE; /* the object shrank, or a short read: the daemon */
	if ((rc = sums_get(r->sums, off / B, (size_t)blocks, stored)))
		return rc;
	return check_runs(stored, iov, m, B);
}

#define TC_LOCAL_IOV 64

/* Slot's descriptors and block into r; -ENOENT when it has none. */
static int local_fds(tessera_file *f, uint32_t slot, struct lread *r)
{
	tessera_fs *fs = f->fs;
	struct tc_local_file *lf;

	pthread_mutex_lock(&fs->lock);
	lf = f->local;
	if (lf && lf->fd1[slot]) {
		r->fd = lf->fd1[slot] - 1;
		r->sums = lf->sums1[slot] - 1;
		r->block = lf->block[slot];
	}
	pthread_mutex_unlock(&fs->lock);
	return r->fd < 0 ? -ENOENT : 0;
}

/* The caller's runs of the chunk's len bytes into iov (at most
 * TC_LOCAL_IOV), each run's offset in the chunk into at; the bytes they
 * cover. */
static uint64_t gather_runs(tc_runs_fn runs, void *arg, uint64_t len, struct iovec *iov,
			    uint64_t *at, int *n)
{
	uint64_t done = 0;

	*n = 0;
	while (done < len && *n < TC_LOCAL_IOV) {
		uint64_t k = len - done;
		uint8_t *user;

		runs(arg, done, &k, &user);
		iov[*n].iov_base = user;
		iov[*n].iov_len = (size_t)k;
		at[(*n)++] = done;
		done += k;
	}
	return done;
}

/* Zeros in each run past the object's end (got bytes of the chunk's len
 * are the object's); read_runs left the runs' own lengths cut there. */
static void zero_tails(const struct iovec *iov, const uint64_t *at, int n, uint64_t len,
		       uint64_t got)
{
	for (int i = 0; i < n; i++) {
		uint64_t run = (i + 1 < n ? at[i + 1] : len) - at[i];
		uint64_t full = at[i] >= got ? 0 : got - at[i] < run ? got - at[i] : run;

		memset((uint8_t *)iov[i].iov_base + full, 0, (size_t)(run - full));
	}
}

/* Run by run, through whole blocks: the general case. */
static int read_run_by_run(struct lread *r, uint64_t obj_off, uint64_t len, tc_runs_fn runs,
			   void *arg)
{
	int rc = 0;

	for (uint64_t done = 0; done < len && !rc;) {
		uint64_t k = len - done;
		uint8_t *user;

		runs(arg, done, &k, &user);
		rc = read_run(r, obj_off + done, k, user);
		done += k;
	}
	return rc;
}

ssize_t tc_local_read(tessera_file *f, uint32_t slot, uint64_t obj_off, uint64_t len,
		      tc_runs_fn runs, void *arg)
{
	tessera_fs *fs = f->fs;
	struct lread r = { .fd = -1, .sums = -1 };
	struct iovec iov[TC_LOCAL_IOV];
	uint64_t got = 0, at[TC_LOCAL_IOV];
	struct stat sb;
	int n, rc;

	if (!fs->local_on || tc_lock_epoch(f, slot))
		return -ENOENT;
	if ((rc = local_fds(f, slot, &r)))
		return rc;
	if (fstat(r.fd, &sb))
		return -errno;
	r.size = (uint64_t)sb.st_size;
	/* what the object holds of the chunk; zeros after it */
	if (r.size > obj_off)
		got = r.size - obj_off < len ? r.size - obj_off : len;
	if (gather_runs(runs, arg, len, iov, at, &n) < len)
		rc = read_run_by_run(&r, obj_off, len, runs, arg); /* too many runs */
	else if ((rc = read_runs(&r, obj_off, iov, n, got)) == 0)
		zero_tails(iov, at, n, len, got);
	else if (rc == 1)
		rc = read_run_by_run(&r, obj_off, len, runs, arg);
	free(r.scratch);
	free(r.stored);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	fs->copies.read_local += got;
	pthread_mutex_unlock(&fs->lock);
	return (ssize_t)got;
}
