/*
 * fsck.c - tessera_fsck: the storage daemons' objects against the
 * metadata daemon's layouts and purge intents.
 *
 * The order of the scan is what lets it run while the file system is in
 * use: (1) the files, (2) the purge intents, (3) each storage daemon's
 * objects, (4) the files and intents again, then (5) each object still
 * unexplained looked up once more on its daemon. An object (3) lists that
 * no layout or intent of (1) or (2) names is a suspect. If its file
 * existed when (4) began, (4) names it (a file created during the scan:
 * counted young, not judged), or the file was removed before (4) reached
 * it, and then its intent was written in the same batch, so (4) names it
 * too, unless the purger finished, which removed the object first: (5)
 * does not find it. The file cannot have been created after (4) began:
 * its objects were made after its handle was handed out, and (3) listed
 * one before (4). So a suspect (5) still finds is an orphan. This holds
 * whatever the handles' order: they are random (a handle horizon served
 * while they were sequential). (A client writing to a file after another
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

/* What names an object: index into files[] (>= 0), or one of these. */
enum { FSCK_INTENT = -1, FSCK_LATE_FILE = -2, FSCK_LATE_INTENT = -3 };

struct fsck_name {              /* an object a layout or intent names */
	uint64_t handle;
	uint32_t server;
	uint32_t slot;
	int64_t file;           /* index into files[], or FSCK_* */
};

/* An object (3) found that (1) and (2) did not name. */
enum fsck_listing { FSCK_OBJECTS, FSCK_LOST };

struct fsck_suspect {
	uint64_t handle;
	uint64_t size;
	uint32_t server;
	enum fsck_listing listing;
};

/* Which listing of the metadata daemon's list_mds makes. */
enum fsck_pass { FSCK_FILES, FSCK_INTENTS, FSCK_FILES_AGAIN, FSCK_INTENTS_AGAIN };

