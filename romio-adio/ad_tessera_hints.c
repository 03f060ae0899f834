/*
 * ad_tessera_hints.c - the hints this driver understands:
 *
 *   striping_unit       bytes per strip of a file this open creates (0: default)
 *   striping_factor     storage objects (daemons) of a file this open creates
 *                       (0: the directory's default, else all daemons)
 *   tessera_io_read     how strided reads go: posix | sieve | list | datatype
 *   tessera_io_write    the same for strided writes
 *   tessera_list_batch  file regions per list-I/O request (0: the config's)
 *   tessera_lock_method how atomic mode describes the bytes it locks:
 *                       posix (a lock request per region, seed 001 §7.2.1)
 *                       | list | datatype (the default) | list-split (a
 *                       request per list-lock message: lock_list_batch = 64
 *                       in the config is §7.2.2) | posix-seq (one-region
 *                       locks one after another) | block (4 KiB blocks, the
 *                       false-sharing baseline of §7.1)
 *   tessera_lock_protocol  how it takes them: two-phase | one-try | alt-try
 *                       (the default)
 *   tessera_versioned   true | false (the default): a file this open creates
 *                       is versioned (docs/user-guide.md, "Versioned files"),
 *                       and atomic mode on it takes no locks
 *   tessera_mem_pack    true (the default) | false: list I/O of a
 *                       noncontiguous memory type packs the memory into one
 *                       buffer (MPI_Pack), or with false sends it as an iovec
 *                       list (from the flattened type, at most 65,536
 *                       entries a call), as the dissertation's list I/O does
 *                       (seed 001, §4.2); other methods are unchanged
 *   tessera_sync        every (the default) | one: MPI_File_sync syncs on
 *                       every rank, or (seed 001, §5.3) rank 0 syncs the
 *                       file for all after a barrier (a versioned file: every)
 *
 * Counters (this rank's, since the open): tessera_coll_bytes_sent /
 * _received, the bytes of collective writes / reads that ROMIO's two-phase
 * exchange moves between this rank and other aggregators
 * (ad_tessera_strided.c), and tessera_mem_list_calls; in the close's trace
 * line ($TESSERA_ROMIO_TRACE) and, under MPICH, MPI_File_get_info (see
 * adt_publish_counters).
 *
 * A value the driver cannot use is refused with a message naming the hint
 * and the file. MPI_File_get_info then reports what is in force: the
 * methods, the batch, the lock method and protocol, and the striping of
 * the open file (not the request).
 * ROMIO's own hints (cb_*, romio_*, ind_*_buffer_size) go to ROMIO.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad_tessera.h"
#include "adioi.h"

/* Parse a whole decimal number in [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The index of s in names[0..n), or -1. */
static int parse_name(const char *s, const char *const *names, int n)
{
	for (int m = 0; m < n; m++)
		if (!strcmp(s, names[m]))
			return m;
	return -1;
}

/* The value of `key` in info, into buf; 0 if absent. */
static int get(MPI_Info info, const char *key, char *buf, int len)
{
	int flag = 0;

	if (info == MPI_INFO_NULL)
		return 0;
	MPI_Info_get(info, (char *)key, len - 1, buf, &flag);
	return flag;
}

/* The hint `key`, one of names[0..n): its index into *out (left alone
 * when the hint is absent); -1, the refusal written into s, when the value
 * is none of them. */
static int choose(MPI_Info info, ADIO_File fd, struct adt_file *s, const char *key,
		  const char *const *names, int n, int *out)
{
	char value[MPI_MAX_INFO_VAL + 1], expected[128] = "";
	size_t at = 0;
	int m;

	if (!get(info, key, value, sizeof(value)))
		return 0;
	m = parse_name(value, names, n);
	if (m >= 0) {
		*out = m;
		return 0;
	}
	for (int i = 0; i < n && at < sizeof(expected); i++)
		at += (size_t)snprintf(expected + at, sizeof(expected) - at, "%s%s",
				       i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
	snprintf(s->hint_msg, sizeof(s->hint_msg), "%s: hint %s=%s: expected %s", fd->filename,
		 key, value, expected);
	s->hint_error = -EINVAL;
	return -1;
}

/* tessera_versioned: true or false (enable or disable, as ROMIO spells its
 * own switches). It applies at create; an open file keeps what it is. */
static int choose_versioned(MPI_Info info, ADIO_File fd, struct adt_file *s, int *out)
{
	static const char *const names[] = { "false", "true", "disable", "enable" };
	int m = -1; /* absent */

	if (choose(info, fd, s, "tessera_versioned", names, 4, &m))
		return -1;
	if (m >= 0 && !s->file)
		*out = m % 2;
	return 0;
}

/* The values of this driver's hints being applied: the file's own until
 * a hint changes one; applied together once every hint passed. */
struct hint_values {
	int read_method, write_method, lock_method, lock_protocol; /* enum indices */
	int versioned, mem_pack, sync_mode;
	uint64_t unit, factor, batch;
};

/* The named hints (one of a list of words); -1 after a refusal. */
static int choose_names(MPI_Info info, ADIO_File fd, struct adt_file *s, struct hint_values *h)
{
	static const char *const bools[] = { "false", "true" };

	if (choose(info, fd, s, "tessera_io_read", adt_method_names, ADT_METHODS,
		   &h->read_method) ||
	    choose(info, fd, s, "tessera_io_write", adt_method_names, ADT_METHODS,
		   &h->write_method) ||
	    choose(info, fd, s, "tessera_lock_method", adt_lock_method_names, ADT_LOCK_METHODS,
		   &h->lock_method) ||
	    choose(info, fd, s, "tessera_lock_protocol", adt_lock_protocol_names,
		   ADT_LOCK_PROTOCOLS, &h->lock_protocol) ||
	    choose(info, fd, s, "tessera_mem_pack", bools, 2, &h->mem_pack) ||
	    choose(info, fd, s, "tessera_sync", adt_sync_names, ADT_SYNC_MODES, &h->sync_mode) ||
	    choose_versioned(info, fd, s, &h->versioned))
		return -1;
	return 0;
}

/* A numeric hint `key` in [min, max] into *out (left alone when absent);
 * -1, the refusal written into s (saying `expected`), when it is not. */
static int number(MPI_Info info, ADIO_File fd, struct adt_file *s, const char *key,
		  uint64_t min, uint64_t max, const char *expected, uint64_t *out)
{
	char value[MPI_MAX_INFO_VAL + 1];

	if (!get(info, key, value, sizeof(value)))
		return 0;
	if (!parse_u64(value, min, max, out))
		return 0;
	snprintf(s->hint_msg, sizeof(s->hint_msg), "%s: hint %s=%s: expected %s", fd->filename,
		 key, value, expected);
	s->hint_error = -EINVAL;
	return -1;
}

/* The numeric hints; striping applies at create (an open file keeps its
 * own). -1 after a refusal. */
static int choose_numbers(MPI_Info info, ADIO_File fd, struct adt_file *s, struct hint_values *h)
{
	char expected[128];
	uint64_t unit = h->unit, factor = h->factor;

	snprintf(expected, sizeof(expected), "a number of regions, 0 to %u", UINT32_MAX);
	if (number(info, fd, s, "tessera_list_batch", 0, UINT32_MAX, expected, &h->batch))
		return -1;
	snprintf(expected, sizeof(expected), "bytes per strip, 1 to %llu (0: the default)",
		 1ull << 30);
	if (number(info, fd, s, "striping_unit", 0, 1ull << 30, expected, &unit))
		return -1;
	snprintf(expected, sizeof(expected),
		 "a number of storage objects, 1 to %d (0: the default)", TESSERA_MAX_STRIPE);
	if (number(info, fd, s, "striping_factor", 0, TESSERA_MAX_STRIPE, expected, &factor))
		return -1;
	if (!s->file) {
		h->unit = unit;
		h->factor = factor;
	}
	return 0;
}

/* What is in force, for MPI_File_get_info. */
static void publish(ADIO_File fd, const struct hint_values *h)
{
	char value[32];

	ADIOI_Info_set(fd->info, "tessera_io_read", (char *)adt_method_names[h->read_method]);
	ADIOI_Info_set(fd->info, "tessera_io_write", (char *)adt_method_names[h->write_method]);
	ADIOI_Info_set(fd->info, "tessera_lock_method",
		       (char *)adt_lock_method_names[h->lock_method]);
	ADIOI_Info_set(fd->info, "tessera_lock_protocol",
		       (char *)adt_lock_protocol_names[h->lock_protocol]);
	snprintf(value, sizeof(value), "%llu", (unsigned long long)h->batch);
	ADIOI_Info_set(fd->info, "tessera_list_batch", value);
	ADIOI_Info_set(fd->info, "tessera_versioned", h->versioned ? "true" : "false");
	ADIOI_Info_set(fd->info, "tessera_mem_pack", h->mem_pack ? "true" : "false");
	ADIOI_Info_set(fd->info, "tessera_sync", (char *)adt_sync_names[h->sync_mode]);
	if (h->unit) {
		snprintf(value, sizeof(value), "%llu", (unsigned long long)h->unit);
		ADIOI_Info_set(fd->info, "striping_unit", value);
	}
	if (h->factor) {
		snprintf(value, sizeof(value), "%llu", (unsigned long long)h->factor);
		ADIOI_Info_set(fd->info, "striping_factor", value);
	}
	adt_publish_counters(fd);
}

static void apply(ADIO_File fd, struct adt_file *s, const struct hint_values *h)
{
	s->read_method = h->read_method;
	s->write_method = h->write_method;
	s->lock_method = h->lock_method;
	s->lock_protocol = h->lock_protocol;
	s->list_batch = (uint32_t)h->batch;
	s->strip_size = h->unit;
	s->stripe_count = (uint32_t)h->factor;
	s->versioned = h->versioned;
	s->mem_pack = h->mem_pack;
	s->sync_mode = h->sync_mode;
	fd->hints->striping_unit = (int)h->unit;
	fd->hints->striping_factor = (int)h->factor;
}

void ADIOI_TESSERA_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_SETINFO";
	struct adt_file *s = adt_state(fd);
	struct hint_values h;

	if (!s) {
		*error_code = ADT_ERROR(-ENOMEM, "hints for %s: out of memory", fd->filename);
		return;
	}
	h = (struct hint_values){ s->read_method, s->write_method, s->lock_method,
				  s->lock_protocol, s->versioned, s->mem_pack, s->sync_mode,
				  s->strip_size, s->stripe_count, s->list_batch };
	s->hint_error = 0;
	/* Check every hint of ours before applying any. */
	if (choose_names(users_info, fd, s, &h) || choose_numbers(users_info, fd, s, &h)) {
		/* ROMIO's own state must still be set up (fd->info, buffers),
		 * even though the open will fail on this hint
		 * (ADIOI_TESSERA_OpenColl). */
		if (!fd->hints->initialized)
			ADIOI_GEN_SetInfo(fd, users_info, error_code);
		*error_code = ADT_ERROR(s->hint_error, "%s", s->hint_msg);
		return;
	}

	/* ROMIO's hints (and fd->info itself, on the first call). */
	ADIOI_GEN_SetInfo(fd, users_info, error_code);
	if (*error_code != MPI_SUCCESS)
		return;

	if (s->file && h.batch != s->list_batch) {
		int rc = tessera_file_set_list_batch(s->file, (uint32_t)h.batch);

		if (rc) {
			*error_code = ADT_ERROR(rc, "%s: hint tessera_list_batch=%llu: %s",
						fd->filename, (unsigned long long)h.batch,
						tessera_errmsg(tessera_file_fs(s->file)));
			return;
		}
	}
	apply(fd, s, &h);
	publish(fd, &h);
	*error_code = MPI_SUCCESS;
}

