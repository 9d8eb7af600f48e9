#!/bin/sh
# The lab VM's QEMU command, started by chassis.sh on power on with "-boot once=n" added for a
# one-time PXE boot. Edit the tap, MAC and disk; exec keeps QEMU the process chassis.sh kills.
exec qemu-system-x86_64 -machine pc,accel=kvm:tcg -m 1024 -nographic -no-reboot \
	-netdev tap,id=n0,ifname=tap-lab1,script=no,downscript=no \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:00:01:01 \
	-drive file=/var/lib/lab-bmc/lab1/disk.qcow2,if=virtio \
	-boot order=c "$@"
