/*
 * tlk_request.c - lock requests: creation, acquire (nonblocking and
 * blocking), full and partial release, cancel, owner release, and the
 * wake-up pass that grants parked requests after any of these. The rules
 * and why they are deadlock-free are in tlk.h.
 */
#include <errno.h>
#include <string.h>

#include "tlk_int.h"

static struct tlk_tree *tree_of(struct tlk_request *r)
{
	return r->mode == TLK_WRITE ? &r->object->write : &r->object->read;
}

static struct tlk_link *queue_head(struct tlk_object *o, enum tlk_queue q)
{
	return q == TLK_Q_PARKED ? &o->parked : q == TLK_Q_GRANTED ? &o->granted : &o->waiting;
}

/* ------------------------------------------------------------- position */

uint64_t tlk_request_position_logical(const struct tlk_request *r)
{
	if (r->cur == r->count)
		return TLK_NONE;
	return r->slots[r->cur].range.logical + r->cur_off;
}

static uint64_t last_held_logical(const struct tlk_request *r)
{
	const struct tlk_range *g;

	if (r->cur_off)
		return r->slots[r->cur].range.logical + r->cur_off - 1;
	if (!r->cur)
		return TLK_NONE;
	g = &r->slots[r->cur - 1].range;
	return g->logical + g->length - 1;
}

/* Every wanted byte below `upto` (logical) is held. */
static bool reached(const struct tlk_request *r, uint64_t upto)
{
	return r->cur == r->count || tlk_request_position_logical(r) >= upto;
}

void tlk_request_answer(const struct tlk_request *r, struct tlk_answer *answer)
{
	answer->state = r->queue == TLK_Q_GRANTED ? TLK_GRANTED
			: r->queue == TLK_Q_PARKED ? TLK_WAITING : TLK_PARTIAL;
	answer->last_abs_offset = last_held_logical(r);
	answer->next_abs_offset = tlk_request_position_logical(r);
}

/* The first slot at or after `from` whose range ends after the object
 * offset `a` (or whose logical range ends after `a` when `logical`). */
