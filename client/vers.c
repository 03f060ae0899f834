/*
 * vers.c - versioned files (issue 25; docs/design.md, "Versioning
 * (chapter 8)"): the client's side of the version protocol.
 *
 * The version server is the file's metadata daemon (VERSION requests);
 * each storage daemon keeps its objects' logs. A modify (write, list and
 * datatype write, truncate) sends its records under a temporary version
 * T = ID# << 32 | IO# (vpure.c numbers them), then commits T with the
 * slots it wrote (tc_vers_modify); a read asks for a read version Vr and
 * the commits the daemons may not know yet (the vmap: tc_vers_read_begin)
 * and sends each object Vr and the vmap entries naming it. fsync and
 * close merge the logs into the objects (tc_vers_merge).
 *
 * A file's state (struct tc_vfile) is under fs->lock: its ID# and next
 * IO#, the read version to end with the next VERSION_READ (read ends are
 * batched: one request per read, not two), and the snapshot a handle
 * opened by tessera_open_snapshot reads as of.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

struct tc_vfile {
	struct tc_vids ids;        /* vpure.c: ID# and IO# */
	uint64_t end_read;         /* a Vr done with, not yet ended (0: none) */
	char snap[TESSERA_SNAPSHOT_NAME_MAX + 1]; /* reads as of it ("": newest) */
	/* Blocks of ID#s (tessera_version_ids; count 0: none): the one this
	 * handle writes under (an ID# in it is never ended by this handle:
	 * its taker's) and the one it took (ended at close). */
	struct tessera_version_ids job, taken;
	uint64_t own_ids;          /* VERSION_ID requests for its own ID# */
};

static int job_id(const struct tc_vfile *v, uint64_t id);
static Tessera__VersionIds *job_block(tessera_file *f, uint64_t t, Tessera__VersionIds *b);
static void taken_end(tessera_file *f);

/* --------------------------------------------------------------- requests */

/* One VERSION request to the metadata daemon: 0 and *out (may be NULL;
 * the caller frees it with protobuf_c_message_free_unpacked), or the
 * failure with the message "<what> <path>: metadata daemon (...): why". */
static int vcall(tessera_fs *fs, Tessera__VersionRequest *m, const char *what, const char *path,
		 Tessera__VersionReply **out)
{
	char label[4200];
	struct tc_req *r = tc_req_new(fs, TC_MDS, TP_OP_VERSION, &m->base, NULL, 0);
	int rc;

	snprintf(label, sizeof(label), "%s %s", what, path);
	rc = tc_call(fs, r, label);
	if (!rc && out) {
		*out = (Tessera__VersionReply *)r->reply;
		r->reply = NULL;
	}
	tc_req_free(fs, r);
	return rc;
}

/* A best-effort VERSION request: its failure leaves the thread's message
 * as it was (a lease ends what it would have). */
static void vcall_quiet(tessera_fs *fs, Tessera__VersionRequest *m, const char *what,
			const char *path)
{
	char keep[sizeof(tc_thread(fs)->errmsg)];

	snprintf(keep, sizeof(keep), "%s", tc_thread(fs)->errmsg);
	(void)vcall(fs, m, what, path, NULL);
	snprintf(tc_thread(fs)->errmsg, sizeof(keep), "%s", keep);
}

static void vreq_init(Tessera__VersionRequest *m, const Tessera__Capability *cap,
		      Tessera__VersionOp op)
{
	Tessera__VersionRequest init = TESSERA__VERSION_REQUEST__INIT;

	*m = init;
	m->file = cap->file;
	m->op = op;
	m->cap = (Tessera__Capability *)cap;
}

/* ------------------------------------------------------------ the file */

int tc_vers_open(tessera_file *f, const Tessera__Capability *cap)
{
	int versioned = f->layout.kind == TESSERA_LAYOUT_VERSIONED ||
			(cap && (cap->rights & TP_CAP_VERSIONED));

	if (!versioned)
		return 0;
	f->layout.kind = TESSERA_LAYOUT_VERSIONED;
	f->vers = calloc(1, sizeof(*f->vers));
	if (!f->vers)
		return tc_fail(f->fs, -ENOMEM, "open %s: out of memory", f->path);
	return 0;
}

