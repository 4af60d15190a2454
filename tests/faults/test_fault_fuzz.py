"""Bad input, generated: problem files, candidate modules, session files, memory banks,
config files and command lines — at least 1,000 cases each (hypothesis, derandomized so CI
sees the same cases every run).

Each case goes through the library's own entry point in-process (`htam_engine.cli.main`,
`load_config`, the reply extractor and static checks) and must give a clear one-line error
with a non-zero exit where the input is bad — exit 2 for unreadable input — never a traceback,
and never change the input file. A few dozen cases also run as real `htam` processes, and
~20 mutated candidates go through a real worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fault_support import HONEST, NO_KERNEL, PROBLEM, ROOT, fenced, load_test_problem, quick_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htam_engine.cli import main
from htam_engine.storage import pack, unpack
from tests.support.loopback_server import LoopbackServer, Reply

CASES = 1000
FUZZ = settings(max_examples=CASES, deadline=None, database=None, derandomize=True, print_blob=True,
                suppress_health_check=list(HealthCheck))

# "htam: ..." or, for a command's arguments, "htam run: ..." (the command named once)
ONE_LINE_ERROR = re.compile(r"htam( [a-z]+)*: ")


# ---------------------------------------------------------------------------- mutations
def _flip(data: bytes, flips: list[tuple[int, int]]) -> bytes:
    b = bytearray(data)
    for pos, bit in flips:
        if b:
            b[pos % len(b)] ^= 1 << bit
    return bytes(b)


def damaged(base: bytes) -> st.SearchStrategy[bytes]:
    """Truncated, bit-flipped, spliced or replaced versions of `base`."""
    n = len(base)
    return st.one_of(
        st.integers(0, max(n - 1, 0)).map(lambda k: base[:k]),
        st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 7)), min_size=1, max_size=12).map(lambda f: _flip(base, f)),
        st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=64)).map(lambda t: base[:t[0]] + t[1] + base[t[0]:]),
        st.tuples(st.integers(0, n), st.integers(1, 256)).map(lambda t: base[:t[0]] + base[t[0] + t[1]:]),
        st.binary(max_size=300),
    )


# Integers span msgpack's whole range (int64 up to uint64) and no further: a value msgpack
# cannot encode would fail the test's own packing, not htam's reading of the file.
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.binary(max_size=8), st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=3),
)


def _paths(obj, prefix=(), out=None, limit=400):
    """Paths to every container entry of a decoded msgpack tree (breadth-limited)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        out.append((*prefix, k))
        _paths(v, (*prefix, k), out, limit)
    return out


def _edit(tree, path, op, value):
    node = tree
    for k in path[:-1]:
        node = node[k]
    if op == "delete" and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return tree


@st.composite
def wrong_types(draw, envelope: bytes):
    """A well-formed envelope (valid checksum) whose body or header holds wrong types,
    missing keys or a version from the future."""
    top = unpack(envelope)
    body = unpack(top["body"])
    what = draw(st.sampled_from(["body", "body", "body", "version", "format", "meta"]))
    if what == "version":
        top["version"] = draw(st.one_of(st.integers(-3, 10**6), ODD_VALUES))
    elif what == "format":
        top["format"] = draw(st.one_of(st.sampled_from(["htam-session", "htam-bank"]), ODD_VALUES))
    elif what == "meta":
        top["meta"] = draw(ODD_VALUES)
    else:
        for _ in range(draw(st.integers(1, 3))):
            paths = _paths(body)
            if not paths:
                break
            path = paths[draw(st.integers(0, len(paths) - 1))]
            body = _edit(body, path, draw(st.sampled_from(["replace", "delete"])), draw(ODD_VALUES))
        import zlib

        raw = pack(body)
        top["body"], top["crc32"] = raw, zlib.crc32(raw)
    return pack(top)


# ---------------------------------------------------------------------------- running htam
def _digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def cli(argv: list[str], inputs: list[Path] = (), report_on_stdout: bool = False) -> tuple[int, str, str]:
    """`htam argv` in-process; asserts the behaviour every bad input must get.

    report_on_stdout: the command reports bad inputs in its listing (`htam problems`), one
    row each, rather than as a line on stderr."""
    before = _digest(list(inputs))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's --help / --version
            code = exc.code if isinstance(exc.code, int) else 0
    o, e = out.getvalue(), err.getvalue()
    assert "Traceback" not in e and "Traceback" not in o, (argv, e[-3000:])
    assert code in (0, 1, 2), (argv, code, e)
    if code != 0 and not (report_on_stdout and ("error" in o or "BROKEN" in o)):
        lines = e.strip().splitlines()
        assert lines and ONE_LINE_ERROR.match(lines[-1]) and len(lines[-1]) < 2000, (argv, e)
    assert _digest(list(inputs)) == before, f"{argv}: an input file changed"
    return code, o, e


