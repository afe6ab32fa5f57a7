"""``kdl fuzz`` seeds: the committed fixtures, version 3 among them, go into
the corpus beside what the lit suite packed, so the fuzzer starts from every
container version the C++ reader reads (compressed version 3 included)."""

from __future__ import annotations

from pathlib import Path

from kdl import fuzz
from tests.offload_helpers import DATA


def test_corpus_holds_the_version3_fixtures(tmp_path: Path) -> None:
    lit = tmp_path / "lit"
    (lit / "t").mkdir(parents=True)
    (lit / "t" / "a.bin").write_bytes(b"\x10\xff\x10\xad")
    corpus = tmp_path / "corpus"
    assert fuzz.FIXTURE_SEEDS == DATA
    count, fixed = fuzz.seed_corpus(corpus, lit)
    assert count == 1
    seeds = {p.name: p.read_bytes() for p in corpus.iterdir()}
    assert len(seeds) == count + fixed
    versions = {}
    for name in ("packed.v3.bin", "packed.v3.zstd.bin", "packed.v3.zlib.bin"):
        data = seeds[f"fixture-{name}"]
        assert data == (DATA / name).read_bytes()
        versions[name] = (
            int.from_bytes(data[4:8], "little"),
            int.from_bytes(data[32:40], "little") != 0,
        )
    assert versions == {
        "packed.v3.bin": (3, False),
        "packed.v3.zstd.bin": (3, True),
        "packed.v3.zlib.bin": (3, True),
    }
    assert "fixture-packed.v1.bin" in seeds and "fixture-packed.v2.bin" in seeds
