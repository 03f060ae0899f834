/*
 * tlk_table.c - the lock table: its maps of requests, objects and owners,
 * the event list, statistics and the invariant check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tlk_int.h"

static void *default_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void default_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	free(ptr);
}

int tlk_table_create(const struct tlk_config *cfg, struct tlk_table **out)
{
	struct tlk_mem mem = { { default_alloc, default_free, NULL }, 0, 0 };
	struct tlk_table *t;

	if (cfg && cfg->alloc) {
		if (!cfg->alloc->alloc || !cfg->alloc->free)
			return -EINVAL;
		mem.ops = *cfg->alloc;
	}
	if (cfg)
		mem.limit = cfg->limits.max_bytes;
	t = tlk_mem_alloc(&mem, sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	t->mem = mem;
	if (cfg)
		t->limits = cfg->limits;
	t->next_id = 1;
	tlk_list_init(&t->dirty);
	*out = t;
	return 0;
}

void tlk_table_destroy(struct tlk_table *t)
{
	struct tlk_mem mem;

	if (!t)
		return;
	for (size_t i = 0; i < t->requests.cap; i++)
		if (t->requests.slots[i].value)
			tlk_request_free(t, t->requests.slots[i].value);
	for (size_t i = 0; i < t->objects.cap; i++)
		if (t->objects.slots[i].value)
			tlk_mem_free(&t->mem, t->objects.slots[i].value,
				     sizeof(struct tlk_object));
	for (size_t i = 0; i < t->owners.cap; i++)
		if (t->owners.slots[i].value)
			tlk_mem_free(&t->mem, t->owners.slots[i].value,
				     sizeof(struct tlk_owner));
	tlk_map_free(&t->mem, &t->requests);
	tlk_map_free(&t->mem, &t->objects);
	tlk_map_free(&t->mem, &t->owners);
	tlk_mem_free(&t->mem, t->events, t->events_cap * sizeof(*t->events));
	mem = t->mem;
	tlk_mem_free(&mem, t, sizeof(*t));
}

int tlk_table_reserve_events(struct tlk_table *t, size_t count)
{
	struct tlk_event *ev;
	size_t cap = t->events_cap ? t->events_cap : 4;

	while (cap < count) {
		if (cap > SIZE_MAX / 2 / sizeof(*ev))
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == t->events_cap)
		return 0;
	ev = tlk_mem_alloc(&t->mem, cap * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	/* Called between calls' event lists: nothing to keep. */
	tlk_mem_free(&t->mem, t->events, t->events_cap * sizeof(*ev));
	t->events = ev;
	t->events_cap = cap;
	t->events_count = 0;
	return 0;
}

void tlk_table_push_event(struct tlk_table *t, const struct tlk_request *r,
			  const struct tlk_answer *answer)
{
	struct tlk_event *ev = &t->events[t->events_count++];

	ev->lock_id = r->id;
	ev->object = r->object->handle;
	ev->owner = r->owner->id;
	ev->cookie = r->cookie;
	ev->answer = *answer;
}

size_t tlk_events(const struct tlk_table *t, const struct tlk_event **events)
{
	*events = t->events;
	return t->events_count;
}

int tlk_table_reserve_records(struct tlk_table *t, uint64_t object, uint64_t owner,
			      struct tlk_object **obj, struct tlk_owner **own)
{
	struct tlk_object *o = tlk_map_get(&t->objects, object);
	struct tlk_owner *w = tlk_map_get(&t->owners, owner);

	if (!o && tlk_map_reserve(&t->mem, &t->objects, t->objects.count + 1))
		return -ENOMEM;
	if (!w && tlk_map_reserve(&t->mem, &t->owners, t->owners.count + 1))
		return -ENOMEM;
	if (!o) {
		o = tlk_mem_alloc(&t->mem, sizeof(*o));
		if (!o)
			return -ENOMEM;
		memset(o, 0, sizeof(*o));
		o->handle = object;
		tlk_tree_init(&o->read);
		tlk_tree_init(&o->write);
		tlk_list_init(&o->all);
		tlk_list_init(&o->waiting);
		tlk_list_init(&o->parked);
		tlk_list_init(&o->granted);
		tlk_list_init(&o->dirty);
	}
	if (!w) {
		w = tlk_mem_alloc(&t->mem, sizeof(*w));
		if (!w) {
			if (!o->requests && !tlk_map_get(&t->objects, object))
				tlk_mem_free(&t->mem, o, sizeof(*o));
			return -ENOMEM;
		}
		memset(w, 0, sizeof(*w));
		w->id = owner;
		tlk_list_init(&w->requests);
		tlk_map_put(&t->owners, owner, w);
	}
	if (!tlk_map_get(&t->objects, object))
		tlk_map_put(&t->objects, object, o);
	*obj = o;
	*own = w;
	return 0;
}

