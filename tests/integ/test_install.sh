#!/usr/bin/env bash
# make install, and a program built against what it installed.
#
# Installs into a temporary DESTDIR with PREFIX=/usr/local, checks what is
# there (programs, libtessera shared with its soname links and static,
# headers, tessera.pc, man pages, and the ROMIO component when the build
# has one), starts a file system with the installed tessera-local and
# daemons, and builds tests/integ/install_client.c with the installed
# tessera.pc (through PKG_CONFIG_SYSROOT_DIR) and runs it with
# LD_LIBRARY_PATH into the DESTDIR: it writes, reads and checks a file. The
# same program is also linked with the static library, and built with the
# build tree's tessera.pc as docs/user-guide.md shows. With the ROMIO component,
# the installed tessera-mpirun runs an MPI program on that file system.
# Also: install builds nothing but what it installs; the shared library
# (built and installed) exports only the installed headers' calls; the
# version is one (tessera.h, the Makefile, tessera.pc, the soname, the
# daemons, tessera_version()); `pkg-config --static` links; the example of
# libtessera(3), extracted from the installed page, builds both ways and
# runs; and make uninstall leaves no file behind.
# Prints CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-install.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
root=$tmp/root
prefix=/usr/local
inst=$root$prefix
cleanup() {
	[ ! -x "$inst/bin/tessera-local" ] ||
		"$inst/bin/tessera-local" --dir "$tmp/var" down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

[ -x "$build/bin/tessera-mds" ] || skip_all install "$build is not built (run make)"
command -v pkg-config >/dev/null || skip_all install "pkg-config is not installed"

# The ROMIO component is installed when this build has one; without it,
# a make that leaves MPI out (MPICC=) does not try to build it.
mpi=(MPICC=)
[ ! -f "$build/lib/openmpi/mca_io_romio321.so" ] || mpi=()

# A dry run into an empty build directory: install would build the
# programs and libraries, and no test or benchmark.
test_install_builds_only_what_it_installs() {
	local plan
	plan=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" --no-print-directory -n \
		B="$tmp/fresh" "${mpi[@]}" DESTDIR="$root" PREFIX="$prefix" install) || return 1
	grep -q 'libtessera.so' <<<"$plan" || { echo "the plan does not build libtessera"; return 1; }
	if grep -E -- "-o $tmp/fresh/(tests|romio-adio/(tests|bench))/" <<<"$plan"; then
		echo "install would build the above"
		return 1
	fi
}

test_make_install() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" --no-print-directory \
		B="$build" "${mpi[@]}" DESTDIR="$root" PREFIX="$prefix" install
}

