/*
 * mpi_exchange.c - the driver's memory lists, two-phase exchange counters
 * and one-sync mode through MPI-IO.
 *
 *   mpi_exchange DIR             the tests below, on files under DIR
 *   mpi_exchange sync DIR MODE   one write and one MPI_File_sync with the
 *                                hint tessera_sync=MODE (every | one); the
 *                                calling script counts the daemons' syncs
 *
 * DIR is a Tessera directory ("tessera:/d"). Run with 2-4 ranks.
 *
 *   mem_list_*     list I/O of a noncontiguous memory type into an
 *                  interleaved file view with tessera_mem_pack=false sends
 *                  the memory as iovec lists (mem_list_calls > 0)
 *                  and moves exactly the bytes the packed path moves: the
 *                  same file, the same bytes read back, the memory's gaps
 *                  untouched. Memory blocks larger and smaller than the
 *                  file's, and more than one list call's worth (65,536
 *                  entries) on either side, so calls are cut inside a
 *                  memory block and inside a file region.
 *   bad_values     tessera_mem_pack and tessera_sync refuse a value they
 *                  do not know, naming the hint
 *   exchange_*     the counters coll_bytes_sent / _received (the close's
 *                  line in $TESSERA_ROMIO_TRACE) equal the bytes that must
 *                  cross ranks: 1-D cyclic
 *                  regions over cb_nodes aggregators with file domains of
 *                  whole strips, so each aggregator's domain holds an equal
 *                  share of every rank's bytes; 0 when ROMIO takes its
 *                  independent path (automatic and not interleaved)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define SENTINEL 0xA5
#define STRIP 65536

static const char *dir;

static void name(char *buf, size_t len, const char *file)
{
	snprintf(buf, len, "%s/%s", dir, file);
}

/* The counter `key` of this rank's last close of the file named `file`
 * (its last component) in the driver's trace ($TESSERA_ROMIO_TRACE, a line
 * per close); ~0 when there is none. The trace is where both MPIs show the
 * counters: Open MPI answers MPI_File_get_info from its own copy of the
 * hints (ad_tessera_hints.c). */
static unsigned long long traced(const char *file, const char *key)
{
	const char *path = getenv("TESSERA_ROMIO_TRACE");
	char line[4096], head[64], tail[600], k[80];
	unsigned long long v = ~0ull;
	FILE *f;

	if (!path || !(f = fopen(path, "r")))
		return ~0ull;
	snprintf(head, sizeof(head), "ad_tessera close rank=%d file=", mc_rank);
	snprintf(tail, sizeof(tail), "/%s ", file);
	snprintf(k, sizeof(k), " %s=", key);
	while (fgets(line, sizeof(line), f)) {
		char *at;

		if (strncmp(line, head, strlen(head)) || !strstr(line, tail) ||
		    !(at = strstr(line, k)))
			continue;
		v = strtoull(at + strlen(k), NULL, 10);
	}
	fclose(f);
	return v;
}

/* The last component of a name. */
static const char *base(const char *f)
{
	const char *s = strrchr(f, '/');

	return s ? s + 1 : f;
}

/* One layout: `regions` memory blocks of mem_block bytes, gap bytes apart;
 * the file view regions of file_block bytes, interleaved by rank. */
struct layout {
	int regions, mem_block, gap, file_block;
};

static size_t mem_span(const struct layout *l)
{
	return (size_t)l->regions * (size_t)(l->mem_block + l->gap);
}

static size_t data_bytes(const struct layout *l)
{
	return (size_t)l->regions * (size_t)l->mem_block;
}

static int open_list(const char *f, const char *pack, int amode, MPI_File *fh)
{
	MPI_Info info;
	int rc;

	MPI_Info_create(&info);
	MPI_Info_set(info, "tessera_io_read", "list");
	MPI_Info_set(info, "tessera_io_write", "list");
	MPI_Info_set(info, "tessera_mem_pack", (char *)pack);
	rc = MPI_File_open(MPI_COMM_WORLD, f, amode, info, fh);
	MPI_Info_free(&info);
	return rc;
}

static void set_types(const struct layout *l, MPI_Datatype *mem, MPI_Datatype *file)
{
	MPI_Datatype t;

	MPI_Type_vector(l->regions, l->mem_block, l->mem_block + l->gap, MPI_BYTE, mem);
	MPI_Type_commit(mem);
	MPI_Type_contiguous(l->file_block, MPI_BYTE, &t);
	MPI_Type_create_resized(t, 0, (MPI_Aint)l->file_block * mc_size, file);
	MPI_Type_free(&t);
	MPI_Type_commit(file);
}

