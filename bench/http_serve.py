#!/usr/bin/env python3
"""A thread-per-request server under ada, attached (issue 32 item 1).

Starts python's `ThreadingHTTPServer` (a new thread per connection, a
small GET handler), untraced or with `ada attach PID` recording it, and
sends it requests one at a time from this (untraced) process, each on a
new connection: the latency of a request is connect -> the whole reply
read. Variants run interleaved round by round; each round starts a new
server (and a new attach), sends warm-up requests that are not counted,
then the measured ones. Prints p50, p90, mean and their ratios to untraced,
and the server's and recorder's CPU per request.

Timed: run it under `flock /work/bench.lock` on a machine as quiet as you
can get, and quote the load average it prints.

  bench/http_serve.py [--build build] [--rounds 5] [--requests 300]
                      [--warmup 50] [--ada-before PATH] [--opt ARG ...]

--ada-before PATH adds a variant `ada-before`: another build of ada (say,
before a change) attached in the same rotation. --opt passes one more
option to `ada attach` (repeatable), say `--opt=--trigger --opt=crash`.
--also "OPTIONS" adds a variant: this build attached with those options
(repeatable), say --also "--detail never".
"""
import argparse
import http.client
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import run_dir, session_fs, session_fs_line  # noqa: E402
import time

SERVER = r"""
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "items": list(range(50))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def cpu_ns(pid):
    """utime + stime of a process, in ns (0 when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def request(port):
    t0 = time.perf_counter_ns()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/x")
    r = c.getresponse()
    r.read()
    c.close()
    if r.status != 200:
        sys.exit("the server answered %d" % r.status)
    return time.perf_counter_ns() - t0


def attach(ada, pid, out_dir, opts):
    """Starts `ada attach`; returns it once it said it is attached."""
    err = open(os.path.join(out_dir, "attach.err"), "w+")
    p = subprocess.Popen([ada, "attach", str(pid), "--out", os.path.join(out_dir, "s")] + opts,
                         stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 60
    while time.time() < deadline:
        err.seek(0)
        if "attached to pid" in err.read():
            return p, err
        if p.poll() is not None:
            err.seek(0)
            sys.exit("ada attach exited %d: %s" % (p.returncode, err.read()[-400:]))
        time.sleep(0.01)
    sys.exit("ada attach did not attach within 60 s")


def run_variant(variant, ada_of, a, work):
    """One server's life; returns (latencies ns, server cpu ns, recorder cpu ns)."""
    out_dir = tempfile.mkdtemp(dir=work)
    srv = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE)
    rec = None
    try:
        port = int(srv.stdout.readline())
        if variant != "untraced":
            ada, extra = ada_of[variant]
            rec, err = attach(ada, srv.pid, out_dir, a.opt + extra)
        for _ in range(a.warmup):
            request(port)
        s0, r0 = cpu_ns(srv.pid), cpu_ns(rec.pid) if rec else 0.0
        lat = [request(port) for _ in range(a.requests)]
        s1, r1 = cpu_ns(srv.pid), cpu_ns(rec.pid) if rec else 0.0
        if rec:
            rec.send_signal(signal.SIGINT)
            if rec.wait(timeout=120) != 0:
                err.seek(0)
                sys.exit("ada attach exited %d: %s" % (rec.returncode, err.read()[-400:]))
        return lat, s1 - s0, r1 - r0
    finally:
        srv.kill()
        srv.wait()
        if rec and rec.poll() is None:
            rec.kill()
            rec.wait()
        # the session stays until main() removes the run directory


def ms(ns):
    return "%.3f" % (ns / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--work", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--ada-before", help="another ada build, as a variant of its own")
    ap.add_argument("--opt", action="append", default=[], help="one more `ada attach` option")
    ap.add_argument("--also", action="append", default=[],
                    help="a variant: this build attached with these options")
    a = ap.parse_args()
    ada = os.path.join(a.build, "ada")
    ada_of = {"ada": (ada, [])}
    if a.ada_before:
        ada_of["ada-before"] = (a.ada_before, [])
    for f, _ in ada_of.values():
        if not os.access(f, os.X_OK):
            sys.exit("%s is missing: build ada first" % f)
    variants = ["untraced"] + (["ada-before"] if a.ada_before else []) + ["ada"]
    for opts in a.also:
        ada_of["ada " + opts] = (ada, opts.split())
        variants.append("ada " + opts)
    a.work = run_dir(a.work, "ada-bench-")  # every session kept until the end
    fs = session_fs(a.work)
    lat = {v: [] for v in variants}
    cpu = {v: [] for v in variants}
    rcpu = {v: [] for v in variants}
    load0 = open("/proc/loadavg").read().split()[:3]
    for _ in range(a.rounds):
        for v in variants:
            l, s, r = run_variant(v, ada_of, a, a.work)
            lat[v].extend(l)
            cpu[v].append(s / a.requests)
            rcpu[v].append(r / a.requests)
    load1 = open("/proc/loadavg").read().split()[:3]
    print(session_fs_line(fs))
    print("load average before / after: %s / %s; %d rounds x %d requests (+%d warm-up), "
          "interleaved" % (" ".join(load0), " ".join(load1), a.rounds, a.requests, a.warmup))
    w = max(len(v) for v in variants)
    print("%-*s %9s %9s %9s %7s %7s %14s %16s" % (w, "variant", "p50 ms", "p90 ms", "mean ms",
                                                  "p50 x", "mean x", "server cpu/req",
                                                  "recorder cpu/req"))
    base = statistics.median(lat["untraced"])
    base_mean = statistics.mean(lat["untraced"])
    for v in variants:
        s = sorted(lat[v])
        p50, mean = statistics.median(s), statistics.mean(s)
        print("%-*s %9s %9s %9s %7.2f %7.2f %11s ms %13s ms" % (
            w, v, ms(p50), ms(s[int(len(s) * 0.9)]), ms(mean), p50 / base, mean / base_mean,
            ms(statistics.median(cpu[v])), ms(statistics.median(rcpu[v]))))


if __name__ == "__main__":
    main()
