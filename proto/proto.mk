# proto/: the wire protocol (protobuf-c messages, frames), configuration and
# the libfabric transport.
TP_GEN   := $(B)/proto/tessera.pb-c.c $(B)/proto/tessera.pb-c.h
TP_SRCS  := $(wildcard proto/*.c)
TP_OBJS  := $(TP_SRCS:%.c=$(B)/%.o)
TP_LIB   := $(B)/lib/libtproto.a
# The generated message code is a library of its own, last in link order,
# because dataloops/ encodes its descriptions with it too.
TP_MSG_LIB := $(B)/lib/libtmsg.a
LIBS     += $(TP_LIB) $(TP_MSG_LIB)

$(B)/proto/tessera.pb-c.c $(B)/proto/tessera.pb-c.h &: proto/tessera.proto
	@mkdir -p $(B)/proto
	protoc-c --proto_path=proto --c_out=$(B)/proto proto/tessera.proto

$(B)/proto/tessera.pb-c.o: $(B)/proto/tessera.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(TP_MSG_LIB): $(B)/proto/tessera.pb-c.o
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(TP_LIB): $(TP_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
