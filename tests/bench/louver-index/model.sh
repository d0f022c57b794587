#!/usr/bin/env bash
# tests/bench/louver-index/model.sh BIN - Louver inside a real causal model
# (issue #38): the shipped 2M-parameter causal model (context 256) extended
# to a 2048-token variant this script trains from it (nk-lm train --init,
# RoPE base 8e4, 300 steps of 2 x 2048 tokens, one thread: about 8 minutes,
# kept in OUT and reused). Three parts, one run:
#  A. real key caches: nk-lm capture --louver of one 2048-token text, every
#     layer, the last 256 positions as queries, through louver-index
#     build/query unchanged: recall (must be 1), scanned fraction and time
#     against the dense scan at T = the top-1% score and at --mass 0.99, Quest
#     top-K and IVF at Louver's scanned fraction (their recall), and the
#     synthetic llm profile of the same shape next to it;
#  B. long outputs: N prompts of fortunes text (about 480 tokens each), NEW
#     (1500) new tokens each, sampled (top-p 0.9, one seed): the model's own
#     decoding, Louver at --mass MASS (0.99), and Quest, IVF and Louver's
#     top-k oracle at the share of keys Louver read; per step the KL of each
#     generation's next-token distribution from the model's own dense
#     scoring of the same tokens (nk-lm generate --divergence), spikes above
#     0.1 nats, and the softmax mass each selection left out
#     (--measure-missed); kl.svg plots prompt 0;
#  C. time per generated token at the longest context (one prompt, NEW
#     tokens, appends included), the fastest of two runs: the model's own
#     decoding, the key-index backend reading every key, and each method.
# OUT (default build/bench/louver-model), N (default 4), NEW (1500), MASS
# (0.99), PARTS (default ABC). Run on an idle machine: part C's times are
# wall-clock.
set -euo pipefail
bin=$(cd "${1:?usage: model.sh BIN}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=${NK_SOURCE:-$(cd "$here/../../.." && pwd)}
OUT=${OUT:-build/bench/louver-model}
N=${N:-4}
NEW=${NEW:-1500}
MASS=${MASS:-0.99}
PARTS=${PARTS:-ABC}
export PATH="$bin:/usr/bin:$PATH"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$OUT"
PY=/usr/bin/python3
attr() { nk-data info "$1" --format tsv | awk -F'\t' -v k="$2" '$1=="attribute" && $2==k {print $7}'; }
# The row name of each method in parts B and C.
label() {
  case $1 in
    own) echo "model's own decoding" ;; dense) echo "index backend, every key" ;; louver) echo "louver --mass $MASS" ;;
    quest) echo "quest at louver's share" ;; ivf) echo "ivf at louver's share" ;; topk) echo "louver --topk-oracle $k" ;;
  esac
}
SHIPPED=$src/data/lm/causal.h5
MODEL=$OUT/causal-2k.h5

echo "== the model"
[ -s corpus.h5 ] || nk-lm -q corpus --tokenizer "$SHIPPED" -o corpus.h5
if [ ! -s "$MODEL" ]; then
  nk-lm -q --threads 1 train --seed 1 --corpus corpus.h5 --init "$SHIPPED" --context 2048 --rope-theta 80000 --batch 2 \
    --steps 300 --lr 1e-3 --warmup 30 --eval-every 100 --eval-batches 2 --log causal-2k.train.tsv --log-every 20 \
    --dtype bfloat16 -o "$MODEL"
fi
echo "shipped: data/lm/causal.h5 (context 256); long: $MODEL (context 2048, validation loss $(tail -1 causal-2k.train.tsv | cut -f7))"

# Fortunes text, whitespace folded: N prompt lines of 1200 characters (about
# 480 tokens) from N files, and one 5100-character text (about 1900 tokens).
$PY - "$N" <<'EOF'
import glob, re, sys
n = int(sys.argv[1])
texts = []
for f in sorted(glob.glob('/usr/share/games/fortunes/*')):
    if f.endswith(('.dat', '.u8')) or '/off' in f:
        continue
    try:
        t = re.sub(r'\s+', ' ', open(f, encoding='utf-8', errors='replace').read().replace('%', ' '))
    except IsADirectoryError:
        continue
    if len(t) > 6200:
        texts.append(t)