class Tally:
    def __init__(self, figures, kind: str):
        self.figures, self.kind, self.n, self.bad = figures, kind, 0, 0

    @contextlib.contextmanager
    def case(self):
        self.n += 1
        try:
            yield
        except BaseException:
            self.bad += 1
            raise

    def report(self) -> None:
        self.figures.add(self.kind, tried=self.n, survived=self.n - self.bad, note=f"{self.n} in-process")


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    """A real session file and memory bank, written by a short run against the loopback server."""
    d = tmp_path_factory.mktemp("fuzz-samples")
    env = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "sk-fuzz", "HTAM_CONFIG": str(d / "none.toml"),
           "HTAM_BANK": str(d / "bank.htgbank"), "HTAM_SESSIONS_DIR": str(d)}
    with LoopbackServer(default=Reply(fenced(NO_KERNEL))) as server, pytest.MonkeyPatch.context() as mp:
        env["OPENAI_BASE_URL"] = server.base_url
        for k, v in env.items():
            mp.setenv(k, v)
        code, _o, e = cli(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "3",
                           "--session", str(d / "s.htam")])
        assert code == 0, e
    return (d / "s.htam").read_bytes(), (d / "bank.htgbank").read_bytes()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("HTAM_BANK", str(tmp_path / "bank.htgbank"))
    monkeypatch.setenv("HTAM_CONFIG", str(tmp_path / "none.toml"))
    for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTAM_BASE_URL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------------------- problem files
PROBLEM_BASES = [PROBLEM.read_bytes(), (ROOT / "htam_engine/problems/builtin/level1/softmax.py").read_bytes()]
PROBLEM_EDITS = st.sampled_from([
    ("torch.rand(N)", "None"), ("torch.rand(N)", "'text'"), ("torch.rand(N)", "[1, 2]"), ("N = 4096", "N = -5"),
    ("N = 4096", "N = 'big'"), ("def get_inputs", "def get_input"), ("class Model", "class Modl"),
    ("return []", "return None"), ("return []", "return 7"), ("def forward", "forward = 3\n    def fwd"),
    ("import torch\n", "import torch_that_is_not_there\n"), ("(nn.Module)", "(object)"),
])


@st.composite
def problem_sources(draw):
    base = draw(st.sampled_from(PROBLEM_BASES))
    if draw(st.booleans()):
        old, new = draw(PROBLEM_EDITS)
        return base.replace(old.encode(), new.encode())
    return draw(damaged(base))


def test_fuzz_problem_files(workdir, figures):
    tally = Tally(figures, "fuzz: problem files")
    path = workdir / "problem_fuzz.py"

    @FUZZ
    @given(problem_sources(), st.sampled_from([["--json"], []]))
    def case(data, extra):
        with tally.case():
            path.write_bytes(data)
            code, out, _e = cli(["problems", str(path), *extra], [path], report_on_stdout=True)
            assert code in (0, 2) and "Traceback" not in out

    try:
        case()
    finally:
        tally.report()
    assert tally.n >= CASES


