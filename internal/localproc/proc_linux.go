package localproc

import (
	"os/exec"
	"syscall"
)

// setProcAttr has the kernel kill a child if this process dies
// without stopping it (a test binary killed by its timeout), so no child
// outlives its test.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
