package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/cluster"
)

func startWithRoles(t *testing.T, kv jetstream.KeyValue, name string, roles []string) *running {
	t.Helper()
	return startMember(t, cluster.Options{Bucket: kv, Info: cluster.Info{Name: name}, Groups: []string{"g"}, Roles: roles,
		TTL: testTTL, Heartbeat: testHeartbeat})
}

// holders returns the members that hold role now.
func holders(ms []*running, role string) []string {
	var out []string
	for _, m := range ms {
		if _, ok := m.Holds(role); ok {
			out = append(out, m.Name())
		}
	}
	return out
}

// waitHolder polls until exactly one of ms holds role and returns it.
func waitHolder(t *testing.T, ms []*running, role string) *running {
	t.Helper()
	deadline := time.Now().Add(10 * testTTL)
	for time.Now().Before(deadline) {
		if h := holders(ms, role); len(h) == 1 {
			for _, m := range ms {
				if m.Name() == h[0] {
					return m
				}
			}
		}
		time.Sleep(testHeartbeat / 3)
	}
	t.Fatalf("role %s held by %v, want one member", role, holders(ms, role))
	return nil
}

// A role is held by one member of three, goes to another when its holder
// stops (killed, without leaving), never by two at once,
// and is not counted among the groups owned.
func TestRoleHeldByOneMemberAndTakenOver(t *testing.T) {
	kv := bucket(t)
	ms := []*running{startWithRoles(t, kv, "a", []string{"incidents"}), startWithRoles(t, kv, "b", []string{"incidents"}),
		startWithRoles(t, kv, "c", []string{"incidents"})}
	for range 10 {
		if got := holders(ms, "incidents"); len(got) > 1 {
			t.Fatalf("role held by %v at once", got)
		}
		time.Sleep(testHeartbeat / 2)
	}
	h := waitHolder(t, ms, "incidents")
	var rest []*running
	for _, m := range ms {
		if m != h {
			rest = append(rest, m)
		}
	}
	h.stop()
	if _, ok := h.Holds("incidents"); ok {
		time.Sleep(testTTL) // its renewal deadline passes
		if _, ok := h.Holds("incidents"); ok {
			t.Fatalf("%s still holds the role a TTL after it stopped renewing it", h.Name())
		}
	}
	next := waitHolder(t, rest, "incidents")
	if next2, ok := next.Holds("incidents"); !ok || next2 == 0 {
		t.Fatalf("%s holds the role with term %d", next.Name(), next2)
	}
	v, err := cluster.Read(context.Background(), kv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Roles) != 1 || v.Roles[0].Group != "incidents" || v.Roles[0].Owner != next.Name() {
		t.Errorf("the bucket's roles are %+v, want incidents held by %s", v.Roles, next.Name())
	}
	for _, l := range v.Leases {
		if l.Group == "incidents" {
			t.Errorf("the role is listed among the group leases: %+v", v.Leases)
		}
	}
}

// A role name that could not be a key is refused.
func TestRoleNameChecked(t *testing.T) {
	kv := bucket(t)
	if _, err := cluster.New(cluster.Options{Bucket: kv, Info: cluster.Info{Name: "a"}, Roles: []string{"a.b"}}); err == nil {
		t.Fatal("role a.b accepted")
	}
}
