/*
 * tp_local.c - the client's side of a storage daemon's local-read socket
 * (docs/design.md, "Local reads"): send a token, get a status byte and the
 * descriptors it stands for.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "tproto.h"

int tp_local_fetch(const char *name, const uint8_t *token, uint32_t timeout_ms, int fds[2],
		   int *nfds, uint8_t *status)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	struct timeval tv = { (time_t)(timeout_ms / 1000),
			      (suseconds_t)(timeout_ms % 1000) * 1000 };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { status, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	int sock, rc = 0;
	ssize_t k;

	*nfds = 0;
	*status = 0xff;
	if (!len || len + 1 >= sizeof(sa.sun_path))
		return -ENOTCONN;
	memcpy(sa.sun_path + 1, name, len);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	(void)setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(sock, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len))) {
		rc = errno == ECONNREFUSED || errno == ENOENT ? -ENOTCONN : -errno;
		goto out;
	}
	if (send(sock, token, TP_LOCAL_TOKEN, MSG_NOSIGNAL) != TP_LOCAL_TOKEN) {
		rc = -EPIPE;
		goto out;
	}
	k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *cm = k > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		size_t got;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		got = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < got; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < 2)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (k != 1) {
		while (*nfds)
			close(fds[--*nfds]);
		rc = k < 0 ? -errno : -EPROTO;
	}
out:
	close(sock);
	return rc;
}
