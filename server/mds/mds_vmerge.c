/*
 * mds_vmerge.c - the version server's merger (mds_vmerge.h says what and
 * why): due files in, VLOG MERGE requests out, the merged versions back
 * into the version tables.
 *
 * The files with unmerged commits that the merger knows of are in a hash
 * (by handle) and an array; each tick looks at up to VM_SCAN of them from
 * a rotating cursor and starts a round for each due one while fewer than
 * `vmerge_files` rounds run. A round sends one VLOG MERGE per object of
 * the layout, each when its storage daemon's slot is free (one request in
 * flight per daemon, mds_peers.h), each with a grant and vmap taken just
 * before it is sent (so a grant never expires waiting, and a commit made
 * meanwhile may merge too). It ends when every object answered or failed;
 * a failed object (its daemon down, restarting, refusing) makes the file
 * wait VM_RETRY_MS before its next round, which asks that daemon again
 * once its backoff ended. A round that a read in progress or a snapshot
 * keeps from merging anything (the grant's bound at the merged floor) is
 * not sent; the file is looked at again after the idle time.
 */
#include "mds_vmerge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "mds_peers.h"
#include "mds_store.h"
#include "mds_version.h"
#include "tp_clock.h"

#define VM_BUCKETS 1024
#define VM_FILES MDS_VERSION_TABLES /* files tracked at most */
#define VM_SCAN 256                 /* tracked files looked at per tick */
#define VM_START_SCAN 16            /* store seeks per tick after a start */
#define VM_RETRY_MS 1000            /* after a round with a failed object */

/* Where an object of a round is. */
enum vm_obj { VM_PENDING, VM_SENT, VM_DONE, VM_FAILED };

struct vm_file {
	uint64_t file;
	uint32_t count;
	uint64_t *handles;          /* count, slot order (one block with the rest) */
	uint32_t *servers;          /* count: storage daemon of slot i */
	uint64_t *upto;             /* count: the bound its VLOG MERGE carried */
	uint8_t *obj;               /* count: enum vm_obj (a round's) */
	struct mds_vmerge_seen seen;
	int active;                 /* a round runs (in m->active) */
	int gone;                   /* forgotten mid-round: freed when it ends */
	uint32_t idx;               /* in m->files (not gone) */
	struct vm_file *hnext;
};

/* Whose VLOG MERGE a storage daemon's slot carries. */
struct vm_flight {
	struct vm_file *f;          /* NULL: none of ours */
	uint32_t slot;
};

struct mds_vmerger {
	const struct tp_config *cfg;
	struct mds_store *store;
	struct mds_versions *vs;
	const struct cap_key *key;
	struct mds_vmerge_rule rule;
	uint32_t max_active;
	struct mds_peers *peers;
	const struct mds_peers_log *log; /* the tick's, while it runs */
	struct vm_file *buckets[VM_BUCKETS];
	struct vm_file **files;     /* tracked, unordered */
	uint32_t nfiles, cfiles;
	uint32_t cursor;            /* the scan's next in files */
	int full_said;              /* "too many files" logged */
	struct vm_file **active;    /* max_active */
	uint32_t nactive;
	struct vm_file **walk;      /* max_active: the tick's copy of active */
	struct vm_flight *flight;   /* cfg->n_ios */
	int scanning;               /* finding the store's unmerged files */
	uint64_t scan_from;
};

/* ------------------------------------------------------------ the rule */

enum mds_vmerge_why mds_vmerge_due(const struct mds_vmerge_rule *r,
				   const struct mds_vmerge_seen *s, uint64_t now_ns)
{
	if ((!s->unmerged && !s->dead_ids) || now_ns < s->not_before_ns)
		return MDS_VMERGE_NOT_DUE;
	if (s->dead_ids)
		return MDS_VMERGE_DEAD_IDS;
	if (s->log_half)
		return MDS_VMERGE_LOG_HALF;
	if (s->unmerged >= r->commits)
		return MDS_VMERGE_COMMITS;
	if (now_ns >= s->last_commit_ns && now_ns - s->last_commit_ns >= r->idle_ns)
		return MDS_VMERGE_IDLE;
	return MDS_VMERGE_NOT_DUE;
}

/* ------------------------------------------------------------ files */

