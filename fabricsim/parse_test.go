package fabricsim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
)

func TestParseFiles(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		proto Protocol
		want  []File
		err   string // the whole error text, empty if none
	}{
		{"default boot", "nbp=70KB:tftp,kernel=10MB,initrd=40MB", HTTP,
			[]File{{"nbp", 70e3, TFTP}, {"kernel", 10e6, HTTP}, {"initrd", 40e6, HTTP}}, ""},
		{"space before = stays in the name", " k = 1.5MiB:none", TFTP, []File{{"k ", 1.5 * 1024 * 1024, Uncapped}}, ""},
		{"spaces around items", " k=1.5MiB:none , i=2GB ", TFTP,
			[]File{{"k", 1.5 * 1024 * 1024, Uncapped}, {"i", 2e9, TFTP}}, ""},
		{"one file", "image=50MB", Uncapped, []File{{"image", 50e6, Uncapped}}, ""},
		{"no equals", "kernel", TFTP, nil, `"kernel": want NAME=SIZE[:PROTOCOL], e.g. kernel=10MB:http`},
		{"empty name", "=1MB", TFTP, nil, `"=1MB": want NAME=SIZE[:PROTOCOL], e.g. kernel=10MB:http`},
		{"empty spec", "", TFTP, nil, `"": want NAME=SIZE[:PROTOCOL], e.g. kernel=10MB:http`},
		{"empty item", "a=1MB,", TFTP, nil, `"": want NAME=SIZE[:PROTOCOL], e.g. kernel=10MB:http`},
		{"no unit", "kernel=10", TFTP, nil, `kernel: size "10": want a number and a unit (B, KB, MB, GB, KiB, MiB, GiB), e.g. 50MB`},
		{"negative size", "kernel=-10MB", TFTP, nil, `kernel: size "-10MB": want a number and a unit (B, KB, MB, GB, KiB, MiB, GiB), e.g. 50MB`},
		{"zero size", "kernel=0MB", TFTP, nil, `kernel: size "0MB": must be positive`},
		{"unknown protocol", "k=1MB:nfs", TFTP, nil, `k: unknown protocol "nfs": want tftp, http or none`},
		{"empty protocol", "k=1MB:", TFTP, nil, `k: unknown protocol "": want tftp, http or none`},
		{"named twice", "a=1MB,b=1MB,a=2MB", TFTP, nil, `file "a" named twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFiles(tc.spec, tc.proto)
			if msg := errText(err); msg != tc.err {
				t.Fatalf("error %q, want %q", msg, tc.err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzParseFiles: never panics; what it accepts is a list of files a FlowConfig takes, and
// printing it back gives the same list.
func FuzzParseFiles(f *testing.F) {
	for _, s := range []string{"nbp=70KB:tftp,kernel=10MB,initrd=40MB", "image=50MB", "k=1.5MiB:http,i=2GB:none", "a=", "=1MB",
		"a=1MB:", "a=1MB,a=2MB", "a=1e3KB", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		files, err := ParseFiles(spec, TFTP)
		if err != nil {
			if files != nil || err.Error() == "" {
				t.Fatalf("%q: error %v with files %+v", spec, err, files)
			}
			return
		}
		cfg := DefaultFlowConfig(TFTP)
		cfg.Files = files
		if err := cfg.check(1); err != nil {
			t.Fatalf("%q: accepted files the simulator refuses: %v", spec, err)
		}
		var items []string
		for _, fl := range files {
			if !(fl.Bytes > 0) {
				t.Fatalf("%q: accepted empty file %+v", spec, fl)
			}
			items = append(items, fmt.Sprintf("%s=%gB:%s", fl.Name, fl.Bytes, fl.Protocol))
		}
		again, err := ParseFiles(strings.Join(items, ","), HTTP)
		if err != nil {
			// Names may hold what the printed form cannot carry back (a ':' or '=' in a name
			// only parses in the first position); those are not round-tripped.
			return
		}
		if d := cmp.Diff(files, again); d != "" {
			t.Fatalf("%q printed back as %q parses differently (-first +again):\n%s", spec, strings.Join(items, ","), d)
		}
	})
}

// miniHierarchy is the mini machine's: 2 supernodes x 4 boards x 4 nodes, node s-b-n at index
// (4s+b)*4+n.
func miniHierarchy(t testing.TB) (*topology.Graph, *topology.Hierarchy) {
	t.Helper()
	m, ok := topology.Preset("mini")
	if !ok {
		t.Fatal("no mini preset")
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g, g.Hierarchy()
}

func TestReadArrivals(t *testing.T) {
	_, h := miniHierarchy(t)
	tests := []struct {
		name, text string
		want       map[int]float64
		err        string
	}{
		{"seconds and durations", "s0-b0-n0 0\n# rack 2\ns0-b1-n2 1.5\ns1-b3-n3, 300ms\n\n",
			map[int]float64{0: 0, 6: 1.5, 31: 0.3}, ""},
		{"comma and tab, trailing comment", "s0-b0-n1,2\ns0-b0-n2\t1m # late\n", map[int]float64{1: 2, 2: 60}, ""},
		{"exponent", "s0-b0-n3 1e3\n", map[int]float64{3: 1000}, ""},
		{"largest time", "s0-b0-n3 1e9\n", map[int]float64{3: 1e9}, ""},
		{"empty", "", nil, "arr.txt: no arrivals"},
		{"only comments", "# nothing\n   \n", nil, "arr.txt: no arrivals"},
		{"three fields", "s0-b0-n0 1 2\n", nil, `arr.txt:1: want NODE SECONDS, got "s0-b0-n0 1 2"`},
		{"one field", "s0-b0-n0 0\ns0-b0-n1 # no time\n", nil, `arr.txt:2: want NODE SECONDS, got "s0-b0-n1"`},
		{"unknown node", "s0-b0-n0 0\n# c\ns0-b0-n7 1.5\n", nil, `arr.txt:3: unknown node: node name "s0-b0-n7": node 7 out of range (0..3)`},
		{"bad name", "x 1\n", nil, `arr.txt:1: unknown node: node name "x": want 3 parts like "s0-b0-n0"`},
		{"bad time", "s0-b0-n0 soon\n", nil, `arr.txt:1: time "soon": want seconds or a duration like 1.5s`},
		{"negative", "s0-b0-n0 -1\n", nil, `arr.txt:1: time "-1" must be a non-negative number of seconds`},
		{"negative duration", "s0-b0-n0 -1s\n", nil, `arr.txt:1: time "-1s" must be a non-negative number of seconds`},
		{"NaN", "s0-b0-n0 NaN\n", nil, `arr.txt:1: time "NaN" must be a non-negative number of seconds`},
		{"infinite", "s0-b0-n0 +Inf\n", nil, `arr.txt:1: time "+Inf" must be a non-negative number of seconds`},
		{"too late", "s0-b0-n0 1.1e9\n", nil, `arr.txt:1: time "1.1e9" must be a non-negative number of seconds`},
		{"twice", "s0-b0-n0 0\ns0-b0-n0 1\n", nil, `arr.txt:2: node s0-b0-n0 listed twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadArrivals(strings.NewReader(tc.text), "arr.txt", h)
			if msg := errText(err); msg != tc.err {
				t.Fatalf("error %q, want %q", msg, tc.err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("arrivals (-want +got):\n%s", d)
			}
		})
	}
}

