/*
 * mcache.c - names and attributes held under the metadata daemon's name
 * leases (docs/design.md, "Name leases"), so a stat answers from memory.
 *
 * Off unless asked for (tessera_name_cache: the mount asks). Then a thread
 * keeps a WATCH waiting at the metadata daemon: its answers name the
 * handles others changed, and each renews the lease, which runs lease_ms
 * from when that WATCH was sent. What is held:
 *   - entries: (directory handle, name) -> handle, valid while the
 *     directory's epoch is the one they were learnt under;
 *   - nodes: per handle, that epoch and, when known, the attributes (a
 *     regular file's only with its size: no one was writing it).
 * A stat walks the path's names from the root's handle through entries
 * and answers from the last one's node, while the lease runs.
 *
 * Ordering. A reply and the WATCH answer that breaks what it said may
 * arrive in either order, and this client's own changes are not told back
 * to it. So every change seen (a broken lease, or one of our own once its
 * reply came) is a bump: a key (a handle's attributes, a directory's
 * entries, one entry) and a sequence number, kept in a ring of the
 * latest TC_MC_RING. A reply is learnt only if none of the keys it
 * speaks of was bumped since its request was sent (tc_mcache_mark); a
 * ring that wrapped since, or a forget-all, refuses everything.
 *
 * Opens (docs/design.md, "Opens from memory"). A node also keeps what
 * opens of the file were granted: its layout (fixed at create) and
 * capabilities, one per uid (TC_MC_GRANTS per node). An open of a held
 * path whose every directory the caller may search, by the held
 * attributes, and whose file it may open for the rights asked, with a
 * capability of that uid not yet due for renewal, is answered from them:
 * the metadata daemon answers a change only once every holder has heard
 * of it (breaks that wait), so what is held is what an open would be
 * told.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"
#include "tp_clock.h"

#define TC_MC_BUCKETS 16384u
#define TC_MC_MAX 65536u   /* entries, and nodes: past either, all is forgotten */
#define TC_MC_RING 4096u
#define TC_MC_GRANTS 2u        /* capabilities kept per file (uids) */
#define TC_MC_GRANTS_MAX 16384u /* in all: past it, none more are kept */

/* What an open of a file was granted: packed Capability, then packed
 * Layout. */
struct mc_grant {
	uint32_t uid, rights;
	uint64_t renew_ns;    /* monotonic: not used after this */
	size_t cap_len, layout_len;
	uint8_t data[];
};

enum mc_key_kind { KEY_ATTR = 1, KEY_ENTRIES = 2, KEY_ENTRY = 3 };

struct mc_node {
	uint64_t handle;
	uint64_t epoch;       /* its entries are those learnt under it */
	/* epoch + 1 while its entries are all its names: a directory this
	 * client made (empty then), whose names since were its own and
	 * learnt (a name not among them is missing); else not that */
	uint64_t complete;
	int has_attrs;
	uint32_t type;        /* S_IFMT bits once learnt (0: not known); kept */
	struct tessera_stat st;
	struct mc_grant *grant[TC_MC_GRANTS];
	struct mc_node *next;
};

struct mc_entry {
	uint64_t parent, epoch, child;
	struct mc_entry *next;
	size_t len;
	char name[];
};

struct tc_mcache {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t thread;
	int stop;
	uint64_t root;             /* the root's handle (0: not known yet) */
	uint64_t valid_until_ns;   /* monotonic: the lease runs until then */
	uint64_t lease_ns;         /* the daemon's name_lease_ms */
	uint64_t seq;              /* bumps so far */
	uint64_t forgot_seq;       /* the bump of the last forget-all */
	uint64_t seen;             /* the last WATCH answer applied (WatchReply.seq) */
	struct { uint64_t key, seq; } ring[TC_MC_RING];
	uint32_t n_nodes, n_entries, n_grants;
	struct mc_node *nodes[TC_MC_BUCKETS];
	struct mc_entry *entries[TC_MC_BUCKETS];
	uint64_t hits, learnt, breaks; /* counters (tessera_name_cache_stats) */
};

/* ------------------------------------------------------------ keys, ring */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t name_hash(const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	return h;
}

static uint64_t key_of(enum mc_key_kind kind, uint64_t handle, const char *name, size_t len)
{
	uint64_t h = mix(handle) + kind;

	return kind == KEY_ENTRY ? mix(h ^ name_hash(name, len)) : mix(h);
}

static void bump(struct tc_mcache *mc, uint64_t key)
{
	uint64_t s = ++mc->seq;

	mc->ring[s % TC_MC_RING].key = key;
	mc->ring[s % TC_MC_RING].seq = s;
}

