#!/usr/bin/env python3
"""The docs check: every command and every C++ snippet README.md and docs/ show is run or compiled.

Docs cannot rot if they are executed. Each fenced block says what the check does with it, by its
language and, on the line before it, an HTML comment (invisible on GitHub and on the mkdocs site,
whose fenced_code takes nothing after the language). An unclassified block fails the check.

  ```sh                      run by the check, in order, with bash -e -o pipefail, in one scratch
                             project directory shared by all pages (getting-started.md runs first,
                             building.md second, then the other pages by name, README.md last)
  <!-- check: norun: REASON -->
  ```sh                      shown, not run; the check prints the reason (say why: builds for
                             minutes, needs a GPU or a second machine, downloads ...)
  <!-- check: file=NAME -->
  ```cpp                     a complete program (it has main), written to NAME in the project;
                             the page's sh blocks build and run it, through the routes they show
  <!-- check: fragment=CONTEXT -->
  ```cpp                     part of a program, compiled inside one of the CONTEXTS below; all
                             fragments share one translation unit, each in its own namespace
  <!-- check: excerpt=PATH -->
  ```cpp                     lines of PATH (in the repository) in order, a line with `...` for
                             what is left out; checked against the file, not compiled
  <!-- check: synopsis -->
  ```cpp                     declarations to read (an API summary), not compiled
  <!-- check: norun: REASON -->
  ```cpp                     not compiled, with the reason printed
  ```yaml, ```meson, ```cmake, ```python: file=NAME, excerpt=PATH or norun: REASON
  ```text                    output or a usage line, nothing to run

A command written inline (`scripts/train.sh --nproc 2`) is a command the check cannot see unless
a fence holds it: an inline code span that starts with a program and has two arguments or more
fails the check when no fence contains its text (put it in a fence, run or norun).

Substitutions, the only change made to a documented command before it runs (`substitutions`):
`path/to/dtl/include` and `<prefix>` become the fresh install prefix's include directory and the
prefix, `path/to/dtl` the repository; PKG_CONFIG_PATH and PATH point into the prefix (the docs
say so for a non-system prefix). The project directory links the repository's scripts/, tools/,
tests/, examples/, include/ and .venv, so a command written for the checkout runs there.

Usage:
  tools/check_docs.py --static                 classification, excerpts, inline commands (no torch)
  tools/check_docs.py [--prefix DIR] [--work DIR] [--torch PYTHON]
      also runs the sh blocks and compiles the fragments. --prefix: a fresh `meson install` prefix
      (scripts/test.sh passes the one the consumer test just installed); without it the check
      installs one (-Dtests=false -Dexamples=false -Dcompiled_lib=false, LibTorch: --torch,
      default .venv/bin/python3).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CXX = os.environ.get("CXX", "g++-12")

# Pages in the order their commands run: a newcomer starts with getting-started.md.
def pages():
    docs = sorted(p for p in (ROOT / "docs").glob("*.md"))
    first = [ROOT / "docs/getting-started.md", ROOT / "docs/building.md"]
    return first + [p for p in docs if p not in first] + [ROOT / "README.md"]


def rel(page):
    return page.relative_to(ROOT) if page.is_relative_to(ROOT) else page


FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")
LANGS = {"sh", "bash", "cpp", "text", "yaml", "meson", "cmake", "python", "json"}


class Fence:
    def __init__(self, page, line, lang, attrs, reason, body):
        self.page, self.line, self.lang, self.attrs, self.reason, self.body = page, line, lang, attrs, reason, body

    def where(self):
        return f"{rel(self.page)}:{self.line}"

    def kind(self):
        if self.reason is not None:
            return "norun"
        for k in ("file", "fragment", "excerpt", "synopsis"):
            if k in self.attrs:
                return k
        return "run" if self.lang in ("sh", "bash") else self.lang


def parse(page):
    """Every fenced block of a page (indented ones too), and the lines outside fences."""
    fences, prose = [], []
    lines = page.read_text().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        indent, ticks, info = m.groups()
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{ticks}\s*$", lines[j]):
            j += 1
        body = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j])
        lang = info.strip()
        directive = re.match(r"^\s*<!-- check: (.*?) -->\s*$", lines[i - 1]) if i else None
        info = directive.group(1) if directive else ""
        if len(lang.split()) > 1:  # an info string with words after the language
            info, lang = "?info-string " + info, lang.split()[0]
        reason = None
        if "norun:" in info:
            info, reason = info.split("norun:", 1)
            reason = reason.strip()
        attrs = {}
        for w in info.split():
            k, _, v = w.partition("=")
            attrs[k] = v
        fences.append(Fence(page, i + 1, lang, attrs, reason, body))
        i = j + 1
    return fences, prose


def classify_errors(f):
    """Why this fence's info string does not say what the check does with it (None: it does)."""
    if "?info-string" in f.attrs:
        return "the info string is the language alone; what the check does goes in <!-- check: ... --> on the line before"
    if f.lang not in LANGS:
        return f"fence language '{f.lang}' is not one the docs check knows ({', '.join(sorted(LANGS))}); output is ```text"
    if f.reason is not None:
        return None if f.reason else "norun: needs a reason"
    known = {"file", "fragment", "excerpt", "synopsis"}
    if set(f.attrs) - known:
        return f"unknown attribute(s) {sorted(set(f.attrs) - known)}"
    if len(f.attrs) > 1:
        return "one of file=, fragment=, excerpt=, synopsis, norun: at most"
    if f.lang in ("sh", "bash", "text"):
        return "sh and text blocks take no attribute but norun:" if f.attrs else None
    if f.lang == "cpp":
        if not f.attrs:
            return "a cpp block needs file=NAME (a complete program), fragment=CONTEXT, excerpt=PATH, synopsis or norun: REASON"
        if "fragment" in f.attrs and f.attrs["fragment"] not in CONTEXTS:
            return f"fragment={f.attrs['fragment']}: contexts are {', '.join(CONTEXTS)}"
        if "file" in f.attrs and not re.search(r"\bint main\(", f.body):
            return "cpp file= is a complete program: it has no main()"
        return None
    if not ({"file", "excerpt"} & set(f.attrs)):
        return f"a {f.lang} block needs file=NAME, excerpt=PATH or norun: REASON"
    return None


