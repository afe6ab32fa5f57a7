"""kdl build: exact command lines, and real cmake + ninja on a fake llvm-project."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kdl import proc
from kdl.build import llvm as llvm_build
from kdl.cli import main
from kdl.provenance import cmake_cache
from tests.llvm_tree import make_fake_llvm

# Every test runs git in an isolated environment (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("isolated_git")

TARGETS = [
    "llvm-offload-binary",
    "clang-offload-packager",
    "LLVMFrontendTests",
    "mlir-opt",
    "mlir-translate",
    "runtimes",
]

needs_tools = pytest.mark.skipif(
    not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("cc")),
    reason="needs cmake, ninja and a C compiler",
)


@pytest.fixture
def fake_llvm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_PYTHON", sys.executable)
    monkeypatch.delenv("FAKE_LAYOUT", raising=False)
    return make_fake_llvm(tmp_path / "llvm-project")


def build_fake(llvm: Path, build_dir: Path, *extra: str) -> int:
    """``kdl build --llvm LLVM --build-dir BUILD_DIR [EXTRA...]``, in process."""
    return main(["build", "--llvm", str(llvm), "--build-dir", str(build_dir), *extra])


def expected_cmake(llvm: Path, build_dir: Path, launcher: list[str]) -> list[str]:
    return [
        "cmake", "-G", "Ninja", "-S", f"{llvm}/llvm", "-B", str(build_dir),
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLVM_ENABLE_ASSERTIONS=ON",
        "-DLLVM_ENABLE_PROJECTS=clang;lld;mlir",
        "-DLLVM_ENABLE_RUNTIMES=openmp;offload",
        "-DLLVM_TARGETS_TO_BUILD=host;NVPTX;AMDGPU",
        "-DLLVM_ENABLE_PER_TARGET_RUNTIME_DIR=ON",
        "-DLLVM_RUNTIME_TARGETS=default;amdgcn-amd-amdhsa;nvptx64-nvidia-cuda",
        "-DRUNTIMES_amdgcn-amd-amdhsa_LLVM_ENABLE_RUNTIMES=compiler-rt;libc;openmp;libcxx;libcxxabi",
        "-DRUNTIMES_nvptx64-nvidia-cuda_LLVM_ENABLE_RUNTIMES=compiler-rt;libc;openmp;libcxx;libcxxabi",
        f"-DRUNTIMES_amdgcn-amd-amdhsa_CACHE_FILES={llvm}/libcxx/cmake/caches/AMDGPU.cmake",
        f"-DRUNTIMES_nvptx64-nvidia-cuda_CACHE_FILES={llvm}/libcxx/cmake/caches/NVPTX.cmake",
        *launcher,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("found", "launcher"),
    [
        (
            {"ccache": "/usr/bin/ccache", "sccache": "/usr/bin/sccache"},
            ["-DLLVM_CCACHE_BUILD=ON"],
        ),
        (
            {"sccache": "/opt/bin/sccache"},
            [
                "-DCMAKE_C_COMPILER_LAUNCHER=/opt/bin/sccache",
                "-DCMAKE_CXX_COMPILER_LAUNCHER=/opt/bin/sccache",
            ],
        ),
        ({}, []),
    ],
)
def test_configure_command_line(
    monkeypatch: pytest.MonkeyPatch, found: dict[str, str], launcher: list[str]
) -> None:
    monkeypatch.setattr(
        proc, "which", lambda name, *dirs: Path(found[name]) if name in found else None
    )
    llvm, build_dir = Path("/src/llvm-project"), Path("/b/llvm")
    assert llvm_build.configure_argv(llvm, build_dir) == expected_cmake(
        llvm, build_dir, launcher
    )


def test_dry_run_prints_the_exact_commands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proc, "which", lambda name, *dirs: None)
    llvm = tmp_path / "llvm-project"
    (llvm / "llvm").mkdir(parents=True)
    (llvm / "llvm/CMakeLists.txt").write_text("")
    build_dir = tmp_path / "build"
    status = main(
        [
            "--dry-run",
            "build",
            "--llvm",
            str(llvm),
            "--build-dir",
            str(build_dir),
            "-j",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert f"would run: {proc.quote(expected_cmake(llvm, build_dir, []))}\n" in out
    assert f"would run: ninja -C {build_dir} -j 2 {' '.join(TARGETS)}\n" in out
    assert not build_dir.exists()


LEGACY = [
    "llvm-offload-binary",
    "clang-offload-packager",
    "LLVMFrontendTests",
    "mlir-opt",
    "mlir-translate",
    "omp",
]


@pytest.mark.parametrize(
    ("available", "targets", "missing"),
    [
        ({*TARGETS, "check-offload", "omp"}, TARGETS, []),
        ({*LEGACY, "omptarget"}, [*LEGACY, "omptarget"], []),
        (
            {"llvm-offload-binary", "runtimes"},
            ["llvm-offload-binary", "runtimes"],
            [
                "clang-offload-packager",
                "LLVMFrontendTests",
                "mlir-opt",
                "mlir-translate",
            ],
        ),
        (
            {"LLVMFrontendTests", "mlir-opt", "mlir-translate"},
            ["LLVMFrontendTests", "mlir-opt", "mlir-translate"],
            ["llvm-offload-binary", "clang-offload-packager", "the offload runtime"],
        ),
    ],
)
def test_choose_targets(
    available: set[str], targets: list[str], missing: list[str]
) -> None:
    chosen, lacking = llvm_build.choose_targets(available)
    assert chosen == targets
    assert sorted(m.split(" (")[0] for m in lacking) == sorted(missing)


def test_cache_disagreements() -> None:
    ours = {k: v for k, v in llvm_build.CONFIG.items()}
    assert llvm_build.cache_disagreements(ours) == []
    assert (
        llvm_build.cache_disagreements(
            {
                **ours,
                "LLVM_ENABLE_PROJECTS": "clang;lld;mlir;flang",
                "LLVM_TARGETS_TO_BUILD": "all",
            }
        )
        == []
    )
    notes = llvm_build.cache_disagreements(
        {**ours, "CMAKE_BUILD_TYPE": "Debug", "LLVM_ENABLE_ASSERTIONS": "OFF",
         "LLVM_ENABLE_RUNTIMES": "openmp", "LLVM_TARGETS_TO_BUILD": "X86;NVPTX"}
    )  # fmt: skip
    assert notes == [
        "CMAKE_BUILD_TYPE is 'Debug' (kdl uses Release)",
        "LLVM_ENABLE_ASSERTIONS is off (kdl uses ON)",
        "LLVM_ENABLE_RUNTIMES lacks offload (it is 'openmp')",
        "LLVM_TARGETS_TO_BUILD lacks AMDGPU (it is 'X86;NVPTX')",
    ]
    notes = llvm_build.cache_disagreements(
        {**ours, "LLVM_RUNTIME_TARGETS": "default", "LLVM_ENABLE_PROJECTS": "clang"}
    )
    assert notes == [
        "LLVM_ENABLE_PROJECTS lacks lld;mlir (it is 'clang')",
        "LLVM_RUNTIME_TARGETS lacks amdgcn-amd-amdhsa;nvptx64-nvidia-cuda: no device "
        "runtimes, the offload GPU tests cannot run",
    ]


@needs_tools
def test_build_configures_once_and_builds_only_the_series_targets(
    capfd: pytest.CaptureFixture[str], fake_llvm: Path, tmp_path: Path
) -> None:
    build_dir = tmp_path / "build"
    status = build_fake(fake_llvm, build_dir, "-j", "2")
    out, err = capfd.readouterr()
    assert status == 0, err
    assert "-- Configuring done" in out
    assert f"configured {build_dir} in " in out
    assert f"built {', '.join(TARGETS)} in " in out
    assert (build_dir / "bin/llvm-offload-binary").is_file()
    packager = build_dir / "bin/clang-offload-packager"
    assert packager.is_symlink() and packager.readlink() == Path("llvm-offload-binary")
    assert f"  {packager} -> llvm-offload-binary (symlink)" in out
    assert (build_dir / "unittests/Frontend/LLVMFrontendTests").is_file()
    assert (build_dir / "bin/mlir-translate").is_file()
    assert (build_dir / "runtimes.stamp").is_file()
    assert not (build_dir / "everything-else.stamp").exists()
    cache = cmake_cache(build_dir)
    assert {k: cache[k] for k in llvm_build.CONFIG} == llvm_build.CONFIG
    # Again: no configure step, nothing compiled (only the always-run
    # runtimes custom target, like upstream's external-project runtimes).
    status = build_fake(fake_llvm, build_dir)
    out, _ = capfd.readouterr()
    assert status == 0
    assert "-- Configuring" not in out
    assert "Building C object" not in out and "Linking" not in out
    assert "[1/1]" in out
    assert f"used the existing configuration in {build_dir}" in out


@needs_tools
def test_build_with_the_legacy_layout(
    capfd: pytest.CaptureFixture[str],
    fake_llvm: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_LAYOUT", "legacy")
    build_dir = tmp_path / "build"
    assert build_fake(fake_llvm, build_dir, "-j", "1") == 0
    out, _ = capfd.readouterr()
    assert f"built {', '.join(LEGACY)}, omptarget in" in out
    packager = build_dir / "bin/clang-offload-packager"
    assert packager.is_file() and not packager.is_symlink()
    assert (build_dir / "omp.stamp").is_file() and (
        build_dir / "omptarget.stamp"
    ).is_file()


@needs_tools
def test_existing_cache_is_respected(
    capfd: pytest.CaptureFixture[str], fake_llvm: Path, tmp_path: Path
) -> None:
    build_dir = tmp_path / "build"
    cmake = [
        "cmake",
        "-G",
        "Ninja",
        "-S",
        str(fake_llvm / "llvm"),
        "-B",
        str(build_dir),
    ]
    settings = ["BUILD_TYPE=Debug", "ENABLE_RUNTIMES=openmp", "ENABLE_PROJECTS=clang"]
    cmake += [f"-D{'CMAKE' if s.startswith('BUILD') else 'LLVM'}_{s}" for s in settings]
    subprocess.run(cmake, check=True, capture_output=True)
    capfd.readouterr()
    assert build_fake(fake_llvm, build_dir, "-j", "1") == 0
    out, _ = capfd.readouterr()
    assert (
        f"note: existing cache in {build_dir}: CMAKE_BUILD_TYPE is 'Debug' "
        "(kdl uses Release); not reconfigured" in out
    )
    assert (
        "LLVM_ENABLE_RUNTIMES lacks offload (it is 'openmp'); not reconfigured" in out
    )
    assert "-- Configuring" not in out
    assert cmake_cache(build_dir)["CMAKE_BUILD_TYPE"] == "Debug"
    assert f"used the existing configuration in {build_dir}" in out


@needs_tools
def test_a_configure_that_stopped_midway_is_redone(
    capfd: pytest.CaptureFixture[str], fake_llvm: Path, tmp_path: Path
) -> None:
    """A cache without build.ninja (cmake killed while configuring) used to
    make every later build fail in ninja ("loading 'build.ninja'")."""
    build_dir = tmp_path / "build"
    subprocess.run(
        ["cmake", "-G", "Ninja", "-S", str(fake_llvm / "llvm"), "-B", str(build_dir)],
        check=True,
        capture_output=True,
    )
    (build_dir / "build.ninja").unlink()
    capfd.readouterr()
    assert build_fake(fake_llvm, build_dir, "-j", "1") == 0
    out, _ = capfd.readouterr()
    assert f"configured {build_dir} in" in out
    assert (build_dir / "build.ninja").is_file()
    assert build_fake(fake_llvm, build_dir, "-j", "1") == 0
    assert f"used the existing configuration in {build_dir}" in capfd.readouterr().out


@needs_tools
def test_cache_of_another_tree_or_generator_is_refused(
    capfd: pytest.CaptureFixture[str], fake_llvm: Path, tmp_path: Path
) -> None:
    other = make_fake_llvm(tmp_path / "other")
    build_dir = tmp_path / "build"
    subprocess.run(
        ["cmake", "-G", "Ninja", "-S", str(other / "llvm"), "-B", str(build_dir)],
        check=True,
        capture_output=True,
    )
    assert build_fake(fake_llvm, build_dir) == 2
    assert (
        f"is configured for {other}/llvm, not {fake_llvm}/llvm"
        in capfd.readouterr().err
    )
    makefiles = tmp_path / "make"
    subprocess.run(
        [
            "cmake",
            "-G",
            "Unix Makefiles",
            "-S",
            str(fake_llvm / "llvm"),
            "-B",
            str(makefiles),
        ],
        check=True,
        capture_output=True,
    )
    assert build_fake(fake_llvm, makefiles) == 2
    assert (
        "uses the 'Unix Makefiles' generator; kdl builds with Ninja"
        in capfd.readouterr().err
    )


def test_not_a_checkout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["build", "--llvm", str(tmp_path)]) == 2
    assert (
        "not an llvm-project checkout (no llvm/CMakeLists.txt)"
        in capsys.readouterr().err
    )


def test_without_llvm_builds_the_overlay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def build_overlay(build_dir: Path | None = None, jobs: int | None = None) -> object:
        calls.append((build_dir, jobs))
        return types.SimpleNamespace(
            build_dir=tmp_path,
            select_tool=tmp_path / "bin/kdl-select",
            rank_diff=tmp_path / "bin/kdl-rank-diff",
        )

    from kdl.build import overlay

    monkeypatch.setattr(overlay, "build_overlay", build_overlay)
    assert main(["build", "--build-dir", str(tmp_path), "-j", "2"]) == 0
    assert calls == [(tmp_path, 2)]
    assert f"overlay build: {tmp_path}" in capsys.readouterr().out


def test_a_version_no_installed_llvm_has_is_one_line_before_any_configure(
    fake_llvm: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """No silent hours: without --full, a tree of LLVM 21.1.0 (no
    /usr/lib/llvm-21 of that version) is refused before cmake runs."""
    version = fake_llvm / "cmake/Modules/LLVMVersion.cmake"
    version.parent.mkdir(parents=True, exist_ok=True)
    version.write_text(
        "set(LLVM_VERSION_MAJOR 21)\nset(LLVM_VERSION_MINOR 1)\n"
        "set(LLVM_VERSION_PATCH 0)\n"
    )
    build_dir = tmp_path / "build"
    assert build_fake(fake_llvm, build_dir) == 2
    out, err = capfd.readouterr()
    assert out == ""
    assert err == (
        f"error: {fake_llvm}: LLVM 21.1.0: no installed LLVM 21.1.0 to build "
        "offload against standalone (/usr/lib/llvm-21); --full builds LLVM itself "
        "with clang, lld and mlir: hours on 2 cores\n"
    )
    assert not build_dir.exists()
