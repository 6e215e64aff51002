"""A mock-interview coach for AI-Infra engineers."""

__version__ = "0.1.0"
