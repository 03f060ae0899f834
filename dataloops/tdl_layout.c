/* tdl_layout.c - striping math: logical offsets <-> (slot, object offset). */
#include <errno.h>
#include <stdio.h>

#include "tdl.h"

int tdl_layout_check(const struct tdl_layout *layout, char *err, size_t errlen)
{
	const char *why = NULL;

	if (layout->strip_size == 0)
		why = "strip size 0";
	else if (layout->strip_size > TDL_MAX_STRIP_SIZE)
		why = "strip size above the limit of 4 GiB";
	else if (layout->count == 0)
		why = "stripe count 0";
	else if (layout->count > TDL_MAX_COUNT)
		why = "stripe count above the limit of 65536";
	if (!why)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "layout (strip size %llu, stripe count %u): %s",
			 (unsigned long long)layout->strip_size, layout->count, why);
	return -EINVAL;
}

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
	uint64_t row = object_offset / layout->strip_size, strip, start;

	/* (row * count + slot) * strip_size + the offset within the strip */
	if (__builtin_mul_overflow(row, (uint64_t)layout->count, &strip) ||
	    __builtin_add_overflow(strip, (uint64_t)slot, &strip) ||
	    __builtin_mul_overflow(strip, layout->strip_size, &start) ||
	    __builtin_add_overflow(start, object_offset % layout->strip_size, &start))
		return UINT64_MAX;
	return start;
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
	uint64_t row_bytes = layout->strip_size * layout->count; /* < 2^48 */
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
	uint64_t last;

	if (object_size == 0)
		return 0;
	last = tdl_layout_unmap(layout, slot, object_size - 1);
	return last == UINT64_MAX ? UINT64_MAX : last + 1;
}
