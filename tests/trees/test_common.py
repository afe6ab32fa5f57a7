"""Trees: a half-made tree is never used; the pins move in one place."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kdl import paths, trees
from kdl.errors import UsageError, WorkspaceError
from kdl.trees import common, sidroot


@pytest.fixture
def trees_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "trees"
    monkeypatch.setattr(common, "TREES_DIR", where)
    pins = tmp_path / "trees.json"
    shutil.copy(common.PINS_FILE, pins)
    monkeypatch.setattr(common, "PINS_FILE", pins)
    return where


def test_a_tree_counts_only_with_its_record(trees_dir: Path) -> None:
    partial = common.staging("22")
    (partial / "offload").mkdir()
    assert common.current("22") is None
    pinned = common.pin("22")
    record = {"tree": "22", "version": pinned["version"], "sha256": pinned["sha256"]}
    tree = common.finish("22", partial, record)
    assert tree.path == trees_dir / "22" and not partial.exists()
    assert common.current("22") == common.Tree("22", tree.path, record)
    assert common.current("22", "offload") is not None
    assert common.current("22", "offload/CMakeLists.txt") is None  # not made
    # Another tarball under the same version string is not the pinned tree.
    common.record_file(tree.path).write_text(
        json.dumps(dict(record, sha256="0" * 64)) + "\n"
    )
    assert common.current("22") is None
    common.record_file(tree.path).write_text(json.dumps(record) + "\n")
    # Killed between the rename and the record: not a tree.
    common.record_file(tree.path).unlink()
    assert common.current("22") is None


def test_an_interrupted_make_is_removed(trees_dir: Path) -> None:
    left = trees_dir / "main.partial" / "usr" / "lib"
    left.mkdir(parents=True)
    (left / "half.so").write_bytes(b"\0" * 10)
    fresh = common.staging("main")
    assert fresh.is_dir() and list(fresh.iterdir()) == []


def test_a_record_of_another_version_is_not_current(trees_dir: Path) -> None:
    tree = common.finish("main", common.staging("main"), {"version": "1:23~old"})
    assert tree.path.is_dir()
    assert common.current("main") is None


def test_a_broken_record_is_not_a_tree(trees_dir: Path) -> None:
    tree = common.finish("22", common.staging("22"), {})
    common.record_file(tree.path).write_text("{not json")
    assert common.read_record(tree.path) is None


def test_commit_of_a_snapshot_version() -> None:
    version = "1:24~++20261025103442+7e3c57157096-1~exp1"
    assert sidroot.commit_of(version) == "7e3c57157096"
    assert sidroot.commit_of("1:22.1.8-1") is None


def test_package_names_carry_the_major() -> None:
    names = sidroot.package_names(24)
    assert "clang-24" in names and "llvm-24-dev" in names
    assert "liboffload-24-dev" in names and "mlir-24-tools" in names


def test_pin_moves_main_in_trees_json(trees_dir: Path) -> None:
    trees._pin_main("1:25~++20270101000000+0123456789ab-1~exp1")
    entry = json.loads(common.PINS_FILE.read_text())["main"]
    assert entry["version"].startswith("1:25~++")
    assert (entry["commit"], entry["major"]) == ("0123456789ab", 25)


def test_pin_refuses_a_release_version(trees_dir: Path) -> None:
    with pytest.raises(UsageError, match="not a snapshot version"):
        trees._pin_main("1:22.1.8-1")


def test_unknown_tree_is_a_usage_error(trees_dir: Path) -> None:
    with pytest.raises(UsageError, match="no tree named 'x'"):
        common.pin("x")


def test_what_a_maker_mounted_is_unmounted_before_removal(trees_dir: Path) -> None:
    # debootstrap mounts /proc in the root; rmtree must not walk into it.
    where = trees_dir / "main.partial"
    (where / "proc").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(where / "proc")], check=True)
    (where / "proc" / "inside").write_text("a file of the mounted file system")
    assert common.mounts_under(where) == [str((where / "proc").resolve())]
    common.remove(where)
    assert not where.exists()
    assert common.mounts_under(trees_dir) == []


def test_a_second_run_waits_and_says_who_holds_the_tree(
    trees_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the lock of tree 22 for a second: this run says
    which and waits for it, instead of removing what it makes."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write('kdl (pid 4242)\\n'); f.flush(); print('held', flush=True)\n"
            "time.sleep(1.5)\n",
            str(trees_dir / "22.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    trees_dir.mkdir(parents=True, exist_ok=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    started = time.monotonic()
    with common.locked("22"):
        waited = time.monotonic() - started
    holder.wait(timeout=10)
    assert waited > 0.7  # the holder kept it for 1.5 s after saying so
    assert capsys.readouterr().err == (
        "kdl tree 22: waiting for kdl (pid 4242), which is making or checking it "
        f"(it holds {trees_dir / '22.lock'})\n"
    )


def test_a_partial_tree_goes_once_the_tree_is_current(trees_dir: Path) -> None:
    pinned = common.pin("22")
    record = {"tree": "22", "version": pinned["version"], "sha256": pinned["sha256"]}
    common.finish("22", common.staging("22"), record)
    left = trees_dir / "22.partial" / "llvm"
    left.mkdir(parents=True)
    (left / "big.o").write_bytes(b"\0" * 100)
    common.drop_partial("22")
    assert not (trees_dir / "22.partial").exists()
    assert common.current("22") is not None


def test_a_process_still_writing_a_partial_tree_is_named(trees_dir: Path) -> None:
    """A tar whose kdl was killed alone still writes into 22.partial: the
    next run names it in one line and removes nothing."""
    partial = trees_dir / "22.partial"
    (partial / "llvm").mkdir(parents=True)
    writer = subprocess.Popen(["sleep", "30"], cwd=partial)
    try:
        with pytest.raises(WorkspaceError) as caught:
            common.staging("22")
        message = str(caught.value)
        assert message.startswith(
            f"{partial}: a process still works there (pid {writer.pid}: sleep 30)"
        )
        assert "\n" not in message and (partial / "llvm").is_dir()
    finally:
        writer.kill()
        writer.wait()
    assert common.staging("22").is_dir()


def test_a_file_where_a_partial_tree_goes_is_removed(trees_dir: Path) -> None:
    trees_dir.mkdir(parents=True)
    (trees_dir / "main.partial").write_text("not a tree")
    assert common.staging("main").is_dir()


# --- An unpacker left running (the attack of 2026-12-07, 1a) -----------------------


def _tarball(tmp_path: Path) -> bytes:
    """A .tar.xz of a top directory with 40 files of 64 KiB that do not
    compress, made by the real tar."""
    top = tmp_path / "src" / "llvm-project-22"
    top.mkdir(parents=True)
    for n in range(40):
        (top / f"f{n:02}.bin").write_bytes(os.urandom(64 << 10))
    out = tmp_path / "src.tar.xz"
    subprocess.run(
        ["tar", "-cJf", str(out), "-C", str(top.parent), top.name], check=True
    )
    return out.read_bytes()


def _stat(pid: int) -> list[str]:
    """State, parent, ... of process *pid* (/proc/PID/stat after the name)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _tar_of(parent: int) -> int | None:
    """The pid of the tar that process *parent* started, if one runs."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        stat = _stat(int(entry))
        if (
            argv[0].endswith(b"tar")
            and stat[:2] != ["Z"]
            and stat[1:2] == [str(parent)]
        ):
            return int(entry)
    return None


def _alive(pid: int) -> bool:
    return _stat(pid)[:1] not in ([], ["Z"])


@contextmanager
def _feeding(fifo: Path, data: bytes) -> Iterator[None]:
    """Write the first half of *data* into *fifo* once its reader (the tar
    under test) has opened it, and hold it open (the tar waits for more)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    os.set_blocking(fd, True)
    try:
        os.write(fd, data[: len(data) // 2])
        yield
    finally:
        os.close(fd)


def _wait_for(check: Callable[[], object], seconds: float = 10) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    return None


def test_an_unpacker_ends_with_the_kdl_that_started_it(
    trees_dir: Path, tmp_path: Path
) -> None:
    """kdl killed alone while tar unpacks the tree: the tar ends too (it
    kept writing into NAME.partial). The archive is a FIFO fed half, so the
    tar is still at work when kdl is killed."""
    data = _tarball(tmp_path)
    feed = tmp_path / "feed.tar.xz"
    os.mkfifo(feed)
    partial = trees_dir / "22.partial"
    partial.mkdir(parents=True)
    kdl = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from kdl.trees import common\n"
            "common.unpack(Path(sys.argv[1]), Path(sys.argv[2]))",
            str(feed),
            str(partial),
        ],
        env=dict(os.environ, PYTHONPATH=str(paths.ROOT)),
    )
    tar = None
    try:
        with _feeding(feed, data):
            assert _wait_for(lambda: list(partial.rglob("f0*.bin")))
            tar = _tar_of(kdl.pid)
            assert tar is not None
            kdl.kill()
            kdl.wait()
            # Before the feed ends: a tar left alone would wait for it.
            assert _wait_for(lambda: not _alive(tar), 5), "tar outlived kdl"
        # What tar started (xz, reading the feed) ends with the feed.
        assert _wait_for(lambda: common.users(partial) == [], 5)
    finally:
        if tar is not None and _alive(tar):
            os.kill(tar, signal.SIGKILL)
        kdl.kill()
        kdl.wait()


