"""Session files: round trip (property-based), atomic writes, and every kind of damaged file."""

import os
import random
import zlib

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builders import add_steps, build_session, grow, problem

from htam_engine.errors import InputError
from htam_engine.memory import HTG
from htam_engine.session import FORMAT_VERSION, SessionConfig, SessionFileError, load_session, new_session, save_session
from htam_engine.session import codec
from htam_engine.storage import pack, unpack
from htam_engine.session.model import Session


@pytest.fixture(scope="module")
def small():
    return build_session(12, seed=1, samples=2, vetoes=0.2)[0]


def test_round_trip_keeps_everything(tmp_path, small):
    p = tmp_path / "s.htam"
    save_session(small, p)
    back = load_session(p)
    assert back == small
    assert back.steps[3].selection.scores[0].terms == small.steps[3].selection.scores[0].terms
    assert os.listdir(tmp_path) == ["s.htam"]  # the temporary file was renamed, nothing left


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), n=st.integers(0, 8), samples=st.integers(1, 3),
       text=st.text(max_size=200), extra=st.dictionaries(st.text(max_size=5), st.integers(-2**63, 2**63 - 1) | st.text(max_size=5),
                                                          max_size=3))
def test_random_histories_survive_save_and_load(tmp_path, seed, n, samples, text, extra):
    mem = grow(HTG.seed(), random.Random(seed), seed % 30, seed % 200)
    s = new_session(problem(), SessionConfig(seed=seed, extra=extra, model=text), mem)
    add_steps(s, mem, n, random.Random(seed), code_size=seed % 300, samples=samples, vetoes=0.3)
    for rec in s.steps:
        rec.candidates[0].model_output = text
    p = tmp_path / "h.htam"
    save_session(s, p)
    assert load_session(p) == s


def _damage(raw: bytes, how: str) -> bytes:
    if how.startswith("truncate"):
        return raw[: int(len(raw) * float(how.split("-")[1]))]
    if how.startswith("flip"):
        i = int(len(raw) * float(how.split("-")[1]))
        return raw[:i] + bytes([raw[i] ^ 0x04]) + raw[i + 1:]
    return {"empty": b"", "garbage": os.urandom(64), "json": b'{"format": "htam-session"}'}[how]


@pytest.mark.parametrize("how", ["truncate-0.01", "truncate-0.5", "truncate-0.999", "flip-0.0", "flip-0.3",
                                 "flip-0.7", "flip-0.999", "empty", "garbage", "json"])
def test_damaged_files_give_one_clear_error_and_stay_untouched(tmp_path, small, how):
    p = tmp_path / "s.htam"
    save_session(small, p)
    bad = _damage(p.read_bytes(), how)
    p.write_bytes(bad)
    with pytest.raises(SessionFileError) as err:
        load_session(p)
    msg = str(err.value)
    assert isinstance(err.value, InputError) and str(p) in msg and "\n" not in msg
    assert p.read_bytes() == bad


def _write_body(p, body, version=FORMAT_VERSION, kind="htam-session"):
    raw = pack(body)
    p.write_bytes(msgpack.packb({"format": kind, "version": version, "crc32": zlib.crc32(raw), "meta": {},
                                 "body": raw}, use_bin_type=True))


def _body(s):
    return {"schema": codec.schema_of(Session), "session": codec.encode(s)}


WRONG_TYPES = {
    "steps not a list": lambda b: b["session"].__setitem__(4, "many"),
    "state is a number": lambda b: b["session"][4][0].__setitem__(1, 5),
    "unknown family": lambda b: b["session"][4][0][1].__setitem__(1, "teleport"),
    "result status": lambda b: next(c[7] for r in b["session"][4] for c in r[4] if c[7]).__setitem__(0, "great"),
    "short record": lambda b: b["session"][4][0].__setitem__(2, ["x"]),
    "memory not a map": lambda b: b["session"].__setitem__(3, [1, 2]),
    "steps renumbered": lambda b: b["session"][4][1].__setitem__(0, 7),
    # primitives of positional data are checked too: `sessions show` crashed on a boolean model name
    "model name a boolean": lambda b: b["session"][2].__setitem__(3, True),
    "step budget a string": lambda b: b["session"][2].__setitem__(6, "six"),
    "chosen out of range": lambda b: b["session"][4][0].__setitem__(5, 9),
    "no schema": lambda b: b.pop("schema"),
    "session missing": lambda b: b.pop("session"),
    "body a list": None,
}


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_wrong_types_give_a_clear_error(tmp_path, small, case):
    p = tmp_path / "s.htam"
    body = unpack(pack(_body(small)))
    if WRONG_TYPES[case] is None:
        body = [1, 2, 3]
    else:
        WRONG_TYPES[case](body)
    _write_body(p, body)
    before = p.read_bytes()
    with pytest.raises(SessionFileError, match=str(p)):
        load_session(p)
    assert p.read_bytes() == before


def test_future_version_and_other_kinds_are_refused(tmp_path, small):
    p = tmp_path / "s.htam"
    _write_body(p, _body(small), version=FORMAT_VERSION + 1)
    with pytest.raises(SessionFileError, match="newer than this htam reads"):
        load_session(p)
    _write_body(p, _body(small), kind="htam-bank")
    with pytest.raises(SessionFileError, match="not a htam-session file"):
        load_session(p)
    with pytest.raises(SessionFileError, match="no such file"):
        load_session(tmp_path / "absent.htam")
    with pytest.raises(SessionFileError, match="folder"):
        load_session(tmp_path)


def test_records_that_gained_or_lost_fields_load_by_name(tmp_path, small):
    """A file written when a record had other fields: extra ones are ignored, missing ones default."""
    body = unpack(pack(_body(small)))
    names = body["schema"]["StepRecord"]
    body["schema"]["StepRecord"] = names[:-1] + ["from_the_future"]  # memory_delta missing, one unknown
    for rec in body["session"][4]:
        rec[-1] = "ignored"
    p = tmp_path / "s.htam"
    _write_body(p, body)
    back = load_session(p)
    assert len(back.steps) == len(small.steps) and all(r.memory_delta == {} for r in back.steps)
    assert back.steps[2].selection == small.steps[2].selection


def test_random_damage_never_escapes_as_another_error(tmp_path, small):
    """Fuzz: truncations, bit flips and overwritten bytes either load the original or raise
    SessionFileError / BankFileError; the damaged file is left as it was."""
    from htam_engine.memory import BankFileError, load_bank, save_bank

    sp, bp = tmp_path / "s.htam", tmp_path / "m.htgbank"
    save_session(small, sp)
    save_bank(HTG.seed(), bp)
    rng = random.Random(0)
    for path, loader, error in ((sp, load_session, SessionFileError), (bp, load_bank, BankFileError)):
        original = path.read_bytes()
        for _ in range(300):
            b = bytearray(original)
            roll = rng.random()
            if roll < 0.3:
                b = b[: rng.randrange(len(b))]
            elif roll < 0.9:
                for _ in range(rng.randint(1, 3)):
                    b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            else:
                j = rng.randrange(len(b))
                b[j:j + 4] = rng.randbytes(4)
            path.write_bytes(b)
            try:
                loader(path)
            except error:
                pass
            assert path.read_bytes() == b
