/*
 * bench_basic.c - contiguous bandwidth and metadata rates of Tessera, each
 * beside a baseline measured in the same run on the storage daemons' own
 * local file system (plain pwrite/pread; plain create/stat/unlink). The
 * copy out is measured twice: with local reads (the default: the daemons
 * run on this host), and through the daemons (TESSERA_LOCAL_READS=0).
 *
 *   tessera-bench-basic -c CONFIG -l LOCALDIR [-s MiB] [-n FILES] [-p CLIENTS]
 *
 * Figures, not tests: nothing here asserts a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera.h"

#define BLOCK (8u << 20) /* bytes per call, as `tessera cp` uses */

struct opts {
	const char *config, *local;
	uint64_t bytes;
	int files, clients;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One client's share: write then read `bytes` of file `idx`, then read
 * it again. The write's time includes the fsync that makes it durable (a
 * synced copy in, as `pvfs2-cp` + flush or `tessera cp` does); the reads
 * land in memory only (a copy out to /dev/null). Tessera's second read
 * goes through the storage daemons (a second connection with local reads
 * off), the baseline's is a second pread. Returns 0 and the three
 * durations in out[]. */
static int run_client(const struct opts *o, int tessera, int idx, uint64_t bytes, double out[3])
{
	char *buf = malloc(BLOCK), path[4096], err[512];
	tessera_fs *fs = NULL, *fs_remote = NULL;
	tessera_file *tf = NULL, *tf_remote = NULL;
	int fd = -1, rc = 0;
	double t0;

	memset(buf, 'a' + idx, BLOCK);
	if (tessera) {
		snprintf(path, sizeof(path), "/bench-%d", idx);
		if ((rc = tessera_connect(o->config, &fs, err, sizeof(err)))) {
			fprintf(stderr, "connect: %s\n", err);
			goto out;
		}
		if ((rc = tessera_open(fs, path, O_CREAT | O_TRUNC | O_RDWR, 0644, NULL, &tf))) {
			fprintf(stderr, "%s\n", tessera_errmsg(fs));
			goto out;
		}
	} else {
		snprintf(path, sizeof(path), "%s/bench-%d", o->local, idx);
		fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
		if (fd < 0) {
			rc = -errno;
			perror(path);
			goto out;
		}
	}
	for (int pass = 0; pass < 3 && !rc; pass++) {
		if (tessera && pass == 2) {
			setenv("TESSERA_LOCAL_READS", "0", 1);
			if ((rc = tessera_connect(o->config, &fs_remote, err, sizeof(err)))) {
				fprintf(stderr, "connect: %s\n", err);
				break;
			}
			if ((rc = tessera_open(fs_remote, path, O_RDONLY, 0, NULL, &tf_remote))) {
				fprintf(stderr, "%s\n", tessera_errmsg(fs_remote));
				break;
			}
		}
		t0 = now_s();
		for (uint64_t off = 0; off < bytes; off += BLOCK) {
			size_t len = bytes - off < BLOCK ? (size_t)(bytes - off) : BLOCK;
			ssize_t n;

			if (tessera)
				n = pass ? tessera_pread(pass == 2 ? tf_remote : tf, buf, len, off)
					 : tessera_pwrite(tf, buf, len, off);
			else
				n = pass ? pread(fd, buf, len, (off_t)off) : pwrite(fd, buf, len, (off_t)off);
			if (n != (ssize_t)len) {
				fprintf(stderr, "%s %s at %llu: %s\n", pass ? "read" : "write", path,
					(unsigned long long)off,
					tessera && n < 0 ? tessera_errmsg(pass == 2 ? fs_remote : fs)
							 : "short transfer");
				rc = -EIO;
				break;
			}
		}
		if (!pass && !rc) {
			rc = tessera ? tessera_fsync(tf) : (fsync(fd) ? -errno : 0);
			if (rc)
				fprintf(stderr, "fsync %s: %s\n", path,
					tessera ? tessera_errmsg(fs) : strerror(-rc));
		}
		out[pass] = now_s() - t0;
	}
out:
	if (tf_remote)
		tessera_close(tf_remote);
	tessera_disconnect(fs_remote);
	if (tf)
		tessera_close(tf);
	if (fs) {
		tessera_unlink(fs, path);
		tessera_disconnect(fs);
	}
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	free(buf);
	return rc;
}

/* `clients` processes at once, each moving bytes/clients; aggregate MB/s. */
static int bandwidth(const struct opts *o, int tessera, int clients, double mbs[3])
{
	uint64_t share = o->bytes / (uint64_t)clients;
	double worst[3] = { 0, 0, 0 };
	int pipes[64][2], rc = 0;
	pid_t pids[64];

	for (int i = 0; i < clients; i++) {
		if (pipe(pipes[i]))
			return -errno;
		pids[i] = fork();
		if (pids[i] == 0) {
			double t[3] = { 0, 0, 0 };
			int r = run_client(o, tessera, i, share, t);

			if (write(pipes[i][1], t, sizeof(t)) != sizeof(t))
				r = -EIO;
			_exit(r ? 1 : 0);
		}
		close(pipes[i][1]);
	}
	for (int i = 0; i < clients; i++) {
		double t[3];
		int status;

		if (read(pipes[i][0], t, sizeof(t)) != sizeof(t))
			rc = -EIO;
		close(pipes[i][0]);
		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			rc = -EIO;
		for (int k = 0; k < 3; k++)
			if (t[k] > worst[k])
				worst[k] = t[k];
	}
	/* Writes happen together, then reads: each phase's aggregate rate is
	 * its bytes over the slowest client's time. */
	for (int k = 0; k < 3; k++)
		mbs[k] = (double)share * clients / worst[k] / 1e6;
	return rc;
}

