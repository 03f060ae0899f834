/* ios_main.c - tessera-ios, the storage daemon. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "ios.h"
#include "ios_vlogs.h"

static void do_ping(struct ios *ios, struct srv_req *req)
{
	srv_ping(ios->srv, req);
}

/* GETSIZE of versioned objects: each part reads its object's size at
 * read_version (no pieces), after the commits naming it. 0, or the
 * negative errno answered. */
static int versioned_sizes(struct ios *ios, struct srv_req *req, struct ios_work *w)
{
	Tessera__HandlesRequest *h = (Tessera__HandlesRequest *)req->msg;
	struct ios_vfields vf = { h->cap, h->read_version, 0, h->vmap, h->n_vmap, h->handles,
				  h->n_handles, 0 };
	int rc = 0;

	if (req->frame.hdr.opcode != TP_OP_GETSIZE) {
		if (h->read_version || h->n_vmap)
			rc = srv_reply_error(req, -EINVAL, "%s on storage daemon %u: read_version "
					     "and vmap belong to GETSIZE alone", w->what,
					     ios->index);
		return rc;
	}
	for (size_t i = 0; !rc && i < w->parts; i++)
		rc = ios_vprepare(ios, req, &vf, h->handles[i], IOS_VKIND_READ, w->what,
				  &w->part[i].vjob);
	/* A request with no handles: its fields are checked all the same. */
	if (!rc && !w->parts) {
		struct ios_vjob *none = NULL;

		rc = ios_vprepare(ios, req, &vf, 0, IOS_VKIND_READ, w->what, &none);
		ios_vjob_free(none);
	}
	return rc < 0 ? rc : 0;
}

static void do_handles(struct ios *ios, struct srv_req *req)
{
	Tessera__HandlesRequest *h = (Tessera__HandlesRequest *)req->msg;
	unsigned op = req->frame.hdr.opcode;
	const char *what = tp_opcode_name(op);
	struct ios_work *w;

	/* A client names at most one file's objects on this daemon; a list of
	 * a million would be a million fsyncs. */
	if (h->n_handles > TP_MAX_HANDLES) {
		srv_reply_error(req, -E2BIG, "%s: %zu handles exceed the limit of %d per request",
				what, h->n_handles, TP_MAX_HANDLES);
		return;
	}
	w = ios_work_new(op == TP_OP_GETSIZE ? IOS_JOB_SIZE : op == TP_OP_REMOVE ? IOS_JOB_REMOVE
			 : IOS_JOB_SYNC, IOS_CONTIG, what, h->n_handles);
	if (!w || (op == TP_OP_REMOVE && !(w->vlogs = ios_vlogs_of(ios)))) {
		ios_work_free(w);
		srv_reply_error(req, -ENOMEM, "%s: no memory", what);
		return;
	}
	for (size_t i = 0; i < h->n_handles; i++)
		w->part[i].handle = h->handles[i];
	if (versioned_sizes(ios, req, w)) {
		ios_work_free(w);
		return;
	}
	ios_reply_work(ios, req, w);
}

/* LOCAL_OPEN and FALLOCATE have no version path: a client reading a
 * versioned object's files itself would see the base alone, and an
 * allocation is not a version. 0, or -EOPNOTSUPP answered. */
static int refuse_versioned(struct ios *ios, struct srv_req *req, const Tessera__Capability *cap,
			    uint64_t handle, const char *what)
{
	if (!cap || !(cap->rights & TP_CAP_VERSIONED))
		return 0;
	return srv_reply_error(req, -EOPNOTSUPP, "%s object %016" PRIx64 " on storage daemon %u:"
			       " not supported for a versioned file (file %016" PRIx64 ")", what,
			       handle, ios->index, cap->file), -EOPNOTSUPP;
}

static void do_local_open(struct ios *ios, struct srv_req *req)
{
	Tessera__LocalOpenRequest *m = (Tessera__LocalOpenRequest *)req->msg;

	if (!refuse_versioned(ios, req, m->cap, m->handle, "local open"))
		ios_do_local_open(ios, req);
}

static void do_truncate(struct ios *ios, struct srv_req *req)
{
	Tessera__TruncateRequest *t = (Tessera__TruncateRequest *)req->msg;
	struct ios_vfields vf = { t->cap, t->version_t, 0, NULL, 0, NULL, 0, 0 };
	struct ios_vjob *vj = NULL;
	struct ios_work *w;

	if (ios_vprepare(ios, req, &vf, t->handle, IOS_VKIND_WRITE, "truncate", &vj) < 0)
		return;
	if (vj)
		vj->op = IOS_VOP_TRUNCATE;
	if (!(w = ios_work_new(IOS_JOB_TRUNCATE, IOS_CONTIG, "truncate", 1))) {
		ios_vjob_free(vj);
		srv_reply_error(req, -ENOMEM, "truncate object %016" PRIx64 ": no memory",
				t->handle);
		return;
	}
	w->part[0].vjob = vj;
	w->part[0].handle = t->handle;
	w->part[0].size = t->size;
	ios_reply_work(ios, req, w);
}

