/* test_proto_dataloop.c - dataloops as protobuf (proto/dataloop.c): encoding
 * round trips and decoder validation. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "tdl.h"
#include "tdl_model.h"
#include "tproto.h"

/* Whole-stream pieces must match between two dataloops. */
static void same_pieces(const struct tdl_dataloop *a,
			const struct tdl_dataloop *b)
{
	struct tdl_segment sa, sb;
	struct tdl_piece pa[32], pb[32];
	int64_t disp = 0;

	while (tdl_check_view(a, 2, disp, NULL, 0))
		disp += 64;
	assert_int_equal(tdl_segment_init(&sa, a, 2, disp, 0, UINT64_MAX), 0);
	assert_int_equal(tdl_segment_init(&sb, b, 2, disp, 0, UINT64_MAX), 0);
	while (!tdl_segment_done(&sa)) {
		size_t na, nb;
		assert_int_equal(tdl_segment_next(&sa, pa, 32, &na), 0);
		assert_int_equal(tdl_segment_next(&sb, pb, 32, &nb), 0);
		assert_int_equal(na, nb);
		if (na)
			assert_memory_equal(pa, pb, na * sizeof(pa[0]));
	}
	assert_true(tdl_segment_done(&sb));
}

static void test_round_trip(void **state)
{
	struct rng r = { 8086 };
	(void)state;

	for (int i = 0; i < 1500; i++) {
		struct tdl_dataloop *dl, *back;
		struct mtype *t = m_gen_small(&r, 2 + i % 5, 3000, &dl);
		size_t len = tp_dataloop_encoded_size(dl), len2, got;
		uint8_t *buf = malloc(len + 1), *buf2;
		char err[200] = "";

		assert_int_equal(tp_dataloop_encode(dl, buf, len - (len > 0), &got),
				 len > 0 ? -ENOSPC : 0);
		assert_int_equal(tp_dataloop_encode(dl, buf, len, &got), 0);
		assert_int_equal(got, len);
		assert_int_equal(tp_dataloop_decode(buf, len, &back, err, sizeof(err)),
				 0);
		assert_int_equal(tdl_node_count(back), tdl_node_count(dl));
		assert_int_equal(tdl_size(back), tdl_size(dl));
		assert_int_equal(tdl_extent(back), tdl_extent(dl));
		assert_int_equal(tdl_lb(back), tdl_lb(dl));
		same_pieces(dl, back);
		/* Re-encoding gives the same bytes. */
		len2 = tp_dataloop_encoded_size(back);
		assert_int_equal(len2, len);
		buf2 = malloc(len2);
		assert_int_equal(tp_dataloop_encode(back, buf2, len2, &got), 0);
		assert_memory_equal(buf, buf2, len);
		/* Every strict prefix is rejected. */
		for (size_t cut = 0; cut < len; cut += 1 + len / 16) {
			struct tdl_dataloop *x = NULL;
			assert_int_equal(tp_dataloop_decode(buf, cut, &x, err,
						    sizeof(err)),
					 -EINVAL);
			assert_null(x);
			assert_true(strlen(err) > 0);
		}
		free(buf);
		free(buf2);
		m_free(t);
		tdl_free(back);
		tdl_free(dl);
	}
}

/* Random corruption never crashes and either decodes to a valid dataloop
 * or is rejected with a message. */
static void test_corrupt(void **state)
{
	struct rng r = { 6502 };
	(void)state;

	for (int i = 0; i < 1500; i++) {
		struct tdl_dataloop *dl, *back = NULL;
		struct mtype *t = m_gen_small(&r, 2 + i % 4, 2000, &dl);
		size_t len = tp_dataloop_encoded_size(dl), got;
		uint8_t *buf = malloc(len);
		char err[200] = "";
		int rc;

		assert_int_equal(tp_dataloop_encode(dl, buf, len, &got), 0);
		for (int k = 0; k < 1 + i % 3; k++)
			buf[rnd(&r) % len] ^= (uint8_t)(1u << (rnd(&r) % 8));
		rc = tp_dataloop_decode(buf, len, &back, err, sizeof(err));
		if (rc == 0) {
			/* Valid dataloops are usable. */
			struct tdl_segment seg;
			struct tdl_piece p[16];
			size_t n;
			int64_t lo = tdl_true_lb(back);
			if (tdl_size(back) > 0 &&
			    tdl_check_view(back, 1, lo < 0 ? -lo : 0, NULL,
					   0) == 0) {
				assert_int_equal(
					tdl_segment_init(&seg, back, 1,
							 lo < 0 ? -lo : 0, 0,
							 4096),
					0);
				for (int s = 0; s < 50 &&
						!tdl_segment_done(&seg);
				     s++)
					assert_int_equal(tdl_segment_next(
								 &seg, p, 16,
								 &n),
							 0);
			}
			tdl_free(back);
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_null(back);
			assert_true(strlen(err) > 0);
		}
		free(buf);
		m_free(t);
		tdl_free(dl);
	}
}

/* Hand-made messages: nodes[i] gets kind/count/child; arrays as given. */
struct mnode {
	int kind;
	int64_t count, blocklen, stride;
	int32_t child;
	int64_t *offsets, *blocklens;
	int32_t *children;
	size_t noff, nlen, nch;
	int64_t lb, extent;
};

static int decode_nodes(const struct mnode *mn, size_t n, uint32_t root,
			char *err, size_t errlen)
{
	Tessera__Dataloop m = TESSERA__DATALOOP__INIT;
	Tessera__DataloopNode *nodes = calloc(n, sizeof(*nodes));
	Tessera__DataloopNode **ptrs = calloc(n, sizeof(*ptrs));
	struct tdl_dataloop *dl = NULL;
	uint8_t *buf;
	size_t len;
	int rc;

	for (size_t i = 0; i < n; i++) {
		tessera__dataloop_node__init(&nodes[i]);
		nodes[i].kind = (uint32_t)mn[i].kind;
		nodes[i].count = mn[i].count;
		nodes[i].blocklen = mn[i].blocklen;
		nodes[i].stride = mn[i].stride;
		nodes[i].child = mn[i].child;
		nodes[i].offsets = mn[i].offsets;
		nodes[i].n_offsets = mn[i].noff;
		nodes[i].blocklens = mn[i].blocklens;
		nodes[i].n_blocklens = mn[i].nlen;
		nodes[i].children = mn[i].children;
		nodes[i].n_children = mn[i].nch;
		nodes[i].lb = mn[i].lb;
		nodes[i].extent = mn[i].extent;
		ptrs[i] = &nodes[i];
	}
	m.root = root;
	m.n_nodes = n;
	m.nodes = ptrs;
	m.node_count = (uint32_t)n;
	len = tessera__dataloop__get_packed_size(&m);
	buf = malloc(len);
	tessera__dataloop__pack(&m, buf);
	err[0] = 0;
	rc = tp_dataloop_decode(buf, len, &dl, err, errlen);
	if (rc == 0)
		assert_non_null(dl);
	else
		assert_null(dl);
	tdl_free(dl);
	free(buf);
	free(nodes);
	free(ptrs);
	return rc;
}

#define EXPECT_REJECT(nodes, n, root, text)                                 \
	do {                                                                \
		char err_[256];                                             \
		assert_int_equal(decode_nodes(nodes, n, root, err_,         \
					      sizeof(err_)),                \
				 -EINVAL);                                  \
		if (!strstr(err_, text))                                    \
			fail_msg("error \"%s\" lacks \"%s\"", err_, text);  \
	} while (0)

static void test_reject_rules(void **state)
{
	int64_t offs[2] = { 0, 8 }, lens[2] = { 1, -3 };
	int32_t kids[2] = { -1, 7 };
	struct mnode ok = { .kind = TDL_CONTIG, .count = 4, .child = -1,
			    .extent = 4 };
	struct mnode n[3];
	char err[256];
	(void)state;

	assert_int_equal(decode_nodes(&ok, 1, 0, err, sizeof(err)), 0);

	n[0] = ok;
	n[0].count = -2;
	EXPECT_REJECT(n, 1, 0, "dataloop node 0: count -2 is negative");

	n[0] = ok;
	n[0].kind = TDL_VECTOR;
	n[0].blocklen = -1;
	EXPECT_REJECT(n, 1, 0, "node 0: block length -1 is negative");

	n[0] = ok;
	n[0].kind = 9;
	EXPECT_REJECT(n, 1, 0, "node 0: unknown kind 9");

	n[0] = ok;
	n[0].kind = TDL_INDEXED;
	n[0].count = 2;
	n[0].offsets = offs;
	n[0].noff = 2;
	n[0].blocklens = lens;
	n[0].nlen = 2;
	EXPECT_REJECT(n, 1, 0, "block length -3 of block 1 is negative");
	n[0].nlen = 1;
	EXPECT_REJECT(n, 1, 0, "1 block lengths");

	n[0] = ok;
	n[0].kind = TDL_STRUCT;
	n[0].count = 2;
	n[0].offsets = offs;
	n[0].noff = 2;
	lens[1] = 1;
	n[0].blocklens = lens;
	n[0].nlen = 2;
	n[0].children = kids;
	n[0].nch = 2;
	EXPECT_REJECT(n, 1, 0, "child 7 of block 1 is not a node");

	n[0] = ok;
	n[0].child = 3;
	EXPECT_REJECT(n, 1, 0, "child 3 is not a node");
	EXPECT_REJECT(&ok, 1, 1, "root 1 is not a node");

	/* Cycles: 0 -> 1 -> 0, and a node that is its own child. */
	n[0] = ok;
	n[0].child = 1;
	n[1] = ok;
	n[1].child = 0;
	EXPECT_REJECT(n, 2, 0, "reference cycle");
	n[0].child = 0;
	EXPECT_REJECT(n, 1, 0, "node 0: reference cycle");

	/* 64-bit overflow: size, and extent x count. */
	n[0] = ok;
	n[0].count = INT64_MAX / 2;
	n[1] = ok;
	n[1].child = -1;
	n[0].child = 1;
	EXPECT_REJECT(n, 2, 0, "node 0: size overflows 64 bits");
	n[0] = ok;
	n[0].kind = TDL_VECTOR;
	n[0].count = 1 << 20;
	n[0].blocklen = 1;
	n[0].stride = INT64_MAX / 1000;
	EXPECT_REJECT(n, 1, 0, "overflows 64 bits");
	n[0] = ok;
	n[0].count = 1 << 20;
	n[0].child = 1;
	n[1] = ok;
	n[1].extent = INT64_MIN / 1000;
	EXPECT_REJECT(n, 2, 0, "node 0: offset or extent x count overflows");
}