enum xfer { XFER_WRITE, XFER_READ };

/* Write buf through the view with the given packing, or read into it
 * (the file must exist; buf is set to SENTINEL first); *lists is the
 * driver's count of memory-list calls; 0 or an MPI error. */
static int transfer(enum xfer dir, const char *f, const char *pack, const struct layout *l,
		    char *buf, unsigned long long *lists)
{
	MPI_Datatype mem, file;
	MPI_Status st;
	MPI_File fh;
	int rc, count = -1;

	if (dir == XFER_WRITE) {
		MPI_File_delete(f, MPI_INFO_NULL);
		MPI_Barrier(MPI_COMM_WORLD);
	} else {
		memset(buf, SENTINEL, mem_span(l));
	}
	rc = open_list(f, pack, dir == XFER_WRITE ? MPI_MODE_CREATE | MPI_MODE_RDWR : MPI_MODE_RDONLY,
		       &fh);
	if (rc != MPI_SUCCESS)
		return rc;
	set_types(l, &mem, &file);
	MPI_File_set_view(fh, (MPI_Offset)mc_rank * l->file_block, MPI_BYTE, file, "native",
			  MPI_INFO_NULL);
	rc = dir == XFER_WRITE ? MPI_File_write_at(fh, 0, buf, 1, mem, &st)
			       : MPI_File_read_at(fh, 0, buf, 1, mem, &st);
	if (rc == MPI_SUCCESS) {
		MPI_Get_count(&st, MPI_BYTE, &count);
		if ((size_t)count != data_bytes(l)) {
			mc_fail("%s (mem_pack %s): %s %d bytes, not %zu", f, pack,
				dir == XFER_WRITE ? "wrote" : "read", count, data_bytes(l));
			rc = MPI_ERR_OTHER;
		}
	}
	MPI_File_close(&fh);
	*lists = traced(base(f), "mem_list_calls");
	MPI_Type_free(&mem);
	MPI_Type_free(&file);
	return rc;
}

