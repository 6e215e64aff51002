"""The Chroma index of the knowledge base, built incrementally: embedded, or on a shared server.

Each passage is one Chroma record with id ``file#anchor``; its metadata keeps the document, the
file's SHA-256, the file's passage count and the segmented tokens (so the lexical index can be
rebuilt on open without segmenting again, in any process). A build compares files by hash:
unchanged files are skipped, changed files are re-embedded, deleted files are removed. A change of
embedding (model, glossary, dimension) changes the collection's signature and rebuilds it from
nothing.

By default the store is embedded under ``<home>/index``. With ``index.chroma_url`` set
(``INTERVIEWER_CHROMA_URL``) it is a Chroma server that several app processes share, so a build
there is written to be safe while another process builds or reads at the same time: records are
upserted (writing the same passage twice is harmless), only records this build knows to be stale
are deleted, and nothing is ever dropped: each embedding space gets its own collection, named
``<collection>-<signature>``, so a process still running the previous glossary keeps its own.
Nothing about the index lives on local disk in that mode.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

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
    updated: list[str] = field(default_factory=list)  # documents whose content changed (or were left half-written)
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

HEARTBEAT = "/api/v2/heartbeat"
CONNECT_TIMEOUT_S = 5.0  # an address where nothing answers fails in seconds, not after the system's two minutes
REQUEST_TIMEOUT_S = 120.0  # Chroma's own client waits for ever on a server that accepted and went silent
EMBEDDED_INSTEAD = "unset INTERVIEWER_CHROMA_URL (index.chroma_url) to use the embedded index"


def redact(url: str) -> str:
    """The URL with any ``user:password@`` replaced by ``***@``, the only form that goes into a
    message. A password with an unescaped ``/`` still ends at the last ``@``, so it never shows."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in authority:
        rest = "***@" + rest[len(authority.rsplit("@", 1)[0]) + 1 :]
    elif "@" in rest:
        rest = "***@" + rest.rsplit("@", 1)[1]
    return scheme + sep + rest


@dataclass(frozen=True)
class ChromaServer:
    """A Chroma server shared by several app processes, parsed from ``index.chroma_url``.

    Chroma's client is given the URL without credentials (its errors quote the URL it was given);
    a ``user:password`` in the URL is sent as Basic authorization instead, for a server behind an
    authenticating proxy. A URL without a port means the scheme's, 80 or 443, as in a browser."""

    url: str  # as configured, credentials redacted
    base: str  # scheme://host:port[/prefix], without credentials
    port: int
    ssl: bool
    headers: dict[str, str]

    @classmethod
    def parse(cls, url: str) -> ChromaServer:
        shown = redact(url)

        def invalid(why: str) -> KnowledgeIndexError:
            return KnowledgeIndexError(
                f"INTERVIEWER_CHROMA_URL {shown!r} is not a Chroma server URL ({why}): "
                f"give one like http://127.0.0.1:8001, or {EMBEDDED_INSTEAD}"
            )

        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:  # its text quotes the port, which may be part of a password with an unescaped "/"
            raise invalid("its port is not a number from 0 to 65535; escape any / or @ in the password as %2F or %40") from None
        if parts.scheme not in {"http", "https"}:
            raise invalid("it must start with http:// or https://")
        if not parts.hostname:
            raise invalid("it names no host")
        if parts.query or parts.fragment:
            raise invalid("a query or fragment means nothing to Chroma")
        ssl = parts.scheme == "https"
        port = port or (443 if ssl else 80)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        headers: dict[str, str] = {}
        if parts.username is not None or parts.password is not None:
            credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
        base = f"{parts.scheme}://{host}:{port}{unquote(parts.path).rstrip('/')}"
        return cls(url=shown, base=base, port=port, ssl=ssl, headers=headers)

    def unreachable(self, reason: str) -> KnowledgeIndexError:
        reason = " ".join(reason.split())  # one line, whatever the transport said
        return KnowledgeIndexError(
            f"cannot reach the Chroma server at {self.url} ({reason}): start one with "
            f"`chroma run --path DIR --port {self.port}`, or {EMBEDDED_INSTEAD}"
        )

    def check(self) -> None:
        """One heartbeat with short timeouts before Chroma's client is made: that client waits for
        ever on an address where nothing answers, and words every failure as "Could not connect"."""
        import httpx

        try:
            response = httpx.get(
                self.base + HEARTBEAT, headers=self.headers, timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
            )
        except httpx.TimeoutException as exc:
            raise self.unreachable(f"no answer: {exc.__class__.__name__}") from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self.unreachable(str(exc) or exc.__class__.__name__) from exc
        if response.status_code in {401, 403}:
            raise KnowledgeIndexError(
                f"the Chroma server at {self.url} refused the request (HTTP {response.status_code}): "
                f"put the right user:password in the URL, or {EMBEDDED_INSTEAD}"
            )
        if response.status_code != 200 or "heartbeat" not in response.text:
            raise KnowledgeIndexError(
                f"{self.url} answers, but not as a Chroma server (HTTP {response.status_code} for {HEARTBEAT}): "
                f"check its host, port and path prefix, or {EMBEDDED_INSTEAD}"
            )


