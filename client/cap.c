/*
 * cap.c - the capability of an open file: the metadata daemon's signed
 * grant that every storage request on the file carries (docs/security.md,
 * "Capabilities").
 *
 * A file gets its capability when it is opened (or from a share); it is
 * renewed by file handle before it expires: proactively, once three
 * quarters of its life have passed when a request is about to be made,
 * and on demand when a storage daemon answers EKEYEXPIRED (TC_CAP_RETRY).
 * The metadata daemon checks the permission again at each renewal, and
 * wants the capability being renewed as proof that a path walk reached
 * the file (a handle alone proves nothing).
 *
 * Threads of a process share a file: a renewal installs a new capability
 * under fs->lock and keeps the replaced one (another thread may be
 * packing it into a request) until the file is closed; there is one per
 * renewal, a few KiB every few minutes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

struct tc_cap {
	Tessera__Capability *msg;  /* owned (unpacked) */
	uint64_t renew_ns;         /* CLOCK_MONOTONIC: renew before use after this */
	struct tc_cap *older;      /* replaced ones, freed with the file */
};

uint32_t tc_open_rights(int flags)
{
	int acc = flags & O_ACCMODE;

	return (acc == O_WRONLY ? 0 : TP_CAP_READ) | (acc == O_RDONLY ? 0 : TP_CAP_WRITE);
}

uint64_t tc_cap_renew_at(const Tessera__Capability *m)
{
	int64_t left = m->expires_ns - tp_real_ns();

	return tp_mono_ns() + (left > 0 ? (uint64_t)left / 4 * 3 : 0);
}

struct tc_cap *tc_cap_from_msg(const Tessera__Capability *m)
{
	size_t len = tessera__capability__get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	struct tc_cap *c = calloc(1, sizeof(*c));

	if (!buf || !c)
		goto fail;
	tessera__capability__pack(m, buf);
	c->msg = tessera__capability__unpack(NULL, len, buf);
	free(buf);
	buf = NULL;
	if (!c->msg)
		goto fail;
	c->renew_ns = tc_cap_renew_at(m);
	return c;
fail:
	free(buf);
	free(c);
	return NULL;
}

void tc_cap_free(struct tc_cap *c)
{
	while (c) {
		struct tc_cap *older = c->older;

		if (c->msg)
			protobuf_c_message_free_unpacked(&c->msg->base, NULL);
		free(c);
		c = older;
	}
}

void tc_cap_install(tessera_file *f, struct tc_cap *c)
{
	pthread_mutex_lock(&f->fs->lock);
	c->older = f->cap;
	f->cap = c;
	pthread_mutex_unlock(&f->fs->lock);
}

/* CAP request m: the capability it grants in *out, and with write_token,
 * counted as a writer (its token there). out NULL: m asks for no
 * capability (writer_only), only the token. */
static int cap_call(tessera_fs *fs, Tessera__CapRequest *m, const char *what,
		    struct tc_cap **out, uint64_t *write_token)
{
	uint64_t file = m->file;
	struct tc_req *r;
	int rc;

	m->count_writer = out && write_token;
	r = tc_req_new(fs, TC_MDS, TP_OP_CAP, &m->base, NULL, 0);
	rc = tc_call(fs, r, what);
	if (!rc) {
		const Tessera__CapReply *rep = (const Tessera__CapReply *)r->reply;

		if (out && (!rep->cap || rep->cap->file != file))
			rc = tc_fail(fs, -EPROTO, "%s: the metadata daemon sent none", what);
		else if (out && !(*out = tc_cap_from_msg(rep->cap)))
			rc = tc_fail(fs, -ENOMEM, "%s: out of memory", what);
		else if (write_token)
			*write_token = rep->write_token;
	}
	tc_req_free(fs, r);
	return rc;
}

int tc_cap_fetch(tessera_fs *fs, uint64_t file, uint32_t rights, const Tessera__Cred *cred,
		 const Tessera__Capability *proof, const char *what, struct tc_cap **out)
{
	Tessera__CapRequest m = TESSERA__CAP_REQUEST__INIT;

	m.cred = (Tessera__Cred *)cred;
	m.file = file;
	m.rights = rights;
	m.proof = (Tessera__Capability *)proof;
	return cap_call(fs, &m, what, out, NULL);
}

/* tc_cap_renew_writer as `as`. */
static int renew_writer_as(tessera_file *f, const struct tessera_cred *as)
{
	Tessera__CapRequest m = TESSERA__CAP_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_cap *c;
	char what[4200];
	int rc;

	snprintf(what, sizeof(what), "capability for %s", f->path);
	if (!f->cap)
		return tc_fail(f->fs, -EACCES, "%s: permission denied: no capability to renew (a"
			       " share without one; open the file by its path)", what);
	tc_cred_msg(as, &cred, gids);
	m.cred = &cred;
	m.file = f->handle;
	m.rights = tc_open_rights(f->flags);
	m.proof = f->cap->msg;
	rc = cap_call(f->fs, &m, what, &c, &f->write_token);
	if (!rc)
		tc_cap_install(f, c);
	return rc;
}

int tc_cap_renew_writer(tessera_file *f)
{
	return renew_writer_as(f, tc_thread_cred(f->fs));
}

/* CAP writer_only: f's opener, under the capability its open got, is
 * one more writer of f (*token). */
static int writer_only(tessera_file *f, const struct tc_cap *cur, uint64_t *token)
{
	Tessera__CapRequest m = TESSERA__CAP_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	char what[4200];

	snprintf(what, sizeof(what), "open %s for writing", f->path);
	tc_cred_msg(&f->opener, &cred, gids);
	m.cred = &cred;
	m.file = f->handle;
	m.rights = TP_CAP_WRITE;
	m.proof = cur->msg;
	m.writer_only = 1;
	return cap_call(f->fs, &m, what, NULL, token);
}

int tc_cap_count_writer(tessera_file *f)
{
	struct tc_cap *cur;
	uint64_t token = 0;
	int rc;

	pthread_mutex_lock(&f->fs->lock);
	cur = f->cap;
	pthread_mutex_unlock(&f->fs->lock);
	if (!cur)
		return tc_fail(f->fs, -EACCES, "open %s for writing: no capability", f->path);
	if (tc_cap_due(cur))
		return renew_writer_as(f, &f->opener);
	rc = writer_only(f, cur, &token);
	if (!rc)
		f->write_token = token;
	return rc;
}

int tc_cap_renew(tessera_file *f)
{
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_cap *c, *cur;
	char what[4200];
	int rc;

	snprintf(what, sizeof(what), "capability for %s", f->path);
	pthread_mutex_lock(&f->fs->lock);
	cur = f->cap; /* (kept until f is closed, even once replaced) */
	pthread_mutex_unlock(&f->fs->lock);
	if (!cur)
		return tc_fail(f->fs, -EACCES, "%s: permission denied: no capability to renew (a"
			       " share without one; open the file by its path)", what);
	tc_cred(f->fs, &cred, gids);
	rc = tc_cap_fetch(f->fs, f->handle, tc_open_rights(f->flags), &cred, cur->msg, what, &c);
	if (!rc)
		tc_cap_install(f, c);
	return rc;
}

int tc_cap_due(const struct tc_cap *c)
{
	return tp_mono_ns() >= c->renew_ns;
}

const Tessera__Capability *tc_cap_msg(const struct tc_cap *c)
{
	return c->msg;
}

const Tessera__Capability *tc_cap_get(tessera_file *f)
{
	struct tc_cap *c;

	pthread_mutex_lock(&f->fs->lock);
	c = f->cap;
	pthread_mutex_unlock(&f->fs->lock);
	/* (a failed renewal leaves the old one: the storage daemon's answer
	 * says what is wrong once it runs out) */
	if (c && tc_cap_due(c) && !tc_cap_renew(f)) {
		pthread_mutex_lock(&f->fs->lock);
		c = f->cap;
		pthread_mutex_unlock(&f->fs->lock);
	}
	return c ? c->msg : NULL;
}
