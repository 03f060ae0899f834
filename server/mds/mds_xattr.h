/*
 * mds_xattr.h - extended attributes of the namespace's files and
 * directories, kept by the metadata store ("X" records, mds_store_int.h).
 *
 * Namespaces and who may do what, as Linux (fs/xattr.c, the capability
 * LSM) decides on a local file system:
 *   user.      files and directories only; reading needs read permission,
 *              writing write permission; in a sticky directory only its
 *              owner (or root) writes the directory's own attributes;
 *   trusted.   uid 0 only: others get ENODATA reading, EPERM writing, and
 *              never see the names in a list;
 *   security.  read and listed by anyone who can reach the file; set and
 *              removed by uid 0 only, but for security.capability, which
 *              whoever may write the file may remove (the kernel drops it
 *              on a write to the file, in the writer's name);
 *   system.posix_acl_access, system.posix_acl_default and every other
 *              name: EOPNOTSUPP (never stored: ACLs are not enforced).
 * Limits: a name of 1 to MDS_XATTR_NAME_MAX bytes (else ERANGE), a value
 * of at most MDS_XATTR_VALUE_MAX bytes (else E2BIG), per file at most
 * MDS_XATTR_LIST_MAX bytes of names (each with its NUL: what a list
 * holds) and MDS_XATTR_TOTAL_MAX bytes of names and values (else ENOSPC).
 * Because of these a request of any of the calls costs the daemon at most
 * MDS_XATTR_LIST_MAX bytes (a value, a list) whatever the caller asks.
 *
 * `follow`: whether a symbolic link in the path's last component is
 * followed (MDS_NOFOLLOW: the l- calls, and the mount; a link's own user.
 * attributes are then refused as Linux refuses them).
 *
 * Setting or removing an attribute changes the file's ctime, in the same
 * synchronous batch; removing the file's last name drops its attributes
 * in the batch that drops the name (mds_batch_drop_inode).
 */
#ifndef TESSERA_MDS_XATTR_H
#define TESSERA_MDS_XATTR_H

#include <stddef.h>

#include "mds_store.h"

#define MDS_XATTR_NAME_MAX 255        /* Linux's XATTR_NAME_MAX */
#define MDS_XATTR_VALUE_MAX 65536     /* Linux's XATTR_SIZE_MAX */
#define MDS_XATTR_LIST_MAX 65536      /* Linux's XATTR_LIST_MAX */
#define MDS_XATTR_TOTAL_MAX 262144    /* names and values of one file */

/* What a set does about an attribute that exists or does not. */
enum mds_xattr_how {
	MDS_XATTR_ANY,       /* create or replace */
	MDS_XATTR_CREATE,    /* -EEXIST when it exists (XATTR_CREATE) */
	MDS_XATTR_REPLACE,   /* -ENODATA when it does not (XATTR_REPLACE) */
};

/* The value of attribute `name` (name_len bytes, no NUL) of `path`:
 * *size gets its length; with cap > 0 the value goes into buf (cap bytes),
 * -ERANGE when it does not fit. cap 0 asks the length alone. -ENODATA
 * when the file has no such attribute. */
int mds_xattr_get(struct mds_store *st, const struct mds_cred *cred, const char *path,
		  enum mds_follow follow, const char *name, size_t name_len, void *buf, size_t cap, size_t *size);

/* Set attribute `name` of `path` to value (vlen bytes). */
int mds_xattr_set(struct mds_store *st, const struct mds_cred *cred, const char *path,
		  enum mds_follow follow, const char *name, size_t name_len, const void *value, size_t vlen,
		  enum mds_xattr_how how);

/* The names `cred` may see, each followed by a NUL, in name order: *size
 * gets the list's length; with cap > 0 the list goes into buf (-ERANGE
 * when it does not fit), cap 0 asks the length alone. */
int mds_xattr_list(struct mds_store *st, const struct mds_cred *cred, const char *path,
		   enum mds_follow follow, char *buf, size_t cap, size_t *size);

/* Remove attribute `name` of `path` (-ENODATA when absent). */
int mds_xattr_remove(struct mds_store *st, const struct mds_cred *cred, const char *path,
		     enum mds_follow follow, const char *name, size_t name_len);

#endif /* TESSERA_MDS_XATTR_H */