static void do_fallocate(struct ios *ios, struct srv_req *req)
{
	Tessera__FallocateRequest *m = (Tessera__FallocateRequest *)req->msg;
	struct ios_work *w;

	if (refuse_versioned(ios, req, m->cap, m->handle, "fallocate"))
		return;
	if (!(w = ios_work_new(IOS_JOB_FALLOCATE, IOS_CONTIG, "fallocate", 1))) {
		srv_reply_error(req, -ENOMEM, "fallocate object %016" PRIx64 ": no memory",
				m->handle);
		return;
	}
	w->part[0].handle = m->handle;
	w->part[0].alloc_off = m->offset;
	w->part[0].alloc_len = m->length;
	w->part[0].alloc_size = m->keep_size ? IOS_ALLOC_KEEP_SIZE : IOS_ALLOC_EXTEND;
	ios_reply_work(ios, req, w);
}

static void do_statfs(struct ios *ios, struct srv_req *req)
{
	Tessera__StatfsReply rep = TESSERA__STATFS_REPLY__INIT;
	int rc = ios_store_statfs(ios->store, &rep.bytes_total, &rep.bytes_free, &rep.fsid);

	if (rc)
		srv_reply_error(req, rc, "statfs: %s", strerror(-rc));
	else
		srv_reply(req, &rep.base, NULL, 0);
}

/* The shared file pointer's fetch-and-add (ios_store_counter), in its object's
 * order like every other call on it. */
static void do_fetch_add(struct ios *ios, struct srv_req *req)
{
	Tessera__FetchAddRequest *m = (Tessera__FetchAddRequest *)req->msg;
	struct ios_work *w = ios_work_new(IOS_JOB_COUNTER, IOS_CONTIG, "fetch-add", 1);

	if (!w) {
		srv_reply_error(req, -ENOMEM, "fetch-add counter %016" PRIx64 " of object %016"
				PRIx64 ": no memory", m->key, m->handle);
		return;
	}
	w->part[0].handle = m->handle;
	w->part[0].key = m->key;
	w->part[0].counter_op = m->set ? IOS_COUNTER_SET : IOS_COUNTER_ADD;
	w->part[0].counter_who.uid = req->ident.uid;
	w->part[0].counter_who.share = ios->cfg->counters_per_uid;
	w->part[0].value = m->value;
	ios_reply_work(ios, req, w);
}

/* fsck's listing of the objects held here, a page at a time: needs an
 * admin capability, which the metadata daemon grants only root. */
#define IOS_LIST_MAX 4096 /* objects per page: a reply < 100 KiB */

/* The registry in handle order, a page of `max` at a time (handles has
 * room for them): the objects recorded whose files are gone (a lost
 * object still costs a REMOVE to clear its record). */
static void reply_lost(struct ios *ios, struct srv_req *req, uint32_t max, uint64_t *handles)
{
	Tessera__ObjectListRequest *m = (Tessera__ObjectListRequest *)req->msg;
	Tessera__ObjectListReply rep = TESSERA__OBJECT_LIST_REPLY__INIT;
	size_t k = 0, n = 0;

	ios_store_list(ios->store, m->resume ? m->after : 0, handles, max, &k);
	rep.examined = k ? handles[k - 1] : m->after;
	for (size_t i = 0; i < k; i++)
		if (ios_store_missing(ios->store, handles[i]))
			handles[n++] = handles[i];
	rep.n_handles = n;
	rep.handles = handles;
	rep.eof = k < max;
	srv_reply(req, &rep.base, NULL, 0);
}

