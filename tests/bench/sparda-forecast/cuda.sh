#!/usr/bin/env bash
# sparda-forecast part B over a real PCIe link (needs a GPU; run by
# tests/bench/cuda_all.sh, not by run_all.sh). A random trace at the paper's
# decode shapes (Hq 32, Hkv 8, d 128, D 4096, 4 layers) of N tokens is
# replayed for its last STEPS positions through the offload engine on the
# GPU (--device cuda): resident (every KV row in GPU memory), sync (select,
# copy the misses from page-locked host memory on the copy stream, wait,
# attend) and forecast (layer l's Forecast picks l+1's blocks, whose copy
# runs while l computes); top-64 + 32 local blocks of 64 tokens, a device
# pool of DEVICE_MIB (default 256) MiB. Then the CPU engine, uncapped, on the
# same trace, for comparison.
#
# A replay has no MLP or projections: the GPU's compute per layer (Tc) is
# the selection and the sparse attention of one token, so Tx (the copies)
# dominates; the table gives Tc, Tx, the bound (Tc + Tx) / max(Tc, Tx) and
# the share of it that forecast reaches, and the PCIe rate the copies ran at.
# Sizes: SIZES (default 32768; "32768 65536" adds 64K), STEPS (32); DEVICES ("cuda cpu";
# DEVICES=cpu SIZES=4096 tries the script without a GPU).
. "$(dirname "$0")/../lib.sh" "$1" sparda-cuda
PY=/usr/bin/python3
sizes=${SIZES:-32768}
steps=${STEPS:-32}
mib=${DEVICE_MIB:-256}
devices=${DEVICES:-"cuda cpu"}
SEL="--block 64 --topk 64 --local-blocks 32 --init-blocks 1"
echo "== sparda-forecast on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1): decode replay at the paper's shapes, $steps steps, pool $mib MiB"
for n in $sizes; do
  sparda-forecast -q gen --layers 4 --heads 32 --kv-heads 8 --head-dim 128 --d-model 4096 --tokens "$n" --block 64 \
    --seed 1 -o "$work/trace.h5"
  # A Forecast for timing (its blocks are wrong as often as a real one's are right: the copies cost the same).
  sparda-forecast -q train -i "$work/trace.h5" $SEL --steps 10 --queries 64 --init zero -o "$work/f.h5"
  pos="$((n - steps)):$n"
  for dev in $devices; do
    sparda-forecast -q --device "$dev" decode -i "$work/trace.h5" $SEL --positions "$pos" --mode resident -o "$work/res_$dev.h5"
    sparda-forecast -q --device "$dev" decode -i "$work/trace.h5" $SEL --positions "$pos" --mode sync \
      --device-mem "$mib" -o "$work/sync_$dev.h5"
    sparda-forecast -q --device "$dev" decode -i "$work/trace.h5" $SEL --positions "$pos" --mode forecast \
      --forecast "$work/f.h5" --device-mem "$mib" -o "$work/fc_$dev.h5"
  done
  $PY - "$work" "$n" $devices <<'PYEOF'
import h5py, numpy as np, sys
w, n, devices = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def med(f, name="step_seconds"):
    return float(np.median(h5py.File(f)["stats/" + name][1:]))
def tot(f, name):
    return float(h5py.File(f)["stats/" + name][0])
for dev in devices:
    r, s, f = (f"{w}/{m}_{dev}.h5" for m in ("res", "sync", "fc"))
    tc, ts, tf = med(r), med(s), med(f)
    bytes_step = med(s, "step_bytes")
    steps = len(h5py.File(s)["stats/step_seconds"])
    tx = max(ts - tc, 1e-9)  # sync's step = compute + the copies it waits for
    bound = (tc + tx) / max(tc, tx)
    rate = bytes_step / tx / 1e9
    hits = tot(s, "hits") / max(tot(s, "requested"), 1)
    print(f"  N {n:>6} {dev:>4}: resident {tc*1e3:7.2f} ms  sync {ts*1e3:7.2f} ms  forecast {tf*1e3:7.2f} ms | "
          f"forecast/sync {ts/tf:5.2f}x  bound {bound:5.2f}x  share {(ts/tf - 1) / max(bound - 1, 1e-9):5.2f} | "
          f"{bytes_step/2**20:7.1f} MiB a step at {rate:6.2f} GB/s, sync hit rate {hits:.2f}, "
          f"select {tot(s, 'select_seconds')/steps*1e3:6.2f} / {tot(f, 'select_seconds')/steps*1e3:6.2f} ms a step (selector / forecast)")
# The GPU's outputs against the CPU engine's (the CPU twin, at full size).
for m in ("res", "sync", "fc") if len(devices) == 2 else ():
    a, b = h5py.File(f"{w}/{m}_cuda.h5"), h5py.File(f"{w}/{m}_cpu.h5")
    err = max(float(np.abs(a[k + "/out"][...] - b[k + "/out"][...]).max() / np.abs(b[k + "/out"][...]).max())
              for k in a if k.startswith("layer_"))
    print(f"  N {n:>6} {m}: GPU vs CPU output, largest relative difference {err:.1e}")
PYEOF
  rm -f "$work"/*.h5
done
