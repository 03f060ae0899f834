# Tessera top-level Makefile.
#
#   make          build everything into build/
#   make deps     install missing Debian packages (idempotent)
#   make check    deps + build (warnings are errors) + every test, then the
#                 unit and integration tests again under ASan/UBSan
#   make run      bring up a local file system (1 mds + 4 ios) and use it
#   make down     stop it
#   make bench    run the benchmarks (figures, not tests)
#
# Each part contributes a fragment, <part>/<part>.mk, that adds its
# libraries, programs and tests to the lists below.

B        ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
CFLAGS   := -std=c11 -g $(OPT) -fPIC -Wall -Wextra -Werror -pthread $(SAN)
CPPFLAGS := -D_GNU_SOURCE -MMD -MP -Idataloops -Iproto -I$(B)/proto -Iclient \
	    -Ilockmgr -Iserver
LDFLAGS  := -pthread $(SAN)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	     -fno-sanitize-recover=undefined

LIBS      :=   # static part libraries, in link order after the programs
PROGRAMS  :=   # installed programs
UNIT_TESTS :=  # CMocka binaries that need nothing running
INTEG_TESTS := # test binaries or scripts that start real daemons
EXTRA_TESTS := # tests run once, not under the sanitizers (fuzz, fuse, mpi)

# Fragments name other parts' libraries in prerequisites ($$(LIBS)).
.SECONDEXPANSION:

.PHONY: all deps check check-build test test-san run down bench clean
all:

include $(sort $(wildcard */*.mk))

all: $(LIBS) $(PROGRAMS) $(UNIT_TESTS) $(filter $(B)/%,$(INTEG_TESTS) $(EXTRA_TESTS))

# Any object may include the generated message header.
$(B)/%.o: %.c | $(B)/proto/tessera.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

deps:
	@bash deploy/install-deps.sh

# The test run: the normal build, then an ASan/UBSan build of the unit and
# integration tests, and one summary line over all suites.
check: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory B=build/san OPT=-O1 SAN="$(SAN_FLAGS)" \
		$(UNIT_TESTS:$(B)/%=build/san/%) \
		$(filter $(B)/%,$(INTEG_TESTS:$(B)/%=build/san/%)) \
		$(PROGRAMS:$(B)/%=build/san/%)
	@bash tests/run-suites.sh \
		"build:$(UNIT_TESTS) $(INTEG_TESTS) $(EXTRA_TESTS)" \
		"build/san:$(UNIT_TESTS:$(B)/%=build/san/%) $(INTEG_TESTS:$(B)/%=build/san/%)"

run: all
	@bash deploy/make-run.sh

down:
	@bash deploy/tessera-local down

bench: all
	@bash tests/bench/run-bench.sh

clean:
	rm -rf build

-include $(shell find $(B) -name '*.d' 2>/dev/null)
