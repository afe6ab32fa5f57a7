"""kdl.series.checkout: the one object through which kdl uses GitPython."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest

from kdl.errors import GitError, WorkspaceError
from kdl.series import checkout
from kdl.series.checkout import Checkout, describe_tree
from tests.llvm_tree import git


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A plain work tree (no llvm-project markers) with one tagged commit."""
    repo = tmp_path / "tree"
    (repo / "sub").mkdir(parents=True)
    (repo / "a.txt").write_text("a\n")
    (repo / "sub" / "b.txt").write_text("b\n")
    git(repo, "init", "--quiet")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "first")
    git(repo, "tag", "v1")
    return repo


def test_describe_tree_outside_git_is_none(tmp_path: Path) -> None:
    assert describe_tree(tmp_path) is None
    assert describe_tree(tmp_path / "no-such-dir") is None


def test_describe_tree_without_a_commit_is_none(tmp_path: Path) -> None:
    git(tmp_path, "init", "--quiet")
    assert describe_tree(tmp_path) is None


def test_describe_is_tags_always_dirty(tree: Path) -> None:
    head = git(tree, "rev-parse", "HEAD").strip()
    assert describe_tree(tree) == "v1"
    assert describe_tree(tree / "sub") == "v1"  # anywhere in the tree
    git(tree, "tag", "--delete", "v1")
    git(tree, "tag", "lightweight")  # --tags: not only annotated tags
    assert describe_tree(tree) == "lightweight"
    git(tree, "tag", "--delete", "lightweight")
    assert describe_tree(tree, "--abbrev=12") == head[:12]  # --always
    (tree / "a.txt").write_text("changed\n")
    with Checkout(tree, require_llvm=False) as co:
        assert co.describe("--abbrev=12") == f"{head[:12]}-dirty"


def test_any_work_tree_only_without_require_llvm(tree: Path) -> None:
    with pytest.raises(WorkspaceError, match="not an llvm-project checkout"):
        Checkout(tree)
    with Checkout(tree / "sub", require_llvm=False) as co:
        assert co.root == tree
        assert co.head() == git(tree, "rev-parse", "HEAD").strip()


def test_find_is_none_where_there_is_no_work_tree(tree: Path, tmp_path: Path) -> None:
    found = Checkout.find(tree / "sub")
    assert found is not None
    with found:
        assert found.root == tree
    plain = tmp_path / "plain"
    plain.mkdir()
    assert Checkout.find(plain) is None
    assert Checkout.find(tmp_path / "no-such-dir") is None
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    assert Checkout.find(bare) is None


def test_status_paths_names_only_the_given_changed_paths(tree: Path) -> None:
    with Checkout(tree / "sub", require_llvm=False) as co:
        assert co.status_paths([]) == []
        assert co.status_paths([tree / "a.txt", tree / "sub"]) == []
        (tree / "a.txt").write_text("changed\n")
        (tree / "new.txt").write_text("new\n")
        (tree / "sub" / "untracked.txt").write_text("u\n")
        git(tree, "mv", "sub/b.txt", "sub/moved.txt")
        assert co.status_paths([tree / "a.txt"]) == ["a.txt"]
        # Asked alone, the source of the staged rename is a deletion.
        assert co.status_paths([tree / "sub" / "b.txt"]) == ["sub/b.txt"]
        assert sorted(co.status_paths([tree / "new.txt", "sub"])) == [
            "new.txt",
            "sub/moved.txt",
            "sub/untracked.txt",
        ]
        assert sorted(co.status_paths([tree])) == [
            "a.txt",
            "new.txt",
            "sub/moved.txt",
            "sub/untracked.txt",
        ]
        # tracked_changes leaves the untracked files out
        assert sorted(co.tracked_changes()) == ["a.txt", "sub/moved.txt"]


def test_run_with_input_pipes_stdin_without_a_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("run_with_input made a temporary file")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_file)
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", no_file)
    # Large enough to fill any pipe buffer: stdin and stdout are served together.
    data = bytes(range(256)) * 40_000
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    with Checkout(tree, require_llvm=False) as co:
        assert co.run_with_input(["hash-object", "--stdin"], data) == blob
        assert co.run_with_input(["hash-object", "--stdin"], b"") == (
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        )
        # Output as run() gives it: only the final newline dropped.
        assert co.run_with_input(["stripspace"], b"\n\n") == ""
        assert co.run_with_input(["stripspace"], b"a  \n\n\n\nb\n\n") == "a\n\nb"
        assert co.run(
            "stripspace", istream=None, strip_newline_in_stdout=True
        ) == co.run_with_input(["stripspace"], b"")
        out = co.run_with_input(
            ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            b"HEAD\nHEAD:a.txt\n",
        )
        head = git(tree, "rev-parse", "HEAD").strip()
        blob_a = git(tree, "rev-parse", "HEAD:a.txt").strip()
        assert out == f"{head} commit\n{blob_a} blob"


def test_run_with_input_failure_is_one_line_git_error(tree: Path) -> None:
    with Checkout(tree, require_llvm=False) as co, pytest.raises(GitError) as caught:
        co.run_with_input(["hash-object", "-t", "no-such-type", "--stdin"], b"x")
    message = str(caught.value)
    assert message.startswith(f"{tree}: git hash-object failed: ")
    assert "no-such-type" in message
    assert "\n" not in message
    assert not message.endswith("'")  # GitPython's quoting removed


def test_every_git_command_reaches_the_test_hook(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A count the hook never reaches: it only counts.
    monkeypatch.setenv("KDL_TEST_SIGNAL_AFTER_GIT", "1000000:9")
    monkeypatch.setattr(checkout, "_GIT_CALLS", [0])
    with Checkout(tree, require_llvm=False) as co:
        co.run_with_input(["hash-object", "--stdin"], b"x")
        assert checkout._GIT_CALLS == [1]
        with pytest.raises(GitError):
            co.run_with_input(["hash-object", "-t", "bad", "--stdin"], b"x")
        assert checkout._GIT_CALLS == [2]
        co.describe()
        co.status_paths(["a.txt"])
        assert checkout._GIT_CALLS == [4]
