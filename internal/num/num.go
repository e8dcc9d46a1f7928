// Package num holds the one test of a float the packages share.
package num

// Finite reports whether x is neither NaN nor an infinity.
func Finite(x float64) bool { return x-x == 0 }
