"""Compiler output becomes file/line/message; long output is trimmed; floods are bounded."""

from htam_engine.evaluate.diagnostics import BoundedLog, exception_messages, parse_compiler_output, trim_log

GCC = """[1/2] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=x -O3 -c /cache/build/x/main.cpp -o main.o
/cache/build/x/main.cpp: In function 'at::Tensor f(at::Tensor)':
/cache/build/x/main.cpp:14:5: error: 'undeclared_thing' was not declared in this scope
   14 |     undeclared_thing(x);
      |     ^~~~~~~~~~~~~~~~
/cache/build/x/main.cpp:20:1: warning: no return statement in function returning non-void
ninja: build stopped: subcommand failed.
"""

NVCC = """/cache/build/k/cuda.cu(33): error: identifier "blockDimx" is undefined
/cache/build/k/cuda.cu(40): warning #177-D: variable "tmp" was declared but never referenced
1 error detected in the compilation of "/cache/build/k/cuda.cu".
"""

TRITON = """triton.compiler.errors.CompilationError: at 7:8:
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs) + undefined_name
        ^
NameError("Cannot access global variable undefined_name")
"""


def test_gcc_errors_carry_file_line_and_column_errors_first():
    msgs = parse_compiler_output(GCC)
    assert (msgs[0].file, msgs[0].line, msgs[0].column, msgs[0].severity) == ("main.cpp", 14, 5, "error")
    assert "undeclared_thing" in msgs[0].message
    assert msgs[1].severity == "warning" and msgs[1].line == 20


def test_nvcc_errors_parsed():
    msgs = parse_compiler_output(NVCC)
    assert (msgs[0].file, msgs[0].line, msgs[0].severity) == ("cuda.cu", 33, "error")
    assert "blockDimx" in msgs[0].message
    assert any(m.severity == "warning" and m.line == 40 for m in msgs)


def test_linker_and_triton_errors_parsed():
    link = parse_compiler_output("/usr/bin/ld: main.o: undefined reference to `foo(int)'\ncollect2: error: ld returned 1 exit status")
    assert any("undefined reference" in m.message for m in link)
    tri = parse_compiler_output(TRITON)
    assert tri and tri[0].file == "triton" and (tri[0].line, tri[0].column) == (7, 8)
    assert "undefined_name" in tri[0].message


def test_syntax_error_points_at_candidate_line():
    try:
        compile("x = 1\ndef broken(:\n", "/tmp/cand.py", "exec")
    except SyntaxError as exc:
        msgs = exception_messages(exc, "/tmp/cand.py")
    assert msgs[0].file == "cand.py" and msgs[0].line == 2 and "SyntaxError" in msgs[0].message


def test_trim_log_keeps_both_ends():
    text = "\n".join(f"line {i}" for i in range(1000))
    out = trim_log(text, head=5, tail=5)
    assert out.splitlines()[0] == "line 0" and out.splitlines()[-1] == "line 999"
    assert "990 lines omitted" in out


def test_bounded_log_stays_bounded_under_a_flood():
    log = BoundedLog(head=100, tail=1000)
    for _ in range(10_000):
        log.write(b"x" * 1000 + b"\n")
    text = log.text()
    assert len(text) < 1300 and "bytes of output dropped" in text
