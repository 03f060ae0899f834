#!/usr/bin/env bash
# fuse-allow-other.sh [FUSE_CONF] - let users other than root mount with
# allow_other, which a shared Tessera mount needs so that every user, not
# only the one who mounted it, can use it as scratch (as /tmp): add the
# line `user_allow_other` to /etc/fuse.conf (or FUSE_CONF) unless it is
# there. Idempotent: a second run changes nothing. Without the right to
# write the file (not root), it says what to add and exits 0: the mount
# still works for root, and for its owner alone otherwise.
set -eu
conf=${1:-/etc/fuse.conf}
if [ -f "$conf" ] && grep -qx '[[:space:]]*user_allow_other[[:space:]]*' "$conf"; then
	exit 0
fi
if [ -e "$conf" ] && [ ! -w "$conf" ] || [ ! -e "$conf" ] && [ ! -w "$(dirname "$conf")" ]; then
	echo "fuse: cannot write $conf; as root, add the line 'user_allow_other' to it so that" \
		"users' mounts may use allow_other (tessera-local does)" >&2
	exit 0
fi
# a new line of its own, after a last line without its newline if any
if [ -s "$conf" ] && [ -n "$(tail -c 1 "$conf")" ]; then echo >>"$conf"; fi
printf '# added by Tessera (deploy/fuse-allow-other.sh): shared mounts use allow_other\nuser_allow_other\n' >>"$conf"
echo "fuse: enabled user_allow_other in $conf"
