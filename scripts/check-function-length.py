#!/usr/bin/env python3
"""Fails when a function in workloads/ or bench/ is longer than 60 lines, from its signature's first line to its
closing brace (member functions, constructors, operators and functions defined in headers included); prints each
one as PATH:LINE: NAME is N lines. There is no list of excused functions: one over the limit is split along its seams.

    scripts/check-function-length.py [--max N] [PATH...]   (default: workloads bench)

Why a tokenizer and not libclang: a real parse of one translation unit with its includes (nlohmann/json, fmt's
compile-time format strings, CLI11) costs 2 to 5 s of CPU even with function bodies skipped, so the 140 sources here
would take minutes on a 2-core machine. A function's extent needs no types: the C++ tokens (comments, string, raw
string and character literals, digit separators and preprocessor lines taken out; of an #if chain only the first
branch) and the braces at declaration level give it. tests/integration/test_function_length.py holds the tokenizer
to tricky inputs."""
import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 60
DIRS = ("workloads", "bench")
SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}


@dataclass(frozen=True)
class Token:
    text: str
    line: int


@dataclass(frozen=True)
class Function:
    name: str
    first: int  # the signature's first line
    last: int  # the closing brace's line

    @property
    def lines(self) -> int:
        return self.last - self.first + 1


_IDENT = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"\.?\d(?:'?[\w.]|[eEpP][+-])*")  # a pp-number: 1'000'000, 0x1p-3, 1.5e+3f
_RAW = re.compile(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(')
_PREFIXED = re.compile(r"(?:u8|[uUL])(?=[\"'])")
_PUNCT = ("::", "->", "...", "&&", "||", "<<=", ">>=", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
          "^=", "++", "--", "<<", ">>", ".*", "->*")


def _skip_quoted(src: str, i: int, quote: str) -> int:
    """The index after the literal opened by src[i] == quote (escapes honoured; an unterminated one ends at the line)."""
    i += 1
    while i < len(src) and src[i] != quote and src[i] != "\n":
        i += 2 if src[i] == "\\" else 1
    return i + 1


def _directive_end(src: str, i: int) -> int:
    """The index of the newline ending the preprocessor line at i (continuations and comments inside it followed)."""
    while i < len(src) and src[i] != "\n":
        if src.startswith("\\\n", i):
            i += 2
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            i = len(src) if end < 0 else end + 2
        elif src.startswith("//", i):
            while i < len(src) and src[i] != "\n":
                i += 2 if src.startswith("\\\n", i) else 1
        else:
            i += 1
    return i


class _Conditionals:
    """Which tokens count under #if/#ifdef chains: only the first branch's (both branches of
    `#if A  if (x) {  #else  if (y) {  #endif` would open two braces for one closing)."""

    def __init__(self) -> None:
        self.stack: list[bool] = []  # per open #if: whether its first branch is over

    def directive(self, text: str) -> None:
        word = re.match(r"#\s*(\w*)", text)
        kind = word.group(1) if word else ""
        if kind.startswith("if"):
            self.stack.append(False)
        elif kind in ("else", "elif", "elifdef", "elifndef") and self.stack:
            self.stack[-1] = True
        elif kind == "endif" and self.stack:
            self.stack.pop()

    @property
    def active(self) -> bool:
        return not any(self.stack)


def tokenize(src: str) -> list[Token]:
    """The C++ tokens of src that shape declarations: identifiers, numbers, punctuation, and each literal as one
    token; comments and preprocessor lines dropped."""
    tokens: list[Token] = []
    cond = _Conditionals()
    i, line, line_start = 0, 1, True  # line_start: only whitespace since the last newline
    while i < len(src):
        c = src[i]
        start_line = line
        if c == "\n":
            i, line, line_start = i + 1, line + 1, True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if src.startswith("\\\n", i):
            i, line = i + 2, line + 1
            continue
        if src.startswith("//", i):
            while i < len(src) and src[i] != "\n":
                i += 2 if src.startswith("\\\n", i) else 1
            line = src.count("\n", 0, i) + 1
            continue
        if src.startswith("/*", i):
            end = src.find("*/", i + 2)
            i = len(src) if end < 0 else end + 2
            line = src.count("\n", 0, i) + 1
            continue
        if c == "#" and line_start:
            end = _directive_end(src, i)
            cond.directive(src[i:end])
            i, line = end, src.count("\n", 0, end) + 1
            continue
        line_start = False
        raw = _RAW.match(src, i)
        if raw:
            close = src.find(")" + raw.group(1) + '"', raw.end())
            end = len(src) if close < 0 else close + len(raw.group(1)) + 2
            text = "<raw string>"
        elif c in "\"'" or _PREFIXED.match(src, i):
            q = i + (len(_PREFIXED.match(src, i).group(0)) if c not in "\"'" else 0)  # type: ignore[union-attr]
            end = _skip_quoted(src, q, src[q])
            text = "<string>" if src[q] == '"' else "<char>"
        elif (m := _NUMBER.match(src, i)) is not None:
            end, text = m.end(), m.group(0)
        elif (m := _IDENT.match(src, i)) is not None:
            end, text = m.end(), m.group(0)
        else:
            text = next((p for p in _PUNCT if src.startswith(p, i)), c)
            end = i + len(text)
        line = src.count("\n", 0, end) + 1 if "\n" in src[i:end] else line
        i = end
        if cond.active:
            tokens.append(Token(text, start_line))
    return tokens


_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
# What may follow a function's parameter list before its body (or its constructor's member initializers).
_TAIL = {"const", "volatile", "&", "&&", "noexcept", "override", "final", "mutable", "constexpr", "throw", "[", "("}
_CONTAINERS = {"namespace", "class", "struct", "union", "enum", "extern"}
_ACCESS = {"public", "private", "protected"}


def _match(tokens: list[Token], i: int) -> int:
    """The index of the bracket closing the one opened at i (any kind; a stray closer ends it): the end if none."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j].text
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def _skip_template_header(head: list[int], tokens: list[Token]) -> int:
    """The position in head after leading `template <...>` clauses and [[attributes]]."""
    k = 0
    while k < len(head):
        t = tokens[head[k]].text
        if t == "template" and k + 1 < len(head) and tokens[head[k + 1]].text == "<":
            depth, k = 0, k + 1
            while k < len(head):
                depth += {"<": 1, ">": -1, ">>": -2}.get(tokens[head[k]].text, 0)
                k += 1
                if depth <= 0:
                    break
        elif t == "[" and k + 1 < len(head) and tokens[head[k + 1]].text == "[":
            k += 2  # the attribute's inside is one group in head: [ [ (group) ] ] read as tokens
            while k < len(head) and tokens[head[k]].text != "]":
                k += 1
            k += 2
        else:
            return k
    return k


def _group_end(texts: list[str], k: int) -> int:
    """The index of the bracket closing the one at texts[k] (groups are flattened into a head)."""
    depth = 0
    for j in range(k, len(texts)):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(texts[j], 0)
        if depth == 0:
            return j
    return len(texts) - 1


def _follows_parameters(texts: list[str], j: int) -> tuple[bool, bool]:
    """Whether texts[j:] is what may follow a parameter list (qualifiers, noexcept(...), a trailing return type, a
    requires clause), and whether member initializers (`:`) come after it."""
    while j < len(texts):
        if texts[j] in ("->", "requires", "try"):
            return True, False
        if texts[j] == ":":
            return True, True
        if texts[j] not in _TAIL:
            return False, False
        if texts[j] in ("(", "["):  # noexcept(...), throw(...), [[attribute]]
            j = _group_end(texts, j)
        j += 1
    return True, False


def _parameter_list(head: list[int], tokens: list[Token]) -> tuple[int, bool] | None:
    """(position in head of the parameter list's `(`, whether member initializers follow) when head declares a
    function: the first top-level parenthesised group followed only by what may follow a parameter list; None for a
    variable (a lambda assigned to one included), a class, an initializer."""
    texts = [tokens[h].text for h in head]
    k = 0
    while k < len(texts):
        t = texts[k]
        if t == "=" and not (k > 0 and texts[k - 1] == "operator"):
            return None
        if t in ("[", "{"):
            k = _group_end(texts, k) + 1
            continue
        if t != "(":
            k += 1
            continue
        close = _group_end(texts, k)
        if k > 0 and texts[k - 1] == "operator" and close == k + 1:  # operator() is a name
            k = close + 1
            continue
        ok, init = _follows_parameters(texts, close + 1)
        if ok:
            return k, init
        k = close + 1
    return None


def _name(head: list[int], paren: int, tokens: list[Token]) -> str:
    """The (qualified) name written before the parameter list at head[paren]."""
    texts = [tokens[h].text for h in head[:paren]]
    k = len(texts)
    op = next((j for j in range(k - 1, max(-1, k - 5), -1) if texts[j] == "operator"), None)
    if op is not None:
        k = op
    elif k and (_IDENT.fullmatch(texts[k - 1]) or texts[k - 1] == ">"):
        k -= 1
        if texts[k] == ">":  # a specialisation's template arguments
            depth = 0
            while k >= 0:
                depth += {">": 1, "<": -1, ">>": 2}.get(texts[k], 0)
                if depth == 0:
                    break
                k -= 1
            k -= 1
    if k > 0 and texts[k - 1] == "~":
        k -= 1
    while k >= 2 and texts[k - 1] == "::" and _IDENT.fullmatch(texts[k - 2]):
        k -= 2
    return "".join(texts[k:]) or "<unnamed>"


def functions(src: str) -> list[Function]:
    """Every function defined in src at namespace or class scope, with its first and last line."""
    tokens = tokenize(src)
    found: list[Function] = []
    _scope(tokens, 0, len(tokens), found)
    return found


def _scope(tokens: list[Token], i: int, end: int, found: list[Function]) -> None:
    """Reads the declarations of a namespace or class body, tokens[i:end]."""
    head: list[int] = []  # indexes of the current declaration's tokens (groups in brackets included)
    while i < end:
        t = tokens[i].text
        if t == ";" or (t == ":" and len(head) == 1 and tokens[head[0]].text in _ACCESS):
            head, i = [], i + 1
            continue
        if t not in _OPEN:
            head.append(i)
            i += 1
            continue
        close = _match(tokens, i)
        body = head[_skip_template_header(head, tokens):]
        fn = _parameter_list(body, tokens) if t == "{" else None
        prev = tokens[head[-1]].text if head else ""
        if t != "{" or (fn is not None and fn[1] and (_IDENT.fullmatch(prev) or prev == ">")):
            head.extend(range(i, close + 1))  # a group of the declaration, or a member's brace initializer
        elif fn is not None:
            found.append(Function(_name(body, fn[0], tokens), tokens[body[0]].line, tokens[close].line))
            head = []
        elif body and tokens[body[0]].text in _CONTAINERS:
            if tokens[body[0]].text != "enum":
                _scope(tokens, i + 1, close, found)
            head = []
        else:
            head.extend(range(i, close + 1))  # an initializer: `int x{1};`, `= {...};`
        i = close + 1


def _sources(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        path = (ROOT / p) if not Path(p).is_absolute() else Path(p)
        if path.is_dir():
            files.extend(sorted(f for f in path.rglob("*") if f.suffix in SUFFIXES and f.is_file()))
        else:
            files.append(path)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=int, default=MAX_LINES, help="the most lines a function may have (default 60)")
    parser.add_argument("paths", nargs="*", default=list(DIRS), help="files or directories (default: workloads bench)")
    args = parser.parse_args(argv)
    failed: list[str] = []
    files = _sources(args.paths)
    for path in files:
        rel = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else str(path)
        for f in functions(path.read_text(errors="replace")):
            if f.lines <= args.max:
                continue
            failed.append(f"{rel}:{f.first}: {f.name} is {f.lines} lines (at most {args.max})")
    for line in failed:
        print(line)
    print(f"check-function-length: {len(files)} file(s); {len(failed)} function(s) over {args.max} lines", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
