#!/usr/bin/env bash
# rubiconv on the GPU (needs one; not run by run_all.sh): every method's plan
# on the same packed input, executed by the CUDA module (batched cuFFT).
# L in {64K, 256K, 1M} (override: LENGTHS=...), H = 64, B = 1, lognormal
# document lengths with median 512 and 4096 (sigma 1), Lk = L, float32.
# Time = compute_seconds: CPU planning + the GPU computation (CUDA events,
# fastest of REPEAT runs inside one process); host<->device copies and cuFFT
# plan creation are reported apart (copies of x and y, once).
. "$(dirname "$0")/../lib.sh" "$1" rubiconv-cuda
lengths=${LENGTHS:-"65536 262144 1048576"}
medians=${MEDIANS:-"512 4096"}
repeat=${REPEAT:-5}
run() {  # METHOD [VERB] -> "seconds copies setup"
  rubiconv -q --device cuda "${2:-apply}" -i "$work/in.h5" --method "$1" --repeats "$repeat" -o "$work/out.h5"
  echo "$(attr "$work/out.h5" compute_seconds) $(awk -v u="$(attr "$work/out.h5" upload_seconds)" -v d="$(attr "$work/out.h5" download_seconds)" 'BEGIN{print u+d}') $(attr "$work/out.h5" setup_seconds)"
  rm -f "$work/out.h5"
}
echo "== rubiconv on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), H = 64, Lk = L, float32, best of $repeat"
printf '%-8s %-7s | %9s %9s %9s %9s %9s | %7s %7s %7s %7s | %9s %9s\n' L median rubiconv fullfft padded perdoc grad "rc/full" "pad/rc" "per/rc" "grd/rc" "copies" "rc setup"
for length in $lengths; do
  for median in $medians; do
    rubiconv -q gen --length "$length" --channels 64 --doc-lengths "lognormal:$median,1.0" --with-dy --seed 1 -o "$work/in.h5"
    read -r t_rc c_rc s_rc < <(run rubiconv)
    read -r t_full _ _ < <(run fullfft)
    read -r t_pad _ _ < <(run padded)
    read -r t_per _ _ < <(run perdoc)
    read -r t_grad _ _ < <(run rubiconv grad)
    awk -v L="$length" -v md="$median" -v rc="$t_rc" -v full="$t_full" -v pad="$t_pad" -v per="$t_per" -v g="$t_grad" -v c="$c_rc" -v s="$s_rc" 'BEGIN {
      printf "%-8d %-7d | %8.4fs %8.4fs %8.4fs %8.4fs %8.4fs | %6.2fx %6.2fx %6.2fx %6.2fx | %8.4fs %8.4fs\n", L, md, rc, full, pad, per, g, rc/full, pad/rc, per/rc, g/rc, c, s }'
    rm -f "$work/in.h5"
  done
done
