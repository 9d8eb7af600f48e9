package images

import (
	"strings"
	"text/template"
	"time"
)

// AgentLayout is where a node agent's files are in an initramfs, and what it does once it has
// reported: the test initramfs powers the node off, an imported container image's agent hands
// over to the image's own init.
type AgentLayout struct {
	Busybox      string // the static busybox; every command runs through it, so nothing else is needed
	ModulesDir   string // kernel modules, loaded in the order ModulesOrder lists them
	ModulesOrder string
	DHCPScript   string // udhcpc's script (AgentDHCPScript)
	IPFile       string // where the DHCP script keeps the leased address, for the report
	// Init, when set, is the init to exec after the report (bootfabric.init= on the kernel
	// command line overrides it); empty, the agent powers the node off.
	Init string
	// Fetcher, when set (with Init), makes the agent a first stage: the static bootfetch at this
	// path fetches the root image the kernel command line names (RenderScript's bootfabric.root=)
	// from the node's peers and the server, the agent unpacks it into a tmpfs, reports, and
	// switches root to the image's Init there, while the fetcher goes on seeding for
	// bootfabric.seed= (SeedFor when the line has none; 0s: no seeding).
	Fetcher string
	SeedFor string
	// Home is the directory of the agent's own files, the one part of this initramfs not copied
	// into the new root: what else is here came with the node's overlay.
	Home string
}

// DefaultSeedFor is how long a node serves its root image to its peers after it has it, unless
// its profile says otherwise: long enough for the nodes of a batch that power on after it.
const DefaultSeedFor = 3 * time.Minute

// InitramfsLayout is the test initramfs's layout (BuildInitramfs): the agent powers off.
func InitramfsLayout() AgentLayout {
	return AgentLayout{Busybox: "/bin/busybox", ModulesDir: "/lib/modules", ModulesOrder: "/etc/modules.order",
		DHCPScript: "/etc/udhcpc.script", IPFile: "/tmp/ip"}
}

// AgentInit is a node agent's /init: it loads the kernel modules ModulesOrder lists, brings up
// the first network interface with udhcpc, POSTs a JSON health report to the URL given as
// bootfabric.health= on the kernel command line (busybox wget), then powers off or execs Init. The
// report is what bootsrv accepts:
//
//	{"status":"ok"|"failed", "details":{"node":..., "detail":..., "interface":..., "mac":...,
//	 "ip":..., "kernel":..., "uptime_seconds":...[, "init":...]}}
//
// As a first stage (l.Fetcher), it fetches, checks and unpacks the root image after DHCP and
// reports "failed" with the reason instead of booting one that did not arrive whole.
//
// Each step is logged on the console with the uptime, so that a serial log shows where a boot
// spends its time. busybox wget's -T option crashes the Debian 12 static build, so the timeout
// applet bounds each attempt instead.
func AgentInit(l AgentLayout) string { return renderAgent(agentInit, l) }

// AgentDHCPScript is the udhcpc script of AgentInit: it configures the leased address (busybox
// passes the prefix length in $mask and the routers in $router) and keeps it in IPFile.
func AgentDHCPScript(l AgentLayout) string { return renderAgent(agentDHCP, l) }

func renderAgent(t *template.Template, l AgentLayout) string {
	var b strings.Builder
	if err := t.Execute(&b, l); err != nil {
		panic(err) // the templates are constants and take only strings
	}
	return b.String()
}

var (
	agentInit = template.Must(template.New("init").Parse(agentInitText))
	agentDHCP = template.Must(template.New("udhcpc").Parse(agentDHCPText))
)

