/*
 * test_local.c - local reads (client/local.c, server/ios_local.c): a
 * client on the storage daemons' host reads their objects' files itself.
 *
 *   - reads of every shape (whole files, odd offsets and lengths, strips
 *     that are not whole checksum blocks, holes, past the end) give the
 *     bytes written, and the copy counters say the local path carried
 *     them;
 *   - a block damaged on disk is not handed out: the read goes through
 *     the daemon, which reports the damage (EIO, the file, the daemon);
 *   - another client's write, and its truncate, are seen by the next read;
 *   - the socket hands descriptors only for a live token, once, and only
 *     to the uid the token was given to (a process that really is another
 *     user is refused); at most 64 tokens wait (then EBUSY); idle
 *     connections past the bound are refused, the rest cut at their
 *     deadline, and the daemon serves meanwhile and afterwards;
 *   - LOCAL_OPEN needs a capability with the read right;
 *   - with local_reads = 0, or a fault disk, the daemons say no
 *     (EOPNOTSUPP) and reads go through them, with the same bytes;
 *   - with 512-byte checksum blocks (csum_block) the shapes read locally
 *     and a damaged block is still caught; a daemon restarted with another
 *     csum_block than its store's refuses to start and says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"

static int setup(void **state)
{
	return cluster_setup(state, CLUSTER_TCP);
}

static int setup_off(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "local_reads = 0\n");
}

/* Stores made with 512-byte checksum blocks (csum_block): local readers
 * must check with the block the daemon tells them. */
static int setup_512(void **state)
{
	return cluster_setup_conf(state, CLUSTER_TCP, "csum_block = 512\n");
}

static uint64_t local_bytes(tessera_fs *fs)
{
	struct tessera_copy_stats s;

	tessera_copy_stats(fs, &s);
	return s.read_local;
}

static uint64_t remote_bytes(tessera_fs *fs)
{
	struct tessera_copy_stats s;

	tessera_copy_stats(fs, &s);
	return s.read_direct + s.read_staged;
}

/* A file of `size` random bytes (model[]) with this layout; holes where
 * hole_len bytes from hole_off were never written. */
static tessera_file *make_file(tessera_fs *fs, const char *path, uint64_t strip, uint32_t count,
			       uint8_t *model, size_t size, size_t hole_off, size_t hole_len)
{
	struct tessera_layout l = { .strip_size = strip, .count = count };
	uint64_t seed = strip * 31 + size;
	tessera_file *f;

	for (size_t i = 0; i < size; i++)
		model[i] = (uint8_t)rnd(&seed);
	memset(model + hole_off, 0, hole_len);
	CHECK(fs, tessera_open(fs, path, O_CREAT | O_RDWR | O_TRUNC, 0644, &l, &f));
	if (hole_off)
		assert_int_equal(tessera_pwrite(f, model, hole_off, 0), (ssize_t)hole_off);
	if (hole_off + hole_len < size)
		assert_int_equal(tessera_pwrite(f, model + hole_off + hole_len,
						size - hole_off - hole_len, hole_off + hole_len),
				 (ssize_t)(size - hole_off - hole_len));
	return f;
}

static void expect_read(tessera_fs *fs, tessera_file *f, const uint8_t *model, size_t size,
			uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);
	size_t want = off >= size ? 0 : size - off < len ? size - off : len;
	ssize_t n;

	assert_non_null(buf);
	memset(buf, 0xee, len);
	n = tessera_pread(f, buf, len, off);
	if (n < 0)
		fail_msg("read at %" PRIu64 "+%zu: %s", off, len, tessera_errmsg(fs));
	assert_int_equal(n, want);
	if (want && memcmp(buf, model + off, want)) {
		size_t i = 0;

		while (buf[i] == model[off + i])
			i++;
		fail_msg("read at %" PRIu64 "+%zu: byte %zu differs (%02x, wrote %02x)", off, len,
			 i, buf[i], model[off + i]);
	}
	free(buf);
}

/* Every shape of read against the model, through the local path. */
static void test_shapes(void **state)
{
	struct cluster *c = *state;
	const struct {
		uint64_t strip;
		uint32_t count;
		size_t size, hole_off, hole_len;
	} files[] = {
		{ 65536, 4, 3 << 20, 0, 0 },               /* the default layout */
		{ 65536, 4, (3 << 20) + 12345, 1 << 20, 300000 }, /* a hole, odd end */
		{ 6000, 3, 777777, 0, 0 },                  /* strips of partial blocks */
		{ 1 << 20, 1, (2 << 20) + 1, 0, 0 },        /* one object */
	};
	const struct {
		uint64_t off;
		size_t len;
	} reads[] = {
		{ 0, 1 << 20 }, { 0, 4 << 20 }, { 4095, 200001 }, { 65535, 131074 },
		{ 1000000, 1 << 20 }, { 3 << 20, 1 << 20 }, { 5 << 20, 1 << 20 },
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint8_t *model = malloc(files[i].size);
		uint64_t l0, r0;
		char path[64];
		tessera_file *f;

		assert_non_null(model);
		snprintf(path, sizeof(path), "/shape%zu", i);
		f = make_file(c->fs, path, files[i].strip, files[i].count, model, files[i].size,
			      files[i].hole_off, files[i].hole_len);
		l0 = local_bytes(c->fs);
		r0 = remote_bytes(c->fs);
		for (size_t j = 0; j < sizeof(reads) / sizeof(reads[0]); j++)
			expect_read(c->fs, f, model, files[i].size, reads[j].off, reads[j].len);
		print_message("%s: strip %" PRIu64 " x %u, %zu bytes: %" PRIu64 " bytes read locally,"
			      " %" PRIu64 " through the daemons\n", path, files[i].strip,
			      files[i].count, files[i].size, local_bytes(c->fs) - l0,
			      remote_bytes(c->fs) - r0);
		assert_true(local_bytes(c->fs) - l0 > 0);
		/* holes and bytes past an object's end are neither */
		assert_int_equal(remote_bytes(c->fs) - r0, 0);
		tessera_close(f);
		free(model);
	}
}

static void object_file(struct cluster *c, const struct tessera_layout *l, uint32_t slot,
			char *buf, size_t len)
{
	snprintf(buf, len, "%s/ios%u/objects/%02x/%016" PRIx64, c->dir, l->servers[slot],
		 (unsigned)(l->handles[slot] & 0xff), l->handles[slot]);
}

/* One byte flipped in an object's file: the local read finds the block
 * wrong and leaves it to the daemon, whose error names it. */
static void test_damaged_block(void **state)
{
	struct cluster *c = *state;
	size_t size = 1 << 20;
	uint8_t *model = malloc(size), *buf = malloc(size), b;
	struct tessera_layout l;
	char file[600];
	tessera_file *f;
	int fd;

	assert_non_null(model);
	assert_non_null(buf);
	f = make_file(c->fs, "/damaged", 65536, 4, model, size, 0, 0);
	expect_read(c->fs, f, model, size, 0, size); /* descriptors in hand */
	assert_int_equal(tessera_file_layout(f, &l), 0);
	object_file(c, &l, 1, file, sizeof(file));
	fd = open(file, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, 5000), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, 5000), 1);
	close(fd);
	assert_int_equal(tessera_pread(f, buf, size, 0), -EIO);
	print_message("%s\n", tessera_errmsg(c->fs));
	assert_non_null(strstr(tessera_errmsg(c->fs), "checksum"));
	assert_non_null(strstr(tessera_errmsg(c->fs), "storage daemon"));
	/* the other objects still read locally */
	expect_read(c->fs, f, model, size, 0, 65536);
	tessera_close(f);
	free(model);
	free(buf);
}

/* Another client writes and truncates; the reader's next read sees it. */
static void test_other_writer(void **state)
{
	struct cluster *c = *state;
	size_t size = 2 << 20;
	uint8_t *model = malloc(size), *fresh = malloc(size);
	tessera_fs *fs2;
	tessera_file *f, *g;
	char err[256];

	assert_non_null(model);
	assert_non_null(fresh);
	f = make_file(c->fs, "/shared", 65536, 4, model, size, 0, 0);
	expect_read(c->fs, f, model, size, 0, size);
	assert_int_equal(tessera_connect(c->conf, &fs2, err, sizeof(err)), 0);
	CHECK(fs2, tessera_open(fs2, "/shared", O_RDWR, 0, NULL, &g));
	for (int round = 0; round < 5; round++) {
		memset(fresh, 'A' + round, size);
		memcpy(model + round * 300000, fresh, 100000 + round);
		assert_int_equal(tessera_pwrite(g, fresh, 100000 + round, round * 300000),
				 100000 + round);
		expect_read(c->fs, f, model, size, 0, size);
	}
	CHECK(fs2, tessera_ftruncate(g, 1000000));
	expect_read(c->fs, f, model, 1000000, 0, size);
	tessera_close(g);
	tessera_disconnect(fs2);
	tessera_close(f);
	free(model);
	free(fresh);
}

/* A daemon killed under an open file: its objects' descriptors stay good,
 * and the file reads on (the data is on this host's disk). */
static void test_daemon_killed(void **state)
{
	struct cluster *c = *state;
	uint8_t *model = malloc(1 << 20);
	tessera_file *f;

	assert_non_null(model);
	f = make_file(c->fs, "/survivor", 65536, 4, model, 1 << 20, 0, 0);
	expect_read(c->fs, f, model, 1 << 20, 0, 1 << 20);
	cluster_stop_pid(c->ios[2], SIGKILL);
	c->ios[2] = 0;
	expect_read(c->fs, f, model, 1 << 20, 0, 1 << 20);
	tessera_close(f);
	c->ios[2] = cluster_spawn(c, "tessera-ios", "ios2", 2);
	free(model);
}

/* A connection to the daemon's socket (abstract name sock). */
static int sock_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path + 1, sock, strlen(sock));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa,
				 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sock))),
			 0);
	return fd;
}

/* Send token to the socket: the status byte, and how many descriptors
 * came with it (closed here). */
static int try_token(const char *sock, const uint8_t *token, int *nfds)
{
	int fds[2];
	uint8_t status;

	assert_int_equal(tp_local_fetch(sock, token, 5000, fds, nfds, &status), 0);
	for (int i = 0; i < *nfds; i++)
		close(fds[i]);
	return status;
}

static void test_socket_guards(void **state)
{
	struct cluster *c = *state;
	uint8_t model[100000], token[TP_LOCAL_TOKEN], wrong[TP_LOCAL_TOKEN];
	uint8_t toks[64][TP_LOCAL_TOKEN];
	char sock[128], msg[512];
	struct tessera_layout l;
	Tessera__Capability *cap;
	struct raw raw;
	tessera_file *f;
	int nfds, status, idle[40];
	pid_t pid;

	f = make_file(c->fs, "/guarded", 65536, 1, model, sizeof(model), 0, 0);
	assert_int_equal(tessera_file_layout(f, &l), 0);
	cap = file_cap(f);
	raw_open(c, l.servers[0], &raw);

	/* no capability: refused before anything is opened */
	assert_int_equal(raw_local_open(&raw, l.handles[0], NULL, token, sock, sizeof(sock), msg,
				    sizeof(msg)), -EACCES);
	print_message("without a capability: %s\n", msg);

	/* a wrong token, then the right one twice */
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock), msg,
				    sizeof(msg)), 0);
	memcpy(wrong, token, sizeof(wrong));
	wrong[3] ^= 1;
	assert_int_equal(try_token(sock, wrong, &nfds), TP_LOCAL_UNKNOWN);
	assert_int_equal(nfds, 0);
	assert_int_equal(try_token(sock, token, &nfds), TP_LOCAL_OK);
	assert_int_equal(nfds, 2); /* the data and its checksums */
	assert_int_equal(try_token(sock, token, &nfds), TP_LOCAL_UNKNOWN);
	assert_int_equal(nfds, 0);

	/* a process that is another user, with a live token */
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock), msg,
				    sizeof(msg)), 0);
	if (geteuid() == 0) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int n = 0;

			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(3);
			status = try_token(sock, token, &n);
			_exit(status == TP_LOCAL_NOT_YOURS && n == 0 ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	} else {
		print_message("not root: the other-user check needs setresuid (skipped)\n");
	}
	/* the token stays for its owner */
	assert_int_equal(try_token(sock, token, &nfds), TP_LOCAL_OK);

	/* the token table: 64 wait at most, one more is EBUSY until one is
	 * spent */
	for (int i = 0; i < 64; i++)
		assert_int_equal(raw_local_open(&raw, l.handles[0], cap, toks[i], sock, sizeof(sock),
					    msg, sizeof(msg)), 0);
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock), msg,
				    sizeof(msg)), -EBUSY);
	print_message("a 65th token: %s\n", msg);
	assert_int_equal(try_token(sock, toks[0], &nfds), TP_LOCAL_OK);
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, toks[0], sock, sizeof(sock), msg,
				    sizeof(msg)), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(try_token(sock, toks[i], &nfds), TP_LOCAL_OK);

	/* connections that never send: past the bound (32) they are closed
	 * at once; the daemon serves meanwhile (the read goes through it), it
	 * cuts the others at their 2 s deadline, and the socket serves after
	 * them while they are still open on our side */
	for (int i = 0; i < 40; i++)
		idle[i] = sock_connect(sock);
	expect_read(c->fs, f, model, sizeof(model), 0, sizeof(model));
	usleep(2500000);
	{
		struct timeval tv = { 3, 0 };
		char byte;

		assert_int_equal(setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
		assert_int_equal(read(idle[0], &byte, 1), 0); /* closed by the daemon */
	}
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock), msg,
				    sizeof(msg)), 0);
	assert_int_equal(try_token(sock, token, &nfds), TP_LOCAL_OK);
	for (int i = 0; i < 40; i++)
		close(idle[i]);

	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tessera_close(f);
}

/* A storage daemon started on its store with another csum_block than
 * the store was made with refuses to start, naming both values and the
 * store; started again with the store's own, it serves the bytes. */
static void test_block_changed(void **state)
{
	struct cluster *c = *state;
	uint8_t model[300000];
	char conf[400], err[400], cmd[3000], text[2048] = "", want[600];
	struct tessera_layout l;
	tessera_file *f;
	uint32_t s;
	size_t n;
	FILE *fp;
	int rc;

	f = make_file(c->fs, "/kept", 65536, 1, model, sizeof(model), 0, 0);
	CHECK(c->fs, tessera_fsync(f));
	assert_int_equal(tessera_file_layout(f, &l), 0);
	s = l.servers[0];
	cluster_stop_pid(c->ios[s], SIGTERM);
	c->ios[s] = 0;
	snprintf(conf, sizeof(conf), "%s/other.conf", c->dir);
	snprintf(err, sizeof(err), "%s/other.err", c->dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && echo 'csum_block = 512' >>%s", c->conf, conf, conf);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "umask 077; timeout 30 %s/tessera-ios -c %s -d %s/ios%u -i %u "
		 "-p %s/other.pid 2>%s", c->bin, conf, c->dir, s, s, c->dir, err);
	rc = system(cmd);
	assert_non_null(fp = fopen(err, "r"));
	n = fread(text, 1, sizeof(text) - 1, fp);
	text[n] = 0;
	fclose(fp);
	print_message("exit %d: %s", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text);
	assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) != 0 && WEXITSTATUS(rc) != 124);
	snprintf(want, sizeof(want), "made with csum_block 4096 (%s/ios%u/store), the config says "
		 "csum_block 512", c->dir, s);
	if (!strstr(text, want))
		fail_msg("the refusal does not say \"%s\"", want);
	cluster_restart_ios(c, (int)s, NULL);
	expect_read(c->fs, f, model, sizeof(model), 0, sizeof(model));
	tessera_close(f);
}

/* Local reads off: the daemons say so, the bytes come through them. */
static void test_off(void **state)
{
	struct cluster *c = *state;
	size_t size = 3 << 20;
	uint8_t *model = malloc(size), token[TP_LOCAL_TOKEN];
	char sock[128], msg[512];
	struct tessera_layout l;
	Tessera__Capability *cap;
	struct raw raw;
	tessera_file *f;
	uint64_t l0, r0;

	assert_non_null(model);
	f = make_file(c->fs, "/off", 65536, 4, model, size, 0, 0);
	l0 = local_bytes(c->fs);
	r0 = remote_bytes(c->fs);
	expect_read(c->fs, f, model, size, 0, size);
	assert_int_equal(local_bytes(c->fs), l0);
	assert_int_equal(remote_bytes(c->fs) - r0, size);
	assert_int_equal(tessera_file_layout(f, &l), 0);
	cap = file_cap(f);
	raw_open(c, l.servers[0], &raw);
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock), msg,
				    sizeof(msg)), -EOPNOTSUPP);
	print_message("%s\n", msg);
	assert_non_null(strstr(msg, "local_reads = 0"));
	tnet_close(raw.net);
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tessera_close(f);
	free(model);
}

/* A daemon with a fault disk turns local reads off for itself. */
static void test_fault_disk(void **state)
{
	struct cluster *c = *state;
	uint8_t model[200000], token[TP_LOCAL_TOKEN];
	char sock[128], msg[512];
	struct tessera_layout l;
	Tessera__Capability *cap;
	struct raw raw;
	tessera_file *f;

	f = make_file(c->fs, "/faulty", 65536, 1, model, sizeof(model), 0, 0);
	assert_int_equal(tessera_file_layout(f, &l), 0);
	cluster_restart_ios(c, (int)l.servers[0], "slow:1@1000000=1");
	cap = file_cap(f);
	raw_open(c, l.servers[0], &raw);
	assert_int_equal(raw_local_open(&raw, l.handles[0], cap, token, sock, sizeof(sock), msg,
				    sizeof(msg)), -EOPNOTSUPP);
	print_message("%s\n", msg);
	assert_non_null(strstr(msg, "fault"));
	tnet_close(raw.net);
	expect_read(c->fs, f, model, sizeof(model), 0, sizeof(model));
	protobuf_c_message_free_unpacked(&cap->base, NULL);
	tessera_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shapes, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_damaged_block, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_other_writer, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_killed, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_socket_guards, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_off, setup_off, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_fault_disk, setup, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_block_changed, setup, cluster_teardown),
		/* stores of 512-byte checksum blocks: read locally, damage caught */
		cmocka_unit_test_setup_teardown(test_shapes, setup_512, cluster_teardown),
		cmocka_unit_test_setup_teardown(test_damaged_block, setup_512, cluster_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
