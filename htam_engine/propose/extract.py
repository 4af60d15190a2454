"""Take the candidate module out of a model's reply.

Replies come as fenced blocks with or without a language tag, several blocks (drafts,
a kernel source block next to the module), prose around the code, reasoning sections
(`<think>...</think>`) holding drafts, or a fence left open because the reply was cut.
The result is either a module that parses and defines `class ModelNew`, or a one-line
reason that goes into memory and the next prompt.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+#.\-]*)[^\n]*$", re.MULTILINE)
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_PY_TAGS = {"", "python", "py", "python3", "py3", "python 3"}
_SOURCE_TAGS = {"cpp", "c++", "cxx", "cc", "c", "cuda", "cu", "h", "hpp"}
_SOURCE_NAME = re.compile(r"(?i)src|source|code|kernel|cuda|cpp")
_CODE_START = re.compile(r"^(import |from \S+ import |class ModelNew\b|#!|\"\"\"|''')", re.MULTILINE)


@dataclass(slots=True)
class Block:
    text: str
    lang: str
    closed: bool


@dataclass(slots=True)
class Extraction:
    code: str | None
    failure: str = ""
    blocks: int = 0  # fenced blocks seen in the reply


def find_blocks(text: str) -> list[Block]:
    """Fenced blocks in order; a fence still open at the end yields an unclosed block."""
    blocks: list[Block] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return blocks
        fence, lang = opening.group(1), opening.group(2).lower()
        body_start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE).search(text, body_start)
        if closing is None:
            blocks.append(Block(text[body_start:], lang, closed=False))
            return blocks
        blocks.append(Block(text[body_start : closing.start()], lang, closed=True))
        pos = closing.end()


def extract_module(reply: str) -> Extraction:
    """The `ModelNew` module in `reply`, or why there is none."""
    if not reply or not reply.strip():
        return Extraction(None, "the model returned an empty reply")
    # JSON may carry lone surrogates ("\\udc80"); the parser cannot encode them, so they become "?".
    reply = reply.encode("utf-8", "replace").decode("utf-8")
    answer = _THINK.sub("", reply)
    # Drafts inside a reasoning section count only when the answer itself has no code.
    for text in ((answer, reply) if answer.strip() != reply.strip() else (reply,)):
        result = _extract(text)
        if result.code is not None:
            return result
    return _extract(answer if answer.strip() else reply)


def _extract(text: str) -> Extraction:
    blocks = find_blocks(text)
    if not blocks:
        return _from_prose(text)
    python = [b for b in blocks if b.lang in _PY_TAGS]
    defining = [b for b in python if _defines_model_new(b.text)]
    if defining:
        chosen = defining[-1]  # the last complete answer supersedes earlier drafts
        code = _join_helpers(chosen, [b for b in python if b is not chosen and b.closed])
        code = _bind_sources(code, [b for b in blocks if b.lang in _SOURCE_TAGS and b.closed])
        problem = _check(code)
        if problem and not chosen.closed:
            return Extraction(None, f"the reply was cut off inside the code block: {problem}", len(blocks))
        return Extraction(None if problem else code, problem, len(blocks))
    mentions = [b for b in python if re.search(r"\bclass\s+ModelNew\b", b.text)]
    if mentions:
        problem = _check(mentions[-1].text)
        cut = "" if mentions[-1].closed else "the reply was cut off inside the code block: "
        return Extraction(None, cut + problem, len(blocks))
    langs = sorted({b.lang or "untagged" for b in blocks})
    return Extraction(
        None,
        f"no code block defines class ModelNew (blocks: {len(blocks)}, languages: {', '.join(langs)})",
        len(blocks),
    )


def _from_prose(text: str) -> Extraction:
    """No fences: the reply may be bare code, or code with prose before and after it."""
    start = _CODE_START.search(text)
    if start is None:
        if re.search(r"\bclass\s+ModelNew\b", text):
            return Extraction(None, _check(text) or "the reply has no module around class ModelNew")
        return Extraction(None, "the reply contains no code (no fenced block and no class ModelNew)")
    lines = text[start.start() :].rstrip().splitlines()
    # Trim trailing prose one line at a time until the rest parses.
    for end in range(len(lines), 0, -1):
        code = "\n".join(lines[:end]) + "\n"
        if _check(code) == "":
            return Extraction(code, "")
    return Extraction(None, _check("\n".join(lines) + "\n"))


def _check(code: str) -> str:
    """'' when `code` parses and defines ModelNew at module level, else why not."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"the candidate module has a syntax error at line {exc.lineno}: {exc.msg}"
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        return "the candidate module does not define class ModelNew at module level"
    return ""


def _defines_model_new(code: str) -> bool:
    return re.search(r"^class\s+ModelNew\b", code, re.MULTILINE) is not None


def _join_helpers(chosen: Block, others: list[Block]) -> str:
    """Prepend other Python blocks that define names the chosen block uses but lacks
    (a reply that puts the kernel source string in one block and ModelNew in the next)."""
    missing = _free_names(chosen.text)
    if not missing:
        return chosen.text
    helpers = [b.text for b in others if _defined_names(b.text) & missing]
    return "\n\n".join([*helpers, chosen.text]) if helpers else chosen.text


def _bind_sources(code: str, sources: list[Block]) -> str:
    """A module that loads `cuda_source` while the reply gave that source as a separate
    ```cuda block: bind the blocks to the unresolved source-like names when their numbers
    match (anything else would be a guess) — by kind first (a name saying cuda takes a cuda
    block, one saying cpp a C++ block), then in order."""
    if not sources:
        return code
    free = _free_names(code)
    used = [m.group(0) for m in re.finditer(r"\b[A-Za-z_]\w*\b", code) if m.group(0) in free and _SOURCE_NAME.search(m.group(0))]
    names = list(dict.fromkeys(used))
    if len(names) != len(sources):
        return code
    left = list(sources)
    bound: dict[str, Block] = {}
    for name in names:
        match = next((b for b in left if _kind(name) is not None and _kind(name) == _kind(b.lang)), None)
        if match is not None:
            bound[name] = match
            left.remove(match)
    for name in names:
        if name not in bound:
            bound[name] = left.pop(0)
    lines = [f"{name} = {_literal(bound[name].text)}" for name in names]
    return "\n".join(lines) + "\n\n" + code


def _kind(word: str) -> str | None:
    w = word.lower()
    if w in ("cuda", "cu") or "cuda" in w or w.startswith("cu_"):
        return "cuda"
    if w in _SOURCE_TAGS or "cpp" in w or "cxx" in w or "header" in w:
        return "cpp"
    return None


def _literal(text: str) -> str:
    if "'''" not in text and not text.endswith("\\"):
        return "r'''\n" + text + "'''"
    return repr(text)


def _free_names(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - _bound_names(ast.walk(tree)) - set(dir(builtins))


def _defined_names(code: str) -> set[str]:
    """Names a block binds at module level (what another block could use)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    top = []
    for node in tree.body:
        top.append(node)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            top.extend(ast.walk(node))
    return _bound_names(top)


def _bound_names(nodes) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names
