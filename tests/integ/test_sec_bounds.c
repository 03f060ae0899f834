/*
 * test_sec_bounds.c - one user cannot take what a daemon shares
 * (docs/security.md, "Limits"): an AUTH naming a reply address that does
 * not answer costs one bounded attempt, not a spinning loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>

#include "cluster.h"

static int setup(void **state)
{
	if (geteuid() != 0) {
		print_message("needs root: to drop to uid %u\n", NOBODY);
		*state = NULL;
		return 0;
	}
	return cluster_setup(state, "tcp;ofi_rxm");
}

static int teardown(void **state)
{
	return *state ? cluster_teardown(state) : 0;
}

/* The CPU time (user + system) process pid has used, in seconds. */
static double cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
	assert_non_null(p);
	/* fields 3.. follow; utime and stime are fields 14 and 15 */
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &st), 2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Send daemon `server` (-1: metadata) an AUTH whose credential (nobody's,
 * valid) names as reply address a port on this host nobody listens on. */
static void auth_to_nowhere(struct cluster *c, int server, struct raw *raw)
{
	struct tp_config cfg;
	Tessera__AuthRequest m = TESSERA__AUTH_REQUEST__INIT;
	struct tp_hdr h = { .opcode = TP_OP_AUTH, .reqid = 1 };
	char err[512], target[RAW_TARGET_LEN], cred[4096];
	uint8_t name[TP_MAX_ADDR], frame[8192];
	int fds[2], st, port = free_port();
	ssize_t got = 0, n;
	long len;
	pid_t pid;

	raw_connect(c->conf, server, raw, &cfg, target);
	memcpy(name, raw->name, raw->name_len);
	assert_true(raw->name_len >= 4);
	name[2] = (uint8_t)(port >> 8); /* sockaddr_in(6): the port at bytes 2..3 */
	name[3] = (uint8_t)port;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t key[TP_KEY_SIZE];
		char *text = NULL;

		close(fds[0]);
		cluster_drop_to_nobody();
		if (tp_auth_encode(cfg.munge_socket, target, name, raw->name_len, key, &text, err,
				   sizeof(err)))
			_exit(1);
		_exit(write(fds[1], text, strlen(text)) == (ssize_t)strlen(text) ? 0 : 2);
	}
	close(fds[1]);
	while ((n = read(fds[0], cred + got, sizeof(cred) - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	cred[got] = '\0';
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m.credential = cred;
	len = tp_frame_build(frame, sizeof(frame), &h, name, raw->name_len, &m.base);
	assert_true(len > 0);
	raw_send_as_is(raw, frame, (size_t)len);
}

/* After one such AUTH a daemon may try that address once, briefly; it
 * must not spin. A bound on the CPU it uses over 3 s, not on wall time. */
static void assert_no_spin(struct cluster *c, int server, pid_t pid)
{
	struct raw raw;
	double before, used;

	auth_to_nowhere(c, server, &raw);
	usleep(200 * 1000);
	before = cpu_s(pid);
	sleep(3);
	used = cpu_s(pid) - before;
	print_message("daemon %d: %.2f s CPU in 3 s after an AUTH to nowhere\n", server, used);
	assert_true(used < 0.1);
	tnet_close(raw.net);
}

static void test_auth_to_nowhere(void **state)
{
	struct cluster *c = *state;
	struct tessera_ping p[1 + N_IOS];

	NEED_ROOT(c);
	assert_no_spin(c, -1, c->mds);
	assert_no_spin(c, 0, c->ios[0]);
	/* both go on serving */
	assert_int_equal(tessera_ping(c->fs, p, 1 + N_IOS), 1 + N_IOS);
	assert_int_equal(p[0].status, 0);
	assert_int_equal(p[1].status, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_auth_to_nowhere, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
