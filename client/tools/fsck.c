/* fsck.c - `tessera fsck [-r|--repair]`: objects against layouts (the
 * library's tessera_fsck does the work; this prints and sets the status). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static void print_line(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
}

int cmd_fsck(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_fsck r;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	uint64_t left;
	int rc;

	if (!args)
		return tool_err(t, -ENOMEM, "out of memory");
	for (int i = 0; i < argc; i++)   /* --repair is -r */
		args[i] = strcmp(argv[i], "--repair") ? argv[i] : "-r";
	rc = tool_opts_parse(t, argc, args, "r", "", &o);
	if (!rc && o.nops)
		rc = tool_usage(t, "takes no operands");
	if (!rc)
		rc = tool_connect(t);
	if (rc)
		goto out;
	rc = tessera_fsck(t->fs, o.flags['r'] > 0, print_line, NULL, &r);
	if (rc) {
		tool_fserr(t, rc);
		goto out;
	}
	left = r.orphans - r.removed + r.misplaced + r.size_mismatch + r.lost;
	printf("fsck: %" PRIu64 " files, %" PRIu64 " objects (%" PRIu64 " awaiting the purger, %"
	       PRIu64 " created during the scan); %" PRIu64 " orphans (%" PRIu64 " removed), %"
	       PRIu64 " misplaced, %" PRIu64 " size disagreements, %" PRIu64 " lost\n", r.files,
	       r.objects, r.pending, r.young, r.orphans, r.removed, r.misplaced, r.size_mismatch,
	       r.lost);
	if (left)
		rc = tool_err(t, -EUCLEAN, "%" PRIu64 " problems left%s", left,
			      o.flags['r'] ? "" : " (--repair removes orphans)");
out:
	tool_opts_free(&o);
	free(args);
	return rc;
}
