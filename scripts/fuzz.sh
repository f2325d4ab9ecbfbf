#!/usr/bin/env bash
# Runs every Fuzz target of the given packages for FUZZTIME each.
#
# Go's fuzzer can end a run that found nothing with "context deadline
# exceeded": -fuzztime ran out while a worker was still handling a new
# interesting input (seen here with -fuzzminimizetime 2s too). That is the
# harness, not a crash: a crash prints "Failing input written to" and
# leaves the input in testdata/fuzz. Such a run is repeated once; any
# other failure, or the same one twice, fails.
set -uo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZMINTIME=${FUZZMINTIME:-2s}
for p in "$@"; do
  for t in $($GO test -list '^Fuzz' "$p" | grep '^Fuzz'); do
    for attempt in 1 2; do
      echo "fuzz $p $t for $FUZZTIME (attempt $attempt)"
      out=$($GO test -run '^$' -fuzz "^$t\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINTIME" "$p" 2>&1)
      rc=$?
      printf '%s\n' "$out" | tail -n 4
      [ $rc -eq 0 ] && break
      if [ $attempt -eq 1 ] && grep -q 'context deadline exceeded' <<<"$out" &&
         ! grep -q 'Failing input written to' <<<"$out"; then
        echo "fuzz $p $t: the run ended on the fuzzer's deadline, not on a crash; once more"
        continue
      fi
      printf '%s\n' "$out"
      exit 1
    done
  done
done