def check_excerpt(f):
    """The block's lines appear in the file in order (whitespace-trimmed); `...` lines are gaps."""
    path = ROOT / f.attrs["excerpt"]
    if not path.is_file():
        return f"excerpt={f.attrs['excerpt']}: no such file"
    source = [l.strip() for l in path.read_text().split("\n")]
    at = 0
    for line in f.body.split("\n"):
        s = line.strip()
        if not s or "..." in s:
            continue
        try:
            at = source.index(s, at) + 1
        except ValueError:
            return f"excerpt={f.attrs['excerpt']}: line not found (in order) in the file: {s}"
    return None


# An inline code span that starts with one of these and has arguments is a command.
# (Two arguments at least: `meson install` or `conan create` names a step in prose.)
COMMAND = re.compile(r"^(\./\S+|scripts/\S+\.sh|tools/\S+\.py|\.venv/bin/\S+|g\+\+(-\d+)?|clang\+\+|meson|ninja|cmake|"
                     r"conan|pkg-config|torchrun|dtl-plot|tensorboard|pip|apt-get|apt|git|(/usr/bin/)?python3)(\s+\S+){2,}")


def inline_commands(prose):
    """(line, span) of each inline command; a span may continue on the paragraph's next line."""
    paragraph, start = [], 0
    for n, line in prose + [(0, "")]:
        if line.strip():
            start = start if paragraph else n
            paragraph.append(line)
            continue
        for span in re.findall(r"`([^`]+)`", " ".join(paragraph)):
            if COMMAND.match(span):
                yield start, span
        paragraph = []