int tc_vers_set_snapshot(tessera_file *f, const char *name)
{
	if (!f->vers)
		return tc_fail(f->fs, -EINVAL, "snapshot %s of %s: file is not versioned", name,
			       f->path);
	snprintf(f->vers->snap, sizeof(f->vers->snap), "%s", name);
	return 0;
}

const char *tc_vers_snapshot(const tessera_file *f)
{
	return f->vers && f->vers->snap[0] ? f->vers->snap : NULL;
}

/* Take f's pending read end (0: none). */
static uint64_t take_end_read(tessera_file *f)
{
	uint64_t vr;

	pthread_mutex_lock(&f->fs->lock);
	vr = f->vers->end_read;
	f->vers->end_read = 0;
	pthread_mutex_unlock(&f->fs->lock);
	return vr;
}

static void read_end_now(tessera_fs *fs, const Tessera__Capability *cap, uint64_t vr,
			 const char *path)
{
	Tessera__VersionRequest m;

	vreq_init(&m, cap, TESSERA__VERSION_OP__VERSION_READ_END);
	m.version = vr;
	vcall_quiet(fs, &m, "end read of", path);
}

static void id_end(tessera_file *f, uint32_t id)
{
	Tessera__VersionRequest m;
	int borrowed;

	pthread_mutex_lock(&f->fs->lock);
	borrowed = job_id(f->vers, id);
	pthread_mutex_unlock(&f->fs->lock);
	if (!id || borrowed)
		return;
	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_ID_END);
	m.version = id;
	vcall_quiet(f->fs, &m, "end writer ID of", f->path);
}

/* Close: merge what this handle wrote, end its ID and its last read. */
int tc_vers_close(tessera_file *f)
{
	uint64_t end;
	int rc = 0;

	if (!f->vers)
		return 0;
	if ((f->flags & O_ACCMODE) != O_RDONLY && f->vers->ids.id)
		rc = tc_vers_merge(f->fs, &f->layout, tc_cap_get(f), f->path);
	id_end(f, f->vers->ids.id);
	taken_end(f);
	end = take_end_read(f);
	if (end)
		read_end_now(f->fs, tc_cap_get(f), end, f->path);
	free(f->vers);
	f->vers = NULL;
	return rc;
}

/* ------------------------------------------------------------- reads */

int tc_vers_read_begin(tessera_fs *fs, const Tessera__Capability *cap, const char *snap,
		       uint64_t end_read, const char *path, struct tc_vread *rd)
{
	Tessera__VersionRequest m;
	char what[TESSERA_SNAPSHOT_NAME_MAX + 64];
	int rc;

	memset(rd, 0, sizeof(*rd));
	vreq_init(&m, cap, TESSERA__VERSION_OP__VERSION_READ);
	m.end_read = end_read;
	if (snap)
		m.name = (char *)snap;
	if (snap)
		snprintf(what, sizeof(what), "read as of snapshot '%s' of", snap);
	else
		snprintf(what, sizeof(what), "read version of");
	rc = vcall(fs, &m, what, path, &rd->rep);
	if (rc)
		return rc;
	rd->vr = rd->rep->version;
	return 0;
}

void tc_vread_free(struct tc_vread *rd)
{
	if (rd->rep)
		protobuf_c_message_free_unpacked(&rd->rep->base, NULL);
	rd->rep = NULL;
}

int tc_vfile_read_begin(tessera_file *f, struct tc_vread *rd, const char *path)
{
	uint64_t end = take_end_read(f);

	/* (a failed request may not have ended `end`: the lease will) */
	return tc_vers_read_begin(f->fs, tc_cap_get(f), tc_vers_snapshot(f), end, path, rd);
}

/* The read is over: its Vr ends with the next read's request (or at
 * close); an older one still waiting is ended now. A read at version 0
 * (nothing committed yet) cannot wait: end_read 0 means "none". */
void tc_vfile_read_done(tessera_file *f, struct tc_vread *rd)
{
	uint64_t old = 0;

	if (rd->rep && !rd->vr)
		read_end_now(f->fs, tc_cap_get(f), 0, f->path);
	if (rd->rep && rd->vr) {
		pthread_mutex_lock(&f->fs->lock);
		old = f->vers->end_read;
		f->vers->end_read = rd->vr;
		pthread_mutex_unlock(&f->fs->lock);
	}
	if (old)
		read_end_now(f->fs, tc_cap_get(f), old, f->path);
	tc_vread_free(rd);
}

/* The size of a versioned file: at a fresh read version (as of snapshot
 * `snap`, or the newest), ended at once. */
