"""The README as a manual (issue #35): a task index at the top whose pages exist, every mpirun example with more
ranks than a 2-core machine has carries --oversubscribe, and the README check runs the README and every task
page exactly as printed: no hidden set-up block, no Open MPI allowance or oversubscription of its own."""
import re

import pytest

from helpers import ROOT, readme_outputs

TASKS = ROOT / "docs" / "tasks"
CORES = 2  # the smallest machine the examples are printed for (CI's VM)
# An example that names other hosts or GPUs is not for one small machine: its ranks have slots of their own.
ELSEWHERE = re.compile(r"-H |--host|hostfile|netns-cluster|--npernode|ppr:|--device cuda|--backend nccl|GPU")


def documents():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(TASKS.glob("*.md"))]


def mpirun_ranks(line: str):
    """(ranks, the words after mpirun) of each mpirun the line shows: its -np, among the words before the program."""
    words = line.replace("`", " ").split()
    for i, w in enumerate(words):
        if w != "mpirun":
            continue
        options = []
        for word in words[i + 1:]:
            if "/" in word:
                break  # the program mpirun starts
            options.append(word)
        for j, word in enumerate(options[:-1]):
            if word == "-np" and options[j + 1].isdigit():
                yield int(options[j + 1]), words[i + 1:]
                break


def test_every_mpirun_example_with_more_ranks_than_cores_oversubscribes():
    missing = []
    for doc in documents():
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for ranks, rest in mpirun_ranks(line):
                if ranks > CORES and "--oversubscribe" not in rest and not ELSEWHERE.search(line):
                    missing.append(f"{doc.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not missing, "mpirun -np N > 2 without --oversubscribe (\"not enough slots\" on 2 cores):\n" + "\n".join(missing)


def test_the_oversubscribe_check_sees_a_bare_example():
    assert [r for r, _ in mpirun_ranks("$ mpirun -np 4 build/trainscope env")] == [4]
    assert [r for r, _ in mpirun_ranks("`TRAINSCOPE_FAULT=x mpirun -np 3 --oversubscribe build/trainscope train`")] == [3]


def test_the_readme_opens_with_a_task_index_of_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    top = readme.split("\n## ", 1)[0]
    linked = re.findall(r"\]\((docs/tasks/[\w-]+\.md)\)", top)
    pages = sorted(p.relative_to(ROOT).as_posix() for p in TASKS.glob("*.md"))
    assert len(pages) >= 5 and sorted(set(linked)) == pages
    for task in ("bring up a node", "gate CI", "choose a fabric", "profile a training step", "train a layout"):
        assert task in top
    headings = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#{2,3} (.+)$", readme, re.M)}
    anchors = set(re.findall(r"\]\(#([\w-]+)\)", top))
    for page in TASKS.glob("*.md"):
        anchors |= set(re.findall(r"README\.md#([\w-]+)\)", page.read_text()))
    assert anchors and anchors <= headings, anchors - headings


def test_the_check_runs_every_task_page_and_each_runs_something():
    ro = readme_outputs()
    pages = ro.pages()
    assert pages[0] == ROOT / "README.md" and set(TASKS.glob("*.md")) <= set(pages)
    for page in TASKS.glob("*.md"):
        commands = [c for b in ro.parse(page.read_text().splitlines(), page.name) for c in b.commands]
        assert any("build/trainscope" in c.text for c in commands), page


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_hides_set_up_from_its_reader(doc):
    assert "<!-- readme-setup" not in doc.read_text()


def test_the_check_refuses_a_hidden_set_up_block():
    ro = readme_outputs()
    with pytest.raises(SystemExit, match="hidden set-up"):
        ro.parse(["<!-- readme-setup", "touch x", "-->", "```", "$ cat x", "```"], "page.md")


def test_the_check_brings_no_environment_of_its_own(monkeypatch):
    """Root allowance and oversubscription reach a command only from the page (a shown export), not from the
    checker or the shell that started it."""
    ro = readme_outputs()
    planted = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "OMPI_MCA_rmaps_base_oversubscribe", "TRAINSCOPE_HOME")
    for name in planted:
        monkeypatch.setenv(name, "1")
    assert not set(planted) & set(ro.environment())
    assert ro.exported("export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # as root only") == {
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    assert ro.exported("build/trainscope env") is None


def test_a_list_ranked_by_time_is_matched_by_place_when_load_reorders_it():
    """analyze ranks a collectives trace's spans by their time, so on a loaded machine another size can stand second
    (CI, stop 46: the in-place and out-of-place 1 MiB spans changed places). The README's block declares its rows
    ranked, so the check matches them by place, as it does compare's rows."""
    ro = readme_outputs()
    lines = (ROOT / "README.md").read_text().splitlines()
    block = next(b for b in ro.parse(lines) if any("analyze results/ct" in c.text for c in b.commands))
    cmd = next(c for c in block.commands if "analyze results/ct" in c.text)
    shown = [lines[k] for k in cmd.shown]
    loaded = [shown[0], shown[1],
              "        10.211 ms  48.0%  all_reduce 1 MiB (262144 x float32 sum, in-place)",
              "         9.102 ms  42.7%  all_reduce 1 MiB (262144 x float32 sum, out-of-place)"]
    found = ro.match(shown, loaded, block.ranked)
    assert [f[0] if f else None for f in found] == [0, 1, 2, 3]


def test_a_chain_runs_in_a_directory_of_its_own_with_what_the_page_exported_before_it(tmp_path):
    """A chain (`<!-- readme-chain: NAME -->`) is what a reader who starts there runs: the files of the chains before
    it are not there (a chain that needs them fails, so the cut cannot hide a dependence), the page's exports are."""
    page = tmp_path / "page.md"
    page.write_text("# one\n\n```\n$ export GREETING=hello\n$ echo made > made.txt\n```\n\n"
                    "<!-- readme-chain: two -->\n# two\n\n```\n$ echo $GREETING\nhello\n$ cat made.txt\nmade\n```\n")
    ro = readme_outputs()
    assert ro.chains(ro.parse(page.read_text().splitlines())) == ["start", "two"]
    outcome = ro.Outcome()
    ro.run_page(page, None, outcome, False, "two")
    assert outcome.ran == 2
    assert len(outcome.problems) == 1 and "`cat made.txt` exited 1" in outcome.problems[0], outcome.problems
    whole = ro.Outcome()
    ro.run_page(page, None, whole, False)
    assert whole.ran == 4 and len(whole.problems) == 1, whole.problems  # chains stay apart in a whole-page run too
