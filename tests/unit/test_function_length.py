"""No product function longer than MAX_LINES: a function a reader cannot hold at once is split into
named steps (issue 49). Counted from its ``def`` line to its last line, decorators left out; a
nested function counts inside its parent as well."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "offsetlake"
MAX_LINES = 80


def function_lengths(source: str, path: str) -> list[tuple[int, str]]:
    """(lines, where) of every function and method in ``source``."""
    tree = ast.parse(source, path)
    return [
        (node.end_lineno - node.lineno + 1, f"{path}:{node.lineno} {node.name}")
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None
    ]


def test_a_long_function_is_found() -> None:
    body = "\n".join(f"    x{line} = {line}" for line in range(MAX_LINES))
    ((lines, where),) = function_lengths(f"def long() -> None:\n{body}\n", "m.py")
    assert lines == MAX_LINES + 1
    assert where == "m.py:1 long"


def test_no_product_function_is_longer_than_the_limit() -> None:
    too_long = sorted(
        (
            (lines, where)
            for path in PACKAGE.rglob("*.py")
            for lines, where in function_lengths(
                path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE))
            )
            if lines > MAX_LINES
        ),
        reverse=True,
    )
    assert not too_long, "\n".join(f"{lines} lines: {where}" for lines, where in too_long)
