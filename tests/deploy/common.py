"""Shared helpers of the deploy tests: run a command, record checks, report them all.

Every check is printed as it is made (`ok` or `FAIL` and what it was about), and a test goes
on after a failed check where it can, so one run shows everything that is wrong.
"""
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, check=False, **kw):
    """Runs cmd (a list), capturing text output; raises on a non-zero exit only if check."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def wait_for(condition, timeout=10.0):
    """Polls condition() every 0.1 s until it gives something true (returned) or timeout passes
    (then its last answer is returned)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = condition()
        if got:
            return got
        time.sleep(0.1)
    return condition()


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = []

    def ok(self, condition, what, detail=""):
        """Records one check; detail is printed only when it fails. Returns condition."""
        if condition:
            print(f"ok    {what}")
        else:
            print(f"FAIL  {what}")
            if detail:
                print("      " + str(detail).rstrip().replace("\n", "\n      "))
            self.failures.append(what)
        return bool(condition)

    def equal(self, got, want, what):
        return self.ok(got == want, what, f"got:  {got!r}\nwant: {want!r}")

    def done(self):
        """Prints the verdict; returns the process exit status."""
        if self.failures:
            print(f"{self.name}: {len(self.failures)} check(s) failed")
            return 1
        print(f"{self.name}: all checks passed")
        return 0


def require_root(name):
    if os.geteuid() != 0:
        print(f"{name}: needs root (it installs packages or boots a container); failing, not skipping")
        sys.exit(1)
