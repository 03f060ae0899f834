# dataloops/: pure library (striping math, dataloops, segment engine).
TDL_SRCS := $(wildcard dataloops/*.c)
TDL_LIB  := $(B)/lib/libtdl.a
LIBS     += $(TDL_LIB)

$(TDL_LIB): $(TDL_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
