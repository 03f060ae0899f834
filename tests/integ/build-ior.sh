#!/usr/bin/env bash
# build-ior.sh - build the vendored IOR sources (tests/third_party/ior,
# pinned; its PINNED file says which commit and which files) once into
# `ior` and `mdtest` with the POSIX and MPIIO backends, and print the
# directory that holds the two programs.
#
# The result is cached outside the checkout, in
#   $TESSERA_IOR_CACHE (default /var/cache/tessera, else
#   ~/.cache/tessera)/ior-<upstream commit>-<hash of the vendored tree and
#   this script>
# so a repeat run only prints the path, and a changed copy rebuilds.
#
# No autotools: upstream's configure only decides which headers and
# backends exist, and on Debian 12 with Open MPI that is the small
# config.h written below (what configure finds there, minus the backends
# we do not build), then one mpicc line per program (about 20 s on one
# core). Needs mpicc from Debian's Open MPI (make deps installs it).
# Build output goes to stderr; stdout is the path alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
src=$top/tests/third_party/ior

die() { echo "build-ior: $*" >&2; exit 1; }

[ -f "$src/src/ior.c" ] && [ -f "$src/src/mdtest.c" ] || die "$src/src is incomplete"
commit=$(sed -n 's/^ *commit *\([0-9a-f]\{12\}\).*/\1/p' "$src/PINNED")
[ -n "$commit" ] || die "$src/PINNED names no commit"
version=$(sed -n 's/^ *Version: *//p' "$src/META")
[ -n "$version" ] || die "$src/META names no version"
hash=$( { (cd "$src" && find . -type f | LC_ALL=C sort | xargs cat); cat "$0"; } |
	sha256sum | cut -c1-12)

cache=${TESSERA_IOR_CACHE:-/var/cache/tessera}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=$HOME/.cache/tessera
	mkdir -p "$cache"
fi
dest=$cache/ior-$commit-$hash
if [ -x "$dest/ior" ] && [ -x "$dest/mdtest" ]; then
	echo "$dest"
	exit 0
fi

command -v mpicc >/dev/null || die "mpicc is missing (run: make deps)"
# Built in a scratch directory, moved into place whole: a failed or
# concurrent build never leaves a half-made cache entry behind.
work=$(mktemp -d "$cache/.ior-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -a "$src/src/." "$work/"
cat >"$work/config.h" <<EOF
/* Written by tests/integ/build-ior.sh in place of upstream's configure:
 * what it finds on Debian 12 (glibc, Open MPI 4.1), POSIX and MPIIO only. */
#define META_NAME "ior"
#define META_VERSION "$version"
#define PACKAGE_VERSION "$version"
#define _XOPEN_SOURCE 700
#define USE_POSIX_AIORI 1
#define USE_MPIIO_AIORI 1
#define HAVE_FCNTL_H 1
#define HAVE_STRINGS_H 1
#define HAVE_SYS_PARAM_H 1
#define HAVE_SYS_MOUNT_H 1
#define HAVE_SYS_STATFS_H 1
#define HAVE_SYS_STATVFS_H 1
#define HAVE_STATVFS 1
#define HAVE_STATFS 1
#define HAVE_SYSCONF 1
#define HAVE_MPI_COUNT 1
#define HAVE_GETCPU_SYSCALL 1
/* no HAVE_MPI_FILE_READ_C: Open MPI 4.1 has no MPI-4 large-count calls;
 * aiori-MPIIO.c then supplies its own. */
EOF
common="aiori.c aiori-DUMMY.c aiori-POSIX.c aiori-MPIIO.c ior.c mdtest.c utilities.c parse_options.c ior-output.c option.c"
(
	cd "$work"
	# Upstream's own warnings are not ours to fix: -w keeps the log to
	# real errors.
	flags=(-O2 -g -w -std=gnu99 -DHAVE_CONFIG_H -I.)
	# shellcheck disable=SC2086
	mpicc "${flags[@]}" -o ior ior-main.c $common -lm
	# shellcheck disable=SC2086
	mpicc "${flags[@]}" -o mdtest mdtest-main.c $common -lm
	./ior -h >/dev/null 2>&1 || true   # (links and starts)
) >&2 || die "the build failed in $work (output above)"
chmod -R a+rX "$work"
mv -T "$work" "$dest" 2>/dev/null || [ -x "$dest/ior" ] ||
	die "cannot move the build to $dest"
trap - EXIT
rm -rf "$work"
echo "$dest"
