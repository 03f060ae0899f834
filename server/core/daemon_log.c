/*
 * daemon_log.c - the daemons' log: one line per event, with a level
 * (error, warn, info, debug), to stderr or to syslog.
 *
 * The target and the threshold are set once, by srv_create from the
 * command line's -L and -v (srv_parse_cmdline), and only read afterwards,
 * so the storage daemon's worker threads may log too: each line is one
 * stdio call on a locked stream, or one syslog(3) call.
 *
 * On stderr a line is "TIME tessera-ROLE[INDEX]: LEVEL: text"; under
 * systemd, journald takes stderr as it is. With -L syslog the line goes to
 * syslog(3) (facility daemon, identifier tessera-ROLE, with the pid) as
 * "ROLE INDEX: text" at the matching priority, so `journalctl -p warning`
 * and syslog's own filters see the level.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "daemon_int.h"

/* Each level's name on stderr and its syslog priority. */
static const struct {
	const char *name;
	int priority;
} srv_levels[] = {
	[SRV_LOG_ERROR] = { "error", LOG_ERR },
	[SRV_LOG_WARN] = { "warn", LOG_WARNING },
	[SRV_LOG_INFO] = { "info", LOG_INFO },
	[SRV_LOG_DEBUG] = { "debug", LOG_DEBUG },
};

void srv_log_open(struct srv *srv, const struct srv_log_opts *opts)
{
	const struct srv_log_opts defaults = SRV_LOG_OPTS_DEFAULT;

	srv->log = opts ? *opts : defaults;
	if (srv->log.target != SRV_LOG_SYSLOG)
		return;
	/* openlog keeps the pointer: the ident lives in srv. */
	snprintf(srv->log_ident, sizeof(srv->log_ident), "tessera-%s", srv->role.name);
	openlog(srv->log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void srv_log_close(struct srv *srv)
{
	if (srv->log.target == SRV_LOG_SYSLOG)
		closelog();
}

int srv_log_enabled(const struct srv *srv, enum srv_log_level level)
{
	return level <= srv->log.threshold;
}

void srv_logf(struct srv *srv, enum srv_log_level level, const char *fmt, ...)
{
	char text[2048], when[32];
	time_t now;
	struct tm tm;
	va_list ap;

	if (!srv_log_enabled(srv, level))
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (srv->log.target == SRV_LOG_SYSLOG) {
		syslog(srv_levels[level].priority, "%s %u: %s", srv->role.name, srv->role.index,
		       text);
		return;
	}
	now = time(NULL);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	fprintf(stderr, "%s tessera-%s[%u]: %s: %s\n", when, srv->role.name, srv->role.index,
		srv_levels[level].name, text);
}
