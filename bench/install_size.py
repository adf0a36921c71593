"""What a fresh install of micro-rag-mcp holds, by the requirement that brings each part.

    python3 -m venv <venv> && <venv>/bin/pip install .
    .venv/bin/python -m bench.install_size --venv <venv>

Every installed distribution's files (its ``RECORD``, sizes on disk) are counted under
the direct requirement of micro-rag-mcp that pulls it in (a direct one under itself);
one that two of them pull in is counted under the first in alphabetical order; one an
extra brings (``pyjwt[crypto]``: cryptography) in a row of its own. pip and
setuptools come with every venv and are counted apart. The total is ``du`` of
site-packages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

_LIST = r"""
import importlib.metadata as md, json, os, re
def key(name): return re.sub(r"[-_.]+", "-", name).lower()
out = {}
for dist in md.distributions():
    size = 0
    for f in dist.files or []:
        path = dist.locate_file(f)
        if os.path.isfile(path):
            size += os.path.getsize(path)
    needs = [key(re.split(r"[ ;<>=!~\[(]", r)[0]) for r in dist.requires or []
             if "extra ==" not in r]
    out[key(dist.metadata["Name"])] = {"size": size, "requires": needs,
                                       "version": dist.version}
print(json.dumps(out))
"""
_VENV_OWN = ("pip", "setuptools")


def installed(venv: Path) -> dict[str, dict[str, object]]:
    """Each distribution in ``venv``: its size in bytes, requirements and version."""
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _LIST], capture_output=True, text=True, check=True
    )
    data: dict[str, dict[str, object]] = json.loads(done.stdout)
    return data


def attribute(dists: dict[str, dict[str, object]], root: str) -> dict[str, list[str]]:
    """Each direct requirement of ``root`` with the distributions counted under it."""
    direct = [name for name in dists[root]["requires"] if name in dists]  # type: ignore[attr-defined]
    owner = {name: name for name in direct}  # a direct requirement counts as itself
    groups: dict[str, list[str]] = {name: [name] for name in direct}
    for top in direct:
        stack = list(dists[top]["requires"])  # type: ignore[call-overload]
        while stack:
            name = stack.pop()
            if name in owner or name not in dists or name == root:
                continue
            owner[name] = top
            groups[top].append(name)
            stack.extend(dists[name]["requires"])  # type: ignore[arg-type]
    return groups


def du_mb(path: Path) -> int:
    done = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--root", default="micro-rag-mcp")
    args = parser.parse_args(argv)
    dists = installed(args.venv)
    groups = attribute(dists, args.root)
    mb = {name: int(dists[name]["size"]) / 1e6 for name in dists}  # type: ignore[call-overload]
    rows = sorted(groups.items(), key=lambda item: -sum(mb[n] for n in item[1]))
    print("| requirement | MB with what it alone brings | what it brings |")
    print("| --- | ---: | --- |")
    for top, names in rows:
        rest = sorted((n for n in names if n != top), key=lambda n: -mb[n])
        extra = ", ".join(f"{n} {mb[n]:.0f}" for n in rest)
        print(f"| {top} {dists[top]['version']} | {sum(mb[n] for n in names):.1f} | {extra} |")
    owned = {n for names in groups.values() for n in names} | {args.root, *_VENV_OWN}
    other = sorted((n for n in dists if n not in owned), key=lambda n: -mb[n])
    listed = ", ".join(f"{n} {mb[n]:.0f}" for n in other)
    print(f"| through a requirement's extra | {sum(mb[n] for n in other):.1f} | {listed} |")
    own = sum(mb.get(name, 0.0) for name in _VENV_OWN)
    counted = sum(mb[n] for n in dists if n not in _VENV_OWN)
    print(f"| {args.root} itself | {mb[args.root]:.1f} | |")
    print(f"\npackages {counted:.0f} MB, pip and setuptools {own:.0f} MB")
    site = next((args.venv / "lib").glob("python*/site-packages"))
    print(f"du -sm {site}: {du_mb(site)} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
