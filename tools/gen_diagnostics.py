#!/usr/bin/env python3
"""Generates docs/diagnostics.md, the catalogue of dtl's compile-time diagnostics, from its
sources of truth: the compile-fail tests (tests/compile_fail/*.cpp, whose first line is
`// expect: TEXT` or `// expect-first: TEXT`) say which diagnostics exist, what causes each
(their comments and the line marked `// the misuse`) and show the offending code; the
static_assert messages in include/dtl (the whole message whose text the test expects) give the fix.

Usage:
  python3 tools/gen_diagnostics.py > docs/diagnostics.md    # regenerate
  python3 tools/gen_diagnostics.py --check                  # exit 1 if docs/diagnostics.md is stale
Standard library only. Fails (exit 1) if a test's expected text is in no static_assert message.
"""
import difflib
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests" / "compile_fail"
INCLUDE = ROOT / "include" / "dtl"
PAGE = ROOT / "docs" / "diagnostics.md"
REGENERATE = "python3 tools/gen_diagnostics.py > docs/diagnostics.md"

# Sections, by the test file's name prefix (a new prefix gets a section of its own at the end).
AREAS = [
    ("trial", "Trials"),
    ("callback", "Callbacks"),
    ("loader", "DataLoader"),
    ("sampler", "Sampler pipelines"),
    ("reducer", "Reducers"),
    ("lr", "LR schedulers"),
    ("length", "Lengths and periods (units)"),
]


# --- C++ static_assert messages ------------------------------------------------------------------
TOKEN_RE = re.compile(
    r"""(?P<ws>[ \t\r\f\v]+)
      | (?P<nl>\n)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\ ]{0,16})\((?P<rawbody>.*?)\)(?P=delim)")
      | (?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*")
      | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*')
      | (?P<id>[A-Za-z_]\w*)
      | (?P<num>\.?\d(?:[\w.']|[eEpP][+-])*)
      | (?P<hashhash>\#\#)
      | (?P<punct>.)""",
    re.S | re.X,
)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "?": "?",
           "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def tokenize(text):
    """(kind, value) tokens; comments dropped, line continuations joined, newlines kept."""
    text = text.replace("\\\n", "")
    toks = []
    for m in TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind in ("ws", "comment", "delim", "rawbody"):
            if kind == "comment" and "\n" in m.group():
                toks.append(("nl", "\n"))
            continue
        if kind == "raw":
            toks.append(("str", m.group("rawbody")))
        elif kind == "str":
            body = m.group()[m.group().index('"') + 1:-1]
            toks.append(("str", re.sub(r"\\(.)", lambda e: ESCAPES.get(e.group(1), e.group(1)), body)))
        else:
            toks.append((kind, m.group()))
    return toks