/* The whole file, read contiguously (rank 0's view of it). */
static char *whole_file(const char *f, MPI_Offset *size)
{
	MPI_File fh;
	char *b;

	if (MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
		return NULL;
	MPI_File_get_size(fh, size);
	b = malloc((size_t)*size + 1);
	if (b && MPI_File_read_at(fh, 0, b, (int)*size, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
		free(b);
		b = NULL;
	}
	MPI_File_close(&fh);
	return b;
}

/* Both files the same, of exactly the ranks' bytes (rank 0 compares;
 * every rank learns the verdict, so none goes on alone). */
static int same_files(const char *a, const char *b, const struct layout *l)
{
	MPI_Offset sa = -1, sb = -1, want = (MPI_Offset)data_bytes(l) * mc_size;
	char *fa = NULL, *fb = NULL;
	int ok = 1;

	if (mc_rank == 0) {
		fa = whole_file(a, &sa);
		fb = whole_file(b, &sb);
		ok = fa && fb && sa == want && sb == want && !memcmp(fa, fb, (size_t)sa);
		if (!ok) {
			MPI_Offset at = 0;

			while (fa && fb && at < sa && at < sb && fa[at] == fb[at])
				at++;
			mc_fail("files differ from byte %lld: %s %lld bytes, %s %lld bytes, "
				"expected %lld", (long long)at, a, (long long)sa, b, (long long)sb,
				(long long)want);
		}
		free(fa);
		free(fb);
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return ok;
}

/* What a read of the view must leave in memory: the data bytes of the
 * write, the gaps still SENTINEL. */
static int memory_as_written(const struct layout *l, const char *w, const char *r)
{
	size_t stride = (size_t)(l->mem_block + l->gap);

	for (size_t i = 0; i < mem_span(l); i++) {
		int in_block = i % stride < (size_t)l->mem_block;
		char want = in_block ? w[i] : (char)SENTINEL;

		if (r[i] != want) {
			mc_fail("memory byte %zu (%s) is %d, not %d", i, in_block ? "data" : "gap",
				r[i], want);
			return 0;
		}
	}
	return 1;
}

static void mem_list_layout(const char *tag, const struct layout *l)
{
	char fl[512], fp[512];
	char *w = malloc(mem_span(l)), *r1 = malloc(mem_span(l)), *r2 = malloc(mem_span(l));
	unsigned long long lists_l = 0, lists_p = 0, rl_l = 0, rl_p = 0;

	CHECK(w && r1 && r2, "out of memory");
	for (size_t i = 0; i < mem_span(l); i++)
		w[i] = (char)(i * 13 + (size_t)mc_rank * 101 + i / 251);
	snprintf(fl, sizeof(fl), "%s/memlist-%s", dir, tag);
	snprintf(fp, sizeof(fp), "%s/packed-%s", dir, tag);
	CHECK_MPI(transfer(XFER_WRITE, fl, "false", l, w, &lists_l));
	CHECK_MPI(transfer(XFER_WRITE, fp, "true", l, w, &lists_p));
	CHECK(lists_l > 0 && lists_p == 0,
	      "tessera_mem_list_calls: %llu with mem_pack false, %llu with true", lists_l, lists_p);
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK(same_files(fl, fp, l), "the memory-list write and the packed write differ");
	CHECK_MPI(transfer(XFER_READ, fl, "false", l, r1, &rl_l));
	CHECK_MPI(transfer(XFER_READ, fl, "true", l, r2, &rl_p));
	CHECK(rl_l > 0 && rl_p == 0, "reads: tessera_mem_list_calls %llu and %llu", rl_l, rl_p);
	CHECK(!memcmp(r1, r2, mem_span(l)), "memory-list and packed reads differ");
	CHECK(memory_as_written(l, w, r1), "read back other bytes than written");
	free(w);
	free(r1);
	free(r2);
}

/* Memory blocks larger than file regions (memory pieces are cut); more
 * file regions than one call takes. */
static void test_mem_list_wide_memory(void)
{
	struct layout l = { 50000, 12, 8, 8 };

	mem_list_layout("wide", &l);
}

/* Memory blocks smaller than file regions (the last file region of a
 * call is cut); more memory pieces than one call takes. */
static void test_mem_list_narrow_memory(void)
{
	struct layout l = { 70000, 8, 5, 16 };

	mem_list_layout("narrow", &l);
}

/* HPIO's order: a memory-list write through a noncontiguous memory type,
 * the type freed, then a new view whose filetype (ROMIO's copy) may get
 * the freed type's handle. Open MPI's ROMIO keys flattened types by
 * handle; an entry the driver left behind made set_view find the old
 * memory regions for the new filetype (wrong file regions). */
static void test_mem_list_then_new_view(void)
{
	int n = 512, size = 8, gap = 128;
	size_t span = (size_t)n * (size + gap), data = (size_t)n * size;
	char *w = malloc(span), *r = malloc(data), f[512];
	MPI_Datatype mem, t, file;
	MPI_File fh;

	CHECK(w && r, "out of memory");
	for (size_t i = 0; i < span; i++)
		w[i] = (char)(i + (size_t)mc_rank * 3);
	name(f, sizeof(f), "reuse");
	MPI_File_delete(f, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_MPI(open_list(f, "false", MPI_MODE_CREATE | MPI_MODE_RDWR, &fh));
	for (int round = 0; round < 3; round++) {
		/* nc memory, contiguous file block per rank */
		MPI_Type_vector(n, size, size + gap, MPI_BYTE, &mem);
		MPI_Type_commit(&mem);
		CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)mc_rank * (MPI_Offset)data, MPI_BYTE,
					    MPI_BYTE, "native", MPI_INFO_NULL));
		CHECK_MPI(MPI_File_write_at(fh, 0, w, 1, mem, MPI_STATUS_IGNORE));
		MPI_Type_free(&mem);
		/* contiguous memory, interleaved file */
		MPI_Type_contiguous(size, MPI_BYTE, &t);
		MPI_Type_create_resized(t, 0, (MPI_Aint)size * mc_size, &file);
		MPI_Type_free(&t);
		MPI_Type_commit(&file);
		CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)mc_rank * size, MPI_BYTE, file, "native",
					    MPI_INFO_NULL));
		CHECK_MPI(MPI_File_write_at_all(fh, 0, w, (int)data, MPI_BYTE, MPI_STATUS_IGNORE));
		memset(r, 0, data);
		CHECK_MPI(MPI_File_read_at_all(fh, 0, r, (int)data, MPI_BYTE, MPI_STATUS_IGNORE));
		MPI_Type_free(&file);
		CHECK(!memcmp(r, w, data), "round %d: the interleaved view read back other bytes",
		      round);
	}
	CHECK_MPI(MPI_File_close(&fh));
	free(w);
	free(r);
}

