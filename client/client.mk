# client/: libtessera (static and shared, with a pkg-config file) and the
# `tessera` command.
CL_SRCS   := $(wildcard client/*.c)
CL_LIB    := $(B)/lib/libtessera.a
CL_SO     := $(B)/lib/libtessera.so
LIBS      += $(CL_LIB)
PROGRAMS  += $(CL_SO) $(B)/lib/pkgconfig/tessera.pc
ifneq ($(wildcard client/tools/tessera.c),)
PROGRAMS  += $(B)/bin/tessera
endif
# The shared library carries the parts it is made of.
CL_PART_OBJS = $(CL_SRCS:%.c=$(B)/%.o) $(TP_OBJS) $(B)/proto/tessera.pb-c.o \
	       $(TDL_SRCS:%.c=$(B)/%.o)

$(CL_LIB): $(CL_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CL_SO): $$(CL_PART_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libtessera.so.0 -o $@ $^ -lfabric -lprotobuf-c

$(B)/lib/pkgconfig/tessera.pc: client/tessera.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(abspath $(B))|' -e 's|@INCLUDEDIR@|$(abspath client)|' \
	    -e 's|@PROTOINCLUDEDIR@|$(abspath proto)|' \
	    -e 's|@VERSION@|0.1.0|' $< > $@

CL_TOOL_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard client/tools/*.c))

# $$(LIBS): expanded late (see .SECONDEXPANSION in the Makefile), since
# this fragment is read before the parts whose libraries the tool links.
$(B)/bin/tessera: $(CL_TOOL_OBJS) $$(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CL_TOOL_OBJS) $(LINK_LIBS) $(SYS_LIBS)
