/*
 * tp_size.h - byte sizes as people write them: "65536", "64K", "64KiB",
 * "1M", "4g". One parser for the command line (`tessera setstripe -s 1M`)
 * and the configuration file (`strip_size = 64K`), so both take the same
 * spellings. Pure: no I/O, no state.
 */
#ifndef TESSERA_TP_SIZE_H
#define TESSERA_TP_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* Decimal digits, then optionally one of K, M, G, T (any case: powers of
 * 1024), which may be followed by "B" or "iB" ("64K", "64KB", "64KiB" are
 * all 65536). Nothing else: no sign, no spaces, no fraction, no bare "B".
 * 0 and *out set; -EINVAL for another spelling, -ERANGE when the value
 * does not fit 64 bits. */
int tp_parse_size(const char *s, uint64_t *out);

/* v in the largest binary unit that divides it: 65536 -> "64 KiB",
 * 1048577 -> "1048577", 0 -> "0". For messages and documentation. */
void tp_format_size(uint64_t v, char *buf, size_t len);

#endif /* TESSERA_TP_SIZE_H */
