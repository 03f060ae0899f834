/*
 * mds_size.c - the metadata daemon's table of known file sizes
 * (mds_size.h): a hash of file handle -> entry, chained through entry
 * indices, with the entries on a least-recently-used list. All in one
 * allocation made at start; nothing here grows.
 */
#include "mds_size.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define NIL UINT32_MAX
#define TOKEN_POOL 32   /* tokens drawn from the kernel at once */

struct mds_size_ent {
	uint64_t file;           /* 0: free */
	uint64_t write_token;    /* what this incarnation's writers close with */
	uint64_t size_token;     /* what a report presents (0: none issued) */
	uint32_t writers;        /* counted opens for writing not yet closed */
	int solo;                /* writers went 0 -> 1 and never beyond since */
	int known;
	uint64_t size, blocks;
	int64_t data_mtime_ns;
	/* What was known when the count went 0 -> 1 (had_known): it stands
	 * again if that lone writer closes having changed nothing. */
	int had_known;
	uint64_t had_size, had_blocks;
	int64_t had_mtime_ns;
	int64_t quiet_until_ns;  /* an uncounted writer's capability lasts until */
	/* Whose sessions hold the counted opens (a client that dies is
	 * known by its session's end): the first MDS_SIZE_SESSIONS sessions
	 * of this incarnation; opens of others are counted but not held by
	 * any, so their end ends nothing. */
	struct {
		uint64_t session;    /* 0: free */
		uint32_t opens;
	} by[MDS_SIZE_SESSIONS];
	uint32_t next;           /* hash chain */
	uint32_t newer, older;   /* LRU list */
};

struct mds_sizes {
	uint32_t n, used, nbuckets;
	int64_t quiet_ns;
	int64_t quiet_until_ns;  /* whole table: a restart, an evicted writer */
	uint32_t newest, oldest, free;
	uint32_t *buckets;
	uint64_t pool[TOKEN_POOL];  /* random tokens not yet handed out */
	uint32_t pool_left;
	struct mds_size_ent e[];
};

/* An unguessable non-zero token: a report or close must have seen it in a
 * reply (handles are no secret). Drawn from the kernel TOKEN_POOL at a
 * time (one system call per that many creates, not one each); 0 when it
 * has no randomness to give, which leaves the file unknown. */
static uint64_t new_token(struct mds_sizes *t)
{
	if (!t->pool_left) {
		if (getrandom(t->pool, sizeof(t->pool), 0) != (ssize_t)sizeof(t->pool))
			return 0;
		t->pool_left = TOKEN_POOL;
	}
	return t->pool[--t->pool_left];
}

struct mds_sizes *mds_sizes_new(uint32_t entries, int64_t quiet_ns, int64_t now_ns)
{
	struct mds_sizes *t;
	uint32_t nb = 1;

	if (!entries)
		return NULL;
	while (nb < entries && nb < (1u << 30))
		nb <<= 1;
	t = calloc(1, sizeof(*t) + (size_t)entries * sizeof(t->e[0]));
	if (!t)
		return NULL;
	t->buckets = malloc((size_t)nb * sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	for (uint32_t i = 0; i < nb; i++)
		t->buckets[i] = NIL;
	t->n = entries;
	t->nbuckets = nb;
	t->quiet_ns = quiet_ns;
	t->quiet_until_ns = now_ns + quiet_ns;
	t->newest = t->oldest = NIL;
	t->free = 0;
	for (uint32_t i = 0; i < entries; i++)
		t->e[i].next = i + 1 < entries ? i + 1 : NIL;
	return t;
}

void mds_sizes_free(struct mds_sizes *t)
{
	if (t)
		free(t->buckets);
	free(t);
}

uint32_t mds_sizes_count(const struct mds_sizes *t)
{
	return t ? t->used : 0;
}

static uint32_t bucket_of(const struct mds_sizes *t, uint64_t file)
{
	return (uint32_t)((file * 0x9e3779b97f4a7c15ull) >> 32) & (t->nbuckets - 1);
}

static void lru_unlink(struct mds_sizes *t, uint32_t i)
{
	struct mds_size_ent *x = &t->e[i];

	if (x->newer != NIL)
		t->e[x->newer].older = x->older;
	else
		t->newest = x->older;
	if (x->older != NIL)
		t->e[x->older].newer = x->newer;
	else
		t->oldest = x->newer;
}

static void lru_push(struct mds_sizes *t, uint32_t i)
{
	t->e[i].older = t->newest;
	t->e[i].newer = NIL;
	if (t->newest != NIL)
		t->e[t->newest].newer = i;
	t->newest = i;
	if (t->oldest == NIL)
		t->oldest = i;
}

static uint32_t find(struct mds_sizes *t, uint64_t file)
{
	for (uint32_t i = t->buckets[bucket_of(t, file)]; i != NIL; i = t->e[i].next)
		if (t->e[i].file == file)
			return i;
	return NIL;
}

static void unhash(struct mds_sizes *t, uint32_t i)
{
	uint32_t *p = &t->buckets[bucket_of(t, t->e[i].file)];

	while (*p != i)
		p = &t->e[*p].next;
	*p = t->e[i].next;
}

/* Whether entry x's loss could hide a writer: it counts one, or an
 * uncounted one's capability still runs. */
static int holds_writers(const struct mds_size_ent *x, int64_t now_ns)
{
	return x->writers || x->quiet_until_ns > now_ns;
}

/* Free the least recently used entry. One that holds writers is passed
 * over a few times (moved to the new end); if every candidate does, it
 * goes anyway and the whole table takes no report for a capability's
 * lifetime, since its writers are no longer counted. */
static uint32_t evict(struct mds_sizes *t, int64_t now_ns)
{
	uint32_t i = t->oldest;

	for (int tries = 0; tries < 8 && holds_writers(&t->e[i], now_ns); tries++) {
		lru_unlink(t, i);
		lru_push(t, i);
		i = t->oldest;
	}
	if (holds_writers(&t->e[i], now_ns))
		t->quiet_until_ns = now_ns + t->quiet_ns;
	lru_unlink(t, i);
	unhash(t, i);
	t->used--;
	return i;
}

/* file's entry, made (unknown, no writers) if it has none; most recently
 * used either way. */
static struct mds_size_ent *get(struct mds_sizes *t, uint64_t file, int64_t now_ns)
{
	uint32_t i = find(t, file), b;
	struct mds_size_ent *x;