static size_t slot_ending_after(const struct tlk_request *r, size_t from, uint64_t a,
				bool logical)
{
	size_t lo = from, hi = r->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tlk_range *g = &r->slots[mid].range;
		if ((logical ? g->logical : g->offset) + g->length > a)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* ---------------------------------------------------------------- queues */

static void set_queue(struct tlk_table *t, struct tlk_request *r, enum tlk_queue q)
{
	struct tlk_object *o = r->object;
	struct tlk_link *head = queue_head(o, q), *at = head;

	if (r->queue == q)
		return;
	tlk_list_remove(&r->in_queue);
	o->queue_len[r->queue]--;
	if (r->queue == TLK_Q_PARKED)
		t->parked--;
	if (q == TLK_Q_PARKED) {
		/* Age order: usually the youngest, so search from the tail. */
		while (at->prev != head &&
		       TLK_CONTAINER(at->prev, struct tlk_request, in_queue)->id > r->id)
			at = at->prev;
		t->parked++;
	}
	tlk_list_insert_before(at, &r->in_queue);
	o->queue_len[q]++;
	r->queue = q;
}

/* --------------------------------------------------------------- granting */

/* Rule (b) for a blocking grant: the byte an older conflicting parked
 * request waits at. */
static uint64_t waiter_position(const struct tlk_request *w, uint64_t a, uint64_t e)
{
	uint64_t p = w->slots[w->cur].range.offset + w->cur_off;

	return p >= a && p < e ? p : e;
}

/* Rule (b) for a nonblocking grant: the first byte >= a that the older
 * parked request still wants below its final offset. */
static uint64_t waiter_wants(const struct tlk_request *w, uint64_t a, uint64_t e)
{
	uint64_t p = w->slots[w->cur].range.offset + w->cur_off, x;
	const struct tlk_range *g;
	size_t j;

	if (p >= a)
		return p < e ? p : e;
	j = slot_ending_after(w, w->cur, a, false);
	if (j == w->count)
		return e;
	g = &w->slots[j].range;
	x = a > g->offset ? a : g->offset;
	if (x >= e || g->logical + (x - g->offset) >= w->upto)
		return e;
	return x;
}

bool tlk_request_same_group(const struct tlk_request *a, const struct tlk_request *b)
{
	return a->group && a->group == b->group && a->owner == b->owner;
}

bool tlk_request_node_in_group(const struct tlk_node *node, const void *r)
{
	const struct tlk_slot *s = TLK_CONTAINER(node, struct tlk_slot, node);

	return tlk_request_same_group(s->request, r);
}

/* The lowest byte of [a, e) that a lock in `tree` not of r's group covers. */
static uint64_t first_conflict(const struct tlk_request *r, const struct tlk_tree *tree,
			       uint64_t a, uint64_t e)
{
	if (!r->group)
		return tlk_tree_first_covered(tree, a, e);
	return tlk_tree_first_covered_skip(tree, a, e, tlk_request_node_in_group, r);
}

/* The first byte of [a, e) that request r may not take now, or e. */
static uint64_t first_refused(const struct tlk_request *r, uint64_t a, uint64_t e,
			      bool blocking)
{
	const struct tlk_object *o = r->object;

	e = first_conflict(r, &o->write, a, e);
	if (r->mode == TLK_WRITE)
		e = first_conflict(r, &o->read, a, e);
	/* A record lock (grouped) is granted as POSIX grants it: whenever no
	 * conflicting lock is held. Were it held back by older parked waiters,
	 * its owner could not even split or downgrade what it holds. */
	if (r->group)
		return e;
	/* The parked list is in age order: only its older part matters. */
	for (const struct tlk_link *l = o->parked.next; l != &o->parked && e > a; l = l->next) {
		const struct tlk_request *w = TLK_CONTAINER(l, struct tlk_request, in_queue);
		if (w->id >= r->id)
			break;
		if ((w->mode == TLK_READ && r->mode == TLK_READ) || tlk_request_same_group(w, r))
			continue;
		e = blocking ? waiter_position(w, a, e) : waiter_wants(w, a, e);
	}
	return e;
}

/* Holds slot cur up to object offset `end` (> the position). */
static void hold_to(struct tlk_request *r, uint64_t end)
{
	struct tlk_slot *s = &r->slots[r->cur];
	uint64_t off = end - s->range.offset;

	r->held_bytes += off - r->cur_off;
	if (!r->cur_off) {
		s->node.start = s->range.offset;
		s->node.end = end;
		tlk_tree_insert(tree_of(r), &s->node);
	} else {
		tlk_tree_set_end(tree_of(r), &s->node, end);
	}
	if (off == s->range.length) {
		r->cur++;
		r->cur_off = 0;
	} else {
		r->cur_off = off;
	}
}

/* Grants from the position, in order, below `upto`, until a refused byte.
 * One lookup covers the whole span left to the request's last byte: its
 * answer, the lowest refused byte, holds until the grant passes it (only
 * this request's locks change meanwhile), so without conflicts an acquire
 * of k ranges costs one lookup and k inserts. */
static void grant(struct tlk_request *r, bool blocking, uint64_t upto)
{
	const struct tlk_range *back = &r->slots[r->count - 1].range;
	uint64_t span_end = back->offset + back->length, refused = 0;

	while (r->cur < r->count) {
		const struct tlk_range *g = &r->slots[r->cur].range;
		uint64_t a = g->offset + r->cur_off, end = g->offset + g->length;
		uint64_t e = end;

		if (g->logical + r->cur_off >= upto)
			return;
		if (upto - g->logical < g->length)
			e = g->offset + (upto - g->logical);
		if (refused <= a)
			refused = first_refused(r, a, span_end, blocking);
		if (refused < e)
			e = refused;
		if (e > a)
			hold_to(r, e);
		if (e < end)
			return;
	}
}

/* Drops every held byte from slot j, offset off on; false if none was held. */
static bool drop_to(struct tlk_request *r, size_t j, uint64_t off)
{
	struct tlk_tree *tree = tree_of(r);
	struct tlk_slot *s;
	uint64_t had;

	if (j > r->cur || (j == r->cur && off >= r->cur_off))
		return false;
	for (size_t i = r->cur_off ? r->cur : r->cur - 1; i > j; i--) {
		s = &r->slots[i];
		r->held_bytes -= s->node.end - s->node.start;
		tlk_tree_remove(tree, &s->node);
	}
	s = &r->slots[j];
	had = j < r->cur ? s->range.length : r->cur_off;
	r->held_bytes -= had - off;
	if (!off)
		tlk_tree_remove(tree, &s->node);
	else
		tlk_tree_set_end(tree, &s->node, s->range.offset + off);
	r->cur = j;
	r->cur_off = off;
	return true;
}

/* After a grant: the request's queue. */
static void settle(struct tlk_table *t, struct tlk_request *r, bool blocking,
		   uint64_t upto, void *cookie)
{
	if (r->cur == r->count) {
		set_queue(t, r, TLK_Q_GRANTED);
	} else if (blocking && !reached(r, upto)) {
		r->upto = upto;
		r->cookie = cookie;
		set_queue(t, r, TLK_Q_PARKED);
	} else {
		set_queue(t, r, TLK_Q_WAITING);
	}
}

/* Grants parked requests of `o`, oldest first; those that reach their final
 * offset leave the queue and become events. One pass suffices: a grant only
 * adds locks, and a request only yields to older ones, already done. */
static void wake(struct tlk_table *t, struct tlk_object *o)
{
	struct tlk_link *l = o->parked.next;

	while (l != &o->parked) {
		struct tlk_request *w = TLK_CONTAINER(l, struct tlk_request, in_queue);
		struct tlk_answer answer;
		l = l->next;
		grant(w, true, w->upto);
		if (!reached(w, w->upto))
			continue;
		set_queue(t, w, w->cur == w->count ? TLK_Q_GRANTED : TLK_Q_WAITING);
		tlk_request_answer(w, &answer);
		tlk_table_push_event(t, w, &answer);
	}
}

/* ------------------------------------------------------------- lifecycle */

size_t tlk_request_footprint(size_t ranges)
{
	if (ranges > (SIZE_MAX - sizeof(struct tlk_request)) / sizeof(struct tlk_slot))
		return SIZE_MAX;
	return sizeof(struct tlk_request) + ranges * sizeof(struct tlk_slot);
}

static int check_ranges(const struct tlk_range *g, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (!g[i].length || g[i].length > UINT64_MAX - g[i].offset ||
		    g[i].length > UINT64_MAX - g[i].logical)
			return -EINVAL;
		if (i && (g[i - 1].offset + g[i - 1].length > g[i].offset ||
			  g[i - 1].logical + g[i - 1].length > g[i].logical))
			return -EINVAL;
	}
	return 0;
}

