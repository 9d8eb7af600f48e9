// Package procgroup stops the daemons tests start (etcd, ipmi_sim), each in a process group of its
// own, so that their children go with them and nothing else is ever signalled.
package procgroup

import (
	"syscall"
	"time"
)

// Stop sends sig to the process group whose leader is pid (started with Setpgid) unless done is
// closed already, and waits for done; if the leader has not exited 5 s later, the group gets
// SIGKILL.
func Stop(pid int, done <-chan struct{}, sig syscall.Signal) {
	select {
	case <-done:
		return
	default:
	}
	syscall.Kill(-pid, sig)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}
