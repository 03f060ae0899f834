/* meta.c - namespace calls: each is one request to the metadata daemon,
 * plus storage-object work (io.c) where a file's data is affected, except
 * what the name cache answers (a stat or a missing name: mcache.c). Opening
 * and closing a file, and truncate, are open.c's, on the shared calls
 * below (tc_meta_*). io.c never calls back here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client_int.h"

int tessera_map_path(tessera_fs *fs, const char *path, char *out, size_t len)
{
	const char *mp = fs->cfg.mount_point;
	size_t ml = strlen(mp);

	if (!path || path[0] != '/')
		return tc_fail(fs, -EINVAL, "path '%s': not absolute", path ? path : "(null)");
	/* "/mnt/tessera/a" -> "/a"; "/mnt/tessera" -> "/" */
	if (ml > 1 && !strncmp(path, mp, ml) && (path[ml] == '/' || path[ml] == '\0'))
		path += ml;
	if (!*path)
		path = "/";
	if (strlen(path) >= len)
		return tc_fail(fs, -ENAMETOOLONG, "path '%s': too long", path);
	strcpy(out, path);
	return 0;
}

void tc_layout_from_msg(const Tessera__Layout *m, struct tessera_layout *out)
{
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	out->strip_size = m->strip_size;
	out->kind = m->versioned ? TESSERA_LAYOUT_VERSIONED : TESSERA_LAYOUT_PLAIN;
	out->count = (uint32_t)(m->n_servers < TESSERA_MAX_STRIPE ? m->n_servers : TESSERA_MAX_STRIPE);
	/* A directory's default carries servers (its count) but no handles. */
	if (m->n_handles && m->n_handles < out->count)
		out->count = (uint32_t)m->n_handles;
	for (uint32_t i = 0; i < out->count; i++) {
		out->servers[i] = m->servers[i];
		out->handles[i] = i < m->n_handles ? m->handles[i] : 0;
	}
}

static struct timespec ts_of(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

	return ts;
}

/* S_IF* of a FileType (0 for one this library does not know). */
static uint32_t type_bits(uint32_t type)
{
	switch (type) {
	case TESSERA__FILE_TYPE__FILE_REGULAR: return S_IFREG;
	case TESSERA__FILE_TYPE__FILE_DIRECTORY: return S_IFDIR;
	case TESSERA__FILE_TYPE__FILE_SYMLINK: return S_IFLNK;
	case TESSERA__FILE_TYPE__FILE_FIFO: return S_IFIFO;
	case TESSERA__FILE_TYPE__FILE_SOCKET: return S_IFSOCK;
	case TESSERA__FILE_TYPE__FILE_CHARDEV: return S_IFCHR;
	case TESSERA__FILE_TYPE__FILE_BLOCKDEV: return S_IFBLK;
	default: return 0;
	}
}

void tc_stat_from_attr(const Tessera__Attr *a, struct tessera_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->handle = a->handle;
	st->mode = type_bits(a->type) | (a->mode & 07777);
	st->uid = a->uid;
	st->gid = a->gid;
	st->nlink = a->nlink;
	st->rdev = a->rdev;
	if (a->type == TESSERA__FILE_TYPE__FILE_DIRECTORY)
		st->size = a->nentries;
	else if (a->type == TESSERA__FILE_TYPE__FILE_SYMLINK)
		st->size = a->size;   /* the target's length */
	st->atime = ts_of(a->atime_ns);
	st->mtime = ts_of(a->mtime_ns);
	st->ctime = ts_of(a->ctime_ns);
}

void tc_stat_data_time(const Tessera__Attr *a, int64_t data_mtime_ns, struct tessera_stat *st)
{
	if (data_mtime_ns > a->mtime_set_ns)
		st->mtime = ts_of(data_mtime_ns);
	if (data_mtime_ns > a->ctime_ns)
		st->ctime = ts_of(data_mtime_ns);
}

