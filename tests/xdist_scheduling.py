"""How `make test` hands test modules to its pytest-xdist workers: a module at a time, the next one
only when a worker starts the last test it holds.

xdist's ``--dist loadfile`` gives a worker its next module as soon as two of its tests are left.
A module's last two tests can be minutes (tests/e2e/test_pipeline.py ends with two pipeline
updates), so the worker running the longest module took more work while the other had none left
and sat idle at the end of the layer. A worker cannot start its last test until it holds the next
one (pytest runs a test knowing the test after it, for teardown) or is told to stop, so one left is
the latest moment to hand it more; modules still go out most tests first (xdist's reordering).
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController


class LastMomentLoadFileScheduling(LoadFileScheduling):
    """``--dist loadfile``, but a worker gets its next module only with a single test left."""

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)
