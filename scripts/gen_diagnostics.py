#!/usr/bin/env python3
"""Generates docs/diagnostics.md from the catalogue of dtl's compile-time diagnostics,
include/dtl/detail/diagnostics.hpp: one section per `// ## Group`, one entry per
`#define DTL_DIAG_*` with its structured `///` comment (summary, Means:, Fix:, Untested:, Inline:,
Example <param>:), the message the compiler prints, and the compile-fail test that expects it.

It also checks the catalogue against the code:
  - every static_assert message in include/dtl is a catalogue entry: a header that spells a message
    inline is an error, unless the entry it equals says `Inline: reason`;
  - every entry is used: by a header (DTL_DIAG_NAME), or spelled inline where it says so;
  - every entry is expected by exactly the compile-fail tests whose first line's text
    (`// expect: TEXT`, `// expect-first: TEXT`) its message contains, and each test's text is in
    exactly one entry's message (a function-like entry is matched by its message for its Example
    values); an entry no test covers must say `Untested: reason`.

Usage:
  python3 scripts/gen_diagnostics.py            # write docs/diagnostics.md
  python3 scripts/gen_diagnostics.py --check    # exit 1, naming the difference, if the page is
                                                # out of date or a check above fails
Standard library only.
"""
import difflib
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "include" / "dtl" / "detail" / "diagnostics.hpp"
INCLUDE = ROOT / "include" / "dtl"
TESTS = ROOT / "tests" / "compile_fail"
PAGE = ROOT / "docs" / "diagnostics.md"
PREFIX = "DTL_DIAG_"
PART_PREFIX = "DTL_DIAG_PART_"


def rel(path):
    return path.relative_to(ROOT).as_posix()


class Problems(list):
    def add(self, where, what):
        self.append(f"{where}: {what}")


# --- a small C++ lexer: enough for string literals, comments and parentheses -----------------------
TOKEN_RE = re.compile(
    r"""(?P<nl>\n)
      | (?P<ws>[ \t\r\f\v]+)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s]{0,16})\((?P<rawbody>.*?)\)(?P=delim)")
      | (?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*")
      | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*')
      | (?P<id>[A-Za-z_]\w*)
      | (?P<num>\.?\d(?:[\w.']|[eEpP][+-])*)
      | (?P<punct>\#\#|.)""",
    re.S | re.X,
)
SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "?": "?",
                  "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def unescape(body):
    def one(m):
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8))
        return SIMPLE_ESCAPES.get(e, e)
    return re.sub(r"\\(x[0-9A-Fa-f]+|[0-7]{1,3}|.)", one, body)


def tokenize(text):
    """(kind, value, line) tokens: comments and blanks dropped, line continuations joined (the
    line is the token's line in the file), a string literal's value its text."""
    toks = []
    line = 1
    pos = 0
    # A line continuation joins lines for the lexer, but line numbers keep counting.
    text = text.replace("\\\r\n", "\\\n")
    while pos < len(text):
        if text.startswith("\\\n", pos):
            pos += 2
            line += 1
            continue
        m = TOKEN_RE.match(text, pos)
        kind, value = m.lastgroup, m.group()
        if kind == "raw":
            toks.append(("str", m.group("rawbody"), line))
        elif kind == "str":
            toks.append(("str", unescape(value[value.index('"') + 1:-1]), line))
        elif kind in ("id", "num", "chr", "punct"):
            toks.append((kind, value, line))
        elif kind == "nl":
            toks.append(("nl", "\n", line))
        elif kind == "comment" and "\n" in value:
            toks.append(("nl", "\n", line))
        line += value.count("\n")
        pos = m.end()
    return toks


def matching_paren(toks, i):
    """Index of the ')' that closes the '(' at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][1] == "(" and toks[j][0] == "punct":
            depth += 1
        elif toks[j][1] == ")" and toks[j][0] == "punct":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def split_args(toks):
    """The top-level comma-separated arguments of a parenthesised list's inside."""
    args, cur, depth = [], [], 0
    for t in toks:
        if t[0] == "punct" and t[1] in "([{":
            depth += 1
        elif t[0] == "punct" and t[1] in ")]}":
            depth -= 1
        if depth == 0 and t[0] == "punct" and t[1] == ",":
            args.append(cur)
            cur = []
        else:
            cur.append(t)
    args.append(cur)
    return args


