"""A folder of look-alike incident notes, a few of which hold an identifier found nowhere else.

Every note follows one template with one vocabulary: the systems, people, error codes and
tickets come from small shared pools, so any two notes look alike to the encoder and to
BM25. ``identifiers`` of them (spread over the four subfolders) also name one token that
no other note holds: an error code, a ticket, a function or a host. A search for that
token should rank its note first, however far embedding has got.

Each note is under 1,000 characters, so one chunk at the default chunk size. The folder
is a function of ``count``, ``identifiers`` and ``seed`` alone.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SUBFOLDERS = ("payments", "gateway", "exports", "search")
SYSTEMS = {
    "payments": ("the payment service", "the billing sync", "the refund worker"),
    "gateway": ("the login gateway", "the rate limiter", "the session store"),
    "exports": ("the nightly export job", "the report builder", "the archive uploader"),
    "search": ("the search indexer", "the query router", "the suggestion cache"),
}
PEOPLE = ("Kowalczyk", "Okonkwo", "Halvorsen", "Nakamura", "Delacroix", "Lindqvist", "Pemberton")
CAUSES = (
    "a configuration change that was not reviewed",
    "an expired certificate on an internal endpoint",
    "a retry loop that amplified a short network blip",
    "a schema migration that locked a busy table",
    "a full disk on one of the worker nodes",
)
SHARED_ERRORS = tuple(f"ERR-{n}" for n in range(1100, 1130))
SHARED_TICKETS = tuple(f"INC00{n}" for n in range(41000, 41030))
KINDS = ("error", "ticket", "function", "host")
SENTENCES = {
    "error": "What does error {} mean and how was it fixed?",
    "ticket": "Find the notes for ticket {}",
    "function": "Why did {} fail?",
    "host": "Which incident involved the host {}?",
}


@dataclass(frozen=True, slots=True)
class Note:
    path: str  # relative, "/" separators
    text: str
    identifier: str | None  # the token no other note holds, if any
    kind: str | None  # its kind, one of KINDS


def _identifier(kind: str, n: int, rnd: random.Random) -> str:
    """A token of ``kind`` made unique by ``n`` (outside every shared pool)."""
    if kind == "error":
        return f"ERR-{7000 + n}"
    if kind == "ticket":
        return f"INC{9100000 + n * 37}"
    if kind == "function":
        verb = rnd.choice(("reconcile", "flush", "rehydrate", "shard"))
        return f"{verb}_batch_v{n}{rnd.choice('kqxz')}"
    return f"db-{rnd.choice(('eu', 'us', 'ap'))}-{n:03d}{rnd.choice('fkmw')}"


def _text(system: str, rnd: random.Random, identifier: str | None, kind: str | None) -> str:
    person, cause = rnd.choice(PEOPLE), rnd.choice(CAUSES)
    error, ticket = rnd.choice(SHARED_ERRORS), rnd.choice(SHARED_TICKETS)
    extra = ""
    if kind == "error":
        error = identifier or error
    elif kind == "ticket":
        ticket = identifier or ticket
    elif kind == "function":
        extra = f" The failing call was {identifier}, which returned an empty result."
    elif kind == "host":
        extra = f" The first alert came from the host {identifier}."
    return (
        f"Incident review: {system}\n\n"
        f"During the weekly review {person} walked through an outage of {system}. The "
        f"service logged error {error} for about forty minutes after a deploy, and ticket "
        f"{ticket} was opened by the on-call engineer.{extra} The root cause was {cause}. "
        "A fix was rolled out the same day and monitoring was extended. Follow-up actions: "
        "add a test for the failing path, tune the alert thresholds, and document the "
        f"recovery steps for {system} in the runbook.\n"
    )


def make_notes(count: int, identifiers: int = 100, seed: int = 19) -> list[Note]:
    """``count`` notes spread evenly over ``SUBFOLDERS``; ``identifiers`` of them (evenly
    spaced, so each subfolder holds its share) hold one unique token each."""
    rnd = random.Random(seed)
    identifiers = min(identifiers, count)
    step = count / identifiers if identifiers else 0.0
    # The k-th identifier goes to subfolder k % 4 (notes go round the subfolders in turn).
    special = {min(count - 1, int(k * step) // 4 * 4 + k % 4) for k in range(identifiers)}
    notes: list[Note] = []
    n_special = 0
    for i in range(count):
        folder = SUBFOLDERS[i % len(SUBFOLDERS)]
        system = rnd.choice(SYSTEMS[folder])
        identifier = kind = None
        if i in special:
            kind = KINDS[n_special % len(KINDS)]
            identifier = _identifier(kind, n_special, rnd)
            n_special += 1
        path = f"{folder}/incident-{i:05d}.txt"
        notes.append(Note(path, _text(system, rnd, identifier, kind), identifier, kind))
    return notes


def identifier_queries(notes: Sequence[Note]) -> list[tuple[str, str]]:
    """(query, the one path that holds its token): alternately the token alone and the
    token in a sentence."""
    queries = []
    for n, note in enumerate(x for x in notes if x.identifier is not None):
        assert note.identifier is not None and note.kind is not None
        alone = n % 2 == 0
        query = note.identifier if alone else SENTENCES[note.kind].format(note.identifier)
        queries.append((query, note.path))
    return queries


def write_notes(folder: Path, notes: Sequence[Note]) -> None:
    """Write the notes under ``folder``, which must not exist yet."""
    folder.mkdir(parents=True)
    for note in notes:
        path = folder / note.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note.text, encoding="utf-8")
