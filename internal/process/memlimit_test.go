package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContainerMemoryLimit reads cgroup v2 and v1 limits below a root,
// takes "max" and v1's page-rounded MaxInt64 as no limit, and names the
// file it could not read.
func TestContainerMemoryLimit(t *testing.T) {
	write := func(t *testing.T, root, name, content string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v2, v1 := "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"
	for _, c := range []struct {
		name, file, content string
		want                int64
		err                 string
	}{
		{"v2 limit", v2, "1073741824\n", 1 << 30, ""},
		{"v2 none", v2, "max\n", 0, ""},
		{"v1 limit", v1, "536870912\n", 512 << 20, ""},
		{"v1 none", v1, "9223372036854771712\n", 0, ""},
		{"garbage", v2, "lots\n", 0, `memory.max: "lots" is not a number of bytes or max`},
		{"no cgroup", "", "", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.file != "" {
				write(t, root, c.file, c.content)
			}
			got, _, err := ContainerMemoryLimit(root)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

// TestPlanMemLimit: GOMEMLIMIT wins, a ratio of 0 or no container limit
// sets none, and otherwise the ratio of the limit is set.
func TestPlanMemLimit(t *testing.T) {
	for _, c := range []struct {
		env   bool
		ratio float64
		limit int64
		want  int64
		why   string
	}{
		{true, 0.9, 1 << 30, 0, "GOMEMLIMIT is set"},
		{false, 0, 1 << 30, 0, "--auto-gomemlimit.ratio is 0"},
		{false, 0.9, 0, 0, "no container memory limit"},
		{false, 0.9, 1000 << 20, 900 << 20, "0.9 of the container's limit of 1000 MiB (memory.max)"},
	} {
		p := PlanMemLimit(c.env, c.ratio, c.limit, "memory.max")
		if p.Limit != c.want || p.Reason != c.why {
			t.Errorf("PlanMemLimit(%v, %v, %d) = %d, %q; want %d, %q", c.env, c.ratio, c.limit, p.Limit, p.Reason, c.want, c.why)
		}
	}
}

// TestPlanGCPercent: GOGC wins; otherwise the flag's percent is set.
func TestPlanGCPercent(t *testing.T) {
	if p, why := PlanGCPercent(true, 50); p != 0 || why != "GOGC is set" {
		t.Errorf("with GOGC set: %d, %q; want 0, GOGC is set", p, why)
	}
	if p, why := PlanGCPercent(false, 70); p != 70 || why != "--runtime.gogc" {
		t.Errorf("without GOGC: %d, %q; want 70, --runtime.gogc", p, why)
	}
}
