/*
 * fuzz_tnet.c - a transport for the client fuzz target, linked instead of
 * proto/transport.c: the same tnet calls (tproto.h), with the replies made
 * of fuzz bytes instead of coming from daemons. Everything above it, the
 * client library whole, is the real code.
 *
 * Each frame the client sends completes at once and is answered from the
 * input (fuzz_tnet_input), one record per request:
 *   ctl (u8): ctl % 8 < 5    a reply: status 0, the request's opcode and id;
 *             ctl % 8 == 5   an error reply: status -(1 + u8 % 133);
 *             ctl % 8 == 6   first a stray reply (another id), then as 0;
 *             ctl % 8 == 7   first a raw frame from the input, then as 5;
 *   body length (u16) and bytes, data length (u16) and bytes (zeros once
 *   the input ends), then how it is sealed (u8, ft_seal): the session's
 *   next sequence number, an old or repeated one, a jump, or a byte of
 *   the sealed frame flipped.
 * Once the input is used up every request is answered EIO, so each call
 * ends without waiting for its timeout. AUTH is answered (session
 * FUZZ_SESSION) in the sealing mode a byte of input names (u8 % 3, 0 once
 * the input ends: secrecy and measurement too, which a client must refuse
 * unless its config says so), unless fuzz_tnet_auth_from_input is on (then
 * from an AUTH record: fuzz_tnet.h); every reply made here is sealed with
 * the fuzz session's key (fuzz_creds.c); a raw frame from the input, and the
 * forged AUTH answers, are not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tnet.h"
#include "tproto.h"

#define FT_EVENTS 64
#define FT_PEERS 8     /* peers are ports 1..5 (tnet_lookup) */

struct tnet {
	size_t cap;                        /* receive buffer size */
	struct tnet_event ev[FT_EVENTS];   /* completions not yet polled */
	int nev;
	const uint8_t *in;                 /* the input left */
	size_t n;
	int auth_from_input;
	/* a server whose AUTH got a forged answer: only AUTH may follow */
	int unproven[FT_PEERS];
	/* What an event tells the client of its server's identity, applied
	 * to unproven[] when the client polls it (not when it is queued:
	 * replies queued before it, to a probe say, are taken first and may
	 * rightly make the client send). */
	enum ft_verdict { FT_NO_VERDICT, FT_FORGED, FT_PROVEN } verdict[FT_EVENTS];
	uint8_t verdict_peer[FT_EVENTS];
};

/* The one open transport (the target opens one client at a time). */
static struct tnet *ft_net;

void fuzz_tnet_input(const uint8_t *data, size_t size)
{
	if (ft_net) {
		ft_net->in = data;
		ft_net->n = size;
	}
}

static unsigned ft_u8(struct tnet *net)
{
	if (!net->n)
		return 0;
	net->n--;
	return *net->in++;
}

void fuzz_tnet_auth_from_input(int on)
{
	if (ft_net)
		ft_net->auth_from_input = on;
}

unsigned fuzz_tnet_u8(void)
{
	return ft_net ? ft_u8(ft_net) : 0;
}

void fuzz_tnet_rest(const uint8_t **data, size_t *size)
{
	*data = ft_net ? ft_net->in : NULL;
	*size = ft_net ? ft_net->n : 0;
}

size_t fuzz_tnet_left(void)
{
	return ft_net ? ft_net->n : 0;
}

static size_t ft_take(struct tnet *net, uint8_t *out, size_t len)
{
	size_t k = len < net->n ? len : net->n;

	memcpy(out, net->in, k);
	memset(out + k, 0, len - k);
	net->in += k;
	net->n -= k;
	return k;
}

static void ft_push(struct tnet *net, struct tnet_event ev)
{
	if (net->nev == FT_EVENTS)
		abort(); /* the client never has this many requests in flight */
	net->verdict[net->nev] = FT_NO_VERDICT;
	net->ev[net->nev++] = ev;
}

/* The event just queued (an AUTH answer to peer) proves the server or
 * is forged. */
static void ft_mark_verdict(struct tnet *net, uint64_t peer, int forged)
{
	net->verdict[net->nev - 1] = forged ? FT_FORGED : FT_PROVEN;
	net->verdict_peer[net->nev - 1] = (uint8_t)(peer % FT_PEERS);
}

