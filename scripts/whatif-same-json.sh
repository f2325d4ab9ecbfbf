#!/bin/sh
# whatif-same-json.sh BASE [TRACE...]: checks that `hintstream whatif
# --json` gives the same report, byte for byte except the wall times
# (elapsed_s, requests_per_s), at BASE (a commit) and in this worktree:
# on the synthetic trace, on each TRACE given, on the generated workloads
# (--workload sessions and agent, where BASE has them) and on the
# synthetic sessions (TestWriteSessionsJSON). For changes meant only to
# make whatif faster. Exits 1 on the first difference, printing it.
set -eu
base=${1:?usage: whatif-same-json.sh BASE [TRACE...]}
shift
root=$(git rev-parse --show-toplevel)
trace=${HINTSTREAM_TRACE:-$root/../shared/data/mooncake_synthetic_trace.jsonl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# BASE's tree, unpacked (no worktree: nothing is written to the repository).
mkdir -p "$tmp/base"
git -C "$root" archive "$base" | tar -x -C "$tmp/base"
cp "$root/whatif/samejson_test.go" "$tmp/base/whatif/"
untimed() { sed -E 's/"(elapsed_s|requests_per_s)": [-+.eE0-9]+/"\1": X/' "$1"; }
for side in base head; do
	src=$root
	[ "$side" = base ] && src=$tmp/base
	mkdir -p "$tmp/$side"
	(cd "$src" && go build -o "$tmp/$side/hintstream" ./cmd/hintstream)
	(cd "$src" && HINTSTREAM_WHATIF_JSON_OUT=$tmp/$side go test -count=1 -run '^TestWriteSessionsJSON$' ./whatif/ >/dev/null)
	k=0
	for t in "$trace" "$@"; do
		k=$((k + 1))
		"$tmp/$side/hintstream" whatif --trace "$t" --json >"$tmp/$side/trace-$k.json"
	done
	for g in sessions agent; do
		if "$tmp/base/hintstream" whatif --help 2>&1 | grep -q -- "--workload"; then
			"$tmp/$side/hintstream" whatif --workload "$g" --json >"$tmp/$side/workload-$g.json"
		fi
	done
done
status=0
for f in "$tmp"/head/*.json; do
	n=$(basename "$f")
	untimed "$tmp/base/$n" >"$tmp/untimed-base"
	untimed "$f" >"$tmp/untimed-head"
	if cmp -s "$tmp/untimed-base" "$tmp/untimed-head"; then
		echo "same: $n ($(wc -c <"$f") bytes)"
	else
		echo "DIFFERENT: $n"
		diff "$tmp/untimed-base" "$tmp/untimed-head" | head -20
		status=1
	fi
done
exit $status
