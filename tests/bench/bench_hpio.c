/*
 * bench_hpio.c - an HPIO-style noncontiguous I/O benchmark on libtessera
 * (after Ching's HPIO: region count, size and spacing, set for memory and
 * file separately; access cases c-c, nc-c, c-nc, nc-nc).
 *
 * Methods:
 *   posix     one tessera_pwrite/pread per contiguous piece (the baseline)
 *   list      tessera_write_list/read_list (list I/O)
 *   datatype  tessera_write_dtype/read_dtype (datatype I/O)
 *
 * For each it prints write and read bandwidth, the storage-daemon requests
 * and description bytes one write took (from the daemons' counters), and
 * its bandwidth as a multiple of POSIX measured in the same run.
 *
 *   tessera-bench-hpio -c CONFIG [-n COUNT] [-s SIZE] [-p SPACING]
 *       [-N MEM_COUNT] [-S MEM_SIZE] [-P MEM_SPACING] [-a CASE] [-t SECONDS]
 *       [--sweep] [--batch-sweep]
 *
 * Defaults are the dissertation's: 4096 regions of 8 bytes spaced 128 bytes
 * apart, on both sides. Figures, not tests: nothing here asserts a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "tdl.h"
#include "tessera.h"

enum { M_POSIX, M_LIST, M_DTYPE, M_COUNT };
static const char *const method_names[M_COUNT] = { "posix", "list", "datatype" };

struct side {           /* one side's regions: count x size, spacing apart */
	uint64_t count, size, spacing;
};

struct bench {
	tessera_fs *fs;
	tessera_file *f;
	double min_time;    /* seconds each measurement runs at least */
	uint32_t batch;     /* list batch, 0: config's */
};

struct result {
	double wbw, rbw;    /* MB/s */
	uint64_t requests, desc_bytes;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die_fs(tessera_fs *fs, const char *what)
{
	fprintf(stderr, "tessera-bench-hpio: %s: %s\n", what, tessera_errmsg(fs));
	exit(1);
}

static void stats_total(tessera_fs *fs, uint64_t *requests, uint64_t *desc)
{
	struct tessera_ios_stats s;

	*requests = *desc = 0;
	for (uint32_t i = 0; i < tessera_ios_count(fs); i++) {
		if (tessera_ios_stats(fs, i, &s))
			die_fs(fs, "stats");
		for (int m = 0; m < TESSERA_METHODS; m++) {
			*requests += s.requests[m];
			*desc += s.desc_bytes[m];
		}
	}
}

/* A side as a region list (memory: into buf). */
static void regions(const struct side *sd, uint64_t *offs, uint64_t *lens)
{
	for (uint64_t i = 0; i < sd->count; i++) {
		offs[i] = i * (sd->size + sd->spacing);
		lens[i] = sd->size;
	}
}

static struct tdl_dataloop *side_type(const struct side *sd)
{
	struct tdl_dataloop *b, *t;