/* create, stat, unlink of n files; ops/s for each. */
static int metadata(const struct opts *o, int tessera, double rate[3])
{
	char path[4096], err[512];
	tessera_fs *fs = NULL;
	int rc = 0;

	if (tessera && (rc = tessera_connect(o->config, &fs, err, sizeof(err)))) {
		fprintf(stderr, "connect: %s\n", err);
		return rc;
	}
	if (tessera)
		rc = tessera_mkdir(fs, "/mdbench", 0755);
	else {
		snprintf(path, sizeof(path), "%s/mdbench", o->local);
		rc = mkdir(path, 0755) ? -errno : 0;
	}
	for (int phase = 0; phase < 3 && !rc; phase++) {
		double t0 = now_s();

		for (int i = 0; i < o->files && !rc; i++) {
			if (tessera) {
				tessera_file *f;
				struct tessera_stat st;

				snprintf(path, sizeof(path), "/mdbench/f%d", i);
				if (phase == 0 && !(rc = tessera_open(fs, path, O_CREAT | O_EXCL | O_WRONLY,
								      0644, NULL, &f)))
					tessera_close(f);
				else if (phase == 1)
					rc = tessera_stat(fs, path, &st);
				else if (phase == 2)
					rc = tessera_unlink(fs, path);
				if (rc)
					fprintf(stderr, "%s\n", tessera_errmsg(fs));
			} else {
				struct stat st;
				int fd;

				snprintf(path, sizeof(path), "%s/mdbench/f%d", o->local, i);
				if (phase == 0) {
					fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
					rc = fd < 0 ? -errno : close(fd);
				} else if (phase == 1) {
					rc = stat(path, &st) ? -errno : 0;
				} else {
					rc = unlink(path) ? -errno : 0;
				}
				if (rc)
					fprintf(stderr, "%s: %s\n", path, strerror(-rc));
			}
		}
		rate[phase] = o->files / (now_s() - t0);
	}
	if (tessera) {
		tessera_rmdir(fs, "/mdbench");
		tessera_disconnect(fs);
	} else {
		snprintf(path, sizeof(path), "%s/mdbench", o->local);
		rmdir(path);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { NULL, NULL, 1ull << 30, 10000, 4 };
	double t[3], l[3], tm[3], lm[3];
	int opt, rc = 0;

	while ((opt = getopt(argc, argv, "c:l:s:n:p:")) != -1) {
		switch (opt) {
		case 'c': o.config = optarg; break;
		case 'l': o.local = optarg; break;
		case 's': o.bytes = strtoull(optarg, NULL, 10) << 20; break;
		case 'n': o.files = atoi(optarg); break;
		case 'p': o.clients = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!o.config || !o.local || o.clients < 1 || o.clients > 64 || o.files < 1 || !o.bytes)
		goto usage;
	printf("Tessera basic benchmark: %llu MiB, %d files; baseline: %s\n",
	       (unsigned long long)(o.bytes >> 20), o.files, o.local);
	printf("%-34s %12s %12s %8s\n", "", "tessera", "baseline", "ratio");
	for (int clients = 1; clients <= o.clients && !rc; clients *= o.clients) {
		rc = bandwidth(&o, 0, clients, l);
		if (!rc)
			rc = bandwidth(&o, 1, clients, t);
		if (rc)
			break;
		printf("%-25s %d client%s %9.0f MB/s %7.0f MB/s %8.2f\n", "copy in (write+fsync)", clients,
		       clients > 1 ? "s" : " ", t[0], l[0], t[0] / l[0]);
		printf("%-25s %d client%s %9.0f MB/s %7.0f MB/s %8.2f\n", "copy out (read)", clients,
		       clients > 1 ? "s" : " ", t[1], l[1], t[1] / l[1]);
		printf("%-25s %d client%s %9.0f MB/s %7.0f MB/s %8.2f\n", "  through the daemons",
		       clients, clients > 1 ? "s" : " ", t[2], l[2], t[2] / l[2]);
		if (o.clients == 1)
			break;
	}
	if (!rc && !(rc = metadata(&o, 0, lm)) && !(rc = metadata(&o, 1, tm))) {
		const char *names[3] = { "create", "stat", "unlink" };

		for (int i = 0; i < 3; i++)
			printf("%-34s %8.0f op/s %8.0f op/s %8.3f\n", names[i], tm[i], lm[i],
			       tm[i] / lm[i]);
	}
	if (rc)
		fprintf(stderr, "benchmark failed: %s\n", strerror(-rc));
	return rc ? 1 : 0;
usage:
	fprintf(stderr, "usage: %s -c CONFIG -l LOCALDIR [-s MiB] [-n FILES] [-p CLIENTS]\n", argv[0]);
	return 2;
}
