/*
 * fuzz_dataloop_decode.c - libFuzzer target for tp_dataloop_decode.
 *
 * Whatever the input, decoding must either fail with -EINVAL and a message
 * or produce a dataloop that every other entry point handles: it
 * re-encodes to an encoding that decodes again, normalises to the same
 * pieces, and the segment engine walks it (bounded) without faults.
 *
 * Built with -DFUZZ_SEED_MAIN instead, it is a plain program writing a
 * seed corpus of encodings of builder-made dataloops into a directory.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl.h"
#include "tproto.h"

#ifndef FUZZ_SEED_MAIN

/* Walk up to a few batches of the whole stream and the slot-1 strips. */
static size_t walk(const struct tdl_dataloop *dl, int64_t disp, int server,
		   struct tdl_piece *out, size_t cap)
{
	struct tdl_layout l = { 7, 3 };
	struct tdl_segment seg;
	size_t n = 0, got;
	int rc = server ? tdl_segment_init_server(&seg, dl, 2, disp, 3,
						  1 << 20, &l, 1)
			: tdl_segment_init(&seg, dl, 2, disp, 3, 1 << 20);

	if (rc)
		return 0;
	for (int i = 0; i < 8 && n < cap && !tdl_segment_done(&seg); i++) {
		if (tdl_segment_next(&seg, out + n, cap - n < 16 ? cap - n : 16,
				     &got))
			abort();
		n += got;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tdl_dataloop *dl = NULL, *again = NULL, *norm = NULL;
	static struct tdl_piece a[128], b[128];
	char err[256];
	uint8_t *buf;
	size_t len, got;
	int64_t disp;
	int rc = tp_dataloop_decode(data, size, &dl, err, sizeof(err));

	if (rc) {
		if (rc != -EINVAL || dl || err[0] == 0)
			abort();
		return 0;
	}
	len = tp_dataloop_encoded_size(dl);
	buf = malloc(len ? len : 1);
	if (!buf || tp_dataloop_encode(dl, buf, len, &got) || got != len)
		abort();
	if (tp_dataloop_decode(buf, len, &again, err, sizeof(err)))
		abort();
	free(buf);

	disp = tdl_true_lb(dl) < 0 ? -tdl_true_lb(dl) : 0;
	if (tdl_normalize(dl, &norm) == 0) {
		for (int server = 0; server < 2; server++) {
			size_t na = walk(dl, disp, server, a, 128);
			size_t nb = walk(norm, disp, server, b, 128);
			size_t n = na < nb ? na : nb;
			/* Batches may end at different places; the common
			 * prefix of whole pieces must agree. */
			if (n > 1 &&
			    memcmp(a, b, (n - 1) * sizeof(a[0])) != 0)
				abort();
		}
		tdl_free(norm);
	}
	tdl_free(again);
	tdl_free(dl);
	return 0;
}

#else /* FUZZ_SEED_MAIN */

static int save(const char *dir, int k, struct tdl_dataloop *dl)
{
	char path[4096];
	size_t len = tp_dataloop_encoded_size(dl), got;
	uint8_t *buf = malloc(len ? len : 1);
	FILE *f;

	if (!buf || tp_dataloop_encode(dl, buf, len, &got))
		return -1;
	snprintf(path, sizeof(path), "%s/seed-%02d", dir, k);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		return -1;
	free(buf);
	tdl_free(dl);
	return 0;
}

int main(int argc, char **argv)
{
	struct tdl_dataloop *b, *d, *v, *x;
	int64_t bl[3] = { 1, 2, 3 }, disp[3] = { 0, 40, -16 };
	int64_t sizes[3] = { 8, 6, 5 }, sub[3] = { 3, 2, 4 },
		start[3] = { 1, 2, 0 };
	int dist[2] = { TDL_DISTRIBUTE_BLOCK, TDL_DISTRIBUTE_CYCLIC };
	int dargs[2] = { TDL_DISTRIBUTE_DFLT_DARG, 2 }, ps[2] = { 2, 2 };
	const struct tdl_dataloop *ts[3];
	int k = 0, rc = 0;

	if (argc != 2)
		return 2;
	tdl_bytes(1, &b);
	tdl_bytes(8, &d);
	tdl_vector(4, 2, -3, d, &v);
	rc |= save(argv[1], k++, (tdl_bytes(16, &x), x));
	rc |= save(argv[1], k++, (tdl_hvector(3, 1, 24, d, &x), x));
	rc |= save(argv[1], k++, (tdl_indexed(3, bl, disp, b, &x), x));
	rc |= save(argv[1], k++, (tdl_hindexed_block(3, 2, disp, v, &x), x));
	ts[0] = b, ts[1] = v, ts[2] = d;
	rc |= save(argv[1], k++, (tdl_struct(3, bl, disp, ts, &x), x));
	rc |= save(argv[1], k++, (tdl_resized(v, -8, 100, &x), x));
	rc |= save(argv[1], k++,
		   (tdl_subarray(3, sizes, sub, start, TDL_ORDER_C, d, &x), x));
	rc |= save(argv[1], k++,
		   (tdl_darray(4, 3, 2, sizes, dist, dargs, ps,
			       TDL_ORDER_FORTRAN, d, &x),
		    x));
	tdl_free(v);
	tdl_free(d);
	tdl_free(b);
	return rc ? 1 : 0;
}

#endif
