/*
 * tp_config_keys.h - every key of the configuration file, once.
 *
 * TP_CONFIG_KEYS(X) calls X once per key, in the order of struct
 * tp_config's fields and of the documentation:
 *
 *   X(key, field, type, default, min, max, unit, doc)
 *
 *   key      the name in the file ("timeout_ms")
 *   field    its field in struct tp_config (keep it when renaming a key)
 *   type     STRING (64 bytes), PATH (absolute, 1024 bytes), SERVER
 *            (HOST:PORT, one line), SERVERS (HOST:PORT, a line each, into
 *            field[] and n_<field>), U32 (a decimal integer), BOOL (0 or
 *            1), SIZE32 / SIZE64 (bytes, with K, M, G, T suffixes:
 *            tp_size.h) - the field's C type follows (tproto.h)
 *   default  DEF("text"): the value, written as in the file (it is parsed
 *            like a line of the file, so documentation and behaviour
 *            agree); or NONE("what no line means"): the field stays empty
 *            ("", no server, or for a U32 TP_CONFIG_UNSET; other numbers
 *            must have a DEF)
 *   min, max numbers: the allowed range (inclusive); SERVER, SERVERS: how
 *            many lines (min 1: required); STRING, PATH: 0, 0
 *   unit     of the number ("ms", "bytes"), "" if none
 *   doc      one line for the reference; `code` is set as code
 *
 * Adding a key: one X line here, then its use. The struct field, the
 * default, the parser and its messages, docs/configuration.md and
 * tessera.conf(5) (make docs) follow from it.
 */
#ifndef TESSERA_TP_CONFIG_KEYS_H
#define TESSERA_TP_CONFIG_KEYS_H

#include <stdint.h>

#include "tdl.h" /* TDL_MAX_STRIP_SIZE */

#define TP_MAX_SERVERS    256
#define TP_MAX_IO_THREADS 64
/* A number no line set and that has no default (NONE). */
#define TP_CONFIG_UNSET   UINT32_MAX

#define TP_CONFIG_KEYS(X)                                                       \
	X("provider", provider, STRING, DEF("tcp;ofi_rxm"), 0, 0, "",              \
	  "libfabric provider (`tcp;ofi_rxm`, `shm`, `tcp;msg`: tcp connections "   \
	  "that answers stay on, or any provider's name)")                          \
	X("mds", mds, SERVER, NONE("required"), 1, 1, "",                          \
	  "`host:port` of the metadata daemon")                                     \
	X("ios", ios, SERVERS, NONE("at least one"), 1, TP_MAX_SERVERS, "",        \
	  "`host:port` of a storage daemon, one line each; the order of these "    \
	  "lines gives each daemon's index")                                        \
	X("timeout_ms", timeout_ms, U32, DEF("30000"), 1, 3600 * 1000u, "ms",      \
	  "request deadline")                                                       \
	X("max_io", max_io, SIZE32, DEF("1M"), 4096, 64u << 20, "bytes",          \
	  "data bytes per message, which sets the daemons' receive buffers")       \
	X("window", window, U32, DEF("16"), 1, 1024, "requests",                   \
	  "requests a client keeps in flight")                                      \
	X("strip_size", strip_size, SIZE64, DEF("64K"), 1, TDL_MAX_STRIP_SIZE,    \
	  "bytes", "default strip size for new files (a directory's default "      \
	  "overrides it)")                                                          \
	X("list_io_max_regions", list_io_max_regions, U32, DEF("8192"), 1,        \
	  1u << 30, "regions", "file regions per list I/O round (per file: "       \
	  "`tessera_file_set_list_batch`)")                                        \
	X("lock_lease_ms", lock_lease_ms, U32, DEF("10000"), 100, 3600 * 1000u,   \
	  "ms", "a client session's locks outlive its silence this long")          \
	X("lock_list_batch", lock_list_batch, U32, DEF("0"), 0, 1u << 30,         \
	  "regions", "regions per list-lock message (0: as many as fit a frame; "  \
	  "64 reproduces PVFS2's split)")                                           \
	X("mount_point", mount_point, PATH, NONE("none"), 0, 0, "",                \
	  "where the FUSE mount lives: paths under it map to Tessera paths, and "  \
	  "MPI-IO names on it need no `tessera:` prefix (trailing slashes are "    \
	  "dropped)")                                                               \
	X("munge_socket", munge_socket, PATH, NONE("libmunge's default"), 0, 0,   \
	  "", "the socket of the munged that clients and daemons ask "             \
	  "(`MUNGE_OPT_SOCKET`); `tessera-local` sets it when it runs its own")    \
	X("root_squash", root_squash, BOOL, DEF("0"), 0, 1, "",                    \
	  "1: the metadata daemon treats an acting uid 0 as 65534/65534")           \
	X("key_file", key_file, PATH, NONE("required by the daemons"), 0, 0, "",   \
	  "the daemons' shared capability key: 64 hex digits, mode 0600; clients " \
	  "never read it")                                                          \
	X("cap_lifetime_ms", cap_lifetime_ms, U32, DEF("600000"), 100,            \
	  7 * 24 * 3600 * 1000u, "ms", "how long a capability is valid; clients "  \
	  "renew theirs after three quarters of it")                                \
	X("io_threads", io_threads, U32, NONE("the online CPUs, at most 8"), 0,   \
	  TP_MAX_IO_THREADS, "threads", "storage daemons: disk worker threads; 0 " \
	  "runs the disk work inside the event loop. Each object's requests run "  \
	  "in arrival order, different objects' in parallel")                      \
	X("local_reads", local_reads, BOOL, DEF("1"), 0, 1, "",                    \
	  "1: a client reads the objects of storage daemons on its own host (and " \
	  "network namespace) from their files, checked against their "           \
	  "checksums; 0: every read goes through the daemons, which refuse "      \
	  "`LOCAL_OPEN`")

#endif /* TESSERA_TP_CONFIG_KEYS_H */
