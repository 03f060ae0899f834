/*
 * config.c - the file system configuration file, driven by the table in
 * tp_config_keys.h: each row becomes a struct tp_config_key, and one
 * setter per type parses a value, checks it against the row's range and
 * stores it at the row's offset. Nothing here names a key.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl.h"
#include "tproto.h"

#define DEF(text)  text, NULL
#define NONE(what) NULL, what

/* A SERVERS row also points at its count, n_<field>; other rows at 0. */
#define COUNT_OFFSET_STRING(f)  0
#define COUNT_OFFSET_PATH(f)    0
#define COUNT_OFFSET_HOSTS(f)   0
#define COUNT_OFFSET_SERVER(f)  0
#define COUNT_OFFSET_SERVERS(f) offsetof(struct tp_config, n_##f)
#define COUNT_OFFSET_U32(f)     0
#define COUNT_OFFSET_BOOL(f)    0
#define COUNT_OFFSET_SIZE32(f)  0
#define COUNT_OFFSET_SIZE64(f)  0

#define ROW(key, field, type, def, min, max, unit, doc)                          \
	{ key, TP_CFG_##type, offsetof(struct tp_config, field),                  \
	  sizeof(((struct tp_config *)0)->field), COUNT_OFFSET_##type(field), def, \
	  (uint64_t)(min), (uint64_t)(max), unit, doc },
static const struct tp_config_key keys[] = { TP_CONFIG_KEYS(ROW) };
#undef ROW

/* A range must fit its field, and a range's bounds be in order. */
#define FIELD_MAX_STRING  0
#define FIELD_MAX_PATH    0
#define FIELD_MAX_HOSTS   0
#define FIELD_MAX_SERVER  1
#define FIELD_MAX_SERVERS TP_MAX_SERVERS
#define FIELD_MAX_U32     UINT32_MAX
#define FIELD_MAX_BOOL    1
#define FIELD_MAX_SIZE32  UINT32_MAX
#define FIELD_MAX_SIZE64  UINT64_MAX
/* Only a U32 has an "unset" value (TP_CONFIG_UNSET) for NONE; other
 * numbers need a default. */
#define NONE_OK_STRING  1
#define NONE_OK_PATH    1
#define NONE_OK_HOSTS   1
#define NONE_OK_SERVER  1
#define NONE_OK_SERVERS 1
#define NONE_OK_U32     1
#define NONE_OK_BOOL    0
#define NONE_OK_SIZE32  0
#define NONE_OK_SIZE64  0
#undef DEF
#undef NONE
#define DEF(text)  1
#define NONE(what) 0
#define CHECK(key, field, type, def, min, max, unit, doc)                        \
	_Static_assert((uint64_t)(max) <= (uint64_t)FIELD_MAX_##type &&            \
		       (uint64_t)(min) <= (uint64_t)(max), "range of " key);           \
	_Static_assert(def || NONE_OK_##type, "a default for " key);
TP_CONFIG_KEYS(CHECK)
#undef CHECK
#undef DEF
#undef NONE

const struct tp_config_key *tp_config_keys(size_t *n)
{
	*n = sizeof(keys) / sizeof(keys[0]);
	return keys;
}

const struct tp_config_key *tp_config_key(const char *key)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].key, key))
			return &keys[i];
	return NULL;
}

const char *tp_config_type_name(enum tp_config_type type)
{
	switch (type) {
	case TP_CFG_STRING: return "string";
	case TP_CFG_PATH: return "path";
	case TP_CFG_HOSTS: return "hosts";
	case TP_CFG_SERVER: return "host:port";
	case TP_CFG_SERVERS: return "host:port, repeated";
	case TP_CFG_U32: return "integer";
	case TP_CFG_BOOL: return "0 or 1";
	case TP_CFG_SIZE32:
	case TP_CFG_SIZE64: return "size";
	}
	return "?";
}

