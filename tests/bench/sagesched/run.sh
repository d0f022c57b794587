#!/usr/bin/env bash
# sagesched benchmark, one run (about 8 minutes on one core):
# 1. every policy on three workloads (sharegpt-poisson, sharegpt-bursty =
#    Gamma CV 3, mixed = code + conv), loads 0.7, 0.9, 1.0 and 1.2 (overload:
#    the queue grows over the trace) of the server's measured saturated throughput, REQUESTS (20000) requests each, on the
#    h200-llama3-8b profile with its own KV cache (830K tokens) and with the
#    cache cut to KV_PRESSURE (65536) tokens: mean/P99 TTLT, mean TTFT,
#    throughput, preemptions, gains (table.py), SVG figures;
# 2. the length predictor against a global histogram and a category mean on
#    each workload's trace at load 0.9;
# 3. the simulator's speed on SPEED_REQUESTS (1M) requests on one core.
# 4. the testbed: nk-lm served for real against the simulator.
# SHARD=I/N runs the I-th of N slices of part 1 (its tables need all slices);
# 5. (PARTS=5) the H200 profile with the derating `sagesched probe` measured
#    (a fresh probe where a GPU exists, else the shipped one): every policy
#    at loads 0.9 and 1.2 of that profile's throughput.
# PARTS (default 1234; 5 needs part 1's traces) picks parts.
. "$(dirname "$0")/../lib.sh" "$1" sagesched-bench
requests=${REQUESTS:-20000}
kv_pressure=${KV_PRESSURE:-65536}
speed_requests=${SPEED_REQUESTS:-1000000}
out=${OUT:-build/bench/sagesched}
shard=${SHARD:-0/1}
parts=${PARTS:-1234}
mkdir -p "$out"
policies="fcfs sjf-pred ltr mlfq srpt-oracle sagesched sagesched-nomem sagesched-point"
workload_args() {
  case "$1" in
    sharegpt-poisson) echo "--mix sharegpt --arrivals poisson" ;;
    sharegpt-bursty) echo "--mix sharegpt --arrivals gamma:3" ;;
    mixed) echo "--mix mixed --arrivals poisson" ;;
  esac
}

