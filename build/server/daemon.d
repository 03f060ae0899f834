build/server/daemon.o: server/daemon.c server/daemon.h proto/tproto.h \
 build/proto/tessera.pb-c.h
server/daemon.h:
proto/tproto.h:
build/proto/tessera.pb-c.h:
