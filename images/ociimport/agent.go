package ociimport

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootfabric/bootfabric/images"
)

// AgentDir is where the agent's files go in the image: a name no distribution uses.
const AgentDir = ".bootfabric"

// AgentInit is the /init Import adds: it does for an imported image what the test initramfs's
// init does (DHCP, a health report with the node's token, the report the boot server expects
// from a booted test VM), and then hands over to the image's own init, as PID 1 still, so that
// systemd or a shell runs as it would on a disk. The busybox applets are called by path, so
// nothing of the image is shadowed. bootfabric.init= on the kernel command line names another
// init than /sbin/init.
const AgentInit = `#!/.bootfabric/busybox sh
# bootfabric agent: DHCP, health report, then the image's own init.
bb=/.bootfabric/busybox
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for d in proc sys dev run tmp; do $bb mkdir -p /$d; done
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev 2>/dev/null
log() { echo "bootfabric: [$($bb cut -d' ' -f1 /proc/uptime)] $*" > /dev/console; }
log "agent started"
if [ -f /.bootfabric/modules.order ]; then
	while read -r m; do
		[ -n "$m" ] && { $bb insmod "/.bootfabric/modules/$m" || log "insmod $m failed"; }
	done < /.bootfabric/modules.order
	log "modules loaded"
fi
health=""
node=""
init=/sbin/init
for arg in $($bb cat /proc/cmdline); do
	case "$arg" in
	bootfabric.health=*) health="${arg#bootfabric.health=}" ;;
	bootfabric.node=*) node="${arg#bootfabric.node=}" ;;
	bootfabric.init=*) init="${arg#bootfabric.init=}" ;;
	esac
done
$bb ip link set lo up
iface=""
for try in 1 2 3 4 5 6 7 8 9 10; do
	for d in /sys/class/net/*; do
		n="${d##*/}"
		[ "$n" = lo ] && continue
		iface="$n"
		break
	done
	[ -n "$iface" ] && break
	$bb sleep 1
done
status=ok
detail=""
if [ -z "$iface" ]; then
	status=failed
	detail="no network interface"
elif ! $bb udhcpc -i "$iface" -n -q -t 5 -T 2 -s /.bootfabric/udhcpc.script; then
	status=failed
	detail="no DHCP lease on $iface"
fi
[ -e "$init" ] || { status=failed; detail="no $init in the image"; }
log "dhcp done on $iface: $status"
addr="$($bb cat /.bootfabric/ip 2>/dev/null)"
mac="$($bb cat "/sys/class/net/$iface/address" 2>/dev/null)"
uptime="$($bb cut -d' ' -f1 /proc/uptime)"
report="{\"status\":\"$status\",\"details\":{\"node\":\"$node\",\"detail\":\"$detail\",\"interface\":\"$iface\",\"mac\":\"$mac\",\"ip\":\"$addr\",\"kernel\":\"$($bb uname -r)\",\"uptime_seconds\":$uptime,\"init\":\"$init\"}}"
log "$report"
if [ -n "$health" ]; then
	sent=no
	for try in 1 2 3 4 5; do
		if $bb timeout 10 $bb wget -q -O /dev/null --header "Content-Type: application/json" --post-data "$report" "$health"; then
			sent=yes
			break
		fi
		$bb sleep 1
	done
	log "health report sent=$sent"
else
	log "no bootfabric.health= on the kernel command line"
fi
if [ -e "$init" ]; then
	log "exec $init"
	exec "$init"
fi
log "no $init in the image: a busybox shell instead"
exec $bb sh
`

// agentDHCPScript configures the address busybox udhcpc leased (prefix in $mask, routers in
// $router) and keeps it for the report.
const agentDHCPScript = `#!/.bootfabric/busybox sh
bb=/.bootfabric/busybox
case "$1" in
deconfig)
	$bb ip addr flush dev "$interface"
	$bb ip link set "$interface" up
	;;
bound|renew)
	$bb ip addr flush dev "$interface"
	$bb ip addr add "$ip/${mask:-24}" dev "$interface"
	for r in $router; do
		$bb ip route add default via "$r" dev "$interface" && break
	done
	echo "$ip" > /.bootfabric/ip
	;;
esac
exit 0
`

// writeAgent appends the agent after the image's files, so that its /init wins over any the
// image has: the kernel unpacks entries in order, a later one replacing an earlier. modules are
// kernel modules the agent loads, in order, before it brings the network up.
func (e *emitter) writeAgent(busybox string, modules []string) error {
	if err := e.put(AgentDir, meta{mode: images.CpioDir | 0o755}, e.ino(), 2, 0); err != nil {
		return err
	}
	if err := e.copyFile(busybox, AgentDir+"/busybox", images.CpioRegular|0o755); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := e.writeModules(modules); err != nil {
		return err
	}
	if err := e.writeConsole(); err != nil {
		return err
	}
	for _, s := range []struct{ name, body string }{{AgentDir + "/udhcpc.script", agentDHCPScript}, {"init", AgentInit}} {
		if err := e.put(s.name, meta{mode: images.CpioRegular | 0o755}, e.ino(), 1, int64(len(s.body))); err != nil {
			return err
		}
		if err := e.bytes(s.body); err != nil {
			return err
		}
	}
	return nil
}

// writeModules adds the modules under AgentDir/modules and their order in AgentDir/modules.order.
func (e *emitter) writeModules(modules []string) error {
	if len(modules) == 0 {
		return nil
	}
	if err := e.put(AgentDir+"/modules", meta{mode: images.CpioDir | 0o755}, e.ino(), 2, 0); err != nil {
		return err
	}
	var order strings.Builder
	seen := map[string]bool{}
	for _, m := range modules {
		base := filepath.Base(m)
		if seen[base] {
			return fmt.Errorf("agent: module %s: a module named %s is already given", m, base)
		}
		seen[base] = true
		if err := e.copyFile(m, AgentDir+"/modules/"+base, images.CpioRegular|0o644); err != nil {
			return fmt.Errorf("agent: module %w", err)
		}
		order.WriteString(base + "\n")
	}
	if err := e.put(AgentDir+"/modules.order", meta{mode: images.CpioRegular | 0o644}, e.ino(), 1, int64(order.Len())); err != nil {
		return err
	}
	return e.bytes(order.String())
}

// copyFile writes the file at src as the archive entry name.
func (e *emitter) copyFile(src, name string, mode uint32) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := e.put(name, meta{mode: mode}, e.ino(), 1, fi.Size()); err != nil {
		return err
	}
	if err := e.data(f, fi.Size()); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// writeConsole adds /dev/console when the image has none (container images often have an empty
// /dev): the kernel opens it for init's output before the agent can mount devtmpfs.
func (e *emitter) writeConsole() error {
	if e.t.lookup("dev/console") != nil {
		return nil
	}
	if d := e.t.lookup("dev"); d == nil {
		if err := e.put("dev", meta{mode: images.CpioDir | 0o755}, e.ino(), 2, 0); err != nil {
			return err
		}
	} else if d.children == nil {
		return nil // not a directory: leave the image as it is
	}
	return e.put("dev/console", meta{mode: images.CpioCharDev | 0o600, rmajor: 5, rmin: 1}, e.ino(), 1, 0)
}
