#!/usr/bin/env bash
# The docs as a site: checks that every link and anchor in docs/ resolves
# (tools/check_docs_links.py), then builds build-docs/site/ with Debian's mkdocs, --strict: any
# warning (a link to a missing page, a nav entry with no page) fails. Exit status 0 only if all pass.
# (docs/diagnostics.md is generated from include/dtl/detail/diagnostics.hpp; scripts/test.sh checks
# that it is up to date with `python3 scripts/gen_diagnostics.py --check`.)
# DTL_SKIP_SETUP=1 skips scripts/setup.sh (scripts/test.sh has run it already).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${DTL_SKIP_SETUP:-0}" = 1 ] || bash scripts/setup.sh
python3 tools/check_docs_links.py
mkdocs build --strict --config-file mkdocs.yml --site-dir build-docs/site
echo "docs: the site is build-docs/site/index.html"
