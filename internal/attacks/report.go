package attacks

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Escapes returns the results that are not blocked or contained: escapes
// first, then the attacks the suite could not judge.
func Escapes(results []Result) []Result {
	var out []Result
	for _, v := range []Verdict{Escaped, Failed} {
		for _, r := range results {
			if r.Verdict == v {
				out = append(out, r)
			}
		}
	}
	return out
}

// WriteTable writes the results as a Markdown table, one row per attack
// (grouped by category) and one column per backend, each cell the verdict
// and how the attack was stopped (cut to width runes; 0 = uncut).
func WriteTable(w io.Writer, results []Result, width int) {
	var backends []string
	type row struct{ category, attack string }
	var rows []row
	cells := map[row]map[string]Result{}
	for _, r := range results {
		if !slices.Contains(backends, r.Backend) {
			backends = append(backends, r.Backend)
		}
		k := row{r.Category, r.Attack}
		if cells[k] == nil {
			cells[k] = map[string]Result{}
			rows = append(rows, k)
		}
		cells[k][r.Backend] = r
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if c := slices.Index(Categories, a.category) - slices.Index(Categories, b.category); c != 0 {
			return c
		}
		return strings.Compare(a.attack, b.attack)
	})
	fmt.Fprintf(w, "| category | attack | %s |\n", strings.Join(backends, " | "))
	fmt.Fprintf(w, "|---|---|%s\n", strings.Repeat("---|", len(backends)))
	for _, k := range rows {
		fmt.Fprintf(w, "| %s | %s |", k.category, k.attack)
		for _, b := range backends {
			r, ok := cells[k][b]
			if !ok {
				fmt.Fprint(w, " not run |")
				continue
			}
			fmt.Fprintf(w, " %s |", cell(r, width))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, b := range backends {
		counts := map[Verdict]int{}
		for _, r := range results {
			if r.Backend == b {
				counts[r.Verdict]++
			}
		}
		fmt.Fprintf(w, "%s: %d blocked, %d contained, %d escaped, %d errors.  \n", b, counts[Blocked], counts[Contained], counts[Escaped], counts[Failed])
	}
}

func cell(r Result, width int) string {
	verdict := string(r.Verdict)
	if r.Verdict == Escaped || r.Verdict == Failed {
		verdict = "**" + strings.ToUpper(verdict) + "**"
	}
	how := Shorten(strings.NewReplacer("|", "/", "\n", " ").Replace(r.How), width)
	if how == "" {
		return verdict
	}
	return verdict + ": " + how
}

// Shorten cuts s to width runes, marking the cut (0 = uncut).
func Shorten(s string, width int) string {
	if rs := []rune(s); width > 0 && len(rs) > width {
		return string(rs[:width-1]) + "…"
	}
	return s
}
