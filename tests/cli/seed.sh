# seed.sh - every verb that shows --seed (it draws random numbers) writes
# nk_seed on every output it makes, whichever tool it belongs to; a seeded verb
# without a recipe here fails, so a new one cannot be missed.
. "$(dirname "$0")/lib.sh"

# Inputs the recipes share: small, made by the tools themselves or shipped.
IMG="$NK_SOURCE/data/images/camera-64.png"
nk-data -q import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --limit 200 -o fm.h5
louver-index -q gen --n 600 --d 16 --queries 4 --dv 8 --seed 1 -o kv.h5
louver-index -q build -i kv.h5 --subspaces 4 --leaf-size 16 -o index.h5
speedscale-sim -q gen --jobs 12 --instances 2 --seed 1 -o inst.h5
spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 16 --steps 2 --epochs 1 --batch 50 -o base.h5
spike-sft -q --seed 1 tasks -i fm.h5 --kinds invert,rotate90 --train 100 --test 50 -o tasks.h5
spike-sft -q --seed 1 spe -i base.h5 --task tasks.h5:invert --epochs 1 --batch 50 -o a1.h5
spike-sft -q --seed 1 spe -i base.h5 --task tasks.h5:rotate90 --epochs 1 --batch 50 -o a2.h5
nk-data -q import "$IMG" --channels 1 --resize 16x16 -o cam.h5
tnqe-encode -q encode -i cam.h5 --bond 2 -o enc.h5
LM="$NK_SOURCE/data/lm/causal.h5"
for i in $(seq 1 30); do echo "The cat sat on mat $i."; echo; done > lm.txt
nk-lm -q corpus --text lm.txt --paragraphs --tokenizer "$LM" -o lmcorpus.h5
echo "The cat" > prompt.txt
sae-buffer -q gen --dim 8 --features 16 --rows 300 --seed 1 -o sbacts.h5
sae-buffer -q train -i sbacts.h5 --buffer 100 --budget 200 --latents 32 --k 2 --batch 50 -o sbsae.h5
teacher-limits -q teacher --d 8 --k 4 --seed 1 -o tlt.h5
teacher-limits -q teacher --d 30 --k 1 --activation tanh --seed 1 -o tl1.h5
teacher-limits -q data -i tl1.h5 --n 60 --test 20 -o tl1d.h5
aldrift -q gen-exact --length 6 --target 010110 -o alp.h5
$PY -c 'import h5py, numpy; h5py.File("alx.h5", "w")["/x"] = numpy.zeros((3, 2))'
sagesched -q trace --requests 20 --seed 1 -o sst.h5
proxy-certify -q train -i fm.h5 --arch mlp --epochs 1 -o pcm.h5
proxy-certify -q certify -i fm.h5 --model pcm.h5 --n 20 -o pcref.h5
proxy-certify -q calibrate -i fm.h5 --model pcm.h5 -o pcpx.h5
sagesched -q trace --requests 8 --max-context 256 --seed 1 -o sstb.h5
shred-unlearn -q tofu --authors 6 --questions 2 --world 6 --seed 1 -o sut.h5
bash "$NK_SOURCE/data/swe-crafter/fixture-repo.sh" screpo > /dev/null
swe-crafter -q fetch "git:$WORK/screpo" --store scst > /dev/null
PATH="$NK_BIN:/usr/bin:$PATH" swe-crafter -q env -i screpo --store scst --sandbox none -o scenv.json
ssd-distill -q tasks --task memo --docs 2 --seed 1 -o sdt.h5
sparda-forecast -q gen --planted --layers 2 --tokens 64 --block 16 --head-dim 8 --d-model 32 --seed 1 -o spt.h5
invariance-audit -q train-prior -i fm.h5 --channels 4,8 --groups 2 --time-dim 8 --steps 2 --batch 4 -o iap.h5
simple-evol -q gen --problem cvrp --count 2 --nodes 8 --seed 1 -o sec.h5
printf 'def heuristics(distance_matrix, coordinates, demands, capacity):\n    return 1 / distance_matrix\n' > seinv.py

# recipe TOOL VERB: the verb's arguments (with --seed 7); outputs are every out*.h5
recipe() {
  case "$1 $2" in
    "dllm-sparse gen") echo "gen --length 64 --heads 2 --dims 16 --steps 2 -o out.h5" ;;
    "louver-index gen") echo "gen --n 300 --d 16 --queries 2 -o out.h5" ;;
    "louver-index query") echo "query -i index.h5 --queries kv.h5 --mass 0.9 -o out.h5" ;;
    "louver-index attend") echo "attend -i index.h5 --queries kv.h5 --mass 0.9 -o out.h5" ;;
    "rubiconv gen") echo "gen --length 256 --channels 4 -o out.h5" ;;
    "snapmla-decode gen") echo "gen --tokens 70 --heads 2 --d-c 16 --d-r 8 --ragged --batch 2 -o out.h5" ;;
    "snapmla-decode serve") echo "serve --budget-mib 0.1 --requests 2 --prompt-tokens 8 --output-tokens 8 --heads 1 --d-c 16 --d-r 8 -o out.h5" ;;
    "sparda-forecast gen") echo "gen --layers 2 --tokens 64 --head-dim 8 --d-model 32 -o out.h5" ;;
    "sparda-forecast decode") echo "decode --model $LM --prompt-tokens 20 --steps 2 --block 4 --topk 1 -o out.h5" ;;
    "sparda-forecast train") echo "train -i spt.h5 --block 16 --topk 1 --steps 2 -o out.h5" ;;
    "sparda-forecast needle") echo "needle --docs 2 --chars 300 --facts 2" ;;
    "speedscale-sim gen") echo "gen --jobs 10 --instances 2 -o out.h5" ;;
    "speedscale-sim predict") echo "predict -i inst.h5 --noise 0.3 -o out.h5" ;;
    "speedscale-sim eval") echo "eval -i inst.h5 --noise 0,0.5 -o out.h5" ;;
    "spike-sft pretrain") echo "pretrain -i fm.h5 --hidden 8 --steps 2 --epochs 1 --batch 50 -o out.h5" ;;
    "spike-sft tasks") echo "tasks -i fm.h5 --kinds noise --train 50 --test 20 -o out.h5" ;;
    "spike-sft spe") echo "spe -i base.h5 --task tasks.h5:invert --epochs 1 --batch 50 -o out.h5" ;;
    "spike-sft pickit") echo "pickit -i a1.h5 a2.h5 --tasks tasks.h5 --calibration 16 --scale-grid 1 -o out.h5" ;;
    "spike-sft stats") echo "stats -i base.h5 --data fm.h5 --fractions 0,0.5 -o out.h5" ;;
    "spike-sft eval") echo "eval -i base.h5 --data fm.h5 -o out.h5" ;;
    "tnqe-encode simulate") echo "simulate -i enc.h5 --noise 0.01 --trajectories 3 -o out.h5" ;;
    "sbr-render paint") echo "paint -i $IMG --strokes 10 --iterations 3 -o out.h5" ;;
    "sbr-render train-decoder") echo "train-decoder --steps 2 --batch 4 -o out.h5" ;;
    "nk-lm train") echo "train --corpus lmcorpus.h5 --layers 1 --d-model 16 --heads 2 --kv-heads 1 --d-ff 32 --context 8 --batch 2 --steps 2 -o out.h5" ;;
    "nk-lm generate") echo "generate -m $LM --prompts prompt.txt --max-new 4 -o out.h5" ;;
    "nk-lm score") echo "score -m $NK_SOURCE/data/lm/diffusion.h5 --text prompt.txt --samples 2 -o out.h5" ;;
    "nk-lm capture") echo "capture -m $LM --text prompt.txt --louver out2.h5 -o out.h5" ;;
    "shred-unlearn tofu") echo "tofu --authors 6 --questions 2 --world 6 -o out.h5" ;;
    "shred-unlearn finetune") echo "finetune -m $LM -i sut.h5 --epochs 1 --replay-world 2 --replay-windows 1 -o out.h5" ;;
    "shred-unlearn run") echo "run -m $LM -i sut.h5 --split forget10 --method shred-random --steps 1 --batch 2 -o out.h5" ;;
    "shred-unlearn relearn") echo "relearn -m $LM --target $LM -i sut.h5 --split forget10 --steps 1 -o out.h5" ;;
    "shred-unlearn sequential") echo "sequential -m $LM -i sut.h5 --split forget10 --requests 1 --steps 1 --max-rows 2 --ppl-docs 0 -o out.h5" ;;
    "ssd-distill tasks") echo "tasks --task memo --docs 2 -o out.h5" ;;
    "ssd-distill train") echo "train -m $LM -i sdt.h5 --steps 1 --batch 2 --max-new 4 --tau 0.005 -o out.h5" ;;
    "ssd-distill prepare") echo "prepare -m $LM --docs 1 --epochs 1 --batch 4 --replay-windows 0 -o out.h5" ;;
    "ssd-distill rollout") echo "rollout -m $LM -i sdt.h5 --limit 2 --max-new 4 --tau 0.005 -o out.h5" ;;
    "ssd-distill sweep") echo "sweep -m $LM -i sdt.h5 --methods ssd --steps 1 --batch 2 --eval-every 1 --max-new 4 --ppl-docs 2 -o out.h5" ;;
    "sae-buffer gen") echo "gen --dim 8 --features 16 --rows 100 -o out.h5" ;;
    "sae-buffer train") echo "train -i sbacts.h5 --buffer 100 --budget 200 --latents 32 --k 2 --batch 50 -o out.h5" ;;
    "sae-buffer eval") echo "eval -i sbsae.h5 --acts sbacts.h5 -o out.h5" ;;
    "sae-buffer grid") echo "grid -i sbacts.h5 --buffers 50,100 --budgets 100 --latents 32 --k 2 --batch 50 --heldout-rows 50 -o out.h5" ;;
    "teacher-limits teacher") echo "teacher --d 8 --k 4 -o out.h5" ;;
    "teacher-limits data") echo "data -i tlt.h5 --n 20 --test 10 -o out.h5" ;;
    "teacher-limits hmc") echo "hmc -i tlt.h5 --n 20 --test 10 --chains 1 --samples 3 --warmup 2 --leapfrog 2 -o out.h5" ;;
    "teacher-limits adam") echo "adam -i tlt.h5 --n 20 --test 10 --widths 2 --epochs 2 --restarts 1 -o out.h5" ;;
    "teacher-limits amp") echo "amp -i tl1d.h5 --iterations 2 --init-overlap 0.3 -o out.h5" ;;
    "aldrift gen-exact") echo "gen-exact --length 6 --cost random -o out.h5" ;;
    "aldrift exact") echo "exact -i alp.h5 --budget 600 --stages 3 -o out.h5" ;;
    "aldrift global") echo "global --function levy --dim 2 --budget 300 -o out.h5" ;;
    "aldrift evaluate") echo "evaluate -i alx.h5 --function levy -o out.h5" ;;
    "sagesched trace") echo "trace --requests 20 -o out.h5" ;;
    "sagesched simulate") echo "simulate -i sst.h5 --policy ltr -o out.h5" ;;
    "sagesched predict") echo "predict -i sst.h5 -o out.h5" ;;
    "sagesched testbed") echo "testbed -i sstb.h5 --time-scale 0.01 --threads 1 -o out.h5" ;;
    "aldrift lm") echo "lm --prior $NK_SOURCE/data/lm/causal.h5 --length 4 --stages 1 --chains 4 --steps 2 --kl-samples 8 --reference 16 -o out.h5" ;;
    "spike-sft serve") echo "serve -i base.h5" ;;
    "proxy-certify train") echo "train -i fm.h5 --arch mlp --epochs 1 -o out.h5" ;;
    "proxy-certify certify") echo "certify -i fm.h5 --model pcm.h5 --n 10 -o out.h5" ;;
    "proxy-certify predict") echo "predict -i fm.h5 --model pcm.h5 --n 10 -o out.h5" ;;
    "proxy-certify calibrate") echo "calibrate -i fm.h5 --model pcm.h5 -o out.h5" ;;
    "proxy-certify approve") echo "approve -i fm.h5 --model pcm.h5 --proxy pcpx.h5 -o out.h5" ;;
    "proxy-certify eval") echo "eval -i fm.h5 --model pcm.h5 --reference pcref.h5 --calibration 100 --cheap-n 10 -o out.h5" ;;
    "invariance-audit train-prior") echo "train-prior -i fm.h5 --channels 4,8 --groups 2 --time-dim 8 --steps 2 --batch 4 -o out.h5" ;;
    "invariance-audit train-extractor") echo "train-extractor -i fm.h5 --kind random-features --components 4 -o out.h5" ;;
    "invariance-audit train-dedicated") echo "train-dedicated -i fm.h5 --extractor planted:down4 --channels 4,8 --groups 2 --time-dim 8 --steps 2 --batch 4 -o out.h5" ;;
    "invariance-audit eval") echo "eval --queries fm.h5 --count 1 --reference fm.h5 --samples 2 --steps 2 --methods ndtm,none --extractors planted:down4 --bits-steps 1 --prior iap.h5 --evaluator pcm.h5 -o out.h5" ;;
    "invariance-audit sample") echo "sample --query fm.h5 --index 0 --extractor planted:mask-left --prior iap.h5 --samples 2 --steps 2 -o out.h5" ;;
    "simple-evol gen") echo "gen --problem tsp --count 2 --nodes 6 -o out.h5" ;;
    "simple-evol solve") echo "solve -i sec.h5 --method ils --iterations 5 -o out.h5" ;;
    "simple-evol evolve") echo "evolve -i sec.h5 --llm surrogate:3 --budget 2 --sandbox none --aco-iterations 2 -o out.h5" ;;
    "simple-evol sweep") echo "sweep -o swout --problems tsp --frameworks random --rungs 0 --seeds 1 --budget 1 --sandbox none" ;;
    "simple-evol llm") echo "llm --exam --rungs 0 --samples 1 -o out.h5" ;;
    "simple-evol eval") echo "eval -i sec.h5 --heuristic seinv.py --sandbox none --aco-iterations 2 -o out.h5" ;;
    "swe-crafter mine") echo "mine -i screpo --store scst --env scenv.json --synthetic 1 --sandbox none" ;;
    "swe-crafter run") echo "run --corpus sccorpus.txt --store scst --no-history --synthetic 1 --agent none --runs 1 --sandbox none" ;;
    *) return 1 ;;
  esac
}

verbs_of() { awk '/^Subcommands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{on=0}'; }
seeded=0
for tool in $(ls "$NK_BIN" | grep -v '\.so$' | grep -v '^nk_unit_tests$'); do
  [ -x "$NK_BIN/$tool" ] || continue
  for verb in $("$tool" --help | verbs_of); do
    "$tool" "$verb" --help | grep -q -- '--seed' || continue
    seeded=$((seeded + 1))
    if ! args=$(recipe "$tool" "$verb"); then
      fail "no recipe for $tool $verb in seed.sh (a verb that shows --seed)"
      continue
    fi
    rm -f out*.h5
    # A verb that serves a stream (spike-sft serve) writes no file: it ran if it answered.
    if [ "$tool $verb" = "spike-sft serve" ]; then
      # shellcheck disable=SC2086
      "$tool" -q $args --seed 7 </dev/null | grep -q '^classes 10$' && pass "$tool $verb --seed 7 answered" || fail "$tool $verb --seed 7"
      continue
    fi
    # A verb that writes text (sparda-forecast needle) has no nk_seed: the seed fixes its text.
    if [ "$tool $verb" = "sparda-forecast needle" ]; then
      # shellcheck disable=SC2086
      "$tool" -q $args --seed 7 -o out1.txt && "$tool" -q $args --seed 7 -o out2.txt && "$tool" -q $args --seed 8 -o out3.txt &&
        cmp -s out1.txt out2.txt && ! cmp -s out1.txt out3.txt && pass "$tool $verb: --seed 7 twice gives one text, --seed 8 another" ||
        fail "$tool $verb --seed"
      continue
    fi
    # A verb that writes JSON lines (swe-crafter mine --synthetic): the seed picks the same bugs.
    if [ "$tool $verb" = "swe-crafter mine" ]; then
      ids() { $PY -c 'import json, sys; print([json.loads(l)["instance_id"] for l in open(sys.argv[1])])' "$1"; }
      # shellcheck disable=SC2086
      PATH="$NK_BIN:/usr/bin:$PATH" "$tool" -q $args --seed 7 -o out1.jsonl && PATH="$NK_BIN:/usr/bin:$PATH" "$tool" -q $args --seed 7 -o out2.jsonl &&
        [ -s out1.jsonl ] && [ "$(ids out1.jsonl)" = "$(ids out2.jsonl)" ] && pass "$tool $verb: --seed 7 twice gives the same bugs" ||
        fail "$tool $verb --seed"
      continue
    fi
    # A verb that writes a folder (swe-crafter run): the seed picks the same bugs, and its log carries the seed.
    if [ "$tool $verb" = "swe-crafter run" ]; then
      ids() { $PY -c 'import json, sys; print([json.loads(l)["instance_id"] for l in open(sys.argv[1])])' "$1"; }
      echo "git:$WORK/screpo" > sccorpus.txt
      rm -rf scrun1 scrun2
      # shellcheck disable=SC2086
      PATH="$NK_BIN:/usr/bin:$PATH" "$tool" -q $args --seed 7 -o scrun1 > /dev/null && PATH="$NK_BIN:/usr/bin:$PATH" "$tool" -q $args --seed 7 -o scrun2 > /dev/null &&
        [ -s scrun1/instances.jsonl ] && [ "$(ids scrun1/instances.jsonl)" = "$(ids scrun2/instances.jsonl)" ] &&
        $PY -c 'import h5py, sys; sys.exit(int(h5py.File(sys.argv[1], "r").attrs["nk_seed"]) != 7)' scrun1/run.h5 &&
        pass "$tool $verb: --seed 7 twice gives the same bugs, the log has nk_seed 7" || fail "$tool $verb --seed"
      continue
    fi
    # A verb that writes a folder of runs (simple-evol sweep): every run carries the seed.
    if [ "$tool $verb" = "simple-evol sweep" ]; then
      rm -rf swout
      # shellcheck disable=SC2086
      "$tool" -q $args --seed 7 && for out in swout/runs/*.h5; do
        $PY -c 'import h5py, sys; sys.exit(int(h5py.File(sys.argv[1], "r").attrs["nk_seed"]) != 7)' "$out" || exit 1
      done && pass "$tool $verb --seed 7: every run has nk_seed 7" || fail "$tool $verb --seed 7"
      continue
    fi
    # shellcheck disable=SC2086
    if ! "$tool" -q $args --seed 7 >"$WORK/.out" 2>"$WORK/.err"; then
      fail "$tool $verb --seed 7 ran"; sed 's/^/     /' "$WORK/.err" | head -3; continue
    fi
    for out in out*.h5; do
      seed=$($PY -c 'import h5py, sys; a = h5py.File(sys.argv[1], "r").attrs; print(int(a["nk_seed"]) if "nk_seed" in a else "none")' "$out")
      [ "$seed" = 7 ] && pass "$tool $verb --seed 7: $out has nk_seed 7" || fail "$tool $verb --seed 7: $out has nk_seed $seed"
    done
  done
done
[ "$seeded" -ge 25 ] && pass "$seeded verbs show --seed" || fail "only $seeded verbs show --seed (25 expected at least)"

# A verb that draws no random numbers shows no --seed and writes no nk_seed.
louver-index build --help | grep -q -- '--seed' && fail "louver-index build shows --seed" || pass "louver-index build shows no --seed"
louver-index -q --seed 7 build -i kv.h5 --subspaces 4 --leaf-size 16 -o plain.h5
$PY -c 'import h5py, sys; sys.exit("nk_seed" in h5py.File("plain.h5", "r").attrs)' && pass "louver-index build writes no nk_seed" || fail "louver-index build writes nk_seed"
# The seed is taken before the verb too.
louver-index -q --seed 5 gen --n 100 --d 8 --queries 1 -o before.h5
$PY -c 'import h5py; assert int(h5py.File("before.h5", "r").attrs["nk_seed"]) == 5' && pass "tool --seed 5 verb writes nk_seed 5" || fail "tool --seed 5 verb"
finish
