/* tdl_layout.c - striping math: logical offsets <-> (slot, object offset). */
#include "tdl.h"

void tdl_layout_map(const struct tdl_layout *layout, uint64_t offset,
		    uint32_t *slot, uint64_t *object_offset)
{
	uint64_t strip = offset / layout->strip_size;

	*slot = (uint32_t)(strip % layout->count);
	*object_offset = (strip / layout->count) * layout->strip_size +
			 offset % layout->strip_size;
}

uint64_t tdl_layout_unmap(const struct tdl_layout *layout, uint32_t slot,
			  uint64_t object_offset)
{
	uint64_t row = object_offset / layout->strip_size;

	return (row * layout->count + slot) * layout->strip_size +
	       object_offset % layout->strip_size;
}

uint64_t tdl_layout_run(const struct tdl_layout *layout, uint64_t offset,
			uint64_t length)
{
	uint64_t left = layout->strip_size - offset % layout->strip_size;

	return left < length ? left : length;
}

uint64_t tdl_layout_object_size(const struct tdl_layout *layout, uint32_t slot,
				uint64_t logical_size)
{
	uint64_t row_bytes = layout->strip_size * layout->count;
	uint64_t rows = logical_size / row_bytes;
	uint64_t rest = logical_size % row_bytes;
	uint64_t start = (uint64_t)slot * layout->strip_size;
	uint64_t tail = 0;

	if (rest > start)
		tail = rest - start < layout->strip_size ? rest - start
							 : layout->strip_size;
	return rows * layout->strip_size + tail;
}

uint64_t tdl_layout_logical_size(const struct tdl_layout *layout, uint32_t slot,
				 uint64_t object_size)
{
	if (object_size == 0)
		return 0;
	return tdl_layout_unmap(layout, slot, object_size - 1) + 1;
}
