#!/usr/bin/env python3
"""What ada costs real programs (issue 32 item 6, PR-003): a sqlite3
script, perl regexes, python json + sqlite3, a redis-server under
redis-benchmark, an nginx serving a curl loop and a g++ compile, each
untraced, under `ada record` (default settings), under `ada record
--overhead-budget 10` and under `uftrace record -P .`, interleaved run by
run.

  bench/real_programs.py [--ada build/ada] [--reps 3]
                         [--workload sqlite,perl,python,redis,nginx,gxx]
                         [--variant untraced,ada,budget,uftrace] [--ada-before PATH]

The default workloads are short (0.05-0.7 s of CPU untraced): a fixed
start-up cost (the agent's install, the recorder's set-up, the budget's
first ticks) weighs far more in them than in any real use. Each has a
long form besides, the same work ten times over (1-3 s of CPU; a g++
compile of a larger file), named with -long (sqlite-long, perl-long,
python-long, nginx-long, gxx-long: --workload long is all five; redis
already runs 2-3 s): the steady state, where the counts and the events
are what is left. Both rows go in a table, each labelled.

Variants: untraced, ada (default settings), budget (`--overhead-budget 10`,
a second run: what the warm-up run moved starts count-only), budget-cold
(the same with the remembered moves deleted before each run: a first
run), uftrace (`uftrace record -P .`).

--exclude-top N,N,... adds `budget-topN`: `--overhead-budget 10` beside
`--exclude-symbol` of the N functions the warm budget run (a first run)
counted most (its manifests' count_only calls), each with its own plan
cache (PR-003's "when excluding extremely hot runtime symbols").

--ada-before PATH adds `budget-before`: `--overhead-budget 10` under another
build of ada (say, before a change), in the same rotation; and with
budget-cold, `budget-cold-before`: that build's first run.

Per workload and variant: the median over the runs of the wall time and
of the CPU time of the traced program and its recorder (RUSAGE_CHILDREN:
`ada record` and all it waited for; for redis and nginx the client's own
CPU time, measured apart, is taken out). Ratios are to the untraced
median of the same run. The plan cache (XDG_CACHE_HOME under the work
directory) is filled by one untimed run per workload and ada variant
first: the table is a user's second run. Trace output goes to the work
directory (--work, default a new directory under $TMPDIR: put it on a
tmpfs, or say the disk's speed with the table).

Run it under `flock /work/bench.lock`, one or two workloads at a time so
that a locked run stays under two minutes. Writes
bench/results/<date>-real.json (with bench/provenance.py's record) and
prints a markdown table. Only the standard library and the programs
themselves (skipped, and said, when one is not installed)."""
import argparse
import datetime
import glob
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import REPO, provenance  # noqa: E402

SQL_ROWS = 100000
SQLITE_SCRIPT = """create table t(a integer primary key, b text, c real);
with recursive n(i) as (select 1 union all select i + 1 from n where i < %d)
insert into t select i, printf('row-%%08d', i * 7919 %% 100003), i * 0.5 from n;
create index tb on t(b);
select count(*), sum(c) from t where b like 'row-0001%%';
select b, count(*) from t group by substr(b, 1, 7) order by 2 desc limit 3;
""" % SQL_ROWS

PERL_SCRIPT = r"""my $s = join('', map { chr(97 + ($_ * 7) % 26) . ($_ % 13 ? '' : ' ') } 1 .. 16384);
my $n = 0;
for my $i (1 .. 600) { while ($s =~ /([aeiou]\w{2,5})\s/g) { $n++ } $n += () = $s =~ /q[a-z]{3}/g; }
print "$n\n";
"""

PYTHON_SCRIPT = r"""import json, sqlite3
rows = [{"id": i, "name": "n%d" % i, "tags": ["a", "b", str(i % 7)], "v": i * 0.25}
        for i in range(10000)]
for _ in range(6):
    s = json.dumps(rows)
    rows = json.loads(s)
db = sqlite3.connect(":memory:")
db.execute("create table t(id integer primary key, name text, v real)")
db.executemany("insert into t values (?, ?, ?)", ((r["id"], r["name"], r["v"]) for r in rows))
print(db.execute("select count(*), sum(v) from t where name like 'n1%'").fetchone())
"""

