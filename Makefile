# Tessera top-level Makefile.
#
#   make          build everything into build/
#   make deps     install missing Debian packages (idempotent)
#   make check    deps + build (warnings are errors) + every test, then the
#                 unit and integration tests again under ASan/UBSan
#   make unit     build and run the unit tests only (CMocka, no daemons;
#                 seconds), with make check's summary line
#   make test T=NAME
#                 build what one suite needs and run it: NAME is the
#                 suite's file name without its folder and .c/.sh
#                 (T=test_locks, T=test_cli, T=test_dataloops_segment);
#                 an unknown NAME lists the suites. A unit test needs its
#                 binary, an integration test its binary and the daemons,
#                 a script the whole build. Both take B=, OPT= and SAN=
#                 for a sanitizer build (make check's are B=build/san
#                 OPT=-O1 SAN="$(SAN_FLAGS)").
#   make run      deps + build, then bring up a local file system (1 mds +
#                 4 ios) and use it
#   make down     stop it
#   make bench    run the benchmarks (figures, not tests)
#   make crash    the crash test's 100 trials (make check runs 10)
#   make pjdfstest the whole pjdfstest suite on a Tessera mount beside bindfs
#                 over a local directory (make check runs a subset;
#                 docs/testing.md, "pjdfstest")
#   make study    the HPIO study (tests/study/): sweeps over MPI-IO, the
#                 request-count tables, the lock, S3D and versioning figures, CSVs,
#                 PNGs and a report in build/study/; FULL=1 for the
#                 dissertation's ranges, NET=100mbit (any tc rate) or
#                 NET=1gbit,50us (and a latency) for the daemons on network
#                 namespaces behind simulated links, NODES=N for the ranks
#                 and daemons on N of them, CLUSTER=CONF for clients only,
#                 against the running daemons CONF names
#   make fuzz     long fuzzing campaigns: every libFuzzer target for
#                 FUZZ_SECONDS (600) each, or those in FUZZ_TARGETS
#   make docs     regenerate the generated documentation (the configuration
#                 reference: docs/configuration.md, tessera.conf(5))
#   make install  install the programs, libtessera (shared with its soname
#                 links, static, headers, tessera.pc), the ROMIO component
#                 the man pages, and the systemd units with the daemons'
#                 user (sysusers.d) under $(DESTDIR)$(PREFIX) (/usr/local),
#                 building only what it installs
#   make uninstall remove what make install put there
#
#   make FABRIC_VERBS=1  build libfabric with the verbs provider too
#
# Each part contributes a fragment, <part>/<part>.mk, that adds its
# libraries, programs and tests to the lists below.
#
# Part boundaries: a part's public headers (PUBLIC_<part>) are exported to
# $(B)/include/<part>/, and an object of part P (the folder of its source's
# path that holds a fragment: the first folder, or the first two for the
# parts nested in server/) compiles with only P's own folder (and $(B)/P,
# where its generated files go) and $(B)/include/U for each part U in
# USES_<P> on its include path. Another part's internal header cannot be
# found, so including one fails the build (tests/integ/test_bounds.sh
# shows it does).

B        ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
CFLAGS   := -std=c11 -g $(OPT) -fPIC -Wall -Wextra -Werror -pthread $(SAN)
CPPFLAGS := -D_GNU_SOURCE -MMD -MP
LDFLAGS  := -pthread $(SAN)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	     -fno-sanitize-recover=undefined