/* A received frame: a receive buffer of the configured size holding it.
 * Only the bytes received are allocated, so a read past them is caught. */
static void ft_recv(struct tnet *net, const uint8_t *frame, size_t len)
{
	struct tnet_rbuf *rb = calloc(1, sizeof(*rb));
	struct tnet_event ev = { .type = TNET_RECV };

	if (!rb || !(rb->data = malloc(len < net->cap ? len + 1 : net->cap)))
		abort();
	rb->cap = net->cap;
	rb->ctx.user = rb;
	ev.rbuf = rb;
	ev.len = len < net->cap ? len : net->cap;
	ev.status = len > net->cap ? -EMSGSIZE : 0;
	memcpy(rb->data, frame, ev.len);
	ft_push(net, ev);
}

/* The fuzz session's mode and its replies' next sequence number. */
static enum tp_seal_mode ft_mode;
static uint64_t ft_seq;

/* Seal a reply frame (head_len bytes, then its data) as the input says:
 * sel < 192 the next number; < 224 one already used or older (replay);
 * < 240 a jump ahead; else the next number with byte sel * 7 % len of
 * the sealed frame flipped (a tag, header or data byte). */
static void ft_seal(uint8_t *frame, size_t head_len, size_t len, unsigned sel)
{
	struct tp_session ses = { .id = FUZZ_SESSION, .mode = ft_mode };
	uint64_t seq = ft_seq;

	memcpy(ses.key, fuzz_session_key, TP_KEY_SIZE);
	if (sel < 192 || sel >= 240)
		seq = ft_seq++;
	else if (sel < 224)
		seq = ft_seq > sel - 191 ? ft_seq - (sel - 191) : 0;
	else
		seq = ft_seq + ((uint64_t)1 << (sel - 224 + 8));
	tp_frame_seal(frame, head_len, NULL, 0, &ses, seq);
	if (sel >= 240 && len)
		frame[(sel * 7u) % len] ^= 0x10;
}

/* A reply to request (opcode, reqid) from the input. */
static void ft_reply(struct tnet *net, unsigned opcode, uint64_t reqid, int32_t status)
{
	static uint8_t frame[TP_HDR_SIZE + 2 * 65536];
	struct tp_hdr h = { TP_MAGIC, TP_VERSION, (uint16_t)opcode, reqid, 0, 0, 0,
			    TP_FLAG_REPLY, status, 0, 0 };
	struct tp_session ses = { .id = FUZZ_SESSION };
	long len;

	memcpy(ses.key, fuzz_session_key, TP_KEY_SIZE);
	if (opcode == TP_OP_AUTH) {
		Tessera__AuthReply ar = TESSERA__AUTH_REPLY__INIT;

		ar.session = FUZZ_SESSION;
		ar.boot = 1;
		ar.seal_mode = ft_u8(net) % 3;
		len = tp_frame_build(frame, sizeof(frame), &h, NULL, 0, &ar.base);
		tp_frame_seal(frame, (size_t)len, NULL, 0, &ses, 0); /* INTEGRITY, number 0 */
		ft_mode = (enum tp_seal_mode)ar.seal_mode;
		ft_seq = 1;
		ft_recv(net, frame, (size_t)len);
		return;
	}

	if (!net->n) { /* the input is used up: end the call */
		Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;

		er.code = -EIO;
		er.message = "the fuzz input ended";
		h.status = -EIO;
		len = tp_frame_build(frame, sizeof(frame), &h, NULL, 0, &er.base);
		ft_seal(frame, (size_t)len, (size_t)len, 0);
		ft_recv(net, frame, (size_t)len);
		return;
	}
	h.body_len = (uint32_t)ft_take(net, frame + TP_HDR_SIZE, ft_u8(net) | ft_u8(net) << 8);
	h.data_len = ft_u8(net) | ft_u8(net) << 8;
	ft_take(net, frame + TP_HDR_SIZE + h.body_len, h.data_len);
	tp_hdr_encode(&h, frame);
	ft_seal(frame, TP_HDR_SIZE + h.body_len, TP_HDR_SIZE + h.body_len + h.data_len, ft_u8(net));
	ft_recv(net, frame, TP_HDR_SIZE + h.body_len + h.data_len);
}

/* An AUTH answer from an AUTH record (fuzz_tnet.h); 1 when it is forged
 * (not sealed with the proposed key). */
