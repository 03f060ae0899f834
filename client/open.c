/* open.c - opening and closing a file by path (tessera_open,
 * tessera_close, tessera_fstat, tessera_truncate): the open asks the
 * metadata daemon, or is answered from what the name cache holds (opens
 * from memory); a file's data and size are then the storage objects'
 * business (io.c); a writer's close tells the metadata daemon the size
 * (docs/design.md, "Sizes kept by the metadata daemon"). The calls on
 * names and attributes it shares with the rest are meta.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client_int.h"

/* An open asks the metadata daemon to count its writer at its first
 * write when it opens an existing file for reading and writing: such an
 * open often only reads (then its close costs no CLOSE_WRITE, and others'
 * stats stay answered by the metadata daemon alone), and one that writes
 * pays one request before its first write. An open for writing only, or
 * that truncates or creates, is counted at once. */
static enum tp_open_writer open_writer_of(int flags)
{
	return (flags & O_ACCMODE) == O_RDWR && !(flags & (O_TRUNC | O_CREAT))
		       ? TP_WRITER_LATER
		       : TP_WRITER_NOW;
}

/* What a closing writer tells of the size (*m): a file this open made
 * and nothing changed is empty (no storage daemon holds any of it); one
 * it did not change is as before its open (the metadata daemon still
 * has that size if no one else wrote meanwhile); one opened by its path, the storage daemons' answer now, after its
 * last write (kept if it was the only writer). A process that opened it
 * from a share tells nothing: the opener's close is the one that may be
 * last. */
static void close_size(tessera_file *f, Tessera__CloseWriteRequest *m)
{
	int64_t data_ns = 0;
	uint64_t blocks = 0;

	if (!__atomic_load_n(&f->wrote, __ATOMIC_RELAXED)) {
		/* a new file is empty; an old one is as it was before */
		if (f->created)
			m->size_known = 1;
		else
			m->unwritten = 1;
		return;
	}
	/* (a versioned file's size is its versions': the metadata daemon
	 * keeps none for it) */
	if (!f->by_path || tc_versioned(f) || tc_file_size(f->fs, &f->layout, tc_cap_msg(f->cap), f->path, &m->size,
					&data_ns, &blocks))
		return;
	m->size_known = 1;
	m->blocks = blocks;
	m->data_mtime_ns = data_ns;
}

/* A close's answer (AttrReply): the file's attributes with its size once
 * the metadata daemon knows it, leased (name leases): kept, so a stat
 * after the close asks nobody. 1 if kept. */
static int closed_attrs(tessera_file *f, uint64_t mark, const Tessera__AttrReply *rep)
{
	struct tessera_stat st;

	if (!rep || !rep->attr || !rep->leased || rep->attr->handle != f->handle)
		return 0;
	tc_stat_from_attr(rep->attr, &st);
	if (!tc_meta_size_from_reply(rep, &st))
		return 0;
	tc_mcache_learn(f->fs, mark, MC_LEARN_OWN_ATTRS,
			&(struct tc_mc_reply){ NULL, NULL, 0, f->handle, st.mode, &st, NULL });
	return 1;
}

/*
 * A close that need not wait for its answer: of a file this open made
 * and left unwritten (m: size 0, known). With the name cache on, what
 * the answer would teach, the file's attributes with that size, is what
 * the create's (leased) reply said (f->opened): learnt now, unless the
 * cache heard of a change to the file since (then the caller waits for
 * the answer after all). The daemon gets the close on the session's
 * connection before any later request of this client: a stat of it by
 * anyone after this returns sees the writer counted out, or else asks
 * the storage daemons, which hold nothing of it either way. This is a
 * create's second round trip (mdtest's and tar's empty files, the
 * library's create-and-close). 1 if sent behind (r is the engine's).
 */
