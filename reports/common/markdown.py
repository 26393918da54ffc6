"""Text from result files as Markdown: inert wherever it lands (a table cell, a heading, a list item).

A label or a host name is input: written raw into summary.md or a CI job summary it could carry HTML
(`<img src=x onerror=...>`), a link, or a `|` that breaks the table. Here every character Markdown or HTML
gives a meaning is escaped: `<`, `>` and `&` as HTML entities (GitHub renders raw HTML in Markdown), the
Markdown punctuation with a backslash, and line breaks become spaces.
"""
import html

_MARKDOWN_PUNCTUATION = set("\\`*_[]#!|~")


def markdown_text(value: object) -> str:
    text = html.escape(str(value), quote=False).replace("\r", " ").replace("\n", " ")
    return "".join("\\" + c if c in _MARKDOWN_PUNCTUATION else c for c in text)