	if (tdl_bytes(1, &b) || tdl_hvector((int64_t)sd->count, (int64_t)sd->size,
					    (int64_t)(sd->size + sd->spacing), b, &t)) {
		fprintf(stderr, "tessera-bench-hpio: cannot build the access type\n");
		exit(1);
	}
	tdl_free(b);
	return t;
}

/* One access (write or read) by method. Returns bytes moved or <0. */
static ssize_t access_once(struct bench *b, int method, int write, uint8_t *buf,
			   const struct side *ms, const struct side *fsd, const uint64_t *moffs,
			   const uint64_t *mlens, const uint64_t *foffs, const uint64_t *flens,
			   struct iovec *iov, uint64_t mcount, const struct tdl_dataloop *mt,
			   const struct tdl_dataloop *ft)
{
	uint64_t total = fsd->count * fsd->size;

	if (method == M_POSIX) {
		/* one call per piece of the merge of both region lists */
		uint64_t mi = 0, fi = 0, mw = 0, fw = 0, done = 0;

		while (done < total) {
			uint64_t len = mlens[mi] - mw < flens[fi] - fw ? mlens[mi] - mw : flens[fi] - fw;
			ssize_t k = write ? tessera_pwrite(b->f, buf + moffs[mi] + mw, len, foffs[fi] + fw)
					  : tessera_pread(b->f, buf + moffs[mi] + mw, len, foffs[fi] + fw);

			if (k != (ssize_t)len)
				return k < 0 ? k : -EIO;
			done += len;
			mw += len;
			fw += len;
			if (mw == mlens[mi]) {
				mi++;
				mw = 0;
			}
			if (fw == flens[fi]) {
				fi++;
				fw = 0;
			}
		}
		return (ssize_t)done;
	}
	if (method == M_LIST) {
		for (uint64_t i = 0; i < ms->count; i++) {
			iov[i].iov_base = buf + moffs[i];
			iov[i].iov_len = mlens[i];
		}
		return write ? tessera_write_list(b->f, iov, ms->count, foffs, flens, fsd->count)
			     : tessera_read_list(b->f, iov, ms->count, foffs, flens, fsd->count);
	}
	if (write)
		return tessera_write_dtype(b->f, buf, mcount, mt, ft, 0, 0);
	return tessera_read_dtype(b->f, buf, mcount, mt, ft, 0, 0);
}

static struct result measure(struct bench *b, int method, const struct side *ms,
			     const struct side *fsd)
{
	uint64_t total = fsd->count * fsd->size;
	uint64_t mspan = ms->count * (ms->size + ms->spacing);
	uint8_t *buf = malloc(mspan), *back = malloc(mspan);
	uint64_t *moffs = malloc(ms->count * sizeof(*moffs)), *mlens = malloc(ms->count * 8);
	uint64_t *foffs = malloc(fsd->count * 8), *flens = malloc(fsd->count * 8);
	struct iovec *iov = malloc(ms->count * sizeof(*iov));
	struct tdl_dataloop *mt = NULL, *ft = side_type(fsd);
	uint64_t mcount = total;
	struct result r = { 0 };
	uint64_t r0, d0, r1, d1;

	/* Memory: one instance per region (size bytes, extent size + spacing),
	 * or plain bytes when contiguous. */
	if (ms->count > 1 || ms->spacing) {
		struct tdl_dataloop *bytes;

		if (tdl_bytes((int64_t)ms->size, &bytes) ||
		    tdl_resized(bytes, 0, (int64_t)(ms->size + ms->spacing), &mt)) {
			fprintf(stderr, "tessera-bench-hpio: cannot build the memory type\n");
			exit(1);
		}
		tdl_free(bytes);
		mcount = ms->count;
	}
	regions(ms, moffs, mlens);
	regions(fsd, foffs, flens);
	for (uint64_t i = 0; i < mspan; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	for (int write = 1; write >= 0; write--) {
		double t0 = now_s(), t;
		int iters = 0;

		stats_total(b->fs, &r0, &d0);
		do {
			ssize_t k = access_once(b, method, write, write ? buf : back, ms, fsd, moffs,
						mlens, foffs, flens, iov, mcount, mt, ft);

			if (k != (ssize_t)total)
				die_fs(b->fs, method_names[method]);
			iters++;
			if (write && iters == 1) {
				stats_total(b->fs, &r1, &d1);
				r.requests = r1 - r0;
				r.desc_bytes = d1 - d0;
			}
			t = now_s() - t0;
		} while (t < b->min_time || iters < 2);
		if (write)
			r.wbw = (double)total * iters / t / 1e6;
		else
			r.rbw = (double)total * iters / t / 1e6;
	}
	/* what was read is what was written */
	for (uint64_t i = 0; i < ms->count; i++)
		if (memcmp(buf + moffs[i], back + moffs[i], mlens[i])) {
			fprintf(stderr, "tessera-bench-hpio: %s read back other data\n",
				method_names[method]);
			exit(1);
		}
	tdl_free(mt);
	tdl_free(ft);
	free(buf);
	free(back);
	free(moffs);
	free(mlens);
	free(foffs);
	free(flens);
	free(iov);
	return r;
}

static const char *side_name(const struct side *s)
{
	return s->count == 1 && s->spacing == 0 ? "c" : "nc";
}

/* One access pattern, every method, with ratios to POSIX. */
static void point(struct bench *b, const struct side *ms, const struct side *fsd, const char *tag)
{
	struct result res[M_COUNT];
	char access[8];

	snprintf(access, sizeof(access), "%s-%s", side_name(ms), side_name(fsd));
	for (int m = 0; m < M_COUNT; m++) {
		res[m] = measure(b, m, ms, fsd);
		printf("%-10s %-6s %-9s %7llu %7llu %7llu %10.2f %10.2f %9llu %9llu %8.1fx %8.1fx\n",
		       tag, access, method_names[m], (unsigned long long)fsd->count,
		       (unsigned long long)fsd->size, (unsigned long long)fsd->spacing, res[m].wbw,
		       res[m].rbw, (unsigned long long)res[m].requests,
		       (unsigned long long)res[m].desc_bytes, res[m].wbw / res[0].wbw,
		       res[m].rbw / res[0].rbw);
		fflush(stdout);
	}
}

static void header(void)
{
	printf("%-10s %-6s %-9s %7s %7s %7s %10s %10s %9s %9s %9s %9s\n", "run", "access",
	       "method", "regions", "size", "spacing", "write MB/s", "read MB/s", "requests",
	       "desc B", "w/posix", "r/posix");
}

static void usage(void)
{
	fprintf(stderr, "usage: tessera-bench-hpio -c CONFIG [-n COUNT] [-s SIZE] [-p SPACING]\n"
			"         [-N MEM_COUNT] [-S MEM_SIZE] [-P MEM_SPACING] [-a CASE]\n"
			"         [-t SECONDS] [--sweep] [--batch-sweep]\n"
			"  CASE: c-c, nc-c, c-nc, nc-nc or all (the default)\n");
	exit(2);
}

/* The command line. */
struct args {
	const char *config, *only; /* only: an access case, or "all" */
	struct side file, mem;
	double min_time;
	int sweep, batch_sweep;    /* --sweep, --batch-sweep given */
};

/* Sets the option a (a one-letter "-x") to v. */
static void set_option(struct args *g, const char *a, const char *v)
{
	if (!v || a[0] != '-' || strlen(a) != 2)
		usage();
	switch (a[1]) {
	case 'c': g->config = v; break;
	case 'n': g->file.count = strtoull(v, NULL, 0); break;
	case 's': g->file.size = strtoull(v, NULL, 0); break;
	case 'p': g->file.spacing = strtoull(v, NULL, 0); break;
	case 'N': g->mem.count = strtoull(v, NULL, 0); break;
	case 'S': g->mem.size = strtoull(v, NULL, 0); break;
	case 'P': g->mem.spacing = strtoull(v, NULL, 0); break;
	case 'a': g->only = v; break;
	case 't': g->min_time = atof(v); break;
	default: usage();
	}
}

/* Parses the command line; exits 2 on a bad one. The memory side's count
 * and size default to the file's. */
static void parse_args(int argc, char **argv, struct args *g)
{
	*g = (struct args){ NULL, "all", { 4096, 8, 128 }, { 0, 0, 128 }, 0.5, 0, 0 };
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sweep")) {
			g->sweep = 1;
		} else if (!strcmp(argv[i], "--batch-sweep")) {
			g->batch_sweep = 1;
		} else {
			set_option(g, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
			i++;
		}
	}
	if (!g->mem.count)
		g->mem.count = g->file.count;
	if (!g->mem.size)
		g->mem.size = g->file.size;
	if (!g->file.count || !g->file.size ||
	    g->mem.count * g->mem.size != g->file.count * g->file.size) {
		fprintf(stderr, "tessera-bench-hpio: memory (%llu x %llu) and file (%llu x %llu) "
				"must hold the same nonzero number of bytes\n",
			(unsigned long long)g->mem.count, (unsigned long long)g->mem.size,
			(unsigned long long)g->file.count, (unsigned long long)g->file.size);
		exit(2);
	}
}

/* The default point in each access case asked for. */
static void run_cases(struct bench *b, const struct args *g)
{
	static const char *const names[4] = { "c-c", "nc-c", "c-nc", "nc-nc" };

	for (int a = 0; a < 4; a++) {
		struct side ms = g->mem, fsd = g->file;

		if (strcmp(g->only, "all") && strcmp(g->only, names[a]))
			continue;
		if (!(a & 1)) { /* memory contiguous */
			ms.count = 1;
			ms.size = g->mem.count * g->mem.size;
			ms.spacing = 0;
		}
		if (a < 2) { /* file contiguous */
			fsd.count = 1;
			fsd.size = g->file.count * g->file.size;
			fsd.spacing = 0;
		}
		point(b, &ms, &fsd, "default");
	}
}

/* c-nc, one parameter at a time around the defaults. */
static void run_sweep(struct bench *b, const struct side *file)
{
	static const uint64_t counts[] = { 64, 256, 1024, 4096, 16384 };
	static const uint64_t sizes[] = { 8, 64, 512, 4096, 32768 };
	static const uint64_t spacings[] = { 8, 128, 1024, 8192 };

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct side fsd = { counts[i], file->size, file->spacing };
		struct side ms = { 1, counts[i] * file->size, 0 };

		point(b, &ms, &fsd, "count");
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct side fsd = { file->count, sizes[i], file->spacing };
		struct side ms = { 1, file->count * sizes[i], 0 };

		point(b, &ms, &fsd, "size");
	}
	for (size_t i = 0; i < sizeof(spacings) / sizeof(spacings[0]); i++) {
		struct side fsd = { file->count, file->size, spacings[i] };
		struct side ms = { 1, file->count * file->size, 0 };

		point(b, &ms, &fsd, "spacing");
	}
}

