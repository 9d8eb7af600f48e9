#!/bin/sh
# The machine behind an OpenIPMI ipmi_sim BMC for one lab VM (docs/cluster.md, "A BMC for a lab
# VM"): ipmi_sim runs it as "chassis.sh 0x20 get PARAM..." or "chassis.sh 0x20 set PARAM VALUE...".
# Power on starts ./vm.sh (the VM's QEMU command) in a session of its own, power off kills that
# session, and the power state is whether it runs. A one-time PXE boot ("set boot pxe", as
# `ipmitool chassis bootdev pxe` or `bootctl power pxe` sends it) adds "-boot once=n" to the next
# start only. State lives beside this script: boot, vm.pid, console.log.
dir=$(cd "$(dirname "$0")" && pwd)
shift # the device, 0x20, from lan.conf
op=$1
[ $# -gt 0 ] && shift
running() {
	pid=$(cat "$dir/vm.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
		! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}
case $op in
get)
	for p in "$@"; do
		case $p in
		power) if running; then echo power:1; else echo power:0; fi ;;
		boot) echo "boot:$(cat "$dir/boot" 2>/dev/null || echo default)" ;;
		*) echo "chassis.sh: cannot get $p"; exit 1 ;;
		esac
	done
	;;
set)
	while [ $# -ge 2 ]; do
		case $1 in
		power)
			if [ "$2" = 1 ] && ! running; then
				extra=
				[ "$(cat "$dir/boot" 2>/dev/null)" = pxe ] && extra="-boot once=n"
				echo default >"$dir/boot" # one time only
				# Output to a file: ipmi_sim reads this script's output until every writer closes it.
				# shellcheck disable=SC2086 # extra is two words or none
				setsid "$dir/vm.sh" $extra >>"$dir/console.log" 2>&1 </dev/null &
				echo $! >"$dir/vm.pid"
			elif [ "$2" = 0 ] && running; then
				kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid"
				rm -f "$dir/vm.pid"
			fi
			;;
		boot) echo "$2" >"$dir/boot" ;;
		reset | identify) ;;
		*) echo "chassis.sh: cannot set $1"; exit 1 ;;
		esac
		shift 2
	done
	;;
*)
	echo "chassis.sh: unknown operation $op"
	exit 1
	;;
esac
