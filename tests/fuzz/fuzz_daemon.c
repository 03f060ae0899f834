/* fuzz_daemon.c - the shared part of the daemon fuzz targets (fuzz_daemon.h). */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_daemon.h"

uint8_t fz_u8(struct fz_in *in)
{
	uint8_t v = 0;

	fz_take(in, &v, 1);
	return v;
}

uint16_t fz_u16(struct fz_in *in)
{
	return (uint16_t)(fz_u8(in) | fz_u8(in) << 8);
}

uint64_t fz_u64(struct fz_in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)fz_u8(in) << (8 * i);
	return v;
}

size_t fz_take(struct fz_in *in, void *out, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	memcpy(out, in->p, k);
	memset((uint8_t *)out + k, 0, len - k);
	in->p += k;
	in->n -= k;
	return k;
}

void fz_reply_sink(void *arg, uint64_t peer, const struct iovec *iov, int n)
{
	struct fz_replies *seen = arg;
	size_t len = iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0);
	uint8_t *buf = malloc(len ? len : 1);
	ProtobufCMessage *msg;
	struct tp_frame fr;
	char err[256];

	(void)peer;
	if (!buf)
		abort();
	memcpy(buf, iov[0].iov_base, iov[0].iov_len);
	if (n > 1)
		memcpy(buf + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
	if (tp_frame_parse(buf, len, SIZE_MAX, &fr, err, sizeof(err)) ||
	    !(fr.hdr.flags & TP_FLAG_REPLY) || fr.hdr.addr_len || fr.hdr.status > 0) {
		fprintf(stderr, "fuzz: the daemon sent a malformed reply: %s\n", err);
		abort();
	}
	if (fr.hdr.status < 0) {
		Tessera__ErrorReply *er = (Tessera__ErrorReply *)
			tp_body_unpack(&fr, &tessera__error_reply__descriptor);

		if (!er || er->code != fr.hdr.status || !er->message || !er->message[0] ||
		    fr.hdr.data_len) {
			fprintf(stderr, "fuzz: an error reply (status %d) without its ErrorReply\n",
				fr.hdr.status);
			abort();
		}
		if (seen->verbose)
			fprintf(stderr, "reply %llu %s: %d %s\n", (unsigned long long)fr.hdr.reqid,
				tp_opcode_name(fr.hdr.opcode) ?: "?", fr.hdr.status, er->message);
		if (seen->check)
			seen->check(seen->check_arg, &fr, NULL);
		protobuf_c_message_free_unpacked(&er->base, NULL);
		seen->errors++;
	} else {
		const ProtobufCMessageDescriptor *desc = tp_reply_desc(fr.hdr.opcode);

		if (!desc || !(msg = tp_body_unpack(&fr, desc))) {
			fprintf(stderr, "fuzz: a %s reply that does not decode\n",
				tp_opcode_name(fr.hdr.opcode) ?: "?");
			abort();
		}
		if (seen->verbose)
			fprintf(stderr, "reply %llu %s: ok (%u data bytes)\n",
				(unsigned long long)fr.hdr.reqid, tp_opcode_name(fr.hdr.opcode),
				fr.hdr.data_len);
		if (seen->check)
			seen->check(seen->check_arg, &fr, msg);
		protobuf_c_message_free_unpacked(msg, NULL);
	}
	seen->replies++;
	free(buf);
}

/* The reply address every fuzzed request carries. */
static const char fz_addr[] = "fuzz";

const struct cap_key fz_key = { { 0x7e, 0x55, 0xe2, 0xa0 } };

/* Give the request in body[0..len) a valid capability (see fuzz_daemon.h)
 * if it decodes, has a capability field and none set; the new length. */
