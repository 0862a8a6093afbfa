"""A host thread that samples one QEMU process until stopped: what hostmon and vcpuwait share.

vm.run's on_qemu_start calls attach(pid, ...) for every boot, a retried one's too, so sampling
restarts on the new process; stop() ends it. Subclasses write _loop(*args), which returns when
self._stop is set, and reset their figures in attach before calling _start.
"""
import threading


class ThreadSampler:
    def __init__(self):
        self._stop = threading.Event()
        self._thread = None

    def _start(self, *args):
        self.stop()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=args, daemon=True)
        self._thread.start()

    def stop(self):
        if self._thread:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def _loop(self, *args):
        raise NotImplementedError
