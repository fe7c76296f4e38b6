"""The server's limits and public mode, in one place: environment variables over Streamlit secrets.

Every setting has a default for a user on their own machine. A server others reach sets
`TXVIZ_PUBLIC=1` (or `public = true` under `[txviz]` in `.streamlit/secrets.toml`); the other
settings take the same names, e.g. `TXVIZ_ALLOWED_MODELS="bert-base-uncased,gpt2"` or
`allowed_models = ["gpt2"]` in secrets. The environment wins where both are set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from txviz.core.errors import UserError

PREFIX = "TXVIZ_"


@dataclass(frozen=True)
class ServerConfig:
    """Limits for every session of one server."""

    public: bool = False  # only shipped, project and allow-listed models; no paths or hub ids typed
    allowed_models: tuple[str, ...] = ()  # extra model names or hub ids offered in public mode
    max_new_tokens: int = 512  # per generation run (every step keeps attention rows)
    max_text_chars: int = 100_000  # per text box or uploaded text
    max_batch: int = 8  # generations decoded together per model; later ones queue
    max_jobs: int = 4  # heavy model passes (every ui.cached computation) at once; later ones wait
    max_upload_mb: int = 20  # also Streamlit's server.maxUploadSize, the hard ceiling
    max_image_pixels: int = 40_000_000
    trace_memory_mb: float = 1024  # one text trace's arrays (every layer and head's [T, T] weights...)

    @classmethod
    def public_defaults(cls) -> dict:
        """Tighter limits a public server starts from (each can still be set)."""
        return {"max_upload_mb": 5, "max_image_pixels": 4_000_000, "max_new_tokens": 256}


def _parse(kind, value):
    if isinstance(value, str):
        value = value.strip()
        if kind is bool:
            return value.lower() in {"1", "true", "yes", "on"}
        if kind is tuple:
            return tuple(v.strip() for v in value.split(",") if v.strip())
        return kind(value.replace("_", ""))
    if kind is tuple:
        return tuple(str(v) for v in value)
    return kind(value)


def load_config(environ: Mapping[str, str], secrets: Mapping | None = None) -> ServerConfig:
    """The config from secrets' [txviz] table and TXVIZ_* variables; a clear error for a bad value."""
    given = {}
    for f in fields(ServerConfig):
        kind = {"bool": bool, "int": int, "float": float}.get(str(f.type), tuple)
        for source, key in ((secrets or {}, f.name), (environ, PREFIX + f.name.upper())):
            if key in source:
                try:
                    given[f.name] = _parse(kind, source[key])
                except (TypeError, ValueError) as error:
                    raise UserError(
                        f"txviz setting {key}={source[key]!r} is not a valid {kind.__name__}."
                    ) from error
    if given.get("public"):
        given = {**ServerConfig.public_defaults(), **given}
    if given.get("max_jobs", 1) < 1:
        raise UserError(f"txviz setting max_jobs={given['max_jobs']} must be at least 1.")
    if given.get("trace_memory_mb", 1) <= 0:
        raise UserError(f"txviz setting trace_memory_mb={given['trace_memory_mb']} must be above 0.")
    return ServerConfig(**given)


_installed: ServerConfig | None = None  # the server's config once the app has read it (secrets too)


def install(config: ServerConfig | None) -> None:
    """Make ``config`` the one ``active()`` returns: the app installs what it read, secrets included."""
    global _installed
    _installed = config


def active() -> ServerConfig:
    """The config in force: the app's, or outside the app (the CLI, scripts) the TXVIZ_* variables."""
    return _installed if _installed is not None else load_config(os.environ)
