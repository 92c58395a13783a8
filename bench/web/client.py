#!/usr/bin/python3
"""bench/web/client.py: the web view's timings, for bench/web/run.

  client.py pages URL CASES OUT REPS   time each case's page and its CLI twin
  client.py tabs URL TABS SECONDS      hold TABS Server-Sent-Event streams
  client.py table CASES OUT            the table of OUT's timings

pages: CASES is a file of lines `name<TAB>path<TAB>cli args` (cli args
split on spaces; `-` for none). Each repetition times, per case, one GET of
the page (on one kept-alive connection, as a browser's) and one run of
`$TASKQ args` (TASKQ_DB in the environment), in alternating order (page
first on even repetitions, the CLI first on odd ones), from the request's
first byte to the answer's last (from spawn to exit for the CLI). A
non-200 answer or a failed command stops the run. Writes `name kind ms`
lines to OUT.

tabs: opens TABS streams to URL/live at once, reads them for SECONDS, and
prints `opened N events E refused R`.
"""
import http.client
import os
import selectors
import socket
import subprocess
import sys
import time
import urllib.parse


def fail(msg):
    print("bench/web: " + msg, file=sys.stderr)
    sys.exit(1)


def pages(url, cases_file, out_file, reps):
    u = urllib.parse.urlsplit(url)
    taskq = os.environ["TASKQ"]
    cases = []
    with open(cases_file) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, path, cli = line.split("\t")
            cases.append((name, path, [] if cli == "-" else cli.split(" ")))
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)

    serve_pid = os.environ.get("SERVE_PID")

    def serve_cpu_ns():
        # Every thread's run time (schedstat: ns on the CPU), the threads
        # that ended included in none: serve's connection threads live as
        # long as their connection, which is kept alive.
        total = 0
        if serve_pid:
            for tid in os.listdir("/proc/%s/task" % serve_pid):
                try:
                    with open("/proc/%s/task/%s/schedstat" % (serve_pid, tid)) as f:
                        total += int(f.read().split()[0])
                except OSError:
                    pass
        return total

    def page(path, accept):
        c0 = serve_cpu_ns()
        t0 = time.perf_counter()
        conn.request("GET", path, headers={"Accept": accept})
        r = conn.getresponse()
        body = r.read()
        t1 = time.perf_counter()
        c1 = serve_cpu_ns()
        if r.status != 200:
            fail("GET %s: %d %s" % (path, r.status, body[:300]))
        return (t1 - t0) * 1000.0, (c1 - c0) / 1e6

    err = open(out_file + ".stderr", "w+b")

    def cli(args):
        err.seek(0)
        err.truncate()
        t0 = time.perf_counter()
        p = subprocess.Popen([taskq] + args, stdout=subprocess.DEVNULL,
                             stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        t1 = time.perf_counter()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            fail("taskq %s: exit %d: %s" % (" ".join(args), p.returncode,
                                            err.read()[:300]))
        return (t1 - t0) * 1000.0, (ru.ru_utime + ru.ru_stime) * 1000.0

    with open(out_file, "w") as out:
        # One warm-up of each, not recorded.
        for name, path, args in cases:
            accept = "application/json" if "format=json" in path else "text/html"
            page(path, accept)
            if args:
                cli(args)
        for rep in range(reps):
            for name, path, args in cases:
                accept = "application/json" if "format=json" in path else "text/html"
                if rep % 2 == 0 or not args:
                    out.write("%s page %.3f %.3f\n" % ((name,) + page(path, accept)))
                    if args:
                        out.write("%s cli %.3f %.3f\n" % ((name,) + cli(args)))
                else:
                    out.write("%s cli %.3f %.3f\n" % ((name,) + cli(args)))
                    out.write("%s page %.3f %.3f\n" % ((name,) + page(path, accept)))
            out.flush()


def tabs(url, n, seconds):
    u = urllib.parse.urlsplit(url)
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(n):
        s = socket.create_connection((u.hostname, u.port))
        s.sendall(("GET %s/live HTTP/1.1\r\nHost: %s:%d\r\n"
                   "Accept: text/event-stream\r\n\r\n"
                   % (u.path.rstrip("/"), u.hostname, u.port)).encode())
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, {"head": b"", "ok": None})
        socks.append(s)
    events = 0
    refused = 0
    opened = 0
    closed = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=max(0.0, min(1.0, end - time.monotonic()))):
            data = key.fileobj.recv(65536)
            st = key.data
            if not data:
                sel.unregister(key.fileobj)
                closed += 1
                continue
            if st["ok"] is None:
                st["head"] += data
                if b"\r\n" in st["head"]:
                    line = st["head"].split(b"\r\n", 1)[0]
                    st["ok"] = b" 200 " in line
                    if st["ok"]:
                        opened += 1
                    else:
                        refused += 1
            events += data.count(b"event: change")
    for s in socks:
        s.close()
    print("opened %d events %d refused %d closed %d" % (opened, events, refused, closed))


def pct(v, p):
    v = sorted(v)
    rank = max(1, -(-len(v) * p // 100))  # nearest rank
    return v[rank - 1]


def table(cases_file, out_file):
    order = []
    paths = {}
    with open(cases_file) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                name, path, cli = line.split("\t")
                order.append(name)
                paths[name] = (path, cli)
    samples = {}
    cpu = {}
    with open(out_file) as f:
        for line in f:
            name, kind, ms, cpu_ms = line.rsplit(" ", 3)
            samples.setdefault((name, kind), []).append(float(ms))
            cpu.setdefault((name, kind), []).append(float(cpu_ms))
    print("%-22s %-46s %3s %7s %7s %8s %6s %8s %8s  %s" % (
        "page", "path", "n", "p50 ms", "p95 ms", "list p95", "ratio",
        "cpu p95", "list cpu", "p95 <= 100 ms?  the CLI twin"))
    over = 0
    for name in order:
        page = samples.get((name, "page"), [])
        cli = samples.get((name, "cli"), [])
        if not page:
            continue
        p50, p95 = pct(page, 50), pct(page, 95)
        l95 = pct(cli, 95) if cli else None
        c95 = pct(cpu[(name, "page")], 95)
        lc95 = pct(cpu[(name, "cli")], 95) if cli else None
        mark = "ok" if p95 <= 100 else "OVER"
        over += p95 > 100
        print("%-22s %-46s %3d %7.1f %7.1f %8s %6s %8.1f %8s  %-4s %s" % (
            name, paths[name][0][:46], len(page), p50, p95,
            "%.1f" % l95 if l95 else "-",
            "%.2fx" % (p95 / l95) if l95 else "-", c95,
            "%.1f" % lc95 if lc95 else "-", mark,
            "taskq " + paths[name][1] if paths[name][1] != "-" else "(no twin)"))
    print("pages over 100 ms at p95: %d of %d" % (over, len(order)))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "pages":
        pages(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif len(sys.argv) == 5 and sys.argv[1] == "tabs":
        tabs(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3])
    else:
        fail("usage: client.py pages URL CASES OUT REPS | tabs URL TABS SECONDS")
