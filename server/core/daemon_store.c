/*
 * daemon_store.c - a daemon's claim on its directory (daemon.h,
 * srv_store_claim): closed disks, and stores that know whose they are.
 *
 * Closed: what a daemon keeps (objects, the namespace, its log) may hold
 * any user's data and names, so only the daemons' user may read it. The
 * daemon's umask becomes 077 and its directory 0700; one made by an older
 * version (0755) is refused with the chmod to run, never changed behind
 * the admin's back, as the key file is (cap.c). Only DIR itself is
 * checked: nothing under a 0700 directory can be reached by others,
 * whatever its own mode.
 *
 * Owned: DIR/owner is four lines,
 *
 *   tessera owner 1
 *   fs_id 3f2a9c...        ("-": the config named none)
 *   kind storage           (or metadata)
 *   index 0
 *
 * written aside, synced and renamed in at the first start. LevelDB leaves
 * a file whose name is not its own alone, so the metadata directory can
 * hold it too.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

#define OWNER_MAGIC "tessera owner 1\n"
#define OWNER_NO_FS "-"

struct owner_rec {
	enum srv_store_kind kind;
	uint32_t index;
	char fs_id[64];            /* "" when the record names none */
};

static const char *dir_word(enum srv_store_kind k)
{
	return k == SRV_STORE_STORAGE ? "storage directory" : "metadata directory";
}

/* "storage daemon 1" or "metadata daemon 0", into buf. */
static const char *who(enum srv_store_kind k, uint32_t index, char *buf, size_t len)
{
	snprintf(buf, len, "%s daemon %u", k == SRV_STORE_STORAGE ? "storage" : "metadata", index);
	return buf;
}

/* A log others can read shows names, paths and errors of every user. */
static int log_private(char *err, size_t errlen)
{
	char path[1024];
	struct stat st;
	ssize_t n;

	if (fstat(STDERR_FILENO, &st) || !S_ISREG(st.st_mode) || !(st.st_mode & 077))
		return 0;
	n = readlink("/proc/self/fd/2", path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(path, sizeof(path), "(standard error)");
	snprintf(err, errlen, "log file %s: mode %04o lets group or others read it; refusing to "
		 "start (chmod 600 %s)", path, (unsigned)(st.st_mode & 07777), path);
	return -EACCES;
}

static int dir_private(const char *dir, enum srv_store_kind kind, enum srv_store_dir *how,
		       char *err, size_t errlen)
{
	struct stat st;

	int rc = mkdir(dir, 0700) ? -errno : 0;

	*how = rc ? SRV_STORE_DIR_EXISTED : SRV_STORE_DIR_MADE;
	if ((rc && rc != -EEXIST) || (rc = stat(dir, &st) ? -errno : 0)) {
		snprintf(err, errlen, "%s %s: %s", dir_word(kind), dir, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s: not a directory", dir_word(kind), dir);
		return -ENOTDIR;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s %s: mode %04o lets group or others in; refusing to start "
			 "(chmod 700 %s)", dir_word(kind), dir, (unsigned)(st.st_mode & 07777), dir);
		return -EACCES;
	}
	return 0;
}

/* 0, -ENOENT (no record) or -EINVAL (a file that is not one). */
static int owner_read(const char *dir, struct owner_rec *r)
{
	char path[4200], text[256] = "", kind[16], fs[64];
	unsigned index;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/owner", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	if (strncmp(text, OWNER_MAGIC, strlen(OWNER_MAGIC)) ||
	    sscanf(text + strlen(OWNER_MAGIC), "fs_id %63s\nkind %15s\nindex %u", fs, kind,
		   &index) != 3)
		return -EINVAL;
	if (!strcmp(kind, "storage"))
		r->kind = SRV_STORE_STORAGE;
	else if (!strcmp(kind, "metadata"))
		r->kind = SRV_STORE_METADATA;
	else
		return -EINVAL;
	r->index = index;
	snprintf(r->fs_id, sizeof(r->fs_id), "%s", strcmp(fs, OWNER_NO_FS) ? fs : "");
	return 0;
}

static int owner_write(const char *dir, const struct owner_rec *r)
{
	char path[4200], tmp[4200], text[256];
	int fd, len, rc = 0;

	snprintf(path, sizeof(path), "%s/owner", dir);
	snprintf(tmp, sizeof(tmp), "%s/owner.new", dir);
	len = snprintf(text, sizeof(text), OWNER_MAGIC "fs_id %s\nkind %s\nindex %u\n",
		       r->fs_id[0] ? r->fs_id : OWNER_NO_FS,
		       r->kind == SRV_STORE_STORAGE ? "storage" : "metadata", r->index);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len || fsync(fd))
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (!rc) {
		/* the rename is durable once the directory is */
		if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -errno;
		if (fsync(fd))
			rc = -errno;
		close(fd);
	}
	return rc;
}

/* Which kind of daemon's data a directory without a record holds: the
 * storage daemon's store file, LevelDB's CURRENT; -1: neither (new). */
