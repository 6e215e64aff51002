"""The persistent Chroma index of the knowledge base, built incrementally.

Each passage is one Chroma record with id ``file#anchor``; its metadata keeps the document, the
file's SHA-256 and the segmented tokens (so the lexical index can be rebuilt on open without
segmenting again). A build compares files by hash: unchanged files are skipped, changed files
are re-embedded, deleted files are removed. A change of embedding (model, glossary, dimension)
changes the collection's signature and rebuilds it from nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interviewer.content.glossary import Glossary
from interviewer.content.knowledge import KnowledgeFile, Passage, discover, load_passages
from interviewer.errors import InterviewerError, KnowledgeError, KnowledgeIndexError, StorageError, disk_fault
from interviewer.retrieval.segment import Segmenter
from interviewer.settings import Settings

ADD_BATCH = 256


@dataclass
class BuildReport:
    """What one build did, for the CLI and the benchmarks."""

    added: list[str] = field(default_factory=list)  # documents embedded for the first time
    updated: list[str] = field(default_factory=list)  # documents whose content changed
    removed: list[str] = field(default_factory=list)  # documents no longer on disk
    unchanged: int = 0
    passages: int = 0  # passages in the index after the build
    embedded: int = 0  # passages embedded by this build
    rebuilt: bool = False  # the whole collection was recreated (new store or new embedding)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.rebuilt)


CHROMA_FILE = "chroma.sqlite3"


@contextmanager
def _chroma_errors(action: str, path: Path) -> Iterator[None]:
    """Chroma's errors as one message. A disk that refuses writes (read-only, full) is said to be
    that: Chroma reports it as a database or compaction error, and a rebuild would not help."""
    try:
        yield
    except InterviewerError:
        raise
    except OSError as exc:
        raise StorageError(exc) from exc
    except Exception as exc:  # Chroma raises many unrelated types; the user needs one message
        if fault := disk_fault(path / CHROMA_FILE, str(exc)):
            raise StorageError(fault) from exc
        raise KnowledgeIndexError(
            f"cannot {action} the knowledge index at {path}: {exc.__class__.__name__}: {exc}. "
            "Run `interviewer index --rebuild` to build it again from the knowledge files."
        ) from exc


class KnowledgeIndex:
    """The Chroma store under ``<home>/index``. Nothing is opened until first use."""

    def __init__(self, settings: Settings, glossary: Glossary | None = None):
        self.settings = settings
        self._glossary = glossary
        self._segmenter: Segmenter | None = None
        self._embedding: Any = None
        self._client: Any = None
        self._collection: Any = None

    # -- the pieces, built on first use ------------------------------------------------------
    @property
    def glossary(self) -> Glossary:
        if self._glossary is None:
            self._glossary = Glossary.load(self.settings.glossary_dir)
        return self._glossary

    @property
    def segmenter(self) -> Segmenter:
        if self._segmenter is None:
            self._segmenter = Segmenter(self.glossary)
        return self._segmenter

    @property
    def embedding(self) -> Any:
        if self._embedding is None:
            self._embedding = self._make_embedding()
        return self._embedding

    def _make_embedding(self) -> Any:
        kind = self.settings.index.embedding
        if kind == "offline":
            from interviewer.retrieval.embedding import ConceptHashEmbedding

            return ConceptHashEmbedding(self.settings.glossary_dir, segmenter=self.segmenter)
        if kind == "openai":
            endpoint = self.settings.endpoint
            if endpoint.api_key is None:
                raise KnowledgeIndexError("embedding = openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI server)")
            from interviewer.provider import openai_embedding_function

            # the key goes in the request's header only, never into the store's configuration
            return openai_embedding_function(self.settings)
        raise KnowledgeIndexError(f"unknown embedding '{kind}': use offline or openai")

    def signature(self) -> str:
        """Identifies the embedding space; a different one means every vector must be redone."""
        config = {k: v for k, v in self.embedding.get_config().items() if k not in {"api_key_env_var"}}
        payload = json.dumps({"name": self.embedding.name(), "config": config}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def path(self) -> Path:
        return self.settings.index_dir

    def _client_or_open(self) -> Any:
        if self._client is None:
            import chromadb

            with _chroma_errors("open", self.path):
                self.path.mkdir(parents=True, exist_ok=True)
                self._client = chromadb.PersistentClient(
                    path=str(self.path),
                    settings=chromadb.Settings(anonymized_telemetry=False, allow_reset=True),
                )
        return self._client

    # -- building ---------------------------------------------------------------------------
    def knowledge_files(self) -> list[KnowledgeFile]:
        shipped = self.settings.knowledge_dir
        return discover([shipped, *self.settings.index.extra_dirs], shipped=shipped)

    def _passages(self, file: KnowledgeFile) -> list[Passage]:
        shipped = file.path.resolve().is_relative_to(self.settings.knowledge_dir.resolve())
        return load_passages(file, require_anchors=shipped)

    def build(self, rebuild: bool = False, progress: bool = False) -> BuildReport:
        """Bring the index up to date with the knowledge files; returns what changed."""
        started = time.perf_counter()
        report = BuildReport()
        files = self.knowledge_files()
        client = self._client_or_open()
        signature = self.signature()
        with _chroma_errors("update", self.path):
            stored = self._stored_signature(client)
            if stored is not None and (rebuild or stored != signature):
                # another embedding space (model, glossary, segmenter): every vector is redone
                client.delete_collection(self.settings.index.collection)
            collection = self._existing_collection(client) if stored == signature and not rebuild else None
            if collection is None:
                report.rebuilt = True
                collection = client.create_collection(
                    self.settings.index.collection,
                    embedding_function=self.embedding,
                    metadata={"signature": signature, "hnsw:space": "cosine"},
                )
            indexed = self._indexed_files(collection)
            on_disk = {f.document: f for f in files}
            to_embed: list[KnowledgeFile] = []
            for document, file in on_disk.items():
                if document not in indexed:
                    report.added.append(document)
                    to_embed.append(file)
                elif indexed[document] != file.sha256:
                    report.updated.append(document)
                    to_embed.append(file)
                else:
                    report.unchanged += 1
            report.removed = sorted(set(indexed) - set(on_disk))
            stale = report.removed + report.updated
            if stale:
                collection.delete(where={"document": {"$in": stale}})
            passages = [(f, p) for f in to_embed for p in self._passages(f)]
            self._check_unique(passages, collection)
            self._add(collection, passages, progress)
            report.embedded = len(passages)
            report.passages = collection.count()
        self._collection = collection
        report.seconds = time.perf_counter() - started
        return report

    def _stored_signature(self, client: Any) -> str | None:
        """The signature the collection was built with ("" when unknown), None when there is none."""
        for collection in client.list_collections():
            if collection.name == self.settings.index.collection:
                return str((collection.metadata or {}).get("signature", ""))
        return None

    def _existing_collection(self, client: Any) -> Any:
        if self._stored_signature(client) is None:
            return None
        return client.get_collection(self.settings.index.collection, embedding_function=self.embedding)

    @staticmethod
    def _indexed_files(collection: Any) -> dict[str, str]:
        result = collection.get(include=["metadatas"])
        return {m["document"]: m["file_sha"] for m in result["metadatas"] or []}

    @staticmethod
    def _check_unique(passages: list[tuple[KnowledgeFile, Passage]], collection: Any) -> None:
        seen: dict[str, str] = {}
        for file, passage in passages:
            if passage.source in seen:
                raise KnowledgeError(f"passage id {passage.source} appears twice ({seen[passage.source]}, {file.path})")
            seen[passage.source] = str(file.path)

    def _add(self, collection: Any, passages: list[tuple[KnowledgeFile, Passage]], progress: bool) -> None:
        if not passages:
            return
        from rich.progress import Progress

        with Progress(disable=not progress, transient=True) as bar:
            task = bar.add_task("Embedding knowledge passages", total=len(passages))
            for start in range(0, len(passages), ADD_BATCH):
                batch = passages[start : start + ADD_BATCH]
                texts = [f"{p.title}\n{p.text}" for _, p in batch]
                collection.add(
                    ids=[p.source for _, p in batch],
                    documents=[p.text for _, p in batch],
                    embeddings=self.embedding(texts),
                    metadatas=[
                        {
                            "document": p.document,
                            "file_sha": f.sha256,
                            "title": p.title,
                            "tokens": " ".join(self.segmenter.tokens(text)),
                        }
                        for (f, p), text in zip(batch, texts, strict=True)
                    ],
                )
                bar.advance(task, len(batch))

    # -- reading ----------------------------------------------------------------------------
    def collection(self) -> Any:
        """The collection, built first when it is missing or stale, so a fresh install just works."""
        if self._collection is None:
            client = self._client_or_open()
            with _chroma_errors("open", self.path):
                current = self._stored_signature(client) == self.signature()
                if current:
                    self._collection = self._existing_collection(client)
            if not current:
                self.build()
        return self._collection

    def ensure_current(self, progress: bool = False) -> BuildReport:
        """Build or update the index (a no-op costing one hash per file when nothing changed)."""
        return self.build(progress=progress)