/* Whether `key` was bumped after `mark` (or nothing since can be told). */
static int bumped_since(const struct tc_mcache *mc, uint64_t mark, uint64_t key)
{
	if (mark < mc->forgot_seq || mc->seq - mark >= TC_MC_RING)
		return 1;
	for (uint64_t s = mark + 1; s <= mc->seq; s++)
		if (mc->ring[s % TC_MC_RING].key == key)
			return 1;
	return 0;
}

/* ------------------------------------------------------------ tables */

static struct mc_node *node_find(struct tc_mcache *mc, uint64_t handle)
{
	struct mc_node *n = mc->nodes[mix(handle) % TC_MC_BUCKETS];

	while (n && n->handle != handle)
		n = n->next;
	return n;
}

static struct mc_entry **entry_link(struct tc_mcache *mc, uint64_t parent, const char *name,
				    size_t len)
{
	struct mc_entry **p = &mc->entries[mix(parent ^ name_hash(name, len)) % TC_MC_BUCKETS];

	while (*p && !((*p)->parent == parent && (*p)->len == len &&
		       !memcmp((*p)->name, name, len)))
		p = &(*p)->next;
	return p;
}

static void node_free(struct mc_node *n)
{
	for (uint32_t i = 0; i < TC_MC_GRANTS; i++)
		free(n->grant[i]);
	free(n);
}

static void forget_all(struct tc_mcache *mc)
{
	for (uint32_t b = 0; b < TC_MC_BUCKETS; b++) {
		while (mc->nodes[b]) {
			struct mc_node *n = mc->nodes[b];

			mc->nodes[b] = n->next;
			node_free(n);
		}
		while (mc->entries[b]) {
			struct mc_entry *e = mc->entries[b];

			mc->entries[b] = e->next;
			free(e);
		}
	}
	mc->n_nodes = mc->n_entries = mc->n_grants = 0;
	mc->root = 0;
	bump(mc, 0);
	mc->forgot_seq = mc->seq;
}

/* The node of `handle`, made if new; NULL without memory or room. */
static struct mc_node *node_get(struct tc_mcache *mc, uint64_t handle)
{
	struct mc_node *n = node_find(mc, handle);
	uint32_t b = mix(handle) % TC_MC_BUCKETS;

	if (n)
		return n;
	if (mc->n_nodes >= TC_MC_MAX)
		forget_all(mc);
	if (!(n = calloc(1, sizeof(*n))))
		return NULL;
	n->handle = handle;
	n->next = mc->nodes[b];
	mc->nodes[b] = n;
	mc->n_nodes++;
	return n;
}

static void entry_drop(struct tc_mcache *mc, uint64_t parent, const char *name, size_t len)
{
	struct mc_entry **p = entry_link(mc, parent, name, len), *e = *p;

	if (!e)
		return;
	*p = e->next;
	free(e);
	mc->n_entries--;
}

/* (parent, name) -> child, under the parent's epoch now. */
static int entry_put(struct tc_mcache *mc, uint64_t parent, const char *name, size_t len,
		     uint64_t child)
{
	struct mc_node *dir = node_get(mc, parent);
	struct mc_entry **p, *e;

	if (!dir)
		return -ENOMEM;
	p = entry_link(mc, parent, name, len);
	if (!(e = *p)) {
		if (mc->n_entries >= TC_MC_MAX) {
			forget_all(mc);
			return -ENOSPC;
		}
		if (!(e = malloc(sizeof(*e) + len)))
			return -ENOMEM;
		e->parent = parent;
		e->len = len;
		memcpy(e->name, name, len);
		e->next = mc->entries[mix(parent ^ name_hash(name, len)) % TC_MC_BUCKETS];
		mc->entries[mix(parent ^ name_hash(name, len)) % TC_MC_BUCKETS] = e;
		mc->n_entries++;
	}
	e->epoch = dir->epoch;
	e->child = child;
	return 0;
}

/* Whether directory dir's entries held are all its names. */
static int complete(struct tc_mcache *mc, uint64_t dir)
{
	struct mc_node *d = node_find(mc, dir);

	return d && d->complete == d->epoch + 1;
}

/* A name of directory dir made, or replaced, without its entry learnt:
 * the entries held are no longer all its names. */
static void incomplete(struct tc_mcache *mc, uint64_t dir)
{
	struct mc_node *d = node_find(mc, dir);

	if (d)
		d->complete = 0;
}

