"""What every bench/results file records about where its numbers come from
(issue 13 item 5): the commit (and whether the tree had uncommitted
changes), the compiler of the build, the CPU model, core count and kernel.
Imported by bench/bench.py, bench/micro.py and bench/reading_bench.py.

session_fs(path) says what the file system under a session costs a new
file or directory (issue 32): its type, whether an ext4 has a journal, and
the median time to make one directory there now. On an ext4 without a
journal each new inode skips, one buffer lookup each, every inode of its
block group deleted in the last 1-6 minutes (the kernel's
recently_deleted()), so one process's three new inodes cost 0.01 ms or
0.5 ms each depending on what was deleted nearby just before: a
process-creation figure means little without this beside it."""
import atexit
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time

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


def _mount_of(path):
    """(mount point, fstype, source, options) of the mount holding path
    (util-linux's findmnt), None when it cannot tell."""
    out = _run(['findmnt', '-n', '-T', path, '-o', 'TARGET,FSTYPE,SOURCE,OPTIONS'])
    fields = out.splitlines()[-1].split() if out else []  # the last: the one on top
    return tuple(fields) if len(fields) == 4 else None


def _ext4_journal(source):
    """True/False for an ext4 on a block device (jbd2 lists its journal),
    None when it cannot tell."""
    dev = os.path.basename(source or '')
    if not dev or not os.path.isdir('/proc/fs/ext4/' + dev):
        return None
    return os.path.isdir('/proc/fs/jbd2/%s-8' % dev)


def session_fs(path, probes=20):
    """What a new inode costs under path (a directory the benchmark writes
    its sessions in): fstype, mount options, ext4 journal, and the median
    microseconds of `probes` mkdirs in a fresh directory there, 'probe_dir'
    (for the caller to remove after its timed runs: deleting it here would
    slow the next new inodes on a journal-less ext4)."""
    m = _mount_of(path)
    out = {'path': path, 'mount': m[0] if m else None, 'fstype': m[1] if m else None,
           'source': m[2] if m else None, 'options': m[3] if m else None,
           'ext4_journal': _ext4_journal(m[2]) if m and m[1] == 'ext4' else None}
    probe = tempfile.mkdtemp(prefix='inode-probe-', dir=path)
    times = []
    for i in range(probes):
        t0 = time.perf_counter()
        os.mkdir(os.path.join(probe, 'd%d' % i), 0o700)
        times.append((time.perf_counter() - t0) * 1e6)
    out['probe_dir'] = probe
    out['new_dir_us_median'] = round(statistics.median(times), 1)
    out['new_dir_us_max'] = round(max(times), 1)
    return out


def run_dir(base, prefix):
    """A directory under base for a benchmark's sessions, removed at exit
    (also when a run fails) and not before: on an ext4 without a journal
    each inode deleted in the last 1-6 minutes slows every new one, so
    removing a run's session right after it would slow the next runs'
    thread and process starts by the benchmark's own doing."""
    d = tempfile.mkdtemp(prefix=prefix, dir=base)
    atexit.register(shutil.rmtree, d, True)
    return d


def session_fs_line(fs):
    """One line for a benchmark's header."""
    j = fs.get('ext4_journal')
    kind = fs.get('fstype') or '?'
    if kind == 'ext4':
        kind += ' with a journal' if j else (' without a journal' if j is False else '')
    return ('sessions on %s (%s, mounted at %s): a new directory there %.1f us median, %.1f max'
            % (fs['path'], kind, fs.get('mount'), fs['new_dir_us_median'], fs['new_dir_us_max']))


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
