build/dataloops/tdl_layout.o: dataloops/tdl_layout.c dataloops/tdl.h
dataloops/tdl.h:
