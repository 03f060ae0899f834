/*
 * test_noncontig.c - list I/O and datatype I/O on real daemons, checked
 * byte for byte against a local reference file, for the four access cases
 * (c-c, nc-c, c-nc, nc-nc), region sizes from 1 B to 1 MiB and strip sizes
 * that split regions; overlap refusal, bad arguments, malformed requests
 * sent raw to a daemon (error reply, no byte changed), and the daemons'
 * counters against the request counts the design promises.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"
#include "tdl.h"

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

/* ------------------------------------------------------------- helpers */

struct model {
	uint8_t *bytes;
	size_t size, cap;
};

static void model_write(struct model *m, uint64_t off, const uint8_t *src, uint64_t len)
{
	assert_true(off + len <= m->cap);
	memcpy(m->bytes + off, src, len);
	if (off + len > m->size)
		m->size = off + len;
}

/* The whole file equals the model. */
static void check_file(tessera_fs *fs, tessera_file *f, const struct model *m)
{
	struct tessera_stat st;
	uint8_t *buf = malloc(m->size + 1);

	CHECK(fs, tessera_fstat(f, &st));
	assert_int_equal(st.size, m->size);
	assert_int_equal(tessera_pread(f, buf, m->size, 0), (ssize_t)m->size);
	for (size_t i = 0; i < m->size; i++)
		if (buf[i] != m->bytes[i])
			fail_msg("byte %zu is %u, model %u", i, buf[i], m->bytes[i]);
	free(buf);
}

/* Region length from 1 B to 1 MiB, mostly small (log-uniform). */
static uint64_t region_len(uint64_t *s, uint64_t max)
{
	uint64_t bits = rnd(s) % 21, len = 1 + rnd(s) % (1ull << bits);

	return len > max ? max : len;
}

static tessera_file *make_file(struct cluster *c, const char *name, uint64_t strip, uint32_t count)
{
	struct tessera_layout l = { .strip_size = strip, .count = count };
	tessera_file *f;

	CHECK(c->fs, tessera_open(c->fs, name, O_CREAT | O_RDWR | O_TRUNC, 0644, &l, &f));
	return f;
}

/* Split a stream of `total` bytes into memory iovecs inside `arena`
 * (pieces spaced apart unless contiguous). Returns the iovec count. */
static size_t split_memory(uint64_t *s, uint8_t *arena, uint64_t total, int contiguous,
			   struct iovec *iov, size_t max)
{
	size_t n = 0;
	uint64_t pos = 0, at = 0;

	if (contiguous) {
		iov[0].iov_base = arena;
		iov[0].iov_len = total;
		return 1;
	}
	while (pos < total) {
		uint64_t len = region_len(s, total - pos);

		if (n == max - 1)
			len = total - pos;
		at += rnd(s) % 64; /* a gap */
		iov[n].iov_base = arena + at;
		iov[n++].iov_len = len;
		at += len;
		pos += len;
	}
	return n;
}

/* Non-overlapping file regions in random order, within [0, span). */
static size_t make_regions(uint64_t *s, size_t want, uint64_t span, int contiguous,
			   uint64_t *offs, uint64_t *lens, uint64_t *total)
{
	size_t n = 0;
	uint64_t at = rnd(s) % 4096;

	*total = 0;
	if (contiguous) {
		offs[0] = at;
		lens[0] = region_len(s, span / 2) + 1;
		*total = lens[0];
		return 1;
	}
	while (n < want) {
		uint64_t len = region_len(s, 1 << 20);

		if (at + len >= span)
			break;
		offs[n] = at;
		lens[n] = len;
		*total += len;
		at += len + rnd(s) % 3 * (rnd(s) % 200); /* adjacent sometimes */
		n++;
	}
	/* shuffle: the stream order need not be the file order */
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd(s) % i;
		uint64_t o = offs[i - 1], l = lens[i - 1];

		offs[i - 1] = offs[j];
		lens[i - 1] = lens[j];
		offs[j] = o;
		lens[j] = l;
	}
	return n;
}

/* count blocks of blocklen bytes, stride bytes apart */
static struct tdl_dataloop *byte_vector(int64_t count, int64_t blocklen, int64_t stride)
{
	struct tdl_dataloop *b, *v;

	assert_int_equal(tdl_bytes(1, &b), 0);
	assert_int_equal(tdl_hvector(count, blocklen, stride, b, &v), 0);
	tdl_free(b);
	return v;
}

/* ------------------------------------------------------------ list I/O */

