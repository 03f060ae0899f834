/*
 * daemon_notify.c - srv_run: the daemon's loop, and its word to a service
 * manager (sd_notify(3)) that it serves.
 *
 * systemd's Type=notify starts the units ordered after a daemon only once
 * the daemon sends READY=1; sent here, just before the loop runs, it means
 * the store is open, the endpoint listens and every request is answered
 * from now on (a ping sent after READY=1 is served by this loop's first
 * turn). STATUS= says the same in `systemctl status`; STOPPING=1 follows
 * a SIGTERM or SIGINT. Without $NOTIFY_SOCKET sd_notify sends nothing.
 *
 * srv_run lives here, apart from daemon.c, so that only the programs that
 * run a daemon's loop (tessera-mds, tessera-ios) pull this object out of
 * libtsrvcore.a and link libsystemd: the tests, tools and fuzzers that use
 * the core in-process never do.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <ev.h>
#include <systemd/sd-daemon.h>

#include "daemon_int.h"

/* Tell the service manager, if any, `state`; a failure is logged (the
 * daemon serves anyway: the manager will time the unit out). */
static void notify(struct srv *srv, const char *state)
{
	int rc = sd_notify(0, state);

	if (rc < 0)
		srv_warn(srv, "sd_notify to $NOTIFY_SOCKET: %s", strerror(-rc));
}

int srv_run(struct srv *srv)
{
	char state[256];

	signal(SIGPIPE, SIG_IGN);
	srv_log(srv, "serving (provider %s, version %s)", srv->cfg->provider, TP_VERSION_STRING);
	snprintf(state, sizeof(state), "READY=1\nSTATUS=serving (provider %s, version %s)",
		 srv->cfg->provider, TP_VERSION_STRING);
	notify(srv, state);
	ev_run(srv->loop, 0);
	notify(srv, "STOPPING=1\nSTATUS=stopping");
	return 0;
}
