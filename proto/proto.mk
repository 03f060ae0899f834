# proto/: the wire protocol (protobuf-c messages, frames, dataloops as
# messages), configuration and the libfabric transport. The message code
# protoc-c generates goes into the same library.
TP_GEN   := $(B)/proto/tessera.pb-c.c $(B)/proto/tessera.pb-c.h
TP_SRCS  := $(wildcard proto/*.c)
TP_OBJS  := $(TP_SRCS:%.c=$(B)/%.o)
TP_LIB   := $(B)/lib/libtproto.a
LIBS     += $(TP_LIB)

$(B)/proto/tessera.pb-c.c $(B)/proto/tessera.pb-c.h &: proto/tessera.proto
	@mkdir -p $(B)/proto
	protoc-c --proto_path=proto --c_out=$(B)/proto proto/tessera.proto

$(B)/proto/tessera.pb-c.o: $(B)/proto/tessera.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(TP_LIB): $(TP_OBJS) $(B)/proto/tessera.pb-c.o
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
