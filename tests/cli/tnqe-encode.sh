# tnqe-encode.sh - encode a shipped image (skimage's camera) and Fashion-MNIST
# items, check fidelity/PSNR/SSIM and the stored cores against numpy and
# scikit-image, round-trip QASM through simulate, and refuse bad input.
. "$(dirname "$0")/lib.sh"

check "import camera as 32x32 gray" nk-data -q import "$SKIMAGE_DATA/camera.png" --channels 1 --resize 32x32 -o cam.h5
check "import astronaut as 16x16 RGB" nk-data -q import "$SKIMAGE_DATA/astronaut.png" --channels 3 --resize 16x16 -o astro.h5
check "import 6 Fashion-MNIST images (28x28)" nk-data -q import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --limit 6 -o fm.h5
check "encode sequential, bond 4, with QASM" tnqe-encode -q encode -i cam.h5 --bond 4 --qasm qasm -o seq.h5
check "encode parallel, bond 4" tnqe-encode -q encode -i cam.h5 --bond 4 --strategy parallel -o par.h5
check "encode --no-verify and baseline --verify-qubits 0: not simulated, fidelity NaN" sh -c "tnqe-encode -q encode -i cam.h5 --bond 4 --no-verify -o nover.h5 && tnqe-encode -q baseline -i cam.h5 --verify-qubits 0 -o bnover.h5 && $PY -c \"import h5py, math, sys; sys.exit(0 if all(math.isnan(h5py.File(f)['/metrics/fidelity'][0]) for f in ('nover.h5', 'bnover.h5')) else 1)\""
check "encode RGB through a pipe" sh -c 'nk-data -q import "$0/astronaut.png" --channels 3 --resize 16x16 -o - | tnqe-encode -q encode -i - --bond 8 -o rgb.h5' "$SKIMAGE_DATA"
check "encode --tol without a bond cap" tnqe-encode -q encode -i cam.h5 --bond 0 --tol 0.05 -o tol.h5
check "encode layered, trained" tnqe-encode -q encode -i cam.h5 --layers 3 --train --iterations 30 -o lay.h5
check "encode --pad --shard 1/2 of Fashion-MNIST" tnqe-encode -q encode -i fm.h5 --pad --bond 4 --shard 1/2 -o fm_seq.h5
check "merge two shards (given in reverse order) and simulate the result" sh -c 'tnqe-encode -q encode -i fm.h5 --pad --bond 4 --shard 0/2 -o fm_seq0.h5 && tnqe-encode -q merge -i fm_seq.h5 fm_seq0.h5 -o fm_all.h5 && tnqe-encode -q simulate -i fm_all.h5 > simall.txt && [ $(wc -l < simall.txt) -eq 7 ]'
expect_fail "merge with an item twice" 3 "also in" tnqe-encode merge -i fm_seq.h5 fm_seq.h5 -o bad.h5
check "baseline (amplitude encoding) with QASM" tnqe-encode -q baseline -i cam.h5 --qasm bqasm -o base.h5
check "simulate the encoded file, decode a PNG" sh -c 'tnqe-encode -q simulate -i seq.h5 --decode seq.png > sim.txt && file seq.png | grep -q PNG'
check "simulate the parallel file, with noise" sh -c 'tnqe-encode -q simulate -i par.h5 --noise 0.01 --trajectories 10 > simpar.txt'
check "simulate the exported QASM against its target" sh -c 'tnqe-encode -q simulate --qasm qasm/item_000000.qasm --target cam.h5 > simq.txt'
check "simulate with depolarising noise" sh -c 'tnqe-encode -q --seed 3 simulate -i seq.h5 --noise 0.01 --trajectories 20 -o noisy.h5 > simn.txt'
check "sweep bonds 2,4 and 2 trained layers, with plot and HDF5" sh -c 'tnqe-encode -q sweep -i cam.h5 --bonds 2,4 --layers 2 --iterations 10 --plot sweep.svg -o sweep.h5 > sweep.txt'
check "sweep a vector (fidelity plot), no parallel" sh -c '"$0" -c "import h5py, numpy as np; h5py.File(\"vec.h5\", \"w\")[\"/vectors\"] = np.random.default_rng(1).random((2, 64)).astype(np.float32)" && tnqe-encode -q sweep -i vec.h5 --index 1 --bonds 2,8 --no-parallel --plot vec_sweep.svg > vec_sweep.txt' "$PY"
expect_fail "sweep with a zero bond" 2 "bonds" tnqe-encode sweep -i cam.h5 --bonds 0,4
expect_fail "sweep of an item that does not exist" 2 "outside" tnqe-encode sweep -i cam.h5 --index 5 -o bad.h5
check "same seed, same file but for nk_created" sh -c 'tnqe-encode -q encode -i cam.h5 --bond 4 -o seq2.h5 && h5diff seq.h5 seq2.h5 /items /items'