GXX_SOURCE = r"""#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>
template <typename T> T total(const std::vector<T> &v) { T s{}; for (auto &x : v) s += x; return s; }
int main() {
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 100; i++) m[std::to_string(i % 10)].push_back(i);
	std::vector<std::string> keys;
	for (auto &kv : m) keys.push_back(kv.first);
	std::sort(keys.begin(), keys.end());
	for (auto &k : keys) std::cout << k << ' ' << total(m[k]) << '\n';
}
"""

NGINX_CONF = """worker_processes 1;
daemon off;
master_process off;
error_log %(d)s/error.log crit;
pid %(d)s/nginx.pid;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path %(d)s/body;
	proxy_temp_path %(d)s/proxy;
	fastcgi_temp_path %(d)s/fcgi;
	uwsgi_temp_path %(d)s/uwsgi;
	scgi_temp_path %(d)s/scgi;
	server { listen 127.0.0.1:%(port)d; root %(d)s/www; }
}
"""

# The long forms (docs above): the same work LONG times over.
LONG = 10
SQLITE_LONG_SCRIPT = SQLITE_SCRIPT.replace('i < %d)' % SQL_ROWS, 'i < %d)' % (SQL_ROWS * LONG))
PERL_LONG_SCRIPT = PERL_SCRIPT.replace('(1 .. 600)', '(1 .. %d)' % (600 * LONG))
PYTHON_LONG_SCRIPT = PYTHON_SCRIPT.replace('range(10000)', 'range(%d)' % (10000 * LONG))
assert SQLITE_LONG_SCRIPT != SQLITE_SCRIPT and PERL_LONG_SCRIPT != PERL_SCRIPT
assert PYTHON_LONG_SCRIPT != PYTHON_SCRIPT

# gxx-long: more of the standard library instantiated (about 4x the CPU
# of g.cc: a compile of a real source file, not of a 20-line one).
GXX_LONG_SOURCE = r"""#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
template <typename K, typename V> struct table {
	std::unordered_map<K, std::vector<V>> m;
	void add(const K &k, const V &v) { m[k].push_back(v); }
	std::set<V> all() const { std::set<V> s; for (auto &kv : m) s.insert(kv.second.begin(), kv.second.end()); return s; }
};
int main(int argc, char **argv) {
	table<std::string, int> t;
	table<int, std::string> u;
	std::map<std::string, std::shared_ptr<std::vector<double>>> w;
	std::regex re("([a-z]+)([0-9]*)");
	for (int i = 1; i < argc; i++) {
		std::smatch m;
		std::string a(argv[i]);
		if (std::regex_match(a, m, re)) { t.add(m[1], i); u.add(i, m[2]); }
		w[a] = std::make_shared<std::vector<double>>(i, 0.5);
	}
	std::ostringstream os;
	for (int v : t.all()) os << v << ' ';
	for (auto &s : u.all()) os << s << ' ';
	std::vector<std::function<int(int)>> fs{[](int x) { return x + 1; }, [](int x) { return x * 2; }};
	int r = 0;
	for (auto &f : fs) r = f(r);
	std::cout << os.str() << w.size() << r << '\n';
}
"""

