/*
 * tlk_map.c - hash maps from 64-bit keys (lock ids, object handles, owners)
 * to records. Linear probing at load <= 1/2; removal shifts the following
 * run back (no tombstones), so lookups stay short and removal never
 * allocates.
 */
#include <errno.h>
#include <string.h>

#include "tlk_int.h"

/* splitmix64's finaliser: lock ids are sequential, handles may be too. */
static size_t hash(uint64_t key, size_t cap)
{
	key ^= key >> 30;
	key *= 0xbf58476d1ce4e5b9ULL;
	key ^= key >> 27;
	key *= 0x94d049bb133111ebULL;
	key ^= key >> 31;
	return (size_t)key & (cap - 1);
}

static void place(struct tlk_map_slot *slots, size_t cap, uint64_t key, void *value)
{
	size_t i = hash(key, cap);

	while (slots[i].value)
		i = (i + 1) & (cap - 1);
	slots[i].key = key;
	slots[i].value = value;
}

int tlk_map_reserve(struct tlk_mem *m, struct tlk_map *map, size_t count)
{
	struct tlk_map_slot *slots;
	size_t cap = map->cap ? map->cap : 8;

	while (count > cap / 2) {
		if (cap > SIZE_MAX / 2 / sizeof(*slots))
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == map->cap)
		return 0;
	slots = tlk_mem_alloc(m, cap * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0, cap * sizeof(*slots));
	for (size_t i = 0; i < map->cap; i++)
		if (map->slots[i].value)
			place(slots, cap, map->slots[i].key, map->slots[i].value);
	tlk_mem_free(m, map->slots, map->cap * sizeof(*slots));
	map->slots = slots;
	map->cap = cap;
	return 0;
}

void *tlk_map_get(const struct tlk_map *map, uint64_t key)
{
	if (!map->cap)
		return NULL;
	for (size_t i = hash(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
		if (!map->slots[i].value)
			return NULL;
		if (map->slots[i].key == key)
			return map->slots[i].value;
	}
}

void tlk_map_put(struct tlk_map *map, uint64_t key, void *value)
{
	place(map->slots, map->cap, key, value);
	map->count++;
}

void tlk_map_remove(struct tlk_map *map, uint64_t key)
{
	size_t mask = map->cap - 1, i = hash(key, map->cap);

	while (map->slots[i].key != key || !map->slots[i].value)
		i = (i + 1) & mask;
	/* Backward shift: move up every later entry of the run whose home
	 * slot does not lie cyclically in (i, j]. */
	for (size_t j = (i + 1) & mask; map->slots[j].value; j = (j + 1) & mask) {
		size_t home = hash(map->slots[j].key, map->cap);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			map->slots[i] = map->slots[j];
			i = j;
		}
	}
	map->slots[i].value = NULL;
	map->count--;
}

void tlk_map_free(struct tlk_mem *m, struct tlk_map *map)
{
	tlk_mem_free(m, map->slots, map->cap * sizeof(*map->slots));
	map->slots = NULL;
	map->cap = map->count = 0;
}