expect_fail "non-power-of-two without --pad" 3 "power-of-two.*--pad" tnqe-encode encode -i fm.h5 -o bad.h5
"$PY" -c "
import h5py, numpy as np
with h5py.File('zero.h5','w') as f: f['/images'] = np.zeros((1,8,8,1), np.float32)
with h5py.File('nan.h5','w') as f:
    x = np.ones((1,8,8,1), np.float32); x[0,3,3,0] = np.nan; f['/images'] = x
with h5py.File('huge.h5','w') as f: f.create_dataset('/vectors', shape=(1, 2**31 + 1), dtype=np.float32)
with h5py.File('shape.h5','w') as f: f['/images'] = np.ones((1,8,8,2), np.float32)
open('ccx.qasm','w').write('OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[3];\nccx q[0],q[1],q[2];\n')
"
expect_fail "all-zero image" 3 "all zero" tnqe-encode encode -i zero.h5 -o bad.h5
expect_fail "NaN pixel" 3 "/images.*(NaN|finite)" tnqe-encode encode -i nan.h5 -o bad.h5
expect_fail "more than 30 qubits: refused before allocating" 3 "qubits.*refused" tnqe-encode encode -i huge.h5 -o bad.h5
expect_fail "two channels" 3 "C = 1 or 3" tnqe-encode encode -i shape.h5 -o bad.h5
expect_fail "QASM with an unsupported gate" 3 "line 4.*ccx" tnqe-encode simulate --qasm ccx.qasm
printf 'OPENQASM 2.0;\nqreg q[2];\ncx q[1x],q[0];\n' > badindex.qasm
printf 'OPENQASM 2.0;\nqreg q[2x];\n' > badsize.qasm
"$PY" -c "
import h5py, shutil
shutil.copy('seq.h5', 'kind99.h5')
with h5py.File('kind99.h5', 'r+') as f:
    names = []
    f.visit(names.append)
    g = [n for n in names if n.endswith('/gates')][0]
    d = f[g][()]
    d[0, 0] = 99
    f[g][...] = d
"
expect_fail "a circuits file with gate kind 99" 3 "kind99.h5.*gates.*kind must be 0" tnqe-encode simulate -i kind99.h5
"$PY" -c "open('deep.qasm', 'w').write('OPENQASM 2.0;\\nqreg q[1];\\nu3(' + '(' * 100000 + '1' + ')' * 100000 + ',0,0) q[0];\\n')"
expect_fail "QASM angle nested 100000 deep" 3 "line 3.*nested deeper than 200" tnqe-encode simulate --qasm deep.qasm
expect_fail "QASM index '1x'" 3 "line 3.*bad index" tnqe-encode simulate --qasm badindex.qasm
expect_fail "QASM register size '2x'" 3 "line 2.*bad register size" tnqe-encode simulate --qasm badsize.qasm
expect_fail "truncated HDF5" 3 "seq_cut.h5" sh -c 'head -c 3000 seq.h5 > seq_cut.h5; tnqe-encode simulate -i seq_cut.h5'
expect_fail "empty stdin" 3 "standard input" sh -c 'tnqe-encode encode -i - -o bad.h5 < /dev/null'
expect_fail "parallel and --train" 2 "sequential" tnqe-encode encode -i cam.h5 --strategy parallel --train -o bad.h5
if [ -e bad.h5 ]; then fail "a failed run left bad.h5"; else pass "no partial output file"; fi
no_temp_files "no temp files left" .

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
from skimage.metrics import structural_similarity, peak_signal_noise_ratio
from skimage.io import imread
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
img = h5py.File("cam.h5", "r")["/images"][0, :, :, 0].astype(np.float64)
s = h5py.File("seq.h5", "r")
m = s["/metrics"]
g = s["/items/000000"]
# Independent reference: contract the stored cores in numpy; the QTT index of
# core k is p_k = 2 i_k + j_k (i_1 the most significant row bit).
cores = [g["cores"][k][...] for k in sorted(g["cores"])]
state = cores[0]
for c in cores[1:]:
    state = np.tensordot(state, c, axes=([-1], [0]))
state = state.reshape([4] * len(cores))
rec = np.zeros((32, 32), complex)
for i in range(32):
    for j in range(32):
        idx = tuple(2 * ((i >> (4 - k)) & 1) + ((j >> (4 - k)) & 1) for k in range(5))
        rec[i, j] = state[idx]
