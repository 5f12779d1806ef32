"""Model config lookup: local path, HF cache, built-in catalog, online (mocked)."""

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.estimate import catalog_ids, models, read_safetensors_params, resolve_model

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "tie_word_embeddings": False,
}


def tiny_total() -> int:
    h, i, L, kv, V = 64, 128, 2, 32, 100
    return V * h * 2 + L * (h * h * 2 + 2 * h * kv + 3 * h * i + 2 * h) + h


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    header, offset = {}, 0
    size = {"BF16": 2, "F32": 4}
    for name, (dtype, shape) in tensors.items():
        n = size[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def tiny_tensors() -> dict[str, tuple[str, list[int]]]:
    t = {
        "model.embed_tokens.weight": ("BF16", [100, 64]),
        "lm_head.weight": ("BF16", [100, 64]),
        "model.norm.weight": ("BF16", [64]),
    }
    for li in range(2):
        p = f"model.layers.{li}."
        t |= {
            p + "self_attn.q_proj.weight": ("BF16", [64, 64]),
            p + "self_attn.k_proj.weight": ("BF16", [32, 64]),
            p + "self_attn.v_proj.weight": ("BF16", [32, 64]),
            p + "self_attn.o_proj.weight": ("BF16", [64, 64]),
            p + "mlp.gate_proj.weight": ("BF16", [128, 64]),
            p + "mlp.up_proj.weight": ("BF16", [128, 64]),
            p + "mlp.down_proj.weight": ("BF16", [64, 128]),
            p + "input_layernorm.weight": ("BF16", [64]),
            p + "post_attention_layernorm.weight": ("BF16", [64]),
        }
    return t


def test_catalog_has_section8_models_and_aliases():
    ids = catalog_ids()
    assert len(ids) >= 32
    for name, want in [
        ("gpt2", "openai-community/gpt2"),
        ("bert-large-uncased", "google-bert/bert-large-uncased"),
        ("Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B"),
        ("meta-llama/meta-llama-3-8b", "meta-llama/Meta-Llama-3-8B"),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
        ("qwen2.5-7b", "Qwen/Qwen2.5-7B"),
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"),
        ("google/gemma-2-9b-it", "google/gemma-2-9b"),
        ("phi-2", "microsoft/phi-2"),
    ]:
        info = resolve_model(name)
        assert info is not None and info.hub_id == want and info.source == "catalog", name
    assert resolve_model("nobody/does-not-exist") is None
    assert resolve_model("someone/gpt2") is None  # an org/name must match an id or alias, not just the name
    assert resolve_model("./checkpoints/gpt2") is None  # a missing local path is not a catalog lookup
    assert resolve_model("") is None


def test_local_dir_and_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    for arg in (str(tmp_path), str(tmp_path / "config.json")):
        info = resolve_model(arg)
        assert info.source == "path" and info.weights_params is None
        assert info.count().total == tiny_total()


def test_safetensors_single_file_gives_exact_count(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    write_safetensors(tmp_path / "model.safetensors", tiny_tensors())
    info = resolve_model(str(tmp_path))
    assert info.weights_params == tiny_total()
    pc = info.count()
    assert pc.source == "safetensors" and pc.total == tiny_total()


def test_safetensors_sharded_index(tmp_path):
    tensors = tiny_tensors()
    names = sorted(tensors)
    half = len(names) // 2
    shards = {
        "model-00001-of-00002.safetensors": names[:half],
        "model-00002-of-00002.safetensors": names[half:],
    }
    weight_map = {}
    for fname, keys in shards.items():
        write_safetensors(tmp_path / fname, {k: tensors[k] for k in keys})
        weight_map |= {k: fname for k in keys}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    params, nbytes, by_dtype = read_safetensors_params(tmp_path)
    assert params == tiny_total() and nbytes == 2 * params and by_dtype == {"BF16": params}
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    assert read_safetensors_params(tmp_path) is None  # incomplete shards: no exact count


def test_safetensors_mismatch_prefers_weights(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    t = tiny_tensors()
    t["extra.weight"] = ("F32", [10])
    write_safetensors(tmp_path / "model.safetensors", t)
    pc = resolve_model(str(tmp_path)).count()
    assert pc.total == tiny_total() + 10 and any("safetensors" in n for n in pc.notes)


def make_hf_cache(cache: Path, repo: str, config: dict) -> Path:
    base = cache / f"models--{repo.replace('/', '--')}"
    rev = "0123456789abcdef0123456789abcdef01234567"
    snap = base / "snapshots" / rev
    snap.mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(rev)
    (snap / "config.json").write_text(json.dumps(config))
    return snap


def test_hf_cache_wins_over_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    make_hf_cache(tmp_path, "acme/tiny", TINY)
    info = resolve_model("acme/tiny")
    assert info.source == "hf-cache" and info.hub_id == "acme/tiny" and info.count().total == tiny_total()
    # a cached copy of a catalog model is preferred to the built-in config
    cfg = dict(resolve_model("gpt2").config, n_layer=2)
    make_hf_cache(tmp_path, "openai-community/gpt2", cfg)
    got = resolve_model("gpt2")
    assert got.source == "hf-cache" and got.config["n_layer"] == 2


def test_online_uses_hub_download_only_when_asked(tmp_path, monkeypatch):
    calls = []
    (tmp_path / "config.json").write_text(json.dumps(TINY))

    def fake_hub(repo):
        calls.append(repo)
        return tmp_path / "config.json"

    monkeypatch.setattr(models, "_from_hub", fake_hub)
    assert resolve_model("acme/not-cached") is None and calls == []
    info = resolve_model("acme/not-cached", online=True)
    assert calls == ["acme/not-cached"] and info.source == "hub" and info.hub_id == "acme/not-cached"


def test_default_path_imports_nothing_heavy(tmp_path):
    code = (
        "import sys\n"
        "from advisor.estimate import resolve_model, TrainingSetup, estimate_memory, estimate_time\n"
        "pc = resolve_model('meta-llama/Meta-Llama-3-8B').count()\n"
        "s = TrainingSetup(model=pc, micro_batch=1, seq_len=1024)\n"
        "estimate_memory(s); estimate_time(s, 989, 365, 'h100', 8, total_tokens=1e9)\n"
        "resolve_model('nobody/uncached-model')\n"
        "bad = [m for m in ('torch', 'transformers', 'huggingface_hub') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]"])
def test_unreadable_local_config(tmp_path, bad):
    (tmp_path / "config.json").write_text(bad)
    assert resolve_model(str(tmp_path)) is None
