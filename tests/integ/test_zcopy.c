/*
 * test_zcopy.c - the bulk data path with lent memory (docs/design.md,
 * "Bulk data path"): writes sent straight from the caller's buffer and reads received
 * straight into it, on real daemons.
 *
 * A request lends the caller's memory when its object range is at most
 * iov_limit - 1 runs of the caller's buffer (3 with rxm); more runs, or a
 * provider that cannot be made to let go (shm), take the copy paths. The
 * copy counters (tessera_copy_stats) show which path carried each byte, so
 * a test can tell the paths apart; the data is checked against a model
 * either way. The failure tests stop or kill a daemon in the middle of a
 * lending call and check that after the call returns (with an error naming
 * the file and the daemon) nothing reads or writes the caller's buffer any
 * more, even once the stopped daemon runs again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

#define LEND_RUNS 3 /* rxm's iov limit (4) less the frame's own entry */

/* The messages' bulk path is what this file tests: local reads (which
 * would take every read here, all daemons being on this host) are off;
 * test_local covers them. */
static int setup(void **state)
{
	return cluster_setup_conf(state, "tcp;ofi_rxm", "local_reads = 0\n");
}

/* The stop and kill tests wait out a request timeout or two each: a
 * shorter one than the harness's, still well above a healthy request. */
static int setup_stop(void **state)
{
	return cluster_setup_conf(state, "tcp;ofi_rxm", "timeout_ms = 2000\nlocal_reads = 0\n");
}

static int setup_shm(void **state)
{
	return cluster_setup_conf(state, "shm", "local_reads = 0\n");
}

static struct tessera_copy_stats copies(tessera_fs *fs)
{
	struct tessera_copy_stats s;

	tessera_copy_stats(fs, &s);
	return s;
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i + seed) * 2654435761u >> 13);
}

/* Write len bytes at off into a file of layout (strip, count) and read
 * them back; returns the copy counters' change over the write and over the
 * read (in *w, *r). */
static void round_trip(struct cluster *c, const char *path, uint64_t strip, uint32_t count,
		       uint64_t off, size_t len, struct tessera_copy_stats *w,
		       struct tessera_copy_stats *r)
{
	struct tessera_layout l = { .strip_size = strip, .count = count };
	uint8_t *a = malloc(len), *b = malloc(len);
	struct tessera_copy_stats s0, s1, s2;
	tessera_file *f;

	assert_non_null(a);
	assert_non_null(b);
	fill(a, len, off);
	memset(b, 0xEE, len);
	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &l, &f));
	s0 = copies(c->fs);
	assert_int_equal(tessera_pwrite(f, a, len, off), (ssize_t)len);
	s1 = copies(c->fs);
	assert_int_equal(tessera_pread(f, b, len, off), (ssize_t)len);
	s2 = copies(c->fs);
	assert_memory_equal(a, b, len);
	tessera_close(f);
	w->write_direct = s1.write_direct - s0.write_direct;
	w->write_gathered = s1.write_gathered - s0.write_gathered;
	r->read_direct = s2.read_direct - s1.read_direct;
	r->read_staged = s2.read_staged - s1.read_staged;
	free(a);
	free(b);
}

/* One run per request, exactly LEND_RUNS, and more (the copy paths). */
static void test_run_counts(void **state)
{
	struct cluster *c = *state;
	struct tessera_copy_stats w, r;

	/* 1 MiB strips, 4 MiB: each request is one strip, one run. */
	round_trip(c, "/one", 1 << 20, 4, 0, 4 << 20, &w, &r);
	assert_int_equal(w.write_direct, 4 << 20);
	assert_int_equal(w.write_gathered, 0);
	assert_int_equal(r.read_direct, 4 << 20);
	assert_int_equal(r.read_staged, 0);

	/* 64 KiB strips over 4 objects, 3 strips per object: 3 runs each. */
	round_trip(c, "/three", 64 << 10, 4, 0, LEND_RUNS * 4 * (64 << 10), &w, &r);
	assert_int_equal(w.write_direct, LEND_RUNS * 4 * (64 << 10));
	assert_int_equal(w.write_gathered, 0);
	assert_int_equal(r.read_direct, LEND_RUNS * 4 * (64 << 10));
	assert_int_equal(r.read_staged, 0);

	/* 4 strips per object: 4 runs, one too many: gathered, scattered. */
	round_trip(c, "/four", 64 << 10, 4, 0, (LEND_RUNS + 1) * 4 * (64 << 10), &w, &r);
	assert_int_equal(w.write_direct, 0);
	assert_int_equal(w.write_gathered, (LEND_RUNS + 1) * 4 * (64 << 10));
	assert_int_equal(r.read_direct, 0);
	assert_int_equal(r.read_staged, (LEND_RUNS + 1) * 4 * (64 << 10));
}

/* Unaligned offsets and lengths, small strips (many runs: a mix of both
 * paths within one call), a stripe of one. */
static void test_unaligned(void **state)
{
	struct cluster *c = *state;
	struct tessera_copy_stats w, r;
	static const struct { uint64_t strip; uint32_t count; uint64_t off; size_t len; } cases[] = {
		{ 4096, 4, 12345, 100000 },
		{ 65536, 3, 65535, 3 * 65536 + 2 },
		{ 65536, 1, 7, 3 << 20 },
		{ 1 << 20, 4, (1 << 20) - 1, 2 },
		{ 1 << 20, 2, 999, (5 << 20) + 17 },
		{ 8192, 4, 8191, 8192 * 12 },
	};
	char path[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "/u%zu", i);
		round_trip(c, path, cases[i].strip, cases[i].count, cases[i].off, cases[i].len, &w,
			   &r);
		assert_int_equal(w.write_direct + w.write_gathered, cases[i].len);
		assert_int_equal(r.read_direct + r.read_staged, cases[i].len);
		print_message("strip %llu x %u at %llu + %zu: written %llu direct, %llu gathered; "
			      "read %llu direct, %llu staged\n", (unsigned long long)cases[i].strip,
			      cases[i].count, (unsigned long long)cases[i].off, cases[i].len,
			      (unsigned long long)w.write_direct, (unsigned long long)w.write_gathered,
			      (unsigned long long)r.read_direct, (unsigned long long)r.read_staged);
	}
	/* A stripe of one: every request is one run. */
	round_trip(c, "/single", 65536, 1, 7, 3 << 20, &w, &r);
	assert_int_equal(w.write_gathered, 0);
	assert_int_equal(r.read_staged, 0);
}

/* Holes and the end of file: a tagged reply shorter than asked for. */
static void test_holes_and_eof(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = { .strip_size = 1 << 20, .count = 4 };
	size_t len = 6 << 20;
	uint8_t *a = malloc(len), *b = malloc(len);
	tessera_file *f;

	fill(a, 1000, 1);
	CHECK(c->fs, tessera_open(c->fs, "/holes", O_CREAT | O_RDWR, 0644, &l, &f));
	/* data at 0 and in the 5th strip; strips 1..3 are holes */
	assert_int_equal(tessera_pwrite(f, a, 1000, 0), 1000);
	assert_int_equal(tessera_pwrite(f, a, 1000, (4 << 20) + 5), 1000);
	memset(b, 0xEE, len);
	assert_int_equal(tessera_pread(f, b, len, 0), (4 << 20) + 1005);
	assert_memory_equal(b, a, 1000);
	for (size_t i = 1000; i < (4 << 20) + 5; i++)
		if (b[i])
			fail_msg("byte %zu of a hole reads %u", i, b[i]);
	assert_memory_equal(b + (4 << 20) + 5, a, 1000);
	/* past the end: nothing, and the buffer is the read's to fill only up
	 * to what the call covers */
	assert_int_equal(tessera_pread(f, b, 4096, 8 << 20), 0);
	memset(b, 0xEE, len);
	assert_int_equal(tessera_pread(f, b + 100, 10, (4 << 20) + 1000), 5);
	assert_memory_equal(b + 100, a + 995, 5);
	assert_int_equal(b[99], 0xEE);
	assert_int_equal(b[110], 0xEE);
	tessera_close(f);
	free(a);
	free(b);
}

