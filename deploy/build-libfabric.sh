#!/usr/bin/env bash
# build-libfabric.sh [--prefix] - build the libfabric Tessera links: Debian's
# own source package of exactly the installed libfabric1's version (refused
# on a mismatch), or where the mirror serves no source files, upstream's
# release of the same upstream version kept in deploy/third_party (its
# SHA-256 checked; PINNED there says why), configured with only the
# providers Tessera uses (tcp,
# ofi_rxm over it, shm; verbs when TESSERA_LIBFABRIC_VERBS=1), and install
# it outside the checkout, in
#   $TESSERA_LIBFABRIC_CACHE (default /var/cache/tessera, else ~/.cache/tessera)
#   /libfabric-<version>-<providers>-<hash of this script>/{lib,include,bin}
# Tessera's programs and libtessera link it with an rpath to that lib/
# (the Makefile). Debian's build names libpsm_infinipath and libpsm2 as
# needed libraries, whose constructors spend 0.2 s calibrating a cycle
# counter before main, and its verbs provider reads /proc/kallsyms in the
# first fi_getinfo, 0.1 s more, whatever FI_PROVIDER says (docs/design.md,
# "Start-up"); this build has neither. Same version, same ABI
# (libfabric.so.1), so a process that has Debian's loaded already (an
# Open MPI component) keeps that one for both: the loader matches the
# soname.
#
# With --prefix it only prints the directory (the Makefile's variable);
# otherwise it builds unless that directory holds a finished build, and
# prints the directory last. Idempotent; one build at a time per cache.
# Exit status 3: no source could be had (apt-get source failed, and the
# installed version is not the one kept in deploy/third_party); the
# Makefile then builds on Debian's libfabric.so.1, saying so. A failed
# apt-get source is remembered for a day (src-libfabric/unavailable-* in
# the cache: remove it to try again at once), so each make does not ask
# the mirror again. Any other failure is 1.
#
#   TESSERA_LIBFABRIC_VERBS=1  add the verbs provider (needs libibverbs-dev
#                              and librdmacm-dev: make deps installs them
#                              when this is set)
#   TESSERA_KEEP               keep the build tree (the path is printed)
set -euo pipefail
say() { echo "build-libfabric: $*" >&2; }
die() { echo "build-libfabric: $*" >&2; exit 1; }
unavailable() { echo "build-libfabric: $*" >&2; exit 3; }

# The providers, and configure's switches for them: --enable-only turns
# every provider off (psm, psm2, psm3, verbs, efa, usnic, sockets, udp,
# rxd, mrail, net, opx, the hooks) except those named after it, each built
# into the library (no loadable modules to look for at start-up).
provs="tcp rxm shm"
[ "${TESSERA_LIBFABRIC_VERBS:-0}" = 0 ] || provs="$provs verbs"