def _left_tar(feed: Path, partial: Path, marked: bool) -> subprocess.Popen[bytes]:
    """A tar writing into *partial* from *feed*, as a killed run leaves it:
    started elsewhere with ``-C`` (GNU tar keeps its current directory and
    holds *partial* open); *marked*: with kdl's mark of an unpacker."""
    env = dict(os.environ)
    if marked:
        env[common.UNPACKING] = str(partial.resolve())
    return subprocess.Popen(
        ["tar", "-xJf", str(feed), "-C", str(partial), "--strip-components=1"],
        cwd=feed.parent,
        env=env,
    )


def test_a_tar_still_writing_through_an_open_directory_is_seen(
    trees_dir: Path, tmp_path: Path
) -> None:
    """The attack's 1a: the check looked only at current directories, so the
    next run removed part of 22.partial under a live tar. A tar kdl did not
    start is named, and nothing is removed."""
    data = _tarball(tmp_path)
    feed = tmp_path / "feed.tar.xz"
    os.mkfifo(feed)
    partial = trees_dir / "22.partial"
    partial.mkdir(parents=True)
    tar = _left_tar(feed, partial, marked=False)
    try:
        with _feeding(feed, data):
            assert _wait_for(lambda: list(partial.glob("f0*.bin")))
            before = {p.name for p in partial.iterdir()}
            with pytest.raises(WorkspaceError) as caught:
                common.staging("22")
            assert str(caught.value).startswith(
                f"{partial}: a process still works there (pid {tar.pid}: tar -xJf "
            )
            assert before <= {p.name for p in partial.iterdir()}
            assert tar.poll() is None
    finally:
        tar.kill()
        tar.wait()


def test_an_unpacker_an_interrupted_run_left_is_stopped(
    trees_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tar that kdl started for this tree and that outlived it (one kdl
    of before this change left) is stopped, then the tree is made afresh."""
    data = _tarball(tmp_path)
    feed = tmp_path / "feed.tar.xz"
    os.mkfifo(feed)
    partial = trees_dir / "22.partial"
    partial.mkdir(parents=True)
    tar = _left_tar(feed, partial, marked=True)
    try:
        with _feeding(feed, data):
            assert _wait_for(lambda: list(partial.glob("f0*.bin")))
            with caplog.at_level(logging.INFO, logger="kdl"):
                fresh = common.staging("22")
            assert tar.wait(timeout=10) != 0
            assert fresh.is_dir() and list(fresh.iterdir()) == []
            assert f"stopping pid {tar.pid} (tar -xJf " in caplog.text
    finally:
        tar.kill()
        tar.wait()