# --- the catalogue ------------------------------------------------------------------------------
class Entry:
    def __init__(self, name, params, pieces, doc, line, group):
        self.name = name
        self.params = params          # None for an object-like macro
        self.pieces = pieces          # [("lit", text) | ("param", name)]
        self.doc = doc                # {"summary": ..., "Means": ..., "Example hook": ...}
        self.line = line
        self.group = group
        self.used_in = []             # headers that name the macro
        self.inline_in = []           # headers that spell its text in a static_assert
        self.tests = []
        self.used_parts = set()       # the DTL_DIAG_PART_* pieces its body names

    @property
    def is_part(self):
        return self.name.startswith(PART_PREFIX)

    def text(self, values=None):
        """The message; a parameter is its Example value, or `<param>` when values is None."""
        out = []
        for kind, v in self.pieces:
            if kind == "lit":
                out.append(v)
            else:
                out.append(values[v] if values is not None else f"<{v}>")
        return "".join(out)

    def examples(self):
        return {p: self.doc.get(f"Example {p}", f"<{p}>") for p in self.params or []}

    def message(self):
        """The message a test is matched against: for a function-like entry, its example's."""
        return self.text(self.examples()) if self.params is not None else self.text()


class Group:
    def __init__(self, title, line):
        self.title = title
        self.line = line
        self.intro = []
        self.entries = []


DEFINE_RE = re.compile(r"^#\s*define\s+(\w+)(\(([^)]*)\))?(.*)$", re.S)
FIELD_RE = re.compile(r"^(Means|Fix|Untested|Inline|Example \w+):\s*(.*)$")


def parse_doc(lines, where, problems):
    doc, key = {"summary": ""}, "summary"
    for text in lines:
        m = FIELD_RE.match(text)
        if m:
            key = m.group(1)
            if key in doc:
                problems.add(where, f"`{key}:` given twice")
            doc[key] = m.group(2).strip()
        else:
            doc[key] = (doc[key] + " " + text.strip()).strip()
    return doc


def parse_body(name, params, body, where, parts, problems):
    """A #define's body as pieces (string literals, parameters (#p or p), parts' pieces) and the
    parts it names."""
    pieces, used = [], set()
    toks = [t for t in tokenize(body) if t[0] != "nl"]
    i = 0
    while i < len(toks):
        kind, v, _ = toks[i]
        if kind == "str":
            pieces.append(("lit", v))
        elif kind == "punct" and v == "#" and i + 1 < len(toks) and params and toks[i + 1][1] in params:
            pieces.append(("param", toks[i + 1][1]))
            i += 1
        elif kind == "id" and params and v in params:
            pieces.append(("param", v))
        elif kind == "id" and v in parts:
            pieces.extend(parts[v].pieces)
            used.add(v)
        else:
            problems.add(where, f"{name}: the body may hold only string literals, parameters and "
                                f"earlier {PART_PREFIX}* pieces, not `{v}`")
        i += 1
    merged = []
    for p in pieces:  # adjacent literals as one, as the compiler joins them
        if merged and p[0] == "lit" and merged[-1][0] == "lit":
            merged[-1] = ("lit", merged[-1][1] + p[1])
        else:
            merged.append(p)
    return merged, used


def parse_catalogue(problems):
    groups, entries = [], {}
    lines = CATALOGUE.read_text(encoding="utf-8").split("\n")
    where = rel(CATALOGUE)
    doc_lines, doc_start, group = [], None, None
    in_intro = False
    i = 0
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        lineno = i + 1
        if s.startswith("// ## "):
            group = Group(s[len("// ## "):].strip(), lineno)
            groups.append(group)
            in_intro = True
        elif s.startswith("///"):
            in_intro = False
            if not doc_lines:
                doc_start = lineno
            doc_lines.append(s[3:].strip())
        elif s.startswith("//"):
            if in_intro:
                group.intro.append(s[2:].strip())
        elif s.startswith("#") and re.match(r"#\s*define\b", s):
            full = raw
            while full.endswith("\\") and i + 1 < len(lines):
                i += 1
                full = full[:-1] + "\n" + lines[i]
            m = DEFINE_RE.match(full.strip())
            name, params = m.group(1), m.group(3)
            if name.startswith(PREFIX):
                if group is None:
                    problems.add(f"{where}:{lineno}", f"{name} comes before the first `// ## Group`")
                    group = Group("Diagnostics", lineno)
                    groups.append(group)
                params = None if m.group(2) is None else [p.strip() for p in params.split(",") if p.strip()]
                doc = parse_doc(doc_lines, f"{where}:{doc_start or lineno}", problems)
                parts = {k: e for k, e in entries.items() if e.is_part}
                pieces, used = parse_body(name, params, m.group(4), f"{where}:{lineno}", parts, problems)
                e = Entry(name, params, pieces, doc, lineno, group)
                e.used_parts = used
                if name in entries:
                    problems.add(f"{where}:{lineno}", f"{name} is defined twice")
                entries[name] = e
                group.entries.append(e)
            elif doc_lines:
                problems.add(f"{where}:{lineno}", f"a `///` comment above {name}, which is not a {PREFIX}* entry")
            doc_lines, doc_start = [], None
            in_intro = False
        else:  # a blank line or another directive ends a group's introduction and a `///` comment
            if doc_lines:
                problems.add(f"{where}:{doc_start}", "a `///` comment that no #define follows")
            doc_lines, doc_start = [], None
            in_intro = False
        i += 1
    for e in entries.values():
        w = f"{where}:{e.line}"
        if not e.doc["summary"]:
            problems.add(w, f"{e.name} has no summary line (the first `///` line)")
        if e.is_part:
            continue
        for f in ("Means", "Fix"):
            if not e.doc.get(f):
                problems.add(w, f"{e.name} has no `{f}:`")
        for p in e.params or []:
            if f"Example {p}" not in e.doc:
                problems.add(w, f"{e.name} has no `Example {p}:` value to show its message with")
        for k in e.doc:
            if k.startswith("Example ") and k[len("Example "):] not in (e.params or []):
                problems.add(w, f"{e.name}: `{k}:` names no parameter of it")
        if not e.text().strip():
            problems.add(w, f"{e.name} has an empty message")
    summaries = {}
    for e in entries.values():
        if not e.is_part and e.doc["summary"] in summaries:
            problems.add(f"{where}:{e.line}", f"{e.name} has the same summary as {summaries[e.doc['summary']]}")
        summaries.setdefault(e.doc["summary"], e.name)
    return groups, entries


