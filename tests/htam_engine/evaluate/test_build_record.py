"""build_record: the judge's digests of what a build left in the shared build cache."""

from __future__ import annotations

import os

from htam_engine.evaluate.build_record import BuildRecords, artifact_digests
from htam_engine.evaluate.cache import build_dir


def _built(key: str) -> None:
    folder = build_dir(key) / f"ext_{key}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"ext_{key}.so").write_bytes(b"library")
    (folder / "main.o").write_bytes(b"object")
    (folder / "build.ninja").write_text("rules")


def test_digests_cover_libraries_and_objects_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    _built("k1")
    assert sorted(artifact_digests(build_dir("k1"))) == ["ext_k1/ext_k1.so", "ext_k1/main.o"]


def test_a_library_replaced_with_its_mtime_put_back_has_the_folder_built_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    records = BuildRecords()
    _built("k1")
    records.record("k1")
    assert records.check("k1") and (build_dir("k1") / "ext_k1" / "ext_k1.so").exists()
    lib = build_dir("k1") / "ext_k1" / "ext_k1.so"
    stat = lib.stat()
    lib.write_bytes(b"planted")
    os.utime(lib, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not records.check("k1")
    assert not (build_dir("k1") / "ext_k1").exists()  # removed: the next build starts from nothing
    assert records.check("k1")  # forgotten until the next build is recorded


def test_a_folder_this_judge_never_saw_built_is_used_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    _built("k2")
    assert BuildRecords().check("k2") and (build_dir("k2") / "ext_k2" / "ext_k2.so").exists()
