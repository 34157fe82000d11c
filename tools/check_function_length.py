#!/usr/bin/env python3
"""No function in dtl's headers longer than 80 lines, checked.

A longer function does several things in a row; split into short functions, each named for its
step, it reads as the list of those steps. This fails, one line per function (where its
declaration starts, its name and its length), on every function body under include/ (*.hpp) longer
than MAX_LINES lines, counted from the line of its opening brace to the line of its closing one.

It reads C++ the way a brace matcher does, not as a compiler: comments, string and character
literals and preprocessor lines are blanked first; then a brace at namespace or class scope opens
a function when the text before it (since the last ';', '{' or '}') has a parenthesis and is no
namespace, class, struct, enum, union or extern block and no initializer ('= {'). Whatever is
nested in a function (blocks, lambdas, local classes) counts as part of it. A constructor's
braced member initializers ('a_{1}, b_{2} {') continue it.

Usage:
  tools/check_function_length.py             the check; exit status 1 on a function over the limit
  tools/check_function_length.py --root DIR  check DIR/include instead (a copy, as a test would)
"""
import argparse
import pathlib
import re
import sys

MAX_LINES = 80

SCOPE = re.compile(r'^(template ?<.*> ?)?(namespace|class|struct|enum|union|extern)\b')
SCOPE_LINE = re.compile(r'^\s*(namespace|class|struct|enum|union)\b')
RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
DIRECTIVE = re.compile(r'[ \t]*#')
ACCESS = re.compile(r'^\s*(public|protected|private)\s*:\s*')
NAME = re.compile(r'(operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_][\w:]*)\s*\(')
NOT_NAMES = {"decltype", "requires", "noexcept", "alignas", "sizeof", "__attribute__", "explicit"}


def blank(text):
    """Whitespace with the newlines of `text`, so that line numbers keep."""
    return "\n" * text.count("\n")


def is_digit_separator(s, i):
    """Whether the quote at s[i] separates digits (1'000'000) rather than opening a character."""
    j = i
    while j > 0 and (s[j - 1].isalnum() or s[j - 1] in "'._"):
        j -= 1
    return j < i and s[j].isdigit()


def strip(s):
    """`s` with comments, literals and preprocessor lines blanked; every newline kept."""
    out = []
    i, n = 0, len(s)
    at_line_start = True
    while i < n:
        c = s[i]
        if at_line_start and DIRECTIVE.match(s, i):
            j = i
            while True:  # a directive continues over backslash-newlines
                j = s.find("\n", j)
                if j < 0 or s[j - 1] != "\\":
                    break
                j += 1
            j = n if j < 0 else j
            out.append(blank(s[i:j]))
            i = j
            continue
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        if s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(s[i:j]))
            i = j
            continue
        token_start = i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")
        raw = RAW_STRING.match(s, i) if token_start and c in "uULR" else None
        if raw:
            end = s.find(")" + raw.group(1) + '"', raw.end())
            j = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('""' + blank(s[i:j]))
            i = j
            continue
        if c == '"' or (c == "'" and not is_digit_separator(s, i)):
            j = i + 1
            while j < n and s[j] != c:
                j += 2 if s[j] == "\\" else 1
            out.append(c + c + blank(s[i:j]))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def declaration_start(head, brace_line):
    """The line where the declaration in `head` (the text before a brace) starts."""
    lines = head.split("\n")
    skipped = 0
    for line in lines:
        if line.strip() and not ACCESS.fullmatch(line):
            break
        skipped += 1
    return brace_line - (len(lines) - 1) + min(skipped, len(lines) - 1)


def function_name(head):
    """The name a function's head declares, as well as a regular expression finds it."""
    for m in NAME.finditer(head):
        if m.group(1) not in NOT_NAMES:
            return m.group(1)
    return "a function"


def kind_of(head):
    """'scope', 'function' or 'block': what a brace after `head` opens outside any function."""
    last_line = head.split("\n")[-1]
    text = " ".join((last_line if SCOPE_LINE.match(last_line) else head).split())
    text = ACCESS.sub("", text)
    if SCOPE.match(text):
        return "scope"
    if "(" in text and not text.endswith("="):
        return "function"
    return "block"


def long_functions(text, limit):
    """(line, name, length) of each function in `text` (C++) whose body is over `limit` lines."""
    s = strip(text)
    lengths = {}  # (start line, name) -> length; a constructor's last part has its whole length
    stack = []  # (kind, line of the opening brace, start line, name)
    closed = None  # the function just closed at this depth, until a ';': a constructor may go on
    head_start = 0
    line = 1
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        elif c == "{":
            head = s[head_start:i]
            if any(kind == "function" for kind, *_ in stack):
                stack.append(("block", line, line, ""))
            elif closed and (not head.strip() or head.lstrip().startswith(",")):
                stack.append(closed)  # the next member initializer, or the constructor's body
            else:
                kind = kind_of(head)
                name = function_name(head) if kind == "function" else ""
                stack.append((kind, line, declaration_start(head, line), name))
            closed = None
            head_start = i + 1
        elif c == "}":
            if not stack:
                break  # unbalanced: a preprocessor trick this reading does not follow
            kind, brace_line, start, name = stack.pop()
            closed = None
            if kind == "function" and not any(k == "function" for k, *_ in stack):
                lengths[(start, name)] = line - brace_line + 1
                closed = (kind, brace_line, start, name)
            head_start = i + 1
        elif c == ";":
            closed = None
            head_start = i + 1
    return [(start, name, n) for (start, name), n in sorted(lengths.items()) if n > limit]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent,
                    help="the checkout whose include/ is checked (default: this one)")
    args = ap.parse_args()
    root = args.root.resolve()
    if not (root / "include").is_dir():
        print(f"check_function_length: {root / 'include'} is not a directory")
        return 1
    headers = sorted((root / "include").rglob("*.hpp"))
    errors = []
    for path in headers:
        rel = path.relative_to(root)
        for line, name, length in long_functions(path.read_text(), MAX_LINES):
            errors.append(f"{rel}:{line}: {name} is {length} lines, over {MAX_LINES}: split it into named steps")
    for e in errors:
        print("check_function_length:", e)
    if errors:
        return 1
    print(f"check_function_length: {len(headers)} headers; no function over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