def _bound_requests(client: Any) -> None:
    """Give Chroma's HTTP session the timeouts it lacks (it is made with ``timeout=None``), so a
    server that stops answering mid-build ends in the one-line error instead of a hung process."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)


@contextmanager
def _chroma_errors(action: str, path: Path, server: ChromaServer | None = None) -> Iterator[None]:
    """Chroma's errors as one message. A disk that refuses writes (read-only, full) is said to be
    that: Chroma reports it as a database or compaction error, and a rebuild would not help. On a
    server, a lost connection is said to be that, with the URL, whatever layer noticed it."""
    try:
        yield
    except InterviewerError:
        raise
    except Exception as exc:  # Chroma raises many unrelated types; the user needs one message
        if server is not None:
            raise _server_error(action, server, exc) from exc
        if isinstance(exc, OSError):
            raise StorageError(exc) from exc
        if fault := disk_fault(path / CHROMA_FILE, str(exc)):
            raise StorageError(fault) from exc
        raise KnowledgeIndexError(
            f"cannot {action} the knowledge index at {path}: {exc.__class__.__name__}: {exc}. "
            "Run `interviewer index --rebuild` to build it again from the knowledge files."
        ) from exc


def _server_error(action: str, server: ChromaServer, exc: Exception) -> InterviewerError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return server.unreachable(f"no answer: {exc.__class__.__name__}")
    if isinstance(exc, httpx.TransportError | ConnectionError) or "Could not connect to a Chroma server" in str(exc):
        return server.unreachable(str(exc) or exc.__class__.__name__)
    if isinstance(exc, OSError):
        return StorageError(exc)
    detail = " ".join(str(exc).split())  # the server's reply can span lines
    return KnowledgeIndexError(
        f"the Chroma server at {server.url} could not {action} the knowledge index: {exc.__class__.__name__}: {detail}. "
        "See the server's log; `interviewer index --rebuild` embeds every passage again."
    )


class KnowledgeIndex:
    """The Chroma store under ``<home>/index``, or the collection on the Chroma server at
    ``index.chroma_url``. Nothing is opened until first use."""

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

    @property
    def shared(self) -> bool:
        """Whether the index is on a Chroma server (``index.chroma_url``) rather than embedded."""
        return bool((self.settings.index.chroma_url or "").strip())

    @cached_property
    def server(self) -> ChromaServer | None:
        """The Chroma server, None for the embedded store. Parsed on first use, not on construction,
        so a URL that is not one is reported as one line by the first command that needs the index."""
        return ChromaServer.parse(self.settings.index.chroma_url or "") if self.shared else None

    def signature(self) -> str:
        """Identifies the embedding space; a different one means every vector must be redone.

        On a server the folder this process reads the glossary from is left out: the glossary's
        fingerprint already stands for its content, and two installs in different folders must
        share one collection rather than each see the other's as foreign."""
        skip = {"api_key_env_var", "glossary_dir"} if self.shared else {"api_key_env_var"}
        config = {k: v for k, v in self.embedding.get_config().items() if k not in skip}
        payload = json.dumps({"name": self.embedding.name(), "config": config}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def collection_name(self) -> str:
        """The configured name; on a server the signature is appended, so each embedding space has
        its own collection and no build ever has to drop one that another process is reading."""
        name = self.settings.index.collection
        return f"{name}-{self.signature()}" if self.shared else name

    @property
    def path(self) -> Path:
        return self.settings.index_dir

    def errors(self, action: str) -> Any:
        """Chroma's errors during ``action`` as one line (see ``_chroma_errors``), for the index's readers."""
        return _chroma_errors(action, self.path, self.server)

    def _client_or_open(self) -> Any:
        if self._client is None:
            import chromadb

            server = self.server
            if server is None:
                with _chroma_errors("open", self.path):
                    self.path.mkdir(parents=True, exist_ok=True)
                    self._client = chromadb.PersistentClient(
                        path=str(self.path),
                        settings=chromadb.Settings(anonymized_telemetry=False, allow_reset=True),
                    )
            else:
                with _chroma_errors("open", self.path, server):
                    server.check()
                    client = chromadb.HttpClient(
                        host=server.base,
                        port=server.port,
                        ssl=server.ssl,
                        headers=dict(server.headers) or None,  # Chroma's client adds its own to the dict it is given
                        settings=chromadb.Settings(anonymized_telemetry=False),
                    )
                    _bound_requests(client)
                    self._client = client
        return self._client

    # -- building ---------------------------------------------------------------------------
    def knowledge_files(self) -> list[KnowledgeFile]:
        shipped = self.settings.knowledge_dir
        return discover([shipped, *self.settings.index.extra_dirs], shipped=shipped)

    def _passages(self, file: KnowledgeFile) -> list[Passage]:
        shipped = file.path.resolve().is_relative_to(self.settings.knowledge_dir.resolve())
        return load_passages(file, require_anchors=shipped)

    def build(self, rebuild: bool = False, progress: bool = False) -> BuildReport:
        """Bring the index up to date with the knowledge files; returns what changed.

        New passages are written (upserted) before stale ones are deleted, and only the records
        this build read and found stale are deleted, by id: a process building the same files at
        the same moment writes the same records, and nothing it wrote meanwhile is taken away."""
        started = time.perf_counter()
        report = BuildReport()
        files = self.knowledge_files()
        client = self._client_or_open()
        signature = self.signature()
        with _chroma_errors("update", self.path, self.server):
            collection, report.rebuilt = self._open_for_build(client, signature, rebuild)
            records = self._records(collection)
            stored = {} if report.rebuilt else self._stored_files(records)
            on_disk = {f.document: f for f in files}
            to_embed: list[KnowledgeFile] = []
            for document, file in on_disk.items():
                if document not in stored:
                    report.added.append(document)
                    to_embed.append(file)
                elif stored[document] != file.sha256:
                    report.updated.append(document)
                    to_embed.append(file)
                else:
                    report.unchanged += 1
            report.removed = sorted(d for d in {m["document"] for m in records.values()} - set(on_disk) if self._owns(d))
            passages = [(f, p) for f in to_embed for p in self._passages(f)]
            self._check_unique(passages, collection)
            self._add(collection, passages, progress)
            fresh = {p.source for _, p in passages}
            redone = {*report.added, *report.updated, *report.removed}
            obsolete = [i for i, m in records.items() if m["document"] in redone and i not in fresh]
            for start in range(0, len(obsolete), ADD_BATCH):
                collection.delete(ids=obsolete[start : start + ADD_BATCH])
            report.embedded = len(passages)
            report.passages = collection.count()
        self._collection = collection
        report.seconds = time.perf_counter() - started
        return report

    def _open_for_build(self, client: Any, signature: str, rebuild: bool) -> tuple[Any, bool]:
        """The collection to build into, and whether everything in it is to be embedded again."""
        name = self.collection_name()
        metadata = {"signature": signature, "hnsw:space": "cosine"}
        if not self.shared:
            stored = self._stored_signature(client)
            if stored is not None and (rebuild or stored != signature):
                # another embedding space (model, glossary, segmenter): every vector is redone
                client.delete_collection(name)
            collection = self._existing_collection(client) if stored == signature and not rebuild else None
            if collection is None:
                return client.create_collection(name, embedding_function=self.embedding, metadata=metadata), True
            return collection, False
        collection = self._server_collection(client)
        if collection is None:
            # two processes starting together both get here: the server makes one collection and
            # both fill it with the same records
            return client.get_or_create_collection(name, embedding_function=self.embedding, metadata=metadata), True
        # --rebuild on a server re-embeds in place: other processes keep reading this collection
        return collection, rebuild

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

    def _server_collection(self, client: Any) -> Any:
        """This embedding space's collection on the server, None when no process has made it yet."""
        from chromadb.errors import NotFoundError

        try:
            return client.get_collection(self.collection_name(), embedding_function=self.embedding)
        except NotFoundError:
            return None

    def _current_collection(self, client: Any) -> Any:
        if self.shared:
            return self._server_collection(client)
        return self._existing_collection(client) if self._stored_signature(client) == self.signature() else None

    @staticmethod
    def _records(collection: Any) -> dict[str, dict[str, Any]]:
        result = collection.get(include=["metadatas"])
        return dict(zip(result["ids"], result["metadatas"] or [], strict=True))

    @staticmethod
    def _stored_files(records: dict[str, dict[str, Any]]) -> dict[str, str | None]:
        """Each document's file hash, or None when its records are not one whole file: fewer than
        the passage count they carry (a build stopped half-way, or another process is writing it
        now), or of two versions. Such a document is embedded again; records from before passage
        counts were kept have none and count as whole."""
        hashes: dict[str, set[str]] = {}
        counts: Counter[str] = Counter()
        parts: dict[str, int] = {}
        for meta in records.values():
            document = meta["document"]
            hashes.setdefault(document, set()).add(meta["file_sha"])
            counts[document] += 1
            if "parts" in meta:
                parts[document] = int(meta["parts"])
        return {
            document: next(iter(shas)) if len(shas) == 1 and counts[document] >= parts.get(document, 0) else None
            for document, shas in hashes.items()
        }

    def _owns(self, document: str) -> bool:
        """Whether a document missing from disk is this process's to remove. On a server another
        process may index notes folders this one does not; their documents are left alone. The
        embedded store has one owner, which removes whatever it no longer has."""
        if not self.shared:
            return True
        folder, nested, _ = document.partition("/")
        if not nested:
            return True
        return folder in {d.name for d in self.settings.index.extra_dirs} or (self.settings.knowledge_dir / folder).is_dir()

    @staticmethod
    def _check_unique(passages: list[tuple[KnowledgeFile, Passage]], collection: Any) -> None:
        seen: dict[str, str] = {}
        for file, passage in passages:
            if passage.source in seen:
                raise KnowledgeError(f"passage id {passage.source} appears twice ({seen[passage.source]}, {file.path})")
            seen[passage.source] = str(file.path)

    def _add(self, collection: Any, passages: list[tuple[KnowledgeFile, Passage]], progress: bool) -> None:
        """Upsert, not add: Chroma's add keeps a record whose id exists, so a passage another
        process wrote first (or a half-finished build left) would otherwise never be corrected."""
        if not passages:
            return
        from rich.progress import Progress

        parts = Counter(f.document for f, _ in passages)
        with Progress(disable=not progress, transient=True) as bar:
            task = bar.add_task("Embedding knowledge passages", total=len(passages))
            for start in range(0, len(passages), ADD_BATCH):
                batch = passages[start : start + ADD_BATCH]
                texts = [f"{p.title}\n{p.text}" for _, p in batch]
                collection.upsert(
                    ids=[p.source for _, p in batch],
                    documents=[p.text for _, p in batch],
                    embeddings=self.embedding(texts),
                    metadatas=[
                        {
                            "document": p.document,
                            "file_sha": f.sha256,
                            "parts": parts[f.document],
                            "title": p.title,
                            "tokens": " ".join(self.segmenter.search_tokens(text)),
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
            with _chroma_errors("open", self.path, self.server):
                found = self._current_collection(client)
            if found is None:
                self.build()
            else:
                self._collection = found
        return self._collection

    def ensure_current(self, progress: bool = False) -> BuildReport:
        """Build or update the index (a no-op costing one hash per file when nothing changed)."""
        return self.build(progress=progress)
