#!/usr/bin/env bash
# test_fuse.sh - tessera-fuse against a real cluster (1 mds + 4 ios on
# loopback), with CMocka-style output for tests/run-suites.sh.
#
# Needs root, /dev/fuse, fusermount3, fio, setpriv, python3, getfattr,
# setfattr, rsync. Without a
# usable /dev/fuse it reports one skipped test and exits 0.
# TESSERA_BUILD names the build directory (default: build/); with
# TESSERA_KEEP=1 the scratch directory (logs, per-test output) is kept.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin

SUITE=fuse
N_IOS=4
HARNESS_NEEDS="fio setpriv python3 getfattr setfattr rsync"
. "$top/tests/integ/fuse_harness.sh"
M1=$D/mnt1
M2=$D/mnt2
M3=$D/mnt3   # long attribute and name caches (close_to_open)

# -------------------------------------------------------------- the tests

# Reads that meet an object's end (the mount's page-cache reads ask no
# daemon the size; the kernel clips them): a small file read to its end
# and a sparse file whose hole spans objects read back whole through the
# other mount, and O_DIRECT reads (dd, and fcntl setting it on an open
# descriptor) return the exact size, not the zeros past it.
t_read_ends() {
	head -c 3901 /dev/urandom >"$D/small"
	cp "$D/small" "$M1/small"
	cmp "$D/small" "$M2/small" || die "small file read back differs"
	[ "$(wc -c <"$M2/small")" = 3901 ] || die "small file reads $(wc -c <"$M2/small") bytes"
	[ "$(dd if="$M1/small" iflag=direct bs=4096 status=none | wc -c)" = 3901 ] ||
		die "O_DIRECT read is not 3901 bytes"
	python3 - "$M2/small" <<'PY' || die "O_DIRECT set by fcntl"
import fcntl, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
assert len(os.read(fd, 10)) == 10
fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_DIRECT)
n = os.preadv(fd, [mmap.mmap(-1, 8192)], 0)
sys.exit(0 if n == 3901 else "read %d bytes" % n)
PY
	python3 - "$D/sparse" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, b"a" * 100, 0)
os.pwrite(fd, b"b" * 100, 200000)  # (objects 1 and 2 of 64 KiB strips: a hole)
os.close(fd)
PY
	cp --sparse=always "$D/sparse" "$M1/sparse"
	cmp "$D/sparse" "$M2/sparse" || die "sparse file read back differs"
	dd if="$M2/sparse" iflag=direct bs=1M status=none | cmp - "$D/sparse" ||
		die "sparse file read O_DIRECT differs"
	rm -f "$M1/small" "$M1/sparse"
}

t_cluster_and_mount() {
	start_cluster && mount_fs "$M1" && mount_fs "$M2"
}

t_basic() {
	mkdir "$M1/basic"
	echo hello >"$M1/basic/a"
	[ "$(cat "$M1/basic/a")" = hello ] || die "read back differs"
	[ "$(stat -c %s "$M1/basic/a")" = 6 ] || die "size is not 6"
	chmod 0640 "$M1/basic/a"
	[ "$(stat -c %a "$M1/basic/a")" = 640 ] || die "chmod did not stick"
	chown 123:456 "$M1/basic/a"
	[ "$(stat -c %u:%g "$M1/basic/a")" = 123:456 ] || die "chown did not stick"
	touch -d '2001-02-03 04:05:06' "$M1/basic/a"
	[ "$(stat -c %Y "$M1/basic/a")" = "$(date -d '2001-02-03 04:05:06' +%s)" ] || die "utimens did not stick"
	truncate -s 100000 "$M1/basic/a"
	[ "$(stat -c %s "$M1/basic/a")" = 100000 ] || die "truncate up failed"
	truncate -s 3 "$M1/basic/a"
	[ "$(cat "$M1/basic/a")" = hel ] || die "truncate down failed"
	df "$M1" | grep -q tessera || die "statfs: df does not show the mount"
	sync "$M1/basic/a"   # fsync
	# a mount started without -o max_idle_threads logs nothing of it
	! grep -q "Ignoring invalid" "$D/fuse-$(basename "$M1").log" ||
		die "the mount's log has libfuse's idle-threads warning"
}

# The mount raises its readahead to 4 MiB (the kernel keeps FUSE mounts
# at 128 KiB), and a file read through it in 1 MiB blocks, then from odd
# offsets, is what was written.
t_readahead() {
	local dev kb
	dev=$(mountpoint -d "$M1")
	kb=$(cat "/sys/class/bdi/$dev/read_ahead_kb")
	[ "$kb" = 4096 ] || die "readahead of $M1 ($dev) is $kb KiB, not 4096: $(cat "$D/fuse-$(basename "$M1").log")"
	head -c 20M /dev/urandom >"$D/ra"
	cp "$D/ra" "$M1/ra"
	cmp "$D/ra" "$M1/ra" || die "sequential read differs"
	dd if="$M1/ra" bs=12345 skip=7 count=300 status=none | cmp - <(dd if="$D/ra" bs=12345 skip=7 count=300 status=none) ||
		die "read from an odd offset differs"
	rm -f "$M1/ra" "$D/ra"
}

t_copy_256m() {
	head -c 256M /dev/urandom >"$D/big"
	local t0=$SECONDS
	cp "$D/big" "$M1/big"
	cp "$M1/big" "$D/big.out"
	echo "copied 256 MiB in and out in $((SECONDS - t0)) s"
	local a b
	a=$(sha256sum <"$D/big") b=$(sha256sum <"$D/big.out")
	[ "$a" = "$b" ] || die "sha256 differs: $a vs $b"
	[ "$(stat -c %s "$M1/big")" = 268435456 ] || die "wrong size"
	rm -f "$D/big.out"
}

t_tar_tree() {
	local dirs="client proto server dataloops tests deploy"
	mkdir "$M1/src" "$D/src.out"
	tar -C "$top" -cf - $dirs | tar -C "$M1/src" -xf -
	tar -C "$M1/src" -cf - $dirs | tar -C "$D/src.out" -xf -
	for d in $dirs; do
		diff -r "$top/$d" "$D/src.out/$d" || die "tree $d differs"
	done
	rm -rf "$D/src.out"
	rm -rf "$M1/src"
	[ ! -e "$M1/src" ] || die "rm -rf left the tree"
}

t_fio_sequential() {
	mkdir -p "$M1/fio"
	timeout 300 fio --name=seq --directory="$M1/fio" --ioengine=psync --bs=1M --size=64M \
		--rw=write --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 --end_fsync=1
	timeout 300 fio --name=seq --directory="$M1/fio" --ioengine=psync --bs=1M --size=64M \
		--rw=read --verify=crc32c --verify_only=1 --verify_fatal=1 --verify_state_save=0
}

t_fio_random() {
	mkdir -p "$M1/fio"
	timeout 300 fio --name=rnd --directory="$M1/fio" --ioengine=psync --bs=4k --size=16M \
		--rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 --numjobs=2
	timeout 300 fio --name=rnd --directory="$M1/fio" --ioengine=psync --bs=4k --size=16M \
		--rw=randread --verify=crc32c --verify_only=1 --verify_fatal=1 --verify_state_save=0 --numjobs=2
	rm -rf "$M1/fio"
}

t_namespace() {
	local d=$M1/ns
	mkdir "$d" "$d/sub"
	echo one >"$d/f1"
	echo two >"$d/f2"
	mv "$d/f1" "$d/f2"                     # rename over an existing file
	[ "$(cat "$d/f2")" = one ] || die "rename did not replace the target"
	[ ! -e "$d/f1" ] || die "rename left the source"
	mv "$d/f2" "$d/sub/f3"                 # into another directory
	mv "$d/sub" "$d/sub2"                  # a directory
	[ "$(cat "$d/sub2/f3")" = one ] || die "file lost in directory rename"
	rmdir "$d/sub2" 2>"$D/err" && die "rmdir of a non-empty directory succeeded"
	grep -q "not empty" "$D/err" || die "rmdir: $(cat "$D/err")"
	echo x >"$d/excl"
	mv -n "$d/sub2/f3" "$d/excl" || true
	[ "$(cat "$d/excl")" = x ] || die "mv -n replaced the target"
	rm "$d/sub2/f3"
	[ ! -e "$d/sub2/f3" ] || die "unlinked file still there"
	cat "$d/sub2/f3" 2>/dev/null && die "reading an unlinked file worked"
	rmdir "$d/sub2"
	# An open file that is unlinked stays readable until closed.
	echo still-here >"$d/open"
	exec 4<"$d/open"
	rm "$d/open"
	[ "$(cat <&4)" = still-here ] || die "open file unreadable after unlink"
	exec 4<&-
	# readdir over several pages (the FUSE side reads 128 names a page)
	mkdir "$d/many"
	for ((i = 0; i < 700; i++)); do : >"$d/many/f$i"; done
	[ "$(ls -f "$d/many" | grep -c '^f')" = 700 ] || die "readdir saw $(ls -f "$d/many" | grep -c '^f') of 700"
	[ "$(ls "$d/many" | sort | uniq | wc -l)" = 700 ] || die "readdir duplicates"
	python3 - "$d/many" <<'EOF'
import os, sys
d = sys.argv[1]
# Read the directory while renaming entries away: each name that stays
# throughout must still be seen once.
names = set()
with os.scandir(d) as it:
    for i, e in enumerate(it):
        names.add(e.name)
        if i == 100:
            for k in range(600, 700):
                os.rename(os.path.join(d, "f%d" % k), os.path.join(d, "g%d" % k))
missing = [f"f{k}" for k in range(600) if f"f{k}" not in names]
assert not missing, missing[:5]
EOF
	rm -rf "$d/many"
	[ ! -e "$d/many" ] || die "rm -rf many failed"
}