/* Whether a request changes what `path` names or its directory: what
 * this client holds of them under name leases goes (tc_mcache_changed). */
static int changes_names(unsigned opcode)
{
	switch (opcode) {
	case TP_OP_RENAME:
	case TP_OP_SETLAYOUT: case TP_OP_SYMLINK: case TP_OP_LINK: case TP_OP_MKNOD:
		return 1;
	default:
		return 0;
	}
}

/* The common shape of a path request: map, send, check. `what` is "mkdir"
 * etc.; on success *out holds the reply (caller frees with tc_req_free). */
static int path_call(tessera_fs *fs, unsigned opcode, ProtobufCMessage *msg,
		     const char *what, const char *path, struct tc_req **out)
{
	char label[4200];
	struct tc_req *r = tc_req_new(fs, TC_MDS, opcode, msg, NULL, 0);
	int rc;

	snprintf(label, sizeof(label), "%s %s", what, path);
	rc = tc_call(fs, r, label);
	if (changes_names(opcode))
		tc_mcache_changed(fs, path, MC_NAME); /* whatever the outcome: it may be made */
	if (rc) {
		tc_req_free(fs, r);
		return rc;
	}
	*out = r;
	return 0;
}

/* path_call for requests whose reply carries nothing the caller needs. */
static int plain_call(tessera_fs *fs, unsigned opcode, ProtobufCMessage *msg,
		      const char *what, const char *path)
{
	struct tc_req *r;
	int rc = path_call(fs, opcode, msg, what, path, &r);

	if (!rc)
		tc_req_free(fs, r);
	return rc;
}

#define MAP(fs, in, out)                                         \
	char out[TP_PATH_MAX + 1];                               \
	do {                                                     \
		int map_rc = tessera_map_path(fs, in, out, sizeof(out)); \
		if (map_rc)                                      \
			return map_rc;                           \
	} while (0)

/* A stat of path whose last name the metadata daemon (now, or under a
 * name lease) says is missing. */
static int missing(tessera_fs *fs, const char *path)
{
	char server[200];

	tc_server_name(fs, TC_MDS, server, sizeof(server));
	return tc_fail(fs, -ENOENT, "stat %s: no such file or directory (%s)", path, server);
}

/* LOOKUP; open_rights (TP_CAP_*) asks for a capability to open the file
 * with (the metadata daemon checks the mode: EACCES), 0 for a stat one;
 * `writer`: when an open for writing is counted as a writer. `last`:
 * follow a symbolic link in the last component or not. */
int tc_meta_lookup_as(tessera_fs *fs, const char *path, uint32_t open_rights,
		      enum tp_open_writer writer, enum tessera_follow last,
		      Tessera__AttrReply **out)
{
	Tessera__PathRequest m = TESSERA__PATH_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	uint64_t mark = tc_mcache_mark(fs);
	struct tc_req *r;
	int rc;

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = (char *)path;
	m.open_rights = open_rights;
	m.writer_later = writer == TP_WRITER_LATER;
	m.nofollow = last == TESSERA_NOFOLLOW;
	m.absent_ok = !open_rights && fs->mcache;
	rc = path_call(fs, TP_OP_LOOKUP, &m.base, open_rights ? "open" : "stat", path, &r);
	if (rc)
		return rc;
	*out = (Tessera__AttrReply *)r->reply;
	r->reply = NULL;
	tc_req_free(fs, r);
	if ((*out)->absent && !(*out)->attr) {
		if ((*out)->leased)
			tc_mcache_absent(fs, mark, path, (*out)->walk, (*out)->n_walk);
		protobuf_c_message_free_unpacked(&(*out)->base, NULL);
		return missing(fs, path);
	}
	if (!(*out)->attr) {
		protobuf_c_message_free_unpacked(&(*out)->base, NULL);
		return tc_fail(fs, -EPROTO, "stat %s: reply without attributes", path);
	}
	return 0;
}

