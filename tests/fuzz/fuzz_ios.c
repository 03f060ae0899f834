/*
 * fuzz_ios.c - libFuzzer target for the storage daemon: its dispatch table
 * and every handler (ios_main.c, ios_io.c, ios_lock.c) over a real object
 * store in a temporary directory, driven in-process through the daemon
 * core (srv_create_local) by records of frames (fuzz_daemon.h).
 *
 * One source, three targets, by the opcodes a record may name:
 *   fuzz_ios        every storage daemon opcode;
 *   fuzz_ios_list   (-DFUZZ_IOS_LIST) list reads and writes: the pieces'
 *                   validation, with contiguous I/O and sizes around it;
 *   fuzz_ios_lock   (-DFUZZ_IOS_LOCK) the lock service: range, list and
 *                   datatype descriptions, releases, leases, ticks, with
 *                   fenced I/O.
 * Besides the replies' form, what reads and sizes return is checked
 * against a model of the objects built from the writes and truncates that
 * succeeded.
 *
 * Each input starts a fresh daemon and an empty store (in one directory for
 * the whole run: the files an input made are removed after it, found
 * through the store's disk ops table); whatever is parked at the end is
 * ended by srv_destroy, and the sanitizers' leak check sees the rest.
 *
 * The daemon's own source is compiled in (its main renamed), so the
 * dispatch table and handlers are exactly the daemon's. Built with
 * -DFUZZ_SEED_MAIN it writes a seed corpus of requests into a directory.
 */
#define main tessera_ios_main
#include "ios_main.c"
#undef main

#include "fuzz_daemon.h"
#include "tdl.h"
#include "tlk.h"

#if defined(FUZZ_IOS_LIST)
static const unsigned list_ops[] = { TP_OP_LIST_WRITE, TP_OP_LIST_READ, TP_OP_WRITE, TP_OP_READ,
				     TP_OP_GETSIZE, TP_OP_TRUNCATE };
#elif defined(FUZZ_IOS_LOCK)
static const unsigned list_ops[] = { TP_OP_LOCK_ACQUIRE, TP_OP_LOCK_RELEASE, TP_OP_LEASE,
				     TP_OP_DTYPE_WRITE, TP_OP_LIST_WRITE, TP_OP_WRITE,
				     TP_OP_LOCK_TEST };
#endif

/* The opcodes a record chooses from: the list above, or every opcode the
 * daemon's dispatch table serves. */
static unsigned ops[TP_OP_LIMIT];
static size_t nops;

static void ops_init(void)
{
#if defined(FUZZ_IOS_LIST) || defined(FUZZ_IOS_LOCK)
	for (size_t i = 0; i < sizeof(list_ops) / sizeof(list_ops[0]); i++)
		ops[nops++] = list_ops[i];
#else
	for (unsigned op = 0; op < TP_OP_LIMIT; op++)
		if (ios_handlers[op])
			ops[nops++] = op;
#endif
}

/* The lock epoch of every run (seeds name it). The lock target's
 * sessions expire at every tick; the others' outlive a run. */
#define FZ_EPOCH 5
#ifdef FUZZ_IOS_LOCK
#define FZ_LEASE_MS 0
#else
#define FZ_LEASE_MS 10000
#endif

#ifndef FUZZ_SEED_MAIN

#include <fcntl.h>
#include <unistd.h>

/* ------------------------------------------------------------ the disk
 *
 * The system's disk, through a wrapper that remembers every file it
 * created, so that an input's objects can be removed after it and the
 * next input starts from an empty store in the same directory (making the
 * 256 object directories anew for each input would cost more than the
 * input). */
struct fz_disk {
	struct ios_disk base;
	struct ios_disk *inner;
	char **made;               /* paths opened with O_CREAT */
	size_t n, cap;
};

#define FZ_INNER(d) (((struct fz_disk *)(d))->inner)

static int fzd_open(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path,
		    int flags, mode_t mode)
{
	struct fz_disk *fd = (struct fz_disk *)d;
	int rc = fd->inner->ops->open(fd->inner, handle, file, path, flags, mode);

	if (rc >= 0 && (flags & O_CREAT)) {
		if (fd->n == fd->cap) {
			size_t cap = fd->cap ? 2 * fd->cap : 64;
			char **m = realloc(fd->made, cap * sizeof(*m));

			if (!m)
				abort();
			fd->made = m;
			fd->cap = cap;
		}
		if (!(fd->made[fd->n++] = strdup(path)))
			abort();
	}
	return rc;
}

static int fzd_unlink(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path)
{
	return FZ_INNER(d)->ops->unlink(FZ_INNER(d), handle, file, path);
}

static int fzd_close(struct ios_disk *d, int fd)
{
	return FZ_INNER(d)->ops->close(FZ_INNER(d), fd);
}