def balanced(toks, i):
    """Index just past the ')' matching the '(' at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == ("punct", "("):
            depth += 1
        elif toks[j] == ("punct", ")"):
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def split_args(toks):
    """The arguments of a macro call, toks being what is between its parentheses."""
    args, cur, depth = [], [], 0
    for t in toks:
        if t[0] == "punct" and t[1] in "([{":
            depth += 1
        elif t[0] == "punct" and t[1] in ")]}":
            depth -= 1
        if depth == 0 and t == ("punct", ","):
            args.append(cur)
            cur = []
        else:
            cur.append(t)
    args.append(cur)
    return args


def assert_messages(toks):
    """The message of every static_assert in toks: its adjacent string literals, concatenated."""
    out = []
    for i, t in enumerate(toks):
        if t == ("id", "static_assert") and i + 1 < len(toks) and toks[i + 1] == ("punct", "("):
            inner = [x for x in toks[i + 2:balanced(toks, i + 1) - 1] if x[0] != "nl"]
            parts = []
            while inner and inner[-1][0] == "str":
                parts.insert(0, inner.pop()[1])
            if parts and inner and inner[-1] == ("punct", ","):
                out.append("".join(parts))
    return out


def header_messages(path, strings):
    """static_assert messages of one header: object-like macros in `strings` (name -> string
    literal) and this header's function-like macros that hold a static_assert expanded."""
    toks = tokenize(path.read_text(encoding="utf-8"))
    toks = [("str", strings[v]) if k == "id" and v in strings else (k, v) for k, v in toks]
    code, macros = [], {}
    i, line_start = 0, True
    while i < len(toks):
        t = toks[i]
        if line_start and t == ("punct", "#"):  # a directive: up to the end of its (joined) line
            j = i
            while j < len(toks) and toks[j][0] != "nl":
                j += 1
            d = toks[i + 1:j]
            if len(d) >= 3 and d[0] == ("id", "define") and d[2] == ("punct", "("):
                end = balanced(d, 2)
                params = [a[0][1] for a in split_args(d[3:end - 1]) if a]
                if any(x == ("id", "static_assert") for x in d[end:]):
                    macros[d[1][1]] = (params, d[end:])
            i, line_start = j, True
            continue
        line_start = t[0] == "nl"
        code.append(t)
        i += 1
    msgs = assert_messages(code)
    for name, (params, body) in macros.items():
        for k, t in enumerate(code):
            if t != ("id", name) or k + 1 >= len(code) or code[k + 1] != ("punct", "("):
                continue
            args = [[x for x in a if x[0] != "nl"] for a in split_args(code[k + 2:balanced(code, k + 1) - 1])]
            env = dict(zip(params, args))
            expanded, b = [], 0
            while b < len(body):
                if body[b] == ("punct", "#") and b + 1 < len(body) and body[b + 1][1] in env:
                    expanded.append(("str", " ".join(v for _, v in env[body[b + 1][1]])))  # #param
                    b += 2
                    continue
                expanded.extend(env.get(body[b][1], [body[b]]) if body[b][0] == "id" else [body[b]])
                b += 1
            msgs += assert_messages(expanded)
    return msgs


def string_macros(headers):
    """Object-like macros whose body is string literals (a message part several messages share)."""
    strings = {}
    for h in headers:
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]((?:.*\\\n)*.*)$", h.read_text(encoding="utf-8"), re.M):
            body = [t for t in tokenize(m.group(2)) if t[0] != "nl"]
            if body and all(k == "str" for k, _ in body):
                strings[m.group(1)] = "".join(v for _, v in body)
    return strings


def all_messages():
    msgs = []
    headers = sorted(INCLUDE.rglob("*.hpp"))
    strings = string_macros(headers)
    for h in headers:
        for m in header_messages(h, strings):
            msgs.append((h.relative_to(ROOT).as_posix(), m))
    return msgs


# --- the compile-fail tests ----------------------------------------------------------------------
class Test:
    def __init__(self, path):
        self.path = path
        self.name = path.stem
        self.lines = path.read_text(encoding="utf-8").split("\n")
        first = self.lines[0].strip()
        self.compiles = first == "// expect-compiles"
        m = re.match(r"// expect(?:-[a-z]+)?: (.+)$", first)  # `// expect: TEXT`, `// expect-first: TEXT`
        self.expect = m.group(1).strip() if m else None
        if not self.compiles and not m:
            raise SystemExit(f"gen_diagnostics: {self.rel}: the first line is neither `// expect: TEXT` "
                             "nor `// expect-compiles`")
        comment = []
        for line in self.lines[1:]:
            if not line.startswith("//"):
                break
            comment.append(line[2:].strip())
        self.comment = " ".join(c for c in comment if c)

    @property
    def rel(self):
        return self.path.relative_to(ROOT).as_posix()

    def code_lines(self):
        """The program after its leading comments and #includes."""
        body = self.lines[1:]
        while body and (not body[0].strip() or body[0].startswith("//") or body[0].startswith("#include")):
            body = body[1:]
        while body and not body[-1].strip():
            body = body[:-1]
        return body

    def misuse(self):
        """The statements of the lines marked `// the misuse`, each with the lines it continues."""
        blocks = []
        for n, line in enumerate(self.lines):
            if "// the misuse" not in line:
                continue
            start = n
            while start > 1 and re.search(r"(,|\(|\||&&|\|\||\+|=)\s*$", code_part(self.lines[start - 1])):
                start -= 1
            end, depth = n, paren_depth(self.lines[start:n + 1])
            while depth > 0 and end + 1 < len(self.lines):
                end += 1
                depth = paren_depth(self.lines[start:end + 1])
            blocks.append(self.lines[start:end + 1])
        return blocks