/* Whether (parent, name) is held as missing (an entry to no handle, from
 * a LOOKUP answered `absent`), under the parent's epoch now. */
static int entry_absent(struct tc_mcache *mc, uint64_t parent, const char *name, size_t len)
{
	struct mc_node *dir = node_find(mc, parent);
	struct mc_entry *e;

	return dir && (e = *entry_link(mc, parent, name, len)) && e->epoch == dir->epoch &&
	       !e->child;
}

/* The handle (parent, name) names now, or 0 (not held, or missing). */
static uint64_t entry_child(struct tc_mcache *mc, uint64_t parent, const char *name, size_t len)
{
	struct mc_node *dir = node_find(mc, parent);
	struct mc_entry *e;

	if (!dir || !(e = *entry_link(mc, parent, name, len)) || e->epoch != dir->epoch)
		return 0;
	return e->child;
}

/* A broken lease of `handle`: its attributes and entries go. */
static void broken(struct tc_mcache *mc, uint64_t handle)
{
	struct mc_node *n = node_find(mc, handle);

	bump(mc, key_of(KEY_ATTR, handle, NULL, 0));
	bump(mc, key_of(KEY_ENTRIES, handle, NULL, 0));
	if (n) {
		n->epoch++;
		n->has_attrs = 0;
	}
	mc->breaks++;
}

/* ------------------------------------------------------------ paths */

/* The next name of path at *p ("/a//b": "a", then "b"); 0 at the end. */
static size_t next_name(const char **p, const char **name)
{
	const char *s = *p, *e;

	while (*s == '/')
		s++;
	e = strchrnul(s, '/');
	*name = s;
	*p = e;
	return (size_t)(e - s);
}

/* Whether path is as the metadata daemon takes it: "/", or "/" names
 * joined by single slashes, none "." or "..". Anything else is asked (and
 * refused there), never answered here. */
static int canonical(const char *path)
{
	const char *p = path;

	if (p[0] != '/')
		return 0;
	if (!p[1])
		return 1;
	while (*p == '/') {
		const char *c = p + 1, *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);

		if (!n || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		p = e;
	}
	return 1;
}

/* Walk path's names through entries: *dir the handle of the directory
 * holding the last name (name, len), *h what it names (0: not held).
 * Returns 0, or -ENOENT when a directory on the way is not held. For "/",
 * len is 0 and *h the root. */
static int walk(struct tc_mcache *mc, const char *path, uint64_t *dir, const char **name,
		size_t *len, uint64_t *h)
{
	const char *p = path, *c;
	uint64_t cur = mc->root;
	size_t n;

	if (!cur || !canonical(path))
		return -ENOENT;
	*dir = cur;
	*h = cur;
	*name = path;
	*len = 0;
	while ((n = next_name(&p, &c))) {
		if (!cur)
			return -ENOENT;   /* a directory on the way not held */
		*dir = cur;
		*name = c;
		*len = n;
		cur = entry_child(mc, cur, c, n);
	}
	*h = cur;
	return 0;
}

/* ------------------------------------------------------------ the API */

enum tc_mc_held tc_mcache_stat(tessera_fs *fs, const char *path, enum tessera_follow last,
			       struct tessera_stat *st)
{
	struct tc_mcache *mc = fs->mcache;
	enum tc_mc_held held = MC_NOT_HELD;
	const char *name;
	uint64_t dir, h;
	struct mc_node *n;
	size_t len;

	if (!mc)
		return MC_NOT_HELD;
	pthread_mutex_lock(&mc->mu);
	if (tp_mono_ns() < mc->valid_until_ns && !walk(mc, path, &dir, &name, &len, &h)) {
		if (h && (n = node_find(mc, h)) && n->has_attrs &&
		    !(last == TESSERA_FOLLOW && S_ISLNK(n->st.mode))) {
			*st = n->st;
			held = MC_HELD;
		} else if (!h && len && (entry_absent(mc, dir, name, len) || complete(mc, dir))) {
			held = MC_HELD_ABSENT;
		}
	}
	if (held != MC_NOT_HELD)
		mc->hits++;
	pthread_mutex_unlock(&mc->mu);
	return held;
}

uint64_t tc_mcache_mark(tessera_fs *fs)
{
	struct tc_mcache *mc = fs->mcache;
	uint64_t s;

	if (!mc)
		return 0;
	pthread_mutex_lock(&mc->mu);
	s = mc->seq;
	pthread_mutex_unlock(&mc->mu);
	return s;
}

/* The names of path learnt from walk (the directories from the root to
 * the last name's): each entry not bumped since mark; 1 if all were. */
