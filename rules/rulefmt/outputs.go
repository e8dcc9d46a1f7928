package rulefmt

// OutputChecks are the checks of settings that only an output understands
// (an Alertmanager's API path, the grammar of writeback.rules). The file
// format imports no output: the daemon hands in the outputs' own checks
// (cmd/inferwatch), and Parse reports what they return at the value each
// is about, with every other problem of the file. A nil check accepts
// everything.
type OutputChecks struct {
	// AlertmanagerURL checks one entry of alertmanager.urls, and
	// AlertmanagerURLs the entries that passed it, together (one given
	// twice); the list's error is reported when it holds two or more.
	AlertmanagerURL  func(url string) error
	AlertmanagerURLs func(urls []string) error
	// WritebackURL checks writeback.url, and WritebackRules the entries
	// of writeback.rules, each on its own.
	WritebackURL   func(url string) error
	WritebackRules func(selectors []string) error
	// WritebackSelects reports whether an entry of writeback.rules selects
	// the rule of that group. An entry that selects no rule of the file is
	// an error: most likely a typo, which would write nothing.
	WritebackSelects func(selector, group, rule string) bool
}

// check runs an output check that may be nil.
func check[T any](f func(T) error, v T) error {
	if f == nil {
		return nil
	}
	return f(v)
}

// A Loader reads and checks configuration files, the output sections
// with Outputs' checks. The zero Loader, which Load and Parse use, checks
// the file format alone.
type Loader struct {
	Outputs OutputChecks
}
