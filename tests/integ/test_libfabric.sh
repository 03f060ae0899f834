#!/usr/bin/env bash
# Tessera's libfabric (deploy/build-libfabric.sh): built once into the
# cache outside the checkout with only the providers Tessera uses, and the
# one every built program, libtessera and the ROMIO component resolve
# (their runpath, what the loader finds: readelf and ldd), never Debian's
# libfabric.so.1 and its PSM libraries; the MPI environment script gives
# the ranks that same one (or, asked, Debian's for both). Needs a build
# (make); prints CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-libfabric.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
trap 'rm -rf "$tmp"' EXIT

prefix=$(bash "$top/deploy/build-libfabric.sh" --prefix)
lib=$prefix/lib
[ -f "$lib/libfabric.so.1" ] || skip_all libfabric "$lib/libfabric.so.1 is not built (run make)"
[ -x "$B/bin/tessera" ] || skip_all libfabric "$B/bin/tessera is not built (run make)"
# configure's names of our providers, fi_info's, and the libraries only
# providers we do not build would need
want="rxm shm tcp" listed=" ofi_hook_noop ofi_rxm shm tcp " foreign='psm|infinipath|ibverbs|rdmacm'
if [ "${TESSERA_LIBFABRIC_VERBS:-0}" != 0 ]; then
	want="rxm shm tcp verbs" listed=" ofi_hook_noop ofi_rxm shm tcp verbs " foreign='psm|infinipath'
fi

cached_outside_the_checkout() {
	local built p
	case $prefix in "$top"/*) echo "$prefix is inside the checkout"; return 1 ;; esac
	cat "$prefix/BUILD-INFO"
	# configure built exactly our providers into the library
	built=$(sed -n 's/^\*\*\* Built-in providers:[[:space:]]*//p' "$prefix/build.log" |
		tr ' ' '\n' | grep . | sort | tr '\n' ' ')
	echo "built in: $built; DSO providers: $(grep '^\*\*\* DSO providers' "$prefix/build.log")"
	[ "$built" = "$want " ]
	grep -q '^\*\*\* DSO providers:[[:space:]]*$' "$prefix/build.log"
	# and its fi_info starts no other (verbs is listed only where a
	# device is; the no-op hook is in every build)
	for p in $("$prefix/bin/fi_info" -l | sed -n 's/^\([a-z_0-9]*\):$/\1/p'); do
		case $listed in *" $p "*) ;; *) echo "fi_info lists $p"; return 1 ;; esac
	done
}
check "cached_outside_the_checkout_with_only_our_providers" cached_outside_the_checkout

no_psm() {
	readelf -d "$lib/libfabric.so.1" | grep NEEDED
	! readelf -d "$lib/libfabric.so.1" | grep -E "NEEDED.*($foreign)"
}
check "it_needs_no_psm_library" no_psm

# Each ELF file given resolves libfabric.so.1 to the cached build.
resolves_to_cache() {
	local f rp got
	for f in "$@"; do
		[ -e "$f" ] || continue
		rp=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
		got=$(env -u LD_LIBRARY_PATH ldd "$f" | awk '$1 == "libfabric.so.1" { print $3 }')
		echo "$f: runpath $rp, libfabric.so.1 => $got"
		[ "$rp" = "$lib" ] && [ "$got" = "$lib/libfabric.so.1" ]
		if env -u LD_LIBRARY_PATH ldd "$f" | grep -E 'libpsm|infinipath'; then
			echo "$f needs a PSM library"
			return 1
		fi
	done
}
check "programs_link_it" resolves_to_cache "$B"/bin/tessera "$B"/bin/tessera-mds \
	"$B"/bin/tessera-ios "$B"/bin/tessera-fuse "$B"/bin/tessera-bench-basic
check "libtessera_links_it" resolves_to_cache "$B"/lib/libtessera.so
check "integration_tests_link_it" resolves_to_cache "$B"/tests/integ/test_cluster
if [ -f "$B/lib/openmpi/mca_io_romio321.so" ]; then
	check "romio_component_links_it" resolves_to_cache "$B/lib/openmpi/mca_io_romio321.so"
else
	skip_check "romio_component_links_it" "no ROMIO component in $B (no mpicc)"
fi

# MPICH's libmpi (make mpich) links libtessera.so dynamically and no
# libfabric of its own (Debian builds it ch4:ucx): its processes get ours
# through libtessera's runpath.
mpich_gets_it() {
	local got
	got=$(LD_LIBRARY_PATH=$B/lib ldd "$B/lib/mpich/libmpich.so.12" |
		awk '$1 == "libfabric.so.1" { print $3 }')
	echo "libmpich.so.12: libfabric.so.1 => $got"
	[ "$got" = "$lib/libfabric.so.1" ]
}
if [ -f "$B/lib/mpich/libmpich.so.12" ]; then
	check "mpich_processes_get_it_through_libtessera" mpich_gets_it
else
	skip_check "mpich_processes_get_it_through_libtessera" "no $B/lib/mpich (make mpich)"
fi

# A second build is a look-up: same directory, nothing rebuilt.
idempotent() {
	local before after out
	before=$(stat -c %Y "$lib/libfabric.so.1.20.0" 2>/dev/null || stat -L -c %Y "$lib/libfabric.so.1")
	out=$(timeout 20 bash "$top/deploy/build-libfabric.sh")
	after=$(stat -c %Y "$lib/libfabric.so.1.20.0" 2>/dev/null || stat -L -c %Y "$lib/libfabric.so.1")
	echo "printed $out; mtime $before then $after"
	[ "$out" = "$prefix" ] && [ "$before" = "$after" ]
}
check "a_second_build_is_a_lookup" idempotent