static size_t mint(const struct cap_key *key, unsigned op, uint8_t *body, size_t len, size_t cap)
{
	const ProtobufCMessageDescriptor *desc = tp_request_desc(op);
	const ProtobufCFieldDescriptor *fd;
	ProtobufCMessage *m;
	Tessera__Capability c = TESSERA__CAPABILITY__INIT, **slot;
	uint8_t mac[TP_CAP_MAC_LEN];

	if (!desc || !(fd = protobuf_c_message_descriptor_get_field_by_name(desc, "cap")) ||
	    !(m = protobuf_c_message_unpack(desc, NULL, len, body)))
		return len;
	slot = (Tessera__Capability **)((char *)m + fd->offset);
	c.rights = TP_CAP_READ | TP_CAP_WRITE | TP_CAP_STAT | TP_CAP_REMOVE | TP_CAP_ADMIN;
	c.expires_ns = INT64_MAX / 2;
	if (!*slot && !cap_sign(key, &c, mac)) {
		*slot = &c;
		if (protobuf_c_message_get_packed_size(m) <= cap)
			len = protobuf_c_message_pack(m, body);
		*slot = NULL;
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return len;
}

void fz_drive(struct srv *srv, const unsigned *ops, size_t nops, struct fz_in *in,
	      const struct cap_key *key, fz_observe_fn observe, void *arg)
{
	static uint8_t frame[TP_HDR_SIZE + sizeof(fz_addr) + 2 * 65536];
	uint64_t reqid = 0;

	while (in->n) {
		unsigned kind = fz_u8(in);
		size_t len;

		if (kind >= FZ_RAW) {
			len = fz_take(in, frame, fz_u16(in));
			srv_deliver(srv, 1, frame, len);
		} else if (kind >= FZ_TICK) {
			srv_local_tick(srv);
		} else {
			struct tp_hdr h = { TP_MAGIC, TP_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
			unsigned pb = fz_u8(in);
			uint64_t peer = 1 + pb % 4;
			uint8_t *p = frame + TP_HDR_SIZE + sizeof(fz_addr);

			h.opcode = (uint16_t)ops[kind % nops];
			h.reqid = ++reqid;
			h.addr_len = sizeof(fz_addr);
			h.body_len = (uint32_t)fz_take(in, p, fz_u16(in));
			if (key && !(pb & 0x80))
				h.body_len = (uint32_t)mint(key, h.opcode, p, h.body_len, 65536);
			h.data_len = fz_u16(in);
			fz_take(in, p + h.body_len, h.data_len);
			tp_hdr_encode(&h, frame);
			memcpy(frame + TP_HDR_SIZE, fz_addr, sizeof(fz_addr));
			len = TP_HDR_SIZE + sizeof(fz_addr) + h.body_len + h.data_len;
			if (observe)
				observe(arg, frame, len, 0);
			srv_deliver(srv, peer, frame, len);
			if (observe)
				observe(arg, frame, len, 1);
		}
	}
}

int fz_tmpdir(const char *prefix, char *out, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	/* Memory, where there is some: the stores fsync. */
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(out, len, "%s/%s.XXXXXX", tmp, prefix);
	return mkdtemp(out) ? 0 : -errno;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

void fz_rmtree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void fz_config(struct tp_config *cfg)
{
	char err[256];
	const char *text = "mds = 127.0.0.1:1\n"
			   "ios = 127.0.0.1:2\nios = 127.0.0.1:3\n"
			   "ios = 127.0.0.1:4\nios = 127.0.0.1:5\n";

	if (tp_config_parse(text, "fuzz", cfg, err, sizeof(err))) {
		fprintf(stderr, "fuzz: config: %s\n", err);
		abort();
	}
	/* Every deadline passes at the next tick record: ticks exercise
	 * expiry without waiting. */
	cfg->timeout_ms = 0;
}

/* ------------------------------------------------------------ seeds */

void fz_seed_bytes(struct fz_seed *s, const void *p, size_t n)
{
	if (s->len + n > sizeof(s->buf)) {
		s->bad = 1;
		return;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

void fz_seed_msg(struct fz_seed *s, const ProtobufCMessage *msg)
{
	size_t body = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	uint8_t n[2] = { (uint8_t)body, (uint8_t)(body >> 8) };

	if (body > 65535 || s->len + 2 + body > sizeof(s->buf)) {
		s->bad = 1;
		return;
	}
	fz_seed_bytes(s, n, 2);
	if (msg)
		s->len += protobuf_c_message_pack(msg, s->buf + s->len);
}

void fz_seed_data(struct fz_seed *s, size_t dlen)
{
	uint8_t n[2] = { (uint8_t)dlen, (uint8_t)(dlen >> 8) };

	if (dlen > 65535 || s->len + 2 + dlen > sizeof(s->buf)) {
		s->bad = 1;
		return;
	}
	fz_seed_bytes(s, n, 2);
	for (size_t i = 0; i < dlen; i++)
		s->buf[s->len++] = (uint8_t)('a' + i % 26);
}

void fz_seed_request(struct fz_seed *s, unsigned op_index, unsigned peer,
		     const ProtobufCMessage *msg, size_t dlen)
{
	uint8_t head[2] = { (uint8_t)op_index, (uint8_t)peer };

	s->bad |= op_index >= FZ_TICK;
	fz_seed_bytes(s, head, 2);
	fz_seed_msg(s, msg);
	fz_seed_data(s, dlen);
}

void fz_seed_tick(struct fz_seed *s)
{
	uint8_t t = FZ_TICK;

	fz_seed_bytes(s, &t, 1);
}

int fz_seed_save(struct fz_seed *s, const char *dir, const char *name)
{
	int rc = s->bad || fz_seed_write(dir, name, s->buf, s->len) ? -1 : 0;

	s->len = 0;
	s->bad = 0;
	return rc;
}

int fz_seed_write(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}
