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
# Shared mounts (tessera-local's) use allow_other: let users ask for it.
bash "$(dirname "$0")/fuse-allow-other.sh"
