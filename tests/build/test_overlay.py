"""kdl.build.overlay: extracting the series from patches/ and building it on LLVM 22."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from kdl import paths
from kdl.build import overlay
from kdl.errors import WorkspaceError
from kdl.series.model import load
from tests.sources import c_family_sources

PREFIX = paths.default_llvm_prefix()
INSTALLED_HEADER = PREFIX / "include" / "llvm" / "Object" / "OffloadBinary.h"
CLANG_FORMAT = shutil.which("clang-format-22") or str(paths.llvm_bin() / "clang-format")

needs_llvm = pytest.mark.skipif(
    not INSTALLED_HEADER.is_file(), reason=f"no LLVM 22 headers under {PREFIX}"
)
pytestmark = [pytest.mark.llvm, needs_llvm]

#: What the test-suite series adds that the overlay compiles.
SERIES_CPP = [
    "MicroBenchmarks/Offload/CMakeLists.txt",
    "MicroBenchmarks/Offload/OffloadDispatch.cpp",
    "MicroBenchmarks/Offload/kernel.c",
]
#: The workspace's own C, C++ and CUDA (overlay/, tools/, gpu/).
OVERLAY_CPP = [paths.ROOT / f for f in c_family_sources()]


def copy_series(tmp_path: Path) -> Path:
    """A copy of patches/ (series and patch files) that a test may edit."""
    dst = tmp_path / "patches"
    shutil.copytree(paths.PATCHES, dst)
    return dst / "test-suite" / "series"


def test_extract_series(tmp_path: Path) -> None:
    src = tmp_path / "src"
    series = load(paths.TEST_SUITE_SERIES)
    not_built = overlay.extract_series(src, series)
    for rel in SERIES_CPP:
        assert (src / rel).is_file(), rel
    # Every file of every patch is either extracted or reported.
    for patch in series.patches:
        for f in patch.files:
            entry = f"{patch.name}: {f.path}"
            assert (src / f.path).is_file() != (entry in not_built), entry
    assert any(e.endswith(": MicroBenchmarks/CMakeLists.txt") for e in not_built)


def test_extract_again_changes_nothing(tmp_path: Path) -> None:
    series_file = copy_series(tmp_path)
    src = tmp_path / "src"
    first = overlay.extract_series(src, load(series_file))
    files = sorted(p for p in src.rglob("*") if p.is_file())
    stamps = {p: p.stat().st_mtime_ns for p in files}
    assert overlay.extract_series(src, load(series_file)) == first
    # A change to the series re-extracts, but unchanged files keep their
    # timestamps, so ninja rebuilds nothing.
    series_file.write_text(series_file.read_text() + "# touched\n")
    assert overlay.extract_series(src, load(series_file)) == first
    for p in files:
        if not p.name.startswith(".kdl"):
            assert p.stat().st_mtime_ns == stamps[p], p


DISPATCH = "MicroBenchmarks/Offload/OffloadDispatch.cpp"


def test_extract_follows_a_changed_patch(tmp_path: Path) -> None:
    series_file = copy_series(tmp_path)
    src = tmp_path / "src"
    overlay.extract_series(src, load(series_file))
    patch = next(series_file.parent.glob("0001-*.patch"))
    text = patch.read_text()
    # Edit an include of OffloadDispatch.cpp, a file the patch creates.
    start = text.index(f"+++ b/{DISPATCH}\n")
    end = text.index("\ndiff --git", start)
    body = text[start:end]
    assert body.count("+#include <iterator>\n") == 1
    body = body.replace("+#include <iterator>\n", "+#include <utility>\n")
    patch.write_text(text[:start] + body + text[end:])
    overlay.extract_series(src, load(series_file))
    cpp = (src / DISPATCH).read_text()
    assert "#include <utility>" in cpp and "#include <iterator>" not in cpp


def test_extract_reports_a_patch_that_does_not_apply(tmp_path: Path) -> None:
    series_file = copy_series(tmp_path)
    patch = next(series_file.parent.glob("0001-*.patch"))
    # A hunk on an upstream file that is not here is not applied at all, so
    # break a file the patch creates: its hunk promises more lines.
    text = patch.read_text()
    start = text.index(f"+++ b/{DISPATCH}\n")
    hunk = text.index("@@ -0,0 +1,", start)
    patch.write_text(
        text[:hunk] + "@@ -0,0 +1,9999 @@" + text[text.index("\n", hunk) :]
    )
    with pytest.raises(WorkspaceError, match=r"^0001-.*does not apply"):
        overlay.extract_series(tmp_path / "src", load(series_file))


@pytest.mark.skipif(not Path(CLANG_FORMAT).exists(), reason="no clang-format-22")
def test_cpp_is_clang_formatted(tmp_path: Path) -> None:
    """clang-format (LLVM style) leaves the overlay's C++ as is."""
    assert_clang_formatted(OVERLAY_CPP)