# --- the headers: which entries they use, and any message still spelled inline ------------------
def scan_headers(entries, problems):
    inline = []  # (where, text) of static_asserts that spell their message
    for path in sorted(INCLUDE.rglob("*.hpp")):
        if path == CATALOGUE:
            continue
        toks = tokenize(path.read_text(encoding="utf-8"))
        for kind, v, line in toks:
            if kind == "id" and v.startswith(PREFIX):
                if v in entries:
                    if rel(path) not in entries[v].used_in:
                        entries[v].used_in.append(rel(path))
                else:
                    problems.add(f"{rel(path)}:{line}", f"{v} is not in {rel(CATALOGUE)}")
        for i, (kind, v, line) in enumerate(toks):
            if kind != "id" or v != "static_assert" or i + 1 >= len(toks) or toks[i + 1][1] != "(":
                continue
            args = split_args([t for t in toks[i + 2:matching_paren(toks, i + 1)] if t[0] != "nl"])
            if len(args) < 2 or not any(t[0] == "str" for t in args[-1]):
                continue
            text = "".join(t[1] for t in args[-1] if t[0] == "str")
            inline.append((f"{rel(path)}:{line}", rel(path), text))
    for where, path, text in inline:
        owner = next((e for e in entries.values() if e.params is None and not e.is_part and e.text() == text), None)
        if owner is None:
            problems.add(where, f"a static_assert spells its message inline; add it to {rel(CATALOGUE)} "
                                f"and use the macro: \"{text[:70]}…\"")
        elif "Inline" not in owner.doc:
            problems.add(where, f"a static_assert spells {owner.name}'s message inline; use {owner.name}")
        else:
            owner.inline_in.append(path)
    for e in entries.values():
        w = f"{rel(CATALOGUE)}:{e.line}"
        if e.is_part:
            if not any(e.name in x.used_parts for x in entries.values() if x is not e):
                problems.add(w, f"{e.name} is a part no entry uses")
        elif "Inline" in e.doc and not e.inline_in:
            problems.add(w, f"{e.name} says `Inline:` but no header spells its text any more; drop the mark")
        elif not e.used_in and not e.inline_in:
            problems.add(w, f"{e.name} is used by no header in include/dtl")