func TestReadArrivalsReadError(t *testing.T) {
	_, h := miniHierarchy(t)
	// The first read succeeds (a node and comments), the second fails.
	r := iotest.TimeoutReader(strings.NewReader("s0-b0-n0 0\n" + strings.Repeat("#\n", 10000)))
	_, err := ReadArrivals(r, "arr.txt", h)
	if want := "arr.txt: " + iotest.ErrTimeout.Error(); errText(err) != want {
		t.Errorf("error %q, want %q", errText(err), want)
	}
}

// FuzzReadArrivals: never panics; an error names the input; what it accepts are nodes of the
// machine with times in [0, MaxArrivalSeconds], and writing them back gives the same arrivals.
func FuzzReadArrivals(f *testing.F) {
	for _, s := range []string{"s0-b0-n0 0\n# c\ns1-b3-n3, 2s\n", "s0-b0-n0 1 2", "s0-b0-n9 1", "s0-b0-n0 NaN", "s0-b0-n0 1e400",
		"s0-b0-n0 0\ns0-b0-n0 1", "\x00", "s0-b0-n1\t-0"} {
		f.Add(s)
	}
	g, h := miniHierarchy(f)
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ReadArrivals(strings.NewReader(text), "in.txt", h)
		if err != nil {
			if got != nil || !strings.HasPrefix(err.Error(), "in.txt:") {
				t.Fatalf("%q: error %q (result %v)", text, err, got)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("%q: no arrivals and no error", text)
		}
		var lines []string
		for n, s := range got {
			if n < 0 || n >= len(g.Nodes()) || !(s >= 0 && s <= MaxArrivalSeconds) || math.IsNaN(s) {
				t.Fatalf("%q: accepted node %d at %v", text, n, s)
			}
			lines = append(lines, fmt.Sprintf("%s %v", g.VertexName(g.Nodes()[n]), s))
		}
		slices.Sort(lines)
		again, err := ReadArrivals(strings.NewReader(strings.Join(lines, "\n")), "again", h)
		if err != nil {
			t.Fatalf("%q written back does not parse: %v", text, err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("%q written back reads differently (-first +again):\n%s", text, d)
		}
	})
}

