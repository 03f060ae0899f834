/*
 * tessera_stats.h - a storage daemon's counters and the access methods
 * they are kept by, defined once.
 *
 * Every list of them is generated from the X-macros below: the daemon's
 * counters (server/ios.h), the wire message (IosStatsReply in
 * tessera.proto: a .proto stays a file, so tests/unit/test_proto_stats.c checks
 * it against these lists field by field), the library's
 * struct tessera_ios_stats (tessera.h) and the CLI's `tessera stats`.
 * Plain C with no dependencies, so every part may include it: the library
 * through tessera.h, the daemons through tproto.h.
 */
#ifndef TESSERA_STATS_H
#define TESSERA_STATS_H

#include <stdint.h>

/* X(ID, name): the access methods, in wire order (a per-method counter
 * travels as a repeated field indexed by method). */
#define TESSERA_FOR_EACH_METHOD(X)                                          \
	X(CONTIG, "contig")    /* one object range (read, write) */          \
	X(LIST, "list")        /* a list of object pieces */                 \
	X(DTYPE, "datatype")   /* a file view the daemon unrolls */

/* X(field, wire field number, column, meaning): counters kept per method. */
#define TESSERA_FOR_EACH_METHOD_COUNTER(X)                                  \
	X(requests, 1, "requests", "read and write messages served")         \
	X(pieces, 2, "pieces", "object pieces applied")                      \
	X(bytes_read, 3, "bytes_read", "bytes read")                         \
	X(bytes_written, 4, "bytes_written", "bytes written")                \
	X(desc_bytes, 5, "desc_bytes", "list or dataloop bytes received")    \
	X(syscalls, 9, "disk_calls", "disk reads and writes issued")

/* X(field, wire field number, name, meaning): counters kept once. */
#define TESSERA_FOR_EACH_COUNTER(X)                                         \
	X(desc_cache_hits, 6, "description cache hits",                      \
	  "datatype messages whose file type the daemon held")               \
	X(desc_cache_misses, 7, "misses",                                    \
	  "datatype messages naming a file type it no longer held")          \
	X(syncs, 8, "syncs", "sync requests served")                         \
	X(desc_cache_bytes, 10, "description cache bytes",                   \
	  "memory the file types the daemon holds take now (a level, not a count)") \
	X(checksum_failures, 11, "checksum failures",                         \
	  "blocks read whose bytes did not match their checksum (damaged data)") \
	X(lost_objects, 12, "lost objects",                                   \
	  "accesses to objects the daemon should hold but whose file is gone")

enum tessera_method {
#define TESSERA_METHOD_ENUM_(id, name) TESSERA_METHOD_##id,
	TESSERA_FOR_EACH_METHOD(TESSERA_METHOD_ENUM_)
#undef TESSERA_METHOD_ENUM_
	TESSERA_METHODS
};

/* "contig", "list", "datatype"; "?" for no method. */
static inline const char *tessera_method_name(unsigned method)
{
	static const char *const names[] = {
#define TESSERA_METHOD_NAME_(id, name) name,
		TESSERA_FOR_EACH_METHOD(TESSERA_METHOD_NAME_)
#undef TESSERA_METHOD_NAME_
	};

	return method < TESSERA_METHODS ? names[method] : "?";
}

/* A storage daemon's counters since it started. */
struct tessera_ios_stats {
#define TESSERA_STATS_FIELD_M_(field, num, label, what) uint64_t field[TESSERA_METHODS];
	TESSERA_FOR_EACH_METHOD_COUNTER(TESSERA_STATS_FIELD_M_)
#undef TESSERA_STATS_FIELD_M_
#define TESSERA_STATS_FIELD_(field, num, label, what) uint64_t field;
	TESSERA_FOR_EACH_COUNTER(TESSERA_STATS_FIELD_)
#undef TESSERA_STATS_FIELD_
};

/* sum += s, counter by counter (totals over several daemons). */
static inline void tessera_ios_stats_add(struct tessera_ios_stats *sum,
					 const struct tessera_ios_stats *s)
{
	for (unsigned m = 0; m < TESSERA_METHODS; m++) {
#define TESSERA_STATS_ADD_M_(field, num, label, what) sum->field[m] += s->field[m];
		TESSERA_FOR_EACH_METHOD_COUNTER(TESSERA_STATS_ADD_M_)
#undef TESSERA_STATS_ADD_M_
	}
#define TESSERA_STATS_ADD_(field, num, label, what) sum->field += s->field;
	TESSERA_FOR_EACH_COUNTER(TESSERA_STATS_ADD_)
#undef TESSERA_STATS_ADD_
}

#endif /* TESSERA_STATS_H */