static int close_behind(tessera_file *f, const Tessera__CloseWriteRequest *m, struct tc_req *r)
{
	if (!r || !f->created || !m->size_known || m->size || !f->opened_sized ||
	    __atomic_load_n(&f->wrote, __ATOMIC_RELAXED))
		return 0;
	if (f->fs->mcache &&
	    (!f->made_leased ||
	     !tc_mcache_learn(f->fs, f->made_mark, MC_LEARN_OWN_ATTRS,
			      &(struct tc_mc_reply){ NULL, NULL, 0, f->handle, S_IFREG,
						     &f->opened, NULL })))
		return 0;
	return tc_call_behind(f->fs, r) == 0;
}

/* A closed writer: the metadata daemon counts one fewer (all its writes
 * were answered before this). Best effort: a daemon that does not hear
 * it keeps the file's size unknown, which costs stats, not correctness. */
static void close_writer(tessera_file *f)
{
	Tessera__CloseWriteRequest m = TESSERA__CLOSE_WRITE_REQUEST__INIT;
	char keep[sizeof(tc_thread(f->fs)->errmsg)], label[4200];
	struct tc_req *r;
	uint64_t mark;

	if (!f->write_token || !f->cap)
		return;
	m.file = f->handle;
	m.write_token = f->write_token;
	m.cap = (Tessera__Capability *)tc_cap_msg(f->cap);
	snprintf(keep, sizeof(keep), "%s", tc_thread(f->fs)->errmsg);
	close_size(f, &m);
	snprintf(label, sizeof(label), "close %s", f->path);
	r = tc_req_new(f->fs, TC_MDS, TP_OP_CLOSE_WRITE, &m.base, NULL, 0);
	if (close_behind(f, &m, r))
		return;
	/* (after close_behind, whose learning, when it then could not send,
	 * must not make the answer's look stale) */
	mark = tc_mcache_mark(f->fs);
	if (tc_call(f->fs, r, label) || !closed_attrs(f, mark, (Tessera__AttrReply *)r->reply))
		tc_mcache_changed_handle(f->fs, f->handle);
	tc_req_free(f->fs, r);
	snprintf(tc_thread(f->fs)->errmsg, sizeof(keep), "%s", keep);
}

/* CREATE path (O_EXCL: exclusive) with the layout asked for, if any: the
 * reply, which the caller frees. */
static int open_create(tessera_fs *fs, const char *path, int flags, mode_t mode,
		       const struct tessera_layout *layout, Tessera__AttrReply **rep)
{
	Tessera__CreateRequest m = TESSERA__CREATE_REQUEST__INIT;
	Tessera__Layout lm = TESSERA__LAYOUT__INIT;
	uint32_t gids[TESSERA_MAX_GROUPS];
	Tessera__Cred cred;
	char label[4200];
	struct tc_req *r;
	int rc;

	tc_cred(fs, &cred, gids);
	m.cred = &cred;
	m.path = (char *)path;
	m.mode = mode & 07777;
	m.exclusive = (flags & O_EXCL) != 0;
	if (layout) {
		lm.strip_size = layout->strip_size;
		m.stripe_count = layout->count;
		lm.versioned = tc_layout_versioned(layout);
	}
	/* the config's strip size applies after the directory's default */
	m.default_strip_size = fs->cfg.strip_size;
	m.layout = &lm;
	m.open_rights = tc_open_rights(flags);
	m.nofollow = (flags & O_NOFOLLOW) || fs->follow == TESSERA_NOFOLLOW;
	snprintf(label, sizeof(label), "create %s", path);
	r = tc_req_new(fs, TC_MDS, TP_OP_CREATE, &m.base, NULL, 0);
	rc = tc_call(fs, r, label);
	if (!rc) {
		*rep = (Tessera__AttrReply *)r->reply;
		r->reply = NULL;
	}
	tc_req_free(fs, r);
	return rc;
}

/* What an open's reply must hold: attributes of a non-directory and a
 * capability (the metadata daemon checked the mode: a file this call just
 * created may be written whatever its mode). */
