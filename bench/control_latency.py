#!/usr/bin/env python3
"""Time from `ada arm` returning to the trigger being live (issue 9).

  control_latency.py --ada ADA --target T_CONTROL_O2 [--runs N]

Records tests/targets/t_control.c, then N times: `ada arm PID --trigger
symbol=rare_event` (wall time of the whole command), then at once the target
calls rare_event(); reports

  - live_ns = armed_ns - (CLOCK_BOOTTIME when `ada arm` returned): the
    trigger fires on every event stamped at or after armed_ns, so a negative
    value means it was live before the command returned;
  - fired: whether the call right after the return opened the window (it
    must, every time);
  - visible_ms: from the return until the `windows` method shows the new
    window (the drain's pass plus its 10 ms publish cadence).

A benchmark, not a test: run it alone on a quiet machine (bench/, never in
ctest). Prints one line per run and a summary.
"""
import argparse
import glob
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time


def boottime_ns():
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ada_ctl_bench_")
    # hold-off 0: every arm/fire pair opens its own window (no merge)
    p = subprocess.Popen([a.ada, "record", "--out", work, "--trigger-holdoff-ms", "0",
                          "--pre-roll-sec", "0", "--post-roll-sec", "0", "--",
                          a.target], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdout.readline().strip() == b"ready"
    p.stdin.write(b"pid\n")
    p.stdin.flush()
    pid = p.stdout.readline().strip().decode()
    session = glob.glob(os.path.join(work, "session_*"))[0]
    ctl = os.open(os.path.join(session, "ctl"), os.O_RDONLY | os.O_DIRECTORY)
    s = socket.socket(socket.AF_UNIX)
    s.connect("/proc/self/fd/%d/control.sock" % ctl)
    f = s.makefile("rwb")
    live, wall, vis = [], [], []
    for i in range(a.runs):
        t0 = time.monotonic_ns()
        out = subprocess.run([a.ada, "arm", pid, "--trigger", "symbol=rare_event"],
                             capture_output=True, text=True, check=True).stdout
        t_ret = boottime_ns()
        wall.append((time.monotonic_ns() - t0) / 1e6)
        p.stdin.write(b"rare\n")
        p.stdin.flush()
        p.stdout.readline()
        armed = int(out.split("after ")[1].split()[0])
        live.append(armed - t_ret)
        # until the window shows (bounded: 10 s)
        while True:
            f.write(b'{"jsonrpc":"2.0","id":1,"method":"windows"}\n')
            f.flush()
            r = json.loads(f.readline())["result"]
            if r["total"] == i + 1:
                break
            if boottime_ns() - t_ret > 10**10:
                raise SystemExit("run %d: no window after 10 s" % i)
        vis.append((boottime_ns() - t_ret) / 1e6)
        f.write(b'{"jsonrpc":"2.0","id":2,"method":"disarm","params":{"all":true}}\n')
        f.flush()
        f.readline()
        print("run %d: ada arm %.2f ms wall, live %+.3f ms relative to its return, window "
              "visible after %.2f ms" % (i, wall[-1], live[-1] / 1e6, vis[-1]))
    p.stdin.write(b"quit\n")
    p.stdin.flush()
    p.wait()
    print("summary (%d runs): ada arm wall median %.2f ms; trigger live median %+.3f ms "
          "(max %+.3f) relative to the return (negative: before it); window visible "
          "median %.2f ms, max %.2f ms" % (a.runs, statistics.median(wall),
                                          statistics.median(live) / 1e6, max(live) / 1e6,
                                          statistics.median(vis), max(vis)))


if __name__ == "__main__":
    main()
