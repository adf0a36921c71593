"""Time change notifications over stdio: from a file's edit, delete or rename to its
``resources/updated``, with watching on.

    .venv/bin/python scripts/measure_notifications.py --rounds 5

Starts the real server (real model, over stdio, watching) on a folder of notes (three
a round, and five more) and waits until it is idle. Each round subscribes
(``subscriptions/listen``) to three notes, then edits the first, deletes the second and
renames the third, and times, from the change on disk, when the update for each
arrives; at that moment the resource is read, and the update counts only if the read
shows the change (new text, or the file gone). Prints the times per kind, median and
max.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from micro_rag_mcp.serve.resource_uri import resource_uri  # noqa: E402
from tests.mcpkit import stdio_params, wait_complete  # noqa: E402


async def _round(client: Client, data: Path, n: int) -> dict[str, tuple[float, bool]]:
    names = {
        "edit": f"note{3 * n}.md",
        "delete": f"note{3 * n + 1}.md",
        "rename": f"note{3 * n + 2}.md",
    }
    uris = {kind: resource_uri(name) for kind, name in names.items()}
    kinds = {uri: kind for kind, uri in uris.items()}
    out: dict[str, tuple[float, bool]] = {}
    async with client.listen(resource_subscriptions=list(uris.values())) as events:
        started = time.monotonic()
        (data / names["edit"]).write_text(f"# Note\n\nround {n}: the edited text.\n")
        (data / names["delete"]).unlink()
        (data / names["rename"]).rename(data / f"moved{n}.md")
        with anyio.fail_after(60):
            async for event in events:
                if not isinstance(event, ResourceUpdated) or event.uri not in kinds:
                    continue
                at = time.monotonic() - started
                try:
                    text = str((await client.read_resource(event.uri)).contents[0].text)  # type: ignore[union-attr]
                except MCPError as e:
                    text = f"error: {e}"
                kind = kinds[event.uri]
                shows = "edited text" in text if kind == "edit" else text.startswith("error:")
                if shows:
                    out.setdefault(kind, (at, shows))
                if len(out) == 3:
                    return out
    return out


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "docs"
        data.mkdir()
        for i in range(3 * rounds + 5):
            (data / f"note{i}.md").write_text(f"# Note {i}\n\nThe first text of note {i}.\n")
        async with Client(stdio_params(data)) as client:
            await wait_complete(client, 300)
            times: dict[str, list[float]] = {"edit": [], "delete": [], "rename": []}
            for n in range(rounds):
                for kind, (at, _) in (await _round(client, data, n)).items():
                    times[kind].append(at)
    for kind, values in times.items():
        print(
            f"{kind:7} {len(values)}/{rounds} notified after the index showed it: "
            f"median {statistics.median(values):.2f} s, max {max(values):.2f} s"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    anyio.run(main, ap.parse_args().rounds)
