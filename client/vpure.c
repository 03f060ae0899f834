/* vpure.c - see vpure.h. */
#include "vpure.h"

void tc_vids_set(struct tc_vids *v, uint32_t id)
{
	v->id = id;
	v->next_io = 1;
}

uint64_t tc_vids_next(struct tc_vids *v, uint32_t *spent)
{
	uint64_t t;

	*spent = 0;
	if (!v->id || !v->next_io) {
		*spent = v->id;
		v->id = 0;
		v->next_io = 0;
		return 0;
	}
	t = (uint64_t)v->id << 32 | v->next_io;
	v->next_io++;   /* wraps to 0 after 2^32 - 1: the next call asks anew */
	return t;
}

static int names_any(const Tessera__VersionCommit *c, const uint64_t *handles, size_t nh)
{
	for (size_t i = 0; i < c->n_handles; i++)
		for (size_t j = 0; j < nh; j++)
			if (c->handles[i] == handles[j])
				return 1;
	return 0;
}

size_t tc_vmap_pick(Tessera__VersionCommit *const *vmap, size_t n, const uint64_t *handles,
		    size_t nh, Tessera__VersionCommit **out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (vmap[i] && names_any(vmap[i], handles, nh))
			out[k++] = vmap[i];
	return k;
}