REDIS_REQUESTS = 20000
NGINX_REQUESTS = 2000
NGINX_LONG_REQUESTS = NGINX_REQUESTS * LONG


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_port(port, proc, limit=60.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class Workloads:
    """Each workload: run(wrap) -> (wall s, CPU s) of the traced side."""

    def __init__(self, work):
        self.work = work
        self.files = os.path.join(work, 'files')
        os.makedirs(self.files, exist_ok=True)
        for name, text in (('s.sql', SQLITE_SCRIPT), ('r.pl', PERL_SCRIPT),
                           ('j.py', PYTHON_SCRIPT), ('g.cc', GXX_SOURCE),
                           ('sl.sql', SQLITE_LONG_SCRIPT), ('rl.pl', PERL_LONG_SCRIPT),
                           ('jl.py', PYTHON_LONG_SCRIPT), ('gl.cc', GXX_LONG_SOURCE)):
            with open(os.path.join(self.files, name), 'w') as f:
                f.write(text)

    def _simple(self, argv, wrap, stdin=None):
        full, env = wrap(argv)
        c0, t0 = children_cpu(), time.monotonic()
        with open(stdin) if stdin else open(os.devnull) as fin:
            p = subprocess.run(full, stdin=fin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env, cwd=self.work)
        wall, cpu = time.monotonic() - t0, children_cpu() - c0
        if p.returncode:
            raise RuntimeError('%s exited %d' % (' '.join(full), p.returncode))
        return wall, cpu

    def sqlite(self, wrap):
        return self._simple(['sqlite3', ':memory:'], wrap,
                            stdin=os.path.join(self.files, 's.sql'))

    def perl(self, wrap):
        return self._simple(['perl', os.path.join(self.files, 'r.pl')], wrap)

    def python(self, wrap):
        return self._simple([sys.executable, os.path.join(self.files, 'j.py')], wrap)

    def gxx(self, wrap, src='g.cc'):
        out = os.path.join(self.work, 'g.o')
        return self._simple(['g++', '-O1', '-c', os.path.join(self.files, src), '-o', out],
                            wrap)

    # The long forms (LONG times the work; the module's doc).
    def sqlite_long(self, wrap):
        return self._simple(['sqlite3', ':memory:'], wrap,
                            stdin=os.path.join(self.files, 'sl.sql'))

    def perl_long(self, wrap):
        return self._simple(['perl', os.path.join(self.files, 'rl.pl')], wrap)

    def python_long(self, wrap):
        return self._simple([sys.executable, os.path.join(self.files, 'jl.py')], wrap)

    def gxx_long(self, wrap):
        return self.gxx(wrap, 'gl.cc')

    def nginx_long(self, wrap):
        return self.nginx(wrap, NGINX_LONG_REQUESTS)

    def _server(self, argv, wrap, port, client, stop):
        """The server traced, the client not: the client's CPU is taken out."""
        full, env = wrap(argv)
        c0, t0 = children_cpu(), time.monotonic()
        p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env, cwd=self.work)
        try:
            if not wait_port(port, p):
                raise RuntimeError('%s did not listen on %d' % (argv[0], port))
            k0 = children_cpu()
            subprocess.run(client, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True, timeout=110)
            client_cpu = children_cpu() - k0
            stop(p)
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        return time.monotonic() - t0, children_cpu() - c0 - client_cpu

    def redis(self, wrap):
        port = free_port()
        argv = ['redis-server', '--port', str(port), '--save', '', '--appendonly', 'no',
                '--dir', self.work]

        def stop(p):
            subprocess.run(['redis-cli', '-p', str(port), 'shutdown', 'nosave'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = ['redis-benchmark', '-p', str(port), '-n', str(REDIS_REQUESTS), '-c', '4',
                  '-t', 'set,get', '-q']
        return self._server(argv, wrap, port, client, stop)

    def nginx(self, wrap, requests=None):
        requests = requests or NGINX_REQUESTS
        port = free_port()
        d = os.path.join(self.work, 'nginx-%d' % port)
        os.makedirs(os.path.join(d, 'www'))
        with open(os.path.join(d, 'www', 'index.html'), 'w') as f:
            f.write('<html>' + 'x' * 4000 + '</html>\n')
        with open(os.path.join(d, 'nginx.conf'), 'w') as f:
            f.write(NGINX_CONF % {'d': d, 'port': port})
        argv = ['nginx', '-p', d, '-c', os.path.join(d, 'nginx.conf')]

        def stop(p):
            try:
                with open(os.path.join(d, 'nginx.pid')) as f:
                    os.kill(int(f.read().strip()), signal.SIGQUIT)
            except (OSError, ValueError):
                p.terminate()
        client = ['curl', '-s', '-o', '/dev/null',
                  'http://127.0.0.1:%d/index.html?[1-%d]' % (port, requests)]
        try:
            return self._server(argv, wrap, port, client, stop)
        finally:
            shutil.rmtree(d, ignore_errors=True)


PROGRAMS = {'sqlite': 'sqlite3', 'perl': 'perl', 'python': None, 'gxx': 'g++',
            'redis': 'redis-server', 'nginx': 'nginx'}
EXTRA = {'redis': ['redis-benchmark', 'redis-cli'], 'nginx': ['curl']}
LONG_FORMS = ('sqlite', 'perl', 'python', 'nginx', 'gxx')
for _n in LONG_FORMS:
    PROGRAMS[_n + '-long'] = PROGRAMS[_n]
    if _n in EXTRA:
        EXTRA[_n + '-long'] = EXTRA[_n]
# What a table row says of each workload's length.
LABEL = {'sqlite': 'sqlite3 script (short: 100 000 rows)', 'perl': 'perl regexes (short: 600 rounds)',
         'python': 'python json + sqlite3 (short: 10 000 dicts)',
         'redis': 'redis-server, 40 000 requests', 'nginx': 'nginx (short: 2 000 requests)',
         'gxx': 'g++ -O1 -c (short: a 20-line file)',
         'sqlite-long': 'sqlite3 script (long: 1 000 000 rows)',
         'perl-long': 'perl regexes (long: 6 000 rounds)',
         'python-long': 'python json + sqlite3 (long: 100 000 dicts)',
         'nginx-long': 'nginx (long: 20 000 requests)',
         'gxx-long': 'g++ -O1 -c (long: a file using <regex>, <unordered_map>, ...)'}


def workload_names(spec):
    """--workload's list: names, 'long' (every long form), 'all' (every
    workload, short and long)."""
    out = []
    for n in spec.split(','):
        if n == 'long':
            out += [x + '-long' for x in LONG_FORMS]
        elif n == 'all':
            out += list(PROGRAMS)
        elif n in PROGRAMS:
            out.append(n)
        else:
            raise SystemExit('unknown workload %r (one of %s, long, all)' % (n, ', '.join(PROGRAMS)))
    return out


def workload_run(w, name):
    """The Workloads method of a workload name (sqlite-long: sqlite_long)."""
    return getattr(w, name.replace('-', '_'))


def variants(args, work):
    ada = os.path.abspath(args.ada)
    v = {'untraced': lambda argv: (argv, None)}

    def ada_variant(name, binary, opts, cache=None):
        # A plan cache per build: two builds sharing one remove each
        # other's files of the same image.
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, cache or 'cache-%x' % hash(binary)))
        out = os.path.join(work, 'out-' + name)

        def wrap(argv):
            shutil.rmtree(out, ignore_errors=True)
            more = opts() if callable(opts) else opts
            return [binary, 'record', '--out', out] + more + ['--'] + argv, env
        return wrap
    v['ada'] = ada_variant('ada', ada, [])
    v['budget'] = ada_variant('budget', ada, ['--overhead-budget', '10'])
    # The budget's first run of a program: what an earlier run moved
    # (<build-id>.moved beside the plan cache) forgotten first.
    cold = ada_variant('budget-cold', ada, ['--overhead-budget', '10'])

    def budget_cold(argv):
        for f in glob.glob(os.path.join(work, 'cache-%x' % hash(ada), 'ada', 'plans', '*.moved')):
            os.unlink(f)
        return cold(argv)
    v['budget-cold'] = budget_cold
    # budget-topN: the budget beside --exclude-symbol of the N functions
    # the warm budget run counted most (set per workload by main), each
    # with its own plan cache: its moves are not the budget's.
    for n in args.exclude_top:
        name = 'budget-top%d' % n
        v[name] = ada_variant(name, ada, lambda n=n: ['--overhead-budget', '10', '--exclude-symbol',
                                                        ','.join(args.top_names[:n])],
                              cache='cache-' + name)
        args.variant.append(name)
    if args.ada_before:
        before = os.path.abspath(args.ada_before)
        v['budget-before'] = ada_variant('budget-before', before, ['--overhead-budget', '10'])
        args.variant.append('budget-before')
        cold_before = ada_variant('budget-cold-before', before, ['--overhead-budget', '10'])

        def budget_cold_before(argv):
            for f in glob.glob(os.path.join(work, 'cache-%x' % hash(before), 'ada', 'plans',
                                            '*.moved')):
                os.unlink(f)
            return cold_before(argv)
        v['budget-cold-before'] = budget_cold_before
        if 'budget-cold' in args.variant:
            args.variant.append('budget-cold-before')
    if shutil.which('uftrace'):
        def uft(argv):
            out = os.path.join(work, 'uftrace')
            shutil.rmtree(out, ignore_errors=True)
            return ['uftrace', 'record', '-P', '.', '-d', out, '--'] + argv, None
        v['uftrace'] = uft
    return {k: v[k] for k in args.variant if k in v}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ada', default=os.path.join(REPO, 'build', 'ada'))
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--workload', default='sqlite,perl,python,redis,nginx,gxx',
                    help='names (sqlite-long ...), long (the five long forms), all')
    ap.add_argument('--variant', default='untraced,ada,budget,uftrace')
    ap.add_argument('--ada-before', default=None)
    ap.add_argument('--exclude-top', default='',
                    help='N,N,...: budget-topN variants, the budget beside --exclude-symbol of '
                         'the N functions its warm run counted most')
    ap.add_argument('--work', default=None)
    ap.add_argument('--no-write', action='store_true')
    args = ap.parse_args()
    args.variant = args.variant.split(',')
    args.exclude_top = [int(n) for n in args.exclude_top.split(',') if n]
    args.top_names = []
    work = tempfile.mkdtemp(prefix='ada-real-', dir=args.work)
    try:
        w = Workloads(work)
        vs = variants(args, work)
        loads = {'before': os.getloadavg()}
        res, skipped, top = {}, {}, {}
        for name in workload_names(args.workload):
            need = [PROGRAMS[name]] if PROGRAMS[name] else []
            missing = [p for p in need + EXTRA.get(name, []) if not shutil.which(p)]
            if missing:
                skipped[name] = 'not installed: ' + ', '.join(missing)
                continue
            run = workload_run(w, name)
            for vname in ('ada', 'budget', 'budget-before'):  # the plan cache, warm
                if vname in vs:
                    run(vs[vname])
            if args.exclude_top:
                counted = top_counted(os.path.join(work, 'out-budget'))
                args.top_names = [n for n, _ in counted]
                top[name] = {'counted': sum(c for _, c in counted),
                             'top': counted[:max(args.exclude_top)]}
                for n in args.exclude_top:
                    run(vs['budget-top%d' % n])
            res[name] = {k: [] for k in vs}
            for _ in range(args.reps):
                for vname, wrap in vs.items():
                    res[name][vname].append(run(wrap))
        loads['after'] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(res, skipped, loads, args, top)


