"""The repository a worktree belongs to, and git run there as ketch runs it.

Every git here goes through :func:`ketch_git_kit.run_git`: no filter, hook, merge
driver, fsmonitor or signing program the repository (or a file it includes) names
ever runs. Before ketch changes anything in a repository it also refuses one whose
configuration points git at another work tree (``core.worktree``): a merge there
would write somewhere else than the person expects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ketch_git_kit import GitRun, find_repository, run_git
from ketch_worktree_kit.layout import WorktreeError, repository_folder

# A checkout or a merge of a large repository takes longer than a look.
LONG = 300.0


@dataclass(frozen=True)
class Repo:
    """A repository with a work tree: ``main`` (its main work tree), ``common_dir``
    (its git directory, shared by every worktree), and ``here`` (the work tree ketch was
    started in: the main one, or a linked worktree of it)."""

    main: Path
    common_dir: Path
    here: Path
    environ: Mapping[str, str]

    @classmethod
    def of(cls, start: Path, environ: Mapping[str, str] | None = None) -> Repo:
        environ = dict(os.environ if environ is None else environ)
        found = find_repository(start)
        if found is None:
            raise WorktreeError(
                f"{start} is not in a git repository: worktrees need one (git init, and a first commit)"
            )
        if found.work_tree is None:
            raise WorktreeError(f"{found.git_dir} is a bare repository: worktrees need a work tree")
        common = Path(os.path.realpath(found.common_dir))
        if common.name != ".git":
            raise WorktreeError(
                f"the repository's git directory {common} is not the .git of a work tree; "
                "ketch makes worktrees only of an ordinary repository"
            )
        return cls(common.parent, common, Path(os.path.realpath(found.work_tree)), environ)

    @property
    def folder(self) -> Path:
        """Where this repository's worktrees and their records live."""
        return repository_folder(self.common_dir, self.main)

    def git(
        self,
        args: Sequence[str],
        cwd: Path | None = None,
        *,
        timeout: float = 30.0,
        index_file: Path | None = None,
    ) -> GitRun:
        where = cwd or self.main
        return run_git(
            list(args),
            where,
            environ=self.environ,
            timeout=timeout,
            avoid=where,
            index_file=index_file,
        )

    def must(
        self,
        args: Sequence[str],
        cwd: Path | None = None,
        *,
        what: str,
        timeout: float = 30.0,
        index_file: Path | None = None,
    ) -> str:
        """git's stdout (stripped); a WorktreeError saying ``what`` failed otherwise."""
        run = self.git(args, cwd, timeout=timeout, index_file=index_file)
        if not run.ok:
            raise WorktreeError(f"{what}: {run.reason()}")
        return run.stdout.decode("utf-8", "surrogateescape").strip()

    def head(self, cwd: Path | None = None) -> str:
        run = self.git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd)
        if not run.ok:
            raise WorktreeError(
                f"{cwd or self.main} has no commit yet: commit something first (a worktree starts from a commit)"
            )
        return run.stdout.decode().strip()

    def branch_exists(self, branch: str) -> bool:
        return self.git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"]).ok

    def identity(self, cwd: Path | None = None) -> list[str]:
        """``-c user.name=…``/``user.email`` only where the person configured none (a
        commit needs them); their own identity is used when they have one."""
        from ketch_git_kit import git_executable, read_config

        git = git_executable(self.environ, cwd or self.main)
        have: set[str] = set()
        if git is not None:
            try:
                have = {
                    e.key.lower()
                    for e in read_config(cwd or self.main, git=git, environ=self.environ)
                }
            except Exception:  # noqa: BLE001 - then the fallback identity is used
                have = set()
        args: list[str] = []
        if "user.name" not in have:
            args += ["-c", "user.name=ketch"]
        if "user.email" not in have:
            args += ["-c", "user.email=ketch@localhost"]
        return args

    def refuse_redirects(self, cwd: Path | None = None) -> None:
        """A WorktreeError when the repository's config sends git to another work tree."""
        from ketch_git_kit import git_executable, read_config

        where = cwd or self.main
        git = git_executable(self.environ, where)
        if git is None:
            raise WorktreeError("git is not installed")
        try:
            entries = read_config(where, git=git, environ=self.environ)
        except Exception as exc:  # noqa: BLE001 - ConfigUnreadable, said in one line
            raise WorktreeError(f"the repository's git config cannot be read ({exc})") from None
        for entry in entries:
            if entry.key.lower() == "core.worktree" and entry.scope in ("local", "worktree"):
                raise WorktreeError(
                    f"the repository's config sets core.worktree = {entry.value} ({entry.origin}): "
                    "git would work on another folder, so ketch changes nothing here"
                )

    def merge_in_progress(self) -> bool:
        return (self.common_dir / "MERGE_HEAD").exists()
