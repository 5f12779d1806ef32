import pytest


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch, tmp_path_factory):
    """No test reaches the network, and none sees the developer's real HF cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty_hf_cache")))
