"""The workspace's Jobs API as offsetlake's tasks call it: one client, one error, bounded in time.

Both job-level tasks (``job-report``, ``pause-sync``) talk to the Jobs API from a job cluster or a
laptop, where the API may be unreachable or the credentials missing. Each call is a
``JobsApiError`` with the root cause in one line, within the caller's ``timeout_s``: the SDK's own
HTTP and retry timeouts are a sixth of it (``client_timeouts``) and a daemon thread bounds the
whole (``bounded``), whatever the SDK does.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import TYPE_CHECKING, Final, TypeVar

from offsetlake import __version__
from offsetlake.errors import ExternalError

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

T = TypeVar("T")

MAX_MESSAGE_CHARS: Final = 300
_ERRNO: Final = re.compile(r"\[Errno -?\d+\] ")


class JobsApiError(ExternalError):
    """The Jobs API could not be reached, refused the credentials, or refused the request."""


def client_timeouts(timeout_s: float) -> tuple[float, int]:
    """(HTTP timeout, retry timeout) for a call bounded at ``timeout_s``: the SDK retries a refused
    connection until its retry timeout and may overshoot it by a back-off sleep, and its set-up
    makes calls of its own (host metadata, OAuth endpoints), so a sixth each."""
    return max(1.0, timeout_s / 6), max(1, int(timeout_s / 6))


def workspace_client(http_timeout_s: float, retry_timeout_s: int) -> WorkspaceClient:
    """The workspace's client (on Databricks it authenticates as the run's identity)."""
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.core import Config

    try:
        config = Config(
            http_timeout_seconds=http_timeout_s,
            retry_timeout_seconds=retry_timeout_s,
            product="offsetlake",
            product_version=__version__,
        )
    except ValueError as error:  # no credentials, or a configuration the SDK refuses
        raise JobsApiError(
            f"cannot authenticate to the Databricks workspace: {one_line(str(error))}"
        ) from None
    return WorkspaceClient(config=config)


def bounded(call: Callable[[], T], timeout_s: float, what: str) -> T:
    """``call()`` on a daemon thread, abandoned after ``timeout_s`` (a host that accepts and never
    answers, a slow token endpoint): the thread holds nothing the process needs."""
    answer: Future[T] = Future()

    def work() -> None:
        try:
            answer.set_result(call())
        except BaseException as error:  # handed to the waiting thread, which raises it
            answer.set_exception(error)

    threading.Thread(target=work, name="offsetlake-jobs-api", daemon=True).start()
    try:
        return answer.result(timeout=timeout_s)
    except FutureTimeoutError:
        raise JobsApiError(f"the Jobs API did not answer within {timeout_s:g} s ({what})") from None


def cause(error: BaseException) -> str:
    """The root cause in one line: ``Connection refused`` rather than urllib3's nested reprs."""
    chain = [error]
    while (link := chain[-1].__cause__ or chain[-1].__context__) is not None and link not in chain:
        chain.append(link)
    root = chain[-1]
    text = root.strerror if isinstance(root, OSError) and root.strerror else _ERRNO.sub("", str(root))
    if root is not error and isinstance(error, TimeoutError):
        text = f"{text} ({error})"
    return one_line(text or type(root).__name__)


def one_line(text: str) -> str:
    """A message on one line, shortened: messages can hold a whole stack trace."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_MESSAGE_CHARS else flat[: MAX_MESSAGE_CHARS - 1].rstrip() + "…"
