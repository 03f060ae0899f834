#!/usr/bin/env bash
#SBATCH --job-name=tessera-scratch
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#
# A per-job Tessera scratch file system on the job's nodes: the first node
# runs the metadata daemon, every node a storage daemon on node-local disk
# ($TESSERA_LOCAL, default /tmp). The application runs with TESSERA_CONFIG
# pointing at the generated config; everything stops when the job ends.
#
#   TESSERA_BIN       directory holding tessera-mds / tessera-ios
#   TESSERA_PROVIDER  libfabric provider (default tcp;ofi_rxm; e.g. verbs;ofi_rxm)
set -euo pipefail
bin=${TESSERA_BIN:-$(dirname "$0")/../build/bin}
local_dir=${TESSERA_LOCAL:-/tmp}/tessera-$SLURM_JOB_ID
shared=${SLURM_SUBMIT_DIR}/tessera-$SLURM_JOB_ID
mkdir -p "$shared"
conf="$shared/tessera.conf"
mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
hosts="$shared/hosts"
{
	echo "${nodes[0]} mds 7400"
	i=0
	for n in "${nodes[@]}"; do echo "$n ios $((7401 + i))"; i=$((i + 1)); done
} >"$hosts"
"$(dirname "$0")/../deploy/tessera-genconfig" --provider "${TESSERA_PROVIDER:-tcp;ofi_rxm}" \
	--hosts "$hosts" >"$conf"
# One step per node, in the background, for the job's lifetime.
srun --nodes=1 --ntasks=1 -w "${nodes[0]}" "$bin/tessera-mds" -c "$conf" -d "$local_dir/mds" &
i=0
for n in "${nodes[@]}"; do
	srun --nodes=1 --ntasks=1 -w "$n" "$bin/tessera-ios" -c "$conf" -d "$local_dir/ios$i" -i "$i" &
	i=$((i + 1))
done
export TESSERA_CONFIG=$conf
for _ in $(seq 100); do "$bin/tessera" ping >/dev/null 2>&1 && break; sleep 0.2; done
"$bin/tessera" ping
# --- the application goes here, e.g.:
# srun ./my_app tessera:/output.h5
kill $(jobs -p) 2>/dev/null || true
wait