static void do_object_list(struct ios *ios, struct srv_req *req)
{
	Tessera__ObjectListRequest *m = (Tessera__ObjectListRequest *)req->msg;
	Tessera__ObjectListReply rep = TESSERA__OBJECT_LIST_REPLY__INIT;
	uint32_t max = m->max_entries && m->max_entries < IOS_LIST_MAX ? m->max_entries
								       : IOS_LIST_MAX;
	struct ios_listed *got = calloc(max, sizeof(*got));
	uint64_t *handles = calloc(max, sizeof(*handles)), *sizes = calloc(max, sizeof(*sizes));
	int64_t *mtimes = calloc(max, sizeof(*mtimes));
	uint32_t n = 0;
	int eof = 0, rc;

	if (!got || !handles || !sizes || !mtimes) {
		srv_reply_error(req, -ENOMEM, "list objects: no memory");
		goto out;
	}
	if (req->ident.foreign_root) { /* however it came by an admin capability */
		srv_reply_error(req, -EPERM, "list objects: uid 0 of a host that is not an admin "
				"host (admin_hosts) is not root of this file system");
		goto out;
	}
	if (m->lost) {
		reply_lost(ios, req, max, handles);
		goto out;
	}
	if ((rc = ios_store_list_objects(ios->store, m->resume ? &m->after : NULL, max, got, &n, &eof))) {
		srv_reply_error(req, rc, "list objects: %s", strerror(-rc));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		handles[i] = got[i].handle;
		sizes[i] = got[i].size;
		mtimes[i] = got[i].mtime_ns;
	}
	rep.n_handles = rep.n_sizes = rep.n_mtimes_ns = n;
	rep.handles = handles;
	rep.sizes = sizes;
	rep.mtimes_ns = mtimes;
	rep.eof = eof;
	srv_reply(req, &rep.base, NULL, 0);
out:
	free(got);
	free(handles);
	free(sizes);
	free(mtimes);
}

/* The dispatch table (TP_OPCODES names what the storage daemon serves).
 * Every request passes the capability check first. */
#define IOS_OP(name, fn)                                                \
	static void ios_op_##name(void *ctx, struct srv_req *req)       \
	{                                                               \
		if (!ios_refuse_by_cap(ctx, req))                           \
			fn(ctx, req);                                   \
	}
IOS_OP(PING, do_ping)
IOS_OP(WRITE, ios_do_write)
IOS_OP(READ, ios_do_read)
IOS_OP(GETSIZE, do_handles)
IOS_OP(TRUNCATE, do_truncate)
IOS_OP(FALLOCATE, do_fallocate)
IOS_OP(REMOVE, do_handles)
IOS_OP(SYNC, do_handles)
IOS_OP(IOS_STATFS, do_statfs)
IOS_OP(IOS_STATS, ios_do_stats)
IOS_OP(FETCH_ADD, do_fetch_add)
IOS_OP(OBJECT_LIST, do_object_list)
IOS_OP(LIST_WRITE, ios_do_list)
IOS_OP(LIST_READ, ios_do_list)
IOS_OP(DTYPE_WRITE, ios_do_dtype)
IOS_OP(DTYPE_READ, ios_do_dtype)
IOS_OP(LOCAL_OPEN, do_local_open)
IOS_OP(LOCK_ACQUIRE, ios_do_lock_acquire)
IOS_OP(LOCK_RELEASE, ios_do_lock_release)
IOS_OP(LEASE, ios_do_lease)
IOS_OP(LOCK_TEST, ios_do_lock_test)
IOS_OP(VLOG, ios_do_vlog)
#undef IOS_OP

/* -F SPEC and -N, the storage daemon's own options, taken out of argv (in
 * place) so that the rest is the common command line. */
static int take_own(int *argc, char **argv, const char **spec, unsigned *store_flags)
{
	int out = 1;

	*spec = NULL;
	*store_flags = 0;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-N")) {
			*store_flags |= IOS_STORE_NEW;
			continue;
		}
		if (strncmp(a, "-F", 2)) {
			argv[out++] = argv[i];
			/* the common options' values are never options */
			if (a[0] == '-' && a[1] && strchr("cdip", a[1]) && !a[2] && i + 1 < *argc)
				argv[out++] = argv[++i];
			continue;
		}
		if (*spec) {
			fprintf(stderr, "tessera-ios: -F given twice (join the rules with commas)\n");
			return -EINVAL;
		}
		if (a[2])
			*spec = a + 2;
		else if (i + 1 < *argc)
			*spec = argv[++i];
		else {
			fprintf(stderr, "tessera-ios: -F needs a fault spec\n");
			return -EINVAL;
		}
	}
	*argc = out;
	argv[out] = NULL;
	return 0;
}

/* The disk under the store: the system's calls, wrapped by a fault disk
 * when -F asks for one. */
static int make_disk(const char *faults, struct ios_disk **out)
{
	struct ios_disk *sys;
	char err[256];
	int rc = ios_disk_system(&sys);

	if (rc) {
		fprintf(stderr, "tessera-ios: disk: %s\n", strerror(-rc));
		return rc;
	}
	if (!faults) {
		*out = sys;
		return 0;
	}
	if ((rc = ios_disk_faults(sys, faults, out, err, sizeof(err)))) {
		fprintf(stderr, "tessera-ios: -F %s: %s\n", faults, err);
		sys->ops->destroy(sys);
	}
	return rc;
}

