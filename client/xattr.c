/* xattr.c - extended attributes (tessera.h): one request each to the
 * metadata daemon, which checks names, sizes and permissions again (a
 * library is no boundary); the checks here only spare it requests it
 * would refuse anyway. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"

_Static_assert((int)TESSERA_XATTR_SET_ANY == (int)TESSERA__XATTR_SET_MODE__XATTR_SET_ANY &&
	       (int)TESSERA_XATTR_SET_CREATE == (int)TESSERA__XATTR_SET_MODE__XATTR_SET_CREATE &&
	       (int)TESSERA_XATTR_SET_REPLACE == (int)TESSERA__XATTR_SET_MODE__XATTR_SET_REPLACE,
	       "tessera.h's set modes are the wire's");

/* One request being built: its message, the caller's credentials and the
 * Tessera path. */
struct xattr_call {
	Tessera__XattrRequest m;
	Tessera__Cred cred;
	uint32_t gids[TESSERA_MAX_GROUPS];
	char path[TP_PATH_MAX + 1];
	char label[4400];     /* "getxattr /a user.x" */
};

/* Map the path, check the name (NULL: a list), fill the common fields. */
static int call_init(tessera_fs *fs, struct xattr_call *c, const char *op, const char *upath,
		     const char *name, enum tessera_follow follow)
{
	size_t len = name ? strnlen(name, TESSERA_XATTR_NAME_MAX + 1) : 0;
	int rc = tessera_map_path(fs, upath, c->path, sizeof(c->path));

	if (rc)
		return rc;
	if (name && (len == 0 || len > TESSERA_XATTR_NAME_MAX))
		return tc_fail(fs, -ERANGE, "%s %s: attribute name of %s bytes (1 to %d)", op,
			       c->path, len ? "over 255" : "0", TESSERA_XATTR_NAME_MAX);
	if (follow != TESSERA_FOLLOW && follow != TESSERA_NOFOLLOW)
		return tc_fail(fs, -EINVAL, "%s %s: unknown follow mode %d", op, c->path,
			       (int)follow);
	tessera__xattr_request__init(&c->m);
	tc_cred(fs, &c->cred, c->gids);
	c->m.cred = &c->cred;
	c->m.path = c->path;
	c->m.nofollow = follow == TESSERA_NOFOLLOW;
	if (name) {
		c->m.name.data = (uint8_t *)name;
		c->m.name.len = len;
	}
	snprintf(c->label, sizeof(c->label), "%s %s%s%s", op, c->path, name ? " " : "",
		 name ? name : "");
	return 0;
}

/* GET or LIST into buf (size bytes; 0 asks the length): the length. */
static ssize_t fetch(tessera_fs *fs, struct xattr_call *c, unsigned opcode, void *buf,
		     size_t size, size_t most)
{
	const Tessera__XattrReply *rep;
	struct tc_req *r;
	ssize_t rc;

	/* Nothing longer than `most` exists: a larger buffer is as good. */
	c->m.size = (uint32_t)(size < most ? size : most);
	r = tc_req_new(fs, TC_MDS, opcode, &c->m.base, NULL, 0);
	rc = tc_call(fs, r, c->label);
	if (rc) {
		tc_req_free(fs, r);
		return rc;
	}
	rep = (const Tessera__XattrReply *)r->reply;
	if (rep->size > most || (size && rep->data.len != rep->size) ||
	    (!size && rep->data.len))
		rc = tc_fail(fs, -EPROTO, "%s: reply of %zu bytes for a length of %llu", c->label,
			     rep->data.len, (unsigned long long)rep->size);
	else
		rc = (ssize_t)rep->size;
	if (rc > 0 && size)
		memcpy(buf, rep->data.data, rep->data.len);
	tc_req_free(fs, r);
	return rc;
}

ssize_t tessera_getxattr(tessera_fs *fs, const char *path, const char *name, void *value,
			 size_t size, enum tessera_follow follow)
{
	struct xattr_call c;
	int rc;

	if (!name)
		return tc_fail(fs, -EINVAL, "getxattr %s: no attribute name", path);
	rc = call_init(fs, &c, "getxattr", path, name, follow);
	if (rc)
		return rc;
	return fetch(fs, &c, TP_OP_XATTR_GET, value, size, TESSERA_XATTR_SIZE_MAX);
}

ssize_t tessera_listxattr(tessera_fs *fs, const char *path, char *list, size_t size,
			  enum tessera_follow follow)
{
	struct xattr_call c;
	int rc = call_init(fs, &c, "listxattr", path, NULL, follow);

	if (rc)
		return rc;
	return fetch(fs, &c, TP_OP_XATTR_LIST, list, size, TESSERA_XATTR_LIST_MAX);
}

/* SET or REMOVE: an empty reply. */
static int change(tessera_fs *fs, struct xattr_call *c, unsigned opcode)
{
	struct tc_req *r = tc_req_new(fs, TC_MDS, opcode, &c->m.base, NULL, 0);
	int rc = tc_call(fs, r, c->label);

	tc_mcache_changed(fs, c->path, MC_ATTRS); /* its ctime */
	tc_req_free(fs, r);
	return rc;
}

int tessera_setxattr(tessera_fs *fs, const char *path, const char *name, const void *value,
		     size_t size, enum tessera_xattr_set how, enum tessera_follow follow)
{
	struct xattr_call c;
	int rc;

	if (!name)
		return tc_fail(fs, -EINVAL, "setxattr %s: no attribute name", path);
	rc = call_init(fs, &c, "setxattr", path, name, follow);
	if (rc)
		return rc;
	if (size > TESSERA_XATTR_SIZE_MAX)
		return tc_fail(fs, -E2BIG, "%s: value of %zu bytes (at most %d)", c.label, size,
			       TESSERA_XATTR_SIZE_MAX);
	if (size && !value)
		return tc_fail(fs, -EINVAL, "%s: no value", c.label);
	if (how != TESSERA_XATTR_SET_ANY && how != TESSERA_XATTR_SET_CREATE &&
	    how != TESSERA_XATTR_SET_REPLACE)
		return tc_fail(fs, -EINVAL, "%s: unknown set mode %d", c.label, (int)how);
	c.m.value.data = (uint8_t *)value;
	c.m.value.len = size;
	c.m.how = (uint32_t)how;
	return change(fs, &c, TP_OP_XATTR_SET);
}

int tessera_removexattr(tessera_fs *fs, const char *path, const char *name,
			enum tessera_follow follow)
{
	struct xattr_call c;
	int rc;

	if (!name)
		return tc_fail(fs, -EINVAL, "removexattr %s: no attribute name", path);
	rc = call_init(fs, &c, "removexattr", path, name, follow);
	if (rc)
		return rc;
	return change(fs, &c, TP_OP_XATTR_REMOVE);
}
