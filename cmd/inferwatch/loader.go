package main

import (
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/writeback"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// loader reads configuration files as the daemon runs them: the file
// format, and the settings only an output understands checked by that
// output (an Alertmanager URL's API path, the grammar of writeback.rules).
// check, run and tail all read through it.
var loader = rulefmt.Loader{Outputs: rulefmt.OutputChecks{
	AlertmanagerURL:  alertmanager.ValidateURL,
	AlertmanagerURLs: alertmanager.ValidateURLs,
	WritebackURL:     writeback.ValidateURL,
	WritebackRules:   writeback.ValidateRules,
	WritebackSelects: writeback.MatchRule,
}}
