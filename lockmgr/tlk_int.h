/*
 * tlk_int.h - lock manager internals, shared by the files of lockmgr/ only.
 *
 *   tlk_mem.c      the allocator and the memory budget
 *   tlk_map.c      hash maps: lock id, object, owner -> record
 *   tlk_tree.c     the interval tree (read tree, write tree)
 *   tlk_table.c    the table, objects, owners, events, stats, checks
 *   tlk_request.c  requests: create, acquire, release, cancel, wake-up
 */
#ifndef TESSERA_TLK_INT_H
#define TESSERA_TLK_INT_H

#include <stdbool.h>

#include "tlk.h"

#define TLK_CONTAINER(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------ memory */

struct tlk_mem {
	struct tlk_alloc ops;
	size_t used;  /* bytes handed out and not yet freed */
	size_t limit; /* 0: none */
};

void *tlk_mem_alloc(struct tlk_mem *m, size_t size);
void tlk_mem_free(struct tlk_mem *m, void *ptr, size_t size);

/* -------------------------------------------------------------------- maps
 *
 * Open addressing with linear probing, load at most 1/2; a slot is empty when
 * its value is NULL. Removal shifts later entries back, so it never
 * allocates. Growth happens only in tlk_map_reserve, so a put after a
 * successful reserve cannot fail.
 */
struct tlk_map_slot {
	uint64_t key;
	void *value;
};

struct tlk_map {
	struct tlk_map_slot *slots; /* cap entries, or NULL while cap == 0 */
	size_t cap;                 /* 0 or a power of two >= 8 */
	size_t count;
};

/* Makes room for `count` entries in all. 0 or -ENOMEM (map unchanged). */
int tlk_map_reserve(struct tlk_mem *m, struct tlk_map *map, size_t count);
void *tlk_map_get(const struct tlk_map *map, uint64_t key);
/* The key must be absent and room reserved. */
void tlk_map_put(struct tlk_map *map, uint64_t key, void *value);
/* The key must be present. */
void tlk_map_remove(struct tlk_map *map, uint64_t key);
void tlk_map_free(struct tlk_mem *m, struct tlk_map *map);

/* ------------------------------------------------------------------- trees
 *
 * A red-black tree of intervals [start, end), ordered by start (equal starts
 * in insertion order), each node augmented with the largest end in its
 * subtree. Intervals may overlap (the read tree); the write tree's never do.
 * Leaves and the root's parent are the tree's own sentinel `nil`, whose
 * max_end is 0, so a tree must not move once it has nodes.
 */
struct tlk_node {
	struct tlk_node *left, *right, *parent;
	uint64_t start, end; /* start < end */
	uint64_t max_end;    /* max(end) over this subtree */
	bool red;
};

struct tlk_tree {
	struct tlk_node *root; /* &nil when empty */
	struct tlk_node nil;
	size_t count;   /* nodes */
	uint64_t bytes; /* sum of (end - start) */
};

void tlk_tree_init(struct tlk_tree *tree);
/* node->start and node->end set by the caller. */
void tlk_tree_insert(struct tlk_tree *tree, struct tlk_node *node);
void tlk_tree_remove(struct tlk_tree *tree, struct tlk_node *node);
/* Moves a node's end (start < end); the node keeps its place. */
void tlk_tree_set_end(struct tlk_tree *tree, struct tlk_node *node, uint64_t end);
/* The lowest byte of [a, b) inside some interval, or b if none. */
uint64_t tlk_tree_first_covered(const struct tlk_tree *tree, uint64_t a, uint64_t b);
/* The same, ignoring the intervals skip(node, arg) is true of. Visits every
 * skipped interval that overlaps [a, b) below the answer, so it costs
 * O((1 + s) log n) for s skipped ones (a record-lock owner's own locks). */
typedef bool (*tlk_node_skip_fn)(const struct tlk_node *node, const void *arg);
uint64_t tlk_tree_first_covered_skip(const struct tlk_tree *tree, uint64_t a, uint64_t b,
				     tlk_node_skip_fn skip, const void *arg);
/* The interval that covers that byte (the first such in the tree's
 * order), or NULL. */
const struct tlk_node *tlk_tree_first_node_skip(const struct tlk_tree *tree, uint64_t a,
						uint64_t b, tlk_node_skip_fn skip, const void *arg);
/* Shape, colours, order, augmentation, count and bytes: 0 or -EFAULT. When
 * `disjoint`, also that no two intervals overlap. */
int tlk_tree_check(const struct tlk_tree *tree, bool disjoint);

/* ------------------------------------------------------------------- lists */

