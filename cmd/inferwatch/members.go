package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/incidentrole"
	"github.com/inferwatch/inferwatch/alerting/keda"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// joinSet makes this process a member of the set of its configuration:
// with an external NATS it leases the groups it evaluates; with the
// embedded server it only announces itself, so that a second process
// pointed at that server is refused. It retries what can succeed on retry
// until wait has passed. stop ends the heartbeats and releases the leases;
// call it once the evaluations have finished.
func joinSet(ctx context.Context, cfg *rulefmt.Config, js *natsjs.JetStream, outboxDir string, groups []*rules.Group,
	wait time.Duration, logger *slog.Logger, set *metrics.Set) (m *cluster.Member, stop func(), err error) {
	embedded := cfg.NATS.URL == ""
	host, _ := os.Hostname()
	o := cluster.Options{
		Info: cluster.Info{Name: cluster.MemberName(host, outboxDir), Host: host, PID: os.Getpid(), Started: time.Now().UTC(), Embedded: embedded},
		TTL:  cfg.NATS.LeaseTTL, Heartbeat: cfg.NATS.Heartbeat, Logger: logger, Metrics: set,
	}
	if !embedded {
		o.Groups = groupNames(groups)
		o.Roles = []string{incidentrole.Role}
	}
	return cluster.Start(ctx, cluster.StartOptions{Member: o, Wait: wait, BucketName: natsjs.DefaultMembersBucket(cfg.NATS.Stream),
		OpenBucket: func(ctx context.Context) (cluster.Bucket, error) { return js.MembersBucket(ctx, 4*o.TTL) }})
}

func groupNames(groups []*rules.Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.Name()
	}
	return out
}

// followScales feeds sigs the scale signals every member publishes, the
// last forget of them first, so that each member's KEDA endpoints serve
// every target, whoever owns its group. It returns a function that stops
// it and waits.
func followScales(ctx context.Context, js *natsjs.JetStream, prefix string, sigs *keda.Signals, forget time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = js.FollowEvents(ctx, []string{alerting.ScaleSubject(prefix, ">")}, time.Now().Add(-forget), func(_ string, ev alerting.Event) {
			if d, err := alerting.DecodeData(ev); err == nil {
				if sd, ok := d.(*alerting.ScaleData); ok {
					_ = sigs.Send(ctx, alerting.Batch{Group: sd.Group, Scales: []alerting.ScaleData{*sd}})
				}
			}
		})
	}()
	return func() { cancel(); <-done }
}

const membersHelp = `Usage: inferwatch members --config FILE [flags]

Prints the processes that share the configuration's groups through its
NATS (the set of replicas) and which of them owns each group's lease.

Flags:
`

func cmdMembers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f tailFlags
	fs := newOfflineFlagSet("inferwatch members", membersHelp)
	fs.StringVar(&f.configFile, "config", "", "take the nats section of this configuration `FILE`")
	fs.StringVar(&f.natsURL, "nats.url", "", "the NATS server (default: the config's)")
	fs.DurationVar(&f.connectWait, "nats.connect-timeout", 5*time.Second, "how long to wait for NATS to answer")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if f.configFile == "" {
		return usageError(stderr, fs, "--config FILE is required")
	}
	t, err := f.target()
	if err == nil {
		err = members(ctx, t, f.connectWait, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch members:", err)
		return 1
	}
	return 0
}

func members(ctx context.Context, t tailTarget, wait time.Duration, stdout io.Writer) error {
	nc, err := nats.Connect(t.url, append([]nats.Option{nats.Name("inferwatch-members"), nats.Timeout(wait)}, t.opts...)...)
	if err != nil {
		return fmt.Errorf("connecting to NATS at %s (%s): %s", t.shown, t.from, redactErr(err, t.url))
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	bucket := natsjs.DefaultMembersBucket(t.stream)
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("opening bucket %s on %s: %w (no daemon of this configuration has run on this NATS)", bucket, t.shown, err)
	}
	v, err := cluster.Read(ctx, kv, time.Now())
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tHOST\tPID\tSTARTED\tHEARTBEAT\tGROUPS")
	owned := map[string]int{}
	for _, l := range v.Leases {
		owned[l.Owner]++
	}
	for _, m := range v.Members {
		name := m.Name
		if m.Embedded {
			name += " (embedded NATS)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s ago\t%d\n", name, m.Host, m.PID, m.Started.Format(time.RFC3339),
			m.Age.Round(time.Second), owned[m.Name])
	}
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "GROUP\tOWNER\tRENEWED")
	for _, l := range v.Leases {
		fmt.Fprintf(tw, "%s\t%s\t%s ago\n", l.Group, l.Owner, l.Age.Round(time.Second))
	}
	if len(v.Roles) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintln(tw, "ROLE\tHOLDER\tRENEWED")
		for _, l := range v.Roles {
			fmt.Fprintf(tw, "%s\t%s\t%s ago\n", l.Group, l.Owner, l.Age.Round(time.Second))
		}
	}
	return tw.Flush()
}
