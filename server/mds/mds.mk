# server/mds/: the metadata daemon, tessera-mds (the namespace in LevelDB,
# the purger). Everything but its main goes into libtmds.a, so the store
# can be unit-tested without a daemon. It uses the daemon core's public
# headers and cannot include the storage daemon's (server/ios/).
MDS_MAIN := server/mds/mds_main.c
MDS_SRCS := $(filter-out $(MDS_MAIN),$(wildcard server/mds/*.c))
MDS_LIB  := $(B)/lib/libtmds.a
LIBS     += $(MDS_LIB)

$(MDS_LIB): $(MDS_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

ifneq ($(wildcard $(MDS_MAIN)),)
PROGRAMS += $(B)/bin/tessera-mds
endif

# Its own part, the core and what they use, users first (no storage
# daemon code). The libraries of parts read after this fragment are named
# late ($$).
$(B)/bin/tessera-mds: $(MDS_MAIN:%.c=$(B)/%.o) $(MDS_LIB) $$(SRVCORE_LIB) \
		$$(TP_LIB) $$(TLK_LIB) $$(TDL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(filter %.a,$^) $(SYS_LIBS) $(SD_LIBS)
