#!/usr/bin/env bash
# tnqe-encode benchmark, one run: TNQE circuits next to exact amplitude
# encoding compiled by the same compiler and counted by the same counter.
# Images: Debian's python3-skimage camera (256x256 and 32x32 gray),
# astronaut and coffee (256x256 RGB), and FM Fashion-MNIST test images
# (default 1000; 28x28 padded to 32x32). For camera 256: sequential and
# parallel at chi in {2,4,8,16} (SVD only, and sequential trained), and
# layered circuits of L two-qubit-gate layers (SVD-initialised, and trained).
# Prints one table (qubits, CNOTs, depth, depth ratio to the baseline,
# fidelity, PSNR, SSIM, seconds per image) and writes the depth-vs-PSNR plot
# of camera 256 to $PLOT (default tnqe_camera.svg).
# Environment: FM (Fashion-MNIST items), ONLY (camera|rgb|fmnist: one part),
# ITER (Adam iterations, default 200), PEERS=0 (skip Qiskit, the peer: its
# amplitude encoding of camera 32x32 and its simulator on our OpenQASM).
. "$(dirname "$0")/../lib.sh" "$1" tnqe-bench
here=$(cd "$(dirname "$0")" && pwd)
S=$(/usr/bin/python3 -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), "data"))')
F=/usr/share/datasets/fashion-mnist
fm=${FM:-1000}
only=${ONLY:-all}
iter=${ITER:-200}
plot=${PLOT:-tnqe_camera.svg}
runs="$work/runs.tsv"
: > "$runs"
# enc LABEL IMAGE METHOD PARAM FILE ARGS...: one encode (or baseline) run, timed.
enc() {
  local label=$1 image=$2 method=$3 param=$4 data=$5; shift 5
  local out="$work/$label.h5" t0 t1
  t0=$(date +%s.%N)
  if [ "$method" = amplitude ]; then tnqe-encode -q baseline -i "$data" "$@" -o "$out"; else tnqe-encode -q encode -i "$data" "$@" -o "$out"; fi
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\n' "$image" "$method" "$param" "$out" "$(echo "$t1 - $t0" | bc)" >> "$runs"
}
if [ "$only" = all ] || [ "$only" = camera ]; then
  nk-data -q import "$S/camera.png" --channels 1 --resize 256x256 -o "$work/camera256.h5"
  nk-data -q import "$S/camera.png" --channels 1 --resize 32x32 -o "$work/camera32.h5"
  enc cam256-amp camera256 amplitude - "$work/camera256.h5"
  for chi in 2 4 8 16; do
    enc cam256-seq$chi camera256 sequential "chi=$chi" "$work/camera256.h5" --bond $chi
    enc cam256-par$chi camera256 parallel "chi=$chi" "$work/camera256.h5" --bond $chi --strategy parallel
    enc cam256-tr$chi camera256 "sequential+train" "chi=$chi" "$work/camera256.h5" --bond $chi --train --iterations "$iter"
  done
  for layers in 2 4 8 16; do
    enc cam256-lay$layers camera256 layered "L=$layers" "$work/camera256.h5" --layers $layers
    enc cam256-laytr$layers camera256 "layered+train" "L=$layers" "$work/camera256.h5" --layers $layers --train --iterations "$iter" --lr 0.02
  done
  enc cam32-amp camera32 amplitude - "$work/camera32.h5"
  for chi in 2 4 8; do enc cam32-seq$chi camera32 sequential "chi=$chi" "$work/camera32.h5" --bond $chi; done
fi
if [ "$only" = all ] || [ "$only" = rgb ]; then
  for img in astronaut coffee; do
    nk-data -q import "$S/$img.png" --channels 3 --resize 256x256 -o "$work/$img.h5"
    enc $img-amp $img amplitude - "$work/$img.h5" --verify-qubits 18
    for chi in 4 8 16; do
      enc $img-seq$chi $img sequential "chi=$chi" "$work/$img.h5" --bond $chi
      enc $img-par$chi $img parallel "chi=$chi" "$work/$img.h5" --bond $chi --strategy parallel
    done
  done
fi
if [ "$only" = all ] || [ "$only" = fmnist ]; then
  nk-data -q import-idx "$F/t10k-images-idx3-ubyte.gz" "$F/t10k-labels-idx1-ubyte.gz" --limit "$fm" -o "$work/fm.h5"
  enc fm-amp "fmnist$fm" amplitude - "$work/fm.h5" --pad
  for chi in 4 8; do enc fm-seq$chi "fmnist$fm" sequential "chi=$chi" "$work/fm.h5" --pad --bond $chi; done
  enc fm-laytr18 "fmnist$fm" "layered+train" "L=18" "$work/fm.h5" --pad --layers 18 --train --iterations 500 --lr 0.02
fi
/usr/bin/python3 "$here/summary.py" "$runs" "$plot"
# The peer (issue #39; PEERS=0 skips it): Qiskit's StatePreparation of the
# state our camera-32 baseline prepares, transpiled to CX + U at level 3, and
# Qiskit's Statevector of our exported OpenQASM as an independent check of the
# TNQE circuits' fidelities (qiskit_peer.py, the benchmark venv).
if [ "${PEERS:-1}" != 0 ] && { [ "$only" = all ] || [ "$only" = camera ]; }; then
  PYV=${PYV:-$(bash "$here/../shred-unlearn/venv.sh" | tail -1)}
  "$(dirname "$PYV")/pip" install -q "qiskit==2.*" >&2
  mkdir -p "$work/qasm-amp" && tnqe-encode -q baseline -i "$work/camera32.h5" --qasm "$work/qasm-amp" -o "$work/q-amp.h5"
  specs=()
  for chi in 2 4 8; do
    mkdir -p "$work/qasm-seq$chi"
    tnqe-encode -q encode -i "$work/camera32.h5" --bond $chi --qasm "$work/qasm-seq$chi" -o "$work/q-seq$chi.h5"
    specs+=("seq$chi=$work/qasm-seq$chi/item_000000.qasm")
  done
  echo
  echo "camera 32x32 (10 qubits) against Qiskit:"
  "$PYV" "$here/qiskit_peer.py" "$work/qasm-amp/item_000000.qasm" "${specs[@]}" 2>/dev/null | while read -r name cx depth extra; do
    case $name in
      qiskit) echo "  $name $cx" ;;
      qiskit-amplitude) qd=$depth; echo "  amplitude encoding, Qiskit StatePreparation (CX+U, level 3): $cx CNOTs, depth $depth ($extra s)" ;;
      qiskit-initialize) echo "  amplitude encoding, Qiskit initialize (CX+U+reset, level 3): $cx CNOTs, depth $depth ($extra s)" ;;
      ours-amplitude) echo "  amplitude encoding, ours (tnqe-encode baseline): $cx CNOTs, depth $depth" ;;
      *) f=$(/usr/bin/python3 -c "import h5py; print('%.6f' % h5py.File('$work/q-$name.h5')['metrics/fidelity'][0])")
         echo "  TNQE $name: $cx CNOTs, depth $depth; fidelity by Qiskit's Statevector $extra, by tnqe-encode $f" ;;
    esac
  done
  echo "goal (issue #39): our amplitude baseline no deeper than Qiskit's"
fi