# The build script SCRIPT run on cache CACHE refuses, saying WHY (a
# pattern), and caches no build.
refused() { # SCRIPT CACHE WHY
	local out
	if out=$(TESSERA_LIBFABRIC_CACHE=$2 bash "$1" 2>&1); then
		echo "built: $out"
		return 1
	fi
	echo "$out"
	grep -q "$3" <<<"$out"
	! ls -d "$2"/libfabric-*-*/lib 2>/dev/null
}

# configure must build exactly our providers: a source whose configure
# would build others (say Debian's PSM ones) is refused, not cached. A
# stand-in source in a cache of its own plays that configure.
refuses_other_providers() {
	local cache=$tmp/cache ver src
	ver=$(dpkg-query -W -f='${source:Version}' libfabric1)
	src=$cache/src-libfabric/libfabric-${ver#*:}
	mkdir -p "$src"
	printf '#!/bin/sh\necho "*** Built-in providers:\tpsm2 tcp rxm shm"\n' >"$src/configure"
	chmod +x "$src/configure"
	touch "$src/.complete"
	refused "$top/deploy/build-libfabric.sh" "$cache" "configure chose providers"
}
check "refuses_a_build_with_other_providers" refuses_other_providers

# Where the mirror serves no source (apt-get source fails, as on this
# project's machines), the release kept in deploy/third_party is built:
# it must match its checksum, and a damaged copy is refused, not built. A
# stand-in cache remembers Debian's source as not served.
kept_source() {
	local cache=$tmp/kcache d=$tmp/kdeploy tar
	tar=libfabric-$kept_ver.tar.xz
	( cd "$top/deploy/third_party" && sha256sum -c "$tar.sha256" ) || return 1
	mkdir -p "$d/third_party" "$cache/src-libfabric"
	cp "$top/deploy/build-libfabric.sh" "$d/"
	cp "$top/deploy/third_party/$tar.sha256" "$d/third_party/"
	head -c 100000 "$top/deploy/third_party/$tar" >"$d/third_party/$tar"
	echo "stand-in" >"$cache/src-libfabric/unavailable-$installed"
	refused "$d/build-libfabric.sh" "$cache" "does not match its $tar.sha256"
}
installed=$(dpkg-query -W -f='${source:Version}' libfabric1)
installed=${installed#*:}
kept_ver=${installed%-*}
if [ -f "$top/deploy/third_party/libfabric-$kept_ver.tar.xz" ]; then
	check "kept_source_checked_before_it_is_built" kept_source
else
	skip_check "kept_source_checked_before_it_is_built" \
		"deploy/third_party keeps no libfabric-$kept_ver.tar.xz (the installed libfabric1 is $installed)"
fi

# The MPI environment script: Tessera's libfabric in every rank, Open
# MPI's components that would load PSM or want other providers left out;
# or, asked, Debian's for everything.
mpi_env() { # MODE: print what the script exports for it
	(
		unset OMPI_MCA_mtl OMPI_MCA_btl OMPI_MCA_mca_base_env_list LD_PRELOAD
		export TESSERA_MPI_LIBFABRIC=$1
		. "$top/romio-adio/tessera-mpi-env.sh" "$B"
		echo "mtl=${OMPI_MCA_mtl:-} btl=${OMPI_MCA_btl:-} env_list=${OMPI_MCA_mca_base_env_list:-}"
	)
}
mpi_env_default() {
	local e
	e=$(mpi_env tessera)
	echo "$e"
	[ "$e" = "mtl=^ofi,psm,psm2 btl=^ofi env_list=LD_PRELOAD=$lib/libfabric.so.1" ]
	e=$(mpi_env system)
	echo "$e"
	[ "$e" = "mtl= btl= env_list=LD_PRELOAD=libfabric.so.1" ]
	# a user's own choice of components stays
	e=$(OMPI_MCA_mtl=ofi; export OMPI_MCA_mtl; . "$top/romio-adio/tessera-mpi-env.sh" "$B"; echo "$OMPI_MCA_mtl")
	[ "$e" = ofi ]
}
one_libfabric_per_rank() {
	local run=(mpirun -np 2 --oversubscribe) maps
	[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)
	maps=$(
		unset OMPI_MCA_mtl OMPI_MCA_btl OMPI_MCA_mca_base_env_list
		. "$top/romio-adio/tessera-mpi-env.sh" "$B"
		export OMPI_MCA_btl=self,vader
		timeout 60 "${run[@]}" grep -h -o '/[^ ]*libfabric\.so[.0-9]*' /proc/self/maps | sort | uniq -c
	)
	echo "$maps"
	[ "$(wc -l <<<"$maps")" = 1 ] && grep -q " $lib/libfabric.so" <<<"$maps"
}
if [ -f "$B/lib/openmpi/mca_io_romio321.so" ] && command -v mpirun >/dev/null; then
	check "mpi_env_chooses_tessera_libfabric" mpi_env_default
	check "mpi_ranks_map_one_libfabric_ours" one_libfabric_per_rank
else
	skip_check "mpi_env_chooses_tessera_libfabric" "no ROMIO component or mpirun"
	skip_check "mpi_ranks_map_one_libfabric_ours" "no ROMIO component or mpirun"
fi
checks_done