# ---------------------------------------------------------------------------- candidate modules
@st.composite
def candidate_replies(draw):
    code = HONEST.encode()
    if draw(st.booleans()):
        code = draw(damaged(code))
    text = code.decode("utf-8", errors=draw(st.sampled_from(["replace", "ignore", "surrogateescape"])))
    wrap = draw(st.sampled_from(["fenced", "bare", "open_fence", "think", "prose"]))
    return {"fenced": fenced(text), "bare": text, "open_fence": "```python\n" + text, "prose": "Here you go:\n" + text,
            "think": "<think>" + text[: len(text) // 2] + "</think>\n" + fenced(text)}[wrap]


def test_fuzz_candidate_modules_extraction_and_static_checks(figures):
    from htam_engine.evaluate.checks import static_findings
    from htam_engine.propose.extract import extract_module

    tally = Tally(figures, "fuzz: candidate modules")

    @FUZZ
    @given(candidate_replies(), st.sampled_from(["triton", "cpp", "cuda"]))
    def case(reply, backend):
        with tally.case():
            got = extract_module(reply)
            assert (got.code is None) == bool(got.failure) and "\n" not in got.failure
            code = got.code if got.code is not None else reply
            try:
                compile(code, "<candidate>", "exec")
            except (SyntaxError, ValueError):
                pass  # a compile error: the worker reports it as one
            findings = static_findings(code, backend)
            assert all(f.message and f.severity in ("reject", "incorrect", "warn") for f in findings)

    try:
        case()
    finally:
        tally.report()


def test_mutated_candidates_through_a_real_worker(figures):
    """~20 damaged candidates evaluated for real: each is a status, and the worker (or its
    replacement) still evaluates the honest candidate afterwards."""
    from htam_engine.evaluate.evaluator import Evaluator
    from htam_engine.evaluate.result import Status

    rng = random.Random(3)
    base = HONEST.encode()
    sources = []
    while len(sources) < 20:
        cut = rng.randrange(len(base))
        data = base[:cut] if len(sources) % 2 else _flip(base, [(rng.randrange(len(base)), rng.randrange(8))])
        sources.append(data.decode("utf-8", errors="replace"))
    problem = load_test_problem()
    ev = Evaluator("cpu")
    survived = 0
    try:
        for code in sources:
            r = ev.evaluate(problem, code, quick_config(timeout_s=30))
            assert isinstance(r.status, Status) and (r.status is Status.OK or r.diagnostics.message)
            survived += 1
        assert ev.evaluate(problem, HONEST, quick_config()).status is Status.OK
    finally:
        ev.close()
        figures.add("fuzz: candidate modules", tried=len(sources), survived=survived, note=f"{len(sources)} through a real worker")


# ---------------------------------------------------------------------------- session files and banks
def _session_argv(path: Path, out: Path, pick: int) -> list[str]:
    return [
        ["sessions", "show", str(path), "--json"],
        ["sessions", "show", str(path)],
        ["sessions", "export", str(path), "--to", str(out / "solution.py")],
        ["sessions", "branch", str(path), "--at", "1", "--to", str(out / "branch.htam")],
        ["sessions", "list", str(path.parent), "--json"],
    ][pick]


def test_fuzz_session_files(workdir, sample_files, figures):
    session, _bank = sample_files
    v1 = (ROOT / "tests/htam_engine/session/fixtures/session_v1.htam").read_bytes()
    tally = Tally(figures, "fuzz: session files")
    folder = workdir / "in"
    folder.mkdir()
    path = folder / "fuzzed.htam"

    @FUZZ
    @given(st.one_of(damaged(session), wrong_types(session), damaged(v1)), st.integers(0, 4))
    def case(data, pick):
        with tally.case():
            path.write_bytes(data)
            code, _o, e = cli(_session_argv(path, workdir, pick), [path])
            if pick in (0, 1, 3) and code != 0:  # (export of a session with no correct candidate exits 1)
                assert code == 2, f"a damaged session file should exit 2: {e}"

    try:
        case()
    finally:
        tally.report()


def test_fuzz_memory_banks(workdir, sample_files, figures):
    _session, bank = sample_files
    tally = Tally(figures, "fuzz: memory banks")
    path = workdir / "fuzzed.htgbank"

    @FUZZ
    @given(st.one_of(damaged(bank), wrong_types(bank)), st.booleans())
    def case(data, as_json):
        with tally.case():
            path.write_bytes(data)
            code, _o, e = cli(["memory", "show", str(path), *(["--json"] if as_json else [])], [path])
            if code != 0:
                assert code == 2, f"a damaged bank should exit 2: {e}"

    try:
        case()
    finally:
        tally.report()


# ---------------------------------------------------------------------------- config files
KNOWN_KEYS = ["model", "name", "base_url", "api_key_env", "temperature", "max_tokens", "timeout_s", "retries",
              "stall_timeout_s", "stream", "reflect", "api_key", "backoff_base_s", "no_such_setting"]
TOML_SCALARS = st.one_of(st.integers(-10**20, 10**20), st.floats(allow_nan=False, allow_infinity=False),
                         st.booleans(), st.text(max_size=16))


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in v) + '"'


@st.composite
def config_texts(draw):
    tables = draw(st.dictionaries(st.sampled_from(["model", "ui", "keys", "prices", "prices.\"m\"", "other"]),
                                  st.dictionaries(st.sampled_from(KNOWN_KEYS + ["input", "output", "approve", "refresh_hz"]),
                                                  st.one_of(TOML_SCALARS, st.lists(TOML_SCALARS, max_size=3)), max_size=5),
                                  max_size=4))
    text = "".join(f"[{t}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in kv.items()) for t, kv in tables.items())
    top = draw(st.dictionaries(st.sampled_from(["model", "ui", "x"]), TOML_SCALARS, max_size=2))
    text = "".join(f"{k} = {_toml_value(v)}\n" for k, v in top.items()) + text
    if draw(st.integers(0, 3)) == 0:
        return draw(damaged(text.encode()))
    return text.encode()


def test_fuzz_config_files(workdir, figures):
    from htam_engine.errors import InputError
    from htam_engine.propose.config import load_config

    tally = Tally(figures, "fuzz: config files")
    path = workdir / "config.toml"

    @FUZZ
    @given(config_texts())
    def case(data):
        with tally.case():
            path.write_bytes(data)
            before = _digest([path])
            try:
                cfg = load_config(env={"HTAM_CONFIG": str(path)}, cwd=workdir)
                assert str(path) in cfg.sources
                assert "sk-" not in repr(cfg.model)
            except InputError as exc:
                msg = str(exc)
                assert str(path) in msg and "\n" not in msg.strip() and "Traceback" not in msg, msg
            assert _digest([path]) == before

    try:
        case()
    finally:
        tally.report()


# ---------------------------------------------------------------------------- command lines
GARBAGE = st.one_of(st.text(max_size=12), st.sampled_from(["-1", "0", "1e999", "nan", "-", "--", "", "x" * 300,
                                                            "/nonexistent/x", "builtin:nope", "cuda:99", "cuda:x"]))
FLAGS = ["--steps", "--samples", "--backend", "--device", "--proposer", "--policy", "--seed", "--set", "--ablation",
         "--token-budget", "--cost-budget", "--target", "--workers", "--trials", "--timeout", "--json", "--no-bank",
         "--model", "--base-url", "--temperature", "--max-tokens", "--model-timeout", "--model-retries", "--at", "--to",
         "--out", "--memory-mb", "--resume", "--help"]
SUBCOMMANDS = [["problems"], ["eval"], ["run"], ["batch"], ["sessions", "list"], ["sessions", "show"],
               ["sessions", "branch"], ["sessions", "export"], ["sessions", "resume"], ["sessions"], ["memory", "show"],
               ["memory"], ["compare"]]


@st.composite
def command_lines(draw):
    argv = list(draw(st.sampled_from(SUBCOMMANDS)))
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(FLAGS)))
        argv.append(draw(GARBAGE))
    # Positional inputs never name a real problem or file: no case may start real work.
    return [a for a in argv if a not in ("--help",) or draw(st.integers(0, 20)) == 0]