def assert_clang_formatted(files: list[Path]) -> None:
    result = subprocess.run(
        [CLANG_FORMAT, "--style=LLVM", "--dry-run", "-Werror", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


# --- The real build (slow) ----------------------------------------------------


@pytest.fixture(scope="module")
def built() -> overlay.Overlay:
    return overlay.build_overlay()


@pytest.mark.overlay
@pytest.mark.slow
def test_build_overlay(built: overlay.Overlay) -> None:
    assert built.build_dir == paths.OVERLAY_BUILD.resolve()
    for product in (built.select_tool, built.rank_diff, built.bin_dir / "kdl-entries"):
        assert product.is_file(), product
    assert built.select_tool.parent == built.bin_dir


@pytest.mark.overlay
@pytest.mark.slow
def test_kdl_select_is_built_on_the_series_rank(built: overlay.Overlay) -> None:
    """kdl-select and kdl-rank-diff compile the rank from the release/22.x
    series' texts (the main series' bytes), with the LLVM sources the
    backport changes linked ahead of LLVM 22's static libraries: no
    libLLVM.so, whose texts of those files are 22.1.8's."""
    from kdl.build.ranktexts import LIBS, RANK_HEADER, RANK_SOURCE, llvm_files
    from kdl.build.unittests import series_texts

    rank_src = built.build_dir / "src-rank"
    main = series_texts(load(paths.SERIES), [RANK_HEADER, RANK_SOURCE])
    assert sorted(main) == sorted([RANK_HEADER, RANK_SOURCE])
    for name, text in main.items():
        assert (rank_src / name).read_text() == text, name
    units = llvm_files(load(paths.BACKPORT_SERIES), LIBS, ".cpp")
    assert RANK_SOURCE in units
    listed = (rank_src / "units.cmake").read_text()
    for unit in units:
        assert f"  {unit}\n" in listed, unit
    for tool in (built.select_tool, built.rank_diff):
        linked = subprocess.run(
            ["ldd", str(tool)], capture_output=True, text=True, check=True
        ).stdout
        assert "libLLVM" not in linked, tool


@pytest.mark.overlay
@pytest.mark.slow
def test_second_build_is_a_noop(
    built: overlay.Overlay, caplog: pytest.LogCaptureFixture
) -> None:
    before = built.select_tool.stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="kdl"):
        again = overlay.build_overlay()
    assert again == built
    assert f"overlay: {built.build_dir} is up to date" in caplog.messages
    assert any(m.startswith("overlay: not built here: ") for m in caplog.messages)
    assert built.select_tool.stat().st_mtime_ns == before


@pytest.mark.overlay
@pytest.mark.slow
def test_build_in_a_new_directory(tmp_path: Path) -> None:
    """Configure, extract and build from nothing in another build directory:
    what ``kdl select`` needs (the whole build is the selftest's own)."""
    fresh = overlay.build_overlay(tmp_path / "build", jobs=2, targets=["kdl-select"])
    assert (fresh.build_dir / "CMakeCache.txt").is_file()
    assert fresh.build_dir == (tmp_path / "build").resolve()
    out = subprocess.run(
        [str(fresh.select_tool), "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--device=<triple=T,arch=A[,isa=I]...[,feature=F]...>" in out


@pytest.mark.overlay
@pytest.mark.slow
def test_test_suite_benchmark_runs_and_says_it_has_no_gpu(
    built: overlay.Overlay,
) -> None:
    """llvm-test-suite's OffloadDispatch, built against LLVM 22, without a GPU."""
    bench = built.bin_dir / "OffloadDispatch"
    (args_file,) = (built.build_dir / "test-suite").rglob("OffloadDispatch.args")
    result = subprocess.run(
        [str(bench), *args_file.read_text().split()],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "OffloadDispatch: no GPU device; nothing measured\n"


def test_test_suite_series_is_clang_formatted(tmp_path: Path) -> None:
    src = tmp_path / "src"
    overlay.extract_series(src, load(paths.TEST_SUITE_SERIES))
    assert_clang_formatted(
        [
            src / "MicroBenchmarks/Offload/OffloadDispatch.cpp",
            paths.OVERLAY_SRC / "test-suite" / "OffloadMainAPI.h",
        ]
    )


def test_a_configure_that_stopped_midway_is_redone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache for the overlay's sources but no build.ninja: cmake again."""
    from kdl import proc

    build_dir = tmp_path / "overlay"
    build_dir.mkdir()
    rank = tmp_path / "src-rank"
    (build_dir / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={paths.OVERLAY_SRC}\nKDL_RANK_SRC:PATH={rank}\n"
    )
    monkeypatch.setattr(proc, "DRY_RUN", True)
    prefix = Path("/usr/lib/llvm-22")
    overlay._configure(build_dir, rank, prefix)
    assert "would run: " in capsys.readouterr().out
    (build_dir / "build.ninja").write_text("")
    overlay._configure(build_dir, rank, prefix)
    assert capsys.readouterr().out == ""
    # A cache made before kdl-select built the rank: cmake again.
    (build_dir / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={paths.OVERLAY_SRC}\n"
    )
    overlay._configure(build_dir, rank, prefix)
    assert "would run: " in capsys.readouterr().out