def norm(s):
    return " ".join(s.replace("\\\n", " ").split())


# ---- compiling fragments ------------------------------------------------------------------------
# Names a fragment may use that the docs leave to the reader: a model `Net`, a batch type, the
# trial's members. Compiled once, before the fragments, each of which is in a namespace of its own.
PRELUDE = r"""
using Batch = std::tuple<torch::Tensor, torch::Tensor>;
struct NetImpl : torch::nn::Module {  // Net(), Net{}, Net(16, 32, 0.25): the docs' model, left to the reader
  template <class... Args>
  explicit NetImpl(Args&&...) { fc = register_module("fc", torch::nn::Linear(10, 2)); }
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Net);
// A complete trial, for fragments that run one.
class DocTrial : public dtl::PyTorchTrial<DocTrial> {
 public:
  explicit DocTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(Net{});
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.1));
  }
  auto build_training_data_loader() { return dtl::DataLoader(data_, {.batch_size = 8}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data_, {.batch_size = 8}); }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto loss = torch::cross_entropy_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    return {{"validation_loss", torch::cross_entropy_loss(model_(std::get<0>(b)), std::get<1>(b))}};
  }
 private:
  dtl::PyTorchTrialContext& ctx_;
  dtl::TensorDataset<2> data_{torch::randn({64, 10}), torch::randint(2, {64})};
  Net model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};
inline std::vector<torch::Tensor> accuracy(const torch::Tensor& output, const torch::Tensor& target,
                                           std::vector<std::int64_t> topk) {
  std::vector<torch::Tensor> out;
  for (auto k : topk) out.push_back(std::get<1>(output.topk(k)).eq(target.unsqueeze(1)).any(1).to(torch::kFloat).mean().unsqueeze(0));
  return out;
}
"""
TRIAL_MEMBERS = r"""
  dtl::PyTorchTrialContext& ctx_;
  dtl::PyTorchTrialContext& context_ = ctx_;
  Net model_{nullptr}, a_{nullptr}, b_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_, optimizer_, opt1_, opt2_;
  std::shared_ptr<dtl::GradScaler> scaler_;
  torch::nn::CrossEntropyLoss criterion_, loss_fn;
"""
CONTEXTS = {
    # at namespace scope
    "namespace": "{body}",
    # members of a trial class named MyTrial (its constructor, train_batch, ...)
    "trial-body": "class MyTrial : public dtl::PyTorchTrial<MyTrial> {\n public:\n{body}\n private:" + TRIAL_MEMBERS + "};",
    # statements in the constructor MyTrial(dtl::PyTorchTrialContext& ctx), model_ and opt_ wrapped
    "constructor": "class MyTrial {\n public:\n  explicit MyTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {\n"
                   "    model_ = ctx.wrap_model(Net{});\n"
                   "    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.1));\n{body}\n  }\n private:"
                   + TRIAL_MEMBERS + "};",
    # statements in train_batch(Batch& batch, epoch_idx, batch_idx), with auto& [x, y] = batch
    "train_batch": "class MyTrial {\n public:\n  dtl::Metrics train_batch(Batch& batch, std::int64_t epoch_idx, std::int64_t batch_idx) {\n"
                   "    auto& [x, y] = batch;\n{body}\n    return {};\n  }\n private:" + TRIAL_MEMBERS + "};",
    # statements (in a block of their own) in a function of main's arguments, a trial `trial` (a
    # DocTrial), its context `ctx`, its `trainer`, hyperparameter defaults `defaults`, a rank `r`,
    # and numbers `norm`, `batch_idx`, `step`
    "function": "[[maybe_unused]] void fragment(int argc, char** argv, DocTrial& trial, dtl::PyTorchTrialContext& ctx) {\n"
                "  nlohmann::json defaults = nlohmann::json::object();\n  int r = 0;\n  double norm = 1.0;\n"
                "  std::int64_t batch_idx = 0, step = 0;\n  dtl::Trainer trainer(trial, ctx);\n  {\n{body}\n  }\n}",
}


