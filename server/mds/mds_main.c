/* mds_main.c - tessera-mds, the metadata daemon: requests in, mds_store
 * calls, replies out. Every change is durable before its reply leaves:
 * the store writes changes unsynced and the daemon holds the replies of a
 * loop turn that changed something until one synced write at the end of
 * the turn (group commit, mds_commit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "cap.h"
#include "daemon.h"
#include "mds_int.h"
#include "mds_lease.h"
#include "mds_purge.h"
#include "mds_size.h"
#include "mds_store.h"
#include "mds_version.h"
#include "mds_vmerge.h"

#define MDS_READDIR_MAX 1024 /* entries per page: keeps a reply < 300 KiB */
#define MDS_FILE_LIST_MAX 64 /* files per FILE_LIST page: a reply < 300 KiB */

/* Regular file a lost its last name: the purger removes its objects after
 * this turn's commit (mds_commit). */
static void note_removed(struct mds *mds, const struct mds_attr *a)
{
	mds_purge_note(mds->purge, a->handle, a->layout.count, a->layout.servers,
		       a->layout.handles);
	/* its version table's records went in the same batch */
	mds_versions_forget(mds->versions, a->handle);
	mds_vmerge_forget(mds->vmerge, a->handle);
}

/* The rights an open of file a asks for (TP_CAP_READ/WRITE of `asked`),
 * checked against its mode unless this request created it, plus STAT;
 * a plain lookup (asked 0) gets STAT alone. 0 or an error answered. */
enum open_kind {
	OPEN_EXISTING,    /* the mode is checked */
	OPEN_CREATED,     /* this request made the file: no check */
};

static int refuse_or_grant_open(struct mds *mds, struct srv_req *req, const struct mds_cred *cred,
				const char *path, const struct mds_attr *a, uint32_t asked,
				enum open_kind kind, struct cap_msg *out)
{
	uint32_t rw = asked & (TP_CAP_READ | TP_CAP_WRITE);
	char what[4200];
	int rc;

	snprintf(what, sizeof(what), "open %s", path);
	if (rw && kind == OPEN_EXISTING &&
	    (rc = mds_may_open(mds->store, cred, what, a, rw & TP_CAP_READ, rw & TP_CAP_WRITE))) {
		mds_reply_store_error(mds, req, rc);
		return rc;
	}
	if ((rc = mds_grant(mds, cred, a, rw | TP_CAP_STAT, out)))
		srv_reply_error(req, rc, "%s: cannot sign a capability", what);
	return rc;
}

/* An open's (or a stat's) answer, besides the attributes. */
struct open_answer {
	int created;
	const Tessera__Capability *cap;
	uint32_t asked;                     /* open_rights */
	enum tp_open_writer writer;
	struct parent_part *parent;         /* a create's directory (NULL: none) */
	const struct mds_lease_part *lease;
};

/* The reply to an open (or stat) of regular file a that was granted
 * `asked` (open_rights): the size if known (mds_size.h), as of before
 * this open, so an open needs no stat after it; an open for writing is
 * then one more writer (TP_WRITER_NOW), or asks to be before it writes.
 * Only a stat may report a size it had to ask the storage daemons for
 * (an open's token would be stale at once, or the opener has no use for
 * it). A versioned file's size is its storage
 * daemons' logs' as of a version: never kept here. */
static void reply_open(struct mds *mds, struct srv_req *req, const struct mds_attr *a,
		       const struct open_answer *o)
{
	struct size_part sp = { { 0 }, 0, o->lease };
	int64_t now = tp_real_ns();

	if (a->layout.versioned) {
		mds_reply_attr_sized(req, a, o->created, o->cap, &sp, o->parent);
		return;
	}
	mds_sizes_stat(mds->sizes, a->handle, now, &sp.view);
	if (o->asked & (TP_CAP_READ | TP_CAP_WRITE))
		sp.view.token = 0;
	if ((o->asked & TP_CAP_WRITE) && o->writer == TP_WRITER_NOW) {
		sp.write_token = mds_sizes_writer_open(mds->sizes, a->handle, req->ident.session, now);
		/* others' leases of its attributes end: its size is unknown now */
		mds_leases_break(mds->leases, a->handle, req->ident.session);
	}
	mds_reply_attr_sized(req, a, o->created, o->cap, &sp, o->parent);
}

/* The removed file's layout, for the caller's information. No remove
 * capability: the purger removes the objects (several files' in one
 * REMOVE per storage daemon) once the removal is durable, and a client
 * that removed them too only made the storage daemons unlink twice (a
 * client sees no cap and leaves them, client/meta.c drop_objects). */
