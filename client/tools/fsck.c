/* fsck.c - `tessera fsck [-r|--repair]`: objects against layouts (the
 * library's tessera_fsck does the work; this prints and sets the status). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "tool.h"

/* A finding: printed, or (--json) kept in the array `arg`. */
static void print_line(void *arg, const char *line)
{
	if (arg)
		json_object_array_add(arg, json_object_new_string(line));
	else
		printf("%s\n", line);
}

/* --json for fsck (docs/user-guide.md). */
static struct json_object *fsck_json(const struct tessera_fsck *r, uint64_t left, int repair,
				     struct json_object *findings)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
#define J(f) json_object_object_add(o, #f, json_object_new_uint64(r->f))
	J(files); J(objects); J(pending); J(young); J(orphans); J(removed);
	J(misplaced); J(size_mismatch); J(lost);
#undef J
	json_object_object_add(o, "problems_left", json_object_new_uint64(left));
	json_object_object_add(o, "repair", json_object_new_boolean(repair));
	json_object_object_add(o, "findings", json_object_get(findings));
	return o;
}

int cmd_fsck(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct tessera_fsck r;
	struct json_object *findings = NULL;
	uint64_t left;
	int rc;

	rc = tool_opts_parse(t, argc, argv, "rj", "", &o);
	if (!rc && o.nops)
		rc = tool_usage(t, "takes no operands");
	if (!rc)
		rc = tool_connect(t);
	if (rc)
		goto out;
	if (o.flags['j'] && !(findings = json_object_new_array())) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	rc = tessera_fsck(t->fs, o.flags['r'] > 0, print_line, findings, &r);
	if (rc) {
		tool_fserr(t, rc);
		goto out;
	}
	left = r.orphans - r.removed + r.misplaced + r.size_mismatch + r.lost;
	if (findings)
		rc = tool_json_print(t, fsck_json(&r, left, o.flags['r'] > 0, findings));
	else
		printf("fsck: %" PRIu64 " files, %" PRIu64 " objects (%" PRIu64 " awaiting the purger, %"
	       PRIu64 " created during the scan); %" PRIu64 " orphans (%" PRIu64 " removed), %"
	       PRIu64 " misplaced, %" PRIu64 " size disagreements, %" PRIu64 " lost\n", r.files,
	       r.objects, r.pending, r.young, r.orphans, r.removed, r.misplaced, r.size_mismatch,
	       r.lost);
	if (left && !rc)
		rc = tool_err(t, -EUCLEAN, "%" PRIu64 " problems left%s", left,
			      o.flags['r'] ? "" : " (--repair removes orphans)");
out:
	json_object_put(findings);
	tool_opts_free(&o);
	return rc;
}