func TestParseTimeStep(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"0", 0, ""}, {"auto", 0, ""}, {"10ms", 0.01, ""}, {"1m", 60, ""},
		{"-1s", 0, `"-1s" is not auto, 0 or a non-negative duration like 10ms`},
		{"x", 0, `"x" is not auto`},
	} {
		got, err := ParseTimeStep(tc.in)
		if got != tc.want || !strings.Contains(errText(err), tc.err) || (tc.err == "") != (err == nil) {
			t.Errorf("ParseTimeStep(%q) = %v, %v; want %v, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestBatchArrivals(t *testing.T) {
	g, _ := miniHierarchy(t)
	b := topology.Batch{Label: "b", Nodes: []int{0, 1}}
	for _, tc := range []struct {
		arrival string
		listed  map[int]float64
		want    []float64
		err     string
	}{
		{"all", nil, nil, ""},
		{"ramp:2", nil, []float64{0, 0.5}, ""},
		{"ramp:x", nil, nil, "want ramp:N with N nodes per second"},
		{"ramp:0", nil, nil, "rate must be a positive number"},
		{"f", map[int]float64{0: 1, 1: 2.5}, []float64{1, 2.5}, ""},
		{"f", map[int]float64{0: 1}, nil, `node s0-b0-n1 of batch "b" has no arrival time`},
		{"f", map[int]float64{0: 1, 1: 2, 5: 3}, nil, `node s0-b1-n1 is not in batch "b"`},
	} {
		got, err := BatchArrivals(tc.arrival, tc.listed, b, g)
		if !slices.Equal(got, tc.want) || !strings.Contains(errText(err), tc.err) || (tc.err == "") != (err == nil) {
			t.Errorf("BatchArrivals(%q, %v) = %v, %v; want %v, %q", tc.arrival, tc.listed, got, err, tc.want, tc.err)
		}
	}
}

func TestParseFailures(t *testing.T) {
	g, _ := miniHierarchy(t) // 4 boot servers, bs0-bs3
	for _, tc := range []struct {
		items        []string
		absent, dead []bool
		want         []ServerFailure
		err          string
		itemErr      bool
	}{
		{[]string{"bs1@12s", " 3@1.5 "}, nil, nil, []ServerFailure{{Server: 1, Seconds: 12}, {Server: 3, Seconds: 1.5}}, "", false},
		{[]string{"bs1@1m30s"}, nil, nil, []ServerFailure{{Server: 1, Seconds: 90}}, "", false},
		{[]string{"bs1"}, nil, nil, nil, `"bs1": want SERVER@TIME, e.g. bs3@12s`, true},
		{[]string{"bs9@1"}, nil, nil, nil, `"bs9@1": "bs9" is not a boot server (0-3 or bs0-bs3)`, true},
		{[]string{"bs1@x"}, nil, nil, nil, `"bs1@x": time "x": want a duration like 12s or a number of seconds`, true},
		{[]string{"bs1@-1"}, nil, nil, nil, `time "-1" must not be negative`, true},
		{[]string{"1@1", "bs1@2"}, nil, nil, nil, `"bs1@2": bs1 fails twice`, true},
		{[]string{"1@1"}, []bool{false, true}, nil, nil, "bs1 is down from the start (--failed-servers)", true},
		{[]string{"1@1"}, nil, []bool{false, true}, nil, "bs1 is down from the start (--failed-during-boot)", true},
		{[]string{"0@1", "1@1", "2@1"}, nil, []bool{false, false, false, true}, nil,
			"all 4 boot servers would be down (3 fail, 1 down from the start); at least one must stay up", false},
	} {
		got, err := ParseFailures(g, tc.items, tc.absent, tc.dead)
		var ie *FailureItemError
		if !slices.Equal(got, tc.want) || !strings.Contains(errText(err), tc.err) || (tc.err == "") != (err == nil) || errors.As(err, &ie) != tc.itemErr {
			t.Errorf("ParseFailures(%q) = %v, %v; want %v, %q (item error %v)", tc.items, got, err, tc.want, tc.err, tc.itemErr)
		}
	}
}
