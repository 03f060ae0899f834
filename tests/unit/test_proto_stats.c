/*
 * test_proto_stats.c - the counter list (tessera_stats.h) and the wire message
 * (IosStatsReply in tessera.proto) agree field by field: same names, same
 * numbers, per-method counters repeated, the others single, all uint64,
 * and no field of the message missing from the list. The library's
 * struct, the daemon's counters and the CLI's columns are generated from
 * the list, so this is what keeps all of them from drifting apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "tproto.h"

static const ProtobufCFieldDescriptor *field(const char *name)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(&tessera__ios_stats_reply__descriptor,
								name);

	if (!f)
		fail_msg("IosStatsReply has no field '%s' (tessera_stats.h lists it)", name);
	return f;
}

static void check_field(const char *name, unsigned num, int per_method)
{
	const ProtobufCFieldDescriptor *f = field(name);

	if (f->id != num)
		fail_msg("IosStatsReply.%s is field %u, tessera_stats.h says %u", name, f->id, num);
	if (per_method && f->label != PROTOBUF_C_LABEL_REPEATED)
		fail_msg("IosStatsReply.%s is kept per method but not repeated", name);
	if (!per_method && f->label == PROTOBUF_C_LABEL_REPEATED)
		fail_msg("IosStatsReply.%s is kept once but repeated", name);
	if (f->type != PROTOBUF_C_TYPE_UINT64)
		fail_msg("IosStatsReply.%s is not a uint64", name);
}

static void test_list_matches_wire(void **state)
{
	unsigned per_method = 0, once = 0;

	(void)state;
#define BY_METHOD(name, num, label, what) check_field(#name, num, 1), per_method++;
	TESSERA_FOR_EACH_METHOD_COUNTER(BY_METHOD)
#undef BY_METHOD
#define ONCE(name, num, label, what) check_field(#name, num, 0), once++;
	TESSERA_FOR_EACH_COUNTER(ONCE)
#undef ONCE
	/* every field of the message is listed */
	assert_int_equal(tessera__ios_stats_reply__descriptor.n_fields, per_method + once);
	/* and the struct holds exactly the listed counters */
	assert_int_equal(sizeof(struct tessera_ios_stats),
			 sizeof(uint64_t) * (per_method * TESSERA_METHODS + once));
}

static void test_methods(void **state)
{
	(void)state;
	assert_int_equal(TESSERA_METHODS, 3);
	assert_string_equal(tessera_method_name(TESSERA_METHOD_CONTIG), "contig");
	assert_string_equal(tessera_method_name(TESSERA_METHOD_LIST), "list");
	assert_string_equal(tessera_method_name(TESSERA_METHOD_DTYPE), "datatype");
	assert_string_equal(tessera_method_name(TESSERA_METHODS), "?");
}

/* Sums go counter by counter. */
static void test_add(void **state)
{
	struct tessera_ios_stats a, b;
	uint64_t *pa = (uint64_t *)&a, *pb = (uint64_t *)&b;
	size_t n = sizeof(a) / sizeof(uint64_t);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		pa[i] = i;
		pb[i] = 1000 * i;
	}
	tessera_ios_stats_add(&a, &b);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pa[i], 1001 * i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_matches_wire),
		cmocka_unit_test(test_methods),
		cmocka_unit_test(test_add),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
