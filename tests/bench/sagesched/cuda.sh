#!/usr/bin/env bash
# sagesched on the GPU (needs one; not run by run_all.sh): `sagesched probe`
# measures the GPU's device-copy bandwidth and BF16 GEMM rate and writes the
# H200 roofline with that derating in place of the preset's assumed 0.5
# (compute) and 0.8 (bandwidth); then load-0.9 traces (REQUESTS, 20000) are
# simulated under the preset and under the probed profile, FCFS, SageSched and
# the SRPT oracle, so the table shows what the measured derating changes.
. "$(dirname "$0")/../lib.sh" "$1" sagesched-cuda
requests=${REQUESTS:-20000}
seconds=${PROBE_SECONDS:-20}
out=${OUT:-$work}
mkdir -p "$out"
echo "== sagesched probe on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $seconds s"
sagesched probe --seconds "$seconds" -o "$out/h200-probed.toml"
cat "$out/h200-probed.toml"
printf '%-18s %-12s | %14s %14s | %8s\n' workload policy "preset TTLT s" "probed TTLT s" "probed/preset"
for spec in "sharegpt-poisson:--mix sharegpt --arrivals poisson" "mixed:--mix mixed --arrivals poisson"; do
  workload=${spec%%:*}
  # shellcheck disable=SC2086
  sagesched -q trace --requests "$requests" --load 0.9 ${spec#*:} --seed 1 -o "$work/trace.h5"
  for policy in fcfs sagesched srpt-oracle; do
    sagesched -q simulate -i "$work/trace.h5" --policy "$policy" --no-iterations -o "$work/preset.h5"
    sagesched -q simulate -i "$work/trace.h5" --policy "$policy" --profile "$out/h200-probed.toml" --no-iterations -o "$work/probed.h5"
    awk -v w="$workload" -v p="$policy" -v a="$(attr "$work/preset.h5" mean_ttlt)" -v b="$(attr "$work/probed.h5" mean_ttlt)" \
      'BEGIN { printf "%-18s %-12s | %14.3f %14.3f | %8.3f\n", w, p, a, b, b / a }'
  done
done
