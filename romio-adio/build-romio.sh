#!/usr/bin/env bash
# build-romio.sh OUT - build Open MPI's ROMIO io component (mca_io_romio321.so)
# with the Tessera driver in it, and install it as OUT.
#
# Open MPI itself is not rebuilt. From Debian's openmpi source of exactly the
# installed libopenmpi3's version (refused on a mismatch), a shadow tree
# holds config/opal_mca.m4 and ompi/mca/io/romio321/ only; the driver goes in
# as romio/adio/ad_tessera/, the patches in patches/ register it, ROMIO is
# regenerated (autogen.sh), configured as Open MPI's configure.m4 does, and
# libromio_dist plus the five glue files are linked with -Wl,-z,defs into the
# component, libtessera linked in statically (its symbols kept private).
#
# The result is cached outside the checkout, in
#   $TESSERA_ROMIO_CACHE (default /var/cache/tessera, else ~/.cache/tessera)
#   /romio-<openmpi version>-<hash of driver, patches, this script and the
#   libtessera sources>/mca_io_romio321.so
# so a repeat run copies it and a changed driver rebuilds.
#
#   TESSERA_BUILD   build directory with lib/libtessera.a (default build)
#   TESSERA_KEEP    keep the shadow tree (the path is printed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=${TESSERA_BUILD:-$top/build}
out=${1:?usage: build-romio.sh OUT.so}
case $out in /*) ;; *) out=$PWD/$out ;; esac

say() { echo "build-romio: $*"; }
die() { echo "build-romio: $*" >&2; exit 1; }

# ---------------------------------------------------------------- inputs
for t in mpicc ompi_info dpkg-source autoreconf libtoolize patch; do
	command -v "$t" >/dev/null || die "$t is missing (run: make deps)"
done
libs="$build/lib/libtessera.a"
# The driver sees only the public headers of the parts it uses, as the
# Makefile exports them.
incs="-I$build/include/client -I$build/include/dataloops"
for f in $libs "$build/include/client/tessera.h" "$build/include/dataloops/tdl.h"; do
	[ -f "$f" ] || die "$f is not built (run: make)"
done
# The component's libtessera reaches libfabric through Tessera's own build
# of it (deploy/build-libfabric.sh, which make runs first), by runpath.
# (Where make could not build it, Debian's source being out of reach, the
# component links Debian's libfabric.so.1, as libtessera does then.)
fabric=$(bash "$top/deploy/build-libfabric.sh" --prefix)
fabric_link="-L$fabric/lib -Wl,-rpath,$fabric/lib"
if [ ! -f "$fabric/lib/libfabric.so.1" ]; then
	say "no $fabric: linking Debian's libfabric.so.1"
	fabric_link=""
fi
pkgver=$(dpkg-query -W -f='${source:Version}' libopenmpi3 2>/dev/null) ||
	die "libopenmpi3 is not installed (run: make deps)"
srcver=${pkgver#*:}          # no epoch in file names
upver=${srcver%-*}           # upstream version: 4.1.4


hash=$( {
	cat "$here"/ad_tessera*.c "$here"/ad_tessera*.h "$here/Makefile.romio" \
	    "$here"/patches/*.patch "$here/tests/romio_mpi1_compat.h" "$0"
	cat "$top"/client/*.c "$top"/client/*.h "$top"/dataloops/*.c "$top"/dataloops/*.h \
	    "$top"/proto/*.c "$top"/proto/*.h "$top"/proto/*.proto
	# the very archive linked in: a cached component never carries an
	# older or another tree's libtessera
	cat "$build/lib/libtessera.a" 2>/dev/null
	echo "$fabric_link"
} | sha256sum | cut -c1-16)

cache=${TESSERA_ROMIO_CACHE:-/var/cache/tessera}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=$HOME/.cache/tessera
	mkdir -p "$cache"
fi
dest=$cache/romio-$srcver-$hash
so=$dest/mca_io_romio321.so

# ROMIO's test programs built beside the component (see test_mpi_romio.sh
# for the ones left out, and why).
ROMIO_TESTS="simple psimple coll_test hindexed types_with_zeros darray_read aggregation1
aggregation2 async async-multiple excl file_info split_coll status misc large_file noncontig
noncontig_coll noncontig_coll2 i_noncontig atomicity shared_fp ordered_fp"

install_so() {
	mkdir -p "$(dirname "$out")"
	cp -f "$so" "$out.tmp" && mv -f "$out.tmp" "$out"
	rm -rf "$build/romio-adio/romio-tests"
	mkdir -p "$build/romio-adio"
	cp -r "$dest/romio-tests" "$build/romio-adio/romio-tests"
}

# One build at a time per cache (make check and a developer may race).
exec 9>"$cache/romio.lock"
flock 9
if [ -f "$so" ]; then
	install_so
	say "cached component $so"
	exit 0
fi

# ---------------------------------------------------------- the source
src=$cache/src
osrc=$src/openmpi-$srcver
mkdir -p "$src"
if [ ! -f "$osrc/.complete" ]; then
	if ! apt-cache showsrc openmpi 2>/dev/null | grep -x "Version: $pkgver" >/dev/null; then
		bash "$top/deploy/enable-deb-src.sh"
	fi
	rm -rf "$osrc" "$src"/openmpi_*
	( cd "$src" && apt-get source --download-only -qq "openmpi=$pkgver" ) ||
		die "apt-get source openmpi=$pkgver failed"
	dsc=$src/openmpi_$srcver.dsc
	[ -f "$dsc" ] || die "no $dsc after apt-get source"
	got=$(sed -n 's/^Version: //p' "$dsc" | head -1)
	[ "$got" = "$pkgver" ] ||
		die "openmpi source is $got but the installed libopenmpi3 is $pkgver: refusing to build"
	# (apt-get checked the files against the archive's signed index;
	# dpkg-source's own warning about the uploader's key is noise here)
	dpkg-source -x "$dsc" "$osrc" >"$src/dpkg-source.log" 2>&1 ||
		{ cat "$src/dpkg-source.log" >&2; die "dpkg-source -x $dsc failed"; }
	touch "$osrc/.complete"
fi
got=$(sed -n 's/^Version: //p' "$src/openmpi_$srcver.dsc" | head -1)
[ "$got" = "$pkgver" ] ||
	die "openmpi source is $got but the installed libopenmpi3 is $pkgver: refusing to build"

# ------------------------------------------------------ the shadow tree
work=$(mktemp -d "$cache/romio-build.XXXXXX")
# TESSERA_KEEP=1 keeps the shadow tree (for debugging the driver in place).
[ -n "${TESSERA_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
log=$work/build.log
say "building the ROMIO component for Open MPI $pkgver in $work (log: $dest/build.log)"
mkdir -p "$work/config" "$work/ompi/mca/io" "$dest"
cp "$osrc/config/opal_mca.m4" "$work/config/"
cp -a "$osrc/ompi/mca/io/romio321" "$work/ompi/mca/io/"
romio=$work/ompi/mca/io/romio321/romio
mkdir -p "$romio/adio/ad_tessera"
cp "$here"/ad_tessera*.c "$here"/ad_tessera*.h "$romio/adio/ad_tessera/"
cp "$here/Makefile.romio" "$romio/adio/ad_tessera/Makefile.mk"
for p in "$here"/patches/*.patch; do
	patch -p1 -s -d "$work" <"$p" || die "patch $(basename "$p") does not apply to $pkgver"
done

fail() {
	cp "$log" "$dest/build.log" 2>/dev/null || true
	tail -40 "$log" >&2
	die "$1 failed (full log: $dest/build.log)"
}

# ------------------------------------------- regenerate and configure
( cd "$romio" && ./autogen.sh ) >>"$log" 2>&1 || fail "autogen.sh"

# The flags Open MPI's own build gave ROMIO, as ompi_info reports them.
params=$(ompi_info --param io romio321 --level 9 --parsable |
	sed -n 's/^mca:io:romio321:param:io_romio321_complete_configure_params:value://p')
cflags=$(sed -n "s/.* CFLAGS='\([^']*\)'.*/\1/p" <<<"$params")
[ -n "$cflags" ] || cflags="-DNDEBUG -g -O2 -fno-strict-aliasing -D__EXTENSIONS__"
mpiinc=$(mpicc --showme:incdirs)
cppflags="-Wdate-time -D_FORTIFY_SOURCE=2"
for d in $mpiinc; do cppflags="$cppflags -I$d"; done
cppflags="$cppflags $incs"
( cd "$romio" && ./configure FROM_OMPI=yes CC=gcc CFLAGS="$cflags" CPPFLAGS="$cppflags" \
	LDFLAGS="-Wl,-z,relro" --enable-shared --disable-static --prefix=/usr \
	--disable-aio --disable-weak-symbols --enable-strict --disable-f77 --disable-f90 \
	--with-file-system=ufs+nfs+tessera ) >>"$log" 2>&1 || fail "ROMIO configure"