int tc_vers_file_size(tessera_fs *fs, const struct tessera_layout *layout,
		      const Tessera__Capability *cap, const char *path, const char *snap,
		      uint64_t *size, int64_t *data_mtime_ns, uint64_t *blocks)
{
	struct tc_vread rd;
	/* A stat's capability (STAT alone) may take a read version: it
	 * learns versions, never bytes. */
	int rc = tc_vers_read_begin(fs, cap, snap, 0, path, &rd);

	if (!rc) {
		rc = tc_file_size_at(fs, layout, cap, path, &rd, size, data_mtime_ns, blocks);
		read_end_now(fs, cap, rd.vr, path);
		tc_vread_free(&rd);
	}
	return rc;
}

/* ------------------------------------------------- merge triggers */

/* Merges without the client: the version server merges a file whose
 * commits stopped for vmerge_idle_ms or pile up, and one whose commit says
 * a storage daemon's log is filling (its write reply's vlog_half, passed
 * on in the next commit of the thread that wrote). The writer never
 * merges because of it: the write keeps its latency. */

void tc_vers_note_replies(tessera_fs *fs, struct tc_req *const *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct tc_req *r = reqs[i];
		int write = r && (r->opcode == TP_OP_WRITE || r->opcode == TP_OP_LIST_WRITE ||
				  r->opcode == TP_OP_DTYPE_WRITE);

		if (write && r->replied && !r->status && r->reply &&
		    ((const Tessera__WriteReply *)r->reply)->vlog_half) {
			tc_thread(fs)->vlog_half = 1;
			return;
		}
	}
}

static int take_log_half(tessera_fs *fs)
{
	struct tc_thread *th = tc_thread(fs);
	int half = th->vlog_half;

	th->vlog_half = 0;
	return half;
}

/* ------------------------------------------------------------- writes */

/* A new ID# for f (the first write, IO# ran out, or the old one is
 * given up: `stale`, ended first so that the next merge drops its
 * uncommitted records). */
static int new_id(tessera_file *f, uint32_t stale)
{
	Tessera__VersionRequest m;
	Tessera__VersionReply *rep;
	int rc;

	id_end(f, stale);
	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_ID);
	m.count = 1;
	rc = vcall(f->fs, &m, "writer ID for", f->path, &rep);
	if (rc)
		return rc;
	if (!rep->id_first)
		rc = tc_fail(f->fs, -EPROTO, "writer ID for %s: the metadata daemon sent ID 0",
			     f->path);
	pthread_mutex_lock(&f->fs->lock);
	f->vers->own_ids++;
	if (!rc)
		tc_vids_set(&f->vers->ids, rep->id_first);
	pthread_mutex_unlock(&f->fs->lock);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

/* The next T of f: a fresh ID# first when it has none or its IO#s ran
 * out. */
static int next_t(tessera_file *f, uint64_t *t)
{
	uint32_t spent;

	for (int tries = 0; tries < 3; tries++) {
		int rc;

		pthread_mutex_lock(&f->fs->lock);
		*t = tc_vids_next(&f->vers->ids, &spent);
		pthread_mutex_unlock(&f->fs->lock);
		if (*t)
			return 0;
		if ((rc = new_id(f, spent)))
			return rc;
	}
	return tc_fail(f->fs, -EAGAIN, "write %s: no writer ID could be kept", f->path);
}

/* Whether f's current ID is still `id`; if so give it up for a new one. */
static int renew_id(tessera_file *f, uint64_t t)
{
	uint32_t id = (uint32_t)(t >> 32), cur;

	pthread_mutex_lock(&f->fs->lock);
	cur = f->vers->ids.id;
	if (cur == id)
		f->vers->ids.id = 0;
	pthread_mutex_unlock(&f->fs->lock);
	return cur == id ? new_id(f, id) : 0;
}

/* A send failed for good: if f still writes under T's ID#, give it up
 * (ended quietly; the next write takes a new one), so that the next merge
 * drops what the failed call left uncommitted in the logs (up to a
 * whole call's share of each object) instead of it waiting for close. */
static void give_up_id(tessera_file *f, uint64_t t)
{
	uint32_t id = (uint32_t)(t >> 32);
	int mine;

	pthread_mutex_lock(&f->fs->lock);
	mine = f->vers->ids.id == id;
	if (mine)
		f->vers->ids.id = 0;
	pthread_mutex_unlock(&f->fs->lock);
	if (mine)
		id_end(f, id);
}