int tlk_request_create(struct tlk_table *t, uint64_t object, uint64_t owner,
		       enum tlk_mode mode, const struct tlk_range *ranges,
		       size_t count, uint64_t *lock_id)
{
	return tlk_request_create_grouped(t, object, owner, 0, mode, ranges, count, lock_id);
}

int tlk_request_create_grouped(struct tlk_table *t, uint64_t object, uint64_t owner,
			       uint64_t group, enum tlk_mode mode,
			       const struct tlk_range *ranges, size_t count, uint64_t *lock_id)
{
	struct tlk_object *o;
	struct tlk_owner *w;
	struct tlk_request *r;
	size_t size;
	int rc;

	t->events_count = 0;
	if (!ranges || !count || !lock_id || (mode != TLK_READ && mode != TLK_WRITE))
		return -EINVAL;
	if (t->limits.max_ranges && count > t->limits.max_ranges)
		return -E2BIG;
	rc = check_ranges(ranges, count);
	if (rc)
		return rc;
	if (t->limits.max_requests && t->requests.count >= t->limits.max_requests)
		return -ENOMEM;
	size = tlk_request_footprint(count);
	if (size == SIZE_MAX || tlk_map_reserve(&t->mem, &t->requests, t->requests.count + 1))
		return -ENOMEM;
	r = tlk_mem_alloc(&t->mem, size);
	if (!r)
		return -ENOMEM;
	rc = tlk_table_reserve_records(t, object, owner, &o, &w);
	if (rc) {
		tlk_mem_free(&t->mem, r, size);
		return rc;
	}
	memset(r, 0, sizeof(*r));
	r->id = t->next_id++;
	r->object = o;
	r->owner = w;
	r->mode = mode;
	r->group = group;
	r->queue = TLK_Q_WAITING;
	r->upto = TLK_NONE;
	r->alloc_size = size;
	r->count = count;
	for (size_t i = 0; i < count; i++) {
		r->slots[i].range = ranges[i];
		r->slots[i].node.parent = NULL; /* not in a tree */
		r->slots[i].request = r;
	}
	tlk_list_insert_before(&o->all, &r->in_object);
	tlk_list_insert_before(&o->waiting, &r->in_queue);
	o->queue_len[TLK_Q_WAITING]++;
	o->requests++;
	tlk_list_insert_before(&w->requests, &r->in_owner);
	w->count++;
	tlk_map_put(&t->requests, r->id, r);
	*lock_id = r->id;
	return 0;
}

