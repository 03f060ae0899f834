build/proto/transport.o: proto/transport.c proto/tproto.h \
 build/proto/tessera.pb-c.h
proto/tproto.h:
build/proto/tessera.pb-c.h:
