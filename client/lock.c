/*
 * lock.c - byte-range locks (the client's half of the dissertation's
 * distributed lock manager, §7.4.1): a lock spans the storage objects its
 * bytes fall on; each storage daemon locks its own bytes and answers with
 * logical offsets (last byte held, next byte wanted), and this file drives
 * the rounds that take the whole set in a deadlock-free order.
 *
 *   optimistic round  nonblocking acquires on every object at once; then
 *                     m = min(next), and every object holding bytes >= m
 *                     releases them (partial release from m);
 *   blocking round    one blocking acquire on the object wanting m, capped
 *                     at the next-smallest `next` of the others.
 *
 * Two-phase: blocking rounds only (after a round that creates the requests
 * and takes nothing). One-try: one optimistic round, then blocking rounds.
 * Alt-try: alternate, starting optimistic. A part is one lock request:
 * a list lock has one per object, or (tessera_lock_list_split, the
 * dissertation's list and POSIX locks) one per message of regions or per
 * region, several on one object; the rounds treat them alike, ordered by
 * the bytes they want. Between rounds no object holds
 * a byte at or above the smallest byte still wanted, which is the
 * client's half of the deadlock-freedom argument in lockmgr/tlk.h.
 *
 * Locks belong to the process's lock owner: the uid its daemon sessions
 * authenticated, and a random 64-bit id (libsodium, drawn at the first
 * lock; the daemons refuse the id to any other uid, and nobody logs it).
 * A thread renews the owner's lease on every storage daemon where it
 * holds locks, so locks outlive quiet periods but not the process; a
 * daemon keeps the lease of an owner with an acquire waiting there.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "client_int.h"

#include "lock_int.h"

/* ------------------------------------------------------------ owner */

/* This process's lock owner id: random, drawn once, never 0 (0 is "no
 * session" on the wire). */
uint64_t tc_lock_owner(tessera_fs *fs)
{
	uint64_t id;

	pthread_mutex_lock(&fs->lock);
	while (!fs->lock_owner)
		randombytes_buf(&fs->lock_owner, sizeof(fs->lock_owner));
	id = fs->lock_owner;
	pthread_mutex_unlock(&fs->lock);
	return id;
}

/* ------------------------------------------------------------ leases */

struct tc_leases {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stop;
	uint32_t lease_ms;         /* the daemons' (from their replies) */
	uint32_t *refs;            /* per storage daemon: parts holding locks */
	/* per storage daemon: the capability leases carry (of a file locked
	 * there last) and who took that lock, to renew it as */
	struct tc_cap **caps;
	struct tessera_cred *creds;
};

/* The lease capability for server i, renewed when due (l->mu held). */
static const Tessera__Capability *lease_cap(tessera_fs *fs, struct tc_leases *l, uint32_t i)
{
	struct tc_cap *c = l->caps[i];

	if (c && tc_cap_due(c)) {
		const Tessera__Capability *m = tc_cap_msg(c);
		Tessera__Cred cred = TESSERA__CRED__INIT;
		struct tc_cap *fresh;

		cred.uid = l->creds[i].uid;
		cred.n_gids = l->creds[i].ngids;
		cred.gids = l->creds[i].gids;
		if (!tc_cap_fetch(fs, m->file, m->rights & (TP_CAP_READ | TP_CAP_WRITE), &cred, m,
				  "lease capability", &fresh)) {
			tc_cap_free(c);
			l->caps[i] = c = fresh;
		}
	}
	return c ? tc_cap_msg(c) : NULL;
}