void tlk_request_free(struct tlk_table *t, struct tlk_request *r)
{
	tlk_mem_free(&t->mem, r, r->alloc_size);
}

/* Drops r and its locks; its object stays for the caller to wake or drop. */
static void destroy(struct tlk_table *t, struct tlk_request *r)
{
	struct tlk_object *o = r->object;
	struct tlk_owner *w = r->owner;

	drop_to(r, 0, 0);
	if (r->queue == TLK_Q_PARKED)
		t->parked--;
	o->queue_len[r->queue]--;
	tlk_list_remove(&r->in_queue);
	tlk_list_remove(&r->in_object);
	o->requests--;
	tlk_list_remove(&r->in_owner);
	if (!--w->count)
		tlk_table_drop_owner(t, w);
	tlk_map_remove(&t->requests, r->id);
	tlk_request_free(t, r);
}

/* After locks of `o` were dropped or a parked request left: wake, or free
 * the object when no request is left. */
static void after_release(struct tlk_table *t, struct tlk_object *o)
{
	if (!o->requests)
		tlk_table_drop_object(t, o);
	else
		wake(t, o);
}

/* -------------------------------------------------------------- requests */

/* Every call on one request starts here: the event list empties, then the
 * request is found. */
static int begin(struct tlk_table *t, uint64_t lock_id, struct tlk_request **r)
{
	t->events_count = 0;
	*r = tlk_map_get(&t->requests, lock_id);
	return *r ? 0 : -ENOENT;
}

static int answered(const struct tlk_request *r, struct tlk_answer *answer)
{
	if (answer)
		tlk_request_answer(r, answer);
	return 0;
}

int tlk_acquire(struct tlk_table *t, uint64_t lock_id, unsigned flags,
		uint64_t upto, void *cookie, struct tlk_answer *answer)
{
	struct tlk_request *r;
	bool blocking = flags & TLK_BLOCKING, was_parked;
	int rc = begin(t, lock_id, &r);

	if (rc)
		return rc;
	if (flags & ~TLK_BLOCKING)
		return -EINVAL;
	was_parked = r->queue == TLK_Q_PARKED;
	/* Room for this request's event if it parks (see tlk_events). */
	if (blocking && !was_parked && r->queue != TLK_Q_GRANTED &&
	    tlk_table_reserve_events(t, t->parked + 1))
		return -ENOMEM;
	if (r->queue != TLK_Q_GRANTED) {
		if (was_parked)
			set_queue(t, r, TLK_Q_WAITING);
		grant(r, blocking, upto);
		settle(t, r, blocking, upto, cookie);
		/* It no longer holds back younger requests where it did. */
		if (was_parked)
			wake(t, r->object);
	}
	return answered(r, answer);
}

int tlk_release(struct tlk_table *t, uint64_t lock_id)
{
	struct tlk_request *r;
	struct tlk_object *o;
	int rc = begin(t, lock_id, &r);

	if (rc)
		return rc;
	o = r->object;
	destroy(t, r);
	after_release(t, o);
	return 0;
}

int tlk_release_from(struct tlk_table *t, uint64_t lock_id, uint64_t from,
		     struct tlk_answer *answer)
{
	struct tlk_request *r;
	size_t j;
	uint64_t off = 0;
	bool changed;
	int rc = begin(t, lock_id, &r);

	if (rc)
		return rc;
	/* The first wanted byte at a logical offset >= from. */
	j = slot_ending_after(r, 0, from, true);
	if (j < r->count && from > r->slots[j].range.logical)
		off = from - r->slots[j].range.logical;
	changed = r->queue == TLK_Q_PARKED;
	if (drop_to(r, j, off))
		changed = true;
	if (changed) {
		set_queue(t, r, r->cur == r->count ? TLK_Q_GRANTED : TLK_Q_WAITING);
		wake(t, r->object);
	}
	return answered(r, answer);
}

