#!/usr/bin/env bash
# The documentation a user reads, README.md and docs/*.md:
#   - every relative link resolves: the file exists and, for a Markdown
#     target, the #anchor names one of its headings (GitHub's anchors);
#   - every `make TARGET` the pages name is a target of the Makefile;
#   - every docs/ page is reachable from the README's table;
#   - the README stays short (issue 27: at most ~300 lines);
#   - the design's walk of one request names only files, functions and
#     macros that are in the tree (it drifts when code is renamed);
#   - the checker itself fails on a broken file link and a broken anchor.
# Prints CMocka-style lines for tests/run-suites.sh. Needs python3 only.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
checker=$top/tests/integ/docs_check.py
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-docs.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
trap 'rm -rf "$tmp"' EXIT

pages=("$top/README.md")
for p in "$top"/docs/*.md; do [ -e "$p" ] && pages+=("$p"); done

test_links() {
	python3 "$checker" links "$top" "${pages[@]}"
	echo "${#pages[@]} pages, every relative link resolves"
}

test_make_targets() {
	python3 "$checker" targets "$top" "${pages[@]}"
}

test_pages_reachable() {
	[ -d "$top/docs" ] || { echo "no docs/ folder"; return 1; }
	python3 "$checker" reach "$top"
}

test_request_walk_names() {
	python3 "$checker" names "$top" "$top/docs/design.md" "One request end to end"
}

test_readme_short() {
	local n
	n=$(wc -l <"$top/README.md")
	echo "README.md: $n lines"
	[ "$n" -le 300 ]
}

# A page with one good and two broken links: the checker must name both
# broken ones and fail, and pass once they are gone.
test_checker_catches_breaks() {
	mkdir -p "$tmp/site/docs"
	printf '# Top\n\n## A section\n\nSee [there](docs/b.md#b-part) and [here](#a-section).\n' \
		>"$tmp/site/README.md"
	printf '# B\n\n## B part\n\n[Back](../README.md#top), [gone](missing.md), [no anchor](../README.md#nowhere)\n' \
		>"$tmp/site/docs/b.md"
	if python3 "$checker" links "$tmp/site" "$tmp/site/README.md" "$tmp/site/docs/b.md" \
		>"$tmp/out" 2>&1; then
		cat "$tmp/out"
		echo "the checker passed a page with broken links"
		return 1
	fi
	cat "$tmp/out"
	grep -q 'missing.md' "$tmp/out"
	grep -q '#nowhere' "$tmp/out"
	[ "$(wc -l <"$tmp/out")" -eq 2 ]
	sed -i 's/, \[gone\](missing.md), \[no anchor\](..\/README.md#nowhere)//' "$tmp/site/docs/b.md"
	python3 "$checker" links "$tmp/site" "$tmp/site/README.md" "$tmp/site/docs/b.md"
}

check links test_links
check make_targets test_make_targets
check pages_reachable test_pages_reachable
check readme_short test_readme_short
check request_walk_names test_request_walk_names
check checker_catches_breaks test_checker_catches_breaks
checks_done
