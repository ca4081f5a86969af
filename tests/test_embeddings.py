"""Embedders: the offline MiniLM, the on-disk cache, the LiteLLM plug."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from memory_kit.embeddings import CachedEmbedder, LiteLLMEmbedder, cosine, make_embedder, normalise


class Counting:
    def __init__(self, name: str = "counting"):
        self.name = name
        self.asked: list[str] = []

    def embed(self, texts):
        self.asked += list(texts)
        return normalise([[len(t), 1.0, t.count("a")] for t in texts])


def test_minilm_offline_normalised_and_meaningful(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = make_embedder("all-MiniLM-L6-v2", cache_dir=None)
    vecs = emb.embed(["Cancel my order, please.", "I want to cancel the order I placed.", "The sky is blue today."])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = cosine(vecs, vecs)
    assert sims[0, 1] > 0.6 > sims[0, 2]


def test_cache_is_keyed_by_model_and_text_and_survives_a_torn_file(tmp_path):
    inner = Counting()
    cached = CachedEmbedder(inner, tmp_path)
    first = cached.embed(["alpha", "beta", "alpha"])
    assert inner.asked == ["alpha", "beta"]  # duplicates embedded once
    again = CachedEmbedder(inner, tmp_path).embed(["beta", "alpha"])  # a new process reads the disk
    assert inner.asked == ["alpha", "beta"] and np.allclose(again, first[[1, 0]])
    other = Counting(name="other-model")
    CachedEmbedder(other, tmp_path).embed(["alpha"])
    assert other.asked == ["alpha"]  # same text, other model: not a hit
    path = cached._path(cached.key("alpha"))
    path.write_bytes(b"torn")
    CachedEmbedder(inner, tmp_path).embed(["alpha"])
    assert inner.asked[-1] == "alpha" and np.load(path).shape == (3,)


def test_litellm_embedder_orders_batches_and_normalises(monkeypatch):
    import litellm

    seen = []

    def fake_embedding(model, input, **kwargs):
        seen.append((model, list(input), kwargs))
        data = [{"index": i, "embedding": [float(len(t)), 0.0]} for i, t in enumerate(input)]
        return SimpleNamespace(data=list(reversed(data)))  # providers need not answer in order

    monkeypatch.setattr(litellm, "embedding", fake_embedding)
    emb = make_embedder("litellm:openai/text-embedding-3-small", cache_dir=None, batch_size=2, api_base="http://x")
    assert isinstance(emb, LiteLLMEmbedder)
    vecs = emb.embed(["a", "bb", "ccc"])
    # the SDK's own retries are off (max_retries=0): the harness's retry loop retries, seen and counted
    assert [s[1] for s in seen] == [["a", "bb"], ["ccc"]] and seen[0][2] == {"max_retries": 0, "api_base": "http://x"}
    assert np.allclose(vecs, [[1, 0], [1, 0], [1, 0]])


def test_a_paid_embedders_rate_limit_is_retried_and_a_bad_key_is_not(monkeypatch):
    import litellm

    calls = []

    def limited(model, input, **kwargs):  # FAKE provider: 429 twice, then vectors
        calls.append(model)
        if len(calls) <= 2:
            raise litellm.exceptions.RateLimitError("slow down", llm_provider="openai", model=model)
        return SimpleNamespace(data=[{"index": i, "embedding": [1.0, 0.0]} for i in range(len(input))])

    monkeypatch.setattr(litellm, "embedding", limited)
    emb = LiteLLMEmbedder("openai/text-embedding-3-small", retry_backoff_s=0.0)
    assert emb.embed(["a"]).shape == (1, 2) and len(calls) == 3

    def bad_key(model, input, **kwargs):
        calls.append(model)
        raise litellm.exceptions.AuthenticationError("bad key", llm_provider="openai", model=model)

    calls.clear()
    monkeypatch.setattr(litellm, "embedding", bad_key)
    with pytest.raises(litellm.exceptions.AuthenticationError):
        emb.embed(["a"])
    assert len(calls) == 1


def test_unknown_spec_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("word2vec")
