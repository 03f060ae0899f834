/*
 * tdl.h - Tessera dataloops: pure access-pattern and striping math.
 *
 * No I/O, no network, no allocation unless a function says so. Shared by the
 * client library, the storage daemons and the ROMIO driver.
 */
#ifndef TESSERA_TDL_H
#define TESSERA_TDL_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ layout
 *
 * A file is cut into strips of strip_size bytes dealt round-robin over
 * `count` objects (slots). Logical strip s lives in slot s % count, at
 * object offset (s / count) * strip_size. Slot i is stored on the server
 * the file's layout names at position i.
 */
struct tdl_layout {
	uint64_t strip_size; /* bytes per strip, >= 1 */
	uint32_t count;      /* number of slots (objects), >= 1 */
};

/* Where logical byte `offset` lives. */
void tdl_layout_map(const struct tdl_layout *layout, uint64_t offset,
		    uint32_t *slot, uint64_t *object_offset);

/* The logical offset of byte `object_offset` of slot `slot`. */
uint64_t tdl_layout_unmap(const struct tdl_layout *layout, uint32_t slot,
			  uint64_t object_offset);

/* Bytes from `offset` to the end of its strip, capped at `length`. */
uint64_t tdl_layout_run(const struct tdl_layout *layout, uint64_t offset,
			uint64_t length);

/* Size slot `slot`'s object has when the file is `logical_size` long and
 * fully written (used by truncate). */
uint64_t tdl_layout_object_size(const struct tdl_layout *layout, uint32_t slot,
				uint64_t logical_size);

/* The logical file size implied by slot `slot` holding `object_size`
 * bytes: one past the logical offset of its last byte, 0 if empty. The
 * file size is the maximum of this over all slots. */
uint64_t tdl_layout_logical_size(const struct tdl_layout *layout, uint32_t slot,
				 uint64_t object_size);

#endif /* TESSERA_TDL_H */
