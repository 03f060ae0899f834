/* ios_disk.c - the system disk: each op is the system call of its name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ios_disk.h"

static int sys_open(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path,
		    int flags, mode_t mode)
{
	int fd = open(path, flags, mode);

	(void)d;
	(void)handle;
	(void)file;
	return fd < 0 ? -errno : fd;
}

static int sys_unlink(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path)
{
	(void)d;
	(void)handle;
	(void)file;
	return unlink(path) ? -errno : 0;
}

static int sys_close(struct ios_disk *d, int fd)
{
	(void)d;
	return close(fd) ? -errno : 0;
}

static ssize_t sys_preadv(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	ssize_t k = preadv(fd, iov, n, off);

	(void)d;
	return k < 0 ? -errno : k;
}

static ssize_t sys_pwritev(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	ssize_t k = pwritev(fd, iov, n, off);

	(void)d;
	return k < 0 ? -errno : k;
}

static int sys_fstat(struct ios_disk *d, int fd, struct stat *sb)
{
	(void)d;
	return fstat(fd, sb) ? -errno : 0;
}

static int sys_ftruncate(struct ios_disk *d, int fd, off_t size)
{
	(void)d;
	return ftruncate(fd, size) ? -errno : 0;
}

static int sys_fdatasync(struct ios_disk *d, int fd)
{
	(void)d;
	return fdatasync(fd) ? -errno : 0;
}

static int sys_fallocate(struct ios_disk *d, int fd, off_t off, off_t len)
{
	(void)d;
	return fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len) ? -errno : 0;
}

static void sys_writeback(struct ios_disk *d, int fd, off_t off, off_t len)
{
	(void)d;
	(void)sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE);
}

static int sys_mkdir(struct ios_disk *d, const char *path, mode_t mode)
{
	(void)d;
	return mkdir(path, mode) ? -errno : 0;
}

static int sys_syncdir(struct ios_disk *d, const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	(void)d;
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

static int sys_statvfs(struct ios_disk *d, const char *path, struct statvfs *sv)
{
	(void)d;
	return statvfs(path, sv) ? -errno : 0;
}

static int sys_rename(struct ios_disk *d, const char *from, const char *to,
		      enum ios_rename how)
{
	(void)d;
	if (how == IOS_RENAME_NEW)
		return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) ? -errno : 0;
	return rename(from, to) ? -errno : 0;
}

static int sys_fchmod(struct ios_disk *d, int fd, mode_t mode)
{
	(void)d;
	return fchmod(fd, mode) ? -errno : 0;
}

static void sys_destroy(struct ios_disk *d)
{
	free(d);
}

static const struct ios_disk_ops sys_ops = {
	.size = sizeof(struct ios_disk_ops),
	.open = sys_open,
	.unlink = sys_unlink,
	.close = sys_close,
	.preadv = sys_preadv,
	.pwritev = sys_pwritev,
	.fstat = sys_fstat,
	.ftruncate = sys_ftruncate,
	.fdatasync = sys_fdatasync,
	.mkdir = sys_mkdir,
	.syncdir = sys_syncdir,
	.statvfs = sys_statvfs,
	.rename = sys_rename,
	.destroy = sys_destroy,
	.writeback = sys_writeback,
	.fallocate = sys_fallocate,
	.fchmod = sys_fchmod,
};

int ios_disk_system(struct ios_disk **out)
{
	struct ios_disk *d = malloc(sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->ops = &sys_ops;
	*out = d;
	return 0;
}