static void *lease_main(void *arg)
{
	tessera_fs *fs = arg;
	struct tc_leases *l = fs->leases;
	uint32_t n = fs->cfg.n_ios;
	struct tc_req **reqs = calloc(n, sizeof(*reqs));

	pthread_mutex_lock(&l->mu);
	while (!l->stop && reqs) {
		struct timespec ts;
		uint64_t wait_ms = l->lease_ms / 3 ? l->lease_ms / 3 : 1000;
		size_t k = 0;
		Tessera__LeaseRequest m = TESSERA__LEASE_REQUEST__INIT;

		ts = tp_real_deadline(wait_ms);
		pthread_cond_timedwait(&l->cond, &l->mu, &ts);
		if (l->stop)
			break;
		m.session = fs->lock_owner; /* set before the first lock was held */
		for (uint32_t i = 0; i < n; i++)
			if (l->refs[i]) {
				m.cap = (Tessera__Capability *)lease_cap(fs, l, i);
				reqs[k++] = tc_req_new(fs, (int)i, TP_OP_LEASE, &m.base, NULL, 0);
			}
		pthread_mutex_unlock(&l->mu);
		for (size_t i = 0; i < k; i++)
			if (!reqs[i])
				k = 0; /* out of memory: try again next time */
		if (k)
			tc_run(fs, reqs, k); /* a failure shows on the next lock call */
		for (size_t i = 0; i < k; i++)
			tc_req_free(fs, reqs[i]);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	free(reqs);
	return NULL;
}

static void leases_free(struct tc_leases *l)
{
	free(l->refs);
	free(l->caps);
	free(l->creds);
	free(l);
}


/* The renewal's state and its thread, at the first lock held (under
 * fs->lock). NULL: out of memory, or no thread. */
static struct tc_leases *leases_start(tessera_fs *fs, uint32_t lease_ms)
{
	struct tc_leases *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	if (!(l->refs = calloc(fs->cfg.n_ios, sizeof(*l->refs))) ||
	    !(l->caps = calloc(fs->cfg.n_ios, sizeof(*l->caps))) ||
	    !(l->creds = calloc(fs->cfg.n_ios, sizeof(*l->creds)))) {
		leases_free(l);
		return NULL;
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->lease_ms = lease_ms;
	fs->leases = l;
	if (tc_start_quiet_thread(&l->thread, lease_main, fs)) {
		fs->leases = NULL;
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cond);
		leases_free(l);
		return NULL;
	}
	return l;
}

/* Count a part as holding (or no longer holding) locks on its server;
 * the first hold starts the renewing thread. */
int tc_lock_lease_hold(tessera_file *f, int server, int delta, uint32_t lease_ms)
{
	tessera_fs *fs = f->fs;
	struct tc_leases *l;
	struct tc_cap *cap = NULL;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	if (!fs->leases && delta > 0 && !leases_start(fs, lease_ms))
		rc = -ENOMEM;
	l = fs->leases;
	pthread_mutex_unlock(&fs->lock);
	if (!l)
		return rc;
	if (delta > 0) {
		const Tessera__Capability *m = tc_cap_get(f);

		if (m && !(cap = tc_cap_from_msg(m)))
			return -ENOMEM;
	}
	pthread_mutex_lock(&l->mu);
	if (cap) {
		struct tc_thread *t = tc_thread(fs);

		tc_cap_free(l->caps[server]);
		l->caps[server] = cap;
		l->creds[server] = t->has_cred ? t->cred : fs->default_cred;
	}
	l->refs[server] += (uint32_t)delta;
	if (lease_ms && lease_ms < l->lease_ms)
		l->lease_ms = lease_ms;
	pthread_mutex_unlock(&l->mu);
	return 0;
}

void tc_leases_stop(tessera_fs *fs)
{
	struct tc_leases *l = fs->leases;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cond);
	for (uint32_t i = 0; i < fs->cfg.n_ios; i++)
		tc_cap_free(l->caps[i]);
	free(l->caps);
	free(l->creds);
	free(l->refs);
	free(l);
	fs->leases = NULL;
}

/* ------------------------------------------------------------ API */