# Renames of a file beside opens of it on one mount: an open holds the
# file's path in libfuse until answered, a rename queues behind it, and
# whatever the open asks the mount itself for must not queue behind the
# rename (it hung the mount). Mount 2 changes the file's mtime and size
# between the renames, so each open on mount 1 has the kernel's to set.
# Bounded: a hang fails here, killed.
t_rename_open() {
	mkdir "$M1/ro"
	echo x >"$M1/ro/f"
	timeout -s KILL 120 python3 - "$M1/ro" "$M2/ro" <<'EOF' || die "renames beside opens did not finish"
import os, sys, time
d, other = sys.argv[1], sys.argv[2]
f, g = d + "/f", d + "/g"
pid = os.fork()
if pid == 0:
    while not os.path.exists(d + "/stop"):
        try:
            os.close(os.open(f, os.O_RDONLY))
        except FileNotFoundError:
            pass
    os._exit(0)
end = time.time() + 4
i = 0
while time.time() < end:
    i += 1
    os.utime(other + "/f", (1000000 + i, 1000000 + i))
    if i % 3 == 0:
        os.truncate(other + "/f", i % 7)
    os.rename(f, g)
    os.rename(g, f)
open(d + "/stop", "w").close()
os.waitpid(pid, 0)
print("rename_open: %d rounds" % i)
EOF
	rm -rf "$M1/ro"
}

# Close-to-open while this mount serves utimes of other files: each open
# on mount 1 of a file mount 2 just rewrote sets the kernel's size and
# mtime, and a utime of another file meanwhile must not make the mount
# refuse that as stale (a guard that counted every file's changes left
# 657 of 1,064 reads short).
t_utimes_beside_opens() {
	mkdir "$M1/ub"
	for k in $(seq 1 20); do echo x >"$M1/ub/f$k"; echo y >"$M1/ub/u$k"; done
	timeout -s KILL 120 python3 - "$M1/ub" "$M2/ub" <<'EOF' || die "an open read what was there before the other mount's close"
import os, sys, time
d, other = sys.argv[1], sys.argv[2]
pid = os.fork()
if pid == 0:
    i = 0
    while not os.path.exists(d + "/stop"):
        i += 1
        os.utime(d + "/u%d" % (i % 20 + 1), (i, i))
    os._exit(0)
stale, n, end = 0, 0, time.time() + 3
while time.time() < end:
    n += 1
    data = b"z" * (n % 50 + 1)
    with open(other + "/f%d" % (n % 20 + 1), "wb") as f:
        f.write(data)
    with open(d + "/f%d" % (n % 20 + 1), "rb") as f:
        stale += f.read() != data
open(d + "/stop", "w").close()
os.waitpid(pid, 0)
print("utimes_beside_opens: %d rounds, %d stale" % (n, stale))
sys.exit(stale != 0)
EOF
	rm -rf "$M1/ub"
}

t_two_mounts() {
	echo from-one >"$M1/two-a"
	[ "$(cat "$M2/two-a")" = from-one ] || die "mount 2 does not see mount 1's file"
	head -c 3M /dev/urandom >"$D/r"
	cp "$D/r" "$M2/two-b"
	cmp "$D/r" "$M1/two-b" || die "mount 1 reads different data"
	mkdir "$M2/two-d"
	ls "$M1" | grep -qx two-d || die "mount 1 does not list mount 2's directory"
	rm "$M2/two-a"
	sleep 1.2   # entry_timeout=1: mount 1 may cache the name that long
	[ ! -e "$M1/two-a" ] || die "mount 1 still sees the removed file"
	rm -f "$D/r"
}

# Name leases (docs/design.md): mount 1 answers stats from what the
# metadata daemon leased it; mount 2's chmod, rename and removal reach it
# within the kernel's own attr_timeout/entry_timeout (1 s) all the same
# (waited for up to 3 s: $SECONDS counts whole seconds, and CI is slow).
# A mount with -o name_cache=0 (our option, which libfuse must not see)
# works as before.
until_out() {   # until_out SECONDS WANT COMMAND...: COMMAND prints WANT in time
	local end=$((SECONDS + $1)) want=$2; shift 2
	until [ "$("$@" 2>&1)" = "$want" ]; do
		[ $SECONDS -le $end ] || return 1
		sleep 0.05
	done
}

exists() { [ -e "$1" ] && echo yes || echo no; }

t_name_leases() {
	local m3=$D/mnt4
	mkdir -p "$M1/nl"
	echo 12345 >"$M1/nl/f"
	echo x >"$M1/nl/gone"
	for i in 1 2 3; do stat -c %a "$M1/nl/f" "$M1/nl/gone" >/dev/null; done
	chmod 600 "$M2/nl/f"
	until_out 3 600 stat -c %a "$M1/nl/f" || die "mount 1 keeps the old mode"
	# (not the size: the kernel keeps its own of a file it caches until
	# the file's next open here, docs/user-guide.md)
	mkdir "$M1/nl/sub"
	echo y >"$M1/nl/sub/g"
	stat "$M1/nl/sub/g" >/dev/null
	mv "$M2/nl/sub" "$M2/nl/sub2"
	until_out 3 no exists "$M1/nl/sub/g" || die "mount 1 still sees the old path"
	[ "$(cat "$M1/nl/sub2/g")" = y ] || die "mount 1 does not see the new path"
	rm "$M2/nl/gone"
	until_out 3 no exists "$M1/nl/gone" || die "mount 1 still sees the removed file"
	# one cache serves every uid of a mount, and the kernel checks each
	# path's permissions (default_permissions) on what it answers
	mkdir -m 0700 "$M1/nl/priv"
	echo s >"$M1/nl/priv/s"
	for i in 1 2; do stat "$M1/nl/priv/s" >/dev/null; done   # held by mount 1
	[ "$(as_nobody bash -c "$(declare -f exists); exists $M1/nl/priv/s")" = no ] ||
		die "uid 65534 finds a file in root's 0700 directory"
	as_nobody cat "$M1/nl/f" >/dev/null 2>&1 && die "uid 65534 reads root's 0600 file"
	chmod 0755 "$M2/nl/priv"
	until_out 3 yes as_nobody bash -c "$(declare -f exists); exists $M1/nl/priv/s" ||
		die "uid 65534 does not find the file once mount 2 opened the directory"
	[ "$(as_nobody cat "$M1/nl/priv/s")" = s ] || die "uid 65534 cannot read the file then"
	mkdir -p "$m3"
	mount_fs "$m3" -o name_cache=0,attr_timeout=1
	until_out 5 yes exists "$m3/nl/f" || die "the name_cache=0 mount does not serve"
	[ "$(stat -c %a "$m3/nl/f")" = 600 ] || die "the name_cache=0 mount shows the wrong mode"
	fusermount3 -u "$m3"
	rm -rf "$M1/nl"
}

# Writes and truncates move mtime, as make and find -newer need; a write
# by another client (the CLI) shows through a mount once its attribute
# cache (1 s) has run out.
t_times() {
	local d=$M1/times
	mkdir "$d"
	printf 'out: in\n\tcp in out\n' >"$d/Makefile"
	echo 1 >"$d/in"
	make -s -C "$d"
	make -q -C "$d" || die "make: out is stale right after it was made"
	sleep 0.05   # the storage daemons' file system stamps by the kernel's tick
	echo 2 >>"$d/in"   # a write, no create
	make -q -C "$d" && die "make: a write to in did not make out stale"
	make -s -C "$d"
	[ "$(cat "$d/out")" = "$(printf '1\n2')" ] || die "make did not rebuild out"
	sleep 0.05
	truncate -s 1 "$d/in"
	make -q -C "$d" && die "make: truncating in did not make out stale"
	[ -n "$(find "$d" -name in -newer "$d/out")" ] || die "find -newer does not see in"
	make -s -C "$d"
	touch -d '2001-02-03 04:05:06' "$d/in"
	[ "$(stat -c %Y "$d/in")" = "$(date -d '2001-02-03 04:05:06' +%s)" ] || die "utimens after a write did not stick"
	make -q -C "$d" || die "make: in set to 2001 still looks newer than out"
	sleep 0.05
	echo 3 >"$D/in3"
	"$BIN/tessera" -c "$CONF" cp "$D/in3" tessera:/times/in >/dev/null
	sleep 1.2   # attr_timeout=1: mount 2 may cache the old times that long
	[ "$M2/times/in" -nt "$M2/times/out" ] || die "mount 2 does not see the CLI's write as newer"
	rm -rf "$d" "$D/in3"
}

# What the mount answers from a change's own reply (fuse_answer.c): a
# directory's attributes right after a create, mkdir, mknod, symlink,
# link, unlink or rmdir in it, and a file's after chmod, chown and touch,
# are what the metadata daemon holds (the CLI asks it directly; a
# regular file's ctime aside, which the kernel keeps under the writeback
# cache).
t_answered() {
	local d=$M1/answered
	mkdir "$d"
	/usr/bin/python3 - "$d" "$BIN/tessera" "$CONF" <<'EOF' || die "answered attributes differ"
import json, os, subprocess, sys
d, cli, conf = sys.argv[1:4]

def same(path, what):
    st = os.stat(path, follow_symlinks=False)
    rel = "/answered" + path[len(d):]
    out = subprocess.run([cli, "-c", conf, "stat", "-j", rel], check=True,
                         capture_output=True, text=True).stdout
    j = json.loads(out)
    j = j[0] if isinstance(j, list) else j
    got = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink, st.st_mode & 0o7777, st.st_uid]
    want = [j["size"], j["mtime_ns"], j["ctime_ns"], j["nlink"], j["mode"], j["uid"]]
    if j["type"] != "directory":
        got[2] = want[2] = None  # a file's ctime is the kernel's own (writeback)
    if got != want:
        raise SystemExit("%s: the mount shows %s, the metadata daemon %s" % (what, got, want))

os.close(os.open(d + "/a", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)); same(d, "create")
os.mkdir(d + "/s"); same(d, "mkdir")
os.symlink("a", d + "/l"); same(d, "symlink")
os.mkfifo(d + "/p"); same(d, "mkfifo")
os.link(d + "/a", d + "/h"); same(d, "link")
os.unlink(d + "/h"); same(d, "unlink")
os.rmdir(d + "/s"); same(d, "rmdir")
os.mkdir(d + "/m", 0o700)   # (cp -a's order: contents, then the mode)
os.close(os.open(d + "/m/x", os.O_CREAT | os.O_WRONLY, 0o644))
os.chmod(d + "/m", 0o755)
os.listdir(d); same(d + "/m", "chmod of a directory just changed")
with open(d + "/a", "w") as f:
    f.write("x" * 5000)
os.chmod(d + "/a", 0o600); same(d + "/a", "chmod")
os.chown(d + "/a", 123, 456); same(d + "/a", "chown")
os.utime(d + "/a", (1000000, 2000000)); same(d + "/a", "utime")
EOF
	rm -rf "$d"
}

# Close-to-open: an open that starts after another client closed (or
# synced) sees the new size and data, however long the kernel may cache
# attributes: mount 3 caches them for an hour. Writers: the CLI (the
# library), mount 2, a truncate by the CLI; a reader without the mount
# (the CLI) sees mount 3's writes.
t_close_to_open() {
	local d=$M3/cto
	mount_fs "$M3" -o attr_timeout=3600,entry_timeout=3600
	mkdir "$d"
	touch "$d/x"
	[ "$(wc -c <"$d/x")" = 0 ] || die "new file is not empty"   # mount 3 holds size 0
	head -c 100000 /dev/urandom >"$D/cto"
	"$BIN/tessera" -c "$CONF" cp "$D/cto" tessera:/cto/x >/dev/null
	[ "$(wc -c <"$d/x")" = 100000 ] || die "after the CLI's copy, mount 3 reads $(wc -c <"$d/x") bytes"
	cmp "$D/cto" "$d/x" || die "mount 3 reads other data than the CLI wrote"
	head -c 5000 /dev/urandom >"$D/cto.more"
	cat "$D/cto.more" >>"$M2/cto/x"   # mount 2 appends, closes
	cat "$D/cto" "$D/cto.more" | cmp - "$d/x" || die "mount 3 misses mount 2's append"
	# again and again, each read opened as soon as the append is closed:
	# the break of mount 3's lease on x may still be on its way then, and
	# the open's own reply must win over what mount 3 held (seen missing
	# 59 of 100 appends when it did not)
	head -c 1000 /dev/urandom >"$D/cto.more"
	: >"$D/cto.all"
	touch "$d/z"
	for i in $(seq 20); do
		wc -c <"$d/z" >/dev/null   # mount 3 holds z's size under a lease
		cat "$D/cto.more" >>"$M2/cto/z"
		cat "$D/cto.more" >>"$D/cto.all"
		cmp "$D/cto.all" "$d/z" || die "round $i: mount 3 misses mount 2's append"
	done
	# a holder that cannot acknowledge (mount 3 stopped) holds another
	# mount's change up for about a lease (name_lease_ms, 1 s), no longer;
	# woken, it reads the change
	local t0 ms
	wc -c <"$d/z" >/dev/null
	kill -STOP "${MOUNT_PID[$M3]}"
	t0=$(date +%s%N)
	timeout 10 sh -c 'cat "$1" >>"$2"' sh "$D/cto.more" "$M2/cto/z"
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill -CONT "${MOUNT_PID[$M3]}"
	cat "$D/cto.more" >>"$D/cto.all"
	echo "an append while mount 3 was stopped took $ms ms"
	[ "$ms" -ge 500 ] || die "the append did not wait for the stopped holder ($ms ms)"
	[ "$ms" -lt 9000 ] || die "the append waited $ms ms for a stopped holder"
	cmp "$D/cto.all" "$d/z" || die "mount 3, woken, misses the append"
	"$BIN/tessera" -c "$CONF" truncate -s 10 /cto/x >/dev/null
	[ "$(wc -c <"$d/x")" = 10 ] || die "after a truncate by the CLI, mount 3 reads $(wc -c <"$d/x") bytes"
	head -c 10 "$D/cto" | cmp - "$d/x" || die "truncated data differs"
	# the other attributes: an open that finds them changed by another
	# mount has the kernel drop what it held (fuse_kattr.c), hour-long
	# caches or not. (Files mount 3 has not opened: under the writeback
	# cache the kernel drops a file's st_blocks at each close, and asks
	# the mount again at the next stat anyway.)
	local mode
	for m in 640 604; do
		echo "$m" >"$M2/cto/m$m"
		stat -c %a "$d/m$m" >/dev/null   # mount 3's kernel holds its mode
		chmod "$m" "$M2/cto/m$m"
		exec 3<"$d/m$m"
		mode=$(stat -c %a "$d/m$m")
		exec 3<&-
		[ "$mode" = "$m" ] || die "after mount 2's chmod $m, an open on mount 3 sees mode $mode"
	done
	echo "from mount 3" >"$d/y"
	[ "$("$BIN/tessera" -c "$CONF" cat /cto/y)" = "from mount 3" ] || die "the CLI does not read mount 3's file"
	rm -rf "$d" "$D/cto" "$D/cto.more" "$D/cto.all"
	fusermount3 -u "$M3"
}

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

t_permissions() {
	mkdir -p "$M1/perm"
	chmod 0755 "$M1/perm"
	echo secret >"$M1/perm/private"
	chmod 0600 "$M1/perm/private"
	echo open >"$M1/perm/public"
	chmod 0644 "$M1/perm/public"
	[ "$(as_nobody cat "$M1/perm/public")" = open ] || die "uid 65534 cannot read a 0644 file"
	as_nobody cat "$M1/perm/private" >/dev/null 2>"$D/err" && die "uid 65534 read a 0600 root file"
	grep -q "Permission denied" "$D/err" || die "expected Permission denied, got: $(cat "$D/err")"
	as_nobody touch "$M1/perm/new" 2>"$D/err" && die "uid 65534 created a file in a 0755 root dir"
	grep -q "Permission denied" "$D/err" || die "expected Permission denied, got: $(cat "$D/err")"
	# ... and the daemon, not only the kernel, checks as the caller: a
	# directory of its own works, and its file belongs to it.
	mkdir "$M1/perm/nobody" && chown 65534:65534 "$M1/perm/nobody"
	as_nobody sh -c "echo mine >'$M1/perm/nobody/f'"
	[ "$(stat -c %u:%g "$M1/perm/nobody/f")" = 65534:65534 ] || die "file not owned by its creator"
	as_nobody chmod 0600 "$M1/perm/nobody/f"
	as_nobody chown 0 "$M1/perm/nobody/f" 2>/dev/null && die "uid 65534 gave a file away"
	[ "$(cat "$M1/perm/nobody/f")" = mine ] || die "root cannot read everything"
}

# Unlinks answered before they are sent (client/fuse/fuse_remove.c):
# what the mount does next, and the other mount, see them; the leased
# permissions decide, not only the kernel's cached ones; a removal the
# daemon never applied leaves the file, is logged, and fails the next
# fsync of a directory.
t_remove_behind() {
	local d=$M1/rb i
	mkdir -p "$d/t/a" "$d/t/b"
	for i in $(seq 100); do echo "$i" >"$d/t/a/f$i"; echo "$i" >"$d/t/b/g$i"; done
	ln -s f1 "$d/t/a/link"
	rm -rf "$d/t"
	[ "$(exists "$d/t")" = no ] || die "mount 1 still sees the removed tree"
	[ -z "$(ls "$M2/rb")" ] || die "mount 2 still lists $(ls "$M2/rb" | head -3)"
	echo old >"$d/same"
	rm "$d/same"
	echo new >"$d/same"
	[ "$(cat "$d/same")" = new ] || die "mount 1 reads the removed file's data"
	[ "$(cat "$M2/rb/same")" = new ] || die "mount 2 reads the removed file's data"
	stat "$d/same" >/dev/null
	rm "$d/same"
	[ "$(exists "$d/same")" = no ] || die "mount 1 finds the name it just removed"
	# the directory as the removal leaves it, at once (pjdfstest unlink/00.t
	# stats it right after): changed later, one entry fewer
	local a i2
	mkdir "$d/times"
	for i2 in 1 2 3 4 5; do
		touch "$d/times/x" "$d/times/y" "$d/times/z"
		a=$(stat -c %Z "$d/times")
		sleep 1.05
		rm "$d/times/y"
		[ "$(stat -c %Z "$d/times")" -gt "$a" ] || die "round $i2: the directory's ctime did not move"
		[ "$(stat -c %Y "$d/times")" -gt "$a" ] || die "round $i2: the directory's mtime did not move"
		[ "$(stat -c %s "$d/times")" = 2 ] || die "round $i2: the directory holds $(stat -c %s "$d/times") entries, not 2"
		rm "$d/times/x" "$d/times/z"
	done
	# the sticky bit: not another's file, but one's own
	mkdir -m 1777 "$d/sticky"
	echo s >"$d/sticky/root"
	as_nobody rm -f "$d/sticky/root" 2>/dev/null && die "uid 65534 removed root's file from a sticky directory"
	as_nobody sh -c "echo n >'$d/sticky/own' && rm '$d/sticky/own'" ||
		die "uid 65534 cannot remove its own file from a sticky directory"
	[ "$(ls "$d/sticky")" = root ] || die "the sticky directory holds: $(ls "$d/sticky")"
	# mount 2 closes a directory while mount 1's kernel still holds it
	# open (its attributes, for 1 s): mount 1's leases, broken by then,
	# decide, and the unlink waits for the daemon, which refuses it
	mkdir -m 0777 "$d/open"
	echo o >"$d/open/f"
	as_nobody stat "$d/open/f" >/dev/null
	chmod 0755 "$M2/rb/open"
	sleep 0.3
	as_nobody rm -f "$d/open/f" 2>/dev/null && die "uid 65534's unlink in a closed directory succeeded"
	[ "$(cat "$d/open/f")" = o ] || die "the file went after a refused unlink"
	# unmounting sends what is queued first (queued while the daemon is
	# stopped: REMOVE_SENDERS of them on their way, the rest waiting)
	mount_fs "$M3"
	mkdir "$M3/rb/um"
	for i in $(seq 50); do echo "$i" >"$M3/rb/um/f$i"; done
	stat "$M3"/rb/um "$M3"/rb/um/f* >/dev/null
	sleep 0.5   # a new mount's first replies come before its leases
	stat "$M3"/rb/um "$M3"/rb/um/f* >/dev/null
	kill -STOP "$(cat "$D/mds.pid")"
	timeout 3 rm "$M3"/rb/um/f{1..50} || { kill -CONT "$(cat "$D/mds.pid")"; die "rm waited for the stopped daemon"; }
	fusermount3 -u "$M3"
	kill -CONT "$(cat "$D/mds.pid")"
	for ((i = 0; i < 100; i++)); do kill -0 "${MOUNT_PID[$M3]}" 2>/dev/null || break; sleep 0.1; done
	[ -z "$(ls "$M1/rb/um")" ] || die "after mount 3's unmount, $(ls "$M1/rb/um" | wc -l) of its removed files are left"
	# a removal the daemon never applies: answered while it is stopped,
	# lost when it is killed
	echo e >"$d/err"
	stat "$d" "$d/err" >/dev/null
	kill -STOP "$(cat "$D/mds.pid")"
	timeout 3 rm "$d/err" || { kill -CONT "$(cat "$D/mds.pid")"; die "the unlink waited for the stopped metadata daemon"; }
	kill -9 "$(cat "$D/mds.pid")"
	until_out 20 1 grep -c "the unlink of /rb/err, answered before it was sent, failed" "$D/fuse-mnt1.log" ||
		die "no log line for the failed removal"
	local ups
	ups=$(grep -c "metadata daemon .*up again" "$D/fuse-mnt1.log" || true)
	restart mds
	for ((i = 0; i < 300; i++)); do
		[ "$(grep -c "metadata daemon .*up again" "$D/fuse-mnt1.log")" -gt "$ups" ] && break
		sleep 0.1
	done
	until_out 10 e cat "$d/err" || die "the file whose removal failed is gone: $(cat "$d/err" 2>&1)"
	python3 - "$d" <<'PY' || die "fsync of a directory after the failed removal: wrong answer"
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.fsync(fd)
    raise SystemExit("the first fsync succeeded")
except OSError as e:
    if e.errno != errno.EIO:
        raise SystemExit("the first fsync failed with %s, not EIO" % e)
os.fsync(fd)   # told once
PY
	rm -rf "$d"
}

# The kernel's readdirplus gets the attributes the name cache holds
# (fuse_dir.c), so ls -l and rm -rf need no lookup per name; libfuse's
# debug log (-d) counts the lookups. A hard-linked file's names are still
# looked up (the mount learns its names that way). Run before any test
# restarts the metadata daemon: for a capability's lifetime after a
# restart it knows no file's size (mds_size.h), the name cache holds no
# regular file, and listings go without attributes.
t_readdirplus() {
	local d=$M3/rdp n0 n1 i
	mount_fs "$M3" -d
	mkdir "$d"
	for i in $(seq 20); do echo "$i" >"$d/f$i"; done
	ln "$M1/rdp/f1" "$M1/rdp/hard"   # (mount 3 learns the names by looking)
	chmod 600 "$d/f2"
	# the kernel's names (entry_timeout=1) run out, and mount 3 looks up
	# again what mount 1's link broke (its lease on the directory)
	sleep 1.2
	ls -l "$d" >/dev/null
	sleep 1.2
	n0=$(grep -c "opcode: LOOKUP" "$D/fuse-mnt3.log")
	ls -l "$d" >"$D/rdp.ls"
	n1=$(grep -c "opcode: LOOKUP" "$D/fuse-mnt3.log")
	[ $((n1 - n0)) -le 3 ] || die "ls -l of 21 names took $((n1 - n0)) lookups"
	[ "$(awk '$NF == "f2" {print $1, $2}' "$D/rdp.ls")" = "-rw------- 1" ] ||
		die "f2 is listed as: $(grep ' f2$' "$D/rdp.ls")"
	[ "$(awk '$NF == "hard" {print $1, $2, $5}' "$D/rdp.ls")" = "-rw-r--r-- 2 2" ] ||
		die "the hard link is listed as: $(grep ' hard$' "$D/rdp.ls")"
	rm "$d/hard"   # the mount knows f1 is its other name: looked up
	[ "$(stat -c %h "$d/f1")" = 1 ] || die "f1 keeps $(stat -c %h "$d/f1") links after its other name went"
	# another mount's change shows in the listing
	chmod 640 "$M2/rdp/f3"
	until_out 3 -rw-r----- bash -c "ls -l '$d' | awk '\$NF == \"f3\" {print \$1}'" ||
		die "mount 3 lists f3 as: $(ls -l "$d" | grep ' f3$')"
	fusermount3 -u "$M3"
	rm -rf "$M1/rdp" "$D/rdp.ls"
}

# Every file type on the mount (these gave EPERM before issue 23).
t_file_types() {
	local d=$M1/types
	mkdir -p "$d/dir"
	echo hello >"$d/plain"
	# symbolic links: the kernel follows them; lstat, readlink, ls -l
	ln -s plain "$d/soft" || die "symlink failed"
	ln -s ../../types/dir "$d/dir/up" || die "symlink into a directory failed"
	[ "$(readlink "$d/soft")" = plain ] || die "readlink: $(readlink "$d/soft")"
	[ "$(cat "$d/soft")" = hello ] || die "reading through a link failed"
	[ -L "$d/soft" ] && [ "$(stat -c %F:%s "$d/soft")" = "symbolic link:5" ] ||
		die "lstat of a link: $(stat -c %F:%s "$d/soft")"
	[ -d "$d/dir/up/up/up" ] || die "a chain of directory links failed"
	ls -l "$d" | grep -q "soft -> plain" || die "ls -l shows no target"
	[ "$(find "$d" -maxdepth 1 -type l | wc -l)" = 1 ] || die "readdir type of a link"
	# through the second mount (another node): the same link
	[ "$(readlink "$M2/types/soft")" = plain ] || die "link not seen by the second mount"
	# O_NOFOLLOW, loops, target length
	python3 - "$d" <<'PYEOF' || die "O_NOFOLLOW, loops or target length"
import errno, os, sys
d = sys.argv[1]
try:
    os.open(d + "/soft", os.O_RDONLY | os.O_NOFOLLOW)
except OSError as e:
    assert e.errno == errno.ELOOP, e
else:
    raise SystemExit("O_NOFOLLOW opened a link")
os.symlink("loop2", d + "/loop1")
os.symlink("loop1", d + "/loop2")
try:
    open(d + "/loop1")
except OSError as e:
    assert e.errno == errno.ELOOP, e
else:
    raise SystemExit("a symlink loop opened")
try:
    os.symlink("x" * 4096, d + "/long")
except OSError as e:
    assert e.errno == errno.ENAMETOOLONG, e
else:
    raise SystemExit("a 4096-byte target was taken")
os.symlink("y" * 4095, d + "/long")
assert os.readlink(d + "/long") == "y" * 4095
os.unlink(d + "/long")
PYEOF
	# chown of a link is the link's (lchown), not its target's
	chown -h 65534 "$d/soft"
	[ "$(stat -c %u "$d/plain")" = 0 ] || die "chown -h changed the target"
	[ "$(stat -c %u "$d/soft")" = 65534 ] || die "chown -h did not change the link"
	# hard links: one inode, link counts, a name's unlink keeps the data
	ln "$d/plain" "$d/hard" || die "hard link failed"
	[ "$(stat -c %h "$d/plain")" = 2 ] || die "nlink after link: $(stat -c %h "$d/plain")"
	[ "$(stat -c %i "$d/plain")" = "$(stat -c %i "$d/hard")" ] || die "two inodes"
	local ctime
	ctime=$(stat -c %Z.%z "$d/hard")
	sleep 1.1
	rm "$d/plain"
	[ "$(cat "$d/hard")" = hello ] || die "data gone with the first name"
	# this mount's other name at once (each name is a kernel inode, whose
	# count and ctime the mount sets at the unlink: fuse_links.c)
	[ "$(stat -c %h "$d/hard")" = 1 ] || die "nlink of the other name after unlink: $(stat -c %h "$d/hard")"
	[ "$(stat -c %Z.%z "$d/hard")" != "$ctime" ] || die "ctime of the other name kept after unlink"
	# (the second mount: M1's kernel keeps the other name's count for
	# attr_timeout)
	[ "$(stat -c %h "$M2/types/hard")" = 1 ] || die "nlink after unlink"
	python3 -c 'import os, sys; os.link(sys.argv[1], sys.argv[2])' "$d/dir" "$d/dirlink" \
		2>"$D/err" && die "a directory was hard-linked"
	grep -q "Operation not permitted" "$D/err" || die "link of a dir: $(cat "$D/err")"
	# rename over a hard link keeps the other name
	ln "$d/hard" "$d/hard2"
	echo other >"$d/other"
	mv "$d/other" "$d/hard2"
	[ "$(cat "$d/hard")" = hello ] && [ "$(cat "$d/hard2")" = other ] || die "rename over a link"
	[ "$(stat -c %h "$d/hard")" = 1 ] || die "nlink of the other name after rename over one"
	sleep 1.2   # the attr_timeout of M2's cached count
	[ "$(stat -c %h "$M2/types/hard")" = 1 ] || die "nlink after rename over a name"
	# a FIFO works as a FIFO (the kernel's), a socket and devices are kept
	mkfifo "$d/fifo" || die "mkfifo failed"
	[ -p "$d/fifo" ] || die "not a FIFO"
	(echo through-fifo >"$d/fifo") &
	[ "$(timeout 10 cat "$d/fifo")" = through-fifo ] || die "FIFO did not pass data"
	wait
	mknod "$d/null" c 1 3 || die "mknod c failed"
	[ "$(stat -c %F:%t:%T "$d/null")" = "character special file:1:3" ] ||
		die "device: $(stat -c %F:%t:%T "$d/null")"
	mknod "$d/blk" b 8 1 && [ -b "$d/blk" ] || die "mknod b failed"
	python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" \
		"$d/sock" || die "bind of a Unix socket failed"
	[ -S "$d/sock" ] || die "not a socket"
	as_nobody mknod "$d/dev2" c 1 3 2>/dev/null && die "uid 65534 made a device"
	rm "$d/fifo" "$d/null" "$d/blk" "$d/sock" "$d/soft" "$d/loop1" "$d/loop2"
	[ -z "$(find "$d" -maxdepth 1 ! -type d ! -type f)" ] || die "special files left"
}

# tar and rsync of a tree with symbolic links, hard links and a FIFO
# (tar x exited 2 and rsync -a 23 on the first link before issue 23).
t_tar_links() {
	local src=$D/links.src out=$D/links.out
	rm -rf "$src" "$out"
	mkdir -p "$src/a/b" "$out"
	echo one >"$src/a/f"
	ln "$src/a/f" "$src/a/b/f.hard"
	ln -s ../f "$src/a/b/up"
	ln -s b "$src/a/blink"
	ln -s /nowhere "$src/dangling"
	mkfifo "$src/fifo"
	tar -C "$src" -cf "$D/links.tar" .
	mkdir "$M1/tl"
	tar -C "$M1/tl" -xf "$D/links.tar" || die "tar x onto the mount failed"
	tar -C "$M1/tl" -df "$D/links.tar" || die "tar d: the mount's tree differs"
	[ "$(stat -c %h "$M1/tl/a/f")" = 2 ] || die "tar lost the hard link"
	[ "$(cat "$M1/tl/a/blink/up")" = one ] || die "links do not resolve"
	rsync -aH "$M1/tl/" "$out/" || die "rsync from the mount failed"
	[ -z "$(rsync -aHni "$src/" "$out/")" ] || die "rsync finds differences: $(rsync -aHni "$src/" "$out/")"
	rsync -aH --delete "$src/" "$M1/tl2/" || die "rsync onto the mount failed"
	[ -z "$(rsync -aHni "$src/" "$M1/tl2/")" ] || die "a second rsync finds differences"
	rm -rf "$M1/tl" "$M1/tl2" "$src" "$out" "$D/links.tar"
}

# Extended attributes: kept by the metadata daemon, seen by the other
# mount, refused as Linux refuses (sizes, set modes, a second uid, ACLs),
# kept by cp -a and rsync -aX, gone with the file.
t_xattr() {
	mkdir "$M1/xa"
	echo data >"$M1/xa/f"
	setfattr -n user.color -v blue "$M1/xa/f"
	setfattr -n user.empty "$M1/xa/f"
	[ "$(getfattr --only-values -n user.color "$M1/xa/f")" = blue ] || die "getfattr differs"
	[ "$(getfattr --only-values -n user.color "$M2/xa/f")" = blue ] || die "other mount differs"
	getfattr -d "$M2/xa/f" 2>/dev/null | grep -qx 'user.empty=""' || die "empty value not listed"
	setfattr -n user.color -v red "$M2/xa/f"
	[ "$(getfattr --only-values -n user.color "$M1/xa/f")" = red ] || die "replace not seen"
	setfattr -n user.dir -v d "$M1/xa"
	[ "$(getfattr --only-values -n user.dir "$M1/xa")" = d ] || die "directory attribute"
	setfattr -n trusted.t -v root "$M1/xa/f"
	setfattr -n security.s -v label "$M1/xa/f"
	python3 - "$M1/xa/f" <<'EOF'
import errno, os, sys
p = sys.argv[1]
def refused(err, f, *a):
    try:
        f(*a)
    except OSError as e:
        assert e.errno == err, (f, a, e)
    else:
        raise SystemExit("%s%r succeeded" % (f.__name__, a))
refused(errno.EEXIST, os.setxattr, p, "user.color", b"x", os.XATTR_CREATE)
refused(errno.ENODATA, os.setxattr, p, "user.none", b"x", os.XATTR_REPLACE)
refused(errno.ENODATA, os.getxattr, p, "user.none")
both = os.XATTR_CREATE | os.XATTR_REPLACE   # as ext4: CREATE, then REPLACE
refused(errno.EEXIST, os.setxattr, p, "user.color", b"x", both)
refused(errno.ENODATA, os.setxattr, p, "user.none", b"x", both)
refused(errno.ENODATA, os.removexattr, p, "user.none")
refused(errno.EOPNOTSUPP, os.setxattr, p, "system.posix_acl_access", b"\2\0\0\0")
refused(errno.EOPNOTSUPP, os.getxattr, p, "system.posix_acl_default")
refused(errno.EOPNOTSUPP, os.setxattr, p, "other.name", b"x")
refused(errno.ERANGE, os.setxattr, p, "user." + "n" * 251, b"x")
refused(errno.E2BIG, os.setxattr, p, "user.big", b"v" * 65537)
os.setxattr(p, "user.color", b"green", os.XATTR_REPLACE)
os.setxattr(p, "user.new", b"1", os.XATTR_CREATE)
# a file's total: three 64 KiB values fit, a fourth does not
q = p + ".full"
open(q, "w").close()
for i in range(3):
    os.setxattr(q, "user.big%d" % i, b"v" * 65536)
refused(errno.ENOSPC, os.setxattr, q, "user.big3", b"v" * 65536)
assert os.getxattr(q, "user.big2") == b"v" * 65536
# many names: listed whole
for i in range(300):
    os.setxattr(q, "user.n%03d" % i, b"")
assert len(os.listxattr(q)) == 303
os.unlink(q)   # more than a local file system holds (the rsync below)
EOF
	# a second uid: reads what it may read, refused where Linux refuses
	chmod 0644 "$M1/xa/f"
	[ "$(as_nobody getfattr --only-values -n user.color "$M1/xa/f")" = green ] ||
		die "uid 65534 cannot read a user. attribute of a 0644 file"
	as_nobody setfattr -n user.color -v x "$M1/xa/f" 2>"$D/err" && die "uid 65534 set an attribute"
	grep -q "Permission denied" "$D/err" || die "setfattr as 65534: $(cat "$D/err")"
	as_nobody setfattr -n trusted.x -v x "$M1/xa/f" 2>"$D/err" && die "uid 65534 set trusted."
	grep -q "Operation not permitted" "$D/err" || die "trusted as 65534: $(cat "$D/err")"
	as_nobody setfattr -n security.x -v x "$M1/xa/f" 2>/dev/null && die "uid 65534 set security."
	as_nobody getfattr -d -m - "$M1/xa/f" >"$D/nobody.list"
	grep -q '^trusted' "$D/nobody.list" && die "uid 65534 sees trusted.: $(cat "$D/nobody.list")"
	grep -q '^security.s=' "$D/nobody.list" || die "uid 65534 cannot read security."
	getfattr -d -m - "$M1/xa/f" | grep -q '^trusted.t="root"' || die "root's list lacks trusted."
	# copies keep them (run by root: every namespace)
	cp -a "$M1/xa" "$M1/xa-cp"
	[ "$(getfattr --only-values -n user.color "$M1/xa-cp/f")" = green ] || die "cp -a lost user.color"
	[ "$(getfattr --only-values -n user.dir "$M1/xa-cp")" = d ] || die "cp -a lost user.dir"
	[ "$(getfattr --only-values -n security.s "$M1/xa-cp/f")" = label ] || die "cp -a lost security.s"
	[ "$(getfattr --only-values -n trusted.t "$M1/xa-cp/f")" = root ] || die "cp -a lost trusted.t"
	rsync -aX "$M1/xa/" "$D/xa-local/"
	rsync -aX "$D/xa-local/" "$M2/xa-rsync/"
	for n in user.color security.s trusted.t; do
		[ "$(getfattr --only-values -n $n "$M1/xa/f")" = \
		  "$(getfattr --only-values -n $n "$M1/xa-rsync/f")" ] || die "rsync -aX lost $n"
	done
	[ -z "$(rsync -aXin "$D/xa-local/" "$M2/xa-rsync/")" ] || die "second rsync -aX sees changes"
	# a write by another uid drops a file's capabilities: the kernel
	# removes security.capability in the writer's name
	echo x >"$M1/xa/capf"
	chmod 0666 "$M1/xa/capf"
	python3 -c 'import os, struct, sys
os.setxattr(sys.argv[1], "security.capability", struct.pack("<5I", 0x02000000, 0x400, 0, 0, 0))
' "$M1/xa/capf"
	getfattr -n security.capability "$M1/xa/capf" >/dev/null 2>&1 || die "capabilities not set"
	as_nobody sh -c "echo more >>'$M1/xa/capf'"
	getfattr -n security.capability "$M1/xa/capf" >/dev/null 2>&1 &&
		die "a write by uid 65534 kept the file's capabilities"
	# a file made with O_EXCL is known to have none (the kernel's question
	# before its first write asks nobody), until a set through this mount
	python3 -c 'import os, struct, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
os.fchmod(fd, 0o666)
os.setxattr(sys.argv[1], "security.capability", struct.pack("<5I", 0x02000000, 0x400, 0, 0, 0))
os.close(fd)
' "$M1/xa/capx"
	as_nobody sh -c "echo more >>'$M1/xa/capx'"
	getfattr -n security.capability "$M1/xa/capx" >/dev/null 2>&1 &&
		die "a write by uid 65534 kept the capabilities of a file made with O_EXCL"
	# gone with the file
	rm "$M1/xa/f"
	echo new >"$M1/xa/f"
	[ -z "$(getfattr -d -m - "$M1/xa/f")" ] || die "a new file has the old one's attributes"
}

# Set-ID bits (issue 23, item 6): a non-owner's write or truncate clears
# them (the kernel's "kill priv" chmod, which the metadata daemon allows
# a caller with write permission), setgid without group-exec stays, root's
# write keeps them, root's chown drops them; a non-owner cannot set them.
t_setid() {
	local d=$M1/setid
	mkdir "$d"
	chmod 0777 "$d"
	echo x >"$d/w"
	chmod 06777 "$d/w"
	as_nobody sh -c "echo more >>'$d/w'" || die "a non-owner's write to a setuid file failed"
	[ "$(stat -c %a "$d/w")" = 777 ] || die "after a non-owner's write: mode $(stat -c %a "$d/w")"
	echo x >"$d/t"
	chmod 06777 "$d/t"
	as_nobody truncate -s 1 "$d/t" || die "a non-owner's truncate of a setuid file failed"
	[ "$(stat -c %a "$d/t")" = 777 ] || die "after a non-owner's truncate: mode $(stat -c %a "$d/t")"
	# the same for a write that is not an append (the kernel sends it
	# past its cache, and the mount drops the bits: it asks the kernel
	# for FUSE_HANDLE_KILLPRIV_V2) and an O_TRUNC open (truncate(1)
	# above is an ftruncate)
	echo x >"$d/c"
	chmod 06777 "$d/c"
	as_nobody dd if=/dev/zero of="$d/c" bs=1 count=1 conv=notrunc status=none ||
		die "a non-owner's write to a setuid file failed"
	[ "$(stat -c %a "$d/c")" = 777 ] || die "after a non-owner's write: mode $(stat -c %a "$d/c")"
	echo x >"$d/o"
	chmod 06777 "$d/o"
	as_nobody sh -c ": >'$d/o'" || die "a non-owner's O_TRUNC open of a setuid file failed"
	[ "$(stat -c %a "$d/o")" = 777 ] || die "after a non-owner's O_TRUNC open: mode $(stat -c %a "$d/o")"
	echo x >"$d/l"
	chmod 02767 "$d/l"   # setgid without group-exec: a locking mark, kept
	as_nobody sh -c "echo more >>'$d/l'"
	[ "$(stat -c %a "$d/l")" = 2767 ] || die "setgid without group-exec: mode $(stat -c %a "$d/l")"
	as_nobody chmod u+s "$d/w" 2>"$D/err" && die "a non-owner set setuid"
	grep -q "Operation not permitted" "$D/err" || die "chmod u+s: $(cat "$D/err")"
	[ "$(stat -c %a "$d/w")" = 777 ] || die "non-owner's chmod changed the mode"
	chmod 06755 "$d/w"
	echo root >>"$d/w"
	[ "$(stat -c %a "$d/w")" = 6755 ] || die "root's write cleared the set-ID bits"
	chown 65534 "$d/w"
	[ "$(stat -c %a "$d/w")" = 755 ] || die "root's chown kept the set-ID bits: $(stat -c %a "$d/w")"
	mkfifo "$d/p"   # the metadata daemon's to drop for every type but directories
	chmod 06755 "$d/p"
	chown 65534 "$d/p"
	[ "$(stat -c %a "$d/p")" = 755 ] || die "root's chown of a FIFO kept the set-ID bits: $(stat -c %a "$d/p")"
	rm -rf "$d"
}

# ftruncate and fchmod act on the open file, whatever its mode says now:
# a file created with mode 0 (by uid 65534 in its own directory) is still
# writable and truncatable through its descriptor; by name it is not.
t_fd_ops() {
	local d=$M1/fdops
	mkdir "$d"
	chown 65534:65534 "$d"
	as_nobody /usr/bin/python3 - "$d" <<'EOF'
import errno, os, sys
d = sys.argv[1]
fd = os.open(os.path.join(d, "zero"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0)
os.ftruncate(fd, 1000)
assert os.fstat(fd).st_size == 1000, os.fstat(fd).st_size
os.write(fd, b"abc")
os.close(fd)
fd = os.open(os.path.join(d, "later"), os.O_CREAT | os.O_RDWR, 0o644)
os.fchmod(fd, 0)
os.ftruncate(fd, 10)
os.fchmod(fd, 0o600)
assert os.fstat(fd).st_mode & 0o777 == 0o600
os.close(fd)
try:
    os.truncate(os.path.join(d, "zero"), 0)   # by name: mode 0 refuses
except OSError as e:
    assert e.errno == errno.EACCES, e
else:
    raise SystemExit("truncate by name of a mode 0 file worked")
EOF
	[ "$(stat -c %s "$d/zero")" = 1000 ] || die "size $(stat -c %s "$d/zero")"
	rm -rf "$d"
}

# utimensat with UTIME_NOW and UTIME_OMIT (touch -a, touch -m), by the
# owner and by a non-owner with write permission (may set now, not a
# chosen time).
t_utimens() {
	local f=$M1/utimes old
	echo x >"$f"
	chmod 0666 "$f"
	touch -d '2001-02-03 04:05:06' "$f"
	old=$(date -d '2001-02-03 04:05:06' +%s)
	touch -a "$f"   # atime now, mtime UTIME_OMIT
	[ "$(stat -c %Y "$f")" = "$old" ] || die "touch -a moved mtime"
	[ "$(stat -c %X "$f")" -gt "$old" ] || die "touch -a left atime"
	touch -a -d '2002-01-01 00:00:00' "$f"
	[ "$(stat -c %X "$f")" = "$(date -d '2002-01-01 00:00:00' +%s)" ] || die "touch -a -d: atime $(stat -c %X "$f")"
	[ "$(stat -c %Y "$f")" = "$old" ] || die "touch -a -d moved mtime"
	touch -m -d '2003-01-01 00:00:00' "$f"   # atime UTIME_OMIT
	[ "$(stat -c %X "$f")" = "$(date -d '2002-01-01 00:00:00' +%s)" ] || die "touch -m moved atime"
	[ "$(stat -c %Y "$f")" = "$(date -d '2003-01-01 00:00:00' +%s)" ] || die "touch -m: mtime $(stat -c %Y "$f")"
	as_nobody touch "$f" || die "a writer who is not the owner cannot touch"
	[ "$(stat -c %Y "$f")" -gt "$old" ] || die "non-owner's touch left mtime"
	as_nobody touch -d '2001-02-03 04:05:06' "$f" 2>/dev/null && die "a non-owner set a chosen time"
	rm -f "$f"
}

# du and df (issue 23, item 6): st_blocks is the objects' allocation, so
# a 10 GiB sparse file costs next to nothing; the test's storage daemons
# share one disk, which df counts once (its used plus available space);
# df -i shows a count of names derived from the metadata daemon's disk.
t_space() {
	local f=$M1/sparse kb local_kb tessera_kb inodes
	truncate -s 10G "$f"
	echo x | dd of="$f" bs=1 seek=$((5 << 30)) conv=notrunc status=none
	[ "$(stat -c %s "$f")" = $((10 << 30)) ] || die "size $(stat -c %s "$f")"
	kb=$(du -k "$f" | cut -f1)
	echo "du of a 10 GiB sparse file: $kb KiB"
	[ "$kb" -lt 1024 ] || die "du counts $kb KiB for a sparse file"
	head -c 4M /dev/urandom >"$M1/dense"
	kb=$(du -k "$M1/dense" | cut -f1)
	[ "$kb" -ge 4096 ] || die "du counts $kb KiB for 4 MiB written"
	# the mount's size is the disk's used + available (root's reserve is
	# neither); its Used is the disk's, not size minus available
	local used avail t_used t_avail
	read -r used avail < <(df -k --output=used,avail "$D" | tail -1)
	read -r t_used t_avail tessera_kb < <(df -k --output=used,avail,size "$M1" | tail -1)
	local_kb=$((used + avail))
	echo "df: local disk used $used avail $avail KiB, mount used $t_used avail $t_avail size $tessera_kb KiB ($N_IOS storage daemons on it)"
	[ "$tessera_kb" -le $((local_kb + local_kb / 100)) ] || die "df counts the shared disk more than once"
	[ "$tessera_kb" -ge $((local_kb - local_kb / 100)) ] || die "df shows less than the disk"
	# (other work may write to the disk between the two df calls: 1 %)
	[ "$t_used" -le $((used + local_kb / 100)) ] && [ "$t_used" -ge $((used - local_kb / 100)) ] ||
		die "df through the mount shows $t_used KiB used, the disk $used"
	inodes=$(df --output=itotal "$M1" | tail -1 | tr -d " ")
	echo "df -i: $inodes"
	[ "$inodes" != 4294968110 ] && [ "$inodes" -lt 4294967295 ] && [ "$inodes" -gt 0 ] || die "inode count $inodes"
	rm -f "$f" "$M1/dense"
}

# renameat2 flags (issue 23, item 6): RENAME_NOREPLACE and RENAME_EXCHANGE
# done by the metadata daemon in one step; RENAME_WHITEOUT and unknown
# flags get EINVAL.
t_rename_flags() {
	local d=$M1/rnf
	mkdir "$d" "$d/sub"
	echo a >"$d/a"
	echo b >"$d/b"
	python3 - "$d" <<'EOF'
import ctypes, errno, os, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def renameat2(a, b, flags):
    if libc.renameat2(-100, os.path.join(d, a).encode(), -100, os.path.join(d, b).encode(), flags):
        return ctypes.get_errno()
    return 0
NOREPLACE, EXCHANGE, WHITEOUT = 1, 2, 4
def read(n):
    with open(os.path.join(d, n)) as f:
        return f.read()
assert renameat2("a", "b", NOREPLACE) == errno.EEXIST
assert read("a") == "a\n" and read("b") == "b\n"
assert renameat2("a", "b", EXCHANGE) == 0
assert read("a") == "b\n" and read("b") == "a\n", (read("a"), read("b"))
assert renameat2("a", "sub", EXCHANGE) == 0
assert os.path.isdir(os.path.join(d, "a")) and read("sub") == "b\n"
assert renameat2("b", "none", EXCHANGE) == errno.ENOENT
assert renameat2("b", "c", WHITEOUT) == errno.EINVAL
assert renameat2("b", "c", NOREPLACE | EXCHANGE) == errno.EINVAL
assert renameat2("b", "c", 0x100) == errno.EINVAL
assert renameat2("b", "c", NOREPLACE) == 0 and read("c") == "a\n"
EOF
	rm -rf "$d"
}

# fallocate (issue 23, item 6): mode 0 allocates and grows the file,
# --keep-size allocates only, other modes (punch hole, zero range) get
# EOPNOTSUPP, a negative offset EINVAL; posix_fallocate works.
t_fallocate() {
	local f=$M1/falloc kb
	echo abc >"$f"
	fallocate -l 8M "$f"
	[ "$(stat -c %s "$f")" = 8388608 ] || die "size after fallocate: $(stat -c %s "$f")"
	kb=$(du -k "$f" | cut -f1)
	[ "$kb" -ge 8192 ] || die "fallocate -l 8M allocated $kb KiB"
	[ "$(head -c 4 "$f")" = abc ] || die "fallocate changed the data"
	fallocate -n -o 8M -l 4M "$f"
	[ "$(stat -c %s "$f")" = 8388608 ] || die "keep-size changed the size: $(stat -c %s "$f")"
	fallocate -p -o 0 -l 4096 "$f" 2>"$D/err" && die "punch hole succeeded"
	grep -Eq "not supported|unsupported" "$D/err" || die "punch hole: $(cat "$D/err")"
	fallocate -z -o 0 -l 4096 "$f" 2>/dev/null && die "zero range succeeded"
	python3 - "$f" <<'EOF'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.posix_fallocate(fd, 16 << 20, 1 << 20)
assert os.fstat(fd).st_size == 17 << 20, os.fstat(fd).st_size
for off, ln, want in ((-1, 10, errno.EINVAL), (0, 0, errno.EINVAL), ((1 << 63) - 10, 100, errno.EFBIG)):
    try:
        os.posix_fallocate(fd, off, ln)
    except OSError as e:
        assert e.errno == want, (off, ln, e)
    else:
        raise SystemExit("posix_fallocate(%d, %d) worked" % (off, ln))
os.close(fd)
EOF
	rm -f "$f"
}

# Shared scratch by default (issue 23, item 7): tessera-local mounts with
# allow_other (default_permissions is always on), so a second user works
# on the mount as on /tmp; fuse-allow-other.sh adds user_allow_other to a
# fuse.conf once, whatever it held.
t_shared() {
	local tl=$D/tl port
	mkdir -m 0755 "$tl"
	port=$(free_ports 1)
	"$top/deploy/tessera-local" --dir "$tl/var" -n 1 -p "$port" -b "$BIN" up >"$D/tl.out" 2>&1 ||
		{ cat "$D/tl.out"; die "tessera-local up failed"; }
	grep "$tl/mnt" /proc/mounts | grep -q allow_other || { cat "$D/tl.out"; grep "$tl/mnt" /proc/mounts; die "tessera-local mounted without allow_other"; }
	grep "$tl/mnt" /proc/mounts | grep -q default_permissions || die "no default_permissions"
	as_nobody sh -c "echo mine >'$tl/mnt/by-nobody'" || die "a second user cannot write the shared scratch"
	[ "$(stat -c %u "$tl/mnt/by-nobody")" = 65534 ] || die "file not owned by its creator"
	as_nobody rm "$tl/mnt/by-nobody"
	"$top/deploy/tessera-local" --dir "$tl/var" down >/dev/null 2>&1
	printf '#user_allow_other\nmount_max = 1000' >"$tl/fuse.conf"
	bash "$top/deploy/fuse-allow-other.sh" "$tl/fuse.conf"
	bash "$top/deploy/fuse-allow-other.sh" "$tl/fuse.conf"
	[ "$(grep -cx user_allow_other "$tl/fuse.conf")" = 1 ] || die "fuse.conf: $(cat "$tl/fuse.conf")"
	grep -qx 'mount_max = 1000' "$tl/fuse.conf" || die "fuse.conf lost a line: $(cat "$tl/fuse.conf")"
}

# The writeback cache reads the page a write fills in part, also through
# a write-only descriptor, and for a user who may write but not read.
t_writeback_partial() {
	local d=$M1/wbpart
	mkdir "$d" && chmod 0777 "$d"
	head -c 10000 /dev/urandom >"$D/wbp"
	cp "$D/wbp" "$d/f"
	for f in "$D/wbp" "$d/f"; do   # dd opens O_WRONLY
		printf XY | dd of="$f" bs=1 seek=5000 conv=notrunc status=none
	done
	cmp "$D/wbp" "$d/f" || die "a partial-page write through a write-only descriptor lost data"
	cp "$D/wbp" "$d/g"
	chown 65534:65534 "$d/g" && chmod 0200 "$d/g"
	as_nobody sh -c "printf ZZ | dd of='$d/g' bs=1 seek=7000 conv=notrunc status=none" ||
		die "uid 65534 cannot write into its 0200 file"
	as_nobody cat "$d/g" >/dev/null 2>&1 && die "uid 65534 read its 0200 file"
	printf ZZ | dd of="$D/wbp" bs=1 seek=7000 conv=notrunc status=none
	cmp "$D/wbp" "$d/g" || die "a partial-page write by a user who may not read lost data"
	rm -rf "$d" "$D/wbp"
}

# Writes the writeback cache holds that cannot reach a storage daemon
# are never lost silently: fsync and close return EIO. Each file gets
# writes after the daemon died, so some are still in the cache then.
t_writeback_error() {
	mkdir -p "$M1/wberr"
	timeout 120 python3 - "$M1/wberr" "$(cat "$D/ios1.pid")" <<'EOF'
import errno, os, sys
d, pid = sys.argv[1], int(sys.argv[2])
fds = [os.open(os.path.join(d, n), os.O_WRONLY | os.O_CREAT, 0o644) for n in "ab"]
chunk = b"x" * 400
errs = {fd: [] for fd in fds}
def attempt(fd, what, f):
    try:
        f()
    except OSError as e:
        if e.errno != errno.EIO:
            raise SystemExit("%s: %s, not EIO" % (what, e))
        errs[fd].append(what)
for fd in fds:   # 800 KB each: a strip on every storage daemon
    for _ in range(2000):
        os.write(fd, chunk)
os.kill(pid, 9)
for fd in fds:
    for _ in range(2000):
        attempt(fd, "write", lambda: os.write(fd, chunk))
attempt(fds[0], "fsync", lambda: os.fsync(fds[0]))
attempt(fds[1], "close", lambda: os.close(fds[1]))
print("errors:", {fds.index(fd): sorted(set(e)) for fd, e in errs.items()})
for fd in fds:
    if not errs[fd]:
        raise SystemExit("no EIO for file %d with a dead storage daemon" % fds.index(fd))
assert errs[fds[0]][-1] == "fsync" and errs[fds[1]][-1] == "close", errs
try:
    os.close(fds[0])
except OSError:
    pass
EOF
	restart ios1
	rm -rf "$M1/wberr"
}

t_dead_ios() {
	mkdir -p "$M1/kill"
	local t0=$SECONDS rc pid
	timeout 60 dd if=/dev/zero of="$M1/kill/file" bs=1M count=8192 2>"$D/dd.err" &
	pid=$!
	sleep 2
	kill -0 $pid || die "the copy ended before the daemon was killed"
	kill -9 "$(cat "$D/ios2.pid")"
	rc=0
	wait $pid || rc=$?
	echo "dd ended with status $rc after $((SECONDS - t0)) s:"; cat "$D/dd.err"
	[ $rc -ne 124 ] || die "the copy hung (timeout 60 killed it)"
	[ $rc -ne 0 ] || die "the copy succeeded with a dead storage daemon"
	grep -q "Input/output error" "$D/dd.err" || die "no I/O error reported"
	# A read of a file with a strip on the dead daemon fails too, in time.
	timeout 60 cat "$M1/big" >/dev/null 2>"$D/cat.err" && die "read with a dead daemon succeeded"
	[ $? -ne 124 ] || die "read hung"
	local ups
	ups=$(grep -c "storage daemon 2 .*up again" "$D/fuse-mnt1.log" || true)
	restart ios2
	# The library fails calls that need a daemon it found down at once until
	# its probe (with back-off) finds it back, and logs that: wait for it.
	for ((t = 0; t < 300; t++)); do
		[ "$(grep -c "storage daemon 2 .*up again" "$D/fuse-mnt1.log")" -gt "$ups" ] && break
		sleep 0.1
	done
	# The mount still answers, and new I/O works on every daemon.
	ls "$M1" >/dev/null
	head -c 5M /dev/urandom >"$D/r"
	cp "$D/r" "$M1/kill/after"
	cmp "$D/r" "$M1/kill/after" || die "I/O after restart differs"
	cmp "$D/big" "$M1/big" || die "the 256 MiB file differs after the restart"
	rm -rf "$M1/kill" "$D/r"
}

# A mount's process, found by its mount point (a daemonized mount is not
# our child). Empty when none.
fuse_pid_of() {
	pgrep -f -x "$BIN/tessera-fuse -c $CONF $1.*" | head -n 1
}

# hold_open DIR: a reader with DIR/held open and an fcntl lock on it,
# started in the background; waits until it holds the lock.
hold_open() {
	echo held >"$1/held"
	python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)' "$1/held" >"$D/hold.out" 2>&1 &
	HOLD_PID=$!
	for ((t = 0; t < 100; t++)); do grep -q locked "$D/hold.out" 2>/dev/null && return 0; sleep 0.1; done
	die "the lock was not taken"
}

