package ingest

import "testing"

func TestLabelsString(t *testing.T) {
	f := func(ls Labels, want string) {
		t.Helper()
		if got := ls.String(); got != want {
			t.Errorf("String() = %s, want %s", got, want)
		}
		if got := string(ls.AppendString([]byte("x "))); got != "x "+want {
			t.Errorf("AppendString appended %s, want x %s", got, want)
		}
	}
	f(Labels{{"__name__", "vllm:num_requests_running"}, {"model_name", "m1"}, {"pod", "p0"}}, `vllm:num_requests_running{model_name="m1",pod="p0"}`)
	f(Labels{{"a", `q"\` + "\n"}, {"b", ""}}, `{a="q\"\\\n",b=""}`)
	f(Labels{{"__name__", "up"}}, `up{}`)
	f(nil, `{}`)
}
