#!/usr/bin/env bash
# test_mpich_driver.sh - test_mpi_driver.sh under Debian's MPICH, its
# libmpich.so.12 rebuilt with the Tessera driver (make mpich), the test
# programs built with mpicc.mpich. Skipped, saying why, where MPICH or the
# library is missing.
TESSERA_MPI=mpich exec bash "$(dirname "$0")/../test_mpi_driver.sh"
