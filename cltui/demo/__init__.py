"""The bundled demo capture: a real Intercept Layer dump (images, samplers, SVM) made on PoCL."""

from __future__ import annotations

from pathlib import Path

DEMO_NAME = "images_svm_pocl"


def demo_path() -> Path:
    """Path of the bundled capture (read-only: cltui never writes inside a capture)."""
    return Path(__file__).resolve().parent / DEMO_NAME