void tp_config_expect(const struct tp_config_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];

	switch (k->type) {
	case TP_CFG_STRING:
		snprintf(buf, len, "a non-empty string of at most %zu bytes", k->size - 1);
		break;
	case TP_CFG_PATH:
		snprintf(buf, len, "an absolute path of at most %zu bytes", k->size - 1);
		break;
	case TP_CFG_HOSTS:
		snprintf(buf, len, "host names or addresses separated by spaces or commas, "
			 "at most %zu bytes", k->size - 1);
		break;
	case TP_CFG_SERVER:
		snprintf(buf, len, "HOST:PORT or [IPV6]:PORT, on one line");
		break;
	case TP_CFG_SERVERS:
		snprintf(buf, len, "HOST:PORT or [IPV6]:PORT, on at most %llu lines",
			 (unsigned long long)k->max);
		break;
	case TP_CFG_U32:
	case TP_CFG_BOOL:
		snprintf(buf, len, "an integer from %llu to %llu%s%s%s", (unsigned long long)k->min,
			 (unsigned long long)k->max, *k->unit ? " (" : "", k->unit,
			 *k->unit ? ")" : "");
		break;
	case TP_CFG_SIZE32:
	case TP_CFG_SIZE64:
		tp_format_size(k->min, lo, sizeof(lo));
		tp_format_size(k->max, hi, sizeof(hi));
		snprintf(buf, len, "a size in bytes from %s to %s (suffixes K, M, G, T: powers "
			 "of 1024)", lo, hi);
		break;
	}
}

static void *field_of(struct tp_config *cfg, const struct tp_config_key *k)
{
	return (char *)cfg + k->offset;
}

static int parse_server(const char *v, struct tp_server *srv)
{
	const char *colon = strrchr(v, ':');
	size_t hl;

	if (!colon || colon == v || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - v);
	if (hl >= sizeof(srv->host) || strlen(colon + 1) >= sizeof(srv->port))
		return -EINVAL;
	if (hl > 2 && v[0] == '[' && v[hl - 1] == ']') { /* [v6addr]:port */
		v++;
		hl -= 2;
	}
	memcpy(srv->host, v, hl);
	srv->host[hl] = '\0';
	strcpy(srv->port, colon + 1);
	for (const char *p = srv->port; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
	return 0;
}

/* A decimal integer, nothing around it. */
static int parse_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = x;
	return 0;
}

static int set_text(struct tp_config *cfg, const struct tp_config_key *k, const char *v)
{
	char *f = field_of(cfg, k);
	size_t n = strlen(v);

	if (!n || n >= k->size || (k->type == TP_CFG_PATH && v[0] != '/'))
		return -EINVAL;
	memcpy(f, v, n + 1);
	/* "/mnt/x/" and "/mnt/x" name the same place */
	while (k->type == TP_CFG_PATH && n > 1 && f[n - 1] == '/')
		f[--n] = '\0';
	return 0;
}

/* A list of host names or addresses: words of letters, digits and
 * ".-_:%[]", separated by spaces or commas (stored as given). */
static int set_hosts(struct tp_config *cfg, const struct tp_config_key *k, const char *v)
{
	int words = 0;

	for (const char *p = v; *p; p++) {
		if (*p == ',' || *p == ' ' || *p == '\t')
			continue;
		if (!isalnum((unsigned char)*p) && !strchr(".-_:%[]", *p))
			return -EINVAL;
		if (p == v || strchr(", \t", p[-1]))
			words++;
	}
	return words ? set_text(cfg, k, v) : -EINVAL;
}

static int set_server(struct tp_config *cfg, const struct tp_config_key *k, const char *v)
{
	struct tp_server *srv = field_of(cfg, k);
	uint32_t *count = k->type == TP_CFG_SERVERS
			  ? (uint32_t *)((char *)cfg + k->count_offset) : NULL;

	if (count) {
		if (*count >= k->max)
			return -EINVAL;
		srv += *count;
	} else if (srv->host[0]) {
		return -EINVAL; /* given on an earlier line */
	}
	if (parse_server(v, srv)) {
		memset(srv, 0, sizeof(*srv));
		return -EINVAL;
	}
	if (count)
		(*count)++;
	return 0;
}

