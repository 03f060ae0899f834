#!/usr/bin/env bash
# make run: bring up the local file system (1 metadata + 4 storage daemons
# on 127.0.0.1, state under ./var) and show it working.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export TESSERA_CONFIG="$top/var/tessera.conf"
t="$top/build/bin/tessera"

echo "== tessera-local up"
deploy/tessera-local up
echo
echo "== tessera ping"
"$t" ping
echo
echo "== copy 64 MiB in and out, compare checksums"
sample="$top/var/sample.bin"
head -c $((64 << 20)) /dev/urandom >"$sample"
"$t" mkdir -p /demo
"$t" cp "$sample" tessera:/demo/sample.bin
"$t" cp tessera:/demo/sample.bin "$sample.back"
a=$(sha256sum <"$sample" | cut -d' ' -f1)
b=$(sha256sum <"$sample.back" | cut -d' ' -f1)
echo "sha256 in:  $a"
echo "sha256 out: $b"
[ "$a" = "$b" ] || { echo "checksums differ!" >&2; exit 1; }
rm -f "$sample" "$sample.back"
echo
echo "== tessera ls -l /demo; tessera stat /demo/sample.bin; tessera df"
"$t" ls -l /demo
"$t" stat /demo/sample.bin
"$t" df
if [ -x build/bin/tessera-fuse ] && mountpoint -q "$top/mnt" 2>/dev/null; then
	echo
	echo "== the FUSE mount at ./mnt: ls, cp, df"
	ls -l "$top/mnt/demo"
	cp README.md "$top/mnt/demo/README.md"
	cmp README.md "$top/mnt/demo/README.md" && echo "cp README.md mnt/demo/: identical"
	df -h "$top/mnt"
fi
cat <<EOF2

Tessera is up: config $TESSERA_CONFIG, logs in var/log/.
  export TESSERA_CONFIG=$TESSERA_CONFIG
  build/bin/tessera ls -l /            # browse
  build/bin/tessera cp FILE tessera:/x # copy in (and back out: swap them)
  make down                            # stop it (data stays in var/)
EOF2