static struct vm_file **bucket(struct mds_vmerger *m, uint64_t file)
{
	return &m->buckets[(file ^ (file >> 13) ^ (file >> 37)) % VM_BUCKETS];
}

static struct vm_file *lookup(struct mds_vmerger *m, uint64_t file)
{
	struct vm_file *f = *bucket(m, file);

	while (f && f->file != file)
		f = f->hnext;
	return f;
}

static struct mds_vfile vfile_of(const struct vm_file *f)
{
	return (struct mds_vfile){ f->file, f->count, f->handles };
}

/* Track file f (not tracked yet): NULL when full or out of memory. */
static struct vm_file *track(struct mds_vmerger *m, const struct mds_vfile *f,
			     const uint32_t *servers)
{
	size_t n = f->count;
	struct vm_file *v;

	if (m->nfiles >= VM_FILES)
		return NULL;
	if (m->nfiles == m->cfiles) {
		uint32_t c = m->cfiles ? m->cfiles * 2 : 64;
		struct vm_file **a = realloc(m->files, c * sizeof(*a));

		if (!a)
			return NULL;
		m->files = a;
		m->cfiles = c;
	}
	if (!(v = calloc(1, sizeof(*v) + n * (8 + 8 + 4 + 1))))
		return NULL;
	v->file = f->file;
	v->count = f->count;
	v->handles = (uint64_t *)(v + 1);
	v->upto = v->handles + n;
	v->servers = (uint32_t *)(v->upto + n);
	v->obj = (uint8_t *)(v->servers + n);
	memcpy(v->handles, f->handles, n * 8);
	memcpy(v->servers, servers, n * 4);
	v->hnext = *bucket(m, f->file);
	*bucket(m, f->file) = v;
	v->idx = m->nfiles;
	m->files[m->nfiles++] = v;
	return v;
}

/* Stop tracking v: out of the hash and the array (its slot in the array
 * takes the last file). Freed unless a round still runs (then `gone`). */
static void untrack(struct mds_vmerger *m, struct vm_file *v)
{
	struct vm_file **p = bucket(m, v->file);

	while (*p != v)
		p = &(*p)->hnext;
	*p = v->hnext;
	m->files[v->idx] = m->files[--m->nfiles];
	m->files[v->idx]->idx = v->idx;
	if (v->active) {
		v->gone = 1;
		for (uint32_t i = 0; i < v->count; i++)
			if (v->obj[i] == VM_PENDING)
				v->obj[i] = VM_DONE;
		return;
	}
	free(v);
}

/* Refresh what v knows of its table: 0, or a negative errno (logged). */
static int refresh(struct mds_vmerger *m, struct vm_file *v)
{
	struct mds_vfile f = vfile_of(v);
	struct mds_vstate st;
	int rc = mds_version_state(m->vs, &f, &st);

	if (rc)
		mds_peers_say(m->peers, m->log, "%s", mds_versions_errmsg(m->vs));
	else
		v->seen.unmerged = st.unmerged;
	return rc;
}

/* ------------------------------------------------------------ create */

static void vm_answered(void *user, uint32_t s, const struct tp_frame *fr);
static void vm_failed(void *user, uint32_t s, int rc);
static const struct mds_peers_ops vm_ops = { vm_answered, vm_failed };

int mds_vmerge_create(const struct tp_config *cfg, struct mds_store *store,
		      struct mds_versions *vs, const struct cap_key *key,
		      struct mds_vmerger **out, char *err, size_t errlen)
{
	struct mds_vmerger *m = calloc(1, sizeof(*m));
	char why[256] = "out of memory";
	int rc = -ENOMEM;

	*out = NULL;
	if (m && (m->flight = calloc(cfg->n_ios ? cfg->n_ios : 1, sizeof(*m->flight))) &&
	    (m->active = calloc(cfg->vmerge_files, sizeof(*m->active))) &&
	    (m->walk = calloc(cfg->vmerge_files, sizeof(*m->walk)))) {
		m->cfg = cfg;
		m->store = store;
		m->vs = vs;
		m->key = key;
		m->rule.idle_ns = (uint64_t)cfg->vmerge_idle_ms * 1000000u;
		m->rule.commits = cfg->vmerge_commits;
		m->max_active = cfg->vmerge_files;
		m->scanning = 1; /* files a restart left with unmerged commits */
		rc = mds_peers_create(cfg, "merger", &vm_ops, m, &m->peers, why, sizeof(why));
	}
	if (!rc)
		*out = m;
	else
		mds_vmerge_destroy(m);
	if (rc)
		snprintf(err, errlen, "merger: %s", why);
	return rc;
}