static void lock_free(struct tessera_lock *lk)
{
	if (!lk)
		return;
	for (size_t i = 0; i < lk->nparts; i++) {
		free(lk->parts[i].offs);
		free(lk->parts[i].lens);
	}
	free(lk->parts);
	if (lk->ftype_msg)
		tp_dataloop_msg_release(lk->ftype_msg);
	free(lk);
}

/* Regions per list-lock message: lock_list_batch, or as many as fit a
 * frame. */
static uint32_t list_batch(const tessera_fs *fs)
{
	uint32_t batch = fs->cfg.lock_list_batch ? fs->cfg.lock_list_batch : tc_lock_max_pairs(fs);

	return batch > tc_lock_max_pairs(fs) ? tc_lock_max_pairs(fs) : batch;
}

static struct tessera_lock *lock_new(tessera_file *f, int mode, int protocol, size_t nparts,
				     const char *what)
{
	struct tessera_lock *lk = calloc(1, sizeof(*lk));

	if (!lk || !(lk->parts = calloc(nparts ? nparts : 1, sizeof(*lk->parts)))) {
		free(lk);
		tc_fail(f->fs, -ENOMEM, "%s %s: out of memory", what, f->path);
		return NULL;
	}
	lk->file = f;
	lk->fs = f->fs;
	lk->mode = mode;
	lk->protocol = protocol;
	lk->nparts = nparts;
	lk->batch = list_batch(f->fs);
	snprintf(lk->label, sizeof(lk->label), "%s %.40s", what, f->path);
	return lk;
}

static int lock_finish(struct tessera_lock *lk, tessera_lock **out)
{
	int rc = tc_lock_run(lk);

	if (rc) {
		tessera_fs *fs = lk->fs;
		char why[1024];

		snprintf(why, sizeof(why), "%s", tessera_errmsg(fs));
		tc_lock_release_all(lk);
		lock_free(lk);
		return tc_fail(fs, rc, "%s", why);
	}
	*out = lk;
	return 0;
}

static int check_mode(tessera_file *f, int mode, const char *what)
{
	if (mode != TESSERA_LOCK_READ && mode != TESSERA_LOCK_WRITE)
		return tc_fail(f->fs, -EINVAL, "%s %s: mode %d is neither read nor write", what,
			       f->path, mode);
	return 0;
}

