# private_cluster.sh NAME - sourced by a benchmark that runs its own
# cluster (1 metadata + $n_ios storage daemons on loopback, no mount)
# rather than run-bench.sh's. Needs top and n_ios set. Sets tmp (a fresh
# directory named after NAME, removed at exit), var (the cluster's
# directory inside it) and local_ (deploy/tessera-local on that cluster:
# pass --port "$(free_ports $((n_ios + 1)))" to `up`), sources checks.sh
# for free_ports, and traps EXIT to stop the daemons and remove it all.
CHECKS_LOG=$(mktemp)
. "$top/tests/integ/checks.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-$1.XXXXXX")
var=$tmp/var
local_() { "$top/deploy/tessera-local" --dir "$var" --ios "$n_ios" --no-mount "$@"; }
private_cluster_cleanup() {
	local_ down >/dev/null 2>&1 || true
	rm -rf "$tmp" "$CHECKS_LOG"
}
trap private_cluster_cleanup EXIT