static int set_number(struct tp_config *cfg, const struct tp_config_key *k, const char *v)
{
	int sized = k->type == TP_CFG_SIZE32 || k->type == TP_CFG_SIZE64;
	uint64_t x;

	if ((sized ? tp_parse_size(v, &x) : parse_u64(v, &x)) || x < k->min || x > k->max)
		return -EINVAL;
	if (k->type == TP_CFG_SIZE64)
		*(uint64_t *)field_of(cfg, k) = x;
	else
		*(uint32_t *)field_of(cfg, k) = (uint32_t)x; /* max fits: CHECK */
	return 0;
}

static int set_value(struct tp_config *cfg, const struct tp_config_key *k, const char *v)
{
	switch (k->type) {
	case TP_CFG_STRING:
	case TP_CFG_PATH:
		return set_text(cfg, k, v);
	case TP_CFG_HOSTS:
		return set_hosts(cfg, k, v);
	case TP_CFG_SERVER:
	case TP_CFG_SERVERS:
		return set_server(cfg, k, v);
	case TP_CFG_U32:
	case TP_CFG_BOOL:
	case TP_CFG_SIZE32:
	case TP_CFG_SIZE64:
		return set_number(cfg, k, v);
	}
	return -EINVAL;
}

int tp_config_set(struct tp_config *cfg, const char *key, const char *value,
		  char *err, size_t errlen)
{
	const struct tp_config_key *k = tp_config_key(key);
	char expect[128];

	if (!k) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -EINVAL;
	}
	if (set_value(cfg, k, value)) {
		tp_config_expect(k, expect, sizeof(expect));
		snprintf(err, errlen, "bad value '%s' for '%s': expected %s", value, key, expect);
		return -EINVAL;
	}
	return 0;
}

void tp_config_defaults(struct tp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct tp_config_key *k = &keys[i];

		if (k->def)
			set_value(cfg, k, k->def); /* parses: test_proto_config */
		else if (k->type == TP_CFG_U32) /* the only number with NONE */
			*(uint32_t *)field_of(cfg, k) = TP_CONFIG_UNSET;
	}
}

size_t tp_config_max_frame(const struct tp_config *cfg)
{
	/* data + header + address + a generous bound on any message body */
	return (size_t)cfg->max_io + 256 * 1024;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One line of the file (comment and all), into cfg. */
static int parse_line(struct tp_config *cfg, char *line, const char *name, int lineno,
		      char *err, size_t errlen)
{
	char *hash = strchr(line, '#'), *eq, why[384];

	if (hash)
		*hash = '\0';
	line = trim(line);
	if (!*line)
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", name, lineno, line);
		return -EINVAL;
	}
	*eq = '\0';
	if (tp_config_set(cfg, trim(line), trim(eq + 1), why, sizeof(why))) {
		snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
		return -EINVAL;
	}
	return 0;
}

/* Every key that needs a line has one. */
static int check_required(const struct tp_config *cfg, const char *name, char *err,
			  size_t errlen)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct tp_config_key *k = &keys[i];
		const char *base = (const char *)cfg;
		int missing = 0;

		if (k->type == TP_CFG_SERVER)
			missing = !((const struct tp_server *)(base + k->offset))->host[0];
		else if (k->type == TP_CFG_SERVERS)
			missing = *(const uint32_t *)(base + k->count_offset) < k->min;
		if (missing && k->min) {
			snprintf(err, errlen, "%s: no '%s = HOST:PORT' line", name, k->key);
			return -EINVAL;
		}
	}
	return 0;
}

int tp_config_parse(const char *text, const char *name, struct tp_config *cfg,
		    char *err, size_t errlen)
{
	char *copy = strdup(text), *line, *next;
	int lineno = 0, rc = 0;

	if (!copy)
		return -ENOMEM;
	tp_config_defaults(cfg);
	/* Line by line, blank ones counted, so messages name the right line. */
	for (line = copy; line && !rc; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		rc = parse_line(cfg, line, name, ++lineno, err, errlen);
	}
	if (!rc)
		rc = check_required(cfg, name, err, errlen);
	free(copy);
	return rc;
}

int tp_config_load(const char *path, struct tp_config *cfg, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "config %s: %s", path, strerror(errno));
		return rc;
	}
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(text);
		snprintf(err, errlen, "config %s: empty or unreadable", path);
		return -EINVAL;
	}
	rc = tp_config_parse(text, path, cfg, err, errlen);
	free(text);
	return rc;
}
