/*
 * mds_grant.c - what the metadata daemon checks before it grants a
 * capability (mds_store.h): whether a caller may open a file for reading
 * or writing, and a file found by its handle (renewal names the file by
 * handle, not by path).
 */
#include "mds_store_int.h"

#include <errno.h>

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
