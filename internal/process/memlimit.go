package process

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMemLimitRatio is the share of a container's memory limit that
// `inferwatch run` sets Go's soft memory limit to, as Prometheus'
// --auto-gomemlimit.ratio does: the garbage collector works harder as the
// heap nears it instead of letting it reach twice the live data, so a
// cold evaluation of many series fits the container it runs in.
const DefaultMemLimitRatio = 0.9

// cgroupMemoryFiles are where the container's memory limit is read from,
// below the root: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"}

// ContainerMemoryLimit returns the memory limit of the cgroup the process
// runs in, in bytes, read below root ("/" in the daemon), and the file it
// read; 0 when there is none (no cgroup file, "max", or v1's
// no-limit value).
func ContainerMemoryLimit(root string) (int64, string, error) {
	for _, name := range cgroupMemoryFiles {
		p := filepath.Join(root, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, p, err
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, p, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, p, fmt.Errorf("%s: %q is not a number of bytes or max", p, s)
		}
		// cgroup v1 writes a page-rounded MaxInt64 for "no limit".
		if n >= math.MaxInt64/2 {
			return 0, p, nil
		}
		return n, p, nil
	}
	return 0, "", nil
}

// MemLimitPlan is what ApplyMemLimit decided: the soft limit set (0:
// none) and why, to log.
type MemLimitPlan struct {
	Limit  int64
	Reason string
}

// PlanMemLimit decides Go's soft memory limit: GOMEMLIMIT, when set, wins
// (the runtime has applied it); otherwise ratio of the container's limit,
// when there is one and ratio is in (0, 1].
func PlanMemLimit(envSet bool, ratio float64, limit int64, from string) MemLimitPlan {
	switch {
	case envSet:
		return MemLimitPlan{Reason: "GOMEMLIMIT is set"}
	case ratio == 0:
		return MemLimitPlan{Reason: "--auto-gomemlimit.ratio is 0"}
	case limit <= 0:
		return MemLimitPlan{Reason: "no container memory limit"}
	}
	return MemLimitPlan{Limit: int64(float64(limit) * ratio),
		Reason: fmt.Sprintf("%s of the container's limit of %s (%s)", strconv.FormatFloat(ratio, 'g', -1, 64), MiB(limit), from)}
}

// ApplyMemLimit sets Go's soft memory limit from the container's, as
// PlanMemLimit decides, and returns the plan.
func ApplyMemLimit(ratio float64) (MemLimitPlan, error) {
	_, envSet := os.LookupEnv("GOMEMLIMIT")
	limit, from, err := ContainerMemoryLimit("/")
	if err != nil && !envSet {
		return MemLimitPlan{}, fmt.Errorf("reading the container's memory limit: %w (set GOMEMLIMIT, or --auto-gomemlimit.ratio 0)", err)
	}
	p := PlanMemLimit(envSet, ratio, limit, from)
	if p.Limit > 0 {
		debug.SetMemoryLimit(p.Limit)
	}
	return p, nil
}

// DefaultGCPercent is the garbage collector's target that `inferwatch run`
// sets unless GOGC is: the heap may grow by this share of the live data
// before a collection, against Go's 100. Prometheus settled on the same
// (runtime.gogc, 75 since 2.53, after 50 cost too much CPU). Measured on
// 100,000 auto series, 75 keeps a cold cycle's peak about 40 MiB below
// Go's default for a few percent more CPU, where 50 saves another 40 MiB
// for up to 10 % more wall time.
const DefaultGCPercent = 75

// PlanGCPercent decides the collector's target: GOGC, when set, wins (the
// runtime has applied it); otherwise percent.
func PlanGCPercent(envSet bool, percent int) (int, string) {
	if envSet {
		return 0, "GOGC is set"
	}
	return percent, "--runtime.gogc"
}

// ApplyGCPercent sets the collector's target as PlanGCPercent decides and
// returns the percent set (0: none) and why.
func ApplyGCPercent(percent int) (int, string) {
	_, envSet := os.LookupEnv("GOGC")
	p, why := PlanGCPercent(envSet, percent)
	if p > 0 {
		debug.SetGCPercent(p)
	}
	return p, why
}

// MiB formats n bytes in MiB: 1024 MiB, 921.6 MiB.
func MiB(n int64) string {
	return strconv.FormatFloat(math.Round(float64(n)/(1<<20)*10)/10, 'f', -1, 64) + " MiB"
}

// ReleaseForgotten returns a function, to call with the series forgotten
// and those still tracked, that returns the memory of series forgotten in
// bulk (a burst of pods that stopped) to the system at once, rather than
// as the runtime's collector and scavenger get to it over minutes: once
// the series forgotten since the last release reach 1,000 and a tenth of
// those tracked, at most once a minute (a release held back by that waits
// for the minute's end).
func ReleaseForgotten(logger *slog.Logger) func(forgotten, tracked int) {
	var (
		mu      sync.Mutex
		pending int       // forgotten since the last release
		last    time.Time // the last release
		timer   *time.Timer
	)
	release := func() {
		mu.Lock()
		n := pending
		pending, last, timer = 0, time.Now(), nil
		mu.Unlock()
		began := time.Now()
		debug.FreeOSMemory()
		logger.Debug("returned the memory of forgotten series to the system", "forgotten", n, "took", time.Since(began))
	}
	return func(forgotten, tracked int) {
		mu.Lock()
		defer mu.Unlock()
		pending += forgotten
		if pending < 1000 || 10*pending < tracked+pending || timer != nil {
			return
		}
		timer = time.AfterFunc(max(0, time.Minute-time.Since(last)), release)
	}
}
