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

/* The key every session has under the fuzzer (fuzz_auth.c): the
 * transport's replies are sealed with it, on session FUZZ_SESSION. */
#define FUZZ_SESSION 1
extern const uint8_t fuzz_session_key[32];

#endif
