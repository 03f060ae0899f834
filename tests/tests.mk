# tests/: unit tests (CMocka, tests/unit/test_*.c, one binary each) and
# integration tests (tests/integ/test_*.c binaries that start daemons, and
# tests/integ/*.sh scripts).
#
# LINK_LIBS is every part library and SYS_LIBS every system library: the
# white-box unit tests link both (the daemons their own parts, server/*/).
# A program over the client library links CL_LINK_LIBS and CL_SYS_LIBS
# (client/client.mk) instead.
SYS_LIBS := -lfabric -lprotobuf-c -lmunge -lsodium -lleveldb -lev -lm

# The part libraries in link order: users before what they use.
LINK_LIBS = $(filter %/libtclient.a,$(LIBS)) $(filter %/libtmds.a,$(LIBS)) \
	    $(filter %/libtios.a,$(LIBS)) $(filter %/libtsrvcore.a,$(LIBS)) \
	    $(filter %/libtproto.a,$(LIBS)) $(filter %/libtlk.a,$(LIBS)) \
	    $(filter %/libtdl.a,$(LIBS))

UNIT_TESTS  += $(patsubst %.c,$(B)/%,$(wildcard tests/unit/test_*.c))
# Tests see every part's public header (USES_tests). Unit tests are
# white-box (a part's internals, a store without its daemon): they see
# every part's folder too.
$(B)/tests/unit/%.o: CPPFLAGS += $(addprefix -I,$(PARTS))
INTEG_TESTS += $(patsubst %.c,$(B)/%,$(wildcard tests/integ/test_*.c))
# Scripts (CLI, FUSE, fuzzing) drive the plain build's programs: run once.
# Third-party programs they need (pjdfstest, IOR's ior and mdtest) are
# built by the suite itself (tests/integ/build-*.sh), cached outside the tree.
EXTRA_TESTS += $(wildcard tests/integ/test_*.sh)
# The study's machinery (tests/study/: a tiny sweep, resume, a NET run).
EXTRA_TESTS += $(wildcard tests/study/test_*.sh)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(LINK_LIBS) -lcmocka $(SYS_LIBS)

# Every integration test links the harness (cluster.c). They are clients
# of daemons the harness starts from $(B)/bin.
$(B)/tests/integ/%: $(B)/tests/integ/%.o $(B)/tests/integ/cluster.o $$(CL_LINK_LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/tests/integ/cluster.o $(CL_LINK_LIBS) -lcmocka $(CL_SYS_LIBS)

# Benchmarks (figures, not tests): tests/bench/bench_*.c -> $(B)/bin/tessera-bench-*
BENCHES := $(patsubst tests/bench/bench_%.c,$(B)/bin/tessera-bench-%,$(wildcard tests/bench/bench_*.c))
PROGRAMS += $(BENCHES)

# The store's benchmark measures the object store itself (white-box, as
# the unit tests).
$(B)/tests/bench/bench_store.o: CPPFLAGS += -Iserver/ios

# Benchmarks are clients, but for two: the lock table's links lockmgr
# alone, the store's (white-box) every part, as the unit tests do.
BENCH_LINK_LIBS = $(CL_LINK_LIBS)
BENCH_SYS_LIBS  = $(CL_SYS_LIBS)
$(B)/bin/tessera-bench-store: BENCH_LINK_LIBS = $(LINK_LIBS)
$(B)/bin/tessera-bench-store: BENCH_SYS_LIBS = $(SYS_LIBS)
$(B)/bin/tessera-bench-tlk: BENCH_LINK_LIBS = $(TLK_LIB)
$(B)/bin/tessera-bench-tlk: BENCH_SYS_LIBS =
# the versioning benchmark's 95 % intervals take a square root
$(B)/bin/tessera-bench-version: BENCH_SYS_LIBS = $(CL_SYS_LIBS) -lm

$(B)/bin/tessera-bench-%: $(B)/tests/bench/bench_%.o $$(BENCH_LINK_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BENCH_LINK_LIBS) $(BENCH_SYS_LIBS)

# The crash test's load generator (tests/crash/), a program
# tests/integ/test_crash runs (not installed).
PROGRAMS += $(B)/bin/tessera-crash-load

# test_crash reads the load generator's log format (tests/crash/crash.h).
$(B)/tests/integ/test_crash.o: CPPFLAGS += -Itests/crash
$(B)/bin/tessera-crash-load: $(B)/tests/crash/crash_load.o $$(CL_LINK_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(CL_LINK_LIBS) $(CL_SYS_LIBS)
# (make test T=test_crash builds it beside the daemons.)
TEST_NEEDS_test_crash := $(B)/bin/tessera-crash-load

# The library's side of the mount's lock test (tests/integ/test_fuse_locks.sh):
# byte-range and record locks and appends through libtessera (not installed).
PROGRAMS += $(B)/bin/tessera-lock-tool
$(B)/bin/tessera-lock-tool: $(B)/tests/integ/lock_tool.o $$(CL_LINK_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(CL_LINK_LIBS) $(CL_SYS_LIBS)
