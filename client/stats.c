/* stats.c - the storage daemons' counters (tessera stats). */
#include <errno.h>
#include <string.h>

#include "client_int.h"

int tessera_ios_stats(tessera_fs *fs, uint32_t ios, struct tessera_ios_stats *out)
{
	Tessera__PingRequest m = TESSERA__PING_REQUEST__INIT;
	Tessera__IosStatsReply *rep;
	struct tc_req *r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (ios >= fs->cfg.n_ios)
		return tc_fail(fs, -EINVAL, "stats: no storage daemon %u (the config has %u)", ios,
			       fs->cfg.n_ios);
	r = tc_req_new(fs, (int)ios, TP_OP_IOS_STATS, &m.base, NULL, 0);
	rc = tc_call(fs, r, "stats");
	if (rc) {
		tc_req_free(fs, r);
		return rc;
	}
	rep = (Tessera__IosStatsReply *)r->reply;
	for (size_t i = 0; i < TESSERA_METHODS; i++) {
		out->requests[i] = i < rep->n_requests ? rep->requests[i] : 0;
		out->pieces[i] = i < rep->n_pieces ? rep->pieces[i] : 0;
		out->bytes_read[i] = i < rep->n_bytes_read ? rep->bytes_read[i] : 0;
		out->bytes_written[i] = i < rep->n_bytes_written ? rep->bytes_written[i] : 0;
		out->desc_bytes[i] = i < rep->n_desc_bytes ? rep->desc_bytes[i] : 0;
		out->syscalls[i] = i < rep->n_syscalls ? rep->syscalls[i] : 0;
	}
	out->desc_cache_hits = rep->desc_cache_hits;
	out->desc_cache_misses = rep->desc_cache_misses;
	out->syncs = rep->syncs;
	tc_req_free(fs, r);
	return 0;
}