static int ft_auth_reply(struct tnet *net, uint64_t reqid)
{
	static uint8_t frame[TP_HDR_SIZE + 65536];
	struct tp_hdr h = { .magic = TP_MAGIC, .version = TP_VERSION, .opcode = TP_OP_AUTH,
			    .reqid = reqid, .flags = TP_FLAG_REPLY };
	struct tp_session ses = { .id = FUZZ_SESSION };
	Tessera__AuthReply ar = TESSERA__AUTH_REPLY__INIT;
	Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;
	unsigned ctl = ft_u8(net) % 4;
	long len;

	memcpy(ses.key, fuzz_session_key, TP_KEY_SIZE);
	ar.session = FUZZ_SESSION;
	ar.boot = 1;
	if (ctl == 3) {
		h.body_len = (uint32_t)ft_take(net, frame + TP_HDR_SIZE, ft_u8(net) | ft_u8(net) << 8);
		h.status = -(int32_t)(ft_u8(net) % 134); /* 0: a success */
		tp_hdr_encode(&h, frame);
		len = TP_HDR_SIZE + h.body_len;
	} else if (ctl == 2) {
		h.status = -(int32_t)(1 + ft_u8(net) % 133);
		er.code = h.status;
		er.message = "a squatter's refusal";
		len = tp_frame_build(frame, sizeof(frame), &h, NULL, 0, &er.base);
	} else {
		len = tp_frame_build(frame, sizeof(frame), &h, NULL, 0, &ar.base);
		if (ctl == 1)
			ses.key[0] ^= 0x80; /* a key of the squatter's own */
	}
	if (ctl != 2) /* an AUTH answer is the daemon's frame 0 */
		tp_frame_seal(frame, (size_t)len, NULL, 0, &ses, 0);
	ft_recv(net, frame, (size_t)len);
	return ctl == 1 || ctl == 2;
}

/* A session's AUTH, not a probe (which names the session it holds: its
 * answer replaces nothing unless it verifies). */
static int ft_opening_auth(const uint8_t *f, size_t len, size_t cap)
{
	struct tp_frame fr;
	Tessera__AuthRequest *m;
	char err[64];
	int opening;

	if (tp_frame_parse(f, len, cap, &fr, err, sizeof(err)))
		return 0;
	m = (Tessera__AuthRequest *)tp_body_unpack(&fr, &tessera__auth_request__descriptor);
	opening = m && !m->session;
	if (m)
		protobuf_c_message_free_unpacked(&m->base, NULL);
	return opening;
}

int tnet_open(const struct tnet_opts *opts, struct tnet **out, char *err, size_t errlen)
{
	struct tnet *net = calloc(1, sizeof(*net));

	if (!net) {
		snprintf(err, errlen, "no memory");
		return -ENOMEM;
	}
	net->cap = opts->buf_size;
	ft_net = net;
	*out = net;
	return 0;
}

void tnet_close(struct tnet *net)
{
	for (int i = 0; i < net->nev; i++)
		if (net->ev[i].type == TNET_RECV)
			tnet_repost(net, net->ev[i].rbuf);
	if (ft_net == net)
		ft_net = NULL;
	free(net);
}

void tnet_open_times(const struct tnet *net, struct tnet_times *out)
{
	(void)net;
	memset(out, 0, sizeof(*out)); /* nothing here takes time */
}

int tnet_fd(struct tnet *net)
{
	(void)net;
	return -1;
}

int tnet_trywait(struct tnet *net)
{
	return net->nev ? -EAGAIN : 0;
}

int tnet_wait(struct tnet *net, int timeout_ms)
{
	(void)net, (void)timeout_ms;
	return 0;
}

int tnet_name(struct tnet *net, void *buf, size_t *len)
{
	(void)net;
	if (*len < 4)
		return -ENOSPC;
	memcpy(buf, "fuzz", 4);
	*len = 4;
	return 0;
}

int tnet_lookup(struct tnet *net, const char *node, const char *service, uint64_t *peer)
{
	(void)net, (void)node;
	*peer = strtoull(service, NULL, 10);
	return 0;
}

int tnet_insert_name(struct tnet *net, const void *name, size_t len, uint64_t *peer)
{
	(void)net, (void)name;
	*peer = len;
	return 0;
}

void tnet_forget(struct tnet *net, uint64_t peer)
{
	(void)net, (void)peer;
}

