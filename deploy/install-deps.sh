#!/usr/bin/env bash
# Install the Debian packages Tessera needs, only those missing; run
# apt-get update only when something is missing. Idempotent.
set -eu
pkgs="build-essential pkg-config libfabric-dev libfabric-bin libev-dev
libleveldb-dev libprotobuf-c-dev protobuf-c-compiler libcmocka-dev clang
libfuse3-dev fuse3 fio"
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