static int open_reply_check(tessera_fs *fs, const char *path, const Tessera__AttrReply *rep)
{
	if (!rep->attr)
		return tc_fail(fs, -EPROTO, "open %s: reply without attributes", path);
	if (rep->attr->type == TESSERA__FILE_TYPE__FILE_DIRECTORY)
		return tc_fail(fs, -EISDIR, "open %s: is a directory", path);
	if (rep->attr->type == TESSERA__FILE_TYPE__FILE_SYMLINK)
		return tc_fail(fs, -ELOOP, "open %s: is a symbolic link (O_NOFOLLOW)", path);
	if (rep->attr->type != TESSERA__FILE_TYPE__FILE_REGULAR)
		return tc_fail(fs, -ENXIO, "open %s: a FIFO, socket or device node has no data"
			       " in Tessera (open it on the mount)", path);
	if (!rep->cap)
		return tc_fail(fs, -EPROTO, "open %s: reply without a capability", path);
	return 0;
}

/* Keep what the open's reply says of the file (tessera_open_attrs): its
 * size too where the reply knew it (a closed file's, mds_size.h) or the
 * open made the file; not after this open truncated it (the data's mtime
 * is the storage daemons' then) nor for a versioned file. */
static void opened_attrs(tessera_file *f, int flags, const Tessera__AttrReply *rep)
{
	tc_stat_from_attr(rep->attr, &f->opened);
	if (tc_versioned(f) || ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && !rep->created))
		return;
	if (rep->created) {
		f->opened.size = 0;
		f->opened.blocks = 0;
		f->opened_sized = 1;
		return;
	}
	f->opened_sized = tc_meta_size_from_reply(rep, &f->opened);
}

/* A file opened by path with capability cap and layout (checked): *out,
 * or an error. */
static int file_new(tessera_fs *fs, const char *path, int flags, uint64_t handle,
		    const Tessera__Capability *cap, const Tessera__Layout *layout,
		    tessera_file **out)
{
	tessera_file *f = calloc(1, sizeof(*f));
	int rc;

	if (!f || !(f->cap = tc_cap_from_msg(cap))) {
		free(f);
		return tc_fail(fs, -ENOMEM, "open %s: out of memory", path);
	}
	f->fs = fs;
	f->flags = flags;
	f->handle = handle;
	f->opener = *tc_thread_cred(fs);
	f->by_path = 1;
	snprintf(f->path, sizeof(f->path), "%s", path);
	tc_layout_from_msg(layout, &f->layout);
	if ((rc = tc_check_layout(fs, &f->layout, path))) {
		tc_cap_free(f->cap);
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}

/* The open file from a checked reply; O_TRUNC drops an existing file's
 * data. */
static int open_file(tessera_fs *fs, const char *path, int flags, const Tessera__AttrReply *rep,
		     tessera_file **out)
{
	tessera_file *f;
	int rc = file_new(fs, path, flags, rep->attr->handle, rep->cap, rep->attr->layout, &f);

	if (rc)
		return rc;
	f->write_token = rep->write_token;
	f->created = rep->created;
	rc = tc_vers_open(f, rep->cap);
	/* (a file this call created has no data to drop) */
	if (!rc && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && !rep->created) {
		tc_file_wrote(f); /* its close must not say it changed nothing */
		rc = tc_versioned(f) ? tc_vers_truncate(f, 0)
				     : tc_truncate_objects(fs, &f->layout, tc_cap_msg(f->cap), path, 0);
	}
	if (rc) {
		(void)tc_vers_close(f);
		tc_cap_free(f->cap);
		free(f);
		return rc;
	}
	opened_attrs(f, flags, rep);
	/* (a versioned file counts no writers) */
	f->writer_later = open_writer_of(flags) == TP_WRITER_LATER && !rep->write_token &&
			  !tc_versioned(f);
	*out = f;
	return 0;
}

/* Name leases after an open: a file it made is a name this client made
 * (its size is its writer's until the close); one it counted as a writer
 * of, or truncated, has attributes this client changes; any other open
 * f (NULL: it failed) replaces what is held of the file with its reply's
 * (tc_mcache_opened). */
static void opened_names(tessera_fs *fs, uint64_t mark, const char *path, int flags,
			 const Tessera__AttrReply *rep, const tessera_file *f)
{
	struct tessera_stat dir;

	if (!rep->attr)
		return;
	if (rep->parent)
		tc_stat_from_attr(rep->parent, &dir);
	if (rep->created && rep->leased)
		tc_mcache_learn(fs, mark, MC_LEARN_OWN_NAME,
				&(struct tc_mc_reply){ path, rep->walk, rep->n_walk, rep->attr->handle,
						       S_IFREG, NULL, rep->parent ? &dir : NULL });
	else if (rep->created)
		tc_mcache_changed(fs, path, MC_NAME);
	else if (rep->write_token || ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY))
		tc_mcache_changed_handle(fs, rep->attr->handle);
	else if (f) { /* close-to-open: what the reply says of the file wins */
		tc_mcache_opened(fs, mark, path, f->handle, f->opened_sized ? &f->opened : NULL);
		/* and a leased reply is learnt, for the next open */
		if (rep->leased && f->opened_sized)
			tc_mcache_learn(fs, mark, MC_LEARN_LOOKUP,
					&(struct tc_mc_reply){ path, rep->walk, rep->n_walk,
							       f->handle, S_IFREG, &f->opened,
							       NULL });
	}
}

