/*
 * rng.h - the tests' random numbers: xorshift64*, its state passed
 * explicitly so tests stay reentrant and reproducible from a seed.
 */
#ifndef TESSERA_TEST_RNG_H
#define TESSERA_TEST_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s; /* never 0 */
};

static inline uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ULL;
}

/* Uniform enough in [0, n); 0 when n is 0. */
static inline uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

#endif