	if (i != NIL) {
		lru_unlink(t, i);
		lru_push(t, i);
		return &t->e[i];
	}
	if (t->free != NIL) {
		i = t->free;
		t->free = t->e[i].next;
	} else {
		i = evict(t, now_ns);
	}
	x = &t->e[i];
	*x = (struct mds_size_ent){ .file = file, .write_token = new_token(t) };
	b = bucket_of(t, file);
	x->next = t->buckets[b];
	t->buckets[b] = i;
	lru_push(t, i);
	t->used++;
	return x;
}

/* Whatever was known is no longer: a report must present a new token. */
static void changed(struct mds_size_ent *x)
{
	x->known = 0;
	x->size_token = 0;
	x->had_known = 0;
}

/* One more counted open of x by session (0: none, not held). */
static void hold(struct mds_size_ent *x, uint64_t session)
{
	int free_slot = -1;

	if (!session)
		return;
	for (int k = 0; k < MDS_SIZE_SESSIONS; k++) {
		if (x->by[k].session == session) {
			x->by[k].opens++;
			return;
		}
		if (!x->by[k].session && free_slot < 0)
			free_slot = k;
	}
	if (free_slot >= 0) {
		x->by[free_slot].session = session;
		x->by[free_slot].opens = 1;
	}
}

/* One counted open of x by session closed: its hold goes. */
static void unhold(struct mds_size_ent *x, uint64_t session)
{
	for (int k = 0; session && k < MDS_SIZE_SESSIONS; k++)
		if (x->by[k].session == session && x->by[k].opens && !--x->by[k].opens)
			x->by[k].session = 0;
}

/* An open for writing: whatever was known is no longer, but if this is
 * the first writer since the count was 0, what was known is kept aside
 * for its close (mds_sizes_writer_close_unwritten). */
static void remember(struct mds_size_ent *x)
{
	int lone = !x->writers && x->known;
	struct mds_size_ent was = *x;

	changed(x);
	if (!lone)
		return;
	x->had_known = 1;
	x->had_size = was.size;
	x->had_blocks = was.blocks;
	x->had_mtime_ns = was.data_mtime_ns;
}

uint64_t mds_sizes_writer_open(struct mds_sizes *t, uint64_t file, uint64_t session,
			       int64_t now_ns)
{
	struct mds_size_ent *x;

	if (!t || !file)
		return 0;
	x = get(t, file, now_ns);
	remember(x);
	if (x->writers >= MDS_SIZE_MAX_WRITERS || !x->write_token) {
		/* not counted: never 0 again in this incarnation */
		x->writers = MDS_SIZE_MAX_WRITERS;
		return 0;
	}
	x->solo = x->writers == 0;
	x->writers++;
	hold(x, session);
	return x->write_token;
}

void mds_sizes_renewed(struct mds_sizes *t, uint64_t file, int64_t expires_ns, int64_t now_ns)
{
	struct mds_size_ent *x;

	if (!t || !file)
		return;
	x = get(t, file, now_ns);
	changed(x);
	if (expires_ns > x->quiet_until_ns)
		x->quiet_until_ns = expires_ns;
}

static int quiet(const struct mds_sizes *t, const struct mds_size_ent *x, int64_t now_ns);

static void take(struct mds_size_ent *x, const struct mds_size_view *seen)
{
	x->known = 1;
	x->size = seen->size;
	x->blocks = seen->blocks;
	x->data_mtime_ns = seen->data_mtime_ns;
}

/* One counted writer of file closes (token, session): its entry, or NULL
 * when the close counts nothing (no entry, another incarnation's token,
 * an uncounted writer). *had: what was known before its open, if it was
 * the lone writer since the count was 0 (else had->known is 0). */
static struct mds_size_ent *count_out(struct mds_sizes *t, uint64_t file, uint64_t token,
				      uint64_t session, struct mds_size_view *had)
{
	uint32_t i;
	struct mds_size_ent *x;

	*had = (struct mds_size_view){ 0 };
	if (!t || !file || (i = find(t, file)) == NIL)
		return NULL;
	x = &t->e[i];
	if (x->solo && x->had_known)
		*had = (struct mds_size_view){ 1, x->had_size, x->had_blocks, x->had_mtime_ns, 0 };
	changed(x);
	if (!token || token != x->write_token || !x->writers ||
	    x->writers >= MDS_SIZE_MAX_WRITERS)
		return NULL;
	x->writers--;
	unhold(x, session);
	return x;
}

/* After count_out: the count is 0 again, or the lone writer is gone. */
static void closed(struct mds_size_ent *x)
{
	if (!x->writers)
		x->solo = 0;
}

void mds_sizes_writer_close(struct mds_sizes *t, uint64_t file, uint64_t token,
			    uint64_t session, const struct mds_size_view *seen, int64_t now_ns)
{
	struct mds_size_view had;
	struct mds_size_ent *x = count_out(t, file, token, session, &had);

	if (!x)
		return;
	/* The only writer since the count was 0 saw the size after its last
	 * write: no one else was granted WRITE meanwhile (that would have
	 * ended solo), and an uncounted writer makes it not quiet. */
	if (seen && x->solo && quiet(t, x, now_ns))
		take(x, seen);
	closed(x);
}

void mds_sizes_writer_close_unwritten(struct mds_sizes *t, uint64_t file, uint64_t token,
				      uint64_t session, int64_t now_ns)
{
	struct mds_size_view had;
	struct mds_size_ent *x = count_out(t, file, token, session, &had);

	if (!x)
		return;
	/* The lone writer changed nothing: what was known before it stands. */
	if (had.known && quiet(t, x, now_ns))
		take(x, &had);
	closed(x);
}

void mds_sizes_forget(struct mds_sizes *t, uint64_t file)
{
	uint32_t i;

	if (t && file && (i = find(t, file)) != NIL)
		changed(&t->e[i]);
}

/* Whether a report on x may be taken now. */
static int quiet(const struct mds_sizes *t, const struct mds_size_ent *x, int64_t now_ns)
{
	return !x->writers && now_ns >= x->quiet_until_ns && now_ns >= t->quiet_until_ns;
}

void mds_sizes_stat(struct mds_sizes *t, uint64_t file, int64_t now_ns,
		    struct mds_size_view *out)
{
	struct mds_size_ent *x;

