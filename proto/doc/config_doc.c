/*
 * config_doc.c - the configuration reference, from the table the parser
 * uses (TP_CONFIG_KEYS, through tp_config_keys()), so the two cannot
 * drift. A program of the build, not installed:
 *
 *   tp-config-doc markdown TEMPLATE   TEMPLATE with its "@KEYS@" line
 *                                     replaced by a Markdown table
 *   tp-config-doc man TEMPLATE        the same, as tessera.conf(5) entries
 *   tp-config-doc check CONFIG        parse CONFIG as the daemons do; print
 *                                     every key's value, or the error
 *
 * `make docs` writes docs/configuration.md and deploy/man/tessera.conf.5
 * with it; tests/integ/test_config_docs.sh checks the committed copies.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tproto.h"

enum doc_format { DOC_MARKDOWN, DOC_MAN };

/* The allowed values in a few words, for the reference's range column. */
static void range_text(const struct tp_config_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];

	switch (k->type) {
	case TP_CFG_STRING:
		snprintf(buf, len, "1 to %zu bytes", k->size - 1);
		break;
	case TP_CFG_PATH:
		snprintf(buf, len, "absolute, at most %zu bytes", k->size - 1);
		break;
	case TP_CFG_HOSTS:
		snprintf(buf, len, "a list, at most %zu bytes", k->size - 1);
		break;
	case TP_CFG_SERVER:
		snprintf(buf, len, "one line");
		break;
	case TP_CFG_SERVERS:
		snprintf(buf, len, "%llu to %llu lines", (unsigned long long)k->min,
			 (unsigned long long)k->max);
		break;
	case TP_CFG_U32:
	case TP_CFG_BOOL:
		snprintf(buf, len, "%llu to %llu", (unsigned long long)k->min,
			 (unsigned long long)k->max);
		break;
	case TP_CFG_SIZE32:
	case TP_CFG_SIZE64:
		tp_format_size(k->min, lo, sizeof(lo));
		tp_format_size(k->max, hi, sizeof(hi));
		snprintf(buf, len, "%s to %s", lo, hi);
		break;
	}
}

/* Markdown table cell text: '|' would end the cell. */
static void md_put(const char *s)
{
	for (; *s; s++)
		fputs(*s == '|' ? "\\|" : (char[]){ *s, 0 }, stdout);
}

/* roff text: `code` in bold, backslashes and hyphens escaped, and a line
 * that would start with a control character guarded. */
static void man_put(const char *s)
{
	int code = 0;

	if (*s == '.' || *s == '\'')
		fputs("\\&", stdout);
	for (; *s; s++) {
		if (*s == '`')
			fputs((code = !code) ? "\\fB" : "\\fR", stdout);
		else if (*s == '\\')
			fputs("\\e", stdout);
		else if (*s == '-')
			fputs("\\-", stdout);
		else
			putchar(*s);
	}
}

static void markdown_keys(const struct tp_config_key *keys, size_t n)
{
	char range[96];

	puts("| key | type | default | allowed | unit | meaning |");
	puts("|---|---|---|---|---|---|");
	for (size_t i = 0; i < n; i++) {
		const struct tp_config_key *k = &keys[i];

		range_text(k, range, sizeof(range));
		printf("| `%s` | %s | ", k->key, tp_config_type_name(k->type));
		if (k->def) {
			fputs("`", stdout);
			md_put(k->def);
			fputs("`", stdout);
		} else {
			md_put(k->unset);
		}
		printf(" | %s | %s | ", range, k->unit);
		md_put(k->doc);
		puts(" |");
	}
}

static void man_keys(const struct tp_config_key *keys, size_t n)
{
	char range[96], doc[1024];

	for (size_t i = 0; i < n; i++) {
		const struct tp_config_key *k = &keys[i];

		range_text(k, range, sizeof(range));
		puts(".TP");
		printf(".B ");
		man_put(k->key);
		printf("\n");
		snprintf(doc, sizeof(doc), "%s", k->doc);
		doc[0] = (char)toupper((unsigned char)doc[0]); /* a sentence here */
		man_put(doc);
		printf(".\n.br\n");
		printf("Type: ");
		man_put(tp_config_type_name(k->type));
		printf("; allowed: ");
		man_put(range);
		if (*k->unit) {
			printf("; unit: ");
			man_put(k->unit);
		}
		printf("; default: ");
		if (k->def) {
			printf("\\fB");
			man_put(k->def);
			printf("\\fR");
		} else {
			man_put(k->unset);
		}
		printf(".\n");
	}
}

/* The template, with its "@KEYS@" line replaced by the table. */
static int fill(const char *template, enum doc_format format)
{
	FILE *f = fopen(template, "r");
	char line[4096];
	size_t n;
	const struct tp_config_key *keys = tp_config_keys(&n);
	int done = 0;

	if (!f) {
		fprintf(stderr, "tp-config-doc: %s: %s\n", template, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strcmp(line, "@KEYS@\n")) {
			fputs(line, stdout);
			continue;
		}
		if (format == DOC_MARKDOWN)
			markdown_keys(keys, n);
		else
			man_keys(keys, n);
		done = 1;
	}
	fclose(f);
	if (!done) {
		fprintf(stderr, "tp-config-doc: %s has no @KEYS@ line\n", template);
		return -EINVAL;
	}
	return 0;
}

static void print_value(const struct tp_config *cfg, const struct tp_config_key *k)
{
	const char *field = (const char *)cfg + k->offset;
	const struct tp_server *srv = (const struct tp_server *)field;
	uint32_t count = k->type == TP_CFG_SERVERS
			 ? *(const uint32_t *)((const char *)cfg + k->count_offset) : 1;

	switch (k->type) {
	case TP_CFG_STRING:
	case TP_CFG_PATH:
	case TP_CFG_HOSTS:
		printf("%s = %s\n", k->key, field);
		break;
	case TP_CFG_SERVER:
	case TP_CFG_SERVERS:
		for (uint32_t i = 0; i < count; i++)
			printf(strchr(srv[i].host, ':') ? "%s = [%s]:%s\n" : "%s = %s:%s\n",
			       k->key, srv[i].host, srv[i].port);
		break;
	case TP_CFG_U32:
	case TP_CFG_BOOL:
	case TP_CFG_SIZE32:
		printf("%s = %u\n", k->key, *(const uint32_t *)field);
		break;
	case TP_CFG_SIZE64:
		printf("%s = %llu\n", k->key, (unsigned long long)*(const uint64_t *)field);
		break;
	}
}

/* Parse a config as the daemons do and print what they would use. */
static int check(const char *path)
{
	struct tp_config *cfg = malloc(sizeof(*cfg));
	char err[512];
	size_t n;
	const struct tp_config_key *keys = tp_config_keys(&n);
	int rc;

	if (!cfg)
		return -ENOMEM;
	rc = tp_config_load(path, cfg, err, sizeof(err));
	if (rc)
		fprintf(stderr, "tp-config-doc: %s\n", err);
	for (size_t i = 0; !rc && i < n; i++)
		print_value(cfg, &keys[i]);
	free(cfg);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "markdown"))
		return fill(argv[2], DOC_MARKDOWN) ? 1 : 0;
	if (argc == 3 && !strcmp(argv[1], "man"))
		return fill(argv[2], DOC_MAN) ? 1 : 0;
	if (argc == 3 && !strcmp(argv[1], "check"))
		return check(argv[2]) ? 1 : 0;
	fprintf(stderr, "usage: tp-config-doc markdown|man TEMPLATE\n"
			"       tp-config-doc check CONFIG\n");
	return 2;
}