static void test_reject_limits(void **state)
{
	struct mnode *chain = calloc(TDL_MAX_NODES + 1, sizeof(*chain));
	char err[256];
	uint8_t big[16] = { 0 };
	struct tdl_dataloop *dl = NULL;
	(void)state;

	/* A chain of contigs: node i's child is i + 1, the last a byte. */
	for (int i = 0; i <= TDL_MAX_NODES; i++) {
		chain[i].kind = TDL_CONTIG;
		chain[i].count = 1;
		chain[i].child = i + 1;
		chain[i].extent = 1;
	}
	chain[TDL_MAX_DEPTH - 1].child = -1;
	assert_int_equal(decode_nodes(chain, TDL_MAX_DEPTH, 0, err,
				      sizeof(err)),
			 0);
	chain[TDL_MAX_DEPTH - 1].child = TDL_MAX_DEPTH;
	chain[TDL_MAX_DEPTH].child = -1;
	EXPECT_REJECT(chain, TDL_MAX_DEPTH + 1, 0, "deeper than 24 levels");

	for (int i = 0; i <= TDL_MAX_NODES; i++)
		chain[i].child = -1;
	EXPECT_REJECT(chain, TDL_MAX_NODES + 1, 0, "4097 nodes");
	EXPECT_REJECT(chain, 0, 0, "0 nodes");
	free(chain);
	assert_int_equal(tp_dataloop_decode(big, (size_t)TP_DATALOOP_MAX_ENCODED + 1, &dl, err,
				    sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "exceeds"));
	/* Garbage that is not protobuf at all. */
	memset(big, 0xff, sizeof(big));
	assert_int_equal(tp_dataloop_decode(big, sizeof(big), &dl, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "malformed"));
	assert_null(dl);
	/* A NULL message buffer is allowed. */
	assert_int_equal(tp_dataloop_decode(big, sizeof(big), &dl, NULL, 0), -EINVAL);
}

/* Offsets below zero after the displacement are rejected by
 * tdl_check_view, which names the offset. */
static void test_check_view(void **state)
{
	struct mnode n = { .kind = TDL_VECTOR, .count = 3, .blocklen = 2,
			   .stride = -10, .child = -1, .lb = -20,
			   .extent = 22 };
	Tessera__Dataloop m = TESSERA__DATALOOP__INIT;
	Tessera__DataloopNode e = TESSERA__DATALOOP_NODE__INIT, *pe = &e;
	struct tdl_dataloop *dl;
	char err[256];
	(void)state;

	e.kind = (uint32_t)n.kind;
	e.count = n.count;
	e.blocklen = n.blocklen;
	e.stride = n.stride;
	e.child = -1;
	e.lb = n.lb;
	e.extent = n.extent;
	m.n_nodes = 1;
	m.nodes = &pe;
	m.node_count = 1;
	assert_int_equal(tp_dataloop_from_msg(&m, &dl, err, sizeof(err)), 0);
	assert_int_equal(tdl_true_lb(dl), -20);
	assert_int_equal(tdl_check_view(dl, 1, 20, err, sizeof(err)), 0);
	assert_int_equal(tdl_check_view(dl, 1, 19, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "file offset -1 is negative"));
	assert_int_equal(tdl_check_view(dl, INT64_MAX / 4, 20, err,
					sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "overflow"));
	tdl_free(dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_reject_rules),
		cmocka_unit_test(test_reject_limits),
		cmocka_unit_test(test_check_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