/*
 * The provider truncates a tagged message at the end of its receive: what
 * the client counts on so that a reply longer than asked for cannot write
 * past the caller's runs. A raw endpoint asks a storage daemon for 10000
 * bytes with a tagged reply but posts a receive of 4000 (plus the head):
 * the receive fails with -EMSGSIZE and the bytes after it are untouched.
 * Then the same with a receive of the right size: the head is exactly
 * TP_TAGGED_HEAD bytes, sealed, and the data follows it.
 */
static int tagged_read(struct raw *raw, uint64_t handle, const Tessera__Capability *cap,
		       uint64_t reqid, uint8_t *head, uint8_t *data, size_t cap_len,
		       size_t *got)
{
	Tessera__ReadRequest m = TESSERA__READ_REQUEST__INIT;
	struct tp_hdr hdr = { .opcode = TP_OP_READ, .reqid = reqid };
	struct iovec riov[2] = { { head, TP_TAGGED_HEAD }, { data, cap_len } };
	struct tnet_ctx rctx = { .user = head }, sctx = { .user = NULL };
	uint8_t frame[4096];
	long flen;
	int rc, done = 0, sent = 0, status = 0;

	m.handle = handle;
	m.offset = 0;
	m.length = 10000;
	m.tagged_reply = 1;
	m.cap = (Tessera__Capability *)cap;
	flen = tp_frame_build(frame, sizeof(frame), &hdr, raw->name, raw->name_len, &m.base);
	assert_true(flen > 0);
	tp_frame_seal(frame, (size_t)flen, NULL, 0, &raw->ses, raw->seq++);
	assert_int_equal(tnet_trecv(raw->net, riov, 2, reqid, &rctx), 0);
	struct iovec siov = { frame, (size_t)flen };
	while ((rc = tnet_send(raw->net, raw->peer, &siov, 1, &sctx)) == -EAGAIN)
		usleep(100);
	assert_int_equal(rc, 0);
	for (double t0 = now_s(); (!done || !sent) && now_s() - t0 < 10;) {
		struct tnet_event ev[8];
		int n = tnet_poll(raw->net, ev, 8);

		for (int i = 0; i < n; i++) {
			if (ev[i].type == TNET_RECV) {
				tnet_repost(raw->net, ev[i].rbuf);
			} else if (ev[i].type == TNET_TRECV) {
				done = 1;
				status = ev[i].status;
				*got = ev[i].len;
			} else {
				sent = 1;
			}
		}
		if (n <= 0)
			usleep(100);
	}
	assert_true(done);
	return status;
}

static void test_tagged_reply_bounds(void **state)
{
	struct cluster *c = *state;
	struct tessera_layout l = { .strip_size = 1 << 20, .count = 1 };
	uint8_t *a = malloc(20000), head[TP_TAGGED_HEAD], *data = malloc(20000);
	Tessera__Capability *cap;
	Tessera__ReadReply *rep;
	struct tp_frame fr;
	struct raw raw;
	tessera_file *f;
	size_t got = 0;
	char err[256];

	fill(a, 20000, 3);
	CHECK(c->fs, tessera_open(c->fs, "/bounds", O_CREAT | O_RDWR, 0644, &l, &f));
	assert_int_equal(tessera_pwrite(f, a, 20000, 0), 20000);
	tessera_file_layout(f, &l);
	cap = file_cap(f);
	raw_open(c, l.servers[0], &raw);

	memset(data, 0xEE, 20000);
	assert_int_equal(tagged_read(&raw, l.handles[0], cap, 7001, head, data, 4000, &got),
			 -EMSGSIZE);
	for (size_t i = 4000; i < 20000; i++)
		if (data[i] != 0xEE)
			fail_msg("byte %zu past the receive was written", i);

	memset(data, 0xEE, 20000);
	assert_int_equal(tagged_read(&raw, l.handles[0], cap, 7002, head, data, 10000, &got), 0);
	assert_int_equal(got, TP_TAGGED_HEAD + 10000);
	assert_int_equal(tp_frame_parse(head, got, 1 << 21, &fr, err, sizeof(err)), 0);
	assert_int_equal(TP_HDR_SIZE + fr.hdr.addr_len + fr.hdr.body_len, TP_TAGGED_HEAD);
	assert_int_equal(fr.hdr.reqid, 7002);
	assert_int_equal(fr.hdr.data_len, 10000);
	{
		struct iovec run = { data, 10000 };

		assert_int_equal(tp_frame_verify(&fr, &run, 1, &raw.ses), 0);
		head[TP_HDR_SIZE + 3] ^= 1; /* the body is under the tag */
		assert_int_equal(tp_frame_verify(&fr, &run, 1, &raw.ses), -EBADMSG);
		head[TP_HDR_SIZE + 3] ^= 1;
		data[9999] ^= 1; /* and so is the data in the caller's runs */
		assert_int_equal(tp_frame_verify(&fr, &run, 1, &raw.ses), -EBADMSG);
		data[9999] ^= 1;
		assert_int_equal(tp_frame_open(&fr, &run, 1, &raw.ses, NULL), 0);
	}
	rep = (Tessera__ReadReply *)tp_body_unpack(&fr, &tessera__read_reply__descriptor);
	assert_non_null(rep);
	assert_int_equal(rep->object_size, 20000);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	assert_memory_equal(data, a, 10000);
	assert_int_equal(data[10000], 0xEE);

	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tnet_close(raw.net);
	tessera_close(f);
	free(a);
	free(data);
}

/*
 * A daemon stopped (SIGSTOP) or killed (SIGKILL) while a lending call is
 * in flight. The call fails naming the file and the daemon; afterwards the
 * caller's buffer is left alone: a pattern put into it after the call
 * stays (reads), and the daemon, let run again, does not store it
 * (writes); the buffer can even be unmapped.
 */
enum stop_how { BY_STOP, BY_KILL };

/* Let the client's transport run for `secs` (it makes progress only when
 * called: pings to every daemon), so that whatever a provider still held
 * for a failed call would now reach the buffer. */
static void progress_for(struct cluster *c, double secs)
{
	struct tessera_ping p[1 + N_IOS];

	for (double t0 = now_s(); now_s() - t0 < secs;) {
		tessera_ping(c->fs, p, 1 + N_IOS);
		usleep(20000);
	}
}

/* What follows a call that failed while daemon `victim` (pid) was
 * stopped or killed under it: the error names the file and the daemon,
 * the lending path was the one taken (s0, s1), the buffer (already filled
 * with 0x5A by the caller) is left alone while the transport runs again,
 * `release` gives it back to the system, and the file (a write's) does not
 * hold the pattern. */