pkgver=$(dpkg-query -W -f='${source:Version}' libfabric1 2>/dev/null) || pkgver=""
srcver=${pkgver#*:}          # no epoch in file names
hash=$(sha256sum "$0" | cut -c1-12)

cache=${TESSERA_LIBFABRIC_CACHE:-/var/cache/tessera}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=$HOME/.cache/tessera
	mkdir -p "$cache"
fi
dest=$cache/libfabric-${srcver:-none}-${provs// /-}-$hash
if [ "${1:-}" = --prefix ]; then
	echo "$dest"
	exit 0
fi
[ -n "$pkgver" ] || die "libfabric1 is not installed (run: make deps)"
for t in dpkg-source apt-get cc make; do
	command -v "$t" >/dev/null || die "$t is missing (run: make deps)"
done

exec 9>"$cache/libfabric.lock"
flock 9
if [ -f "$dest/lib/libfabric.so.1" ]; then
	echo "$dest"
	exit 0
fi

# ---------------------------------------------------------- the source
src=$cache/src-libfabric
lsrc=$src/libfabric-$srcver
upver=${srcver%-*}          # Debian's revision off: upstream's version
kept=$(cd "$(dirname "$0")" && pwd)/third_party
mkdir -p "$src"
gone=$src/unavailable-$srcver

# Debian's source package of the installed version into $lsrc: 1 when the
# mirror does not serve it (now, or within the last day).
debian_source() {
	[ -z "$(find "$gone" -mmin -1440 2>/dev/null)" ] || return 1
	if ! apt-cache showsrc libfabric 2>/dev/null | grep -qx "Version: $pkgver"; then
		bash "$(dirname "$0")/enable-deb-src.sh"
	fi
	rm -rf "$lsrc" "$src"/libfabric_*
	if ! ( cd "$src" && apt-get source --download-only -qq "libfabric=$pkgver" ); then
		echo "apt-get source libfabric=$pkgver failed" >"$gone"
		say "apt-get source libfabric=$pkgver failed (remembered for a day: $gone)"
		return 1
	fi
	rm -f "$gone"
	dsc=$src/libfabric_$srcver.dsc
	got=$(sed -n 's/^Version: //p' "$dsc" 2>/dev/null | head -1)
	[ "$got" = "$pkgver" ] ||
		die "libfabric source is '$got' but the installed libfabric1 is $pkgver: refusing to build"
	# (apt-get checked the files against the archive's signed index;
	# dpkg-source applies Debian's patches)
	dpkg-source -x "$dsc" "$lsrc" >"$src/dpkg-source.log" 2>&1 ||
		{ cat "$src/dpkg-source.log" >&2; die "dpkg-source -x $dsc failed"; }
	echo "Debian's source package $pkgver" >"$lsrc/.complete"
}

# Upstream's release of the installed upstream version, kept in
# deploy/third_party, into $lsrc: 1 when the one kept is another version.
upstream_source() {
	local tar=libfabric-$upver.tar.xz
	[ -f "$kept/$tar" ] || return 1
	( cd "$kept" && sha256sum --quiet -c "$tar.sha256" ) >&2 ||
		die "$kept/$tar does not match its $tar.sha256: refusing to build it"
	for t in autoreconf libtoolize; do
		command -v "$t" >/dev/null || die "$t is missing (run: make deps)"
	done
	rm -rf "$lsrc"
	mkdir -p "$lsrc"
	tar -xJf "$kept/$tar" -C "$lsrc" --strip-components=1 ||
		die "cannot unpack $kept/$tar"
	echo "upstream's release $upver (deploy/third_party/$tar; Debian's source not served here)" \
		>"$lsrc/.complete"
}

if [ ! -f "$lsrc/.complete" ] && ! debian_source && ! upstream_source; then
	unavailable "libfabric $pkgver's source cannot be had here: apt-get source failed ($(date -r "$gone" -u '+%F %H:%M UTC')) and deploy/third_party keeps no libfabric-$upver.tar.xz"
fi

# ------------------------------------------------------------ the build
work=$(mktemp -d "$cache/libfabric-build.XXXXXX")
[ -n "${TESSERA_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
log=$work/build.log
say "building libfabric $pkgver with $provs in $work"
start=$(date +%s)
cp -a "$lsrc" "$work/src"
fail() {
	tail -40 "$log" >&2
	die "$1 failed (log: $log; TESSERA_KEEP=1 keeps it)"
}
# Debian's tarball carries the generated configure; upstream's git archive
# does not, and is regenerated (autotools).
if [ ! -x "$work/src/configure" ]; then
	( cd "$work/src" && ./autogen.sh ) >>"$log" 2>&1 || fail "autogen.sh"
fi
enables=""
for p in $provs; do enables="$enables --enable-$p=yes"; done
# Debian's compiler and linker flags (hardening, -O2 -g), as its own build.
( cd "$work/src" && ./configure --prefix="$dest" --enable-only $enables \
	--disable-static --disable-dependency-tracking --disable-silent-rules \
	CFLAGS="$(dpkg-buildflags --get CFLAGS)" CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS)" \
	LDFLAGS="$(dpkg-buildflags --get LDFLAGS)" ) >>"$log" 2>&1 || fail "configure"
# configure says which providers it will build: exactly ours.
built=$(sed -n 's/^\*\*\* Built-in providers:[[:space:]]*//p' "$log" | tr ' ' '\n' | grep . | sort | tr '\n' ' ')
want=$(echo "$provs" | tr ' ' '\n' | sort | tr '\n' ' ')
[ "$built" = "$want" ] || fail "configure chose providers '$built', not '$want'"
( cd "$work/src" && make -j"${TESSERA_JOBS:-2}" ) >>"$log" 2>&1 || fail "make"
( cd "$work/src" && make install DESTDIR="$work/stage" ) >>"$log" 2>&1 || fail "make install"
rm -f "$work/stage$dest"/lib/*.la
echo "libfabric $pkgver from $(cat "$lsrc/.complete"), providers: $provs; built in $(($(date +%s) - start)) s on $(date -u +%F)" \
	>"$work/stage$dest/BUILD-INFO"
cp "$log" "$work/stage$dest/build.log"
rm -rf "$dest.tmp" "$dest"
mv "$work/stage$dest" "$dest.tmp"
mv "$dest.tmp" "$dest"
# Keep the three newest builds (an older script's, another provider set).
ls -dt "$cache"/libfabric-*-*/ 2>/dev/null | grep -v -e '-build\.' -e '/src-' | tail -n +4 | xargs -r rm -rf
say "built $dest in $(($(date +%s) - start)) s"
echo "$dest"
