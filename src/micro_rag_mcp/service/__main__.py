"""``python -m micro_rag_mcp.service``: the service process, as a launch starts it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.core.logfmt import log_to_stderr
from micro_rag_mcp.core.settings import Settings


def launch_settings(argv: Sequence[str], given: bool) -> Settings:
    """A launch's settings from its command line, its index folder made ready; ConfigError
    with the sentence the launch prints, as a process of its own would."""
    from micro_rag_mcp.serve.main import build_parser, settings_from_args
    from micro_rag_mcp.store import prepare

    try:
        args = build_parser().parse_args(list(argv))
    except SystemExit as e:  # the launch checked the flags: this is not expected
        raise ConfigError(f"the service cannot read the command line {list(argv)!r}") from e
    settings = settings_from_args(args)
    prepare(settings, None, given=given)
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="micro_rag_mcp.service")
    p.add_argument("--root", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--grace", type=float, required=True)
    args = p.parse_args(argv)
    log_to_stderr("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s", 20)

    import anyio

    from micro_rag_mcp.model.handle import load_model
    from micro_rag_mcp.service.daemon import Service
    from micro_rag_mcp.service.indexes import Indexes, SharedModels
    from micro_rag_mcp.service.runtime import ServiceDir
    from micro_rag_mcp.store import open_store

    where = ServiceDir.open(Path(args.root), args.key)
    models = SharedModels(lambda s, encoder: load_model(s, encoder))
    indexes = Indexes(lambda s, load: open_store(s, load), models, linger_s=args.grace)
    service = Service(where, indexes, launch_settings, args.grace)
    anyio.run(service.run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
