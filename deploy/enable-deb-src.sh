#!/usr/bin/env bash
# enable-deb-src.sh - let apt-get source fetch Debian's sources for the
# suites already configured for binaries: adds deb-src entries once
# (/etc/apt/sources.list.d/tessera-deb-src.{sources,list}) and updates the
# index. Used by romio-adio/build-romio.sh (Open MPI's source) and
# deploy/build-libfabric.sh (libfabric's). Idempotent.
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
list=/etc/apt/sources.list.d/tessera-deb-src.sources
if [ ! -f "$list" ]; then
	echo "enable-deb-src: adding $list (deb-src for the configured suites)" >&2
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && [ "$f" != "$list" ] || continue
		grep -q '^Types:.*\bdeb\b' "$f" || continue
		sed -e 's/^Types:.*/Types: deb-src/' "$f"
		echo
	done | $sudo tee "$list" >/dev/null
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list |
			$sudo tee /etc/apt/sources.list.d/tessera-deb-src.list >/dev/null
	fi
fi
$sudo apt-get update -qq