	*out = (struct mds_size_view){ 0 };
	if (!t || !file)
		return;
	x = get(t, file, now_ns);
	if (!quiet(t, x, now_ns))
		return;
	if (x->known) {
		out->known = 1;
		out->size = x->size;
		out->blocks = x->blocks;
		out->data_mtime_ns = x->data_mtime_ns;
		return;
	}
	if (!x->size_token)
		x->size_token = new_token(t);
	out->token = x->size_token;
}

int mds_sizes_report(struct mds_sizes *t, uint64_t file, uint64_t token, int64_t now_ns,
		     const struct mds_size_view *seen)
{
	uint32_t i;
	struct mds_size_ent *x;

	if (!t || !file || !token || (i = find(t, file)) == NIL)
		return -ESTALE;
	x = &t->e[i];
	if (token != x->size_token)
		return -ESTALE;
	if (!quiet(t, x, now_ns))
		return -EAGAIN;
	take(x, seen);
	x->size_token = 0; /* one report per token */
	return 0;
}

/* x's writers are no longer counted: a new incarnation, whose closes of
 * before count nothing, quiet until a capability granted now would have
 * expired (the writers of the old one write until theirs do, or renew). */
static void reincarnate(struct mds_sizes *t, struct mds_size_ent *x, int64_t now_ns)
{
	changed(x);
	x->write_token = new_token(t);
	x->writers = 0;
	x->solo = 0;
	memset(x->by, 0, sizeof(x->by));
	if (now_ns + t->quiet_ns > x->quiet_until_ns)
		x->quiet_until_ns = now_ns + t->quiet_ns;
}

static int held_by(const struct mds_size_ent *x, uint64_t session)
{
	for (int k = 0; k < MDS_SIZE_SESSIONS; k++)
		if (x->by[k].session == session && x->by[k].opens)
			return 1;
	return 0;
}

uint32_t mds_sizes_session_end(struct mds_sizes *t, uint64_t session, int64_t now_ns)
{
	uint32_t n = 0;

	if (!t || !session)
		return 0;
	for (uint32_t i = t->newest; i != NIL; i = t->e[i].older) {
		struct mds_size_ent *x = &t->e[i];

		if (x->writers && x->writers < MDS_SIZE_MAX_WRITERS && held_by(x, session)) {
			reincarnate(t, x, now_ns);
			n++;
		}
	}
	return n;
}
