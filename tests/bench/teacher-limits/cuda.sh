#!/usr/bin/env bash
# teacher-limits on the GPU (needs one; not run by run_all.sh): HMC gradients
# per second with --device cuda (the committee family: data on the device
# once, cuBLAS SGEMMs) against the same HMC on every CPU core, and the same
# HMC in PyTorch on the CPU and on the GPU (hmc_torch.py, the peer a user
# would write). Shapes: d = k = 64, n = 16384 (benchmark part 4's) and
# d = k = 256 at n = 65536 and 262144 (SHAPES="d:n ..."; torch on the CPU
# gets fewer gradients at the largest n). The limit: torch's FP32 GEMM rate
# at the gradient's two shapes on the same device. Then part (2) of the CPU
# benchmark at d = k = 256 (below).
. "$(dirname "$0")/../lib.sh" "$1" teacher-limits-cuda
here=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
threads=${THREADS:-$(nproc)}
shapes=${SHAPES:-"64:16384 256:65536 256:262144"}
echo "== teacher-limits hmc on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $threads CPU threads"
printf '%-5s %-6s | %-22s %12s %10s | %s\n' d n system "gradients/s" "GFLOP/s" "GEMM limit GFLOP/s"
rate() { $PY -c "import h5py; h = h5py.File('$1')['/hmc']; print(h['gradients'][0] / h['gradient_seconds'][0], h['step'][0])"; }
for shape in $shapes; do
  d=${shape%%:*}; n=${shape##*:}
  flops=$((4 * n * d * d))
  teacher-limits -q teacher --d "$d" --k "$d" --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$work/t.h5"
  teacher-limits -q data -i "$work/t.h5" --n "$n" --test 1000 --seed 2 -o "$work/d.h5"
  read -r cpu step < <(teacher-limits -q --device cpu --threads "$threads" hmc -i "$work/d.h5" --chains 1 --samples 20 --warmup 10 --leapfrog 10 -o "$work/cpu.h5" && rate "$work/cpu.h5")
  read -r gpu _ < <(teacher-limits -q --device cuda hmc -i "$work/d.h5" --chains 1 --samples 100 --warmup 50 --leapfrog 10 -o "$work/gpu.h5" && rate "$work/gpu.h5")
  for row in "teacher-limits cpu:$cpu" "teacher-limits cuda:$gpu"; do
    awk -v d="$d" -v n="$n" -v s="${row%%:*}" -v r="${row#*:}" -v f="$flops" 'BEGIN { printf "%-5d %-6d | %-22s %12.1f %10.1f |\n", d, n, s, r, r * f * 1e-9 }'
  done
  for dev in cpu cuda; do
    budget=$([ "$dev" = cuda ] && echo 2000 || echo $((n > 65536 ? 30 : 300)))
    read -r version r g1 g2 acc < <($PY "$here/hmc_torch.py" "$work/d.h5" "$threads" "$budget" 10 "$step" "$dev")
    awk -v d="$d" -v n="$n" -v s="torch $version $dev" -v r="$r" -v f="$flops" -v g1="$g1" -v g2="$g2" 'BEGIN {
      printf "%-5d %-6d | %-22s %12.1f %10.1f | %.1f / %.1f\n", d, n, s, r, r * f * 1e-9, g1, g2 }'
  done
  rm -f "$work"/*.h5
done

# Part (2) at d = k = 256 on the GPU: HMC against the equations at the same
# n/d as the CPU benchmark's d = 64 run (n = 4.7 d .. 600 d), 4 data seeds.
# At d = 64 the equations miss HMC's 2-SE band at two n by a finite-size gap
# that shrinks with d (README); at d = 256 it should fall under the SE.
# D, HMC_SEEDS and DEVICE (cpu to try the script on a small D) change it.
D=${D:-256}
DEVICE=${DEVICE:-cuda}
ns=$(for a in 4.6875 9.375 18.75 37.5 75 150 300 600; do awk -v a="$a" -v d="$D" 'BEGIN { printf "%d,", a * d }'; done)
ns=${ns%,}
echo
echo "== part (2) at d = k = $D on $DEVICE: n = $ns, seeds ${HMC_SEEDS:-0,1,2,3}"
start=$(date +%s)
teacher-limits -q teacher --d "$D" --k "$D" --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$work/t$D.h5"
teacher-limits -q theory -i "$work/t$D.h5" --n-range "$((D * 2)):$((D * 20000)):160" -o "$work/th$D.h5"
teacher-limits -q --device "$DEVICE" hmc -i "$work/t$D.h5" --n "$ns" --data-seeds "${HMC_SEEDS:-0,1,2,3}" --test 4000 \
  --chains 2 --samples 150 --warmup 500 --leapfrog 10 --seed 11 -o "$work/hmc$D.h5"
$PY "$here/hmc_theory.py" hmc "$work/th$D.h5" "$work/hmc$D.h5"
echo "(part 2 at d = $D: $(( $(date +%s) - start )) s)"