/* The counters MPI_File_get_info reports (tessera_coll_bytes_sent,
 * tessera_coll_bytes_received, tessera_mem_list_calls: since the open,
 * this rank's), refreshed after every collective call and every call that
 * sent a memory list. Only where MPI_File_get_info asks ROMIO (MPICH):
 * Open MPI answers it from its own copy of the hints, made at open and
 * set_view (patches/07-*), where the counters would be stale; there the
 * close's trace line ($TESSERA_ROMIO_TRACE) has them. */
void adt_publish_counters(ADIO_File fd)
{
#ifdef ROMIO_INSIDE_MPICH
	struct adt_file *s = fd->fs_ptr;
	char value[32];

	if (!s || fd->info == MPI_INFO_NULL)
		return;
	snprintf(value, sizeof(value), "%llu", (unsigned long long)s->n.coll_bytes_sent);
	ADIOI_Info_set(fd->info, "tessera_coll_bytes_sent", value);
	snprintf(value, sizeof(value), "%llu", (unsigned long long)s->n.coll_bytes_received);
	ADIOI_Info_set(fd->info, "tessera_coll_bytes_received", value);
	snprintf(value, sizeof(value), "%llu", (unsigned long long)s->n.mem_list_calls);
	ADIOI_Info_set(fd->info, "tessera_mem_list_calls", value);
#else
	(void)fd;
#endif
}