def code_part(line):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', line).split("//")[0].rstrip()


def paren_depth(lines):
    s = "".join(code_part(l) for l in lines)
    return s.count("(") - s.count(")")


def dedent(lines):
    return textwrap.dedent("\n".join(lines)).strip("\n")


# The parts of trial_base.hpp's valid trial (DTL_CF_* macros), to say what a trial test changed.
def trial_parts():
    text = (TESTS / "trial_base.hpp").read_text(encoding="utf-8")
    parts = {}
    for m in re.finditer(r"^#define (DTL_CF_\w+)(\(\w+\))?((?:.*\\\n)*.*)$", text, re.M):
        body = re.sub(r"\s*\\\n\s*", " ", m.group(3)).strip()
        if body.startswith("explicit"):
            label = "the constructor"
        else:
            f = re.search(r"\b(\w+)\s*\([^()]*\)\s*\{", body)
            label = f"`{f.group(1)}()`" if f else f"`{m.group(1)}`"
        parts[m.group(1)] = label
    return parts


def ok_parts():
    """The parts of the complete trial in ok_trial.cpp (its first struct)."""
    text = (TESTS / "ok_trial.cpp").read_text(encoding="utf-8")
    m = next(TRIAL_RE.finditer(text), None)
    return set(re.findall(r"\bDTL_CF_\w+", m.group(3))) if m else set()


# A trial struct spelled over several lines: `struct T : dtl::PyTorchTrial<T> {` ... `};`.
TRIAL_RE = re.compile(r"^struct (\w+) : dtl::PyTorchTrial<(\w+)> \{\n(.*?)^\};", re.M | re.S)


def trial_change(test, parts, complete):
    """A sentence saying how this test's trial differs from the complete one, or None."""
    text = "\n".join(test.lines)
    m = next((t for t in TRIAL_RE.finditer(text) if "DTL_CF_" in t.group(3)), None)
    if not m:
        return None
    used = set(re.findall(r"\bDTL_CF_\w+", m.group(3)))
    own = []
    for line in m.group(3).split("\n"):
        rest = re.sub(r"\bDTL_CF_\w+(\(\w+\))?", "", line).strip()
        f = re.search(r"\b(\w+)\s*\(", rest)
        if rest and f:
            own.append(f.group(1))
    said = []
    if m.group(1) != m.group(2):
        said.append(f"derives from `dtl::PyTorchTrial<{m.group(2)}>` instead of `dtl::PyTorchTrial<{m.group(1)}>`")
    for p in sorted(complete - used):
        label = parts.get(p, p)
        name = label.strip("`").rstrip("()")
        said.append(f"defines {label} itself, differently" if name in own else f"has no {label}")
    for p in sorted(used - complete):
        said.append(f"also defines {parts.get(p, p)}")
    if not said:
        return None
    return "Compared with the complete trial of `tests/compile_fail/ok_trial.cpp`, this trial " + \
        "; it ".join(said) + "."


def area_of(name):
    prefix = name.split("_")[0]
    for key, title in AREAS:
        if prefix == key:
            return key, title
    return prefix, prefix.capitalize()


def prose(text):
    """A test's comment as Markdown text: outside `code`, what would read as an HTML tag or as
    emphasis is escaped."""
    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(p if p.startswith("`") else re.sub(r"<(?=[A-Za-z/!?])", "&lt;", p).replace("*", "\\*")
                   for p in parts)


def wrap(text, indent=""):
    """Lines of at most 100 columns; no line after the first may start like a list item, a quote
    or a heading (it joins the line before instead)."""
    lines = textwrap.wrap(text, width=100, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False)
    out = lines[:1]
    for line in lines[1:]:
        if re.match(r"\s*([-+*>#]|\d+[.)])(\s|$)", line):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def fence(code, lang):
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return f"{ticks}{lang}\n{code}\n{ticks}"


