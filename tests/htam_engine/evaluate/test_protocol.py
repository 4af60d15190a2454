"""The engine reads worker replies as plain data with a deadline; junk from a worker is an error, not a crash."""

from __future__ import annotations

import os
import struct
import time

import pytest

from htam_engine.evaluate.process import _pin_device, worker_env
from htam_engine.evaluate.protocol import ProtocolError, ReplyReader, recv_request, send_reply, send_request


def _pipe():
    r, w = os.pipe()
    return ReplyReader(r), w


def test_replies_round_trip_and_poll_honours_its_deadline():
    reader, w = _pipe()
    try:
        t0 = time.monotonic()
        assert reader.poll(0.2) is None and time.monotonic() - t0 < 1.0
        send_reply(w, {"t": "stage", "stage": "check"})
        send_reply(w, {"t": "trials", "ms": [1.5, 2.5]})
        assert reader.poll(1.0) == {"t": "stage", "stage": "check"}
        assert reader.poll(1.0) == {"t": "trials", "ms": [1.5, 2.5]}
    finally:
        os.close(w)
        os.close(reader.fd)


@pytest.mark.parametrize("payload", [struct.pack(">I", 1 << 30), struct.pack(">I", 3) + b"\xc1\xc1\xc1",
                                     struct.pack(">I", 1) + b"\x05"], ids=["oversized", "undecodable", "not-a-map"])
def test_junk_from_a_worker_is_a_protocol_error(payload):
    reader, w = _pipe()
    try:
        os.write(w, payload)
        with pytest.raises(ProtocolError):
            reader.poll(1.0)
    finally:
        os.close(w)
        os.close(reader.fd)


def test_closed_pipe_is_a_protocol_error():
    reader, w = _pipe()
    os.close(w)
    with pytest.raises(ProtocolError):
        reader.poll(1.0)
    os.close(reader.fd)


def test_requests_keep_python_values():
    r, w = os.pipe()
    try:
        send_request(w, {"overrides": {"bias_shape": (4, 1, 1)}})
        assert recv_request(r) == {"overrides": {"bias_shape": (4, 1, 1)}}
    finally:
        os.close(r)
        os.close(w)


def test_worker_environment_is_scrubbed_and_pinned(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("GITHUB_TOKEN", "x")
    monkeypatch.setenv("MY_SECRET_THING", "x")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setenv("HTAM_WORKER_AS_MB", "99")  # a candidate's limits come with each request, never inherited
    env = worker_env("cuda:1")
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "MY_SECRET_THING"} & set(env)
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["HTAM_WORKER_DEVICE"] == "cuda"
    assert _pin_device("cpu")[2] == "time-cpu" and _pin_device("cuda")[2] == "time-gpu2"
    assert "HTAM_WORKER_AS_MB" not in env
    assert worker_env("cpu")["TRITON_INTERPRET"] == "1"


def test_gpu_worker_never_inherits_the_triton_interpreter(monkeypatch):
    # A parent that runs CPU work (tests, a CPU engine) may have TRITON_INTERPRET=1: a GPU
    # worker must still compile real kernels, or its timings and stream checks mean nothing.
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "TRITON_INTERPRET" not in worker_env("cuda:0")
    assert worker_env("cpu")["TRITON_INTERPRET"] == "1"