def fragments_tu(fragments):
    """One translation unit: the prelude once, then each fragment in its context, in a namespace."""
    includes = ["#include <dtl/trainer.hpp>"]
    parts = []
    for n, f in enumerate(fragments):
        body = [f'#line {f.line + 1} "{rel(f.page)}"']  # the compiler's errors name the page's lines
        for line in f.body.split("\n"):
            if line.startswith("#include"):
                includes.append(line)
                line = ""  # keeps the numbering
            body.append(line)
        code = CONTEXTS[f.attrs["fragment"]].replace("{body}", "\n".join(body))
        parts.append(f"namespace docs_fragment_{n} {{\nusing namespace docs_prelude;\n{code}\n}}  // namespace docs_fragment_{n}\n")
    return ("\n".join(dict.fromkeys(includes)) + f"\n\nnamespace docs_prelude {{{PRELUDE}}}  // namespace docs_prelude\n\n"
            + "\n".join(parts))


# ---- running --------------------------------------------------------------------------------------
def substitutions(prefix):
    return [("path/to/dtl/include", f"{prefix}/include"), ("<prefix>", str(prefix)), ("path/to/dtl", str(ROOT))]


def install_prefix(work, torch):
    prefix = work / "prefix"
    build = work / "dtl-install"
    for cmd in (["meson", "setup", str(build), str(ROOT), f"--prefix={prefix}", "-Dtests=false", "-Dexamples=false",
                 "-Dcompiled_lib=false", f"-Dtorch_prefix={torch}"], ["meson", "install", "-C", str(build)]):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit(f"docs check: installing a prefix failed: {' '.join(cmd)}\n{r.stdout[-4000:]}")
    return prefix


# building.md's commands need only files other blocks write (my_trial.cpp), so they run beside the
# other pages' (which build and use ./my_trial in order), after the fragments' translation unit:
# two lanes for the machine's two cores.
SECOND_LANE = {"docs/building.md"}
FENCE_TIMEOUT_S = int(os.environ.get("DTL_DOCS_FENCE_TIMEOUT", 900))  # a block that hangs (a rank waiting for its peer) fails instead of stalling the suite


def run_fence(f, project, env, prefix, work):
    """Runs one sh block; returns (failed, report lines)."""
    script = f.body
    for a, b in substitutions(prefix):
        script = script.replace(a, b)
    t = time.time()
    # Its own process group, so a block that hangs is stopped with everything it started.
    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=project, env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=FENCE_TIMEOUT_S)
        r = subprocess.CompletedProcess(p.args, p.returncode, out)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        r = subprocess.CompletedProcess(p.args, 124, out + f"\n(stopped after {FENCE_TIMEOUT_S} s)")
    (work / f"{f.page.stem}-{f.line}.log").write_text(r.stdout)
    lines = [f"{'ran   ' if r.returncode == 0 else 'FAILED'} {f.where()} ({time.time() - t:.0f} s): {norm(f.body)[:100]}"]
    if r.returncode != 0:
        lines.append(f"  exit status {r.returncode}; the command as run:")
        lines += ["    " + l for l in script.split("\n")]
        lines += ["  | " + l for l in r.stdout.rstrip().split("\n")[-25:]]
    return r.returncode != 0, lines


