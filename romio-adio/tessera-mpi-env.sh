# tessera-mpi-env.sh - source this to run MPI programs over Tessera:
#
#   . romio-adio/tessera-mpi-env.sh [BUILD_DIR]
#   mpirun -np 4 ./app tessera:/mnt/tessera/out.h5
#
# Puts the ROMIO component with the Tessera driver (BUILD_DIR/lib/openmpi,
# default build/ beside this file; once installed by make install, this
# file is in PREFIX/share/tessera/ and the component in
# PREFIX/lib/tessera/openmpi/) ahead of Open MPI's own components: Open MPI
# keeps the first component of a name it finds, so ours must come first. This sets only the component path: setting mca_base_param_files
# instead would replace Debian's default parameter file.
# TESSERA_CONFIG must name the file system's config (tessera-local writes
# var/tessera.conf).
_tessera_here=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
_tessera_inst=$_tessera_here/../../lib/tessera/openmpi
if [ -z "${1:-}" ] && [ -f "$_tessera_inst/mca_io_romio321.so" ]; then
	_tessera_comp=$_tessera_inst
else
	_tessera_comp=${1:-${TESSERA_BUILD:-$_tessera_here/../build}}/lib/openmpi
fi
_tessera_sysdir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n "s/^path:pkglibdir://p")
[ -d "$_tessera_sysdir" ] || _tessera_sysdir=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$(cd "$_tessera_comp" 2>/dev/null && pwd || echo "$_tessera_comp"):$_tessera_sysdir"
unset _tessera_here _tessera_inst _tessera_comp _tessera_sysdir
# Tessera's processes use 4 KiB rxm eager buffers (docs/design.md, "Start-up") and
# set this themselves before libfabric starts; but Open MPI may start
# libfabric in MPI_Init, before the ROMIO driver connects, and rxm refuses
# connections between ends of different sizes. So MPI jobs get it from
# the environment.
export FI_OFI_RXM_BUFFER_SIZE=${FI_OFI_RXM_BUFFER_SIZE:-4096}
# Likewise: a client lends its caller's buffers to rxm only because
# forgetting a stuck daemon makes rxm close the connection and let go of
# them (docs/design.md, "Bulk data path"), which this switch turns on.
export FI_AV_REMOVE_CLEANUP=${FI_AV_REMOVE_CLEANUP:-1}
# One libfabric per rank. The loader keeps the first libfabric.so.1 a
# process loads and gives it to everything that needs that soname, so
# whichever loads first serves Open MPI's components and the driver both.
# TESSERA_MPI_LIBFABRIC says which (docs/admin.md, "libfabric"):
#   tessera (the default): Tessera's own build, which the component links
#     by runpath (tcp, ofi_rxm, shm: no PSM libraries, no verbs start-up).
#     Open MPI's components that need what it lacks are left out: the psm
#     and psm2 mtls (their libraries' constructors spend 0.2 s calibrating
#     a cycle counter, docs/design.md "Start-up"), the ofi mtl (it refuses
#     tcp and shm anyway) and the ofi btl. A user's own OMPI_MCA_mtl or
#     OMPI_MCA_btl is kept as it is.
#   system: Debian's libfabric.so.1, with Open MPI's components as they
#     come (a site whose MPI runs over Omni-Path or TrueScale through
#     them); the driver then uses Debian's too, start-up and all.
# The ranks load it from their start (TESSERA_MPI_PRELOAD=0 leaves them as
# Open MPI has them): through Open MPI's env list, so only the ranks get
# it (not this shell, nor mpirun); a user's own LD_PRELOAD is kept after
# it.
_tessera_fabric=libfabric.so.1
if [ "${TESSERA_MPI_LIBFABRIC:-tessera}" = tessera ]; then
	_tessera_rp=$(objdump -p "${OMPI_MCA_mca_base_component_path%%:*}/mca_io_romio321.so" 2>/dev/null |
		awk '$1 == "RUNPATH" { print $2 }')
	[ ! -f "${_tessera_rp%%:*}/libfabric.so.1" ] || _tessera_fabric=${_tessera_rp%%:*}/libfabric.so.1
	export OMPI_MCA_mtl=${OMPI_MCA_mtl:-^ofi,psm,psm2}
	export OMPI_MCA_btl=${OMPI_MCA_btl:-^ofi}
	unset _tessera_rp
fi
if [ "${TESSERA_MPI_PRELOAD:-1}" != 0 ]; then
	case ";${OMPI_MCA_mca_base_env_list:-};" in
	*";LD_PRELOAD="*) ;; # set already (by this file, or by the user)
	*) export OMPI_MCA_mca_base_env_list="${OMPI_MCA_mca_base_env_list:+$OMPI_MCA_mca_base_env_list;}LD_PRELOAD=$_tessera_fabric${LD_PRELOAD:+ $LD_PRELOAD}" ;;
	esac
fi
unset _tessera_fabric
