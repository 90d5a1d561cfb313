"""The library's house rules (issue 46): no module over 600 lines, no function over 100 lines
(from its ``def`` line to its last line, docstring included), no library function that only
tests or benchmarks use."""

from __future__ import annotations

import ast
import re
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


def _names_used(tree: ast.AST) -> set[str]:
    """Every name ``tree`` reads: names, attributes, and the string a ``getattr`` looks up (a
    hook a module is asked for by name, e.g. a report module's ``caption_fields``)."""
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
        ):
            used.add(node.args[1].value)
    return used


def unused_library_names(src: Path, workflow: Path) -> dict[str, str]:
    """Public module-level functions and classes of ``src`` that no code of ``src`` or of the
    workflow (scripts, rule files, Snakefile) uses: name -> defining file. An import or an
    ``__all__`` entry is not a use; a use inside the function's own module is."""
    defined, used = {}, set()
    for f in sorted(src.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                defined.setdefault(node.name, str(f.relative_to(src.parent)))
        used |= _names_used(tree)
    for f in sorted(workflow.rglob("*.py")):
        used |= _names_used(ast.parse(f.read_text(encoding="utf-8")))
    rules = [*workflow.rglob("*.smk"), workflow.parent / "Snakefile"]
    for f in rules:
        if f.is_file():
            used |= set(re.findall(r"\w+", f.read_text(encoding="utf-8")))
    return {name: where for name, where in sorted(defined.items()) if name not in used}


def test_no_library_function_is_used_only_by_tests_or_benchmarks() -> None:
    """A public function or class of ``src/`` that neither the library nor the workflow uses
    serves only the tests or benchmarks: it belongs in ``tests/*_reference.py`` (issue 46)."""
    unused = unused_library_names(ROOT / "src", ROOT / "workflow")
    assert unused == {}, (
        "library functions no library or workflow code uses (move them to "
        f"tests/*_reference.py or delete them): {unused}"
    )


def test_the_unused_scan_finds_a_function_only_tests_call(tmp_path) -> None:
    src, workflow = tmp_path / "src", tmp_path / "workflow"
    (src / "pkg").mkdir(parents=True)
    (workflow / "scripts").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text(
        "__all__ = ['lonely', 'hook']\n\ndef lonely():\n    pass\n\ndef used():\n    pass\n\n"
        "def hook():\n    pass\n\ndef by_rule():\n    pass\n"
    )
    (src / "pkg" / "b.py").write_text(
        "from pkg.a import lonely, used\nimport pkg.a\n\nused()\ngetattr(pkg.a, 'hook')\n"
    )
    (workflow / "rules").mkdir()
    (workflow / "rules" / "x.smk").write_text("rule x:\n    run:\n        by_rule()\n")
    assert unused_library_names(src, workflow) == {"lonely": "src/pkg/a.py"}
