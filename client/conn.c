/*
 * conn.c - a client's connection, opened and closed: the config read, the
 * endpoint opened, the per-daemon tables made (tessera_connect), and all
 * of it let go again (tessera_disconnect). What happens in between lives
 * below: sessions (session.c), addresses (peer.c), the request engine
 * (engine.c), the I/O paths above them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "client_int.h"

static void default_cred(struct tessera_cred *c)
{
	gid_t groups[TESSERA_MAX_GROUPS];
	int n = getgroups(TESSERA_MAX_GROUPS - 1, groups);

	c->uid = (uint32_t)geteuid();
	c->gids[0] = (uint32_t)getegid();
	c->ngids = 1;
	for (int i = 0; i < n; i++)
		if ((uint32_t)groups[i] != c->gids[0])
			c->gids[c->ngids++] = (uint32_t)groups[i];
}

static int connect_cfg(tessera_fs *fs, char *err, size_t errlen)
{
	struct tnet_opts to = {
		.provider = fs->cfg.provider,
		.node = fs->cfg.mds.host,
		.service = fs->cfg.mds.port,
		.listen = 0,
		.buf_size = tp_config_max_frame(&fs->cfg),
		.nrecv = fs->cfg.window + 4,
	};
	struct tnet_times times = { 0 };
	int rc;

	fs->peer_ios = calloc(fs->cfg.n_ios, sizeof(*fs->peer_ios));
	fs->ios_known = calloc(fs->cfg.n_ios, sizeof(*fs->ios_known));
	fs->ios_session = calloc(fs->cfg.n_ios, sizeof(*fs->ios_session));
	fs->ios_local = calloc(fs->cfg.n_ios, sizeof(*fs->ios_local));
	if (!fs->peer_ios || !fs->ios_known || !fs->ios_session || !fs->ios_local)
		return -ENOMEM;
	for (uint32_t i = 0; i < fs->cfg.n_ios; i++)
		pthread_mutex_init(&fs->ios_session[i].auth_lock, NULL);
	rc = tnet_open(&to, &fs->net, err, errlen);
	if (rc)
		return rc;
	tnet_open_times(fs->net, &times);
	tc_trace(fs, times.getinfo_ns, "fi_getinfo: libfabric starts its providers");
	tc_trace(fs, times.endpoint_ns, "endpoint: fabric, domain, cq, av, ep");
	tc_trace(fs, times.buffers_ns, "%u receive buffers posted", to.nrecv);
	if (tnet_can_lend(fs->net))
		fs->lend_runs = tnet_iov_limit(fs->net) - 1 < TC_LEND_IOV
				? tnet_iov_limit(fs->net) - 1 : TC_LEND_IOV;
	fs->name_len = sizeof(fs->name);
	rc = tnet_name(fs->net, fs->name, &fs->name_len);
	if (rc)
		snprintf(err, errlen, "cannot read our own transport address: %s", strerror(-rc));
	return rc;
}

/* Read `config`, else the one the search path finds (config_path.c). */
static int load_config(const char *config, struct tp_config *cfg, char *err, size_t errlen)
{
	const char *path;
	int rc = tessera_config_find(config, &path, err, errlen);

	return rc ? rc : tp_config_load(path, cfg, err, errlen);
}

int tessera_connect(const char *config, tessera_fs **out, char *err, size_t errlen)
{
	tessera_fs *fs;
	char dummy[8];
	uint64_t t;
	int rc;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	tc_trace_init(fs);
	t = tp_mono_ns();
	rc = load_config(config, &fs->cfg, err, errlen);
	if (rc) {
		tc_trace_fini(fs);
		free(fs);
		return rc;
	}
	tc_trace(fs, tp_mono_ns() - t, "config read");
	pthread_key_create(&fs->thread_key, tc_thread_free);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->writer_lock, NULL);
	pthread_cond_init(&fs->cond, NULL);
	pthread_cond_init(&fs->prober_cond, NULL);
	pthread_mutex_init(&fs->mds_session.auth_lock, NULL);
	tc_engine_init(fs);
	if (getrandom(&fs->desc_nonce, sizeof(fs->desc_nonce), 0) != sizeof(fs->desc_nonce))
		fs->desc_nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^
				 (uint64_t)(uintptr_t)fs;
	default_cred(&fs->default_cred);
	tc_local_init(fs);
	rc = tc_health_init(fs);
	if (!rc)
		rc = connect_cfg(fs, err, errlen);
	if (rc) {
		tessera_disconnect(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

int tessera_config_mount_point(const char *config, char *out, size_t len, char *err,
			       size_t errlen)
{
	struct tp_config *cfg;
	char dummy[8];
	int rc;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		snprintf(err, errlen, "reading the config: out of memory");
		return -ENOMEM;
	}
	rc = load_config(config, cfg, err, errlen);
	if (!rc && strlen(cfg->mount_point) >= len) {
		snprintf(err, errlen, "mount_point %s is longer than %zu bytes", cfg->mount_point,
			 len - 1);
		rc = -ENAMETOOLONG;
	}
	if (!rc)
		strcpy(out, cfg->mount_point);
	free(cfg);
	return rc;
}

void tessera_copy_stats(tessera_fs *fs, struct tessera_copy_stats *out)
{
	pthread_mutex_lock(&fs->lock);
	*out = fs->copies;
	pthread_mutex_unlock(&fs->lock);
}

void tessera_disconnect(tessera_fs *fs)
{
	if (!fs)
		return;
	tc_trace(fs, tp_mono_ns() - fs->trace_t0, "tessera_disconnect: process age");
	tc_trace_fini(fs);
	tc_behind_drain(fs); /* what was sent behind is answered first */
	tc_leases_stop(fs); /* its thread uses the endpoint */
	tc_mcache_stop(fs); /* so does this one */
	tc_prober_stop(fs); /* so does this one */
	tnet_close(fs->net); /* no completion can arrive after this */
	tc_engine_fini(fs);
	free(pthread_getspecific(fs->thread_key));
	pthread_key_delete(fs->thread_key);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->writer_lock);
	pthread_cond_destroy(&fs->cond);
	pthread_cond_destroy(&fs->prober_cond);
	pthread_mutex_destroy(&fs->mds_session.auth_lock);
	for (uint32_t i = 0; fs->ios_session && i < fs->cfg.n_ios; i++)
		pthread_mutex_destroy(&fs->ios_session[i].auth_lock);
	tc_health_fini(fs);
	free(fs->peer_ios);
	free(fs->ios_known);
	free(fs->ios_local);
	if (fs->ios_session)
		sodium_memzero(fs->ios_session, fs->cfg.n_ios * sizeof(*fs->ios_session));
	free(fs->ios_session);
	sodium_memzero(&fs->mds_session, sizeof(fs->mds_session));
	free(fs);
}

uint32_t tessera_ios_count(tessera_fs *fs)
{
	return fs->cfg.n_ios;
}