struct tlk_link {
	struct tlk_link *prev, *next;
};

/* A circular list with a head link. */
static inline void tlk_list_init(struct tlk_link *head)
{
	head->prev = head->next = head;
}

static inline bool tlk_list_empty(const struct tlk_link *head)
{
	return head->next == head;
}

static inline void tlk_list_insert_before(struct tlk_link *at, struct tlk_link *l)
{
	l->prev = at->prev;
	l->next = at;
	at->prev->next = l;
	at->prev = l;
}

static inline void tlk_list_remove(struct tlk_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}

/* --------------------------------------------------------------- records */

struct tlk_request;

/* One wanted range and the lock that holds (a prefix of) it. */
struct tlk_slot {
	struct tlk_range range;
	struct tlk_node node; /* in the mode's tree while any of it is held */
	const struct tlk_request *request; /* whose (for the group rule) */
};

enum tlk_queue {
	TLK_Q_WAITING, /* not parked, not complete (nonblocking tag) */
	TLK_Q_PARKED,  /* blocking tag, in age order */
	TLK_Q_GRANTED, /* holds everything */
};

struct tlk_object;
struct tlk_owner;

struct tlk_request {
	uint64_t id;
	struct tlk_object *object;
	struct tlk_owner *owner;
	enum tlk_mode mode;
	uint64_t group;    /* 0, or a record-lock owner within `owner` */
	enum tlk_queue queue;
	uint64_t upto;     /* parked: the final offset (logical, exclusive) */
	void *cookie;      /* parked: returned in its event */
	/* Position: slots [0, cur) are held whole, slot cur holds its first
	 * cur_off bytes (its node is in a tree iff cur_off > 0), the rest
	 * nothing. cur == count means complete, and then cur_off == 0. */
	size_t cur;
	uint64_t cur_off;
	uint64_t held_bytes;
	struct tlk_link in_object; /* object's all-requests list */
	struct tlk_link in_queue;  /* object's list for `queue` */
	struct tlk_link in_owner;  /* owner's requests */
	size_t alloc_size;
	size_t count; /* ranges */
	struct tlk_slot slots[];
};

struct tlk_object {
	uint64_t handle;
	struct tlk_tree read, write;
	struct tlk_link all;     /* every request, in creation order */
	struct tlk_link waiting; /* TLK_Q_WAITING */
	struct tlk_link parked;  /* TLK_Q_PARKED, oldest first */
	struct tlk_link granted; /* TLK_Q_GRANTED */
	size_t requests;
	size_t queue_len[3];     /* requests per enum tlk_queue */
	struct tlk_link dirty;   /* in the table's dirty list while queued there */
	bool is_dirty;
};

struct tlk_owner {
	uint64_t id;
	struct tlk_link requests;
	size_t count;
};

struct tlk_table {
	struct tlk_mem mem;
	struct tlk_limits limits;
	struct tlk_map requests; /* lock id -> struct tlk_request */
	struct tlk_map objects;  /* handle -> struct tlk_object */
	struct tlk_map owners;   /* owner -> struct tlk_owner */
	uint64_t next_id;
	size_t parked;            /* parked requests, whole table */
	struct tlk_event *events; /* room for events_cap >= parked */
	size_t events_cap, events_count;
	struct tlk_link dirty;    /* objects to wake after a bulk release */
};

/* tlk_table.c: records shared by requests. */
int tlk_table_reserve_events(struct tlk_table *t, size_t count);
void tlk_table_push_event(struct tlk_table *t, const struct tlk_request *r,
			  const struct tlk_answer *answer);
/* Finds or makes the object and owner (room reserved beforehand). */
int tlk_table_reserve_records(struct tlk_table *t, uint64_t object, uint64_t owner,
			      struct tlk_object **obj, struct tlk_owner **own);
/* Frees an object or owner that has no requests left. */
void tlk_table_drop_object(struct tlk_table *t, struct tlk_object *o);
void tlk_table_drop_owner(struct tlk_table *t, struct tlk_owner *w);

/* tlk_request.c: what tlk_table.c needs of requests. */
void tlk_request_answer(const struct tlk_request *r, struct tlk_answer *answer);
uint64_t tlk_request_position_logical(const struct tlk_request *r);
/* Requests of one owner and one nonzero group never conflict. */
bool tlk_request_same_group(const struct tlk_request *a, const struct tlk_request *b);
/* A tree node's request's group is r's (arg: r): the node does not count. */
bool tlk_request_node_in_group(const struct tlk_node *node, const void *r);
void tlk_request_free(struct tlk_table *t, struct tlk_request *r);

#endif
