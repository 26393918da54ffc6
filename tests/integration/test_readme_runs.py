"""Every command the README shows runs as shown (issue #22): scripts/readme_outputs.py --check runs them in order
in a scratch directory — the ones that show an error line must fail with it, the others exit 0 (compare's
verdicts may be any of 0, 1, 3) — and every output line the README shows still has a line of its shape in the
fresh output (numbers aside), so a renamed column or a changed message makes the README stale and this test red.
`scripts/readme_outputs.py --write` refreshes the figures. Minutes: the README's examples are real runs, so each
page's chains (`<!-- readme-chain: NAME -->`, each in a scratch directory of its own) are tests of their own."""
import os
import shutil
import subprocess

import pytest

from helpers import ROOT, readme_outputs

pytestmark = pytest.mark.long  # minutes: started first under pytest-xdist (tests/README.md)


def page_chains():
    """(page, chain) for every chain of every page: each runs in a scratch directory of its own, so the workers
    take them side by side (a group each) instead of one test of minutes ending the parallel run alone."""
    ro = readme_outputs()
    for page in ro.pages():
        name = ro.shown_path(page)
        # The README's last chains run the suites, its longest commands (a minute for `suite quick`): started first,
        # so that none of them starts last and ends the parallel run alone.
        chains = ro.chains(ro.parse(page.read_text().splitlines(), name))
        for chain in reversed(chains) if page == ro.README else chains:
            yield pytest.param(name, chain, id=f"{name}:{chain}", marks=pytest.mark.xdist_group(f"readme {name} {chain}"))


@pytest.mark.parametrize(("page", "chain"), page_chains())
def test_every_readme_command_runs_as_shown(page, chain):
    if not (ROOT / "build" / "trainscope").exists():
        pytest.skip("no build/trainscope (scripts/setup.sh builds it)")
    if os.geteuid() != 0 or shutil.which("unshare") is None or subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        pytest.skip("the README's outputs name the host vm: the check gives its runs that name in a UTS namespace (root)")
    check = [str(ROOT / "scripts" / "readme_outputs.py"), "--check", "--file", page, "--chain", chain]
    r = subprocess.run(["/usr/bin/python3", *check], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    problems = [line for line in r.stderr.splitlines() if line.startswith("readme: FAIL")]
    assert r.returncode == 0 and not problems, "\n".join(problems) or r.stderr[-3000:]