/* Sort by offset and merge overlapping or touching regions. */
static int cmp_region(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The caller's regions as [offset, length] pairs, each checked. */
static int copy_regions(tessera_file *f, const uint64_t *offsets, const uint64_t *lengths,
			size_t count, uint64_t (*reg)[2])
{
	for (size_t i = 0; i < count; i++) {
		if (!lengths[i] || offsets[i] + lengths[i] < offsets[i] ||
		    offsets[i] + lengths[i] > INT64_MAX)
			return tc_fail(f->fs, -EINVAL, "lock %s: region %zu (offset %" PRIu64
				       ", length %" PRIu64 ") is empty or overflows", f->path, i,
				       offsets[i], lengths[i]);
		reg[i][0] = offsets[i];
		reg[i][1] = lengths[i];
	}
	return 0;
}

/* Sort (unless sorted) and merge; how many regions are left. */
static size_t merge_regions(uint64_t (*reg)[2], size_t count)
{
	size_t n = 0;

	for (size_t i = 1; i < count; i++)
		if (reg[i][0] < reg[i - 1][0]) {
			qsort(reg, count, sizeof(*reg), cmp_region);
			break;
		}
	for (size_t i = 0; i < count; i++) {
		if (n && reg[i][0] <= reg[n - 1][0] + reg[n - 1][1]) {
			uint64_t end = reg[i][0] + reg[i][1];

			if (end > reg[n - 1][0] + reg[n - 1][1])
				reg[n - 1][1] = end - reg[n - 1][0];
			continue;
		}
		reg[n][0] = reg[i][0];
		reg[n++][1] = reg[i][1];
	}
	return n;
}

/* The regions split at strips: fn(arg, slot, off, len) for each piece, in
 * order. */
typedef void (*lk_piece_fn)(void *arg, uint32_t slot, uint64_t off, uint64_t len);

static void for_each_piece(const struct tessera_layout *l, const uint64_t (*reg)[2], size_t n,
			   lk_piece_fn fn, void *arg)
{
	struct tdl_layout tl = { l->strip_size, l->count };

	for (size_t i = 0; i < n; i++) {
		uint64_t off = reg[i][0], len = reg[i][1];

		while (len) {
			uint64_t run = l->count == 1 ? len : tdl_layout_run(&tl, off, len), obj;
			uint32_t slot = 0;

			if (l->count > 1)
				tdl_layout_map(&tl, off, &slot, &obj);
			fn(arg, slot, off, run);
			off += run;
			len -= run;
		}
	}
}

static void count_piece(void *arg, uint32_t slot, uint64_t off, uint64_t len)
{
	size_t *per = arg;

	(void)off, (void)len;
	per[slot]++;
}

struct piece_fill {
	struct tessera_lock *lk;
	size_t *part_of;           /* slot -> the part its next piece goes to */
	size_t chunk;              /* pieces a part holds at most */
};

static void fill_piece(void *arg, uint32_t slot, uint64_t off, uint64_t len)
{
	struct piece_fill *pf = arg;
	struct lk_part *p = &pf->lk->parts[pf->part_of[slot]];

	if (p->n == pf->chunk) /* full: the slot's next part (made in order) */
		p = &pf->lk->parts[++pf->part_of[slot]];
	p->offs[p->n] = off;
	p->lens[p->n++] = len;
}

/* How many parts of at most `chunk` pieces hold n pieces. */
static size_t chunks_of(size_t n, size_t chunk)
{
	return n / chunk + (n % chunk != 0);
}

/* A list lock with parts for each slot that has pieces (per[s] of them,
 * counted), at most `chunk` pieces a part: each part is one lock request
 * on its daemon, and a slot's parts follow one another in offset order.
 * per[s] becomes the slot's first part's index. */
static struct tessera_lock *list_lock_new(tessera_file *f, int mode, int protocol, size_t *per,
					  size_t chunk)
{
	const struct tessera_layout *l = &f->layout;
	struct tessera_lock *lk;
	size_t parts = 0;

	for (uint32_t s = 0; s < l->count; s++)
		parts += chunks_of(per[s], chunk);
	if (!(lk = lock_new(f, mode, protocol, parts, "lock")))
		return NULL;
	parts = 0;
	for (uint32_t s = 0; s < l->count; s++) {
		size_t first = parts;

		for (size_t left = per[s], take; left; left -= take) {
			struct lk_part *p = &lk->parts[parts++];

			take = left < chunk ? left : chunk;
			p->slot = s;
			p->server = (int)l->servers[s];
			p->handle = l->handles[s];
			p->last = LK_NONE;
			p->offs = malloc(take * sizeof(*p->offs));
			p->lens = malloc(take * sizeof(*p->lens));
			if (!p->offs || !p->lens) {
				lock_free(lk);
				tc_fail(f->fs, -ENOMEM, "lock %s: out of memory", f->path);
				return NULL;
			}
		}
		per[s] = first;
	}
	return lk;
}

/* Lock the checked regions reg[0..count) (sorted and merged here), at
 * most `chunk` pieces per lock request. */
static int lock_regions(tessera_file *f, int mode, uint64_t (*reg)[2], size_t count,
			size_t chunk, int protocol, tessera_lock **out)
{
	size_t n, *per = calloc(f->layout.count, sizeof(*per));
	struct tessera_lock *lk;
	struct piece_fill pf;

	if (!per)
		return tc_fail(f->fs, -ENOMEM, "lock %s: out of memory", f->path);
	n = merge_regions(reg, count);
	/* Split at strips into the slots' lists (count pieces, then fill). */
	for_each_piece(&f->layout, (const uint64_t (*)[2])reg, n, count_piece, per);
	if (!(lk = list_lock_new(f, mode, protocol, per, chunk))) {
		free(per);
		return -ENOMEM;
	}
	pf = (struct piece_fill){ lk, per, chunk };
	for_each_piece(&f->layout, (const uint64_t (*)[2])reg, n, fill_piece, &pf);
	free(per);
	for (size_t i = 0; i < lk->nparts; i++)
		lk->parts[i].next = lk->parts[i].offs[0];
	return lock_finish(lk, out);
}

/* The caller's regions checked and copied into *reg (freed by the
 * caller, also on error). */
static int take_regions(tessera_file *f, int mode, const uint64_t *offsets,
			const uint64_t *lengths, size_t count, uint64_t (**reg)[2])
{
	int rc;

	*reg = NULL;
	if ((rc = check_mode(f, mode, "lock")))
		return rc;
	if (!count)
		return tc_fail(f->fs, -EINVAL, "lock %s: no regions", f->path);
	if (!(*reg = malloc(count * sizeof(**reg))))
		return tc_fail(f->fs, -ENOMEM, "lock %s: out of memory", f->path);
	return copy_regions(f, offsets, lengths, count, *reg);
}

int tessera_lock_list_split(tessera_file *f, int mode, const uint64_t *offsets,
			    const uint64_t *lengths, size_t count, enum tessera_lock_split split,
			    int protocol, tessera_lock **out)
{
	uint64_t (*reg)[2];
	size_t chunk;
	int rc;

	switch (split) {
	case TESSERA_LOCK_SPLIT_OBJECT:
		chunk = SIZE_MAX;
		break;
	case TESSERA_LOCK_SPLIT_MESSAGE:
		chunk = list_batch(f->fs);
		break;
	case TESSERA_LOCK_SPLIT_REGION:
		chunk = 1;
		break;
	default:
		return tc_fail(f->fs, -EINVAL, "lock %s: unknown split %d", f->path, (int)split);
	}
	rc = take_regions(f, mode, offsets, lengths, count, &reg);
	if (!rc)
		rc = lock_regions(f, mode, reg, count, chunk, protocol, out);
	free(reg);
	return rc;
}

int tessera_lock_list(tessera_file *f, int mode, const uint64_t *offsets,
		      const uint64_t *lengths, size_t count, int protocol, tessera_lock **out)
{
	return tessera_lock_list_split(f, mode, offsets, lengths, count,
				       TESSERA_LOCK_SPLIT_OBJECT, protocol, out);
}

/* Round the checked regions out to whole blocks. */
static int round_to_blocks(tessera_file *f, uint64_t (*reg)[2], size_t count, uint64_t block)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t start = reg[i][0] - reg[i][0] % block, end = reg[i][0] + reg[i][1];
		uint64_t tail = end % block ? block - end % block : 0;

		if (end + tail < end || end + tail > INT64_MAX)
			return tc_fail(f->fs, -EINVAL, "lock %s: region %zu (offset %" PRIu64
				       ", length %" PRIu64 ") rounded to %" PRIu64 "-byte blocks "
				       "overflows", f->path, i, reg[i][0], reg[i][1], block);
		reg[i][0] = start;
		reg[i][1] = end + tail - start;
	}
	return 0;
}

