/*
 * ios_pool.c - the storage daemon's disk work, on worker threads.
 *
 * The event loop does all protocol work: it decodes a request, checks its
 * session, capability, lock epoch and every piece, and builds a struct
 * ios_work (the disk calls to make, one part per object). One check is
 * the workers': a bulk write's tag (ios_pool_checks), run by the part
 * before its first byte is written (check_frame), so that Poly1305 over
 * the data runs on several threads and not in the loop. With io_threads
 * = 0 the loop runs the parts itself and answers at once. Otherwise it
 * parks the request (srv_park: the work counts against the daemon's debt
 * budget until it is answered), and queues each part on its object.
 *
 * Order: every object with work has one FIFO of parts; a worker takes an
 * object from the ready list, runs the part at the head of its FIFO, and
 * puts the object back on the ready list if more wait. So an object's
 * parts run one at a time in the order they arrived (what sieving's
 * read-modify-write, fetch-and-add, lock fencing and a write followed by
 * a read rely on), and different objects' parts run in parallel. A
 * request naming several objects (GETSIZE, REMOVE, SYNC) has one part per
 * object, each in its object's order, and is answered when all are done.
 *
 * A worker runs a part on its own lane of the store (ios_store_lane), then
 * puts it on the done list and wakes the loop (srv_wakeup), which answers
 * the request through the same code as the inline path (reply_work_done).
 * Only the loop touches libev, libfabric, the daemon core and the counters.
 *
 * Lifetimes: the loop owns every work (pool->all). A work whose client
 * went away, whose deadline passed or whose daemon stops is detached
 * (work->req = NULL) and freed once its parts are done, unanswered; its
 * write data was taken from the parked request (srv_park_take_data), so a
 * worker never reads freed memory. Detached works are no longer in the
 * core's budget, so the pool bounds what all works hold itself
 * (IOS_POOL_BYTES, IOS_POOL_WORKS). Stop: the workers finish the part they
 * run and leave the rest; ios_pool_destroy frees every work.
 *
 * Uses (one way): the store (ios_store.h) and the daemon core. Handlers
 * (ios_io.c, ios_main.c) call in here; nothing here calls a handler's
 * file, and the store's errors are answered here (ios_reply_store_error).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "ios.h"
#include "ios_vlogs.h"

#define OBJ "object %016" PRIx64
#define IOS_POOL_BUCKETS 256 /* power of 2 */

/* An object with parts queued or running. */
struct ios_obj {
	uint64_t handle;
	struct ios_obj *hnext;          /* hash chain */
	struct ios_obj *rnext;          /* ready list */
	struct ios_part *head, *tail;   /* its FIFO; a worker may run the head:
					 * the object is then off the ready list */
};

struct ios_pool {
	struct ios *ios;
	unsigned nthreads;
	pthread_t *threads;
	struct ios_store **lanes;       /* one per worker */
	unsigned nlanes;
	pthread_mutex_t mu;             /* guards everything below to `stop` */
	pthread_cond_t cv;              /* workers wait here for ready objects */
	struct ios_obj *buckets[IOS_POOL_BUCKETS];
	struct ios_obj *ready_head, *ready_tail;
	struct ios_part *done_head, *done_tail;
	int stop;
	/* The loop's alone: */
	struct ios_work *all;           /* every work not yet freed */
	size_t works, bytes;
};

/* ------------------------------------------------------------ works */

struct ios_work *ios_work_new(enum ios_job op, enum ios_method m, const char *what,
			      size_t parts)
{
	struct ios_work *w = calloc(1, sizeof(*w) + (parts ? parts : 1) * sizeof(w->part[0]));

	if (!w)
		return NULL;
	w->op = op;
	w->m = m;
	w->what = what;
	w->parts = parts;
	for (size_t i = 0; i < parts; i++) {
		w->part[i].work = w;
	}
	return w;
}

void ios_work_free(struct ios_work *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->parts; i++) {
		free(w->part[i].pieces);
		free(w->part[i].buf);
		free(w->part[i].why);
		ios_vjob_free(w->part[i].vjob);
	}
	sodium_memzero(w->check.s.key, sizeof(w->check.s.key));
	free(w->data);
	free(w);
}

