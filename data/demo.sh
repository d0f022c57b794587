#!/usr/bin/env bash
# demo.sh BIN_DIR OUT_DIR - a real pipeline on data that Debian ships:
# scikit-image's test images and Fashion-MNIST. Each paper tool adds its step.
set -euo pipefail
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export PATH="$bin:$PATH"
skimage=$(/usr/bin/python3 -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), "data"))')
fmnist=/usr/share/datasets/fashion-mnist
here=$(cd "$(dirname "$0")" && pwd)

step() { printf '\n== %s\n$ %s\n' "$1" "$2"; }

step "import test images (gray + RGB, resized to 256x256), piped straight into info" \
     "nk-data import camera.png astronaut.png coffee.png --resize 256x256 -o - | nk-data info -"
nk-data import "$skimage/camera.png" "$skimage/astronaut.png" "$skimage/coffee.png" --resize 256x256 -o - \
  | tee "$out/images.h5" | nk-data info - --format table

step "import 1000 Fashion-MNIST test images with labels" \
     "nk-data import-idx t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz --limit 1000 -o fmnist.h5"
nk-data import-idx "$fmnist/t10k-images-idx3-ubyte.gz" "$fmnist/t10k-labels-idx1-ubyte.gz" --limit 1000 \
  -o "$out/fmnist.h5"
nk-data info "$out/fmnist.h5" --format table