int tc_meta_lookup(tessera_fs *fs, const char *path, uint32_t open_rights,
		   enum tessera_follow last, Tessera__AttrReply **out)
{
	return tc_meta_lookup_as(fs, path, open_rights, TP_WRITER_NOW, last, out);
}

/* -------------------------------------------------------------- sizes
 *
 * The metadata daemon knows the size of a file no one has open for
 * writing once a stat told it what the storage daemons answered
 * (docs/design.md, "Sizes kept by the metadata daemon"). */

/* The size, blocks and data time the metadata daemon's stat reply gave;
 * 0 if it gave none (the storage daemons must be asked). */
int tc_meta_size_from_reply(const Tessera__AttrReply *rep, struct tessera_stat *st)
{
	if (!rep->size_known)
		return 0;
	st->size = rep->known_size;
	st->blocks = rep->known_blocks;
	tc_stat_data_time(rep->attr, rep->known_data_mtime_ns, st);
	return 1;
}

void tessera_dir_watch(tessera_fs *fs, tessera_dir_watch_fn fn, void *arg)
{
	fs->dir_watch = fn;
	fs->dir_watch_arg = arg;
}

/* A change of upath's directory's entries was answered with that
 * directory's attributes (parent; NULL: none): tell the watcher. */
void tc_meta_dir_changed(tessera_fs *fs, const char *upath, const Tessera__Attr *parent)
{
	char dir[TP_PATH_MAX + 1];
	struct tessera_stat st;
	size_t n;

	if (!parent || !fs->dir_watch || !upath || (n = strlen(upath)) > TP_PATH_MAX)
		return;
	n = tp_path_dir_len(upath, n);
	if (n == 0)
		return;   /* (a relative name: no directory to name) */
	memcpy(dir, upath, n);
	dir[n] = '\0';
	tc_stat_from_attr(parent, &st);
	fs->dir_watch(dir, &st, fs->dir_watch_arg);
}

/* A reply's attributes, with the size where it has it (*sized). */
static int attrs_of_reply(tessera_fs *fs, const char *path, const Tessera__AttrReply *rep,
			  struct tessera_stat *st, int *sized)
{
	if (!rep || !rep->attr)
		return tc_fail(fs, -EPROTO, "setattr %s: reply without attributes", path);
	tc_stat_from_attr(rep->attr, st); /* (a regular file's size 0) */
	*sized = rep->attr->type != TESSERA__FILE_TYPE__FILE_REGULAR || tc_meta_size_from_reply(rep, st);
	return 0;
}

/* Tell the metadata daemon what the storage daemons answered a stat whose
 * reply asked for it (size_token). Its answer changes nothing here: a
 * report it refuses (something changed since) only leaves the size
 * unknown, so the caller's error message is kept. */
void tc_meta_size_report(tessera_fs *fs, const Tessera__AttrReply *rep, const char *path,
			 const struct tessera_stat *st, int64_t data_ns)
{
	Tessera__SizeReportRequest m = TESSERA__SIZE_REPORT_REQUEST__INIT;
	char keep[sizeof(tc_thread(fs)->errmsg)], label[4200];
	uint32_t gids[TESSERA_MAX_GROUPS];
	Tessera__Cred cred;
	struct tc_req *r;

	if (!rep->size_token)
		return;
	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.file = rep->attr->handle;
	m.size_token = rep->size_token;
	m.size = st->size;
	m.blocks = st->blocks;
	m.data_mtime_ns = data_ns;
	snprintf(keep, sizeof(keep), "%s", tc_thread(fs)->errmsg);
	snprintf(label, sizeof(label), "size report of %s", path);
	r = tc_req_new(fs, TC_MDS, TP_OP_SIZE_REPORT, &m.base, NULL, 0);
	(void)tc_call(fs, r, label);
	tc_req_free(fs, r);
	snprintf(tc_thread(fs)->errmsg, sizeof(keep), "%s", keep);
}

