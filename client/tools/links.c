/* links.c - commands for the other file types: ln [-s], readlink, mknod. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "tool.h"

/* ln TARGET LINKNAME (a hard link: TARGET is a Tessera path), ln -s
 * TARGET LINKNAME (TARGET is kept as written, as ln -s does). */
int cmd_ln(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	const char *to;
	int rc;

	rc = tool_start(t, argc, argv, "s", "", &o, "no target given");
	if (rc)
		goto out;
	if (o.nops != 2) {
		rc = tool_usage(t, "need TARGET and LINK_NAME");
		goto out;
	}
	to = tool_path(o.ops[1]);
	if (o.flags['s'])
		rc = tessera_symlink(t->fs, o.ops[0], to);
	else
		rc = tessera_link(t->fs, tool_path(o.ops[0]), to);
	if (rc)
		tool_fserr(t, rc);
out:
	tool_opts_free(&o);
	return rc;
}

int cmd_readlink(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	char target[4097];
	int rc, first = 0;

	rc = tool_start(t, argc, argv, "", "", &o, "no link given");
	if (rc)
		goto out;
	for (int i = 0; i < o.nops; i++) {
		ssize_t n = tessera_readlink(t->fs, tool_path(o.ops[i]), target, sizeof(target));

		if (n < 0) {
			tool_fserr(t, (int)n);
			if (!first)
				first = (int)n;
		} else {
			printf("%.*s\n", (int)n, target);
		}
	}
	rc = first;
out:
	tool_opts_free(&o);
	return rc;
}

/* mknod PATH p | c MAJOR MINOR | b MAJOR MINOR (mode 0666 less the umask,
 * as mknod(1)). */
static int parse_node(struct tool *t, const struct tool_opts *o, mode_t *type, uint64_t *dev)
{
	const char *k = o->ops[1];
	char *end;
	unsigned long major, minor;

	if (!strcmp(k, "p") && o->nops == 2) {
		*type = S_IFIFO;
		*dev = 0;
		return 0;
	}
	if ((strcmp(k, "c") && strcmp(k, "u") && strcmp(k, "b")) || o->nops != 4)
		return tool_usage(t, "TYPE is p, or c or b with MAJOR and MINOR");
	major = strtoul(o->ops[2], &end, 0);
	if (*end || !*o->ops[2])
		return tool_usage(t, "bad major number '%s'", o->ops[2]);
	minor = strtoul(o->ops[3], &end, 0);
	if (*end || !*o->ops[3])
		return tool_usage(t, "bad minor number '%s'", o->ops[3]);
	*type = k[0] == 'b' ? S_IFBLK : S_IFCHR;
	*dev = makedev(major, minor);
	return 0;
}

int cmd_mknod(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	mode_t type = 0;
	uint64_t dev = 0;
	int rc;

	rc = tool_start(t, argc, argv, "", "", &o, "no name given");
	if (rc)
		goto out;
	if (o.nops < 2) {
		rc = tool_usage(t, "need NAME and TYPE");
		goto out;
	}
	rc = parse_node(t, &o, &type, &dev);
	if (rc)
		goto out;
	rc = tessera_mknod(t->fs, tool_path(o.ops[0]), type | (0666 & ~t->umask), dev);
	if (rc)
		tool_fserr(t, rc);
out:
	tool_opts_free(&o);
	return rc;
}
