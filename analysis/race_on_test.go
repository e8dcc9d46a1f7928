//go:build race

package analysis

// raceEnabled: the race detector drops a random part of what is put in a
// sync.Pool, so a detector that reuses pooled scratch allocates now and
// then under it.
const raceEnabled = true
