package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// backfillFleet starts a VictoriaMetrics for the test and imports a week of
// the generated fleet (seed 1, 30 s steps) ending at end.
func backfillFleet(t *testing.T, end time.Time) (*localvm.VM, *fleet.Fleet) {
	t.Helper()
	vm := localvm.Run(t)
	f, err := fleet.New(fleet.Options{Seed: 1, End: end, Duration: 7 * 24 * time.Hour, Step: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := f.WriteImportJSONL(pw)
		pw.CloseWithError(err)
	}()
	if err := vm.Import(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	return vm, f
}
