/*
 * fuzz_lockmgr.c - libFuzzer target for the lock manager (lockmgr/):
 * sequences of create, acquire (blocking or not, capped or not), partial
 * and full release, cancel and owner release, chosen by the input, on a
 * small table (few objects, owners and bytes, so requests collide), with
 * malformed calls mixed in.
 *
 * After every call, besides tlk_table_check's internal invariants, the
 * target checks what tlk.h promises from outside:
 *   - every answer and request holds a prefix: the bytes it holds are
 *     exactly its wanted bytes below its position, and info.held_bytes,
 *     last_abs_offset and the table's byte counts agree with that;
 *   - no two requests on one object hold a byte in conflicting modes;
 *   - a call's events name only requests that were parked before it (GONE
 *     only from an owner release), and each wait ends once;
 *   - calls on unknown ids answer -ENOENT, malformed ones -EINVAL, and
 *     neither changes anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlk.h"

#define NREQ 12    /* request slots */
#define NOBJ 3
#define NOWNER 4
#define MAXR 4     /* ranges per request */

struct req {
	uint64_t id;               /* 0: free */
	uint64_t object, owner;
	enum tlk_mode mode;
	struct tlk_range r[MAXR];
	size_t n;
	int parked;                /* per the last answer or event */
};

struct fz {
	const uint8_t *p;
	size_t n;
};

static unsigned u8(struct fz *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_lockmgr: %s:%d: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
			abort();                                                 \
		}                                                                \
	} while (0)

/* The logical offset of object byte x: each object its own file region. */
static uint64_t logical_of(uint64_t object, uint64_t x)
{
	return object * 1000 + x;
}

/* Bytes of r held with position `next`; the object bytes [*lo, *hi). */
static uint64_t held_in(const struct tlk_range *r, uint64_t next, uint64_t *lo, uint64_t *hi)
{
	uint64_t n = next == TLK_NONE || next >= r->logical + r->length ? r->length
		     : next > r->logical ? next - r->logical : 0;

	*lo = r->offset;
	*hi = r->offset + n;
	return n;
}

/* Request r as the table describes it (info): its fields, the bytes
 * it holds and its state. Answers the bytes held. */
static uint64_t check_request(const struct req *r, const struct tlk_request_info *info)
{
	uint64_t held = 0, last = TLK_NONE, lo, hi;

	CHECK(info->object == r->object && info->owner == r->owner && info->mode == r->mode &&
	      info->ranges == r->n);
	for (size_t k = 0; k < r->n; k++) {
		uint64_t h = held_in(&r->r[k], info->answer.next_abs_offset, &lo, &hi);

		held += h;
		if (h)
			last = r->r[k].logical + h - 1;
	}
	CHECK(held == info->held_bytes && last == info->answer.last_abs_offset);
	CHECK((info->answer.state == TLK_GRANTED) == (info->answer.next_abs_offset == TLK_NONE));
	CHECK((info->answer.state == TLK_WAITING) == r->parked);
	return held;
}

/* No byte held by both a and b (live requests on one object, not both
 * reads; ia, ib: their info). */
static void check_no_conflict(const struct req *a, const struct tlk_request_info *ia,
			      const struct req *b, const struct tlk_request_info *ib)
{
	for (size_t x = 0; x < a->n; x++)
		for (size_t y = 0; y < b->n; y++) {
			uint64_t l1, h1, l2, h2;

			held_in(&a->r[x], ia->answer.next_abs_offset, &l1, &h1);
			held_in(&b->r[y], ib->answer.next_abs_offset, &l2, &h2);
			CHECK(h1 <= l2 || h2 <= l1 || l1 == h1 || l2 == h2);
		}
}

static int may_conflict(const struct req *a, const struct req *b)
{
	return a->id && b->id && a->object == b->object &&
	       !(a->mode == TLK_READ && b->mode == TLK_READ);
}

static void check_all(struct tlk_table *t, struct req *rq)
{
	struct tlk_request_info info[NREQ];
	struct tlk_stats st;
	uint64_t rbytes = 0, wbytes = 0;
	size_t live = 0, parked = 0;

	CHECK(tlk_table_check(t) == 0);
	for (int i = 0; i < NREQ; i++) {
		uint64_t held;

		if (!rq[i].id)
			continue;
		live++;
		CHECK(tlk_request_info(t, rq[i].id, &info[i]) == 0);
		held = check_request(&rq[i], &info[i]);
		parked += rq[i].parked;
		if (rq[i].mode == TLK_READ)
			rbytes += held;
		else
			wbytes += held;
	}
	/* No byte held in conflicting modes. */
	for (int i = 0; i < NREQ; i++)
		for (int j = i + 1; j < NREQ; j++)
			if (may_conflict(&rq[i], &rq[j]))
				check_no_conflict(&rq[i], &info[i], &rq[j], &info[j]);
	tlk_table_stats(t, &st);
	CHECK(st.requests == live && st.parked == parked && st.read_bytes == rbytes &&
	      st.write_bytes == wbytes);
}

/* The events of the last call: each ends a wait that was on. */
static void take_events(struct tlk_table *t, struct req *rq, int owner_release)
{
	const struct tlk_event *ev;
	size_t n = tlk_events(t, &ev);

	for (size_t e = 0; e < n; e++) {
		int i = 0;

		while (i < NREQ && rq[i].id != ev[e].lock_id)
			i++;
		CHECK(i < NREQ && rq[i].parked);
		CHECK(ev[e].cookie == &rq[i] && ev[e].object == rq[i].object &&
		      ev[e].owner == rq[i].owner);
		rq[i].parked = 0;
		if (ev[e].answer.state == TLK_GONE) {
			CHECK(owner_release);
			rq[i].id = 0;
		} else {
			CHECK(ev[e].answer.state == TLK_GRANTED || ev[e].answer.state == TLK_PARTIAL);
		}
	}
}

