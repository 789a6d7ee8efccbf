"""Ingestion: loaders, PII scrub, chunking and the pipeline."""

from ..models import ScrubResult
from .chunking import Chunk, ChunkingRule, chunk_text, split_sentences
from .loaders import SUPPORTED_SUFFIXES, LoadedDocument, load_path, normalize_text
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
    "sha256",
    "split_sentences",
]