def code_span(text):
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def choose(test, tests, messages):
    """The header message the test's error is: the one holding its text (if several, the ones
    holding no other test's text, then the longest)."""
    found = [(h, m) for h, m in messages if test.expect in m]
    found = list(dict.fromkeys(found))
    if not found:
        return None
    others = [t.expect for t in tests if t is not test and t.expect and t.expect not in test.expect]
    own = [(h, m) for h, m in found if not any(o in m for o in others)]
    return max(own or found, key=lambda hm: (len(hm[1]), hm))


def generate():
    tests = [Test(p) for p in sorted(TESTS.glob("*.cpp"))]
    messages = all_messages()
    parts, complete = trial_parts(), ok_parts()
    failing = [t for t in tests if not t.compiles]
    missing = [t for t in failing if choose(t, tests, messages) is None]
    if missing:
        for t in missing:
            print(f"gen_diagnostics: {t.rel}: no static_assert message in include/dtl contains "
                  f"'{t.expect}'", file=sys.stderr)
        raise SystemExit(1)

    out = [
        "# Compile-time diagnostics",
        "",
        "Misuse that Determined reports at run time — or never — is a compile error in dtl, and each",
        "error names the rule and the fix. This page lists every such diagnostic: the text the compiler",
        "prints (`static assertion failed: dtl: …`), what causes it, the offending code, and dtl's whole",
        "message, which says what to write instead.",
        "",
        "The page is generated from the compile-fail tests (`tests/compile_fail/*.cpp`: each file's first",
        "line is the text its compile error must contain) and from the `static_assert` messages in",
        f"`include/dtl`, by `{REGENERATE}`. `scripts/docs.sh`, which",
        "`scripts/test.sh` runs, checks that it is up to date (`python3 tools/gen_diagnostics.py --check`),",
        "and the compile-fail tests check that each error still says its text, so the page cannot drift.",
        "",
        "The trial examples assemble a valid trial from the parts in `tests/compile_fail/trial_base.hpp`",
        "(`DTL_CF_CTOR(T)`, `DTL_CF_TRAIN_LOADER`, … each define one member) and replace one part with a",
        "misuse; `template void use_trial<T>();` builds the trial and fits it with a `dtl::Trainer`.",
        "",
    ]
    groups = {}
    for t in failing:
        groups.setdefault(area_of(t.name), []).append(t)
    order = [k for k, _ in AREAS]
    for (key, title), group in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else len(order), kv[0][0])):
        out += [f"## {title}", ""]
        for t in group:
            header, message = choose(t, tests, messages)
            out += [f"### {code_span(t.expect)}", "", f"Test: `{t.rel}`.", ""]
            blocks = t.misuse()
            cause = [c for c in (prose(t.comment), None if blocks else trial_change(t, parts, complete)) if c]
            code = "\n\n".join(dedent(b) for b in blocks) if blocks else dedent(t.code_lines())
            lead = "**Cause.** " + " ".join(cause)
            lead += " The offending code:" if blocks else " The test's program:"
            out += [wrap(lead), "", fence(code, "cpp"), ""]
            wrapped = textwrap.fill(message, width=100, break_long_words=False, break_on_hyphens=False)
            out += [f"**Fix.** dtl's whole message (`{header}`):", "", fence(wrapped, "text"), ""]
    compiles = [t for t in tests if t.compiles]
    if compiles:
        out += ["## Programs that must compile", "",
                "These tests are the other side of the catalogue: correct code compiles, without a warning",
                "under `-Wall -Wextra -Wpedantic -Werror`.", ""]
        for t in compiles:
            out.append(wrap(f"- `{t.rel}`" + (f": {prose(t.comment)}" if t.comment else ""), indent="  "))
        out.append("")
    return "\n".join(out)


def main(argv):
    page = generate()
    if argv[1:] == ["--check"]:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current == page:
            print("gen_diagnostics: docs/diagnostics.md is up to date")
            return 0
        diff = list(difflib.unified_diff(current.split("\n"), page.split("\n"), "docs/diagnostics.md",
                                         "generated", lineterm="", n=1))
        print("\n".join(diff[:60]) + ("\n…" if len(diff) > 60 else ""))
        print(f"gen_diagnostics: docs/diagnostics.md is out of date with tests/compile_fail and "
              f"include/dtl; regenerate it: {REGENERATE}", file=sys.stderr)
        return 1
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