/* What a work holds while queued: the data it carries or will read, its
 * pieces. */
static size_t work_cost(const struct ios_work *w)
{
	size_t cost = sizeof(*w) + w->parts * sizeof(w->part[0]) + w->data_len;

	for (size_t i = 0; i < w->parts; i++)
		cost += w->part[i].n * sizeof(struct ios_piece) +
			(w->op == IOS_JOB_READ ? w->part[i].total : 0);
	return cost;
}

/* A write's frame checked as it arrived (daemon.h, srv_seal_check): a
 * secret body back to ciphertext (the loop decrypted it to decode it),
 * the tag, then body and data decrypted in place. 0 or -EBADMSG. */
static int check_frame(struct ios_work *w)
{
	const struct tp_frame *f = &w->check.frame;

	tp_frame_crypt_body(f, &w->check.s);
	w->check_rc = tp_frame_verify(f, NULL, 0, &w->check.s);
	if (!w->check_rc)
		tp_frame_decrypt(f, NULL, 0, &w->check.s);
	return w->check_rc;
}

/* Its version log first: a crash between leaves an object recorded
 * without a log, never a log without its object. */
static int remove_object(struct ios_store *st, const struct ios_work *w, uint64_t handle)
{
	int rc = ios_vlogs_remove(w->vlogs, handle);

	return rc ? rc : ios_store_remove(st, handle);
}

/* A versioned object's part: on its log (ios_vlogs.c). */
static void part_run_version(struct ios_store *st, struct ios_part *p)
{
	struct ios_work *w = p->work;

	/* The frame's tag first, as for a plain write. */
	if (w->checking && w->op == IOS_JOB_WRITE && (p->rc = check_frame(w)))
		return;
	/* GETSIZE: the time and blocks are the base object's. */
	if (w->op == IOS_JOB_SIZE)
		(void)ios_store_size(st, p->handle, &p->size, &p->mtime_ns, &p->blocks);
	ios_vjob_run(st, p, w->src);
}

/* A plain part: the store's calls. */
static void part_run_store(struct ios_store *st, struct ios_part *p)
{
	struct ios_work *w = p->work;
	ssize_t rc = 0;
	int64_t mtime;

	switch (w->op) {
	case IOS_JOB_WRITE:
		/* The frame's tag first: a forged or altered frame writes
		 * nothing (its one part; the loop learns in on_done). */
		if (w->checking && (p->rc = check_frame(w)))
			return;
		/* A contiguous write reports the object's size before it (the
		 * client's clean-up after a striped write failed elsewhere). */
		if (w->m == IOS_CONTIG && ios_store_size(st, p->handle, &p->size, &mtime, NULL) == 0)
			p->has_size = 1;
		rc = ios_store_write_pieces(st, p->handle, p->pieces, p->n, w->src, &p->syscalls);
		break;
	case IOS_JOB_READ:
		rc = ios_store_read_pieces(st, p->handle, p->pieces, p->n, p->buf, &p->size,
				     &p->syscalls);
		break;
	case IOS_JOB_SIZE:
		rc = ios_store_size(st, p->handle, &p->size, &p->mtime_ns, &p->blocks);
		break;
	case IOS_JOB_TRUNCATE:
		rc = ios_store_truncate(st, p->handle, p->size);
		break;
	case IOS_JOB_FALLOCATE:
		rc = ios_store_fallocate(st, p->handle, p->alloc_off, p->alloc_len, p->alloc_size);
		break;
	case IOS_JOB_REMOVE:
		rc = remove_object(st, w, p->handle);
		break;
	case IOS_JOB_VLOG:
		break; /* always a vjob */
	case IOS_JOB_SYNC:
		rc = ios_store_sync(st, p->handle);
		break;
	case IOS_JOB_COUNTER:
		rc = ios_store_counter_as(st, p->handle, p->key, p->counter_op, p->value,
					  &p->counter_who, &p->old);
		break;
	}
	p->rc = rc;
	if (rc < 0 && *ios_store_why(st))
		p->why = strdup(ios_store_why(st)); /* NULL: said without it */
}

