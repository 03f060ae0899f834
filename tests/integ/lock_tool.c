/*
 * lock_tool.c - tessera-lock-tool, the library's side of the mount's lock
 * test (tests/integ/test_fuse_locks.sh):
 *
 *   tessera-lock-tool CONFIG hold PATH read|write OFFSET LENGTH SECONDS
 *       takes a byte-range lock (tessera_lock_range, waiting for it),
 *       prints "locked" and holds it SECONDS, then unlocks;
 *   tessera-lock-tool CONFIG record PATH read|write START END
 *       tries a record lock (tessera_lock_record): prints "granted" (and
 *       releases it) or "busy" (EAGAIN);
 *   tessera-lock-tool CONFIG append PATH COUNT TAG
 *       appends COUNT lines "TAG i" (tessera_append).
 *
 * Exit status 0, or 1 with the library's message on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera.h"

static int fail(tessera_fs *fs, const char *what, int rc)
{
	fprintf(stderr, "tessera-lock-tool: %s: %s (%s)\n", what, tessera_errmsg(fs),
		strerror(-rc));
	return 1;
}

static int mode_arg(const char *s)
{
	return !strcmp(s, "write") ? TESSERA_LOCK_WRITE : TESSERA_LOCK_READ;
}

static int hold(tessera_fs *fs, char **argv)
{
	tessera_file *f;
	tessera_lock *lk;
	int rc = tessera_open(fs, argv[0], O_RDWR, 0, NULL, &f);

	if (rc)
		return fail(fs, "open", rc);
	rc = tessera_lock_range(f, mode_arg(argv[1]), strtoull(argv[2], NULL, 0),
				strtoull(argv[3], NULL, 0), TESSERA_LOCK_ALT_TRY, &lk);
	if (rc)
		return fail(fs, "lock", rc);
	printf("locked\n");
	fflush(stdout);
	sleep((unsigned)atoi(argv[4]));
	tessera_unlock(lk);
	tessera_close(f);
	return 0;
}

static int record(tessera_fs *fs, char **argv)
{
	tessera_file *f;
	tessera_lock *lk;
	int rc = tessera_open(fs, argv[0], O_RDWR, 0, NULL, &f);

	if (rc)
		return fail(fs, "open", rc);
	rc = tessera_lock_record(f, mode_arg(argv[1]), (uint64_t)getpid(),
				 strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), &lk);
	if (rc && rc != -EAGAIN)
		return fail(fs, "record lock", rc);
	printf("%s\n", rc ? "busy" : "granted");
	if (!rc)
		tessera_unlock(lk);
	tessera_close(f);
	return 0;
}

static int append(tessera_fs *fs, char **argv)
{
	long n = atol(argv[1]);
	tessera_file *f;
	char line[128];
	int rc = tessera_open(fs, argv[0], O_WRONLY | O_CREAT, 0644, NULL, &f);

	if (rc)
		return fail(fs, "open", rc);
	for (long i = 0; i < n; i++) {
		int len = snprintf(line, sizeof(line), "%s %ld\n", argv[2], i);

		if ((rc = tessera_append(f, line, (size_t)len, NULL)))
			return fail(fs, "append", rc);
	}
	tessera_close(f);
	return 0;
}

int main(int argc, char **argv)
{
	tessera_fs *fs;
	char err[512];
	int rc;

	if (argc < 4 || (!strcmp(argv[2], "hold") && argc != 8) ||
	    (!strcmp(argv[2], "record") && argc != 7) || (!strcmp(argv[2], "append") && argc != 6)) {
		fprintf(stderr, "usage: %s CONFIG hold PATH read|write OFFSET LENGTH SECONDS\n"
			"       %s CONFIG record PATH read|write START END\n"
			"       %s CONFIG append PATH COUNT TAG\n", argv[0], argv[0], argv[0]);
		return 2;
	}
	if (tessera_connect(argv[1], &fs, err, sizeof(err))) {
		fprintf(stderr, "tessera-lock-tool: %s\n", err);
		return 1;
	}
	if (!strcmp(argv[2], "hold"))
		rc = hold(fs, argv + 3);
	else if (!strcmp(argv[2], "record"))
		rc = record(fs, argv + 3);
	else if (!strcmp(argv[2], "append"))
		rc = append(fs, argv + 3);
	else
		rc = 2;
	tessera_disconnect(fs);
	return rc;
}
