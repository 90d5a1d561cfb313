"""The library's house rules (issue 46): no module over 600 lines, no function over 100 lines
(from its ``def`` line to its last line, docstring included)."""

from __future__ import annotations

import ast
from pathlib import Path

from workflow_helpers import ROOT

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


def _library_files() -> list[Path]:
    return sorted((ROOT / "src").rglob("*.py"))


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(f.relative_to(ROOT)): n
        for f in _library_files()
        if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"


def _long_functions(text: str) -> dict[str, int]:
    """``name (line N)`` -> lines of every function or method of ``text`` over the limit."""
    out = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                out[f"{node.name} (line {node.lineno})"] = lines
    return out


def test_no_function_is_over_100_lines() -> None:
    long = {
        f"{f.relative_to(ROOT)}: {name}": n
        for f in _library_files()
        for name, n in _long_functions(f.read_text(encoding="utf-8")).items()
    }
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines (cut them into steps): {long}"


def test_the_function_rule_counts_every_line_of_a_function() -> None:
    """A function of 101 lines (docstring included) is reported, one of 100 is not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(98))
    ok = f'def f():\n    """Doc."""\n{body}'
    over = f'def g():\n    """Doc."""\n{body}    return x0\n'
    assert _long_functions(ok) == {}
    assert _long_functions(over) == {"g (line 1)": 101}
