/* version.c - the library's release, as the library itself was built. */
#include "tessera.h"

/* A string in the library, not the caller's TESSERA_VERSION: a program
 * built against an older header learns which library it runs with. */
const char *tessera_version(void)
{
	return TESSERA_VERSION;
}
