/*
 * test_ios_rights.c - the rights each storage opcode needs (TP_OPCODES'
 * last column, proto/tproto.h) and the gatekeeper's first step
 * (ios_cap_need, server/ios_cap.c): every opcode the storage daemon
 * serves declares a right; the rights are today's (the table below is
 * the reviewed copy: a change to a row must change it too; WRITE for all
 * that changes state, issue 29); an exclusive lock needs WRITE; a request
 * of each opcode that needs a capability yields that capability, its
 * objects and its rights; and an opcode without a declared right, or a
 * request without the fields its right needs, is refused.
 *
 * That a row without a right cannot be added at all is the compiler's
 * part: TP_OPCODES' rows have six columns, so a five-column row fails
 * every expansion, and a right that is not a TP_RIGHT_ name fails
 * proto/frame.c's _Static_assert.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ios.h"

struct row {
	unsigned op;
	const char *who;
	const ProtobufCMessageDescriptor *req;
	enum tp_right right;
};

static const struct row rows[] = {
#define ROW(name, num, req, rep, who, right) \
	{ num, #who, &tessera__##req##__descriptor, TP_RIGHT_##right },
	TP_OPCODES(ROW)
#undef ROW
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const uint32_t RW = TP_CAP_READ | TP_CAP_WRITE;

/* Today's rights of the storage opcodes: capability rights of which one
 * is needed (0: no capability), and whether it must name the objects. */
static const struct {
	unsigned op;
	uint32_t caps;
	int objects;
} today[] = {
	{ TP_OP_PING, 0, 0 },
	{ TP_OP_WRITE, TP_CAP_WRITE, 1 },
	{ TP_OP_READ, TP_CAP_READ, 1 },
	{ TP_OP_GETSIZE, TP_CAP_STAT | TP_CAP_READ | TP_CAP_WRITE, 1 },
	{ TP_OP_TRUNCATE, TP_CAP_WRITE, 1 },
	{ TP_OP_REMOVE, TP_CAP_REMOVE, 1 },
	{ TP_OP_SYNC, TP_CAP_WRITE, 1 },
	{ TP_OP_IOS_STATFS, 0, 0 },
	{ TP_OP_IOS_STATS, 0, 0 },
	{ TP_OP_FETCH_ADD, TP_CAP_WRITE, 1 },
	{ TP_OP_OBJECT_LIST, TP_CAP_ADMIN, 0 },
	{ TP_OP_LIST_WRITE, TP_CAP_WRITE, 1 },
	{ TP_OP_LIST_READ, TP_CAP_READ, 1 },
	{ TP_OP_DTYPE_WRITE, TP_CAP_WRITE, 1 },
	{ TP_OP_DTYPE_READ, TP_CAP_READ, 1 },
	{ TP_OP_LOCAL_OPEN, TP_CAP_READ, 1 },
	{ TP_OP_FALLOCATE, TP_CAP_WRITE, 1 },
	{ TP_OP_LOCK_ACQUIRE, TP_CAP_READ | TP_CAP_WRITE, 1 },
	{ TP_OP_LOCK_RELEASE, TP_CAP_READ | TP_CAP_WRITE, 1 },
	{ TP_OP_LEASE, TP_CAP_READ | TP_CAP_WRITE, 0 },
	{ TP_OP_LOCK_TEST, TP_CAP_READ | TP_CAP_WRITE, 1 },
	/* a versioned object's log: its state; MERGE also wants WRITE (ios_vlogd.c) */
	{ TP_OP_VLOG, TP_CAP_STAT | TP_CAP_READ | TP_CAP_WRITE, 1 },
};

static int served_by_ios(const struct row *r)
{
	return !strcmp(r->who, "IOS") || !strcmp(r->who, "ALL");
}

static void test_every_opcode_declares(void **state)
{
	size_t ios = 0;

	(void)state;
	for (size_t i = 0; i < NROWS; i++) {
		assert_true(rows[i].right > TP_RIGHT_UNDECLARED && rows[i].right < TP_RIGHT_LIMIT);
		assert_int_equal(tp_opcode_right(rows[i].op), rows[i].right);
		if (!served_by_ios(&rows[i]))
			continue;
		ios++;
		for (size_t k = 0;; k++) {
			if (k == sizeof(today) / sizeof(today[0]))
				fail_msg("opcode %u (%s) is served by the storage daemon but its"
					 " right is not in this test's reviewed table", rows[i].op,
					 tp_opcode_name(rows[i].op));
			if (today[k].op != rows[i].op)
				continue;
			assert_int_equal(tp_right_caps(rows[i].right), today[k].caps);
			assert_int_equal(tp_right_names_objects(rows[i].right), today[k].objects);
			break;
		}
	}
	assert_int_equal(ios, sizeof(today) / sizeof(today[0]));
}

/* An empty request of each storage opcode, with a capability and objects
 * set by field name as a client would: the gatekeeper finds them. */
