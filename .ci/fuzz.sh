#!/usr/bin/env bash
# make fuzz: runs every Go native fuzz target (func FuzzX(f *testing.F)) of the collector module, under
# internal/ and cmd/, for FUZZTIME each, one at a time: a fuzz run already keeps every CPU busy. Then one
# line per target with its executions; fails when a target failed (go test writes the failing input to
# the package's testdata/fuzz/FuzzX/, to commit as a regression test).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}

# nested reports whether dir is in a Go module of its own (internal/tools), which go test here cannot reach.
nested() {
	local d=$1
	while [ "$d" != . ]; do
		[ -f "$d/go.mod" ] && return 0
		d=$(dirname "$d")
	done
	return 1
}

targets=$(grep -rHoE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=grafana \
	'^func Fuzz[A-Za-z0-9_]*\(' ./internal ./cmd | sed -E 's#^\./(.*)/[^/]*:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' | sort -u)
[ -n "$targets" ] || { echo "no fuzz targets found"; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
summary=()
failed=0
flaked=0
while read -r dir name; do
	nested "$dir" && continue
	echo "=== $name (./$dir, $FUZZTIME)"
	# -timeout 0: FUZZTIME bounds the run; go test's default 10m would end a longer one as a failure.
	"$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -timeout 0 "./$dir" </dev/null 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	# The last progress line ("fuzz: elapsed: 5s, execs: 123456 (24691/sec), ...") has the total.
	execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)
	result=ok
	if [ "$status" -ne 0 ]; then
		# Go's fuzzing coordinator may end a target with a bare "context deadline exceeded" as FUZZTIME
		# runs out, no input written: a race of its own, not a finding.
		if grep -A1 "^--- FAIL: $name " "$log" | tail -n 1 | grep -qE '^\s+context deadline exceeded$' &&
			! grep -q 'Failing input written to' "$log"; then
			result=ok*
			flaked=1
		else
			result=FAIL
			failed=1
		fi
	fi
	summary+=("$(printf '%-4s %-28s %-42s %12s execs' "$result" "$name" "./$dir" "${execs:-?}")")
done <<<"$targets"

echo
echo "fuzz summary (FUZZTIME=$FUZZTIME):"
printf '%s\n' "${summary[@]}"
[ "$flaked" = 0 ] || echo "ok*: ended by Go's fuzztime deadline race, not by an input"
exit "$failed"
