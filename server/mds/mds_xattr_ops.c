/*
 * mds_xattr_ops.c - the metadata daemon's extended-attribute requests
 * (XATTR_GET, XATTR_LIST, XATTR_SET, XATTR_REMOVE) on the store's
 * mds_xattr.h. The request's `nofollow` asks not to follow a symbolic link
 * in the last component (the l- calls, the mount).
 */
#include <errno.h>
#include <stdlib.h>

#include "mds_int.h"
#include "mds_xattr.h"

/* The answer's buffer for a GET or LIST of `size` bytes: never more than
 * the largest value or list the store keeps, whatever the caller asked
 * (a larger buffer cannot be needed). NULL with *cap 0 for size 0. */
static void *xattr_buffer(uint32_t size, size_t *cap)
{
	*cap = size < MDS_XATTR_LIST_MAX ? size : MDS_XATTR_LIST_MAX;
	return *cap ? malloc(*cap) : NULL;
}

/* What a read of extended attributes reads: a value (GET) or the names (LIST). */
enum xattr_read { XATTR_READ_VALUE, XATTR_READ_NAMES };

/* GET (a value) or LIST (the names): read into a buffer of the size the
 * request asks (0: only the size is answered), then answer the size and,
 * when it fitted, the bytes. */
static void reply_xattr_read(struct mds *mds, struct srv_req *req, enum xattr_read what)
{
	Tessera__XattrRequest *m = (Tessera__XattrRequest *)req->msg;
	Tessera__XattrReply rep = TESSERA__XATTR_REPLY__INIT;
	enum mds_follow follow = m->nofollow ? MDS_NOFOLLOW : MDS_FOLLOW;
	struct mds_cred cred;
	size_t cap, size = 0;
	uint8_t *buf = xattr_buffer(m->size, &cap);
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	if (cap && !buf) {
		srv_reply_error(req, -ENOMEM, "%s %s: no memory",
				what == XATTR_READ_VALUE ? "getxattr" : "listxattr", m->path);
		return;
	}
	if (what == XATTR_READ_VALUE)
		rc = mds_xattr_get(mds->store, &cred, m->path, follow, (const char *)m->name.data,
				   m->name.len, buf, cap, &size);
	else
		rc = mds_xattr_list(mds->store, &cred, m->path, follow, (char *)buf, cap, &size);
	if (rc) {
		mds_reply_store_error(mds, req, rc);
	} else {
		rep.size = size;
		rep.data.data = buf;
		rep.data.len = cap ? size : 0;
		srv_reply(req, &rep.base, NULL, 0);
	}
	free(buf);
}

void mds_op_XATTR_GET(void *ctx, struct srv_req *req)
{
	reply_xattr_read(ctx, req, XATTR_READ_VALUE);
}

void mds_op_XATTR_LIST(void *ctx, struct srv_req *req)
{
	reply_xattr_read(ctx, req, XATTR_READ_NAMES);
}

void mds_op_XATTR_SET(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__XattrRequest *m = (Tessera__XattrRequest *)req->msg;
	Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;
	struct mds_cred cred;
	enum mds_xattr_how how;
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	switch (m->how) {
	case TESSERA__XATTR_SET_MODE__XATTR_SET_ANY: how = MDS_XATTR_ANY; break;
	case TESSERA__XATTR_SET_MODE__XATTR_SET_CREATE: how = MDS_XATTR_CREATE; break;
	case TESSERA__XATTR_SET_MODE__XATTR_SET_REPLACE: how = MDS_XATTR_REPLACE; break;
	default:
		srv_reply_error(req, -EINVAL, "setxattr %s: unknown mode %u", m->path, m->how);
		return;
	}
	rc = mds_xattr_set(mds->store, &cred, m->path, m->nofollow ? MDS_NOFOLLOW : MDS_FOLLOW,
			   (const char *)m->name.data, m->name.len,
			   m->value.data, m->value.len, how);
	if (rc)
		mds_reply_store_error(mds, req, rc);
	else
		srv_reply(req, &rep.base, NULL, 0);
}

void mds_op_XATTR_REMOVE(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__XattrRequest *m = (Tessera__XattrRequest *)req->msg;
	Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;
	struct mds_cred cred;
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	rc = mds_xattr_remove(mds->store, &cred, m->path, m->nofollow ? MDS_NOFOLLOW : MDS_FOLLOW,
			      (const char *)m->name.data, m->name.len);
	if (rc)
		mds_reply_store_error(mds, req, rc);
	else
		srv_reply(req, &rep.base, NULL, 0);
}
