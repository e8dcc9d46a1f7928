// Package docs is inferwatch's manual: README.md at the root of the
// repository links to one page per reader's question beside this file, and
// docs/schemas holds the JSON Schemas of the events.
//
// The package has no code of its own. Its test keeps the manual honest:
// every relative link resolves to a file of the repository and every
// #anchor to a heading of its page; every inferwatch command shown in a
// code block or a code span names a command the binary has, with flags
// that command defines; and every complete configuration shown passes
// inferwatch check.
package docs