static ssize_t fzd_preadv(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	return FZ_INNER(d)->ops->preadv(FZ_INNER(d), fd, iov, n, off);
}

static ssize_t fzd_pwritev(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	return FZ_INNER(d)->ops->pwritev(FZ_INNER(d), fd, iov, n, off);
}

static int fzd_fstat(struct ios_disk *d, int fd, struct stat *sb)
{
	return FZ_INNER(d)->ops->fstat(FZ_INNER(d), fd, sb);
}

static int fzd_ftruncate(struct ios_disk *d, int fd, off_t size)
{
	return FZ_INNER(d)->ops->ftruncate(FZ_INNER(d), fd, size);
}

static int fzd_fdatasync(struct ios_disk *d, int fd)
{
	return FZ_INNER(d)->ops->fdatasync(FZ_INNER(d), fd);
}

static int fzd_mkdir(struct ios_disk *d, const char *path, mode_t mode)
{
	return FZ_INNER(d)->ops->mkdir(FZ_INNER(d), path, mode);
}

static int fzd_syncdir(struct ios_disk *d, const char *path)
{
	return FZ_INNER(d)->ops->syncdir(FZ_INNER(d), path);
}

static int fzd_statvfs(struct ios_disk *d, const char *path, struct statvfs *sv)
{
	return FZ_INNER(d)->ops->statvfs(FZ_INNER(d), path, sv);
}

/* The store's own files (its name, its registry), made aside and renamed
 * in: fz_disk_clean removes them by name. */
static int fzd_rename(struct ios_disk *d, const char *from, const char *to,
		      enum ios_rename how)
{
	return FZ_INNER(d)->ops->rename(FZ_INNER(d), from, to, how);
}

static int fzd_fallocate(struct ios_disk *d, int fd, off_t off, off_t len)
{
	return FZ_INNER(d)->ops->fallocate(FZ_INNER(d), fd, off, len);
}

static int fzd_fchmod(struct ios_disk *d, int fd, mode_t mode)
{
	return FZ_INNER(d)->ops->fchmod(FZ_INNER(d), fd, mode);
}

static void fzd_destroy(struct ios_disk *d)
{
	(void)d; /* lives for the whole run */
}

static const struct ios_disk_ops fz_disk_ops = {
	sizeof(struct ios_disk_ops), fzd_open, fzd_unlink, fzd_close, fzd_preadv, fzd_pwritev,
	fzd_fstat, fzd_ftruncate, fzd_fdatasync, fzd_mkdir, fzd_syncdir, fzd_statvfs,
	fzd_rename, fzd_destroy, NULL /* no writeback hint */, fzd_fallocate, fzd_fchmod,
};

/* Remove the files the last input made, and the store's own (renamed in,
 * so not among them): the next input opens a new store. */
static void fz_disk_clean(struct fz_disk *d, const char *dir)
{
	static const char *const own[] = { "store", "registry" };
	char path[4200];

	for (size_t i = 0; i < d->n; i++) {
		unlink(d->made[i]);
		free(d->made[i]);
	}
	d->n = 0;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, own[i]);
		unlink(path);
	}
}

/* ------------------------------------------------------------ the model
 *
 * What the objects must hold, from the requests that succeeded: the first
 * MODEL_BYTES bytes and the size of up to MODEL_OBJECTS objects. Every
 * read's bytes in that window, each read past the size (zeros), each
 * size the daemon reports, and the length of a contiguous read are
 * checked against it. A write or truncate that failed, or a datatype
 * write (whose pieces the model does not compute), makes the object
 * unknown until it is removed. */
#define MODEL_BYTES 8192
#define MODEL_OBJECTS 8

struct model_obj {
	uint64_t handle;
	int used, known;
	uint64_t size;
	uint8_t bytes[MODEL_BYTES];
};

struct model {
	struct model_obj obj[MODEL_OBJECTS];
	int full;                   /* an object could not be tracked: take no
				     * new one as empty from then on */
	/* The request being served (the model's opcodes never park). */
	uint64_t reqid;
	unsigned opcode;
	ProtobufCMessage *msg;      /* decoded, or NULL */
	uint8_t *data;              /* its raw data */
	size_t data_len;
};

#define MODEL_CHECK(cond)                                                         \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "fuzz_ios: %s:%d: the store disagrees with " \
				"the model: %s\n", __FILE__, __LINE__, #cond);    \
			abort();                                                  \
		}                                                                 \
	} while (0)

static struct model_obj *model_obj(struct model *m, uint64_t handle, int make)
{
	struct model_obj *free_slot = NULL;

