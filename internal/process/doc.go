// Package process is what the daemon sets and tells about its own
// process: Go's soft memory limit from the container's (cgroup) limit, the
// garbage collector's target, and the process' and Go runtime's metrics
// under the names Prometheus' client libraries give them.
package process