static int learn_names(struct tc_mcache *mc, uint64_t mark, const char *path,
		       const uint64_t *walk, size_t n_walk, uint64_t handle)
{
	const char *p = path, *c;
	size_t i = 0, len;

	if (!mc->root)
		mc->root = walk[0];
	else if (mc->root != walk[0])
		return 0;   /* another root: a new namespace; learnt at the next forget */
	while ((len = next_name(&p, &c))) {
		uint64_t parent = i < n_walk ? walk[i] : 0;
		uint64_t child = i + 1 < n_walk ? walk[i + 1] : handle;
		struct mc_node *n;

		if (i >= n_walk || bumped_since(mc, mark, key_of(KEY_ENTRIES, parent, NULL, 0)) ||
		    bumped_since(mc, mark, key_of(KEY_ENTRY, parent, c, len)) ||
		    entry_put(mc, parent, c, len, child))
			return 0;
		/* the walk passed only directories */
		if (i + 1 < n_walk && (n = node_get(mc, child)))
			n->type = S_IFDIR;
		i++;
	}
	return i == n_walk;
}

/* This client's own change of what a reply tells of: replies still in
 * flight say otherwise of the handle, and for a name it made, of the
 * directory whose entries it changed (the walk's last). When the reply
 * may not be learnt (attrs_ok 0: another of this client's changes of the
 * file was answered since it was sent), the file's attributes held go
 * too: the daemon may have made the two changes in either order (a
 * close's answer learnt first, then the utimens sent before it came back
 * refused, left the time from before the utimens held). */
static void own_change(struct tc_mcache *mc, enum tc_mc_learn how, const struct tc_mc_reply *r,
		       int attrs_ok)
{
	struct mc_node *dir, *n;

	bump(mc, key_of(KEY_ATTR, r->handle, NULL, 0));
	if (r->st && !attrs_ok && (n = node_find(mc, r->handle)))
		n->has_attrs = 0;
	if (how == MC_LEARN_OWN_NAME && r->n_walk && (dir = node_find(mc, r->walk[r->n_walk - 1]))) {
		bump(mc, key_of(KEY_ATTR, r->walk[r->n_walk - 1], NULL, 0));
		dir->has_attrs = 0;
	}
}

/* Whether the directory a name was made in may take the reply's
 * attributes of it (not bumped since the request). */
static int dir_attrs_ok(const struct tc_mcache *mc, uint64_t mark, enum tc_mc_learn how,
			const struct tc_mc_reply *r)
{
	return how == MC_LEARN_OWN_NAME && r->dir_st && r->n_walk &&
	       !bumped_since(mc, mark, key_of(KEY_ATTR, r->walk[r->n_walk - 1], NULL, 0));
}

/* The reply's names (none: by handle alone; "/": the root itself). */
static int learn_path(struct tc_mcache *mc, uint64_t mark, const struct tc_mc_reply *r)
{
	if (!r->path)
		return 1;
	if (!r->path[1]) {
		if (!mc->root)
			mc->root = r->handle;
		return mc->root == r->handle;
	}
	return r->n_walk && learn_names(mc, mark, r->path, r->walk, r->n_walk, r->handle);
}

int tc_mcache_learn(tessera_fs *fs, uint64_t mark, enum tc_mc_learn how,
		    const struct tc_mc_reply *r)
{
	struct tc_mcache *mc = fs->mcache;
	struct mc_node *n, *dir;
	int attrs_ok, dir_ok, kept = 0;

	if (!mc || !r->handle || (r->path && !canonical(r->path)))
		return 0;
	pthread_mutex_lock(&mc->mu);
	attrs_ok = r->st && !bumped_since(mc, mark, key_of(KEY_ATTR, r->handle, NULL, 0));
	dir_ok = dir_attrs_ok(mc, mark, how, r);
	if (how != MC_LEARN_LOOKUP)
		own_change(mc, how, r, attrs_ok);
	if (!learn_path(mc, mark, r)) {
		if (how == MC_LEARN_OWN_NAME && r->n_walk) /* made, not learnt */
			incomplete(mc, r->walk[r->n_walk - 1]);
	} else if ((n = node_get(mc, r->handle))) {
		n->type = r->type & S_IFMT;
		/* a directory this client just made is empty */
		if (how == MC_LEARN_OWN_NAME && n->type == S_IFDIR)
			n->complete = n->epoch + 1;
		if (attrs_ok) {
			n->st = *r->st;
			n->has_attrs = 1;
			mc->learnt++;
			kept = 1;
		}
		/* the directory as the change left it (a create's reply) */
		if (dir_ok && (dir = node_find(mc, r->walk[r->n_walk - 1]))) {
			dir->st = *r->dir_st;
			dir->has_attrs = 1;
		}
	}
	pthread_mutex_unlock(&mc->mu);
	return kept;
}

