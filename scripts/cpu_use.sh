# shellcheck shell=bash
# Sourced: cpu_use sets cpu_use_line to the CPU seconds used since its last call (or since this
# file was sourced) by the calling shell's finished child processes and by the whole machine, as
# "CPU: N s in its processes, M s on the machine". Call it in the shell that ran the work, not
# in a command substitution. CI's stage and step lines carry it, so a log shows which stage costs
# the cores and which only waits.

# cpu_use_read: sets cpu_use_now_children and cpu_use_now_machine, in clock ticks: the calling
# shell's waited-for children (user and system) and every CPU's busy time. In this shell, not a
# command substitution's, whose children would be its own.
cpu_use_read() {
  local stat fields machine
  read -r stat </proc/$BASHPID/stat
  read -ra fields <<<"${stat##*) }"
  read -ra machine </proc/stat
  # After the comm field, index 13 is cutime and 14 cstime; /proc/stat's first line is cpu, then
  # user, nice, system, idle, iowait, irq, softirq, steal.
  cpu_use_now_children=$((fields[13] + fields[14]))
  cpu_use_now_machine=$((machine[1] + machine[2] + machine[3] + machine[6] + machine[7]))
}

cpu_use_hz=$(getconf CLK_TCK)
# cpu_use_seconds TICKS: the seconds, to a tenth.
cpu_use_seconds() {
  local tenths=$(($1 * 10 / cpu_use_hz))
  echo "$((tenths / 10)).$((tenths % 10))"
}
cpu_use_read
cpu_use_pid=$BASHPID
cpu_use_children=$cpu_use_now_children
cpu_use_machine=$cpu_use_now_machine

cpu_use() {
  cpu_use_read
  # A subshell (a CI lane) counts its own children from none.
  if [[ $cpu_use_pid != "$BASHPID" ]]; then
    cpu_use_pid=$BASHPID
    cpu_use_children=0
  fi
  cpu_use_line="CPU: $(cpu_use_seconds $((cpu_use_now_children - cpu_use_children))) s in its"
  cpu_use_line+=" processes, $(cpu_use_seconds $((cpu_use_now_machine - cpu_use_machine))) s on"
  cpu_use_line+=" the machine"
  cpu_use_children=$cpu_use_now_children
  cpu_use_machine=$cpu_use_now_machine
}
