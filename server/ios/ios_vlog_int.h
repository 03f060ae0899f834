/*
 * ios_vlog_int.h - what the two halves of a versioned object's log share:
 * ios_vlog.c (the format, records, open and recovery, writes, commits and
 * pins) and ios_vlog_read.c (reads at a version and merges). Not a public
 * header: the log's users see ios_vlog.h only.
 */
#ifndef TESSERA_IOS_VLOG_INT_H
#define TESSERA_IOS_VLOG_INT_H

#include <stdint.h>

#include "ios_vlog.h"

enum vkind { VK_BASE = 1, VK_WRITE, VK_TRUNC, VK_COMMIT, VK_ABORT, VK_MERGING, VK_MERGED };
#define VLOG_MAGIC 0x524c5654u /* "TVLR" */
#define VLOG_FORMAT 2u         /* BASE's t: 1 (written as 0) had no parts */
#define CHUNK (1u << 20)       /* merge and recovery move data in pieces this big */

struct vhdr {
	uint32_t magic, kind;
	uint64_t total;    /* bytes of the record, header included (to the next) */
	uint64_t t, vm;
	uint64_t count;    /* pieces */
	uint64_t data_len;
	uint64_t arg;      /* BASE, MERGED: base size; TRUNC: the size */
	uint32_t crc;      /* crc over the record with crc 0 */
	uint32_t part;     /* WRITE: which record of T (format 1: always 0) */
};
_Static_assert(sizeof(struct vhdr) == 64, "a log record header is 64 bytes");
#define HDR ((uint64_t)sizeof(struct vhdr))
#define PIECE ((uint64_t)sizeof(struct ios_piece))

struct vrec {
	uint64_t t, vm; /* vm 0: uncommitted */
	uint32_t part;  /* within T */
	uint32_t op;    /* VK_WRITE or VK_TRUNC */
	uint64_t bytes; /* the record's size in the log */
	uint64_t arg;   /* TRUNC: the size; WRITE: one past its last byte */
	uint64_t data_pos;
	uint32_t n;
	struct ios_piece *pieces;
};

struct vidx {
	uint64_t off, len, vm, data_pos;
	uint32_t part; /* the record's part within its T: later wins */
	uint32_t seq;  /* piece order within the record: later wins */
};

struct ios_vlog {
	struct ios_disk *disk;
	uint64_t handle;
	char *path;
	int fd;
	struct ios_vlog_base base;
	struct ios_vlog_limits lim;
	enum ios_vlog_durability dur;
	uint64_t end;       /* the log's size */
	uint64_t merged;    /* versions <= this are in the base object */
	uint64_t base_size; /* the base object's size as of `merged` */
	int broken;         /* a merge failed half-way: reopen to finish it */
	uint64_t cut;       /* bytes of a torn tail cut at open */
	struct vrec *recs;
	uint32_t nrec, caprec;
	uint64_t npieces; /* of the live records: bounds the index */
	struct vidx *idx;
	uint64_t *pmax;
	size_t nidx;
	uint64_t pins[IOS_VLOG_MAX_PINS];
	uint32_t npins;
	char why[256];
};

/* Sets log->why to "log PATH (object H): " + the message; returns rc. */
int vlog_fail(struct ios_vlog *log, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The log file's I/O, each failing through vlog_fail. */
int vlog_pread(struct ios_vlog *log, void *buf, uint64_t len, uint64_t off);
int vlog_sync(struct ios_vlog *log);
/* Appends a control record (COMMIT, ABORT, MERGING, MERGED) of T, vm, arg. */
int vlog_append_ctl(struct ios_vlog *log, enum vkind kind, uint64_t t, uint64_t vm, uint64_t arg);
/* Rebuilds idx[] and pmax[] from the committed live records. */
int vlog_rebuild_index(struct ios_vlog *log);
/* Replaces the log by a fresh BASE (written aside, renamed over). */
int vlog_reset(struct ios_vlog *log);
/* Forgets (in memory) the records merged up to `upto`; the base object
 * is now `size` bytes. */
int vlog_drop_merged(struct ios_vlog *log, uint64_t upto, uint64_t size);
/* 0 when the log takes requests, else the error a broken log answers. */
int vlog_usable(struct ios_vlog *log);
/* Merges every committed version <= m into the base object (ios_vlog_read.c). */
int vlog_do_merge(struct ios_vlog *log, uint64_t m);

#endif /* TESSERA_IOS_VLOG_INT_H */
