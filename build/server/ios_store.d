build/server/ios_store.o: server/ios_store.c server/ios_store.h
server/ios_store.h:
