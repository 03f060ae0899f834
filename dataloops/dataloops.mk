# dataloops/: pure library (striping math, dataloops, segment engine).
TDL_SRCS := $(wildcard dataloops/*.c)
TDL_LIB  := $(B)/lib/libtdl.a
LIBS     += $(TDL_LIB)

$(TDL_LIB): $(TDL_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The codec includes the generated message header: rebuild it when the
# .proto changes even before the compiler's .d files exist.
$(B)/dataloops/tdl_codec.o: $(B)/proto/tessera.pb-c.h
