/*
 * tp_objfmt.h - the object and checksum format: what the storage daemon
 * (server/ios_store.c, which writes and reads it) and a client's local
 * reads (client/local.c, which reads it through descriptors the daemon
 * hands over) must agree on, byte for byte. Change it here or nowhere.
 *
 * An object is a plain (sparse) file of its bytes. Beside it, its checksum
 * file holds one CRC32C (tp_crc.h) per TP_OBJ_BLOCK bytes of the object:
 * block k's sum is TP_OBJ_SUM_SIZE bytes, little-endian, at offset
 * tp_obj_sums_offset(k). Each sum covers the whole block, the bytes past
 * the object's end counting as zeros (so growing an object leaves its
 * last block's sum right). A stored sum of 0 also means "none written":
 * a block never written (a hole) has none, and passes only if its bytes
 * are all zeros. A checksum file shorter than the object reads as zeros.
 *
 * Pure: no I/O.
 */
#ifndef TESSERA_TP_OBJFMT_H
#define TESSERA_TP_OBJFMT_H

#include <stddef.h>
#include <stdint.h>

#define TP_OBJ_BLOCK 4096u  /* bytes of object per checksum */
#define TP_OBJ_SUM_SIZE 4u  /* bytes per stored checksum (a CRC32C) */

/* Where block `block`'s checksum is in the checksum file. */
static inline uint64_t tp_obj_sums_offset(uint64_t block)
{
	return block * TP_OBJ_SUM_SIZE;
}

/* n checksums to their stored bytes raw[0..n * TP_OBJ_SUM_SIZE), and
 * back. raw and sums may be the same memory (converted in place). */
void tp_obj_sums_encode(uint8_t *raw, const uint32_t *sums, size_t n);
void tp_obj_sums_decode(uint32_t *sums, const uint8_t *raw, size_t n);

/* The checksum of a block whose first `have` bytes are bytes[0..have)
 * (have <= TP_OBJ_BLOCK; the rest are zeros). bytes needs no alignment. */
uint32_t tp_obj_block_sum(const uint8_t *bytes, size_t have);

/* Blocks buf[0..n * TP_OBJ_BLOCK), of which only the first `have` bytes
 * are the object's and are read (zeros after them count; buf need hold
 * only those), against their stored checksums stored[0..n). Returns the
 * index of the first block that fails (its computed sum in *got when got
 * is not NULL), or n when all pass. */
size_t tp_obj_blocks_check(const uint32_t *stored, const uint8_t *buf, size_t n, size_t have,
			   uint32_t *got);

#endif /* TESSERA_TP_OBJFMT_H */
