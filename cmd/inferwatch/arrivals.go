package main

import (
	"errors"
	"fmt"

	"github.com/inferwatch/inferwatch/ingest"
)

// timeUnits are the values of --time-unit.
var timeUnits = map[string]ingest.TimeUnit{"auto": ingest.UnitAuto, "s": ingest.UnitSeconds, "ms": ingest.UnitMilliseconds}

// readArrivals reads the log of requests --arrivals names
// (ingest.ReadArrivals); an error names the flag, and the flag that reads
// the log otherwise where one would.
func readArrivals(path string, o ingest.ArrivalsOptions) (*ingest.EvenSeries, error) {
	s, err := ingest.ReadArrivals(path, o)
	if err == nil {
		return s, nil
	}
	var te *ingest.TimeError
	switch {
	case errors.As(err, &te) && te.Unit == ingest.UnitAuto:
		err = fmt.Errorf("%w; numbers in other units need --time-unit s or ms", err)
	case errors.Is(err, ingest.ErrNoTimeField) && o.TimeField == "":
		err = fmt.Errorf("%w: name the time's field with --time-field", err)
	}
	return nil, fmt.Errorf("--arrivals %w", err)
}

// readGenTD26 reads the qps.csv --gentd26 names (ingest.ReadGenTD26) as
// the rate of --request-type, all for every type; an error names the
// flag.
func readGenTD26(path, requestType string) (*ingest.EvenSeries, error) {
	if requestType == "all" {
		requestType = ""
	}
	s, err := ingest.ReadGenTD26(path, requestType)
	if err != nil {
		return nil, fmt.Errorf("--gentd26 %w", err)
	}
	return s, nil
}
