package process

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WriteMetrics writes the process' and the Go runtime's own
// metrics, with the names and help texts Prometheus' client libraries give
// them, so the dashboards and alerts people have for those work as they
// are. What the system does not tell (no /proc) is left out.
func WriteMetrics(w io.Writer, start time.Time) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	family(w, "go_goroutines", "gauge", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	family(w, "go_memstats_heap_alloc_bytes", "gauge", "Number of heap bytes allocated and still in use.", float64(ms.HeapAlloc))
	family(w, "go_memstats_heap_inuse_bytes", "gauge", "Number of heap bytes that are in use.", float64(ms.HeapInuse))
	family(w, "go_memstats_heap_idle_bytes", "gauge", "Number of heap bytes waiting to be used.", float64(ms.HeapIdle))
	family(w, "go_memstats_heap_released_bytes", "gauge", "Number of heap bytes released to OS.", float64(ms.HeapReleased))
	family(w, "go_memstats_sys_bytes", "gauge", "Number of bytes obtained from system.", float64(ms.Sys))
	family(w, "go_memstats_next_gc_bytes", "gauge", "Number of heap bytes when next garbage collection will take place.", float64(ms.NextGC))
	family(w, "go_gc_cycles_total", "counter", "Garbage collection cycles completed.", float64(ms.NumGC))
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		family(w, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu.Seconds())
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				family(w, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", float64(pages*int64(os.Getpagesize())))
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		family(w, "process_open_fds", "gauge", "Number of open file descriptors.", float64(len(fds)))
	}
	family(w, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", float64(start.Unix()))
}

// family writes one family of a single sample without labels.
func family(w io.Writer, name, typ, help string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, typ, name, strconv.FormatFloat(v, 'g', -1, 64))
}
