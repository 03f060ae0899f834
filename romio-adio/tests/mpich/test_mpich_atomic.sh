#!/usr/bin/env bash
# test_mpich_atomic.sh - test_mpi_atomic.sh (atomic mode, shared file
# pointers, byte-range locks through the driver) under Debian's MPICH with
# the rebuilt libmpich.so.12 (make mpich). Skipped, saying why, where
# MPICH or the library is missing.
# a shorter run than Open MPI's in make check (the same checks, fewer rounds)
TESSERA_ATOMIC_REPS=${TESSERA_ATOMIC_REPS:-3} TESSERA_SERIAL_ROUNDS=${TESSERA_SERIAL_ROUNDS:-3} \
	TESSERA_MPI=mpich exec bash "$(dirname "$0")/../test_mpi_atomic.sh"