static void after_failed_call(struct cluster *c, tessera_file *f, const char *path,
			      const char *msg, struct tessera_copy_stats s0,
			      struct tessera_copy_stats s1, int victim, pid_t pid,
			      enum stop_how how, int write, uint8_t *buf, size_t len,
			      void (*release)(uint8_t *buf, size_t len))
{
	uint8_t *check = malloc(len);
	char name[64];

	assert_non_null(check);
	assert_non_null(strstr(msg, path));
	snprintf(name, sizeof(name), "storage daemon %d", victim);
	assert_non_null(strstr(msg, name));
	if (write)
		assert_true(s1.write_direct > s0.write_direct);
	else
		assert_true(s1.read_direct > s0.read_direct);
	if (how == BY_STOP) {
		struct tessera_ios_stats st;

		double t0;

		kill(pid, SIGCONT);
		progress_for(c, 1.0);
		/* The client marked the daemon down when the call timed out:
		 * calls to it fail at once until the client's background prober
		 * finds it answering again (within the longest back-off, 5 s,
		 * and a connect timeout). */
		for (t0 = now_s(); now_s() - t0 < 15;) {
			struct tessera_server_status hs;

			CHECK(c->fs, tessera_server_status(c->fs, victim, &hs));
			if (hs.state == TESSERA_SERVER_UP)
				break;
			usleep(50000);
		}
		print_message("up again %.2f s after the pings\n", now_s() - t0);
		/* it answers again, having served what was queued */
		CHECK(c->fs, tessera_ios_stats(c->fs, (uint32_t)victim, &st));
		print_message("after SIGCONT the daemon answers; it has served %llu bytes\n",
			      (unsigned long long)(st.bytes_read[TESSERA_METHOD_CONTIG] +
						   st.bytes_written[TESSERA_METHOD_CONTIG]));
	} else {
		progress_for(c, 1.0);
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] != 0x5A)
			fail_msg("byte %zu of the buffer changed after the call returned", i);
	release(buf, len);
	if (how == BY_KILL) {
		snprintf(name, sizeof(name), "ios%d", victim);
		c->ios[victim] = cluster_spawn(c, "tessera-ios", name, victim);
	}
	if (write) {
		/* Whatever the daemon stored, it is not what the buffer held
		 * after the call: the provider no longer read it. */
		ssize_t n = -1;

		for (int tries = 0; tries < 6 && n < 0; tries++) {
			n = tessera_pread(f, check, len, 0);
			if (n < 0)
				usleep(300000);
		}
		assert_true(n >= 0);
		for (ssize_t i = 0; i + 4096 <= n; i += 4096) {
			size_t k = 0;

			while (k < 4096 && check[i + (ssize_t)k] == 0x5A)
				k++;
			if (k == 4096)
				fail_msg("the file holds the pattern put into the buffer after the "
					 "call, at %zd", i);
		}
	}
	free(check);
}

static void release_unmap(uint8_t *buf, size_t len)
{
	assert_int_equal(munmap(buf, len), 0);
}

static void release_free(uint8_t *buf, size_t len)
{
	(void)len;
	free(buf); /* ASan names any later touch */
}

static void lend_and_stop(struct cluster *c, enum stop_how how, int write)
{
	struct tessera_layout l = { .strip_size = 1 << 20, .count = 4 };
	size_t len = 16 << 20;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const char *path = write ? "/lent-w" : "/lent-r";
	struct tessera_copy_stats s0, s1;
	tessera_file *f;
	ssize_t n;
	int victim;
	pid_t pid;

	assert_true(buf != MAP_FAILED);
	fill(buf, len, 11);
	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &l, &f));
	assert_int_equal(tessera_pwrite(f, buf, len, 0), (ssize_t)len);
	tessera_file_layout(f, &l);
	victim = (int)l.servers[1];
	pid = c->ios[victim];
	s0 = copies(c->fs);
	kill(pid, how == BY_STOP ? SIGSTOP : SIGKILL);
	if (how == BY_KILL) {
		waitpid(pid, NULL, 0);
		c->ios[victim] = 0;
	}
	if (write)
		n = tessera_pwrite(f, buf, len, 0);
	else
		n = tessera_pread(f, buf, len, 0);
	s1 = copies(c->fs);
	print_message("%s with storage daemon %d %s: %zd: %s\n", write ? "write" : "read", victim,
		      how == BY_STOP ? "stopped" : "killed", n, tessera_errmsg(c->fs));
	assert_true(n < 0);
	memset(buf, 0x5A, len); /* the buffer is the caller's again */
	after_failed_call(c, f, path, tessera_errmsg(c->fs), s0, s1, victim, pid, how, write, buf,
			  len, release_unmap);
	tessera_close(f);
}

static void test_stop_during_write(void **state)
{
	lend_and_stop(*state, BY_STOP, 1);
}

static void test_stop_during_read(void **state)
{
	lend_and_stop(*state, BY_STOP, 0);
}

static void test_kill_during_write(void **state)
{
	lend_and_stop(*state, BY_KILL, 1);
}

static void test_kill_during_read(void **state)
{
	lend_and_stop(*state, BY_KILL, 0);
}

/*
 * The same with the daemon stopped or killed while calls are in flight: a
 * thread reads or writes the file over and over, lending its buffer, and
 * the daemon goes 150 ms in, with transfers under way (rxm's rendezvous
 * reading or writing the buffer). The call that fails has let go too.
 */
struct looper {
	tessera_file *f;
	uint8_t *buf;
	size_t len;
	int write;
	volatile int stop;
	ssize_t rc;
	char msg[1024];
};

static void *loop_io(void *arg)
{
	struct looper *l = arg;
	tessera_fs *fs = tessera_file_fs(l->f);

	while (!l->stop) {
		ssize_t n = l->write ? tessera_pwrite(l->f, l->buf, l->len, 0)
				     : tessera_pread(l->f, l->buf, l->len, 0);

		if (n < 0) {
			snprintf(l->msg, sizeof(l->msg), "%s", tessera_errmsg(fs));
			/* the buffer is ours again: mark it at once */
			memset(l->buf, 0x5A, l->len);
			l->rc = n;
			break;
		}
	}
	return NULL;
}

static void stop_mid_call(struct cluster *c, enum stop_how how, int write)
{
	struct tessera_layout l = { .strip_size = 1 << 20, .count = 4 };
	size_t len = 32 << 20;
	const char *path = write ? "/mid-w" : "/mid-r";
	struct looper lp = { .len = len, .write = write };
	struct tessera_copy_stats s0, s1;
	pthread_t th;
	int victim;
	pid_t pid;

	lp.buf = malloc(len);
	fill(lp.buf, len, 5);
	CHECK(c->fs, tessera_open(c->fs, path, O_CREAT | O_RDWR, 0644, &l, &lp.f));
	assert_int_equal(tessera_pwrite(lp.f, lp.buf, len, 0), (ssize_t)len);
	tessera_file_layout(lp.f, &l);
	victim = (int)l.servers[2];
	pid = c->ios[victim];
	s0 = copies(c->fs);
	pthread_create(&th, NULL, loop_io, &lp);
	usleep(150000);
	kill(pid, how == BY_STOP ? SIGSTOP : SIGKILL);
	if (how == BY_KILL) {
		waitpid(pid, NULL, 0);
		c->ios[victim] = 0;
	}
	for (int i = 0; i < 100 && !lp.rc; i++)
		usleep(100000);
	lp.stop = 1;
	pthread_join(th, NULL);
	s1 = copies(c->fs);
	print_message("%s with storage daemon %d %s mid-call: %s\n", write ? "write" : "read",
		      victim, how == BY_STOP ? "stopped" : "killed", lp.msg);
	assert_true(lp.rc < 0);
	after_failed_call(c, lp.f, path, lp.msg, s0, s1, victim, pid, how, write, lp.buf, len,
			  release_free);
	tessera_close(lp.f);
}

static void test_stop_mid_write(void **state)
{
	stop_mid_call(*state, BY_STOP, 1);
}

static void test_stop_mid_read(void **state)
{
	stop_mid_call(*state, BY_STOP, 0);
}

static void test_kill_mid_write(void **state)
{
	stop_mid_call(*state, BY_KILL, 1);
}

static void test_kill_mid_read(void **state)
{
	stop_mid_call(*state, BY_KILL, 0);
}

/* shm cannot be made to let go of a stopped peer's copy: it takes the
 * copy paths, and they work. */
static void test_shm_copies(void **state)
{
	struct cluster *c = *state;
	struct tessera_copy_stats w, r;

	round_trip(c, "/shm", 1 << 20, 4, 12345, 3 << 20, &w, &r);
	assert_int_equal(w.write_direct, 0);
	assert_int_equal(w.write_gathered, 3 << 20);
	assert_int_equal(r.read_direct, 0);
	assert_int_equal(r.read_staged, 3 << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_counts, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_unaligned, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_holes_and_eof, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_tagged_reply_bounds, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stop_during_write, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stop_during_read, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_kill_during_write, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_kill_during_read, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stop_mid_write, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_stop_mid_read, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_kill_mid_write, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_kill_mid_read, setup_stop, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_shm_copies, setup_shm, cluster_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	cluster_test_filter();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
