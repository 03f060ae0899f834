/*
 * fuse_dir.c - a directory listing on the mount, a page of names at a time
 * (tessera_readdir), for the kernel's offset-based readdir.
 */
#define FUSE_USE_VERSION 312

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_int.h"
#include "tessera.h"

#define DIR_PAGE 128         /* entries per tessera_readdir call */

/* An open directory: the page of entries last read, for offset-based
 * readdir (the kernel resumes at the offset of the last entry it took). */
struct tdir {
	uint64_t base;        /* index of ents[0] in the whole listing */
	uint32_t n;           /* entries in ents */
	int loaded, eof;      /* eof: no entries follow ents */
	struct tessera_dirent ents[DIR_PAGE];
};

struct tdir *tf_dir_new(void)
{
	return calloc(1, sizeof(struct tdir));
}

void tf_dir_free(struct tdir *d)
{
	free(d);
}

/* Load the page after the current one, or the first page if `restart`. */
static int dir_page(tessera_fs *fs, const char *path, struct tdir *d, int restart)
{
	char cursor[256] = "";
	uint64_t base = 0;
	int rc;

	if (!restart && d->loaded) {
		base = d->base + d->n;
		if (d->n)
			snprintf(cursor, sizeof(cursor), "%s", d->ents[d->n - 1].name);
	}
	rc = tessera_readdir(fs, path, cursor, d->ents, DIR_PAGE, &d->n, &d->eof);
	if (rc) {
		d->loaded = 0;
		return rc;
	}
	d->base = base;
	d->loaded = 1;
	return 0;
}

/*
 * Offsets: "." is 1, ".." is 2, entry i of the listing is i + 3; the
 * kernel passes the offset of the last entry it took. Reading on from
 * where the last call stopped fetches the next page after the last name
 * seen (tessera_readdir's cursor), so a listing in pages of any size costs
 * one request per DIR_PAGE names and sees every name that exists
 * throughout. A seek elsewhere restarts from the top and skips ahead.
 */
/* Make entry `want` of the listing one of d's page (reading pages on,
 * or from the top for an entry before the page): 1 when it is there, 0
 * past the end, or a negative errno. */
static int dir_seek(tessera_fs *fs, const char *path, struct tdir *d, uint64_t want)
{
	int rc;

	if (!d->loaded || want < d->base) {
		rc = dir_page(fs, path, d, 1);
		if (rc)
			return rc;
	}
	while (want >= d->base + d->n) {
		if (d->eof)
			return 0;
		rc = dir_page(fs, path, d, 0);
		if (rc)
			return rc;
		if (!d->n && d->eof)
			return 0;
	}
	return 1;
}

/* Entry e of directory path as readdirplus may give it: with the
 * attributes the name cache holds of it, if they are of e's file and it
 * has one link (the kernel's getattr of a hard-linked name is how the
 * mount learns its names, fuse_links.c). 1 when st holds them. */
static int held_attrs(tessera_fs *fs, const char *path, const struct tessera_dirent *e,
		      struct stat *st)
{
	char child[PATH_MAX];
	struct tessera_stat ts;
	int n = snprintf(child, sizeof(child), "%s/%s", strcmp(path, "/") ? path : "", e->name);

	if (n < 0 || (size_t)n >= sizeof(child) || tessera_stat_held(fs, child, &ts) ||
	    ts.handle != e->handle || ts.nlink > 1)
		return 0;
	tf_stat_of(&ts, st);
	tf_kattr_forget((struct tfuse *)fuse_get_context()->private_data, ts.handle);
	return 1;
}

int tf_dir_fill(tessera_fs *fs, const char *path, struct tdir *d, off_t off, void *buf,
		fuse_fill_dir_t fill, enum tf_dir_attrs attrs)
{
	uint64_t want;
	int rc;

	if (off < 1 && fill(buf, ".", NULL, 1, 0))
		return 0;
	if (off < 2 && fill(buf, "..", NULL, 2, 0))
		return 0;
	want = off < 2 ? 0 : (uint64_t)off - 2;   /* next entry's index */
	while ((rc = dir_seek(fs, path, d, want)) > 0) {
		const struct tessera_dirent *e = &d->ents[want - d->base];
		enum fuse_fill_dir_flags plus = 0;
		struct stat st;

		if (attrs == TF_DIR_HELD_ATTRS && held_attrs(fs, path, e, &st)) {
			plus = FUSE_FILL_DIR_PLUS;
		} else {
			memset(&st, 0, sizeof(st));
			st.st_ino = (ino_t)e->handle;
			st.st_mode = (mode_t)e->mode;
		}
		if (fill(buf, e->name, &st, (off_t)(want + 3), plus))
			return 0;
		want++;
	}
	return rc < 0 ? rc : 0;
}
