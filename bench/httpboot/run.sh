#!/usr/bin/env bash
# UEFI boot benchmark: one QEMU VM with OVMF booted three ways in the same run, rounds
# interleaved: bootctl serve with OVMF's PXE client (ipxe.efi over TFTP), bootctl serve with
# OVMF's HTTP boot client (ipxe.efi over HTTP, no TFTP), and dnsmasq + busybox httpd doing the
# same HTTP boot from static files. Prints a Markdown table of seconds from QEMU start to the
# health report, with the console's steps.
#
#   sudo bench/httpboot/run.sh [rounds]   env: WAYS (default uefi-pxe,uefi-http,dnsmasq-http),
#                                         BOOTFABRIC_ACCEL (tcg, kvm, auto)
#
# Needs root and the Debian packages qemu-system-x86, ovmf, ipxe, ipxe-qemu, busybox,
# dnsmasq-base, linux-image-amd64, iproute2, curl.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${1:-3}
WAYS=${WAYS:-uefi-pxe,uefi-http,dnsmasq-http}

work=$(mktemp -d /tmp/bf-httpboot.XXXXXX)
cleanup() {
  # The clusters' own teardown runs when the program ends; this catches an interrupt.
  for name in hbbf hbdm; do
    [[ -e "$work/state/$name.json" ]] && "$work/bootctl" cluster down --name "$name" --state-dir "$work/state" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

for tool in qemu-system-x86_64 dnsmasq busybox ip curl; do
  command -v "$tool" >/dev/null || { echo "missing $tool (see the Debian packages in $0)" >&2; exit 2; }
done
[[ -e /usr/share/OVMF/OVMF_CODE_4M.fd ]] || { echo "missing OVMF (Debian package ovmf)" >&2; exit 2; }

go build -o "$work/bootctl" ./cmd/bootctl
go build -o "$work/httpboot" ./bench/httpboot
mkdir -p "$work/state"
"$work/httpboot" -bootctl "$work/bootctl" -rounds "$ROUNDS" -ways "$WAYS" -state-dir "$work/state"
