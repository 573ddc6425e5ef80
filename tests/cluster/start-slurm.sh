#!/usr/bin/env bash
# start-slurm.sh (from the team recipe shared/recipes/slurm) - bring up a REAL single-node Slurm cluster on localhost.
#
# Debian 12 (bookworm), run as root.  Idempotent: if the cluster is already
# up in the requested mode and the node is schedulable, it only says so and
# exits 0.  Installs munge + slurm-wlm from Debian (apt) when missing, writes
# /etc/slurm/slurm.conf (+ gres.conf, slurmdbd.conf), starts munged,
# [mariadbd, slurmdbd,] slurmctld and slurmd as background daemons and waits
# until the node is idle.  Stop with stop-slurm.sh (by PID).
#
# Verified on a 2-core / 24 GB bookworm VM with Slurm 22.05.8, munge 0.5.15,
# MariaDB 10.11, snakemake 9.27.1 + snakemake-executor-plugin-slurm 2.8.0.
#   * no cgroups: ProctrackType=proctrack/linuxproc, TaskPlugin=task/none
#   * default: no slurmdbd (AccountingStorageType=accounting_storage/none).
#     `sacct` then only says "Slurm accounting storage is disabled", so the
#     Snakemake profile MUST set `slurm-status-command: squeue`; MinJobAge=600
#     keeps finished jobs visible to `squeue --states=all` for 10 minutes.
#   * SLURM_WITH_DBD=1: also installs/starts MariaDB + slurmdbd, so sacct and
#     the plugin's default (sacct) status polling work.  +~26 s, +193 MB once.
#   * fake GPUs: N symlinks to /dev/null stand in for /dev/nvidiaX (gres/gpu
#     drops a GPU without File= and rejects regular files), AutoDetect=off.
#     --gpus=1 / --gres=gpu:1 jobs are scheduled and get CUDA_VISIBLE_DEVICES.
#   * state, spool, logs and pid files live under $SLURM_LOCAL_DIR.
#
# Environment knobs:
#   SLURM_LOCAL_DIR   state/spool/log/pid dir        (default /tmp/slurm-local)
#   SLURM_PARTITION   name of the (default) partition (default debug)
#   SLURM_FAKE_GPUS   number of fake GPUs, 0 = none   (default 1)
#   SLURM_WITH_DBD    1 = run slurmdbd + MariaDB      (default 0)
#   SLURM_WAIT_S      seconds to wait for the node    (default 90)
set -euo pipefail

DIR=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
PARTITION=${SLURM_PARTITION:-debug}
NGPU=${SLURM_FAKE_GPUS:-1}
WITH_DBD=${SLURM_WITH_DBD:-0}
WAIT_S=${SLURM_WAIT_S:-90}
CONF_DIR=/etc/slurm
CLUSTER=localcluster
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s.%N)

log() { echo "[start-slurm] $*"; }
die() { echo "[start-slurm] ERROR: $*" >&2; exit 1; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

[ "$(id -u)" = 0 ] || die "must run as root (writes /etc/slurm, starts daemons)"

# pid_alive PIDFILE COMM -> true if the pid in PIDFILE runs a program named COMM
pid_alive() {
  local f=$1 comm=$2 p
  [ -s "$f" ] || return 1
  p=$(cat "$f" 2>/dev/null) || return 1
  [ -n "$p" ] && [ -r "/proc/$p/comm" ] && [ "$(cat "/proc/$p/comm")" = "$comm" ]
}
wait_for() {  # wait_for SECONDS CMD... -> poll CMD every 0.1 s
  local n=$(( $1 * 10 )); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  "$@" >/dev/null 2>&1
}
node_state() { sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n1; }
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

# ---------------------------------------------------------------- install
pkgs=()
for b in munged unmunge; do command -v "$b" >/dev/null 2>&1 || pkgs+=(munge); done
for b in slurmctld slurmd sbatch sinfo squeue scontrol; do
  command -v "$b" >/dev/null 2>&1 || pkgs+=(slurm-wlm)
done
if [ "$WITH_DBD" = 1 ]; then
  command -v slurmdbd >/dev/null 2>&1 || pkgs+=(slurmdbd)
  command -v mariadbd >/dev/null 2>&1 || pkgs+=(mariadb-server)
fi
if [ "${#pkgs[@]}" -gt 0 ]; then
  mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
  log "installing ${pkgs[*]} from Debian ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" munge >/dev/null
  log "installed in $(elapsed) s"
fi

NODE=$(hostname -s)
MODE="dbd=$WITH_DBD gpus=$NGPU partition=$PARTITION node=$NODE"
mkdir -p "$DIR"/{state,spool,log,run,fakegpu}

# ------------------------------------------------------- already running?
if pid_alive "$DIR/run/slurmctld.pid" slurmctld && pid_alive "$DIR/run/slurmd.pid" slurmd; then
  st=$(node_state || true)
  if [ "$(cat "$DIR/run/mode" 2>/dev/null)" = "$MODE" ] &&
     { [ "$WITH_DBD" = 0 ] || pid_alive "$DIR/run/slurmdbd.pid" slurmdbd; }; then
    case "$st" in
      idle*|mix*|alloc*)
        log "already running (node $NODE is $st; $MODE); nothing to do"
        exit 0 ;;
    esac
  fi
  log "running, but mode/state differs (state '${st:-?}'); restarting"
fi
# stop leftovers of an earlier (partial) start, so nothing runs twice
if pid_alive "$DIR/run/slurmctld.pid" slurmctld || pid_alive "$DIR/run/slurmd.pid" slurmd ||
   pid_alive "$DIR/run/slurmdbd.pid" slurmdbd; then
  "$HERE/stop-slurm.sh" --keep-munge || true
fi

# ------------------------------------------------------------------ munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating /etc/munge/munge.key"
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
if munge_ok; then
  log "munged already answering; reusing it"
else
  runuser -u munge -- /usr/sbin/munged
  wait_for 5 munge_ok || die "munged did not come up (see /var/log/munge/munged.log)"
  cp /run/munge/munged.pid "$DIR/run/munged.pid"   # marks: started by us
  log "munged started (pid $(cat "$DIR/run/munged.pid"))"
fi

# ----------------------------------------------------------------- config
# CPU count / memory as slurmd detects them; configure 1 GB less memory than
# detected, otherwise the node is drained for "Low RealMemory".
HW=$(slurmd -C | head -n1)
CPUS=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$HW")
MEM=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$HW")
MEM=$(( MEM > 2048 ? MEM - 1024 : MEM ))

GRES_TYPES="" GRES_NODE=""
rm -f "$DIR"/fakegpu/nvidia*
if [ "$NGPU" -gt 0 ]; then
  # gres/gpu wants a character device per GPU: a regular file is rejected
  # ("not a valid character or block device" -> no CUDA_VISIBLE_DEVICES).
  for i in $(seq 0 $((NGPU - 1))); do ln -s /dev/null "$DIR/fakegpu/nvidia$i"; done
  GRES_TYPES="GresTypes=gpu"
  GRES_NODE="Gres=gpu:$NGPU"
  printf 'AutoDetect=off\nNodeName=%s Name=gpu File=%s/fakegpu/nvidia[0-%d]\n' \
    "$NODE" "$DIR" $((NGPU - 1)) > "$CONF_DIR/gres.conf"
else
  rm -f "$CONF_DIR/gres.conf"
fi

if [ "$WITH_DBD" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux"
else
  ACCT="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi

mkdir -p "$CONF_DIR"
cat > "$CONF_DIR/slurm.conf" <<EOF
# generated by start-slurm.sh: single-node localhost cluster, no cgroups
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$ACCT
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
ReturnToService=2
# keep finished jobs in slurmctld (so in 'squeue --states=all') for 10 min;
# the snakemake slurm plugin polls with squeue only if MinJobAge >= 3 x
# its init-seconds-before-status-checks.
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
$GRES_TYPES
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM $GRES_NODE State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# ------------------------------------------------- MariaDB + slurmdbd (opt)
if [ "$WITH_DBD" = 1 ]; then
  install -d -o mysql -g root -m 0755 /run/mysqld
  if mariadb -e 'select 1' >/dev/null 2>&1; then
    log "MariaDB already answering; reusing it"
  else
    setsid /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql \
      --socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/mariadbd.pid \
      --bind-address=127.0.0.1 --log-error=/run/mysqld/mariadb.err \
      </dev/null >/dev/null 2>&1 &
    wait_for 30 mariadb -e 'select 1' || die "MariaDB did not start (see /run/mysqld/mariadb.err)"
    cp /run/mysqld/mariadbd.pid "$DIR/run/mariadbd.pid"   # marks: started by us
    log "mariadbd started (pid $(cat "$DIR/run/mariadbd.pid"))"
  fi
  mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm-local-only';
    ALTER USER 'slurm'@'localhost' IDENTIFIED BY 'slurm-local-only';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  cat > "$CONF_DIR/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurm-local-only
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$CONF_DIR/slurmdbd.conf"
  /usr/sbin/slurmdbd
  wait_for 30 sacctmgr -n list cluster || die "slurmdbd not answering; see $DIR/log/slurmdbd.log"
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
  log "slurmdbd started (pid $(cat "$DIR/run/slurmdbd.pid"))"
fi

# ---------------------------------------------------------------- daemons
# -c: start from a clean state (no jobs / node states from an earlier run)
/usr/sbin/slurmctld -c
/usr/sbin/slurmd
wait_for 5 pid_alive "$DIR/run/slurmctld.pid" slurmctld || die "slurmctld not running; see $DIR/log/slurmctld.log"
wait_for 5 pid_alive "$DIR/run/slurmd.pid" slurmd || die "slurmd not running; see $DIR/log/slurmd.log"

deadline=$(( $(date +%s) + WAIT_S ))
resumed=0
while :; do
  st=$(node_state || true)
  case "$st" in
    idle*) break ;;
    drain*|down*|inval*|fail*)
      if [ "$resumed" = 0 ]; then
        log "node state '$st', trying scontrol resume"
        scontrol update nodename="$NODE" state=resume || true
        resumed=1
      fi ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    scontrol show node "$NODE" >&2 || true
    tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    die "node $NODE not idle after ${WAIT_S}s (state '${st:-?}')"
  fi
  sleep 0.2
done
echo "$MODE" > "$DIR/run/mode"

log "cluster up in $(elapsed) s: node $NODE idle, partition $PARTITION, CPUs=$CPUS RealMemory=$MEM fake-gpus=$NGPU slurmdbd=$WITH_DBD"
log "pids: slurmctld=$(cat "$DIR/run/slurmctld.pid") slurmd=$(cat "$DIR/run/slurmd.pid") munged=$(cat /run/munge/munged.pid 2>/dev/null || echo ?)$([ "$WITH_DBD" = 1 ] && echo " slurmdbd=$(cat "$DIR/run/slurmdbd.pid")")"
