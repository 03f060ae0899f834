build/proto/config.o: proto/config.c proto/tproto.h \
 build/proto/tessera.pb-c.h
proto/tproto.h:
build/proto/tessera.pb-c.h:
