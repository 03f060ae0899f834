#!/usr/bin/env bash
# test_mount_programs.sh - ordinary programs on a Tessera mount, as the
# users of a shared scratch run them (issue 23, "Real programs"):
#   - tar xf of Tessera's own tree (git archive), then make in it: the
#     client library, whose build makes symbolic links (ln -sfn of the
#     exported headers and of libtessera.so's names); the built tree
#     archived with its links and unpacked again on the mount, equal;
#   - rsync -aHAX into the mount and back out of it, of a tree with hard
#     links, symbolic links, a FIFO, xattrs, odd modes and old times, each
#     followed by a second rsync -ai --dry-run that reports nothing;
#   - git clone of a local repository onto the mount, and from the mount
#     again, with git fsck and a clean status;
#   - cp -a keeping modes, times, links and user. xattrs, both ways.
# Runs as root on a tessera-fuse mount with allow_other,default_permissions
# (mount_harness.sh). Prints CMocka-style lines (checks.sh).
#
#   TESSERA_BUILD=/abs/build tests/integ/test_mount_programs.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/integ/checks.sh"
. "$top/tests/integ/mount_harness.sh"

mount_can_run mount_programs
for t in tar make rsync git setfattr getfattr cc; do
	command -v "$t" >/dev/null || skip_all mount_programs "$t is not installed (make deps)"
done

