package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest"
)

// generator makes the series of a large fleet from the generated one of
// package fleet (seven pods of three models, 399 vLLM and DCGM series):
// cluster r is a copy of it with labels of its own (a cluster label, and
// pods, instances and hosts named after the cluster) and its samples taken
// offset[r] steps earlier in the generated week, so that the clusters are
// at different times of day and no two series are alike.
type generator struct {
	times  []int64 // unix ms of the base fleet's samples, shared
	stepMs int64
	base   []ingest.Series
	labels [][]ingest.Labels // by cluster, then base series
	offset []int             // by cluster, in steps
	n      int               // series in all
}

// clusterStride is the offset between consecutive clusters, in steps.
const clusterStride = 6007 // steps, about 25 hours at 15 s: a different hour each cluster

// newGenerator prepares n series whose samples cover [first, last] (unix
// ms): the history to import, then the samples written while the bench
// runs.
func newGenerator(n int, seed int64, step time.Duration, first, last time.Time, sh shape) (*generator, error) {
	span := last.Sub(first)
	dur := 7 * 24 * time.Hour
	if span > dur-24*time.Hour {
		return nil, fmt.Errorf("the bench spans %v of samples; the generated fleet has %v", span, dur)
	}
	f, err := fleet.New(fleet.Options{Seed: seed, End: last, Duration: dur, Step: step})
	if err != nil {
		return nil, err
	}
	g := &generator{stepMs: step.Milliseconds(), base: f.Series(), n: n}
	g.times = g.base[0].Timestamps
	if g.times[0] > first.UnixMilli() {
		return nil, fmt.Errorf("the generated fleet starts at %v, after %v", time.UnixMilli(g.times[0]).UTC(), first.UTC())
	}
	// A cluster reads the steps [firstIdx-offset, lastIdx-offset] of the
	// base series: the offset is at most firstIdx.
	firstIdx := g.index(first.UnixMilli())
	per := len(g.base)
	for r := 0; r*per < n; r++ {
		g.offset = append(g.offset, (r*clusterStride)%(firstIdx+1))
		cl := make([]ingest.Labels, 0, per)
		for k, s := range g.base[:min(per, n-r*per)] {
			if sh == shapeInstances {
				cl = append(cl, instanceLabels(r*per+k))
			} else {
				cl = append(cl, clusterLabels(s.Labels, r))
			}
		}
		g.labels = append(g.labels, cl)
	}
	return g, nil
}

// index is the position in times of the sample at or before t.
func (g *generator) index(t int64) int {
	i := int((t - g.times[0]) / g.stepMs)
	return max(0, min(i, len(g.times)-1))
}

// shape is how the bench's series are labelled.
type shape string

const (
	// shapeFleet: copies of the generated fleet, vLLM and DCGM metrics of
	// pods, models and GPUs, one cluster label a copy.
	shapeFleet shape = "fleet"
	// shapeInstances: one metric whose series differ only in instance,
	// one value a series, as a store holding a large fleet scraped by
	// address is asked for (the values are the generated fleet's).
	shapeInstances shape = "instances"
)

// selector selects every series of the shape.
func (sh shape) selector() string {
	if sh == shapeInstances {
		return `vllm:kv_cache_usage_perc{namespace="perf"}`
	}
	return `{namespace="inference"}`
}

// instanceLabels are the labels of series i of shapeInstances.
func instanceLabels(i int) ingest.Labels {
	return ingest.Labels{{Name: "__name__", Value: "vllm:kv_cache_usage_perc"},
		{Name: "instance", Value: fmt.Sprintf("10.%d.%d.%d:8000", 64+i>>16, i>>8&255, i&255)},
		{Name: "namespace", Value: "perf"}}
}

// clusterLabels are the labels of a base series in cluster r.
func clusterLabels(ls ingest.Labels, r int) ingest.Labels {
	c := fmt.Sprintf("c%03d", r)
	out := make(ingest.Labels, 0, len(ls)+1)
	for _, l := range ls {
		switch l.Name {
		case "pod":
			l.Value = c + "-" + l.Value
		case "Hostname":
			l.Value = c + "-" + l.Value
		case "instance":
			// 10.42.<node>.<n>:8000 and 10.0.1.<n>:9400: the second and
			// third octets become the cluster's.
			if host, port, ok := strings.Cut(l.Value, ":"); ok {
				oct := strings.Split(host, ".")
				if len(oct) == 4 {
					second := 64 + r>>8
					if port == "9400" {
						second += 64
					}
					l.Value = "10." + strconv.Itoa(second) + "." + strconv.Itoa(r&255) + "." + oct[2] + oct[3] + ":" + port
				}
			}
		}
		out = append(out, l)
	}
	out = append(out, ingest.Label{Name: "cluster", Value: c})
	out.Sort()
	return out
}

// writeRange writes the samples of every series with timestamps in
// [from, to] (unix ms) as /api/v1/import JSON lines, clusters [c0, c1)
// only, and returns how many samples it wrote.
func (g *generator) writeRange(w io.Writer, from, to int64, c0, c1 int) (int, error) {
	if to < from {
		return 0, nil
	}
	i0, i1 := g.index(from), g.index(to)
	if g.times[i0] < from {
		i0++
	}
	if i1 < i0 {
		return 0, nil
	}
	if to > g.times[len(g.times)-1] {
		return 0, fmt.Errorf("samples up to %v asked; the generated fleet ends at %v",
			time.UnixMilli(to).UTC(), time.UnixMilli(g.times[len(g.times)-1]).UTC())
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	samples := 0
	for r := c0; r < min(c1, len(g.labels)); r++ {
		off := g.offset[r]
		for k, ls := range g.labels[r] {
			s := ingest.Series{Labels: ls, Timestamps: g.times[i0 : i1+1], Values: g.base[k].Values[i0-off : i1+1-off]}
			if err := ingest.WriteImportJSONL(bw, s); err != nil {
				return samples, err
			}
			samples += len(s.Values)
		}
	}
	return samples, bw.Flush()
}

// clusters is how many clusters the series make.
func (g *generator) clusters() int { return len(g.labels) }
