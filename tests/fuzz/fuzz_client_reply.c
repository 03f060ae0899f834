/*
 * fuzz_client_reply.c - libFuzzer target for the client library's handling
 * of replies: frame checks and matching (engine.c), error replies, and what
 * each call makes of its reply bodies and data (attributes, layouts,
 * directory pages, sizes, statfs and ping answers, reads, list I/O,
 * counters, the storage daemons' counters), and the AUTH exchange: after
 * the FC_REAUTH call, a fresh connection's AUTH answers come from the
 * input too, forged ones among them, and the transport checks that a
 * server whose answer was forged is sent nothing but AUTH.
 *
 * The client library is linked whole with a transport whose replies come
 * from the input (fuzz_tnet.c); the input also chooses the calls: a call
 * byte, then the reply records its requests consume. Every call must
 * return 0, a byte count within what was asked, or a negative errno with a
 * message; the sanitizers check the rest. (Locks are left out: their
 * lease thread would read the input concurrently.)
 *
 * Built with -DFUZZ_SEED_MAIN it writes seeds: calls answered with real
 * reply messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_daemon.h"
#include "fuzz_tnet.h"
#include "tessera.h"

/* The calls, by the call byte modulo FC_CALLS. */
enum {
	FC_STAT, FC_LAYOUT, FC_READDIR, FC_STATFS, FC_PING, FC_FILE, FC_MKDIR, FC_UNLINK,
	FC_RMDIR, FC_RENAME, FC_SETATTR, FC_TRUNCATE, FC_DIR_LAYOUT, FC_IOS_STATS, FC_LIST,
	FC_COUNTER, FC_REAUTH, FC_CALLS
};

#ifndef FUZZ_SEED_MAIN

static tessera_fs *fs;

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz_client_reply: %s:%d: %s (%s)\n",      \
				__FILE__, __LINE__, #cond, tessera_errmsg(fs));     \
			abort();                                                    \
		}                                                                   \
	} while (0)

/* A call's result: 0 (or a count up to max), or an error with words. */
static void result(long rc, long max)
{
	CHECK(rc <= max);
	if (rc < 0)
		CHECK(tessera_errmsg(fs)[0] != 0);
}

static void connect_once(void)
{
	char dir[4096], path[4200], err[256];
	FILE *f;

	if (fz_tmpdir("fuzz-client", dir, sizeof(dir)))
		abort();
	snprintf(path, sizeof(path), "%s/tessera.conf", dir);
	f = fopen(path, "w");
	if (!f)
		abort();
	fprintf(f, "mds = 127.0.0.1:1\nios = 127.0.0.1:2\nios = 127.0.0.1:3\n"
		"ios = 127.0.0.1:4\nios = 127.0.0.1:5\ntimeout_ms = 5000\n"
		"list_io_max_regions = 4\n");
	fclose(f);
	if (tessera_connect(path, &fs, err, sizeof(err))) {
		fprintf(stderr, "fuzz_client_reply: connect: %s\n", err);
		abort();
	}
	unlink(path);
	rmdir(dir);
}

static void counter_call(void)
{
	tessera_file *f;
	int64_t old;

	if (!tessera_open(fs, "/f", O_RDONLY, 0, NULL, &f)) {
		result(tessera_fetch_set(f, 2, 7, &old), 0);
		tessera_close(f);
	}
}

/* A fresh connection (no sessions) whose AUTH answers come from the
 * input, which goes on where it was. */
static void reauth(void)
{
	const uint8_t *rest;
	size_t n;

	fuzz_tnet_rest(&rest, &n);
	tessera_disconnect(fs);
	fs = NULL;
	connect_once();
	fuzz_tnet_input(rest, n);
	fuzz_tnet_auth_from_input(1);
}

