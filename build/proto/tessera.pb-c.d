build/proto/tessera.pb-c.o: build/proto/tessera.pb-c.c \
 build/proto/tessera.pb-c.h
build/proto/tessera.pb-c.h:
