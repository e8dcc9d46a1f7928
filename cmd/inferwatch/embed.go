package main

import (
	// The image holds the binary alone: the CA roots (used when the system
	// has none) and the time zone database are built in.
	_ "time/tzdata"

	_ "golang.org/x/crypto/x509roots/fallback"
)
