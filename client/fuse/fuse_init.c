/*
 * fuse_init.c - FUSE_HANDLE_KILLPRIV_V2, which libfuse 3.14 cannot ask
 * the kernel for (its init knows no such capability), set in the mount's
 * answer to the kernel's FUSE_INIT on the way out.
 *
 * Why: without it, the kernel asks the mount for a file's
 * security.capability before every write(2) (to drop a written file's
 * capabilities), a GETXATTR round trip through /dev/fuse per write even
 * when the mount answers it from memory (nocap_known): 400-byte writes
 * ran at 13 to 30 MB/s beside 287 MB/s on the local disk. With it the
 * kernel marks an inode "no security attributes" (S_NOSEC) after one
 * check, until it next refreshes the file's attributes (attr_timeout),
 * and leaves dropping the set-ID bits to the file system, which
 * tessera_fuse.c does where the kernel would have (writer_drop_privs: a
 * non-root write that the kernel sends past its cache, which it does for
 * a set-ID file; ftruncate; an O_TRUNC open). chown's are the metadata
 * daemon's (for every type but directories); truncate by name is the
 * library's.
 *
 * The answer to FUSE_INIT is the first the mount writes: the kernel
 * sends nothing else before it has it. The read hook notes the INIT
 * request's id, the write hook sets the flag in the reply carrying it.
 * One session per process: the two values below are the process's.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_int.h"

static _Atomic uint64_t init_unique;   /* 0: no FUSE_INIT seen yet */
static atomic_int init_answered;
/* The node (the kernel's inode) of the request this thread read last,
 * which is the one it serves: libfuse's loop threads each read a request
 * and serve it before they read the next. */
static _Thread_local uint64_t request_node;

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header in;

	(void)userdata;
	request_node = 0;
	if (n >= (ssize_t)sizeof(in)) {
		memcpy(&in, buf, sizeof(in));
		request_node = in.nodeid;
		if (in.opcode == FUSE_INIT && !atomic_load(&init_answered))
			atomic_store(&init_unique, in.unique);
	}
	return n;
}

/* Add the flag to the INIT reply in iov (header, then fuse_init_out). */
static void patch_init(struct iovec *iov, int count)
{
	struct fuse_out_header out;
	struct fuse_init_out init;

	if (count < 2 || iov[0].iov_len < sizeof(out) ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, flags) + sizeof(init.flags))
		return;
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.error || out.unique != atomic_load(&init_unique))
		return;
	memcpy(&init, iov[1].iov_base, offsetof(struct fuse_init_out, flags) + sizeof(init.flags));
	init.flags |= FUSE_HANDLE_KILLPRIV_V2;
	memcpy((char *)iov[1].iov_base + offsetof(struct fuse_init_out, flags), &init.flags,
	       sizeof(init.flags));
	atomic_store(&init_answered, 1);
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	if (!atomic_load(&init_answered) && atomic_load(&init_unique))
		patch_init(iov, count);
	return writev(fd, iov, count);
}

int tf_ask_killpriv_v2(struct fuse *fuse)
{
	static const struct fuse_custom_io io = { .read = hook_read, .writev = hook_writev };
	struct fuse_session *se = fuse_get_session(fuse);

	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}

int tf_drop_request_attrs(struct fuse *fuse)
{
	if (!request_node)
		return -ENOENT;
	/* offset -1: the attributes only, not the pages */
	return fuse_lowlevel_notify_inval_inode(fuse_get_session(fuse), request_node, -1, 0);
}
