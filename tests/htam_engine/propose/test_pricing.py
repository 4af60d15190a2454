"""Cost from one price table that the user can extend."""

from __future__ import annotations

import pytest

from htam_engine.propose.config import load_config
from htam_engine.propose.pricing import Price, PriceTable


def test_lookup_exact_prefix_and_provider_names():
    table = PriceTable()
    assert table.lookup("gpt-4o") == Price(2.5, 10.0)
    assert table.lookup("gpt-4o-2024-08-06") == Price(2.5, 10.0)
    assert table.lookup("gpt-4o-mini-2024-07-18") == Price(0.15, 0.6)  # longest prefix wins
    assert table.lookup("openai/gpt-4o-mini") == Price(0.15, 0.6)
    assert table.lookup("qwen2.5-coder-32b") is None
    assert table.cost("qwen2.5-coder-32b", 10_000, 10_000) == 0.0


def test_cost_is_per_million_tokens():
    assert PriceTable().cost("gpt-4o", 1_000_000, 500_000) == pytest.approx(2.5 + 5.0)


def test_config_prices_extend_and_override_the_table(tmp_path):
    (tmp_path / "htam.toml").write_text('[prices."my-local"]\ninput = 0.5\noutput = 1.5\n[prices."gpt-4o"]\ninput = 1.0\noutput = 4.0\n')
    table = load_config(env={}, cwd=tmp_path, user_file=tmp_path / "none.toml").model.price_table()
    assert table.cost("my-local", 2_000_000, 1_000_000) == pytest.approx(2.5)
    assert table.lookup("gpt-4o") == Price(1.0, 4.0)