/* Run one part on a lane: the disk calls and the checksums, nothing else
 * (any thread). */
static void part_run(struct ios_store *st, struct ios_part *p)
{
	if (p->vjob)
		part_run_version(st, p);
	else
		part_run_store(st, p);
}

void ios_reply_store_error(struct ios *ios, struct srv_req *req, const char *what,
			   uint64_t handle, int rc, const char *why)
{
	(void)ios;
	if (!why)
		why = "";
	srv_error(req->srv, "%s " OBJ ": %s%s%s", what, handle, strerror(-rc), *why ? ": " : "",
		why);
	srv_reply_error(req, rc, "%s " OBJ ": %s%s%s", what, handle, strerror(-rc),
			*why ? ": " : "", why);
}

/* A request on several objects fails with the first that failed: 1 when
 * one did (answered), else 0. */
static int reply_if_failed(struct ios *ios, struct srv_req *req, const struct ios_work *w)
{
	for (size_t i = 0; i < w->parts; i++) {
		const struct ios_part *f = &w->part[i];

		if (f->rc >= 0)
			continue;
		if (w->op == IOS_JOB_COUNTER && f->rc == -EDQUOT)
			srv_reply_error(req, (int)f->rc, "%s counter %016" PRIx64 " of " OBJ " on "
					"storage daemon %u: uid %u holds %u of its counters, the "
					"per-user limit (counters_per_uid)", f->counter_op ==
					IOS_COUNTER_SET ? "set" : "fetch-add", f->key, f->handle,
					ios->index, f->counter_who.uid, f->counter_who.share);
		else if (w->op == IOS_JOB_COUNTER)
			srv_reply_error(req, (int)f->rc, "%s counter %016" PRIx64 " of "
					OBJ ": %s", f->counter_op == IOS_COUNTER_SET ? "set" : "fetch-add", f->key,
					f->handle, f->rc == -EOVERFLOW
					? "adding would overflow it" : strerror((int)-f->rc));
		else
			ios_reply_store_error(ios, req, w->what, f->handle, (int)f->rc, f->why);
		return 1;
	}
	return 0;
}

static void reply_written(struct ios *ios, struct srv_req *req, const struct ios_work *w)
{
	struct tessera_ios_stats *s = &ios->stats;
	const struct ios_part *p = &w->part[0];
	Tessera__WriteReply rep = TESSERA__WRITE_REPLY__INIT;

	s->requests[w->m]++;
	s->pieces[w->m] += p->n;
	s->syscalls[w->m] += p->syscalls;
	s->bytes_written[w->m] += (uint64_t)p->rc;
	rep.written = (uint64_t)p->rc;
	rep.size_before = p->size;
	rep.has_size_before = p->has_size;
	rep.vlog_half = p->vjob && p->vjob->half; /* the client's commit passes it on */
	srv_reply(req, &rep.base, NULL, 0);
}

static void reply_read(struct ios *ios, struct srv_req *req, struct ios_work *w)
{
	struct tessera_ios_stats *s = &ios->stats;
	struct ios_part *p = &w->part[0];
	Tessera__ReadReply rep = TESSERA__READ_REPLY__INIT;
	uint64_t k = (uint64_t)p->rc;
	uint8_t *buf = p->buf, pad[TP_TAGGED_BODY];

	/* A contiguous read stops at the object's end (the client tells
	 * a hole from end of file by the size); pieces come back whole. */
	if (w->m == IOS_CONTIG)
		k = p->size <= p->pieces[0].offset ? 0
		    : p->size - p->pieces[0].offset < p->total ? p->size - p->pieces[0].offset
								: p->total;
	s->requests[w->m]++;
	s->pieces[w->m] += p->n;
	s->syscalls[w->m] += p->syscalls;
	s->bytes_read[w->m] += k;
	rep.object_size = p->size;
	/* A tagged reply's head must fill the client's head buffer
	 * exactly; one that cannot goes untagged (the client copes). */
	if (req->reply_tagged && tp_read_reply_pad(&rep, pad))
		req->reply_tagged = 0;
	p->buf = NULL;
	srv_reply_owned(req, &rep.base, buf, (size_t)k);
}