x = img / np.linalg.norm(img)
fid_ref = abs(np.vdot(x.ravel(), rec.ravel())) ** 2 / np.linalg.norm(rec) ** 2
check(f"fidelity {m['fidelity'][0]:.10f} equals numpy's contraction of the cores {fid_ref:.10f}", abs(m["fidelity"][0] - fid_ref) < 1e-9)
# Truncated SVD bound: with bond 4 the state cannot be exact, and the same
# image through a numpy TT-SVD (bond 4) gives the same fidelity.
t = img.reshape([2] * 10)  # i1..i5 j1..j5
t = np.transpose(t, [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]).reshape([4] * 5)
r, rest, approx = 1, t.reshape(4, -1), None
mats = []
for k in range(4):
    u, sv, vh = np.linalg.svd(rest.reshape(r * 4, -1), full_matrices=False)
    rk = min(4, len(sv)); mats.append(u[:, :rk].reshape(r, 4, rk)); rest = np.diag(sv[:rk]) @ vh[:rk]; r = rk
mats.append(rest.reshape(r, 4, 1))
full = mats[0]
for c in mats[1:]:
    full = np.tensordot(full, c, axes=([-1], [0]))
full = full.reshape(-1)
fid_np = abs(np.vdot(t.reshape(-1) / np.linalg.norm(t), full)) ** 2 / np.linalg.norm(full) ** 2
check(f"fidelity matches an independent numpy TT-SVD at bond 4 ({fid_np:.10f})", abs(m["fidelity"][0] - fid_np) < 1e-9)
check(f"bond_dim {m['bond_dim'][0]} <= 4", m["bond_dim"][0] <= 4)
# PSNR and SSIM of the decoded PNG against scikit-image's metrics.
dec = imread("seq.png").astype(np.float64) / 255.0
ref_psnr = peak_signal_noise_ratio(img, np.clip(np.real(rec * np.exp(-1j * np.angle(np.vdot(x.ravel(), rec.ravel())))) * np.linalg.norm(img), 0, 1), data_range=1.0)
check(f"PSNR {m['psnr'][0]:.4f} dB matches scikit-image's {ref_psnr:.4f}", abs(m["psnr"][0] - ref_psnr) < 1e-6)
recon = np.clip(np.real(rec * np.exp(-1j * np.angle(np.vdot(x.ravel(), rec.ravel())))) * np.linalg.norm(img), 0, 1)
ref_ssim = structural_similarity(img, recon, data_range=1.0, gaussian_weights=True, sigma=1.5, use_sample_covariance=False)
check(f"SSIM {m['ssim'][0]:.6f} matches scikit-image's {ref_ssim:.6f}", abs(m["ssim"][0] - ref_ssim) < 1e-6)
check("decoded PNG is within 8-bit rounding of the reconstruction", np.abs(dec - recon).max() <= 0.5 / 255 + 1e-9)
# Sequential circuits use n = 10 qubits; the baseline is exact with 2^n - 2 CNOTs (real data: Ry only).
b = h5py.File("base.h5", "r")["/metrics"]
check(f"baseline: {int(b['cnots'][0])} CNOTs = 2^10 - 10 - 1 (Qiskit's count), fidelity {b['fidelity'][0]:.12f}", b["cnots"][0] == 1013 and b["fidelity"][0] > 1 - 1e-10)
check(f"sequential depth {int(m['depth'][0])} < baseline depth {int(b['depth'][0])}", m["depth"][0] < b["depth"][0])
p = h5py.File("par.h5", "r")["/metrics"]
check(f"parallel: same fidelity as sequential ({p['fidelity'][0]:.10f}), less depth ({int(p['depth'][0])} < {int(m['depth'][0])}), more qubits ({int(p['qubits'][0])})",
      abs(p["fidelity"][0] - m["fidelity"][0]) < 1e-9 and p["depth"][0] < m["depth"][0] and p["qubits"][0] > 10)
check(f"parallel: success probability {p['success_probability'][0]:.3e} in (0, 1)", 0 < p["success_probability"][0] < 1)
def table(path):
    lines = [l.split("\t") for l in open(path).read().strip().split("\n")]
    return [dict(zip(lines[0], row)) for row in lines[1:]]
