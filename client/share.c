/*
 * share.c - handing an open file to other processes of a parallel job.
 *
 * An MPI collective open is one open by one rank, then a broadcast: the
 * other ranks build their tessera_file from what the opener shares instead
 * of each asking the metadata daemon (no storm of lookups at scale).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

int tessera_file_share(tessera_file *f, struct tessera_file_share *out)
{
	const Tessera__Capability *cap = tc_cap_get(f);
	size_t len;

	memset(out, 0, sizeof(*out));
	out->handle = f->handle;
	out->layout = f->layout;
	if (!cap)
		return 0;
	len = tessera__capability__get_packed_size(cap);
	if (len > sizeof(out->cap))
		return tc_fail(f->fs, -EOVERFLOW, "share %s: capability of %zu bytes exceeds %zu",
			       f->path, len, sizeof(out->cap));
	out->cap_len = (uint32_t)tessera__capability__pack(cap, out->cap);
	return 0;
}

/* The share's capability, if it is for this file (NULL otherwise); *enough
 * says whether it has the rights `flags` need (if not, it is still the
 * proof a renewal for them presents). */
static struct tc_cap *share_cap(const struct tessera_file_share *share, int flags, int *enough)
{
	Tessera__Capability *m;
	struct tc_cap *c = NULL;
	uint32_t want = tc_open_rights(flags);

	*enough = 0;
	if (!share->cap_len || share->cap_len > sizeof(share->cap))
		return NULL;
	m = tessera__capability__unpack(NULL, share->cap_len, share->cap);
	if (!m)
		return NULL;
	if (m->file == share->handle) {
		c = tc_cap_from_msg(m);
		*enough = (m->rights & want) == want;
	}
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return c;
}

int tessera_open_shared(tessera_fs *fs, const char *upath, const struct tessera_file_share *share,
			int flags, tessera_file **out)
{
	const struct tessera_layout *l = &share->layout;
	char path[TP_PATH_MAX + 1];
	tessera_file *f;
	int rc, enough;

	rc = tessera_map_path(fs, upath, path, sizeof(path));
	if (rc)
		return rc;
	if (l->count == 0 || l->count > TESSERA_MAX_STRIPE || l->strip_size == 0 ||
	    l->strip_size > TDL_MAX_STRIP_SIZE)
		return tc_fail(fs, -EINVAL, "open %s: shared layout has %u objects of %llu-byte strips",
			       path, l->count, (unsigned long long)l->strip_size);
	for (uint32_t i = 0; i < l->count; i++)
		if (l->servers[i] >= fs->cfg.n_ios)
			return tc_fail(fs, -EINVAL,
				       "open %s: shared layout names storage daemon %u, config has %u",
				       path, l->servers[i], fs->cfg.n_ios);
	f = calloc(1, sizeof(*f));
	if (!f)
		return tc_fail(fs, -ENOMEM, "open %s: out of memory", path);
	f->fs = fs;
	/* Creation and truncation were the opener's to do. */
	f->flags = flags & ~(O_CREAT | O_EXCL | O_TRUNC);
	f->handle = share->handle;
	f->layout = *l;
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->cap = share_cap(share, f->flags, &enough);
	/* A writer must be counted by the metadata daemon, which otherwise
	 * could take a size this process is still changing for a closed
	 * file's (docs/design.md, "Sizes kept by the metadata daemon"): one
	 * request, as for a share without the rights. */
	if ((f->flags & O_ACCMODE) != O_RDONLY)
		rc = tc_cap_renew_writer(f);
	else
		rc = enough ? 0 : tc_cap_renew(f);
	if (!rc)
		rc = tc_vers_open(f, f->cap ? tc_cap_msg(f->cap) : NULL);
	if (rc) {
		tc_cap_free(f->cap);
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}
