#!/usr/bin/env python3
"""docs_check.py - checks for README.md and docs/*.md (run by test_docs.sh).

  docs_check.py links TOP FILE...    every relative link (file, and #anchor
                                     in a Markdown target) resolves
  docs_check.py targets TOP FILE...  every `make TARGET` named in code
                                     (inline or fenced) is a Makefile target
  docs_check.py reach TOP            every docs/*.md is linked from README.md
  docs_check.py names TOP FILE HEADING
                                     in the section of FILE under HEADING
                                     (a prefix), every source file and every
                                     function or macro named in code is in
                                     the tree (the walk of one request must
                                     not drift from the code it describes)

Anchors follow GitHub's rule: the heading's text lower-cased, characters
other than letters, digits, '_', '-' and spaces dropped, spaces turned to
'-', and a repeated anchor suffixed -1, -2... Prints one line per problem;
exits 1 if there is any.
"""
import os, re, subprocess, sys

LINK = re.compile(r'!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r'^\s*(```|~~~)')


def prose_lines(path):
    """(line number, text) outside fenced code, with code spans blanked."""
    fenced = False
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, re.sub(r'`[^`]*`', '``', line)


def code_texts(path):
    """(line number, text) of code: fenced lines and inline code spans."""
    fenced = False
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            yield n, line
        else:
            for span in re.findall(r'`([^`]*)`', line):
                yield n, span


def slug(heading):
    s = re.sub(r'[`*]|\[([^\]]*)\]\([^)]*\)', lambda m: m.group(1) or '', heading)
    s = re.sub(r'[^\w\- ]', '', s.strip().lower())
    return s.replace(' ', '-')


def heading_lines(path):
    fenced = False
    for line in open(path, encoding='utf-8'):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield line


def anchors_of(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        for line in heading_lines(path):
            m = re.match(r'^(#{1,6})\s+(.*?)\s*$', line)
            if m:
                s = slug(m.group(2))
                k = seen.get(s, 0)
                seen[s] = k + 1
                out.add(s if k == 0 else '%s-%d' % (s, k))
        cache[path] = out
    return cache[path]


def check_links(top, files):
    bad = 0
    for f in files:
        for n, line in prose_lines(f):
            for target in LINK.findall(line):
                if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                    continue  # http:, https:, mailto:
                where, _, frag = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(f), where)) if where else f
                rel = os.path.relpath(f, top)
                if not os.path.exists(dest):
                    print('%s:%d: broken link %s: no file %s' % (rel, n, target,
                                                                 os.path.relpath(dest, top)))
                    bad += 1
                elif frag and dest.endswith('.md') and frag not in anchors_of(dest):
                    print('%s:%d: broken link %s: no heading with anchor #%s in %s'
                          % (rel, n, target, frag, os.path.relpath(dest, top)))
                    bad += 1
    return bad


def make_targets(top):
    """Targets of the Makefile, from make's database (nothing is built)."""
    p = subprocess.run(['make', '-C', top, '-qp', '--no-print-directory'],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       env=dict(os.environ, MAKEFLAGS='', MFLAGS='', MAKELEVEL=''))
    # A target is real when make knows a way to make it: prerequisites or
    # a recipe (a name only listed in .PHONY has neither).
    out, prev, lines = set(), '', p.stdout.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^([A-Za-z0-9_.][^\s:=#%]*):(?!=)\s*(.*)$', line)
        if m and prev != '# Not a target:':  # make's word for a file it only knows of
            body = lines[i + 1:]
            end = next((k for k, x in enumerate(body) if x == ''), len(body))
            if m.group(2).strip() or any(x.startswith('\t') for x in body[:end]):
                out.add(m.group(1))
        prev = line
    return out


def check_targets(top, files):
    known = make_targets(top)
    if 'all' not in known:
        print('could not read the Makefile\'s targets (make -qp)')
        return 1
    bad = 0
    for f in files:
        for n, text in code_texts(f):
            for m in re.finditer(r'(?:^|[\s;&|(])make((?:\s+\S+)*)', text):
                words = m.group(1).split()
                # skip options and VAR=value; the first other word is a target
                goal = next((w for w in words if not w.startswith('-') and '=' not in w), None)
                if goal is None or goal.startswith('#'):
                    continue
                if not re.match(r'^[a-z][a-z0-9_-]*$', goal):
                    continue  # a file target (build/...) or not a make command
                if goal not in known:
                    print('%s:%d: `make %s`: no such target in the Makefile'
                          % (os.path.relpath(f, top), n, goal))
                    bad += 1
    return bad


def check_reach(top):
    readme = os.path.join(top, 'README.md')
    linked = set()
    for _, line in prose_lines(readme):
        for target in LINK.findall(line):
            linked.add(os.path.normpath(os.path.join(top, target.partition('#')[0])))
    bad = 0
    docs = os.path.join(top, 'docs')
    for name in sorted(os.listdir(docs)) if os.path.isdir(docs) else []:
        p = os.path.join(docs, name)
        if name.endswith('.md') and p not in linked:
            print('docs/%s: not linked from README.md' % name)
            bad += 1
    return bad


SOURCES = ('client', 'server', 'proto', 'dataloops', 'lockmgr', 'romio-adio')


def source_words(top):
    words = set()
    for part in SOURCES:
        for root, _, names in os.walk(os.path.join(top, part)):
            for n in names:
                if n.endswith(('.c', '.h', '.proto')):
                    with open(os.path.join(root, n), encoding='utf-8', errors='replace') as f:
                        words.update(re.findall(r'\w+', f.read()))
    return words


def section(top, path, heading):
    """(lines, start, end): the section of path under heading (a prefix),
    up to the next heading of its level or above; None if there is none."""
    lines = open(path, encoding='utf-8').read().split('\n')
    start = next((i for i, l in enumerate(lines)
                  if re.match(r'^#+ ', l) and l.lstrip('#').strip().startswith(heading)), None)
    if start is None:
        print('%s: no section "%s"' % (os.path.relpath(path, top), heading))
        return None
    level = len(lines[start]) - len(lines[start].lstrip('#'))
    end = next((i for i in range(start + 1, len(lines))
                if re.match(r'^#{1,%d} ' % level, lines[i])), len(lines))
    return lines, start, end


def print_blocks(top, path, heading):
    """Each fenced sh block of the section, as it is, after a line
    '#### block N (line L)': what a test runs literally."""
    found = section(top, path, heading)
    if found is None:
        return 1
    lines, start, end = found
    n, inside = 0, False
    for i in range(start, end):
        if FENCE.match(lines[i]):
            if not inside and lines[i].strip() in ('```sh', '```bash'):
                n += 1
                print('#### block %d (line %d)' % (n, i + 1))
                inside = True
            elif inside:
                inside = False
            continue
        if inside:
            print(lines[i])
    return 0


def check_names(top, path, heading):
    found = section(top, path, heading)
    if found is None:
        return 1
    lines, start, end = found
    words, bad, seen = source_words(top), 0, 0
    for n in range(start, end):
        for span in re.findall(r'`([^`]*)`', lines[n]):
            if re.match(r'^[\w./-]+\.(c|h|proto)$', span) and '/' in span:
                seen += 1
                if not os.path.exists(os.path.join(top, span)):
                    print('%s:%d: no file %s' % (os.path.relpath(path, top), n + 1, span))
                    bad += 1
            elif re.match(r'^([a-z][a-z0-9_]*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)$', span):
                seen += 1
                if span not in words:
                    print('%s:%d: `%s` is named nowhere in %s' % (os.path.relpath(path, top),
                                                                  n + 1, span, ', '.join(SOURCES)))
                    bad += 1
    print('%d names and files checked' % seen)
    return bad


def main():
    mode, top, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == 'links':
        bad = check_links(top, files)
    elif mode == 'targets':
        bad = check_targets(top, files)
    elif mode == 'reach':
        bad = check_reach(top)
    elif mode == 'names':
        bad = check_names(top, files[0], files[1])
    elif mode == 'blocks':
        bad = print_blocks(top, files[0], files[1])
    else:
        sys.exit('usage: docs_check.py links|targets|reach|names|blocks TOP [FILE...]')
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
