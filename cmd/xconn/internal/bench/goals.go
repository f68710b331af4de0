package bench

import "fmt"

// goalCheck is one goal of a row that compares it with another row of the
// same run, evaluated by checkGoals once every row is measured.
type goalCheck struct {
	// against is the row compared with.
	against string
	// kind is what is compared: the rate ratio (>= factor), the p99
	// (<= factor × the other's p99) or the p50 (<= factor × the other's).
	kind   goalKind
	factor float64
}

type goalKind int

const (
	goalRate goalKind = iota + 1
	goalP99
	goalP50
)

// checkGoals adds to every row with goal checks one "goal" figure per
// check: the measured value, the bound and whether it is met (or why it
// cannot be told: the other row is missing or skipped).
func checkGoals(e *env) {
	for i := range e.results {
		r := &e.results[i]
		if r.Error != "" {
			continue
		}
		for _, c := range r.checks {
			r.Extra = append(r.Extra, c.eval(r, e))
		}
	}
}

func (c goalCheck) eval(r *Result, e *env) Metric {
	b, ok := e.find(c.against)
	if !ok || b.Error != "" || b.Skipped != "" {
		return Metric{Name: "goal", Text: fmt.Sprintf("vs %s: not checked (that row was not measured)", c.against)}
	}
	var v, bound float64
	var what string
	met := false
	switch c.kind {
	case goalRate:
		v, bound, what = r.Rate/b.Rate, c.factor, "rate ratio"
		met = v >= bound
		return Metric{Name: "goal", Value: round2(v), Text: fmt.Sprintf("%s %.2f vs %s (>= %.2g): %s", what, v, c.against, bound, metStr(met))}
	case goalP99:
		v, bound, what = ms(r.P99), c.factor*ms(b.P99), "p99"
	default:
		v, bound, what = ms(r.P50), c.factor*ms(b.P50), "p50"
	}
	met = v <= bound
	return Metric{Name: "goal", Value: round2(v), Text: fmt.Sprintf("%s %.3g ms (<= %.2g x %s's = %.3g ms): %s", what, v, c.factor, c.against, bound, metStr(met))}
}

func metStr(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}