step "the shipped samples in data/" "nk-data import data/images/*.png -o samples.h5"
nk-data import "$here"/images/*.png -o "$out/samples.h5"
nk-data info "$out/samples.h5" --format json

step "export item 2 (coffee) back to PNG" "nk-data export images.h5 --index 2 -o coffee.png"
nk-data export "$out/images.h5" --index 2 -o "$out/coffee.png"

step "rubiconv: exact per-document FFT convolution of a packed sequence (65536 positions, 16 channels)" \
     "rubiconv gen --length 65536 --channels 16 --doc-lengths lognormal:512,1.0 -o - | rubiconv apply -i - -o y.h5"
rubiconv gen --length 65536 --channels 16 --doc-lengths lognormal:512,1.0 --seed 1 -o "$out/rubiconv-in.h5"
rubiconv apply -i "$out/rubiconv-in.h5" -o - | nk-data info - --format table
for method in rubiconv perdoc fullfft; do
  rubiconv apply -i "$out/rubiconv-in.h5" --method "$method" -o "$out/rubiconv-$method.h5"
done

step "louver-index: every key with q.k >= T (T = each query's top-1% score), checked against a dense scan" \
     "louver-index gen --n 32768 --queries 50 -o - | louver-index build -i - -o index.h5; louver-index query ..."
louver-index gen --n 32768 --queries 50 --seed 1 -o "$out/kv.h5"
louver-index build -i "$out/kv.h5" -o "$out/louver-index.h5"
louver-index query -i "$out/louver-index.h5" --queries "$out/kv.h5" --topk-oracle 328 --compare-dense -o "$out/hits.h5"

step "speedscale-sim: energy of online speed scaling against the YDS optimum, with noisy speed predictions" \
     "speedscale-sim gen --jobs 100 --instances 200 -o inst.h5; speedscale-sim predict --noise 0.2 ...; speedscale-sim solve ..."
speedscale-sim gen --jobs 100 --instances 200 --seed 1 -o "$out/speed-inst.h5"
speedscale-sim predict -i "$out/speed-inst.h5" --noise 0.2 --seed 1 -o "$out/speed-pred.h5"
speedscale-sim solve -i "$out/speed-inst.h5" --predictions "$out/speed-pred.h5" \
  --algo yds,avr,oa,qoa,bkp,las,pred-dynamic,pred-jobspeed -o "$out/speed-res.h5"
speedscale-sim -q eval -i "$out/speed-inst.h5" --noise 0,0.2,0.5,1 \
  --plot "$out/speed-curve.svg" --profile-plot "$out/speed-profile.svg" -o "$out/speed-eval.h5"
echo "plots: $out/speed-curve.svg $out/speed-profile.svg"

step "dllm-sparse: anchor-step block-sparse attention (90% of blocks dropped) against the mask-once baseline" \
     "dllm-sparse gen --length 1024 --heads 8 --steps 16 -o traj.h5; dllm-sparse plan --policy step|once-uniform ...; dllm-sparse eval ..."
dllm-sparse gen --length 1024 --heads 8 --steps 16 --transitions 2 --seed 1 -o "$out/dllm-traj.h5"
for policy in step once-uniform; do
  dllm-sparse -q plan -i "$out/dllm-traj.h5" --policy "$policy" -o "$out/dllm-plan-$policy.h5"
  dllm-sparse eval -i "$out/dllm-traj.h5" --plan "$out/dllm-plan-$policy.h5" -o "$out/dllm-eval-$policy.h5" | tail -1
done

step "spike-sft: a spiking network (LIF, BPTT with surrogate gradients) on 3000 Fashion-MNIST images" \
     "nk-data import-idx ... --limit 3000 | spike-sft pretrain -i - --epochs 2 -o base.h5; spike-sft eval -i base.h5 --data fmnist.h5"
nk-data import-idx "$fmnist/train-images-idx3-ubyte.gz" "$fmnist/train-labels-idx1-ubyte.gz" --limit 3000 -o - |
  spike-sft pretrain -i - --hidden 128 --epochs 2 --seed 1 -o "$out/spike-base.h5"
spike-sft eval -i "$out/spike-base.h5" --data "$out/fmnist.h5"

step "tnqe-encode: camera (32x32) as a shallow quantum circuit at bond 4, next to exact amplitude encoding" \
     "nk-data import camera.png --channels 1 --resize 32x32 -o - | tnqe-encode encode -i - --bond 4 --qasm qasm -o tnqe.h5; tnqe-encode baseline ...; tnqe-encode simulate ... --decode; tnqe-encode sweep ... --plot"
nk-data -q import "$skimage/camera.png" --channels 1 --resize 32x32 -o - |
  tnqe-encode encode -i - --bond 4 --qasm "$out/tnqe-qasm" -o "$out/tnqe.h5"
nk-data -q import "$skimage/camera.png" --channels 1 --resize 32x32 -o "$out/camera32.h5"
tnqe-encode baseline -i "$out/camera32.h5" -o "$out/tnqe-amplitude.h5"
tnqe-encode simulate -i "$out/tnqe.h5" --decode "$out/tnqe-camera32.png"
tnqe-encode -q sweep -i "$out/camera32.h5" --bonds 2,4,8,16 --plot "$out/tnqe-sweep.svg" | cut -f1-10
echo "trade-off plot: $out/tnqe-sweep.svg"

step "sbr-render: chelsea (256x256) as 600 audited quadratic Bezier strokes: PNG, SVG and the audit" \
     "sbr-render paint -i chelsea.png --strokes 600 --png chelsea.png --svg chelsea.svg -o strokes.h5; sbr-render audit ... --summary"
nk-data -q import "$skimage/chelsea.png" --channels 3 --resize 256x256 -o "$out/chelsea256.h5"
sbr-render paint -i "$out/chelsea256.h5" --strokes 600 --iterations 300 \
  --png "$out/sbr-chelsea.png" --svg "$out/sbr-chelsea.svg" -o "$out/sbr-strokes.h5"
sbr-render audit -i "$out/sbr-strokes.h5" --target "$out/chelsea256.h5" --summary
echo "painting: $out/sbr-chelsea.png $out/sbr-chelsea.svg"

step "nk-lm: the shipped causal model (1.97M parameters, trained here on Debian's fortunes, WordNet and GCIDE) continues prompts" \
     "printf 'The meaning of life is\\nA dog is a\\n' | nk-lm generate -m data/lm/causal.h5 --max-new 24 --top-k 40"
nk-lm info -m "$here/lm/causal.h5" > "$out/lm-info.txt"
head -4 "$out/lm-info.txt"
printf 'The meaning of life is\nA dog is a\n' | nk-lm -q generate -m "$here/lm/causal.h5" --max-new 24 --top-k 40 --temperature 0.8 --seed 1

step "nk-lm: the shipped diffusion model (LLaDA sampler: 2 blocks of 16, 32 steps), its denoising trajectory read by dllm-sparse" \
     "nk-lm capture -m data/lm/diffusion.h5 --text p.txt --trajectory traj.h5 --max-new 32 --block 16 --steps 32; dllm-sparse plan -i traj.h5 ..."
echo "A dog is" > "$out/lm-prompt.txt"
nk-lm -q generate -m "$here/lm/diffusion.h5" --prompts "$out/lm-prompt.txt" --max-new 32 --block 16 --steps 32 --greedy
nk-lm -q capture -m "$here/lm/diffusion.h5" --text "$out/lm-prompt.txt" --trajectory "$out/lm-traj.h5" --max-new 32 --block 16 --steps 32
dllm-sparse -q plan -i "$out/lm-traj.h5" --sparsity 0.5 --block 16 -o "$out/lm-plan.h5"
dllm-sparse eval -i "$out/lm-traj.h5" --plan "$out/lm-plan.h5" -o "$out/lm-eval.h5" > "$out/lm-eval.tsv"
head -4 "$out/lm-eval.tsv"

step "sae-buffer: how few unique activations an SAE budget needs (synthetic, known dictionary): grid, law, rule" \
     "sae-buffer gen --dim 32 --features 256 --active 6 -o acts.h5; sae-buffer grid ... | fit | size --budget 65536"
sae-buffer -q gen --dim 32 --features 256 --active 6 --rows 8192 --seed 1 -o "$out/sae-acts.h5"
sae-buffer -q grid -i "$out/sae-acts.h5" --buffers 1024,4096,16384,65536 --budgets 16384,65536 --latents 256 --k 6 \
  --batch 256 --lr 3e-3 --heldout-rows 4096 --seed 1 -o "$out/sae-grid.h5"
sae-buffer fit -i "$out/sae-grid.h5" --plot "$out/sae-fit.svg" -o "$out/sae-fit.h5"
sae-buffer size --fit "$out/sae-fit.h5" --budget 65536 --grid "$out/sae-grid.h5"

step "teacher-limits: Bayes-optimal error and effective width k_c of a hierarchical teacher (he3, beta = 1, d = k = 1024)" \
     "teacher-limits teacher --d 64 -o t.h5; data -i t.h5 --n 4096; theory --d 1024 --k 1024 --noise 1 --n-range 1e3:1e12:100; hmc -i data.h5; report --svg"
teacher-limits -q teacher --d 64 --kappa 1 --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$out/tl-teacher.h5"
teacher-limits -q data -i "$out/tl-teacher.h5" --n 4096 --test 2000 --seed 2 -o "$out/tl-data.h5"
teacher-limits theory --d 1024 --k 1024 --beta 1 --activation he3 --noise 1 --n-range 1e3:1e12:100 \
  --widths 64,256,1024 -o "$out/tl-theory.h5"
teacher-limits -q theory -i "$out/tl-teacher.h5" --n-range 100:1e6:60 -o "$out/tl-theory64.h5"
teacher-limits -q hmc -i "$out/tl-data.h5" --chains 2 --samples 60 --warmup 60 --leapfrog 10 --seed 3 -o "$out/tl-hmc.h5"
teacher-limits report -i "$out/tl-theory64.h5" "$out/tl-hmc.h5" --svg "$out/tl" -o "$out/tl-fit.h5"

step "aldrift: sampling pi_T ~ L exp(-T d) on {0,1}^12 by MH-corrected Markov refits, beside SIR and CEM at 40,000 evaluations" \
     "aldrift gen-exact -o p.h5; aldrift exact -i p.h5 --T 5 --budget 40000 --method aldrift|sir|cem; aldrift plot"
aldrift -q gen-exact -o "$out/ald-problem.h5"
for m in aldrift sir cem; do
  aldrift exact -i "$out/ald-problem.h5" --T 5 --budget 40000 --method $m --seed 1 -o "$out/ald-$m.h5"
done
aldrift -q plot -i "$out/ald-aldrift.h5" "$out/ald-sir.h5" "$out/ald-cem.h5" -o "$out/ald-stages.svg"

step "sagesched: an overloaded LLM server (load 1.2, KV cache of 65536 tokens), 4000 ShareGPT-like requests: FCFS vs SageSched" \
     "sagesched trace --requests 4000 --load 1.2 --kv-tokens 65536 -o t.h5; simulate --policy fcfs|sjf-pred|srpt-oracle|sagesched; plot"
sagesched -q trace --requests 4000 --load 1.2 --kv-tokens 65536 --seed 1 -o "$out/sched-trace.h5"
for p in fcfs sjf-pred srpt-oracle sagesched; do
  sagesched simulate -i "$out/sched-trace.h5" --policy $p --kv-tokens 65536 --no-iterations -o "$out/sched-$p.h5"
done
sagesched -q plot -i "$out"/sched-{fcfs,sjf-pred,srpt-oracle,sagesched}.h5 -o "$out/sched-ttlt.svg"

step "sagesched: the same scheduler serving the shipped nk-lm for real, 40 requests with Debian prompts (arrivals 5x faster), then the simulator on that trace" \
     "sagesched trace --prompts debian --max-context 256 -o bed.h5; sagesched testbed -i bed.h5 --time-scale 0.2; sagesched simulate"
sagesched -q trace --requests 40 --prompts debian --max-context 256 --profile "$here/sagesched/cpu-nklm.toml" --seed 1 -o "$out/bed-trace.h5"
sagesched testbed -i "$out/bed-trace.h5" --time-scale 0.2 --threads 1 -o "$out/bed-measured.h5"
sagesched -q trace --requests 40 --prompts debian --max-context 256 --profile "$here/sagesched/cpu-nklm.toml" --seed 1 -o - |
  sagesched simulate -i - --profile "$here/sagesched/cpu-nklm.toml" -o "$out/bed-simulated.h5"

step "proxy-certify: randomized-smoothing CERTIFY (n = 1000) on 400 Fashion-MNIST images, then a one-forward margin proxy calibrated by CRC (FA <= 0.1), every method side by side" \
     "nk-data import-idx ... | proxy-certify train --arch mlp --sigma 0.25; certify --n 1000; calibrate --recipe heavy; approve; eval --splits 20"
nk-data -q import-idx "$fmnist/train-images-idx3-ubyte.gz" "$fmnist/train-labels-idx1-ubyte.gz" --limit 5000 -o - |
  proxy-certify -q train -i - --arch mlp --sigma 0.25 --epochs 5 --seed 1 -o "$out/pc-mlp.h5"
nk-data -q import-idx "$fmnist/t10k-images-idx3-ubyte.gz" "$fmnist/t10k-labels-idx1-ubyte.gz" --limit 400 -o "$out/pc-pool.h5"
proxy-certify certify -i "$out/pc-pool.h5" --model "$out/pc-mlp.h5" --n 1000 --seed 1 -o "$out/pc-cert.h5"
proxy-certify calibrate -i "$out/pc-pool.h5" --model "$out/pc-mlp.h5" --recipe heavy --n 1000 --radii 0.25,0.5 --target 0.1 -o "$out/pc-proxy.h5"
proxy-certify approve -i "$out/pc-pool.h5" --model "$out/pc-mlp.h5" --proxy "$out/pc-proxy.h5" -o "$out/pc-approved.h5"
proxy-certify eval -i "$out/pc-pool.h5" --model "$out/pc-mlp.h5" --reference "$out/pc-cert.h5" --calibration 200 --splits 20 \
  --target 0.1 --radii 0.25,0.5 --svg "$out/pc-curve.svg"

step "invariance-audit: the fiber of planted:mask-left (right half fixed, left half free) for one Fashion-MNIST test image, 4 samples of the shipped prior guided by NDTM" \
     "nk-data import-idx t10k-images-idx3-ubyte.gz --limit 8 -o - | invariance-audit sample --query - --index 3 --extractor planted:mask-left --samples 4 --grid fiber.png"
nk-data -q import-idx "$fmnist/t10k-images-idx3-ubyte.gz" --limit 8 -o - |
  invariance-audit sample --query - --index 3 --extractor planted:mask-left --samples 4 --seed 1 \
    --grid "$out/ia-fiber.png" -o "$out/ia-fiber.h5"
echo "grid (query, samples, variance): $out/ia-fiber.png"

step "snapmla-decode: a DeepSeek-sized MLA cache (4 x 8192 tokens, 16 heads) paged in SnapMLA's 644-byte rows and decoded; every layout's error against float64" \
     "snapmla-decode gen --batch 4 --tokens 8192 -o cache.h5; snapmla-decode quant -i cache.h5 --layout snapmla644 -o - | snapmla-decode attend -i - --queries cache.h5 -o out.h5; snapmla-decode eval -i cache.h5"
snapmla-decode -q gen --batch 4 --tokens 8192 --seed 1 -o "$out/mla-cache.h5"
snapmla-decode quant -i "$out/mla-cache.h5" --layout snapmla644 -o - |
  snapmla-decode attend -i - --queries "$out/mla-cache.h5" -o "$out/mla-out.h5"
snapmla-decode eval -i "$out/mla-cache.h5"

step "snapmla-decode: the shipped MLA language model (d_c 128 = 8 d_R, trained here on Debian text) with its KV cache in each layout: perplexity on the corpus's held-out split, token-by-token decoding checked" \
     "nk-lm corpus -o corpus.h5; snapmla-decode eval --model data/lm/mla.h5 --corpus corpus.h5 --windows 32 --check-decode"
nk-lm -q corpus -o "$out/lm-corpus.h5"
snapmla-decode eval --model "$here/lm/mla.h5" --corpus "$out/lm-corpus.h5" --windows 32 --check-decode
rm -f "$out/lm-corpus.h5"

step "shred-unlearn: a 10-author mini-TOFU taught to the shipped language model, then its forget10 author unlearned by SHRED (no retain set); forget and retain probabilities before and after" \
     "shred-unlearn tofu --authors 10 --questions 5 -o tofu.h5; shred-unlearn finetune -m data/lm/causal.h5 -i tofu.h5 --epochs 20 --lr 2e-3 -o target.h5; shred-unlearn run -m target.h5 -i tofu.h5 --split forget10 --method shred --steps 30 -o unlearned.h5; shred-unlearn eval ..."
shred-unlearn -q tofu --authors 10 --questions 5 --world 24 --seed 1 -o "$out/su-tofu.h5"
shred-unlearn finetune -m "$here/lm/causal.h5" -i "$out/su-tofu.h5" --epochs 20 --lr 2e-3 --replay-world 32 --replay-windows 1 \
  --seed 1 -o "$out/su-target.h5"
shred-unlearn eval -m "$out/su-target.h5" -i "$out/su-tofu.h5" --split forget10 --max-rows 40 --ppl-docs 16 -o "$out/su-ev-target.h5"
shred-unlearn run -m "$out/su-target.h5" -i "$out/su-tofu.h5" --split forget10 --method shred --steps 30 --batch 4 --lr 1e-4 --seed 1 \
  -o "$out/su-unlearned.h5"
shred-unlearn eval -m "$out/su-unlearned.h5" -i "$out/su-tofu.h5" --split forget10 --max-rows 40 --ppl-docs 16 -o "$out/su-ev-unlearned.h5"

step "ssd-distill: a fictional memo distilled into the closed-book student by Speculative Self-Distillation (the shipped reader is the teacher with the memo in context); closed-book accuracy before and after" \
     "ssd-distill tasks --task memo --docs 2 -o memo.h5; ssd-distill train -i memo.h5 --method ssd --steps 60 -o student.h5; ssd-distill eval -m student.h5 -i memo.h5 --split train"
ssd-distill -q tasks --task memo --docs 2 --seed 3 -o "$out/sd-memo.h5"
ssd-distill eval -m "$here/lm/reader.h5" -i "$out/sd-memo.h5" --split train -o "$out/sd-ev-before.h5"
ssd-distill train -m "$here/lm/reader.h5" -i "$out/sd-memo.h5" --method ssd --steps 60 --batch 8 --lr 3e-4 --eval-every 30 --seed 1 \
  -o "$out/sd-student.h5"
ssd-distill eval -m "$out/sd-student.h5" -i "$out/sd-memo.h5" --split train -o "$out/sd-ev-after.h5"

step "sparda-forecast: the shipped causal model's attention on Debian's fortunes; Forecasts trained to predict each next layer's KV blocks (16-token blocks, top-4), their recall and attention coverage against the selector" \
     "nk-lm corpus --source fortunes --tokenizer data/lm/causal.h5 -o f.h5; nk-lm capture -m data/lm/causal.h5 --corpus f.h5 -o cap.h5; sparda-forecast train -i cap.h5 -o fc.h5; sparda-forecast eval ..."
nk-lm -q corpus --source fortunes --tokenizer "$here/lm/causal.h5" -o "$out/sp-corpus.h5"
nk-lm -q capture -m "$here/lm/causal.h5" --corpus "$out/sp-corpus.h5" -o "$out/sp-capture.h5"
sparda-forecast -q train -i "$out/sp-capture.h5" --block 16 --topk 4 --seed 1 -o "$out/sp-forecast.h5"
sparda-forecast eval -i "$out/sp-capture.h5" --forecast "$out/sp-forecast.h5" --block 16 --topk 4 -o "$out/sp-eval.h5"
rm -f "$out/sp-capture.h5" "$out/sp-corpus.h5"

step "sparda-forecast: inside the sparse-pretrained model (4096-token context, blocks of 32, top-8): a Forecast from 2 windows, then perplexity and the needle task for dense, selector, forecast and InfiniGen" \
     "nk-lm corpus --source fortunes --tokenizer data/lm/sparse-gqa.h5 -o f.h5; nk-lm capture -m data/lm/sparse-gqa.h5 --corpus f.h5 --split train --stream --max-rows 2 -o cap.h5; sparda-forecast train -i cap.h5 --block 32 --topk 8 --model data/lm/sparse-gqa.h5 -o m.h5; sparda-forecast eval --model m.h5 --corpus f.h5 --windows 1 --needles 2"
nk-lm -q corpus --source fortunes --tokenizer "$here/lm/sparse-gqa.h5" -o "$out/sp-corpus4k.h5"
nk-lm -q capture -m "$here/lm/sparse-gqa.h5" --corpus "$out/sp-corpus4k.h5" --split train --stream --max-rows 2 -o "$out/sp-capture4k.h5"
sparda-forecast -q train -i "$out/sp-capture4k.h5" --block 32 --topk 8 --seed 1 --model "$here/lm/sparse-gqa.h5" -o "$out/sp-model-forecast.h5"
sparda-forecast eval --model "$out/sp-model-forecast.h5" --corpus "$out/sp-corpus4k.h5" --windows 1 --needles 2 -o "$out/sp-model-eval.h5"
rm -f "$out/sp-capture4k.h5" "$out/sp-corpus4k.h5" "$out/sp-model-forecast.h5"

step "simple-evol: 16 random 50-city tours solved by iterated local search (the reference), then two Python heuristics (nearest neighbour, and one with a look at the cities left) scored in sandboxed workers; their mean gaps" \
     "simple-evol gen --problem tsp --count 16 --nodes 50 -o t.h5; simple-evol solve -i t.h5 --method ils --store-reference -o ref.h5; simple-evol eval -i ref.h5 --heuristic data/simple-evol/tsp_lookahead.py -o scored.h5"
simple-evol -q gen --problem tsp --count 16 --nodes 50 --seed 1 -o "$out/se-tsp.h5"
simple-evol solve -i "$out/se-tsp.h5" --method ils --store-reference --seed 1 -o "$out/se-ref.h5"
# The namespace sandbox needs unprivileged user namespaces and Landlock; without them, these shipped heuristics are trusted code.
se_sandbox=namespace
simple-evol -q eval -i "$out/se-ref.h5" --heuristic "$here/simple-evol/tsp_nearest.py" -o "$out/se-nearest.h5" 2>/dev/null || se_sandbox=none
[ "$se_sandbox" = none ] && echo "demo: no namespace sandbox on this machine: the shipped heuristics run with --sandbox none"
for h in tsp_nearest tsp_lookahead; do
  simple-evol eval -i "$out/se-ref.h5" --heuristic "$here/simple-evol/$h.py" --sandbox $se_sandbox -o "$out/se-$h.h5"
  echo "$h: mean gap to the ils tours $(h5dump -a mean_gap "$out/se-$h.h5" | awk '/\(0\)/ {print $2}')"
done

step "swe-crafter: a fixture repository with labelled commits (good, doc-only, code-only, passes-before, breaks-a-test, flaky): mined into candidates, then validated fail-to-pass in the sandbox; exactly the good commit becomes an instance" \
     "swe-crafter fetch git:repo; swe-crafter env -i repo -o env.json; swe-crafter mine -i repo --env env.json -o cand.jsonl; swe-crafter validate -i cand.jsonl -o inst.jsonl"
rm -rf "$out/swe-repo" "$out/swe-store"
bash "$here/swe-crafter/fixture-repo.sh" "$out/swe-repo"
# Debian's python3 and pytest run the fixture's tests
sc_sandbox=namespace
[ -n "$(swe-crafter doctor | awk -F'\t' '$1 == "sandbox" && $2 == "namespace" && $3 == "no"')" ] && sc_sandbox=none
[ "$sc_sandbox" = none ] && echo "demo: no namespace sandbox on this machine: the fixture's tests run with --sandbox none"
PATH="$bin:/usr/bin:$PATH" swe-crafter -q fetch "git:$out/swe-repo" --store "$out/swe-store" > /dev/null
PATH="$bin:/usr/bin:$PATH" swe-crafter -q env -i swe-repo --store "$out/swe-store" --sandbox $sc_sandbox -o "$out/swe-env.json"
PATH="$bin:/usr/bin:$PATH" swe-crafter mine -i swe-repo --store "$out/swe-store" --env "$out/swe-env.json" -o "$out/swe-cand.jsonl"
PATH="$bin:/usr/bin:$PATH" swe-crafter validate -i "$out/swe-cand.jsonl" --store "$out/swe-store" --sandbox $sc_sandbox -o "$out/swe-inst.jsonl"

echo
echo "demo: outputs in $out"