int tessera_lock_blocks(tessera_file *f, int mode, const uint64_t *offsets,
			const uint64_t *lengths, size_t count, uint64_t block_size, int protocol,
			tessera_lock **out)
{
	uint64_t (*reg)[2];
	int rc;

	if (!block_size)
		return tc_fail(f->fs, -EINVAL, "lock %s: block size 0", f->path);
	rc = take_regions(f, mode, offsets, lengths, count, &reg);
	if (!rc)
		rc = round_to_blocks(f, reg, count, block_size);
	if (!rc)
		rc = lock_regions(f, mode, reg, count, SIZE_MAX, protocol, out);
	free(reg);
	return rc;
}

int tessera_lock_range(tessera_file *f, int mode, uint64_t offset, uint64_t length,
		       int protocol, tessera_lock **out)
{
	return tessera_lock_list(f, mode, &offset, &length, 1, protocol, out);
}

/* A datatype lock's view: the stream window [first, first+length) of
 * file_type's instances from disp, checked and encoded once. */
static int dtype_view(struct tessera_lock *lk, const struct tdl_dataloop *file_type, uint64_t size,
		      int64_t disp, uint64_t first, uint64_t length)
{
	tessera_file *f = lk->file;
	char err[256];
	int rc;

	lk->disp = disp;
	lk->first = first;
	lk->last = first + length;
	lk->count = (first + length + size - 1) / size;
	if ((rc = tdl_check_view(file_type, lk->count, disp, err, sizeof(err))))
		return tc_fail(f->fs, rc, "lock %s: file view: %s", f->path, err);
	if ((rc = tp_dataloop_to_msg(file_type, &lk->ftype_msg)))
		return tc_fail(f->fs, rc, "lock %s: encoding the file type failed", f->path);
	pthread_mutex_lock(&f->fs->lock);
	lk->desc_id = ++f->fs->next_desc_id;
	pthread_mutex_unlock(&f->fs->lock);
	return 0;
}

