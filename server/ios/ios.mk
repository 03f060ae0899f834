# server/ios/: the storage daemon, tessera-ios (the object store on its
# disk ops table, I/O, locks, local reads). Everything but its main goes
# into libtios.a, so the store can be unit-tested without a daemon. It
# uses the daemon core's public headers and cannot include the metadata
# daemon's (server/mds/).
IOS_MAIN := server/ios/ios_main.c
IOS_SRCS := $(filter-out $(IOS_MAIN),$(wildcard server/ios/*.c))
IOS_LIB  := $(B)/lib/libtios.a
LIBS     += $(IOS_LIB)

$(IOS_LIB): $(IOS_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

ifneq ($(wildcard $(IOS_MAIN)),)
PROGRAMS += $(B)/bin/tessera-ios
endif

# Its own part, the core and what they use, users first (no metadata
# daemon code).
$(B)/bin/tessera-ios: $(IOS_MAIN:%.c=$(B)/%.o) $(IOS_LIB) $$(SRVCORE_LIB) \
		$$(TP_LIB) $$(TLK_LIB) $$(TDL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(filter %.a,$^) $(SYS_LIBS) $(SD_LIBS)

# tests/unit/test_ios_vlogs runs the daemon in-process through ios_main.c's
# dispatch table (as the fuzz target does), which notifies systemd.
$(B)/tests/unit/test_ios_vlogs: SYS_LIBS += $(SD_LIBS)

# tests/integ/test_vios plays the version server: it signs capabilities,
# commits and grants with the daemons' key (server/core/cap.c).
$(B)/tests/integ/test_vios.o: CPPFLAGS += -I$(B)/include/server/core
$(B)/tests/integ/test_vios: CL_LINK_LIBS := $(SRVCORE_LIB) $(CL_LINK_LIBS)
