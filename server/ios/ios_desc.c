/*
 * ios_desc.c - the storage daemon's description cache and layout check,
 * shared by the data path (ios_io.c) and the lock service (ios_lock.c).
 *
 * A datatype request or a lock request by view names a file type: sent in
 * the message (decoded, held as the request's `fresh` description until
 * the request passed its checks, then kept) or sent before (found in the
 * cache, or ESTALE: send it again). The cache holds IOS_DESC_CACHE entries
 * and IOS_DESC_CACHE_BYTES of decoded dataloops, least recently used
 * evicted first (struct ios_desc, ios.h).
 *
 * Uses (one way): dataloops/ and proto/ only. It calls nothing of
 * ios_io.c, ios_lock.c or ios_pool.c, which is what lets those two call it
 * without a circle.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios.h"
#include "tdl.h"

#define OBJ "object %016" PRIx64

static void desc_drop(struct ios *ios, struct ios_desc *d)
{
	tdl_free(d->dl);
	ios->stats.desc_cache_bytes -= d->bytes;
	d->dl = NULL;
	d->bytes = 0;
}

void ios_descs_clear(struct ios *ios)
{
	for (int i = 0; i < IOS_DESC_CACHE; i++)
		desc_drop(ios, &ios->descs[i]);
	tdl_free(ios->fresh.dl);
	ios->fresh.dl = NULL;
}

static struct ios_desc *desc_find(struct ios *ios, uint64_t nonce, uint64_t id)
{
	for (int i = 0; i < IOS_DESC_CACHE; i++) {
		struct ios_desc *d = &ios->descs[i];

		if (d->dl && d->nonce == nonce && d->id == id) {
			d->used = ++ios->clock;
			return d;
		}
	}
	return NULL;
}

/* Keep `fresh` (taken over) under its key, evicting the least recently
 * used until it fits the entries and the bytes. One larger than the whole
 * cache is not kept: its call sends it with every message (ESTALE). */
static void desc_put(struct ios *ios, struct ios_desc *fresh)
{
	struct ios_desc *old = desc_find(ios, fresh->nonce, fresh->id);

	if (old)
		desc_drop(ios, old);
	if (fresh->bytes > IOS_DESC_CACHE_BYTES) {
		tdl_free(fresh->dl);
		return;
	}
	for (;;) {
		struct ios_desc *slot = NULL, *victim = NULL;

		for (int i = 0; i < IOS_DESC_CACHE; i++) {
			struct ios_desc *d = &ios->descs[i];

			if (!d->dl)
				slot = slot ? slot : d;
			else if (!victim || d->used < victim->used)
				victim = d;
		}
		if (slot && ios->stats.desc_cache_bytes + fresh->bytes <= IOS_DESC_CACHE_BYTES) {
			*slot = *fresh;
			slot->used = ++ios->clock;
			ios->stats.desc_cache_bytes += slot->bytes;
			return;
		}
		desc_drop(ios, victim); /* some entry is held, or the bytes would fit */
	}
}

void ios_desc_done(struct ios *ios, enum ios_desc_fate fate)
{
	if (!ios->fresh.dl)
		return;
	if (fate == IOS_DESC_KEEP)
		desc_put(ios, &ios->fresh);
	else
		tdl_free(ios->fresh.dl);
	ios->fresh.dl = NULL;
}

int ios_refuse_unknown_desc(struct ios *ios, struct srv_req *req, const Tessera__DtypeIORequest *d,
			    const char *what, const struct tdl_dataloop **out)
{
	struct tdl_dataloop *dl;
	struct ios_desc *c;
	char err[256];
	int rc;

	ios_desc_done(ios, IOS_DESC_DROP); /* a handler that forgot: never kept */
	if (!d->file_type) {
		c = desc_find(ios, d->desc_nonce, d->desc_id);
		if (c) {
			ios->stats.desc_cache_hits++;
			*out = c->dl;
			return 0;
		}
		ios->stats.desc_cache_misses++;
		srv_reply_error(req, -ESTALE, "%s " OBJ ": file type %016" PRIx64 ":%" PRIu64
				" is not held here; send it again", what, d->handle, d->desc_nonce,
				d->desc_id);
		return -ESTALE;
	}
	rc = tp_dataloop_from_msg(d->file_type, &dl, err, sizeof(err));
	if (rc) {
		srv_reply_error(req, rc, "%s " OBJ ": file type: %s", what, d->handle, err);
		return rc;
	}
	ios->stats.desc_bytes[IOS_DTYPE] +=
		protobuf_c_message_get_packed_size(&d->file_type->base);
	ios->fresh = (struct ios_desc){ d->desc_nonce, d->desc_id, dl, tdl_mem_bytes(dl), 0 };
	*out = dl;
	return 0;
}

int ios_refuse_bad_layout(struct ios *ios, struct srv_req *req, uint64_t handle,
			  uint64_t strip_size, uint32_t stripe_count, uint32_t slot,
			  const char *what)
{
	struct tdl_layout layout = { strip_size, stripe_count };
	char why[160];

	if (tdl_layout_check(&layout, why, sizeof(why))) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": bad %s", what, handle, why);
		return -EINVAL;
	}
	if (stripe_count > ios->cfg->n_ios) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": bad layout: stripe count %u above the "
				"%u storage daemons configured", what, handle, stripe_count, ios->cfg->n_ios);
		return -EINVAL;
	}
	if (slot >= stripe_count) {
		srv_reply_error(req, -EINVAL, "%s " OBJ ": bad layout: slot %u of %u slots", what,
				handle, slot, stripe_count);
		return -EINVAL;
	}
	return 0;
}