struct fsck {
	tessera_fs *fs;
	void (*report)(void *, const char *);
	void *arg;
	int repair;             /* remove the orphans found */
	struct tessera_fsck *out;
	struct fsck_file *files;
	size_t nfiles, capfiles;
	struct fsck_name *names;
	size_t nnames, capnames;
	struct fsck_suspect *suspects;
	size_t nsuspects, capsuspects;
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

/* One file or intent of a listing: its objects' names (and in pass (1),
 * the file). */
static int take_entry(struct fsck *k, const Tessera__FileEntry *e, enum fsck_pass pass)
{
	const Tessera__Layout *l = e->layout;
	int64_t fi = pass == FSCK_INTENTS ? FSCK_INTENT
		   : pass == FSCK_FILES_AGAIN ? FSCK_LATE_FILE : FSCK_LATE_INTENT;

	if (!l || l->n_servers != l->n_handles)
		return tc_fail(k->fs, -EPROTO, "fsck: file %016" PRIx64 ": bad layout", e->handle);
	if (pass == FSCK_FILES) {
		if (grow((void **)&k->files, &k->capfiles, k->nfiles, sizeof(*k->files)))
			return tc_fail(k->fs, -ENOMEM, "fsck: out of memory");
		fi = (int64_t)k->nfiles++;
		k->files[fi] = (struct fsck_file){ e->handle, e->size, 0,
			{ l->strip_size, (uint32_t)l->n_handles } };
		k->out->files++;
	}
	for (size_t s = 0; s < l->n_handles; s++)
		if (add_name(k, l->handles[s], l->servers[s], (uint32_t)s, fi))
			return tc_fail(k->fs, -ENOMEM, "fsck: out of memory");
	return 0;
}

/* (1), (2) and (4): the files or the intents, from the metadata daemon. */
static int list_mds(struct fsck *k, enum fsck_pass pass)
{
	static const char *const what[] = { "fsck: list files", "fsck: list purge intents",
					    "fsck: list files again", "fsck: list purge intents again" };
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	uint64_t after = 0;
	int resume = 0, eof = 0, rc = 0;

	tc_cred(k->fs, &cred, gids);
	while (!eof && !rc) {
		Tessera__FileListRequest m = TESSERA__FILE_LIST_REQUEST__INIT;
		Tessera__FileListReply *rep;
		struct tc_req *r;

		m.cred = &cred;
		m.resume = resume;
		m.after = after;
		m.intents = pass == FSCK_INTENTS || pass == FSCK_INTENTS_AGAIN;
		r = tc_req_new(k->fs, TC_MDS, TP_OP_FILE_LIST, &m.base, NULL, 0);
		if (!(rc = tc_call(k->fs, r, what[pass]))) {
			rep = (Tessera__FileListReply *)r->reply;
			for (size_t i = 0; i < rep->n_files && !rc; i++) {
				rc = take_entry(k, rep->files[i], pass);
				after = rep->files[i]->handle;
				resume = 1;
			}
			eof = rep->eof || !rep->n_files;
		}
		tc_req_free(k->fs, r);
	}
	return rc;
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

static int add_suspect(struct fsck *k, uint32_t s, enum fsck_listing listing, uint64_t h,
		       uint64_t size)
{
	if (grow((void **)&k->suspects, &k->capsuspects, k->nsuspects, sizeof(*k->suspects)))
		return tc_fail(k->fs, -ENOMEM, "fsck: out of memory");
	k->suspects[k->nsuspects++] = (struct fsck_suspect){ h, size, s, listing };
	return 0;
}

/* What a listing's object is, against (1) and (2); one they do not name
 * becomes a suspect. 0 or a negative errno. */
typedef int (*fsck_judge)(struct fsck *k, uint32_t s, const char *where, uint64_t h,
			  uint64_t size);

/* (3): an object a storage daemon holds, against the names. */
static int judge_object(struct fsck *k, uint32_t s, const char *where, uint64_t h, uint64_t size)
{
	const struct fsck_name *nm = find_name(k, h);

	k->out->objects++;
	if (!nm)
		return add_suspect(k, s, FSCK_OBJECTS, h, size);
	if (nm->server != s) {
		k->out->misplaced++;
		say(k, "misplaced: object %016" PRIx64 " on %s: its layout puts it on"
		    " storage daemon %u", h, where, nm->server);
		return 0;
	}
	if (nm->file >= 0) {
		struct fsck_file *f = &k->files[nm->file];
		uint64_t end = tdl_layout_logical_size(&f->tl, nm->slot, size);

		if (end > f->derived)
			f->derived = end;
		return 0;
	}
	k->out->pending++;
	return 0;
}

/* (3b): an object the daemon held but lost (its registry names it, its
 * file is gone). One of a file is reported; one nothing names is a
 * suspect (an orphan record, which a REMOVE clears). */
static int judge_lost(struct fsck *k, uint32_t s, const char *where, uint64_t h, uint64_t size)
{
	const struct fsck_name *nm = find_name(k, h);

	if (!nm)
		return add_suspect(k, s, FSCK_LOST, h, size);
	if (nm->file >= 0) {
		k->out->lost++;
		say(k, "lost: object %016" PRIx64 " of file %016" PRIx64 " on %s: the"
		    " daemon made it, its file is gone (reads of it fail; restore the"
		    " daemon's disk, or remove the file)", h, k->files[nm->file].handle, where);
	}
	return 0; /* an intent's: the purger's REMOVE clears it */
}

/* One page of storage daemon s's objects (or lost ones) after `after`
 * (from the start without `resume`), at most `max` (0: the daemon's page);
 * the caller frees *out. */
static int list_page(struct fsck *k, uint32_t s, enum fsck_listing listing, int resume,
		     uint64_t after, uint32_t max, struct tc_req **out)
{
	Tessera__ObjectListRequest m = TESSERA__OBJECT_LIST_REQUEST__INIT;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	int rc;

	*out = NULL;
	tc_cred(k->fs, &cred, gids);
	m.cred = &cred;
	m.resume = resume;
	m.after = after;
	m.max_entries = max;
	m.lost = listing == FSCK_LOST;
	if ((rc = admin_cap(k, &m.cap)))
		return rc;
	*out = tc_req_new(k->fs, (int)s, TP_OP_OBJECT_LIST, &m.base, NULL, 0);
	return tc_call(k->fs, *out, listing == FSCK_LOST ? "fsck: list lost objects"
							 : "fsck: list objects");
}

/* (3): page through storage daemon s's objects (or lost ones), judging
 * each. */
static int walk_objects(struct fsck *k, uint32_t s, enum fsck_listing listing, fsck_judge judge)
{
	uint64_t after = 0;
	int resume = 0, eof = 0, rc = 0;
	char where[300];

	tc_server_name(k->fs, (int)s, where, sizeof(where));
	while (!eof && !rc) {
		const Tessera__ObjectListReply *rep;
		struct tc_req *r;

		if (!(rc = list_page(k, s, listing, resume, after, 0, &r))) {
			rep = (const Tessera__ObjectListReply *)r->reply;
			for (size_t i = 0; i < rep->n_handles && !rc; i++) {
				after = rep->handles[i];
				rc = judge(k, s, where, after, i < rep->n_sizes ? rep->sizes[i] : 0);
			}
			if (listing == FSCK_LOST)
				after = rep->examined; /* a page may hold no lost object */
			resume = 1;
			eof = rep->eof;
		}
		if (r)
			tc_req_free(k->fs, r);
	}
	return rc;
}

/* The cursor whose next entry is h, if held, in a listing's order: the
 * registry's (lost objects) is the handle's; the objects' is (low byte,
 * handle) (server/ios/ios_list.c), where the entry before h is at most
 * h - 256 (same low byte), or for h < 256 the largest handle of the low
 * byte before. 0 when h is the first possible (list from the start). */
static int cursor_before(enum fsck_listing listing, uint64_t h, uint64_t *after)
{
	if (listing == FSCK_LOST || h >= 256) {
		*after = listing == FSCK_LOST ? h - 1 : h - 256;
		return h != 0;
	}
	*after = UINT64_C(0xffffffffffffff00) | (h - 1);
	return h != 0;
}

/* (5): whether storage daemon s still lists object h (1) or not (0). */
static int still_there(struct fsck *k, const struct fsck_suspect *x)
{
	struct tc_req *r;
	uint64_t after;
	int resume = cursor_before(x->listing, x->handle, &after);
	int rc = list_page(k, x->server, x->listing, resume, after, 1, &r);

	if (!rc) {
		const Tessera__ObjectListReply *rep = (const Tessera__ObjectListReply *)r->reply;

		rc = rep->n_handles && rep->handles[0] == x->handle;
	}
	if (r)
		tc_req_free(k->fs, r);
	return rc;
}

/* (4) named it, or (5): 1 if suspect x is an orphan (reported), 0 if not,
 * or a negative errno. */
static int judge_suspect(struct fsck *k, const struct fsck_suspect *x)
{
	const struct fsck_name *nm = find_name(k, x->handle);
	char where[300];
	int rc;

	if (nm && nm->file == FSCK_LATE_FILE) {
		if (x->listing == FSCK_OBJECTS)
			k->out->young++;
		return 0;
	}
	if (nm) {
		if (x->listing == FSCK_OBJECTS)
			k->out->pending++;
		return 0;
	}
	if ((rc = still_there(k, x)) <= 0)
		return rc;
	k->out->orphans++;
	tc_server_name(k->fs, (int)x->server, where, sizeof(where));
	if (x->listing == FSCK_LOST)
		say(k, "orphan: lost object %016" PRIx64 " on %s: no file or purge intent"
		    " names it%s", x->handle, where, k->repair ? "; removing its record" : "");
	else
		say(k, "orphan: object %016" PRIx64 " on %s, %" PRIu64 " bytes: no file or"
		    " purge intent names it%s", x->handle, where, x->size,
		    k->repair ? "; removing it" : "");
	return 1;
}

static int cmp_suspect(const void *a, const void *b)
{
	const struct fsck_suspect *x = a, *y = b;

	if (x->server != y->server)
		return x->server < y->server ? -1 : 1;
	return x->handle < y->handle ? -1 : x->handle > y->handle;
}

/* (4) and (5), then with repair the orphans removed, a batch per daemon. */
static int judge_suspects(struct fsck *k)
{
	uint64_t doomed[TP_MAX_HANDLES];
	size_t ndoomed = 0;
	int rc;

	if (!k->nsuspects)
		return 0;
	if ((rc = list_mds(k, FSCK_FILES_AGAIN)) || (rc = list_mds(k, FSCK_INTENTS_AGAIN)))
		return rc;
	qsort(k->names, k->nnames, sizeof(*k->names), cmp_name);
	qsort(k->suspects, k->nsuspects, sizeof(*k->suspects), cmp_suspect);
	for (size_t i = 0; i < k->nsuspects; i++) {
		const struct fsck_suspect *x = &k->suspects[i];

		if ((rc = judge_suspect(k, x)) < 0)
			return rc;
		if (rc && k->repair)
			doomed[ndoomed++] = x->handle;
		if (ndoomed && (ndoomed == TP_MAX_HANDLES || i + 1 == k->nsuspects ||
				k->suspects[i + 1].server != x->server)) {
			if ((rc = remove_batch(k, x->server, doomed, ndoomed)))
				return rc;
			ndoomed = 0;
		}
	}
	return 0;
}

int tessera_fsck(tessera_fs *fs, int repair, void (*report)(void *arg, const char *line),
		 void *arg, struct tessera_fsck *out)
{
	struct fsck k = { .fs = fs, .report = report, .arg = arg, .out = out, .repair = repair };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = list_mds(&k, FSCK_FILES)) || (rc = list_mds(&k, FSCK_INTENTS)))
		goto out;
	if (k.nnames)
		qsort(k.names, k.nnames, sizeof(*k.names), cmp_name);
	for (uint32_t s = 0; s < fs->cfg.n_ios; s++)
		if ((rc = walk_objects(&k, s, FSCK_OBJECTS, judge_object)) ||
		    (rc = walk_objects(&k, s, FSCK_LOST, judge_lost)))
			goto out;
	if ((rc = judge_suspects(&k)))
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
	free(k.suspects);
	return rc;
}
