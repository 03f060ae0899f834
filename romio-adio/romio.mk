# romio-adio/: the ROMIO (MPI-IO) driver for Tessera. build-romio.sh builds
# Open MPI's ROMIO component with the driver in it (cached outside the
# checkout, so a repeat build is a copy); the MPI test programs build with
# mpicc. Everything here needs Open MPI (make deps installs it); without
# mpicc it is left out and the MPI test scripts skip themselves.
MPICC := $(shell command -v mpicc 2>/dev/null)
EXTRA_TESTS += $(wildcard romio-adio/tests/test_*.sh)

ifneq ($(MPICC),)
ROMIO_SO     := $(B)/lib/openmpi/mca_io_romio321.so
ROMIO_INPUTS := $(wildcard romio-adio/ad_tessera*.[ch] romio-adio/patches/*.patch) \
		romio-adio/Makefile.romio romio-adio/build-romio.sh romio-adio/tests/romio_mpi1_compat.h
# The HDF5, NetCDF and PnetCDF programs need their (MPI) libraries.
MPI_HDF5_FLAGS    := $(shell pkg-config --cflags --libs hdf5-openmpi 2>/dev/null)
# (Debian's netcdf-mpi.pc names /usr/include; the MPI headers are under its prefix.)
MPI_NETCDF_FLAGS  := $(shell pkg-config --cflags --libs netcdf-mpi 2>/dev/null)
ifneq ($(MPI_NETCDF_FLAGS),)
MPI_NETCDF_FLAGS  := -I$(shell pkg-config --variable=prefix netcdf-mpi)/include $(MPI_NETCDF_FLAGS)
endif
MPI_PNETCDF_FLAGS := $(shell pkg-config --cflags --libs pnetcdf 2>/dev/null)
MPI_TEST_SRCS := $(wildcard romio-adio/tests/mpi_*.c)
ifeq ($(MPI_HDF5_FLAGS),)
MPI_TEST_SRCS := $(filter-out %/mpi_hdf5.c,$(MPI_TEST_SRCS))
endif
ifeq ($(MPI_NETCDF_FLAGS),)
MPI_TEST_SRCS := $(filter-out %/mpi_netcdf.c,$(MPI_TEST_SRCS))
endif
ifeq ($(MPI_PNETCDF_FLAGS),)
MPI_TEST_SRCS := $(filter-out %/mpi_pnetcdf.c,$(MPI_TEST_SRCS))
endif
MPI_TEST_PROGS := $(patsubst romio-adio/tests/%.c,$(B)/romio-adio/tests/%,$(MPI_TEST_SRCS))
$(B)/romio-adio/tests/mpi_hdf5: MPI_TEST_LIBS := $(MPI_HDF5_FLAGS)
$(B)/romio-adio/tests/mpi_netcdf: MPI_TEST_LIBS := $(MPI_NETCDF_FLAGS)
$(B)/romio-adio/tests/mpi_pnetcdf: MPI_TEST_LIBS := $(MPI_PNETCDF_FLAGS)
MPI_CFLAGS   := -std=c11 -g -O2 -Wall -Wextra -Werror -D_GNU_SOURCE

MPI_BENCH_PROGS := $(patsubst romio-adio/bench/%.c,$(B)/romio-adio/bench/%,\
		   $(wildcard romio-adio/bench/mpi_*.c))
all: $(ROMIO_SO) $(MPI_TEST_PROGS) $(B)/bin/tessera-mpirun $(MPI_BENCH_PROGS)

# The MPI benchmarks: HPIO and the S3D-like checkpoint (make bench runs them
# through tests/bench/bench_mpi_hpio.sh and bench_mpi_s3d.sh).
$(B)/romio-adio/bench/%: romio-adio/bench/%.c
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -o $@ $<

# The client library (and so its sources) is an input of the component.
$(ROMIO_SO): $(ROMIO_INPUTS) $(CL_STATIC) \
		$(B)/include/client/tessera.h $(B)/include/dataloops/tdl.h
	TESSERA_BUILD=$(abspath $(B)) bash romio-adio/build-romio.sh $@

$(B)/romio-adio/tests/%: romio-adio/tests/%.c romio-adio/tests/mpi_check.h
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -o $@ $< $(MPI_TEST_LIBS)

# The datatype converter, tested on its own against MPI_Pack: it needs
# only the dataloops library.
$(B)/romio-adio/tests/mpi_dtype: romio-adio/tests/mpi_dtype.c romio-adio/ad_tessera_dtype.c \
		romio-adio/ad_tessera_dtype.h romio-adio/tests/mpi_check.h $(TDL_LIB) \
		$(B)/include/dataloops/tdl.h
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) $(call part_include,romio-adio) -o $@ $< \
		romio-adio/ad_tessera_dtype.c $(TDL_LIB)

$(B)/bin/tessera-mpirun: romio-adio/tessera-mpirun romio-adio/tessera-mpi-env.sh
	@mkdir -p $(dir $@)
	cp romio-adio/tessera-mpirun $@
endif

# ------------------------------------------------------------ MPICH
# Debian's MPICH beside Open MPI: its ROMIO is inside libmpi, so
# build-mpich.sh rebuilds that library with the driver (cached outside the
# checkout like the component; a fresh build is long, so it is not part of
# all: make mpich builds it, make check-mpich runs the MPICH suites).
# Debian's alternatives keep mpicc Open MPI's; MPICH's is mpicc.mpich.
MPICC_MPICH := $(shell command -v mpicc.mpich 2>/dev/null)
MPICH_TESTS := $(wildcard romio-adio/tests/mpich/test_*.sh)
MPICH_LIB   := $(B)/lib/mpich/libmpich.so.12
MPICH_TEST_PROGS := $(patsubst %,$(B)/romio-adio/tests-mpich/%,mpi_basic mpi_views mpi_dtype mpi_finalize mpi_atomic mpi_exchange)
MPICH_INPUTS := $(wildcard romio-adio/ad_tessera*.[ch] romio-adio/patches/*.patch romio-adio/patches/mpich/*.patch) \
		romio-adio/Makefile.romio romio-adio/build-mpich.sh
MPICH_CFLAGS := -std=c11 -g -O2 -Wall -Wextra -Werror -D_GNU_SOURCE
.PHONY: mpich check-mpich mpich-cached
# make check runs the MPICH suites too, on a library found in the cache
# (mpich-cached never builds one: a fresh build takes about 30 minutes on
# 2 cores, which make mpich spends once per driver change).
EXTRA_TESTS += $(MPICH_TESTS)
ifneq ($(MPICC_MPICH),)
mpich: $(MPICH_LIB) $(MPICH_TEST_PROGS)
mpich-cached: $(MPICH_TEST_PROGS) $(CL_SO)
	@TESSERA_BUILD=$(abspath $(B)) TESSERA_MPICH_CACHED_ONLY=1 \
		bash romio-adio/build-mpich.sh $(dir $(MPICH_LIB))
$(MPICH_LIB): $(MPICH_INPUTS) $(CL_SO) \
		$(B)/include/client/tessera.h $(B)/include/dataloops/tdl.h
	TESSERA_BUILD=$(abspath $(B)) bash romio-adio/build-mpich.sh $(dir $@)
$(B)/romio-adio/tests-mpich/%: romio-adio/tests/%.c romio-adio/tests/mpi_check.h
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPICH_CFLAGS) -o $@ $<
$(B)/romio-adio/tests-mpich/mpi_dtype: romio-adio/tests/mpi_dtype.c romio-adio/ad_tessera_dtype.c \
		romio-adio/ad_tessera_dtype.h romio-adio/tests/mpi_check.h $(TDL_LIB) \
		$(B)/include/dataloops/tdl.h
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPICH_CFLAGS) $(call part_include,romio-adio) -o $@ $< \
		romio-adio/ad_tessera_dtype.c $(TDL_LIB)
else
mpich mpich-cached:
	@echo "mpich: mpicc.mpich is not installed (make deps); nothing to build"
endif
# The MPICH suites (they skip themselves, saying why, without MPICH).
check-mpich: deps
	@$(MAKE) --no-print-directory all mpich
	@bash tests/run-suites.sh "build:$(MPICH_TESTS)"