void tc_mcache_absent(tessera_fs *fs, uint64_t mark, const char *path, const uint64_t *walk,
		      size_t n_walk)
{
	struct tc_mcache *mc = fs->mcache;

	if (!mc || !n_walk || !canonical(path) || !path[1])
		return;
	pthread_mutex_lock(&mc->mu);
	/* (the last name's entry goes to handle 0: missing) */
	(void)learn_names(mc, mark, path, walk, n_walk, 0);
	pthread_mutex_unlock(&mc->mu);
}

/* Directory d's attributes after this client removed a name from it:
 * dir_st, what the remove's reply says (NULL: nothing), replaces what is
 * held if it is later (every change of a directory moves its ctime, so
 * of concurrent removes' replies the last one applied wins); with nothing
 * held, it is kept if no break of d came since the request (unbumped). */
static int later(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

static void dir_after_remove(struct mc_node *d, const struct tessera_stat *dir_st, int unbumped)
{
	if (!dir_st) {
		d->has_attrs = 0;
	} else if (d->has_attrs) {
		if (later(&dir_st->ctime, &d->st.ctime))
			d->st = *dir_st;
	} else if (unbumped) {
		d->st = *dir_st;
		d->has_attrs = 1;
	}
}

/* What path names changed, by this client (tc_mcache_changed); dir_st,
 * when not NULL, is its directory as the change left it (a remove's
 * reply: dir_after_remove). */
static void name_changed(struct tc_mcache *mc, const char *path, enum tc_mc_change what,
			 uint64_t mark, const struct tessera_stat *dir_st)
{
	struct mc_node *d, *n = NULL;
	const char *name;
	uint64_t dir, h;
	size_t len;
	int unbumped;

	if (walk(mc, path, &dir, &name, &len, &h) || !len || (what == MC_ATTRS && !h) ||
	    (h && (!(n = node_find(mc, h)) || !n->type || n->type == S_IFLNK))) {
		/* a directory on the way not held, what it names not held
		 * (another name of it may be), or what it names may be a
		 * symbolic link the change followed: whatever is held might
		 * be of it */
		forget_all(mc);
		return;
	}
	if (what == MC_NAME) {
		/* (asked only with a reply to keep: the scan is up to the ring) */
		unbumped = dir_st && !bumped_since(mc, mark, key_of(KEY_ATTR, dir, NULL, 0));
		bump(mc, key_of(KEY_ENTRY, dir, name, len));
		bump(mc, key_of(KEY_ATTR, dir, NULL, 0));
		entry_drop(mc, dir, name, len);
		if ((d = node_find(mc, dir)))
			dir_after_remove(d, dir_st, unbumped);
	}
	if (h)
		bump(mc, key_of(KEY_ATTR, h, NULL, 0));
	if (n)
		n->has_attrs = 0;
}

/* A removal of path under way: the name goes, and the directory's held
 * attributes (if any) become what the removal will leave, by our clock;
 * replies in flight that say otherwise are refused (bumps). The
 * removal's reply replaces them if its ctime is later (dir_after_remove),
 * its failure drops them. */
void tc_mcache_unlink_pending(tessera_fs *fs, const char *path)
{
	struct tc_mcache *mc = fs->mcache;
	const char *name;
	struct timespec now;
	struct mc_node *d;
	uint64_t dir, h;
	size_t len;

	if (!mc)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&mc->mu);
	if (walk(mc, path, &dir, &name, &len, &h) || !len) {
		forget_all(mc);   /* (not held: whatever is held might be of it) */
	} else {
		bump(mc, key_of(KEY_ENTRY, dir, name, len));
		bump(mc, key_of(KEY_ATTR, dir, NULL, 0));
		entry_drop(mc, dir, name, len);
		if (h)
			bump(mc, key_of(KEY_ATTR, h, NULL, 0));
		if ((d = node_find(mc, dir)) && d->has_attrs) {
			if (later(&now, &d->st.mtime))
				d->st.mtime = now;
			if (later(&now, &d->st.ctime))
				d->st.ctime = now;
			if (d->st.size)
				d->st.size--;
		}
	}
	pthread_mutex_unlock(&mc->mu);
}