static int commit(tessera_file *f, uint64_t t, const uint32_t *slots, size_t n, const char *label)
{
	Tessera__VersionRequest m;
	Tessera__VersionIds b;

	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_COMMIT);
	m.ids = job_block(f, t, &b);
	m.log_half = take_log_half(f->fs);
	m.t = t;
	m.slots = (uint32_t *)slots;
	m.n_slots = n;
	return vcall(f->fs, &m, "commit", label, NULL);
}

/* A commit refused because the version server lost our ID (restarted:
 * ESTALE) or no longer counts it ours (a new session: EPERM): the
 * records must be written again under a new ID. */
static int id_lost(int rc)
{
	return rc == -ESTALE || rc == -EPERM;
}

/* Commit T; a version server with too many unmerged commits (EBUSY) gets
 * a merge first, once. */
static int commit_or_merge(tessera_file *f, uint64_t t, const uint32_t *slots, size_t n,
			   const char *label)
{
	int rc = commit(f, t, slots, n, label);

	if (rc == -EBUSY && !tc_vers_merge(f->fs, &f->layout, tc_cap_get(f), f->path))
		rc = commit(f, t, slots, n, label);
	return rc;
}

int tc_vers_modify(tessera_file *f, tc_vsend_fn send, void *arg, const char *label)
{
	uint32_t slots[TESSERA_MAX_STRIPE];
	int merged = 0, renewed = 0, rc;

	for (;;) {
		uint64_t t;
		size_t n = 0;

		if ((rc = next_t(f, &t)))
			return rc;
		rc = send(arg, t, slots, &n);
		if (rc == -EBUSY && !merged) {
			/* a full log: drop this try's records with its ID, merge, again */
			merged = 1;
			if (!(rc = renew_id(f, t)) &&
			    !(rc = tc_vers_merge(f->fs, &f->layout, tc_cap_get(f), f->path)))
				continue;
		}
		if (rc) {
			give_up_id(f, t);
			return rc;
		}
		rc = n ? commit_or_merge(f, t, slots, n, label) : 0;
		if (id_lost(rc) && !renewed) {
			renewed = 1;
			if (!(rc = renew_id(f, t)))
				continue;
		}
		return rc;
	}
}

/* -------------------------------------------------------------- merges */

/* VLOG MERGE of object `slot`: the grant and the vmap entries naming it. */
static struct tc_req *merge_req(tessera_fs *fs, const struct tessera_layout *l, uint32_t slot,
				const Tessera__Capability *cap, const Tessera__VersionReply *rep,
				Tessera__VersionCommit **pick)
{
	Tessera__VlogRequest m = TESSERA__VLOG_REQUEST__INIT;

	m.handle = l->handles[slot];
	m.op = TESSERA__VLOG_OP__VLOG_MERGE;
	m.grant = rep->grant;
	m.cap = (Tessera__Capability *)cap;
	m.n_vmap = tc_vmap_pick(rep->vmap, rep->n_vmap, &l->handles[slot], 1, pick);
	m.vmap = pick;
	return tc_req_new(fs, (int)l->servers[slot], TP_OP_VLOG, &m.base, NULL, 0);
}

/* VERSION_MERGED of object `slot`: the version its daemon says it merged
 * up to (a read pinned below the grant's bound stops it there), else the
 * bound. */
static struct tc_req *merged_req(tessera_fs *fs, const struct tessera_layout *l, uint32_t slot,
				 const Tessera__Capability *cap, uint64_t upto)
{
	Tessera__VersionRequest m;

	vreq_init(&m, cap, TESSERA__VERSION_OP__VERSION_MERGED);
	m.handle = l->handles[slot];
	m.version = upto;
	return tc_req_new(fs, TC_MDS, TP_OP_VERSION, &m.base, NULL, 0);
}

/* What a VLOG MERGE's reply says the object merged up to, at most the
 * grant's bound (0 in a reply: the bound). */
static uint64_t merged_upto(const struct tc_req *r, uint64_t bound)
{
	const Tessera__VlogReply *rep = (const Tessera__VlogReply *)r->reply;

	return rep && rep->merged && rep->merged < bound ? rep->merged : bound;
}