	for (int i = 0; i < MODEL_OBJECTS; i++) {
		if (m->obj[i].used && m->obj[i].handle == handle)
			return &m->obj[i];
		if (!m->obj[i].used && !free_slot)
			free_slot = &m->obj[i];
	}
	if (!free_slot)
		m->full |= make;
	if (!make || !free_slot || m->full)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = free_slot->known = 1; /* a new object reads empty */
	free_slot->handle = handle;
	return free_slot;
}

static void model_write(struct model_obj *o, uint64_t off, const uint8_t *src, uint64_t len)
{
	if (len && off + len > o->size)
		o->size = off + len;
	if (off < MODEL_BYTES)
		memcpy(o->bytes + off, src, MODEL_BYTES - off < len ? MODEL_BYTES - off : len);
}

/* Bytes `got` read at off, in an object of the model's size. */
static void model_read(const struct model_obj *o, uint64_t off, const uint8_t *got, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++) {
		uint64_t at = off + i;

		if (at >= o->size)
			MODEL_CHECK(got[i] == 0);
		else if (at < MODEL_BYTES)
			MODEL_CHECK(got[i] == o->bytes[at]);
	}
}

static void model_observe(void *arg, const uint8_t *frame, size_t len, int done)
{
	struct model *m = arg;
	struct tp_frame fr;
	char err[64];

	if (done)
		return;
	if (m->msg)
		protobuf_c_message_free_unpacked(m->msg, NULL);
	free(m->data);
	m->msg = NULL;
	m->data = NULL;
	if (tp_frame_parse(frame, len, SIZE_MAX, &fr, err, sizeof(err)))
		return;
	m->reqid = fr.hdr.reqid;
	m->opcode = fr.hdr.opcode;
	m->msg = tp_body_unpack(&fr, tp_request_desc(fr.hdr.opcode));
	m->data_len = fr.hdr.data_len;
	m->data = malloc(m->data_len + 1);
	if (!m->data)
		abort();
	memcpy(m->data, fr.data, m->data_len);
}

static void model_forget(struct model *m, uint64_t handle)
{
	struct model_obj *o = model_obj(m, handle, 1);

	if (o)
		o->known = 0;
}

/* A list request's pieces, if the daemon may take them (as ios_do_list
 * checks). */
static int model_pieces(const Tessera__ListIORequest *l)
{
	uint64_t total = 0;

	if (l->n_offsets != l->n_lengths)
		return 0;
	for (size_t i = 0; i < l->n_offsets; i++) {
		if (l->offsets[i] > INT64_MAX || l->lengths[i] > INT64_MAX - l->offsets[i] ||
		    l->lengths[i] > INT64_MAX - total)
			return 0;
		total += l->lengths[i];
	}
	return 1;
}

/* The model_check_* functions: one opcode's answer (rep NULL: the
 * request failed) against the model, which they then update. */

static void model_check_write(struct model *m, const ProtobufCMessage *req,
			      const ProtobufCMessage *rep)
{
	const Tessera__WriteRequest *w = (const void *)req;
	struct model_obj *o;

	if (!rep) {
		model_forget(m, w->handle);
		return;
	}
	MODEL_CHECK(((const Tessera__WriteReply *)rep)->written == m->data_len);
	if ((o = model_obj(m, w->handle, 1)) && o->known)
		model_write(o, w->offset, m->data, m->data_len);
}

static void model_check_list_write(struct model *m, const ProtobufCMessage *req,
				   const ProtobufCMessage *rep)
{
	const Tessera__ListIORequest *l = (const void *)req;
	struct model_obj *o;
	uint64_t pos = 0;

	if (!rep) {
		if (model_pieces(l)) /* refused before any write, or not */
			model_forget(m, l->handle);
		return;
	}
	if (!(o = model_obj(m, l->handle, 1)) || !o->known)
		return;
	for (size_t i = 0; i < l->n_offsets; i++) {
		model_write(o, l->offsets[i], m->data + pos, l->lengths[i]);
		pos += l->lengths[i];
	}
	MODEL_CHECK(((const Tessera__WriteReply *)rep)->written == pos);
}

static void model_check_read(struct model *m, const struct tp_frame *fr,
			     const ProtobufCMessage *req, const ProtobufCMessage *rep)
{
	const Tessera__ReadRequest *r = (const void *)req;
	struct model_obj *o;
	uint64_t want;

	if (!rep || !(o = model_obj(m, r->handle, 0)) || !o->known)
		return;
	MODEL_CHECK(((const Tessera__ReadReply *)rep)->object_size == o->size);
	want = o->size <= r->offset ? 0 : o->size - r->offset < r->length
		? o->size - r->offset : r->length;
	MODEL_CHECK(fr->hdr.data_len == want);
	model_read(o, r->offset, fr->data, want);
}

