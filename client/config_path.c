/*
 * config_path.c - which config file a client uses: the one search path
 * shared by the library (tessera_connect), the `tessera` command and the
 * mount (tessera-fuse), so that all three find the same file.
 *
 * In order: the file the caller names (-c FILE), $TESSERA_CONFIG (when
 * set and not empty), ./var/tessera.conf (what `make run` and
 * tessera-local write, relative to the working directory), then
 * TESSERA_SYSCONFDIR/tessera.conf (/etc/tessera/tessera.conf, where the
 * systemd units read it). A file named by -c or $TESSERA_CONFIG is taken
 * whether or not it exists, so that a typo is reported as such rather
 * than replaced by another file; the last two are taken only if they exist.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tessera.h"

#ifndef TESSERA_SYSCONFDIR
#define TESSERA_SYSCONFDIR "/etc/tessera"
#endif
#define TESSERA_LOCAL_CONFIG "./var/tessera.conf"
#define TESSERA_SYSTEM_CONFIG TESSERA_SYSCONFDIR "/tessera.conf"

int tessera_config_find(const char *config, const char **out, char *err, size_t errlen)
{
	const char *env = getenv("TESSERA_CONFIG");

	if (config)
		*out = config;
	else if (env && *env)
		*out = env;
	else if (access(TESSERA_LOCAL_CONFIG, F_OK) == 0)
		*out = TESSERA_LOCAL_CONFIG;
	else if (access(TESSERA_SYSTEM_CONFIG, F_OK) == 0)
		*out = TESSERA_SYSTEM_CONFIG;
	else {
		*out = NULL;
		if (err)
			snprintf(err, errlen, "no config file: searched -c FILE (not given), "
				 "$TESSERA_CONFIG (not set), %s and %s (neither exists)",
				 TESSERA_LOCAL_CONFIG, TESSERA_SYSTEM_CONFIG);
		return -ENOENT;
	}
	return 0;
}
