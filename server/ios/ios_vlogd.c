/* ios_vlogd.c - the storage daemon's versioned objects (issue 25): the
 * VLOG opcode and the version paths of writes and reads. Being wired. */
#include <errno.h>

#include "ios.h"

void ios_do_vlog(struct ios *ios, struct srv_req *req)
{
	(void)ios;
	srv_reply_error(req, -EOPNOTSUPP, "versioned objects: not served by this storage daemon yet");
}
