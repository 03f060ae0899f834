/*
 * counter.c - counters kept with a file (tessera_fetch_add,
 * tessera_fetch_set): each lives with the file's first storage object, on
 * the daemon that holds it, which serves one request at a time, so a
 * fetch-and-add needs no lock.
 */
#include <errno.h>
#include <stdio.h>

#include "client_int.h"

static int counter_op(tessera_file *f, uint64_t key, int set, int64_t value, int64_t *old)
{
	Tessera__FetchAddRequest m = TESSERA__FETCH_ADD_REQUEST__INIT;
	struct tc_req *r;
	char what[200];
	int rc;

	if (!f->layout.count)
		return tc_fail(f->fs, -EINVAL, "counter of %s: the file has no storage objects",
			       f->path);
	m.handle = f->layout.handles[0];
	m.cap = (Tessera__Capability *)tc_cap_get(f);
	m.key = key;
	m.set = set;
	m.value = value;
	snprintf(what, sizeof(what), "%s counter of %.150s", set ? "set" : "fetch-add", f->path);
	r = tc_req_new(f->fs, (int)f->layout.servers[0], TP_OP_FETCH_ADD, &m.base, NULL, 0);
	rc = tc_call(f->fs, r, what);
	if (!rc)
		*old = ((Tessera__FetchAddReply *)r->reply)->old;
	if (r)
		tc_req_free(f->fs, r);
	return rc;
}

int tessera_fetch_add(tessera_file *f, uint64_t key, int64_t add, int64_t *old)
{
	int rc;

	if ((rc = tc_file_writing(f)))
		return rc;
	TC_CAP_RETRY(f, rc, counter_op(f, key, 0, add, old));
	return rc;
}

int tessera_fetch_set(tessera_file *f, uint64_t key, int64_t value, int64_t *old)
{
	int rc;

	if ((rc = tc_file_writing(f)))
		return rc;
	TC_CAP_RETRY(f, rc, counter_op(f, key, 1, value, old));
	return rc;
}
