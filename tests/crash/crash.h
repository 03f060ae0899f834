/*
 * crash.h - what the crash test's load generator (crash_load.c) and its
 * checker (tests/integ/test_crash.c) agree on: the shape of the load and
 * the bytes written.
 */
#ifndef TESSERA_CRASH_H
#define TESSERA_CRASH_H

#include <stdint.h>

#define CRASH_STRIP 4096              /* strip size of every file */
#define CRASH_MAX_LEN (3 * CRASH_STRIP) /* longest region of one write */
#define CRASH_MAX_OFF (8 * CRASH_STRIP) /* writes start below this */
/* The farthest byte any write reaches: a datatype write's 4 blocks. */
#define CRASH_MAX_SIZE (CRASH_MAX_OFF + 8 * CRASH_MAX_LEN)

/* Byte i of the stream of the write with this seed. */
static inline uint8_t crash_fill(uint64_t seed, uint64_t i)
{
	uint64_t x = seed ^ (i * UINT64_C(0x9e3779b97f4a7c15));

	x ^= x >> 31;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 29;
	return (uint8_t)x;
}

#endif /* TESSERA_CRASH_H */
