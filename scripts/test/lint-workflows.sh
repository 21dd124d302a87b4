#!/usr/bin/env bash
# Check the GitHub workflows' form (.github/workflows/*.yml), which cannot
# run here: check-jsonschema (PyPI) against the GitHub-workflow schema it
# carries, offline. Installed once into ~/.cache/dyno/tools/lint-venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="$HOME/.cache/dyno/tools/lint-venv"
if [ ! -x "$venv/bin/check-jsonschema" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "check-jsonschema==0.33.*"
fi
"$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