static void reply_sizes(struct srv_req *req, const struct ios_work *w)
{
	Tessera__SizesReply rep = TESSERA__SIZES_REPLY__INIT;
	uint64_t *sizes = calloc(w->parts + 1, sizeof(*sizes));
	int64_t *mtimes = calloc(w->parts + 1, sizeof(*mtimes));
	uint64_t *blocks = calloc(w->parts + 1, sizeof(*blocks));

	if (!sizes || !mtimes || !blocks) {
		srv_reply_error(req, -ENOMEM, "getsize: no memory");
	} else {
		for (size_t i = 0; i < w->parts; i++) {
			sizes[i] = w->part[i].size;
			mtimes[i] = w->part[i].mtime_ns;
			blocks[i] = w->part[i].blocks;
		}
		rep.n_sizes = rep.n_mtimes_ns = rep.n_blocks = w->parts;
		rep.sizes = sizes;
		rep.mtimes_ns = mtimes;
		rep.blocks = blocks;
		srv_reply(req, &rep.base, NULL, 0);
	}
	free(sizes);
	free(mtimes);
	free(blocks);
}

static void reply_vlog(struct srv_req *req, const struct ios_work *w)
{
	Tessera__VlogReply rep = TESSERA__VLOG_REPLY__INIT;
	const struct ios_vjob *j = w->part[0].vjob;

	rep.merged = j->stats.merged;
	rep.uncommitted = j->stats.uncommitted;
	rep.committed = j->stats.committed;
	rep.log_bytes = j->stats.log_bytes;
	rep.index_pieces = j->stats.index_pieces;
	rep.discarded = j->discarded;
	srv_reply(req, &rep.base, NULL, 0);
}

/* Answer a work's request from its parts' results (the loop). */
static void reply_work_done(struct ios *ios, struct srv_req *req, struct ios_work *w)
{
	Tessera__FetchAddReply counter = TESSERA__FETCH_ADD_REPLY__INIT;
	Tessera__EmptyReply empty = TESSERA__EMPTY_REPLY__INIT;

	if (reply_if_failed(ios, req, w))
		return;
	switch (w->op) {
	case IOS_JOB_WRITE:
		reply_written(ios, req, w);
		return;
	case IOS_JOB_READ:
		reply_read(ios, req, w);
		return;
	case IOS_JOB_SIZE:
		reply_sizes(req, w);
		return;
	case IOS_JOB_COUNTER:
		counter.old = w->part[0].old;
		srv_reply(req, &counter.base, NULL, 0);
		return;
	case IOS_JOB_VLOG:
		reply_vlog(req, w);
		return;
	case IOS_JOB_SYNC:
		ios->stats.syncs += w->parts;
		/* fall through */
	case IOS_JOB_TRUNCATE:
	case IOS_JOB_FALLOCATE:
	case IOS_JOB_REMOVE:
		srv_reply(req, &empty.base, NULL, 0);
		return;
	}
}

/* ------------------------------------------------------------ queues */

static struct ios_obj **obj_slot(struct ios_pool *pool, uint64_t handle)
{
	struct ios_obj **o = &pool->buckets[(handle ^ handle >> 17) & (IOS_POOL_BUCKETS - 1)];

	while (*o && (*o)->handle != handle)
		o = &(*o)->hnext;
	return o;
}

static void ready_push(struct ios_pool *pool, struct ios_obj *o)
{
	o->rnext = NULL;
	if (pool->ready_tail)
		pool->ready_tail->rnext = o;
	else
		pool->ready_head = o;
	pool->ready_tail = o;
}

/* Queue a part behind its object's earlier ones (under mu). *spare lists
 * (by hnext) enough new object records for the parts being queued. */