static int known_protocol(int protocol)
{
	return protocol == TESSERA_LOCK_TWO_PHASE || protocol == TESSERA_LOCK_ONE_TRY ||
	       protocol == TESSERA_LOCK_ALT_TRY;
}

int tessera_lock_dtype(tessera_file *f, int mode, const struct tdl_dataloop *file_type,
		       int64_t disp, uint64_t first, uint64_t length, int protocol,
		       tessera_lock **out)
{
	const struct tessera_layout *l = &f->layout;
	uint64_t size = file_type ? tdl_size(file_type) : 0;
	uint8_t sent[TP_MAX_SERVERS] = { 0 };
	struct tessera_lock *lk;
	int rc;

	if ((rc = check_mode(f, mode, "lock")))
		return rc;
	if (!size || !length || first > (uint64_t)INT64_MAX - length)
		return tc_fail(f->fs, -EINVAL, "lock %s: %s", f->path,
			       !size ? "file type holds no data" :
			       !length ? "nothing to lock" : "stream window overflows");
	if (!(lk = lock_new(f, mode, protocol, l->count, "lock")))
		return -ENOMEM;
	if ((rc = dtype_view(lk, file_type, size, disp, first, length))) {
		lock_free(lk);
		return rc;
	}
	/* Every object gets the view (the dissertation's datatype locks); each
	 * server finds its own bytes, and says so when it has none. */
	for (uint32_t s = 0; s < l->count; s++) {
		struct lk_part *p = &lk->parts[s];

		p->slot = s;
		p->server = (int)l->servers[s];
		p->handle = l->handles[s];
		p->last = LK_NONE;
		p->next = 0; /* unknown until the first round says */
	}
	if (!known_protocol(lk->protocol)) {
		lock_free(lk);
		return tc_fail(f->fs, -EINVAL, "lock %s: unknown protocol %d", f->path, protocol);
	}
	rc = lock_finish(lk, out);
	if (rc)
		return rc;
	/* Every server that answered holds the view now: the I/O under the
	 * lock can name it without sending it. */
	lk = *out;
	for (uint32_t s = 0; s < l->count; s++)
		sent[lk->parts[s].server] = (uint8_t)lk->parts[s].created;
	tc_view_remember(f, lk->ftype_msg, lk->desc_id, sent);
	return 0;
}

int tessera_unlock(tessera_lock *lk)
{
	int rc;

	if (!lk)
		return 0;
	snprintf(lk->label, sizeof(lk->label), "unlock %.40s", lk->file->path);
	rc = tc_lock_release_all(lk);
	lock_free(lk);
	return rc;
}