/* Frees the files (those forgotten mid-round are in `active` alone). */
void mds_vmerge_destroy(struct mds_vmerger *m)
{
	if (m) {
		for (uint32_t i = 0; i < m->nactive; i++)
			if (m->active[i]->gone)
				free(m->active[i]);
		for (uint32_t i = 0; i < m->nfiles; i++)
			free(m->files[i]);
		mds_peers_destroy(m->peers);
		free(m->files);
		free(m->active);
		free(m->walk);
		free(m->flight);
	}
	free(m);
}

/* ------------------------------------------------------------ notes */

void mds_vmerge_note(struct mds_vmerger *m, const struct mds_vfile *f, const uint32_t *servers,
		     uint64_t now_ns, int log_half)
{
	struct vm_file *v;

	if (!m)
		return;
	if (!(v = lookup(m, f->file)) && !(v = track(m, f, servers))) {
		if (!m->full_said)
			mds_peers_say(m->peers, m->log, "%u versioned files wait for a merge, its "
				      "most: file %016llx waits for a client's", m->nfiles,
				      (unsigned long long)f->file);
		m->full_said = 1;
		return;
	}
	v->seen.last_commit_ns = now_ns;
	v->seen.log_half |= log_half != 0;
	(void)refresh(m, v);
}

void mds_vmerge_dead(struct mds_vmerger *m, uint64_t file)
{
	struct vm_file *v = m ? lookup(m, file) : NULL;
	struct mds_attr *a;

	if (m && !v && (a = malloc(sizeof(*a)))) {
		if (!mds_file_by_handle(m->store, file, a) && a->layout.versioned)
			v = track(m, &(struct mds_vfile){ file, a->layout.count, a->layout.handles },
				  a->layout.servers);
		free(a);
	}
	if (v)
		v->seen.dead_ids = 1;
}

void mds_vmerge_forget(struct mds_vmerger *m, uint64_t file)
{
	struct vm_file *v = m ? lookup(m, file) : NULL;

	if (v)
		untrack(m, v);
}

/* After a start: the files the store holds unmerged commits of, a few
 * per tick, each waiting the idle time from now (its clients may be
 * back and writing). */
static void scan_store(struct mds_vmerger *m, uint64_t now)
{
	struct mds_attr *a = malloc(sizeof(*a));

	for (int n = 0; a && m->scanning && n < VM_START_SCAN; n++) {
		uint64_t file;
		int rc = mds_versions_next_unmerged(m->vs, m->scan_from, &file);

		if (rc < 0)
			mds_peers_say(m->peers, m->log, "%s", mds_versions_errmsg(m->vs));
		if (rc <= 0 || file == UINT64_MAX) {
			m->scanning = 0;
			break;
		}
		m->scan_from = file + 1;
		if (lookup(m, file) || mds_file_by_handle(m->store, file, a) ||
		    !a->layout.versioned)
			continue;
		mds_vmerge_note(m, &(struct mds_vfile){ file, a->layout.count, a->layout.handles },
				a->layout.servers, now, 0);
	}
	free(a);
}

/* ------------------------------------------------------------ rounds */

static void active_drop(struct mds_vmerger *m, struct vm_file *v)
{
	for (uint32_t i = 0; i < m->nactive; i++)
		if (m->active[i] == v) {
			m->active[i] = m->active[--m->nactive];
			break;
		}
	v->active = 0;
}

/* If v's round is over (no object pending or in flight): end it. */
static void round_check(struct mds_vmerger *m, struct vm_file *v)
{
	int failed = 0;

	for (uint32_t i = 0; i < v->count; i++) {
		if (v->obj[i] == VM_PENDING || v->obj[i] == VM_SENT)
			return;
		failed |= v->obj[i] == VM_FAILED;
	}
	active_drop(m, v);
	if (v->gone) {
		free(v);
		return;
	}
	if (failed)
		v->seen.not_before_ns = tp_mono_ns() + VM_RETRY_MS * 1000000ull;
	if (!refresh(m, v) && !v->seen.unmerged)
		untrack(m, v);
}

