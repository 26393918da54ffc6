"""Every trainscope command the README shows still parses: its subcommand and flags are the ones the
option tables declare (run with TRAINSCOPE_PARSE_ONLY, which stops after the command line is read).
What the commands then do is the other tests' business."""
import re
import shlex
import subprocess

import pytest

from helpers import ROOT, base_env, trainscope_path

from reports.common.option_facts import python_tools

PYTHON_TOOLS = set(python_tools())  # their flags are the Python tool's, tested in tests/reports


def readme_commands():
    commands = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs" / "tasks").glob("*.md"))]:  # the README and its task pages
        commands += page_commands(page)
    return commands


def page_commands(page):
    commands = []
    lines = page.read_text().splitlines()
    hidden = False  # inside an HTML comment: a readme-setup block (scripts/readme_outputs.py runs those)
    for number, line in enumerate(lines, 1):
        if line.startswith("<!--"):
            hidden = not line.rstrip().endswith("-->")
            continue
        if hidden:
            hidden = not line.rstrip().endswith("-->")
            continue
        start = line.find("build/trainscope ")
        if start < 0 or line.lstrip().startswith(("#", "|")) or "`" in line:
            continue
        text = line[start + len("build/trainscope "):]
        text = re.split(r"\s+#|\||;|&&|\s>|\s&\s*$", text)[0].replace("$i", "1")
        try:
            argv = shlex.split(text)
        except ValueError:  # the command inside a quoted shell command (`sh -c "... build/trainscope X" >/dev/null`)
            argv = shlex.split(text[:text.rindex('"')])
        if argv and argv[0] not in PYTHON_TOOLS:
            shown = lines[number] if number < len(lines) and lines[number].startswith("trainscope: error:") else None
            name = "README" if page.name == "README.md" else page.name
            commands.append(pytest.param(argv, shown, id=f"{name}:{number}"))
    return commands


COMMANDS = readme_commands()


def test_the_readme_shows_commands_of_every_measuring_subcommand():
    shown = {c.values[0][0] for c in COMMANDS}
    assert {"env", "links", "collectives", "kernels", "train", "scale", "suite"} <= shown


@pytest.mark.parametrize("argv,shown_error", COMMANDS)
def test_a_readme_command_parses(argv, shown_error):
    """A command the README shows failing either fails later (rc 0 here) or fails the parse with the
    very line the README shows."""
    env = base_env({"TRAINSCOPE_PARSE_ONLY": "1"})
    r = subprocess.run([trainscope_path(), *argv], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    if shown_error and r.returncode != 0:
        assert r.stderr.strip() == shown_error
    else:
        assert r.returncode == 0, r.stderr