/* Claim DIR (closed, and this daemon's: srv_store_claim), then open the
 * store in it; a failure is said on stderr. *claimed and *notice get the
 * lines for the log, if any. */
static int open_store(struct ios *ios, const char *dir, unsigned flags, char **claimed,
		      char **notice)
{
	struct srv_store_owner me = { SRV_STORE_STORAGE, ios->index, ios->cfg->fs_id };
	enum srv_store_dir how;
	char err[600], *msg = NULL;
	int rc;

	if ((rc = srv_store_claim(dir, &me, &how, claimed, err, sizeof(err)))) {
		fprintf(stderr, "tessera-ios %u: %s\n", ios->index, err);
		return rc;
	}
	/* A directory made just now holds no lost store: a new one. */
	if (how == SRV_STORE_DIR_MADE)
		flags |= IOS_STORE_NEW;
	if ((rc = ios_store_open(dir, 256, flags, ios->cfg->csum_block, ios->disk, &ios->store,
				 notice, &msg))) {
		fprintf(stderr, "tessera-ios %u: %s\n", ios->index, msg ? msg : strerror(-rc));
		free(msg);
		return rc;
	}
	if ((rc = ios_store_set_sieve(ios->store, ios->cfg->sieve_gap, ios->cfg->sieve_span, err,
				      sizeof(err))))
		fprintf(stderr, "tessera-ios %u: config: %s\n", ios->index, err);
	else if ((rc = ios_store_set_spares(ios->store, ios->cfg->spare_files, err, sizeof(err))))
		fprintf(stderr, "tessera-ios %u: %s\n", ios->index, err);
	if (rc) {
		ios_store_close(ios->store);
		ios->store = NULL;
	} else if (!ios_vlogs_of(ios)) { /* the versioned objects' logs */
		fprintf(stderr, "tessera-ios %u: no memory for the version logs\n", ios->index);
		rc = -ENOMEM;
	}
	return rc;
}

/* What the parser cannot check key by key: this daemon's index is listed,
 * the sieve's gap fits its span, and the checksum block is a power of
 * two. 0, or -EINVAL having said why. */
static int check_config(const struct tp_config *cfg, const struct srv_cmdline *cl)
{
	char err[512];

	if (cl->index >= cfg->n_ios) {
		fprintf(stderr, "tessera-ios: index %u, but %s lists %u storage daemons\n",
			cl->index, cl->config, cfg->n_ios);
		return -EINVAL;
	}
	if (ios_store_sieve_check(cfg->sieve_gap, cfg->sieve_span, err, sizeof(err)) ||
	    ios_store_csum_check(cfg->csum_block, err, sizeof(err))) {
		fprintf(stderr, "tessera-ios %u: config %s: %s\n", cl->index, cl->config, err);
		return -EINVAL;
	}
	return 0;
}

static void ios_tick(void *ctx)
{
	ios_locks_tick(ctx);
}

/* The storage daemon's own options (take_own), for --help. */
static const char ios_usage_extra[] =
	"  -N         a directory without a store gets a new, empty one\n"
	"             (a remade store is declared whole)\n"
	"  -F FAULTS  fail chosen disk calls, e.g. write@3=ENOSPC (for tests;\n"
	"             docs/testing.md)\n";

static const srv_handler ios_handlers[TP_OP_LIMIT] = { TP_OPCODES(SRV_IOS_ENTRY) };

/* The daemon's uid check and its capability cache (under the key, which
 * is wiped from the stack once the cache holds it). */
static int ios_configure(struct ios *ios, char *err, size_t errlen)
{
	struct cap_key key;
	int rc;

	if ((rc = srv_check_daemon_uid(ios->cfg, err, errlen)))
		return rc;
	if ((rc = cap_key_load(ios->cfg->key_file, &key, err, errlen)))
		return rc;
	rc = ios_caps_create(&key, &ios->caps);
	memset(&key, 0, sizeof(key));
	if (rc)
		snprintf(err, errlen, "no memory for the capability cache");
	return rc;
}

/* Local reads go around the disk, so a fault disk turns them off. */
static void ios_local_choose(struct ios *ios, const char *faults)
{
	char err[512];

	if (!ios->cfg->local_reads) {
		ios->local_off = "local_reads = 0 in the config";
	} else if (faults) {
		ios->local_off = "disk faults are injected (-F)";
	} else if (ios_local_start(ios, err, sizeof(err))) {
		srv_warn(ios->srv, "%s; clients read through the daemon", err);
		ios->local_off = "its socket could not be made";
	}
}

