package amtest

import (
	"os/exec"
	"syscall"
)

// setProcAttr has the kernel kill Alertmanager if the test binary dies
// without stopping it (killed by its timeout), so no server outlives it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
