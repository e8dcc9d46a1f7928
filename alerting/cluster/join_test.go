package cluster_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/cluster"
)

// TestMemberName: the host with what is not a letter, digit, '-' or '_'
// replaced and cut to 40 bytes, then a hash of host and directory, or a
// random one without a directory.
func TestMemberName(t *testing.T) {
	a := cluster.MemberName("node-1.example.com", "/var/lib/outbox")
	if a != cluster.MemberName("node-1.example.com", "/var/lib/outbox") {
		t.Errorf("the same host and directory give %s, then another name", a)
	}
	if !regexp.MustCompile(`^node-1-example-com-[0-9a-f]{8}$`).MatchString(a) {
		t.Errorf("MemberName = %q, want node-1-example-com- and 8 hex digits", a)
	}
	if b := cluster.MemberName("node-1.example.com", "/other"); b == a {
		t.Errorf("another directory gives the same name %s", b)
	}
	if r1, r2 := cluster.MemberName("h", ""), cluster.MemberName("h", ""); r1 == r2 {
		t.Errorf("without a directory two names are both %s, want random ones", r1)
	}
	if n := cluster.MemberName(strings.Repeat("x", 60), "d"); len(n) != 40+1+8 {
		t.Errorf("a 60-byte host gives %q, want the host cut to 40 bytes", n)
	}
	if n := cluster.MemberName("", "d"); !strings.HasPrefix(n, "inferwatch-") {
		t.Errorf("no host gives %q, want inferwatch-…", n)
	}
}

// TestStartJoinsAndLeaves: Start retries a bucket that fails to open,
// joins, runs the member until stop, and stop leaves the set once.
func TestStartJoinsAndLeaves(t *testing.T) {
	kv := bucket(t)
	attempts := 0
	m, stop, err := cluster.Start(context.Background(), cluster.StartOptions{
		Member: cluster.Options{Info: cluster.Info{Name: "a"}, Groups: []string{"g"}, TTL: testTTL, Heartbeat: testHeartbeat},
		OpenBucket: func(context.Context) (cluster.Bucket, error) {
			if attempts++; attempts == 1 {
				return nil, errors.New("no JetStream yet")
			}
			return kv, nil
		},
		BucketName: "TEST_MEMBERS", Wait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || m.Joined() != nil {
		t.Fatalf("%d attempts, joined: %v; want 2 and joined", attempts, m.Joined())
	}
	v, err := cluster.Read(context.Background(), kv, time.Now())
	if err != nil || len(v.Members) != 1 || v.Members[0].Name != "a" {
		t.Fatalf("the bucket holds %+v (%v), want member a", v, err)
	}
	stop()
	stop()
	if v, err := cluster.Read(context.Background(), kv, time.Now()); err != nil || len(v.Members) != 0 || len(v.Leases) != 0 {
		t.Fatalf("after stop the bucket holds %+v (%v), want nothing", v, err)
	}
}

// TestStartGivesUp: past Wait, the error names the bucket and says why.
func TestStartGivesUp(t *testing.T) {
	_, _, err := cluster.Start(context.Background(), cluster.StartOptions{
		Member:     cluster.Options{Info: cluster.Info{Name: "a"}},
		OpenBucket: func(context.Context) (cluster.Bucket, error) { return nil, errors.New("no JetStream") },
		BucketName: "TEST_MEMBERS",
	})
	if err == nil || err.Error() != "joining the set of members in bucket TEST_MEMBERS: no JetStream" {
		t.Fatalf("err %v", err)
	}
}
