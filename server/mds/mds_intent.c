/*
 * mds_intent.c - purge intents ("P" records) and the handle-ordered scans
 * fsck and the purger make over "P" and "A" records.
 *
 * An intent is written in the batch that drops a file's "A" record with
 * its last name (mds_batch_drop_last_name, from remove_entry in mds_ops.c
 * and mds_rename), so no crash can leave the name gone and the objects
 * unrecorded; a name of a file that has others records nothing.
 * mds_intent_done shrinks it as storage daemons acknowledge REMOVE; the
 * last acknowledgement deletes it.
 */
#include "mds_store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INTENT_KEY_LEN 9

static size_t intent_key(unsigned char *key, uint64_t file)
{
	key[0] = MDS_KEY_INTENT;
	mds_put_be64(key + 1, file);
	return INTENT_KEY_LEN;
}

/* Encode into buf (4 + 12 * TP_MAX_STRIPE bytes); returns the length. */
static size_t intent_encode(const struct mds_intent *in, unsigned char *buf)
{
	unsigned char *p = buf;

	mds_put_be32(p, in->count);
	p += 4;
	for (uint32_t i = 0; i < in->count; i++) {
		mds_put_be32(p, in->servers[i]);
		mds_put_be64(p + 4, in->handles[i]);
		p += 12;
	}
	return (size_t)(p - buf);
}

static int intent_decode(const unsigned char *p, size_t len, uint64_t file,
			 struct mds_intent *out)
{
	if (len < 4)
		return -EIO;
	out->file = file;
	out->count = mds_get_be32(p);
	if (out->count > TP_MAX_STRIPE || len != 4 + 12 * (size_t)out->count)
		return -EIO;
	for (uint32_t i = 0; i < out->count; i++) {
		out->servers[i] = mds_get_be32(p + 4 + 12 * i);
		out->handles[i] = mds_get_be64(p + 8 + 12 * i);
	}
	return 0;
}

static void batch_put_intent(leveldb_writebatch_t *b, const struct mds_intent *in)
{
	unsigned char key[INTENT_KEY_LEN], val[4 + 12 * TP_MAX_STRIPE];

	leveldb_writebatch_put(b, (char *)key, intent_key(key, in->file), (char *)val,
			       intent_encode(in, val));
}

void mds_batch_put_intent(leveldb_writebatch_t *b, const struct mds_attr *victim)
{
	struct mds_intent in;

	if (victim->type != MDS_FILE || !victim->has_layout || victim->layout.count == 0)
		return;
	in.file = victim->handle;
	in.count = victim->layout.count;
	memcpy(in.servers, victim->layout.servers, in.count * sizeof(*in.servers));
	memcpy(in.handles, victim->layout.handles, in.count * sizeof(*in.handles));
	batch_put_intent(b, &in);
}

/* Visit the records of kind `kind` ("A" or "P") whose handle is above
 * *after (all when after is NULL), in handle order, calling take(); take
 * returns 1 when it kept the record, 0 when it skipped it, or a negative
 * errno. Stops after `max` kept: *eof says whether the scan ended. */
typedef int (*scan_fn)(struct mds_store *st, uint64_t handle, const unsigned char *v,
		       size_t vlen, void *out, uint32_t i);

