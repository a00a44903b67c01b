"""What a ``spark-pipelines run`` printed, judged: did the update succeed, and why (or why not).

Why parse instead of trusting the exit code: with pyspark 4.2, a run that read a Python data
source ends with ``PySparkValueError: [UNKNOWN_RESPONSE] ... __python_accumulator__`` and exit 1
even though every flow completed (the client does not understand a response the server sends
after the run). A run counts as succeeded only if the process exited 0, or if ALL of these hold:
the run reported ``Run is COMPLETED``, every flow's last state is COMPLETED, no flow FAILED
without being restarted after (a retried stream resumes from its checkpoint: under load a Python
data source's worker can miss Spark's 10 s connect-back window, and the retry succeeds), and the
pipelines client printed no error other than that UNKNOWN_RESPONSE. What Spark's Python workers
printed on the way (their tracebacks share the output of a locally started server, e.g. a worker's
``CANNOT_OPEN_SOCKET`` before the flow's restart) is counted in the explanation, not judged: the
engine's flow states already say whether their flows completed. A traceback is the client's when
one of its frames is the pipelines CLI. Any other client error, a failed flow, or a missing
run-completed event is a failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

_EVENT = re.compile(r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): (?P<message>.*)$")
# "Flow x is RUNNING.", "Flow 'x' has FAILED.", "Flow 'x' has FAILED more than 0 times and will not
# be restarted.", "Flow 'x' SKIPPED due to upstream failure(s)."
_FLOW_STATE = re.compile(r"^Flow '?(?P<flow>[^' ]+)'? (?:(?:is|has) )?(?P<state>[A-Z_]{4,})\b")
_RUN_STATE = re.compile(r"^Run (?:is|has) (?P<state>[A-Z_]+)\.")
_PYTHON_ERROR = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<message>.*)")
_KNOWN_FALSE_FAILURE: Final = ("[UNKNOWN_RESPONSE]", "__python_accumulator__")
# A frame of the pipelines client (pyspark's CLI, or our launcher of it); a Python worker's frames
# are Spark's worker modules (pyspark.zip/pyspark/worker_util.py, .../python_streaming_source_runner.py).
_CLIENT_FRAMES: Final = ("pyspark/pipelines/", "sdp_launcher.py")
_ERROR_CLASS = re.compile(r"\[(?P<name>[A-Z][A-Z0-9_]+)\]")
# A flow failure no retry can mend, an error of the graph or of analysis: the engine's lookup of a
# flow that did not resolve (a table it reads was never created) raises NoSuchElementException
# "key not found: `catalog`.`schema`.`flow`"; Spark's analysis errors carry a SQLSTATE of class 42.
# The engine retries every non-fatal flow failure with back-off (minutes in all), as if transient.
_GRAPH_ERROR = re.compile(r"^key not found: |\bSQLSTATE: 42[0-9A-Z]{3}\b")


def is_event(line: str) -> bool:
    """A progress event of the run (``<time>: Flow x is RUNNING.``), not the engine's or Spark's chatter."""
    return _EVENT.match(line) is not None


def parse_flow_event(line: str) -> tuple[datetime, str | None, str | None] | None:
    """(time, flow, state) of a progress event, flow and state None for an event of no flow;
    None for any other line."""
    event = _EVENT.match(line.rstrip("\n"))
    if event is None:
        return None
    at = datetime.strptime(event["at"], "%Y-%m-%d %H:%M:%S")
    flow = _FLOW_STATE.match(event["message"])
    return (at, flow["flow"], flow["state"]) if flow else (at, None, None)


@dataclass(frozen=True)
class FlowOutcome:
    """One flow's final state and how long it took from its first to its last event."""

    name: str
    state: str
    started_at: datetime
    finished_at: datetime

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()


@dataclass
class UpdateLog:
    """What a spark-pipelines run printed, reduced to the facts that decide success."""

    flows: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)
    run_state: str | None = None
    client_errors: list[str] = field(default_factory=list)
    """The error line of each traceback the pipelines client printed."""
    worker_errors: list[str] = field(default_factory=list)
    """The error line of each other traceback: Spark's Python workers, through the server's output."""
    flow_errors: dict[str, str] = field(default_factory=dict)
    """Each flow's latest failure, the ``Error:`` line printed after its FAILED event."""
    _in_traceback: bool = False
    _client_frames: bool = False
    _failed_flow: str | None = None

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        failed_flow, self._failed_flow = self._failed_flow, None
        if failed_flow is not None and line.startswith("Error: "):
            self.flow_errors[failed_flow] = line.removeprefix("Error: ")
            return
        event = _EVENT.match(line)
        if event:
            at = datetime.strptime(event["at"], "%Y-%m-%d %H:%M:%S")
            flow = _FLOW_STATE.match(event["message"])
            if flow:
                self.flows.setdefault(flow["flow"], []).append((at, flow["state"]))
                if flow["state"] == "FAILED":
                    self._failed_flow = flow["flow"]
            run = _RUN_STATE.match(event["message"])
            if run:
                self.run_state = run["state"]
            return
        if line.startswith("Traceback (most recent call last)"):
            self._in_traceback = True
            self._client_frames = False
            return
        if not self._in_traceback:
            return
        if line.startswith((" ", "\t")):
            self._client_frames = self._client_frames or any(frame in line for frame in _CLIENT_FRAMES)
            return
        # The first unindented line after the frames is the Python error that ended the process.
        self._in_traceback = False
        if _PYTHON_ERROR.match(line):
            (self.client_errors if self._client_frames else self.worker_errors).append(line)

    def graph_errors(self) -> dict[str, str]:
        """Flows whose latest failure is an error of the graph or of analysis (``_GRAPH_ERROR``):
        retrying them cannot help, so the run is stopped instead of waiting out the retries."""
        return {flow: error for flow, error in self.flow_errors.items() if _GRAPH_ERROR.search(error)}

    def outcomes(self) -> tuple[FlowOutcome, ...]:
        return tuple(
            FlowOutcome(name, events[-1][1], events[0][0], events[-1][0])
            for name, events in sorted(self.flows.items())
        )

    def restarts(self) -> int:
        """Flow restarts: each time a flow FAILED and was then STARTING again (the engine's retry,
        ``spark.sql.pipelines.maxFlowRetryAttempts``)."""
        count = 0
        for events in self.flows.values():
            failed = False
            for _, state in events:
                if state == "FAILED":
                    failed = True
                elif state == "STARTING" and failed:
                    count += 1
                    failed = False
        return count

    def completed_tables(self) -> set[str]:
        """The datasets whose flow last reported COMPLETED, not after an unrecovered failure: what
        the update has written whole, whatever ends it next (a failure, a stop, a signal)."""
        failed = set(self.failed_unrecovered())
        return {
            name.rsplit(".", 1)[-1]
            for name, events in list(self.flows.items())  # a copy: the output's reader may still feed
            if events[-1][1] == "COMPLETED" and name not in failed
        }

    def failed_unrecovered(self) -> list[str]:
        """Flows that FAILED and were not started again afterwards. A flow the engine restarted
        (``spark.sql.pipelines.maxFlowRetryAttempts``) resumes from its checkpoint, so its final
        COMPLETED is real; a COMPLETED that follows a FAILED without a restart is not (a stream
        whose batch was lost is reported so), and counts as failed."""
        failed = []
        for name, events in self.flows.items():
            states = [state for _, state in events]
            if "FAILED" in states:
                last_failure = len(states) - 1 - states[::-1].index("FAILED")
                if "STARTING" not in states[last_failure:]:
                    failed.append(name)
        return sorted(failed)


def judge(exit_code: int, log: UpdateLog) -> tuple[bool, str]:
    """(succeeded, why). See the module docstring for the rule."""
    outcomes = log.outcomes()
    failed = log.failed_unrecovered()
    # EXCLUDED: a flow outside the run's refresh selection (``--refresh``), not run by design.
    unfinished = [o.name for o in outcomes if o.state not in ("COMPLETED", "EXCLUDED")]
    if failed:
        graph = log.graph_errors()
        why = f"flows failed: {', '.join(failed)}"
        if graph:
            flow, error = sorted(graph.items())[0]
            why += f"; stopped, not retried: {flow} failed on an error of the graph ({error})"
        return False, why
    skipped = [o.name for o in outcomes if o.state == "SKIPPED"]
    if skipped:
        # Seen with pyspark 4.2: a stream failing on its first attempt may be reported as COMPLETED
        # and only its downstream flows as SKIPPED.
        return False, f"flows skipped after an upstream failure: {', '.join(skipped)}"
    if exit_code == 0:
        if unfinished:
            return False, f"flows did not complete: {', '.join(unfinished)}"
        return True, "exit code 0" + _worker_errors_note(log.worker_errors)
    if log.run_state != "COMPLETED":
        return (
            False,
            f"exit code {exit_code} and the run did not report COMPLETED (last state {log.run_state})",
        )
    if not outcomes or unfinished:
        return (
            False,
            f"exit code {exit_code} and flows did not complete: {', '.join(unfinished) or 'none ran'}",
        )
    unexpected = [e for e in log.client_errors if not all(marker in e for marker in _KNOWN_FALSE_FAILURE)]
    if unexpected:
        return False, f"exit code {exit_code} with unexpected errors: {unexpected}"
    why = (
        f"every flow run COMPLETED; exit {exit_code} is the known UNKNOWN_RESPONSE __python_accumulator__"
        if log.client_errors
        else f"every flow run COMPLETED; exit {exit_code} without a client error"
    )
    return True, why + _worker_errors_note(log.worker_errors)


def _worker_errors_note(errors: Sequence[str]) -> str:
    """``; 2 Python worker errors on the way (CANNOT_OPEN_SOCKET x2)``, or nothing."""
    if not errors:
        return ""
    names: dict[str, int] = {}
    for error in errors:
        found = _ERROR_CLASS.search(error)
        name = found["name"] if found else error.split(":", 1)[0].rsplit(".", 1)[-1]
        names[name] = names.get(name, 0) + 1
    listed = ", ".join(f"{name} x{count}" if count > 1 else name for name, count in names.items())
    return f"; {len(errors)} Python worker error{'s' if len(errors) > 1 else ''} on the way ({listed})"
