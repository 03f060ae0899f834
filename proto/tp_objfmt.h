/*
 * tp_objfmt.h - the object and checksum format: what the storage daemon
 * (server/ios_store.c, which writes and reads it) and a client's local
 * reads (client/local.c, which reads it through descriptors the daemon
 * hands over) must agree on, byte for byte. Change it here or nowhere.
 *
 * An object is a plain (sparse) file of its bytes. Beside it, its checksum
 * file holds one CRC32C (tp_crc.h) per `block` bytes of the object (the
 * store's checksum block, fixed when the store is made: the config's
 * csum_block, TP_OBJ_BLOCK by default, a power of two from
 * TP_OBJ_BLOCK_MIN to TP_OBJ_BLOCK_MAX; the storage daemon tells local
 * readers in LocalOpenReply.csum_block):
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

#define TP_OBJ_BLOCK 4096u  /* the default bytes of object per checksum */
#define TP_OBJ_BLOCK_MIN 512u
#define TP_OBJ_BLOCK_MAX (1u << 20)
#define TP_OBJ_SUM_SIZE 4u  /* bytes per stored checksum (a CRC32C) */

/* 1 if `block` may be a store's checksum block: a power of two from
 * TP_OBJ_BLOCK_MIN to TP_OBJ_BLOCK_MAX. Every function below takes a
 * valid one. */
static inline int tp_obj_block_valid(uint64_t block)
{
	return block >= TP_OBJ_BLOCK_MIN && block <= TP_OBJ_BLOCK_MAX && !(block & (block - 1));
}

/* Where block `block`'s checksum is in the checksum file. */
static inline uint64_t tp_obj_sums_offset(uint64_t block)
{
	return block * TP_OBJ_SUM_SIZE;
}

/* n checksums to their stored bytes raw[0..n * TP_OBJ_SUM_SIZE), and
 * back. raw and sums may be the same memory (converted in place). */
void tp_obj_sums_encode(uint8_t *raw, const uint32_t *sums, size_t n);
void tp_obj_sums_decode(uint32_t *sums, const uint8_t *raw, size_t n);

/* The checksum of a `block`-byte block whose first `have` bytes are
 * bytes[0..have) (have <= block; the rest are zeros, never read: bytes
 * need hold only `have`). bytes needs no alignment. */
uint32_t tp_obj_block_sum(const uint8_t *bytes, size_t have, size_t block);

/* Blocks buf[0..n * block), of which only the first `have` bytes
 * are the object's and are read (zeros after them count; buf need hold
 * only those), against their stored checksums stored[0..n). Returns the
 * index of the first block that fails (its computed sum in *got when got
 * is not NULL), or n when all pass. */
size_t tp_obj_blocks_check(const uint32_t *stored, const uint8_t *buf, size_t n, size_t have,
			   size_t block, uint32_t *got);

#endif /* TESSERA_TP_OBJFMT_H */