void tc_mcache_changed(tessera_fs *fs, const char *path, enum tc_mc_change what)
{
	struct tc_mcache *mc = fs->mcache;

	const char *name;
	uint64_t dir, h;
	size_t len;

	if (!mc || !path)
		return;
	pthread_mutex_lock(&mc->mu);
	if (what == MC_NAME && !walk(mc, path, &dir, &name, &len, &h) && len)
		incomplete(mc, dir);  /* (a name made: not learnt here) */
	name_changed(mc, path, what, 0, NULL);
	pthread_mutex_unlock(&mc->mu);
}

void tc_mcache_removed(tessera_fs *fs, uint64_t mark, const char *path,
		       const struct tessera_stat *dir_st)
{
	struct tc_mcache *mc = fs->mcache;

	if (!mc || !path)
		return;
	pthread_mutex_lock(&mc->mu);
	name_changed(mc, path, MC_NAME, mark, dir_st);
	pthread_mutex_unlock(&mc->mu);
}

void tc_mcache_changed_handle(tessera_fs *fs, uint64_t handle)
{
	struct tc_mcache *mc = fs->mcache;
	struct mc_node *n;

	if (!mc)
		return;
	pthread_mutex_lock(&mc->mu);
	bump(mc, key_of(KEY_ATTR, handle, NULL, 0));
	if ((n = node_find(mc, handle)))
		n->has_attrs = 0;
	pthread_mutex_unlock(&mc->mu);
}

void tc_mcache_opened(tessera_fs *fs, uint64_t mark, const char *path, uint64_t handle,
		      const struct tessera_stat *st)
{
	struct tc_mcache *mc = fs->mcache;
	struct mc_node *n;
	const char *name;
	uint64_t dir, h;
	size_t len;

	if (!mc)
		return;
	pthread_mutex_lock(&mc->mu);
	if (!walk(mc, path, &dir, &name, &len, &h) && len && h && h != handle) {
		/* the name is another file's now: a break is on its way */
		bump(mc, key_of(KEY_ENTRY, dir, name, len));
		entry_drop(mc, dir, name, len);
		incomplete(mc, dir);
	}
	if ((n = node_find(mc, handle)) && n->has_attrs) {
		if (st && !bumped_since(mc, mark, key_of(KEY_ATTR, handle, NULL, 0))) {
			n->st = *st;
		} else {
			bump(mc, key_of(KEY_ATTR, handle, NULL, 0));
			n->has_attrs = 0;
		}
	}
	pthread_mutex_unlock(&mc->mu);
}

/* ------------------------------------------------------------ opens */

/* Whether cred may do `want` (read 4, write 2, search 1) to what st
 * describes, as the metadata daemon decides. */
static int permits(const struct tessera_cred *cred, const struct tessera_stat *st,
		   uint32_t want)
{
	uint32_t n = cred->ngids < TESSERA_MAX_GROUPS ? cred->ngids : TESSERA_MAX_GROUPS;

	return tp_mode_permits(cred->uid, cred->gids, n, st->mode & 07777, st->uid, st->gid,
			       want);
}

/* Whether cred may search every directory path's walk passes, each one's
 * attributes held (the daemon's walk checks the same). */
static int walk_searchable(struct tc_mcache *mc, const char *path,
			   const struct tessera_cred *cred)
{
	const char *p = path, *c;
	uint64_t cur = mc->root;
	struct mc_node *d;
	size_t n;

	while ((n = next_name(&p, &c))) {
		if (!cur || !(d = node_find(mc, cur)) || !d->has_attrs || !permits(cred, &d->st, 1))
			return 0;
		cur = entry_child(mc, cur, c, n);
	}
	return cur != 0;
}

static struct mc_grant *grant_of(struct mc_node *n, uint32_t uid)
{
	for (uint32_t i = 0; i < TC_MC_GRANTS; i++)
		if (n->grant[i] && n->grant[i]->uid == uid)
			return n->grant[i];
	return NULL;
}

/* What an open was granted, packed; NULL without memory. */
static struct mc_grant *grant_new(const Tessera__Capability *cap, const Tessera__Layout *layout)
{
	size_t cl = tessera__capability__get_packed_size(cap);
	size_t ll = tessera__layout__get_packed_size(layout);
	struct mc_grant *g = malloc(sizeof(*g) + cl + ll);

	if (!g)
		return NULL;
	g->uid = cap->uid;
	g->rights = cap->rights;
	g->renew_ns = tc_cap_renew_at(cap);
	g->cap_len = tessera__capability__pack(cap, g->data);
	g->layout_len = tessera__layout__pack(layout, g->data + g->cap_len);
	return g;
}