/* One request per object, all at once: VLOG MERGE (merged NULL; each
 * object's merged version noted in `upto`), or VERSION_MERGED with those
 * versions. The first failure named. */
static int run_per_object(tessera_fs *fs, const struct tessera_layout *l,
			  const Tessera__Capability *cap, const Tessera__VersionReply *rep,
			  uint64_t *upto, int merged_step, const char *label)
{
	struct tc_req *reqs[TESSERA_MAX_STRIPE] = { 0 };
	Tessera__VersionCommit **pick = calloc(rep->n_vmap + 1, sizeof(*pick));
	int rc = pick ? 0 : -ENOMEM;

	for (uint32_t i = 0; !rc && i < l->count; i++) {
		reqs[i] = merged_step ? merged_req(fs, l, i, cap, upto[i])
				      : merge_req(fs, l, i, cap, rep, pick);
		if (!reqs[i])
			rc = -ENOMEM;
	}
	if (rc)
		rc = tc_fail(fs, rc, "%s: out of memory", label);
	else if ((rc = tc_run(fs, reqs, l->count)))
		for (uint32_t i = 0; i < l->count; i++)
			if (reqs[i]->status) {
				tc_req_fail(fs, reqs[i], label);
				break;
			}
	for (uint32_t i = 0; !rc && !merged_step && i < l->count; i++)
		upto[i] = merged_upto(reqs[i], rep->grant->upto);
	for (uint32_t i = 0; i < l->count; i++)
		tc_req_free(fs, reqs[i]);
	free(pick);
	return rc;
}