sim = table("sim.txt")[0]
check(f"simulate reproduces the stored fidelity ({sim['fidelity']})", abs(float(sim["fidelity"]) - m["fidelity"][0]) < 1e-9)
simp = table("simpar.txt")[0]
check("simulate of the parallel file reproduces its fidelity", abs(float(simp["fidelity"]) - p["fidelity"][0]) < 1e-9)
check(f"noise lowers the parallel fidelity ({simp['noisy_fidelity']})", float(simp["noisy_fidelity"]) < float(simp["fidelity"]))
simq = table("simq.txt")[0]
check("the QASM export simulates to the same fidelity", abs(float(simq["fidelity"]) - m["fidelity"][0]) < 1e-9)
simn = table("simn.txt")[0]
check(f"noise lowers the fidelity ({simn['noisy_fidelity']} < {simn['fidelity']})", float(simn["noisy_fidelity"]) < float(simn["fidelity"]))
rgb = h5py.File("rgb.h5", "r")["/metrics"]
check(f"RGB 16x16: 10 qubits (8 + colour core), fidelity {rgb['fidelity'][0]:.6f}", rgb["qubits"][0] == 10 and rgb["fidelity"][0] > 0.9)
lay = h5py.File("lay.h5", "r")
loss = lay["/items/000000/train_loss"][...]
check(f"training lowered the loss ({loss[0]:.5f} -> {loss[-1]:.5f})", loss[-1] < loss[0])
check("layered fidelity = 1 - final loss", abs(lay["/metrics/fidelity"][0] - (1 - loss[-1])) < 1e-9)
fm = h5py.File("fm_seq.h5", "r")["/metrics"]
check(f"--shard 1/2 of 6 items takes items 3..5 ({fm['index'][...].tolist()})", fm["index"][...].tolist() == [3, 4, 5])
tol = h5py.File("tol.h5", "r")["/metrics"]
check(f"--tol 0.05 keeps the relative error within 5% (fidelity {tol['fidelity'][0]:.5f} >= 0.9975)", tol["fidelity"][0] >= 1 - 0.05 ** 2 - 1e-12)
sw = table("sweep.txt")
check(f"sweep: amplitude, 2 sequential, 2 parallel, 1 layered row ({[r['configuration'] for r in sw]})",
      [r["configuration"] for r in sw] == ["amplitude", "sequential", "sequential", "parallel", "parallel", "layered-trained"])
amp = h5py.File("base.h5", "r")["/metrics"]
check("sweep: the amplitude row is the baseline verb's circuit", int(sw[0]["cnots"]) == amp["cnots"][0] and int(sw[0]["depth"]) == amp["depth"][0]
      and float(sw[0]["fidelity"]) > 1 - 1e-9)
s4 = sw[2]
check(f"sweep: the bond-4 row is encode --bond 4 (depth {s4['depth']}, fidelity {s4['fidelity']})",
      int(s4["bond"]) == 4 and int(s4["depth"]) == m["depth"][0] and abs(float(s4["fidelity"]) - m["fidelity"][0]) < 1e-6
      and abs(float(s4["psnr_db"]) - m["psnr"][0]) < 1e-3)
check("sweep: depth_ratio = depth / amplitude depth", all(abs(float(r["depth_ratio"]) - int(r["depth"]) / int(sw[0]["depth"])) < 1e-5 for r in sw))
check("sweep: more bond, more fidelity and depth", float(sw[2]["fidelity"]) > float(sw[1]["fidelity"]) and int(sw[2]["depth"]) > int(sw[1]["depth"]))
check("sweep: parallel has the sequential fidelity at less depth", abs(float(sw[3]["fidelity"]) - float(sw[1]["fidelity"])) < 1e-6
      and int(sw[3]["depth"]) < int(sw[1]["depth"]))
h = h5py.File("sweep.h5", "r")
check("sweep HDF5 holds the table", h.attrs["nk_schema"] in (b"tnqe-encode.sweep/1", "tnqe-encode.sweep/1")
      and [x.decode() if isinstance(x, bytes) else x for x in h["/sweep/configuration"][...]] == [r["configuration"] for r in sw]
      and np.allclose(h["/sweep/depth"][...], [int(r["depth"]) for r in sw]))
import xml.etree.ElementTree as ET
svg = ET.parse("sweep.svg").getroot()
texts = "".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
circles = list(svg.iter("{http://www.w3.org/2000/svg}circle"))
check(f"sweep plot: valid SVG, PSNR axis, {len(circles)} points, amplitude line in the legend",
      "PSNR" in texts and "amplitude" in texts and len(circles) == 5)
vs = table("vec_sweep.txt")
vtexts = "".join(t.text or "" for t in ET.parse("vec_sweep.svg").getroot().iter("{http://www.w3.org/2000/svg}text"))
check(f"sweep of a vector: 3 rows, no PSNR, fidelity axis, bond 8 exact ({vs[-1]['fidelity']})",
      [r["configuration"] for r in vs] == ["amplitude", "sequential", "sequential"] and vs[1]["psnr_db"] == "nan"
      and "Fidelity" in vtexts and float(vs[-1]["fidelity"]) > 1 - 1e-9)
sys.exit(1 if fails else 0)
PYEOF
then pass "python reference checks"; else fail "python reference checks"; fi
"$PY" -c "import h5py; h5py.File('huge.h5', 'w').create_dataset('images', shape=(2**40, 8, 8, 1), dtype='f4', chunks=(1, 8, 8, 1))"
expect_fail "a file declaring 2^40 images (1 KB on disk)" 3 "huge.h5.*/images.*more than 2\\^24" tnqe-encode -q encode -i huge.h5 -o out_huge.h5
finish