/* Where a grant for uid goes in n: the uid's own, else a free slot
 * (within the bound on all), else the one due for renewal first; NULL
 * when none may take it. */
static struct mc_grant **grant_slot(const struct tc_mcache *mc, struct mc_node *n, uint32_t uid)
{
	struct mc_grant **due = NULL, **free_slot = NULL;

	for (uint32_t i = 0; i < TC_MC_GRANTS; i++) {
		struct mc_grant **s = &n->grant[i];

		if (!*s)
			free_slot = free_slot ? free_slot : s;
		else if ((*s)->uid == uid)
			return s;
		else if (!due || (*s)->renew_ns < (*due)->renew_ns)
			due = s;
	}
	return free_slot && mc->n_grants < TC_MC_GRANTS_MAX ? free_slot : due;
}

void tc_mcache_granted(tessera_fs *fs, uint64_t handle, const Tessera__Capability *cap,
		       const Tessera__Layout *layout)
{
	struct tc_mcache *mc = fs->mcache;
	struct mc_grant *g, **slot = NULL;
	struct mc_node *n;

	if (!mc || !cap || !layout || layout->versioned || cap->file != handle ||
	    !(g = grant_new(cap, layout)))
		return;
	pthread_mutex_lock(&mc->mu);
	if ((n = node_find(mc, handle)) && (slot = grant_slot(mc, n, g->uid))) {
		if (!*slot)
			mc->n_grants++;
		free(*slot);
		*slot = g;
		g = NULL;
	}
	pthread_mutex_unlock(&mc->mu);
	free(g);
}

/* The permission bits an open with capability rights needs. */
static uint32_t bits_of_rights(uint32_t rights)
{
	return (rights & TP_CAP_READ ? 4u : 0u) | (rights & TP_CAP_WRITE ? 2u : 0u);
}

/* Under mc->mu: what a hit hands out (unpacked copies). */
static int grant_out(const struct mc_node *n, const struct mc_grant *g, struct tc_mc_open *out)
{
	out->st = n->st;
	out->cap = tessera__capability__unpack(NULL, g->cap_len, g->data);
	out->layout = tessera__layout__unpack(NULL, g->layout_len, g->data + g->cap_len);
	if (out->cap && out->layout)
		return 1;
	tc_mcache_open_done(out);
	return 0;
}

int tc_mcache_open(tessera_fs *fs, const char *path, const struct tessera_cred *cred,
		   uint32_t rights, struct tc_mc_open *out)
{
	struct tc_mcache *mc = fs->mcache;
	const struct mc_grant *g;
	const char *name;
	struct mc_node *n;
	uint64_t dir, h;
	size_t len;
	int hit = 0;

	memset(out, 0, sizeof(*out));
	if (!mc)
		return 0;
	pthread_mutex_lock(&mc->mu);
	if (tp_mono_ns() < mc->valid_until_ns && !walk(mc, path, &dir, &name, &len, &h) && h &&
	    (n = node_find(mc, h)) && n->has_attrs && S_ISREG(n->st.mode) &&
	    (g = grant_of(n, cred->uid)) && (g->rights & rights) == rights &&
	    tp_mono_ns() < g->renew_ns && permits(cred, &n->st, bits_of_rights(rights)) &&
	    walk_searchable(mc, path, cred) && (hit = grant_out(n, g, out)))
		mc->hits++;
	pthread_mutex_unlock(&mc->mu);
	return hit;
}

void tc_mcache_open_done(struct tc_mc_open *o)
{
	if (o->cap)
		protobuf_c_message_free_unpacked(&o->cap->base, NULL);
	if (o->layout)
		protobuf_c_message_free_unpacked(&o->layout->base, NULL);
	o->cap = NULL;
	o->layout = NULL;
}

/* ------------------------------------------------------------ the watch */

/* One WATCH: its answer's changes, and the lease from when it was sent.
 * 0; 1 when it was answered at once with nothing to tell (a daemon that
 * could not park it: then wait before the next, not ask in a loop); or a
 * negative errno. */
