# dataloops/: pure library (striping math, dataloops, segment engine). It
# uses no other part: nothing here sees a generated or a network header.
TDL_SRCS := $(wildcard dataloops/*.c)
TDL_LIB  := $(B)/lib/libtdl.a
LIBS     += $(TDL_LIB)

$(TDL_LIB): $(TDL_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
