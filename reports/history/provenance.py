"""Which commit and branch a run added to the history is of, when `history add` is not told: the CI system's own
variables (the first system whose commit variable is set gives both), else git in the working directory."""
import os
import subprocess
from dataclasses import dataclass

from ..common.errors import InputError


@dataclass(frozen=True)
class CiSystem:
    name: str
    commit: str               # the variable holding the commit's SHA
    branches: tuple[str, ...]  # the variables that may hold its branch, first set wins


# GitHub's GITHUB_SHA of a pull_request event is the merge commit GitHub made, not the branch's head: pass
# --commit ${{ github.event.pull_request.head.sha }} there (docs/ci-recipe). GITHUB_HEAD_REF is set on pull requests only.
CI_SYSTEMS = (
    CiSystem("GitHub Actions", "GITHUB_SHA", ("GITHUB_HEAD_REF", "GITHUB_REF_NAME")),
    CiSystem("GitLab CI", "CI_COMMIT_SHA", ("CI_COMMIT_BRANCH", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME")),
    CiSystem("Buildkite", "BUILDKITE_COMMIT", ("BUILDKITE_BRANCH",)),
    CiSystem("CircleCI", "CIRCLE_SHA1", ("CIRCLE_BRANCH",)),
    CiSystem("Azure Pipelines", "BUILD_SOURCEVERSION", ("SYSTEM_PULLREQUEST_SOURCEBRANCH", "BUILD_SOURCEBRANCHNAME")),
    CiSystem("Bitbucket Pipelines", "BITBUCKET_COMMIT", ("BITBUCKET_BRANCH",)),
    CiSystem("Travis CI", "TRAVIS_COMMIT", ("TRAVIS_PULL_REQUEST_BRANCH", "TRAVIS_BRANCH")),
    CiSystem("Drone", "DRONE_COMMIT_SHA", ("DRONE_SOURCE_BRANCH", "DRONE_BRANCH")),
    CiSystem("Jenkins", "GIT_COMMIT", ("GIT_LOCAL_BRANCH", "GIT_BRANCH")),
)


def variables() -> tuple[str, ...]:
    """Every variable read here (tests clear them)."""
    return tuple(v for s in CI_SYSTEMS for v in (s.commit, *s.branches))


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def commit_and_branch(commit: str | None, branch: str | None) -> tuple[str, str]:
    """The run's commit and branch: as given, else from the CI's variables, else git's HEAD (the branch "" when HEAD
    is detached and nothing names one)."""
    system = next((s for s in CI_SYSTEMS if _env(s.commit)), None)
    if not commit:
        commit = _env(system.commit) if system else _git("rev-parse", "HEAD")
    if not commit:
        raise InputError("no commit to file the runs under: give --commit (no CI variable such as GITHUB_SHA or "
                         "CI_COMMIT_SHA is set, and the working directory is not in a git repository)")
    if branch is None:
        named = next((_env(v) for v in system.branches if _env(v)), "") if system else ""
        branch = named or _git("symbolic-ref", "--short", "-q", "HEAD")
    if branch.startswith("origin/"):  # Jenkins names the remote's branch
        branch = branch[len("origin/"):]
    for what, value in (("--commit", commit), ("--branch", branch)):
        if len(value) > 200 or any(not c.isprintable() for c in value):
            raise InputError(f"{what}: {value[:40]!r}...: at most 200 printable characters")
    return commit, branch