static void model_check_list_read(struct model *m, const struct tp_frame *fr,
				  const ProtobufCMessage *req, const ProtobufCMessage *rep)
{
	const Tessera__ListIORequest *l = (const void *)req;
	struct model_obj *o;
	uint64_t pos = 0;

	if (!rep || !(o = model_obj(m, l->handle, 0)) || !o->known)
		return;
	MODEL_CHECK(((const Tessera__ReadReply *)rep)->object_size == o->size);
	for (size_t i = 0; i < l->n_offsets; i++) {
		MODEL_CHECK(pos + l->lengths[i] <= fr->hdr.data_len);
		model_read(o, l->offsets[i], fr->data + pos, l->lengths[i]);
		pos += l->lengths[i];
	}
	MODEL_CHECK(pos == fr->hdr.data_len);
}

static void model_check_truncate(struct model *m, const ProtobufCMessage *req,
				 const ProtobufCMessage *rep)
{
	const Tessera__TruncateRequest *t = (const void *)req;
	struct model_obj *o;

	if (!rep) {
		model_forget(m, t->handle);
		return;
	}
	if (!(o = model_obj(m, t->handle, 1)) || !o->known)
		return;
	if (t->size < MODEL_BYTES && t->size < o->size)
		memset(o->bytes + t->size, 0, MODEL_BYTES - t->size);
	o->size = t->size;
}

static void model_check_getsize(struct model *m, const ProtobufCMessage *req,
				const ProtobufCMessage *rep)
{
	const Tessera__HandlesRequest *h = (const void *)req;
	const Tessera__SizesReply *s = (const void *)rep;
	struct model_obj *o;

	if (!rep)
		return;
	MODEL_CHECK(s->n_sizes == h->n_handles);
	for (size_t i = 0; i < h->n_handles; i++)
		if ((o = model_obj(m, h->handles[i], 0)) && o->known)
			MODEL_CHECK(s->sizes[i] == o->size);
}

static void model_check_remove(struct model *m, const ProtobufCMessage *req,
			       const ProtobufCMessage *rep)
{
	const Tessera__HandlesRequest *h = (const void *)req;
	struct model_obj *o;

	for (size_t i = 0; i < h->n_handles; i++)
		if ((o = model_obj(m, h->handles[i], 0))) {
			/* removed, or unknown if the request failed */
			memset(o->bytes, 0, sizeof(o->bytes));
			o->size = 0;
			o->known = rep != NULL;
		}
}

/* A request on a versioned object (its capability says so) or a VLOG:
 * the model does not follow versions. Its objects become unknown (a
 * merge, like a plain write, changes the base); reads are not checked. */
static int model_versioned(struct model *m, const ProtobufCMessage *req)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(req->descriptor, "cap");
	const Tessera__Capability *cap;
	const char *base = (const char *)req;

	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
		return 0;
	cap = *(const Tessera__Capability *const *)(base + f->offset);
	if (m->opcode != TP_OP_VLOG && !(cap && (cap->rights & TP_CAP_VERSIONED)))
		return 0;
	if ((f = protobuf_c_message_descriptor_get_field_by_name(req->descriptor, "handle")) &&
	    f->type == PROTOBUF_C_TYPE_UINT64)
		model_forget(m, *(const uint64_t *)(base + f->offset));
	if ((f = protobuf_c_message_descriptor_get_field_by_name(req->descriptor, "handles")) &&
	    f->type == PROTOBUF_C_TYPE_UINT64)
		for (size_t i = 0; i < *(const size_t *)(base + f->quantifier_offset); i++)
			model_forget(m, (*(const uint64_t *const *)(base + f->offset))[i]);
	return 1;
}

static void model_check(void *arg, const struct tp_frame *fr, const ProtobufCMessage *rep)
{
	struct model *m = arg;
	const ProtobufCMessage *req = m->msg;

	if (!req || fr->hdr.reqid != m->reqid)
		return; /* a parked request's answer, or not a decoded one */
	if (model_versioned(m, req))
		return;
	switch (m->opcode) {
	case TP_OP_WRITE:
		model_check_write(m, req, rep);
		break;
	case TP_OP_LIST_WRITE:
		model_check_list_write(m, req, rep);
		break;
	case TP_OP_READ:
		model_check_read(m, fr, req, rep);
		break;
	case TP_OP_LIST_READ:
		model_check_list_read(m, fr, req, rep);
		break;
	case TP_OP_TRUNCATE:
		model_check_truncate(m, req, rep);
		break;
	case TP_OP_GETSIZE:
		model_check_getsize(m, req, rep);
		break;
	case TP_OP_REMOVE:
		model_check_remove(m, req, rep);
		break;
	case TP_OP_DTYPE_WRITE:
		model_forget(m, ((const Tessera__DtypeIORequest *)req)->handle);
		break;
	}
}

