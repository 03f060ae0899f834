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
	X("provider", provider, STRING, DEF("tcp;msg"), 0, 0, "",                  \
	  "libfabric provider (`tcp;msg`: tcp connections that answers stay on; "  \
	  "`tcp;ofi_rxm`: rxm, which lends memory but lets a local process take "  \
	  "over a connection; `shm`; or any provider's name)")                      \
	X("mds", mds, SERVER, NONE("required"), 1, 1, "",                          \
	  "`host:port` of the metadata daemon")                                     \
	X("fs_id", fs_id, STRING, NONE("none: directories are told apart by "    \
	  "daemon kind and index only"), 0, 0, "",                                 \
	  "the file system's id (`tessera-genconfig` makes a random one); each "   \
	  "daemon records it in its directory at the first start and refuses "     \
	  "another file system's directory")                                       \
	X("ios", ios, SERVERS, NONE("at least one"), 1, TP_MAX_SERVERS, "",        \
	  "`host:port` of a storage daemon, one line each; the order of these "    \
	  "lines gives each daemon's index")                                        \
	X("timeout_ms", timeout_ms, U32, DEF("10000"), 1, 3600 * 1000u, "ms",      \
	  "deadline of a small request (a daemon that does not answer at all is "  \
	  "found by the connect timeout's probe sooner); also the daemons' queue " \
	  "deadline")                                                               \
	X("connect_timeout_ms", connect_timeout_ms, U32, DEF("5000"), 1,          \
	  3600 * 1000u, "ms", "connecting and authenticating to a daemon; a "      \
	  "daemon that leaves a request unanswered this long past a probe is "     \
	  "marked down, and calls to it fail at once until a probe finds it back") \
	X("bulk_min_rate", bulk_min_rate, SIZE32, DEF("1M"), 1, UINT32_MAX,        \
	  "bytes/s", "a request carrying data may take `timeout_ms` plus its "    \
	  "bytes at this rate")                                                     \
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
	X("name_lease_ms", name_lease_ms, U32, DEF("1000"), 0, 60 * 1000u, "ms",  \
	  "how long a client (the mount) may answer stats and opens from the "    \
	  "names and attributes the metadata daemon leased it without hearing "   \
	  "from it; a change by another client returns once every holder has "   \
	  "acknowledged it, so this bounds both how stale a client cut off from " \
	  "the daemon may be and how long a change waits for a holder that does " \
	  "not answer (0: no leases, every stat and open asks)")                  \
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
	  "1: the metadata daemon treats an acting uid 0 as "                      \
	  "`squash_uid`/`squash_gid`, from every host")                             \
	X("daemon_uid", daemon_uid, U32, DEF("0"), 0, UINT32_MAX - 1, "",         \
	  "the uid every daemon runs as: clients restrict their MUNGE "            \
	  "credentials to it, and a daemon whose effective uid differs refuses "   \
	  "to start (`tessera-genconfig` writes the uid it runs as, or "           \
	  "`--daemon-user`'s)")                                                     \
	X("admin_hosts", admin_hosts, HOSTS,                                        \
	  NONE("the hosts of the `mds` and `ios` lines"), 0, 0, "",                \
	  "where uid 0 is root of the file system (names or IPv4 addresses, "      \
	  "as munged's origin address): uid 0 from any other host acts as "        \
	  "`squash_uid` for itself and never gets the admin capability. A "        \
	  "loopback daemon host stands for this host's own addresses")             \
	X("squash_uid", squash_uid, U32, DEF("65534"), 0, UINT32_MAX - 1, "",     \
	  "the uid a squashed uid 0 acts as (`root_squash`, `admin_hosts`)")        \
	X("squash_gid", squash_gid, U32, DEF("65534"), 0, UINT32_MAX - 1, "",     \
	  "the gid a squashed uid 0 acts as")                                       \
	X("key_file", key_file, PATH, NONE("required by the daemons"), 0, 0, "",   \
	  "the daemons' shared capability key: 64 hex digits, mode 0600; clients " \
	  "never read it")                                                          \
	X("encrypt", encrypt, BOOL, DEF("0"), 0, 1, "",                            \
	  "1: frames' bodies and raw data are encrypted (ChaCha20) as well as "   \
	  "sealed; 0: sealed only (integrity). The daemons' value holds for "     \
	  "every session; a client whose own config says 1 demands it "          \
	  "(docs/security.md, Sessions)")                                          \
	X("measure_seal_off", measure_seal_off, BOOL, DEF("0"), 0, 1, "",          \
	  "for measurement only (make bench): 1 leaves raw data outside the "     \
	  "frames' tags, as before; a session gets it only when daemon and "      \
	  "client both say 1, and the daemons log a warning. Never on a real "     \
	  "system")                                                                \
	X("cap_lifetime_ms", cap_lifetime_ms, U32, DEF("600000"), 100,            \
	  7 * 24 * 3600 * 1000u, "ms", "how long a capability is valid; clients "  \
	  "renew theirs after three quarters of it")                                \
	X("session_idle_s", session_idle_s, U32, DEF("600"), 10, 24 * 3600, "s",  \
	  "a daemon drops a session idle this long; clients renew theirs after "   \
	  "half of it")                                                             \
	X("sessions_max", sessions_max, U32, DEF("16384"), 2, 1u << 20,           \
	  "sessions", "sessions a daemon keeps open at once")                       \
	X("sessions_per_uid", sessions_per_uid, U32, DEF("1024"), 1, 1u << 20,    \
	  "sessions", "sessions one uid may hold at a daemon; a uid past it "       \
	  "loses its own least recently used one, and a full table gives way "      \
	  "from the uid holding the most")                                          \
	X("lock_requests_per_uid", lock_requests_per_uid, U32, DEF("65536"), 1,   \
	  1u << 20, "requests", "storage daemons: lock requests one uid may hold " \
	  "in the lock table (of 2^20)")                                            \
	X("lock_bytes_per_uid", lock_bytes_per_uid, SIZE64, DEF("64M"), 4096,      \
	  256u << 20, "bytes", "storage daemons: lock table memory one uid's "     \
	  "requests may hold (of 256 MiB)")                                         \
	X("lock_pending_per_uid", lock_pending_per_uid, U32, DEF("256"), 1, 1024,  \
	  "descriptions", "storage daemons: locks sent in several messages that "  \
	  "one uid may have in progress (of 1024)")                                 \
	X("local_tokens_per_uid", local_tokens_per_uid, U32, DEF("16"), 1, 64,     \
	  "tokens", "storage daemons: local-read tokens one uid may have waiting " \
	  "(of 64)")                                                                \
	X("local_conns_per_uid", local_conns_per_uid, U32, DEF("8"), 1, 32,        \
	  "connections", "storage daemons: connections one uid may have open to "  \
	  "the local-read socket (of 32)")                                          \
	X("counters_per_uid", counters_per_uid, U32, DEF("16"), 1, 64,            \
	  "counters", "storage daemons: shared-pointer counters (`FETCH_ADD` "      \
	  "keys) one uid may make on one object (of 64)")                           \
	X("io_threads", io_threads, U32, NONE("the online CPUs, at most 8"), 0,   \
	  TP_MAX_IO_THREADS, "threads", "storage daemons: disk worker threads; 0 " \
	  "runs the disk work inside the event loop. Each object's requests run "  \
	  "in arrival order, different objects' in parallel")                      \
	X("local_reads", local_reads, BOOL, DEF("1"), 0, 1, "",                    \
	  "1: a client reads the objects of storage daemons on its own host (and " \
	  "network namespace) from their files, checked against their "           \
	  "checksums; 0: every read goes through the daemons, which refuse "      \
	  "`LOCAL_OPEN`")                                                        \
	X("sieve_gap", sieve_gap, SIZE32, DEF("4K"), 0, 64u << 20, "bytes",        \
	  "storage daemons: pieces of one request at most this far apart move as " \
	  "one span (read whole, or written by data sieving: read, laid over, "   \
	  "written back); 0 joins only touching pieces. At most `sieve_span`")     \
	X("sieve_span", sieve_span, SIZE32, DEF("4M"), 0, 64u << 20, "bytes",      \
	  "storage daemons: the most bytes one such span covers (gaps included; "  \
	  "a longer piece moves by itself); 0 moves every piece by itself")      \
	X("csum_block", csum_block, SIZE32, DEF("4K"), 512, 1u << 20, "bytes",    \
	  "storage daemons: bytes of an object per checksum (CRC32C), a power "   \
	  "of two; a write rewrites the whole blocks it touches (read, checked, " \
	  "summed again). On-disk format: a store keeps the value it was made "  \
	  "with, and a daemon whose value differs refuses to start (a store "    \
	  "made before this key: 4K)")                                            \
	X("spare_files", spare_files, U32, DEF("64"), 0, 4096, "files",            \
	  "storage daemons: empty files kept ready (in the store's `spare` "      \
	  "directory, made by a thread of their own) to become new objects' "    \
	  "files, so a first write renames one instead of creating it; removed " \
	  "objects' files never lent to a local reader are emptied and kept "    \
	  "too, up to 4096. 0: none, each new object's files are made by its "  \
	  "write and a remove unlinks them")                                      \
	X("vmerge_idle_ms", vmerge_idle_ms, U32, DEF("10000"), 10, 24 * 3600 * 1000u, \
	  "ms", "metadata daemon: a versioned file with unmerged versions and no " \
	  "commit for this long is merged into its objects (no client need "       \
	  "sync or close it)")                                                     \
	X("vmerge_commits", vmerge_commits, U32, DEF("2048"), 1, 4096, "commits", \
	  "metadata daemon: a versioned file with this many unmerged commits "     \
	  "is merged at once (half its limit of 4096, which makes writers "       \
	  "merge before they commit more)")                                        \
	X("vmerge_log_percent", vmerge_log_percent, U32, DEF("50"), 1, 100, "%",  \
	  "storage daemons: a versioned write's reply asks for a merge of its "    \
	  "file once the object's log (or all the daemon's logs) holds this "      \
	  "share of its record or byte limit")                                     \
	X("vmerge_files", vmerge_files, U32, DEF("8"), 1, 1024, "files",           \
	  "metadata daemon: versioned files it merges at once (one merge per "     \
	  "file at a time, one request in flight per storage daemon)")

#endif /* TESSERA_TP_CONFIG_KEYS_H */