assert len(texts) > n, 'too few fortune files'
open('prompts.txt', 'w').write(''.join(t[200:1400] + '\n' for t in texts[:n]))
open('long.txt', 'w').write(texts[n][200:5300] + '\n')
EOF

if [[ $PARTS == *A* ]]; then
  echo
  echo "== A. real key caches (one 2048-token text, the last 256 positions as queries) through louver-index unchanged"
  printf '%-12s %5s | %-18s | %6s %8s %9s %9s | %17s %10s\n' keys layer T recall scanned "index ms" "dense ms" "quest-topk recall" "ivf recall"
  for layer in 0 1 2 3; do
    nk-lm -q capture -m "$MODEL" --text long.txt -o cap.h5 --louver kv-$layer.h5 --louver-layer "$layer" --louver-queries 256
  done
  tokens=$($PY -c "import h5py; print(h5py.File('kv-0.h5')['keys'].shape[1])")
  louver-index -q gen --n "$tokens" --d 32 --heads 2 --query-heads 6 --queries 256 --dv 32 --seed 1 -o kv-profile.h5
  for kv in kv-0 kv-1 kv-2 kv-3 kv-profile; do
    louver-index -q build -i $kv.h5 --subspaces 8 --leaf-size 16 -o idx-$kv.h5
    for rule in "--topk-oracle $(( tokens / 100 ))" "--mass 0.99"; do
      louver-index -q query -i idx-$kv.h5 --queries $kv.h5 $rule --repeats 3 --compare-dense -o q.h5
      f=$(attr q.h5 scanned_fraction)
      louver-index -q query -i idx-$kv.h5 --queries $kv.h5 $rule --method quest-topk --budget "$f" --compare-dense -o qq.h5
      louver-index -q query -i idx-$kv.h5 --queries $kv.h5 $rule --method ivf --budget "$f" --compare-dense -o qi.h5
      awk -v kv="$( [ "$kv" = kv-profile ] && echo "llm profile" || echo "real" )" -v l="${kv#kv-}" -v rule="$rule" \
          -v r="$(attr q.h5 recall)" -v f="$f" -v qi="$(attr q.h5 query_seconds)" -v qd="$(attr q.h5 dense_seconds)" \
          -v rq="$(attr qq.h5 recall)" -v ri="$(attr qi.h5 recall)" -v m=$(( 256 * 6 )) 'BEGIN {
        printf "%-12s %5s | %-18s | %6.4f %7.1f%% %9.4f %9.4f | %17.3f %10.3f\n", kv, (kv == "real" ? l : "-"), rule, r, 100 * f, 1e3 * qi / m, 1e3 * qd / m, rq, ri }'
    done
  done
  echo "(times per query in ms, the fastest of 3 rounds; N = $tokens keys, d = 32, 2 KV heads, 6 query heads)"
fi

