package localvm

import (
	"os/exec"
	"syscall"
)

// setProcAttr has the kernel kill VictoriaMetrics if this process dies
// without stopping it (a test binary killed by its timeout), so no server
// outlives its test.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