def top_counted(out):
    """The count-only functions of a recording, most calls first, as
    [(name, calls)], summed over its processes (their manifests'
    count_only.functions)."""
    calls = {}
    for m in glob.glob(os.path.join(out, 'session_*', 'pid_*', 'manifest.json')):
        with open(m) as f:
            co = json.load(f).get('count_only') or {}
        for fn in co.get('functions', []):
            calls[fn['name']] = calls.get(fn['name'], 0) + fn['calls']
    return sorted(calls.items(), key=lambda x: -x[1])


def report(res, skipped, loads, args, top=None):
    print('load average before %s, after %s' % (
        ' '.join('%.1f' % x for x in loads['before']),
        ' '.join('%.1f' % x for x in loads['after'])))
    print('| workload | variant | CPU s (median) | CPU ratio | wall s (median) | wall ratio |')
    print('|---|---|---|---|---|---|')
    table = {}
    for name, vs in res.items():
        base_cpu = statistics.median(c for _, c in vs['untraced']) if 'untraced' in vs else None
        base_wall = statistics.median(t for t, _ in vs['untraced']) if 'untraced' in vs else None
        table[name] = {}
        for vname, runs in vs.items():
            cpu = statistics.median(c for _, c in runs)
            wall = statistics.median(t for t, _ in runs)
            rc = cpu / base_cpu if base_cpu else None
            rw = wall / base_wall if base_wall else None
            table[name][vname] = {'cpu_s': cpu, 'wall_s': wall, 'cpu_ratio': rc,
                                  'wall_ratio': rw, 'runs': runs}
            print('| %s | %s | %.3f | %s | %.3f | %s |' % (
                LABEL.get(name, name), vname, cpu, '%.2f' % rc if rc else '-', wall, '%.2f' % rw if rw else '-'))
    for name, why in skipped.items():
        print('%s: skipped (%s)' % (name, why))
    for name, t in (top or {}).items():
        print('%s: %d counted calls in the warm run; the most: %s' % (
            name, t['counted'], ', '.join('%s %d' % (n, c) for n, c in t['top'])))
    if args.no_write:
        return
    stamp = datetime.datetime.now().strftime('%Y-%m-%dT%H%M%S')
    path = os.path.join(REPO, 'bench', 'results', stamp + '-real.json')
    with open(path, 'w') as f:
        json.dump({'loadavg': loads, 'reps': args.reps, 'table': table, 'skipped': skipped,
                   'excluded_top': top or {},
                   'provenance': provenance(os.path.dirname(os.path.abspath(args.ada)))},
                  f, indent=1)
    print('written: ' + os.path.relpath(path, REPO))


if __name__ == '__main__':
    main()
