/*
 * fuzz_frame.c - libFuzzer target for frame decoding and dispatch.
 *
 * An input is one received frame. proto/frame.c must either refuse it
 * with a known code and a message, or split it consistently (the pieces
 * tile the buffer, the header re-encodes to the same bytes); the body is
 * decoded as the opcode's request and reply messages. Then the frame goes through both daemons'
 * dispatch path (server/daemon.c, daemon_peer.c: checks, admission,
 * opcode lookup, body decoding, the handler) in-process, and every reply must be well formed
 * (fuzz_daemon.h's sink).
 *
 * Both daemons' sources are compiled in (their mains renamed). The two
 * daemons live for the whole run, with their stores in temporary
 * directories removed at exit; their state grows with the inputs (the
 * per-daemon targets start fresh ones for each input). Built with
 * -DFUZZ_SEED_MAIN it writes a seed corpus of real request frames.
 */
#define main tessera_ios_main
#include "ios_main.c"
#undef main
#define main tessera_mds_main
#include "mds_main.c"
#undef main

#include "fuzz_daemon.h"

#ifndef FUZZ_SEED_MAIN

/* The body decoded as desc, as a daemon or the client would. (Whether
 * protobuf-c packs back what it decoded is its own business: nobody here
 * re-sends a received message.) */
