#!/usr/bin/env bash
# rubiconv benchmark: every method on the same packed input, one run.
# L in {64K, 256K, 1M} (override: LENGTHS="65536 262144"), H = 64, B = 1,
# lognormal document lengths with median 512 and 4096 (sigma 1), Lk = L.
# Time = the output's compute_seconds (plan + convolution, no file I/O):
# steady state, the fastest of INPROC calls inside one process (default 3;
# FFTW plans are then cached, as in a training loop), best over REPEAT
# processes (default 2: a shared 2-core machine is noisy); and, for rubiconv
# and fullfft, the first call of a fresh process ("cold": FFTW planning and
# page faults included). Peak = the largest peak resident memory of the whole
# process (inputs and outputs included). Then the peers a user runs today
# (torch_fftconv.py in the benchmark venv; PEERS=0 skips them): the
# Hyena/safari FFT convolution in torch, boundary-blind over the packed
# sequence and in a per-document loop, same threads, steady state.
. "$(dirname "$0")/../lib.sh" "$1" rubiconv-bench
lengths=${LENGTHS:-"65536 262144 1048576"}
medians=${MEDIANS:-"512 4096"}
threads=${THREADS:-$(nproc)}


repeat=${REPEAT:-2}
inproc=${INPROC:-3}

# run VERB METHOD [CALLS]: prints "best_seconds peak_MiB"
run() {
  local verb=$1 method=$2 calls=${3:-$inproc} best="" peak=0 seconds kib
  for _ in $(seq "$repeat"); do
    /usr/bin/time -f '%M' -o "$work/rss" rubiconv -q --threads "$threads" "$verb" -i "$work/in.h5" --method "$method" --repeats "$calls" -o "$work/out.h5" 2>/dev/null
    seconds=$(attr "$work/out.h5" compute_seconds)
    kib=$(cat "$work/rss")
    rm -f "$work/out.h5"
    if [ -z "$best" ] || awk "BEGIN{exit !($seconds < $best)}"; then best=$seconds; fi
    [ "$kib" -gt "$peak" ] && peak=$kib
  done
  printf '%s %s\n' "$best" "$(awk -v k="$peak" 'BEGIN{printf "%.0f", k/1024}')"
}

limits
printf '%-8s %-7s %6s | %9s %9s %9s %9s %9s | %7s %7s %7s %7s | %8s %8s | %9s %9s %7s\n' \
  L median docs rubiconv fullfft padded perdoc grad "rc/full" "pad/rc" "per/rc" "grd/rc" "MiB rc" "MiB full" "rc cold" "full cold" "rc/full"
for length in $lengths; do
  for median in $medians; do
    rubiconv -q gen --length "$length" --channels 64 --doc-lengths "lognormal:$median,1.0" --with-dy --seed 1 -o "$work/in.h5"
    docs=$(nk-data info "$work/in.h5" --format tsv | awk -F'\t' '$2=="/cu_seqlens"{gsub(/[^0-9,]/,"",$3); split($3,a,","); print a[2]-1}')
    read -r t_rc m_rc < <(run apply rubiconv)
    read -r t_full m_full < <(run apply fullfft)
    read -r t_pad m_pad < <(run apply padded)
    read -r t_per m_per < <(run apply perdoc)
    read -r t_grad m_grad < <(run grad rubiconv)
    read -r c_rc _ < <(run apply rubiconv 1)
    read -r c_full _ < <(run apply fullfft 1)
    awk -v L="$length" -v md="$median" -v d="$docs" -v rc="$t_rc" -v full="$t_full" -v pad="$t_pad" -v per="$t_per" \
        -v grad="$t_grad" -v mrc="$m_rc" -v mfull="$m_full" -v crc="$c_rc" -v cfull="$c_full" 'BEGIN {
      printf "%-8d %-7d %6d | %8.3fs %8.3fs %8.3fs %8.3fs %8.3fs | %6.2fx %6.2fx %6.2fx %6.2fx | %8d %8d | %8.3fs %8.3fs %6.2fx\n",
             L, md, d, rc, full, pad, per, grad, rc/full, pad/rc, per/rc, grad/rc, mrc, mfull, crc, cfull, crc/cfull }'
    # The FFT engine against the machine (issue #39): fullfft's three real
    # FFTs of n = 2L per channel, 2.5 n log2 n flops each, over its time.
    awk -v L="$length" -v t="$t_full" -v g="$SGEMM_GFLOPS" 'BEGIN {
      n = 2 * L; f = 64 * 3 * 2.5 * n * log(n) / log(2) / 1e9
      printf "         FFT engine (fullfft, 3 real FFTs of 2L per channel): %.1f GFLOP/s, %.0f%% of the SGEMM rate (%s GFLOP/s)\n", f / t, 100 * f / t / g, g }'
    # The peers (issue #39; PEERS=0 skips them): the Hyena/safari-style torch
    # FFT convolution, boundary-blind over the packed sequence and per document.
    if [ "${PEERS:-1}" != 0 ]; then
      PYV=${PYV:-$(bash "$(dirname "$0")/../shred-unlearn/venv.sh" | tail -1)}
      rubiconv -q --threads "$threads" apply -i "$work/in.h5" --method rubiconv -o "$work/ref.h5"
      "$PYV" "$(dirname "$0")/torch_fftconv.py" "$threads" "$inproc" "$work/in.h5" "$work/ref.h5" 2>/dev/null > "$work/peers.txt"
      awk -v rc="$t_rc" 'NR == 1 { print "         " $0; next }
        $1 == "blind" { printf "         torch FFT conv, boundary-blind: %.3fs (rubiconv %.2fx faster; max |diff| from the exact output %s: the leak)\n", $2, $2 / rc, $3 }
        $1 == "perdoc" { printf "         torch FFT conv, per-document loop: %.3fs (rubiconv %.2fx faster; max |diff| %s)\n", $2, $2 / rc, $3 }' "$work/peers.txt"
      rm -f "$work/ref.h5"
    fi
    rm -f "$work/in.h5"
  done
done
echo "goals: rc/full <= 1.3, pad/rc >= 2, per/rc >= 3 (median 512), grd/rc <= 2.5, MiB rc <= 1.5 x MiB full;"
echo "       against torch (issue #39): rubiconv >= 2x faster than the per-document loop and no slower than the boundary-blind FFT"