static int scan(struct mds_store *st, char kind, const char *what, const uint64_t *after,
		uint32_t max, scan_fn take, void *out, uint32_t *n, int *eof)
{
	unsigned char key[INTENT_KEY_LEN];
	leveldb_iterator_t *it = leveldb_create_iterator(st->db, st->ropts);
	char *err = NULL;
	int rc = 0;

	*n = 0;
	*eof = 0;
	key[0] = (unsigned char)kind;
	mds_put_be64(key + 1, after ? *after : 0);
	for (leveldb_iter_seek(it, (char *)key, after ? 9 : 1); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)leveldb_iter_key(it, &kl);
		const unsigned char *v;
		uint64_t h;

		if (kl < 1 || k[0] != (unsigned char)kind)
			break;
		if (kl != 9) {
			rc = mds_fail(st, -EIO, "%s: malformed key", what);
			goto out;
		}
		h = mds_get_be64(k + 1);
		if (after && h <= *after)
			continue;
		if (*n == max)
			goto out;
		v = (const unsigned char *)leveldb_iter_value(it, &vl);
		rc = take(st, h, v, vl, out, *n);
		if (rc < 0)
			goto out;
		*n += (uint32_t)rc;
		rc = 0;
	}
	leveldb_iter_get_error(it, &err);
	if (err) {
		rc = mds_fail(st, -EIO, "%s: leveldb: %s", what, err);
		leveldb_free(err);
		goto out;
	}
	*eof = 1;
out:
	leveldb_iter_destroy(it);
	if (rc)
		*n = 0;
	return rc;
}

static int take_intent(struct mds_store *st, uint64_t h, const unsigned char *v, size_t vl,
		       void *out, uint32_t i)
{
	if (intent_decode(v, vl, h, (struct mds_intent *)out + i))
		return mds_fail(st, -EIO, "purge intent of %016llx: corrupt record",
				(unsigned long long)h);
	return 1;
}

static int take_file(struct mds_store *st, uint64_t h, const unsigned char *v, size_t vl,
		     void *out, uint32_t i)
{
	struct mds_attr *a = (struct mds_attr *)out + i;

	if (mds_decode_attr(v, vl, h, a))
		return mds_fail(st, -EIO, "attributes of %016llx: corrupt record",
				(unsigned long long)h);
	return a->type == MDS_FILE;
}

int mds_intent_list(struct mds_store *st, const uint64_t *after, uint32_t max,
		    struct mds_intent *out, uint32_t *n, int *eof)
{
	return scan(st, MDS_KEY_INTENT, "list purge intents", after, max, take_intent, out, n,
		    eof);
}

int mds_file_list(struct mds_store *st, const uint64_t *after, uint32_t max,
		  struct mds_attr *out, uint32_t *n, int *eof)
{
	return scan(st, MDS_KEY_ATTR, "list files", after, max, take_file, out, n, eof);
}

int mds_intent_done(struct mds_store *st, uint64_t file, uint32_t server)
{
	unsigned char key[INTENT_KEY_LEN];
	struct mds_intent in, left;
	leveldb_writebatch_t *b;
	char *val = NULL, *err = NULL;
	size_t vlen;
	int rc;

	intent_key(key, file);
	val = leveldb_get(st->db, st->ropts, (char *)key, sizeof(key), &vlen, &err);
	if (err) {
		rc = mds_fail(st, -EIO, "purge intent of %016llx: leveldb: %s",
			      (unsigned long long)file, err);
		leveldb_free(err);
		return rc;
	}
	if (!val)
		return 0;
	rc = intent_decode((unsigned char *)val, vlen, file, &in);
	leveldb_free(val);
	if (rc)
		return mds_fail(st, -EIO, "purge intent of %016llx: corrupt record",
				(unsigned long long)file);
	left.file = file;
	left.count = 0;
	for (uint32_t i = 0; i < in.count; i++)
		if (in.servers[i] != server) {
			left.servers[left.count] = in.servers[i];
			left.handles[left.count++] = in.handles[i];
		}
	if (left.count == in.count)
		return 0;
	b = leveldb_writebatch_create();
	if (left.count)
		batch_put_intent(b, &left);
	else
		leveldb_writebatch_delete(b, (char *)key, sizeof(key));
	/* Unsynced: if a crash takes it back, the purger sends the REMOVE
	 * again, which a storage daemon answers at once (the objects are
	 * gone); a synced write here cost a disk flush per file and daemon. */
	rc = mds_batch_write_lazy(st, b, "purge", "intent");
	leveldb_writebatch_destroy(b);
	return rc;
}
