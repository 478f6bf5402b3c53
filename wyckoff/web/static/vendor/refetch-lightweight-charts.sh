#!/usr/bin/env bash
# Re-fetch the vendored chart library from npm (run from anywhere; needs npm).
# TradingView Lightweight Charts, Apache-2.0: the license is kept beside the file.
set -euo pipefail
version="${1:-5.2.1}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "lightweight-charts@$version" >/dev/null && tar xzf lightweight-charts-*.tgz)
cp "$work/package/dist/lightweight-charts.standalone.production.js" "$here/"
cp "$work/package/LICENSE" "$here/lightweight-charts.LICENSE"
echo "lightweight-charts $version -> $here"
