#!/bin/bash
# make test, one step at a time, each timed: the figures of
# docs/benchmarks.md. Run it on a clean clone:
#   git clone <repo> /tmp/c && scripts/make-test-steps.sh /tmp/c /tmp/run [load]
# With "load", two `yes > /dev/null` keep both cores busy beside it (the
# runs that must hold under load), and are ended when it ends.
# Logs go to /tmp/run.<step>.log, times to /tmp/run.steps.
set -u
cd "$1"
out=$2
if [ "${3:-}" = load ]; then
  yes > /dev/null & a=$!
  yes > /dev/null & b=$!
  trap 'kill $a $b 2>/dev/null' EXIT
fi
total=$(date +%s)
for s in deps check race sim parity chart-test; do
  t=$(date +%s)
  make --no-print-directory "$s" > "$out.$s.log" 2>&1; rc=$?
  echo "$s rc=$rc $(( $(date +%s) - t ))s" >> "$out.steps"
  [ $rc -ne 0 ] && break
done
echo "total $(( $(date +%s) - total ))s" >> "$out.steps"
