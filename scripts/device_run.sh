#!/usr/bin/env bash
# Issue 38's GPU check as ONE call on a lent device machine (a task gets 15 minutes of device time in all, start-up
# included, and no network there): unpack the kit, record the machine, run scripts/device_bench.py from the kit at the
# paper's shot size for each precision until the time budget is near, and leave every table and JSON under $OUT.
#
# Here, first (the kit is built for the device's Python; build/ is git-ignored, so it travels as a carried path):
#   .venv/bin/python scripts/device_kit.py build --python 3.12          # -> build/device_kit/kit.zip (~14 MiB)
# Then the device tool's run, e.g.:
#   command: bash scripts/device_run.sh    carry: ["build/device_kit/kit.zip"]    timeout_s: 540
# Knobs (environment): KIT (the zip), OUT (default /tmp/device_out), BUDGET_S (seconds for the benches, default
# 450), DTYPES (default "float32 bfloat16"), DEVICE (default cuda), PY (default python3), BENCH_ARGS (more
# device_bench.py arguments; default the paper's 832x480, 81 frames, 4 timed shots after 1 warm-up).
set -u
KIT=${KIT:-build/device_kit/kit.zip}
OUT=${OUT:-/tmp/device_out}
BUDGET_S=${BUDGET_S:-450}
DTYPES=${DTYPES:-"float32 bfloat16"}
DEVICE=${DEVICE:-cuda}
PY=${PY:-python3}
BENCH_ARGS=${BENCH_ARGS:-"--shots 4 --warmup 1"}
start=$(date +%s)
mkdir -p "$OUT"
if [ ! -f "$KIT" ]; then
  echo "error: no kit at $KIT: build it here with scripts/device_kit.py build --python 3.12 and carry it" >&2
  exit 2
fi
work=$(mktemp -d)
"$PY" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$KIT" "$work/kit" || exit 2
{
  echo "kit: $KIT ($(wc -c < "$KIT") bytes), built for Python $(cat "$work/kit/KIT_PYTHON" 2>/dev/null || echo '?')"
  "$PY" -c "import sys, torch, numpy, cv2; print('python', sys.version.split()[0], '| torch', torch.__version__,
'| cuda', torch.version.cuda, torch.cuda.is_available(), '| numpy', numpy.__version__, '| opencv', cv2.__version__)"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm \
    --format=csv,noheader
} 2>&1 | tee "$OUT/machine.txt"
status=0
for dtype in $DTYPES; do
  left=$(( BUDGET_S - ($(date +%s) - start) ))
  if [ "$left" -lt 60 ]; then
    echo "skipped $dtype: ${left}s of the ${BUDGET_S}s budget left" | tee -a "$OUT/machine.txt"
    continue
  fi
  echo "== $dtype (up to ${left}s)"
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
  timeout "$left" "$PY" "$work/kit/device_bench.py" --device "$DEVICE" --dtype "$dtype" $BENCH_ARGS \
    --json "$OUT/device_$dtype.json" 2>&1 | tee "$OUT/device_$dtype.txt"
  rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && { echo "device_bench at $dtype exited $rc" | tee -a "$OUT/machine.txt"; status=1; }
done
echo "done in $(( $(date +%s) - start ))s; files in $OUT"
exit $status
