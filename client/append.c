/*
 * append.c - atomic appends (tessera_append): every appender, on any
 * client, takes an exclusive record lock on the file's reserved append
 * byte (TESSERA_RECORD_APPEND, past every file offset), asks the storage
 * daemons for the size, writes at it, and lets go. So an append lands
 * whole at the end of the file as it is when the append is applied, and
 * two appends never interleave nor overwrite each other, whatever their
 * size. The lock serializes appenders only: a plain write (tessera_pwrite)
 * takes no lock.
 *
 * The lock is taken without waiting and asked for again after a pause
 * that grows from 100 us to 20 ms (record locks are never parked at the
 * daemons): cheap without contention, and an appender killed while
 * holding it blocks the others for the daemons' lease at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <time.h>

#include <sodium.h>

#include "client_int.h"

#define APPEND_PAUSE_MIN_NS 100000L     /* 100 us */
#define APPEND_PAUSE_MAX_NS 20000000L   /* 20 ms */

/* The append lock: exclusive, its own owner (a random one per append, so
 * that appends of one process, in several threads, exclude each other
 * too: one owner's record locks never conflict with each other). */
static int append_lock(tessera_file *f, tessera_lock **lk)
{
	long pause = APPEND_PAUSE_MIN_NS;
	uint64_t owner = 0;
	int rc;

	while (!owner)
		randombytes_buf(&owner, sizeof(owner));
	for (;;) {
		struct timespec ts = { 0, pause };

		rc = tessera_lock_record(f, TESSERA_LOCK_WRITE, owner, TESSERA_RECORD_APPEND,
					 TESSERA_RECORD_APPEND + 1, lk);
		if (rc != -EAGAIN)
			return rc;
		nanosleep(&ts, NULL);
		if (pause < APPEND_PAUSE_MAX_NS)
			pause *= 2;
	}
}

int tessera_append(tessera_file *f, const void *buf, size_t len, uint64_t *offset)
{
	tessera_lock *lk;
	uint64_t size = 0;
	ssize_t n;
	int rc, urc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return tc_fail(f->fs, -EBADF, "append %s: not open for writing", f->path);
	if ((rc = tc_file_writing(f)))
		return rc;
	if ((rc = append_lock(f, &lk)))
		return rc;
	TC_CAP_RETRY(f, rc, tc_file_size(f->fs, &f->layout, tc_cap_get(f), f->path, &size, NULL, NULL));
	if (!rc && len) {
		n = tessera_pwrite(f, buf, len, size);
		if (n < 0)
			rc = (int)n;
		else if ((size_t)n != len) /* pwrite writes whole or fails */
			rc = tc_fail(f->fs, -EIO, "append %s: %zd of %zu bytes written at %" PRIu64,
				     f->path, n, len, size);
	}
	urc = tessera_unlock(lk);
	if (!rc && urc)
		rc = urc;
	if (!rc && offset)
		*offset = size;
	return rc;
}