grep -q '^#define ROMIO_TESSERA 1' "$romio/adio/include/romioconf.h" ||
	fail "ROMIO configure did not enable tessera"

# Our own code, held to the project's rules (ROMIO's headers are not ours:
# -isystem), before ROMIO compiles it with its own flags.
strict="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only"
for d in $mpiinc "$romio/include" "$romio/adio/include"; do strict="$strict -isystem $d"; done
for c in "$romio"/adio/ad_tessera/ad_tessera*.c; do
	gcc $strict $incs "$c" >>"$log" 2>&1 ||
		fail "warnings in $(basename "$c") (-Wall -Wextra -Werror)"
done

# ------------------------------------------------------------ build
( cd "$romio" && make -j2 libromio_dist.la ) >>"$log" 2>&1 || fail "libromio_dist build"

glue=$work/ompi/mca/io/romio321/src
objs=""
for c in io_romio321_component io_romio321_file_open io_romio321_file_read \
	 io_romio321_file_write io_romio321_module; do
	gcc $cflags $cppflags -fPIC -DOMPI_BUILDING=0 \
		-I"$work/ompi/mca/io/romio321" -I"$romio/include" -I"$romio/adio/include" \
		-c "$glue/$c.c" -o "$work/$c.o" >>"$log" 2>&1 || fail "compiling $c.c"
	objs="$objs $work/$c.o"