int tc_vers_merge(tessera_fs *fs, const struct tessera_layout *l, const Tessera__Capability *cap,
		  const char *path)
{
	Tessera__VersionRequest m;
	Tessera__VersionReply *rep;
	uint64_t upto[TESSERA_MAX_STRIPE];
	char label[4200];
	int rc;

	vreq_init(&m, cap, TESSERA__VERSION_OP__VERSION_MERGE);
	if ((rc = vcall(fs, &m, "merge", path, &rep)))
		return rc;
	snprintf(label, sizeof(label), "merge %s", path);
	if (!rep->grant)
		rc = tc_fail(fs, -EPROTO, "%s: the metadata daemon sent no grant", label);
	if (!rc)
		rc = run_per_object(fs, l, cap, rep, upto, 0, label);
	if (!rc) {
		snprintf(label, sizeof(label), "merged %s", path);
		rc = run_per_object(fs, l, cap, rep, upto, 1, label);
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

/* ------------------------------------------------------------ truncate */

struct vtrunc {
	tessera_file *f;
	uint64_t size;
};

static int trunc_send(void *arg, uint64_t t, uint32_t *slots, size_t *n)
{
	struct vtrunc *v = arg;
	tessera_file *f = v->f;
	int rc = tc_truncate_objects_v(f->fs, &f->layout, tc_cap_get(f), f->path, v->size, t);

	for (uint32_t i = 0; !rc && i < f->layout.count; i++)
		slots[(*n)++] = i;
	return rc;
}

int tc_vers_truncate(tessera_file *f, uint64_t size)
{
	struct vtrunc v = { f, size };
	char label[4200];

	snprintf(label, sizeof(label), "truncate %s", f->path);
	return tc_vers_modify(f, trunc_send, &v, label);
}

/* ------------------------------------------------------------- the API */

static int need_versioned(tessera_file *f, const char *what)
{
	if (!f->vers)
		return tc_fail(f->fs, -EINVAL, "%s %s: file is not versioned (create it with "
			       "`tessera setstripe --versioned`)", what, f->path);
	return 0;
}

static int need_writer(tessera_file *f, const char *what)
{
	int rc = need_versioned(f, what);

	if (!rc && (f->flags & O_ACCMODE) == O_RDONLY)
		rc = tc_fail(f->fs, -EBADF, "%s %s: file is open read-only", what, f->path);
	return rc;
}

static int snap_name_ok(tessera_fs *fs, const char *name, const char *what, const char *path)
{
	size_t len = name ? strlen(name) : 0;

	if (!len || len > TESSERA_SNAPSHOT_NAME_MAX)
		return tc_fail(fs, -EINVAL, "%s %s: snapshot name must have 1 to %d bytes", what,
			       path, TESSERA_SNAPSHOT_NAME_MAX);
	return 0;
}

static int snap_call(tessera_file *f, Tessera__VersionOp op, const char *name, const char *what,
		     uint64_t *version)
{
	Tessera__VersionRequest m;
	Tessera__VersionReply *rep;
	char label[4200];
	int rc = need_writer(f, what);

	if (!rc)
		rc = snap_name_ok(f->fs, name, what, f->path);
	if (rc)
		return rc;
	vreq_init(&m, tc_cap_get(f), op);
	m.name = (char *)name;
	snprintf(label, sizeof(label), "%s (snapshot '%s')", f->path, name);
	if ((rc = vcall(f->fs, &m, what, label, &rep)))
		return rc;
	if (version)
		*version = rep->version;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int tessera_snapshot_create(tessera_file *f, const char *name, uint64_t *version)
{
	return snap_call(f, TESSERA__VERSION_OP__VERSION_SNAP_CREATE, name, "snapshot create",
			 version);
}

int tessera_snapshot_drop(tessera_file *f, const char *name)
{
	return snap_call(f, TESSERA__VERSION_OP__VERSION_SNAP_DROP, name, "snapshot drop", NULL);
}

static void snap_from_msg(const Tessera__VersionSnapshot *s, struct tessera_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", s->name ? s->name : "");
	out->version = s->version;
	out->ctime.tv_sec = (time_t)(s->ctime_ns / 1000000000);
	out->ctime.tv_nsec = (long)(s->ctime_ns % 1000000000);
}

int tessera_snapshot_list(tessera_file *f, struct tessera_snapshot *out, size_t max, size_t *n)
{
	Tessera__VersionRequest m;
	Tessera__VersionReply *rep;
	int rc = need_versioned(f, "snapshot list");

	if (rc)
		return rc;
	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_SNAP_LIST);
	if ((rc = vcall(f->fs, &m, "snapshot list", f->path, &rep)))
		return rc;
	*n = rep->n_snapshots;
	for (size_t i = 0; i < rep->n_snapshots && i < max; i++)
		snap_from_msg(rep->snapshots[i], &out[i]);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int tessera_version_state(tessera_file *f, struct tessera_version_state *out)
{
	Tessera__VersionRequest m;
	Tessera__VersionReply *rep;
	int rc = need_versioned(f, "version state of");

	if (rc)
		return rc;
	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_STATE);
	if ((rc = vcall(f->fs, &m, "version state of", f->path, &rep)))
		return rc;
	memset(out, 0, sizeof(*out));
	out->newest = rep->newest;
	out->merged = rep->merged;
	out->unmerged = rep->unmerged;
	out->reads = rep->reads;
	out->ids = rep->ids;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	/* (STATE's reply has no count of snapshots: the list gives it) */
	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_SNAP_LIST);
	if ((rc = vcall(f->fs, &m, "snapshot list", f->path, &rep)))
		return rc;
	out->snapshots = (uint32_t)rep->n_snapshots;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

/* VLOG STATE of each object, all at once; out[i] for slot i. */
static int logs_round(tessera_file *f, struct tc_req **reqs, uint32_t n)
{
	const Tessera__Capability *cap = tc_cap_get(f);
	char label[4200];
	int rc = 0;

	snprintf(label, sizeof(label), "log state of %s", f->path);
	for (uint32_t i = 0; i < n; i++) {
		Tessera__VlogRequest m = TESSERA__VLOG_REQUEST__INIT;

		m.handle = f->layout.handles[i];
		m.op = TESSERA__VLOG_OP__VLOG_STATE;
		m.cap = (Tessera__Capability *)cap;
		reqs[i] = tc_req_new(f->fs, (int)f->layout.servers[i], TP_OP_VLOG, &m.base, NULL, 0);
		if (!reqs[i])
			return tc_fail(f->fs, -ENOMEM, "%s: out of memory", label);
	}
	if ((rc = tc_run(f->fs, reqs, n)))
		for (uint32_t i = 0; i < n; i++)
			if (reqs[i]->status)
				return tc_req_fail(f->fs, reqs[i], label);
	return rc;
}

int tessera_version_logs(tessera_file *f, struct tessera_vlog_state *out, size_t n_out)
{
	struct tc_req *reqs[TESSERA_MAX_STRIPE] = { 0 };
	uint32_t n = f->layout.count < n_out ? f->layout.count : (uint32_t)n_out;
	int rc = need_versioned(f, "log state of");

	if (!rc)
		rc = logs_round(f, reqs, n);
	for (uint32_t i = 0; !rc && i < n; i++) {
		const Tessera__VlogReply *r = (const Tessera__VlogReply *)reqs[i]->reply;

		out[i] = (struct tessera_vlog_state){
			.slot = i, .server = f->layout.servers[i], .handle = f->layout.handles[i],
			.merged = r->merged, .uncommitted = r->uncommitted,
			.committed = r->committed, .log_bytes = r->log_bytes,
			.index_pieces = r->index_pieces,
		};
	}
	for (uint32_t i = 0; i < n; i++)
		tc_req_free(f->fs, reqs[i]);
	return rc;
}

int tessera_version_merge(tessera_file *f)
{
	int rc = need_writer(f, "merge");

	if (!rc)
		TC_CAP_RETRY(f, rc, tc_vers_merge(f->fs, &f->layout, tc_cap_get(f), f->path));
	return rc;
}

int tessera_open_snapshot(tessera_fs *fs, const char *path, const char *name, tessera_file **out)
{
	tessera_file *f;
	int rc = snap_name_ok(fs, name, "open snapshot of", path);

	if (rc)
		return rc;
	if ((rc = tessera_open(fs, path, O_RDONLY, 0, NULL, &f)))
		return rc;
	rc = tc_vers_set_snapshot(f, name);
	if (!rc) {
		/* ask once now: an unknown name fails the open, not the first read */
		struct tc_vread rd;

		rc = tc_vfile_read_begin(f, &rd, f->path);
		if (!rc)
			tc_vfile_read_done(f, &rd);
	}
	if (rc) {
		char keep[sizeof(tc_thread(fs)->errmsg)];

		snprintf(keep, sizeof(keep), "%s", tc_thread(fs)->errmsg);
		tessera_close(f);
		snprintf(tc_thread(fs)->errmsg, sizeof(keep), "%s", keep);
		return rc;
	}
	*out = f;
	return 0;
}

/* ------------------------------------------------- writer IDs for a job
 *
 * One handle takes a block of ID#s (VERSION_ID with a count: one request
 * for the job), signed by the version server; handles of other sessions
 * write under an ID# of it, their commits carrying the block. The block's
 * ID#s are their taker's: only it ends them (tessera_version_ids_end, its
 * close, its session's end); a handle that borrows one never ends it, and
 * once it is no longer live (its commit answers ESTALE) or its IO#s ran
 * out, takes an ID# of its own (new_id). Blocks are under fs->lock. */

/* Whether ID# id is of the block v writes under. */
static int job_id(const struct tc_vfile *v, uint64_t id)
{
	const struct tessera_version_ids *j = &v->job;

	return j->count && id >= j->first && id - j->first < j->count;
}

static void block_to_msg(const struct tessera_version_ids *ids, Tessera__VersionIds *b)
{
	tessera__version_ids__init(b);
	b->file = ids->file;
	b->first = ids->first;
	b->count = ids->count;
	b->mac.data = (uint8_t *)ids->mac;
	b->mac.len = TESSERA_VERSION_IDS_MAC;
}

/* The block a commit of T t carries (its ID# borrowed), into *b; NULL
 * when t's ID# is the handle's own. *b points into f->vers: a block
 * changes only by this handle's calls, not while it commits. */
static Tessera__VersionIds *job_block(tessera_file *f, uint64_t t, Tessera__VersionIds *b)
{
	int borrowed;

	pthread_mutex_lock(&f->fs->lock);
	borrowed = job_id(f->vers, t >> 32);
	if (borrowed)
		block_to_msg(&f->vers->job, b);
	pthread_mutex_unlock(&f->fs->lock);
	return borrowed ? b : NULL;
}

/* The ID_END request of a block, into *m (which points to *b). */
static void block_end_req(tessera_file *f, const struct tessera_version_ids *ids,
			  Tessera__VersionRequest *m, Tessera__VersionIds *b)
{
	vreq_init(m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_ID_END);
	block_to_msg(ids, b);
	m->ids = b;
}

/* Close: the block this handle took ends (its borrowers take their own;
 * a failure leaves it to the session's end). */
static void taken_end(tessera_file *f)
{
	struct tessera_version_ids taken = f->vers->taken;
	Tessera__VersionRequest m;
	Tessera__VersionIds b;

	if (taken.count) {
		block_end_req(f, &taken, &m, &b);
		vcall_quiet(f->fs, &m, "end writer IDs of", f->path);
	}
	f->vers->taken.count = 0;
}

/* The block a VERSION_ID reply signed: checked against the request. */
static int block_from_reply(tessera_file *f, const Tessera__VersionReply *rep, uint32_t count,
			    struct tessera_version_ids *out)
{
	const Tessera__VersionIds *b = rep->signed_ids;

	if (!b || b->file != tc_cap_get(f)->file || b->count != count || !b->first ||
	    b->mac.len != TESSERA_VERSION_IDS_MAC)
		return tc_fail(f->fs, -EPROTO, "writer IDs for %s: the metadata daemon sent no"
			       " signed block of %u IDs (an older daemon?)", f->path, count);
	memset(out, 0, sizeof(*out));
	out->file = b->file;
	out->first = b->first;
	out->count = b->count;
	memcpy(out->mac, b->mac.data, TESSERA_VERSION_IDS_MAC);
	return 0;
}

int tessera_version_ids(tessera_file *f, uint32_t count, struct tessera_version_ids *out)
{
	Tessera__VersionRequest m;
	Tessera__VersionReply *rep;
	int rc = need_writer(f, "writer IDs for");

	if (rc)
		return rc;
	if (count < 1 || count > TESSERA_VERSION_IDS_MAX)
		return tc_fail(f->fs, -EINVAL, "writer IDs for %s: %u asked for (1 to %d)",
			       f->path, count, TESSERA_VERSION_IDS_MAX);
	if (f->vers->taken.count)
		return tc_fail(f->fs, -EBUSY, "writer IDs for %s: this handle holds IDs %u..%u"
			       " (end them first)", f->path, f->vers->taken.first,
			       f->vers->taken.first + f->vers->taken.count - 1);
	vreq_init(&m, tc_cap_get(f), TESSERA__VERSION_OP__VERSION_ID);
	m.count = count;
	if ((rc = vcall(f->fs, &m, "writer IDs for", f->path, &rep)))
		return rc;
	rc = block_from_reply(f, rep, count, out);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	if (!rc)
		f->vers->taken = *out;
	return rc;
}

int tessera_version_use_id(tessera_file *f, const struct tessera_version_ids *ids,
			   uint32_t index)
{
	uint32_t own = 0;
	int rc = need_writer(f, "use writer ID for");

	if (rc)
		return rc;
	if (ids->file != tc_cap_get(f)->file || !ids->first || !ids->count ||
	    ids->count > TESSERA_VERSION_IDS_MAX || ids->first > UINT32_MAX - ids->count + 1)
		return tc_fail(f->fs, -EINVAL, "use writer ID for %s: the block is not this"
			       " file's (file %016llx, IDs %u + %u)", f->path,
			       (unsigned long long)ids->file, ids->first, ids->count);
	if (index >= ids->count)
		return tc_fail(f->fs, -EINVAL, "use writer ID for %s: index %u of a block of %u",
			       f->path, index, ids->count);
	pthread_mutex_lock(&f->fs->lock);
	if (!job_id(f->vers, f->vers->ids.id))
		own = f->vers->ids.id;
	f->vers->job = *ids;
	tc_vids_set(&f->vers->ids, ids->first + index);
	pthread_mutex_unlock(&f->fs->lock);
	id_end(f, own);  /* the handle's own ID#, if it had one: done with */
	return 0;
}

int tessera_version_ids_end(tessera_file *f, const struct tessera_version_ids *ids)
{
	Tessera__VersionRequest m;
	Tessera__VersionIds b;
	int rc = need_versioned(f, "end writer IDs of");

	if (rc)
		return rc;
	block_end_req(f, ids, &m, &b);
	if ((rc = vcall(f->fs, &m, "end writer IDs of", f->path, NULL)))
		return rc;
	pthread_mutex_lock(&f->fs->lock);
	if (f->vers->taken.count && f->vers->taken.first == ids->first &&
	    f->vers->taken.file == ids->file)
		f->vers->taken.count = 0;
	pthread_mutex_unlock(&f->fs->lock);
	return 0;
}

uint64_t tessera_version_own_ids(tessera_file *f)
{
	uint64_t n = 0;

	if (!f->vers)
		return 0;
	pthread_mutex_lock(&f->fs->lock);
	n = f->vers->own_ids;
	pthread_mutex_unlock(&f->fs->lock);
	return n;
}
