#!/usr/bin/env python3
"""Comments that will stay true (issue 30): a lint of the C sources'
comments, run by tools/test.sh next to tools/check-format.sh.

  check-comments.py [--allow FILE] [--baseline FILE] [--write-baseline FILE]
                    [--figures-in PREFIXES] [PATH...]

PATH: C files (.c, .h) or directories searched for them; none: the
git-tracked C files under src/, tools/, tests/ and bench/ (every file in
those directories when git is not there), but for tests/data/ (the lint's
own crafted findings, tests/unit/test_check_comments.py). Paths are shown
relative to the repository root (the parent of tools/).

Rules (each finding is "path:line: rule: message" and a key, below):

  stacked   A whole-line block comment directly followed, with no blank
            line between, by another whole-line block comment: only the
            second one documents what follows, the first is an orphan (its
            function moved or went; the typical result of an edit that
            inserts a function between a doc comment and its own). Not a
            finding: a banner (a comment that starts with "---" or "===": a
            rule line or a section title, "/* ---- Title ---- */"), or a
            group label ("/* agent.c */", "/* handlers.c (not hook
            context): */") directly above a doc comment. Two labels in a row
            are one (the first labels nothing). Any nesting depth: inside a
            function body two stacked comments are one comment split in two,
            or one that lost its statement.
  detached  A whole-line block comment at file scope, other than the file's
            header (comments before the first line of code), a banner or a
            label, followed by a blank line and then anything but a banner
            (code, or another comment): a doc comment separated from what it
            documents, or one whose function went (what follows is someone
            else's). A note about a whole section goes into its banner.
  date      A date (YYYY-MM-DD) in a comment: "until 2026-11-28", "measured
            on 2026-11-24's host". Dates belong in commit messages.
  figure    A benchmark figure in a comment: a cost per unit ("4 ns per
            event", "14.3 ns/event", "0.5 ns per 32-byte event"), a
            throughput ("25 M events/s", "2 MB/s", "100 M/s"), a speed ratio
            ("0.29x", "3x faster"), an approximate duration or share ("~2
            ms", "~14 %"), a before -> after duration ("8.0 -> 7.3 ns"), or
            any duration or percentage in a sentence that says it was
            measured (measured, benchmark, wal_bench, perf, "on this
            machine", p50, median, ...). Figures go stale with the next
            compiler or host: they belong in docs/benchmarks.md (and the
            commit message), the comment keeps the reasoning. Only in files
            under src/ and tools/ (--figures-in): a benchmark's or a test's
            comments may state the load it generates or the bound it sets.

Not looked at: comments after code on the same line (they describe that
line), line comments (//), string literals. A doc comment separated from its
function by other code (a #define, another declaration) without any blank
line is only found when another comment sits in between (stacked).

Keys and the two lists. A finding's key is "path: rule: excerpt" (the
excerpt: the date or figure matched, or the start of the comment's first
line), so that a list survives edits that move lines. Both lists hold keys,
one a line; '#' starts a comment line, blank lines are ignored.
  --allow FILE     genuine exceptions, never reported. Every entry (or group
                   of entries, up to a blank line) must follow a '#' line
                   saying why (an entry without one is an error).
                   Default: tools/check-comments.allow when present.
  --baseline FILE  known findings not fixed yet (in files another branch
                   owns): reported as "baselined", not fatal. Entries that
                   match nothing are reported as stale (not fatal either).
                   Default: tools/check-comments.baseline when present.
  --write-baseline FILE  writes every finding's key to FILE (then exit 0).
  --figures-in PREFIXES  comma-separated path prefixes (relative to the
                   root) the figure rule applies to; default "src/,tools/";
                   "" for every file.
Exit 0: no finding outside the lists; 1: findings; 2: usage or list error.
"""
import bisect
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIRS = ['src', 'tools', 'tests', 'bench']


