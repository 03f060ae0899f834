/*
 * mds_reply.c - what the metadata daemon's replies are made of: a file's
 * attributes and layout as messages, signed capabilities, the AttrReply
 * of a lookup, open or change (size, leases, the changed directory), and
 * the refusal of root from a host that is not an admin host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "daemon.h"
#include "mds_int.h"
#include "mds_lease.h"
#include "mds_store.h"

void mds_layout_msg(const struct mds_layout *l, struct attr_msg *m, enum layout_part part)
{
	tessera__layout__init(&m->layout);
	m->layout.strip_size = l->strip_size;
	m->layout.versioned = l->versioned != 0;
	m->layout.servers = m->servers;
	m->layout.handles = m->handles;
	if (part == LAYOUT_WITH_OBJECTS) {
		m->layout.n_servers = m->layout.n_handles = l->count;
		memcpy(m->servers, l->servers, l->count * sizeof(*m->servers));
		memcpy(m->handles, l->handles, l->count * sizeof(*m->handles));
	} else {
		/* a directory's default: only the count matters */
		m->layout.n_servers = l->count;
		memset(m->servers, 0, l->count * sizeof(*m->servers));
	}
}

void mds_attr_msg(const struct mds_attr *a, struct attr_msg *m)
{
	tessera__attr__init(&m->attr);
	m->attr.handle = a->handle;
	m->attr.type = a->type;
	m->attr.mode = a->mode;
	m->attr.uid = a->uid;
	m->attr.gid = a->gid;
	m->attr.nlink = a->nlink;
	m->attr.atime_ns = a->atime_ns;
	m->attr.mtime_ns = a->mtime_ns;
	m->attr.ctime_ns = a->ctime_ns;
	m->attr.mtime_set_ns = a->mtime_set_ns;
	m->attr.size = a->size;
	m->attr.nentries = a->nentries;
	m->attr.rdev = a->rdev;
	m->attr.has_layout = a->has_layout;
	if (a->has_layout) {
		mds_layout_msg(&a->layout, m,
			   a->type == MDS_FILE ? LAYOUT_WITH_OBJECTS : LAYOUT_DIR_DEFAULT);
		m->attr.layout = &m->layout;
	}
}

/* Grant `rights` on file a's objects to cred's uid, for the configured
 * lifetime. The caller checked the permission. Every capability of a
 * versioned file says so (TP_CAP_VERSIONED): storage daemons then take
 * only versioned I/O on its objects. */
int mds_grant(struct mds *mds, const struct mds_cred *cred, const struct mds_attr *a,
		 uint32_t rights, struct cap_msg *out)
{
	tessera__capability__init(&out->cap);
	out->cap.file = a ? a->handle : 0;
	out->cap.handles = a ? (uint64_t *)a->layout.handles : NULL;
	out->cap.n_handles = a ? a->layout.count : 0;
	out->cap.rights = rights | (a && a->layout.versioned ? TP_CAP_VERSIONED : 0);
	out->cap.uid = cred->uid;
	out->cap.expires_ns = tp_real_ns() + (int64_t)mds->cap_lifetime_ms * 1000000;
	return cap_sign(&mds->key, &out->cap, out->mac);
}

/* The directory a change of `path` changed (its entries), as the change
 * left it, for the reply (AttrReply.parent, RemoveReply.parent): the
 * mount answers the kernel's next question about the directory with it.
 * 0, or an error that leaves the reply without it. */
static int parent_after(struct mds *mds, const struct mds_cred *cred, const char *path,
			struct mds_attr *out)
{
	char dir[TP_PATH_MAX + 1];
	size_t n = strlen(path);

	if (n > TP_PATH_MAX || !(n = tp_path_dir_len(path, n)))
		return -EINVAL;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return mds_lookup(mds->store, cred, dir, out);
}

struct parent_part *mds_parent_part_of(struct mds *mds, const struct mds_cred *cred,
					  const char *path)
{
	struct parent_part *p = calloc(1, sizeof(*p));

	if (p && !parent_after(mds, cred, path, &p->a)) {
		p->have = 1;
		mds_attr_msg(&p->a, &p->m);
	}
	return p;
}

Tessera__Attr *mds_parent_msg(struct parent_part *p)
{
	return p && p->have ? &p->m.attr : NULL;
}

void mds_reply_attr_sized(struct srv_req *req, const struct mds_attr *a, int created,
			     const Tessera__Capability *cap, const struct size_part *sp,
			     struct parent_part *parent)
{
	struct attr_msg *m = malloc(sizeof(*m));
	Tessera__AttrReply rep = TESSERA__ATTR_REPLY__INIT;

	if (!m) {
		srv_reply_error(req, -ENOMEM, "no memory for a reply");
		return;
	}
	mds_attr_msg(a, m);
	rep.attr = &m->attr;
	rep.parent = mds_parent_msg(parent);
	rep.created = created;
	rep.cap = (Tessera__Capability *)cap;
	if (sp) {
		rep.size_known = sp->view.known;
		rep.known_size = sp->view.size;
		rep.known_blocks = sp->view.blocks;
		rep.known_data_mtime_ns = sp->view.data_mtime_ns;
		rep.size_token = sp->view.token;
		rep.write_token = sp->write_token;
		mds_lease_fill(sp->lease, &rep);
	}
	srv_reply(req, &rep.base, NULL, 0);
	free(m);
}

void mds_reply_attr(struct srv_req *req, const struct mds_attr *a, int created,
		       const Tessera__Capability *cap, const struct mds_lease_part *lease)
{
	struct size_part sp = { { 0 }, 0, lease };

	mds_reply_attr_sized(req, a, created, cap, &sp, NULL);
}

/* Root of a host that is not an admin host asked for what only root of
 * the file system may have: why it is refused. */
void mds_reply_not_admin_host(struct srv_req *req, const char *what)
{
	char host[INET_ADDRSTRLEN] = "an unknown host";
	uint32_t a;

	memcpy(&a, req->ident.origin4, sizeof(a));
	if (a)
		inet_ntop(AF_INET, req->ident.origin4, host, sizeof(host));
	srv_reply_error(req, -EPERM, "%s: uid 0 of %s is not root of this file system: that host "
			"is not an admin host (admin_hosts in the config)", what, host);
}
