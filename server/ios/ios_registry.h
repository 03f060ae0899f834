/*
 * ios_registry.h - the objects a storage daemon's store holds, kept
 * durably (internal to the object store, ios_store.c).
 *
 * A log file of 16-byte records: handle (8 bytes, little-endian), kind
 * (4 bytes: 1 made, 2 removed) and the CRC32C of those 12 bytes. The live
 * set is kept in memory as a sorted array. Records are appended when an
 * object is made or removed, and reach the disk when the store syncs an
 * object (ios_registry_sync), so a synced object is always recorded. A
 * torn or damaged last record (a crash while appending) is dropped; a
 * damaged record before it refuses the file. When removed records
 * outnumber live ones the log is rewritten aside and renamed over.
 * Every disk call goes through the store's struct ios_disk.
 */
#ifndef TESSERA_IOS_REGISTRY_H
#define TESSERA_IOS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

struct ios_disk;
struct ios_registry;

/* Load the registry at `path`, or make an empty one with `create` (else
 * -ENOENT). err gets the reason of a failure. */
int ios_registry_open(struct ios_disk *d, const char *path, int create,
		      struct ios_registry **out, char *err, size_t errlen);
void ios_registry_close(struct ios_registry *r);
int ios_registry_holds(const struct ios_registry *r, uint64_t handle);
/* Record a made or a removed object (appended, not synced); recording one
 * already in that state does nothing. */
int ios_registry_add(struct ios_registry *r, uint64_t handle);
int ios_registry_drop(struct ios_registry *r, uint64_t handle);
/* fdatasync what was appended since the last sync (nothing if none). */
int ios_registry_sync(struct ios_registry *r);
/* Up to `max` live handles above `after`, ascending: how many. */
size_t ios_registry_list(const struct ios_registry *r, uint64_t after, uint64_t *out,
			 size_t max);
size_t ios_registry_count(const struct ios_registry *r);

/* Little-endian words, as the store's files keep them. */
static inline uint64_t ios_le_get(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void ios_le_put(uint8_t *p, int bytes, uint64_t v)
{
	for (int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

#endif /* TESSERA_IOS_REGISTRY_H */