static void model_free(struct model *m)
{
	if (m->msg)
		protobuf_c_message_free_unpacked(m->msg, NULL);
	free(m->data);
}

static struct fz_disk disk;
static char dir[4096];

static void fz_end(void)
{
	fz_disk_clean(&disk, dir);
	disk.inner->ops->destroy(disk.inner);
	free(disk.made);
	fz_rmtree(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tp_config cfg;
	struct fz_in in = { data, size };
	static struct model model;
	struct fz_replies seen = { 0, 0, getenv("FUZZ_VERBOSE") != NULL, model_check, &model };
	struct ios ios = { 0 };
	char *msg = NULL, *notice = NULL, err[256] = "";
	int rc;

	if (!cfg.n_ios) {
		fz_config(&cfg);
		ops_init();
		disk.base.ops = &fz_disk_ops;
		if (fz_tmpdir("fuzz-ios", dir, sizeof(dir)) || ios_disk_system(&disk.inner))
			abort();
		atexit(fz_end);
	}
	ios.disk = &disk.base;
	ios.cfg = &cfg;
	ios.index = 1;
	/* IOS_STORE_NEW: the directory exists and is empty (a new store,
	 * not a remade one). */
	if ((rc = ios_store_open(dir, 16, IOS_STORE_NEW, 0, ios.disk, &ios.store, &notice, &msg)) ||
	    (rc = ios_locks_create(&ios, FZ_LEASE_MS, &ios.locks, err, sizeof(err))) ||
	    (rc = ios_caps_create(&fz_key, &ios.caps))) {
		fprintf(stderr, "fuzz_ios: %s\n", msg ? msg : err[0] ? err : strerror(-rc));
		abort();
	}
	free(notice);
	ios_locks_set_epoch(ios.locks, FZ_EPOCH);
	struct srv_role role = { "ios", 1, ios_handlers, ios_tick, &ios, NULL, NULL, NULL, NULL, NULL };
	struct srv_opts so = { &cfg, NULL, NULL, 0, NULL, NULL };

	if (srv_create_local(&so, &role, fz_reply_sink, &seen, &ios.srv))
		abort();
	memset(&model, 0, sizeof(model));
	fz_drive(ios.srv, ops, nops, &in, &fz_key, model_observe, &model);
	model_free(&model);
	srv_destroy(ios.srv);
	ios_locks_destroy(ios.locks);
	ios_caps_destroy(ios.caps);
	ios_descs_clear(&ios);
	ios_vlogs_destroy(ios.vlogs);
	ios_store_close(ios.store);
	fz_disk_clean(&disk, dir);
	return 0;
}

#else /* FUZZ_SEED_MAIN */

/* The index of opcode op in ops[] (for seeds); nops if not there. */
static unsigned op_index(unsigned op)
{
	unsigned i = 0;

	while (i < nops && ops[i] != op)
		i++;
	return i;
}

/* A request record, unless this target does not send op. */
static void req(struct fz_seed *s, unsigned op, unsigned peer, const ProtobufCMessage *m,
		size_t dlen)
{
	if (op_index(op) < nops)
		fz_seed_request(s, op_index(op), peer, m, dlen);
}

/* Lock regions [off, off+len) pairs of one object: 4 slots of 64 KiB
 * strips, this daemon's slot 1. */
static void lock_msg(Tessera__LockAcquireRequest *m, uint64_t session, uint32_t mode,
		     uint64_t *offs, uint64_t *lens, size_t n, int blocking)
{
	tessera__lock_acquire_request__init(m);
	m->session = session;
	m->handle = 7;
	m->mode = mode;
	m->blocking = blocking;
	m->wait_ms = 5;
	m->strip_size = 65536;
	m->stripe_count = 4;
	m->slot = 1;
	m->n_offsets = m->n_lengths = n;
	m->offsets = offs;
	m->lengths = lens;
}

/* The seeds append in the order below, each saved when it is complete;
 * a change of order changes the seed files. */

/* Contiguous and list I/O on one object, sizes, truncate. */
static int seed_io_list(struct fz_seed *s, const char *dir)
{
	Tessera__WriteRequest w = TESSERA__WRITE_REQUEST__INIT;
	Tessera__ReadRequest r = TESSERA__READ_REQUEST__INIT;
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	Tessera__HandlesRequest h = TESSERA__HANDLES_REQUEST__INIT;
	Tessera__TruncateRequest t = TESSERA__TRUNCATE_REQUEST__INIT;
	uint64_t offs[4] = { 0, 100, 4096, 70000 }, lens[4] = { 10, 50, 4096, 30 };
	uint64_t handles[2] = { 7, 8 };

	w.handle = 7;
	w.offset = 10;
	req(s, TP_OP_WRITE, 0, &w.base, 300);
	l.handle = 7;
	l.n_offsets = l.n_lengths = 4;
	l.offsets = offs;
	l.lengths = lens;
	req(s, TP_OP_LIST_WRITE, 0, &l.base, 10 + 50 + 4096 + 30);
	req(s, TP_OP_LIST_READ, 1, &l.base, 0);
	r.handle = 7;
	r.length = 5000;
	req(s, TP_OP_READ, 0, &r.base, 0);
	h.n_handles = 2;
	h.handles = handles;
	req(s, TP_OP_GETSIZE, 0, &h.base, 0);
	t.handle = 7;
	t.size = 20;
	req(s, TP_OP_TRUNCATE, 0, &t.base, 0);
	return fz_seed_save(s, dir, "io-list");
}

/* Bad lists: lengths disagree, a piece beyond the largest object. */
static int seed_list_bad(struct fz_seed *s, const char *dir)
{
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	uint64_t offs[4] = { 0, 100, 4096, 70000 }, lens[4] = { 10, 50, 4096, 30 };

	l.handle = 7;
	l.n_offsets = 4;
	l.offsets = offs;
	l.lengths = lens;
	l.n_lengths = 3;
	req(s, TP_OP_LIST_WRITE, 0, &l.base, 100);
	l.n_lengths = 4;
	offs[3] = UINT64_MAX - 5;
	req(s, TP_OP_LIST_READ, 0, &l.base, 0);
	return fz_seed_save(s, dir, "list-bad");
}

/* Locks: two sessions contend, one waits, releases, leases, ticks. */
static int seed_lock_list(struct fz_seed *s, const char *dir, uint64_t *loffs, uint64_t *llens)
{
	Tessera__LockAcquireRequest la;
	Tessera__LockReleaseRequest lr = TESSERA__LOCK_RELEASE_REQUEST__INIT;
	Tessera__LeaseRequest lease = TESSERA__LEASE_REQUEST__INIT;

	lock_msg(&la, 11, TLK_WRITE, loffs, llens, 2, 1);
	req(s, TP_OP_LOCK_ACQUIRE, 0, &la.base, 0);
	lock_msg(&la, 12, TLK_READ, loffs, llens, 1, 1);
	req(s, TP_OP_LOCK_ACQUIRE, 1, &la.base, 0);
	lease.session = 12;
	req(s, TP_OP_LEASE, 1, &lease.base, 0);
	lr.session = 11;
	lr.epoch = FZ_EPOCH;
	lr.lock_id = 1;
	lr.handle = 7;
	req(s, TP_OP_LOCK_RELEASE, 0, &lr.base, 0);
	fz_seed_tick(s);
	lr.session = 12;
	lr.lock_id = 2;
	lr.partial = 1;
	lr.from = 65536 + 50;
	req(s, TP_OP_LOCK_RELEASE, 1, &lr.base, 0);
	return fz_seed_save(s, dir, "lock-list");
}

/* A description in several messages (more = true). */
static int seed_lock_more(struct fz_seed *s, const char *dir, uint64_t *loffs, uint64_t *llens)
{
	Tessera__LockAcquireRequest la;

	lock_msg(&la, 13, TLK_WRITE, loffs, llens, 1, 0);
	la.more = 1;
	req(s, TP_OP_LOCK_ACQUIRE, 2, &la.base, 0);
	lock_msg(&la, 13, TLK_WRITE, loffs + 1, llens + 1, 1, 0);
	la.lock_id = (1ull << 63) | 1;
	req(s, TP_OP_LOCK_ACQUIRE, 2, &la.base, 0);
	fz_seed_tick(s);
	return fz_seed_save(s, dir, "lock-more");
}

/* A datatype request on slot 1 of 4: the description dm (a vector of
 * 8-byte blocks) twice from 64 KiB on, window [0, 256). */
static void dtype_msg(Tessera__DtypeIORequest *d, Tessera__Dataloop *dm)
{
	tessera__dtype_iorequest__init(d);
	d->handle = 7;
	d->strip_size = 65536;
	d->stripe_count = 4;
	d->slot = 1;
	d->desc_nonce = 99;
	d->desc_id = 1;
	d->file_type = dm;
	d->disp = 65536;
	d->count = 2;
	d->first = 0;
	d->last = 256;
}

/* Datatype I/O and a view lock. */
static int seed_lock_view(struct fz_seed *s, const char *dir, Tessera__DtypeIORequest *d)
{
	Tessera__LockAcquireRequest la;

	lock_msg(&la, 14, TLK_WRITE, NULL, NULL, 0, 1);
	la.view = d;
	req(s, TP_OP_LOCK_ACQUIRE, 3, &la.base, 0);
	la.view = NULL;
	d->file_type = NULL; /* cached by now */
	req(s, TP_OP_DTYPE_WRITE, 3, &d->base, 256);
	return fz_seed_save(s, dir, "lock-view");
}

#if !defined(FUZZ_IOS_LIST) && !defined(FUZZ_IOS_LOCK)
/* Datatype I/O on its own, fetch-add, stats, ping, sync and remove. */
static int seed_dtype_misc(struct fz_seed *s, const char *dir, Tessera__DtypeIORequest *d,
			   Tessera__Dataloop *dm)
{
	Tessera__FetchAddRequest fa = TESSERA__FETCH_ADD_REQUEST__INIT;
	Tessera__PingRequest ping = TESSERA__PING_REQUEST__INIT;
	Tessera__HandlesRequest h = TESSERA__HANDLES_REQUEST__INIT;
	uint64_t handles[2] = { 7, 8 };

	h.n_handles = 2;
	h.handles = handles;
	d->file_type = dm;
	req(s, TP_OP_DTYPE_WRITE, 0, &d->base, 256);
	d->file_type = NULL;
	req(s, TP_OP_DTYPE_READ, 0, &d->base, 0);
	d->desc_id = 2;
	req(s, TP_OP_DTYPE_READ, 0, &d->base, 0); /* not cached: ESTALE */
	fa.handle = 7;
	fa.key = 3;
	fa.value = 5;
	req(s, TP_OP_FETCH_ADD, 0, &fa.base, 0);
	req(s, TP_OP_FETCH_ADD, 0, &fa.base, 0);
	req(s, TP_OP_IOS_STATS, 0, &ping.base, 0);
	req(s, TP_OP_IOS_STATFS, 0, &ping.base, 0);
	ping.hold_ms = 1;
	req(s, TP_OP_PING, 1, &ping.base, 0);
	fz_seed_tick(s);
	req(s, TP_OP_SYNC, 0, &h.base, 0);
	req(s, TP_OP_REMOVE, 0, &h.base, 0);
	return fz_seed_save(s, dir, "dtype-misc");
}
#endif

/* The seeds that use a datatype description. */
static int seed_dtype(struct fz_seed *s, const char *dir)
{
	Tessera__DtypeIORequest d;
	struct tdl_dataloop *b, *v;
	Tessera__Dataloop *dm = NULL;
	int rc = 0;

	tdl_bytes(8, &b);
	tdl_vector(16, 1, 3, b, &v);
	if (tp_dataloop_to_msg(v, &dm))
		return -1;
	dtype_msg(&d, dm);
	rc |= seed_lock_view(s, dir, &d);
#if !defined(FUZZ_IOS_LIST) && !defined(FUZZ_IOS_LOCK)
	rc |= seed_dtype_misc(s, dir, &d, dm);
#endif
	tp_dataloop_msg_release(dm);
	tdl_free(v);
	tdl_free(b);
	return rc;
}

/* Versioned objects (issue 25): capabilities, commits and a grant signed
 * with the run's key, so the version paths behind the checks are reached:
 * writes of each kind under T, a truncate, commits carried by reads and
 * sizes, a merge and the state; and their refusals (plain I/O of a
 * versioned object, a commit of another file). */
#define SEED_FILE 9
#define SEED_FOREVER (INT64_MAX / 2)

static void seed_vcap(Tessera__Capability *c, uint64_t *handles, uint8_t *mac)
{
	tessera__capability__init(c);
	handles[0] = 7;
	handles[1] = 8;
	c->file = SEED_FILE;
	c->handles = handles;
	c->n_handles = 2;
	c->rights = TP_CAP_READ | TP_CAP_WRITE | TP_CAP_STAT | TP_CAP_VERSIONED;
	c->expires_ns = SEED_FOREVER;
	cap_sign(&fz_key, c, mac);
}

static void seed_commit(Tessera__VersionCommit *c, uint64_t file, uint64_t t, uint64_t vm,
			uint64_t *handles, uint8_t *mac)
{
	tessera__version_commit__init(c);
	c->file = file;
	c->t = t;
	c->vm = vm;
	c->handles = handles;
	c->n_handles = 2;
	cap_sign_commit(&fz_key, c, mac);
}

static void seed_version_io(struct fz_seed *s, Tessera__Capability *cap,
			    Tessera__VersionCommit **vm, size_t n)
{
	Tessera__WriteRequest w = TESSERA__WRITE_REQUEST__INIT;
	Tessera__ReadRequest r = TESSERA__READ_REQUEST__INIT;
	Tessera__ListIORequest l = TESSERA__LIST_IOREQUEST__INIT;
	Tessera__TruncateRequest t = TESSERA__TRUNCATE_REQUEST__INIT;
	Tessera__HandlesRequest h = TESSERA__HANDLES_REQUEST__INIT;
	uint64_t offs[2] = { 100, 0 }, lens[2] = { 50, 20 }, handles[2] = { 7, 8 };

	w.handle = 7;
	w.offset = 10;
	w.version_t = ios_vlog_tver(1, 1);
	w.cap = cap;
	req(s, TP_OP_WRITE, 0, &w.base, 300);
	l.handle = 7;
	l.n_offsets = l.n_lengths = 2;
	l.offsets = offs;
	l.lengths = lens;
	l.version_t = ios_vlog_tver(2, 1);
	l.cap = cap;
	req(s, TP_OP_LIST_WRITE, 1, &l.base, 70);
	t.handle = 7;
	t.size = 40;
	t.version_t = ios_vlog_tver(1, 2);
	t.cap = cap;
	req(s, TP_OP_TRUNCATE, 0, &t.base, 0);
	r.handle = 7;
	r.length = 400;
	r.read_version = 2;
	r.vmap = vm;
	r.n_vmap = n;
	r.cap = cap;
	req(s, TP_OP_READ, 0, &r.base, 0);
	l.version_t = 0;
	l.read_version = 3;
	l.vmap = vm;
	l.n_vmap = n;
	req(s, TP_OP_LIST_READ, 1, &l.base, 0);
	h.handles = handles;
	h.n_handles = 2;
	h.read_version = 3;
	h.vmap = vm;
	h.n_vmap = n;
	h.cap = cap;
	req(s, TP_OP_GETSIZE, 0, &h.base, 0);
	/* Refused: plain I/O of a versioned object. */
	w.version_t = 0;
	req(s, TP_OP_WRITE, 0, &w.base, 30);
}

static int seed_version(struct fz_seed *s, const char *dir)
{
	Tessera__Capability cap;
	Tessera__VersionCommit c[4], *vm[3] = { &c[0], &c[1], &c[2] }, *other[1] = { &c[3] };
	Tessera__VersionGrant g = TESSERA__VERSION_GRANT__INIT;
	Tessera__VlogRequest v = TESSERA__VLOG_REQUEST__INIT;
	Tessera__ReadRequest r = TESSERA__READ_REQUEST__INIT;
	uint64_t handles[2], ch[2] = { 7, 8 };
	uint32_t live[1] = { 2 };
	uint8_t mac[6][TP_CAP_MAC_LEN];

	seed_vcap(&cap, handles, mac[0]);
	seed_commit(&c[0], SEED_FILE, ios_vlog_tver(1, 1), 1, ch, mac[1]);
	seed_commit(&c[1], SEED_FILE, ios_vlog_tver(2, 1), 2, ch, mac[2]);
	seed_commit(&c[2], SEED_FILE, ios_vlog_tver(1, 2), 3, ch, mac[3]);
	seed_commit(&c[3], SEED_FILE + 1, ios_vlog_tver(1, 1), 1, ch, mac[4]);
	seed_version_io(s, &cap, vm, 3);
	g.file = SEED_FILE;
	g.upto = 2;
	g.next_id = 3;
	g.live_ids = live;
	g.n_live_ids = 1;
	g.expires_ns = SEED_FOREVER;
	cap_sign_grant(&fz_key, &g, mac[5]);
	v.handle = 7;
	v.op = TESSERA__VLOG_OP__VLOG_MERGE;
	v.grant = &g;
	v.vmap = vm;
	v.n_vmap = 3;
	v.cap = &cap;
	req(s, TP_OP_VLOG, 0, &v.base, 0);
	v.op = TESSERA__VLOG_OP__VLOG_STATE;
	v.grant = NULL;
	v.n_vmap = 0;
	req(s, TP_OP_VLOG, 0, &v.base, 0);
	/* Refused: another file's commit. */
	r.handle = 7;
	r.length = 10;
	r.read_version = 3;
	r.vmap = other;
	r.n_vmap = 1;
	r.cap = &cap;
	req(s, TP_OP_READ, 0, &r.base, 0);
	return fz_seed_save(s, dir, "version");
}

int main(int argc, char **argv)
{
	static struct fz_seed s;
	uint64_t loffs[2] = { 65536, 65536 * 5 + 10 }, llens[2] = { 100, 200 };
	const char *dir;
	int rc = 0;

	if (argc != 2)
		return 2;
	dir = argv[1];
	ops_init();
	rc |= seed_io_list(&s, dir);
	rc |= seed_list_bad(&s, dir);
	rc |= seed_lock_list(&s, dir, loffs, llens);
	rc |= seed_lock_more(&s, dir, loffs, llens);
	rc |= seed_dtype(&s, dir);
	rc |= seed_version(&s, dir); /* each target: the opcodes it sends */
	return rc ? 1 : 0;
}

#endif
