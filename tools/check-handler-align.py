#!/usr/bin/env python3
"""The trampolines call the agent's handlers without aligning the stack
(src/hook/x86_64/x86_emit.c): a handler function runs with rsp 8 bytes off
the ABI's alignment. Checks, on the built agent, that no code reachable
from a trampoline that way calls out of handlers.c (libc, the ring's slow
path, keysym lookups, ...) before realigning (handlers.c, HANDLERS_REALIGN).

  check-handler-align.py LIBADA_AGENT_SO HANDLERS_OBJECT...

Reachable "misaligned": the handlers the trampolines call, then every
function those jump to (tail calls, .cold parts) or call before their own
`and rsp, -N`. A call from such code is fine only to another handlers.c
function (which is then checked in turn) or to one that realigns first.
A function counts as realigned from its first `and rsp` on, in address
order: right for gcc's force_align_arg_pointer prologue, which is all this
looks for (a realignment on one branch only would fool it).
Exit 0: clean; 1: a misaligned call (listed); 77: objdump missing.
The other arguments may hold every object of the agent: the one named
handlers.c.o is used."""
import re
import shutil
import subprocess
import sys

ROOTS = ['ada_hook_on_enter', 'ada_hook_on_exit', 'ada_hook_on_enter_detail',
         'ada_hook_on_enter_detail128', 'ada_hook_on_exit_detail', 'agent_hook_on_enter_special',
         # the fast form (x86_emit.c) calls these unaligned too
         'ada_hook_on_enter_held', 'ada_hook_on_exit_held', 'ada_hook_fast_flush',
         'ada_hook_on_enter_detail_held', 'ada_hook_on_enter_detail128_held',
         'ada_hook_on_exit_detail_held', 'ada_hook_on_enter_detail_member',
         'ada_hook_on_enter_detail128_member', 'ada_hook_on_exit_detail_member']
REALIGN = re.compile(r'\tand +\$0xf+[0-9a-f]0,%rsp')
BRANCH = re.compile(r'\t(call|jmp|j[a-z]+) +[0-9a-f]+ <([^>+]+)(\+0x[0-9a-f]+)?>')


def disasm(path):
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', path],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'^[0-9a-f]+ <(.+)>:$', line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
        elif cur and '\t' in line:
            funcs[cur].append(line)
    return funcs


def main():
    if shutil.which('objdump') is None:
        return 77
    so = sys.argv[1]
    objs = [a for arg in sys.argv[2:] for a in arg.split(';') if a.endswith('handlers.c.o')]
    if not objs:
        print('check-handler-align: no handlers.c.o among the arguments', file=sys.stderr)
        return 2
    funcs = disasm(so)
    own = {name.split('.')[0] for name in disasm(objs[0])}
    missing = [r for r in ROOTS if r not in funcs]
    if missing:
        print('check-handler-align: handlers not found:', missing, file=sys.stderr)
        return 1

    def realigns_first(f):
        for line in funcs.get(f, [])[:16]:
            if REALIGN.search(line):
                return True
            if re.search(r'\t(call|jmp|j[a-z]+|ret)', line):
                return False
        return False

    seen, todo, bad = set(), list(ROOTS), []
    while todo:
        f = todo.pop()
        if f in seen or f not in funcs:
            continue
        seen.add(f)
        realigned = False
        for line in funcs[f]:
            if REALIGN.search(line):
                realigned = True
            m = BRANCH.search(line)
            if not m:
                continue
            op, tgt = m.group(1), m.group(2)
            if op != 'call':
                # a jump: the target runs on this stack (a function's own
                # .cold part after its realignment does not count)
                if tgt != f and not (realigned and tgt == f + '.cold'):
                    todo.append(tgt)
                continue
            if realigned or realigns_first(tgt):
                continue
            if tgt.split('.')[0] in own:
                todo.append(tgt)
            else:
                bad.append((f, line.strip()))
    for f, line in bad:
        print(f'check-handler-align: {f} calls out of handlers.c on a misaligned stack: {line}')
    print(f'check-handler-align: {len(seen)} functions reachable from the trampolines, '
          f'{len(bad)} misaligned calls')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