# libfabric: Debian's source of the installed version with only the
# providers Tessera uses (tcp, ofi_rxm, shm; FABRIC_VERBS=1 adds verbs),
# built once by deploy/build-libfabric.sh into a cache outside the checkout
# (docs/admin.md, "libfabric"). Every program and libtessera find it by
# their runpath, not Debian's libfabric.so.1, whose PSM dependencies and
# verbs provider cost 0.3 s at start-up (docs/design.md, "Start-up").
# FABRIC_PREFIX names the version, providers and script, so a change of
# any is a new directory. The stamp in $(B)/fabric/ names it too and is
# made when missing, as make starts, so it is newer than the objects that
# include libfabric's headers and depend on it: what links them is made
# again against the new one. (A rule would not do: .SECONDARY, below,
# lets make skip a missing prerequisite of an object that exists.) The
# build itself is fabric-lib's, which those objects wait for.
ifneq ($(FABRIC_VERBS),)
export TESSERA_LIBFABRIC_VERBS := $(FABRIC_VERBS)
endif
FABRIC_PREFIX := $(shell bash deploy/build-libfabric.sh --prefix)
FABRIC_STAMP  := $(B)/fabric/$(notdir $(FABRIC_PREFIX))
$(shell [ -f $(FABRIC_STAMP) ] || { rm -rf $(B)/fabric; mkdir -p $(B)/fabric; touch $(FABRIC_STAMP); })
CPPFLAGS += -I$(FABRIC_PREFIX)/include
LDFLAGS  += -L$(FABRIC_PREFIX)/lib -Wl,-rpath,$(FABRIC_PREFIX)/lib

LIBS      :=   # static part libraries, in link order after the programs
PROGRAMS  :=   # installed programs
UNIT_TESTS :=  # CMocka binaries that need nothing running
INTEG_TESTS := # test binaries or scripts that start real daemons
EXTRA_TESTS := # tests run once, not under the sanitizers (fuzz, fuse, mpi)

# Public headers and uses of each part (a fragment may set its own).
PUBLIC_dataloops := dataloops/tdl.h
PUBLIC_lockmgr   := $(wildcard lockmgr/tlk.h)
PUBLIC_proto     := proto/tproto.h proto/tp_crc.h proto/tp_objfmt.h proto/tp_clock.h proto/tessera_stats.h $(B)/proto/tessera.pb-c.h
PUBLIC_client    := client/tessera.h proto/tessera_stats.h
USES_dataloops   :=
USES_lockmgr     :=
USES_proto       := dataloops
# server/ holds three parts: the daemon core both daemons share, and the
# metadata and storage daemons, which use the core but not each other.
PUBLIC_server/core := server/core/daemon.h server/core/cap.h
PUBLIC_server/mds  :=
PUBLIC_server/ios  :=
USES_server/core := proto dataloops lockmgr
USES_server/mds  := server/core proto dataloops lockmgr
USES_server/ios  := server/core proto dataloops lockmgr
USES_client      := proto dataloops lockmgr
USES_romio-adio  := client dataloops
USES_tests       := client proto dataloops lockmgr

# Fragments name other parts' libraries in prerequisites ($$(LIBS)).
.SECONDEXPANSION:

.PHONY: all deps check unit test run down bench crash study fuzz clean print-bounds install uninstall docs
all: fabric-lib

PARTS   := $(sort $(patsubst %/,%,$(dir $(wildcard */*.mk server/*/*.mk))))
include $(sort $(wildcard */*.mk server/*/*.mk))

EXPORTS := $(foreach p,$(PARTS),$(addprefix $(B)/include/$(p)/,$(notdir $(PUBLIC_$(p)))))

all: $(EXPORTS) $(LIBS) $(PROGRAMS) $(UNIT_TESTS) \
	$(filter $(B)/%,$(INTEG_TESTS) $(EXTRA_TESTS))

# Exported headers are links to the real ones, so a compiler's message
# about one leads to the file to edit.
define export_header
$(B)/include/$(1)/$(notdir $(2)): $(2)
	@mkdir -p $$(@D)
	ln -sfn $$(abspath $$<) $$@
endef
$(foreach p,$(PARTS),$(foreach h,$(PUBLIC_$(p)),$(eval $(call export_header,$(p),$(h)))))

# The include path of part $(1).
part_include = -I$(1) -I$(B)/$(1) $(addprefix -I$(B)/include/,$(USES_$(1)))
# The part of source path $(1) (without .c): its first two folders if they
# are a part (server/core/...), else its first folder.
path_words = $(subst /, ,$(1))
part_of = $(or $(filter $(PARTS),$(word 1,$(call path_words,$(1)))/$(word 2,$(call path_words,$(1)))),$(word 1,$(call path_words,$(1))))