# stop_mount MODE SIG HOLD: mount on $D/msig (MODE fg: -f, our child;
# daemon: fuse_daemonize), optionally with a file open and locked, send SIG
# to tessera-fuse, then: it exits (with 0 when we can see its status), and
# no mount, live or dead, is left behind.
stop_mount() {
	local mode=$1 sig=$2 hold=$3 dir=$D/msig pid rc=0
	mkdir -p "$dir"
	if [ "$mode" = fg ]; then
		mount_fs "$dir"
		pid=${FUSE_PIDS[-1]}
	else
		"$BIN/tessera-fuse" -c "$CONF" "$dir" -o allow_other >>"$D/fuse-msig.log" 2>&1 ||
			die "daemonized mount failed"
		mountpoint -q "$dir" || die "daemonized mount not shown"
		pid=$(fuse_pid_of "$dir")
		[ -n "$pid" ] || die "no daemonized tessera-fuse found"
	fi
	echo data >"$dir/f"
	HOLD_PID=
	[ "$hold" = held ] && hold_open "$dir"
	kill -"$sig" "$pid" || { ps -ef | grep '[t]essera-fuse'; tail "$D/fuse-msig.log"; die "$mode mount, $hold: tessera-fuse $pid is gone before SIG$sig"; }
	for ((t = 0; t < 100; t++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$pid" 2>/dev/null || die "$mode mount, $hold: tessera-fuse still runs 10 s after SIG$sig"
	if [ "$mode" = fg ]; then
		wait "$pid" || rc=$?
		[ $rc -eq 0 ] || die "$mode mount, $hold: SIG$sig: exit status $rc"
	fi
	# (the holder may be gone already: its file's mount went away)
	[ -z "$HOLD_PID" ] || { kill "$HOLD_PID" 2>/dev/null || true; wait "$HOLD_PID" 2>/dev/null || true; }
	! grep -q " $dir " /proc/mounts || die "$mode mount, $hold: SIG$sig left a mount in /proc/mounts"
	stat "$dir" >/dev/null || die "$mode mount, $hold: SIG$sig left the mount point dead"
	echo "$mode $hold SIG$sig: stopped cleanly"
}

# TERM (systemd, Slurm at the end of a step), INT and HUP end a mount the
# way fusermount3 -u does: unmounted, exit status 0. They used to reach a
# handler of libpsm2/libinfinipath (loaded by libfabric) that called
# exit(1) and left a dead mount.
t_signals() {
	local mode sig hold
	for mode in fg daemon; do
		for sig in TERM INT; do
			for hold in idle held; do stop_mount "$mode" "$sig" "$hold"; done
		done
	done
	stop_mount fg HUP idle
	stop_mount daemon HUP held
	# The data written before each stop is there.
	[ "$(cat "$D/msig/f" 2>&1)" != data ] || die "a stopped mount still shows its files"
	mount_fs "$D/msig"
	[ "$(cat "$D/msig/f")" = data ] || die "data written before the stop is lost"
	fusermount3 -u "$D/msig"
}

# KILL cannot be caught: it leaves a dead mount ("Transport endpoint is
# not connected"), which fusermount3 -u removes (docs/user-guide.md).
t_kill_recovery() {
	local dir=$D/msig pid
	mount_fs "$dir"
	pid=${FUSE_PIDS[-1]}
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	grep -q " $dir " /proc/mounts || die "no mount left after KILL (expected a dead one)"
	! stat "$dir" 2>"$D/stat.err" || die "the mount point still answers after KILL"
	grep -q "Transport endpoint is not connected" "$D/stat.err" || { cat "$D/stat.err"; die "not a dead mount"; }
	fusermount3 -u "$dir"
	! grep -q " $dir " /proc/mounts || die "fusermount3 -u left the dead mount"
	stat "$dir" >/dev/null
}

t_unmount() {
	fusermount3 -u "$M2"
	fusermount3 -u "$M1"
	for p in "${FUSE_PIDS[@]}"; do
		for ((t = 0; t < 50; t++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		! kill -0 "$p" 2>/dev/null || die "tessera-fuse $p did not exit after unmount"
	done
	# A new mount sees what the old one left.
	mount_fs "$M1"
	cmp "$D/big" "$M1/big" || die "data differs after remount"
	fusermount3 -u "$M1"
}

echo "[==========] Running 34 test(s)."
check_here cluster_and_mount t_cluster_and_mount
if [ ${#failed[@]} -eq 0 ]; then
	check basic t_basic
	check readahead t_readahead
	check copy_256m t_copy_256m
	check tar_tree t_tar_tree
	check fio_sequential t_fio_sequential
	check fio_random t_fio_random
	check namespace t_namespace
	check rename_open t_rename_open
	check utimes_beside_opens t_utimes_beside_opens
	check two_mounts t_two_mounts
	check read_ends t_read_ends
	check name_leases t_name_leases
	check times t_times
	check close_to_open t_close_to_open
	check answered t_answered
	check permissions t_permissions
	check file_types t_file_types
	check tar_links t_tar_links
	check xattr t_xattr
	check setid t_setid
	check fd_ops t_fd_ops
	check utimens t_utimens
	check space t_space
	check rename_flags t_rename_flags
	check fallocate t_fallocate
	check shared t_shared
	check readdirplus t_readdirplus   # (before a metadata daemon restart: sizes unknown for a while)
	check writeback_partial t_writeback_partial
	check writeback_error t_writeback_error
	check dead_ios t_dead_ios
	check remove_behind t_remove_behind
	check signals t_signals
	check kill_recovery t_kill_recovery
	check unmount t_unmount
fi

checks_finish