/* Open "/f" and do file calls on it. */
static void file_calls(int list)
{
	static uint8_t buf[1 << 16];
	tessera_file *f;
	struct tessera_stat st;
	struct tessera_layout layout;
	int rc = tessera_open(fs, "/f", O_RDWR | (fuzz_tnet_u8() & 1 ? O_CREAT : 0), 0644, NULL, &f);
	size_t len = fuzz_tnet_u8() * 64;
	uint64_t off = (uint64_t)fuzz_tnet_u8() * 1000;
	int64_t old;

	result(rc, 0);
	if (rc)
		return;
	CHECK(tessera_file_layout(f, &layout) == 0 && layout.count >= 1 &&
	      layout.count <= TESSERA_MAX_STRIPE && layout.strip_size > 0);
	if (list) {
		uint64_t offs[6] = { 0, 100, 5000, 70000, 200000, 300000 };
		uint64_t lens[6] = { 10, 300, 1000, 20, 4000, 2 };
		struct iovec mem = { buf, 10 + 300 + 1000 + 20 + 4000 + 2 };

		result(tessera_read_list(f, &mem, 1, offs, lens, 6), (long)mem.iov_len);
		result(tessera_write_list(f, &mem, 1, offs, lens, 6), (long)mem.iov_len);
	} else if (fuzz_tnet_u8() & 1) {
		result(tessera_pread(f, buf, len, off), (long)len);
		result(tessera_fstat(f, &st), 0);
	} else {
		result(tessera_pwrite(f, buf, len, off), (long)len);
		result(tessera_ftruncate(f, off), 0);
		result(tessera_fsync(f), 0);
	}
	if (fuzz_tnet_u8() & 1)
		result(tessera_fetch_add(f, 1, 5, &old), 0);
	result(tessera_close(f), 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tessera_stat st;
	struct tessera_layout layout;
	struct tessera_dirent ents[8];
	struct tessera_statfs sf;
	struct tessera_ping ping[5];
	struct tessera_setattr sa = { TESSERA_SET_MODE | TESSERA_SET_MTIME, 0600, 0, 0,
				      { 0, 0 }, { 5, 5 } };
	struct tessera_ios_stats ist;
	uint32_t n;
	int eof;

	if (!fs)
		connect_once();
	fuzz_tnet_input(data, size);
	fuzz_tnet_auth_from_input(0);
	while (fuzz_tnet_left()) {
		switch (fuzz_tnet_u8() % FC_CALLS) {
		case FC_STAT: result(tessera_stat(fs, "/f", &st), 0); break;
		case FC_LAYOUT:
			result(tessera_get_layout(fs, "/d", &layout), 0);
			break;
		case FC_READDIR: {
			int rc = tessera_readdir(fs, "/d", "", ents, 8, &n, &eof);

			result(rc, 0);
			CHECK(rc || n <= 8);
			for (uint32_t i = 0; !rc && i < n; i++)
				CHECK(memchr(ents[i].name, 0, sizeof(ents[i].name)));
			break;
		}
		case FC_STATFS: result(tessera_statfs(fs, &sf), 0); break;
		case FC_PING: {
			int k = tessera_ping(fs, ping, 5);

			CHECK(k <= 5);
			for (int i = 0; i < k; i++)
				CHECK(memchr(ping[i].role, 0, sizeof(ping[i].role)) &&
				      memchr(ping[i].version, 0, sizeof(ping[i].version)));
			break;
		}
		case FC_FILE: file_calls(0); break;
		case FC_MKDIR: result(tessera_mkdir(fs, "/d", 0755), 0); break;
		case FC_UNLINK: result(tessera_unlink(fs, "/f"), 0); break;
		case FC_RMDIR: result(tessera_rmdir(fs, "/d"), 0); break;
		case FC_RENAME: result(tessera_rename(fs, "/f", "/d/g"), 0); break;
		case FC_SETATTR: result(tessera_setattr(fs, "/f", &sa), 0); break;
		case FC_TRUNCATE: result(tessera_truncate(fs, "/f", 12345), 0); break;
		case FC_DIR_LAYOUT: result(tessera_set_dir_layout(fs, "/d", 4096, 2), 0); break;
		case FC_IOS_STATS: result(tessera_ios_stats(fs, 1, &ist), 0); break;
		case FC_LIST: file_calls(1); break;
		case FC_COUNTER: counter_call(); break;
		case FC_REAUTH: reauth(); break;
		}
	}
	return 0;
}

#else /* FUZZ_SEED_MAIN */

static struct fz_seed seed;

static void byte(unsigned b)
{
	uint8_t v = (uint8_t)b;

	fz_seed_bytes(&seed, &v, 1);
}

/* A reply record: ctl 0 with the message and dlen bytes of data. */
static void reply(const ProtobufCMessage *m, size_t dlen)
{
	byte(0);
	fz_seed_msg(&seed, m);
	fz_seed_data(&seed, dlen);
}

/* A fresh connection: the metadata daemon's AUTH answered with a wrong
 * seal (stat fails), an unsealed error (fails again), then right, and the
 * stat as in the "stat" seed. */
static int seed_auth(const ProtobufCMessage *attr, Tessera__SizesReply *sr, uint64_t *sizes,
		     const char *dir)
{
	byte(FC_REAUTH);
	byte(FC_STAT);
	byte(1);
	byte(FC_STAT);
	byte(2);
	byte(12); /* -EACCES */
	byte(FC_STAT);
	byte(0);
	reply(attr, 0);
	byte(0); /* storage daemon 1's AUTH */
	byte(0); /* storage daemon 3's AUTH */
	sr->sizes = sizes;
	reply(&sr->base, 0);
	sr->sizes = sizes + 1;
	reply(&sr->base, 0);
	return fz_seed_save(&seed, dir, "auth-forged");
}

int main(int argc, char **argv)
{
	uint32_t servers[2] = { 1, 3 };
	uint64_t handles[2] = { 0x101, 0x102 }, sizes[2] = { 70000, 3 };
	int64_t mtimes[2] = { 5, 9 };
	Tessera__Layout lay = TESSERA__LAYOUT__INIT;
	Tessera__Attr attr = TESSERA__ATTR__INIT;
	Tessera__AttrReply ar = TESSERA__ATTR_REPLY__INIT;
	Tessera__SizesReply sr = TESSERA__SIZES_REPLY__INIT;
	Tessera__ReaddirReply rd = TESSERA__READDIR_REPLY__INIT;
	Tessera__Dirent de[2] = { TESSERA__DIRENT__INIT, TESSERA__DIRENT__INIT };
	Tessera__Dirent *dep[2] = { &de[0], &de[1] };
	Tessera__StatfsReply sf = TESSERA__STATFS_REPLY__INIT;
	Tessera__PingReply pr = TESSERA__PING_REPLY__INIT;
	Tessera__ReadReply rr = TESSERA__READ_REPLY__INIT;
	Tessera__WriteReply wr = TESSERA__WRITE_REPLY__INIT;
	Tessera__EmptyReply empty = TESSERA__EMPTY_REPLY__INIT;
	Tessera__RemoveReply rm = TESSERA__REMOVE_REPLY__INIT;
	Tessera__FetchAddReply fa = TESSERA__FETCH_ADD_REPLY__INIT;
	Tessera__ErrorReply er = TESSERA__ERROR_REPLY__INIT;
	const char *dir;
	int rc = 0;

	if (argc != 2)
		return 2;
	dir = argv[1];
	lay.strip_size = 65536;
	lay.n_servers = lay.n_handles = 2;
	lay.servers = servers;
	lay.handles = handles;
	attr.handle = 0x100;
	attr.type = 1;
	attr.mode = 0644;
	attr.nlink = 1;
	attr.layout = &lay;
	ar.attr = &attr;
	sr.n_sizes = sr.n_mtimes_ns = 1;
	sr.sizes = sizes;
	sr.mtimes_ns = mtimes;

	/* stat: lookup, then each object's size. */
	byte(FC_STAT);
	reply(&ar.base, 0);
	reply(&sr.base, 0);
	sr.sizes = sizes + 1;
	reply(&sr.base, 0);
	rc |= fz_seed_save(&seed, dir, "stat");

	/* readdir, statfs (mds + 4 ios), ping. */
	de[0].name = "a";
	de[0].handle = 1;
	de[0].type = 1;
	de[1].name = "sub";
	de[1].handle = 2;
	de[1].type = 2;
	rd.n_entries = 2;
	rd.entries = dep;
	rd.eof = 1;
	byte(FC_READDIR);
	reply(&rd.base, 0);
	byte(FC_STATFS);
	sf.files = 3;
	for (int i = 0; i < 5; i++)
		reply(&sf.base, 0);
	byte(FC_PING);
	pr.role = "mds";
	pr.version = TP_VERSION_STRING;
	for (int i = 0; i < 5; i++)
		reply(&pr.base, 0);
	rc |= fz_seed_save(&seed, dir, "namespace");

	/* open and read: open's lookup, the read's two objects. */
	byte(FC_FILE);
	byte(0);  /* no O_CREAT */
	byte(40); /* 2560 bytes */
	byte(70); /* at 70000 */
	byte(1);  /* read */
	reply(&ar.base, 0);
	rr.object_size = 4000;
	reply(&rr.base, 2560);
	reply(&sr.base, 0);
	reply(&sr.base, 0);
	byte(0); /* no counter */
	rc |= fz_seed_save(&seed, dir, "read");

	/* write, truncate, fsync, a counter; then unlink and an error. */
	byte(FC_FILE);
	byte(1);
	byte(2);
	byte(0);
	byte(0); /* write */
	ar.created = 1;
	reply(&ar.base, 0);
	wr.written = 128;
	reply(&wr.base, 0);
	reply(&empty.base, 0);
	reply(&empty.base, 0);
	reply(&empty.base, 0);
	reply(&empty.base, 0);
	byte(1);
	fa.old = 41;
	reply(&fa.base, 0);
	byte(FC_UNLINK);
	rm.removed_file = 1;
	rm.layout = &lay;
	reply(&rm.base, 0);
	reply(&empty.base, 0);
	reply(&empty.base, 0);
	byte(FC_MKDIR);
	byte(5); /* an error reply */
	er.code = -17;
	er.message = "mkdir /d: file exists";
	fz_seed_msg(&seed, &er.base);
	fz_seed_data(&seed, 0);
	byte(16); /* -17 */
	rc |= fz_seed_save(&seed, dir, "write-unlink-error");

	rc |= seed_auth(&ar.base, &sr, sizes, dir);
	return rc ? 1 : 0;
}

#endif
