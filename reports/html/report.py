"""`report`: results in, one self-contained HTML page out (plots embedded), plus each plot as PNG and
a summary.md. Every string taken from a result reaches the page through Jinja2's autoescaping."""
import datetime
from collections.abc import Callable, Sequence
from pathlib import Path

import jinja2

from ..accept.accept import Acceptance, section as accept_section
from .banner import Status, status_of
from ..common.files import staged_directory
from ..common.load import Result
from ..common.markdown import markdown_text
from .plots import PlotSink
from .profile import build_profile
from .sections import BuiltSection, all_sections

TEMPLATES = Path(__file__).resolve().parent / "templates"


# A section another wing builds for this page (history's trend section: the html wing does not import it).
MoreSection = Callable[[PlotSink], BuiltSection]


def build_sections(results: list[Result], outdir: str | Path, trace_dir: str | None = None,
                   acceptance: Acceptance | None = None, more: Sequence[MoreSection] = ()) -> list[BuiltSection]:
    plots = PlotSink(outdir)
    built: list[BuiltSection] = []
    if acceptance:  # first: the verdict on each host is what a bring-up run is for
        built.append({"key": "acceptance", "title": "Node acceptance", "blocks": accept_section(acceptance)})
    for section in all_sections():
        if section.applies(results):
            built.append({"key": section.key, "title": section.title, "blocks": section.build(results, plots)})
    if trace_dir:
        built.append(build_profile(trace_dir, plots, results))
    built += [make(plots) for make in more]
    return built


def _md_cell(v: object) -> str:
    return markdown_text(v)


def status_markdown(status: Status) -> list[str]:
    if status.ok:
        return [f"**Status: no problem found** ({_md_cell(', '.join(status.checked))}): {_md_cell(status.all_clear)}.", ""]
    lines = [f"**Status: {len(status.problems)} problem(s)**", ""]
    lines += [f"- {_md_cell(title)}: {_md_cell(text)}" for _, title, text in status.problems]
    return lines + [""]


def summary_markdown(title: str, results: Sequence[Result], sections: list[BuiltSection], status: Status | None = None) -> str:
    runs = [f"- **{_md_cell(r.label)}**: {_md_cell(r.path)}"
            + (f" — **incomplete**: {_md_cell(r.incomplete)}" if r.incomplete else "")
            for r in results]
    out = [f"# {_md_cell(title)}", ""] + status_markdown(status or status_of(list(results), sections)) + runs + [""]
    for s in sections:
        out += [f"## {s['title']}", ""]
        for b in s["blocks"]:
            if b["kind"] in ("text", "alert"):
                bold = "**" if b["kind"] == "alert" else ""
                out += [bold + _md_cell(b["text"]) + bold, ""]
            elif b["kind"] == "table":
                out += [f"**{_md_cell(b['caption'])}**", "", "| " + " | ".join(_md_cell(c) for c in b["columns"]) + " |",
                        "|" + "---|" * len(b["columns"])]
                out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b["rows"]] + [""]
            elif b["kind"] == "plot":
                out += [f"![{_md_cell(b['alt'])}]({b['file']})", ""]
    return "\n".join(out)


def write_page(stage: Path, title: str, sections: list[BuiltSection], status: Status, results: Sequence[Result] = (),
               meta: str | None = None) -> None:
    """index.html and summary.md of `sections` into the directory `stage`: the report's page, and any other page of
    the same look (`history report`'s trend pages), whose `meta` line replaces the report's count of results."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    made_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    html = env.get_template("report.html.j2").render(title=title, results=results, sections=sections, made_at=made_at,
                                                     status=status, meta=meta)
    (stage / "index.html").write_text(html)
    (stage / "summary.md").write_text(summary_markdown(title, results, sections, status))


def write_report(results: list[Result], outdir: str | Path, title: str = "trainscope report",
                 trace_dir: str | None = None, acceptance: Acceptance | None = None, more: Sequence[MoreSection] = ()) -> Path:
    """Everything is written into a staging directory first and moved into `outdir` once complete: a report
    that fails part-way (an unreadable --trace) leaves `outdir` as it was."""
    with staged_directory(outdir) as stage:
        sections = build_sections(results, stage, trace_dir, acceptance, more)
        write_page(stage, title, sections, status_of(results, sections), results)
    return Path(outdir) / "index.html"