int tessera_lock_info(const tessera_lock *lk, struct tessera_lock_info *info)
{
	uint8_t seen[TESSERA_MAX_STRIPE] = { 0 };

	*info = lk->info;
	info->objects = 0;
	/* a split lock has several requests (parts) on one object */
	for (size_t i = 0; i < lk->nparts; i++)
		if (lk->parts[i].lock_id && !seen[lk->parts[i].slot]) {
			seen[lk->parts[i].slot] = 1;
			info->objects++;
		}
	return 0;
}

size_t tessera_lock_requests(const tessera_lock *lk)
{
	size_t n = 0;

	for (size_t i = 0; lk && i < lk->nparts; i++)
		n += lk->parts[i].created && lk->parts[i].lock_id;
	return n;
}

/* ------------------------------------------------------------ record locks */

/* The object offset, on slot k, of the first byte of the file at or after
 * logical offset x: whole stripes before x give a strip each, and the
 * stripe x is in gives the part of slot k's strip below x. */
static uint64_t slot_offset_at(const struct tessera_layout *l, uint32_t k, uint64_t x)
{
	uint64_t strip = l->strip_size, stripe = strip * l->count, in = x % stripe;
	uint64_t lo = (uint64_t)k * strip, part;

	if (l->count == 1)
		return x;
	part = in <= lo ? 0 : in - lo >= strip ? strip : in - lo;
	return x / stripe * strip + part;
}

/* A record lock's parts: one object-byte range on each object the file
 * range [start, end) touches. */
static int record_parts(struct tessera_lock *lk, uint64_t start, uint64_t end)
{
	const struct tessera_layout *l = &lk->file->layout;
	size_t n = 0;

	for (uint32_t k = 0; k < l->count; k++) {
		uint64_t a = slot_offset_at(l, k, start), b = slot_offset_at(l, k, end);
		struct lk_part *p = &lk->parts[n];

		if (a == b)
			continue;
		p->slot = k;
		p->server = (int)l->servers[k];
		p->handle = l->handles[k];
		p->last = LK_NONE;
		p->offs = malloc(sizeof(*p->offs));
		p->lens = malloc(sizeof(*p->lens));
		lk->nparts = ++n; /* freed with the lock from here on */
		if (!p->offs || !p->lens)
			return tc_fail(lk->fs, -ENOMEM, "record lock %s: out of memory",
				       lk->file->path);
		p->offs[0] = p->next = a;
		p->lens[0] = b - a;
		p->n = 1;
	}
	return 0;
}

/* One nonblocking round on every object at once: 0 when every part holds
 * all of its range, -EAGAIN when one does not. */