def lex(src):
    """The block comments of C source src, as dicts: sl/el (first and last
    line, 1-based), text (with /* */), alone (nothing but blanks before it on
    its first line and after it on its last), depth (brace depth). Also the
    set of line numbers holding code (not comment, not blank)."""
    comments = []
    code = set()
    i, n, line, depth = 0, len(src), 1, 0
    while i < n:
        c = src[i]
        if c == '\n':
            line += 1
            i += 1
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
            text = src[i:j]
            before = src[src.rfind('\n', 0, i) + 1:i]
            k = src.find('\n', j)
            after = src[j:n if k < 0 else k]
            comments.append({'sl': line, 'el': line + text.count('\n'), 'text': text,
                             'alone': not before.strip() and not after.strip(),
                             'depth': depth})
            line += text.count('\n')
            i = j
        elif src.startswith('//', i):
            j = src.find('\n', i)
            i = n if j < 0 else j
        elif c in '"\'':
            code.add(line)
            j = i + 1
            while j < n and src[j] != c and src[j] != '\n':
                j += 2 if src[j] == '\\' else 1
            i = j + 1 if j < n and src[j] == c else j
        else:
            if c == '{':
                depth += 1
            elif c == '}':
                depth = max(0, depth - 1)
            if not c.isspace():
                code.add(line)
            i += 1
    return comments, code


def body(text):
    """A comment's words on one line, without /* */ and leading stars."""
    t = text[2:-2] if text.endswith('*/') else text[2:]
    return ' '.join(l.strip().lstrip('*').strip() for l in t.split('\n')).strip()


def is_banner(c):
    b = body(c['text'])
    return bool(re.fullmatch(r'[-=*_~#+ ]*', b) or re.match(r'-{3,}|={3,}', b))


FILE_RE = r'[\w./-]+\.(?:c|h|S|cpp|py|sh)'


def is_label(c):
    """A group label: one line naming a file, as "/* agent.c */",
    "/* handlers.c (not hook context): */" or "/* flight.c: what it does. */"."""
    if c['sl'] != c['el']:
        return False
    return bool(re.match(FILE_RE + r'(?:\s*\([^)]*\))?\s*(?::|$)', body(c['text'])))


def first_line(c):
    return body(c['text'])[:60].rstrip()


DATE_RE = re.compile(r'\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b')

NUM = r'\d+(?:[.,]\d+)?'
RANGE = NUM + r'(?:\s*(?:-|–|/|to)\s*~?' + NUM + r')*'
TIME = r'(?:ns|us|µs|ms|s|sec|seconds?|cycles?|ticks?)'
PER_UNIT = (r'(?:event|call|instruction|insn|byte|symbol|function|op|operation|'
            r'iteration|record|pass|batch|lookup|hook|frame)s?')
STRONG = [
    # a cost per unit: "4 ns per event", "14.3 ns/event", "0.5 ns per 32-byte
    # event", "35 ns of drain CPU per event"
    re.compile(r'~?' + RANGE + r'\s*(?:[A-Z]{2,5}\s+)?' + TIME
               + r'\b[^.;()]{0,30}?(?:/\s*|\bper\s+)(?:\d+-byte\s+)?' + PER_UNIT + r'\b'),
    # a throughput: "25 M events/s", "2 MB/s", "100 M/s", "1.6 GB/s"
    re.compile(r'\b' + RANGE + r'\s*(?:[kKMG]\s*)?(?:events?|calls?|ops?|records?)\s*(?:/\s*s|per second)\b'),
    re.compile(r'\b' + RANGE + r'\s*[kKMGT]i?B\s*/\s*s\b'),
    re.compile(r'\b' + RANGE + r'\s*[kKMG]\s*/\s*s\b'),
    # a speed ratio: "0.29x", "3x faster"
    re.compile(r'\b\d+\.\d+x\b(?![0-9a-fA-F])'),
    re.compile(r'\b[1-9]\d*(?:\.\d+)?x\s+(?:faster|slower|quicker|the speed|the time)\b'),
    # an approximate duration or share: "~2 ms", "~14 %"
    re.compile(r'~\s*' + NUM + r'\s*(?:(?:ns|us|µs|ms|s)\b|%)'),
    # a duration before -> after: "8.0 -> 7.0-7.3 ns"
    re.compile(NUM + r'\s*(?:->|→)\s*' + RANGE + r'\s*' + TIME + r'\b'),
]
# any duration or percentage, a finding in a sentence that says it was measured
WEAK = re.compile(r'~?' + RANGE + r'\s*(?:(?:ns|us|µs|ms|s|cycles|ticks)\b|%)')
CUE = re.compile(r'\b(?:measured|measuring|benchmarks?|benchmarked|\w*_bench|micro\.py|perf|'
                 r'on this (?:machine|host|VM|box|laptop)|p50|p90|p99|median)\b', re.I)


def flatten(c):
    """Comment c's text on one line (each line without its leading blanks
    and star, joined by a space) and the offset where each line starts, so
    that a figure broken over two lines is still one match."""
    parts, starts, off = [], [], 0
    for i, l in enumerate(c['text'].split('\n')):
        l = l.strip()
        if i:
            l = re.sub(r'^\*(?!/)\s?', '', l)
        starts.append(off)
        parts.append(l)
        off += len(l) + 1
    return ' '.join(parts), starts


def sentences(text):
    """(offset, sentence) pairs of a flattened comment."""
    out, start = [], 0
    for m in re.finditer(r'[.;!?](?=\s)', text):
        out.append((start, text[start:m.end()]))
        start = m.end()
    out.append((start, text[start:]))
    return out


def figures(c):
    """(line, excerpt, kind) of each date and figure in comment c."""
    text, starts = flatten(c)
    found = []
    seen = []

    def add(m, kind, off=0):
        a, b = off + m.start(), off + m.end()
        if any(a < y and x < b for x, y in seen):
            return
        seen.append((a, b))
        found.append((c['sl'] + bisect.bisect_right(starts, a) - 1, text[a:b].strip(), kind))

    for m in DATE_RE.finditer(text):
        add(m, 'date')
    if not c.get('figures', True):
        return found
    for off, s in sentences(text):
        for r in STRONG:
            for m in r.finditer(s):
                add(m, 'figure', off)
        if CUE.search(s):
            for m in WEAK.finditer(s):
                add(m, 'figure', off)
    return found


def check_file(path, rel, fig_prefixes):
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            src = f.read()
    except OSError as e:
        return [(rel, 0, 'error', f'cannot read: {e.strerror}', '')]
    comments, code = lex(src)
    lines = src.split('\n')
    first_code = min(code) if code else len(lines) + 1
    out = []
    for a, b in zip(comments, comments[1:]):
        if not (a['alone'] and b['alone'] and b['sl'] == a['el'] + 1):
            continue
        if is_banner(a) or is_banner(b):
            continue
        if is_label(a) and not is_label(b):
            continue
        what = 'a group label with nothing under it' if is_label(a) else 'a comment that documents nothing'
        out.append((rel, a['sl'], 'stacked',
                    f'{what}: directly followed by the comment of line {b["sl"]}, which is the one '
                    'above the code (move it to what it documents, merge it, or drop it)',
                    first_line(a)))
    for i, c in enumerate(comments):
        if c['depth'] or not c['alone'] or c['sl'] < first_code or is_banner(c) or is_label(c):
            continue
        k = c['el']  # index of the line after the comment
        if k >= len(lines) or lines[k].strip():
            continue
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k >= len(lines):
            continue  # the end of the file
        nxt = comments[i + 1] if i + 1 < len(comments) else None
        if nxt and nxt['sl'] == k + 1 and (k + 1) not in code and is_banner(nxt):
            continue  # the end of a section
        out.append((rel, c['sl'], 'detached',
                    f'a blank line separates it from line {k + 1} (join them if it documents '
                    'what is there, else move it to what it documents or drop it)',
                    first_line(c)))
    for c in comments:
        c['figures'] = not fig_prefixes or rel.startswith(tuple(fig_prefixes))
        for line, excerpt, kind in figures(c):
            if kind == 'date':
                msg = f'a date ("{excerpt}"): dates belong in commit messages'
            else:
                msg = (f'a benchmark figure ("{excerpt}"): figures belong in docs/benchmarks.md and '
                       'commit messages; keep the reasoning without the number')
            out.append((rel, line, kind, msg, excerpt))
    return out


