# server/: the metadata daemon (tessera-mds) and the storage daemon
# (tessera-ios). Everything but the two mains goes into libtserver.a so the
# stores can be unit-tested without a daemon.
SRV_MAINS := server/mds_main.c server/ios_main.c
SRV_SRCS  := $(filter-out $(SRV_MAINS),$(wildcard server/*.c))
SRV_LIB   := $(B)/lib/libtserver.a
LIBS      += $(SRV_LIB)

$(SRV_LIB): $(SRV_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

ifneq ($(wildcard server/mds_main.c),)
PROGRAMS += $(B)/bin/tessera-mds
endif
ifneq ($(wildcard server/ios_main.c),)
PROGRAMS += $(B)/bin/tessera-ios
endif

$(B)/bin/tessera-%: $(B)/server/%_main.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LINK_LIBS) $(SYS_LIBS)