const agentInitText = `#!{{.Busybox}} sh
# bootfabric node agent: DHCP, health report, then {{if .Init}}the image's own init{{else}}power off{{end}}.
bb={{.Busybox}}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for d in proc sys dev run tmp; do $bb mkdir -p /$d; done
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev 2>/dev/null
log() { echo "bootfabric: [$($bb cut -d' ' -f1 /proc/uptime)] $*" > /dev/console; }
log "init started"
if [ -f {{.ModulesOrder}} ]; then
	while read -r m; do
		[ -n "$m" ] && { $bb insmod "{{.ModulesDir}}/$m" || log "insmod $m failed"; }
	done < {{.ModulesOrder}}
	log "modules loaded"
fi
health=""
node=""
init="{{.Init}}"
{{- if .Fetcher}}
server=""
profile=default
root=""
token=""
seed="{{.SeedFor}}"
{{- end}}
for arg in $($bb cat /proc/cmdline); do
	case "$arg" in
	bootfabric.health=*) health="${arg#bootfabric.health=}" ;;
	bootfabric.node=*) node="${arg#bootfabric.node=}" ;;
{{- if .Init}}
	bootfabric.init=*) init="${arg#bootfabric.init=}" ;;
{{- end}}
{{- if .Fetcher}}
	bootfabric.server=*) server="${arg#bootfabric.server=}" ;;
	bootfabric.profile=*) profile="${arg#bootfabric.profile=}" ;;
	bootfabric.root=*) root="${arg#bootfabric.root=}" ;;
	bootfabric.token=*) token="${arg#bootfabric.token=}" ;;
	bootfabric.seed=*) seed="${arg#bootfabric.seed=}" ;;
{{- end}}
	esac
done
{{- if .Fetcher}}
# fetch_root fetches the root image into /seed, every piece checked and the whole file against its
# sha256, and unpacks it into /newroot. The fetcher goes on seeding from /seed, a mount of its own
# that switch_root leaves alone; the verified line in its log is the sign to go on.
fetch_root() {
	if [ -z "$server" ] || [ -z "$root" ]; then
		status=failed
		detail="no bootfabric.server= or bootfabric.root= on the kernel command line"
		return
	fi
	$bb mkdir -p /newroot /seed
	if ! $bb mount -t tmpfs -o mode=0755 tmpfs /newroot || ! $bb mount -t tmpfs -o mode=0700 tmpfs /seed; then
		status=failed
		detail="no tmpfs for the root image"
		return
	fi
	log "fetching $root of profile $profile from $server and its peers, then seeding for $seed"
	# The fetcher's exit status lands in fetch.exit: the wait ends on the verified line or on that
	# (its --timeout bounds it). Its seed's line goes to the console at the end, read with the
	# shell's builtins: after switch_root, busybox's file is gone with the old root.
	# It serves its peers from the leased address: IPv4 alone, which a kernel with
	# ipv6.disable=1 still has.
	( {{.Fetcher}} --server "$server" --profile "$profile" --file "$root" --node "$node" --token "$token" \
		--bind "$($bb cat {{.IPFile}})" --out /seed/root.img --seed-for "$seed" > /seed/fetch.log 2>&1
		echo $? > /seed/fetch.exit
		while read -r l; do case "$l" in seeded*) echo "bootfabric: $l" ;; esac; done < /seed/fetch.log ) &
	while [ ! -f /seed/fetch.exit ] && ! $bb grep -q " verified " /seed/fetch.log; do
		$bb usleep 200000
	done
	if [ ! -f /seed/root.img ]; then
		status=failed
		detail="fetch of $root: $($bb tail -n 1 /seed/fetch.log | $bb tr -d '"\\')"
		log "$detail"
		return
	fi
	log "fetched $($bb grep " verified " /seed/fetch.log)"
	if ! (set -o pipefail; cd /newroot && $bb zcat /seed/root.img | $bb cpio -i -d -m -u) 2> /seed/unpack.log; then
		status=failed
		detail="unpacking $root: $($bb tail -n 1 /seed/unpack.log | $bb tr -d '"\\')"
		return
	fi
	$bb rm -f /seed/root.img
	log "root image unpacked"
	# What else is in this initramfs came with the node's overlay: it wins over the image.
	for f in /* /.[!.]*; do
		case "$f" in
		/init | {{.Home}} | /proc | /sys | /dev | /run | /tmp | /newroot | /seed | "/.[!.]*") continue ;;
		esac
		$bb cp -a "$f" /newroot/ || log "overlay file $f not copied"
	done
	[ -e "/newroot$init" ] || [ -L "/newroot$init" ] || { status=failed; detail="no $init in the root image"; }
}
{{- end}}
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
elif ! $bb udhcpc -i "$iface" -n -q -t 5 -T 2 -s {{.DHCPScript}}; then
	status=failed
	detail="no DHCP lease on $iface"
fi
log "dhcp done on $iface: $status"
{{- if .Fetcher}}
[ "$status" = ok ] && fetch_root
{{- else if .Init}}
[ -e "$init" ] || { status=failed; detail="no $init in the image"; }
{{- end}}
addr="$($bb cat {{.IPFile}} 2>/dev/null)"
mac="$($bb cat "/sys/class/net/$iface/address" 2>/dev/null)"
uptime="$($bb cut -d' ' -f1 /proc/uptime)"
report="{\"status\":\"$status\",\"details\":{\"node\":\"$node\",\"detail\":\"$detail\",\"interface\":\"$iface\",\"mac\":\"$mac\",\"ip\":\"$addr\",\"kernel\":\"$($bb uname -r)\",\"uptime_seconds\":$uptime{{if .Init}},\"init\":\"$init\"{{end}}}}"
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
	log "health report sent=$sent to $health"
else
	log "no bootfabric.health= on the kernel command line"
fi
{{- if .Fetcher}}
if [ "$status" = ok ]; then
	log "switch_root to $init"
	# systemd finds /dev, /proc and /sys mounted, as on any switch_root.
	for d in dev proc sys; do
		$bb mkdir -p "/newroot/$d"
		$bb mount -o move "/$d" "/newroot/$d" || echo "bootfabric: mount --move /$d failed"
	done
	exec $bb switch_root /newroot "$init"
fi
log "the root image is not booted ($detail): a busybox shell instead"
exec $bb sh
{{- else if .Init}}
if [ -e "$init" ]; then
	log "exec $init"
	exec "$init"
fi
log "no $init in the image: a busybox shell instead"
exec $bb sh
{{- else}}
$bb sync
$bb poweroff -f
$bb sleep 5
echo o > /proc/sysrq-trigger
{{- end}}
`

const agentDHCPText = `#!{{.Busybox}} sh
bb={{.Busybox}}
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
	echo "$ip" > {{.IPFile}}
	;;
esac
exit 0
`
