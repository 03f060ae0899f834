/*
 * tp_crc.h - CRC32C (Castagnoli, the iSCSI and ext4 checksum), for the
 * storage daemon's block checksums, and for a client that reads an
 * object's file itself (local reads) and checks them.
 *
 * On x86-64 CPUs with SSE4.2 the crc32 instruction does the work, 8 bytes
 * at a time; elsewhere a 256-entry table does it a byte at a time. Which
 * one runs is decided per call from the CPU's feature bits (cached by the
 * compiler's runtime), so there is no state to set up. Pure: no I/O.
 */
#ifndef TESSERA_TP_CRC_H
#define TESSERA_TP_CRC_H

#include <stddef.h>
#include <stdint.h>

/* The CRC32C of buf[0..len) continued from `crc` (0 to start): chaining
 * tp_crc32c(tp_crc32c(0, a, n), b, m) equals the CRC of a then b. */
uint32_t tp_crc32c(uint32_t crc, const void *buf, size_t len);
/* The CRC32C of each of n consecutive blocks of `block` bytes (each from
 * 0) into out[0..n): with the instruction, three blocks are done at once,
 * about three times as fast as one call per block. */
void tp_crc32c_blocks(const void *buf, size_t n, size_t block, uint32_t *out);
/* The same, always by the table (to test one against the other). */
uint32_t tp_crc32c_table(uint32_t crc, const void *buf, size_t len);
/* 1 if tp_crc32c uses the CPU's instruction. */
int tp_crc32c_hardware(void);

#endif /* TESSERA_TP_CRC_H */
