//go:build race

package rules

// raceEnabled: the race detector drops a random part of what is put in a
// sync.Pool, so what a measurement of the heap finds moves under it.
const raceEnabled = true