/* Start a round for due file v, unless nothing is left to merge (then
 * it goes) or a read or snapshot keeps the merge at the floor (then it
 * waits). Returns 1 when v was untracked (its array slot holds another). */
static int round_start(struct mds_vmerger *m, struct vm_file *v, uint64_t now)
{
	struct mds_vfile f = vfile_of(v);
	struct mds_vgrant *g = malloc(sizeof(*g));
	struct mds_vstate st;
	int rc = g ? mds_version_state(m->vs, &f, &st) : -ENOMEM;

	if (!rc)
		rc = mds_version_merge(m->vs, &f, tp_real_ns(), g);
	if (rc) {
		mds_peers_say(m->peers, m->log, "%s", g ? mds_versions_errmsg(m->vs) : "no memory");
		v->seen.not_before_ns = now + VM_RETRY_MS * 1000000ull;
	} else if (!st.unmerged && !v->seen.dead_ids) {
		free(g);
		untrack(m, v);
		return 1;
	} else if (g->msg.upto <= st.merged && !v->seen.dead_ids) {
		v->seen.unmerged = st.unmerged;
		v->seen.not_before_ns = now + m->rule.idle_ns;
	} else {
		v->active = 1;
		v->seen.log_half = 0;
		v->seen.dead_ids = 0;
		memset(v->obj, VM_PENDING, v->count);
		m->active[m->nactive++] = v;
	}
	free(g);
	return 0;
}

static int names(const Tessera__VersionCommit *c, uint64_t handle)
{
	for (size_t i = 0; i < c->n_handles; i++)
		if (c->handles[i] == handle)
			return 1;
	return 0;
}

/* The VLOG MERGE of v's object i to storage daemon s, with a fresh grant
 * and the unmerged commits naming the object, under the merger's own
 * capability for the file. */
static enum mds_peers_sent send_merge(struct mds_vmerger *m, struct vm_file *v, uint32_t i,
				      uint32_t s)
{
	struct mds_vfile f = vfile_of(v);
	struct mds_vgrant *g = malloc(sizeof(*g));
	Tessera__VersionCommit **vmap = NULL;
	Tessera__VlogRequest req = TESSERA__VLOG_REQUEST__INIT;
	Tessera__Capability cap = TESSERA__CAPABILITY__INIT;
	uint8_t mac[TP_CAP_MAC_LEN];
	enum mds_peers_sent sent = MDS_PEERS_FAILED;
	size_t n = 0;
	int rc = g ? mds_version_merge(m->vs, &f, tp_real_ns(), g) : -ENOMEM;

	if (!rc)
		rc = mds_version_vmap(m->vs, &f, UINT64_MAX, &vmap, &n);
	for (size_t k = 0; !rc && k < n; k++)
		if (names(vmap[k], v->handles[i]))
			vmap[req.n_vmap++] = vmap[k];
	cap.file = v->file;
	cap.handles = v->handles;
	cap.n_handles = v->count;
	cap.rights = TP_CAP_WRITE | TP_CAP_VERSIONED;
	cap.uid = m->cfg->daemon_uid;
	cap.expires_ns = tp_real_ns() + (int64_t)m->cfg->cap_lifetime_ms * 1000000;
	if (!rc && (rc = cap_sign(m->key, &cap, mac)))
		mds_peers_say(m->peers, m->log, "file %016llx: cannot sign a capability",
			      (unsigned long long)v->file);
	else if (rc)
		mds_peers_say(m->peers, m->log, "%s", g ? mds_versions_errmsg(m->vs) : "no memory");
	if (!rc) {
		req.handle = v->handles[i];
		req.op = TESSERA__VLOG_OP__VLOG_MERGE;
		req.grant = &g->msg;
		req.vmap = vmap;
		req.cap = &cap;
		sent = mds_peers_send(m->peers, s, TP_OP_VLOG, "merge", &req.base, m->log);
		v->upto[i] = g->msg.upto;
	}
	free(vmap);
	free(g);
	return sent;
}