int tnet_send(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n,
	      struct tnet_ctx *ctx)
{
	const uint8_t *f = iov[0].iov_base;
	struct tnet_event sent = { .type = TNET_SENT, .user = ctx->user };
	unsigned opcode, ctl;
	uint64_t reqid = 0;

	(void)n;
	if (iov[0].iov_len < TP_HDR_SIZE || net->nev + 3 > FT_EVENTS)
		return -EAGAIN;
	opcode = f[6] | f[7] << 8;
	for (int i = 0; i < 8; i++)
		reqid |= (uint64_t)f[8 + i] << (8 * i);
	ft_push(net, sent);
	if (opcode == TP_OP_AUTH) {
		if (!net->auth_from_input || !net->n) {
			ft_reply(net, opcode, reqid, 0); /* the daemon's own answer */
			ft_mark_verdict(net, peer, 0);
		} else if (ft_opening_auth(f, iov[0].iov_len, net->cap)) {
			ft_mark_verdict(net, peer, ft_auth_reply(net, reqid));
		} else if (!ft_auth_reply(net, reqid)) {
			/* a probe's answer sealed right: the daemon itself (a
			 * forged one the client drops unread) */
			ft_mark_verdict(net, peer, 0);
		}
		return 0;
	}
	/* The client refused the server that failed to prove itself. */
	if (net->unproven[peer % FT_PEERS]) {
		fprintf(stderr, "fuzz_tnet: a %s request went to server %llu after its AUTH "
			"answer was forged\n", tp_opcode_name(opcode) ?: "?",
			(unsigned long long)peer);
		abort();
	}
	ctl = ft_u8(net) % 8;
	if (ctl == 6)
		ft_reply(net, opcode, reqid + 1 + ft_u8(net), 0);
	if (ctl == 7) {
		static uint8_t raw[65536];
		size_t len = ft_take(net, raw, ft_u8(net) | ft_u8(net) << 8);

		ft_recv(net, raw, len);
	}
	ft_reply(net, opcode, reqid, ctl == 5 || ctl == 7 ? -(int32_t)(1 + ft_u8(net) % 133) : 0);
	return 0;
}

/* The fake endpoint has no tagged messaging, and lends no memory: the
 * client takes its copy paths. */
int tnet_tsend(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n, uint64_t tag,
	       struct tnet_ctx *ctx)
{
	(void)net, (void)peer, (void)iov, (void)n, (void)tag, (void)ctx;
	return -ENOSYS;
}

int tnet_trecv(struct tnet *net, const struct iovec *iov, size_t n, uint64_t tag,
	       struct tnet_ctx *ctx)
{
	(void)net, (void)iov, (void)n, (void)tag, (void)ctx;
	return -ENOSYS;
}

int tnet_cancel(struct tnet *net, struct tnet_ctx *ctx)
{
	(void)net, (void)ctx;
	return -ENOENT;
}

size_t tnet_iov_limit(struct tnet *net)
{
	(void)net;
	return 2;
}

int tnet_can_lend(struct tnet *net)
{
	(void)net;
	return 0;
}

int tnet_repost(struct tnet *net, struct tnet_rbuf *rbuf)
{
	(void)net;
	free(rbuf->data);
	free(rbuf);
	return 0;
}

/* Events in order; one that carries a verdict on a server's identity
 * only at the head of a batch, so the verdict holds from the moment the
 * client takes it in, and not for the events polled with it before it. */
int tnet_poll(struct tnet *net, struct tnet_event *ev, int max)
{
	int n = net->nev < max ? net->nev : max;

	for (int i = 1; i < n; i++)
		if (net->verdict[i] != FT_NO_VERDICT)
			n = i;
	if (n > 0 && net->verdict[0] != FT_NO_VERDICT)
		net->unproven[net->verdict_peer[0]] = net->verdict[0] == FT_FORGED;
	memcpy(ev, net->ev, (size_t)n * sizeof(*ev));
	memmove(net->ev, net->ev + n, (size_t)(net->nev - n) * sizeof(*ev));
	memmove(net->verdict, net->verdict + n, (size_t)(net->nev - n) * sizeof(net->verdict[0]));
	memmove(net->verdict_peer, net->verdict_peer + n, (size_t)(net->nev - n));
	net->nev -= n;
	return n;
}