static void part_queue(struct ios_pool *pool, struct ios_part *p, struct ios_obj **spare)
{
	struct ios_obj **slot = obj_slot(pool, p->handle), *o = *slot;

	p->next = NULL;
	if (!o) {
		o = *spare;
		*spare = o->hnext;
		memset(o, 0, sizeof(*o));
		o->handle = p->handle;
		*slot = o;
		o->head = o->tail = p;
		ready_push(pool, o);
		return;
	}
	o->tail->next = p; /* running, or on the ready list already */
	o->tail = p;
}

struct worker_arg {
	struct ios_pool *pool;
	struct ios_store *lane;
};

static void *work_loop(void *arg)
{
	struct worker_arg *wa = arg;
	struct ios_pool *pool = wa->pool;
	struct ios_store *lane = wa->lane;

	free(wa);
	pthread_mutex_lock(&pool->mu);
	for (;;) {
		struct ios_obj *o;
		struct ios_part *p;
		int wake;

		while (!pool->stop && !pool->ready_head)
			pthread_cond_wait(&pool->cv, &pool->mu);
		if (pool->stop)
			break;
		o = pool->ready_head;
		pool->ready_head = o->rnext;
		if (!pool->ready_head)
			pool->ready_tail = NULL;
		p = o->head;
		pthread_mutex_unlock(&pool->mu);
		part_run(lane, p);
		pthread_mutex_lock(&pool->mu);
		o->head = p->next;
		if (o->head) {
			ready_push(pool, o);
			pthread_cond_signal(&pool->cv);
		} else {
			*obj_slot(pool, o->handle) = o->hnext;
			free(o);
		}
		p->next = NULL;
		wake = !pool->done_head;
		if (pool->done_tail)
			pool->done_tail->next = p;
		else
			pool->done_head = p;
		pool->done_tail = p;
		if (wake) { /* the loop takes the whole list when it wakes */
			pthread_mutex_unlock(&pool->mu);
			srv_wakeup(pool->ios->srv);
			pthread_mutex_lock(&pool->mu);
		}
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

static void work_unlink(struct ios_pool *pool, struct ios_work *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		pool->all = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pool->works--;
	pool->bytes -= w->cost;
}

/* The loop, woken: answer the works whose parts are all done. */
static void on_done(void *arg)
{
	struct ios_pool *pool = arg;
	struct ios_part *p;

	pthread_mutex_lock(&pool->mu);
	p = pool->done_head;
	pool->done_head = pool->done_tail = NULL;
	pthread_mutex_unlock(&pool->mu);
	while (p) {
		struct ios_part *next = p->next;
		struct ios_work *w = p->work;

		if (--w->left == 0) {
			if (w->checking)
				srv_checked(pool->ios->srv, w->req, &w->check, w->check_rc);
			if (w->req && !w->check_rc)
				reply_work_done(pool->ios, w->req, w);
			work_unlink(pool, w);
			ios_work_free(w);
		}
		p = next;
	}
}

/* The client is gone, the deadline passed or the daemon stops: the work
 * goes on, unanswered (the core answers a deadline). */
static void work_detach(void *arg, struct srv_req *req, int reason)
{
	struct ios_work *w = arg;

	(void)req, (void)reason;
	w->req = NULL;
}

/* 1 if none of the work's objects has parts queued or running. */
static int objects_idle(struct ios_pool *pool, const struct ios_work *w)
{
	int idle = 1;

	pthread_mutex_lock(&pool->mu);
	for (size_t i = 0; idle && i < w->parts; i++)
		idle = !*obj_slot(pool, w->part[i].handle);
	pthread_mutex_unlock(&pool->mu);
	return idle;
}

/* A read's buffer comes from the loop's thread: it is freed there (after
 * its reply is sent), and glibc gives memory freed into another thread's
 * arena back to the system only in part, so a flood of reads would leave
 * the daemon large. 0, or -ENOMEM answered and the work freed. */
static int refuse_or_read_buffers(struct srv_req *req, struct ios_work *w)
{
	for (size_t i = 0; w->op == IOS_JOB_READ && i < w->parts; i++) {
		struct ios_part *p = &w->part[i];

		if (!(p->buf = malloc(p->total ? p->total : 1))) {
			srv_reply_error(req, -ENOMEM, "read " OBJ ": no memory for %" PRIu64
					" bytes", p->handle, p->total);
			ios_work_free(w);
			return -ENOMEM;
		}
	}
	return 0;
}

/* The inline path: the loop runs the parts on the store itself; a request
 * on several objects stops at the first that fails. */
static void reply_inline(struct ios *ios, struct srv_req *req, struct ios_work *w)
{
	if (srv_req_check(req)) { /* refused (a tag not checked yet): no answer */
		ios_work_free(w);
		return;
	}
	if (refuse_or_read_buffers(req, w))
		return;
	if (!w->src)
		w->src = req->frame.data;
	for (size_t i = 0; i < w->parts; i++) {
		part_run(ios->store, &w->part[i]);
		if (w->part[i].rc < 0)
			break;
	}
	reply_work_done(ios, req, w);
	ios_work_free(w);
}

static void spares_free(struct ios_obj *spare)
{
	while (spare) {
		struct ios_obj *o = spare;

		spare = o->hnext;
		free(o);
	}
}

/* n object records, linked by hnext, so queueing under the lock cannot
 * fail; NULL when out of memory (n > 0). */
static struct ios_obj *spares_alloc(size_t n)
{
	struct ios_obj *spare = NULL;

	for (size_t i = 0; i < n; i++) {
		struct ios_obj *o = malloc(sizeof(*o));

		if (!o) {
			spares_free(spare);
			return NULL;
		}
		o->hnext = spare;
		spare = o;
	}
	return spare;
}

/* Work w, its request parked, goes on its objects' queues. */
static void work_queue(struct ios_pool *pool, struct ios_work *w, struct srv_req *parked,
		       size_t cost, struct ios_obj *spare)
{
	w->req = parked;
	w->data = srv_park_take_data(parked, &w->src);
	w->checking = srv_park_take_check(parked, &w->check);
	w->cost = cost;
	w->left = w->parts;
	w->next = pool->all;
	if (pool->all)
		pool->all->prev = w;
	pool->all = w;
	pool->works++;
	pool->bytes += cost;
	pthread_mutex_lock(&pool->mu);
	for (size_t i = 0; i < w->parts; i++)
		part_queue(pool, &w->part[i], &spare);
	pthread_cond_broadcast(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	spares_free(spare);
}

void ios_reply_work(struct ios *ios, struct srv_req *req, struct ios_work *w)
{
	struct ios_pool *pool = ios->pool;
	struct ios_obj *spare;
	struct srv_req *parked;
	size_t cost;
	int rc;

	w->data_len = req->frame.hdr.data_len;
	cost = work_cost(w);
	if (!pool || !w->parts) { /* (no handles: nothing to wait for) */
		reply_inline(ios, req, w);
		return;
	}
	if (pool->works >= IOS_POOL_WORKS || pool->bytes + cost > IOS_POOL_BYTES) {
		srv_reply_error(req, -EBUSY, "%s " OBJ ": the disk queue is full (%zu requests, "
				"%zu bytes)", w->what, w->part[0].handle, pool->works, pool->bytes);
		ios_work_free(w);
		return;
	}
	if (!(spare = spares_alloc(w->parts))) {
		srv_reply_error(req, -ENOMEM, "%s " OBJ ": no memory to queue the request",
				w->what, w->part[0].handle);
		ios_work_free(w);
		return;
	}
	/* Parked, the request is charged with what its work holds (a read's
	 * buffer too), so queued work is in the daemon's budget. */
	rc = srv_park_sized(req, UINT32_MAX, cost - w->data_len, work_detach, w, &parked);
	if (rc && req->replied) { /* its frame was checked, and refused */
		spares_free(spare);
		ios_work_free(w);
		return;
	}
	if (rc) {
		/* No room to hold the request: an object nothing waits for
		 * can be served now, in order; else the client sends again. */
		spares_free(spare);
		if (objects_idle(pool, w)) {
			reply_inline(ios, req, w);
			return;
		}
		srv_reply_error(req, rc == -EBUSY ? -EBUSY : rc, "%s " OBJ ": no room to queue the "
				"request behind the others on its object", w->what, w->part[0].handle);
		ios_work_free(w);
		return;
	}
	if (refuse_or_read_buffers(parked, w)) {
		spares_free(spare);
		return;
	}
	work_queue(pool, w, parked, cost, spare);
}

/* ------------------------------------------------------------ the pool */

int ios_pool_checks(void *arg, const struct tp_hdr *hdr)
{
	const struct ios *ios = arg;

	/* Not DTYPE_WRITE: its handler keeps the file type its body carries
	 * (ios_desc_done) for later requests to name, which an unchecked
	 * body must not do. WRITE's and LIST_WRITE's handlers change nothing
	 * before the work (counters aside; a capability is cached only once
	 * its own MAC verified). */
	return ios->pool && (hdr->opcode == TP_OP_WRITE || hdr->opcode == TP_OP_LIST_WRITE);
}

unsigned ios_pool_threads(const struct tp_config *cfg)
{
	long cpus;

	if (cfg->io_threads != TP_IO_THREADS_AUTO)
		return cfg->io_threads;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus < 1 ? 1 : cpus > IOS_POOL_AUTO_MAX ? IOS_POOL_AUTO_MAX : (unsigned)cpus;
}

int ios_pool_start(struct ios *ios, unsigned nthreads, char *err, size_t errlen)
{
	struct ios_pool *pool = calloc(1, sizeof(*pool));
	int rc = -ENOMEM;

	if (!pool)
		goto fail;
	pool->ios = ios;
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->cv, NULL);
	ios->pool = pool;
	if (!(pool->threads = calloc(nthreads, sizeof(*pool->threads))) ||
	    !(pool->lanes = calloc(nthreads, sizeof(*pool->lanes))))
		goto fail;
	if ((rc = srv_wakeup_set(ios->srv, on_done, pool)))
		goto fail;
	for (unsigned i = 0; i < nthreads; i++) {
		struct worker_arg *wa;

		if ((rc = ios_store_lane(ios->store, &pool->lanes[i])))
			goto fail;
		pool->nlanes++;
		if (!(wa = malloc(sizeof(*wa)))) {
			rc = -ENOMEM;
			goto fail;
		}
		wa->pool = pool;
		wa->lane = pool->lanes[i];
		if ((rc = -pthread_create(&pool->threads[i], NULL, work_loop, wa))) {
			free(wa);
			goto fail;
		}
		pool->nthreads++;
	}
	return 0;
fail:
	snprintf(err, errlen, "%u disk worker threads: %s", nthreads, strerror(-rc));
	ios_pool_stop(ios);
	ios_pool_destroy(ios);
	return rc;
}

void ios_pool_stop(struct ios *ios)
{
	struct ios_pool *pool = ios->pool;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->mu);
	pool->stop = 1;
	pthread_cond_broadcast(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	for (unsigned i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pool->nthreads = 0;
}

void ios_pool_destroy(struct ios *ios)
{
	struct ios_pool *pool = ios->pool;

	if (!pool)
		return;
	ios->pool = NULL;
	/* Parts left queued are never run; every work goes, answered or not
	 * (srv_destroy detached them all). */
	for (unsigned b = 0; b < IOS_POOL_BUCKETS; b++)
		while (pool->buckets[b]) {
			struct ios_obj *o = pool->buckets[b];

			pool->buckets[b] = o->hnext;
			free(o);
		}
	while (pool->all) {
		struct ios_work *w = pool->all;

		pool->all = w->next;
		ios_work_free(w);
	}
	for (unsigned i = 0; i < pool->nlanes; i++)
		ios_store_close(pool->lanes[i]);
	free(pool->lanes);
	free(pool->threads);
	pthread_cond_destroy(&pool->cv);
	pthread_mutex_destroy(&pool->mu);
	free(pool);
}