static int watch_once(tessera_fs *fs, struct tc_mcache *mc)
{
	Tessera__WatchRequest m = TESSERA__WATCH_REQUEST__INIT;
	struct tc_req *r;
	uint64_t sent = tp_mono_ns(), lease_ns;
	const Tessera__WatchReply *rep;
	int rc;

	/* (only this thread writes it once the cache is running) */
	pthread_mutex_lock(&mc->mu);
	m.seen = mc->seen;
	pthread_mutex_unlock(&mc->mu);
	r = tc_req_new(fs, TC_MDS, TP_OP_WATCH, &m.base, NULL, 0);
	rc = tc_call(fs, r, "name lease watch");

	if (rc) {
		tc_req_free(fs, r);
		return rc;
	}
	rep = (const Tessera__WatchReply *)r->reply;
	lease_ns = (uint64_t)rep->lease_ms * 1000000u;
	pthread_mutex_lock(&mc->mu);
	if (rep->all)
		forget_all(mc);
	for (size_t i = 0; i < rep->n_changed; i++)
		broken(mc, rep->changed[i]);
	mc->valid_until_ns = sent + lease_ns;
	mc->lease_ns = lease_ns;
	mc->seen = rep->seq; /* acknowledged by the next WATCH */
	rc = !rep->all && !rep->n_changed && tp_mono_ns() - sent < lease_ns / 8;
	pthread_mutex_unlock(&mc->mu);
	tc_req_free(fs, r);
	return rc;
}

/* Under mc->mu: wait ms unless stopped (the stop signals mc->cond). */
static void pause_ms(struct tc_mcache *mc, long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	if (!mc->stop)
		pthread_cond_timedwait(&mc->cond, &mc->mu, &until);
}

static void *watch_main(void *arg)
{
	tessera_fs *fs = arg;
	struct tc_mcache *mc = fs->mcache;

	tc_thread(fs)->background = 1; /* its long waits never hold up a caller */
	pthread_mutex_lock(&mc->mu);
	while (!mc->stop) {
		int rc;

		pthread_mutex_unlock(&mc->mu);
		rc = watch_once(fs, mc);
		pthread_mutex_lock(&mc->mu);
		if (rc == -EOPNOTSUPP)
			break;    /* the daemon grants none (any more) */
		if (rc == 1)  /* not parked: a twentieth of a lease (1 s: 50 ms) */
			pause_ms(mc, (long)(mc->lease_ns / 20000000u));
		else if (rc)  /* the daemon is away: the lease lapses by itself */
			pause_ms(mc, 100);
	}
	pthread_mutex_unlock(&mc->mu);
	return NULL;
}

static void mcache_free(struct tc_mcache *mc)
{
	forget_all(mc);
	pthread_mutex_destroy(&mc->mu);
	pthread_cond_destroy(&mc->cond);
	free(mc);
}

void tc_mcache_stop(tessera_fs *fs)
{
	struct tc_mcache *mc = fs->mcache;

	if (!mc)
		return;
	pthread_mutex_lock(&mc->mu);
	mc->stop = 1;
	pthread_cond_signal(&mc->cond);
	pthread_mutex_unlock(&mc->mu);
	pthread_join(mc->thread, NULL);
	fs->mcache = NULL;
	mcache_free(mc);
}

int tessera_name_cache(tessera_fs *fs, enum tessera_name_cache mode)
{
	struct tc_mcache *mc;
	int rc;

	if (mode == TESSERA_NAME_CACHE_OFF) {
		tc_mcache_stop(fs);
		return 0;
	}
	if (mode != TESSERA_NAME_CACHE_LEASED)
		return tc_fail(fs, -EINVAL, "name cache: unknown mode %d", (int)mode);
	if (fs->mcache)
		return 0;
	if (!(mc = calloc(1, sizeof(*mc))))
		return tc_fail(fs, -ENOMEM, "name cache: out of memory");
	pthread_mutex_init(&mc->mu, NULL);
	pthread_cond_init(&mc->cond, NULL);
	/* the first answer comes at once (a new watch must forget all) */
	if ((rc = watch_once(fs, mc)) < 0) {
		mcache_free(mc);
		return rc;
	}
	fs->mcache = mc;
	if ((rc = tc_start_quiet_thread(&mc->thread, watch_main, fs))) {
		fs->mcache = NULL;
		mcache_free(mc);
		return tc_fail(fs, -rc, "name cache: cannot start its thread");
	}
	return 0;
}

void tessera_name_cache_stats(tessera_fs *fs, struct tessera_name_cache_stats *out)
{
	struct tc_mcache *mc = fs->mcache;

	memset(out, 0, sizeof(*out));
	if (!mc)
		return;
	pthread_mutex_lock(&mc->mu);
	out->hits = mc->hits;
	out->learnt = mc->learnt;
	out->breaks = mc->breaks;
	out->names = mc->n_entries;
	out->leased = tp_mono_ns() < mc->valid_until_ns;
	pthread_mutex_unlock(&mc->mu);
}