static int record_try(struct tessera_lock *lk, uint64_t start, uint64_t end)
{
	size_t n = lk->nparts, *idx = calloc(n ? n : 1, sizeof(*idx));
	int *states = calloc(n ? n : 1, sizeof(*states)), rc;

	if (!idx || !states) {
		rc = tc_fail(lk->fs, -ENOMEM, "%s: out of memory", lk->label);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	if ((rc = tc_lock_send_try(lk, idx, n, states)))
		goto out;
	lk->info.optimistic_rounds++;
	for (size_t i = 0; i < n && !rc; i++)
		if (states[i] != TESSERA__LOCK_STATE__LOCK_GRANTED)
			rc = tc_fail(lk->fs, -EAGAIN, "record lock %s [%" PRIu64 ", %" PRIu64 "): "
				     "another owner holds a conflicting lock on storage daemon %d",
				     lk->file->path, start, end, lk->parts[i].server);
out:
	free(idx);
	free(states);
	return rc;
}

int tessera_lock_record(tessera_file *f, int mode, uint64_t owner, uint64_t start,
			uint64_t end, tessera_lock **out)
{
	struct tessera_lock *lk;
	int rc;

	if ((rc = check_mode(f, mode, "record lock")))
		return rc;
	if (!owner || start >= end || end > TESSERA_RECORD_APPEND + 1)
		return tc_fail(f->fs, -EINVAL, "record lock %s: %s", f->path,
			       !owner ? "owner 0" : start >= end ? "empty range" :
			       "range ends past the reserved bytes (2^63 + 2)");
	if (!(lk = lock_new(f, mode, TESSERA_LOCK_ONE_TRY, f->layout.count, "record lock")))
		return -ENOMEM;
	lk->group = owner;
	lk->nparts = 0;
	rc = record_parts(lk, start, end);
	if (!rc)
		rc = record_try(lk, start, end);
	if (rc) {
		tc_lock_release_all(lk);
		lock_free(lk);
		return rc;
	}
	*out = lk;
	return 0;
}

/* The file offset of object byte o of slot k (the inverse of
 * slot_offset_at on the slot's bytes). */
static uint64_t slot_logical(const struct tessera_layout *l, uint32_t k, uint64_t o)
{
	uint64_t strip = l->strip_size;

	if (l->count == 1)
		return o;
	return o / strip * strip * l->count + (uint64_t)k * strip + o % strip;
}

/* One object's answer to a test, as a file range; keeps the lowest. */
static void test_take(const struct tessera_layout *l, uint32_t slot,
		      const Tessera__LockTestReply *rep, struct tessera_lock_conflict *out)
{
	uint64_t start, end;

	if (!rep->mode || !rep->length)
		return;
	start = slot_logical(l, slot, rep->offset);
	end = slot_logical(l, slot, rep->offset + rep->length - 1) + 1;
	if (end > TESSERA_RECORD_END && start < TESSERA_RECORD_END)
		end = TESSERA_RECORD_END; /* a lock to the end of the file */
	if (out->mode && start >= out->start)
		return;
	out->mode = (int)rep->mode;
	out->start = start;
	out->end = end;
}

int tessera_lock_record_test(tessera_file *f, int mode, uint64_t owner, uint64_t start,
			     uint64_t end, struct tessera_lock_conflict *out)
{
	const struct tessera_layout *l = &f->layout;
	struct tc_req *reqs[TESSERA_MAX_STRIPE] = { 0 };
	uint32_t slots[TESSERA_MAX_STRIPE];
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_mode(f, mode, "lock test")))
		return rc;
	if (!owner || start >= end || end > TESSERA_RECORD_APPEND + 1)
		return tc_fail(f->fs, -EINVAL, "lock test %s: %s", f->path,
			       !owner ? "owner 0" : start >= end ? "empty range" :
			       "range ends past the reserved bytes (2^63 + 2)");
	for (uint32_t k = 0; k < l->count; k++) {
		Tessera__LockTestRequest m = TESSERA__LOCK_TEST_REQUEST__INIT;
		uint64_t a = slot_offset_at(l, k, start), b = slot_offset_at(l, k, end);

		if (a == b)
			continue;
		m.session = tc_lock_owner(f->fs);
		m.handle = l->handles[k];
		m.mode = (uint32_t)mode;
		m.group = owner;
		m.offset = a;
		m.length = b - a;
		m.cap = (Tessera__Capability *)tc_cap_get(f);
		slots[n] = k;
		if (!(reqs[n++] = tc_req_new(f->fs, (int)l->servers[k], TP_OP_LOCK_TEST, &m.base,
					     NULL, 0))) {
			rc = tc_fail(f->fs, -ENOMEM, "lock test %s: out of memory", f->path);
			goto out;
		}
	}
	tc_run(f->fs, reqs, n);
	for (size_t i = 0; i < n && !rc; i++) {
		if (reqs[i]->status)
			rc = tc_req_fail(f->fs, reqs[i], "lock test");
		else
			test_take(l, slots[i], (const Tessera__LockTestReply *)reqs[i]->reply, out);
	}
out:
	for (size_t i = 0; i < n; i++)
		tc_req_free(f->fs, reqs[i]);
	return rc;
}
