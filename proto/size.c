/* size.c - byte sizes with K, M, G, T suffixes (tp_size.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tp_size.h"

static unsigned suffix_shift(char c)
{
	switch (toupper((unsigned char)c)) {
	case 'K': return 10;
	case 'M': return 20;
	case 'G': return 30;
	case 'T': return 40;
	default: return 0;
	}
}

int tp_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	shift = suffix_shift(*end);
	if (shift) {
		end++;
		/* "K", "KB" and "KiB" all mean 1024 bytes */
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

void tp_format_size(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "", " KiB", " MiB", " GiB", " TiB" };
	unsigned u = 0;

	while (v && u < 4 && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)v, units[u]);
}
