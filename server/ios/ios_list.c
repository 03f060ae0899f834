/*
 * ios_list.c - listing a storage daemon's objects in pages (OBJECT_LIST,
 * for fsck). Objects live in 256 directories named after the handle's low
 * byte (ios_store.h), so the listing order is (low byte, handle): a page
 * reads one directory after another, sorting each, until it is full.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ios_store.h"

/* An object's file name is exactly 16 lowercase hex digits. */
static int object_name(const char *name, uint64_t *handle)
{
	uint64_t h = 0;

	for (int i = 0; i < 16; i++) {
		char c = name[i];

		if (c >= '0' && c <= '9')
			h = h << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			h = h << 4 | (uint64_t)(c - 'a' + 10);
		else
			return 0;
	}
	if (name[16] != '\0')
		return 0;
	*handle = h;
	return 1;
}

static int cmp_listed(const void *a, const void *b)
{
	uint64_t x = ((const struct ios_listed *)a)->handle;
	uint64_t y = ((const struct ios_listed *)b)->handle;

	return x < y ? -1 : x > y;
}

/* All objects of directory `byte` with handle above `after` (all when
 * !resume), sorted, into a malloc'd *out. */
static int list_dir(const char *objects, unsigned byte, int resume, uint64_t after,
		    struct ios_listed **out, size_t *n)
{
	char path[4096];
	struct ios_listed *v = NULL;
	size_t cap = 0;
	struct dirent *e;
	DIR *d;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "%s/%02x", objects, byte);
	if (!(d = opendir(path)))
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		struct stat sb;
		uint64_t h;

		if (!object_name(e->d_name, &h) || (h & 0xff) != byte || (resume && h <= after))
			continue;
		if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue;       /* removed meanwhile */
		if (*n == cap) {
			struct ios_listed *g = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!g) {
				free(v);
				closedir(d);
				*n = 0;
				return -ENOMEM;
			}
			v = g;
		}
		v[*n].handle = h;
		v[*n].size = (uint64_t)sb.st_size;
		v[*n].mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_listed);
	*out = v;
	return 0;
}

int ios_list_objects(struct ios_store *st, int resume, uint64_t after, uint32_t max,
		     struct ios_listed *out, uint32_t *n, int *eof)
{
	unsigned byte = resume ? (unsigned)(after & 0xff) : 0;

	*n = 0;
	*eof = 0;
	for (; byte < 256; byte++) {
		struct ios_listed *v;
		size_t k;
		int rc = list_dir(ios_store_dir(st), byte, resume, after, &v, &k);

		if (rc)
			return rc;
		for (size_t i = 0; i < k; i++) {
			if (*n == max) {
				free(v);
				return 0;
			}
			out[(*n)++] = v[i];
		}
		free(v);
		resume = 0;     /* later directories: every object */
	}
	*eof = 1;
	return 0;
}
