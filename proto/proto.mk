# proto/: the wire protocol (protobuf-c messages, frames), configuration and
# the libfabric transport.
TP_GEN   := $(B)/proto/tessera.pb-c.c $(B)/proto/tessera.pb-c.h
TP_SRCS  := $(wildcard proto/*.c)
TP_OBJS  := $(TP_SRCS:%.c=$(B)/%.o) $(B)/proto/tessera.pb-c.o
TP_LIB   := $(B)/lib/libtproto.a
LIBS     += $(TP_LIB)

$(B)/proto/tessera.pb-c.c $(B)/proto/tessera.pb-c.h &: proto/tessera.proto
	@mkdir -p $(B)/proto
	protoc-c --proto_path=proto --c_out=$(B)/proto proto/tessera.proto

$(B)/proto/tessera.pb-c.o: $(B)/proto/tessera.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Every object may include the generated header.
$(filter-out $(B)/proto/tessera.pb-c.o,$(TP_OBJS)) $(B)/client/%.o $(B)/server/%.o $(B)/tests/%.o: | $(TP_GEN)

$(TP_LIB): $(TP_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