/* A random but valid request description (or, rarely, a malformed one). */
static int make_ranges(struct fz *in, struct req *r, int *bad)
{
	uint64_t x = u8(in) % 32;
	unsigned ctl = u8(in);

	r->n = 1 + ctl % MAXR;
	*bad = (ctl & 0xc0) == 0xc0;
	for (size_t k = 0; k < r->n; k++) {
		r->r[k].offset = x;
		r->r[k].length = 1 + u8(in) % 16;
		r->r[k].logical = logical_of(r->object, x);
		x += r->r[k].length + u8(in) % 8;
	}
	if (*bad) { /* overlap, empty or wrapping */
		switch (ctl % 3) {
		case 0: r->r[r->n - 1].length = 0; break;
		case 1: r->r[r->n - 1].offset = UINT64_MAX - 1; r->r[r->n - 1].length = 4; break;
		case 2: if (r->n > 1) r->r[1].offset = r->r[0].offset; else r->r[0].length = 0;
			break;
		}
	}
	return 0;
}

/* The op_* functions: one operation on request slot r (id: its id, or an
 * unknown one if the slot is free), checked against what the slots
 * record; each reads its input bytes in the order the corpus assumes. */

static void op_create(struct tlk_table *t, struct fz *in, struct req *rq, struct req *r)
{
	int bad, rc;

	if (r->id)
		return;
	r->object = u8(in) % NOBJ;
	r->owner = u8(in) % NOWNER;
	r->mode = u8(in) & 1 ? TLK_WRITE : TLK_READ;
	make_ranges(in, r, &bad);
	rc = tlk_request_create(t, r->object, r->owner, r->mode, r->r, r->n, &r->id);
	CHECK(bad ? rc == -EINVAL : rc == 0 || rc == -ENOMEM);
	if (rc)
		r->id = 0;
	take_events(t, rq, 0);
}

static void op_acquire(struct tlk_table *t, struct fz *in, struct req *rq, struct req *r,
		       uint64_t id, unsigned flags)
{
	struct tlk_answer a;
	unsigned cap = u8(in);
	uint64_t upto = cap < 128 ? TLK_NONE : logical_of(r->object, cap % 64);
	int rc = tlk_acquire(t, id, flags, upto, r, &a);

	CHECK(r->id ? rc == 0 || rc == -ENOMEM : rc == -ENOENT);
	if (!rc)
		r->parked = a.state == TLK_WAITING;
	CHECK(rc || !r->parked || flags);
	take_events(t, rq, 0);
}

static void op_release(struct tlk_table *t, struct req *rq, struct req *r, uint64_t id)
{
	int rc = tlk_release(t, id);

	CHECK(r->id ? rc == 0 : rc == -ENOENT);
	r->id = 0;
	r->parked = 0;
	take_events(t, rq, 0);
}

static void op_release_from(struct tlk_table *t, struct fz *in, struct req *rq, struct req *r,
			    uint64_t id)
{
	struct tlk_answer a;
	int rc = tlk_release_from(t, id, logical_of(r->object, u8(in) % 64), &a);

	CHECK(r->id ? rc == 0 && a.state != TLK_WAITING : rc == -ENOENT);
	r->parked = 0;
	take_events(t, rq, 0);
}

static void op_cancel(struct tlk_table *t, struct req *rq, struct req *r, uint64_t id)
{
	struct tlk_answer a;
	int rc = tlk_cancel(t, id, &a);

	CHECK(r->id ? rc == 0 && a.state != TLK_WAITING : rc == -ENOENT);
	r->parked = 0;
	take_events(t, rq, 0);
}

/* Owner release (lease expiry): every request of the owner goes. */
static void op_release_owner(struct tlk_table *t, struct fz *in, struct req *rq)
{
	uint64_t owner = u8(in) % NOWNER;
	size_t n = 0, released;

	for (int i = 0; i < NREQ; i++)
		n += rq[i].id && rq[i].owner == owner;
	CHECK(tlk_release_owner(t, owner, &released) == 0 && released == n);
	take_events(t, rq, 1);
	for (int i = 0; i < NREQ; i++)
		if (rq[i].id && rq[i].owner == owner) {
			CHECK(!rq[i].parked); /* its GONE event came */
			rq[i].id = 0;
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tlk_config cfg = { { MAXR, 64, 1u << 20 }, NULL };
	struct fz in = { data, size };
	struct req rq[NREQ];
	struct tlk_table *t;

	memset(rq, 0, sizeof(rq));
	CHECK(tlk_table_create(&cfg, &t) == 0);
	while (in.n) {
		unsigned op = u8(&in), slot = u8(&in) % NREQ;
		struct req *r = &rq[slot];
		uint64_t id = r->id ? r->id : 1000 + slot; /* an unknown id */

		switch (op % 7) {
		case 0: op_create(t, &in, rq, r); break;
		case 1: op_acquire(t, &in, rq, r, id, 0); break;
		case 2: op_acquire(t, &in, rq, r, id, TLK_BLOCKING); break;
		case 3: op_release(t, rq, r, id); break;
		case 4: op_release_from(t, &in, rq, r, id); break;
		case 5: op_cancel(t, rq, r, id); break;
		case 6: op_release_owner(t, &in, rq); break;
		}
		check_all(t, rq);
	}
	tlk_table_destroy(t);
	return 0;
}
