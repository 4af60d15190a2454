"""Static look at a candidate's source, before anything compiles or runs.

These are hints that save a compile and explain intent; the runtime checks in the
worker are the real defence (a determined cheat can hide from any text scan).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from htam_engine.evaluate.result import Finding

# Modules whose attributes a candidate has no business replacing: timers, sync,
# the framework, the compiler, the harness itself.
_GUARDED_ROOTS = ("torch", "time", "triton", "htam_engine", "builtins", "gc", "sys", "threading", "numpy")

# Calls that walk into memory or frames the candidate does not own (dotted, after alias resolution).
_FORBIDDEN_CALLS = {
    "gc.get_objects": ("harness_memory", "scans every live object (gc.get_objects)"),
    "gc.get_referrers": ("harness_memory", "walks object references (gc.get_referrers)"),
    "gc.get_referents": ("harness_memory", "walks object references (gc.get_referents)"),
    "inspect.stack": ("frame_walk", "walks the call stack (inspect.stack)"),
    "inspect.currentframe": ("frame_walk", "reads the current frame (inspect.currentframe)"),
    "inspect.getouterframes": ("frame_walk", "walks the call stack (inspect.getouterframes)"),
    "inspect.trace": ("frame_walk", "walks the call stack (inspect.trace)"),
    "sys._getframe": ("frame_walk", "reads caller frames (sys._getframe)"),
    "sys.settrace": ("tracing", "installs a trace hook (sys.settrace)"),
    "sys.setprofile": ("tracing", "installs a profile hook (sys.setprofile)"),
    "threading.settrace": ("tracing", "installs a trace hook (threading.settrace)"),
    "threading.setprofile": ("tracing", "installs a profile hook (threading.setprofile)"),
    "ctypes.string_at": ("foreign_memory", "reads raw memory (ctypes.string_at)"),
    "ctypes.memmove": ("foreign_memory", "copies raw memory (ctypes.memmove)"),
    "ctypes.cast": ("foreign_memory", "casts raw pointers (ctypes.cast)"),
    "torch.utils.cpp_extension._jit_compile": ("kernel_bypass", "builds extensions around the harness's loader"),
    "torch.utils.cpp_extension._import_module_from_library": ("kernel_bypass", "loads extensions around the harness's loader"),
}

# Attribute names that only frame or memory walking needs.
_FORBIDDEN_ATTRS = {
    "f_back": ("frame_walk", "follows frame.f_back into the caller"),
    "f_globals": ("frame_walk", "reads a frame's globals"),
    "f_locals": ("frame_walk", "reads a frame's locals"),
    "tb_frame": ("frame_walk", "reads a traceback's frame"),
    "from_address": ("foreign_memory", "reads raw memory (from_address)"),
    "pythonapi": ("foreign_memory", "calls the interpreter's C API (ctypes.pythonapi)"),
}

# Things worth a warning: legitimate uses exist, but they are where cheats hide.
_WARN_CALLS = {
    "torch.cuda.Stream": ("side_stream", "creates a CUDA stream: work must be finished when forward returns"),
    "torch.cuda.graph": ("cuda_graph", "captures a CUDA graph: replay must recompute from the inputs"),
    "torch.cuda.CUDAGraph": ("cuda_graph", "captures a CUDA graph: replay must recompute from the inputs"),
    "threading.Thread": ("background_thread", "starts a thread: work must be finished when forward returns"),
    "torch.ops.load_library": ("uncounted_kernel", "loads a custom-op library (its calls are not counted as kernels)"),
}

_WARN_IMPORTS = {
    "ctypes": ("foreign_memory", "imports ctypes"),
    "concurrent.futures": ("background_thread", "imports concurrent.futures"),
    "multiprocessing": ("background_thread", "imports multiprocessing"),
}


@dataclass
class _Scan(ast.NodeVisitor):
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted module path
    findings: list[Finding] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # every identifier and attribute name seen
    strings: list[str] = field(default_factory=list)
    jit_decorated: bool = False

    def add(self, node: ast.AST, rule: str, message: str, severity: str = "reject") -> None:
        line = getattr(node, "lineno", None)
        text = f"line {line}: {message}" if line else message
        if not any(f.rule == rule and f.message == text for f in self.findings):
            self.findings.append(Finding(rule=rule, message=text, severity=severity))

    # -- names --------------------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str | None:
        """`a.b.c` with the root alias resolved (`T.cuda` -> `torch.cuda`), else None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id, node.id)
        return ".".join([root, *reversed(parts)])

    def guarded(self, target: ast.AST) -> str | None:
        """The dotted path of `target` when its root is an imported guarded module, else None.

        A local variable that happens to be called `time` is not an imported module, so
        `time.x = 1` on it is not flagged.
        """
        node = target
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        d = self.dotted(target)
        return d if d and d.split(".")[0] in _GUARDED_ROOTS else None

    # -- imports --------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            local = a.asname or a.name.split(".")[0]
            self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
            self._check_import(node, a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        self._check_import(node, mod)
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
            self._check_import(node, f"{mod}.{a.name}")

    def _check_import(self, node: ast.AST, mod: str) -> None:
        if mod == "htam_engine" or mod.startswith("htam_engine.") or mod == "htam_tui" or mod.startswith("htam_tui."):
            self.add(node, "harness_import", f"imports the harness ({mod})")
        for name, (rule, msg) in _WARN_IMPORTS.items():
            if mod == name or mod.startswith(name + "."):
                self.add(node, rule, msg, "warn")

    # -- assignments that patch modules --------------------------------------------------------
    def _check_target(self, node: ast.AST, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._check_target(node, t)
            return
        if isinstance(target, ast.Subscript):
            d = self.dotted(target.value)
            if d == "os.environ":
                self.add(node, "environment", "changes os.environ", "warn")
            return
        if isinstance(target, ast.Attribute):
            d = self.guarded(target)
            if d:
                if d.startswith("torch.backends."):
                    self.add(node, "global_setting", f"changes {d} (affects the reference too)")
                else:
                    self.add(node, "monkey_patch", f"assigns {d}")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_target(node, t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node, node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node, node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._check_target(node, t)
        self.generic_visit(node)

    # -- calls and attributes ----------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        d = self.dotted(node.func)
        if d == "setattr" and node.args:
            tgt = self.guarded(node.args[0])
            if tgt:
                self.add(node, "monkey_patch", f"setattr on {tgt}")
        elif d in _FORBIDDEN_CALLS:
            rule, msg = _FORBIDDEN_CALLS[d]
            self.add(node, rule, msg)
        elif d in _WARN_CALLS:
            rule, msg = _WARN_CALLS[d]
            self.add(node, rule, msg, "warn")
        elif d in ("torch.set_num_threads", "torch.set_float32_matmul_precision", "torch.set_default_dtype"):
            self.add(node, "global_setting", f"calls {d} (affects the reference too)")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.names.add(node.attr)
        if node.attr in _FORBIDDEN_ATTRS:
            rule, msg = _FORBIDDEN_ATTRS[node.attr]
            self.add(node, rule, msg)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.add(node.id)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.strings.append(node.value)
            if node.value.startswith(("htam_engine", "htam_tui")):
                self.add(node, "harness_import", f"names the harness ({node.value.split()[0][:40]})")

    def _decorators(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            d = self.dotted(target) or ""
            if d.startswith("triton.") and d.split(".")[-1] in ("jit", "autotune", "heuristics"):
                self.jit_decorated = True

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._decorators(node)
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._decorators(node)
        self.generic_visit(node)


def _builds_extension(scan: _Scan) -> bool:
    resolved = set(scan.aliases.values())
    return "load_inline" in scan.names or any(
        v.startswith("torch.utils.cpp_extension") for v in resolved
    ) or "cpp_extension" in scan.names


def _defines_model_new(tree: ast.Module) -> bool:
    """ModelNew bound at module level: a class, an assignment or an import under that name
    (conditional definitions count: an `if`/`try` at module level may hold it)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == "ModelNew" for t in targets for n in ast.walk(t)):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == "ModelNew" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True  # a star import may bring it
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exec", "setattr",
                                                                                               "globals"):
            return True  # built at run time: the sandbox will tell
    return False


def _module_level_nodes(tree: ast.Module) -> ast.Module:
    """The module without function bodies (a ModelNew defined only inside a function is not one)."""
    body = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body.append(node)
    return ast.Module(body=body, type_ignores=[])


def static_findings(code: str, backend: str) -> list[Finding]:
    """Findings from reading `code` (a candidate module) for `backend` (cuda|triton|cpp|"").

    Severity "reject" means the runtime would have to prove innocence the text already
    disproves (patching timers, walking frames, importing the harness, no kernel at all);
    "warn" marks legitimate-but-risky constructs (streams, threads, ctypes).
    A source that does not parse yields no findings: the import stage reports it.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    scan = _Scan()
    if not _defines_model_new(_module_level_nodes(tree)):
        scan.add(tree, "no_model_new", "the candidate defines no ModelNew at module level (the class the problem's "
                                       "Model is compared with): nothing to build")
    scan.visit(tree)
    kernel_text = "\n".join(scan.strings)
    has_ext = _builds_extension(scan)
    has_triton = scan.jit_decorated
    if not has_ext and not has_triton:
        scan.add(tree, "no_kernel", "no custom kernel in the source: no load_inline/load extension and no @triton.jit function")
    elif backend == "cuda" and not (has_ext and "__global__" in kernel_text) and not has_triton:
        scan.add(tree, "no_kernel", "backend cuda, but no __global__ kernel in the extension sources", "warn")
    return scan.findings
