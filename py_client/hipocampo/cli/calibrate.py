"""``hipocampo calibrate``: an embedding model's thresholds from the bundled datasets (issue 22 §2)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ..errors import PermissionDeniedError
from .common import JsonOpt, _client, _fail, console, err_console

if TYPE_CHECKING:
    from ..embeddings import EmbeddingProvider
    from ..evaluation.calibration import Finding

__all__ = ["calibrate"]


def calibrate(
    model: Annotated[
        str | None,
        typer.Option(help="all-MiniLM-L6-v2 or multilingual-e5-small (default: the configured model)."),
    ] = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Write the model's calibration into the config file ($HIPOCAMPO_CONFIG, else ./config.toml) "
            "and store it in the database at once.",
        ),
    ] = False,
    weights: Annotated[
        bool,
        typer.Option(
            "--weights",
            help="Also choose the keys that need the real searches: retrieval.dense_weight (hybrid_search over "
            "FaQuAD, Quati and SciFact), conversations.dense_weight (search_history over LoCoMo) and the answer "
            "gate's rag.sentence_weight / sentence_cosine_low / sentence_cosine_high (answer_evidence over "
            "FaQuAD's train split), in a scratch database created on the database server and dropped afterwards "
            "(the real database is not touched). ~10 min with MiniLM, ~40 min with e5 the first time.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Choose the model's retrieval.min_similarity and dedupe_threshold and its memory context,
    answer and duplicate thresholds from FaQuAD, Quati and LoCoMo (../shared/datasets) by the
    rules of hipocampo.evaluation.calibration (docs/BENCHMARKS.md, "Thresholds per embedding model" and
    "Duplicate thresholds per model") and print them with what each keeps. With --write they
    become the model's calibration (`[calibration."<model>"]` in the config file, the other keys of
    a model already calibrated kept, those of a new one carried over from all-MiniLM-L6-v2 and
    listed) and are stored in the database (hipocampo.set_model_calibration), so the model can be
    activated. Passage vectors are cached in the user cache directory; e5 takes a few minutes on
    2 cores the first time. With --weights, the keys that need the real searches are chosen too
    (the two dense weights and the answer gate's sentence similarity, in a scratch database).
    """
    from platformdirs import user_cache_dir

    from ..config import config_path, load_config
    from ..embeddings import CachingEmbedder, provider_from_config
    from ..embeddings.local import MODEL_NAME
    from ..errors import HipocampoError
    from ..evaluation.calibration import calibrate as run
    from ..evaluation.calibration import model_calibration, write_calibration

    config = load_config()
    section = dict(config.get("embedding", {}))
    if model:
        section |= {"provider": "local", "model": model}
    try:
        inner = provider_from_config(section)
    except ValueError as exc:
        err_console.print(f"error [22023]: {exc}")
        raise typer.Exit(code=1) from exc
    cache = Path(user_cache_dir("hipocampo")) / "calibration" / "embeddings.sqlite"
    cache.parent.mkdir(parents=True, exist_ok=True)
    embedder = CachingEmbedder(inner, cache)
    name = inner.model_name
    calibrations = dict(config.get("calibration", {}))
    try:
        findings = run(embedder)
        if weights:
            findings.extend(_weights(embedder, findings, calibrations))
    except FileNotFoundError as exc:
        err_console.print(f"error: the datasets are missing ({exc}); set HIPOCAMPO_DATASETS")
        raise typer.Exit(code=1) from exc
    except HipocampoError as exc:
        raise _fail(exc) from exc
    calibration, carried = model_calibration(name, findings, calibrations, MODEL_NAME)
    target = config_path() or Path.cwd() / "config.toml"
    if write:
        write_calibration(target, name, calibration, f"Written by hipocampo calibrate on {date.today().isoformat()}.")
        try:
            with _client() as client:
                client.set_model_calibration(name, calibration)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    _report(name, findings, calibration, carried, target if write else None, as_json)


def _report(
    name: str,
    findings: list[Finding],
    calibration: dict[str, dict[str, float]],
    carried: list[str],
    written: Path | None,
    as_json: bool,
) -> None:
    """What calibrate found and did, as JSON or a table."""
    from ..config import config_path
    from ..embeddings.local import MODEL_NAME

    if as_json:
        console.print_json(
            json.dumps(
                {
                    "model": name,
                    **{f.key: f.value for f in findings},
                    "calibration": calibration,
                    "carried_over": carried,
                    "written": str(written) if written else None,
                }
            )
        )
        return
    table = Table("key", "value", "what it keeps", title=f"calibration of {name}")
    for f in findings:
        table.add_row(f.key, f"{f.value:.2f}", f.evidence)
    console.print(table)
    if carried:
        console.print(f"Carried over from {MODEL_NAME} (not computed here): {', '.join(carried)}.")
    if written:
        console.print(f"Written to {written} and stored in the database: {name} can be activated.")
    else:
        target = config_path() or Path.cwd() / "config.toml"
        console.print(f"Nothing written: --write puts them in {target} and the database.")


def _weights(embedder: EmbeddingProvider, findings: list[Finding], calibrations: dict[str, Any]) -> list[Finding]:
    """retrieval.dense_weight, conversations.dense_weight and the answer gate's sentence keys by
    their rules (hipocampo.evaluation.calibration.fusion_weight / history_weight / sentence_gate), in a
    scratch database where the model is registered and active with the calibration found so far
    (hybrid_search needs one; search_history and ingestion read the active model), the dense leg
    floored at the retrieval.min_similarity just found.

    Raises:
        PermissionDeniedError (42501): the server refused to create the scratch database (the
            configured URL's role lacks CREATEDB).
    """
    from contextlib import ExitStack

    import psycopg

    from .. import db
    from ..client import Hipocampo
    from ..embeddings.local import MODEL_NAME
    from ..evaluation.calibration import fusion_weight, history_weight, model_calibration, sentence_gate

    provisional, _ = model_calibration(embedder.model_name, findings, calibrations, MODEL_NAME)
    floor = next(f.value for f in findings if f.key == "retrieval.min_similarity")
    with ExitStack() as stack:
        try:
            url = stack.enter_context(db.scratch_database("hipocampo_calibration"))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise PermissionDeniedError(
                "--weights works in a scratch database it creates and drops, and the server refused to create "
                f"it ({str(exc).strip()}): give the role CREATEDB, or run it on the embedded server "
                "(without HIPOCAMPO_DATABASE_URL) with the same model and datasets",
                "42501",
            ) from exc
        root = stack.enter_context(Hipocampo(url))
        root.rpc(
            "register_embedding_model",
            {"name": embedder.model_name, "provider": embedder.provider, "dims": embedder.dims},
        )
        root.set_model_calibration(embedder.model_name, provisional)
        root.rpc("activate_embedding_model", {"name": embedder.model_name})
        return [fusion_weight(root, embedder, floor), history_weight(root, embedder), *sentence_gate(root, embedder)]
