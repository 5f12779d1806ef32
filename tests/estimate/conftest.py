from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch, tmp_path_factory):
    """No test reaches the network, and none sees the developer's real HF cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty_hf_cache")))


@pytest.fixture(scope="module")
def on_meta() -> Any:
    """Build a causal LM of a model type on the meta device from its config: (its config dict, its
    parameter count), the reference the parameter counter is held to."""
    from advisor.estimate import _meta

    if not _meta.available():
        pytest.skip("transformers/torch not installed")
    import torch
    import transformers

    transformers.logging.set_verbosity_error()

    def build(model_type: str, **kwargs: Any) -> tuple[dict[str, Any], int]:
        conf = transformers.AutoConfig.for_model(model_type, **kwargs)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(conf)
        return conf.to_dict(), sum(p.numel() for p in model.parameters())

    return build
