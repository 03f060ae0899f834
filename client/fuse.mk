# client/fuse/: tessera-fuse, a FUSE mount over libtessera (libfuse3).
# Built only where pkg-config knows fuse3 (deploy/install-deps.sh installs
# libfuse3-dev). Its test, tests/integ/test_fuse.sh, needs /dev/fuse and
# skips itself without it.
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null)
FUSE_SRCS   := $(wildcard client/fuse/*.c)

ifneq ($(FUSE_LIBS),)
PROGRAMS += $(B)/bin/tessera-fuse

$(FUSE_SRCS:%.c=$(B)/%.o): CPPFLAGS += $(FUSE_CFLAGS)
$(FUSE_SRCS:%.c=$(B)/%.o): proto/tproto.h # where the version is set

# A client program: CL_LINK_LIBS (client/client.mk), expanded late since
# this fragment is read before dataloops/ and proto/ set their libraries.
$(B)/bin/tessera-fuse: $(FUSE_SRCS:%.c=$(B)/%.o) $$(CL_LINK_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(FUSE_SRCS:%.c=$(B)/%.o) $(CL_LINK_LIBS) $(FUSE_LIBS) $(CL_SYS_LIBS)
endif
