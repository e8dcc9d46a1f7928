package keda_test

import (
	"fmt"

	"github.com/inferwatch/inferwatch/alerting/keda"
)

// A trigger or a URL can name a target by its labels in any order; the
// identity is what the scale signal's target field holds.
func ExampleParseTarget() {
	for _, s := range []string{"model=qwen2.5-32b-instruct", "pod=p1,model=qwen", `{model="qwen"}`} {
		id, err := keda.ParseTarget(s)
		fmt.Println(id, err)
	}
	// Output:
	// {model="qwen2.5-32b-instruct"} <nil>
	// {model="qwen",pod="p1"} <nil>
	// {model="qwen"} <nil>
}
