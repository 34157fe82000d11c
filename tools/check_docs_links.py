#!/usr/bin/env python3
"""Checks the links in docs/*.md, which `mkdocs build --strict` (1.4) only half checks.

For every Markdown link outside code in docs/*.md and README.md: a relative target must be a file
that exists (inside docs/ for a docs page: mkdocs cannot link outside it), and an anchor
(`page.md#anchor`, `#anchor`) must name a heading of the target page, slugged as Python-Markdown's
toc extension slugs it (the ids mkdocs gives headings). Also checks that mkdocs.yml's nav lists
every docs/*.md page and only pages that exist. Prints each problem as `file:line: link -> why` and
exits 1 if there is any.

Usage: python3 tools/check_docs_links.py [DOCS_DIR]   (default: docs/ next to tools/)
Standard library only.
"""
import html
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")  # indented too: a fence in a list item
ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
LINK_RE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFDEF_RE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


# --- Python-Markdown's toc extension (markdown/extensions/toc.py, 3.4) --------------------------
def slugify(value, separator="-"):
    value = unicodedata.normalize("NFKD", value)
    value = value.encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[{}\s]+".format(separator), separator, value)


IDCOUNT_RE = re.compile(r"^(.*)_([0-9]+)$")


def unique(id_, ids):
    while id_ in ids or not id_:
        m = IDCOUNT_RE.match(id_)
        id_ = "%s_%d" % (m.group(1), int(m.group(2)) + 1) if m else "%s_%d" % (id_, 1)
    ids.add(id_)
    return id_


# -------------------------------------------------------------------------------------------------
def strip_code_spans(line):
    """The line with each inline code span blanked out (same length), so links in code are not links."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            ticks = line[i:j]
            end = line.find(ticks, j)
            while end != -1 and end + len(ticks) < len(line) and line[end + len(ticks)] == "`":
                end = line.find(ticks, end + len(ticks) + 1)
            if end == -1:  # an unmatched run of backticks is literal text
                out.append(ticks)
                i = j
                continue
            out.append(" " * (end + len(ticks) - i))
            i = end + len(ticks)
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def prose_lines(text):
    """(line number, line) for every line outside fenced code blocks; fenced lines yield ''.
    (Indented code blocks are not told from list continuations: these docs fence their code.)"""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group(1)
            yield n, ""
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            yield n, ""
        else:
            yield n, line


def heading_text(raw):
    """A heading's text as the toc extension sees it: inline markup rendered, tags dropped."""
    t = raw.strip()
    t = re.sub(r"(`+)(.+?)\1", lambda m: html.escape(m.group(2).strip(), quote=False), t)  # code: its text
    t = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", t)  # links: their text
    t = re.sub(r"<[^>]+>", "", t)  # raw HTML tags
    t = re.sub(r"(\*\*|__)(.+?)\1", r"\2", t)  # strong
    t = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*", r"\1", t)  # emphasis
    t = re.sub(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)", r"\1", t)
    t = re.sub(r"\\([\\`*_{}\[\]()#+\-.!>])", r"\1", t)  # backslash escapes
    return html.unescape(t)


def heading_ids(path):
    ids, used = [], set()
    prev = None
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        m = ATX_RE.match(line)
        if m and line.lstrip().startswith("#"):
            ids.append(unique(slugify(heading_text(m.group(2) or "")), used))
            prev = None
            continue
        if prev and SETEXT_RE.match(line) and not ATX_RE.match(prev):
            ids.append(unique(slugify(heading_text(prev)), used))
            prev = None
            continue
        prev = line if line.strip() else None
    return ids


def links(path):
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        plain = strip_code_spans(line)
        for m in LINK_RE.finditer(plain):
            yield n, m.group(1)
        m = REFDEF_RE.match(plain)
        if m:
            yield n, m.group(1)


def nav_pages(mkdocs_yml):
    pages, in_nav = [], False
    for line in mkdocs_yml.read_text(encoding="utf-8").split("\n"):
        if re.match(r"^nav:\s*$", line):
            in_nav = True
            continue
        if in_nav and line and not line[0].isspace() and not line.startswith("#"):
            in_nav = False
        if in_nav:
            m = re.match(r"^\s*-\s*(?:[^:]*:\s*)?(\S+\.md)\s*$", line)
            if m:
                pages.append(m.group(1))
    return pages


def main(argv):
    docs = Path(argv[1]).resolve() if len(argv) > 1 else ROOT / "docs"
    problems = []
    id_cache = {}

    def ids_of(p):
        if p not in id_cache:
            id_cache[p] = set(heading_ids(p))
        return id_cache[p]

    pages = sorted(docs.glob("*.md"))
    readme = docs.parent / "README.md"  # links from the README into docs/ are checked too
    for page in pages + ([readme] if readme.exists() else []):
        inside = page.parent == docs  # a docs page may only link inside docs/
        rel = page.relative_to(docs.parent) if docs.parent in page.parents else page
        for n, target in links(page):
            where = f"{rel}:{n}: {target} -> "
            if not target or SCHEME_RE.match(target) or target.startswith("//"):
                continue  # an external URL: not checked (the build machine is offline)
            path_part, _, anchor = target.partition("#")
            if path_part.startswith("/"):
                problems.append(where + "an absolute path; link relative to this page")
                continue
            dest = (page.parent / path_part).resolve() if path_part else page
            if path_part:
                if inside and docs not in dest.parents and dest != docs:
                    problems.append(where + "points outside docs/, which the site cannot link; write the path as `code`")
                    continue
                if not dest.exists():
                    problems.append(where + f"no such file {dest.relative_to(docs.parent) if docs.parent in dest.parents else dest}")
                    continue
            if anchor:
                if dest.suffix != ".md":
                    problems.append(where + "an anchor into a file that is not a Markdown page")
                elif anchor not in ids_of(dest):
                    problems.append(where + f"no heading with id '{anchor}' in {dest.name}")

    yml = docs.parent / "mkdocs.yml"
    if yml.exists():
        nav = nav_pages(yml)
        for p in pages:
            if p.name not in nav:
                problems.append(f"mkdocs.yml: nav -> {p.name} is in docs/ but not in the nav")
        for name in nav:
            if not (docs / name).exists():
                problems.append(f"mkdocs.yml: nav -> {name}: no such page in docs/")

    for p in problems:
        print(p)
    if problems:
        print(f"check_docs_links: {len(problems)} broken link(s)", file=sys.stderr)
        return 1
    print(f"check_docs_links: {len(pages)} pages, all links and anchors resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
