package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inferwatch check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "configuration file to check")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configFile == "" {
		fmt.Fprintln(stderr, "inferwatch check: --config FILE is required")
		return 2
	}
	cfg, err := loadConfig(*configFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	n := 0
	for _, g := range cfg.Groups {
		n += len(g.Rules)
	}
	fmt.Fprintf(stdout, "%s: valid: %d groups, %d rules\n", *configFile, len(cfg.Groups), n)
	return 0
}

// loadConfig reads and checks a configuration completely: the file itself
// (rules) and the detectors it names (analysis), reporting every problem.
func loadConfig(file string) (*rulefmt.Config, error) {
	cfg, err := rulefmt.Load(file)
	if err != nil {
		return nil, err
	}
	if err := alerting.Compile(cfg); err != nil {
		var errs rulefmt.Errors
		if errors.As(err, &errs) {
			return nil, errs
		}
		return nil, err
	}
	return cfg, nil
}
