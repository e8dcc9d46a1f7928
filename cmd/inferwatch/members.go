package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/keda"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/promexport"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// memberName is this process' name in the set: the host and a hash of the
// outbox directory, which one process at a time holds, so that a replica
// restarted on the same host and disk takes its leases back at once; a
// random one without an outbox.
func memberName(outboxDir string) string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	var id []byte
	if outboxDir != "" {
		h := sha256.Sum256([]byte(host + "\x00" + outboxDir))
		id = h[:4]
	} else {
		id = make([]byte, 4)
		rand.Read(id)
	}
	if host == "" {
		host = "inferwatch"
	}
	return host + "-" + hex.EncodeToString(id)
}

// joinSet makes this process a member of the set of its configuration:
// with an external NATS it leases the groups it evaluates; with the
// embedded server it only announces itself, so that a second process
// pointed at that server is refused. It retries what can succeed on retry
// until wait has passed. stop ends the heartbeats and releases the leases;
// call it once the evaluations have finished.
func joinSet(ctx context.Context, cfg *rulefmt.Config, js *natsjs.JetStream, outboxDir string, groups []*rules.Group,
	wait time.Duration, logger *slog.Logger, set *metrics.Set) (m *cluster.Member, stop func(), err error) {
	embedded := cfg.NATS.URL == ""
	o := cluster.Options{
		Info: cluster.Info{Name: memberName(outboxDir), PID: os.Getpid(), Started: time.Now().UTC(), Embedded: embedded},
		TTL:  cfg.NATS.LeaseTTL, Heartbeat: cfg.NATS.Heartbeat, Logger: logger, Metrics: set,
	}
	o.Info.Host, _ = os.Hostname()
	if !embedded {
		o.Groups = groupNames(groups)
	}
	deadline := time.Now().Add(wait)
	for attempt := 0; ; attempt++ {
		var bctx context.Context
		var cancel context.CancelFunc
		bctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		o.Bucket, err = js.MembersBucket(bctx, 4*o.TTL)
		if err == nil {
			if m, err = cluster.New(o); err != nil {
				cancel()
				return nil, nil, err
			}
			err = m.Join(bctx)
		}
		cancel()
		if err == nil || errors.Is(err, cluster.ErrEmbedded) || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		logger.Warn("joining the set of members failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("joining the set of members in bucket %s: %w", natsjs.DefaultMembersBucket(cfg.NATS.Stream), err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(rctx)
	}()
	var once sync.Once
	return m, func() {
		once.Do(func() {
			cancel()
			<-done
			lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer lcancel()
			m.Leave(lctx)
		})
	}, nil
}

func groupNames(groups []*rules.Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.Name()
	}
	return out
}

// handover moves a group's alerts in and out of this process as its lease
// comes and goes (rules.Handover).
type handover struct {
	life     *alerting.Lifecycle
	fwd      *alertmanager.Forwarder // nil without Alertmanager
	exported *promexport.Exporter    // nil without the exported metrics
	log      *slog.Logger
}

func (h *handover) Gained(ctx context.Context, group string) error {
	n, err := h.life.RestoreGroup(ctx, group)
	if err != nil {
		return err
	}
	if h.fwd != nil {
		var firing []alerting.AlertData
		for _, d := range h.life.Firing() {
			if d.Group == group {
				firing = append(firing, d)
			}
		}
		h.fwd.Seed(firing)
	}
	h.log.Info("the group's alert states restored", "group", group, "alerts", n)
	return nil
}

func (h *handover) Lost(group string) {
	h.life.ForgetGroup(group)
	if h.fwd != nil {
		h.fwd.Forget(group)
	}
	if h.exported != nil {
		h.exported.Forget(group)
	}
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
	return tw.Flush()
}
