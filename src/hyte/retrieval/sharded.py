"""``ShardedIndex``: one index over several stores (e.g. ``PgVectorIndex`` tables on several PostgreSQL servers),
searched in parallel and merged (docs/serving.md, "Shards on several servers").

With exact shards the merged top k is exact, since the global top k is the top k of the union of per-shard top-k
lists; shards compare in float64 (``exact_search64``), so a near-tie across two shards is broken as one float64
search would break it. Id i lives on shard i mod n, so an id always finds its shard again (``remove``, ``upsert``).
A shard that cannot answer fails the search (``ShardUnavailableError``): never a silently partial answer, unless
``allow_partial=True``, whose results name the missing shards (``result.missing_shards``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import HyteError
from .postgres import PgVectorError
from .store import HyperboloidStore, TextStore, check_positive_int, integer_ids

__all__ = ["ShardUnavailableError", "ShardedIndex", "ShardedResult"]


_SEARCH_REMEDY = ("Bring it back (an open index reconnects on its next call), or open the index with "
                  "allow_partial=True to search the other shards (results then name the missing ones)")
_WRITE_REMEDY = ("The other shards' parts were written; once it is back, upsert the same documents (upsert replaces, "
                 "so nothing is doubled)")


class ShardUnavailableError(HyteError, RuntimeError):
    """A shard of a ``ShardedIndex`` did not answer."""


class ShardedResult(tuple):
    """(scores, ids) as every store returns them, plus ``missing_shards``: the names of shards that did not answer
    (empty unless the index allows partial answers)."""

    missing_shards: tuple[str, ...]

    def __new__(cls, scores: np.ndarray, ids: np.ndarray, missing_shards: Sequence[str] = ()):
        result = super().__new__(cls, (scores, ids))
        result.missing_shards = tuple(missing_shards)
        return result

    @property
    def partial(self) -> bool:
        return bool(self.missing_shards)


class ShardedIndex(TextStore):
    """Several stores of the same model, searched as one (module docstring).

    ``shards``: stores holding points of one model (same name, fingerprint, dimension and curvature).
    ``names``: how messages name each shard (default: the store's ``repr``). ``allow_partial``: see the module.
    """

    def __init__(self, shards: Sequence[HyperboloidStore], names: Sequence[str] | None = None, *,
                 allow_partial: bool = False):
        shards = list(shards)
        if not shards:
            raise ValueError("a ShardedIndex needs at least one shard")
        first = shards[0]
        for position, shard in enumerate(shards[1:], start=1):
            for field in ("dim", "curvature", "model_name", "model_fingerprint"):
                if getattr(shard, field) != getattr(first, field):
                    raise ValueError(f"shard {position} holds {field} {getattr(shard, field)!r} but shard 0 holds "
                                     f"{getattr(first, field)!r}: every shard must hold the same model's points")
        self.dim, self.curvature = first.dim, first.curvature
        self.model_name, self.model_fingerprint = first.model_name, first.model_fingerprint
        self.shards = shards
        self.names = [repr(shard) for shard in shards] if names is None else [str(name) for name in names]
        if len(self.names) != len(shards):
            raise ValueError(f"{len(self.names)} names for {len(shards)} shards")
        self.allow_partial = allow_partial
        self._check_placement()

    def _check_placement(self) -> None:
        """Refuse one table given as two shards (every hit would come back twice) and shards whose documents are not
        where id mod n puts them (remove and upsert would miss them, and an upsert would duplicate them)."""
        locations = [getattr(shard, "location", ("object", id(shard))) for shard in self.shards]
        for position, location in enumerate(locations):
            if location in locations[:position]:
                raise ValueError(f"shards {locations.index(location)} and {position} are the same store "
                                 f"({self.names[position]}): give each shard once")
        count = len(self.shards)

        def misplaced(position, shard):
            ids = shard.ids
            wrong = ids[ids % count != position]
            return int(wrong[0]) if len(wrong) else None

        answers = self._each(misplaced, positions=True, partial=self.allow_partial)
        for position, wrong in sorted(answers.items()):
            if wrong is not None:
                raise ValueError(f"shard {position} ({self.names[position]}) holds id {wrong}, which belongs on shard "
                                 f"{wrong % count} (a ShardedIndex places id i on shard i mod {count}): fill the "
                                 "shards through ShardedIndex.add, or give them in the order they were filled")

    def _each(self, call, *, positions: bool = False, partial: bool = False,
              remedy: str = _SEARCH_REMEDY) -> dict[int, Any]:
        """``call(shard)`` (with ``positions``: ``call(position, shard)``) for every shard, in threads; {position:
        result}. A failure raises ``ShardUnavailableError`` naming the shard and the ``remedy``, unless ``partial``
        (then the shard is left out)."""
        with ThreadPoolExecutor(max_workers=len(self.shards)) as pool:
            futures = {position: pool.submit(call, position, shard) if positions else pool.submit(call, shard)
                       for position, shard in enumerate(self.shards)}
        results = {}
        for position, future in futures.items():
            error = future.exception()
            if error is None:
                results[position] = future.result()
            elif not self._is_unavailable(error):
                raise error
            elif not partial:
                first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise ShardUnavailableError(f"shard {position} ({self.names[position]}) did not answer: "
                                            f"{first_line}. {remedy}") from error
        return results

    @staticmethod
    def _is_unavailable(error: BaseException) -> bool:
        """Errors of an unreachable or failed server (not a bad argument, which every shard would raise alike)."""
        try:
            import psycopg
            database_errors = (psycopg.OperationalError, psycopg.InterfaceError)
        except ImportError:
            database_errors = ()
        return isinstance(error, (ConnectionError, TimeoutError, PgVectorError, *database_errors))

    def __len__(self) -> int:
        return sum(self._each(len).values())

    @property
    def ids(self) -> np.ndarray:
        return np.sort(np.concatenate([shard.ids for shard in self.shards]))

    def stored(self) -> tuple[np.ndarray, np.ndarray]:
        parts = list(self._each(lambda shard: shard.stored()).values())
        return np.concatenate([ids for ids, _ in parts]), np.concatenate([points for _, points in parts])

    def _largest_id(self) -> int | None:
        largest = [value for value in self._each(lambda shard: shard._largest_id()).values() if value is not None]
        return max(largest) if largest else None

    def _stored_among(self, ids: np.ndarray) -> np.ndarray:
        return np.sort(np.concatenate(list(self._each(lambda shard: shard._stored_among(ids)).values())))

    def _fill_points(self, flat: np.ndarray, result: np.ndarray) -> None:
        for position, shard in enumerate(self.shards):
            mine = (flat >= 0) & (flat % len(self.shards) == position)
            if mine.any():
                result[mine] = shard.points_of(flat[mine])

    def document(self, index_id: int) -> dict[str, str]:
        """From the shard that holds ``index_id``."""
        return self.shards[index_id % len(self.shards)].document(index_id)

    def stored_own_ids(self, own_ids: Sequence[str]) -> list[str]:
        """Which of the documents' own ids any shard holds (shards that keep texts), sorted."""
        found = self._each(lambda shard: shard.stored_own_ids(own_ids))
        return sorted({identifier for ids in found.values() for identifier in ids})

    def _write(self, points, ids, documents, *, upsert: bool) -> None:
        """``add`` / ``upsert``: each document goes to shard id mod the shard count, each shard's part in parallel; a
        shard that fails is named (``_WRITE_REMEDY``)."""
        targets = ids % len(self.shards)
        documents = None if documents is None else list(documents)

        def write(position, shard):
            mine = np.flatnonzero(targets == position)
            part = None if documents is None else [documents[i] for i in mine]
            return shard._write(points[mine], ids[mine], part, upsert=upsert) if len(mine) else None

        self._each(write, positions=True, remedy=_WRITE_REMEDY)

    def remove(self, ids: Any) -> int:
        flat = integer_ids(ids).ravel()
        removed = self._each(lambda position, shard: shard.remove(flat[flat % len(self.shards) == position]),
                             positions=True, remedy="The other shards removed their documents; once it is back, "
                             "remove the same ids again")
        return sum(removed.values())

    def search(self, queries: Any, k: int = 10, **options) -> ShardedResult:
        """The merged top k of every shard's top k: (scores, ids), both (N, k), with ``missing_shards``."""
        q = self._check_queries(queries)
        k = check_positive_int("k", k)

        def search_shard(shard):
            if shard.is_exact and not options:
                return shard.exact_search64(q, k)
            scores, ids = shard.search(q, k, **options)
            return scores.astype(np.float64), ids

        answers = self._each(search_shard, partial=self.allow_partial)
        missing = [self.names[position] for position in range(len(self.shards)) if position not in answers]
        if not answers:
            raise ShardUnavailableError(f"no shard answered ({', '.join(missing)})")
        # (N, shards x k) each
        scores, ids = (np.hstack(parts) for parts in zip(*(answers[position] for position in sorted(answers))))
        scores = np.where(ids >= 0, scores, -np.inf)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top_ids = np.take_along_axis(ids, order, axis=1)
        top_scores = np.take_along_axis(scores, order, axis=1).astype(np.float32)
        return ShardedResult(top_scores, np.where(np.isfinite(top_scores), top_ids, -1), missing)

    @property
    def is_exact(self) -> bool:
        return all(getattr(shard, "is_exact", False) for shard in self.shards)