if [[ $parts == *1* ]]; then
echo "== part 1: every policy, $requests requests per trace (shard $shard)"
index=0
for workload in sharegpt-poisson sharegpt-bursty mixed; do
  for kv in 0 "$kv_pressure"; do
    for load in 0.7 0.9 1.0 1.2; do
      index=$((index + 1))
      [ $(((index - 1) % ${shard#*/})) -eq "${shard%/*}" ] || continue
      name="$workload-kv$kv-$load"
      # shellcheck disable=SC2046
      sagesched -q trace --requests "$requests" --load "$load" --kv-tokens "$kv" $(workload_args "$workload") \
        --seed 1 -o "$out/$name.trace.h5"
      for policy in $policies; do
        sagesched -q simulate -i "$out/$name.trace.h5" --policy "$policy" --kv-tokens "$kv" --no-iterations \
          -o "$out/$name.$policy.h5"
      done
      echo "  $name: done"
    done
  done
done
[ "$shard" = "0/1" ] || exit 0
/usr/bin/python3 "$(dirname "$0")/table.py" "$out" | tee "$out/table.md"
for workload in sharegpt-poisson sharegpt-bursty mixed; do
  for kv in 0 "$kv_pressure"; do
    sagesched -q plot --kind load -i "$out/$workload-kv$kv"-*.{fcfs,sjf-pred,ltr,mlfq,srpt-oracle,sagesched}.h5 \
      --title "$workload, KV $( [ "$kv" = 0 ] && echo 'of the H200' || echo "$kv tokens")" -o "$out/load-$workload-kv$kv.svg"
  done
  sagesched -q plot -i "$out/$workload-kv$kv_pressure-1.0".{fcfs,sjf-pred,mlfq,srpt-oracle,sagesched}.h5 \
    --title "$workload at load 1.0, KV $kv_pressure tokens" -o "$out/cdf-$workload.svg"
done
fi

if [[ $parts == *2* ]]; then
echo
echo "== part 2: the length predictor (replayed online; results known at their solo finish)"
for workload in sharegpt-poisson sharegpt-bursty mixed; do
  echo "-- $workload (load 0.9)"
  sagesched predict -i "$out/$workload-kv0-0.9.trace.h5" -o "$work/pred.h5"
  echo "   $(attr "$work/pred.h5" us_per_request) us per prediction"
done
fi

if [[ $parts == *3* ]]; then
echo
echo "== part 3: simulator speed, $speed_requests requests (sharegpt, load 0.9), one core"
sagesched -q trace --requests "$speed_requests" --load 0.9 --seed 2 -o "$work/speed.h5"
for policy in fcfs srpt-oracle sagesched; do
  /usr/bin/time -f "%e s, %M KiB peak" taskset -c 0 sagesched -q simulate -i "$work/speed.h5" --policy "$policy" \
    --no-iterations --threads 1 -o "$work/speed-$policy.h5" 2> "$work/time.txt"
  rps=$(attr "$work/speed-$policy.h5" requests_per_s)
  awk -v p="$policy" -v r="$rps" -v t="$(tail -1 "$work/time.txt")" 'BEGIN {
    printf "%-12s %10.0f requests/s (%.2fM per minute; goal 1M): %s\n", p, r, r * 60 / 1e6, t }'
done
echo "(fcfs keys never change: its rate is the event loop's own ceiling on this core, the limit for any policy)"
fi

if [[ $parts == *5* ]]; then
echo
echo "== part 5: the H200 with its measured derating (sagesched probe), every policy"
# The profile: PROBED=FILE, else a fresh probe where nvidia-smi lists a GPU,
# else the one shipped (data/sagesched/h200-probed.toml, probed on an H200).
probed=${PROBED:-}
if [ -z "$probed" ] && nvidia-smi -L >/dev/null 2>&1; then
  probed="$out/h200-probed.toml"
  sagesched probe --seconds "${PROBE_SECONDS:-60}" -o "$probed"
fi
probed=${probed:-"$(dirname "$0")/../../../data/sagesched/h200-probed.toml"}
head -n 1 "$probed"
mkdir -p "$out/probed"
for workload in sharegpt-poisson mixed; do
  for load in 0.9 1.2; do
    name="$workload-kv0-$load"
    # shellcheck disable=SC2046
    sagesched -q trace --requests "$requests" --load "$load" --profile "$probed" $(workload_args "$workload") \
      --seed 1 -o "$out/probed/$name.trace.h5"
    for policy in $policies; do
      sagesched -q simulate -i "$out/probed/$name.trace.h5" --policy "$policy" --profile "$probed" --no-iterations \
        -o "$out/probed/$name.$policy.h5"
    done
  done
done
/usr/bin/python3 "$(dirname "$0")/table.py" "$out/probed" | tee "$out/probed/table.md"
fi
[[ $parts == *4* ]] || exit 0
echo
echo "== part 4: the testbed (nk-lm served for real, one thread) against the simulator"
# The grid profile (calibrate), and one fitted to a testbed run of a held-out
# trace (seed 2), and in-sample one fitted to the compared run itself; the
# comparison trace (seed 1) has TESTBED_REQUESTS (500)
# Debian-prompt requests at load 0.7 of the fitted profile's saturation.
bed_requests=${TESTBED_REQUESTS:-500}
bed_args="--requests $bed_requests --mix sharegpt --prompts debian --max-context 256 --load 0.7"
taskset -c 0 sagesched -q calibrate --threads 1 -o "$out/grid.toml" > /dev/null
# shellcheck disable=SC2086
sagesched -q trace $bed_args --profile "$out/grid.toml" --seed 2 -o "$out/bed-heldout.trace.h5"
taskset -c 0 sagesched -q testbed -i "$out/bed-heldout.trace.h5" --policy fcfs --profile "$out/grid.toml" --threads 1 \
  -o "$out/bed-heldout.fcfs.measured.h5"
sagesched -q calibrate --from "$out/bed-heldout.fcfs.measured.h5" -o "$out/fitted.toml" > /dev/null
# shellcheck disable=SC2086
sagesched -q trace $bed_args --profile "$out/fitted.toml" --seed 1 -o "$out/bed.trace.h5"
for policy in fcfs sagesched; do
  taskset -c 0 sagesched -q testbed -i "$out/bed.trace.h5" --policy "$policy" --profile "$out/fitted.toml" --threads 1 \
    -o "$out/bed.$policy.measured.h5"
  # In-sample: the profile fitted to this very run (the machine's speed drifts between runs).
  sagesched -q calibrate --from "$out/bed.$policy.measured.h5" -o "$out/insample-$policy.toml" > /dev/null
  for prof in grid fitted "insample-$policy"; do
    sagesched -q simulate -i "$out/bed.trace.h5" --policy "$policy" --profile "$out/$prof.toml" -o "$out/bed.$policy.sim-${prof%-*}.h5"
  done
done
# The noise floor: the same trace and policy served again.
taskset -c 0 sagesched -q testbed -i "$out/bed.trace.h5" --policy fcfs --profile "$out/fitted.toml" --threads 1 \
  -o "$out/bed.fcfs.again.h5"
/usr/bin/python3 "$(dirname "$0")/testbed.py" "$out" | tee "$out/testbed.md"
