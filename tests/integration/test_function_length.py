"""scripts/check-function-length.py, the lint stage's rule that no function in workloads/ or bench/ is over 60 lines:
a function of 61 lines fails and one of 60 passes; the tokenizer finds every function's extent through what would
mislead a brace counter (braces in strings, raw strings, character literals and comments, digit separators, both
branches of an #if, member initializers in braces, lambdas, operator())."""
import importlib.util
import subprocess
import sys

from helpers import ROOT

SCRIPT = ROOT / "scripts" / "check-function-length.py"
_spec = importlib.util.spec_from_file_location("check_function_length", SCRIPT)
assert _spec and _spec.loader
cfl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cfl)


def function_of(lines: int, name: str = "f") -> str:
    """A function `name` of exactly `lines` lines, signature to closing brace."""
    body = "".join(f"  x += {i};\n" for i in range(lines - 2))
    return f"int {name}(int x) {{\n{body}}}\n"


def run(tmp_path, *args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_a_function_of_61_lines_fails_and_one_of_60_passes(tmp_path):
    (tmp_path / "long.cpp").write_text("// a comment line\n" + function_of(61, "tooLong"))
    (tmp_path / "fits.cpp").write_text(function_of(60, "fits"))
    r = run(tmp_path, str(tmp_path / "long.cpp"), str(tmp_path / "fits.cpp"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "long.cpp:2: tooLong is 61 lines (at most 60)" in r.stdout
    assert "fits" not in r.stdout
    r = run(tmp_path, str(tmp_path / "fits.cpp"))
    assert r.returncode == 0, r.stdout + r.stderr


TRICKY = r'''
#include <string>
namespace a::b {
namespace {
constexpr long kBig = 1'000'000;  // a digit separator is no character literal
const char* kOpen = "{ not a brace";
const char kBrace = '{';
}  // namespace

/* a comment with { braces } that
   spans lines */
std::string raw() {
  return R"x(a raw string with } and " and )" inside)x";
}

struct Widget : Base<decltype(f(1))> {
  Widget(int a, int b) : a_{a}, b_(b), c_{Thing{1, 2}} {
    if (a) {
      b_ = 1;
    }
  }
  ~Widget() = default;
  int operator()(int x) const noexcept { return x; }
  bool operator==(const Widget&) const = default;
  int a_{0};
  int b_ = 0;
  std::function<int(int)> twice = [](int v) { return 2 * v; };
  template <typename T>
  auto get(T t) -> decltype(t) {
    return t;
  }
};

enum class Kind { kA, kB };

int conditional(int x) {
#if SOMETHING
  if (x > 0) {
#else
  if (x < 0) {
#endif
    return 1;
  }
  auto lambda = [&](int y) {
    return y + x;
  };
  return lambda(x);
}

extern "C" {
void exported(void) {}
}
}  // namespace a::b

int Widget::outOfLine(int x) const {
  return x;
}
'''


def test_each_function_and_its_lines_through_what_misleads_a_brace_counter():
    found = {(f.name, f.first, f.last) for f in cfl.functions(TRICKY)}
    lines = TRICKY.splitlines()

    def line_of(text, start=0):
        return next(i + 1 for i, line in enumerate(lines) if i >= start and text in line)

    assert found == {
        ("raw", line_of("std::string raw()"), line_of("std::string raw()") + 2),
        ("Widget", line_of("Widget(int a"), line_of("Widget(int a") + 4),
        ("operator()", line_of("operator()"), line_of("operator()")),
        ("get", line_of("auto get("), line_of("auto get(") + 2),
        ("conditional", line_of("int conditional"), line_of("return lambda(x)") + 1),
        ("exported", line_of("void exported"), line_of("void exported")),
        ("Widget::outOfLine", line_of("Widget::outOfLine"), line_of("Widget::outOfLine") + 2),
    }, sorted(found)


def test_the_tokenizer_keeps_literals_whole_and_drops_comments_and_directives():
    texts = [t.text for t in cfl.tokenize('#define X { \\\n }\nint x = 1\'000; // {\nauto s = u8"}"; auto r = R"(})";')]
    assert texts == ["int", "x", "=", "1'000", ";", "auto", "s", "=", "<string>", ";", "auto", "r", "=", "<raw string>", ";"]
