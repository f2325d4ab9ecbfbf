#!/usr/bin/env bash
# Builds a `hintstream whatif --report` from a small trace (200 requests
# of the synthetic one, an L3 sweep) and loads it in a real headless
# Chromium, from a file:// URL. Fails unless the DOM Chromium built has
# the tables (runs, lost by cause, by mechanism), the "what to turn on"
# summary, the sweep and L3-worth charts and "hints are worth", and
# unless nothing was fetched from the network: the page names no
# http(s) src, href or url(), and Chromium's net log holds no request
# but the file:// one.
#
# Chromium comes from Debian (apt-get install -y chromium) if absent; run
# as root (hence --no-sandbox). Not part of `make test`: `make report-check`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TRACE=${TRACE:-testdata/data/mooncake_synthetic_trace.jsonl}
if [ ! -f "$TRACE" ] && [ -f "$TRACE.gz" ]; then
  TRACE_TMP=$(mktemp); gunzip -c "$TRACE.gz" >"$TRACE_TMP"; TRACE=$TRACE_TMP
fi
if ! command -v chromium >/dev/null; then
  apt-get install -y chromium >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work" ${TRACE_TMP:+"$TRACE_TMP"}' EXIT

$GO build -o "$work/hintstream" ./cmd/hintstream
# The slice the whatif tests play: the stretch with the most next turns.
sed -n 3776,3975p "$TRACE" >"$work/trace.jsonl"
"$work/hintstream" whatif --trace "$work/trace.jsonl" --device-blocks 512 \
  --sweep l3=8GiB,16GiB,64GiB,512GiB --report "$work/report" >"$work/report.txt"
page="$work/report/index.html"

fail=0
no() { echo "report-check: FAIL: $*"; fail=1; }

if grep -Eiq '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?(https?:)?//|url\([[:space:]]*["'"'"']?(https?:)?//|<script|<link|@import' "$page"; then
  no "the page references something to fetch: $(grep -Eio '(src|href)=["'"'"']?(https?:)?//[^"'"'"' >]*' "$page" | head -3)"
fi

# load PAGE NAME: Chromium's DOM of PAGE in $work/NAME.dom, its net log
# in $work/NAME.netlog.
load() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" --log-net-log="$work/$2.netlog" \
    --enable-logging=stderr --v=0 \
    --dump-dom "file://$1" >"$work/$2.dom" 2>"$work/$2.log" || no "chromium exited $? on $2 ($(tail -3 "$work/$2.log"))"
}

# page_requests NAME: the URLs a page asked for, from the net log. File
# loads do not go through the network stack; what does is either the
# page's (its initiator is the page's origin, "null" for a file) or
# Chromium's own services' (update checks, the clock: initiator "not an
# origin"), which are not the page's doing and are only counted.
page_requests() {
  python3 - "$work/$1.netlog" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
name = {v: k for k, v in d["constants"]["logEventTypes"].items()}
page, browser = set(), set()
for e in d["events"]:
    p = e.get("params", {})
    if name.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in p:
        (browser if p.get("initiator") == "not an origin" else page).add(p["url"])
print("\n".join(sorted(page)) if sys.argv[2] == "page" else len(browser))
PY
}

# The check must see a page's request: a control page with one image on
# the network (a closed port on 127.0.0.1) has to show in its net log.
printf '<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/probe.png"></body></html>\n' >"$work/control.html"
load "$work/control.html" control
page_requests control page | grep -q 'http://127.0.0.1:9/probe.png' || no "the net-log check did not see the control page's request"

load "$page" report
dom="$work/report.dom"
for want in '<table class="runs"' '<table class="lost"' '<table class="mechanism"' 'id="summary"' \
  'What to turn on' 'id="sweep-chart"' 'id="l3-worth-chart"' 'id="hints-worth"' 'of hint-reachable bound' \
  '<ul class="legend">' '<polyline'; do
  grep -q "$want" "$dom" || no "the DOM lacks $want"
done
grep -q '<pre' "$dom" && no "the report is still a <pre> block"
grep -Eq 'hints are worth|more than the largest point' "$dom" || no "the DOM says nothing of what hints are worth in L3"

fetched=$(page_requests report page)
[ -z "$fetched" ] || no "the page requested: $fetched"
grep -Ei 'net::ERR|Failed to load resource' "$work/report.log" && no "Chromium logged a failed load"

tables=$(grep -o '<table' "$dom" | wc -l)
svgs=$(grep -o '<svg xmlns' "$dom" | wc -l)
echo "report-check: $(wc -c <"$page") bytes of HTML; the DOM has $tables tables, $svgs charts; requests by the page: 0 (the control page's request was seen; Chromium's own service requests, not the page's: $(page_requests report browser))"
grep -Eo 'hints are worth [^<]*of L3|more than the largest point[^<]*' "$dom" | head -1 | sed 's/^/report-check: /'
[ "$fail" = 0 ] && echo "report-check: OK"
exit "$fail"
