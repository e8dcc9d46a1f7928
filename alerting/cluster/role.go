package cluster

import (
	"strings"

	"github.com/inferwatch/inferwatch/internal/metricname"
)

// A role is work that one member of the set does for all of them (the
// incidents, the scheduled reports). It is leased as a group is: a key in
// the bucket, owned by the live member that weighs most for the role's
// name, renewed at each heartbeat, taken over once its holder has stopped
// renewing it for the TTL. A member holds the roles of Options.Roles.

// rolePrefix is the key prefix of the roles' leases in the bucket.
const rolePrefix = "role."

// RoleKey is the bucket key of a role's lease; role is made of letters,
// digits, '-' and '_'.
func RoleKey(role string) string { return rolePrefix + role }

func isRoleKey(key string) bool { return strings.HasPrefix(key, rolePrefix) }

// validRole reports whether role may name a role.
func validRole(role string) bool {
	return role != "" && !strings.ContainsFunc(role, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
}

// Holds says whether the member holds role now: it holds the role's
// lease, renewed recently enough. term identifies this holding (a new
// term is a gain: what the member kept of the role's state may be stale
// and is read again).
func (m *Member) Holds(role string) (term uint64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.leases[RoleKey(role)]
	if st == nil || !st.Held || !Valid(st.renewed, m.o.Now(), m.renewDeadline) {
		return 0, false
	}
	return st.term, true
}

// registerRoles makes the gauge inferwatch_cluster_role_held of each role:
// 1 while this member holds it.
func (m *Member) registerRoles() {
	for _, r := range m.o.Roles {
		m.o.Metrics.GetOrCreateGauge(metricname.Name("inferwatch_cluster_role_held", "role", r), func() float64 {
			if _, ok := m.Holds(r); ok {
				return 1
			}
			return 0
		})
	}
}

// leaseWhat names a lease in logs: the "group lease" of a group, the
// "role" of a role, with the key of the attribute that names it.
func leaseWhat(key string) (what, attr string) {
	if isRoleKey(key) {
		return "role", "role"
	}
	return "group lease", "group"
}