# An object sees its own part and the public headers of the parts it uses.
$(B)/%.o: %.c | $(EXPORTS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(call part_include,$(call part_of,$*)) $(CFLAGS) -c -o $@ $<

# For tests/integ/test_bounds.sh: each part's include path and its public
# headers.
print-bounds:
	@$(foreach p,$(PARTS),echo 'part $(p) $(call part_include,$(p))';)
	@$(foreach p,$(PARTS),echo 'public $(p) $(notdir $(PUBLIC_$(p)))';)

deps:
	@bash deploy/install-deps.sh

# Builds libfabric unless the cache has it (then it costs a look-up).
# Where Debian's source cannot be had (the script's status 3), the build
# goes on against Debian's libfabric.so.1 (-lfabric finds it, and the
# loader does when the runpath's directory is missing), and says so.
.PHONY: fabric-lib
fabric-lib:
	@rc=0; bash deploy/build-libfabric.sh >/dev/null || rc=$$?; \
	if [ $$rc = 3 ]; then \
		echo "make: linking Debian's libfabric.so.1 instead (0.3 s more start-up; docs/admin.md, libfabric)" >&2; \
	elif [ $$rc != 0 ]; then exit $$rc; fi
$(B)/proto/transport.o $(B)/proto/transport_conn.o $(B)/tests/integ/test_sec_takeover.o: $(FABRIC_STAMP) | fabric-lib

# The test run: the normal build, then an ASan/UBSan build of the unit and
# integration tests, and one summary line over all suites.
check: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory B=build/san OPT=-O1 SAN="$(SAN_FLAGS)" \
		$(UNIT_TESTS:$(B)/%=build/san/%) \
		$(filter $(B)/%,$(INTEG_TESTS:$(B)/%=build/san/%)) \
		$(PROGRAMS:$(B)/%=build/san/%)
	@$(MAKE) --no-print-directory mpich-cached
	@bash tests/run-suites.sh \
		"build:$(UNIT_TESTS) $(INTEG_TESTS) $(EXTRA_TESTS)" \
		"build/san:$(UNIT_TESTS:$(B)/%=build/san/%) $(INTEG_TESTS:$(B)/%=build/san/%)"

# ------------------------------------------------------- the fast loop
# Objects, generated sources and part libraries are kept, not deleted as
# intermediates of a chain: otherwise every object a test or program was
# made from is compiled again once any library changes.
.SECONDARY:

unit: $(UNIT_TESTS)
	@bash tests/run-suites.sh "$(B):$(UNIT_TESTS)"

# Every suite make check runs, by name; TEST_NEEDS_<name> (set by a
# fragment) adds programs an integration test runs beside the daemons.
SUITES     := $(UNIT_TESTS) $(INTEG_TESTS) $(EXTRA_TESTS)
suite_name  = $(basename $(notdir $(1)))
T_SUITES   := $(strip $(foreach s,$(SUITES),$(if $(filter $(T),$(call suite_name,$(s)) $(notdir $(s))),$(s))))
DAEMONS    := $(filter %/tessera-mds %/tessera-ios,$(PROGRAMS))
test_needs  = $(if $(filter $(UNIT_TESTS),$(1)),$(1),$(if $(filter $(INTEG_TESTS),$(1)),\
	      $(1) $(DAEMONS) $(TEST_NEEDS_$(call suite_name,$(1))),all))

ifneq ($(filter test,$(MAKECMDGOALS)),)
ifeq ($(T_SUITES),)
$(info make test T=NAME runs one suite; NAME is one of)
$(info $(empty)  unit:        $(foreach s,$(UNIT_TESTS),$(call suite_name,$(s))))
$(info $(empty)  integration: $(foreach s,$(INTEG_TESTS),$(call suite_name,$(s))))
$(info $(empty)  scripts:     $(foreach s,$(EXTRA_TESTS),$(call suite_name,$(s))))
$(error $(if $(T),no suite is named '$(T)',T=NAME is missing))
endif
endif

# (test_local is a binary and a script: T=test_local runs both,
# T=test_local.sh the script alone.)
test:
	@$(MAKE) --no-print-directory $(sort $(foreach s,$(T_SUITES),$(call test_needs,$(s))))
	@bash tests/run-suites.sh "$(B):$(T_SUITES)"

# A fresh machine first gets what the build needs (protoc-c, libfabric...).
run: deps
	@$(MAKE) --no-print-directory all
	@bash deploy/make-run.sh

down:
	@bash deploy/tessera-local down

# kill -9 of a random daemon under load, 100 times (docs/testing.md, "Crash test").
crash: all
	TESSERA_BUILD=$(B) TESSERA_CRASH_TRIALS=100 $(B)/tests/integ/test_crash

# All 238 files of pjdfstest (about 8,800 assertions) on the mount and on
# bindfs; the same comparison as make check's subset (tests/integ/test_pjdfstest.sh).
.PHONY: pjdfstest
pjdfstest: deps
	@$(MAKE) --no-print-directory all
	@PJDFSTEST_SET=full TESSERA_SUITE_TIMEOUT=5400 bash tests/run-suites.sh "$(B):tests/integ/test_pjdfstest.sh"

bench: all
	@bash tests/bench/run-bench.sh

# Resumes an interrupted study of the same mode in the same folder
# (STUDY_OUT, default build/study/<short|full>-<loopback|NET>). STUDY_ARGS
# passes study.py's other options (--sieve-gap N, --local-reads, ...).
study: deps
	@$(MAKE) --no-print-directory all
	@python3 tests/study/study.py $(if $(FULL),--full) $(if $(NET),--net $(NET)) \
		$(if $(NODES),--nodes $(NODES)) $(if $(CLUSTER),--cluster $(CLUSTER)) \
		$(if $(STUDY_OUT),--out $(STUDY_OUT)) $(STUDY_ARGS)

# The targets and their corpora: tests/fuzz/ (docs/testing.md, "Fuzzing"). New
# inputs are kept in $(B)/fuzz/<target>/corpus, crashes beside it.
FUZZ_SECONDS ?= 600
fuzz: all
	@TESSERA_BUILD=$(abspath $(B)) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" \
		bash tests/integ/test_fuzz.sh

# ------------------------------------------------------------------ install
# Staged installs (DESTDIR) keep the PREFIX paths in what they write
# (tessera.pc). Run ldconfig after installing into a system directory.
PREFIX     ?= /usr/local
DESTDIR    ?=
bindir     := $(PREFIX)/bin
libdir     := $(PREFIX)/lib
includedir := $(PREFIX)/include
mandir     := $(PREFIX)/share/man
datadir    := $(PREFIX)/share/tessera
INSTALL_PROGRAMS := $(filter $(addprefix $(B)/bin/,tessera tessera-fuse tessera-mds tessera-ios),\
		      $(PROGRAMS)) deploy/tessera-local deploy/tessera-genconfig
# The library's API: tessera.h, and tdl.h for datatype I/O's dataloops.
INSTALL_HEADERS  := $(PUBLIC_client) $(PUBLIC_dataloops)
INSTALL_MAN      := $(wildcard deploy/man/*.[1358])
# systemd: the daemons' units and the mount unit (their @bindir@ becomes
# the programs' directory), and the daemons' user (docs/admin.md, "The
# systemd units"). systemd reads both places for PREFIX /usr or
# /usr/local; for another prefix, name /etc/systemd/system and
# /etc/sysusers.d (or link the units with systemctl link).
systemdunitdir ?= $(PREFIX)/lib/systemd/system
sysusersdir    ?= $(PREFIX)/lib/sysusers.d
INSTALL_UNITS    := $(wildcard deploy/systemd/*.in)
# What install copies from the build, and builds first: nothing else (not
# the tests and benchmarks that `all` makes).
INSTALL_BUILT    := $(filter $(B)/%,$(INSTALL_PROGRAMS)) $(CL_SO) $(CL_STATIC) $(ROMIO_SO)

install: $(INSTALL_BUILT)
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir)/pkgconfig \
		$(DESTDIR)$(includedir)/tessera $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man3 \
		$(DESTDIR)$(mandir)/man5 $(DESTDIR)$(mandir)/man8
	install -m 755 $(INSTALL_PROGRAMS) $(DESTDIR)$(bindir)/
	install -m 755 $(CL_SO) $(DESTDIR)$(libdir)/
	install -m 644 $(CL_STATIC) $(DESTDIR)$(libdir)/
	ln -sfn $(notdir $(CL_SO)) $(DESTDIR)$(libdir)/$(CL_SONAME)
	ln -sfn $(CL_SONAME) $(DESTDIR)$(libdir)/libtessera.so
	install -m 644 $(INSTALL_HEADERS) $(DESTDIR)$(includedir)/tessera/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(TESSERA_VERSION)|' \
	    -e 's|@CFLAGS@|-I$${includedir}/tessera|' client/tessera.pc.in \
	    > $(DESTDIR)$(libdir)/pkgconfig/tessera.pc
	install -m 644 $(filter %.1,$(INSTALL_MAN)) $(DESTDIR)$(mandir)/man1/
	install -m 644 $(filter %.3,$(INSTALL_MAN)) $(DESTDIR)$(mandir)/man3/
	install -m 644 $(filter %.5,$(INSTALL_MAN)) $(DESTDIR)$(mandir)/man5/
	install -m 644 $(filter %.8,$(INSTALL_MAN)) $(DESTDIR)$(mandir)/man8/
	install -d $(DESTDIR)$(systemdunitdir) $(DESTDIR)$(sysusersdir)
	for u in $(INSTALL_UNITS); do \
		sed 's|@bindir@|$(bindir)|g' $$u > $(DESTDIR)$(systemdunitdir)/$$(basename $$u .in) && \
		chmod 644 $(DESTDIR)$(systemdunitdir)/$$(basename $$u .in) || exit 1; \
	done
	install -m 644 deploy/systemd/tessera.sysusers $(DESTDIR)$(sysusersdir)/tessera.conf
# A system install (PREFIX /usr or /usr/local, no DESTDIR) lets users mount
# with allow_other (/etc/fuse.conf: user_allow_other), as shared mounts do;
# staged and private installs leave /etc alone.
	$(if $(and $(if $(DESTDIR),,1),$(filter /usr /usr/local,$(PREFIX))),\
		bash deploy/fuse-allow-other.sh)
ifneq ($(ROMIO_SO),)
	install -d $(DESTDIR)$(libdir)/tessera/openmpi $(DESTDIR)$(datadir)
	install -m 755 $(ROMIO_SO) $(DESTDIR)$(libdir)/tessera/openmpi/
	install -m 644 romio-adio/tessera-mpi-env.sh $(DESTDIR)$(datadir)/
	install -m 755 romio-adio/tessera-mpirun $(DESTDIR)$(bindir)/
endif

# uninstall removes what install put there, file by file (the same lists,
# and the ROMIO component's whether or not this build has one), then the
# directories that are Tessera's own if they are left empty; it builds
# nothing. Shared directories (bin, lib, share/man/man1 ...) stay.
UNINSTALL_FILES := $(addprefix $(bindir)/,$(notdir $(INSTALL_PROGRAMS)) tessera-mpirun) \
	$(addprefix $(libdir)/,$(notdir $(CL_SO)) $(CL_SONAME) libtessera.so libtessera.a \
		pkgconfig/tessera.pc tessera/openmpi/mca_io_romio321.so) \
	$(addprefix $(includedir)/tessera/,$(notdir $(INSTALL_HEADERS))) \
	$(join $(patsubst .%,$(mandir)/man%/,$(suffix $(INSTALL_MAN))),$(notdir $(INSTALL_MAN))) \
	$(datadir)/tessera-mpi-env.sh \
	$(addprefix $(systemdunitdir)/,$(notdir $(INSTALL_UNITS:.in=))) $(sysusersdir)/tessera.conf
UNINSTALL_DIRS  := $(includedir)/tessera $(libdir)/tessera/openmpi $(libdir)/tessera $(datadir)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(UNINSTALL_FILES))
	for d in $(addprefix $(DESTDIR),$(UNINSTALL_DIRS)); do \
		[ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d" || exit 1; \
	done

# Generated documents that are committed (each part adds its own
# generator's target as a prerequisite: proto/proto.mk, config-docs).
docs:

clean:
	rm -rf build

-include $(shell find $(B) -name '*.d' 2>/dev/null)
