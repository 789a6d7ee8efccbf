"""``hipocampo calibrate``: an embedding model's thresholds from the bundled datasets (issue 22 §2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .common import JsonOpt, console, err_console

__all__ = ["calibrate"]


def calibrate(
    model: Annotated[
        str | None,
        typer.Option(help="all-MiniLM-L6-v2 or multilingual-e5-small (default: the configured model)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Choose the model's retrieval.min_similarity and memory context / answer thresholds from
    FaQuAD, Quati and LoCoMo (../shared/datasets) by the rules that give all-MiniLM-L6-v2's
    configured values (docs/BENCHMARKS.md, "Thresholds per embedding model"). Prints them with
    what each keeps; nothing is written. Passage vectors are cached in
    the user cache directory; e5 takes a few minutes on 2 cores the first time.
    """
    from platformdirs import user_cache_dir

    from ..calibration import calibrate as run
    from ..config import load_config
    from ..embeddings import CachingEmbedder, provider_from_config

    section = dict(load_config().get("embedding", {}))
    if model:
        section |= {"provider": "local", "model": model}
    try:
        inner = provider_from_config(section)
    except ValueError as exc:
        err_console.print(f"error [22023]: {exc}")
        raise typer.Exit(code=1) from exc
    cache = Path(user_cache_dir("hipocampo")) / "calibration" / "embeddings.sqlite"
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        findings = run(CachingEmbedder(inner, cache))
    except FileNotFoundError as exc:
        err_console.print(f"error: the datasets are missing ({exc}); set HIPOCAMPO_DATASETS")
        raise typer.Exit(code=1) from exc
    if as_json:
        console.print_json(json.dumps({"model": inner.model_name, **{f.key: f.value for f in findings}}))
        return
    table = Table("key", "value", "what it keeps", title=f"calibration of {inner.model_name}")
    for f in findings:
        table.add_row(f.key, f"{f.value:.2f}", f.evidence)
    console.print(table)
    console.print(
        "Not written anywhere: the values in force stay config.toml's sections until thresholds are stored "
        "per model (issue 22 §2)."
    )
