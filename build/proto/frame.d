build/proto/frame.o: proto/frame.c proto/tproto.h \
 build/proto/tessera.pb-c.h
proto/tproto.h:
build/proto/tessera.pb-c.h:
