/*
 * fsck.c - tessera_fsck: the storage daemons' objects against the
 * metadata daemon's layouts and purge intents.
 *
 * The order of the scan is what lets it run while the file system is in
 * use: (1) the files, whose first page also gives the handle horizon (no
 * handle at or above it had been handed out), (2) the purge intents,
 * (3) each storage daemon's objects. An object below the horizon was
 * created for a file that existed when (1) began; if (1) did not see that
 * file, it was removed before the scan reached it, so its intent was
 * recorded, and either (2) sees it or the purger finished it, which
 * removed the object before (3) could list it. So an object (3) lists
 * that neither (1) nor (2) named is an orphan; objects at or above the
 * horizon are left alone. (A client writing to a file after another
 * removed it recreates objects: those are orphans too, correctly.)
 *
 * Memory is one entry per object named by a layout or intent: fine for
 * the test and laboratory scale this runs at; a scan of billions of
 * objects would need to be cut by handle range.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"


struct fsck_file {
	uint64_t handle;
	uint64_t recorded;      /* the size the metadata daemon recorded */
	uint64_t derived;       /* the size the objects listed give */
	struct tdl_layout tl;
};

struct fsck_name {              /* an object a layout or intent names */
	uint64_t handle;
	uint32_t server;
	uint32_t slot;
	int64_t file;           /* index into files[], or -1: an intent */
};

struct fsck {
	tessera_fs *fs;
	void (*report)(void *, const char *);
	void *arg;
	struct tessera_fsck *out;
	uint64_t horizon;
	struct fsck_file *files;
	size_t nfiles, capfiles;
	struct fsck_name *names;
	size_t nnames, capnames;
	struct tc_cap *admin;   /* root's admin capability: list and remove */
};

/* The admin capability the storage daemons want for listing and removing
 * (the metadata daemon grants it to root only), fetched again when due. */
static int admin_cap(struct fsck *k, Tessera__Capability **out)
{
	Tessera__CapRequest m = TESSERA__CAP_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	struct tc_req *r;
	int rc;

	if (k->admin && !tc_cap_due(k->admin)) {
		*out = (Tessera__Capability *)tc_cap_msg(k->admin);
		return 0;
	}
	tc_cred(k->fs, &cred, gids);
	m.cred = &cred;
	m.admin = 1;
	r = tc_req_new(k->fs, TC_MDS, TP_OP_CAP, &m.base, NULL, 0);
	if (!(rc = tc_call(k->fs, r, "fsck: admin capability"))) {
		const Tessera__CapReply *rep = (const Tessera__CapReply *)r->reply;
		struct tc_cap *c = rep->cap ? tc_cap_from_msg(rep->cap) : NULL;

		if (c) {
			tc_cap_free(k->admin);
			k->admin = c;
			*out = (Tessera__Capability *)tc_cap_msg(c);
		} else {
			rc = tc_fail(k->fs, rep->cap ? -ENOMEM : -EPROTO,
				     "fsck: admin capability: none kept");
		}
	}
	tc_req_free(k->fs, r);
	return rc;
}

static void say(struct fsck *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct fsck *k, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!k->report)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	k->report(k->arg, line);
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *g;

	if (n < *cap)
		return 0;
	g = realloc(*v, (*cap = *cap ? 2 * *cap : 256) * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	return 0;
}

static int add_name(struct fsck *k, uint64_t h, uint32_t server, uint32_t slot, int64_t file)
{
	if (grow((void **)&k->names, &k->capnames, k->nnames, sizeof(*k->names)))
		return -ENOMEM;
	k->names[k->nnames++] = (struct fsck_name){ h, server, slot, file };
	return 0;
}

/* (1) and (2): the files, then the intents, from the metadata daemon. */
static int list_mds(struct fsck *k, int intents)
{
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	uint64_t after = 0;
	int resume = 0, eof = 0, rc = 0;

	tc_cred(k->fs, &cred, gids);
	while (!eof) {
		Tessera__FileListRequest m = TESSERA__FILE_LIST_REQUEST__INIT;
		Tessera__FileListReply *rep;
		struct tc_req *r;

		m.cred = &cred;
		m.resume = resume;
		m.after = after;
		m.intents = intents;
		r = tc_req_new(k->fs, TC_MDS, TP_OP_FILE_LIST, &m.base, NULL, 0);
		if ((rc = tc_call(k->fs, r, intents ? "fsck: list purge intents" : "fsck: list files")))
			goto out_req;
		rep = (Tessera__FileListReply *)r->reply;
		if (!intents && !resume)
			k->horizon = rep->horizon;
		for (size_t i = 0; i < rep->n_files; i++) {
			const Tessera__FileEntry *e = rep->files[i];
			const Tessera__Layout *l = e->layout;
			int64_t fi = -1;

			if (!l || l->n_servers != l->n_handles) {
				rc = tc_fail(k->fs, -EPROTO, "fsck: file %016" PRIx64 ": bad layout",
					     e->handle);
				goto out_req;
			}
			if (!intents) {
				if (grow((void **)&k->files, &k->capfiles, k->nfiles, sizeof(*k->files))) {
					rc = tc_fail(k->fs, -ENOMEM, "fsck: out of memory");
					goto out_req;
				}
				fi = (int64_t)k->nfiles++;
				k->files[fi] = (struct fsck_file){ e->handle, e->size, 0,
					{ l->strip_size, (uint32_t)l->n_handles } };
				k->out->files++;
			}
			for (size_t s = 0; s < l->n_handles; s++)
				if (add_name(k, l->handles[s], l->servers[s], (uint32_t)s, fi)) {
					rc = tc_fail(k->fs, -ENOMEM, "fsck: out of memory");
					goto out_req;
				}
			after = e->handle;
			resume = 1;
		}
		eof = rep->eof || !rep->n_files;
out_req:
		tc_req_free(k->fs, r);
		if (rc)
			return rc;
	}
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	const struct fsck_name *x = a, *y = b;

	if (x->handle != y->handle)
		return x->handle < y->handle ? -1 : 1;
	return (x->file < 0) - (y->file < 0); /* a file's entry before an intent's */
}

static const struct fsck_name *find_name(const struct fsck *k, uint64_t h)
{
	size_t lo = 0, hi = k->nnames;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->names[mid].handle < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->nnames && k->names[lo].handle == h ? &k->names[lo] : NULL;
}

static int remove_batch(struct fsck *k, uint32_t s, uint64_t *handles, size_t n)
{
	Tessera__HandlesRequest m = TESSERA__HANDLES_REQUEST__INIT;
	char label[64];
	int rc;

	if (!n)
		return 0;
	m.handles = handles;
	m.n_handles = n;
	if ((rc = admin_cap(k, &m.cap)))
		return rc;
	snprintf(label, sizeof(label), "fsck: remove orphans on storage daemon %u", s);
	struct tc_req *r = tc_req_new(k->fs, (int)s, TP_OP_REMOVE, &m.base, NULL, 0);

	rc = tc_call(k->fs, r, label);
	tc_req_free(k->fs, r);
	if (!rc)
		k->out->removed += n;
	return rc;
}

/* What a listing's object is: 1 if it is an orphan (--repair removes it). */
typedef int (*fsck_judge)(struct fsck *k, uint32_t s, const char *where, uint64_t h,
			  uint64_t size, int repair);

/* (3): an object a storage daemon holds, against the names. */
static int judge_object(struct fsck *k, uint32_t s, const char *where, uint64_t h, uint64_t size,
			int repair)
{
	const struct fsck_name *nm;

	k->out->objects++;
	if ((h >> 48) == (k->horizon >> 48) && h >= k->horizon) {
		k->out->young++;
		return 0;
	}
	nm = find_name(k, h);
	if (nm && nm->server != s) {
		k->out->misplaced++;
		say(k, "misplaced: object %016" PRIx64 " on %s: its layout puts it on"
		    " storage daemon %u", h, where, nm->server);
		return 0;
	}
	if (nm && nm->file >= 0) {
		struct fsck_file *f = &k->files[nm->file];
		uint64_t end = tdl_layout_logical_size(&f->tl, nm->slot, size);

		if (end > f->derived)
			f->derived = end;
		return 0;
	}
	if (nm) {
		k->out->pending++;
		return 0;
	}
	k->out->orphans++;
	say(k, "orphan: object %016" PRIx64 " on %s, %" PRIu64 " bytes: no file or"
	    " purge intent names it%s", h, where, size, repair ? "; removing it" : "");
	return 1;
}

/* (3b): an object the daemon held but lost (its registry names it, its
 * file is gone). One of a file is reported; one nothing names is an
 * orphan record, which a REMOVE clears. */
