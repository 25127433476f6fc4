#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, for testing the SLURM profile end to end.
#
#   cluster/local-slurm.sh up   [STATE_DIR]   install (apt) if absent, configure, start, wait idle
#   cluster/local-slurm.sh down [STATE_DIR]   stop the daemons this script started (pid files)
#   cluster/local-slurm.sh submissions [STATE_DIR]   number of sbatch submissions accepted so far
#
# STATE_DIR (default /tmp/countdp-slurm) holds slurm.conf, the daemons' logs, pid files and
# spool directories.  One node, `localhost` on 127.0.0.1, with the CPUs of `nproc` and most of
# the free memory.  Needs root and Debian's apt-get (slurm-wlm, munge); tested with Debian
# bookworm's slurm-wlm 22.05.8 and munge 0.5.15.
#
# Why the configuration looks as it does:
# - /etc/slurm/slurm.conf is a symlink to STATE_DIR/slurm.conf: Snakemake's SLURM job-step
#   executor drops SLURM_CONF from the environment, so srun inside a job reads the built-in path.
# - no slurmdbd, so no sacct: run Snakemake with `--slurm-status-command squeue`, and keep
#   finished jobs visible to squeue for MinJobAge = 300 s.
# - proctrack/linuxproc and task/none need no cgroup set-up (containers often have none).
# - `up` refuses to replace an /etc/slurm/slurm.conf that is not its own symlink.
set -euo pipefail

action=${1:-}
state=${2:-${COUNTDP_SLURM_DIR:-/tmp/countdp-slurm}}
conf_link=/etc/slurm/slurm.conf

die() { echo "local-slurm: $*" >&2; exit 1; }

# Is the process of this pid file alive?
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
    return
  fi
  [ "$(id -u)" -eq 0 ] || die "slurm-wlm/munge are not installed and installing them needs root"
  command -v apt-get >/dev/null || die "slurm-wlm/munge are not installed and apt-get is unavailable"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slurm-wlm munge >/dev/null
}

write_conf() {
  local cpus mem
  cpus=$(nproc)
  # RealMemory must not exceed what slurmd measures; leave a quarter of the free memory.
  mem=$(free -m | awk '/^Mem:/ {print int($7 * 3 / 4)}')
  mkdir -p "$state/spool/ctld" "$state/spool/d"
  cat > "$state/slurm.conf" <<EOF
# Written by cluster/local-slurm.sh: a single-node test cluster.
ClusterName=countdp
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
SchedulerType=sched/backfill
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  mkdir -p /etc/slurm
  if [ -e "$conf_link" ] || [ -L "$conf_link" ]; then
    [ -L "$conf_link" ] || die "$conf_link exists and is not a symlink: refusing to replace a real configuration"
    rm -f "$conf_link"
  fi
  ln -s "$state/slurm.conf" "$conf_link"
}

start_munge() {
  mkdir -p /run/munge
  chown munge:munge /run/munge
  chmod 0755 /run/munge
  if alive /run/munge/munged.pid; then
    return  # already running (not ours: `down` leaves it alone)
  fi
  runuser -u munge -- /usr/sbin/munged
  cp /run/munge/munged.pid "$state/munged.pid"
}

wait_idle() {
  local deadline=$((SECONDS + ${COUNTDP_SLURM_WAIT:-60}))
  until sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; do
    [ "$SECONDS" -lt "$deadline" ] || die "node localhost not idle after ${COUNTDP_SLURM_WAIT:-60} s (see $state/slurmctld.log, $state/slurmd.log)"
    sleep 0.5
  done
}

up() {
  [ "$(id -u)" -eq 0 ] || die "needs root (it starts munged, slurmctld and slurmd)"
  install_packages
  mkdir -p "$state"
  if alive "$state/slurmctld.pid" || alive "$state/slurmd.pid"; then
    die "a cluster from $state is already running; run '$0 down $state' first"
  fi
  write_conf
  start_munge
  /usr/sbin/slurmctld -f "$state/slurm.conf" -c   # -c: a clean start, no saved state
  /usr/sbin/slurmd -f "$state/slurm.conf" -N localhost
  wait_idle
  echo "local-slurm: node localhost idle (config $state/slurm.conf)"
}

stop_pidfile() {
  local file=$1 pid
  alive "$file" || { rm -f "$file"; return 0; }
  pid=$(cat "$file")
  kill "$pid"
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$file"; return 0; }
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}

down() {
  stop_pidfile "$state/slurmd.pid"
  stop_pidfile "$state/slurmctld.pid"
  stop_pidfile "$state/munged.pid"   # only present when `up` started munged
  if [ -L "$conf_link" ] && [ "$(readlink "$conf_link")" = "$state/slurm.conf" ]; then
    rm -f "$conf_link"
  fi
  echo "local-slurm: stopped"
}

submissions() {
  grep -c '_slurm_rpc_submit_batch_job: JobId=' "$state/slurmctld.log" || true
}

case "$action" in
  up) up ;;
  down) down ;;
  submissions) submissions ;;
  *) die "usage: $0 up|down|submissions [STATE_DIR]" ;;
esac
