/*
 * tlk_mem.c - the table's allocator and its memory budget.
 *
 * Every byte the table holds goes through here, so `used` is exact and the
 * limit is checked before the allocator is asked.
 */
#include <stdlib.h>

#include "tlk_int.h"

void *tlk_mem_alloc(struct tlk_mem *m, size_t size)
{
	void *p;

	if (m->limit && (size > m->limit || m->used > m->limit - size))
		return NULL;
	p = m->ops.alloc(m->ops.ctx, size);
	if (p)
		m->used += size;
	return p;
}

void tlk_mem_free(struct tlk_mem *m, void *ptr, size_t size)
{
	if (!ptr)
		return;
	m->used -= size;
	m->ops.free(m->ops.ctx, ptr, size);
}
