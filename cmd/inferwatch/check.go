package main

import (
	"fmt"
	"io"

	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

const checkHelp = `Usage: inferwatch check [--config] FILE [FILE ...]

Checks configuration files completely, as the daemon loads them: the YAML
and every field, the queries (MetricsQL), the detectors and their
parameters, the forecast models. Every problem is reported at once, one per
line, as file:line:column: group "g": rule "r": what is wrong.

Exit status: 0 when every file is valid, 1 when one is not, 2 on a usage
error.

Flags:
`

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newOfflineFlagSet("inferwatch check", checkHelp)
	configFile := fs.String("config", "", "configuration `FILE` to check (or give the files as arguments)")
	if code, done := parseFlags(fs, args, stdout, stderr, true); done {
		return code
	}
	files := fs.Args()
	if *configFile != "" {
		files = append([]string{*configFile}, files...)
	}
	if len(files) == 0 {
		return usageError(stderr, fs, "a configuration FILE is required")
	}
	code := 0
	for _, file := range files {
		cfg, _, err := loadConfig(file)
		if err != nil {
			io.WriteString(stderr, err.Error()+"\n")
			code = 1
			continue
		}
		n := 0
		for _, g := range cfg.Groups {
			n += len(g.Rules)
		}
		fmt.Fprintf(stdout, "%s: valid: %d groups, %d rules\n", file, len(cfg.Groups), n)
	}
	return code
}

// loadConfig reads and checks a configuration completely and builds its
// rules: the file itself and the outputs' sections (loader) and what only
// evaluation can check (detectors, forecast models: rules.Build),
// reporting every problem. check and run both call it; the daemon
// evaluates what it returns.
func loadConfig(file string) (*rulefmt.Config, []*rules.Group, error) {
	cfg, err := loader.Load(file)
	if err != nil {
		return nil, nil, err
	}
	groups, err := rules.Build(cfg.Groups)
	if err != nil {
		return nil, nil, err
	}
	return cfg, groups, nil
}