D=$(mktemp -d /tmp/tessera-mprog.XXXXXX)
chmod 0755 "$D"
cleanup() {
	mount_down
	if [ -n "${TESSERA_KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
if ! mount_up "$D" >"$D/up.log" 2>&1; then
	up_failed() { cat "$D/up.log"; return 1; }
	check "cluster and mount up" up_failed
	checks_done
fi
M=$D/tmnt
L=$D/local   # the local-disk side
mkdir -p "$L"

# same_tree A B: the same names, types, link targets, contents, modes,
# owners and (for all but symlinks, which rsync/cp may not time) mtimes,
# and the same xattrs in the user. namespace; hard-linked names stay
# hard-linked (same inode within one tree).
tree_listing() { # DIR
	(cd "$1" && find . -mindepth 1 -printf '%y %p %m %U:%G %l\n' | LC_ALL=C sort)
	(cd "$1" && find . -mindepth 1 ! -type l -printf '%p %T@\n' | sed 's/\.[0-9]*$//' | LC_ALL=C sort)
	(cd "$1" && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2)
	(cd "$1" && find . -mindepth 1 ! -type l -exec getfattr --absolute-names -d -m '^user\.' {} + 2>/dev/null |
		grep -v '^$' | LC_ALL=C sort)
	# groups of names sharing an inode, named by their first member
	(cd "$1" && find . -type f -links +1 -printf '%i %p\n' | LC_ALL=C sort |
		awk '{if ($1 != last) {first = $2; last = $1} print first, $2}' | LC_ALL=C sort)
}
same_tree() {
	tree_listing "$1" >"$D/a.list"
	tree_listing "$2" >"$D/b.list"
	diff "$D/a.list" "$D/b.list" || { echo "trees differ: $1 vs $2"; return 1; }
	echo "$(wc -l <"$D/a.list") lines of listing equal"
}

# ------------------------------------------------- tar xf, make, symlinks
# The client library and what it needs (proto's generated code, dataloops,
# lockmgr), built in the tree unpacked on the mount: about 40 compiles.
tar_make() {
	git -C "$top" rev-parse --verify -q HEAD >/dev/null ||
		{ echo "$top is not a git checkout"; return 1; }
	git -C "$top" archive --format=tar --prefix=src/ HEAD >"$D/src.tar"
	tar -C "$M" -xf "$D/src.tar"
	tar -C "$L" -xf "$D/src.tar"
	same_tree "$L/src" "$M/src"
	local t0=$SECONDS
	make -C "$M/src" -j2 B=build build/lib/libtessera.so >"$D/make.log" 2>&1 ||
		{ tail -30 "$D/make.log"; return 1; }
	echo "make on the mount: $((SECONDS - t0)) s"
	[ -L "$M/src/build/lib/libtessera.so" ] || { echo "libtessera.so is not a link"; return 1; }
	[ -L "$M/src/build/include/client/tessera.h" ] || { echo "exported header is not a link"; return 1; }
	[ "$(readlink "$M/src/build/include/client/tessera.h")" = "$M/src/client/tessera.h" ] ||
		{ echo "exported header points to $(readlink "$M/src/build/include/client/tessera.h")"; return 1; }
	# a program linked against the library built on the mount runs
	printf '#include <tessera.h>\nint main(void) { return 0; }\n' >"$M/src/t.c"
	cc -I"$M/src/build/include/client" -o "$M/src/t" "$M/src/t.c" \
		-L"$M/src/build/lib" -Wl,-rpath,"$M/src/build/lib" -ltessera
	"$M/src/t"
	# make again: nothing to do (times and links kept), so nothing in
	# build/ newer than a mark made after the first make
	sleep 1
	touch "$M/src/.mark"
	make -C "$M/src" B=build build/lib/libtessera.so >"$D/make2.log" 2>&1 ||
		{ cat "$D/make2.log"; return 1; }
	local newer
	newer=$(find "$M/src/build" -newer "$M/src/.mark")
	[ -z "$newer" ] || { echo "a second make rebuilt:"; echo "$newer"; cat "$D/make2.log"; return 1; }
	# the built tree, links included, through tar again
	tar -C "$M/src" -cf "$D/built.tar" build
	tar tvf "$D/built.tar" | grep -c '^l' | sed 's/$/ symbolic links in the built tree/'
	mkdir "$M/again"
	tar -C "$M/again" -xf "$D/built.tar"
	same_tree "$M/src/build" "$M/again/build"
}
check "tar xf, make (ln -sfn), tar of the links" tar_make

# -------------------------------------------------------------- rsync
# A tree with what rsync -aHAX carries: hard links, symbolic links (to a
# file, a directory, nowhere), a FIFO, xattrs, setgid and odd modes,
# other owners, old times, an empty file and a sparse one.
make_tree() { # DIR
	local d=$1
	mkdir -p "$d/dir/sub" "$d/empty-dir"
	echo hello >"$d/dir/a"
	head -c 300000 /dev/urandom >"$d/dir/sub/big"
	: >"$d/empty"
	truncate -s 5M "$d/sparse"
	ln "$d/dir/a" "$d/dir/a-hard"
	ln "$d/dir/a" "$d/a-hard2"
	ln -s a "$d/dir/a-sym"
	ln -s dir/sub "$d/sub-sym"
	ln -s /nowhere/at/all "$d/dangling"
	mkfifo "$d/fifo"
	setfattr -n user.x -v one "$d/dir/a"
	setfattr -n user.long -v "$(head -c 3000 /dev/zero | tr '\0' v)" "$d/dir/sub/big"
	setfattr -n user.dir -v here "$d/dir"
	chmod 2750 "$d/dir/sub"
	chmod 0604 "$d/dir/sub/big"
	chmod 0000 "$d/empty"
	chown 1234:5678 "$d/dir/a"
	chown -h 4321:8765 "$d/dir/a-sym"
	touch -h -d '2001-02-03 04:05:06' "$d/dir/a" "$d/empty" "$d/dir/sub/big" "$d/fifo"
	touch -d '1999-12-31 23:59:59' "$d/dir/sub" "$d/empty-dir"
}
rsync_quiet() { # SRC DST: a second run finds nothing to do
	local out
	out=$(rsync -aHAXi --dry-run "$1/" "$2/")
	[ -z "$out" ] || { echo "rsync -ai --dry-run $1/ $2/ still reports:"; echo "$out"; return 1; }
}
rsync_in() {
	make_tree "$L/tree"
	rsync -aHAX "$L/tree/" "$M/tree/"
	rsync_quiet "$L/tree" "$M/tree"
	same_tree "$L/tree" "$M/tree"
	touch "$D/rsync-in.ok"
}
check "rsync -aHAX into the mount, second run quiet" rsync_in
rsync_out() {
	# (a partial tree left by a failed rsync in would prove little)
	[ -e "$D/rsync-in.ok" ] || { echo "no whole tree on the mount: the previous check failed"; return 1; }
	rsync -aHAX "$M/tree/" "$L/back/"
	rsync_quiet "$M/tree" "$L/back"
	same_tree "$M/tree" "$L/back"
	# a change on the mount is found and carried by the next run: of a
	# file with one name, and of a hard-linked one. Under the writeback
	# cache each name of a hard-linked file is its own kernel inode, whose
	# size and mtime the kernel keeps until that name's next open on this
	# mount (docs/user-guide.md, "Writeback"): the other names (a-hard2,
	# dir/a-hard, which rsync may stat first) are opened before rsync
	# looks, as a program that reads them would.
	echo changed >>"$M/tree/dir/sub/big"
	echo changed >>"$M/tree/dir/a"
	setfattr -n user.x -v two "$M/tree/dir/a"
	cat "$M/tree/a-hard2" "$M/tree/dir/a-hard" >/dev/null
	sleep 1.5
	out=$(rsync -aHAXi "$M/tree/" "$L/back/")
	echo "$out"
	[ -n "$out" ] || { echo "rsync found no change"; return 1; }
	rsync_quiet "$M/tree" "$L/back"
	same_tree "$M/tree" "$L/back"
}
check "rsync -aHAX out of the mount, second run quiet" rsync_out

# -------------------------------------------------------------- git
git_clone() {
	local g="git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main"
	mkdir "$L/repo"
	$g -C "$L/repo" init -q
	for i in 1 2 3; do
		echo "line $i" >>"$L/repo/file"
		ln -sfn file "$L/repo/link"
		head -c 20000 /dev/urandom >"$L/repo/bin$i"
		chmod +x "$L/repo/bin$i"
		$g -C "$L/repo" add -A
		$g -C "$L/repo" commit -q -m "commit $i"
	done
	$g -C "$L/repo" gc -q   # packs, and loose objects both ways below
	echo "line 4" >>"$L/repo/file"
	$g -C "$L/repo" commit -q -am "commit 4"
	$g clone -q "$L/repo" "$M/clone"
	$g -C "$M/clone" fsck --strict
	[ -z "$($g -C "$M/clone" status --porcelain)" ] || { $g -C "$M/clone" status; return 1; }
	[ "$($g -C "$M/clone" rev-parse HEAD)" = "$($g -C "$L/repo" rev-parse HEAD)" ] ||
		{ echo "the clone's HEAD differs"; return 1; }
	# (git writes a link as a plain file where symlink(2) fails)
	[ "$($g -C "$M/clone" config core.symlinks)" != false ] ||
		{ echo "git found no symbolic links on the mount (core.symlinks = false)"; return 1; }
	[ "$(readlink "$M/clone/link")" = file ] || { echo "link is not a link to file:"; ls -l "$M/clone"; return 1; }
	[ -x "$M/clone/bin3" ] || { echo "bin3 lost its x bit"; return 1; }
	# work on the mount, then clone from it
	echo "line 5" >>"$M/clone/file"
	$g -C "$M/clone" commit -q -am "commit 5 on the mount"
	$g -C "$M/clone" gc -q
	$g clone -q "$M/clone" "$L/clone2"
	$g -C "$L/clone2" fsck --strict
	[ "$($g -C "$L/clone2" rev-parse HEAD)" = "$($g -C "$M/clone" rev-parse HEAD)" ] ||
		{ echo "the second clone's HEAD differs"; return 1; }
	[ "$($g -C "$L/clone2" rev-list --count HEAD)" = 5 ] || { echo "not 5 commits"; return 1; }
}
check "git clone onto the mount and from it" git_clone

# -------------------------------------------------------------- cp -a
cp_a() {
	mkdir -p "$L/cp/sub"
	echo data >"$L/cp/f"
	setfattr -n user.x -v hello "$L/cp/f"
	setfattr -n user.empty "$L/cp/f"
	setfattr -n user.d -v dirval "$L/cp/sub"
	ln -s f "$L/cp/f-link"
	ln "$L/cp/f" "$L/cp/sub/f-hard"
	chmod 0640 "$L/cp/f"
	chown 2000:3000 "$L/cp/f"
	touch -d '2010-01-01 00:00:00' "$L/cp/f"
	cp -a "$L/cp" "$M/cp"
	[ "$(getfattr --only-values -n user.x "$M/cp/f")" = hello ] ||
		{ echo "user.x on the mount:"; getfattr -d "$M/cp/f"; return 1; }
	same_tree "$L/cp" "$M/cp"
	cp -a "$M/cp" "$L/cp-back"
	same_tree "$M/cp" "$L/cp-back"
}
check "cp -a keeps xattrs, links, modes, owners, times" cp_a

checks_done