static void list_case(struct cluster *c, uint64_t *s, uint64_t strip, uint32_t count,
		      int mem_contig, int file_contig, uint32_t batch)
{
	enum { MAXR = 600 };
	uint64_t offs[MAXR], lens[MAXR], total, span = 24 << 20;
	struct iovec iov[MAXR];
	struct model m = { calloc(1, span), 0, span };
	uint8_t *arena, *back;
	tessera_file *f = make_file(c, "/list", strip, count);
	size_t nr, ni;

	tessera_file_set_list_batch(f, batch);
	for (int round = 0; round < 3; round++) {
		nr = make_regions(s, 1 + rnd(s) % (MAXR - 1), span, file_contig, offs, lens, &total);
		arena = malloc(total + 64 * MAXR);
		back = malloc(total + 64 * MAXR);
		for (uint64_t i = 0; i < total + 64 * MAXR; i++)
			arena[i] = (uint8_t)rnd(s);
		ni = split_memory(s, arena, total, mem_contig, iov, MAXR);
		assert_int_equal(tessera_write_list(f, iov, ni, offs, lens, nr), (ssize_t)total);
		{
			uint64_t pos = 0;
			size_t k = 0, within = 0;

			/* the model: stream byte order on both sides */
			for (size_t r = 0; r < nr; r++)
				for (uint64_t b = 0; b < lens[r]; b++) {
					while (within == iov[k].iov_len) {
						k++;
						within = 0;
					}
					model_write(&m, offs[r] + b, (uint8_t *)iov[k].iov_base + within++, 1);
					pos++;
				}
			assert_int_equal(pos, total);
		}
		/* read the same regions back through a different memory split */
		memset(back, 0, total + 64 * MAXR);
		ni = split_memory(s, back, total, !mem_contig, iov, MAXR);
		assert_int_equal(tessera_read_list(f, iov, ni, offs, lens, nr), (ssize_t)total);
		{
			size_t k = 0, within = 0;

			for (size_t r = 0; r < nr; r++)
				for (uint64_t b = 0; b < lens[r]; b++) {
					while (within == iov[k].iov_len) {
						k++;
						within = 0;
					}
					if (((uint8_t *)iov[k].iov_base)[within++] != m.bytes[offs[r] + b])
						fail_msg("list read: region %zu byte %llu differs", r,
							 (unsigned long long)b);
				}
		}
		free(arena);
		free(back);
	}
	check_file(c->fs, f, &m);
	tessera_close(f);
	free(m.bytes);
}

static void test_list_io(void **state)
{
	struct cluster *c = *state;
	uint64_t s = 0x1234567;
	struct { uint64_t strip; uint32_t count; uint32_t batch; } lay[] = {
		{ 65536, 4, 0 }, { 4096, 3, 64 }, { 7, 2, 0 }, { 1 << 20, 1, 5 },
	};

	for (size_t l = 0; l < sizeof(lay) / sizeof(lay[0]); l++)
		for (int mc = 0; mc < 2; mc++)
			for (int fc = 0; fc < 2; fc++) {
				print_message("list: strip %llu x %u batch %u, %s-%s\n",
					      (unsigned long long)lay[l].strip, lay[l].count,
					      lay[l].batch, mc ? "c" : "nc", fc ? "c" : "nc");
				list_case(c, &s, lay[l].strip, lay[l].count, mc, fc, lay[l].batch);
			}
}

/* -------------------------------------------------------- datatype I/O */

/* A random type whose instances name each byte once: lb 0, every byte
 * inside [0, extent). */
static struct tdl_dataloop *gen_type(uint64_t *s, int depth)
{
	struct tdl_dataloop *child, *t = NULL;
	int64_t ext;
	int kind = depth ? (int)(rnd(s) % 7) : 7;

	if (kind == 7) {
		assert_int_equal(tdl_bytes(1 + (int64_t)(rnd(s) % 24), &t), 0);
		return t;
	}
	child = gen_type(s, depth - 1);
	ext = tdl_extent(child);
	switch (kind) {
	case 0:
		assert_int_equal(tdl_contig(1 + (int64_t)(rnd(s) % 4), child, &t), 0);
		break;
	case 1: {
		int64_t bl = 1 + (int64_t)(rnd(s) % 3);

		assert_int_equal(tdl_vector(1 + (int64_t)(rnd(s) % 8), bl,
					    bl + (int64_t)(rnd(s) % 4), child, &t), 0);
		break;
	}
	case 2: {
		int64_t bl = 1 + (int64_t)(rnd(s) % 3), n = 1 + (int64_t)(rnd(s) % 6);

		/* a negative byte stride: blocks run downwards */
		assert_int_equal(tdl_hvector(n, bl, -(bl * ext + (int64_t)(rnd(s) % 16)), child,
					     &t), 0);
		{
			struct tdl_dataloop *r;

			assert_int_equal(tdl_resized(t, tdl_lb(t), tdl_extent(t), &r), 0);
			tdl_free(t);
			t = r;
		}
		break;
	}
	case 3: {
		int64_t d[6], at = 0, n = 1 + (int64_t)(rnd(s) % 6), bl[6];

		for (int64_t i = 0; i < n; i++) {
			bl[i] = 1 + (int64_t)(rnd(s) % 3);
			d[i] = at + (int64_t)(rnd(s) % 3);
			at = d[i] + bl[i];
		}
		assert_int_equal(tdl_indexed(n, bl, d, child, &t), 0);
		break;
	}
	case 4: {
		struct tdl_dataloop *other = gen_type(s, depth - 1);
		/* the second block starts past the first (lower bounds may be
		 * negative) */
		int64_t d[2] = { 0, tdl_lb(child) + ext * 2 - tdl_lb(other) +
				 (int64_t)(rnd(s) % 32) }, bl[2] = { 2, 1 };
		const struct tdl_dataloop *kids[2] = { child, other };

		assert_int_equal(tdl_struct(2, bl, d, kids, &t), 0);
		tdl_free(other);
		break;
	}
	case 5:
		assert_int_equal(tdl_resized(child, tdl_lb(child), ext + (int64_t)(rnd(s) % 40), &t),
				 0);
		break;
	case 6: {
		int64_t sizes[2] = { 2 + (int64_t)(rnd(s) % 5), 2 + (int64_t)(rnd(s) % 5) };
		int64_t sub[2] = { 1 + (int64_t)(rnd(s) % (uint64_t)sizes[0]),
				   1 + (int64_t)(rnd(s) % (uint64_t)sizes[1]) };
		int64_t start[2] = { (int64_t)(rnd(s) % (uint64_t)(sizes[0] - sub[0] + 1)),
				     (int64_t)(rnd(s) % (uint64_t)(sizes[1] - sub[1] + 1)) };

		assert_int_equal(tdl_subarray(2, sizes, sub, start, (int)(rnd(s) % 2), child, &t), 0);
		break;
	}
	}
	tdl_free(child);
	return t;
}

/* One offset per stream byte of [first, first+len) of (type, count, disp). */
static int64_t *expand(const struct tdl_dataloop *t, uint64_t count, int64_t disp, uint64_t first,
		       uint64_t len)
{
	int64_t *at = malloc((len ? len : 1) * sizeof(*at));
	struct tdl_segment seg;
	struct tdl_piece p[64];
	size_t n, k = 0;

	assert_int_equal(tdl_segment_init(&seg, t, count, disp, first, first + len), 0);
	while (!tdl_segment_done(&seg)) {
		assert_int_equal(tdl_segment_next(&seg, p, 64, &n), 0);
		for (size_t i = 0; i < n; i++)
			for (uint64_t b = 0; b < p[i].length; b++)
				at[k++] = (int64_t)(p[i].offset + b);
	}
	assert_int_equal(k, len);
	return at;
}

static void dtype_case(struct cluster *c, uint64_t *s, uint64_t strip, uint32_t count,
		       int mem_contig, int file_contig)
{
	uint64_t span = 32 << 20;
	struct model m = { calloc(1, span), 0, span };
	tessera_file *f = make_file(c, "/dtype", strip, count);

	for (int round = 0; round < 4; round++) {
		struct tdl_dataloop *ft, *mt = NULL;
		uint64_t fsize, msize, mcount, total, first, fcount;
		int64_t disp, *fat, *mat, mshift;
		uint8_t *mem, *back;
		size_t mspan;

		if (file_contig)
			assert_int_equal(tdl_bytes(1 + (int64_t)(rnd(s) % 5000), &ft), 0);
		else
			ft = gen_type(s, 1 + (int)(rnd(s) % 3));
		if (!mem_contig)
			mt = gen_type(s, 1 + (int)(rnd(s) % 3));
		fsize = tdl_size(ft);
		msize = mt ? tdl_size(mt) : 1;
		/* about 1 MiB of data, at least one memory instance */
		mcount = ((1 << 20) + rnd(s) % (1 << 20)) / msize + 1;
		total = mcount * msize;
		first = rnd(s) % (3 * fsize);
		fcount = (first + total + fsize - 1) / fsize;
		if ((uint64_t)tdl_extent(ft) * fcount + 1024 > span - 65536) {
			tdl_free(ft);
			tdl_free(mt);
			continue; /* a sparse type: too large a file for the model */
		}
		disp = tdl_true_lb(ft) < 0 ? -tdl_true_lb(ft) : 0;
		disp += (int64_t)(rnd(s) % 1000);
		/* memory: instances at mshift in a buffer large enough */
		mshift = mt ? (tdl_true_lb(mt) < 0 ? -tdl_true_lb(mt) : 0) : 0;
		mspan = (size_t)(mt ? mshift + tdl_extent(mt) * (int64_t)(mcount - 1) +
				 tdl_true_ub(mt) + 64 : (int64_t)total);
		mem = malloc(mspan);
		back = calloc(1, mspan);
		for (size_t i = 0; i < mspan; i++)
			mem[i] = (uint8_t)rnd(s);
		fat = expand(ft, fcount, disp, first, total);
		mat = mt ? expand(mt, mcount, mshift, 0, total) : NULL;
		if (tessera_write_dtype(f, mem + mshift, mcount, mt, ft, disp, first) != (ssize_t)total)
			fail_msg("datatype write: %s", tessera_errmsg(c->fs));
		for (uint64_t k = 0; k < total; k++)
			model_write(&m, (uint64_t)fat[k], mem + (mat ? mat[k] : (int64_t)k), 1);
		/* read back what was written, in memory layout */
		assert_int_equal(tessera_read_dtype(f, back + mshift, mcount, mt, ft, disp, first),
				 (ssize_t)total);
		for (uint64_t k = 0; k < total; k++) {
			int64_t at = mat ? mat[k] : (int64_t)k;

			if (back[at] != mem[at]) {
				uint8_t fb = 0;

				tessera_pread(f, &fb, 1, (uint64_t)fat[k]);
				fail_msg("datatype read: stream byte %llu (file %lld) differs: read %u, "
					 "wrote %u, file has %u (first %llu, total %llu, fsize %llu, "
					 "msize %llu)", (unsigned long long)k, (long long)fat[k],
					 back[at], mem[at], fb, (unsigned long long)first,
					 (unsigned long long)total, (unsigned long long)fsize,
					 (unsigned long long)msize);
			}
		}
		free(fat);
		free(mat);
		free(mem);
		free(back);
		tdl_free(ft);
		tdl_free(mt);
	}
	check_file(c->fs, f, &m);
	tessera_close(f);
	free(m.bytes);
}

static void test_dtype_io(void **state)
{
	struct cluster *c = *state;
	uint64_t s = 0xfeedbeef;
	struct { uint64_t strip; uint32_t count; } lay[] = {
		{ 65536, 4 }, { 4096, 3 }, { 13, 2 }, { 1 << 20, 1 },
	};

	for (size_t l = 0; l < sizeof(lay) / sizeof(lay[0]); l++)
		for (int mc = 0; mc < 2; mc++)
			for (int fc = 0; fc < 2; fc++) {
				print_message("datatype: strip %llu x %u, %s-%s\n",
					      (unsigned long long)lay[l].strip, lay[l].count,
					      mc ? "c" : "nc", fc ? "c" : "nc");
				dtype_case(c, &s, lay[l].strip, lay[l].count, mc, fc);
			}
}

/* Bytes past the end of the file read as zeros and count. */
static void test_read_past_eof(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/eof", 100, 3);
	uint8_t data[1000], back[1000];
	uint64_t offs[2] = { 950, 10 }, lens[2] = { 200, 20 };
	struct iovec iov = { back, 220 };

	memset(data, 0xab, sizeof(data));
	assert_int_equal(tessera_pwrite(f, data, 1000, 0), 1000);
	memset(back, 0x11, sizeof(back));
	assert_int_equal(tessera_read_list(f, &iov, 1, offs, lens, 2), 220);
	for (int i = 0; i < 220; i++)
		assert_int_equal(back[i], i < 50 || i >= 200 ? 0xab : 0);
	tessera_close(f);
}

/* Overlapping writes are refused and change nothing; overlapping reads
 * are fine. */
static void test_overlap(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/overlap", 64, 4);
	uint8_t data[4096], back[4096];
	struct iovec iov = { data, 300 };
	uint64_t offs[3] = { 1000, 0, 1099 }, lens[3] = { 100, 100, 100 };
	struct tdl_dataloop *v;
	struct model m = { calloc(1, 8192), 0, 8192 };

	for (int i = 0; i < 4096; i++)
		data[i] = (uint8_t)(i * 7);
	assert_int_equal(tessera_pwrite(f, data, 4096, 0), 4096);
	model_write(&m, 0, data, 4096);
	memset(data, 0x55, sizeof(data));
	assert_int_equal(tessera_write_list(f, &iov, 1, offs, lens, 3), -EINVAL);
	print_message("%s\n", tessera_errmsg(c->fs));
	assert_non_null(strstr(tessera_errmsg(c->fs), "overlap"));
	assert_non_null(strstr(tessera_errmsg(c->fs), "/overlap"));
	/* a vector whose stride is shorter than its blocks overlaps itself */
	v = byte_vector(4, 8, 5);
	assert_int_equal(tessera_write_dtype(f, data, tdl_size(v), NULL, v, 0, 0), -EINVAL);
	tdl_free(v);
	check_file(c->fs, f, &m);
	/* overlapping reads */
	iov.iov_base = back;
	assert_int_equal(tessera_read_list(f, &iov, 1, offs, lens, 3), 300);
	assert_memory_equal(back, m.bytes + 1000, 100);
	assert_memory_equal(back + 100, m.bytes, 100);
	assert_memory_equal(back + 200, m.bytes + 1099, 100);
	tessera_close(f);
	free(m.bytes);
}

static void test_bad_arguments(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/bad", 65536, 2), *ro;
	uint8_t data[100] = { 0 };
	struct iovec iov = { data, 100 };
	uint64_t off = 0, len = 99, huge = (uint64_t)INT64_MAX;
	struct tdl_dataloop *b;

	assert_int_equal(tessera_write_list(f, &iov, 1, &off, &len, 1), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(c->fs), "hold 100 bytes"));
	len = 100;
	assert_int_equal(tessera_write_list(f, &iov, 1, &huge, &len, 1), -EFBIG);
	assert_int_equal(tessera_write_dtype(f, data, 1, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(tdl_bytes(10, &b), 0);
	assert_int_equal(tessera_write_dtype(f, data, 100, NULL, b, -5, 0), -EINVAL);
	assert_non_null(strstr(tessera_errmsg(c->fs), "file view"));
	CHECK(c->fs, tessera_open(c->fs, "/bad", O_RDONLY, 0, NULL, &ro));
	assert_int_equal(tessera_write_list(ro, &iov, 1, &off, &len, 1), -EBADF);
	assert_int_equal(tessera_write_dtype(ro, data, 100, NULL, b, 0, 0), -EBADF);
	assert_int_equal(tessera_write_list(f, NULL, 0, NULL, NULL, 0), 0);
	tdl_free(b);
	tessera_close(ro);
	tessera_close(f);
}

/* ------------------------------------------------ malformed requests */

/* A good list request of four 10-byte pieces on one object, and the
 * arrays it points into; a case corrupts one thing of it. */
struct list_req {
	Tessera__ListIORequest l;
	uint64_t offs[4], lens[4];
};

static void list_req_init(struct list_req *r, uint64_t handle)
{
	*r = (struct list_req){ .l = TESSERA__LIST_IOREQUEST__INIT };
	for (int i = 0; i < 4; i++) {
		r->offs[i] = (uint64_t)i * 100;
		r->lens[i] = 10;
	}
	r->l.handle = handle;
	r->l.n_offsets = r->l.n_lengths = 4;
	r->l.offsets = r->offs;
	r->l.lengths = r->lens;
}

static void list_three_lengths(struct list_req *r)
{
	r->l.n_lengths = 3;
}

static void list_no_change(struct list_req *r)
{
	(void)r;
}

static void list_huge_offset(struct list_req *r)
{
	r->offs[3] = UINT64_MAX - 5; /* a piece past the largest object, after good ones */
}

static void list_over_max_io(struct list_req *r)
{
	r->lens[0] = 2 << 20;
}

/* A malformed request: its name, how a good one is corrupted, the bytes
 * it carries, and the refusal expected (words == NULL: words not checked). */
struct malformed_list {
	const char *name;
	void (*corrupt)(struct list_req *r);
	unsigned op;
	size_t nbytes;
	int expect;
	const char *words;
};

static const struct malformed_list list_cases[] = {
	{ "list, 4 offsets 3 lengths", list_three_lengths, TP_OP_LIST_WRITE, 30, -EINVAL,
	  "4 offsets but 3 lengths" },
	{ "list, 39 bytes for 40", list_no_change, TP_OP_LIST_WRITE, 39, -EINVAL, "carries 39" },
	{ "list, huge offset", list_huge_offset, TP_OP_LIST_WRITE, 40, -EINVAL, "piece 3" },
	{ "list, read larger than max_io", list_over_max_io, TP_OP_LIST_READ, 0, -EMSGSIZE, NULL },
};

/* A good datatype request: 4 pieces of 10 bytes 100 apart on one object,
 * the description sent with it. */
static void dtype_req_init(Tessera__DtypeIORequest *d, uint64_t handle, Tessera__Dataloop *vm)
{
	*d = (Tessera__DtypeIORequest)TESSERA__DTYPE_IOREQUEST__INIT;
	d->handle = handle;
	d->strip_size = 4096;
	d->stripe_count = 1;
	d->desc_nonce = 77;
	d->desc_id = 1;
	d->count = 1;
	d->first = 0;
	d->last = 40;
	d->file_type = vm;
}

static void dtype_no_description(Tessera__DtypeIORequest *d)
{
	d->file_type = NULL; /* not held by the daemon either */
}

static void dtype_no_change(Tessera__DtypeIORequest *d)
{
	(void)d;
}

static void dtype_window_past_view(Tessera__DtypeIORequest *d)
{
	d->last = 41;
}

static void dtype_slot_outside(Tessera__DtypeIORequest *d)
{
	d->slot = 3;
}

static void dtype_before_byte_0(Tessera__DtypeIORequest *d)
{
	d->disp = -50;
}

static void dtype_cyclic(Tessera__DtypeIORequest *d)
{
	d->file_type->nodes[0]->child = 0;
	d->file_type->root = 0;
}

struct malformed_dtype {
	const char *name;
	void (*corrupt)(Tessera__DtypeIORequest *d);
	size_t nbytes;
	int expect;
	const char *words;
};

/* In this order: the first proves an unsent description is not held. */
static const struct malformed_dtype dtype_cases[] = {
	{ "datatype, unknown description", dtype_no_description, 40, -ESTALE, NULL },
	{ "datatype, 41 bytes for 40", dtype_no_change, 41, -EINVAL, "carries 41" },
	{ "datatype, window past the view", dtype_window_past_view, 41, -EINVAL, NULL },
	{ "datatype, slot 3 of 1", dtype_slot_outside, 40, -EINVAL, NULL },
	{ "datatype, negative file offsets", dtype_before_byte_0, 40, -EINVAL, NULL },
	{ "datatype, cyclic", dtype_cyclic, 40, -EINVAL, NULL },
};

static void check_refusal(const char *name, int rc, int expect, const char *err, const char *words)
{
	print_message("%s -> %s\n", name, err);
	assert_int_equal(rc, expect);
	if (words)
		assert_non_null(strstr(err, words));
}

static void check_list_cases(struct raw *raw, uint64_t handle, const uint8_t *data)
{
	char err[512];

	for (size_t i = 0; i < sizeof(list_cases) / sizeof(list_cases[0]); i++) {
		const struct malformed_list *k = &list_cases[i];
		struct list_req r;
		int rc;

		list_req_init(&r, handle);
		k->corrupt(&r);
		rc = raw_request(raw, k->op, &r.l.base, k->nbytes ? data : NULL, k->nbytes, err,
				 sizeof(err));
		check_refusal(k->name, rc, k->expect, err, k->words);
	}
}

static void check_dtype_cases(struct raw *raw, uint64_t handle, const uint8_t *data)
{
	char err[512];

	for (size_t i = 0; i < sizeof(dtype_cases) / sizeof(dtype_cases[0]); i++) {
		const struct malformed_dtype *k = &dtype_cases[i];
		struct tdl_dataloop *v = byte_vector(4, 10, 100);
		Tessera__Dataloop *vm;
		Tessera__DtypeIORequest d;
		int rc;

		assert_int_equal(tp_dataloop_to_msg(v, &vm), 0);
		dtype_req_init(&d, handle, vm);
		k->corrupt(&d);
		rc = raw_request(raw, TP_OP_DTYPE_WRITE, &d.base, data, k->nbytes, err, sizeof(err));
		check_refusal(k->name, rc, k->expect, err, k->words);
		tp_dataloop_msg_release(vm);
		tdl_free(v);
	}
}

/* Malformed raw requests are refused with the rule named, change no
 * byte, and leave the daemon serving. */
static void test_malformed_requests(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/victim", 4096, 1);
	struct tessera_layout lay;
	struct raw raw;
	struct model m = { calloc(1, 1 << 16), 0, 1 << 16 };
	uint8_t data[8192];
	char err[512];
	struct list_req good;

	for (int i = 0; i < 8192; i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	assert_int_equal(tessera_pwrite(f, data, 8192, 0), 8192);
	model_write(&m, 0, data, 8192);
	CHECK(c->fs, tessera_file_layout(f, &lay));
	raw_open(c, lay.servers[0], &raw);
	Tessera__Capability *cap = file_cap(f);

	raw.cap = cap;
	memset(data, 0xee, sizeof(data));
	check_list_cases(&raw, lay.handles[0], data);
	check_dtype_cases(&raw, lay.handles[0], data);
	check_file(c->fs, f, &m);
	/* the daemon still serves, and well-formed raw requests work */
	list_req_init(&good, lay.handles[0]);
	assert_int_equal(raw_request(&raw, TP_OP_LIST_WRITE, &good.l.base, data, 40, err, sizeof(err)),
			 0);
	for (int i = 0; i < 4; i++)
		model_write(&m, good.offs[i], data, 10);
	check_file(c->fs, f, &m);
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tessera_close(f);
	free(m.bytes);
}

/* -------------------------------------------------------------- counters */

static void stats_sum(struct cluster *c, struct tessera_ios_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (uint32_t i = 0; i < N_IOS; i++) {
		struct tessera_ios_stats s;

		CHECK(c->fs, tessera_ios_stats(c->fs, i, &s));
		tessera_ios_stats_add(sum, &s);
	}
}

/* The dissertation's default HPIO pattern (4096 regions of 8 bytes spaced
 * 128 apart, c-nc) costs 1 list request per batch per object and one
 * datatype request per object. */
static void test_request_counts(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/hpio", 65536, 4);
	enum { N = 4096, SZ = 8, SP = 128 };
	static uint64_t offs[N], lens[N];
	uint8_t *data = malloc(N * SZ);
	struct iovec iov = { data, N * SZ };
	struct tessera_ios_stats a, b;
	struct tdl_dataloop *v;

	for (int i = 0; i < N; i++) {
		offs[i] = (uint64_t)i * (SZ + SP);
		lens[i] = SZ;
	}
	memset(data, 3, N * SZ);
	/* the whole pattern spans 8 strips of 64 KiB: 2 per object */
	stats_sum(c, &a);
	assert_int_equal(tessera_write_list(f, &iov, 1, offs, lens, N), N * SZ);
	stats_sum(c, &b);
	assert_int_equal(b.requests[TESSERA_METHOD_LIST] - a.requests[TESSERA_METHOD_LIST], 4);
	assert_int_equal(b.pieces[TESSERA_METHOD_LIST] - a.pieces[TESSERA_METHOD_LIST], N);
	assert_int_equal(b.bytes_written[TESSERA_METHOD_LIST] - a.bytes_written[TESSERA_METHOD_LIST],
			 N * SZ);
	/* the daemons sieve: a read and a write per object, not one per piece */
	print_message("list write: %llu disk calls for %d pieces\n",
		      (unsigned long long)(b.syscalls[TESSERA_METHOD_LIST] -
					   a.syscalls[TESSERA_METHOD_LIST]), N);
	assert_in_range(b.syscalls[TESSERA_METHOD_LIST] - a.syscalls[TESSERA_METHOD_LIST], 4, 16);
	/* the dissertation's limit: 64 regions a request */
	tessera_file_set_list_batch(f, 64);
	stats_sum(c, &a);
	assert_int_equal(tessera_read_list(f, &iov, 1, offs, lens, N), N * SZ);
	stats_sum(c, &b);
	print_message("list batch 64: %llu requests\n",
		      (unsigned long long)(b.requests[TESSERA_METHOD_LIST] -
					   a.requests[TESSERA_METHOD_LIST]));
	/* each batch of 64 regions (8320 bytes) lies in one strip or two */
	assert_in_range(b.requests[TESSERA_METHOD_LIST] - a.requests[TESSERA_METHOD_LIST], N / 64,
			N / 64 + 8);
	/* datatype: one request per object, the description sent once */
	v = byte_vector(N, SZ, SZ + SP);
	stats_sum(c, &a);
	assert_int_equal(tessera_write_dtype(f, data, N * SZ, NULL, v, 0, 0), N * SZ);
	stats_sum(c, &b);
	assert_int_equal(b.requests[TESSERA_METHOD_DTYPE] - a.requests[TESSERA_METHOD_DTYPE], 4);
	assert_int_equal(b.pieces[TESSERA_METHOD_DTYPE] - a.pieces[TESSERA_METHOD_DTYPE], N);
	print_message("datatype: %llu description bytes\n",
		      (unsigned long long)(b.desc_bytes[TESSERA_METHOD_DTYPE] -
					   a.desc_bytes[TESSERA_METHOD_DTYPE]));
	assert_true(b.desc_bytes[TESSERA_METHOD_DTYPE] - a.desc_bytes[TESSERA_METHOD_DTYPE] < 4 * 64);
	tdl_free(v);
	free(data);
	tessera_close(f);
}

/* A datatype call of many rounds: the description travels with the first
 * message to each server only; later rounds hit the servers' caches. */
static void test_description_once(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/rounds", 4096, 2);
	size_t len = 6 << 20; /* 3 MiB per object: at least 3 rounds */
	uint8_t *data = malloc(len), *back = malloc(len);
	struct tdl_dataloop *t;
	struct tessera_ios_stats a, b;

	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 13);
	/* every other 1000-byte block */
	t = byte_vector((int64_t)len / 1000, 1000, 2000);
	stats_sum(c, &a);
	assert_int_equal(tessera_write_dtype(f, data, len, NULL, t, 0, 0), (ssize_t)len);
	assert_int_equal(tessera_read_dtype(f, back, len, NULL, t, 0, 0), (ssize_t)len);
	stats_sum(c, &b);
	assert_memory_equal(data, back, len);
	print_message("%llu datatype requests, %llu cache hits, %llu misses\n",
		      (unsigned long long)(b.requests[TESSERA_METHOD_DTYPE] -
					   a.requests[TESSERA_METHOD_DTYPE]),
		      (unsigned long long)(b.desc_cache_hits - a.desc_cache_hits),
		      (unsigned long long)(b.desc_cache_misses - a.desc_cache_misses));
	/* 2 calls x 2 servers got the description; every other message hit */
	assert_true(b.requests[TESSERA_METHOD_DTYPE] - a.requests[TESSERA_METHOD_DTYPE] >= 12);
	assert_int_equal(b.desc_cache_hits - a.desc_cache_hits,
			 b.requests[TESSERA_METHOD_DTYPE] - a.requests[TESSERA_METHOD_DTYPE] - 4);
	assert_int_equal(b.desc_cache_misses - a.desc_cache_misses, 0);
	tdl_free(t);
	free(data);
	free(back);
	tessera_close(f);
}

/* Descriptions evicted from a server's cache in the middle of a call (by
 * another thread's many calls) are sent again; the data stays right. */
struct churn {
	struct cluster *c;
	volatile int stop;
	int calls;
};

static void *churn_loop(void *arg)
{
	struct churn *ch = arg;
	tessera_file *g;
	struct tdl_dataloop *t = byte_vector(4, 1, 2);
	uint8_t d[4] = { 1, 2, 3, 4 };

	if (tessera_open(ch->c->fs, "/churn", O_CREAT | O_RDWR, 0644, NULL, &g) == 0) {
		while (!ch->stop && tessera_write_dtype(g, d, 4, NULL, t, 0, 0) == 4)
			ch->calls++;
		tessera_close(g);
	}
	tdl_free(t);
	return NULL;
}

static void test_description_evicted(void **state)
{
	struct cluster *c = *state;
	tessera_file *f = make_file(c, "/evicted", 65536, N_IOS);
	size_t len = 24 << 20;
	uint8_t *data = malloc(len), *back = malloc(len);
	struct tdl_dataloop *t = byte_vector((int64_t)len / 100, 100, 150);
	struct tessera_ios_stats a, b;
	struct churn ch = { c, 0, 0 };
	pthread_t th;

	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 31 + (i >> 12));
	stats_sum(c, &a);
	assert_int_equal(pthread_create(&th, NULL, churn_loop, &ch), 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(tessera_write_dtype(f, data, len, NULL, t, 0, 0), (ssize_t)len);
		memset(back, 0, len);
		assert_int_equal(tessera_read_dtype(f, back, len, NULL, t, 0, 0), (ssize_t)len);
		assert_memory_equal(data, back, len);
	}
	ch.stop = 1;
	pthread_join(th, NULL);
	stats_sum(c, &b);
	print_message("%d other calls meanwhile; %llu descriptions missing from a cache, sent "
		      "again\n", ch.calls,
		      (unsigned long long)(b.desc_cache_misses - a.desc_cache_misses));
	assert_true(ch.calls > 0);
	tdl_free(t);
	free(data);
	free(back);
	tessera_close(f);
}