test_installed_files() {
	local f so
	for f in bin/tessera bin/tessera-mds bin/tessera-ios bin/tessera-local \
		 bin/tessera-genconfig include/tessera/tessera.h include/tessera/tdl.h lib/libtessera.a \
		 lib/pkgconfig/tessera.pc share/man/man1/tessera.1 share/man/man8/tessera-mds.8 \
		 share/man/man8/tessera-ios.8 share/man/man8/tessera-local.8 \
		 share/man/man8/tessera-genconfig.8 share/man/man5/tessera.conf.5 \
		 share/man/man3/libtessera.3; do
		[ -f "$inst/$f" ] || { echo "missing: $prefix/$f"; return 1; }
	done
	if [ -x "$build/bin/tessera-fuse" ]; then
		[ -x "$inst/bin/tessera-fuse" ] && [ -f "$inst/share/man/man1/tessera-fuse.1" ]
	fi
	# The library's names: the file, its soname as a link, the link-time name.
	so=$(readelf -d "$inst/lib/libtessera.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	echo "soname: $so"
	[ -n "$so" ] && [ -L "$inst/lib/$so" ] && [ -L "$inst/lib/libtessera.so" ]
	[ "$(readlink "$inst/lib/libtessera.so")" = "$so" ]
	[ -f "$inst/lib/$(readlink "$inst/lib/$so")" ]
	# The pkg-config file names the installed places, not the DESTDIR.
	grep -qx "prefix=$prefix" "$inst/lib/pkgconfig/tessera.pc"
	if [ ${#mpi[@]} -eq 0 ]; then
		[ -f "$inst/lib/tessera/openmpi/mca_io_romio321.so" ]
		[ -x "$inst/bin/tessera-mpirun" ]
		[ -f "$inst/share/tessera/tessera-mpi-env.sh" ]
	else
		echo "(no ROMIO component in this build: not installed)"
	fi
}

test_man_pages() {
	local page out
	command -v man >/dev/null || { echo "man is not installed: pages not rendered"; return 0; }
	for page in "$inst"/share/man/man[1358]/*; do
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -z "$out" ] || { echo "$page:"; echo "$out"; return 1; }
		LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^NAME'
	done
}

# The calls the installed headers declare: the only names the shared
# library may export (its version node aside).
public_api() {
	sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(\(tessera\|tdl\)_[a-z0-9_]*\)(.*/\1/p' \
		"$inst/include/tessera/tessera.h" "$inst/include/tessera/tdl.h" | sort -u
}

exports_only_api() {
	local lib=$1 extra
	nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' |
		sort -u >"$tmp/exported"
	public_api >"$tmp/api"
	echo "$lib: $(wc -l <"$tmp/exported") exported, $(wc -l <"$tmp/api") declared"
	extra=$(comm -23 "$tmp/exported" "$tmp/api")
	[ -z "$extra" ] || { echo "exported, not in the installed headers:"; echo "$extra"; return 1; }
	# Every declared call is there (a header that lost its definition).
	extra=$(comm -13 "$tmp/exported" "$tmp/api")
	[ -z "$extra" ] || { echo "declared, not exported:"; echo "$extra"; return 1; }
}

test_exports() {
	exports_only_api "$build/lib/libtessera.so" && exports_only_api "$inst/lib/libtessera.so"
}

# tessera.h is the one definition: its macros agree with each other and
# with what the build made of them (file name, soname, tessera.pc) and
# with the daemons' version string.
test_version() {
	local h=$inst/include/tessera/tessera.h major minor patch v
	major=$(sed -n 's/^#define TESSERA_VERSION_MAJOR \([0-9]*\)$/\1/p' "$h")
	minor=$(sed -n 's/^#define TESSERA_VERSION_MINOR \([0-9]*\)$/\1/p' "$h")
	patch=$(sed -n 's/^#define TESSERA_VERSION_PATCH \([0-9]*\)$/\1/p' "$h")
	v=$(sed -n 's/^#define TESSERA_VERSION "\(.*\)"$/\1/p' "$h")
	echo "tessera.h: $major.$minor.$patch, TESSERA_VERSION $v"
	[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] && [ "$v" = "$major.$minor.$patch" ] ||
		return 1
	[ "$(PKG_CONFIG_PATH=$inst/lib/pkgconfig pkg-config --modversion tessera)" = "$v" ]
	[ -f "$inst/lib/libtessera.so.$v" ]
	grep -qx "#define TP_VERSION_STRING \"$v\"" "$top/proto/tproto.h" ||
		{ echo "proto/tproto.h's TP_VERSION_STRING is not $v"; return 1; }
}

test_installed_cluster_up() {
	"$inst/bin/tessera-local" --dir "$tmp/var" --ios 3 --port "$(free_ports 3)" --no-mount up
	TESSERA_CONFIG=$tmp/var/tessera.conf "$inst/bin/tessera" ping
}

test_program_installed_pc() {
	local flags
	flags=$(PKG_CONFIG_PATH=$inst/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
		pkg-config --cflags --libs tessera)
	echo "pkg-config --cflags --libs tessera: $flags"
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror -o "$tmp/client" \
		"$top/tests/integ/install_client.c" $flags
	# It finds libtessera by its soname in the DESTDIR, and nowhere else.
	LD_LIBRARY_PATH=$inst/lib ldd "$tmp/client" | tee "$tmp/ldd"
	grep -q "libtessera.so.* => $inst/lib/" "$tmp/ldd"
	LD_LIBRARY_PATH=$inst/lib "$tmp/client" "$tmp/var/tessera.conf" /installed.bin
	TESSERA_CONFIG=$tmp/var/tessera.conf "$inst/bin/tessera" stat /installed.bin
}

# The static library carries every part: `pkg-config --static` names
# what it needs, and the program needs no libtessera.so. (-l:libtessera.a:
# beside libtessera.so, -ltessera would pick the shared one.)
static_flags() {
	local flags
	flags=$(PKG_CONFIG_PATH=$inst/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
		pkg-config --static --cflags --libs tessera) || return 1
	echo "${flags/-ltessera/-l:libtessera.a}"
}

test_program_static() {
	local flags
	flags=$(static_flags) || return 1
	echo "static: $flags"
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror -o "$tmp/client-static" \
		"$top/tests/integ/install_client.c" $flags
	if ldd "$tmp/client-static" | grep libtessera; then return 1; fi
	"$tmp/client-static" "$tmp/var/tessera.conf" /static.bin
}

test_program_build_tree_pc() {
	local flags
	flags=$(pkg-config --cflags --libs "$build/lib/pkgconfig/tessera.pc")
	echo "pkg-config --cflags --libs $build/lib/pkgconfig/tessera.pc: $flags"
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror -o "$tmp/client-tree" \
		"$top/tests/integ/install_client.c" $flags
	LD_LIBRARY_PATH=$build/lib "$tmp/client-tree" "$tmp/var/tessera.conf" /tree.bin
}

# libtessera(3)'s example, from the installed page, built against the
# installed library both ways, run on the file system: its output is the
# page's.
test_man_example() {
	local flags out prog v
	sed -n '/^\.\\" BEGIN EXAMPLE/,/^\.\\" END EXAMPLE/{/^\.\(\\"\|EX\|EE\)/d;s/^\\&//;s/\\e/\\/g;p}' \
		"$inst/share/man/man3/libtessera.3" >"$tmp/tessera-example.c"
	grep -q '^int main' "$tmp/tessera-example.c" || { echo "no example in libtessera.3"; return 1; }
	flags=$(PKG_CONFIG_PATH=$inst/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
		pkg-config --cflags --libs tessera)
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror -o "$tmp/example" "$tmp/tessera-example.c" $flags
	flags=$(static_flags) || return 1
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror -o "$tmp/example-static" "$tmp/tessera-example.c" $flags
	if ldd "$tmp/example-static" | grep libtessera; then return 1; fi
	v=$(sed -n 's/^#define TESSERA_VERSION "\(.*\)"$/\1/p' "$inst/include/tessera/tessera.h")
	for prog in example example-static; do
		out=$(LD_LIBRARY_PATH=$inst/lib TESSERA_CONFIG=$tmp/var/tessera.conf \
			"$tmp/$prog" "/$prog.txt") || { echo "$out"; return 1; }
		echo "$out"
		[ "$(sed -n 1p <<<"$out")" = "libtessera $v (built with $v)" ]
		grep -qx 'read: hello, tessera' <<<"$out"
		grep -qx 'column: AAAAAAAABBBBBBBBCCCCCCCCDDDDDDDD' <<<"$out"
		grep -qx 'size: 119' <<<"$out"
		grep -q '^open /no/such/file: ENOENT: ' <<<"$out"
	done
	# The page shows the same output.
	grep -qx 'size: 119' "$inst/share/man/man3/libtessera.3"
}

# Stops the file system (its programs are about to go), uninstalls, and
# finds no file or link left in the DESTDIR.
test_make_uninstall() {
	local left
	"$inst/bin/tessera-local" --dir "$tmp/var" down >/dev/null 2>&1
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" --no-print-directory \
		B="$build" "${mpi[@]}" DESTDIR="$root" PREFIX="$prefix" uninstall || return 1
	left=$(find "$root" ! -type d)
	[ -z "$left" ] || { echo "left after uninstall:"; echo "$left"; return 1; }
}

# The installed wrapper puts the installed component first: the driver's
# trace shows it served the tessera: names of 2 ranks.
test_installed_mpirun() {
	local conf=$tmp/var/tessera.conf
	if [ ${#mpi[@]} -ne 0 ] || ! command -v mpirun >/dev/null ||
	   [ ! -x "$build/romio-adio/tests/mpi_basic" ]; then
		echo "no ROMIO component, mpirun or mpi_basic in this build: not run"
		return 0
	fi
	TESSERA_CONFIG=$conf "$inst/bin/tessera" mkdir /mpirun
	TESSERA_CONFIG=$conf TESSERA_ROMIO_TRACE=$tmp/trace OMPI_MCA_btl=self,vader \
		timeout -k 5 120 "$inst/bin/tessera-mpirun" --oversubscribe -np 2 \
		"$build/romio-adio/tests/mpi_basic" tessera:/mpirun tessera:/mpirun
	grep '^ad_tessera close rank=1 file=/mpirun/' "$tmp/trace"
}

check install_builds_only_what_it_installs test_install_builds_only_what_it_installs
check make_install test_make_install
check installed_files test_installed_files
check installed_man_pages test_man_pages
check exports_only_public_api test_exports
check one_version test_version
check installed_cluster_up test_installed_cluster_up
check program_with_installed_pc test_program_installed_pc
check program_with_static_library test_program_static
check program_with_build_tree_pc test_program_build_tree_pc
check man_page_example test_man_example
check installed_tessera_mpirun test_installed_mpirun
check make_uninstall test_make_uninstall
checks_done
