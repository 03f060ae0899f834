/* fuzz_tnet.h - the fuzz transport (fuzz_tnet.c): where replies come from. */
#ifndef TESSERA_FUZZ_TNET_H
#define TESSERA_FUZZ_TNET_H

#include <stddef.h>
#include <stdint.h>

/* The bytes the open transport answers the next requests from. */
void fuzz_tnet_input(const uint8_t *data, size_t size);
/* The next input byte (0 once it is used up), and how many are left: the
 * target reads its choice of calls from the same stream. */
unsigned fuzz_tnet_u8(void);
size_t fuzz_tnet_left(void);
/* The input not yet used (to hand to a transport opened anew). */
void fuzz_tnet_rest(const uint8_t **data, size_t *size);

/* With on set, the transport answers each AUTH from the input too (one
 * record: ctl u8 % 4 = 0 the right AuthReply, 1 one sealed with a wrong
 * key, 2 an unsealed error, 3 a body (u16 length, bytes) and status byte
 * from the input, sealed right); with it off, or once the input is used
 * up, AUTH gets the right answer without input. After a wrong seal or an
 * unsealed error the client must send that server nothing but a new AUTH
 * (it failed to prove its identity): the transport aborts otherwise. */
void fuzz_tnet_auth_from_input(int on);

/* The key every session has under the fuzzer (fuzz_creds.c): the
 * transport's replies are sealed with it, on session FUZZ_SESSION. */
#define FUZZ_SESSION 1
extern const uint8_t fuzz_session_key[32];

#endif