/* The refusal names the hint. */
static void expect_refused(const char *key, const char *value)
{
	char f[512], msg[MPI_MAX_ERROR_STRING];
	MPI_File fh;
	MPI_Info info;
	int rc, len = 0;

	name(f, sizeof(f), "refused");
	MPI_Info_create(&info);
	MPI_Info_set(info, (char *)key, (char *)value);
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
	MPI_Info_free(&info);
	if (rc == MPI_SUCCESS) {
		MPI_File_close(&fh);
		mc_fail("open with %s=%s succeeded", key, value);
		return;
	}
	MPI_Error_string(rc, msg, &len);
	if (!strstr(msg, key))
		mc_fail("open with %s=%s: the error '%s' does not name the hint", key, value, msg);
}

static void test_bad_values(void)
{
	expect_refused("tessera_mem_pack", "maybe");
	expect_refused("tessera_mem_pack", "packed");
	expect_refused("tessera_sync", "all");
	expect_refused("tessera_sync", "0");
}

/* 1-D cyclic: each rank `n` regions of `size` bytes, rank-interleaved. */
static int open_coll(const char *f, const char *cb, int nodes, MPI_File *fh)
{
	char v[16];
	MPI_Info info;
	int rc;

	MPI_Info_create(&info);
	MPI_Info_set(info, "romio_cb_write", (char *)cb);
	MPI_Info_set(info, "romio_cb_read", (char *)cb);
	snprintf(v, sizeof(v), "%d", nodes);
	MPI_Info_set(info, "cb_nodes", v);
	MPI_Info_set(info, "cb_config_list", "*:*"); /* aggregators beyond one per host */
	snprintf(v, sizeof(v), "%d", STRIP);
	MPI_Info_set(info, "striping_unit", v);
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, info, fh);
	MPI_Info_free(&info);
	return rc;
}

/* Writes then reads the cyclic pattern collectively with `nodes`
 * aggregators; the counters after each. */
static int cyclic_exchange(const char *f, int nodes, unsigned long long *sent,
			   unsigned long long *received, int *aggs)
{
	/* Each aggregator's domain: nprocs strips (the extent is nodes x
	 * that), every rank one strip's worth of bytes in each. */
	int size = 8, n = STRIP / size * nodes;
	MPI_Datatype t, file;
	MPI_File fh;
	char *buf = malloc((size_t)n * size), v[64];
	int rc;

	if (!buf)
		return MPI_ERR_NO_MEM;
	memset(buf, mc_rank + 1, (size_t)n * size);
	MPI_File_delete(f, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = open_coll(f, "enable", nodes, &fh);
	if (rc != MPI_SUCCESS) {
		free(buf);
		return rc;
	}
	MPI_Type_contiguous(size, MPI_BYTE, &t);
	MPI_Type_create_resized(t, 0, (MPI_Aint)size * mc_size, &file);
	MPI_Type_free(&t);
	MPI_Type_commit(&file);
	MPI_File_set_view(fh, (MPI_Offset)mc_rank * size, MPI_BYTE, file, "native", MPI_INFO_NULL);
	rc = MPI_File_write_at_all(fh, 0, buf, n * size, MPI_BYTE, MPI_STATUS_IGNORE);
	if (rc == MPI_SUCCESS)
		rc = MPI_File_read_at_all(fh, 0, buf, n * size, MPI_BYTE, MPI_STATUS_IGNORE);
	{
		MPI_Info used;
		int flag = 0;

		MPI_File_get_info(fh, &used);
		MPI_Info_get(used, "cb_nodes", sizeof(v) - 1, v, &flag);
		*aggs = flag ? atoi(v) : -1;
		MPI_Info_free(&used);
	}
	for (int i = 0; rc == MPI_SUCCESS && i < n * size; i++)
		if (buf[i] != (char)(mc_rank + 1))
			rc = MPI_ERR_OTHER;
	MPI_File_close(&fh);
	*sent = traced(base(f), "coll_bytes_sent");
	*received = traced(base(f), "coll_bytes_received");
	MPI_Type_free(&file);
	free(buf);
	return rc;
}

/* One aggregator per rank: of each rank's bytes, the share in the other
 * ranks' domains, (nprocs - 1) strips, crosses ranks each way. */
static void test_exchange_every_rank_aggregates(void)
{
	unsigned long long sent = 0, received = 0, want = (unsigned long long)(mc_size - 1) * STRIP;
	char f[512];
	int aggs = 0;

	name(f, sizeof(f), "cyclic-all");
	CHECK_MPI(cyclic_exchange(f, mc_size, &sent, &received, &aggs));
	CHECK(aggs == mc_size, "cb_nodes is %d, not %d", aggs, mc_size);
	CHECK(sent == want, "tessera_coll_bytes_sent %llu, expected %llu", sent, want);
	CHECK(received == want, "tessera_coll_bytes_received %llu, expected %llu", received, want);
}

/* One aggregator: it moves none of its own bytes between ranks; every
 * other rank sends (and receives) all of its bytes. */
static void test_exchange_one_aggregator(void)
{
	unsigned long long sent = 0, received = 0, mine = STRIP, total = 0, zeros = 0;
	char f[512];
	int aggs = 0;

	name(f, sizeof(f), "cyclic-one");
	CHECK_MPI(cyclic_exchange(f, 1, &sent, &received, &aggs));
	CHECK(aggs == 1, "cb_nodes is %d, not 1", aggs);
	CHECK(sent == received, "sent %llu, received %llu", sent, received);
	CHECK(sent == 0 || sent == mine, "tessera_coll_bytes_sent %llu: neither 0 nor %llu", sent,
	      mine);
	MPI_Allreduce(&sent, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	zeros = sent == 0;
	MPI_Allreduce(MPI_IN_PLACE, &zeros, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	CHECK(total == (unsigned long long)(mc_size - 1) * mine && zeros == 1,
	      "over the ranks: %llu bytes sent (expected %llu), %llu ranks sent none (expected 1)",
	      total, (unsigned long long)(mc_size - 1) * mine, zeros);
}

/* Each rank its own block, cb automatic: ROMIO goes independent, nothing
 * crosses ranks. */
static void test_exchange_none_when_independent(void)
{
	char f[512], *buf = malloc(STRIP);
	MPI_File fh;

	CHECK(buf, "out of memory");
	memset(buf, 7, STRIP);
	name(f, sizeof(f), "blocks");
	CHECK_MPI(open_coll(f, "automatic", mc_size, &fh));
	CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)mc_rank * STRIP, buf, STRIP, MPI_BYTE,
					MPI_STATUS_IGNORE));
	CHECK_MPI(MPI_File_close(&fh));
	free(buf);
	CHECK(traced("blocks", "coll_bytes_sent") == 0, "sent %llu bytes, not 0",
	      traced("blocks", "coll_bytes_sent"));
}

