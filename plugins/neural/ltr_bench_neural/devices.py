"""Where ``neural`` computes: the ``device`` parameter, its check, and what ``auto`` picks.

``device`` is ``auto`` (CUDA when ``torch.cuda.is_available()``, else the CPU), ``cpu`` or
``cuda``. Importing this module does not import torch; each function imports it only when it
must:

* :func:`check_device` (parameter validation, before any data is loaded): ``cuda`` on a torch
  that sees no GPU is refused in one line. It counts GPUs with ``torch.cuda.device_count()``,
  which asks NVML and leaves the CUDA runtime uninitialised, so a process that forks workers
  afterwards can still use CUDA in them (``torch.cuda.is_available()`` initialises the driver);
* :func:`resolve_device` (``fit``): the ``torch.device`` to train on, the same check with
  ``torch.cuda.is_available()``, which is what CUDA work needs;
* :func:`describe` (``ltr-bench rankers``, through the ``ltr_bench.runtime`` entry point):
  ``torch 2.13.0+cpu (CPU build), device auto -> cpu``. A CPU build is recognised from its
  installed version (``+cpu``) without importing torch (seconds on a loaded machine); any
  other build is imported and asked.

Initial weights do not depend on the device: every scorer draws them on the CPU from the
run's seed (``torch.Generator``) and is moved to the device afterwards.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_device", "describe", "resolve_device"]


def _no_gpu(torch: Any) -> str:
    build = "a CPU build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
    return (
        f"device='cuda' but torch {torch.__version__} ({build}) sees no CUDA GPU; "
        "use device='cpu' or 'auto'"
    )


def check_device(name: object) -> None:
    """Refuse ``device='cuda'`` when torch counts no GPU (ValueError, one line); the other
    values need no torch here (their spelling is checked by the caller)."""
    if name != "cuda":
        return
    import torch

    if torch.cuda.device_count() == 0:
        raise ValueError(_no_gpu(torch))


def resolve_device(name: str) -> Any:
    """The ``torch.device`` of ``device`` ``name``: ``auto`` -> CUDA when available."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError(_no_gpu(torch))
    return torch.device(name)


def describe() -> str:
    """The torch build and the device ``device='auto'`` resolves to, for ``ltr-bench rankers``.

    ``torch 2.13.0+cpu (CPU build), device auto -> cpu``; with a CUDA build, ``torch
    2.11.0+cu130 (CUDA 13.0), device auto -> cuda (1 GPU: NVIDIA H200)`` or ``... device auto
    -> cpu (no GPU visible)``."""
    from importlib import metadata

    installed = metadata.version("torch")
    if installed.endswith("+cpu"):
        return f"torch {installed} (CPU build), device auto -> cpu"
    import torch

    if torch.version.cuda is None:
        return f"torch {torch.__version__} (CPU build), device auto -> cpu"
    head = f"torch {torch.__version__} (CUDA {torch.version.cuda}), device auto -> "
    if not torch.cuda.is_available():
        return head + "cpu (no GPU visible)"
    n = torch.cuda.device_count()
    return head + f"cuda ({n} GPU{'s' if n > 1 else ''}: {torch.cuda.get_device_name(0)})"
