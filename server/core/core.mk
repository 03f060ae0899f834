# server/core/: the daemon core both daemons share (the libev loop, frame
# checking, dispatch, peers, sessions, capabilities). Its public headers
# are daemon.h and cap.h (PUBLIC_server/core); daemon_int.h and session.h
# are its own. The daemons are server/mds/ (tessera-mds) and server/ios/
# (tessera-ios): each part is a library, so the stores can be unit-tested
# without a daemon, and each daemon links only the core and its own part.
SRVCORE_SRCS := $(wildcard server/core/*.c)
SRVCORE_LIB  := $(B)/lib/libtsrvcore.a
LIBS         += $(SRVCORE_LIB)

# srv_run (daemon_notify.c) tells systemd the daemon serves, through
# libsystemd's sd_notify: only the daemons, which call it, link SD_LIBS
# (libsystemd-dev, deploy/install-deps.sh).
SD_LIBS := $(or $(shell pkg-config --libs libsystemd 2>/dev/null),-lsystemd)

$(SRVCORE_LIB): $(SRVCORE_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# A source left in server/ itself (say, added on a branch made before the
# split) would belong to no part and be silently left out of the build.
ifneq ($(wildcard server/*.c server/*.h),)
$(error $(wildcard server/*.c server/*.h): move into server/core/, server/mds/ or server/ios/)
endif
