#!/usr/bin/env bash
# speedscale-sim benchmark, one run:
# 1. YDS time on one core at n in {1K, 10K, 100K} Poisson jobs (override:
#    SIZES="1000 10000"), against the O(n^3) textbook YDS on the sizes it can
#    do (NAIVE_MAX, default 4000), with the scaling exponent from 1K to 100K;
# 2. the energy ratio to OPT of every algorithm on INSTANCES (default 1000)
#    instances of JOBS (default 100) jobs per arrival pattern (poisson, bursty,
#    diurnal), with perfect, noisy (0.2 and 1) and garbage (zero, x10,
#    random) speed predictions, and pred-offline with a profile learned from
#    another INSTANCES instances of the same pattern.
. "$(dirname "$0")/../lib.sh" "$1" speedscale-bench
sizes=${SIZES:-"1000 10000 100000"}
naive_max=${NAIVE_MAX:-4000}
instances=${INSTANCES:-1000}
jobs=${JOBS:-100}
seconds() { awk -F'\t' -v a="$2" '$1==a {print $6}' "$1"; }

echo "== YDS on one core (poisson:1 arrivals, lognormal work and slack)"
printf '%-8s %12s %14s %9s\n' n "yds s" "yds-naive s" speedup
first_n=""; first_t=""; last_n=""; last_t=""
for n in $(echo $sizes 2000 4000 | tr ' ' '\n' | sort -n | uniq); do
  [ "$n" -gt "$naive_max" ] && ! echo " $sizes " | grep -q " $n " && continue
  speedscale-sim -q gen --jobs "$n" --seed 1 -o "$work/big.h5"
  algos=yds; [ "$n" -le "$naive_max" ] && algos=yds,yds-naive
  speedscale-sim solve -i "$work/big.h5" --algo "$algos" --no-profiles --threads 1 -o "$work/big_res.h5" > "$work/t.tsv"
  t=$(seconds "$work/t.tsv" yds)
  tn=$( [ "$n" -le "$naive_max" ] && seconds "$work/t.tsv" yds-naive || echo "")
  awk -v n="$n" -v t="$t" -v tn="$tn" 'BEGIN { if (tn != "") printf "%-8d %12.4f %14.4f %8.1fx\n", n, t, tn, tn / t;
                                           else printf "%-8d %12.4f %14s %9s\n", n, t, "(skipped)", "-" }'
  if echo " $sizes " | grep -q " $n "; then
    [ -z "$first_n" ] && first_n=$n && first_t=$t
    last_n=$n; last_t=$t
  fi
done
awk -v a="$first_n" -v ta="$first_t" -v b="$last_n" -v tb="$last_t" 'BEGIN {
  if (b > a) printf "scaling exponent of yds from n = %d to %d: %.2f (time ~ n^k)\n", a, b, log(tb / ta) / log(b / a) }'
echo "goal: yds on 10K jobs in under 2 s on one core"

echo
echo "== energy / OPT, alpha = 3, $instances instances x $jobs jobs per arrival pattern (mean, max)"
for pattern in poisson:1 bursty:0.5,8,10 diurnal:1,24; do
  name=${pattern%%:*}
  speedscale-sim -q gen --jobs "$jobs" --instances "$instances" --arrivals "$pattern" --seed 11 -o "$work/inst.h5"
  speedscale-sim -q gen --jobs "$jobs" --instances "$instances" --arrivals "$pattern" --seed 12 -o "$work/train.h5"
  speedscale-sim eval -i "$work/inst.h5" --noise 0,0.2,1 -o "$work/eval.h5" > "$work/eval.tsv"
  speedscale-sim -q predict -i "$work/train.h5" --method mean --grid 256 -o "$work/learned.h5"
  speedscale-sim solve -i "$work/inst.h5" --predictions "$work/learned.h5" --algo yds,pred-offline --no-profiles -o "$work/learned_res.h5" > "$work/learned.tsv"
  echo "-- $name"
  awk -F'\t' 'NR > 1 { key = $1 " " ($3 == "none" ? "" : $3 == "noise" ? "noise " $4 : $3);
                       printf "   %-34s eta %-7s mean %7.4f  max %8.4f  feasible %s\n", key, $5, $6, $7, $8 }' "$work/eval.tsv"
  awk -F'\t' '$1 == "pred-offline" { printf "   %-34s eta %-7s mean %7.4f  max %8.4f  feasible %s\n", "pred-offline (learned mean profile)", "-", $3, $4, $5 }' "$work/learned.tsv"
done
echo
echo "== the trust budget gamma of pred-dynamic (poisson, same instances as above): perfect and x10 predictions"
speedscale-sim -q gen --jobs "$jobs" --instances "$instances" --arrivals poisson:1 --seed 11 -o "$work/inst.h5"
printf '   %-8s %-28s %-28s\n' gamma "perfect: mean / max" "x10: mean / max"
for g in 1 1.5 2 4 8 1e12; do
  speedscale-sim eval -i "$work/inst.h5" --noise 0 --algo pred-dynamic --gamma "$g" -o "$work/g.h5" > "$work/g.tsv"
  awk -F'\t' -v g="$g" '$3 == "noise" { p = $6 " / " $7 } $3 == "x10" { x = $6 " / " $7 }
                         END { printf "   %-8s %-28s %-28s\n", g, p, x }' "$work/g.tsv"
done
echo "bounds (alpha = 3): AVR <= 108, OA <= 27, qOA ~ 6.7, BKP <= 135.6; pred-* proven <= 252 (gamma 2, hard 4)"
