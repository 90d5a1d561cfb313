#!/usr/bin/env bash
# Idempotent set-up of a single-node SLURM cluster on localhost (Debian 12 packages), for
# tests/test_slurm.py: munge + slurmdbd (accounting in the local MariaDB, so that `sacct`,
# which the Snakemake SLURM executor plugin polls, works) + slurmctld + slurmd, started
# directly (no systemd). The node is named after `hostname -s` and has the machine's CPUs.
#
# Usage: sudo bash .ci/slurm-localhost.sh      (safe to run again: it only (re)starts what
#        is down or whose configuration changed, then waits until the node is idle)
# Environment (optional):
#   SLURM_LOCALHOST_MEM_MB     memory the node advertises (default: max(90% of RAM, 32768);
#                              the profile asks up to 16000 MB for some rules, and two of
#                              them (privacy of stays and of ihm48) run side by side only if
#                              the node has twice that; memory is not enforced here, so
#                              advertising more than RAM is harmless for the tiny test
#                              workflow)
#   SLURM_LOCALHOST_CLUSTER    cluster name (default: localcluster)
#   SLURM_LOCALHOST_PARTITION  default partition (default: debug)
#   SLURM_LOCALHOST_CGROUP     1: track/confine jobs with cgroups (proctrack/cgroup,
#                              task/cgroup); default 0: proctrack/linuxproc + task/none,
#                              which also works in containers without cgroup delegation
# Exits non-zero with a message naming the failing step; daemon logs are in /var/log/slurm.
set -euo pipefail

