package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	vcs := func(main string, kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/inferwatch/inferwatch", Version: main}}
		for i := 0; i < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	for _, c := range []struct {
		name, version, commit string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"stamped", "v1.2.0-3-gabc1234-dirty", "abc1234def", vcs("(devel)", "vcs.revision", "0000", "vcs.modified", "true"),
			"v1.2.0-3-gabc1234-dirty (commit abc1234def)"},
		{"stamped in a clone without tags", "abc1234", "abc1234def", nil, "abc1234 (commit abc1234def)"},
		{"go build in a checkout", "", "", vcs("v0.0.0-20261206060000-abc1234def56+dirty", "vcs", "git", "vcs.revision", "abc1234def", "vcs.modified", "true"),
			"v0.0.0-20261206060000-abc1234def56+dirty (commit abc1234def, modified)"},
		{"go build, clean tree", "", "", vcs("(devel)", "vcs.revision", "abc1234def", "vcs.modified", "false"), "(devel) (commit abc1234def)"},
		{"go install at a tag", "", "", vcs("v1.2.0"), "v1.2.0"},
		{"no build information", "", "", nil, "(unknown)"},
	} {
		if got := versionText(c.version, c.commit, c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestVersionOfBuilds: a binary make build would make prints the version
// and commit git gives; one built by go build alone prints what the go
// command recorded in it.
func TestVersionOfBuilds(t *testing.T) {
	bin := daemonBinary(t)
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	field := func(re string) string {
		m := regexp.MustCompile(`(?m)` + re + `\t(\S*)`).FindStringSubmatch(string(info))
		if m == nil {
			return ""
		}
		return m[1]
	}
	want := field(`^\tmod\tgithub.com/inferwatch/inferwatch`)
	if rev := field(`^\tbuild\tvcs.revision=`); rev != "" {
		want += " (commit " + rev
		if field(`^\tbuild\tvcs.modified=`) == "true" {
			want += ", modified"
		}
		want += ")"
	}
	want = "inferwatch " + want + "\n"
	if got, err := exec.Command(bin, "version").Output(); err != nil || string(got) != want {
		t.Errorf("go build's binary: version %q (%v), want %q from its build information:\n%s", got, err, want, info)
	}

	// make build's command, its values from git.
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			t.Skipf("git %s: %v (not a git checkout?)", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	describe, head := git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "HEAD")
	cmd := exec.Command("make", "-s", "-n", "build")
	cmd.Dir = "../.."
	dry, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	ldflags := "-X main.version=" + describe + " -X main.commit=" + head
	if !strings.Contains(string(dry), "-ldflags '"+ldflags+"'") {
		t.Fatalf("make build runs\n%s\nwant -ldflags '%s'", dry, ldflags)
	}
	stamped := filepath.Join(t.TempDir(), "inferwatch")
	if out, err := exec.CommandContext(context.Background(), "go", "build", "-ldflags", ldflags, "-o", stamped, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want = "inferwatch " + describe + " (commit " + head + ")\n"
	if got, err := exec.Command(stamped, "version").Output(); err != nil || string(got) != want {
		t.Errorf("make build's binary: version %q (%v), want %q", got, err, want)
	}
}