static void reply_removed(struct srv_req *req, const struct mds_attr *a, int removed_file,
			  struct parent_part *parent)
{
	struct attr_msg *m = malloc(sizeof(*m));
	Tessera__RemoveReply rep = TESSERA__REMOVE_REPLY__INIT;

	if (!m) {
		srv_reply_error(req, -ENOMEM, "no memory for a reply");
		return;
	}
	rep.removed_file = removed_file;
	rep.parent = mds_parent_msg(parent);
	if (removed_file) {
		mds_layout_msg(&a->layout, m, LAYOUT_WITH_OBJECTS);
		rep.layout = &m->layout;
	}
	srv_reply(req, &rep.base, NULL, 0);
	free(m);
}

/* Entries in one page of a listing: what the client asked for (0: as
 * many as may be), never more than most, which bounds what a request
 * makes the daemon allocate. */
static uint32_t page_entries(uint32_t asked, uint32_t most)
{
	return asked && asked < most ? asked : most;
}

static void reply_readdir(struct mds *mds, struct srv_req *req, const struct mds_cred *cred)
{
	Tessera__ReaddirRequest *m = (Tessera__ReaddirRequest *)req->msg;
	Tessera__ReaddirReply rep = TESSERA__READDIR_REPLY__INIT;
	uint32_t max = page_entries(m->max_entries, MDS_READDIR_MAX);
	struct mds_dirent *ents = calloc(max, sizeof(*ents));
	Tessera__Dirent *msgs = calloc(max, sizeof(*msgs));
	Tessera__Dirent **ptrs = calloc(max, sizeof(*ptrs));
	uint32_t n = 0;
	int eof = 0, rc;

	if (!ents || !msgs || !ptrs) {
		srv_reply_error(req, -ENOMEM, "readdir %s: no memory", m->path);
		goto out;
	}
	rc = mds_readdir(mds->store, cred, m->path, m->cursor, max, ents, &n, &eof);
	if (rc) {
		mds_reply_store_error(mds, req, rc);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		tessera__dirent__init(&msgs[i]);
		msgs[i].name = ents[i].name;
		msgs[i].handle = ents[i].handle;
		msgs[i].type = ents[i].type;
		ptrs[i] = &msgs[i];
	}
	rep.n_entries = n;
	rep.entries = ptrs;
	rep.eof = eof;
	srv_reply(req, &rep.base, NULL, 0);
out:
	free(ents);
	free(msgs);
	free(ptrs);
}

/* ------------------------------------------------------------ handlers
 *
 * One per opcode the metadata daemon serves (TP_OPCODES says which);
 * SRV_MDS_ENTRY builds the dispatch table from their names. */

static void mds_op_PING(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;

	srv_ping(mds->srv, req);
}