def key(f):
    return f'{f[0]}: {f[2]}: {f[4]}'


def read_list(path, need_reason):
    """The keys of an allow or baseline file; exits 2 on an entry without a
    reason when need_reason."""
    keys = {}
    reason = False
    with open(path, encoding='utf-8') as f:
        for no, l in enumerate(f, 1):
            l = l.rstrip('\n')
            if not l.strip():
                reason = False
                continue
            if l.startswith('#'):
                reason = True
                continue
            if need_reason and not reason:
                print(f'{path}:{no}: allow-list entry without a "# why" line above it', file=sys.stderr)
                sys.exit(2)
            keys[l.strip()] = no
    return keys


def files_of(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for d, dirs, names in os.walk(p):
                dirs.sort()
                out += [os.path.join(d, x) for x in sorted(names) if x.endswith(('.c', '.h'))]
        else:
            out.append(p)
    return out


def default_files():
    try:
        r = subprocess.run(['git', '-C', ROOT, 'ls-files', '--'] +
                           [f'{d}/*.c' for d in DEFAULT_DIRS] + [f'{d}/*.h' for d in DEFAULT_DIRS],
                           capture_output=True, text=True, check=True)
        files = [os.path.join(ROOT, x) for x in r.stdout.split()]
    except (OSError, subprocess.CalledProcessError):
        files = files_of([os.path.join(ROOT, d) for d in DEFAULT_DIRS])
    skip = os.path.join(ROOT, 'tests', 'data') + os.sep
    return [f for f in files if not f.startswith(skip)]


def main(argv):
    allow_path = os.path.join(ROOT, 'tools/check-comments.allow')
    base_path = os.path.join(ROOT, 'tools/check-comments.baseline')
    allow_path = allow_path if os.path.exists(allow_path) else None
    base_path = base_path if os.path.exists(base_path) else None
    write = None
    fig = ['src/', 'tools/']
    paths = []
    it = iter(argv)
    for a in it:
        if a in ('--allow', '--baseline', '--write-baseline', '--figures-in'):
            v = next(it, None)
            if v is None:
                print(f'check-comments: {a} needs a file', file=sys.stderr)
                return 2
            if a == '--allow':
                allow_path = v or None
            elif a == '--baseline':
                base_path = v or None
            elif a == '--figures-in':
                fig = [x for x in v.split(',') if x]
            else:
                write = v
        elif a in ('-h', '--help'):
            print(__doc__)
            return 0
        elif a.startswith('-'):
            print(f'check-comments: unknown option {a}', file=sys.stderr)
            return 2
        else:
            paths.append(a)
    allow = read_list(allow_path, True) if allow_path else {}
    base = read_list(base_path, False) if base_path else {}
    files = files_of(paths) if paths else default_files()
    findings = []
    for p in files:
        rel = os.path.relpath(os.path.abspath(p), ROOT)
        findings += check_file(p, rel, fig)
    findings.sort(key=lambda f: (f[0], f[1], f[2]))
    if write:
        with open(write, 'w', encoding='utf-8') as f:
            for x in findings:
                if key(x) not in allow:
                    f.write(key(x) + '\n')
        return 0
    bad = baselined = 0
    used = set()
    for f in findings:
        k = key(f)
        if k in allow:
            used.add(k)
            continue
        if k in base:
            used.add(k)
            baselined += 1
            print(f'{f[0]}:{f[1]}: {f[2]} (baselined): {f[3]}')
            continue
        bad += 1
        print(f'{f[0]}:{f[1]}: {f[2]}: {f[3]}\n    key: {k}')
    checked = {f[0] for f in findings} | {os.path.relpath(os.path.abspath(p), ROOT) for p in files}
    for lst, name in ((allow, allow_path), (base, base_path)):
        for k, no in lst.items():
            if k not in used and k.split(': ', 1)[0] in checked:
                print(f'{name}:{no}: stale entry, matches no finding: {k}')
    print(f'check-comments: {len(files)} files, {bad} findings'
          + (f', {baselined} baselined' if baselined else ''), file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