STEP="start"
REPORTED=0
fail() {
    echo "slurm-localhost: FAILED at step '$STEP': $*" >&2
    REPORTED=1
    exit 1
}
on_exit() {
    local rc=$?
    [ "$rc" -eq 0 ] || [ "$REPORTED" = 1 ] || echo "slurm-localhost: FAILED at step '$STEP' (exit $rc)" >&2
}
trap on_exit EXIT
log() { echo "slurm-localhost: $*"; }
show_log() { [ -f "$1" ] && { echo "--- last lines of $1:" >&2; tail -n 25 "$1" >&2; } || true; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (daemons, /etc/slurm, apt-get); try: sudo bash $0"

NODE="$(hostname -s)"
CLUSTER="${SLURM_LOCALHOST_CLUSTER:-localcluster}"
PARTITION="${SLURM_LOCALHOST_PARTITION:-debug}"
USE_CGROUP="${SLURM_LOCALHOST_CGROUP:-0}"
ETC=/etc/slurm
RUN=/run/slurm
LOGDIR=/var/log/slurm
SPOOL=/var/lib/slurm

# ---------------------------------------------------------------- packages
STEP="apt-get install"
need_pkgs=()
for pair in slurmctld:slurmctld slurmd:slurmd slurmdbd:slurmdbd sinfo:slurm-client \
    sacct:slurm-client munged:munge; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || [[ " ${need_pkgs[*]-} " == *" ${pair#*:} "* ]] \
        || need_pkgs+=("${pair#*:}")
done
if ! command -v mariadb >/dev/null 2>&1 && ! command -v mysql >/dev/null 2>&1; then
    need_pkgs+=(mariadb-client)
fi
if ((${#need_pkgs[@]})); then
    log "installing ${need_pkgs[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || fail "apt-get update failed"
    apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd slurm-client munge \
        mariadb-client "${need_pkgs[@]}" >/dev/null || fail "apt-get install ${need_pkgs[*]} failed"
fi
MYSQL="$(command -v mariadb || command -v mysql)"

# ---------------------------------------------------------------- MariaDB (accounting store)
STEP="MariaDB"
mysql_root() { "$MYSQL" -uroot --protocol=socket "$@" 2>/dev/null || "$MYSQL" -uroot -h127.0.0.1 "$@"; }
if ! mysql_root -e 'SELECT 1' >/dev/null 2>&1; then
    if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1; then
        log "no MariaDB server: installing mariadb-server"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null \
            || fail "apt-get install mariadb-server failed"
    fi
    log "starting MariaDB (init script, no systemd)"
    /etc/init.d/mariadb start >/dev/null 2>&1 || service mariadb start >/dev/null 2>&1 || true
    for _ in $(seq 1 30); do mysql_root -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
    mysql_root -e 'SELECT 1' >/dev/null 2>&1 \
        || fail "cannot connect to MariaDB as root (socket or 127.0.0.1:3306)"
fi
DB_PASS=""
if [ -f "$ETC/slurmdbd.conf" ]; then
    DB_PASS="$(sed -n 's/^StoragePass=//p' "$ETC/slurmdbd.conf")"
fi
[ -n "$DB_PASS" ] || DB_PASS="$(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 24 || true)"
mysql_root <<SQL || fail "could not create the slurm_acct_db database / slurm user"
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL

# ---------------------------------------------------------------- configuration files
STEP="configuration"
id slurm >/dev/null 2>&1 || fail "user 'slurm' missing (the slurm-wlm packages create it)"
mkdir -p "$ETC" "$RUN" "$LOGDIR" "$SPOOL/slurmctld" "$SPOOL/slurmd"
chown slurm:slurm "$RUN" "$LOGDIR" "$SPOOL/slurmctld"

# Node hardware as slurmd sees it ("NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 ...").
HW="$(slurmd -C 2>/dev/null | head -n 1)" || true
hw() { sed -n "s/.*[[:space:]]$1=\([0-9]*\).*/\1/p" <<<"$HW"; }
CPUS="$(hw CPUs)"; BOARDS="$(hw Boards)"; SOCKETS="$(hw SocketsPerBoard)"
CORES="$(hw CoresPerSocket)"; THREADS="$(hw ThreadsPerCore)"; REALMEM="$(hw RealMemory)"
if [ -z "$CPUS" ] || [ -z "$CORES" ]; then
    CPUS="$(nproc)"; BOARDS=1; SOCKETS=1; CORES="$CPUS"; THREADS=1
fi
[ -n "$REALMEM" ] || REALMEM=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))
MEM="${SLURM_LOCALHOST_MEM_MB:-$((REALMEM * 9 / 10 > 32768 ? REALMEM * 9 / 10 : 32768))}"

if [ "$USE_CGROUP" = 1 ]; then
    TRACKING="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup"
else
    TRACKING="ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux"
fi

changed=()   # daemons whose configuration changed
install_conf() {  # install_conf <file> <mode> <owner> <daemons affected...>; content on stdin
    local file="$1" mode="$2" owner="$3" tmp
    shift 3
    tmp="$(mktemp)"
    cat >"$tmp"
    if [ -f "$file" ] && cmp -s "$tmp" "$file"; then
        rm -f "$tmp"
    else
        install -m "$mode" -o "${owner%:*}" -g "${owner#*:}" "$tmp" "$file"
        rm -f "$tmp"
        changed+=("$@")
        log "wrote $file"
    fi
}

install_conf "$ETC/slurm.conf" 644 root:root slurmctld slurmd <<EOF
# Single-node SLURM on localhost, written by .ci/slurm-localhost.sh (do not edit by hand).
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$SPOOL/slurmctld
SlurmdSpoolDir=$SPOOL/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
$TRACKING
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=300
# Trust the node definition below rather than probing the (virtual) hardware.
SlurmdParameters=config_overrides
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS Boards=$BOARDS SocketsPerBoard=$SOCKETS CoresPerSocket=$CORES ThreadsPerCore=$THREADS RealMemory=$MEM State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

install_conf "$ETC/cgroup.conf" 644 root:root slurmd <<EOF
# Used only when SLURM_LOCALHOST_CGROUP=1 (proctrack/cgroup, task/cgroup).
CgroupPlugin=autodetect
ConstrainCores=yes
ConstrainRAMSpace=no
EOF

install_conf "$ETC/slurmdbd.conf" 600 slurm:slurm slurmdbd <<EOF
# slurmdbd for the single-node localhost cluster, written by .ci/slurm-localhost.sh.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=slurm
LogFile=$LOGDIR/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF

# ---------------------------------------------------------------- daemons
# Started directly (they daemonise themselves); stopped only through their own pid files.
pid_alive() {  # pid_alive <pidfile> <command name>
    local pid
    [ -f "$1" ] || return 1
    pid="$(cat "$1" 2>/dev/null)"
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$2" ]
}
stop_daemon() {  # stop_daemon <pidfile> <command name>
    local pid
    pid_alive "$1" "$2" || return 0
    pid="$(cat "$1")"
    log "stopping $2 (pid $pid) to apply the new configuration"
    kill "$pid"
    for _ in $(seq 1 30); do [ -e "/proc/$pid" ] || return 0; sleep 1; done
    fail "$2 (pid $pid) did not stop within 30 s"
}
is_changed() { local d; for d in "${changed[@]}"; do [ "$d" = "$1" ] && return 0; done; return 1; }
start_daemon() {  # start_daemon <pidfile> <command name> <logfile> <command...>
    local pidfile="$1" name="$2" logfile="$3"
    shift 3
    if is_changed "$name"; then stop_daemon "$pidfile" "$name"; fi
    if pid_alive "$pidfile" "$name"; then
        log "$name already running (pid $(cat "$pidfile"))"
        return 0
    fi
    log "starting $name"
    local rc=0
    "$@" || rc=$?
    [ "$rc" -eq 0 ] || { show_log "$logfile"; fail "'$*' exited with status $rc"; }
    for _ in $(seq 1 20); do pid_alive "$pidfile" "$name" && return 0; sleep 0.5; done
    show_log "$logfile"
    fail "$name did not stay up (no live pid in $pidfile)"
}

STEP="munged"
[ -s /etc/munge/munge.key ] || { mungekey --create --force && chown munge:munge /etc/munge/munge.key \
    && chmod 600 /etc/munge/munge.key; } || fail "could not create /etc/munge/munge.key"
mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged || fail "munged did not start (see /var/log/munge/munged.log)"
    for _ in $(seq 1 20); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
    munge -n | unmunge >/dev/null || fail "munge credential round trip (munge -n | unmunge) fails"
else
    log "munged already running"
fi

STEP="slurmdbd"
start_daemon "$RUN/slurmdbd.pid" slurmdbd "$LOGDIR/slurmdbd.log" /usr/sbin/slurmdbd
ok=0
for _ in $(seq 1 60); do sacctmgr -n list cluster >/dev/null 2>&1 && { ok=1; break; }; sleep 1; done
[ "$ok" = 1 ] || { show_log "$LOGDIR/slurmdbd.log"; fail "slurmdbd does not answer 'sacctmgr list cluster' after 60 s"; }

STEP="sacctmgr add cluster"
if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null || fail "sacctmgr add cluster $CLUSTER failed"
    log "registered cluster $CLUSTER in slurmdbd"
fi

STEP="slurmctld"
start_daemon "$RUN/slurmctld.pid" slurmctld "$LOGDIR/slurmctld.log" /usr/sbin/slurmctld
ok=0
for _ in $(seq 1 30); do scontrol ping 2>/dev/null | grep -q 'is UP' && { ok=1; break; }; sleep 1; done
[ "$ok" = 1 ] || { show_log "$LOGDIR/slurmctld.log"; fail "slurmctld does not answer 'scontrol ping' after 30 s"; }

STEP="slurmd"
start_daemon "$RUN/slurmd.pid" slurmd "$LOGDIR/slurmd.log" /usr/sbin/slurmd

# ---------------------------------------------------------------- wait for the node
STEP="node $NODE idle"
state=""
for i in $(seq 1 60); do
    state="$(sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -n 1)"
    case "$state" in
        idle | mixed | allocated | completing) break ;;
        *drain* | down* | *fail*)
            # e.g. left down by an earlier run: ReturnToService=2 does not undo a drain.
            if [ $((i % 10)) -eq 5 ]; then
                scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
            fi ;;
    esac
    sleep 1
done
case "$state" in
    idle | mixed | allocated | completing) ;;
    *)
        sinfo -N -l >&2 || true
        scontrol show node "$NODE" | grep -i reason >&2 || true
        show_log "$LOGDIR/slurmd.log"
        show_log "$LOGDIR/slurmctld.log"
        fail "node $NODE is '${state:-unknown}', not idle, after 60 s" ;;
esac

STEP="done"
log "ready: cluster $CLUSTER, partition $PARTITION, node $NODE ($CPUS CPUs, ${MEM} MB), state $state"
sinfo
