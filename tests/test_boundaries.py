"""The engine must stay usable without the UI: nothing under htam_engine imports textual.

The one door from the engine to the app is `htam_engine/cli/app_cmd.py`, which imports
`htam_tui` inside its handler, so importing the engine never loads the UI.
"""

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "htam_engine"
APP_DOOR = ENGINE / "cli" / "app_cmd.py"


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node, [node.module]


def _module_level(tree: ast.Module) -> set[int]:
    """ids of import nodes not nested in a function body."""
    top: set[int] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top.add(id(node))
        stack.extend(ast.iter_child_nodes(node))
    return top


def test_no_engine_module_imports_textual_or_the_app_at_import_time():
    offenders = []
    for path in ENGINE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        top = _module_level(tree)
        for node, names in _imports(tree):
            textual = any(n == "textual" or n.startswith("textual.") for n in names)
            app = any(n == "htam_tui" or n.startswith("htam_tui.") for n in names)
            lazy_app_door = path == APP_DOOR and id(node) not in top
            if textual or (app and not lazy_app_door):
                offenders.append(f"{path.relative_to(ENGINE.parent)}:{node.lineno}")
    assert offenders == []


def test_importing_the_engine_loads_no_textual():
    code = (
        "import sys, importlib, pkgutil, htam_engine\n"
        "for m in pkgutil.walk_packages(htam_engine.__path__, 'htam_engine.'):\n"
        "    if '.builtin' in m.name or m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "print('textual' in sys.modules, 'htam_tui' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
