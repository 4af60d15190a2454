"""Settings: files, then environment, then flags; bad input is one clear error naming the file."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import pickle

import pytest

from htam_engine.errors import InputError
from htam_engine.propose.config import add_model_arguments, has_endpoint, load_config
from htam_engine.settings import user_config_path

KEY = "sk-config-test-abcdefghijklmnop"


def _files(tmp_path, user: str = "", project: str = ""):
    u, p = tmp_path / "user.toml", tmp_path / "htam.toml"
    if user:
        u.write_text(user)
    if project:
        p.write_text(project)
    return dict(user_file=u, project_file=p)


def test_precedence_user_then_project_then_env_then_flags(tmp_path):
    files = _files(
        tmp_path,
        user='[model]\nname = "user-model"\ntemperature = 0.9\nretries = 7\nbase_url = "http://user/v1"\n',
        project='[model]\nname = "project-model"\ntemperature = 0.5\n',
    )
    env = {"HTAM_TEMPERATURE": "0.3", "OPENAI_BASE_URL": "http://env/v1"}
    cfg = load_config({"temperature": 0.1, "model": None}, env=env, **files)
    m = cfg.model
    assert (m.model, m.temperature, m.retries, m.base_url) == ("project-model", 0.1, 7, "http://env/v1")
    assert cfg.sources == [str(files["user_file"]), str(files["project_file"])]
    # HTAM_BASE_URL wins over OPENAI_BASE_URL; flags win over both.
    assert load_config(env={**env, "HTAM_BASE_URL": "http://htam/v1"}, **files).model.base_url == "http://htam/v1"
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", dest="timeout_s", type=float)  # a run option of the same field name
    add_model_arguments(parser)
    ns = parser.parse_args(["--base-url", "http://flag/v1", "--model-timeout", "9", "--timeout", "77", "--max-tokens", "512"])
    m = load_config(ns, env=env, **files).model
    assert (m.base_url, m.timeout_s, m.max_tokens, m.model) == ("http://flag/v1", 9.0, 512, "project-model")


def test_user_file_location_follows_xdg_and_htam_config(tmp_path):
    assert user_config_path({"XDG_CONFIG_HOME": "/x"}).as_posix() == "/x/htam/config.toml"
    assert user_config_path({"HOME": "/home/u"}).as_posix() == "/home/u/.config/htam/config.toml"
    assert user_config_path({"HTAM_CONFIG": "/etc/h.toml", "XDG_CONFIG_HOME": "/x"}).as_posix() == "/etc/h.toml"
    (tmp_path / "htam").mkdir()
    (tmp_path / "htam" / "config.toml").write_text('[model]\nname = "from-xdg"\n')
    cfg = load_config(env={"XDG_CONFIG_HOME": str(tmp_path)}, cwd=tmp_path / "nowhere")
    assert cfg.model.model == "from-xdg"


def test_project_file_is_read_from_the_working_directory(tmp_path):
    (tmp_path / "htam.toml").write_text('[model]\nname = "proj"\n[ui]\nrefresh_hz = 4\n[keys]\napprove = "y"\n')
    cfg = load_config(env={"HOME": str(tmp_path / "home")}, cwd=tmp_path)
    assert cfg.model.model == "proj" and cfg.ui == {"refresh_hz": 4} and cfg.keys == {"approve": "y"}


def test_api_key_env_names_the_variable(tmp_path):
    files = _files(tmp_path, project='[model]\napi_key_env = "MY_KEY"\n')
    cfg = load_config(env={"MY_KEY": KEY, "OPENAI_API_KEY": "sk-other-key-000000000"}, **files)
    assert cfg.model.api_key.reveal() == KEY
    cfg = load_config(env={"HTAM_API_KEY_ENV": "ALT", "ALT": "sk-alt-key-1234567890"}, **_files(tmp_path))
    assert cfg.model.api_key.reveal() == "sk-alt-key-1234567890"


def test_bad_toml_names_file_and_line(tmp_path):
    files = _files(tmp_path, project='[model]\nname = "ok"\ntemperature = = 2\n')
    with pytest.raises(InputError, match=r"htam\.toml: bad TOML: .*line 3"):
        load_config(env={}, **files)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('[model]\ntemperature = "hot"\n', "model.temperature: expected float"),
        ('[model]\ntemprature = 0.2\n', "unknown setting 'temprature'"),
        ('[model]\napi_key = "sk-abc"\n', "does not belong in a file"),
        ('[model]\nretries = -1\n', "must not be negative"),
        ('[keys]\napprove = 1\n', "[keys] must be a string"),
        ('[prices."m"]\ninput = "cheap"\n', "prices.m: input and output must be numbers"),
        ("model = 3\n", "[model] must be a table"),
    ],
)
def test_bad_values_are_one_line_input_errors(tmp_path, text, fragment):
    with pytest.raises(InputError) as err:
        load_config(env={}, **_files(tmp_path, project=text))
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_bad_environment_value_or_flag_names_its_source(tmp_path):
    with pytest.raises(InputError, match="environment variable HTAM_RETRIES: expected int"):
        load_config(env={"HTAM_RETRIES": "many"}, **_files(tmp_path))
    with pytest.raises(InputError, match="option --model-retries: must not be negative"):
        load_config({"retries": -2}, env={}, **_files(tmp_path))
    with pytest.raises(InputError, match="unknown setting 'colour'"):
        load_config({"colour": "red"}, env={}, **_files(tmp_path))


def test_has_endpoint(tmp_path):
    files = _files(tmp_path)
    assert not has_endpoint(load_config(env={}, **files))
    assert has_endpoint(load_config(env={"OPENAI_API_KEY": KEY}, **files))
    assert has_endpoint(load_config(env={"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, **files))


def test_the_key_stays_out_of_dicts_reprs_copies_and_pickles(tmp_path):
    cfg = load_config(env={"OPENAI_API_KEY": KEY}, **_files(tmp_path))
    texts = [
        repr(cfg),
        str(cfg.model),
        json.dumps(cfg.model.to_dict()),
        json.dumps(dataclasses.asdict(cfg), default=str),
        repr(copy.deepcopy(cfg)),
    ]
    assert all(KEY not in t for t in texts)
    assert cfg.model.to_dict()["has_api_key"] is True and "api_key" not in cfg.model.to_dict()
    with pytest.raises(TypeError):
        pickle.dumps(cfg.model)