/* mpi_exchange sync DIR MODE: 1 MiB per rank, one MPI_File_sync. */
static int sync_once(const char *mode)
{
	size_t len = 1 << 20;
	char f[512], *buf = malloc(len), v[MPI_MAX_INFO_VAL + 1];
	MPI_Info info, used;
	MPI_File fh;
	int rc, flag = 0;

	if (!buf)
		return 1;
	memset(buf, mc_rank, len);
	name(f, sizeof(f), "synced");
	MPI_Info_create(&info);
	MPI_Info_set(info, "tessera_sync", (char *)mode);
	rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
	MPI_Info_free(&info);
	if (rc == MPI_SUCCESS) {
		MPI_File_get_info(fh, &used);
		MPI_Info_get(used, "tessera_sync", MPI_MAX_INFO_VAL, v, &flag);
		MPI_Info_free(&used);
		if (!flag || strcmp(v, mode)) {
			fprintf(stderr, "rank %d: tessera_sync reads '%s', not %s\n", mc_rank,
				flag ? v : "(absent)", mode);
			rc = MPI_ERR_OTHER;
		}
		if (rc == MPI_SUCCESS)
			rc = MPI_File_write_at_all(fh, (MPI_Offset)mc_rank * (MPI_Offset)len, buf,
						   (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS)
			rc = MPI_File_sync(fh);
		MPI_File_close(&fh);
	}
	free(buf);
	MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS && mc_rank == 0)
		fprintf(stderr, "mpi_exchange sync %s: failed\n", mode);
	return rc != MPI_SUCCESS;
}

int main(int argc, char **argv)
{
	int rc;

	MPI_Init(&argc, &argv);
	mc_init();
	if (argc == 4 && !strcmp(argv[1], "sync")) {
		dir = argv[2];
		rc = sync_once(argv[3]);
		MPI_Finalize();
		return rc;
	}
	if (argc != 2) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpi_exchange DIR | mpi_exchange sync DIR every|one\n");
		MPI_Finalize();
		return 2;
	}
	dir = argv[1];
	mc_test("mem_list_wide_memory", test_mem_list_wide_memory);
	mc_test("mem_list_narrow_memory", test_mem_list_narrow_memory);
	mc_test("mem_list_then_new_view", test_mem_list_then_new_view);
	mc_test("bad_values", test_bad_values);
	mc_test("exchange_every_rank_aggregates", test_exchange_every_rank_aggregates);
	mc_test("exchange_one_aggregator", test_exchange_one_aggregator);
	mc_test("exchange_none_when_independent", test_exchange_none_when_independent);
	rc = mc_finish();
	MPI_Finalize();
	return rc;
}