static void test_need_of_each_request(void **state)
{
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	uint64_t objs[3] = { 7, 8, 9 };

	(void)state;
	for (size_t i = 0; i < NROWS; i++) {
		const ProtobufCMessageDescriptor *d = rows[i].req;
		const ProtobufCFieldDescriptor *f;
		ProtobufCMessage *msg;
		struct ios_cap_need n;
		char *base;

		if (!served_by_ios(&rows[i]))
			continue;
		msg = calloc(1, d->sizeof_message);
		assert_non_null(msg);
		protobuf_c_message_init(d, msg);
		base = (char *)msg;
		if (rows[i].right == TP_RIGHT_NONE) {
			assert_int_equal(ios_cap_need(rows[i].op, msg, &n), 0);
			free(msg);
			continue;
		}
		f = protobuf_c_message_descriptor_get_field_by_name(d, "cap");
		assert_non_null(f);
		*(Tessera__Capability **)(base + f->offset) = &cap;
		if ((f = protobuf_c_message_descriptor_get_field_by_name(d, "handle"))) {
			*(uint64_t *)(base + f->offset) = objs[0];
		} else if ((f = protobuf_c_message_descriptor_get_field_by_name(d, "handles"))) {
			*(uint64_t **)(base + f->offset) = objs;
			*(size_t *)(base + f->quantifier_offset) = 3;
		}
		assert_int_equal(ios_cap_need(rows[i].op, msg, &n), 1);
		assert_ptr_equal(n.cap, &cap);
		/* (an empty LOCK_ACQUIRE's mode is unset: judged exclusive; an
		 * empty VLOG's op too: judged a merge) */
		assert_int_equal(n.rights, rows[i].op == TP_OP_LOCK_ACQUIRE ||
					   rows[i].op == TP_OP_VLOG ? TP_CAP_WRITE :
					   tp_right_caps(rows[i].right));
		if (tp_right_names_objects(rows[i].right)) {
			assert_non_null(f);
			assert_true(n.n == 1 || n.n == 3);
			assert_int_equal(n.handles[0], 7);
			if (n.n == 3)
				assert_int_equal(n.handles[2], 9);
		} else {
			assert_int_equal(n.n, 0);
		}
		free(msg);
	}
}

/* VLOG's row says STAT (its state); a merge needs WRITE (issue 25). */
static void test_vlog_merge_needs_write(void **state)
{
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	Tessera__VlogRequest m = TESSERA__VLOG_REQUEST__INIT;
	struct ios_cap_need n;

	(void)state;
	m.cap = &cap;
	m.handle = 7;
	m.op = TESSERA__VLOG_OP__VLOG_STATE;
	assert_int_equal(ios_cap_need(TP_OP_VLOG, &m.base, &n), 1);
	assert_int_equal(n.rights, TP_CAP_STAT | TP_CAP_READ | TP_CAP_WRITE);
	m.op = TESSERA__VLOG_OP__VLOG_MERGE;
	assert_int_equal(ios_cap_need(TP_OP_VLOG, &m.base, &n), 1);
	assert_int_equal(n.rights, TP_CAP_WRITE);
}

/* No row, no service: opcodes outside the table, rights outside the enum,
 * and requests without the fields their right needs are refused. */
static void test_undeclared_refused(void **state)
{
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	Tessera__LeaseRequest lease = TESSERA__LEASE_REQUEST__INIT;
	struct ios_cap_need n;

	(void)state;
	for (unsigned op = 0; op < TP_OP_LIMIT; op++) {
		if (tp_opcode_name(op))
			continue;
		assert_int_equal(tp_opcode_right(op), TP_RIGHT_UNDECLARED);
		assert_int_equal(ios_cap_need(op, &ping.base, &n), -EPROTO);
	}
	assert_int_equal(ios_cap_need(1000, &ping.base, &n), -EPROTO);
	assert_int_equal(tp_right_caps(TP_RIGHT_UNDECLARED), 0);
	assert_int_equal(tp_right_caps(TP_RIGHT_LIMIT), 0);
	assert_int_equal(tp_right_caps((enum tp_right)-1), 0);
	/* A READ whose message has no cap, and one naming no object. */
	assert_int_equal(ios_cap_need(TP_OP_READ, &ping.base, &n), -EPROTO);
	assert_int_equal(ios_cap_need(TP_OP_READ, &lease.base, &n), -EPROTO);
	assert_int_equal(ios_cap_need(TP_OP_LEASE, &lease.base, &n), 1);
	assert_int_equal(n.rights, RW);
}

/* A lock's mode is in its body: a shared lock keeps read-or-write, an
 * exclusive one (or a mode that is neither) needs write, since it keeps
 * every other holder out of the bytes. */
static void test_exclusive_lock_needs_write(void **state)
{
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	Tessera__LockAcquireRequest m = TESSERA__LOCK_ACQUIRE_REQUEST__INIT;
	Tessera__LockReleaseRequest rel = TESSERA__LOCK_RELEASE_REQUEST__INIT;
	struct ios_cap_need n;

	(void)state;
	m.cap = &cap;
	m.handle = 7;
	m.mode = TESSERA__LOCK_MODE__LOCK_READ;
	assert_int_equal(ios_cap_need(TP_OP_LOCK_ACQUIRE, &m.base, &n), 1);
	assert_int_equal(n.rights, RW);
	m.mode = TESSERA__LOCK_MODE__LOCK_WRITE;
	assert_int_equal(ios_cap_need(TP_OP_LOCK_ACQUIRE, &m.base, &n), 1);
	assert_int_equal(n.rights, TP_CAP_WRITE);
	m.mode = 77;
	assert_int_equal(ios_cap_need(TP_OP_LOCK_ACQUIRE, &m.base, &n), 1);
	assert_int_equal(n.rights, TP_CAP_WRITE);
	/* releasing one's own lock (ios_lock.c checks whose) */
	rel.cap = &cap;
	rel.handle = 7;
	assert_int_equal(ios_cap_need(TP_OP_LOCK_RELEASE, &rel.base, &n), 1);
	assert_int_equal(n.rights, RW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_opcode_declares),
		cmocka_unit_test(test_need_of_each_request),
		cmocka_unit_test(test_vlog_merge_needs_write),
		cmocka_unit_test(test_undeclared_refused),
		cmocka_unit_test(test_exclusive_lock_needs_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