int tc_file_writing(tessera_file *f)
{
	int rc = 0;

	tc_file_wrote(f);
	if (!__atomic_load_n(&f->writer_later, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&f->fs->writer_lock);
	if (__atomic_load_n(&f->writer_later, __ATOMIC_RELAXED)) {
		if (!(rc = tc_cap_count_writer(f)))
			__atomic_store_n(&f->writer_later, 0, __ATOMIC_RELEASE);
		tc_mcache_changed_handle(f->fs, f->handle); /* its size is ours now */
	}
	pthread_mutex_unlock(&f->fs->writer_lock);
	return rc;
}

/* An open answered from what the name cache holds (tc_mcache_open; docs/
 * design.md, "Opens from memory"): one that neither creates, truncates,
 * nor counts a writer at once (O_RDONLY, or O_RDWR whose writer is
 * counted at its first write). 1 with *out, 0 when not held (ask), or
 * an error. */
static int open_held(tessera_fs *fs, const char *path, int flags, tessera_file **out)
{
	struct tc_mc_open h;
	tessera_file *f;
	int rc;

	if ((flags & (O_CREAT | O_TRUNC)) ||
	    ((flags & O_ACCMODE) != O_RDONLY && open_writer_of(flags) != TP_WRITER_LATER) ||
	    !tc_mcache_open(fs, path, tc_thread_cred(fs), tc_open_rights(flags), &h))
		return 0;
	rc = file_new(fs, path, flags, h.st.handle, h.cap, h.layout, &f);
	tc_mcache_open_done(&h);
	if (rc)
		return rc;
	f->opened = h.st;
	f->opened_sized = 1;
	f->writer_later = (flags & O_ACCMODE) == O_RDWR;
	*out = f;
	return 1;
}

/* Keep what the open was granted, for the next open of the file (not a
 * failed one's, nor a versioned file's). */
static void opened_grant(tessera_fs *fs, const Tessera__AttrReply *rep, const tessera_file *f)
{
	if (f && !tc_versioned(f))
		tc_mcache_granted(fs, f->handle, rep->cap, rep->attr->layout);
}

int tessera_open(tessera_fs *fs, const char *upath, int flags, mode_t mode,
		 const struct tessera_layout *layout, tessera_file **out)
{
	Tessera__AttrReply *rep = NULL;
	char path[TP_PATH_MAX + 1];
	uint64_t mark;
	int rc;

	rc = tessera_map_path(fs, upath, path, sizeof(path));
	if (rc)
		return rc;
	if ((rc = open_held(fs, path, flags, out)))
		return rc < 0 ? rc : 0;
	mark = tc_mcache_mark(fs);
	if (flags & O_CREAT)
		rc = open_create(fs, path, flags, mode, layout, &rep);
	else
		rc = tc_meta_lookup_as(fs, path, tc_open_rights(flags), open_writer_of(flags),
				       (flags & O_NOFOLLOW) ? TESSERA_NOFOLLOW : fs->follow, &rep);
	if (rc)
		return rc;
	rc = open_reply_check(fs, path, rep);
	if (!rc)
		rc = open_file(fs, path, flags, rep, out);
	if (!rc && rep->created)
		tc_meta_dir_changed(fs, upath, rep->parent);
	opened_names(fs, mark, path, flags, rep, rc ? NULL : *out);
	if (!rc && rep->created && rep->leased && fs->mcache) {
		(*out)->made_leased = 1;
		(*out)->made_mark = tc_mcache_mark(fs);
	}
	opened_grant(fs, rep, rc ? NULL : *out);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int tessera_close(tessera_file *f)
{
	int rc = 0;

	if (f) {
		tc_view_forget(f);
		tc_local_close(f);
		/* merged first: the size the close reports is the objects' */
		rc = tc_vers_close(f);
		close_writer(f);
		tc_cap_free(f->cap);
	}
	free(f);
	return rc;
}

/* fstat of a handle reading as of a snapshot: the size then. */
static int fstat_snapshot(tessera_file *f, const Tessera__AttrReply *rep, struct tessera_stat *st)
{
	int64_t data_ns;
	int rc;

	TC_CAP_RETRY(f, rc, tc_vers_file_size(f->fs, &f->layout, tc_cap_get(f), f->path,
					      tc_vers_snapshot(f), &st->size, &data_ns,
					      &st->blocks));
	if (!rc)
		tc_stat_data_time(rep->attr, data_ns, st);
	return rc;
}

int tessera_fstat(tessera_file *f, struct tessera_stat *st)
{
	Tessera__AttrReply *rep;
	int64_t data_ns;
	int same, rc = tc_meta_lookup(f->fs, f->path, 0, f->fs->follow, &rep);

	if (rc)
		return rc;
	tc_stat_from_attr(rep->attr, st);
	/* (the path may name another file by now: its size is not f's) */
	same = rep->attr->handle == f->handle;
	if (tc_vers_snapshot(f)) {
		rc = fstat_snapshot(f, rep, st);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return rc;
	}
	if (same && tc_meta_size_from_reply(rep, st)) {
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return 0;
	}
	TC_CAP_RETRY(f, rc, tc_file_size(f->fs, &f->layout, tc_cap_get(f), f->path, &st->size,
					 &data_ns, &st->blocks));
	if (!rc) {
		tc_stat_data_time(rep->attr, data_ns, st);
		if (same)
			tc_meta_size_report(f->fs, rep, f->path, st, data_ns);
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int tessera_open_attrs(tessera_file *f, struct tessera_stat *st)
{
	if (!f->opened_sized)
		return tessera_fstat(f, st);
	*st = f->opened;
	return 0;
}

/* After a truncate by name: as on Linux, a caller without the privilege
 * to keep them (anyone but root) takes away setuid, and setgid with
 * group-exec (the metadata daemon lets a writer clear just those). Only
 * a file that has them costs the extra request. */
static int truncate_kills_privs(tessera_fs *fs, const char *path, const Tessera__Attr *a)
{
	uint32_t mode = a->mode & 07777, kill = mode & S_ISUID;
	struct tessera_setattr sa = { .valid = TESSERA_SET_MODE };
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	tc_cred(fs, &cred, gids);
	if (!kill || cred.uid == 0)
		return 0;
	sa.mode = mode & ~kill;
	return tessera_setattr(fs, path, &sa);
}

int tessera_truncate(tessera_fs *fs, const char *upath, uint64_t size)
{
	Tessera__AttrReply *rep = NULL;
	tessera_file *f = NULL;
	char path[TP_PATH_MAX + 1];
	int rc = tessera_map_path(fs, upath, path, sizeof(path));

	if (rc)
		return rc;
	rc = tc_meta_lookup(fs, path, tc_open_rights(O_WRONLY), fs->follow, &rep);
	if (rc)
		return rc;
	rc = open_reply_check(fs, path, rep);
	if (!rc)
		rc = open_file(fs, path, O_WRONLY, rep, &f);
	if (!rc)
		rc = tessera_ftruncate(f, size);
	if (!rc)
		rc = truncate_kills_privs(fs, path, rep->attr);
	tessera_close(f);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}