done
mpilibdir=$(mpicc --showme:libdirs | awk '{print $1}')
gcc -shared -fPIC -o "$work/mca_io_romio321.so" $objs \
	-Wl,--whole-archive "$romio/.libs/libromio_dist.a" -Wl,--no-whole-archive \
	$libs -Wl,--exclude-libs,libtessera.a \
	$fabric_link \
	-L"$mpilibdir" -lmpi -lopen-pal -lfabric -lprotobuf-c -lmunge -lsodium -lpthread -lm \
	-Wl,-z,defs -Wl,-z,relro >>"$log" 2>&1 || fail "linking mca_io_romio321.so"

syms=$(nm -D --defined-only "$work/mca_io_romio321.so")
grep -q ' mca_io_romio321_component$' <<<"$syms" || fail "the component symbol is missing"
# ROMIO's own test programs, from the same source (misc.c and large_file.c
# are made by its configure), for romio-adio/tests/test_mpi_romio.sh.
mkdir -p "$work/romio-tests"
# Some still call MPI-1 constructors Open MPI 4 removed (see the header).
mpi1="-include $here/tests/romio_mpi1_compat.h"
# One that does not compile even so is listed, with the compiler's first
# error, in romio-tests/not-compiled (the test script skips it, saying why).
: >"$work/romio-tests/not-compiled"
for t in $ROMIO_TESTS; do
	if ! mpicc -O2 -w $mpi1 -o "$work/romio-tests/$t" "$romio/test/$t.c" -lm \
		>"$work/cc.out" 2>&1; then
		echo "$t $(grep -m1 'error:' "$work/cc.out" | sed 's/.*error: //')" \
			>>"$work/romio-tests/not-compiled"
	fi
	cat "$work/cc.out" >>"$log"
done
rm -rf "$dest/romio-tests"
cp -r "$work/romio-tests" "$dest/romio-tests"
cp "$log" "$dest/build.log"
cp "$work/mca_io_romio321.so" "$so.tmp" && mv "$so.tmp" "$so"
# Keep the five newest builds of this version (a developer and make check
# may alternate between driver versions); older ones go.
ls -dt "$cache"/romio-"$srcver"-*/ 2>/dev/null | tail -n +6 | xargs -r rm -rf
install_so
say "built $so"
