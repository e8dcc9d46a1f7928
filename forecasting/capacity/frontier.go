package capacity

// Point is what a policy paid and how often it was short: its
// replica-minutes and under-provisioned minutes.
type Point struct {
	ReplicaMinutes, UnderMinutes float64
}

// Frontier sets forecast policies against reactive ones at each other's
// figures: the forecast policies within the first reactive policy's
// replica-minutes, and the reactive policies within the first forecast
// policy's under-provisioned minutes and within its replica-minutes. Each
// field is an index into the points compared, -1 for none.
type Frontier struct {
	// ForecastWithin is the forecast policy short the fewest minutes among
	// those paying at most the first reactive policy's replica-minutes;
	// CheapestForecast, when none does, the one paying the least.
	ForecastWithin, CheapestForecast int
	// ReactiveWithin is the reactive policy paying the fewest
	// replica-minutes among those short at most as many minutes as the
	// first forecast policy; LeastShortReactive, when none is, the one
	// short the fewest minutes.
	ReactiveWithin, LeastShortReactive int
	// ReactiveAtCost is the reactive policy short the fewest minutes among
	// those paying at most the first forecast policy's replica-minutes
	// (-1: every one pays more).
	ReactiveAtCost int
}

// Compare is the frontier of the forecast and reactive policies' points
// (each list holding at least one). Of two points equal in what a pick
// looks at first, the one less in the other figure is kept, and of points
// equal in both the earlier.
func Compare(forecast, reactive []Point) Frontier {
	cost, short := Point.cost, Point.short
	all := func(Point) bool { return true }
	fr := Frontier{CheapestForecast: -1, LeastShortReactive: -1}
	r0, f0 := reactive[0], forecast[0]
	if fr.ForecastWithin = least(forecast, func(p Point) bool { return p.ReplicaMinutes <= r0.ReplicaMinutes }, short, cost); fr.ForecastWithin < 0 {
		fr.CheapestForecast = least(forecast, all, cost, short)
	}
	if fr.ReactiveWithin = least(reactive, func(p Point) bool { return p.UnderMinutes <= f0.UnderMinutes }, cost, short); fr.ReactiveWithin < 0 {
		fr.LeastShortReactive = least(reactive, all, short, cost)
	}
	fr.ReactiveAtCost = least(reactive, func(p Point) bool { return p.ReplicaMinutes <= f0.ReplicaMinutes }, short, cost)
	return fr
}

// AtCost picks among points the one short the fewest minutes among those
// paying at most cost replica-minutes (the cheaper of equals), and says
// so; when none does, the one paying the least (the earliest of equals).
// It returns -1 for no points.
func AtCost(points []Point, cost float64) (i int, within bool) {
	if i = least(points, func(p Point) bool { return p.ReplicaMinutes <= cost }, Point.short, Point.cost); i >= 0 {
		return i, true
	}
	return least(points, func(Point) bool { return true }, Point.cost, func(Point) float64 { return 0 }), false
}

func (p Point) cost() float64  { return p.ReplicaMinutes }
func (p Point) short() float64 { return p.UnderMinutes }

// least is the index of the point least in first among those that
// qualify, the least in second of equals, the earliest of full ties; -1
// when none qualifies.
func least(points []Point, qualifies func(Point) bool, first, second func(Point) float64) int {
	best := -1
	for i, p := range points {
		if !qualifies(p) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := points[best]
		if first(p) < first(b) || (first(p) == first(b) && second(p) < second(b)) {
			best = i
		}
	}
	return best
}
