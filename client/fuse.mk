# client/fuse/: tessera-fuse, a FUSE mount over libtessera (libfuse3).
# Built only where pkg-config knows fuse3 (deploy/install-deps.sh installs
# libfuse3-dev). Its test, tests/integ/test_fuse.sh, needs /dev/fuse and
# skips itself without it.
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null)
FUSE_SRCS   := $(wildcard client/fuse/*.c)

ifneq ($(FUSE_LIBS),)
PROGRAMS += $(B)/bin/tessera-fuse

$(FUSE_SRCS:%.c=$(B)/%.o): CPPFLAGS += $(FUSE_CFLAGS) -DTESSERA_VERSION_STRING='"$(TESSERA_VERSION)"'
$(FUSE_SRCS:%.c=$(B)/%.o): proto/tproto.h # where the version is set

# This fragment is read before dataloops/, proto/ and server/ add their
# libraries to LIBS, so the prerequisites name them; the recipe's
# LINK_LIBS is expanded late and sees them all.
FUSE_DEP_LIBS := $(addprefix $(B)/lib/,libtclient.a libtmds.a libtios.a libtsrvcore.a libtproto.a libtdl.a)

$(B)/bin/tessera-fuse: $(FUSE_SRCS:%.c=$(B)/%.o) $(FUSE_DEP_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(FUSE_SRCS:%.c=$(B)/%.o) $(LINK_LIBS) $(FUSE_LIBS) $(SYS_LIBS)
endif
