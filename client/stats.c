/* stats.c - the storage daemons' counters (tessera stats), decoded from
 * the wire by the shared list in tessera_stats.h. */
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
	/* A daemon that knows fewer methods leaves the rest at 0. */
	for (size_t i = 0; i < TESSERA_METHODS; i++) {
#define GET_BY_METHOD(field, num, label, what) \
		out->field[i] = i < rep->n_##field ? rep->field[i] : 0;
		TESSERA_FOR_EACH_METHOD_COUNTER(GET_BY_METHOD)
#undef GET_BY_METHOD
	}
#define GET(field, num, label, what) out->field = rep->field;
	TESSERA_FOR_EACH_COUNTER(GET)
#undef GET
	tc_req_free(fs, r);
	return 0;
}
