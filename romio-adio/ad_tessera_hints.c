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
 *                       posix | list | datatype (the default)
 *   tessera_lock_protocol  how it takes them: two-phase | one-try | alt-try
 *                       (the default)
 *   tessera_versioned   true | false (the default): a file this open creates
 *                       is versioned (docs/user-guide.md, "Versioned files"),
 *                       and atomic mode on it takes no locks
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

/* Refuse a hint: an error code now, and remembered for the open. */
#define REFUSE(err, ...)                                                        \
	do {                                                                    \
		snprintf(s->hint_msg, sizeof(s->hint_msg), __VA_ARGS__);        \
		s->hint_error = (err);                                          \
		goto refused;                                                   \
	} while (0)

void ADIOI_TESSERA_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code)
{
	static char myname[] = "ADIOI_TESSERA_SETINFO";
	struct adt_file *s = adt_state(fd);
	char value[MPI_MAX_INFO_VAL + 1];
	int read_method, write_method, lock_method, lock_protocol;
	uint64_t unit, factor, batch, v;
	int versioned;

	if (!s) {
		*error_code = ADT_ERROR(-ENOMEM, "hints for %s: out of memory", fd->filename);
		return;
	}
	read_method = s->read_method;
	write_method = s->write_method;
	lock_method = s->lock_method;
	lock_protocol = s->lock_protocol;
	unit = s->strip_size;
	factor = s->stripe_count;
	batch = s->list_batch;
	versioned = s->versioned;

	s->hint_error = 0;
	/* Check every hint of ours before applying any. */
	if (choose(users_info, fd, s, "tessera_io_read", adt_method_names, ADT_METHODS,
		   &read_method) ||
	    choose(users_info, fd, s, "tessera_io_write", adt_method_names, ADT_METHODS,
		   &write_method) ||
	    choose(users_info, fd, s, "tessera_lock_method", adt_lock_method_names,
		   ADT_LOCK_METHODS, &lock_method) ||
	    choose(users_info, fd, s, "tessera_lock_protocol", adt_lock_protocol_names,
		   ADT_LOCK_PROTOCOLS, &lock_protocol) ||
	    choose_versioned(users_info, fd, s, &versioned))
		goto refused;
	if (get(users_info, "tessera_list_batch", value, sizeof(value)) &&
	    parse_u64(value, 0, UINT32_MAX, &batch)) {
		REFUSE(-EINVAL, "%s: hint tessera_list_batch=%s: expected a number "
					"of regions, 0 to %u", fd->filename, value, UINT32_MAX);
	}
	if (get(users_info, "striping_unit", value, sizeof(value))) {
		if (parse_u64(value, 0, 1ull << 30, &v)) {
			REFUSE(-EINVAL, "%s: hint striping_unit=%s: expected bytes "
						"per strip, 1 to %llu (0: the default)", fd->filename,
						value, 1ull << 30);
		}
		if (!s->file) /* applies at create; an open file keeps its own */
			unit = v;
	}
	if (get(users_info, "striping_factor", value, sizeof(value))) {
		if (parse_u64(value, 0, TESSERA_MAX_STRIPE, &v)) {
			REFUSE(-EINVAL, "%s: hint striping_factor=%s: expected a "
						"number of storage objects, 1 to %d (0: the default)",
						fd->filename, value, TESSERA_MAX_STRIPE);
		}
		if (!s->file)
			factor = v;
	}

	/* ROMIO's hints (and fd->info itself, on the first call). */
	ADIOI_GEN_SetInfo(fd, users_info, error_code);
	if (*error_code != MPI_SUCCESS)
		return;

	if (s->file && batch != s->list_batch) {
		int rc = tessera_file_set_list_batch(s->file, (uint32_t)batch);

		if (rc) {
			*error_code = ADT_ERROR(rc, "%s: hint tessera_list_batch=%llu: %s",
						fd->filename, (unsigned long long)batch,
						tessera_errmsg(tessera_file_fs(s->file)));
			return;
		}
	}
	s->read_method = read_method;
	s->write_method = write_method;
	s->lock_method = lock_method;
	s->lock_protocol = lock_protocol;
	s->list_batch = (uint32_t)batch;
	s->strip_size = unit;
	s->stripe_count = (uint32_t)factor;
	s->versioned = versioned;
	fd->hints->striping_unit = (int)unit;
	fd->hints->striping_factor = (int)factor;

	ADIOI_Info_set(fd->info, "tessera_io_read", (char *)adt_method_names[read_method]);
	ADIOI_Info_set(fd->info, "tessera_io_write", (char *)adt_method_names[write_method]);
	ADIOI_Info_set(fd->info, "tessera_lock_method", (char *)adt_lock_method_names[lock_method]);
	ADIOI_Info_set(fd->info, "tessera_lock_protocol",
		       (char *)adt_lock_protocol_names[lock_protocol]);
	snprintf(value, sizeof(value), "%llu", (unsigned long long)batch);
	ADIOI_Info_set(fd->info, "tessera_list_batch", value);
	ADIOI_Info_set(fd->info, "tessera_versioned", versioned ? "true" : "false");
	if (unit) {
		snprintf(value, sizeof(value), "%llu", (unsigned long long)unit);
		ADIOI_Info_set(fd->info, "striping_unit", value);
	}
	if (factor) {
		snprintf(value, sizeof(value), "%llu", (unsigned long long)factor);
		ADIOI_Info_set(fd->info, "striping_factor", value);
	}
	*error_code = MPI_SUCCESS;
	return;

refused:
	/* ROMIO's own state must still be set up (fd->info, buffers), even
	 * though the open will fail on this hint (ADIOI_TESSERA_OpenColl). */
	if (!fd->hints->initialized)
		ADIOI_GEN_SetInfo(fd, users_info, error_code);
	*error_code = ADT_ERROR(s->hint_error, "%s", s->hint_msg);
}