# --- the compile-fail tests ------------------------------------------------------------------------
class Test:
    def __init__(self, path, problems):
        self.path = path
        self.rel = rel(path)
        self.lines = path.read_text(encoding="utf-8").split("\n")
        first = self.lines[0].strip()
        self.compiles = first == "// expect-compiles"
        m = re.match(r"// expect(-first)?: (.+)$", first)
        self.expect = m.group(2).strip() if m else None
        self.first_error = bool(m and m.group(1))
        if not self.compiles and not m:
            problems.add(self.rel, "the first line is neither `// expect: TEXT`, `// expect-first: TEXT` "
                                   "nor `// expect-compiles`")
        comment = []
        for line in self.lines[1:]:
            if not line.startswith("//"):
                break
            comment.append(line[2:].strip())
        self.comment = " ".join(c for c in comment if c)

    def program(self):
        """The code after the leading comments and #includes."""
        body = self.lines[1:]
        while body and (not body[0].strip() or body[0].startswith("//") or body[0].startswith("#include")):
            body = body[1:]
        while body and not body[-1].strip():
            body = body[:-1]
        return body

    def misuse(self):
        """Each statement marked `// the misuse`: the marked line with the lines it continues."""
        blocks = []
        for n, line in enumerate(self.lines):
            if "// the misuse" not in line:
                continue
            start = n
            while start > 1 and re.search(r"[,(|&+=]\s*$", code_part(self.lines[start - 1])):
                start -= 1
            end = n
            while paren_depth(self.lines[start:end + 1]) > 0 and end + 1 < len(self.lines):
                end += 1
            blocks.append(textwrap.dedent("\n".join(self.lines[start:end + 1])))
        return blocks