/* Send what v's round has pending to the storage daemons free now; an
 * object whose daemon is backing off fails for this round. */
static void round_send(struct mds_vmerger *m, struct vm_file *v, uint64_t now)
{
	for (uint32_t i = 0; i < v->count; i++) {
		uint32_t s = v->servers[i];

		if (v->obj[i] != VM_PENDING || s >= m->cfg->n_ios || m->flight[s].f)
			continue;
		if (!mds_peers_ready(m->peers, s, now)) {
			if (mds_peers_backing_off(m->peers, s, now))
				v->obj[i] = VM_FAILED;
			continue;
		}
		switch (send_merge(m, v, i, s)) {
		case MDS_PEERS_SENT:
			v->obj[i] = VM_SENT;
			m->flight[s] = (struct vm_flight){ v, i };
			break;
		case MDS_PEERS_AUTHING: /* sent once the session is open */
		case MDS_PEERS_LATER:
			break;
		case MDS_PEERS_FAILED:
			v->obj[i] = VM_FAILED;
			break;
		}
	}
}

/* Storage daemon s answered our VLOG MERGE: the version its object
 * merged up to (at most the grant's bound; 0: the bound) goes to the
 * version table, as a client's VERSION_MERGED would. */
static void vm_answered(void *user, uint32_t s, const struct tp_frame *fr)
{
	struct mds_vmerger *m = user;
	struct vm_flight fl = m->flight[s];
	Tessera__VlogReply *rep;
	struct mds_vfile f;
	uint64_t upto;

	if (!fl.f)
		return;
	m->flight[s].f = NULL;
	fl.f->obj[fl.slot] = VM_DONE;
	if (!fl.f->gone) {
		rep = (Tessera__VlogReply *)tp_body_unpack(fr, &tessera__vlog_reply__descriptor);
		upto = fl.f->upto[fl.slot];
		if (rep && rep->merged && rep->merged < upto)
			upto = rep->merged;
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		f = vfile_of(fl.f);
		if (mds_version_merged(m->vs, &f, fl.f->handles[fl.slot], upto))
			mds_peers_say(m->peers, m->log, "%s", mds_versions_errmsg(m->vs));
	}
	round_check(m, fl.f);
}

/* Our VLOG MERGE on storage daemon s failed (logged by mds_peers): that
 * object waits for the file's next round. */
static void vm_failed(void *user, uint32_t s, int rc)
{
	struct mds_vmerger *m = user;
	struct vm_flight fl = m->flight[s];

	(void)rc;
	if (!fl.f)
		return; /* the AUTH before it: the object is still pending */
	m->flight[s].f = NULL;
	fl.f->obj[fl.slot] = VM_FAILED;
	round_check(m, fl.f);
}

/* ------------------------------------------------------------ the tick */

/* Up to VM_SCAN tracked files from the cursor: start rounds for the due
 * ones while there is room. */
static void start_due(struct mds_vmerger *m, uint64_t now)
{
	for (uint32_t n = 0; n < VM_SCAN && n < m->nfiles && m->nactive < m->max_active; n++) {
		struct vm_file *v;

		if (m->cursor >= m->nfiles)
			m->cursor = 0;
		v = m->files[m->cursor];
		if (!v->active && mds_vmerge_due(&m->rule, &v->seen, now) != MDS_VMERGE_NOT_DUE &&
		    round_start(m, v, now))
			continue; /* the cursor's slot holds another file now */
		m->cursor++;
	}
}

void mds_vmerge_tick(struct mds_vmerger *m, void (*log)(void *, const char *), void *arg)
{
	struct mds_peers_log lg = { log, arg };
	uint32_t nact;
	uint64_t now;

	if (!m)
		return;
	m->log = &lg;
	mds_peers_poll(m->peers, &lg);
	now = tp_mono_ns();
	if (m->scanning)
		scan_store(m, now);
	start_due(m, now);
	/* round_check may end a round, which takes it out of m->active:
	 * walk a copy */
	nact = m->nactive;
	memcpy(m->walk, m->active, nact * sizeof(*m->walk));
	for (uint32_t i = 0; i < nact; i++) {
		round_send(m, m->walk[i], now);
		round_check(m, m->walk[i]);
	}
	m->log = NULL;
}
