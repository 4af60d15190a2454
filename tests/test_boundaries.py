"""The engine must stay usable without the UI: nothing under htam_engine imports textual."""

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "htam_engine"


def test_no_engine_module_imports_textual():
    offenders = []
    for path in ENGINE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "textual" or n.startswith("textual.") or n.startswith("htam_tui") for n in names):
                offenders.append(f"{path.relative_to(ENGINE.parent)}:{node.lineno}")
    assert offenders == []


def test_importing_the_engine_loads_no_textual():
    code = (
        "import sys, importlib, pkgutil, htam_engine\n"
        "for m in pkgutil.walk_packages(htam_engine.__path__, 'htam_engine.'):\n"
        "    if '.builtin' in m.name or m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "print('textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
