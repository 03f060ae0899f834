#!/usr/bin/env python3
"""Compare two pjdfstest runs, assertion by assertion.

    pjdfstest_compare.py TESSERA.prove BINDFS.prove KNOWN.txt

Each .prove file is the output of `prove` over the same test files, the
first on a Tessera mount, the second on bindfs over a local directory (the
baseline: a plain FUSE passthrough on the same kernel). Failed assertions
come from prove's "Test Summary Report" (its "Failed tests:" lists, and
"You planned N tests but ran M", whose missing assertions count as failed).

An assertion that fails on Tessera is
  - the kernel's or FUSE's when it fails on bindfs too (reported, not a
    failure of this suite);
  - known when KNOWN.txt lists it with its reason (reported, with the
    reason);
  - a failure of this suite otherwise.
A known failure that now passes on Tessera is reported so the list can
shrink. The output ends in CMocka's summary lines (tests/run-suites.sh
counts them), one test per assertion; the exit status is 1 when any
assertion failed that bindfs passed and the list does not name.

KNOWN.txt: one line per entry, "FILE ASSERTIONS REASON...", FILE relative
to pjdfstest's tests/ (chmod/00.t), ASSERTIONS a list like 3,5-7 or * for
every assertion of the file; # starts a comment.
"""
import re
import sys

FILE_RE = re.compile(r"^(\S+\.t)\s+\(Wstat: \d+ Tests: (\d+) Failed: (\d+)\)")
PLAN_RE = re.compile(r"You planned (\d+) tests? but ran (\d+)")
TOTAL_RE = re.compile(r"^Files=(\d+), Tests=(\d+),")
RAN_RE = re.compile(r"^(\S+\.t) \.+ ")
KEY_RE = re.compile(r"^  [A-Z][A-Za-z -]+:")


def rel(path):
    """A test file's name relative to pjdfstest's tests/ folder."""
    parts = path.split("/")
    return "/".join(parts[-2:])


def numbers(text):
    """'1-3, 7' -> {1, 2, 3, 7}."""
    out = set()
    for item in text.replace(" ", "").split(","):
        if not item:
            continue
        if "-" in item:
            a, b = item.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(item))
    return out


def ranges(nums):
    """{1, 2, 3, 7} -> '1-3,7'."""
    nums = sorted(nums)
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else "%d-%d" % (nums[i], nums[j]))
        i = j + 1
    return ",".join(out)


def parse_prove(path):
    """-> (total assertions, {file: set of failed numbers or {'*'}},
    whether prove printed its totals, the files that ran)."""
    failed = {}
    ran = set()
    total = 0
    totals_seen = False
    in_report = False
    cur = None
    key = None
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    for line in lines:
        m = RAN_RE.match(line)
        if m and not in_report:
            ran.add(rel(m.group(1)))
        if line.startswith("Test Summary Report"):
            in_report = True
            continue
        m = TOTAL_RE.match(line)
        if m:
            total += int(m.group(2))
            totals_seen = True
            in_report = False
            continue
        if not in_report:
            continue
        m = FILE_RE.match(line)
        if m:
            cur = rel(m.group(1))
            failed.setdefault(cur, set())
            key = None
            if int(m.group(2)) == 0:
                # no assertion ran at all (no plan, a crash at the start)
                failed[cur].add("*")
            continue
        if cur is None:
            continue
        if KEY_RE.match(line):
            key, _, rest = line.strip().partition(":")
            if key == "Failed tests":
                failed[cur] |= numbers(rest)
            elif key == "Parse errors":
                m = PLAN_RE.search(rest)
                if m:
                    planned, ran = int(m.group(1)), int(m.group(2))
                    failed[cur] |= set(range(ran + 1, planned + 1))
                    total += max(planned - ran, 0)
                elif "No plan found" in rest:
                    failed[cur].add("*")
            continue
        if key == "Failed tests" and re.match(r"^\s+[\d, -]+$", line):
            failed[cur] |= numbers(line)
        elif key == "Parse errors":
            m = PLAN_RE.search(line)
            if m:
                planned, ran = int(m.group(1)), int(m.group(2))
                failed[cur] |= set(range(ran + 1, planned + 1))
                total += max(planned - ran, 0)
    return total, {k: v for k, v in failed.items() if v}, totals_seen, ran


def parse_known(path):
    """-> {file: [(set of numbers or {'*'}, reason)]}"""
    known = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                sys.exit("%s:%d: wants FILE ASSERTIONS REASON" % (path, n))
            nums = {"*"} if parts[1] == "*" else numbers(parts[1])
            known.setdefault(parts[0], []).append((nums, parts[2]))
    return known


def known_reason(known, file, num):
    for nums, reason in known.get(file, []):
        if "*" in nums or num in nums:
            return reason
    return None


def count(fails):
    return sum(len(v) if "*" not in v else 1 for v in fails.values())


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    t_total, t_fail, t_ok, t_ran = parse_prove(sys.argv[1])
    b_total, b_fail, b_ok, _ = parse_prove(sys.argv[2])
    known = parse_known(sys.argv[3])
    if not t_ok or not b_ok:
        print("prove printed no totals (Files=, Tests=) for %s" %
              " and ".join(n for n, ok in (("Tessera", t_ok), ("bindfs", b_ok)) if not ok))
        print("[==========] 1 test(s) run.")
        print("[  PASSED  ] 0 test(s).")
        print("[  FAILED  ] 1 test(s), listed below:")
        print("[  FAILED  ] pjdfstest: a run did not complete")
        return 1

    kernel, listed, ours = {}, {}, {}
    for file, nums in sorted(t_fail.items()):
        bnums = b_fail.get(file, set())
        for num in sorted(nums, key=str):
            if "*" in bnums or num in bnums:
                kernel.setdefault(file, set()).add(num)
                continue
            reason = known_reason(known, file, num)
            if reason is not None:
                listed.setdefault((file, reason), set()).add(num)
            else:
                ours.setdefault(file, set()).add(num)
    # known entries whose assertions all pass now (on the files this run had)
    fixed = []
    for file, entries in sorted(known.items()):
        for nums, reason in entries:
            tf = t_fail.get(file, set())
            if "*" in nums:
                still = bool(tf)
            else:
                still = bool(nums & tf) or "*" in tf
            if not still and file in t_ran:
                fixed.append((file, nums, reason))

    def show(nums):
        return "all" if "*" in nums else ranges(n for n in nums if n != "*")

    print("pjdfstest: Tessera %d of %d assertions failed, bindfs %d of %d"
          % (count(t_fail), t_total, count(b_fail), b_total))
    print("  failing on both (the kernel's or FUSE's): %d" % count(kernel))
    for file, nums in sorted(kernel.items()):
        print("    %s %s" % (file, show(nums)))
    print("  known Tessera failures (%s): %d" % (sys.argv[3].split("/")[-1],
                                                 sum(len(v) for v in listed.values())))
    for (file, reason), nums in sorted(listed.items()):
        print("    %s %s: %s" % (file, show(nums), reason))
    for file, nums, reason in fixed:
        print("  NOW PASSING, remove from the known list: %s %s (%s)"
              % (file, show(nums), reason))
    print("  Tessera's own, not known: %d" % count(ours))
    for file, nums in sorted(ours.items()):
        print("    %s %s" % (file, show(nums)))

    n_fail = count(ours)
    n_skip = count(kernel) + sum(len(v) for v in listed.values())
    print("[==========] %d test(s) run." % t_total)
    print("[  PASSED  ] %d test(s)." % (t_total - n_fail - n_skip))
    if n_skip:
        print("[  SKIPPED ] %d test(s), listed below:" % n_skip)
        for file, nums in sorted(kernel.items()):
            print("[  SKIPPED ] pjdfstest %s %s: fails on bindfs too" % (file, show(nums)))
        for (file, reason), nums in sorted(listed.items()):
            print("[  SKIPPED ] pjdfstest %s %s: known: %s" % (file, show(nums), reason))
    if n_fail:
        print("[  FAILED  ] %d test(s), listed below:" % n_fail)
        for file, nums in sorted(ours.items()):
            print("[  FAILED  ] pjdfstest %s %s" % (file, show(nums)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
