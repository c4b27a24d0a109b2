"""The model catalog's data and rules: every shipped entry has a source and a date, names
resolve (dated, vendor-prefixed, ``models/``), config overrides merge, local models are
free, cost arithmetic (cache reads and writes, long-prompt tiers), the refresh script,
and what the kernel does with the facts (the meter's window, images for a text-only model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ketch.messages import Usage
from ketch.testing import Harness, approve_all, call, text
from ketch_catalog.catalog import DATA, lookup
from ketch_catalog.pricing import PricedModel, PriceTier, cost_of

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_entry_says_where_it_comes_from_and_when() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert "LiteLLM" in data["about"] and "MIT" in data["about"]
    models = data["models"]
    assert len(models) > 100
    for name, entry in models.items():
        assert entry["source"] and len(entry["date"]) == 10, name
        assert all(
            entry[k] >= 0 for k in ("input", "output", "cached_input", "cache_write") if k in entry
        ), name
    for common in (
        "gpt-4o",
        "gpt-5",
        "o3",
        "claude-sonnet-4-5",
        "claude-opus-4-5",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "deepseek-chat",
    ):
        assert common in models, common


@pytest.mark.parametrize(
    ("kind", "model", "found"),
    [
        ("openai", "gpt-4o", "gpt-4o"),
        ("openai", "openai/gpt-4o", "gpt-4o"),  # OpenRouter spelling
        ("gemini", "models/gemini-2.5-flash", "gemini-2.5-flash"),
        ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
        (
            "anthropic",
            "claude-sonnet-4-5-20991231",
            "claude-sonnet-4-5",
        ),  # an unknown date: the family
    ],
)
def test_names_resolve(kind: str, model: str, found: str) -> None:
    info = lookup(kind, model, {})
    assert (
        info is not None and info.id == found and info.priced and "LiteLLM" in (info.source or "")
    )


def test_unknown_models_have_no_price_and_local_models_cost_nothing() -> None:
    assert lookup("openai", "my-finetune", {}) is None
    local = lookup("ollama", "qwen3:8b", {}, local=True)
    assert (
        local is not None
        and (local.input_price, local.output_price) == (0.0, 0.0)
        and "local" in (local.source or "")
    )
    # A local run of a model a vendor also sells is still free.
    assert lookup("ollama", "deepseek-chat", {}, local=True).input_price == 0.0  # type: ignore[union-attr]


def test_config_overrides_merge_over_the_shipped_entry_and_add_new_models() -> None:
    merged = lookup(
        "openai",
        "gpt-4o",
        {"gpt-4o": {"input_price": 5, "images": False, "context_window": 64_000}},
    )
    assert merged is not None and (
        merged.input_price,
        merged.output_price,
        merged.images,
        merged.context_window,
    ) == (5.0, 10.0, False, 64_000)
    assert (merged.source or "").startswith("config over LiteLLM")
    added = lookup(
        "openai",
        "corp-model",
        {"corp-model": {"input_price": 1, "output_price": 3, "bogus": "x", "tools": "yes"}},
    )
    assert added is not None and added.priced and added.tools is None and added.source == "config"


def test_cost_reads_writes_output_and_tiers() -> None:
    info = PricedModel(
        id="m", input_price=3.0, output_price=15.0, cached_input_price=0.3, cache_write_price=3.75
    )
    usage = Usage(
        input_tokens=10_000, output_tokens=1_000, cached_tokens=6_000, cache_write_tokens=2_000
    )
    # 2k plain x 3 + 6k read x 0.3 + 2k written x 3.75 + 1k out x 15, per million
    assert cost_of(usage, info) == pytest.approx(
        (2_000 * 3 + 6_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15) / 1e6
    )
    tiered = PricedModel(
        id="m",
        input_price=1.25,
        output_price=10.0,
        tiers=(PriceTier(above_tokens=200_000, input_price=2.5, output_price=15.0),),
    )
    assert cost_of(Usage(input_tokens=100_000, output_tokens=10), tiered) == pytest.approx(
        (100_000 * 1.25 + 100) / 1e6
    )
    assert cost_of(Usage(input_tokens=300_000, output_tokens=10), tiered) == pytest.approx(
        (300_000 * 2.5 + 150) / 1e6
    )
    assert cost_of(usage, PricedModel(id="m", input_price=1.0)) is None  # half a price is no price
    assert cost_of(usage, None) is None


def test_the_refresh_script_rebuilds_the_catalog_from_a_litellm_file(tmp_path: Path) -> None:
    source = tmp_path / "litellm.json"
    source.write_text(
        json.dumps(
            {
                "sample_spec": {"mode": "one of: chat, embedding"},
                "gpt-4o": {
                    "litellm_provider": "openai",
                    "mode": "chat",
                    "max_input_tokens": 128000,
                    "max_output_tokens": 16384,
                    "input_cost_per_token": 2.5e-06,
                    "output_cost_per_token": 1e-05,
                    "cache_read_input_token_cost": 1.25e-06,
                    "supports_function_calling": True,
                    "supports_vision": True,
                },
                "gemini/gemini-2.5-pro": {
                    "litellm_provider": "gemini",
                    "mode": "chat",
                    "max_input_tokens": 1048576,
                    "input_cost_per_token": 1.25e-06,
                    "output_cost_per_token": 1e-05,
                    "input_cost_per_token_above_200k_tokens": 2.5e-06,
                    "output_cost_per_token_above_200k_tokens": 1.5e-05,
                },
                "text-embedding-3-small": {
                    "litellm_provider": "openai",
                    "mode": "embedding",
                    "input_cost_per_token": 2e-08,
                },
                "bedrock/claude": {
                    "litellm_provider": "bedrock",
                    "mode": "chat",
                    "input_cost_per_token": 1e-06,
                    "output_cost_per_token": 1e-06,
                },
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "models.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ketch_catalog.refresh",
            "--source",
            str(source),
            "--version",
            "litellm 9.9",
            "--date",
            "2030-01-02",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    models = json.loads(out.read_text())["models"]
    assert set(models) == {"gpt-4o", "gemini-2.5-pro"}
    assert models["gpt-4o"] == {
        "provider": "openai",
        "context_window": 128000,
        "max_output_tokens": 16384,
        "tools": True,
        "images": True,
        "input": 2.5,
        "output": 10.0,
        "cached_input": 1.25,
        "source": "LiteLLM model_prices_and_context_window.json (litellm 9.9)",
        "date": "2030-01-02",
    }
    assert models["gemini-2.5-pro"]["tiers"] == [
        {"above_tokens": 200000, "input": 2.5, "output": 15.0}
    ]
    broken = subprocess.run(
        [
            sys.executable,
            "-m",
            "ketch_catalog.refresh",
            "--source",
            str(tmp_path / "missing.json"),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (
        broken.returncode == 1
        and "could not read" in broken.stderr
        and "Traceback" not in broken.stderr
    )
    assert json.loads(out.read_text())["models"] == models  # the old catalog is left whole


def _harness(tmp_path: Path, model: str, script: list, **kw) -> Harness:  # type: ignore[no-untyped-def, type-arg]
    h = Harness.create(tmp_path, script=script, bundled=["catalog", "budget", "fs"], **kw)
    h.provider.model = model  # the scripted provider stands in for a provider serving this model
    return h


def test_the_meter_uses_the_catalogue_window_before_the_provider_reports_one(
    tmp_path: Path,
) -> None:
    h = _harness(
        tmp_path, "deepseek-chat", [text("ok")]
    )  # 131,072 in the catalog; the provider says nothing
    h.run("hi")
    (usage,) = h.of_type("usage")
    assert 100_000 < usage.effective_capacity < 131_072
    other = _harness(tmp_path / "b", "no-such-model", [text("ok")])
    other.run("hi")
    assert other.of_type("usage")[0].effective_capacity < 128_000 - 10_000  # the default window


def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (2, 2), (0, 0, 255)).save(out, format="PNG")
    return out.getvalue()


def test_read_file_on_an_image_gives_the_model_an_image_part(tmp_path: Path) -> None:
    h = _harness(
        tmp_path, "gpt-4o", [call("read_file", {"path": "shot.png"}), text("a blue square")]
    )
    (h.workspace / "shot.png").write_bytes(_png())
    h.run("what is in shot.png?", approver=approve_all)
    (result,) = h.provider.requests[-1].messages[-1].tool_results
    (image,) = result.images
    assert image.media_type == "image/png" and image.data == _png() and image.name == "shot.png"
    assert "is an image (image/png" in result.output
    assert not h.of_type("notice") or not any(
        "does not take images" in n.message for n in h.of_type("notice")
    )


def test_a_text_only_model_gets_a_notice_and_the_text_alone(tmp_path: Path) -> None:
    h = _harness(
        tmp_path, "o3-mini", [call("read_file", {"path": "shot.png"}), text("cannot see it")]
    )  # catalog: no vision
    (h.workspace / "shot.png").write_bytes(_png())
    h.run("what is in shot.png?", approver=approve_all)
    (result,) = h.provider.requests[-1].messages[-1].tool_results
    assert result.images == () and "not shown: this model takes no images" in result.output
    notices = [n.message for n in h.of_type("notice") if "does not take images" in n.message]
    assert len(notices) == 1 and "o3-mini" in notices[0]
    # The transcript keeps the picture (stored like any content): only the request lacks it.
    assert h.session.transcript[-2].tool_results[0].images


def test_a_provider_plugin_says_its_kind_is_local(tmp_path: Path) -> None:
    # The catalog knows no provider by name: the Ollama plugin answers the
    # catalog's ``catalog_local_kinds`` (issue 25: capabilities, not names).
    with_ollama = Harness.create(tmp_path / "a", bundled=["catalog", "ollama"]).kernel
    info = with_ollama.hooks.first(
        "ketch_model_info", provider_kind="ollama", model="deepseek-chat", kernel=with_ollama
    )
    assert info is not None and info.input_price == 0.0 and "local" in (info.source or "")
    alone = Harness.create(tmp_path / "b", bundled=["catalog"]).kernel
    priced = alone.hooks.first(
        "ketch_model_info", provider_kind="ollama", model="deepseek-chat", kernel=alone
    )
    assert priced is not None and priced.input_price and priced.input_price > 0