static void check_unpack(const struct tp_frame *fr, const ProtobufCMessageDescriptor *desc)
{
	ProtobufCMessage *m = tp_body_unpack(fr, desc);

	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

static void check_parse(const uint8_t *data, size_t size, size_t max_frame)
{
	struct tp_frame fr;
	uint8_t head[TP_HDR_SIZE];
	char err[256] = "";
	int rc = tp_frame_parse(data, size, max_frame, &fr, err, sizeof(err));

	if (rc) {
		if ((rc != -EPROTO && rc != -EPROTONOSUPPORT && rc != -EMSGSIZE &&
		     rc != -EOPNOTSUPP) || !err[0])
			abort();
		return;
	}
	tp_hdr_encode(&fr.hdr, head);
	/* every field encodes back (seq included); the tag is no field
	 * (seal.c writes it) */
	if (memcmp(head, data, TP_TAG_OFF) || fr.addr != data + TP_HDR_SIZE ||
	    fr.body != fr.addr + fr.hdr.addr_len || fr.data != fr.body + fr.hdr.body_len ||
	    fr.data + fr.hdr.data_len != data + size || size > max_frame ||
	    fr.hdr.addr_len > TP_MAX_ADDR)
		abort();
	if (!(fr.hdr.flags & TP_FLAG_REPLY) && !tp_opcode_name(fr.hdr.opcode))
		abort();
	if (tp_request_desc(fr.hdr.opcode))
		check_unpack(&fr, tp_request_desc(fr.hdr.opcode));
	if (tp_reply_desc(fr.hdr.opcode))
		check_unpack(&fr, tp_reply_desc(fr.hdr.opcode));
	check_unpack(&fr, &tessera__error_reply__descriptor);
}

/* The daemons, for the whole run. */
static struct tp_config cfg;
static struct fz_replies seen;
static struct ios ios;
static struct mds mds;
static char ios_dir[4096], mds_dir[4096];

static void daemons_stop(void)
{
	srv_destroy(ios.srv);
	srv_destroy(mds.srv);
	ios_locks_destroy(ios.locks);
	ios_caps_destroy(ios.caps);
	ios_descs_clear(&ios);
	ios_store_close(ios.store);
	ios.disk->ops->destroy(ios.disk);
	mds_store_close(mds.store);
	fz_rmtree(ios_dir);
	fz_rmtree(mds_dir);
}

static void daemons_start(void)
{
	char *msg = NULL, *notice = NULL, err[256] = "";
	struct srv_opts so = { &cfg, NULL, NULL, 0, NULL, NULL };
	struct srv_role ir = { "ios", 0, ios_handlers, ios_tick, &ios, NULL, NULL, NULL, NULL, NULL };
	struct srv_role mr = { "mds", 0, mds_handlers, NULL, &mds, NULL, NULL, NULL, NULL, NULL };

	fz_config(&cfg);
	if (fz_tmpdir("fuzz-frame-ios", ios_dir, sizeof(ios_dir)) ||
	    fz_tmpdir("fuzz-frame-mds", mds_dir, sizeof(mds_dir)) || ios_disk_system(&ios.disk) ||
	    ios_store_open(ios_dir, 16, IOS_STORE_NEW, 0, ios.disk, &ios.store, &notice, &msg) ||
	    ios_locks_create(&ios, 10000, &ios.locks, err, sizeof(err)) || ios_caps_create(&fz_key, &ios.caps) ||
	    mds_store_open(mds_dir, 0, cfg.n_ios, &mds.store, err, sizeof(err))) {
		fprintf(stderr, "fuzz_frame: %s\n", msg ? msg : err[0] ? err : "cannot open the stores");
		abort();
	}
	free(notice);
	ios_locks_set_epoch(ios.locks, 5);
	ios.cfg = &cfg;
	mds.n_ios = cfg.n_ios;
	mds.key = fz_key;
	mds.cap_lifetime_ms = cfg.cap_lifetime_ms;
	if (srv_create_local(&so, &ir, fz_reply_sink, &seen, &ios.srv) ||
	    srv_create_local(&so, &mr, fz_reply_sink, &seen, &mds.srv))
		abort();
	atexit(daemons_stop);
}

/* The input as the payload of a decoded AUTH credential (munged cannot
 * run under the fuzzer): taken only when it names its daemon, with the
 * reply address inside the payload and its bounds. */
static void check_auth_payload(const uint8_t *data, size_t size)
{
	struct tp_auth_id id;

	if (tp_auth_payload(data, size, "ios:0", &id))
		return;
	if (size < 1 + 5 + TP_KEY_SIZE + 1 || data[0] != 5 || memcmp(data + 1, "ios:0", 5) ||
	    id.addr_len < 1 || id.addr_len > TP_MAX_ADDR ||
	    memcmp(id.addr, data + 1 + 5 + TP_KEY_SIZE, id.addr_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ios.srv)
		daemons_start();
	check_parse(data, size, tp_config_max_frame(&cfg));
	check_auth_payload(data, size);
	srv_deliver(ios.srv, 1, data, size);
	srv_deliver(mds.srv, 1, data, size);
	srv_local_tick(ios.srv);
	srv_local_tick(mds.srv);
	return 0;
}

#else /* FUZZ_SEED_MAIN */

static int save(const char *dir, const char *name, unsigned op, const ProtobufCMessage *m,
		size_t dlen, uint16_t flags)
{
	static uint8_t buf[65536];
	struct tp_hdr h = { 0 };
	long n;

	h.opcode = (uint16_t)op;
	h.reqid = 42;
	h.flags = flags;
	h.data_len = (uint32_t)dlen;
	n = tp_frame_build(buf, sizeof(buf) - dlen, &h, "fuzz", 4, m);
	if (n < 0)
		return -1;
	memset(buf + n, 'x', dlen);
	return fz_seed_write(dir, name, buf, (size_t)n + dlen);
}

int main(int argc, char **argv)
{
	Tessera__Cred cred = TESSERA__CRED__INIT;
	Tessera__CreateRequest cr = TESSERA__CREATE_REQUEST__INIT;
	Tessera__WriteRequest w = TESSERA__WRITE_REQUEST__INIT;
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	uint64_t offs[2] = { 0, 10 }, lens[2] = { 5, 5 };
	int rc = 0;

	if (argc != 2)
		return 2;
	cr.cred = &cred;
	cr.path = "/f";
	cr.mode = 0644;
	w.handle = 3;
	w.offset = 100;
	l.handle = 3;
	l.n_offsets = l.n_lengths = 2;
	l.offsets = offs;
	l.lengths = lens;
	er.code = -5;
	er.message = "an error";
	rc |= save(argv[1], "create", TP_OP_CREATE, &cr.base, 0, 0);
	rc |= save(argv[1], "write", TP_OP_WRITE, &w.base, 64, 0);
	rc |= save(argv[1], "list-write", TP_OP_LIST_WRITE, &l.base, 10, 0);
	rc |= save(argv[1], "ping", TP_OP_PING, &ping.base, 0, 0);
	rc |= save(argv[1], "reply", TP_OP_READ, &er.base, 0, TP_FLAG_REPLY);
	rc |= save(argv[1], "empty-body", TP_OP_STATFS, NULL, 0, 0);
	/* a credential's payload for ios:0: target, key, reply address */
	uint8_t payload[1 + 5 + TP_KEY_SIZE + 4] = "\x05ios:0";

	memcpy(payload + 1 + 5 + TP_KEY_SIZE, "fuzz", 4);
	rc |= fz_seed_write(argv[1], "auth-payload", payload, sizeof(payload));
	return rc ? 1 : 0;
}

#endif