def test_fuzz_command_lines(workdir, figures):
    tally = Tally(figures, "fuzz: command lines")

    @FUZZ
    @given(command_lines())
    def case(argv):
        with tally.case():
            code, _o, e = cli(argv, report_on_stdout=argv[0] == "problems")
            if code != 0:
                assert code == 2 or "htam: " in e, e

    try:
        case()
    finally:
        tally.report()


def test_some_bad_inputs_in_real_processes(workdir, sample_files, figures):
    """A few dozen of the same kinds of case through a real `htam` process: exit status,
    one line on stderr, no traceback."""
    session, bank = sample_files
    rng = random.Random(11)
    cases: list[list[str]] = []
    for i in range(4):
        p = workdir / f"s{i}.htam"
        p.write_bytes(session[: rng.randrange(len(session))])
        cases.append(["sessions", "show", str(p), "--json"])
        b = workdir / f"b{i}.htgbank"
        b.write_bytes(_flip(bank, [(rng.randrange(len(bank)), rng.randrange(8))]))
        cases.append(["memory", "show", str(b)])
        pr = workdir / f"p{i}.py"
        pr.write_bytes(PROBLEM.read_bytes()[: rng.randrange(40, 300)])
        cases.append(["problems", str(pr)])
    cases += [["run", "nope", "--steps", "x"], ["eval"], ["sessions", "branch", "a", "--at", "-3"], ["compare"],
              ["run", str(PROBLEM), "--device", "tpu"], ["batch", "/nonexistent"], ["memory", "show", "/"],
              ["sessions", "show", str(workdir)]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = 0
    for argv in cases:
        proc = subprocess.run([sys.executable, "-m", "htam_engine", *argv], env=env, cwd=workdir, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout, (argv, proc.stderr)
        if argv[0] == "problems":  # a broken problem file is a row of the listing
            assert "BROKEN" in proc.stdout and len(proc.stdout.strip().splitlines()) == 1, (argv, proc.stdout)
        else:
            assert lines and ONE_LINE_ERROR.match(lines[-1]), (argv, proc.stderr)
        ok += 1
    figures.add("fuzz: command lines", tried=len(cases), survived=ok, note=f"{len(cases)} as real htam processes")