int tlk_cancel(struct tlk_table *t, uint64_t lock_id, struct tlk_answer *answer)
{
	struct tlk_request *r;
	int rc = begin(t, lock_id, &r);

	if (rc)
		return rc;
	if (r->queue == TLK_Q_PARKED) {
		set_queue(t, r, TLK_Q_WAITING);
		wake(t, r->object);
	}
	return answered(r, answer);
}

int tlk_release_owner(struct tlk_table *t, uint64_t owner, size_t *released)
{
	struct tlk_owner *w;
	size_t n = 0;

	t->events_count = 0;
	w = tlk_map_get(&t->owners, owner);
	if (w) {
		n = w->count;
		/* Drop them all first, then wake each object once. */
		for (size_t k = n; k > 0; k--) {
			struct tlk_request *r =
				TLK_CONTAINER(w->requests.next, struct tlk_request, in_owner);
			struct tlk_object *o = r->object;
			if (r->queue == TLK_Q_PARKED) {
				struct tlk_answer gone = { TLK_GONE, TLK_NONE, TLK_NONE };
				tlk_table_push_event(t, r, &gone);
			}
			if (!o->is_dirty) {
				tlk_list_insert_before(&t->dirty, &o->dirty);
				o->is_dirty = true;
			}
			destroy(t, r); /* frees w with its last request */
		}
		while (!tlk_list_empty(&t->dirty)) {
			struct tlk_object *o = TLK_CONTAINER(t->dirty.next, struct tlk_object, dirty);
			tlk_list_remove(&o->dirty);
			o->is_dirty = false;
			after_release(t, o);
		}
	}
	if (released)
		*released = n;
	return 0;
}

/* ------------------------------------------------------------------ test */

struct test_asker {
	const struct tlk_owner *owner; /* NULL: the owner has no requests here */
	uint64_t group;
};

static bool asker_group(const struct tlk_node *node, const void *arg)
{
	const struct test_asker *k = arg;
	const struct tlk_request *r = TLK_CONTAINER(node, struct tlk_slot, node)->request;

	return k->group && r->group == k->group && r->owner == k->owner;
}

int tlk_test(const struct tlk_table *t, uint64_t object, uint64_t owner, uint64_t group,
	     enum tlk_mode mode, uint64_t offset, uint64_t length, struct tlk_conflict *out)
{
	const struct tlk_object *o = tlk_map_get(&t->objects, object);
	/* an owner with no requests here has no locks to skip: NULL matches none */
	struct test_asker k = { tlk_map_get(&t->owners, owner), group };
	const struct tlk_node *w, *r = NULL;
	uint64_t end = offset + length, below;

	if (!length || end < offset || (mode != TLK_READ && mode != TLK_WRITE))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!o)
		return 0;
	w = tlk_tree_first_node_skip(&o->write, offset, end, asker_group, &k);
	below = !w ? end : w->start > offset ? w->start : offset;
	/* a read lock counts for a write only, and only below the write's byte */
	if (mode == TLK_WRITE && below > offset)
		r = tlk_tree_first_node_skip(&o->read, offset, below, asker_group, &k);
	if (r)
		*out = (struct tlk_conflict){ 1, TLK_READ, r->start, r->end };
	else if (w)
		*out = (struct tlk_conflict){ 1, TLK_WRITE, w->start, w->end };
	return 0;
}

int tlk_request_info(const struct tlk_table *t, uint64_t lock_id,
		     struct tlk_request_info *info)
{
	const struct tlk_request *r = tlk_map_get(&t->requests, lock_id);

	if (!r)
		return -ENOENT;
	info->object = r->object->handle;
	info->owner = r->owner->id;
	info->mode = r->mode;
	tlk_request_answer(r, &info->answer);
	info->upto = r->queue == TLK_Q_PARKED ? r->upto : TLK_NONE;
	info->ranges = r->count;
	info->held_locks = r->cur + (r->cur_off > 0);
	info->held_bytes = r->held_bytes;
	return 0;
}