def run_mode(all_fences, args):
    work = Path(args.work or tempfile.mkdtemp(prefix="dtl-docs-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    prefix = Path(args.prefix).resolve() if args.prefix else install_prefix(work, args.torch)
    pcdir = next(prefix.rglob("dtl.pc")).parent
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcdir), PATH=f"{prefix}/bin:{os.environ['PATH']}")

    project = work / "project"
    project.mkdir(exist_ok=True)
    for name in ("scripts", "tools", "tests", "examples", "include", ".venv"):
        if (ROOT / name).exists() and not (project / name).exists():
            (project / name).symlink_to(ROOT / name)
    report = {}  # fence -> lines, printed in page order
    for f in all_fences:
        if f.kind() == "norun":
            report[f] = [f"norun  {f.where()}: {f.reason}"]
        elif f.kind() == "file":
            (project / f.attrs["file"]).write_text(f.body + "\n")
            report[f] = [f"file   {f.where()}: {f.attrs['file']}"]

    fragments = [f for f in all_fences if f.kind() == "fragment"]
    tu = work / "docs_fragments.cpp"
    tu.write_text(fragments_tu(fragments))
    flags = subprocess.run(["pkg-config", "--cflags", "dtl"], env=env, check=True, capture_output=True,
                           text=True).stdout.split() if fragments else []
    failed = []

    def lane(fences, with_fragments):
        if with_fragments and fragments:
            t = time.time()
            r = subprocess.run([CXX, "-std=c++20", "-fsyntax-only", str(tu)] + flags,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                failed.append(tu)
                print(f"FAILED the {len(fragments)} fragments' translation unit ({tu}):\n{r.stdout[-8000:]}")
            else:
                print(f"compiled the {len(fragments)} fragments in one translation unit ({time.time() - t:.0f} s): "
                      + ", ".join(f.where() for f in fragments))
        for f in fences:
            bad, report[f] = run_fence(f, project, env, prefix, work)
            if bad:
                failed.append(f)

    runs = [f for f in all_fences if f.kind() == "run"]
    second = [f for f in runs if str(rel(f.page)) in SECOND_LANE]
    other = threading.Thread(target=lane, args=(second, True))
    other.start()
    lane([f for f in runs if f not in second], False)
    other.join()
    for f in all_fences:
        for line in report.get(f, []):
            print(line)
    print(f"docs check (commands): {time.time() - t0:.0f} s in {work}")
    return len(failed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--static", action="store_true", help="check classification, excerpts and inline commands only")
    ap.add_argument("--prefix", help="a fresh meson install prefix")
    ap.add_argument("--work", help="scratch directory (default: a new temporary one)")
    ap.add_argument("--torch", default=str(ROOT / ".venv/bin/python3"), help="LibTorch for the prefix the check installs")
    ap.add_argument("pages", nargs="*", type=Path, help="these Markdown files instead of README.md and docs/ (its tests)")
    args = ap.parse_args()

    all_fences, errors, prose_of = [], [], {}
    for page in [p.resolve() for p in args.pages] or pages():
        fences, prose_of[page] = parse(page)
        all_fences += fences
        lines = page.read_text().split("\n") + [""]
        for n, line in enumerate(lines[:-1]):
            if re.match(r"^\s*<!-- check:", line) and not FENCE.match(lines[n + 1]):
                errors.append(f"{rel(page)}:{n + 1}: a <!-- check: ... --> comment must be on the line just before its fence")
        for f in fences:
            why = classify_errors(f) or (check_excerpt(f) if f.kind() == "excerpt" else None)
            if why:
                errors.append(f"{f.where()}: {why}")
    written = {}
    for f in all_fences:
        if f.kind() == "file" and written.setdefault(f.attrs["file"], f) is not f:
            errors.append(f"{f.where()}: file={f.attrs['file']} is also written by {written[f.attrs['file']].where()}")
    fence_text = [norm(f.body) for f in all_fences]
    for page, prose in prose_of.items():
        for n, span in inline_commands(prose):
            if not any(norm(span) in t for t in fence_text):
                errors.append(f"{rel(page)}:{n}: inline command `{span}` is in no fence: "
                              "put it in a ```sh block (run, or norun: with a reason)")
    counts = {}
    for f in all_fences:
        counts[f"{f.lang} {f.kind()}"] = counts.get(f"{f.lang} {f.kind()}", 0) + 1
    print("docs fences: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for e in errors:
        print("ERROR " + e)
    failures = len(errors)
    if not args.static:
        failures += run_mode(all_fences, args)
    print(f"docs check: {'passed' if failures == 0 else f'{failures} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