void tlk_table_drop_object(struct tlk_table *t, struct tlk_object *o)
{
	if (o->is_dirty)
		tlk_list_remove(&o->dirty);
	tlk_map_remove(&t->objects, o->handle);
	tlk_mem_free(&t->mem, o, sizeof(*o));
}

void tlk_table_drop_owner(struct tlk_table *t, struct tlk_owner *w)
{
	tlk_map_remove(&t->owners, w->id);
	tlk_mem_free(&t->mem, w, sizeof(*w));
}

/* ---------------------------------------------------------------- stats */

static void add_object(const struct tlk_object *o, struct tlk_stats *st)
{
	st->objects++;
	st->requests += o->requests;
	st->granted += o->queue_len[TLK_Q_GRANTED];
	st->waiting += o->queue_len[TLK_Q_WAITING];
	st->parked += o->queue_len[TLK_Q_PARKED];
	st->read_locks += o->read.count;
	st->write_locks += o->write.count;
	st->read_bytes += o->read.bytes;
	st->write_bytes += o->write.bytes;
}

void tlk_table_stats(const struct tlk_table *t, struct tlk_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < t->objects.cap; i++)
		if (t->objects.slots[i].value)
			add_object(t->objects.slots[i].value, st);
	st->memory = t->mem.used;
}

int tlk_object_stats(const struct tlk_table *t, uint64_t object, struct tlk_stats *st)
{
	const struct tlk_object *o = tlk_map_get(&t->objects, object);

	memset(st, 0, sizeof(*st));
	if (!o)
		return -ENOENT;
	add_object(o, st);
	return 0;
}

/* ---------------------------------------------------------------- check */

/* r's slots against its position: those before it held whole, the one
 * at it up to cur_off, each held node in r's tree and at its range; the
 * locks and bytes held are added to *locks and into *held. */
static int check_slots(const struct tlk_request *r, size_t *locks, uint64_t *held)
{
	const struct tlk_tree *own_tree = r->mode == TLK_WRITE ? &r->object->write
							       : &r->object->read;

	for (size_t i = 0; i < r->count; i++) {
		const struct tlk_slot *s = &r->slots[i];
		uint64_t want = i < r->cur ? s->range.length : i == r->cur ? r->cur_off : 0;
		const struct tlk_node *n;
		if (!want) {
			if (s->node.parent)
				return -EFAULT;
			continue;
		}
		/* A held node must be reachable from its tree's root. */
		n = &s->node;
		while (n->parent && n->parent != &own_tree->nil)
			n = n->parent;
		if (n != own_tree->root || s->node.start != s->range.offset ||
		    s->node.end != s->range.offset + want)
			return -EFAULT;
		*held += want;
		(*locks)++;
	}
	return 0;
}

/* One request against its object, queue and trees. */
static int check_request(const struct tlk_table *t, const struct tlk_request *r,
			 size_t *locks, uint64_t *bytes)
{
	uint64_t held = 0;

	if (tlk_map_get(&t->requests, r->id) != r || r->id >= t->next_id)
		return -EFAULT;
	if (r->cur > r->count || (r->cur == r->count && r->cur_off) ||
	    (r->cur < r->count && r->cur_off >= r->slots[r->cur].range.length))
		return -EFAULT;
	if (check_slots(r, locks, &held) || held != r->held_bytes)
		return -EFAULT;
	*bytes += held;
	if ((r->queue == TLK_Q_GRANTED) != (r->cur == r->count))
		return -EFAULT;
	/* A parked request is short of its final offset. */
	if (r->queue == TLK_Q_PARKED && tlk_request_position_logical(r) >= r->upto)
		return -EFAULT;
	return 0;
}

/* Nodes of r itself and of r's group do not count against r's node. */
static bool same_or_group(const struct tlk_node *node, const void *arg)
{
	const struct tlk_request *r = arg;

	return TLK_CONTAINER(node, struct tlk_slot, node)->request == r ||
	       tlk_request_node_in_group(node, r);
}

