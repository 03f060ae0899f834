/*
 * mds_grant.c - what the metadata daemon checks before it grants a
 * capability (mds_store.h): whether a caller may open a file for reading
 * or writing, and a file found by its handle (renewal names the file by
 * handle, not by path, so it must present what a path walk gave).
 */
#include "mds_store_int.h"

#include <errno.h>
#include <inttypes.h>

#include "cap.h"

int mds_may_open(struct mds_store *st, const struct mds_cred *cred, const char *what,
		 const struct mds_attr *a, int read, int write)
{
	int want = (read ? MDS_MAY_READ : 0) | (write ? MDS_MAY_WRITE : 0);

	if (a->type != MDS_FILE)
		return mds_fail(st, -EISDIR, "%s: is a directory", what);
	if (mds_permit(cred, a, want))
		return mds_fail(st, -EACCES, "%s: permission denied (uid %u may not %s it)", what,
				cred->uid, read && write ? "read and write" : read ? "read" : "write");
	return 0;
}

int mds_file_by_handle(struct mds_store *st, uint64_t handle, struct mds_attr *out)
{
	int rc = mds_get_attr(st, handle, out);

	if (rc == -ENOENT || (!rc && out->type != MDS_FILE))
		return mds_fail(st, -ENOENT, "file %016llx: no such file (removed?)",
				(unsigned long long)handle);
	return rc;
}

/* Handles are no secret (a share carries them, and they were once
 * sequential): renewing by handle alone let anyone who counted to a file
 * inside another user's 0700 directory read it, skipping the walk. The
 * capability of an open is the walk's signed result, so renewal wants
 * one (any age: a file open for days keeps working; the mode is checked
 * again by the caller). */
int mds_may_renew(struct mds_store *st, const struct cap_key *key, const struct mds_cred *cred,
		  const char *what, uint64_t handle, const Tessera__Capability *proof)
{
	if (!proof)
		return mds_fail(st, -EACCES, "%s: permission denied: no capability of an open of"
				" it presented (renewal needs the one its open gave: open the file"
				" by its path)", what);
	if (!cap_mac_ok(key, proof))
		return mds_fail(st, -EACCES, "%s: permission denied: the capability presented"
				" does not verify (forged or from another file system)", what);
	if (proof->file != handle)
		return mds_fail(st, -EACCES, "%s: permission denied: the capability presented is"
				" for file %016" PRIx64 ", not this one", what, proof->file);
	if (proof->uid != cred->uid)
		return mds_fail(st, -EACCES, "%s: permission denied: the capability presented"
				" was issued to uid %u, not to uid %u", what, proof->uid,
				cred->uid);
	return 0;
}
