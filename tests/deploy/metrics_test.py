#!/usr/bin/env python3
"""The metrics a running reclaimd really writes and serves, checked with Prometheus's own
linter (`promtool check metrics`, Debian package prometheus), and the HTTP endpoint as a
scraper and an idle local user see it: HEAD answered, idle clients neither starving a scrape
nor kept past their deadline, `reclaimd_up 0` in the file once the daemon has stopped.

The daemon runs on this machine with --dry-run (it writes nothing to the kernel).

Usage: metrics_test.py --binary BUILD/controller/reclaimd
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from common import Checks, require_root, run, wait_for
from scrape import promtool


def request(port, text, timeout=5.0):
    """Sends text and returns everything the server sends before closing."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(text.encode())
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out.decode(errors="replace")
            out += chunk


def body(response):
    return response.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in response else ""


def check_http(checks, port):
    get = request(port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    checks.ok(get.startswith("HTTP/1.1 200 OK\r\n"), "GET /metrics answers 200", get[:200])
    promtool(checks, body(get), "GET /metrics")
    head = request(port, "HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    checks.ok(head.startswith("HTTP/1.1 200 OK\r\n") and body(head) == "", "HEAD /metrics: 200, no body", head)
    lf = request(port, "GET /metrics HTTP/1.0\nHost: localhost\n\n")
    checks.ok(lf.startswith("HTTP/1.1 200 OK\r\n"), "a request ending in bare LFs is answered", lf[:200])
    # A local user holds 40 idle connections (more than the HTTP budget): a scrape still works.
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
    scrape = request(port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    checks.ok(scrape.startswith("HTTP/1.1 200 OK\r\n"), "a scrape beside 40 idle clients answers 200", scrape[:200])
    # ...and those still open are closed at their 5 s deadline, with no other client arriving.
    def all_closed():
        for s in idle:
            s.setblocking(False)
            try:
                if s.recv(1) != b"":
                    return False
            except BlockingIOError:
                return False
            except ConnectionResetError:
                pass
        return True
    checks.ok(wait_for(all_closed, 15), "idle HTTP clients are closed by the server's timer")
    for s in idle:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    args = ap.parse_args()
    require_root("deploy_metrics")
    checks = Checks("deploy_metrics")
    if not checks.ok(shutil.which("promtool"), "promtool is installed (Debian package prometheus)"):
        return checks.done()
    tmp = tempfile.mkdtemp(prefix="reclaimd-metrics-")
    prom = os.path.join(tmp, "reclaimd.prom")
    port = 20000 + os.getpid() % 20000
    log = open(os.path.join(tmp, "log"), "w")
    daemon = subprocess.Popen([args.binary, "run", "--dry-run", "--status-socket", os.path.join(tmp, "status.sock"),
                               "--metrics-file", prom, "--metrics-listen", f"127.0.0.1:{port}"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        if checks.ok(wait_for(lambda: os.path.exists(prom)), "the metrics file is written",
                     open(os.path.join(tmp, "log")).read()):
            promtool(checks, open(prom).read(), "the metrics file")
            check_http(checks, port)
            status = run([args.binary, "status", "--socket", os.path.join(tmp, "status.sock")])
            checks.ok(status.returncode == 0, "reclaimd status answers", status.stdout + status.stderr)
    finally:
        daemon.send_signal(signal.SIGTERM)
        checks.equal(daemon.wait(timeout=10), 0, "the daemon exits 0 on SIGTERM")
    text = open(prom).read() if os.path.exists(prom) else ""
    checks.ok("\nreclaimd_up 0\n" in text, "the file says reclaimd_up 0 once the daemon has stopped", text[:400])
    promtool(checks, text, "the file after stop")
    shutil.rmtree(tmp, ignore_errors=True)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