/* ------------------------------------------------ large file types */

/* A file type of tens of thousands of tiny blocks at irregular places, as
 * parallel HDF5 builds for a chunked dataset of 1-element chunks: a struct
 * of one separately built type per chunk (`distinct`), or one hindexed.
 * Every stream byte lands where the type says. Returns the datatype and
 * list requests the write and read took. */
static void tiny_blocks_case(struct cluster *c, uint64_t *s, int n, int64_t bl, int distinct,
			     uint64_t strip, uint32_t count, uint64_t *dtype_reqs,
			     uint64_t *list_reqs)
{
	int64_t *displ = malloc((size_t)n * sizeof(*displ)), *bls = malloc((size_t)n * sizeof(*bls));
	struct tdl_dataloop **kids = calloc((size_t)n, sizeof(*kids)), *elem, *ft;
	uint64_t len = (uint64_t)n * (uint64_t)bl, span;
	uint8_t *data = malloc(len), *back = malloc(len), *file;
	tessera_file *f = make_file(c, "/tiny", strip, count);
	struct tessera_ios_stats a, b;
	int64_t at = 0;

	assert_int_equal(tdl_bytes(bl, &elem), 0);
	for (int i = 0; i < n; i++) {
		displ[i] = at;
		bls[i] = 1;
		if (distinct)
			assert_int_equal(tdl_bytes(bl, &kids[i]), 0);
		else
			kids[i] = elem;
		/* mostly spaced out, sometimes adjacent, never a stride */
		at += bl * (1 + (int64_t)(rnd(s) % 3 ? rnd(s) % 97 : 0));
	}
	span = (uint64_t)at;
	if (distinct)
		assert_int_equal(tdl_struct(n, bls, displ, (const struct tdl_dataloop *const *)kids,
					    &ft), 0);
	else
		assert_int_equal(tdl_hindexed(n, bls, displ, elem, &ft), 0);
	print_message("%d blocks of %lld bytes (%s), %zu bytes encoded, strip %llu x %u\n", n,
		      (long long)bl, distinct ? "struct of distinct types" : "hindexed",
		      tp_dataloop_encoded_size(ft), (unsigned long long)strip, count);
	for (uint64_t i = 0; i < len; i++)
		data[i] = (uint8_t)rnd(s);
	stats_sum(c, &a);
	if (tessera_write_dtype(f, data, len, NULL, ft, 0, 0) != (ssize_t)len)
		fail_msg("write of %d blocks: %s", n, tessera_errmsg(c->fs));
	memset(back, 0, len);
	if (tessera_read_dtype(f, back, len, NULL, ft, 0, 0) != (ssize_t)len)
		fail_msg("read of %d blocks: %s", n, tessera_errmsg(c->fs));
	stats_sum(c, &b);
	*dtype_reqs = b.requests[TESSERA_METHOD_DTYPE] - a.requests[TESSERA_METHOD_DTYPE];
	*list_reqs = b.requests[TESSERA_METHOD_LIST] - a.requests[TESSERA_METHOD_LIST];
	assert_memory_equal(data, back, len);
	file = malloc(span);
	assert_int_equal(tessera_pread(f, file, span, 0), displ[n - 1] + bl);
	for (int i = 0; i < n; i++)
		if (memcmp(file + displ[i], data + (uint64_t)i * (uint64_t)bl, (size_t)bl))
			fail_msg("block %d (file offset %lld) differs", i, (long long)displ[i]);
	tdl_free(ft);
	for (int i = 0; distinct && i < n; i++)
		tdl_free(kids[i]);
	tdl_free(elem);
	free(file);
	free(displ);
	free(bls);
	free(kids);
	free(data);
	free(back);
	tessera_close(f);
}

static void test_many_tiny_blocks(void **state)
{
	struct cluster *c = *state;
	uint64_t s = 0xc0ffee, dt, li;

	/* HDF5's shape: 80,000 4-byte chunks, each its own type */
	tiny_blocks_case(c, &s, 80000, 4, 1, 65536, 4, &dt, &li);
	assert_true(dt > 0);
	assert_int_equal(li, 0);
	tiny_blocks_case(c, &s, 80000, 4, 1, 4096, 3, &dt, &li);
	/* a 392 KB file type beside a full 1 MiB of data on one object:
	 * beyond a frame unless the data gives way */
	tiny_blocks_case(c, &s, 80000, 16, 0, 1 << 20, 1, &dt, &li);
	assert_true(dt > 0);
	assert_int_equal(li, 0);
	/* a file type too large to travel beside data: the pieces go as
	 * list messages */
	tiny_blocks_case(c, &s, 250000, 4, 0, 65536, 4, &dt, &li);
	assert_int_equal(dt, 0);
	assert_true(li > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list_io, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_dtype_io, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_read_past_eof, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_overlap, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_malformed_requests, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_request_counts, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_description_once, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_description_evicted, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_many_tiny_blocks, setup, cluster_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