static void mds_op_MKDIR(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__MkdirRequest *m = (Tessera__MkdirRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	if ((rc = mds_mkdir(mds->store, &cred, m->path, m->mode, &a))) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	struct mds_lease_part lease;

	mds_lease_note(mds, req, a.handle, LEASE_WALK_AND_HANDLE, &lease);
	struct parent_part *parent = mds_parent_part_of(mds, &cred, m->path);
	struct size_part sp = { { 0 }, 0, &lease };

	mds_reply_attr_sized(req, &a, 1, NULL, &sp, parent);
	free(parent);
}

static void mds_op_CREATE(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__CreateRequest *m = (Tessera__CreateRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
	struct cap_msg cap;
	int rc, created = 0;

	mds_cred_of(mds, req, m->cred, &cred);
	rc = mds_create(mds->store, &cred, &(struct mds_create_req){
				.path = m->path,
				.mode = m->mode,
				.how = m->exclusive ? MDS_CREATE_EXCLUSIVE : MDS_CREATE_OR_OPEN,
				.strip_size = m->layout ? m->layout->strip_size : 0,
				.stripe_count = m->stripe_count,
				.default_strip = m->default_strip_size,
				.follow = m->nofollow ? MDS_NOFOLLOW : MDS_FOLLOW,
				.versioned = m->layout && m->layout->versioned ? MDS_VERSIONING_ON
									       : MDS_VERSIONING_INHERIT,
			}, &a, &created);
	if (rc) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	struct mds_lease_part lease;

	mds_lease_note(mds, req, a.handle, LEASE_WALK_AND_HANDLE, &lease);
	if (refuse_or_grant_open(mds, req, &cred, m->path, &a, m->open_rights,
				 created ? OPEN_CREATED : OPEN_EXISTING, &cap))
		return;
	struct parent_part *parent = created ? mds_parent_part_of(mds, &cred, m->path) : NULL;

	reply_open(mds, req, &a, &(struct open_answer){ created, &cap.cap, m->open_rights,
						       TP_WRITER_NOW, parent, &lease });
	free(parent);
}

/* What one more name costs the store on disk, for statfs's free inode
 * count: a directory entry and an attribute record (a file's layout of
 * up to a few handles) in LevelDB, with its log and compaction copies,
 * rounded up. An estimate, documented as such (docs/design.md). */
#define MDS_BYTES_PER_NAME 1024

/* STATFS: the names held and how many more the store's file system has
 * room for (there is no inode table; its free space is the limit). A
 * statvfs that fails, or a daemon without a store directory (the fuzz
 * harnesses'), leaves that 0 (no room known); the names still count. */
static int mds_space(struct mds *mds, Tessera__StatfsReply *rep)
{
	struct statvfs sv;
	int rc = mds_statfs(mds->store, &rep->files);

	if (!rc && mds->dir && !statvfs(mds->dir, &sv))
		rep->files_free = (uint64_t)sv.f_bavail * sv.f_frsize / MDS_BYTES_PER_NAME;
	return rc;
}

/* A stat's last name is missing from a directory its walk reached, and
 * the caller watches: answered `absent`, the walk's directories leased
 * (their entries, this name's absence among them). 0 when not so (the
 * caller answers ENOENT). */
static int reply_absent(struct mds *mds, struct srv_req *req)
{
	Tessera__AttrReply rep = TESSERA__ATTR_REPLY__INIT;
	struct mds_lease_part lease;

	if (!mds_store_walked_to_last(mds->store))
		return 0;
	mds_lease_note(mds, req, 0, LEASE_WALK, &lease);
	if (!lease.leased)
		return 0;
	rep.absent = 1;
	mds_lease_fill(&lease, &rep);
	srv_reply(req, &rep.base, NULL, 0);
	return 1;
}

/* LOOKUP: the attributes, and for a regular file a capability for the
 * open it asks for (a symbolic link it may not follow: ELOOP). */
static void reply_lookup(struct mds *mds, struct srv_req *req, const struct mds_cred *cred)
{
	Tessera__PathRequest *m = (Tessera__PathRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_lease_part lease;
	struct cap_msg cap;
	int rc;

	if ((rc = mds_lookup_follow(mds->store, cred, m->path,
				    m->nofollow ? MDS_NOFOLLOW : MDS_FOLLOW, &a))) {
		if (rc != -ENOENT || !m->absent_ok || m->open_rights || !reply_absent(mds, req))
			mds_reply_store_error(mds, req, rc);
		return;
	}
	mds_lease_note(mds, req, a.handle, LEASE_WALK_AND_HANDLE, &lease);
	if (a.type == MDS_SYMLINK && m->open_rights)
		srv_reply_error(req, -ELOOP, "open %s: is a symbolic link (O_NOFOLLOW)", m->path);
	else if (a.type != MDS_FILE)
		mds_reply_attr(req, &a, 0, NULL, &lease);
	else if (!refuse_or_grant_open(mds, req, cred, m->path, &a, m->open_rights,
				       OPEN_EXISTING, &cap))
		reply_open(mds, req, &a, &(struct open_answer){ 0, &cap.cap, m->open_rights,
			   m->writer_later ? TP_WRITER_LATER : TP_WRITER_NOW, NULL, &lease });
}

/* LOOKUP, UNLINK, RMDIR and STATFS name one path. */
static void reply_path_op(struct mds *mds, struct srv_req *req)
{
	Tessera__PathRequest *m = (Tessera__PathRequest *)req->msg;
	Tessera__StatfsReply statfs = TESSERA__STATFS_REPLY__INIT;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
		int rc = -EOPNOTSUPP;

	mds_cred_of(mds, req, m->cred, &cred);
	switch (req->frame.hdr.opcode) {
	case TP_OP_LOOKUP:
		reply_lookup(mds, req, &cred);
		return;
	case TP_OP_UNLINK:
		if (!(rc = mds_unlink(mds->store, &cred, m->path, &a))) {
			/* objects go with a regular file's last name only */
			int gone = a.type == MDS_FILE && a.nlink == 0;
			struct parent_part *parent = mds_parent_part_of(mds, &cred, m->path);

			if (gone)
				note_removed(mds, &a);
			reply_removed(req, &a, gone, parent);
			free(parent);
		}
		break;
	case TP_OP_RMDIR:
		if (!(rc = mds_rmdir(mds->store, &cred, m->path))) {
			struct parent_part *parent = mds_parent_part_of(mds, &cred, m->path);

			reply_removed(req, &a, 0, parent);
			free(parent);
		}
		break;
	case TP_OP_STATFS:
		if (!(rc = mds_space(mds, &statfs)))
			srv_reply(req, &statfs.base, NULL, 0);
		break;
	}
	if (rc)
		mds_reply_store_error(mds, req, rc);
}

#define MDS_PATH_OP(name) \
	static void mds_op_##name(void *ctx, struct srv_req *req) { reply_path_op(ctx, req); }
MDS_PATH_OP(LOOKUP)
MDS_PATH_OP(UNLINK)
MDS_PATH_OP(RMDIR)
MDS_PATH_OP(STATFS)
#undef MDS_PATH_OP

/* The attributes a setattr left, with a regular file's size if known
 * (mds_size.h; none to report: the client did not ask for it), so the
 * mount answers the kernel's question that follows without a LOOKUP. */
static void reply_setattr(struct mds *mds, struct srv_req *req, const struct mds_attr *a,
			  uint32_t valid, const struct mds_lease_part *lease)
{
	struct size_part sp = { { 0 }, 0, lease };

	if (valid & MDS_SET_SIZE)
		mds_sizes_forget(mds->sizes, a->handle);
	if (a->type == MDS_FILE && !a->layout.versioned) {
		mds_sizes_stat(mds->sizes, a->handle, tp_real_ns(), &sp.view);
		sp.view.token = 0;
	}
	mds_reply_attr_sized(req, a, 0, NULL, &sp, NULL);
}

static void mds_op_SETATTR(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__SetattrRequest *m = (Tessera__SetattrRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	a.mode = m->mode;
	a.uid = m->uid;
	a.gid = m->gid;
	a.atime_ns = m->atime_ns;
	a.mtime_ns = m->mtime_ns;
	a.size = m->size;
	if ((rc = mds_setattr_follow(mds->store, &cred, m->path,
				     m->nofollow ? MDS_NOFOLLOW : MDS_FOLLOW, m->valid, &a, &a))) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	struct mds_lease_part lease;

	mds_lease_note(mds, req, a.handle, LEASE_WALK_AND_HANDLE, &lease);
	reply_setattr(mds, req, &a, m->valid, &lease);
}

static void mds_op_SETLAYOUT(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__SetLayoutRequest *m = (Tessera__SetLayoutRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	rc = m->inherit ? mds_clear_dir_layout(mds->store, &cred, m->path) : 0;
	if (!rc && (m->strip_size || m->stripe_count))
		rc = mds_set_dir_layout(mds->store, &cred, m->path, m->strip_size, m->stripe_count);
	if (!rc && m->versioned)
		rc = mds_set_dir_versioned(mds->store, &cred, m->path);
	if (!rc)
		rc = mds_lookup(mds->store, &cred, m->path, &a);
	if (rc)
		mds_reply_store_error(mds, req, rc);
	else
		mds_reply_attr(req, &a, 0, NULL, NULL);
}

static void mds_op_RENAME(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__RenameRequest *m = (Tessera__RenameRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
	enum mds_rename_mode how;
	int rc, replaced = 0;

	mds_cred_of(mds, req, m->cred, &cred);
	switch (m->mode) {
	case TP_RENAME_REPLACE: how = MDS_RENAME_REPLACE; break;
	case TP_RENAME_NOREPLACE: how = MDS_RENAME_NOREPLACE; break;
	case TP_RENAME_EXCHANGE: how = MDS_RENAME_EXCHANGE; break;
	default:
		srv_reply_error(req, -EINVAL, "rename %s %s: unknown mode %u (0 replace, "
				"1 no-replace, 2 exchange)", m->from, m->to, m->mode);
		return;
	}
	if ((rc = mds_rename_how(mds->store, &cred, m->from, m->to, how, &a, &replaced))) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	if (replaced)
		note_removed(mds, &a);
	reply_removed(req, &a, replaced, NULL);
}

/* SYMLINK, LINK and MKNOD make a name; answered with its attributes. */
static void reply_link_op(struct mds *mds, struct srv_req *req)
{
	Tessera__LinkRequest *m = (Tessera__LinkRequest *)req->msg;
	struct mds_attr a = { 0 };
	struct mds_cred cred;
	int rc = -EOPNOTSUPP;

	mds_cred_of(mds, req, m->cred, &cred);
	switch (req->frame.hdr.opcode) {
	case TP_OP_SYMLINK:
		rc = mds_symlink(mds->store, &cred, m->path, m->target, &a);
		break;
	case TP_OP_LINK:
		rc = mds_link(mds->store, &cred, m->target, m->path, &a);
		break;
	case TP_OP_MKNOD:
		rc = mds_mknod(mds->store, &cred, m->path, m->type, m->mode, m->rdev, &a);
		break;
	}
	if (rc) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	struct parent_part *parent = mds_parent_part_of(mds, &cred, m->path);

	mds_reply_attr_sized(req, &a, 1, NULL, NULL, parent);
	free(parent);
}

#define MDS_LINK_OP(name) \
	static void mds_op_##name(void *ctx, struct srv_req *req) { reply_link_op(ctx, req); }
MDS_LINK_OP(SYMLINK)
MDS_LINK_OP(LINK)
MDS_LINK_OP(MKNOD)
#undef MDS_LINK_OP

static void mds_op_READLINK(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__PathRequest *m = (Tessera__PathRequest *)req->msg;
	Tessera__ReadlinkReply rep = TESSERA__READLINK_REPLY__INIT;
	char target[MDS_TARGET_MAX + 1];
	struct mds_cred cred;
	int rc;

	mds_cred_of(mds, req, m->cred, &cred);
	if ((rc = mds_readlink(mds->store, &cred, m->path, target, sizeof(target)))) {
		mds_reply_store_error(mds, req, rc);
		return;
	}
	rep.target = target;
	srv_reply(req, &rep.base, NULL, 0);
}

static void mds_op_READDIR(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__ReaddirRequest *m = (Tessera__ReaddirRequest *)req->msg;
	struct mds_cred cred;

	mds_cred_of(mds, req, m->cred, &cred);
	reply_readdir(mds, req, &cred);
}

/* Only root may list every file (the acting identity: cred_of), and
 * not from a host that is no admin host; a refusal is answered here. */
static int may_list_files(struct mds *mds, struct srv_req *req,
			  const Tessera__FileListRequest *m)
{
	struct mds_cred cred;

	mds_cred_of(mds, req, m->cred, &cred);
	if (req->ident.foreign_root) {
		mds_reply_not_admin_host(req, "list files");
		return 0;
	}
	if (cred.uid != 0) {
		srv_reply_error(req, -EPERM, "list files: only root may list every file");
		return 0;
	}
	return 1;
}

/* One entry of a FILE_LIST reply: a purge intent (in) or a file (fa),
 * with its layout and objects (in msg, which the entry points into). */
static void file_entry(Tessera__FileEntry *ent, struct attr_msg *msg,
		       const struct mds_intent *in, const struct mds_attr *fa)
{
	struct mds_layout l = { 0 };

	tessera__file_entry__init(ent);
	if (in) {
		l.count = in->count;
		memcpy(l.servers, in->servers, l.count * sizeof(*l.servers));
		memcpy(l.handles, in->handles, l.count * sizeof(*l.handles));
		ent->handle = in->file;
	} else {
		l = fa->layout;
		ent->handle = fa->handle;
		ent->size = fa->size;
	}
	mds_layout_msg(&l, msg, LAYOUT_WITH_OBJECTS);
	ent->layout = &msg->layout;
}

/* fsck: the files (with layouts) or the purge intents, a page at a time.
 * Only root may list (the acting identity: cred_of). */
static void mds_op_FILE_LIST(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__FileListRequest *m = (Tessera__FileListRequest *)req->msg;
	Tessera__FileListReply rep = TESSERA__FILE_LIST_REPLY__INIT;
	uint32_t max = page_entries(m->max_entries, MDS_FILE_LIST_MAX);
	struct mds_attr *files = NULL;
	struct mds_intent *intents = NULL;
	struct attr_msg *msgs = calloc(max, sizeof(*msgs));
	Tessera__FileEntry *ents = calloc(max, sizeof(*ents));
	Tessera__FileEntry **ptrs = calloc(max, sizeof(*ptrs));
	uint32_t n = 0;
	int eof = 0, rc;
	const uint64_t *after = m->resume ? &m->after : NULL;

	if (!may_list_files(mds, req, m))
		goto out;
	if (m->intents)
		intents = calloc(max, sizeof(*intents));
	else
		files = calloc(max, sizeof(*files));
	if (!msgs || !ents || !ptrs || (!intents && !files)) {
		srv_reply_error(req, -ENOMEM, "list files: no memory");
		goto out;
	}
	/* rep.horizon stays 0: handles are random, so none orders files by
	 * age (fsck lists the files again after the objects instead). */
	if (intents)
		rc = mds_intent_list(mds->store, after, max, intents, &n, &eof);
	else
		rc = mds_file_list(mds->store, after, max, files, &n, &eof);
	if (rc) {
		mds_reply_store_error(mds, req, rc);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		file_entry(&ents[i], &msgs[i], intents ? &intents[i] : NULL, files ? &files[i] : NULL);
		ptrs[i] = &ents[i];
	}
	rep.n_files = n;
	rep.files = ptrs;
	rep.eof = eof;
	srv_reply(req, &rep.base, NULL, 0);
out:
	free(files);
	free(intents);
	free(msgs);
	free(ents);
	free(ptrs);
}

static void purge_log(void *arg, const char *line)
{
	struct mds *mds = arg;

	srv_log(mds->srv, "%s", line);
}

/* Ticks the purger and the merger may wait for a moment when every change
 * is durable before the tick waits for the commits in flight. */
#define MDS_DURABLE_TICKS 10

/* The purger's and the merger's rounds. They act on the store's intents
 * and versions outside any reply: only once every change they may see is
 * durable. A commit that syncs lets them run when it is done
 * (mds_commit_done), unless later turns' commits follow; after
 * MDS_DURABLE_TICKS ticks without such a moment (a steady load), the tick
 * waits for the commits in flight. */
static void background_rounds(struct mds *mds)
{
	if (mds->srv && !srv_all_durable(mds->srv) && ++mds->undurable_ticks < MDS_DURABLE_TICKS)
		return;
	mds->undurable_ticks = 0;
	if (mds->srv && srv_commit_wait(mds->srv))
		return; /* the commit failed: the daemon stops */
	mds_purge_tick(mds->purge, purge_log, mds);
	mds_vmerge_tick(mds->vmerge, purge_log, mds);
}

/* The daemon core's tick: the background rounds; and attribute changes
 * written since the last commit get one now (the turn that follows
 * commits: held replies are what a commit waits for). */
static void mds_tick(void *ctx)
{
	struct mds *mds = ctx;

	background_rounds(mds);
	mds_watch_tick(mds);
	if (mds->srv && mds_store_needs_commit(mds->store))
		srv_hold_replies(mds->srv);
}

/* META_SYNC (a client's fsync): every change acknowledged so far is
 * durable before the reply leaves (the turn's commit). */
static void mds_op_META_SYNC(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;
	Tessera__EmptyReply rep = TESSERA__EMPTY_REPLY__INIT;

	if (mds_store_needs_commit(mds->store))
		srv_hold_replies(mds->srv);
	srv_reply(req, &rep.base, NULL, 0);
}

/* The store wrote a change unsynced: hold this turn's replies. */
static void mds_pending(void *arg)
{
	struct mds *mds = arg;

	srv_hold_replies(mds->srv);
}

/* A session ended (srv_role.session_end): the files whose counted writers
 * it held are counted no more (mds_sizes_session_end), so a client that
 * died with files open for writing leaves them unknown for a
 * capability's lifetime, not until the daemon restarts; its version ID#s
 * and reads in progress end (the merger's next round for each file whose
 * ID#s ended discards their records never committed, and merges no longer
 * wait for its reads). */
static void mds_ids_dead(void *arg, uint64_t file)
{
	mds_vmerge_dead(arg, file);
}

static void mds_session_end(void *ctx, uint64_t session)
{
	struct mds *mds = ctx;
	uint32_t n = mds_sizes_session_end(mds->sizes, session, tp_real_ns());
	uint32_t nv = mds_versions_session_end(mds->versions, session, mds_ids_dead, mds->vmerge);

	mds_leases_session_end(mds->leases, session);
	if (mds->srv)
		srv_pump_replies(mds->srv);
	if (n && mds->srv)
		srv_debug(mds->srv, "session %016llx ended holding %u files open for writing:"
			  " their writers are counted no more", (unsigned long long)session, n);
	if (nv && mds->srv)
		srv_debug(mds->srv, "session %016llx ended holding %u version ID#s and reads:"
			  " ended with it", (unsigned long long)session, nv);
}

/* End of a turn that changed the store: one synced write for all its
 * requests (and those of the turns that end while it syncs), on the
 * core's commit thread (srv_commit_ops): the daemon goes on serving
 * meanwhile, and every reply made since waits for it. */
static void mds_commit_begin(void *ctx)
{
	struct mds *mds = ctx;

	mds_store_commit_begin(mds->store);
}

/* On the commit thread: only the store's files (mds_store_commit_sync). */
static int mds_commit_sync(void *ctx)
{
	struct mds *mds = ctx;

	return mds_store_commit_sync(mds->store, mds->commit_err, sizeof(mds->commit_err));
}

/* The sync is done: (the removals being durable now) the purger may
 * start on files removed by the turns it covers before the next tick when
 * a whole REMOVE's worth waits (one per removed file cost a daemon 4
 * REMOVEs per unlink: a serial unlink ran at half the rate), and the
 * merger goes on with its rounds if they committed versions. The purger's
 * round only sends what was noted; it reads no intent from the store
 * unless a slot rescans (mds_purge.c). */
static int mds_commit_done(void *ctx, int rc)
{
	struct mds *mds = ctx;

	if (rc) {
		srv_error(mds->srv, "%s", mds->commit_err);
		return rc;
	}
	mds_store_commit_end(mds->store);
	/* A later turn's changes may still sync: then the next tick. */
	if (!srv_all_durable(mds->srv))
		return 0;
	if (mds_purge_batch_ready(mds->purge))
		mds_purge_tick(mds->purge, purge_log, mds);
	/* While versions are committed, the merger takes its replies and
	 * starts the next round at each turn rather than each tick: a burst
	 * gets less far ahead of its merges. */
	if (mds->vmerge_noted) {
		mds->vmerge_noted = 0;
		mds_vmerge_tick(mds->vmerge, purge_log, mds);
	}
	return 0;
}

static const srv_handler mds_handlers[TP_OP_LIMIT] = { TP_OPCODES(SRV_MDS_ENTRY) };

/* Every request goes through here: while its handler runs, the store's
 * changes are its session's (mds_changed), whose own leases they leave. */
static void mds_dispatch(void *ctx, struct srv_req *req)
{
	struct mds *mds = ctx;

	mds->acting = req->ident.session;
	mds_handlers[req->frame.hdr.opcode](ctx, req);
	mds->acting = 0;
}

static void dispatch_table(srv_handler out[TP_OP_LIMIT])
{
	for (unsigned op = 0; op < TP_OP_LIMIT; op++)
		out[op] = mds_handlers[op] ? mds_dispatch : NULL;
}

/* The store changed a handle's attributes or entries: leases of it held
 * by anyone but the acting session are broken (mds_lease.h). */
static void mds_changed(void *arg, uint64_t handle)
{
	struct mds *mds = arg;

	mds_leases_break(mds->leases, handle, mds->acting);
}
static const struct srv_commit_ops mds_commit_ops = { mds_commit_begin, mds_commit_sync,
						      mds_commit_done };

/* The table of known sizes (mds_size.h). A namespace that holds files
 * may have writers this daemon did not count (it restarted): no size is
 * taken for a capability's lifetime. A new one has none, nor any file.
 * NULL without memory for it: every size unknown, as before the table. */
static struct mds_sizes *sizes_table(struct mds *mds, const struct tp_config *cfg)
{
	uint64_t names = UINT64_MAX;
	int64_t quiet = (int64_t)cfg->cap_lifetime_ms * 1000000;

	if (!mds_statfs(mds->store, &names) && names <= 1)
		quiet = 0;
	return mds_sizes_new(MDS_SIZE_ENTRIES, quiet, tp_real_ns());
}

/* The version server's tables (mds_version.h): a file's unmerged commits
 * travel in one reply, so they are bounded to fit a frame with room for
 * the rest; a merge grant holds as long as a capability. */
#define MDS_VERSION_REPLY_ROOM (64 * 1024)

static struct mds_versions *versions_table(struct mds *mds, const struct tp_config *cfg)
{
	return mds_versions_new(mds->store, &mds->key,
				tp_config_max_frame(cfg) - MDS_VERSION_REPLY_ROOM,
				(int64_t)cfg->cap_lifetime_ms * 1000000);
}

/* The daemon's settings from its configuration, and its capability key. */
static int mds_configure(struct mds *mds, const struct tp_config *cfg, const struct srv_cmdline *cl,
			 char *err, size_t errlen)
{
	int rc;

	if ((rc = srv_check_daemon_uid(cfg, err, errlen)))
		return rc;
	mds->n_ios = cfg->n_ios;
	mds->root_squash = cfg->root_squash != 0;
	mds->squash_uid = cfg->squash_uid;
	mds->squash_gids[0] = cfg->squash_gid;
	mds->cap_lifetime_ms = cfg->cap_lifetime_ms;
	mds->dir = cl->dir;
	return cap_key_load(cfg->key_file, &mds->key, err, errlen);
}

/* The namespace (claimed for this daemon; LevelDB makes it in a new
 * directory by itself) and the purger over it. *claimed: a warning
 * about the claim to log once the daemon can, or NULL. */
static int mds_open_store(struct mds *mds, const struct tp_config *cfg,
			  const struct srv_cmdline *cl, char **claimed, char *err, size_t errlen)
{
	struct srv_store_owner me = { SRV_STORE_METADATA, cl->index, cfg->fs_id };
	enum srv_store_dir how;
	char why[400];
	int rc;

	*claimed = NULL;
	if ((rc = srv_store_claim(cl->dir, &me, &how, claimed, err, errlen)))
		return rc;
	if ((rc = mds_store_open(cl->dir, cl->index, cfg->n_ios, &mds->store, err, errlen)))
		goto fail;
	if ((rc = mds_purge_create(cfg, mds->store, &mds->key, &mds->purge, why, sizeof(why)))) {
		snprintf(err, errlen, "purger: %s", why);
		mds_store_close(mds->store);
		goto fail;
	}
	return 0;
fail:
	free(*claimed);
	*claimed = NULL;
	return rc;
}

/* After srv_create: what needs the daemon's context, then its run. */
static void mds_serve(struct mds *mds, struct srv *srv, const struct tp_config *cfg,
		      const struct srv_cmdline *cl, char *claimed)
{
	char why[300];
	int rc;

	mds->srv = srv;
	mds_store_defer_sync(mds->store, mds_pending, mds);
	/* A quarter of a lease: the next answer (a tick late at worst) comes
	 * well before the lease it renews runs out (mds_watch.c). */
	mds->watch_park_ms = cfg->name_lease_ms < cfg->timeout_ms ? cfg->name_lease_ms / 4
								    : cfg->timeout_ms / 4;
	if (cfg->name_lease_ms) {
		mds->leases = mds_leases_new(cfg->name_lease_ms, MDS_LEASE_PER_SESSION,
					     mds_watch_wake, mds);
		if (!mds->leases)
			srv_warn(srv, "no memory for name leases: every client stat asks");
		else
			mds_store_on_change(mds->store, mds_changed, mds);
	}
	mds->sizes = sizes_table(mds, cfg);
	mds->versions = versions_table(mds, cfg);
	if (!mds->versions)
		srv_warn(srv, "no memory for the version server's tables: versioned files"
			 " refuse their versions (ENOMEM)");
	else if (mds_vmerge_create(cfg, mds->store, mds->versions, &mds->key, &mds->vmerge, why,
				   sizeof(why)))
		srv_warn(srv, "%s: versioned files merge only when a client syncs or closes"
			 " them", why);
	if (!mds->sizes)
		srv_warn(srv, "no memory for the table of known sizes: every stat asks the"
			 " storage daemons");
	if (claimed)
		srv_warn(srv, "%s", claimed);
	if ((rc = srv_write_pidfile(cl->pidfile)))
		fprintf(stderr, "tessera-mds: pid file %s: %s\n", cl->pidfile, strerror(-rc));
	srv_run(srv);
}

int main(int argc, char **argv)
{
	struct srv_cmdline cl;
	enum srv_cmdline_result parsed;
	struct tp_config cfg;
	struct mds mds = { 0 };
	struct srv *srv = NULL;
	char err[512], *claimed = NULL;

	if ((parsed = srv_parse_cmdline(argc, argv, "tessera-mds", NULL, &cl)) != SRV_CMDLINE_RUN)
		return srv_cmdline_exit_status(parsed);
	if (tp_config_load(cl.config, &cfg, err, sizeof(err)))
		goto fail;
	if (cl.check_only) {
		printf("%s: valid\n", cl.config);
		return 0;
	}
	if (mds_configure(&mds, &cfg, &cl, err, sizeof(err)) ||
	    mds_open_store(&mds, &cfg, &cl, &claimed, err, sizeof(err)))
		goto fail;

	srv_handler handlers[TP_OP_LIMIT];

	dispatch_table(handlers);
	struct srv_role role = { "mds", cl.index, handlers, mds_tick, &mds, NULL,
				 mds_session_end, &mds_commit_ops, mds_reply_need, mds_acks_floor };
	struct srv_opts so = { &cfg, cfg.mds.host, cfg.mds.port, 32, NULL, &cl.log };

	if (srv_create(&so, &role, &srv, err, sizeof(err))) {
		fprintf(stderr, "tessera-mds: listen on %s:%s: %s\n", so.host, so.port, err);
		free(claimed);
		mds_purge_destroy(mds.purge);
		mds_store_close(mds.store);
		return 1;
	}
	mds_serve(&mds, srv, &cfg, &cl, claimed);
	free(claimed);
	srv_destroy(srv);
	mds_vmerge_destroy(mds.vmerge);
	mds_leases_free(mds.leases);
	mds_versions_free(mds.versions);
	mds_sizes_free(mds.sizes);
	mds_purge_destroy(mds.purge);
	mds_store_close(mds.store);
	return 0;
fail:
	fprintf(stderr, "tessera-mds: %s\n", err);
	return 1;
}
