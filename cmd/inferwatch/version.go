package main

import "runtime/debug"

// version and commit are stamped by make build, with -ldflags
// "-X main.version=… -X main.commit=…" from git describe and git
// rev-parse. Left empty (go build, go install), inferwatch version reads
// what the go command recorded in the binary instead.
var version, commit string

// versionText is what inferwatch version prints after the name: the
// version, then the commit when it is known, with "modified" when the
// build information says the tree had uncommitted changes (a stamped
// version says so itself, with git describe's -dirty). The version falls
// back to the module's (v1.2.3 from go install, a pseudo-version from go
// build in a checkout, "(devel)" without version control), the commit to
// vcs.revision.
func versionText(version, commit string, info *debug.BuildInfo) string {
	modified := false
	if info != nil {
		if version == "" {
			version = info.Main.Version
		}
		if commit == "" {
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
		}
	}
	if version == "" {
		version = "(unknown)"
	}
	switch {
	case commit == "":
		return version
	case modified:
		return version + " (commit " + commit + ", modified)"
	}
	return version + " (commit " + commit + ")"
}