/* The metadata daemon's attributes, then a regular file's size from its
 * objects: *size_rc gets that second step's outcome. */
static int stat_steps(tessera_fs *fs, const char *upath, enum tessera_follow last,
		      struct tessera_stat *st, int *size_rc)
{
	Tessera__AttrReply *rep;
	struct tessera_layout layout;
	uint64_t mark;
	int rc, sized;
	MAP(fs, upath, path);

	*size_rc = 0;
	switch (tc_mcache_stat(fs, path, last, st)) {
	case MC_HELD:
		return 0;
	case MC_HELD_ABSENT:
		return missing(fs, path);
	case MC_NOT_HELD:
		break;
	}
	mark = tc_mcache_mark(fs);
	rc = tc_meta_lookup(fs, path, 0, last, &rep);
	if (rc)
		return rc;
	tc_stat_from_attr(rep->attr, st);
	sized = rep->attr->type != TESSERA__FILE_TYPE__FILE_REGULAR || tc_meta_size_from_reply(rep, st);
	if (rep->leased)
		tc_mcache_learn(fs, mark, MC_LEARN_LOOKUP,
				&(struct tc_mc_reply){ path, rep->walk, rep->n_walk, rep->attr->handle,
						       st->mode, sized ? st : NULL, NULL });
	if (!sized) {
		int64_t data_ns;

		tc_layout_from_msg(rep->attr->layout, &layout);
		*size_rc = tc_file_size(fs, &layout, rep->cap, path, &st->size, &data_ns,
					&st->blocks);
		if (!*size_rc) {
			tc_stat_data_time(rep->attr, data_ns, st);
			tc_meta_size_report(fs, rep, path, st, data_ns);
		}
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int tessera_stat(tessera_fs *fs, const char *upath, struct tessera_stat *st)
{
	int size_rc, rc = stat_steps(fs, upath, fs->follow, st, &size_rc);

	return rc ? rc : size_rc;
}

int tessera_lstat(tessera_fs *fs, const char *upath, struct tessera_stat *st)
{
	int size_rc, rc = stat_steps(fs, upath, TESSERA_NOFOLLOW, st, &size_rc);

	return rc ? rc : size_rc;
}

void tessera_follow_links(tessera_fs *fs, enum tessera_follow last)
{
	fs->follow = last;
}

int tessera_stat_held(tessera_fs *fs, const char *upath, struct tessera_stat *st)
{
	MAP(fs, upath, path);

	return tc_mcache_stat(fs, path, fs->follow, st) == MC_HELD ? 0 : -ENODATA;
}

void tessera_unlink_pending(tessera_fs *fs, const char *upath)
{
	char path[TP_PATH_MAX + 1];

	if (!tessera_map_path(fs, upath, path, sizeof(path)))
		tc_mcache_unlink_pending(fs, path);
}

int tessera_stat_partial(tessera_fs *fs, const char *upath, struct tessera_stat *st,
			 int *size_status)
{
	int rc = stat_steps(fs, upath, fs->follow, st, size_status);

	if (!rc && *size_status)
		st->size = 0;
	return rc;
}

int tessera_get_layout(tessera_fs *fs, const char *upath, struct tessera_layout *layout)
{
	Tessera__AttrReply *rep;
	int rc;
	MAP(fs, upath, path);

	rc = tc_meta_lookup(fs, path, 0, fs->follow, &rep);
	if (rc)
		return rc;
	tc_layout_from_msg(rep->attr->has_layout || rep->attr->type == TESSERA__FILE_TYPE__FILE_REGULAR ? rep->attr->layout : NULL,
			   layout);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

/* Name leases after this client made a directory: learnt, with its
 * directory's attributes as the mkdir left them (an empty directory, its
 * names all known to this client from now on), or dropped. */
static void made_names(tessera_fs *fs, uint64_t mark, const char *path,
		       const Tessera__AttrReply *rep)
{
	struct tessera_stat st, dir;

	if (!rep->leased || !rep->attr) {
		tc_mcache_changed(fs, path, MC_NAME);
		return;
	}
	tc_stat_from_attr(rep->attr, &st);
	if (rep->parent)
		tc_stat_from_attr(rep->parent, &dir);
	tc_mcache_learn(fs, mark, MC_LEARN_OWN_NAME,
			&(struct tc_mc_reply){ path, rep->walk, rep->n_walk, rep->attr->handle,
					       S_IFDIR, &st, rep->parent ? &dir : NULL });
}

int tessera_mkdir(tessera_fs *fs, const char *upath, mode_t mode)
{
	Tessera__MkdirRequest m = TESSERA__MKDIR_REQUEST__INIT;
	const Tessera__AttrReply *rep;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_req *r;
	uint64_t mark;
	int rc;
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.mode = mode & 07777;
	mark = tc_mcache_mark(fs);
	rc = path_call(fs, TP_OP_MKDIR, &m.base, "mkdir", path, &r);
	if (rc) {
		tc_mcache_changed(fs, path, MC_NAME); /* it may have been made */
		return rc;
	}
	rep = (const Tessera__AttrReply *)r->reply;
	tc_meta_dir_changed(fs, upath, rep->parent);
	made_names(fs, mark, path, rep);
	tc_req_free(fs, r);
	return 0;
}

/* After the metadata daemon dropped a file, remove its storage objects
 * if the reply grants it (a remove capability). Today's metadata daemon
 * grants none: its purger removes the objects, several files' per request,
 * and a removal here made every storage daemon unlink each object twice
 * (issue 28). An older daemon granted one, so that the space was free when
 * the call returned. Either way the daemon recorded a purge intent with
 * the name's removal, so a failure here does not fail the unlink or
 * rename, whose name change is made and durable. */
static int drop_objects(tessera_fs *fs, const Tessera__RemoveReply *rep, const char *path)
{
	struct tessera_layout layout;

	if (!rep->removed_file || !rep->layout)
		return 0;
	tc_layout_from_msg(rep->layout, &layout);
	if (rep->cap)
		(void)tc_remove_objects(fs, &layout, rep->cap, path);
	return 0;
}

static int remove_call(tessera_fs *fs, unsigned opcode, const char *what, const char *upath)
{
	Tessera__PathRequest m = TESSERA__PATH_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	const Tessera__RemoveReply *rep;
	struct tessera_stat dir;
	struct tc_req *r;
	uint64_t mark = tc_mcache_mark(fs);
	int rc;
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	rc = path_call(fs, opcode, &m.base, what, path, &r);
	if (rc) {
		tc_mcache_changed(fs, path, MC_NAME); /* it may be gone */
		return rc;
	}
	rep = (const Tessera__RemoveReply *)r->reply;
	/* the directory as the remove left it, which the daemon did not
	 * break this client's lease of (`rm -rf` stats it before each) */
	if (rep->parent)
		tc_stat_from_attr(rep->parent, &dir);
	tc_mcache_removed(fs, mark, path, rep->parent ? &dir : NULL);
	tc_meta_dir_changed(fs, upath, rep->parent);
	rc = drop_objects(fs, (Tessera__RemoveReply *)r->reply, path);
	tc_req_free(fs, r);
	return rc;
}

int tessera_unlink(tessera_fs *fs, const char *path)
{
	return remove_call(fs, TP_OP_UNLINK, "unlink", path);
}

int tessera_rmdir(tessera_fs *fs, const char *path)
{
	return remove_call(fs, TP_OP_RMDIR, "rmdir", path);
}

int tessera_rename(tessera_fs *fs, const char *from, const char *to)
{
	return tessera_rename_with(fs, from, to, TESSERA_RENAME_REPLACE);
}

_Static_assert((int)TESSERA_RENAME_REPLACE == TP_RENAME_REPLACE &&
	       (int)TESSERA_RENAME_NOREPLACE == TP_RENAME_NOREPLACE &&
	       (int)TESSERA_RENAME_EXCHANGE == TP_RENAME_EXCHANGE,
	       "the library's rename modes are the wire's");

int tessera_rename_with(tessera_fs *fs, const char *ufrom, const char *uto,
			enum tessera_rename_mode mode)
{
	Tessera__RenameRequest m = TESSERA__RENAME_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_req *r;
	int rc;
	MAP(fs, ufrom, from);
	MAP(fs, uto, to);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.from = from;
	m.to = to;
	/* an unknown mode goes as it is: the metadata daemon refuses it */
	m.mode = (uint32_t)mode;
	rc = path_call(fs, TP_OP_RENAME, &m.base, "rename", from, &r);
	tc_mcache_changed(fs, to, MC_NAME);
	if (rc)
		return rc;
	rc = drop_objects(fs, (Tessera__RemoveReply *)r->reply, to);
	tc_req_free(fs, r);
	return rc;
}

/* Name leases after this client's setattr: the attributes it left, when
 * the reply leased them with the size (the writeback cache's mtime after
 * a close, say: the stat that follows asks nobody); else dropped. */
static void setattr_names(tessera_fs *fs, uint64_t mark, const char *path,
			  const Tessera__AttrReply *rep)
{
	struct tessera_stat st;
	int sized;

	if (!rep->leased || attrs_of_reply(fs, path, rep, &st, &sized) || !sized) {
		tc_mcache_changed(fs, path, MC_ATTRS);
		return;
	}
	tc_mcache_learn(fs, mark, MC_LEARN_OWN_ATTRS,
			&(struct tc_mc_reply){ path, rep->walk, rep->n_walk, rep->attr->handle,
					       st.mode, &st, NULL });
}

/* SETATTR; the attributes it left into st (NULL: not wanted), *sized
 * whether they hold the size. */
static int setattr_call(tessera_fs *fs, const char *upath, enum tessera_follow last,
			const struct tessera_setattr *sa, struct tessera_stat *st, int *sized)
{
	Tessera__SetattrRequest m = TESSERA__SETATTR_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_req *r;
	uint64_t mark;
	int rc;
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.valid = sa->valid;
	m.mode = sa->mode & 07777;
	m.uid = sa->uid;
	m.gid = sa->gid;
	m.atime_ns = (int64_t)sa->atime.tv_sec * 1000000000 + sa->atime.tv_nsec;
	m.mtime_ns = (int64_t)sa->mtime.tv_sec * 1000000000 + sa->mtime.tv_nsec;
	m.nofollow = last == TESSERA_NOFOLLOW;
	mark = tc_mcache_mark(fs);
	rc = path_call(fs, TP_OP_SETATTR, &m.base, "setattr", path, &r);
	if (rc) {
		tc_mcache_changed(fs, path, MC_ATTRS); /* it may have been made */
		return rc;
	}
	setattr_names(fs, mark, path, (const Tessera__AttrReply *)r->reply);
	__atomic_store_n(&fs->attrs_unsynced, 1, __ATOMIC_RELAXED);
	if (!st) {
		tc_req_free(fs, r);
		return 0;
	}
	rc = attrs_of_reply(fs, path, (const Tessera__AttrReply *)r->reply, st, sized);
	tc_req_free(fs, r);
	return rc;
}

int tc_meta_sync(tessera_fs *fs, const char *path)
{
	Tessera__MetaSyncRequest m = TESSERA__META_SYNC_REQUEST__INIT;
	char label[4200];
	struct tc_req *r;
	int rc;

	if (!__atomic_exchange_n(&fs->attrs_unsynced, 0, __ATOMIC_RELAXED))
		return 0;
	snprintf(label, sizeof(label), "fsync %s: metadata", path);
	r = tc_req_new(fs, TC_MDS, TP_OP_META_SYNC, &m.base, NULL, 0);
	rc = tc_call(fs, r, label);
	tc_req_free(fs, r);
	/* (a daemon without it syncs every change before its reply) */
	if (rc == -EOPNOTSUPP)
		return 0;
	if (rc)
		__atomic_store_n(&fs->attrs_unsynced, 1, __ATOMIC_RELAXED);
	return rc;
}

int tessera_setattr(tessera_fs *fs, const char *upath, const struct tessera_setattr *sa)
{
	return setattr_call(fs, upath, fs->follow, sa, NULL, NULL);
}

int tessera_setattr_stat(tessera_fs *fs, const char *upath, const struct tessera_setattr *sa,
			 struct tessera_stat *st, int *sized)
{
	return setattr_call(fs, upath, fs->follow, sa, st, sized);
}

int tessera_lsetattr(tessera_fs *fs, const char *upath, const struct tessera_setattr *sa)
{
	return setattr_call(fs, upath, TESSERA_NOFOLLOW, sa, NULL, NULL);
}

/* SYMLINK, LINK and MKNOD: one request making the name `path`. */
static int link_call(tessera_fs *fs, unsigned opcode, const char *what, const char *upath,
		     const char *path, Tessera__LinkRequest *m)
{
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_req *r;
	int rc;

	tc_cred(fs, &cred, gids);
	m->cred = &cred;
	m->path = (char *)path;
	rc = path_call(fs, opcode, &m->base, what, path, &r);
	if (rc)
		return rc;
	tc_meta_dir_changed(fs, upath, ((Tessera__AttrReply *)r->reply)->parent);
	tc_req_free(fs, r);
	return 0;
}

int tessera_symlink(tessera_fs *fs, const char *target, const char *upath)
{
	Tessera__LinkRequest m = TESSERA__LINK_REQUEST__INIT;
	MAP(fs, upath, path);

	if (!target)
		return tc_fail(fs, -EINVAL, "symlink %s: no target", path);
	m.target = (char *)target;
	return link_call(fs, TP_OP_SYMLINK, "symlink", upath, path, &m);
}

int tessera_link(tessera_fs *fs, const char *ufrom, const char *uto)
{
	Tessera__LinkRequest m = TESSERA__LINK_REQUEST__INIT;
	int rc;
	MAP(fs, ufrom, from);
	MAP(fs, uto, to);

	m.target = from;
	rc = link_call(fs, TP_OP_LINK, "link", uto, to, &m);
	tc_mcache_changed(fs, from, MC_ATTRS); /* its link count */
	return rc;
}

/* The FileType of mknod's S_IF* bits; 0 for those mknod does not make. */
static uint32_t mknod_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO: return TESSERA__FILE_TYPE__FILE_FIFO;
	case S_IFSOCK: return TESSERA__FILE_TYPE__FILE_SOCKET;
	case S_IFCHR: return TESSERA__FILE_TYPE__FILE_CHARDEV;
	case S_IFBLK: return TESSERA__FILE_TYPE__FILE_BLOCKDEV;
	default: return 0;
	}
}

int tessera_mknod(tessera_fs *fs, const char *upath, mode_t mode, uint64_t rdev)
{
	Tessera__LinkRequest m = TESSERA__LINK_REQUEST__INIT;
	tessera_file *f;
	int rc;
	MAP(fs, upath, path);

	if ((mode & S_IFMT) == S_IFREG || (mode & S_IFMT) == 0) {
		/* as Linux: mknod of a regular file makes an empty one */
		rc = tessera_open(fs, upath, O_CREAT | O_EXCL | O_WRONLY, mode & 07777, NULL, &f);
		return rc ? rc : tessera_close(f);
	}
	if ((mode & S_IFMT) == S_IFDIR)
		return tc_fail(fs, -EPERM, "mknod %s: directories are made by mkdir", path);
	m.type = mknod_type(mode);
	if (!m.type)
		return tc_fail(fs, -EINVAL, "mknod %s: file type %#o is not one mknod makes",
			       path, (unsigned)(mode & S_IFMT));
	m.mode = mode & 07777;
	m.rdev = rdev;
	return link_call(fs, TP_OP_MKNOD, "mknod", upath, path, &m);
}

ssize_t tessera_readlink(tessera_fs *fs, const char *upath, char *buf, size_t len)
{
	Tessera__PathRequest m = TESSERA__PATH_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	const Tessera__ReadlinkReply *rep;
	struct tc_req *r;
	size_t tl;
	int rc;
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.nofollow = 1;
	rc = path_call(fs, TP_OP_READLINK, &m.base, "readlink", path, &r);
	if (rc)
		return rc;
	rep = (const Tessera__ReadlinkReply *)r->reply;
	tl = rep->target ? strlen(rep->target) : 0;
	if (buf && len) {
		memcpy(buf, rep->target, tl < len ? tl : len);
		if (tl < len)
			buf[tl] = '\0';
	}
	tc_req_free(fs, r);
	return (ssize_t)tl;
}

int tessera_set_dir_layout(tessera_fs *fs, const char *upath, uint64_t strip_size,
			   uint32_t count)
{
	Tessera__SetLayoutRequest m = TESSERA__SET_LAYOUT_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.strip_size = strip_size;
	m.stripe_count = count;
	return plain_call(fs, TP_OP_SETLAYOUT, &m.base, "setstripe", path);
}

int tessera_set_dir_layout_kind(tessera_fs *fs, const char *upath, uint64_t strip_size,
				uint32_t count, enum tessera_layout_kind kind)
{
	Tessera__SetLayoutRequest m = TESSERA__SET_LAYOUT_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	MAP(fs, upath, path);

	if (kind != TESSERA_LAYOUT_PLAIN && kind != TESSERA_LAYOUT_VERSIONED)
		return tc_fail(fs, -EINVAL, "setstripe %s: unknown layout kind %#x", path,
			       (unsigned)kind);
	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.strip_size = strip_size;
	m.stripe_count = count;
	m.versioned = kind == TESSERA_LAYOUT_VERSIONED;
	return plain_call(fs, TP_OP_SETLAYOUT, &m.base, "setstripe", path);
}

int tessera_clear_dir_layout(tessera_fs *fs, const char *upath)
{
	Tessera__SetLayoutRequest m = TESSERA__SET_LAYOUT_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.inherit = 1;
	return plain_call(fs, TP_OP_SETLAYOUT, &m.base, "setstripe", path);
}

int tessera_readdir(tessera_fs *fs, const char *upath, const char *cursor,
		    struct tessera_dirent *ents, uint32_t max, uint32_t *n, int *eof)
{
	Tessera__ReaddirRequest m = TESSERA__READDIR_REQUEST__INIT;
	Tessera__ReaddirReply *rep;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_req *r;
	int rc;
	MAP(fs, upath, path);

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = path;
	m.cursor = (char *)(cursor ? cursor : "");
	m.max_entries = max;
	rc = path_call(fs, TP_OP_READDIR, &m.base, "readdir", path, &r);
	if (rc)
		return rc;
	rep = (Tessera__ReaddirReply *)r->reply;
	*n = 0;
	for (size_t i = 0; i < rep->n_entries && *n < max; i++) {
		struct tessera_dirent *d = &ents[(*n)++];

		snprintf(d->name, sizeof(d->name), "%s", rep->entries[i]->name);
		d->handle = rep->entries[i]->handle;
		d->mode = type_bits(rep->entries[i]->type);
	}
	*eof = rep->eof;
	tc_req_free(fs, r);
	return 0;
}
