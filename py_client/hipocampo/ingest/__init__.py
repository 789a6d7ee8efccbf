"""Ingestion: loaders, PII scrub, chunking and the pipeline."""

from .chunking import Chunk, ChunkingRule, chunk_text, split_sentences
from .loaders import SUPPORTED_SUFFIXES, LoadedDocument, load_path, normalize_text
from .pii import ScrubResult, scrub
from .pipeline import DocumentInput, expand_paths, ingest_documents, ingest_paths, sha256

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Chunk",
    "ChunkingRule",
    "DocumentInput",
    "LoadedDocument",
    "ScrubResult",
    "chunk_text",
    "expand_paths",
    "ingest_documents",
    "ingest_paths",
    "load_path",
    "normalize_text",
    "scrub",
    "sha256",
    "split_sentences",
]
