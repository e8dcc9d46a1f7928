package nab_test

import (
	"fmt"

	"github.com/inferwatch/inferwatch/analysis/nab"
)

// A 100-row file (15 rows of probation) with two labelled windows: the
// detector finds the first a quarter of the way in, raises one false alarm
// after it, and misses the second.
func ExampleFile_Score() {
	f, err := nab.NewFile("example", 100, []nab.Window{{Start: 40, End: 59}, {Start: 80, End: 89}})
	if err != nil {
		panic(err)
	}
	detected := make([]bool, 100)
	detected[45] = true // TP
	detected[70] = true // FP, 11 rows after the first window
	for _, p := range nab.Profiles() {
		r, _ := f.Score(p, detected)
		fmt.Printf("%-18s raw %6.3f normalised %5.1f TP %d FP %d FN %d\n", p.Name, r.Score, r.Normalized(p), r.TP, r.FP, r.FN)
	}
	// Output:
	// standard           raw -0.131 normalised  46.7 TP 1 FP 1 FN 1
	// reward_low_FP_rate raw -0.230 normalised  44.3 TP 1 FP 1 FN 1
	// reward_low_FN_rate raw -1.131 normalised  47.8 TP 1 FP 1 FN 1
}