static int older_kind(const char *dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/store", dir);
	if (access(path, F_OK) == 0)
		return SRV_STORE_STORAGE;
	snprintf(path, sizeof(path), "%s/CURRENT", dir);
	if (access(path, F_OK) == 0)
		return SRV_STORE_METADATA;
	return -1;
}

/* The record must name this daemon of this file system. */
static int owner_check(const char *dir, const struct owner_rec *r, const struct srv_store_owner *me,
		       char *err, size_t errlen)
{
	char theirs[64], mine[64];

	if (r->kind == me->kind && r->index == me->index && !strcmp(r->fs_id, me->fs_id))
		return 0;
	who(r->kind, r->index, theirs, sizeof(theirs));
	who(me->kind, me->index, mine, sizeof(mine));
	if (r->kind != me->kind || r->index != me->index)
		snprintf(err, errlen, "%s %s belongs to %s of file system %s, not %s; refusing to start",
			 dir_word(me->kind), dir, theirs, r->fs_id[0] ? r->fs_id : "(no fs_id)", mine);
	else if (!me->fs_id[0])
		snprintf(err, errlen, "%s %s belongs to %s of file system %s, but the config names "
			 "no fs_id; refusing to start (add `fs_id = %s` to the config if it is that "
			 "file system's)", dir_word(me->kind), dir, theirs, r->fs_id, r->fs_id);
	else
		snprintf(err, errlen, "%s %s belongs to %s of file system %s, not of file system %s "
			 "(the config's fs_id); refusing to start", dir_word(me->kind), dir, theirs,
			 r->fs_id[0] ? r->fs_id : "(no fs_id)", me->fs_id);
	return -EEXIST;
}

static int fs_id_valid(const char *id)
{
	for (const char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return 0;
	return strlen(id) < sizeof(((struct owner_rec *)0)->fs_id) && strcmp(id, OWNER_NO_FS);
}

/* Write the record (first start, an older directory adopted, or a record
 * without an fs_id that the config now gives); *notice says why unless
 * the directory is new. */
static int owner_claim(const char *dir, const struct srv_store_owner *me, const char *why,
		       char **notice, char *err, size_t errlen)
{
	struct owner_rec r = { me->kind, me->index, "" };
	char mine[64];
	int rc;

	snprintf(r.fs_id, sizeof(r.fs_id), "%s", me->fs_id);
	if ((rc = owner_write(dir, &r))) {
		snprintf(err, errlen, "%s %s: writing its owner record: %s", dir_word(me->kind), dir,
			 strerror(-rc));
		return rc;
	}
	if (why && asprintf(notice, "%s %s %s; adopted as %s of file system %s", dir_word(me->kind),
			    dir, why, who(me->kind, me->index, mine, sizeof(mine)),
			    me->fs_id[0] ? me->fs_id : "(no fs_id in the config)") < 0)
		*notice = NULL;
	return 0;
}

int srv_store_claim(const char *dir, const struct srv_store_owner *me, enum srv_store_dir *how,
		    char **notice, char *err, size_t errlen)
{
	struct owner_rec r;
	char theirs[64];
	int rc, older;

	*notice = NULL;
	umask(077);
	if (!fs_id_valid(me->fs_id)) {
		snprintf(err, errlen, "fs_id '%s' in the config: at most 63 letters, digits, '-' "
			 "and '_'", me->fs_id);
		return -EINVAL;
	}
	if ((rc = log_private(err, errlen)) || (rc = dir_private(dir, me->kind, how, err, errlen)))
		return rc;
	rc = owner_read(dir, &r);
	if (rc == -EINVAL) {
		snprintf(err, errlen, "%s %s: %s/owner is not a Tessera owner record; refusing to "
			 "start", dir_word(me->kind), dir, dir);
		return rc;
	}
	if (rc == 0 && !r.fs_id[0] && me->fs_id[0] && r.kind == me->kind && r.index == me->index)
		return owner_claim(dir, me, "had no file system id in its owner record", notice,
				   err, errlen);
	if (rc == 0)
		return owner_check(dir, &r, me, err, errlen);
	if (rc != -ENOENT) {
		snprintf(err, errlen, "%s %s: its owner record: %s", dir_word(me->kind), dir,
			 strerror(-rc));
		return rc;
	}
	older = older_kind(dir);
	if (older < 0)
		return owner_claim(dir, me, NULL, notice, err, errlen);
	if (older != (int)me->kind) {
		snprintf(err, errlen, "%s %s holds a %s (made by an older version, without an owner "
			 "record), not %s's; refusing to start", dir_word(me->kind), dir,
			 older == SRV_STORE_STORAGE ? "storage daemon's store"
						    : "metadata daemon's namespace",
			 who(me->kind, me->index, theirs, sizeof(theirs)));
		return -EEXIST;
	}
	return owner_claim(dir, me, "had no owner record (made by an older version)", notice,
			   err, errlen);
}
