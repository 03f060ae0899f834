/* frame.c - frame header encoding and checking, opcode table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tproto.h"

struct tp_opinfo {
	unsigned opcode;
	const char *name;
	const ProtobufCMessageDescriptor *request;
	const ProtobufCMessageDescriptor *reply;
	enum tp_right right;
};

static const struct tp_opinfo tp_ops[] = {
#define TP_INFO(name, num, req, rep, who, right) \
	{ num, #name, &tessera__##req##__descriptor, &tessera__##rep##__descriptor, TP_RIGHT_##right },
	TP_OPCODES(TP_INFO)
#undef TP_INFO
};

/* Every row's opcode fits the dispatch tables, and its right is a
 * declared one (a name that is not a TP_RIGHT_ fails to compile; these
 * keep UNDECLARED out of the table too). */
#define TP_ROW_CHECK(name, num, req, rep, who, right)                                 \
	_Static_assert(num > 0 && num < TP_OP_LIMIT, #name ": opcode within TP_OP_LIMIT"); \
	_Static_assert(TP_RIGHT_##right > TP_RIGHT_UNDECLARED &&                          \
		       TP_RIGHT_##right < TP_RIGHT_LIMIT, #name ": a declared right");
TP_OPCODES(TP_ROW_CHECK)
#undef TP_ROW_CHECK

/* What each right asks of a capability (enum tp_right). */
static const struct {
	uint32_t caps;     /* one of these rights; 0: no capability */
	int objects;       /* 1: it must name the request's objects */
} tp_rights[TP_RIGHT_LIMIT] = {
	[TP_RIGHT_UNDECLARED] = { 0, 0 },
	[TP_RIGHT_NONE] = { 0, 0 },
	[TP_RIGHT_READ] = { TP_CAP_READ, 1 },
	[TP_RIGHT_WRITE] = { TP_CAP_WRITE, 1 },
	[TP_RIGHT_READ_OR_WRITE] = { TP_CAP_READ | TP_CAP_WRITE, 1 },
	[TP_RIGHT_STAT] = { TP_CAP_STAT | TP_CAP_READ | TP_CAP_WRITE, 1 },
	[TP_RIGHT_REMOVE] = { TP_CAP_REMOVE, 1 },
	[TP_RIGHT_SESSION] = { TP_CAP_READ | TP_CAP_WRITE, 0 },
	[TP_RIGHT_ADMIN] = { TP_CAP_ADMIN, 0 },
};

static const struct tp_opinfo *tp_opinfo(unsigned opcode)
{
	for (size_t i = 0; i < sizeof(tp_ops) / sizeof(tp_ops[0]); i++)
		if (tp_ops[i].opcode == opcode)
			return &tp_ops[i];
	return NULL;
}

const char *tp_opcode_name(unsigned opcode)
{
	const struct tp_opinfo *op = tp_opinfo(opcode);

	return op ? op->name : NULL;
}

enum tp_right tp_opcode_right(unsigned opcode)
{
	const struct tp_opinfo *op = tp_opinfo(opcode);

	return op ? op->right : TP_RIGHT_UNDECLARED;
}

uint32_t tp_right_caps(enum tp_right r)
{
	return (unsigned)r < TP_RIGHT_LIMIT ? tp_rights[r].caps : 0;
}

int tp_right_names_objects(enum tp_right r)
{
	return (unsigned)r < TP_RIGHT_LIMIT ? tp_rights[r].objects : 0;
}

const ProtobufCMessageDescriptor *tp_request_desc(unsigned opcode)
{
	const struct tp_opinfo *op = tp_opinfo(opcode);

	return op ? op->request : NULL;
}

const ProtobufCMessageDescriptor *tp_reply_desc(unsigned opcode)
{
	const struct tp_opinfo *op = tp_opinfo(opcode);

	return op ? op->reply : NULL;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void tp_hdr_encode(const struct tp_hdr *hdr, uint8_t *out)
{
	put32(out, hdr->magic);
	put16(out + 4, hdr->version);
	put16(out + 6, hdr->opcode);
	put64(out + 8, hdr->reqid);
	put32(out + 16, hdr->body_len);
	put32(out + 20, hdr->data_len);
	put16(out + 24, hdr->addr_len);
	put16(out + 26, hdr->flags);
	put32(out + 28, (uint32_t)hdr->status);
	put64(out + 32, hdr->session);
	put64(out + TP_SEQ_OFF, hdr->seq);
	memset(out + TP_TAG_OFF, 0, TP_HDR_SIZE - TP_TAG_OFF); /* tag (tp_frame_seal), reserved */
}

int tp_frame_parse(const void *buf, size_t len, size_t max_frame,
		   struct tp_frame *out, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	struct tp_hdr *h = &out->hdr;
	uint64_t total;

	memset(out, 0, sizeof(*out));
	if (len < TP_HDR_SIZE) {
		snprintf(err, errlen, "frame of %zu bytes is shorter than the %d-byte header",
			 len, TP_HDR_SIZE);
		return -EPROTO;
	}
	h->magic = get32(p);
	h->version = get16(p + 4);
	h->opcode = get16(p + 6);
	h->reqid = get64(p + 8);
	h->body_len = get32(p + 16);
	h->data_len = get32(p + 20);
	h->addr_len = get16(p + 24);
	h->flags = get16(p + 26);
	h->status = (int32_t)get32(p + 28);
	h->session = get64(p + 32);
	h->seq = get64(p + TP_SEQ_OFF);
	if (h->magic != TP_MAGIC) {
		snprintf(err, errlen, "bad magic 0x%08x (expected 0x%08x)", h->magic, TP_MAGIC);
		return -EPROTO;
	}
	if (h->version != TP_VERSION) {
		snprintf(err, errlen, "protocol version %u not supported (this is version %d)",
			 h->version, TP_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (h->addr_len > TP_MAX_ADDR) {
		snprintf(err, errlen, "reply address of %u bytes exceeds %d", h->addr_len,
			 TP_MAX_ADDR);
		return -EPROTO;
	}
	total = (uint64_t)TP_HDR_SIZE + h->addr_len + h->body_len + h->data_len;
	if (total > max_frame) {
		snprintf(err, errlen, "frame of %llu bytes exceeds the maximum of %zu",
			 (unsigned long long)total, max_frame);
		return -EMSGSIZE;
	}
	if (total != len) {
		snprintf(err, errlen, "frame header announces %llu bytes but %zu arrived",
			 (unsigned long long)total, len);
		return -EPROTO;
	}
	out->addr = p + TP_HDR_SIZE;
	out->body = out->addr + h->addr_len;
	out->data = out->body + h->body_len;
	/* A reply echoes its request's opcode, known or not. */
	if (!(h->flags & TP_FLAG_REPLY) && !tp_opinfo(h->opcode)) {
		snprintf(err, errlen, "unknown opcode %u", h->opcode);
		return -EOPNOTSUPP;
	}
	return 0;
}

long tp_frame_build(uint8_t *buf, size_t cap, struct tp_hdr *hdr,
		    const void *addr, size_t addr_len,
		    const ProtobufCMessage *msg)
{
	size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	size_t need = TP_HDR_SIZE + addr_len + body;

	if (need > cap || addr_len > TP_MAX_ADDR || body > UINT32_MAX)
		return -EMSGSIZE;
	hdr->magic = TP_MAGIC;
	hdr->version = TP_VERSION;
	hdr->addr_len = (uint16_t)addr_len;
	hdr->body_len = (uint32_t)body;
	tp_hdr_encode(hdr, buf);
	if (addr_len)
		memcpy(buf + TP_HDR_SIZE, addr, addr_len);
	if (msg)
		protobuf_c_message_pack(msg, buf + TP_HDR_SIZE + addr_len);
	return (long)need;
}

ProtobufCMessage *tp_body_unpack(const struct tp_frame *frame,
				 const ProtobufCMessageDescriptor *desc)
{
	return protobuf_c_message_unpack(desc, NULL, frame->hdr.body_len, frame->body);
}

int tp_read_reply_pad(Tessera__ReadReply *rep, uint8_t pad_store[TP_TAGGED_BODY])
{
	size_t room;

	rep->pad.len = 0;
	rep->pad.data = NULL;
	room = TP_TAGGED_BODY - protobuf_c_message_get_packed_size(&rep->base);
	/* The filler costs a tag byte and a one-byte length (room < 128), and
	 * proto3 leaves an empty one out: so at least 3 bytes of room. */
	if (protobuf_c_message_get_packed_size(&rep->base) > TP_TAGGED_BODY || room < 3)
		return -EMSGSIZE;
	memset(pad_store, 0, TP_TAGGED_BODY);
	rep->pad.data = pad_store;
	rep->pad.len = room - 2;
	return protobuf_c_message_get_packed_size(&rep->base) == TP_TAGGED_BODY ? 0 : -EMSGSIZE;
}