static int judge_lost(struct fsck *k, uint32_t s, const char *where, uint64_t h, uint64_t size,
		      int repair)
{
	const struct fsck_name *nm;

	(void)s;
	(void)size;
	if ((h >> 48) == (k->horizon >> 48) && h >= k->horizon)
		return 0;
	nm = find_name(k, h);
	if (nm && nm->file >= 0) {
		k->out->lost++;
		say(k, "lost: object %016" PRIx64 " of file %016" PRIx64 " on %s: the"
		    " daemon made it, its file is gone (reads of it fail; restore the"
		    " daemon's disk, or remove the file)", h, k->files[nm->file].handle, where);
		return 0;
	}
	if (nm)
		return 0; /* the purger's REMOVE clears it */
	k->out->orphans++;
	say(k, "orphan: lost object %016" PRIx64 " on %s: no file or purge intent"
	    " names it%s", h, where, repair ? "; removing its record" : "");
	return 1;
}

/* Page through storage daemon `s`'s objects (or, with `lost`, its lost
 * ones), judging each; with `repair`, remove the orphans in batches. */
static int walk_objects(struct fsck *k, uint32_t s, int lost, int repair, fsck_judge judge)
{
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	uint64_t after = 0, doomed[TP_MAX_HANDLES];
	size_t ndoomed = 0;
	int resume = 0, eof = 0, rc = 0;
	char where[300];

	tc_server_name(k->fs, (int)s, where, sizeof(where));
	tc_cred(k->fs, &cred, gids);
	while (!eof && !rc) {
		Tessera__ObjectListRequest m = TESSERA__OBJECT_LIST_REQUEST__INIT;
		Tessera__ObjectListReply *rep;
		struct tc_req *r;

		m.cred = &cred;
		m.resume = resume;
		m.after = after;
		m.lost = lost;
		if ((rc = admin_cap(k, &m.cap)))
			break;
		r = tc_req_new(k->fs, (int)s, TP_OP_OBJECT_LIST, &m.base, NULL, 0);
		if ((rc = tc_call(k->fs, r, lost ? "fsck: list lost objects"
						 : "fsck: list objects"))) {
			tc_req_free(k->fs, r);
			break;
		}
		rep = (Tessera__ObjectListReply *)r->reply;
		for (size_t i = 0; i < rep->n_handles && !rc; i++) {
			uint64_t h = rep->handles[i], size = i < rep->n_sizes ? rep->sizes[i] : 0;

			after = h;
			if (!judge(k, s, where, h, size, repair) || !repair)
				continue;
			doomed[ndoomed++] = h;
			if (ndoomed == TP_MAX_HANDLES) {
				rc = remove_batch(k, s, doomed, ndoomed);
				ndoomed = 0;
			}
		}
		if (lost)
			after = rep->examined; /* a page may hold no lost object */
		resume = 1;
		eof = rep->eof;
		tc_req_free(k->fs, r);
	}
	if (!rc)
		rc = remove_batch(k, s, doomed, ndoomed);
	return rc;
}

int tessera_fsck(tessera_fs *fs, int repair, void (*report)(void *arg, const char *line),
		 void *arg, struct tessera_fsck *out)
{
	struct fsck k = { fs, report, arg, out, 0, NULL, 0, 0, NULL, 0, 0, NULL };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = list_mds(&k, 0)) || (rc = list_mds(&k, 1)))
		goto out;
	if (k.nnames)
		qsort(k.names, k.nnames, sizeof(*k.names), cmp_name);
	for (uint32_t s = 0; s < fs->cfg.n_ios; s++)
		if ((rc = walk_objects(&k, s, 0, repair, judge_object)) ||
		    (rc = walk_objects(&k, s, 1, repair, judge_lost)))
			goto out;
	for (size_t i = 0; i < k.nfiles; i++)
		if (k.files[i].derived < k.files[i].recorded) {
			out->size_mismatch++;
			say(&k, "size: file %016" PRIx64 ": its objects hold %" PRIu64 " bytes, the"
			    " metadata daemon recorded %" PRIu64 " (a truncate that did not reach"
			    " every object, or lost data)", k.files[i].handle, k.files[i].derived,
			    k.files[i].recorded);
		}
out:
	tc_cap_free(k.admin);
	free(k.files);
	free(k.names);
	return rc;
}
