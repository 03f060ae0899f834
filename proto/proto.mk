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

# The config table (tp_config_keys.h) is public: tproto.h builds struct
# tp_config from it. tp_size.h: the size parser the CLI shares.
PUBLIC_proto += proto/tp_config_keys.h proto/tp_size.h

# The configuration reference, generated from the same table: a program
# of the build (not installed) fills the templates in proto/doc/ with the
# table. `make docs` rewrites the committed copies;
# tests/integ/test_config_docs.sh fails when they differ from its output.
TP_CONFIG_DOC := $(B)/proto/tp-config-doc
CONFIG_DOCS   := docs/configuration.md deploy/man/tessera.conf.5
PROGRAMS      += $(TP_CONFIG_DOC)

$(TP_CONFIG_DOC): $(B)/proto/doc/config_doc.o $(TP_LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(TP_LIB)

.PHONY: config-docs
config-docs: $(TP_CONFIG_DOC)
	@mkdir -p docs
	$(TP_CONFIG_DOC) markdown proto/doc/configuration.md.in > docs/configuration.md
	$(TP_CONFIG_DOC) man proto/doc/tessera.conf.5.in > deploy/man/tessera.conf.5
docs: config-docs