if [[ $PARTS == *B* ]]; then
  echo
  echo "== B. long outputs: $N prompts x $NEW new tokens, KL of each step from the model's own dense scoring"
  G="-m $MODEL --prompts prompts.txt --max-new $NEW --ignore-eos --top-p 0.9 --seed 1 --batch $N --divergence"
  nk-lm -q generate $G -o own.h5 > own.txt
  nk-lm -q generate $G --key-index louver --mass "$MASS" --measure-missed -o louver.h5 > louver.txt
  d=$(attr louver.h5 density)
  # The top-k oracle at the same share: k = density x the mean keys a decoding query sees.
  k=$($PY -c "
import h5py; f = h5py.File('louver.h5'); P = f['prompt_lengths'][()].mean()
print(max(1, round($d * (P + ($NEW - 1) / 2))))")
  nk-lm -q generate $G --key-index quest --budget "$d" --measure-missed -o quest.h5 > quest.txt
  nk-lm -q generate $G --key-index ivf --budget "$d" --measure-missed -o ivf.h5 > ivf.txt
  nk-lm -q generate $G --key-index louver --topk-oracle "$k" --measure-missed -o topk.h5 > topk.txt
  printf '%-26s | %7s | %9s %8s %7s %9s | %10s %9s\n' method "keys" "mean KL" "max KL" spikes "KL > 0.01" "missed avg" "max"
  for m in own louver quest ivf topk; do
    label=$(label $m)
    above=$($PY -c "import h5py; print(int((h5py.File('$m.h5')['kl'][()] > 0.01).sum()))")
    awk -v l="$label" -v d="$(attr $m.h5 density)" -v mk="$(attr $m.h5 mean_kl)" -v xk="$(attr $m.h5 max_kl)" -v s="$(attr $m.h5 spikes)" \
        -v a="$above" -v ma="$(attr $m.h5 missed_mean)" -v mx="$(attr $m.h5 missed_max)" 'BEGIN {
      printf "%-26s | %6.1f%% | %9.2e %8.4f %7d %9d | %10s %9s\n", l, 100 * (d == "" ? 1 : d), mk, xk, s, a, (ma == "" ? "0" : sprintf("%.2e", ma)), (mx == "" ? "0" : sprintf("%.4f", mx)) }'
  done
  louver-index -q plot own.h5 louver.h5 quest.h5 ivf.h5 -o kl.svg
  echo "(spikes: steps with KL > 0.1 nats, of $(( N * NEW )); keys: the share a decoding query head read; KL per step of prompt 0: $OUT/kl.svg)"
fi

if [[ $PARTS == *C* ]]; then
  echo
  echo "== C. time per generated token at the longest context (1 prompt, $NEW new tokens, appends included; fastest of 2 runs)"
  head -1 prompts.txt > one.txt
  G="-m $MODEL --prompts one.txt --max-new $NEW --ignore-eos --top-p 0.9 --seed 1"
  d=${d:-$(attr louver.h5 density 2>/dev/null || echo 0.6)}
  printf '%-26s | %8s | %8s %9s %9s %9s\n' method "ms/token" "density" "append s" "select s" "attend s"
  best() {  # best NAME ARGS...: the faster of two runs into NAME.h5
    local name=$1; shift
    nk-lm -q generate $G "$@" -o t1.h5 > /dev/null
    nk-lm -q generate $G "$@" -o t2.h5 > /dev/null
    if awk -v a="$(attr t1.h5 ms_per_token)" -v b="$(attr t2.h5 ms_per_token)" 'BEGIN { exit !(a <= b) }'; then mv t1.h5 "$name.h5"; else mv t2.h5 "$name.h5"; fi
    rm -f t1.h5 t2.h5
  }
  best t-own
  best t-dense --key-index dense
  best t-louver --key-index louver --mass "$MASS"
  best t-quest --key-index quest --budget "$d"
  best t-ivf --key-index ivf --budget "$d"
  for m in own dense louver quest ivf; do
    label=$(label $m)
    awk -v l="$label" -v t="$(attr t-$m.h5 ms_per_token)" -v d="$(attr t-$m.h5 density)" -v a="$(attr t-$m.h5 append_seconds)" \
        -v s="$(attr t-$m.h5 select_seconds)" -v at="$(attr t-$m.h5 attend_seconds)" 'BEGIN {
      if (d == "") printf "%-26s | %8.3f | %8s %9s %9s %9s\n", l, t, "-", "-", "-", "-"
      else printf "%-26s | %8.3f | %7.1f%% %9.3f %9.3f %9.3f\n", l, t, 100 * d, a, s, at }'
  done
  awk -v t="$(attr t-dense.h5 ms_per_token)" -v dec="$(attr t-dense.h5 decode_seconds)" -v at="$(attr t-dense.h5 attend_seconds)" 'BEGIN {
    share = at / dec
    printf "attention (every key, the backend) is %.0f%% of a decoding step; with attention free a step would take %.3f ms (the limit of any key selection here, %.2fx)\n", 100 * share, t * (1 - share), 1 / (1 - share) }'
fi
