build/server/ios_main.o: server/ios_main.c server/daemon.h proto/tproto.h \
 build/proto/tessera.pb-c.h server/ios_store.h
server/daemon.h:
proto/tproto.h:
build/proto/tessera.pb-c.h:
server/ios_store.h:
