/*
 * fuzz_creds.c - credentials for the client fuzz target, linked instead of
 * proto/auth.c: no munged runs under a fuzzer. A "credential" proposes a
 * fixed key (fuzz_session_key), which the fuzz transport (fuzz_tnet.c)
 * seals its replies with, so the client's real checks (session, MAC) pass
 * for them and refuse the raw frames the input makes up. Nothing decodes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tnet.h"
#include "tproto.h"

const uint8_t fuzz_session_key[TP_KEY_SIZE] = { 0x42 };

int tp_auth_encode(const char *socket, uint32_t daemon_uid, const char *target, const void *addr,
		   size_t addr_len, uint8_t key_out[TP_KEY_SIZE], char **cred, char *err,
		   size_t errlen)
{
	(void)socket, (void)daemon_uid, (void)target, (void)addr, (void)addr_len, (void)err, (void)errlen;
	memcpy(key_out, fuzz_session_key, TP_KEY_SIZE);
	*cred = strdup("fuzz");
	return *cred ? 0 : -ENOMEM;
}

int tp_auth_decode(const char *socket, const char *cred, const char *target,
		   struct tp_auth_id *out, char *err, size_t errlen)
{
	(void)socket, (void)cred, (void)out;
	snprintf(err, errlen, "%s: no credentials decode under the fuzzer", target);
	return -EACCES;
}
