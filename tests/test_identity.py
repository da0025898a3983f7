"""hyte.identity: the one answer to "is this the same thing?" (digests and the comparison of identities)."""

import ast
import hashlib
import random
from pathlib import Path

import pytest

from hyte import identity
from hyte.identity import data_digest, differences, digest, file_digest, texts_digest


def _random_identity(rng: random.Random, depth: int = 0) -> dict:
    """A nested JSON object like a run's identity: sections of scalars, lists and sub-objects."""
    value = {}
    for _ in range(rng.randint(1, 4)):
        key = rng.choice("abcdefgh") + rng.choice(("", "_size", ".x"))
        kind = rng.randrange(5 if depth < 2 else 4)
        value[key] = (rng.randint(-3, 3), rng.random(), rng.choice([None, True, "text"]),
                      [rng.randint(0, 2) for _ in range(rng.randint(0, 3))],
                      _random_identity(rng, depth + 1) if kind == 4 else None)[kind]
    return value


@pytest.mark.parametrize("seed", range(20))
def test_differences_are_empty_exactly_when_identities_are_equal_and_name_each_changed_leaf(seed):
    rng = random.Random(seed)
    recorded = _random_identity(rng)
    assert differences(recorded, recorded) == []
    assert differences(recorded, dict(reversed(list(recorded.items())))) == []  # key order is no difference
    assert digest(recorded) == digest(dict(reversed(list(recorded.items()))))
    changed = {**recorded, "zz": {"leaf": rng.randint(0, 9)}}
    assert differences(recorded, changed) == [f"zz: None -> {changed['zz']!r}"]  # a new object is named whole
    assert digest(changed) != digest(recorded)
    assert differences(changed, recorded) == [f"zz: {changed['zz']!r} -> None"]
    deeper = {**changed, "zz": {"leaf": changed["zz"]["leaf"] + 1}}
    assert differences(changed, deeper) == [f"zz.leaf: {changed['zz']['leaf']} -> {deeper['zz']['leaf']}"]


def test_differences_compare_lists_whole_and_sort_by_key():
    assert differences({"b": [1, 2], "a": 1}, {"b": [2, 1], "a": 2}) == ["a: 1 -> 2", "b: [1, 2] -> [2, 1]"]
    assert differences(3, 4) == ["value: 3 -> 4"]


def test_file_digests_read_in_blocks_and_name_a_data_folder_by_file_names_and_contents(tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * 10_000)  # over one block
    assert file_digest(big) == hashlib.sha256(big.read_bytes()).hexdigest()
    assert data_digest(big) == file_digest(big)[:identity.NAME_DIGITS]

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n')
    (folder / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    before = data_digest(folder)
    assert len(before) == identity.NAME_DIGITS and data_digest(folder) == before
    (folder / "qrels" / "test.tsv").rename(folder / "qrels" / "dev.tsv")  # same bytes, another name
    assert data_digest(folder) != before
    (folder / "qrels" / "dev.tsv").rename(folder / "qrels" / "test.tsv")
    assert data_digest(folder) == before
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "b"}\n')
    assert data_digest(folder) != before


def test_texts_digest_tells_lists_apart_that_join_to_the_same_text():
    assert texts_digest(["ab", "c"]) != texts_digest(["a", "bc"])
    assert texts_digest(["ab", "c"]) == texts_digest(iter(["ab", "c"]))
    assert texts_digest([]) != texts_digest([""])


def test_only_hyte_identity_hashes_outside_the_two_stated_exceptions():
    """The module docstring names the only other digests (a model's weights fingerprint, the remote-code file's cache
    key); a hash computed anywhere else is a sixth identity scheme."""
    source = Path(identity.__file__).parent
    allowed = {"identity.py", "lineage.py", "sentence_transformers_hyte.py"}
    hashing = [str(path.relative_to(source)) for path in sorted(source.rglob("*.py")) if path.name not in allowed
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, (ast.Import, ast.ImportFrom))
               and "hashlib" in ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                                 else [node.module or ""])]
    assert not hashing, f"digest through hyte.identity instead: {hashing}"


def test_a_run_identity_reads_a_mining_cache_given_as_a_path_as_its_text():
    """Configs built in Python may name the mining cache by a Path; YAML gives its text. Both are one run (the
    digest of a final model saved before the cache left the identity included)."""
    from hyte.training.config import MiningSpec, RunConfig
    from hyte.training.run_folder import _earlier_identity_digest, identity_digest

    as_path, as_text = (RunConfig("contrastive", mining=MiningSpec(cache_dir=cache)) for cache in (Path("c"), "c"))
    assert _earlier_identity_digest(as_path) == _earlier_identity_digest(as_text)
    assert identity_digest(as_path) == identity_digest(as_text)
    assert _earlier_identity_digest(as_text) != _earlier_identity_digest(RunConfig("contrastive"))
