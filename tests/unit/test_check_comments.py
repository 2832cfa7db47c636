#!/usr/bin/env python3
"""The self-test of tools/check-comments.py on the crafted files of
tests/data/check-comments: good.c has no finding; bad.c has exactly the
findings bad.expect lists (line, rule, key excerpt); a baseline of them
makes them non-fatal, an allow list hides them, an allow-list entry
without its reason is refused, a stale baseline entry is reported.

  test_check_comments.py LINT DATA_DIR WORK_DIR"""
import os
import re
import subprocess
import sys

lint, data, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
good = os.path.join(data, 'good.c')
bad = os.path.join(data, 'bad.c')
fails = []


def run(*args):
    r = subprocess.run([sys.executable, lint, '--figures-in', '', '--allow', '', '--baseline', '']
                       + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout


def check(cond, what):
    if not cond:
        fails.append(what)
        print('FAIL:', what)


rc, out = run(good)
check(rc == 0 and not out, f'good.c: rc {rc}, output:\n{out}')

rc, out = run(bad)
check(rc == 1, f'bad.c: rc {rc}, expected 1')
got = set()
for m in re.finditer(r'^\S*bad\.c:(\d+): (\w+):.*\n    key: \S*bad\.c: \w+: (.*)$', out, re.M):
    got.add((int(m.group(1)), m.group(2), m.group(3)))
want = set()
with open(os.path.join(data, 'bad.expect')) as f:
    for l in f:
        if l.strip() and not l.startswith('#'):
            line, rule, excerpt = l.rstrip('\n').split(' ', 2)
            want.add((int(line), rule, excerpt))
for x in sorted(want - got):
    check(False, f'bad.c: missed {x}')
for x in sorted(got - want):
    check(False, f'bad.c: unexpected {x}')

# A baseline of every finding: reported as baselined, not fatal.
base = os.path.join(work, 'baseline')
rc, _ = run('--write-baseline', base, bad)
with open(base) as f:
    keys = [l for l in f.read().split('\n') if l]
check(rc == 0 and len(keys) == len(want), f'--write-baseline: rc {rc}, {len(keys)} keys')
with open(base, 'a') as f:
    f.write('tests/data/check-comments/bad.c: figure: 99 ns/event\n')
rc, out = run('--baseline', base, bad)
check(rc == 0, f'baselined bad.c: rc {rc}')
check(out.count('(baselined)') == len(want), f'baselined bad.c: output\n{out}')
check('stale entry, matches no finding: tests/data/check-comments/bad.c: figure: 99 ns/event' in out,
      'a stale baseline entry is reported')

# An allow list with a reason for each entry hides them; one without is refused.
allow = os.path.join(work, 'allow')
with open(allow, 'w') as f:
    f.write(''.join(f'# crafted: {k}\n{k}\n' for k in keys))
rc, out = run('--allow', allow, bad)
check(rc == 0 and not out, f'allowed bad.c: rc {rc}, output:\n{out}')
with open(allow, 'w') as f:
    f.write(keys[0] + '\n')
rc, out = run('--allow', allow, bad)
check(rc == 2, f'allow entry without a reason: rc {rc}, expected 2')

# The figure rule applies only under --figures-in's prefixes.
rc, out = run('--figures-in', 'src/', bad)
check(' figure' not in out and ' date' in out, f'--figures-in src/: output\n{out}')

print(f'{len(fails)} failures')
sys.exit(1 if fails else 0)
