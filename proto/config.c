/* config.c - the file system configuration file. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdl.h"
#include "tproto.h"

void tp_config_defaults(struct tp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->provider, sizeof(cfg->provider), "tcp;ofi_rxm");
	cfg->timeout_ms = 30000;
	cfg->max_io = 1 << 20;
	cfg->window = 16;
	cfg->strip_size = 65536;
	cfg->list_io_max_regions = 8192;
	cfg->lock_lease_ms = 10000;
	cfg->lock_list_batch = 0;
	cfg->cap_lifetime_ms = 600000;
	cfg->io_threads = TP_IO_THREADS_AUTO;
	cfg->local_reads = 1;
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

static int parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || x < min || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

int tp_config_parse(const char *text, const char *name, struct tp_config *cfg,
		    char *err, size_t errlen)
{
	char *copy = strdup(text), *line, *save = NULL;
	int lineno = 0, rc = 0, have_mds = 0;
	uint64_t v;

	if (!copy)
		return -ENOMEM;
	tp_config_defaults(cfg);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), *eq, *key, *val;

		lineno++;
		if (hash)
			*hash = '\0';
		line = trim(line);
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", name, lineno, line);
			rc = -EINVAL;
			goto out;
		}
		*eq = '\0';
		key = trim(line);
		val = trim(eq + 1);
		if (!strcmp(key, "provider")) {
			if (!*val || strlen(val) >= sizeof(cfg->provider))
				goto bad;
			strcpy(cfg->provider, val);
		} else if (!strcmp(key, "mds")) {
			if (have_mds || parse_server(val, &cfg->mds))
				goto bad;
			have_mds = 1;
		} else if (!strcmp(key, "ios")) {
			if (cfg->n_ios == TP_MAX_SERVERS || parse_server(val, &cfg->ios[cfg->n_ios]))
				goto bad;
			cfg->n_ios++;
		} else if (!strcmp(key, "timeout_ms")) {
			if (parse_u64(val, 1, 3600 * 1000, &v))
				goto bad;
			cfg->timeout_ms = (uint32_t)v;
		} else if (!strcmp(key, "max_io")) {
			if (parse_u64(val, 4096, 64u << 20, &v))
				goto bad;
			cfg->max_io = (uint32_t)v;
		} else if (!strcmp(key, "window")) {
			if (parse_u64(val, 1, 1024, &v))
				goto bad;
			cfg->window = (uint32_t)v;
		} else if (!strcmp(key, "strip_size")) {
			if (parse_u64(val, 1, TDL_MAX_STRIP_SIZE, &v))
				goto bad;
			cfg->strip_size = v;
		} else if (!strcmp(key, "list_io_max_regions")) {
			if (parse_u64(val, 1, 1u << 30, &v))
				goto bad;
			cfg->list_io_max_regions = (uint32_t)v;
		} else if (!strcmp(key, "lock_lease_ms")) {
			if (parse_u64(val, 100, 3600 * 1000, &v))
				goto bad;
			cfg->lock_lease_ms = (uint32_t)v;
		} else if (!strcmp(key, "io_threads")) {
			if (parse_u64(val, 0, TP_MAX_IO_THREADS, &v))
				goto bad;
			cfg->io_threads = (uint32_t)v;
		} else if (!strcmp(key, "local_reads")) {
			if (parse_u64(val, 0, 1, &v))
				goto bad;
			cfg->local_reads = (uint32_t)v;
		} else if (!strcmp(key, "lock_list_batch")) {
			if (parse_u64(val, 0, 1u << 30, &v))
				goto bad;
			cfg->lock_list_batch = (uint32_t)v;
		} else if (!strcmp(key, "mount_point")) {
			if (val[0] != '/' || strlen(val) >= sizeof(cfg->mount_point))
				goto bad;
			strcpy(cfg->mount_point, val);
			/* "/mnt/x/" and "/mnt/x" name the same mount point */
			for (size_t n = strlen(cfg->mount_point); n > 1 && cfg->mount_point[n - 1] == '/'; n--)
				cfg->mount_point[n - 1] = '\0';
		} else if (!strcmp(key, "munge_socket")) {
			if (val[0] != '/' || strlen(val) >= sizeof(cfg->munge_socket))
				goto bad;
			strcpy(cfg->munge_socket, val);
		} else if (!strcmp(key, "root_squash")) {
			if (parse_u64(val, 0, 1, &v))
				goto bad;
			cfg->root_squash = (uint32_t)v;
		} else if (!strcmp(key, "key_file")) {
			if (val[0] != '/' || strlen(val) >= sizeof(cfg->key_file))
				goto bad;
			strcpy(cfg->key_file, val);
		} else if (!strcmp(key, "cap_lifetime_ms")) {
			if (parse_u64(val, 100, 7 * 24 * 3600 * 1000u, &v))
				goto bad;
			cfg->cap_lifetime_ms = (uint32_t)v;
		} else {
			snprintf(err, errlen, "%s:%d: unknown key '%s'", name, lineno, key);
			rc = -EINVAL;
			goto out;
		}
		continue;
bad:
		snprintf(err, errlen, "%s:%d: bad value '%s' for '%s'", name, lineno, val, key);
		rc = -EINVAL;
		goto out;
	}
	if (!have_mds) {
		snprintf(err, errlen, "%s: no 'mds = HOST:PORT' line", name);
		rc = -EINVAL;
	} else if (!cfg->n_ios) {
		snprintf(err, errlen, "%s: no 'ios = HOST:PORT' line", name);
		rc = -EINVAL;
	}
out:
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
