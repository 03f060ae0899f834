/*
 * ad_tessera_sharedfp.c - MPI shared file pointers, kept as a counter of
 * the file on the storage daemon of its first object (tessera_fetch_add):
 * one atomic fetch-and-add per MPI_File_write_shared, with no lock and no
 * side file. ROMIO's own implementation (a hidden file read and rewritten
 * under an fcntl lock) is not reached: a patch routes ADIO_Get_shared_fp
 * and ADIO_Set_shared_fp here for Tessera files (patches/09-*).
 *
 * The pointer's key is a random number rank 0 draws at open (broadcast
 * with the open's outcome), mixed with the number of views set since:
 * every open and every MPI_File_set_view starts a counter that reads 0,
 * on every rank, without a message, and two jobs with the file open at
 * once keep separate pointers. The file keeps the 64 counters used last,
 * and removes them with itself.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ad_tessera.h"
#include "adioi.h"

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t adt_shared_fp_new_base(void)
{
	uint64_t base = 0;
	struct timespec ts;

	if (getrandom(&base, sizeof(base), GRND_NONBLOCK) == (ssize_t)sizeof(base))
		return base;
	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid());
}

uint64_t adt_shared_fp_key(const struct adt_file *s)
{
	return mix64(s->shared_fp_base + s->shared_fp_views);
}

static void counter_op(ADIO_File fd, int set, ADIO_Offset value, ADIO_Offset *old,
		       int *error_code, const char *myname)
{
	struct adt_file *s = fd->fs_ptr;
	int64_t before = 0;
	int rc;

	if (!s || !s->file) {
		*error_code = adt_error(myname, __LINE__, -EBADF,
					"shared file pointer of %s: file is not open", fd->filename);
		return;
	}
	rc = set ? tessera_fetch_set(s->file, adt_shared_fp_key(s), value, &before)
		 : tessera_fetch_add(s->file, adt_shared_fp_key(s), value, &before);
	s->n.shared_fp_ops++;
	if (rc) {
		*error_code = adt_error(myname, __LINE__, rc, "shared file pointer of %s: %s",
					fd->filename, tessera_errmsg(tessera_file_fs(s->file)));
		return;
	}
	if (old)
		*old = before;
	*error_code = MPI_SUCCESS;
}

/* The pointer (in etypes of the view), then advanced by incr. */
void ADIOI_TESSERA_Get_shared_fp(ADIO_File fd, ADIO_Offset incr, ADIO_Offset *shared_fp,
				 int *error_code)
{
	counter_op(fd, 0, incr, shared_fp, error_code, "ADIOI_TESSERA_GET_SHARED_FP");
}

void ADIOI_TESSERA_Set_shared_fp(ADIO_File fd, ADIO_Offset offset, int *error_code)
{
	counter_op(fd, 1, offset, NULL, error_code, "ADIOI_TESSERA_SET_SHARED_FP");
}

/* MPI_File_set_view (collective): the pointer of the new view is 0. */
void ADIOI_TESSERA_Reset_shared_fp(ADIO_File fd)
{
	struct adt_file *s = fd->fs_ptr;

	if (s)
		s->shared_fp_views++;
}
