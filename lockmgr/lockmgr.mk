# lockmgr/: pure library (byte-range lock table: interval trees, request
# queues, the acquire/release rules of tlk.h). No I/O, no network.
TLK_SRCS := $(wildcard lockmgr/*.c)
TLK_LIB  := $(B)/lib/libtlk.a
LIBS     += $(TLK_LIB)

$(TLK_LIB): $(TLK_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Compiled with lockmgr/ alone on the include path and without waiting for
# the generated message header: the library must need nothing else.
$(B)/lockmgr/%.o: lockmgr/%.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -MMD -MP -Ilockmgr $(CFLAGS) -c -o $@ $<
