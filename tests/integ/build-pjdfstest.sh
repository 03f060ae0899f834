#!/usr/bin/env bash
# build-pjdfstest.sh - build the vendored pjdfstest (tests/third_party/
# pjdfstest, pinned; its PINNED file says which commit and why it is here)
# once, and print the directory that holds it: the pjdfstest program at its
# top and the suite's tests/ beside it, as the suite's misc.sh expects.
#
# The result is cached outside the checkout, in
#   $TESSERA_PJDFSTEST_CACHE (default /var/cache/tessera, else
#   ~/.cache/tessera)/pjdfstest-<upstream commit>-<hash of the vendored
#   tree and this script>
# so a repeat run only prints the path, and a changed copy rebuilds.
# Needs autoconf, automake and a C compiler (make deps installs them).
# Build output goes to stderr; stdout is the path alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
src=$top/tests/third_party/pjdfstest

die() { echo "build-pjdfstest: $*" >&2; exit 1; }

[ -f "$src/pjdfstest.c" ] || die "$src/pjdfstest.c is missing"
commit=$(sed -n 's/^ *commit *\([0-9a-f]\{12\}\).*/\1/p' "$src/PINNED")
[ -n "$commit" ] || die "$src/PINNED names no commit"
hash=$( { (cd "$src" && find . -type f | LC_ALL=C sort | xargs cat); cat "$0"; } |
	sha256sum | cut -c1-12)

cache=${TESSERA_PJDFSTEST_CACHE:-/var/cache/tessera}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=$HOME/.cache/tessera
	mkdir -p "$cache"
fi
dest=$cache/pjdfstest-$commit-$hash
if [ -x "$dest/pjdfstest" ] && [ -f "$dest/tests/misc.sh" ]; then
	echo "$dest"
	exit 0
fi

for t in autoreconf aclocal cc make; do
	command -v "$t" >/dev/null || die "$t is missing (run: make deps)"
done
# Built in a scratch copy, moved into place whole: a failed or concurrent
# build never leaves a half-made cache entry behind.
work=$(mktemp -d "$cache/.pjdfstest-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -a "$src/." "$work/"
(
	cd "$work"
	autoreconf -ifs
	./configure -q
	make -s pjdfstest
) >&2 || die "the build failed in $work (output above)"
# The mount's tests run as other users: they must reach the program.
chmod -R a+rX "$work"
mv -T "$work" "$dest" 2>/dev/null || [ -x "$dest/pjdfstest" ] ||
	die "cannot move the build to $dest"
trap - EXIT
rm -rf "$work"
echo "$dest"
