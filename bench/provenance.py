"""What every bench/results file records about where its numbers come from
(issue 13 item 5): the commit (and whether the tree had uncommitted
changes), the compiler of the build, the CPU model, core count and kernel.
Imported by bench/bench.py, bench/micro.py and bench/reading_bench.py."""
import os
import platform
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(cmd, cwd=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=30)
        return p.stdout.strip() if p.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return 'unknown'


def compiler(build):
    """The C compiler CMake configured in build (path and first --version line)."""
    cc = None
    try:
        with open(os.path.join(build, 'CMakeCache.txt')) as f:
            for line in f:
                m = re.match(r'CMAKE_C_COMPILER:\w+=(.+)', line.strip())
                if m:
                    cc = m.group(1)
                    break
    except OSError:
        pass
    version = _run([cc or 'cc', '--version'])
    return {'path': cc, 'version': version.splitlines()[0] if version else None}


def provenance(build):
    status = _run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=REPO)
    return {
        'commit': _run(['git', 'rev-parse', 'HEAD'], cwd=REPO),
        'commit_subject': _run(['git', 'log', '-1', '--format=%s'], cwd=REPO),
        'dirty': bool(status) if status is not None else None,
        'compiler': compiler(build),
        'cpu': cpu_model(),
        'cores': os.cpu_count(),
        'kernel': platform.release(),
    }
