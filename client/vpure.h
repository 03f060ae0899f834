/*
 * vpure.h - the pure parts of versioned files' client side (vpure.c):
 * numbering temporary versions and choosing the commits an object's
 * request carries. No messages, no locks: the caller holds fs->lock
 * around tc_vids_*. Unit-tested (tests/unit/test_client_vers.c).
 */
#ifndef TESSERA_CLIENT_VPURE_H
#define TESSERA_CLIENT_VPURE_H

#include <stddef.h>
#include <stdint.h>

#include "tessera.pb-c.h"

/* A handle's writer identity at the version server: T = id << 32 | io,
 * io counting from 1 (T and its IO# 0 are never used). */
struct tc_vids {
	uint32_t id;               /* 0: none yet (or given up) */
	uint32_t next_io;          /* the next IO#; 0 once they ran out */
};

/* Use ID# `id` from now on, its IO#s from 1. */
void tc_vids_set(struct tc_vids *v, uint32_t id);
/* The next T, or 0 when a new ID# is needed first; then *spent is the
 * ID# whose IO#s ran out (0: there was none), and the ID is forgotten. */
uint64_t tc_vids_next(struct tc_vids *v, uint32_t *spent);

/* Of vmap[0..n), the entries naming any of handles[0..nh), in order, into
 * out (room for n): what a request to those objects carries (the rest
 * would only be refused or cost the daemon a check). Returns how many. */
size_t tc_vmap_pick(Tessera__VersionCommit *const *vmap, size_t n, const uint64_t *handles,
		    size_t nh, Tessera__VersionCommit **out);

#endif /* TESSERA_CLIENT_VPURE_H */