/* A lock of r's, x, overlaps a conflicting lock of another request. */
static bool conflicts_held(const struct tlk_object *o, const struct tlk_request *r,
			   const struct tlk_node *x)
{
	if (tlk_tree_first_covered_skip(&o->write, x->start, x->end, same_or_group, r) != x->end)
		return true;
	return r->mode == TLK_WRITE &&
	       tlk_tree_first_covered_skip(&o->read, x->start, x->end, same_or_group, r) != x->end;
}

/* o's three queues: each request in the queue it says, parked ones in
 * id order, each queue's length as counted; their sizes into queued[]. */
static int check_queues(const struct tlk_object *o, size_t queued[3])
{
	const struct tlk_link *heads[3] = { &o->waiting, &o->parked, &o->granted };

	for (int q = 0; q < 3; q++) {
		uint64_t prev = 0;
		for (const struct tlk_link *l = heads[q]->next; l != heads[q]; l = l->next) {
			const struct tlk_request *r = TLK_CONTAINER(l, struct tlk_request, in_queue);
			if ((int)r->queue != q || r->object != o)
				return -EFAULT;
			if (q == TLK_Q_PARKED && r->id <= prev)
				return -EFAULT;
			prev = r->id;
			queued[q]++;
		}
		if (queued[q] != o->queue_len[q])
			return -EFAULT;
	}
	return 0;
}

/* Every request of o: itself (check_request), and no write lock of it
 * overlapping another request's lock, but for one of its record-lock
 * group. Their number into *n, their locks and bytes by mode. */
static int check_members(const struct tlk_table *t, const struct tlk_object *o, size_t *n,
			 size_t locks[3], uint64_t bytes[3])
{
	for (const struct tlk_link *l = o->all.next; l != &o->all; l = l->next) {
		const struct tlk_request *r = TLK_CONTAINER(l, struct tlk_request, in_object);
		size_t held = r->cur + (r->cur_off > 0);
		if (r->object != o)
			return -EFAULT;
		if (check_request(t, r, &locks[r->mode], &bytes[r->mode]))
			return -EFAULT;
		for (size_t i = 0; i < held; i++)
			if (conflicts_held(o, r, &r->slots[i].node))
				return -EFAULT;
		(*n)++;
	}
	return 0;
}

static int check_object(const struct tlk_table *t, const struct tlk_object *o,
			size_t *requests, size_t *parked)
{
	size_t n = 0, locks[3] = { 0 }, queued[3] = { 0 };
	uint64_t bytes[3] = { 0 };

	if (tlk_map_get(&t->objects, o->handle) != o || !o->requests)
		return -EFAULT;
	if (tlk_tree_check(&o->read, false) || tlk_tree_check(&o->write, false))
		return -EFAULT;
	if (check_members(t, o, &n, locks, bytes))
		return -EFAULT;
	if (n != o->requests || locks[TLK_READ] != o->read.count ||
	    locks[TLK_WRITE] != o->write.count || bytes[TLK_READ] != o->read.bytes ||
	    bytes[TLK_WRITE] != o->write.bytes)
		return -EFAULT;
	if (check_queues(o, queued))
		return -EFAULT;
	if (queued[0] + queued[1] + queued[2] != n || o->is_dirty)
		return -EFAULT;
	*requests += n;
	*parked += queued[TLK_Q_PARKED];
	return 0;
}

int tlk_table_check(const struct tlk_table *t)
{
	size_t requests = 0, parked = 0, owned = 0;

	for (size_t i = 0; i < t->objects.cap; i++)
		if (t->objects.slots[i].value &&
		    check_object(t, t->objects.slots[i].value, &requests, &parked))
			return -EFAULT;
	for (size_t i = 0; i < t->owners.cap; i++) {
		const struct tlk_owner *w = t->owners.slots[i].value;
		size_t n = 0;
		if (!w)
			continue;
		for (const struct tlk_link *l = w->requests.next; l != &w->requests; l = l->next) {
			if (TLK_CONTAINER(l, struct tlk_request, in_owner)->owner != w)
				return -EFAULT;
			n++;
		}
		if (!n || n != w->count)
			return -EFAULT;
		owned += n;
	}
	if (requests != t->requests.count || owned != requests || parked != t->parked ||
	    t->events_cap < t->parked || !tlk_list_empty(&t->dirty))
		return -EFAULT;
	return 0;
}
