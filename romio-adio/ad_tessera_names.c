/*
 * ad_tessera_names.c - which file names are Tessera's, and the path
 * libtessera is given for them.
 *
 * ROMIO strips a "tessera:" prefix before the driver sees a name. What is
 * left is resolved against the working directory when relative (so
 * ROMIO_FSTYPE_FORCE=tessera: with "data.h5" works), then given to
 * libtessera: a path under the config's mount_point names the file on the
 * mount, anything else is a bare Tessera path.
 *
 * A name without the prefix is the driver's when it lies on the Tessera
 * mount, as ROMIO's Lustre and PVFS2 drivers claim theirs by the file
 * system's magic number: its directory is on a FUSE file system and, with
 * symbolic links resolved, under the config's mount_point. Open MPI's
 * component selection and ROMIO's file system detection both ask
 * ADIOI_TESSERA_Claims (see patches/).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ad_tessera.h"

#define FUSE_MAGIC 0x65735546 /* statfs f_type of every FUSE mount */

/* The config's mount point, read once per config file name. */
static struct {
	pthread_mutex_t lock;
	char config[PATH_MAX];    /* $TESSERA_CONFIG it was read from */
	char mount[PATH_MAX];     /* as the config says ("" if none) */
	char real[PATH_MAX];      /* with symbolic links resolved ("" if missing) */
} cache = { PTHREAD_MUTEX_INITIALIZER, "", "", "" };

/* Copy the mount point as the config says and resolved; 0 when the config
 * names none (or cannot be read: then no name is on the mount). */
static int mount_point(char *mount, char *real)
{
	const char *config = getenv("TESSERA_CONFIG");

	if (!config || !*config || strlen(config) >= sizeof(cache.config))
		return 0;
	pthread_mutex_lock(&cache.lock);
	if (strcmp(cache.config, config)) {
		snprintf(cache.config, sizeof(cache.config), "%s", config);
		if (tessera_config_mount_point(config, cache.mount, sizeof(cache.mount), NULL, 0))
			cache.mount[0] = '\0';
		if (!cache.mount[0] || !realpath(cache.mount, cache.real))
			cache.real[0] = '\0';
	}
	strcpy(mount, cache.mount);
	strcpy(real, cache.real);
	pthread_mutex_unlock(&cache.lock);
	return mount[0] != '\0';
}

/* Is path `p` dir or below it (whole components)? */
static int under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return p[0] == '/';
	return !strncmp(p, dir, n) && (p[n] == '/' || p[n] == '\0');
}

static int on_fuse(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == FUSE_MAGIC;
}

/* Drop "." and empty components and apply ".." to an absolute path, in
 * place, without asking the file system. */
static void normalise(char *path)
{
	char *out = path, *in = path;

	while (*in) {
		char *end;
		size_t n;

		while (*in == '/')
			in++;
		end = strchr(in, '/');
		n = end ? (size_t)(end - in) : strlen(in);
		if (n == 0 || (n == 1 && in[0] == '.')) {
			/* nothing */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/* `name` made absolute against the working directory, normalised. */
static int absolute(const char *name, char *out, size_t len)
{
	size_t n;

	if (name[0] == '/') {
		if (strlen(name) >= len)
			return -ENAMETOOLONG;
		strcpy(out, name);
	} else {
		if (!getcwd(out, len))
			return -errno;
		n = strlen(out);
		if (n + 1 + strlen(name) >= len)
			return -ENAMETOOLONG;
		out[n] = '/';
		strcpy(out + n + 1, name);
	}
	normalise(out);
	return 0;
}

/* Resolve `name` (see the top); *on_mount says whether it is on the
 * mount (by its spelling, or through symbolic links). */
static int resolve(const char *name, char *out, size_t len, int *on_mount)
{
	char mount[PATH_MAX], real[PATH_MAX], dir[PATH_MAX], rdir[PATH_MAX];
	const char *base;
	int rc = absolute(name, out, len);

	*on_mount = 0;
	if (rc || !mount_point(mount, real))
		return rc;
	if (under(out, mount)) {
		*on_mount = 1;
		return 0;
	}
	/* Reached through symbolic links (or a mount_point spelt through
	 * one): the real directory is under the real mount point. */
	if (!real[0] || strlen(out) >= sizeof(dir))
		return 0;
	strcpy(dir, out);
	base = strrchr(out, '/') + 1;
	dir[base - out > 1 ? base - out - 1 : 1] = '\0';
	if (!on_fuse(dir) || !realpath(dir, rdir) || !under(rdir, real))
		return 0;
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s/%s", mount, rdir + strlen(real), base) >=
	    sizeof(dir) || strlen(dir) >= len)
		return -ENAMETOOLONG;
	strcpy(out, dir);
	normalise(out);
	*on_mount = 1;
	return 0;
}

int adt_resolve(const char *name, char *out, size_t len)
{
	int on_mount;

	return resolve(name, out, len, &on_mount);
}

int ADIOI_TESSERA_Claims(const char *filename)
{
	const char *force = getenv("ROMIO_FSTYPE_FORCE");
	char path[PATH_MAX], mount[PATH_MAX], real[PATH_MAX];
	int on_mount;

	if (!filename)
		return 0;
	if (!strncasecmp(filename, "tessera:", 8) || (force && !strncasecmp(force, "tessera:", 8)))
		return 1;
	/* Another prefix; a name on the mount needs none. */
	if (strchr(filename, ':'))
		return 0;
	if (resolve(filename, path, sizeof(path), &on_mount) || !on_mount)
		return 0;
	/* The mount must be there: without it the name is a local file. */
	return mount_point(mount, real) && on_fuse(mount);
}
