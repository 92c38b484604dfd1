#!/usr/bin/env bash
# Runs one fuzz target for a bounded time at low priority (docs/FUZZING.md).
#   fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
# The working corpus grows in fuzz/corpus/TARGET (not committed); fuzz/seeds/TARGET and
# fuzz/regressions/TARGET are read as starting inputs. Findings go to fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
target=$1 secs=$2
[ -f "dict/$target.dict" ] && DICT="dict/$target.dict"
shift 2
mkdir -p "corpus/$target" "seeds/$target" "regressions/$target" "artifacts/$target"
export RUSTC_BOOTSTRAP=1 CARGO_INCREMENTAL=0
exec nice -n 19 cargo fuzz run -O -a -s none --codegen-units 8 \
  --target-dir "${CARGO_TARGET_DIR:-target}" "$target" \
  "corpus/$target" "seeds/$target" "regressions/$target" -- \
  -max_total_time="$secs" -max_len=65536 -rss_limit_mb=1024 -timeout=10 \
  ${DICT:+-dict=$DICT} -artifact_prefix="artifacts/$target/" -print_final_stats=1 "$@"