/* At exit: what local reads did, then their socket goes. */
static void ios_local_end(struct ios *ios)
{
	if (ios->local) {
		uint64_t handed, refused;

		ios_local_counts(ios, &handed, &refused);
		srv_log(ios->srv, "local reads: %" PRIu64 " objects handed to clients, %" PRIu64
			" fetches refused", handed, refused);
	}
	ios_local_stop(ios);
}

/* Serve until stopped: the daemon core around the opened store, the
 * disk workers, the pid file; 0, or 1 when the daemon could not start
 * (said on stderr). `notice` is logged and freed once serving. */
static int serve(struct ios *ios, const struct srv_cmdline *cl, const char *faults,
		 const char *claimed, char **notice)
{
	const struct tp_config *cfg = ios->cfg;
	struct srv_role role = { "ios", cl->index, ios_handlers, ios_tick, ios, NULL, NULL, NULL, NULL, NULL };
	struct srv_opts so = { cfg, cfg->ios[cl->index].host, cfg->ios[cl->index].port, 32, NULL,
				&cl->log };
	struct srv *srv;
	char err[512];
	unsigned threads;
	int rc;

	if ((rc = srv_create(&so, &role, &srv, err, sizeof(err)))) {
		fprintf(stderr, "tessera-ios %u: listen on %s:%s: %s\n", cl->index,
			so.host, so.port, err);
		return 1;
	}
	ios->srv = srv;
	if ((threads = ios_pool_threads(cfg)) && (rc = ios_pool_start(ios, threads, err, sizeof(err)))) {
		fprintf(stderr, "tessera-ios %u: %s\n", cl->index, err);
		srv_destroy(srv);
		return 1;
	}
	srv_check_later_set(srv, ios_pool_checks, ios);
	if (faults)
		srv_warn(srv, "disk faults injected: %s", faults);
	ios_local_choose(ios, faults);
	if (claimed)
		srv_warn(srv, "%s", claimed);
	if (*notice)
		srv_log(srv, "%s", *notice);
	free(*notice);
	*notice = NULL;
	if ((rc = srv_write_pidfile(cl->pidfile)))
		fprintf(stderr, "tessera-ios: pid file %s: %s\n", cl->pidfile, strerror(-rc));
	srv_run(srv);
	ios_local_end(ios);
	/* The workers finish what they run, then the parked requests (disk
	 * work and locks) end, then the works and the lock table go. */
	ios_pool_stop(ios);
	srv_destroy(srv);
	ios_pool_destroy(ios);
	return 0;
}

int main(int argc, char **argv)
{
	struct srv_cmdline cl;
	enum srv_cmdline_result parsed;
	struct tp_config cfg;
	struct ios ios = { 0 };
	char err[512];
	char *notice = NULL, *claimed = NULL;
	const char *faults;
	unsigned store_flags;
	int rc, status = 1;

	if (take_own(&argc, argv, &faults, &store_flags))
		return 2;
	if ((parsed = srv_parse_cmdline(argc, argv, "tessera-ios", ios_usage_extra, &cl)) != SRV_CMDLINE_RUN)
		return srv_cmdline_exit_status(parsed);
	if (make_disk(faults, &ios.disk))
		return 2;
	if (tp_config_load(cl.config, &cfg, err, sizeof(err))) {
		fprintf(stderr, "tessera-ios: %s\n", err);
		goto out;
	}
	if (check_config(&cfg, &cl))
		goto out;
	if (cl.check_only) {
		printf("%s: valid\n", cl.config);
		status = 0;
		goto out;
	}
	ios.cfg = &cfg;
	ios.index = cl.index;
	if (ios_configure(&ios, err, sizeof(err))) {
		fprintf(stderr, "tessera-ios %u: %s\n", cl.index, err);
		goto out;
	}
	if (open_store(&ios, cl.dir, store_flags, &claimed, &notice))
		goto out;
	if ((rc = ios_locks_create(&ios, cfg.lock_lease_ms, &ios.locks, err, sizeof(err)))) {
		fprintf(stderr, "tessera-ios: lock service: %s\n", err);
		goto out;
	}
	if (serve(&ios, &cl, faults, claimed, &notice))
		goto out;
	status = 0;
out:
	free(notice);
	free(claimed);
	ios_locks_destroy(ios.locks);
	ios_caps_destroy(ios.caps);
	ios_descs_clear(&ios);
	ios_vlogs_destroy(ios.vlogs);
	ios_store_close(ios.store);
	ios.disk->ops->destroy(ios.disk);
	return status;
}
