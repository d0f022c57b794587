# nk-lm.gguf.sh - export --format gguf on tiny trained models (seconds): an
# independent reader (gguf_reference.py: struct + numpy) checks the layout,
# the vocabulary, and that llama.cpp's graph (adjacent-pair RoPE over the
# permuted q/k rows) gives nk-lm's logits; tied and untied heads; bad input.
. "$(dirname "$0")/lib.sh"

for i in $(seq 1 30); do
  echo "The cat sat on the mat number $i. A dog ran to the park and back again."
  echo
done > text.txt
SIZES="--layers 2 --d-model 32 --heads 4 --kv-heads 2 --d-ff 64 --context 32 --batch 4 --warmup 5"
check "corpus, a tied and an untied 10-step causal model" sh -c "nk-lm -q corpus --text text.txt --paragraphs --vocab 300 -o corpus.h5 && nk-lm -q train --corpus corpus.h5 $SIZES --steps 10 --seed 1 -o tied.h5 && nk-lm -q train --corpus corpus.h5 $SIZES --untied --steps 10 --seed 2 -o untied.h5"
$PY -c "
import h5py, numpy as np
bos = int(h5py.File('tied.h5').attrs['vocab']) - 4
with h5py.File('ids.h5', 'w') as f: f['tokens'] = np.array([[bos, 10, 20, 30, 40, 50, 60, 70], [bos, 1, 2, 3, -1, -1, -1, -1]], dtype=np.int32)"
for m in tied untied; do
  check "$m: export --format gguf" nk-lm -q export -m $m.h5 --format gguf -o $m.gguf
  check "$m: score --logits" nk-lm -q score -m $m.h5 --token-ids ids.h5 --logits -o $m.score.h5
  check "$m: the GGUF read independently: layout, vocabulary, llama.cpp-graph logits = nk-lm's (1e-4)" \
    $PY "$NK_SOURCE/tests/cli/gguf_reference.py" $m.gguf $m.h5 $m.score.h5
done
check "a second export is byte-identical" nk-lm -q export -m tied.h5 --format gguf -o again.gguf
same "byte-identical GGUF" tied.gguf again.gguf

check "a diffusion model" nk-lm -q train --corpus corpus.h5 $SIZES --mode diffusion --steps 2 -o diff.h5
expect_fail "GGUF export of a diffusion model: exit 2" 2 "diffusion" nk-lm export -m diff.h5 --format gguf -o diff.gguf
expect_fail "--no-clobber over an existing file: exit 4" 4 "no-clobber" nk-lm export -m tied.h5 --format gguf -o tied.gguf --no-clobber
printf 'not a model' > junk.h5
expect_fail "a model file that is not HDF5: exit 3" 3 "junk.h5" nk-lm export -m junk.h5 --format gguf -o junk.gguf
check "no partial output" sh -c '! ls diff.gguf junk.gguf 2>/dev/null'
no_temp_files "no temp files" "$WORK"
finish