def code_part(line):
    """A line without its string literals' contents and its // comment."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', line).split("//")[0].rstrip()


def paren_depth(lines):
    s = "".join(code_part(l) for l in lines)
    return s.count("(") - s.count(")")


def match_tests(entries, problems):
    tests = [Test(p, problems) for p in sorted(TESTS.glob("*.cpp"))]
    candidates = [e for e in entries.values() if not e.is_part]
    for t in tests:
        if t.compiles or t.expect is None:
            continue
        found = [e for e in candidates if t.expect in e.message()]
        if not found:
            problems.add(t.rel, f"expects '{t.expect}', which no entry of {rel(CATALOGUE)} says")
        elif len(found) > 1:
            problems.add(t.rel, f"expects '{t.expect}', which {len(found)} entries say "
                                f"({', '.join(e.name for e in found)}); make the expected text name one")
        else:
            found[0].tests.append(t)
    for e in candidates:
        w = f"{rel(CATALOGUE)}:{e.line}"
        if not e.tests and "Untested" not in e.doc:
            problems.add(w, f"{e.name} is expected by no compile-fail test (tests/compile_fail/*.cpp); add one, "
                            "or say `Untested: reason` in its comment")
        elif e.tests and "Untested" in e.doc:
            problems.add(w, f"{e.name} says `Untested:` but {e.tests[0].rel} expects it; drop the mark")
    return tests


# --- the page ---------------------------------------------------------------------------------------
def prose(text):
    """Markdown prose: outside `code`, `<` and `*` are literal characters."""
    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(p if p.startswith("`") else re.sub(r"<(?=[A-Za-z/!?])", "&lt;", p).replace("*", "\\*")
                   for p in parts)


def wrap(text, indent=""):
    """At most 100 columns; a line may not start like a list item, a quote or a heading."""
    lines = textwrap.wrap(text, width=100, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False)
    out = lines[:1]
    for line in lines[1:]:
        if re.match(r"\s*([-+*>#]|\d+[.)])(\s|$)", line):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def fence(code, lang, check=None):
    """A fenced block; `check`: what tools/check_docs.py does with it (its convention)."""
    ticks = "```"
    while ticks in code:
        ticks += "`"
    directive = f"<!-- check: {check} -->\n" if check else ""
    return f"{directive}{ticks}{lang}\n{code}\n{ticks}"


def message_block(text):
    return fence(textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False), "text")


def entry_section(e):
    out = [f"### {prose(e.doc['summary'].rstrip('.'))}", ""]
    where = [f"`{h}`" for h in e.used_in] + [f"`{h}` (inline)" for h in e.inline_in]
    signature = e.name + (f"({', '.join(e.params)})" if e.params is not None else "")
    tests = ", ".join(f"`{t.rel}`" for t in e.tests) or "none"
    out += [wrap(f"`{signature}`, raised in {', '.join(where)}; test: {tests}."), ""]
    if e.params is None:
        out += ["The message:", "", message_block(e.text()), ""]
    else:
        names = " and ".join(f"`<{p}>`" for p in e.params)
        out += [wrap(f"The message, {names} standing for what the check fills in:"), "",
                message_block(e.text()), "",
                wrap("For example, " + ", ".join(f"`{p}` = `{v}`" for p, v in e.examples().items()) + ":"), "",
                message_block(e.message()), ""]
    out += [wrap("**What it means.** " + prose(e.doc.get("Means", ""))), ""]
    out += [wrap("**The fix.** " + prose(e.doc.get("Fix", ""))), ""]
    if "Inline" in e.doc:
        out += [wrap("**Spelled inline.** " + prose(e.doc["Inline"])), ""]
    if "Untested" in e.doc:
        out += [wrap("**No compile-fail test.** " + prose(e.doc["Untested"])), ""]
    for t in e.tests:
        blocks = t.misuse()
        if blocks:
            out += [f"The misuse in `{t.rel}`:", "", fence("\n\n".join(blocks), "cpp", f"excerpt={t.rel}"), ""]
        else:
            out += [f"The program of `{t.rel}`:", "", fence(textwrap.dedent("\n".join(t.program())), "cpp", f"excerpt={t.rel}"), ""]
    return out


def generate(groups, entries, tests):
    out = [
        "# Compile-time diagnostics",
        "",
        "<!-- Generated from include/dtl/detail/diagnostics.hpp by scripts/gen_diagnostics.py. -->",
        "",
        wrap("Misuse that Determined reports at run time, or never, is a compile error in dtl, and each "
             "error names the rule and the fix. The compiler prints `static assertion failed:` and dtl's "
             "message; this page lists every such message, what it means, the fix, and the compile-fail test "
             "that makes the mistake and expects the message."),
        "",
        wrap("Every message is an entry of one catalogue, `include/dtl/detail/diagnostics.hpp` (a "
             "`DTL_DIAG_*` macro, as C++20's `static_assert` takes only a string literal), which the "
             "headers' `static_assert`s name. This page is generated from it by "
             "`python3 scripts/gen_diagnostics.py`; `scripts/test.sh` runs it with `--check`, which fails when the page is out of date, when "
             "a header spells a message itself, or when no compile-fail test (`tests/compile_fail/*.cpp`, "
             "whose first line is the text its compile error must contain: the first error, where the compile "
             "stops) expects an entry that does not "
             "say why it cannot have one."),
        "",
        wrap("The trial tests assemble a valid trial from the parts in `tests/compile_fail/trial_base.hpp` "
             "(`DTL_CF_CTOR(T)`, `DTL_CF_TRAIN_LOADER`, … each define one member; "
             "`tests/compile_fail/ok_trial.cpp` uses them all and must compile) and replace one part with a "
             "misuse; `template void use_trial<T>();` builds the trial and fits it with a `dtl::Trainer`."),
        "",
    ]
    for g in groups:
        shown = [e for e in g.entries if not e.is_part]
        if not shown:
            continue
        out += [f"## {prose(g.title)}", ""]
        if g.intro:
            out += [wrap(prose(" ".join(g.intro))), ""]
        for e in shown:
            out += entry_section(e)
    untested = [e for e in entries.values() if not e.is_part and not e.tests]
    out += ["## Entries without a compile-fail test", ""]
    if untested:
        for e in untested:
            out.append(wrap(f"- `{e.name}`: {prose(e.doc.get('Untested', ''))}", indent="  "))
    else:
        out.append("None.")
    out.append("")
    compiles = [t for t in tests if t.compiles]
    if compiles:
        out += ["## Programs that must compile", "",
                wrap("The other side of the catalogue: correct code compiles, without a warning under "
                     "`-Wall -Wextra -Wpedantic -Werror`."), ""]
        for t in compiles:
            out.append(wrap(f"- `{t.rel}`" + (f": {prose(t.comment)}" if t.comment else ""), indent="  "))
        out.append("")
    return "\n".join(out)


def build():
    problems = Problems()
    groups, entries = parse_catalogue(problems)
    scan_headers(entries, problems)
    tests = match_tests(entries, problems)
    return generate(groups, entries, tests), problems, entries


def main(argv):
    if argv[1:] not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    page, problems, entries = build()
    for p in problems:
        print(f"gen_diagnostics: {p}", file=sys.stderr)
    if argv[1:] == ["--check"]:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != page:
            diff = list(difflib.unified_diff(current.split("\n"), page.split("\n"), rel(PAGE),
                                             "generated", lineterm="", n=1))
            print("\n".join(diff[:80]) + ("\n…" if len(diff) > 80 else ""))
            print(f"gen_diagnostics: {rel(PAGE)} is out of date with {rel(CATALOGUE)} and tests/compile_fail "
                  "(the diff above); regenerate it: python3 scripts/gen_diagnostics.py", file=sys.stderr)
            return 1
        if problems:
            return 1
        shown = [e for e in entries.values() if not e.is_part]
        untested = [e.name for e in shown if not e.tests]
        print(f"gen_diagnostics: {rel(PAGE)} is up to date: {len(shown)} entries, "
              f"{len(shown) - len(untested)} expected by compile-fail tests"
              + (f", untested with a reason: {', '.join(untested)}" if untested else ""))
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"gen_diagnostics: wrote {rel(PAGE)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
