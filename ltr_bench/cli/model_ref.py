"""What ``--model`` names (``predict``, ``export``): a kept model's folder or an MLflow model URI,
resolved to a loaded model."""

from __future__ import annotations

from pathlib import Path

from ltr_bench.errors import LtrBenchError, UsageError

__all__ = ["ModelNotFound", "is_model_uri", "load_model_ref"]


def is_model_uri(text: str) -> bool:
    """Whether ``--model`` text is an MLflow model URI (``runs:/...``, ``models:/...``) rather
    than a path (an existing path always wins)."""
    return "://" not in text and ":/" in text and not Path(text).exists()


def load_model_ref(model_ref: str, tracking_uri, tmp: str, console):
    """The :class:`~ltr_bench.models.LoadedModel` that ``--model`` names: a kept model's
    folder, or an MLflow model URI downloaded into ``tmp`` (a temporary folder the caller
    removes) from the store of ``tracking_uri``. Raises :class:`ModelNotFound` (exit 1) for a
    URI that names no ltr-bench model, :class:`~ltr_bench.errors.UsageError` (exit 2) for a
    path that does not exist, :class:`~ltr_bench.models.ModelLoadError` (exit 1) for a folder
    that cannot be loaded."""
    from ltr_bench.models import load_model

    folder = Path(model_ref).expanduser()
    if is_model_uri(model_ref):
        from ltr_bench.tracking.store import resolve_tracking_uri

        uri = resolve_tracking_uri(tracking_uri)
        console.status(f"fetching {model_ref} from MLflow {uri} ...", force=True)
        from ltr_bench.tracking.models import download_model

        try:
            folder = download_model(model_ref, uri, tmp)
        except LookupError as exc:
            raise ModelNotFound(str(exc)) from None
    elif not folder.exists():
        raise UsageError(
            f"--model {model_ref}: no such folder (give a kept model's folder or an MLflow "
            "model URI such as runs:/<run id>/model)"
        )
    return load_model(folder)


class ModelNotFound(LtrBenchError):
    """An MLflow model URI that does not resolve to an ltr-bench model (exit code 1)."""
