/* test_dataloops_normalize.c - normalisation keeps the expansion and
 * shrinks the tree. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tdl.h"
#include "tdl_int.h"
#include "tdl_model.h"

/* The pieces of (dl, count) at disp, whole stream. */
static size_t pieces(const struct tdl_dataloop *dl, uint64_t count,
		     int64_t disp, struct tdl_piece *out, size_t cap)
{
	struct tdl_segment seg;
	size_t n = 0, got;

	assert_int_equal(tdl_segment_init(&seg, dl, count, disp, 0, UINT64_MAX),
			 0);
	while (!tdl_segment_done(&seg)) {
		assert_true(n < cap);
		assert_int_equal(tdl_segment_next(&seg, out + n, cap - n, &got),
				 0);
		n += got;
	}
	return n;
}

static void same_expansion(const struct tdl_dataloop *a,
			   const struct tdl_dataloop *b, uint64_t count)
{
	static struct tdl_piece pa[8192], pb[8192];
	int64_t disp = 0;
	size_t na, nb;

	assert_int_equal(tdl_size(a), tdl_size(b));
	assert_int_equal(tdl_lb(a), tdl_lb(b));
	assert_int_equal(tdl_extent(a), tdl_extent(b));
	assert_int_equal(tdl_true_lb(a), tdl_true_lb(b));
	assert_int_equal(tdl_true_ub(a), tdl_true_ub(b));
	while (tdl_check_view(a, count, disp, NULL, 0))
		disp += 64;
	na = pieces(a, count, disp, pa, 8192);
	nb = pieces(b, count, disp, pb, 8192);
	assert_int_equal(na, nb);
	if (na)
		assert_memory_equal(pa, pb, na * sizeof(pa[0]));
}

static void test_random(void **state)
{
	struct rng r = { 5150 };
	int shrunk = 0;
	(void)state;

	for (int i = 0; i < 3000; i++) {
		struct tdl_dataloop *dl, *nl;
		struct mtype *t = m_gen_small(&r, 3 + i % 4, 1500, &dl);

		assert_int_equal(tdl_normalize(dl, &nl), 0);
		same_expansion(dl, nl, (uint64_t)rnd_in(&r, 1, 3));
		assert_true(tdl_node_count(nl) <= tdl_node_count(dl));
		shrunk += tdl_node_count(nl) < tdl_node_count(dl);
		/* Normalising again changes nothing. */
		{
			struct tdl_dataloop *n2;
			assert_int_equal(tdl_normalize(nl, &n2), 0);
			assert_int_equal(tdl_node_count(n2),
					 tdl_node_count(nl));
			same_expansion(nl, n2, 2);
			tdl_free(n2);
		}
		m_free(t);
		tdl_free(dl);
		tdl_free(nl);
	}
	assert_true(shrunk > 500);
}

/* Contig children fold: vector of contig of contig of bytes is one node. */
static void test_fold_contig(void **state)
{
	struct tdl_dataloop *b, *c1, *c2, *v, *n;
	(void)state;

	assert_int_equal(tdl_bytes(2, &b), 0);
	assert_int_equal(tdl_contig(3, b, &c1), 0);
	assert_int_equal(tdl_contig(4, c1, &c2), 0);
	assert_int_equal(tdl_vector(5, 2, -3, c2, &v), 0);
	assert_int_equal(tdl_node_count(v), 4);
	assert_int_equal(tdl_normalize(v, &n), 0);
	assert_int_equal(tdl_node_count(n), 1);
	assert_int_equal(n->nodes[n->root].kind, TDL_VECTOR);
	assert_int_equal(n->nodes[n->root].blocklen, 2 * 24);
	assert_int_equal(n->nodes[n->root].child, -1);
	same_expansion(v, n, 3);
	tdl_free(n);
	tdl_free(v);
	tdl_free(c2);
	tdl_free(c1);
	tdl_free(b);
}

/* A struct whose children are all one type becomes indexed. */
static void test_struct_same(void **state)
{
	struct tdl_dataloop *b, *v, *s, *n;
	int64_t bl[3] = { 1, 2, 1 }, d[3] = { 0, 100, 40 };
	const struct tdl_dataloop *ts[3];
	(void)state;

	assert_int_equal(tdl_bytes(1, &b), 0);
	assert_int_equal(tdl_hvector(3, 1, 7, b, &v), 0);
	ts[0] = ts[1] = ts[2] = v;
	assert_int_equal(tdl_struct(3, bl, d, ts, &s), 0);
	assert_int_equal(tdl_normalize(s, &n), 0);
	assert_int_equal(n->nodes[n->root].kind, TDL_INDEXED);
	assert_int_equal(tdl_node_count(n), 2);
	same_expansion(s, n, 2);
	tdl_free(n);
	tdl_free(s);
	tdl_free(v);
	tdl_free(b);
}

/* Vectors of vectors with matching strides fuse. */
static void test_fuse_vectors(void **state)
{
	struct tdl_dataloop *b, *in, *in2, *out, *n;
	(void)state;

	assert_int_equal(tdl_bytes(4, &b), 0);
	/* Inner: 3 blocks of 1 at stride 16 B, extent resized to 48. */
	assert_int_equal(tdl_hvector(3, 1, 16, b, &in2), 0);
	assert_int_equal(tdl_resized(in2, 0, 48, &in), 0);
	/* Outer: 5 blocks of 2 inner at stride 96 = 2 x 48. */
	assert_int_equal(tdl_hvector(5, 2, 96, in, &out), 0);
	assert_int_equal(tdl_node_count(out), 3);
	assert_int_equal(tdl_normalize(out, &n), 0);
	assert_int_equal(tdl_node_count(n), 1);
	assert_int_equal(n->nodes[n->root].kind, TDL_VECTOR);
	assert_int_equal(n->nodes[n->root].count, 30);
	assert_int_equal(n->nodes[n->root].stride, 16);
	same_expansion(out, n, 2);
	tdl_free(n);
	tdl_free(out);
	tdl_free(in);
	tdl_free(in2);
	tdl_free(b);
}

/* A resized contig does not fold: its extent is not count x element. */
static void test_no_fold_resized(void **state)
{
	struct tdl_dataloop *b, *c, *rc, *v, *n;
	(void)state;

	assert_int_equal(tdl_bytes(2, &b), 0);
	assert_int_equal(tdl_hvector(2, 1, 5, b, &c), 0);
	assert_int_equal(tdl_resized(c, 0, 9, &rc), 0);
	assert_int_equal(tdl_contig(3, rc, &v), 0);
	assert_int_equal(tdl_normalize(v, &n), 0);
	same_expansion(v, n, 2);
	assert_true(tdl_node_count(n) >= 2);
	tdl_free(n);
	tdl_free(v);
	tdl_free(rc);
	tdl_free(c);
	tdl_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_fold_contig),
		cmocka_unit_test(test_struct_same),
		cmocka_unit_test(test_fuse_vectors),
		cmocka_unit_test(test_no_fold_resized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