/* List I/O's regions per request, c-nc at the defaults and at 64 KiB of
 * data per region count step. */
static void run_batch_sweep(struct bench *b, const struct side *file)
{
	static const uint32_t batches[] = { 64, 256, 1024, 4096, 8192 };
	struct side fsd = { 16384, file->size, file->spacing };
	struct side ms = { 1, 16384 * file->size, 0 };

	printf("list batch (regions per request), c-nc, 16384 regions:\n");
	for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		struct result r;

		tessera_file_set_list_batch(b->f, batches[i]);
		r = measure(b, M_LIST, &ms, &fsd);
		printf("  batch %5u: write %8.2f MB/s, read %8.2f MB/s, %llu requests\n", batches[i],
		       r.wbw, r.rbw, (unsigned long long)r.requests);
	}
	tessera_file_set_list_batch(b->f, 0);
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	struct args g;
	char err[512];

	parse_args(argc, argv, &g);
	b.min_time = g.min_time;
	if (tessera_connect(g.config, &b.fs, err, sizeof(err))) {
		fprintf(stderr, "tessera-bench-hpio: connect: %s\n", err);
		return 1;
	}
	if (tessera_open(b.fs, "/hpio-bench", O_CREAT | O_TRUNC | O_RDWR, 0644, NULL, &b.f))
		die_fs(b.fs, "open /hpio-bench");
	printf("HPIO-style noncontiguous I/O, %u storage daemons; requests and description "
	       "bytes are per write\n", tessera_ios_count(b.fs));
	header();
	run_cases(&b, &g);
	if (g.sweep)
		run_sweep(&b, &g.file);
	if (g.batch_sweep)
		run_batch_sweep(&b, &g.file);
	tessera_close(b.f);
	tessera_unlink(b.fs, "/hpio-bench");
	tessera_disconnect(b.fs);
	return 0;
}
