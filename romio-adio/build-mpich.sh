#!/usr/bin/env bash
# build-mpich.sh OUTDIR - build Debian's MPICH library (libmpi) with the
# Tessera driver in its ROMIO, and install it as OUTDIR/libmpich.so.12.
#
# In MPICH, ROMIO is compiled into libmpi itself (no io plugin as in Open
# MPI), so the library is rebuilt: from Debian's mpich source of exactly the
# installed libmpich12's version (refused on a mismatch), configured as
# debian/rules does for amd64 (ch4:ucx, no yaksa) less what the C library
# does not need (Fortran, C++, process manager, docs), with
# --with-file-system=ufs+nfs+tessera; only lib/libmpi.la is made. The
# driver is the same source as for Open MPI (romio-adio/ad_tessera*); the
# registration patches are the Open MPI ones with the paths changed, and
# two differences of MPICH 4's ROMIO handled here (its known file system
# list, and locks through the ops table, which ad_tessera.c fills when
# ADIOI_WRITE_LOCK_FUNC says the table has the slot).
#
# Programs built with mpicc.mpich run with LD_LIBRARY_PATH=OUTDIR: the
# loader finds this libmpich.so.12 before Debian's (same ABI, same version).
#
# Cached outside the checkout, in
#   $TESSERA_ROMIO_CACHE (default /var/cache/tessera, else ~/.cache/tessera)
#   /mpich-<mpich version>-<hash of inputs>/libmpich.so.12
#
#   TESSERA_BUILD   build directory with lib/libtessera.so (default build)
#   TESSERA_KEEP    keep the build tree (the path is printed)
#   TESSERA_MPICH_CACHED_ONLY  install a cached library or none (make
#                   check's step), never build
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=${TESSERA_BUILD:-$top/build}
out=${1:?usage: build-mpich.sh OUTDIR}
case $out in /*) ;; *) out=$PWD/$out ;; esac

say() { echo "build-mpich: $*"; }
die() { echo "build-mpich: $*" >&2; exit 1; }

for t in mpicc.mpich dpkg-source autoreconf libtoolize patch; do
	command -v "$t" >/dev/null || die "$t is missing (run: make deps)"
done
libs="$build/lib/libtessera.so"
incs="-I$build/include/client -I$build/include/dataloops"
for f in $libs "$build/include/client/tessera.h" "$build/include/dataloops/tdl.h"; do
	[ -f "$f" ] || die "$f is not built (run: make)"
done
pkgver=$(dpkg-query -W -f='${source:Version}' libmpich12 2>/dev/null) ||
	die "libmpich12 is not installed (run: make deps)"
srcver=${pkgver#*:}
upver=${srcver%-*}

# Keyed by the driver's sources and libtessera's soname, not by the
# library's bytes: libmpi links libtessera.so dynamically, so a change in
# the client library (the common case) reuses an hour-long build. A change
# of libtessera's ABI changes its soname, and with it the key.
soname=$(objdump -p "$build/lib/libtessera.so" | sed -n 's/^ *SONAME *//p')
[ -n "$soname" ] || die "$build/lib/libtessera.so has no soname"
hash=$( {
	cat "$here"/ad_tessera*.c "$here"/ad_tessera*.h "$here/Makefile.romio" \
	    "$here"/patches/*.patch "$here"/patches/mpich/*.patch "$0"
	echo "$soname"
} | sha256sum | cut -c1-16)

cache=${TESSERA_ROMIO_CACHE:-/var/cache/tessera}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=$HOME/.cache/tessera
	mkdir -p "$cache"
fi
dest=$cache/mpich-$srcver-$hash
lib=$dest/libmpich.so.12

install_lib() {
	mkdir -p "$out"
	cp -f "$lib" "$out/libmpich.so.12.tmp" && mv -f "$out/libmpich.so.12.tmp" "$out/libmpich.so.12"
}

exec 9>"$cache/mpich.lock"
flock 9
if [ -f "$lib" ]; then
	install_lib
	say "cached library $lib"
	exit 0
fi
if [ -n "${TESSERA_MPICH_CACHED_ONLY:-}" ]; then
	# make check: use a cached library, never build one (about 30 min)
	rm -f "$out/libmpich.so.12"
	say "no cached library for this driver ($lib); make mpich builds it"
	exit 0
fi

# ---------------------------------------------------------- the source
src=$cache/src-mpich
msrc=$src/mpich-$srcver
mkdir -p "$src"
if [ ! -f "$msrc/.complete" ]; then
	# (build-romio.sh adds the deb-src entries when they are missing)
	rm -rf "$msrc" "$src"/mpich_*
	( cd "$src" && apt-get source --download-only -qq "mpich=$pkgver" ) ||
		die "apt-get source mpich=$pkgver failed (deb-src entries: see build-romio.sh)"
	dsc=$src/mpich_$srcver.dsc
	got=$(sed -n 's/^Version: //p' "$dsc" | head -1)
	[ "$got" = "$pkgver" ] ||
		die "mpich source is $got but the installed libmpich12 is $pkgver: refusing to build"
	dpkg-source -x "$dsc" "$msrc" >"$src/dpkg-source.log" 2>&1 ||
		{ cat "$src/dpkg-source.log" >&2; die "dpkg-source -x $dsc failed"; }
	touch "$msrc/.complete"
fi

work=$(mktemp -d "$cache/mpich-build.XXXXXX")
[ -n "${TESSERA_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
log=$work/build.log
mkdir -p "$dest"
say "building libmpi of MPICH $pkgver with the Tessera driver in $work (log: $dest/build.log)"
fail() {
	cp "$log" "$dest/build.log" 2>/dev/null || true
	tail -40 "$log" >&2
	die "$1 failed (full log: $dest/build.log)"
}
cp -a "$msrc" "$work/mpich"
romio=$work/mpich/src/mpi/romio
mkdir -p "$romio/adio/ad_tessera"
cp "$here"/ad_tessera*.c "$here"/ad_tessera*.h "$romio/adio/ad_tessera/"
cp "$here/Makefile.romio" "$romio/adio/ad_tessera/Makefile.mk"
# Patches 06 and 07 are Open MPI's glue; the rest touch ROMIO only. 03
# (ad_fstype.c) is replaced by patches/mpich/03: MPICH 4 finds a file
# system's operations and prefix in one table.
for p in 01 02 05 09; do
	sed 's#ompi/mca/io/romio321/romio/##' "$here"/patches/$p-*.patch |
		patch -p1 -s -F3 --no-backup-if-mismatch -d "$romio" >>"$log" 2>&1 ||
		fail "patch $p for MPICH's ROMIO"
done
patch -p1 -s --no-backup-if-mismatch -d "$romio" <"$here/patches/mpich/03-ad_fstype-c.patch" \
	>>"$log" 2>&1 || fail "patch mpich/03 for MPICH's ROMIO"
# 04 (configure.ac): of its three hunks only the ROMIO_TESSERA define
# applies; MPICH 4 derives the conditionals from the known file systems,
# to which tessera is added.
sed 's#ompi/mca/io/romio321/romio/##' "$here"/patches/04-*.patch |
	patch -p1 -f -F3 --no-backup-if-mismatch -r - -d "$romio" >>"$log" 2>&1 || true
sed -i 's/^\(          \[daos nfs ufs pvfs2 testfs xfs panfs lustre gpfs ime quobytefs\)\]/\1 tessera]/' \
	"$romio/configure.ac"
grep -q 'quobytefs tessera\]' "$romio/configure.ac" || fail "adding tessera to ROMIO's file systems"
grep -q 'AC_DEFINE(ROMIO_TESSERA' "$romio/configure.ac" || fail "the ROMIO_TESSERA define"
( cd "$romio" && autoreconf -fi ) >>"$log" 2>&1 || fail "autoreconf of ROMIO"

# debian/rules' amd64 configuration, less Fortran, C++, hydra and docs.
( cd "$work/mpich" && ./configure --with-device=ch4:ucx --with-ucx=/usr --with-pm=no \
	--with-hwloc-prefix=/usr --with-wrapper-dl-type=none --enable-shared --disable-static \
	--without-yaksa --prefix=/usr --disable-fortran --disable-cxx --disable-doc \
	--disable-rpath --disable-wrapper-rpath --with-file-system=ufs+nfs+tessera \
	CPPFLAGS="$incs" CFLAGS="-g -O2" BASH_SHELL=/bin/bash \
	LIBS="-L$build/lib -ltessera -lpthread -lm" \
	) >>"$log" 2>&1 || fail "MPICH configure"
grep -q '^#define ROMIO_TESSERA 1' "$romio/adio/include/romioconf.h" ||
	fail "ROMIO configure did not enable tessera"
# Only what libmpi is linked from: its convenience libraries' directories
# (json-c and yaksa are embedded, as in Debian's build), ROMIO, then the
# library; not hydra, the tests or the examples.
for d in src/mpl modules/json-c modules/yaksa src/mpi/romio; do
	t0=$(date +%s)
	( cd "$work/mpich" && make -j2 -C "$d" ) >>"$log" 2>&1 || fail "make in $d"
	say "$d: $(( $(date +%s) - t0 )) s"
done
t0=$(date +%s)
( cd "$work/mpich" && make -j2 lib/libmpi.la ) >>"$log" 2>&1 || fail "libmpi build"
say "lib/libmpi.la: $(( $(date +%s) - t0 )) s"
so=$(readlink -f "$work/mpich/lib/.libs/libmpi.so.12")
# (MPICH keeps ROMIO's symbols local: look in the symbol table, not the
# dynamic one. grep reads it all: with -q it stops at the match and nm,
# killed by SIGPIPE, fails the pipeline under pipefail.)
nm --defined-only "$so" | grep ' [tT] ADIOI_TESSERA_Claims$' >/dev/null || fail "the driver is not in libmpi"
cp "$log" "$dest/build.log"
cp "$so" "$lib.tmp" && mv "$lib.tmp" "$lib"
ls -dt "$cache"/mpich-"$srcver"-*/ 2>/dev/null | tail -n +4 | xargs -r rm -rf
install_lib
say "built $lib"
