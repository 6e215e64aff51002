"""Hybrid retrieval: Chroma's dense ranking fused with BM25 over segmented tokens.

Local Chroma has no server-side BM25 or fusion, so the lexical side runs here with bm25s over
the tokens the index stored with each passage, and the two rankings are combined by weighted
reciprocal-rank fusion (RRF): ``score = Σ w / (rrf_k + rank)``. RRF needs no score calibration
between a cosine similarity and a BM25 score, which live on unrelated scales.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from interviewer.retrieval.index import KnowledgeIndex
from interviewer.settings import RetrievalSettings


@dataclass(frozen=True)
class SearchResult:
    source: str  # "file.md#anchor"
    title: str
    text: str
    score: float  # the fused score: higher is better; comparable within one query only
    dense_rank: int | None  # 1-based rank in each channel, None when the channel missed it
    lexical_rank: int | None
    dense_score: float | None  # cosine similarity
    lexical_score: float | None  # BM25

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Retriever:
    """Searches the knowledge index. The lexical index is built from the store on first use."""

    def __init__(self, index: KnowledgeIndex, settings: RetrievalSettings | None = None):
        self.index = index
        self.settings = settings or index.settings.retrieval
        self._bm25: Any = None
        self._records: list[dict[str, Any]] = []

    def _lexical(self) -> Any:
        if self._bm25 is None:
            import bm25s

            with self.index.errors("search"):  # a Chroma server gone since the index was opened: one line
                data = self.index.collection().get(include=["documents", "metadatas"])
            self._records = [
                {"id": i, "text": d, "title": m["title"], "tokens": m["tokens"].split()}
                for i, d, m in zip(data["ids"], data["documents"], data["metadatas"], strict=True)
            ]
            bm25 = bm25s.BM25()
            if self._records:
                bm25.index([r["tokens"] or ["\0"] for r in self._records], show_progress=False)
            self._bm25 = bm25
        return self._bm25

    def reload(self) -> None:
        """Forget the lexical index (after the store was rebuilt)."""
        self._bm25 = None

    def search(self, query: str, k: int | None = None) -> list[SearchResult]:
        k = k or self.settings.k
        tokens = self.index.segmenter.search_tokens(query)
        if not tokens:
            return []
        bm25 = self._lexical()
        if not self._records:
            return []
        n = min(self.settings.candidates, len(self._records))

        scores = np.asarray(bm25.get_scores(tokens))
        order = np.argsort(-scores, kind="stable")[:n]
        lexical = [(self._records[i]["id"], float(scores[i])) for i in order if scores[i] > 0]

        embedding = self.index.embedding([query])[0]
        with self.index.errors("search"):
            found = self.index.collection().query(query_embeddings=[embedding], n_results=n, include=["distances"])
        dense = [
            (record_id, 1.0 - float(distance))
            for record_id, distance in zip(found["ids"][0], found["distances"][0], strict=True)
            if distance < 1.0 - 1e-6  # similarity 0: nothing in common with the query
        ]

        fused: dict[str, float] = {}
        for weight, ranking in ((self.settings.dense_weight, dense), (self.settings.lexical_weight, lexical)):
            for rank, (record_id, _) in enumerate(ranking, start=1):
                fused[record_id] = fused.get(record_id, 0.0) + weight / (self.settings.rrf_k + rank)
        dense_at = {rid: (rank, s) for rank, (rid, s) in enumerate(dense, start=1)}
        lexical_at = {rid: (rank, s) for rank, (rid, s) in enumerate(lexical, start=1)}
        by_id = {r["id"]: r for r in self._records}
        best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [
            SearchResult(
                source=record_id,
                title=by_id[record_id]["title"],
                text=by_id[record_id]["text"],
                score=round(score, 6),
                dense_rank=dense_at.get(record_id, (None, None))[0],
                lexical_rank=lexical_at.get(record_id, (None, None))[0],
                dense_score=dense_at.get(record_id, (None, None))[1],
                lexical_score=lexical_at.get(record_id, (None, None))[1],
            )
            for record_id, score in best
            if record_id in by_id
        ]
