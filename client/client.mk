# client/: libtessera, shared (with its soname links) and static, each
# carrying every part it needs, with a pkg-config file; and the `tessera`
# command. libtclient.a holds the client part alone, for the build's own
# programs, which link each part library once (LINK_LIBS).
CL_SRCS   := $(wildcard client/*.c)
CL_LIB    := $(B)/lib/libtclient.a
CL_STATIC := $(B)/lib/libtessera.a
# The release, as the programs report it, and the shared library's names:
# the file, the soname (what programs record), the link-time name. While
# the major version is 0 each minor release may change the ABI (0.2.0 grew
# struct tessera_ping, 0.3.0 struct tessera_copy_stats, 0.4.0 struct
# tessera_stat: rdev and blocks), so the soname carries both:
# libtessera.so.0.4. A struct that grows is an ABI change: programs built
# before it (the MPICH library with the driver, cached by soname) must not
# load the new library under the old name.
# tessera.h's TESSERA_VERSION is the one definition (the test of install
# checks the rest agree).
TESSERA_VERSION := $(shell sed -n 's/^#define TESSERA_VERSION "\(.*\)"/\1/p' client/tessera.h)
CL_ABI    := $(subst $(eval) ,.,$(wordlist 1,2,$(subst ., ,$(TESSERA_VERSION))))
CL_SONAME := libtessera.so.$(if $(filter 0,$(firstword $(subst ., ,$(TESSERA_VERSION)))),$(CL_ABI),$(firstword $(subst ., ,$(TESSERA_VERSION))))
CL_SO     := $(B)/lib/libtessera.so.$(TESSERA_VERSION)
CL_SO_LINKS := $(B)/lib/$(CL_SONAME) $(B)/lib/libtessera.so
LIBS      += $(CL_LIB)
PROGRAMS  += $(CL_SO) $(CL_SO_LINKS) $(CL_STATIC) $(B)/lib/pkgconfig/tessera.pc
ifneq ($(wildcard client/tools/tessera.c),)
PROGRAMS  += $(B)/bin/tessera
endif
# What a program over the client (the CLI, the mount, the benchmarks, the
# integration tests) links: the client and the parts it calls, and their
# system libraries; not the server, LevelDB or libev. ($(TP_LIB) and
# $(TDL_LIB) are set by fragments read later: these expand when used.)
CL_LINK_LIBS = $(CL_LIB) $(TP_LIB) $(TDL_LIB)
CL_SYS_LIBS  = -lfabric -lprotobuf-c -lmunge -lsodium

# The libraries users link carry the parts they are made of.
CL_PART_OBJS = $(CL_SRCS:%.c=$(B)/%.o) $(TP_OBJS) $(B)/proto/tessera.pb-c.o \
	       $(TDL_SRCS:%.c=$(B)/%.o)

$(CL_LIB): $(CL_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# (Remade when this file changes: libtessera.a once held the client alone.)
$(CL_STATIC): $$(CL_PART_OBJS) client/client.mk
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(filter %.o,$^)

# The shared library exports its API and nothing else: the functions the
# installed headers declare (tessera.h, and tdl.h's dataloop constructors
# and queries that datatype I/O takes), listed from those headers so the
# list cannot drift; the parts' internals (tc_, tp_, tnet_, the tdl_
# functions of dataloops/*_int.h, protobuf-c's tessera__) stay local.
CL_API_HEADERS := client/tessera.h dataloops/tdl.h
CL_MAP := $(B)/lib/libtessera.map

$(CL_MAP): $(CL_API_HEADERS) client/client.mk
	@mkdir -p $(dir $@)
	{ echo 'TESSERA_$(CL_ABI) {'; echo 'global:'; \
	  sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(\(tessera\|tdl\)_[a-z0-9_]*\)(.*/\t\1;/p' \
		$(CL_API_HEADERS) | sort -u; \
	  echo 'local: *;'; echo '};'; } > $@.tmp && mv $@.tmp $@

$(CL_SO): $$(CL_PART_OBJS) $(CL_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(CL_SONAME) -Wl,--version-script,$(CL_MAP) \
		-o $@ $(filter %.o,$^) $(CL_SYS_LIBS)

$(B)/lib/$(CL_SONAME): $(CL_SO)
	ln -sfn $(notdir $<) $@

$(B)/lib/libtessera.so: $(B)/lib/$(CL_SONAME)
	ln -sfn $(notdir $<) $@

$(B)/lib/pkgconfig/tessera.pc: client/tessera.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(abspath $(B))|' -e 's|@VERSION@|$(TESSERA_VERSION)|' \
	    -e 's|@CFLAGS@|-I$${includedir}/client -I$${includedir}/dataloops|' $< > $@

CL_TOOL_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard client/tools/*.c))
# The CLI alone links json-c (--json output); it reports the release.
JSONC_CFLAGS := $(shell pkg-config --cflags json-c 2>/dev/null)
JSONC_LIBS   := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
$(CL_TOOL_OBJS): CPPFLAGS += $(JSONC_CFLAGS)

# $$(CL_LINK_LIBS): expanded late (see .SECONDEXPANSION in the Makefile),
# since this fragment is read before the parts whose libraries the tool
# links.
$(B)/bin/tessera: $(CL_TOOL_OBJS) $$(CL_LINK_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CL_TOOL_OBJS) $(CL_LINK_LIBS) $(CL_SYS_LIBS) $(JSONC_LIBS)
