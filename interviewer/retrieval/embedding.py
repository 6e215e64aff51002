"""Embedding functions registered with Chroma.

The offline default, :class:`ConceptHashEmbedding`, needs no model download: it hashes the
segmenter's tokens (glossary terms weighted up, plus Chinese character bigrams for fuzzy
matching) into a fixed-size, L2-normalised vector. It is lexical, not neural: its cross-language
reach comes from the glossary, which maps both languages' names of a term to one token. With an
endpoint configured, ``embedding = "openai"`` uses the endpoint's embeddings API instead
(Chroma's own ``OpenAIEmbeddingFunction``).

The class is registered with Chroma under its name, and its config names the glossary folder, so
a store reopened in a fresh process rebuilds the same function without any download.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from interviewer.content.glossary import Glossary
from interviewer.retrieval.segment import SEGMENTER_VERSION, TERM_PREFIX, Segmenter

EMBEDDING_VERSION = 1
TERM_WEIGHT = 2.0
WORD_WEIGHT = 1.0
BIGRAM_WEIGHT = 0.35


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """A stable hash (not Python's per-process salted one) to a bucket and a sign."""
    h = zlib.crc32(feature.encode("utf-8"))
    return h % dim, (1.0 if (h >> 31) & 1 == 0 else -1.0)


@register_embedding_function
class ConceptHashEmbedding(EmbeddingFunction[Documents]):
    """Offline bilingual embedding: hashed glossary terms, words and Chinese bigrams."""

    def __init__(self, glossary_dir: str | Path, dim: int = 2048, segmenter: Segmenter | None = None):
        self.glossary_dir = Path(glossary_dir)
        self.dim = dim
        self._segmenter = segmenter

    @property
    def segmenter(self) -> Segmenter:
        if self._segmenter is None:
            self._segmenter = Segmenter(Glossary.load(self.glossary_dir))
        return self._segmenter

    def features(self, text: str) -> dict[str, float]:
        tokens = self.segmenter.search_tokens(text)
        weights: defaultdict[str, float] = defaultdict(float)
        for token in tokens:
            weights[token] += TERM_WEIGHT if token.startswith(TERM_PREFIX) else WORD_WEIGHT
        for gram in Segmenter.han_bigrams(tokens):
            weights["~" + gram] += BIGRAM_WEIGHT
        return weights

    def embed_one(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for feature, weight in self.features(text).items():
            index, sign = _bucket(feature, self.dim)
            vector[index] += sign * (1.0 + math.log(weight)) if weight >= 1 else sign * weight
        norm = float(np.linalg.norm(vector))
        if norm > 0:
            vector /= norm
        return vector

    def __call__(self, input: Documents) -> Embeddings:
        return [self.embed_one(text) for text in input]

    @staticmethod
    def name() -> str:
        return "interviewer-concept-hash"

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def get_config(self) -> dict[str, Any]:
        return {
            "glossary_dir": str(self.glossary_dir),
            "dim": self.dim,
            "version": EMBEDDING_VERSION,
            "segmenter": SEGMENTER_VERSION,
            "glossary_fingerprint": self.segmenter.glossary.fingerprint(),
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ConceptHashEmbedding:
        return ConceptHashEmbedding(glossary_dir=config["glossary_dir"], dim=int(config["dim"]))

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        if "glossary_dir" not in config or "dim" not in config:
            raise ValueError("interviewer-concept-hash config needs glossary_dir and dim")

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        return
