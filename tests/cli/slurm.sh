# slurm.sh - every data/batch/*.sbatch as a real job array of 3 tasks on a
# private one-node Slurm (munged, slurmctld and slurmd started in the temp
# folder); the shards merged by nk-data equal the script's whole run.
# Prints "SKIP: reason" and exits 77 where the daemons cannot start.
. "$(dirname "$0")/lib.sh"

SKIP_CODE=77
SHARDS=3
NODE_WAIT_S=30   # slurmd registers within a second or two
JOB_LIMIT_S=60   # one job array of tiny inputs takes seconds
skip() { echo "SKIP: $*"; exit "$SKIP_CODE"; }

# stop_cluster DIR: cancel the jobs and wait for them to end, then TERM (after
# 5 s KILL) the daemons whose pid files are in DIR. Also run by the watchdog,
# so it stands alone.
stop_cluster() {
  local dir=$1 pid pid_file pids=() alive i
  if [ -f "$dir/slurmctld.pid" ]; then
    SLURM_CONF=$dir/slurm.conf timeout 5 scancel --quiet --user="$(id -un)" >/dev/null 2>&1
    for ((i = 0; i < 50; i++)); do
      [ -z "$(SLURM_CONF=$dir/slurm.conf timeout 2 squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    pid=$(cat "$pid_file" 2>/dev/null) || continue
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$pid_file"
  done
  for ((i = 0; i < 50 && ${#pids[@]} > 0; i++)); do
    alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    pids=("${alive[@]}")
    sleep 0.1
  done
  [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null
  # A job step whose slurmd went first lingers and ignores TERM; ours run in DIR/log.
  for pid in /proc/[0-9]*; do
    case "$(readlink "$pid/cwd" 2>/dev/null)" in
      "$dir"/*) [[ "$(tr '\0' ' ' <"$pid/cmdline" 2>/dev/null)" == slurmstepd* ]] && kill -KILL "${pid#/proc/}" 2>/dev/null ;;
    esac
  done
  return 0
}

# show_tail FILE...: the last lines of daemon or job logs, indented.
show_tail() { local f; for f in "$@"; do [ -f "$f" ] && { echo "     --- $f"; tail -n 8 "$f" | sed 's/^/     /'; }; done; }

# --- the cluster ------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "not root (slurmd must run as root to start jobs for any user)"
for cmd in munged munge slurmctld slurmd sbatch sinfo squeue scancel timeout setsid; do
  command -v "$cmd" >/dev/null || skip "$cmd not found (Debian packages slurm-wlm and munge)"
done
# A run inside a Slurm job must not leak that job's settings into ours.
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN)_')

CLUSTER=$WORK/cluster
mkdir -p "$CLUSTER/munge" "$CLUSTER/state" "$CLUSTER/spool" "$CLUSTER/log" "$WORK/jobs"
# munged wants every folder above its socket searchable by all (mktemp -d gives 0700).
chmod 755 "$WORK" "$CLUSTER" "$CLUSTER/munge"
trap 'stop_cluster "$CLUSTER"; rm -rf "$WORK"' EXIT
trap 'exit 143' TERM INT HUP
# If this shell is killed outright (a ctest timeout), the watchdog still stops the daemons.
setsid bash -c "$(declare -f stop_cluster)"'
  while kill -0 "$1" 2>/dev/null; do sleep 1; done
  stop_cluster "$2"; rm -rf "$3"' watchdog $$ "$CLUSTER" "$WORK" </dev/null >/dev/null 2>&1 &

MUNGE_SOCKET=$CLUSTER/munge/munge.socket
dd if=/dev/urandom of="$CLUSTER/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$CLUSTER/munge/munge.key"
munged --socket="$MUNGE_SOCKET" --key-file="$CLUSTER/munge/munge.key" --pid-file="$CLUSTER/munge/munged.pid" \
  --log-file="$CLUSTER/munge/munged.log" --seed-file="$CLUSTER/munge/munged.seed" </dev/null >>"$CLUSTER/log/munged.out" 2>&1 \
  || skip "munged does not start: $(tail -n 1 "$CLUSTER/log/munged.out")"
munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 \
  || skip "munged started but does not answer on $MUNGE_SOCKET"

# The node as slurmd sees the hardware (name, CPUs, sockets, cores, memory).
NODE_LINE=$(slurmd -C 2>/dev/null | grep '^NodeName=') || skip "slurmd -C does not describe this machine"
NODE_LINE=${NODE_LINE% UpTime=*}
NODE=$(sed 's/^NodeName=\([^ ]*\).*/\1/' <<<"$NODE_LINE")
NODE_CPUS=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")
read -r CTLD_PORT SLURMD_PORT < <("$PY" -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
[ -n "$SLURMD_PORT" ] || skip "no free TCP ports on 127.0.0.1"

export SLURM_CONF=$CLUSTER/slurm.conf
: >"$CLUSTER/plugstack.conf"   # no SPANK plugins of this machine's own Slurm
cat >"$SLURM_CONF" <<EOF
ClusterName=nktest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$CLUSTER/state
SlurmdSpoolDir=$CLUSTER/spool
SlurmctldPidFile=$CLUSTER/slurmctld.pid
SlurmdPidFile=$CLUSTER/slurmd.pid
SlurmctldLogFile=$CLUSTER/log/slurmctld.log
SlurmdLogFile=$CLUSTER/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
PlugStackConfig=$CLUSTER/plugstack.conf
# sbatch -W polls every 2 s only while MinJobAge/2 <= 2 (else 8 s, then 32 s);
# the scheduler starts the next array task within a second.
MinJobAge=5
SchedulerParameters=sched_interval=1
$NODE_LINE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=nktest Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" </dev/null >>"$CLUSTER/log/slurmctld.out" 2>&1 \
  || { show_tail "$CLUSTER/log/slurmctld.out" "$CLUSTER/log/slurmctld.log"; skip "slurmctld does not start"; }
slurmd -f "$SLURM_CONF" -N "$NODE" </dev/null >>"$CLUSTER/log/slurmd.out" 2>&1 \
  || { show_tail "$CLUSTER/log/slurmd.out" "$CLUSTER/log/slurmd.log"; skip "slurmd does not start"; }
state=
for ((waited = 0; waited < NODE_WAIT_S * 2; waited++)); do
  state=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.5
done
if [ "$state" != idle ]; then
  show_tail "$CLUSTER/log/slurmctld.log" "$CLUSTER/log/slurmd.log"
  skip "node $NODE not idle after $NODE_WAIT_S s (state '${state:-none}')"
fi
pass "one-node Slurm up: $NODE_LINE"

# --- the batch scripts ------------------------------------------------------
# compare WHOLE MERGED: the same objects, dtypes, shapes, values and
# attributes. Not compared: wall-clock timings, and root attributes other than
# nk_schema (provenance and per-run statistics, which nk-data merge rewrites).
compare() {
  "$PY" - "$1" "$2" <<'PYEOF'
import re, sys, h5py, numpy as np
whole, merged = (h5py.File(p, "r") for p in sys.argv[1:3])
timing = re.compile(r"(^|_)seconds$")
def equal(x, y):
    x, y = np.asarray(x), np.asarray(y)
    nan = x.dtype.kind in "fc" and y.dtype.kind in "fc"
    return x.shape == y.shape and np.array_equal(x, y, equal_nan=nan)
def names(f):
    out = []
    f.visit(out.append)
    return {n for n in out if not timing.search(n.rsplit("/", 1)[-1])}
diffs, notes = [], set()
if whole.attrs.get("nk_schema") != merged.attrs.get("nk_schema"):
    diffs.append(f"nk_schema {whole.attrs.get('nk_schema')!r} against {merged.attrs.get('nk_schema')!r}")
nw, nm = names(whole), names(merged)
diffs += [f"/{n}: only in the whole run" for n in sorted(nw - nm)]
diffs += [f"/{n}: only in the merged shards" for n in sorted(nm - nw)]
for n in sorted(nw & nm):
    a, b = whole[n], merged[n]
    if isinstance(a, h5py.Dataset) != isinstance(b, h5py.Dataset):
        diffs.append(f"/{n}: a dataset in one file, a group in the other")
        continue
    if isinstance(a, h5py.Dataset):
        if a.dtype != b.dtype or a.shape != b.shape:
            diffs.append(f"/{n}: {a.dtype} {list(a.shape)} in the whole run, {b.dtype} {list(b.shape)} merged")
        elif not equal(a[()], b[()]):
            diffs.append(f"/{n}: values differ")
    for k in sorted((set(a.attrs) | set(b.attrs)) - {k for k in a.attrs if timing.search(k)}):
        if k not in a.attrs or k not in b.attrs or not equal(a.attrs[k], b.attrs[k]):
            diffs.append(f"/{n}: attribute {k} {a.attrs.get(k)!r} in the whole run, {b.attrs.get(k)!r} merged")
        else:
            ta, tb = np.asarray(a.attrs[k]).dtype, np.asarray(b.attrs[k]).dtype
            if ta.kind != tb.kind:
                diffs.append(f"/{n}: attribute {k} is {ta} in the whole run, {tb} merged")
            elif ta != tb:
                # nk-data merge writes integers as int64 and floats as float64: same kind, noted.
                notes.add(f"attribute {k}: {ta} in the whole run, {tb} merged")
for d in diffs[:8]: print("     " + d)
for d in sorted(notes): print("     note: " + d)
print(f"{len(nw)} objects compared")
sys.exit(1 if diffs else 0)
PYEOF
}

# run_batch SCRIPT: make the header's example inputs, run the script as a job
# array of $SHARDS tasks, merge, and compare with the script's whole run.
run_batch() {
  local script=$1 name
  name=$(basename "$script")
  local dir=$WORK/jobs/${name%.sbatch}
  mkdir -p "$dir" && cd "$dir" || return
  local args line
  args=$(sed -n 's/^# *example-args: *//p' "$script")
  if [ -z "$args" ] || [ "$(grep -c . <<<"$args")" -ne 1 ]; then
    fail "$name: its header needs one '# example-args: ...' line (and '# example-input: ...' lines that make the inputs)"
    return
  fi
  while IFS= read -r line; do
    if ! bash -euc "$line" >>inputs.log 2>&1; then
      fail "$name: example input failed: $line"; show_tail inputs.log; return
    fi
  done < <(sed -n 's/^# *example-input: *//p' "$script")
  local argv=() resources=()
  read -ra argv <<<"$args"
  # A script may ask for more CPUs per task than this node has.
  local cpus
  cpus=$(sed -n 's/^#SBATCH *--cpus-per-task[= ]\([0-9]*\).*/\1/p' "$script" | head -n 1)
  [ -n "$cpus" ] && [ "$cpus" -gt "$NODE_CPUS" ] && resources=(--cpus-per-task="$NODE_CPUS")
  local started=$SECONDS rc=0
  timeout "$JOB_LIMIT_S" sbatch -W --array=0-$((SHARDS - 1)) "${resources[@]}" "$script" "${argv[@]}" >sbatch.log 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 124 ]; then fail "$name: job array not finished after $JOB_LIMIT_S s"
    else fail "$name: job array failed (sbatch -W exit $rc)"; fi
    local task_logs=() log
    for log in *.log; do [[ $log == sbatch.log || $log == inputs.log ]] || task_logs+=("$log"); done
    show_tail sbatch.log "${task_logs[@]}"
    return
  fi
  local shards=() stem='' i missing=
  shopt -s nullglob; shards=(*.shard-*.h5); shopt -u nullglob
  [ ${#shards[@]} -gt 0 ] && stem=${shards[0]%.shard-*.h5}
  for ((i = 0; i < SHARDS; i++)); do [ -f "$stem.shard-$i.h5" ] || missing+=" $i"; done
  if [ ${#shards[@]} -ne "$SHARDS" ] || [ -n "$missing" ]; then
    fail "$name: expected STEM.shard-0..$((SHARDS - 1)).h5 from the job array, found: ${shards[*]:-nothing}"
    return
  fi
  pass "$name: sbatch -W --array=0-$((SHARDS - 1)) $args ($((SECONDS - started)) s)"
  if ! nk-data -q merge "${shards[@]}" -o merged.h5 2>merge.log; then
    fail "$name: nk-data merge of ${shards[*]} failed"; show_tail merge.log; return
  fi
  # The whole run gets the job's cores (its tasks' thread count: sums over
  # threads, e.g. sbr-render's gradients, round by it).
  local cpus
  cpus=$(sed -n 's/^#SBATCH --cpus-per-task=\([0-9]*\).*/\1/p' "$script" | head -1)
  if ! SLURM_CPUS_PER_TASK=${cpus:-1} bash "$script" "${argv[@]}" >whole.log 2>&1 || [ ! -f "$stem.h5" ]; then
    fail "$name: the whole run (bash $name $args, outside a job array) did not write $stem.h5"; show_tail whole.log; return
  fi
  local report
  rc=0
  report=$(compare "$stem.h5" merged.h5 2>&1) || rc=$?
  if [ "$rc" -eq 0 ]; then
    pass "$name: merged shards equal the whole run (${report##*$'\n'})"
  else
    fail "$name: merged shards differ from the whole run $stem.h5:"
  fi
  sed '$d' <<<"$report"
}

scripts=("$NK_SOURCE"/data/batch/*.sbatch)
[ -f "${scripts[0]}" ] || fail "no sbatch scripts in $NK_SOURCE/data/batch"
for script in "${scripts[@]}"; do run_batch "$script"; done
cd "$WORK" || exit 1
left=$(squeue -h -o %i | tr '\n' ' ')
if [ -n "$left" ]; then fail "jobs left in the queue: $left"; else pass "no jobs left in the queue"; fi
finish
