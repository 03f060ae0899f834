#!/usr/bin/env bash
# netns-rank.sh DIR PROG [ARGS...] - mpirun's program on a simulated network
# (tests/study/netns.sh): starts PROG in the network namespace of node
# RANK % N, N being the nodes DIR/nodes lists, RANK this process's rank in
# MPI_COMM_WORLD (Open MPI's OMPI_COMM_WORLD_RANK), so ranks and daemons
# share nodes as on a cluster. The ranks' own traffic must then use TCP
# on the bridge's subnet (DIR/subnet), which the study sets: Open MPI's
# btl_tcp_if_include and PMIx's ptl_tcp_if_include with
# ptl_tcp_remote_connections (mpirun's PMIx server in the root namespace
# is reached at the bridge's address). Needs root (ip netns exec).
set -euo pipefail
dir=${1:?usage: netns-rank.sh DIR PROG [ARGS...]}
shift
mapfile -t nodes <"$dir/nodes"
[ "${#nodes[@]}" -gt 0 ] || { echo "netns-rank.sh: $dir/nodes lists no node" >&2; exit 1; }
rank=${OMPI_COMM_WORLD_RANK:?netns-rank.sh: not started by Open MPI mpirun (no OMPI_COMM_WORLD_RANK)}
exec ip netns exec "${nodes[rank % ${#nodes[@]}]}" "$@"
