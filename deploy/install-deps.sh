#!/usr/bin/env bash
# Install the Debian packages Tessera needs, only those missing; run
# apt-get update only when something is missing. Idempotent. (The MPI
# packages serve romio-adio/: build-romio.sh builds Open MPI's ROMIO
# component from Debian's source, fetched with apt-get source; MPICH,
# installed beside it (mpicc stays Open MPI's), serves build-mpich.sh.)
set -eu
pkgs="build-essential pkg-config libfabric-dev libfabric-bin libev-dev
libleveldb-dev libprotobuf-c-dev protobuf-c-compiler libcmocka-dev clang
libfuse3-dev fuse3 libsystemd-dev strace fio python3-matplotlib iproute2 munge
libmunge-dev libsodium-dev systemd nftables
openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools libnetcdf-mpi-dev
netcdf-bin libpnetcdf-dev dpkg-dev autoconf automake libtool patch slurm-wlm libjson-c-dev
mpich libmpich-dev libucx-dev libhwloc-dev"
# libfabric is built from Debian's source (deploy/build-libfabric.sh) with
# dpkg-dev's dpkg-source and dpkg-buildflags and the compiler above; its
# tcp, ofi_rxm and shm providers need nothing more. The verbs provider,
# built when TESSERA_LIBFABRIC_VERBS=1 (make FABRIC_VERBS=1), needs the
# RDMA headers.
if [ "${TESSERA_LIBFABRIC_VERBS:-0}" != 0 ]; then
	pkgs="$pkgs libibverbs-dev librdmacm-dev"
fi
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
fi
