"""Prometheus's own tools on reclaimd's metrics, for the deploy tests: promtool's linter, and a
real scrape: node_exporter serving a textfile directory and a Prometheus server scraping it,
asked through its query API.

Both servers listen on loopback ports picked free at start, so a node_exporter or Prometheus the
machine runs as a service (Debian starts both on install) is left alone.
"""
import json
import os
import socket
import subprocess
import urllib.parse
import urllib.request

from common import wait_for


def promtool(checks, text, what):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    checks.ok(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
              f"promtool check metrics: {what}", r.stdout + r.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scraper:
    """node_exporter with only its textfile collector, on `directory`, and Prometheus scraping it
    every second, with their files and logs in `tmp`."""

    def __init__(self, tmp, directory):
        self.tmp, self.directory = tmp, directory
        self.procs, self.logs = [], []
        self.prometheus_port = None

    def _spawn(self, name, argv):
        path = os.path.join(self.tmp, name + ".log")
        self.logs.append(path)
        with open(path, "w") as log:
            self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def start(self):
        """Starts both; True once Prometheus is ready and its scrape target is up."""
        exporter = free_port()
        self._spawn("node_exporter", ["prometheus-node-exporter", "--collector.disable-defaults",
                                      "--collector.textfile", f"--collector.textfile.directory={self.directory}",
                                      f"--web.listen-address=127.0.0.1:{exporter}"])
        self.prometheus_port = free_port()
        config = os.path.join(self.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                    f"  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{exporter}']\n")
        self._spawn("prometheus", ["prometheus", f"--config.file={config}",
                                   f"--storage.tsdb.path={os.path.join(self.tmp, 'tsdb')}",
                                   f"--web.listen-address=127.0.0.1:{self.prometheus_port}"])
        return bool(wait_for(lambda: self.query('up{job="node"}') == "1", 60))

    def query(self, expr):
        """The value of an instant query's first sample, or None."""
        if self.prometheus_port is None:
            return None
        url = f"http://127.0.0.1:{self.prometheus_port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                result = json.load(r)["data"]["result"]
        except (OSError, ValueError, KeyError):
            return None
        return result[0]["value"][1] if result else None

    def log(self):
        return "\n".join(open(p).read()[-1500:] for p in self.logs if os.path.exists(p))

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
